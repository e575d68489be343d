import { Module } from '@nestjs/common';
import { UsageController } from './usage.controller';
import { UsersController } from './users.controller';

@Module({ controllers: [UsersController, UsageController] })
export class AccountsModule {}

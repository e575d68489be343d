import { Module } from '@nestjs/common';
import { UsageController } from './usage.controller';
import { UsersController } from './users.controller';
import { WorkspacesController } from './workspaces.controller';

@Module({ controllers: [UsersController, UsageController, WorkspacesController] })
export class AccountsModule {}

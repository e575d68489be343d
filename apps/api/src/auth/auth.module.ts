import { Global, Module } from '@nestjs/common';
import { APP_GUARD } from '@nestjs/core';
import { ApiKeyGuard } from './api-key.guard';

@Global()
@Module({
  providers: [ApiKeyGuard, { provide: APP_GUARD, useExisting: ApiKeyGuard }],
  exports: [ApiKeyGuard],
})
export class AuthModule {}

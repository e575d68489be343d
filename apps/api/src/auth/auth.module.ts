import { Global, Module } from '@nestjs/common';
import { APP_GUARD } from '@nestjs/core';
import { AccessChangeListener } from './access-change-listener';
import { ApiKeyGuard } from './api-key.guard';

@Global()
@Module({
  providers: [ApiKeyGuard, AccessChangeListener, { provide: APP_GUARD, useExisting: ApiKeyGuard }],
  exports: [ApiKeyGuard, AccessChangeListener],
})
export class AuthModule {}

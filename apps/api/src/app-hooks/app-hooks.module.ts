import { Module } from '@nestjs/common';
import { ComponentsModule } from '../components/components.module';
import { HttpEndpointsModule } from '../http-endpoints/http-endpoints.module';
import { AppHooksController } from './app-hooks.controller';

/** Events for `$.interface.apphook` sources: an app's hook channel and one source's app hook. */
@Module({
  imports: [ComponentsModule, HttpEndpointsModule],
  controllers: [AppHooksController],
})
export class AppHooksModule {}

import { Module } from '@nestjs/common';
import { ComponentsModule } from '../components/components.module';
import { EventsModule } from '../events/events.module';
import { HttpEndpointsModule } from '../http-endpoints/http-endpoints.module';
import { SourcesModule } from '../sources/sources.module';
import { SseModule } from '../sse/sse.module';
import { WorkflowSseController } from './workflow-sse.controller';
import { WorkflowSseHub } from './workflow-sse-hub';
import { WorkflowPublisher } from './workflow-publisher';
import { WorkflowsController } from './workflows.controller';
import { WorkflowsService } from './workflows.service';

@Module({
  imports: [ComponentsModule, EventsModule, HttpEndpointsModule, SseModule, SourcesModule],
  controllers: [WorkflowsController, WorkflowSseController],
  providers: [WorkflowsService, WorkflowPublisher, WorkflowSseHub],
  exports: [WorkflowsService, WorkflowSseHub],
})
export class WorkflowsModule {}

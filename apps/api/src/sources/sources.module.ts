import { Module } from '@nestjs/common';
import { ComponentsModule } from '../components/components.module';
import { SourcePublisher } from './source-publisher';
import { SourcesController } from './sources.controller';
import { SourcesReconciler } from './sources.reconciler';
import { SourcesService } from './sources.service';

@Module({
  imports: [ComponentsModule],
  controllers: [SourcesController],
  providers: [SourcesService, SourcePublisher, SourcesReconciler],
  exports: [SourcesService, SourcePublisher],
})
export class SourcesModule {}

import { Module } from '@nestjs/common';
import { EventsModule } from '../events/events.module';
import { SseController } from './sse.controller';
import { SseService } from './sse.service';

@Module({ imports: [EventsModule], controllers: [SseController], providers: [SseService], exports: [SseService] })
export class SseModule {}

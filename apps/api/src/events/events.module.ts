import { Module } from '@nestjs/common';
import { EventsController } from './events.controller';
import { EventsService } from './events.service';
import { EmitsEraser } from './emits-eraser';

@Module({ controllers: [EventsController], providers: [EventsService, EmitsEraser], exports: [EventsService] })
export class EventsModule {}

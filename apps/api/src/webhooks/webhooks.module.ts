import { Module } from '@nestjs/common';
import { WebhooksController } from './webhooks.controller';
import { WebhookUrlSealer } from './webhook-url';
import { WebhooksService } from './webhooks.service';

@Module({ controllers: [WebhooksController], providers: [WebhooksService, WebhookUrlSealer], exports: [WebhooksService] })
export class WebhooksModule {}

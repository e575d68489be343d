import { Controller, Get, Inject } from '@nestjs/common';
import { APP_CONFIG, AppConfig } from '@app/config';
import { Public } from '../auth/api-key.guard';
import { buildOpenApi } from './openapi';

@Controller('v1')
export class OpenApiController {
  private readonly document: Record<string, unknown>;

  constructor(@Inject(APP_CONFIG) config: AppConfig) {
    this.document = buildOpenApi(config.publicUrl);
  }

  /** The OpenAPI document generated from the route declarations; no API key needed. */
  @Public()
  @Get('openapi.json')
  openapi(): Record<string, unknown> {
    return this.document;
  }
}

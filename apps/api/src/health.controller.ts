import { Controller, Get } from '@nestjs/common';
import { Public } from './auth/api-key.guard';

@Controller()
export class HealthController {
  @Public()
  @Get('healthz')
  health(): { status: string } {
    return { status: 'ok' };
  }
}

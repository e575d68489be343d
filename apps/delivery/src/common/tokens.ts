import { Provider } from '@nestjs/common';
import { APP_CONFIG, AppConfig, createLogger, Logger } from '@app/config';

/** The delivery app's pino logger. */
export const LOGGER = Symbol('DELIVERY_LOGGER');

export const loggerProvider: Provider = {
  provide: LOGGER,
  useFactory: (config: AppConfig): Logger => createLogger('delivery', config.logLevel),
  inject: [APP_CONFIG],
};

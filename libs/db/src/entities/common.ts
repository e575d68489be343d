import { BigIntType } from '@mikro-orm/core';

/** bigint columns read back as JS numbers (epoch seconds and milliseconds fit). */
export const BigNumber = new BigIntType('number');

export const nowSeconds = (): number => Math.floor(Date.now() / 1000);

import { Entity, Index, PrimaryKey, Property } from '@mikro-orm/core';
import { BigNumber } from './common';

/**
 * An indexed emitted event (also `$errors` and `$logs`). The event id
 * `<epoch_ms>-<seq>` is split into `idMs`/`idSeq` so it sorts numerically.
 */
@Entity({ tableName: 'event_summaries' })
@Index({ properties: ['emitterId', 'channelClass', 'idMs', 'idSeq'] })
export class EventSummary {
  @PrimaryKey({ type: 'string' }) emitterId!: string;
  @PrimaryKey({ type: 'string' }) id!: string;
  @Property({ type: BigNumber }) idMs!: number;
  @Property({ type: 'integer' }) idSeq!: number;
  /** Channel name: `""`, a custom name, `$errors` or `$logs`. */
  @Property({ type: 'string' }) name = '';
  /** `emits` (default and custom channels), `$errors` or `$logs`: retention counts per class. */
  @Property({ type: 'string' }) channelClass = 'emits';
  @Property({ type: 'string' }) ownerId!: string;
  @Property({ type: 'string' }) emitId!: string;
  @Property({ type: 'text', nullable: true }) summary?: string | null;
  @Property({ type: 'json' }) event: unknown;
  @Property({ type: 'json', nullable: true }) meta?: Record<string, unknown> | null;
  @Property({ type: 'integer' }) sizeBytes = 0;
  @Property({ type: BigNumber }) indexedAtMs: number = Date.now();
}

import { Entity, Index, PrimaryKey, Property } from '@mikro-orm/core';
import { BigNumber, nowSeconds } from './common';

/** A saved component (`sc_…`): code plus what was read from it. */
@Entity({ tableName: 'components' })
@Index({ properties: ['ownerId', 'key', 'createdAtMs'] })
@Index({ properties: ['ownerId', 'createdAtMs'] })
@Index({ properties: ['codeHash'] })
export class Component {
  @PrimaryKey({ type: 'string' }) id!: string;
  /** `u_…`, `o_…`, or `registry` for the shipped registry. */
  @Property({ type: 'string' }) ownerId!: string;
  @Property({ type: 'string', nullable: true }) userId?: string | null;
  @Property({ type: 'string', nullable: true }) key?: string | null;
  @Property({ type: 'string' }) name!: string;
  @Property({ type: 'string' }) version!: string;
  /** `source` or `action`. */
  @Property({ type: 'string' }) type: string = 'source';
  @Property({ type: 'text', nullable: true }) description?: string | null;
  @Property({ type: 'text' }) code!: string;
  @Property({ type: 'string' }) codeHash!: string;
  @Property({ type: 'text', nullable: true }) componentUrl?: string | null;
  /**
   * What runs when `code` is not self-contained (a `component_url` entry with relative
   * imports): one bundle of its module graph, and that bundle's hash in the object store.
   */
  @Property({ type: 'text', nullable: true }) bundle?: string | null;
  @Property({ type: 'string', nullable: true }) bundleHash?: string | null;
  @Property({ type: 'json' }) configurableProps: unknown[] = [];
  /** Everything else read from the code: dedupe, hooks, methods, app props, dependencies. */
  @Property({ type: 'json' }) meta: Record<string, unknown> = {};
  @Property({ type: BigNumber }) createdAtMs: number = Date.now();
  @Property({ type: BigNumber }) createdAt: number = nowSeconds();
  @Property({ type: BigNumber, onUpdate: () => nowSeconds() }) updatedAt: number = nowSeconds();
}

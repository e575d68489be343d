import { Entity, Index, PrimaryKey, Property } from '@mikro-orm/core';
import { BigNumber, nowSeconds } from './common';

/** One resolved step of a workflow: its component and configured props (templates kept, secrets referenced by name). */
export interface WorkflowStepRow {
  name: string;
  /** `c_…`: the code cell id (in `$errors` events as `error.cellId`). */
  cellId: string;
  componentId: string;
  /** How the step was given: `code` or `action` (the key or id as written). */
  kind: 'code' | 'action';
  action?: string;
  props: Record<string, unknown>;
  /** The props the component's `additionalProps()` added for the step's values (components that have it). */
  additionalProps?: Record<string, unknown>[];
}

/** A workflow (`p_…`): a trigger, ordered steps, settings. */
@Entity({ tableName: 'workflows' })
@Index({ properties: ['ownerId', 'createdAtMs', 'id'] })
export class Workflow {
  @PrimaryKey({ type: 'string' }) id!: string;
  @Property({ type: 'string' }) ownerId!: string;
  @Property({ type: 'string' }) userId!: string;
  @Property({ type: 'string' }) name!: string;
  /** `d_…`: a new one on every deploy (create or update). */
  @Property({ type: 'string' }) deploymentId!: string;
  /** The trigger as defined (`{ http: … }`, `{ timer: … }`, `{ source: "dc_…" }`, `{ events: … }`, `{ manual: {} }`). */
  @Property({ type: 'json' }) trigger!: Record<string, unknown>;
  @Property({ type: 'json' }) steps: WorkflowStepRow[] = [];
  @Property({ type: 'json' }) settings: Record<string, unknown> = {};
  /** Secret values by name, each encrypted (`{ $enc }`); never returned. */
  @Property({ type: 'json' }) secrets: Record<string, unknown> = {};
  /** The subscription the trigger created (source and events triggers). */
  @Property({ type: 'string', nullable: true }) triggerSubscriptionId?: string | null;
  @Property({ type: 'boolean' }) active = true;
  @Property({ type: 'integer' }) rev = 1;
  @Property({ type: 'integer' }) publishedRev = 0;
  @Property({ type: 'string', nullable: true, unique: true }) endpointKey?: string | null;
  @Property({ type: BigNumber }) createdAtMs: number = Date.now();
  @Property({ type: BigNumber }) createdAt: number = nowSeconds();
  @Property({ type: BigNumber, onUpdate: () => nowSeconds() }) updatedAt: number = nowSeconds();
  @Property({ type: BigNumber, nullable: true }) deletedAt?: number | null;
}

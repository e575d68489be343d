/**
 * KV `sources`, key `<partition>.<workflowId>`: what the api wants the runner to
 * run for a workflow. It shares the bucket, partitions, leases and invocation
 * consumers of sources; the runner tells them apart by the id prefix (`p_`).
 */
export interface DesiredWorkflowState {
  kind: 'workflow';
  workflowId: string;
  ownerId: string;
  userId: string;
  rev: number;
  active: boolean;
  /** `d_…` of this deploy. */
  deploymentId: string;
  trigger: WorkflowTriggerState;
  steps: DesiredWorkflowStep[];
  /** Secret values by name, encrypted (`{ $enc }`); substituted for `{{secrets.NAME}}` at run time. */
  secrets: Record<string, unknown>;
  /** Runs at once (undefined: as many as the partition holds). */
  concurrency?: number;
  throttle?: { limit: number; periodSeconds: number };
  runTimeoutMs: number;
  endpointUrl?: string;
  updatedAtMs: number;
  /** The first step's code hash (what readers of source states look for); every step's is in `codeHashes`. */
  codeHash: string;
  codeHashes: string[];
}

export type WorkflowTriggerState =
  | { type: 'http'; customResponse: boolean }
  | { type: 'timer'; schedule: { intervalSeconds: number } | { cron: string; timezone?: string } }
  | { type: 'source'; emitterId: string }
  | { type: 'events'; emitterId: string; eventName: string }
  | { type: 'manual' };

export interface DesiredWorkflowStep {
  name: string;
  cellId: string;
  componentId: string;
  codeHash: string;
  /** Configured props: templates (`{{steps.…}}`, `{{secrets.…}}`) resolved at run time; secret props encrypted. */
  props: Record<string, unknown>;
  dependencyVersions?: Record<string, string>;
}

/** Whether a desired state in KV `sources` is a workflow's. */
export function isWorkflowState(value: unknown): value is DesiredWorkflowState {
  return typeof value === 'object' && value !== null && (value as { kind?: unknown }).kind === 'workflow';
}

/** Every code hash a desired state in KV `sources` references (a source: one; a workflow: one per step). */
export function codeHashesOf(value: { codeHash?: string; codeHashes?: string[] }): string[] {
  return value.codeHashes ?? (value.codeHash ? [value.codeHash] : []);
}

/** The version reported in `$errors` events' `original_context.platform_version`. */
export const WORKFLOW_PLATFORM_VERSION = '1';

/** Stream SENDS, subject `send.<workflowId>`: one `$.send.http|email|s3` call of a successful run, performed (and retried) by the delivery app. */
export interface SendMessage {
  workflowId: string;
  ownerId: string;
  invocationId: string;
  /** Position among the run's sends; `<invocationId>:s<index>` is the `Nats-Msg-Id`. */
  index: number;
  kind: 'http' | 'email' | 's3';
  payload: unknown;
  createdAtMs: number;
  /** The attempt this message is (1 when absent): a retry or a held-back send republished from `send_retries`. */
  attempt?: number;
  /** Times the send was held back (its account had its share of the sender's slots): part of the republished copy's id. */
  heldBack?: number;
}

/** Core NATS `sse.<workflowId>`: one `$.send.sse({ channel, payload })` of a successful run. */
export interface WorkflowSseMessage {
  /** `<invocationId>:v<index>`: the SSE message id. */
  id: string;
  channel: string;
  payload: unknown;
  ts: number;
}

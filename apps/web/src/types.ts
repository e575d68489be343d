// Shapes of the public API's answers (GET /v1/openapi.json has them all).
export interface Page<T> {
  page_info: { total_count: number; count: number; start_cursor: string; end_cursor: string };
  data: T[];
}

export interface Org {
  id: string;
  name: string | null;
  orgname: string | null;
  email: string | null;
}

export interface Me {
  id: string;
  username: string;
  email: string;
  orgs?: Org[];
  daily_compute_time_quota?: number;
  daily_compute_time_used?: number;
  daily_invocations_quota?: number;
  daily_invocations_used?: number;
  billing_period_start_ts?: number;
  billing_period_end_ts?: number;
  billing_period_invocations?: number;
}

/** `GET /users/me/usage` and `GET /orgs/{org_id}/usage`: one entry per UTC day, oldest first. */
export interface UsageDay {
  day: string;
  invocations: number;
  compute_time_ms: number;
}

export interface Usage {
  owner_id: string;
  from: string;
  to: string;
  daily_invocations_quota: number | null;
  daily_compute_time_quota: number | null;
  total_invocations: number;
  total_compute_time_ms: number;
  days: UsageDay[];
}

export interface Source {
  id: string;
  user_id?: string;
  component_id: string;
  configured_props: Record<string, unknown>;
  active: boolean;
  created_at: number;
  updated_at: number;
  name: string;
  name_slug: string;
  /** Only for components with additionalProps(): their props followed by those added for this source's values. */
  configurable_props?: ConfigurableProp[];
}

export type PropOption = string | number | boolean | { label: string; value: unknown };

export interface ConfigurableProp {
  name: string;
  type: string;
  label?: string;
  description?: string;
  default?: unknown;
  optional?: boolean;
  secret?: boolean;
  options?: PropOption[];
  remoteOptions?: boolean;
  /** A change of this prop's value may change the props (the component's additionalProps()). */
  reloadProps?: boolean;
  min?: number;
  max?: number;
  app?: string;
  content?: string;
  alertType?: string;
  /** A timer's own schedule (`$.interface.timer` with `static`): it takes no value. */
  static?: { intervalSeconds?: number; cron?: string };
}

export interface Component {
  id: string;
  code: string;
  name: string;
  version: string;
  key?: string;
  type?: string;
  description?: string;
  configurable_props: ConfigurableProp[];
}

export interface EventSummary {
  id: string;
  indexed_at_ms: number;
  event: unknown;
  metadata: { emit_id: string; name: string; emitter_id: string };
  summary?: string;
}

export interface Webhook {
  id: string;
  name: string | null;
  description: string | null;
  url: string;
  active: boolean;
  created_at: number;
  disabled_reason?: string;
  secret?: string;
}

export interface WebhookDelivery {
  id: string;
  event_id: string;
  emitter_id: string;
  attempt: number;
  status: string;
  response_code: number | null;
  latency_ms: number | null;
  response_body: string | null;
  error: string | null;
  next_attempt_at_ms: number | null;
  created_at_ms: number;
}

export interface Subscription {
  id: string;
  emitter_id: string;
  listener_id: string;
  event_name: string;
}

export interface WorkflowStep {
  name: string;
  cell_id: string;
  component_id: string;
  code?: true;
  action?: string;
  props: Record<string, unknown>;
}

export interface Workflow {
  id: string;
  owner_id: string;
  user_id: string;
  name: string;
  active: boolean;
  deployment_id: string;
  /** As defined (one of http, timer, source, events, manual); an HTTP trigger adds endpoint_url. */
  trigger: Record<string, unknown> & { endpoint_url?: string };
  steps: WorkflowStep[];
  settings: Record<string, unknown>;
  secrets: string[];
  created_at: number;
  updated_at: number;
}

/** One step of a run record (`GET /workflows/{id}/runs`); steps after a failing one are absent. */
export interface RunStep {
  name: string;
  cell_id: string;
  duration_ms: number;
  inputs?: Record<string, unknown>;
  return_value?: unknown;
  exports?: Record<string, unknown>;
  error?: { name: string; message: string };
  exit?: { reason?: string };
}

export interface WorkflowRun {
  id: string;
  status: 'success' | 'error' | 'exit';
  started_at: string;
  duration_ms: number;
  deployment_id: string;
  failed_step: string | null;
  steps: RunStep[];
}

import { CHANNEL_NAME_MAX_CHARS, clipped, longerThan, TIMER_MAX_INTERVAL_SECONDS } from '@app/contracts';
import { cronProblem } from './configured-props';
import { readTimerSchedule, TimerSchedule } from './timer-event';
import { forEachTemplate, secretOf } from './workflow-templates';

/**
 * A workflow as deployed: a trigger, ordered steps and settings. The file format
 * (YAML or JSON, docs/workflows.md) names local files; `pd` reads them and sends
 * this form, where a code step carries its code. Validation errors name the path
 * of the bad field (`steps[1].props`).
 */
export type WorkflowTriggerDef =
  | { http: { customResponse: boolean } }
  | { timer: TimerSchedule }
  | { source: string | InlineSourceDef }
  | { events: { emitter_id: string; event_name: string } }
  | { manual: Record<string, never> };

/** A source deployed with the workflow (and removed with it): its component and props. */
export interface InlineSourceDef {
  /** The component's code (a file path in a workflow file, as `component`). */
  code?: string;
  component_id?: string;
  /** A registry key, or a key in the owner's namespace. */
  key?: string;
  props: Record<string, unknown>;
}

export interface WorkflowStepDef {
  name: string;
  /** A code step: the component's code (`defineComponent({ props, run({ steps, $ }) })`). */
  code?: string;
  /** An action: a registry key, a saved component id (`sc_…`) or a key in the owner's namespace. */
  action?: string;
  /** Configured props; strings may hold `{{secrets.NAME}}`, `{{steps.<step>.<path>}}` and `{{trigger.event.<path>}}`. */
  props: Record<string, unknown>;
}

export interface WorkflowSettings {
  /** Runs at once; 1 = one event at a time, in order. Absent: as many as the runner holds. */
  concurrency?: number;
  /** At most `limit` runs started per `period_seconds`; others wait in the durable queue. */
  throttle?: { limit: number; period_seconds: number };
  timeout_seconds?: number;
}

export interface WorkflowDefinition {
  name: string;
  trigger: WorkflowTriggerDef;
  steps: WorkflowStepDef[];
  settings: WorkflowSettings;
}

export class WorkflowDefinitionError extends Error {
  constructor(readonly path: string, message: string) {
    super(`${path}: ${message}`);
  }
}

export const STEP_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,63}$/;
const MAX_STEPS = 50;

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

function only(obj: Record<string, unknown>, allowed: string[], path: string): void {
  const hint = allowed.length ? `allowed: ${allowed.join(', ')}` : `${path} takes no fields`;
  for (const k of Object.keys(obj)) if (!allowed.includes(k)) throw new WorkflowDefinitionError(path ? `${path}.${clipped(k)}` : clipped(k), `unknown field (${hint})`);
}

function positiveInt(v: unknown, path: string, max: number): number {
  if (typeof v !== 'number' || !Number.isInteger(v) || v < 1 || v > max) throw new WorkflowDefinitionError(path, `must be an integer from 1 to ${max}`);
  return v;
}

function readTrigger(v: unknown): WorkflowTriggerDef {
  if (!isObject(v)) throw new WorkflowDefinitionError('trigger', 'must be an object with one of http, timer, source, events, manual');
  const keys = Object.keys(v);
  if (keys.length !== 1) throw new WorkflowDefinitionError('trigger', 'must have exactly one of http, timer, source, events, manual');
  const [kind] = keys;
  const value = v[kind];
  const path = `trigger.${kind}`;
  switch (kind) {
    case 'http': {
      if (value !== null && value !== undefined && !isObject(value)) throw new WorkflowDefinitionError(path, 'must be an object ({ customResponse: true } or {})');
      const o = (value ?? {}) as Record<string, unknown>;
      only(o, ['customResponse'], path);
      if (o.customResponse !== undefined && typeof o.customResponse !== 'boolean') throw new WorkflowDefinitionError(`${path}.customResponse`, 'must be a boolean');
      return { http: { customResponse: o.customResponse === true } };
    }
    case 'timer': {
      if (!isObject(value)) throw new WorkflowDefinitionError(path, 'must be { intervalSeconds } or { cron, timezone? }');
      only(value, ['intervalSeconds', 'cron', 'timezone'], path);
      // Both given would be stored as one of them: a silent change of the schedule asked for.
      if (value.intervalSeconds !== undefined && value.cron !== undefined) throw new WorkflowDefinitionError(path, 'give one of cron or intervalSeconds, not both');
      if (value.intervalSeconds !== undefined && value.timezone !== undefined) throw new WorkflowDefinitionError(`${path}.timezone`, 'applies to cron only');
      if (value.intervalSeconds !== undefined) positiveInt(value.intervalSeconds, `${path}.intervalSeconds`, TIMER_MAX_INTERVAL_SECONDS);
      if (value.cron !== undefined && (typeof value.cron !== 'string' || !value.cron.trim())) throw new WorkflowDefinitionError(`${path}.cron`, 'must be a cron expression');
      if (value.timezone !== undefined && typeof value.timezone !== 'string') throw new WorkflowDefinitionError(`${path}.timezone`, 'must be an IANA time zone name');
      if (typeof value.timezone === 'string') {
        try {
          new Intl.DateTimeFormat('en-US', { timeZone: value.timezone });
        } catch {
          throw new WorkflowDefinitionError(`${path}.timezone`, `unknown time zone "${clipped(value.timezone)}"`);
        }
      }
      // Checked as a source's timer prop is: 5 fields (a 6th, seconds, would fire every second, under TIMER_MIN_INTERVAL_SECONDS).
      if (typeof value.cron === 'string') {
        const problem = cronProblem(value.cron, value.timezone as string | undefined);
        if (problem) throw new WorkflowDefinitionError(`${path}.cron`, problem);
      }
      const schedule = readTimerSchedule(value);
      if (!schedule) throw new WorkflowDefinitionError(path, 'needs intervalSeconds or cron');
      return { timer: schedule };
    }
    case 'source': {
      if (typeof value === 'string') {
        if (!/^dc_[a-z0-9]+$/.test(value)) throw new WorkflowDefinitionError(path, 'must be the id of an existing source (dc_…), or { code | component_id | key, props } to deploy one with the workflow');
        return { source: value };
      }
      if (!isObject(value)) throw new WorkflowDefinitionError(path, 'must be a source id (dc_…) or { code | component_id | key, props }');
      only(value, ['code', 'component_id', 'key', 'props'], path);
      const given = ['code', 'component_id', 'key'].filter((k) => value[k] !== undefined);
      if (given.length !== 1) throw new WorkflowDefinitionError(path, 'needs exactly one of code, component_id and key');
      const [field] = given;
      if (typeof value[field] !== 'string' || !(value[field] as string).trim()) throw new WorkflowDefinitionError(`${path}.${field}`, 'must be a non-empty string');
      if (value.props !== undefined && !isObject(value.props)) throw new WorkflowDefinitionError(`${path}.props`, 'must be an object');
      return { source: { [field]: value[field] as string, props: (value.props as Record<string, unknown> | undefined) ?? {} } };
    }
    case 'events': {
      if (!isObject(value)) throw new WorkflowDefinitionError(path, 'must be { emitter_id, event_name? }');
      only(value, ['emitter_id', 'event_name'], path);
      if (typeof value.emitter_id !== 'string' || !/^(dc_|p_)[a-z0-9]*\*?$/.test(value.emitter_id)) throw new WorkflowDefinitionError(`${path}.emitter_id`, 'must be a source or workflow id, or dc_* / p_*');
      const channel = value.event_name;
      if (channel !== undefined && typeof channel !== 'string') throw new WorkflowDefinitionError(`${path}.event_name`, 'must be a string');
      // The channels a subscription may name: the default (""), a custom name, $errors or $logs.
      if (typeof channel === 'string' && (longerThan(channel, CHANNEL_NAME_MAX_CHARS) || (channel.startsWith('$') && channel !== '$errors' && channel !== '$logs'))) {
        throw new WorkflowDefinitionError(`${path}.event_name`, 'may be empty (default channel), a custom channel name of at most 255 characters, $errors or $logs');
      }
      return { events: { emitter_id: value.emitter_id, event_name: (value.event_name as string | undefined) ?? '' } };
    }
    case 'manual':
      if (value !== null && value !== undefined && !isObject(value)) throw new WorkflowDefinitionError(path, 'must be an object ({})');
      only((value ?? {}) as Record<string, unknown>, [], path);
      return { manual: {} };
    default:
      throw new WorkflowDefinitionError(`trigger.${clipped(kind)}`, 'unknown trigger (use http, timer, source, events or manual)');
  }
}

function readStep(v: unknown, i: number, seen: Set<string>): WorkflowStepDef {
  const path = `steps[${i}]`;
  if (!isObject(v)) throw new WorkflowDefinitionError(path, 'must be an object with name and code or action');
  only(v, ['name', 'code', 'action', 'props'], path);
  if (typeof v.name !== 'string' || !STEP_NAME.test(v.name)) throw new WorkflowDefinitionError(`${path}.name`, 'must be an identifier: letters, digits and _, not starting with a digit (at most 64)');
  if (v.name === 'trigger') throw new WorkflowDefinitionError(`${path}.name`, '"trigger" is reserved (steps.trigger is the triggering event)');
  // `steps.__proto__ = …` would set the prototype of `steps`, not add a step later steps can read.
  if (v.name === '__proto__') throw new WorkflowDefinitionError(`${path}.name`, '"__proto__" is reserved');
  if (seen.has(v.name)) throw new WorkflowDefinitionError(`${path}.name`, `duplicate step name "${v.name}"`);
  seen.add(v.name);
  const hasCode = v.code !== undefined;
  const hasAction = v.action !== undefined;
  if (hasCode === hasAction) throw new WorkflowDefinitionError(path, 'needs exactly one of code or action');
  if (hasCode && (typeof v.code !== 'string' || !v.code.trim())) throw new WorkflowDefinitionError(`${path}.code`, 'must be the code of the step (a file path in a workflow file)');
  if (hasAction && (typeof v.action !== 'string' || !v.action.trim())) throw new WorkflowDefinitionError(`${path}.action`, 'must be a registry key, a component id (sc_…) or a file');
  if (v.props !== undefined && !isObject(v.props)) throw new WorkflowDefinitionError(`${path}.props`, 'must be an object');
  return { name: v.name, ...(hasCode ? { code: v.code as string } : { action: (v.action as string).trim() }), props: (v.props as Record<string, unknown> | undefined) ?? {} };
}

function readSettings(v: unknown): WorkflowSettings {
  if (v === undefined || v === null) return {};
  if (!isObject(v)) throw new WorkflowDefinitionError('settings', 'must be an object');
  only(v, ['concurrency', 'throttle', 'timeout_seconds'], 'settings');
  const out: WorkflowSettings = {};
  if (v.concurrency !== undefined) out.concurrency = positiveInt(v.concurrency, 'settings.concurrency', 1000);
  if (v.timeout_seconds !== undefined) out.timeout_seconds = positiveInt(v.timeout_seconds, 'settings.timeout_seconds', 24 * 3600);
  if (v.throttle !== undefined) {
    if (!isObject(v.throttle)) throw new WorkflowDefinitionError('settings.throttle', 'must be { limit, period_seconds }');
    only(v.throttle, ['limit', 'period_seconds'], 'settings.throttle');
    out.throttle = { limit: positiveInt(v.throttle.limit, 'settings.throttle.limit', 100_000), period_seconds: positiveInt(v.throttle.period_seconds, 'settings.throttle.period_seconds', 86_400) };
  }
  return out;
}

/**
 * Validates a workflow definition (the API form: code steps carry their code). Its steps' templates are checked
 * where their props are known (`stepTemplateProblem`): a template in a secret prop's value must not be quoted.
 */
export function readWorkflowDefinition(input: unknown, extraFields: string[] = []): WorkflowDefinition {
  if (!isObject(input)) throw new WorkflowDefinitionError('(root)', 'a workflow must be an object with name, trigger and steps');
  only(input, ['name', 'trigger', 'steps', 'settings', ...extraFields], '');
  if (typeof input.name !== 'string' || !input.name.trim() || longerThan(input.name, 200)) throw new WorkflowDefinitionError('name', 'must be a non-empty string of at most 200 characters');
  const trigger = readTrigger(input.trigger);
  if (!Array.isArray(input.steps) || input.steps.length === 0) throw new WorkflowDefinitionError('steps', 'must be a non-empty list of steps');
  if (input.steps.length > MAX_STEPS) throw new WorkflowDefinitionError('steps', `at most ${MAX_STEPS} steps`);
  const seen = new Set<string>();
  const steps = input.steps.map((s, i) => readStep(s, i, seen));
  return { name: input.name.trim(), trigger, steps, settings: readSettings(input.settings) };
}

/** The `{{secrets.NAME}}` names used anywhere in the steps' props. */
export function secretNamesOf(def: Pick<WorkflowDefinition, 'steps'>): string[] {
  const names = new Set<string>();
  for (const s of def.steps) {
    forEachTemplate(s.props, '', (expr) => {
      const name = secretOf(expr);
      if (name) names.add(name);
    });
  }
  return [...names].sort();
}

import { decryptValue, type DesiredWorkflowState, type EncryptedValue, isEncrypted, redact, REDACTED, redactionPatterns, WORKFLOW_PLATFORM_VERSION } from '@app/contracts';
import { dbSizeBytes, type ExecuteResult, type LogRecord, type SendRecord } from '@app/sandbox';
import type { ActorDeps } from '../actors/actor-deps';
import { STATE_ROOM_BYTES, withWrites } from '../actors/actor-state';
import { decryptSealed, withDefaults } from '../actors/props';
import type { HeldShare } from './held-budget';
import { jsonBytesUpTo } from './json-bytes';
import { REDACT_MAX_VALUES, secretValues } from './secret-redaction';
import { resolveTemplates, TemplateError } from './templates';
import { sendProblem, type SendSettings } from './workflow-sends';

/** An error's message and stack as a run keeps them (the run record and `$errors` are one NATS message each). */
const ERROR_MESSAGE_MAX_CHARS = 2000;
const ERROR_STACK_MAX_CHARS = 16 * 1024;

/** What the templates of one step's props may insert together, in events of `EVENT_MAX_BYTES`. */
export const STEP_TEMPLATES_MAX_EVENTS = 4;
/** Lines of console output one run keeps, all steps together (each `$logs` event); as one source invocation's. */
export const RUN_LOGS_MAX = 1000;
/** Characters of console output one run keeps, all steps together (each line may have 16 K). */
export const RUN_LOG_CHARS_MAX = 2 * 1024 * 1024;
/** What the steps of one run may return and export together, in events of `EVENT_MAX_BYTES`. */
export const RUN_OUTPUTS_MAX_EVENTS = 16;
/**
 * What the `$.send.*` payloads of one run's steps may hold together (kept until the run ends), in events of
 * `EVENT_MAX_BYTES`: 64 MiB at the default, what one step's answer may hold.
 */
export const RUN_SENDS_MAX_EVENTS = 128;
/** What the runs of one account in progress on one runner may hold together (`HeldBudget`), in events of `EVENT_MAX_BYTES`: 256 MiB at the default. */
export const ACCOUNT_HELD_MAX_EVENTS = 512;

const clip = (s: string, max: number): string => (s.length > max ? `${s.slice(0, max)}… (${s.length - max} more characters)` : s);

/**
 * The `$.service.db` cap of one step: DB_MAX_BYTES, lowered so that every step's db together
 * (the workflow's state is one KV value) still fits one NATS message.
 */
export function stepDbMaxBytes(config: ActorDeps['config'], dbs: Record<string, Record<string, unknown>>, cellId: string): number {
  if (!config.stateMaxBytes) return config.dbMaxBytes;
  let others = 0;
  for (const [cell, db] of Object.entries(dbs)) if (cell !== cellId) others += dbSizeBytes(db);
  return Math.max(0, Math.min(config.dbMaxBytes, config.stateMaxBytes - STATE_ROOM_BYTES - others));
}

/** Each step's db with a run's writes applied (an `undefined` value deletes its key). */
export function withDbWrites(dbs: Record<string, Record<string, unknown>>, writes: Record<string, Record<string, unknown>>): Record<string, Record<string, unknown>> {
  if (!Object.keys(writes).length) return dbs;
  const out = { ...dbs };
  for (const [cell, w] of Object.entries(writes)) out[cell] = withWrites(out[cell] ?? {}, w);
  return out;
}

/** One step of a finished run, as the run record keeps it. */
export interface StepRecord {
  name: string;
  cell_id: string;
  duration_ms: number;
  /** The props the step ran with, secrets and `$auth` left out. */
  inputs?: Record<string, unknown>;
  return_value?: unknown;
  exports?: Record<string, unknown>;
  error?: { name: string; message: string };
  exit?: { reason?: string };
}

export interface StepLog extends LogRecord {
  step: string;
}

export interface RunOutcome {
  status: 'success' | 'error' | 'exit';
  steps: StepRecord[];
  logs: StepLog[];
  /** `$.send.*` calls of every step, in order (only acted on when the run succeeded). */
  sends: SendRecord[];
  /** db writes per cell (`$.service.db` is per step). */
  dbWrites: Record<string, Record<string, unknown>>;
  error?: { name: string; message: string; stack: string; cellId: string; step: string; ts: number };
  durationMs: number;
  responded: boolean;
  response?: ExecuteResult['response'];
  /** The secret values its records must not show (`redactionPatterns`). */
  hidden?: string[];
}

/** The outcome of a run refused before its first step (`chainRefusal`): an error at the trigger, nothing run. */
export function refusedRun(desired: DesiredWorkflowState, error: { name: string; message: string }, ts: number): RunOutcome {
  return { status: 'error', steps: [], logs: [], sends: [], dbWrites: {}, durationMs: 0, responded: false, error: { ...error, stack: '', cellId: desired.steps[0]?.cellId ?? '', step: 'trigger', ts } };
}

/** The `original_context` of `$errors` events and `steps.trigger.context`. */
export function triggerContext(desired: DesiredWorkflowState, invocationId: string, startedAtMs: number): Record<string, unknown> {
  const sourceType = { http: 'HTTP', timer: 'TIMER', source: 'COMPONENT', events: 'EMITTER', manual: 'MANUAL' }[desired.trigger.type];
  return {
    id: invocationId,
    ts: new Date(startedAtMs).toISOString(),
    workflow_id: desired.workflowId,
    deployment_id: desired.deploymentId,
    source_type: sourceType,
    verified: false,
    owner_id: desired.ownerId,
    platform_version: WORKFLOW_PLATFORM_VERSION,
  };
}

/** Prop values safe to record: encrypted values and app `$auth` masked. */
function inputsOf(props: Record<string, unknown>): Record<string, unknown> {
  const mask = (v: unknown): unknown => {
    if (isEncrypted(v)) return REDACTED;
    if (Array.isArray(v)) return v.map(mask);
    if (v && typeof v === 'object') return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, k === '$auth' ? REDACTED : mask(x)]));
    return v;
  };
  return mask(props) as Record<string, unknown>;
}

/**
 * Runs a workflow's steps in order for one trigger event, each as its own task in
 * the account's sandbox, with `steps.trigger` and every earlier step's
 * `$return_value` and exports. Stops at the first error or `$.flow.exit()`.
 */
export async function runWorkflow(
  deps: ActorDeps,
  desired: DesiredWorkflowState,
  input: { invocationId: string; event: unknown; replyTo?: string; dbs: Record<string, Record<string, unknown>>; startedAtMs: number; stopped: () => boolean; held?: HeldShare },
): Promise<RunOutcome> {
  const now = deps.now ?? Date.now;
  const context = triggerContext(desired, input.invocationId, input.startedAtMs);
  const steps: Record<string, unknown> = { trigger: { event: input.event, context } };
  const outcome: RunOutcome = { status: 'success', steps: [], logs: [], sends: [], dbWrites: {}, durationMs: 0, responded: false };
  const deadline = input.startedAtMs + desired.runTimeoutMs;
  let secrets: Record<string, string>;
  try {
    secrets = Object.fromEntries(Object.entries(desired.secrets ?? {}).map(([k, v]) => [k, decryptValue<string>(deps.config.secretsKey, v as EncryptedValue)]));
  } catch (e) {
    secrets = {};
    outcome.status = 'error';
    outcome.error = { name: 'SecretsError', message: `the workflow's secrets cannot be decrypted with SECRETS_KEY: ${(e as Error).message}`, stack: '', cellId: desired.steps[0]?.cellId ?? '', step: desired.steps[0]?.name ?? '', ts: now() };
    return outcome;
  }
  const values = secretValues(deps.config.secretsKey, secrets, desired.steps.map((s) => s.props));
  if (values.length > REDACT_MAX_VALUES) {
    outcome.status = 'error';
    const message = `the workflow's secrets, secret props and $auth hold ${values.length} values to hide from its records, more than ${REDACT_MAX_VALUES}`;
    outcome.error = { name: 'SecretsError', message, stack: `SecretsError: ${message}`, cellId: desired.steps[0]?.cellId ?? '', step: desired.steps[0]?.name ?? '', ts: now() };
    return outcome;
  }
  outcome.hidden = redactionPatterns(values);
  const sendSettings = deps.config as SendSettings;
  const masked = Object.fromEntries(Object.keys(secrets).map((k) => [k, REDACTED]));
  let droppedLogs = { count: 0, step: '' };
  let logChars = 0;
  const outputsMax = RUN_OUTPUTS_MAX_EVENTS * deps.config.eventMaxBytes;
  let outputsLeft = outputsMax;
  const sendsMax = RUN_SENDS_MAX_EVENTS * deps.config.eventMaxBytes;
  let sendsLeft = sendsMax;
  for (const step of desired.steps) {
    const started = now();
    const record: StepRecord = { name: step.name, cell_id: step.cellId, duration_ms: 0 };
    outcome.steps.push(record);
    let result: ExecuteResult;
    /** What the run record keeps of the step's props (filled in by templates). */
    let inputBytes = 0;
    try {
      const component = await deps.components.get(step.codeHash, desired.ownerId);
      // Recorded with secrets masked; run with secret props and `$auth` decrypted, then templates filled in.
      const maxBytes = STEP_TEMPLATES_MAX_EVENTS * deps.config.eventMaxBytes;
      record.inputs = inputsOf(resolveTemplates(step.props, { steps, secrets: masked, maxBytes }) as Record<string, unknown>);
      // Kept for the run record, which holds at most one event: larger inputs could only be cut from it.
      inputBytes = jsonBytesUpTo(record.inputs, Infinity);
      if (inputBytes > deps.config.eventMaxBytes) {
        record.inputs = { $truncated: inputBytes };
        inputBytes = 0;
      }
      // Decrypted before the templates are filled in: what they insert is never decrypted.
      const templated = resolveTemplates(decryptSealed(deps.config.secretsKey, step.props), { steps, secrets, maxBytes }) as Record<string, unknown>;
      const props = withDefaults(templated, component.descriptor.props);
      const timeoutMs = Math.max(1, deadline - started);
      result = await deps.executor.execute(
        {
          kind: 'execute',
          account: desired.ownerId,
          sourceId: desired.workflowId,
          invocationId: `${input.invocationId}:${step.cellId}`,
          codeHash: component.codeHash,
          code: component.code,
          method: 'run',
          props,
          db: input.dbs[step.cellId] ?? {},
          event: input.event,
          steps,
          ...(outcome.response || outcome.responded ? { responded: true } : {}),
          timeoutMs,
          // The send budget is the whole run's: each send becomes a stored message.
          limits: { dbMaxBytes: stepDbMaxBytes(deps.config, withDbWrites(input.dbs, outcome.dbWrites), step.cellId), eventMaxBytes: deps.config.eventMaxBytes, emitsPerInvocation: Math.max(0, deps.config.emitsPerInvocation - outcome.sends.length) },
          dependencyVersions: step.dependencyVersions ?? component.dependencyVersions,
        },
        input.replyTo
          ? {
              onResponse: (r) => {
                if (!input.replyTo || outcome.responded || input.stopped()) return;
                outcome.responded = true;
                deps.publisher.reply(input.replyTo, r, 'workflow');
              },
            }
          : {},
      );
    } catch (e) {
      const err = e as Error;
      const name = e instanceof TemplateError ? 'TemplateError' : err.name || 'Error';
      result = { emits: [], dbWrites: {}, logs: [], error: { name, message: err.message, stack: `${name}: ${err.message}` }, durationMs: now() - started };
    }
    record.duration_ms = Math.round(result.durationMs);
    for (const l of result.logs ?? []) {
      if (outcome.logs.length < RUN_LOGS_MAX && logChars + l.msg.length <= RUN_LOG_CHARS_MAX) {
        logChars += l.msg.length;
        outcome.logs.push({ ...l, step: step.name });
      } else droppedLogs = { count: droppedLogs.count + 1, step: droppedLogs.step || step.name };
    }
    if (result.response && !outcome.response) outcome.response = result.response;
    if (Object.keys(result.dbWrites ?? {}).length) outcome.dbWrites[step.cellId] = result.dbWrites;
    const problem = result.error ? undefined : (result.sends ?? []).map((x) => sendProblem(x, sendSettings)).find((m) => m !== undefined);
    if (problem) result.error = { name: 'SendError', message: problem, stack: `SendError: ${problem}` };
    // What the steps hand on is kept for the whole run (and sent to every later step): bounded together.
    const outputBytes = result.error ? 0 : jsonBytesUpTo({ r: result.returnValue, e: result.exports ?? {} }, outputsLeft);
    outputsLeft -= outputBytes;
    if (outputsLeft < 0) {
      const message = `the return values and exports of this run's steps together are over ${outputsMax} bytes of JSON (${RUN_OUTPUTS_MAX_EVENTS} × EVENT_MAX_BYTES)`;
      result.error = { name: 'StepsSizeLimitError', message, stack: `StepsSizeLimitError: ${message}` };
    }
    // Every step's sends are kept until the run ends (they are acted on only after it succeeded): bounded together.
    const sendBytes = result.error ? 0 : jsonBytesUpTo(result.sends ?? [], sendsLeft);
    sendsLeft -= sendBytes;
    if (sendsLeft < 0) {
      const message = `the $.send.* payloads of this run's steps together are over ${sendsMax} bytes of JSON (${RUN_SENDS_MAX_EVENTS} × EVENT_MAX_BYTES)`;
      result.error = { name: 'SendsSizeLimitError', message, stack: `SendsSizeLimitError: ${message}` };
    }
    // …and so is what all the account's runs in progress on this runner hold together.
    const heldBytes = outputBytes + sendBytes + inputBytes;
    if (!result.error && input.held) {
      if (!input.held.take(heldBytes)) {
        const message = `this account's workflow runs in progress on this runner would hold more than ${input.held.maxBytes} bytes of JSON of sends, return values, exports and recorded props together (${ACCOUNT_HELD_MAX_EVENTS} × EVENT_MAX_BYTES): run fewer at once`;
        result.error = { name: 'HeldSizeLimitError', message, stack: `HeldSizeLimitError: ${message}` };
      }
    }
    if (result.error) {
      const name = clip(String(result.error.name), 200);
      const message = clip(String(result.error.message), ERROR_MESSAGE_MAX_CHARS);
      record.error = { name, message };
      outcome.status = 'error';
      outcome.error = { name, message, stack: clip(result.error.stack ?? `${name}: ${message}`, ERROR_STACK_MAX_CHARS), cellId: step.cellId, step: step.name, ts: now() };
      break;
    }
    // One at a time: spread into one push, over about 125,000 sends (EMITS_PER_INVOCATION may allow them) overflowed the stack.
    for (const send of result.sends ?? []) outcome.sends.push(send);
    record.return_value = result.returnValue;
    record.exports = result.exports ?? {};
    steps[step.name] = { ...(result.exports ?? {}), $return_value: result.returnValue };
    if (result.exit) {
      record.exit = result.exit;
      outcome.status = 'exit';
      break;
    }
  }
  if (droppedLogs.count) outcome.logs.push({ ts: now(), k: 'console.warn', msg: `${droppedLogs.count} more lines of console output dropped (a run keeps ${RUN_LOGS_MAX} lines, ${RUN_LOG_CHARS_MAX} characters)`, step: droppedLogs.step });
  outcome.durationMs = now() - input.startedAtMs;
  return recordedWithoutSecrets(outcome, outcome.hidden);
}

/**
 * The outcome with secret values hidden in its logs and errors (the `$logs` and `$errors` events, an HTTP caller's
 * 502); the steps' values are hidden in the run record once it is cut to the size of one event (`runEvents`). What
 * the steps pass on — later steps' `steps`, emits, sends, db, `$.respond()` — is left as they gave it.
 */
function recordedWithoutSecrets(outcome: RunOutcome, values: readonly string[] = []): RunOutcome {
  if (!values.length) return outcome;
  return {
    ...outcome,
    steps: outcome.steps.map((s) => (s.error ? { ...s, error: { name: redact(s.error.name, values), message: clip(redact(s.error.message, values), ERROR_MESSAGE_MAX_CHARS) } } : s)),
    logs: outcome.logs.map((l) => ({ ...l, msg: redact(l.msg, values) })),
    ...(outcome.error ? { error: { ...outcome.error, name: redact(outcome.error.name, values), message: clip(redact(outcome.error.message, values), ERROR_MESSAGE_MAX_CHARS), stack: clip(redact(outcome.error.stack, values), ERROR_STACK_MAX_CHARS) } } : {}),
  };
}

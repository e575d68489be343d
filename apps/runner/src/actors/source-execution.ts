import { API_ANSWER_HEADERS, type Chain, chainOf, type DesiredSourceState, type EmittedEvent, encodeJson } from '@app/contracts';
import { dbSizeBytes, type ExecuteResult, type MethodName } from '@app/sandbox';
import type { ActorDeps, EmitGroup, EmitUnit } from './actor-deps';
import { type ActorState, STATE_ROOM_BYTES, withWrites } from './actor-state';
import { DedupeStrategy, isDedupeStrategy } from './dedupe';
import type { EmitterClock } from './emit-ids';
import { buildOutputs, errorEvent, originalEventWithin } from './outputs';
import { resolveProps } from './props';

export interface RunInput {
  method: MethodName;
  invocationId: string;
  codeHash: string;
  configuredProps: Record<string, unknown>;
  endpointUrl?: string;
  event?: unknown;
  replyTo?: string;
  /** The invocation's chain of subscriptions (`InvocationMessage.chain`). */
  chain?: Chain;
}

export interface Executed {
  result: ExecuteResult;
  dedupe: DedupeStrategy | undefined;
  input: RunInput;
}

/** What a save adds to the state it is given (emitter clock, fence, the invocation id in `recent`). */
const STATE_ENVELOPE_BYTES = 1024;

/** Encoded sizes of configured props objects (the state keeps them; up to PROPS_DOCUMENT_MAX_BYTES), measured once each. */
const propsSizes = new WeakMap<object, number>();
function propsBytes(props: Record<string, unknown> | undefined): number {
  if (!props) return 0;
  let n = propsSizes.get(props);
  if (n === undefined) {
    n = encodeJson(props).length;
    propsSizes.set(props, n);
  }
  return n;
}

/** Adds a run's events to the units to publish: to its message's group (the last unit when that is the group's), else loose. */
export function addEmits(units: EmitUnit[], group: EmitGroup | undefined, invocationId: string, events: EmittedEvent[]): void {
  const last = units[units.length - 1];
  if (group) {
    if (last && 'group' in last && last.group === group) last.runs.push({ invocationId, events });
    else units.push({ group, runs: [{ invocationId, events }] });
  } else if (last && !('group' in last)) {
    // One at a time: spread into one push, over about 125,000 events (EMITS_PER_INVOCATION may allow them) overflowed the stack.
    for (const e of events) last.events.push(e);
  }
  else units.push({ events: [...events] });
}

/** What an execution needs from its actor. */
export interface RunContext {
  desired: DesiredSourceState | undefined;
  db: Record<string, unknown>;
  clock: EmitterClock;
  stopped: () => boolean;
}

/** Answers a waiting HTTP client with an error body. */
export function replyError(publisher: ActorDeps['publisher'], subject: string, status: number, message: string): void {
  publisher.reply(subject, { status, headers: { 'content-type': 'application/json; charset=utf-8', ...API_ANSWER_HEADERS }, body: JSON.stringify({ error: message, code: status === 404 ? 'not_found' : 'source_error' }) });
}

/** Runs a source's methods in the sandbox and publishes what they produced. */
export class SourceExecution {
  private readonly now: () => number;

  constructor(private readonly sourceId: string, private readonly deps: ActorDeps) {
    this.now = deps.now ?? Date.now;
  }

  /** Runs one method in the sandbox; answers a waiting HTTP client as soon as `respond()` fires (or with an error when it never does). */
  async execute(input: RunInput, ctx: RunContext): Promise<Executed> {
    const started = this.now();
    let responded = false;
    let dedupe: DedupeStrategy | undefined;
    let result: ExecuteResult;
    try {
      const prepared = await this.prepare(input, ctx);
      dedupe = prepared.dedupe;
      result = await this.deps.executor.execute(
        { kind: 'execute', ...prepared.task, invocationId: input.invocationId, method: input.method, event: input.event },
        // Only a waiting client needs the early response channel (it costs a MessageChannel per run).
        input.replyTo
          ? {
              onResponse: (r) => {
                if (!input.replyTo || responded || ctx.stopped()) return;
                responded = true;
                this.deps.publisher.reply(input.replyTo, r);
              },
            }
          : {},
      );
    } catch (e) {
      result = this.failure(e as Error, started);
    }
    return this.finish(input, result, responded, dedupe, ctx);
  }

  /**
   * Runs several invocations of `run` as one sandbox task, one after the other
   * (each sees the db writes of the previous ones, each has its own result).
   * Returns undefined when the task failed as a whole (its sandbox died, say):
   * the caller then runs them one at a time, so that only the culprit fails.
   */
  async executeBatch(inputs: RunInput[], ctx: RunContext): Promise<Executed[] | undefined> {
    if (!this.deps.executor.executeBatch) return undefined;
    const started = this.now();
    const responded = new Set<number>();
    let prepared: Awaited<ReturnType<SourceExecution['prepare']>>;
    try {
      prepared = await this.prepare(inputs[0], ctx);
    } catch {
      return undefined;
    }
    const waiting = inputs.some((i) => i.replyTo);
    const out = await this.deps.executor.executeBatch(
      { kind: 'executeBatch', ...prepared.task, items: inputs.map((i) => ({ invocationId: i.invocationId, event: i.event })) },
      waiting
        ? {
            onResponse: (index, r) => {
              const replyTo = inputs[index]?.replyTo;
              if (!replyTo || responded.has(index) || ctx.stopped()) return;
              responded.add(index);
              this.deps.publisher.reply(replyTo, r);
            },
          }
        : {},
    );
    if ('failed' in out || out.results.length !== inputs.length) {
      this.deps.logger.warn({ source_id: this.sourceId, invocations: inputs.length, error: 'failed' in out ? out.failed.message : 'result count mismatch', duration_ms: this.now() - started }, 'batch failed as a whole: running its invocations one at a time');
      return undefined;
    }
    return out.results.map((result, i) => this.finish(inputs[i], result, responded.has(i), prepared.dedupe, ctx));
  }

  /** What every run of the source's current code shares: the component, props, limits. */
  private async prepare(input: RunInput, ctx: RunContext) {
    const account = ctx.desired?.ownerId ?? '';
    const component = await this.deps.components.get(input.codeHash, account);
    const dedupe = isDedupeStrategy(component.descriptor.dedupe) ? component.descriptor.dedupe : undefined;
    const props = resolveProps(this.deps.config.secretsKey, input.configuredProps, component.descriptor.props);
    const timeoutMs = Math.min(ctx.desired?.runTimeoutMs || this.deps.config.runTimeoutMs, this.deps.config.maxRunTimeoutMs);
    const { eventMaxBytes, emitsPerInvocation } = this.deps.config;
    const task = {
      account,
      sourceId: this.sourceId,
      codeHash: component.codeHash,
      code: component.code,
      props,
      db: ctx.db,
      endpointUrl: input.endpointUrl,
      timeoutMs,
      limits: { dbMaxBytes: this.dbMaxBytes(input.configuredProps), eventMaxBytes, emitsPerInvocation },
      dependencyVersions: (ctx.desired?.codeHash === component.codeHash ? ctx.desired.dependencyVersions : undefined) ?? component.dependencyVersions,
    };
    return { task, dedupe };
  }

  private failure(err: Error, started: number): ExecuteResult {
    return { emits: [], dbWrites: {}, logs: [], error: { name: err.name || 'Error', message: err.message, stack: err.stack }, durationMs: this.now() - started };
  }

  /** Answers a waiting client that `respond()` did not answer, counts the run. */
  private finish(input: RunInput, result: ExecuteResult, responded: boolean, dedupe: DedupeStrategy | undefined, ctx: RunContext): Executed {
    if (input.replyTo && !responded && !ctx.stopped()) {
      if (result.response) this.deps.publisher.reply(input.replyTo, result.response);
      else replyError(this.deps.publisher, input.replyTo, 502, result.error ? `the source failed before responding: ${result.error.message}` : 'the source finished without calling respond()');
    }
    this.deps.metrics.runDuration.observe({ method: input.method }, result.durationMs / 1000);
    return { result, dedupe, input };
  }

  /**
   * Publishes an execution's events and returns the state changes (db, dedupe) to persist (see `outputs`).
   */
  async publish(state: ActorState, executed: Executed, ctx: RunContext): Promise<Pick<ActorState, 'db' | 'dedupe'>> {
    const { events, ...changes } = this.outputs(state, executed, ctx);
    await this.publishEvents(events);
    return changes;
  }

  /** Publishes the events of one or more executions in one go (stored in order). */
  publishEvents(events: EmittedEvent[]): Promise<void> {
    return this.publishUnits([{ events }]);
  }

  /** Publishes units of events in one go (stored in order): loose events, or the runs of a message of several. */
  async publishUnits(units: EmitUnit[]): Promise<void> {
    const events = units.flatMap((u) => ('group' in u ? u.runs.flatMap((r) => r.events) : u.events));
    if (!events.length) return;
    await this.deps.publisher.publishUnits(units);
    for (const e of events) this.deps.metrics.emits.inc({ channel: e.name === '' ? 'default' : e.name.startsWith('$') ? e.name : 'custom' });
  }

  /**
   * An execution's events (logs, ordered and deduped emits, errors) and the
   * state changes (db, dedupe) to persist; unchanged parts keep their identity
   * so the caller can skip a write.
   */
  outputs(state: ActorState, executed: Executed, ctx: RunContext): Pick<ActorState, 'db' | 'dedupe'> & { events: EmittedEvent[] } {
    const { result, dedupe, input } = executed;
    const now = this.now();
    // Only an error needs the triggering event (size-checked) in its $errors event.
    const original = () => originalEventWithin(input.event, this.deps.config.eventMaxBytes);
    const out = buildOutputs(result, { sourceId: this.sourceId, ownerId: ctx.desired?.ownerId ?? '', invocationId: input.invocationId, dedupe, originalEvent: result.error ? original() : null, now, chain: chainOf(input.invocationId, input.chain) }, state.dedupe, ctx.clock);
    let db = state.db;
    const next = withWrites(state.db, result.dbWrites ?? {});
    if (next !== db) {
      // Measured as the sandbox measures it, so a run the sandbox let through is never refused here
      // (unless the whole state would not fit one NATS message: then it could never be saved).
      const size = dbSizeBytes(next);
      const overMessage = this.stateOverMessage(size, { ...state, db: next, dedupe: out.dedupe });
      const cap = this.dbMaxBytes(state.configuredProps);
      if (size > cap || overMessage) {
        const message = overMessage
          ? `$.service.db size limit exceeded: the source's state would be ${overMessage} bytes, more than one NATS message holds (${this.deps.config.stateMaxBytes} bytes); this run's db writes were discarded`
          : `$.service.db size limit exceeded: the db would hold ${size} bytes, the limit is ${cap} bytes; this run's db writes were discarded`;
        const error = { name: 'DbSizeLimitError', message };
        out.events.push({ id: ctx.clock.next(), emitterId: this.sourceId, ownerId: ctx.desired?.ownerId ?? '', name: '$errors', event: errorEvent(error, original(), now), ts: now, emitId: `${input.invocationId}:db0`, emittedAtMs: now, chain: chainOf(input.invocationId, input.chain) });
      } else db = next;
    }
    return { events: out.events, db, dedupe: out.dedupeChanged ? out.dedupe : state.dedupe };
  }

  /**
   * The db cap runs get: `DB_MAX_BYTES`, lowered when needed so that the whole
   * actor state (db plus the configured props, dedupe cache, recent invocations…) fits one NATS message.
   */
  private dbMaxBytes(configuredProps: Record<string, unknown> | undefined): number {
    const { dbMaxBytes, stateMaxBytes } = this.deps.config;
    if (!stateMaxBytes) return dbMaxBytes;
    return Math.max(0, Math.min(dbMaxBytes, stateMaxBytes - Math.min(STATE_ROOM_BYTES, Math.floor(stateMaxBytes / 8)) - propsBytes(configuredProps)));
  }

  /** The encoded size of a state that would not fit one NATS message, else 0 (encoded only when db and props are near the limit). */
  private stateOverMessage(dbBytes: number, state: ActorState): number {
    const max = this.deps.config.stateMaxBytes;
    if (!max || dbBytes + propsBytes(state.configuredProps) < max - 4 * STATE_ROOM_BYTES) return 0;
    const bytes = encodeJson(state).length + STATE_ENVELOPE_BYTES;
    return bytes > max ? bytes : 0;
  }

}

import { type DesiredSourceState, encodeJson } from '@app/contracts';
import { dbSizeBytes, type ExecuteResult, type MethodName } from '@app/sandbox';
import type { ActorDeps } from './actor-deps';
import type { ActorState } from './actor-state';
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
}

export interface Executed {
  result: ExecuteResult;
  dedupe: DedupeStrategy | undefined;
  input: RunInput;
}

/** Room kept in a state message beside the db (dedupe cache, recent invocations, timer, fence). */
const STATE_ROOM_BYTES = 64 * 1024;
/** What a save adds to the state it is given (emitter clock, fence, the invocation id in `recent`). */
const STATE_ENVELOPE_BYTES = 1024;

/** What an execution needs from its actor. */
export interface RunContext {
  desired: DesiredSourceState | undefined;
  db: Record<string, unknown>;
  clock: EmitterClock;
  stopped: () => boolean;
}

/** Answers a waiting HTTP client with an error body. */
export function replyError(publisher: ActorDeps['publisher'], subject: string, status: number, message: string): void {
  publisher.reply(subject, { status, headers: { 'content-type': 'application/json' }, body: JSON.stringify({ error: message, code: status === 404 ? 'not_found' : 'source_error' }) });
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
      const account = ctx.desired?.ownerId ?? '';
      const component = await this.deps.components.get(input.codeHash, account);
      dedupe = isDedupeStrategy(component.descriptor.dedupe) ? component.descriptor.dedupe : undefined;
      const props = resolveProps(this.deps.config.secretsKey, input.configuredProps, component.descriptor.props);
      const timeoutMs = Math.min(ctx.desired?.runTimeoutMs || this.deps.config.runTimeoutMs, this.deps.config.maxRunTimeoutMs);
      const { eventMaxBytes, emitsPerInvocation } = this.deps.config;
      const dbMaxBytes = this.dbMaxBytes();
      result = await this.deps.executor.execute(
        {
          kind: 'execute',
          account,
          sourceId: this.sourceId,
          invocationId: input.invocationId,
          codeHash: component.codeHash,
          code: component.code,
          method: input.method,
          props,
          db: ctx.db,
          event: input.event,
          endpointUrl: input.endpointUrl,
          timeoutMs,
          limits: { dbMaxBytes, eventMaxBytes, emitsPerInvocation },
          dependencyVersions: (ctx.desired?.codeHash === component.codeHash ? ctx.desired.dependencyVersions : undefined) ?? component.dependencyVersions,
        },
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
      const err = e as Error;
      result = { emits: [], dbWrites: {}, logs: [], error: { name: err.name || 'Error', message: err.message, stack: err.stack }, durationMs: this.now() - started };
    }
    if (input.replyTo && !responded && !ctx.stopped()) {
      if (result.response) this.deps.publisher.reply(input.replyTo, result.response);
      else replyError(this.deps.publisher, input.replyTo, 502, result.error ? `the source failed before responding: ${result.error.message}` : 'the source finished without calling respond()');
    }
    this.deps.metrics.runDuration.observe({ method: input.method }, result.durationMs / 1000);
    return { result, dedupe, input };
  }

  /**
   * Publishes an execution's events (logs, ordered and deduped emits, errors)
   * and returns the state changes (db, dedupe) to persist; unchanged parts keep
   * their identity so the caller can skip a write.
   */
  async publish(state: ActorState, executed: Executed, ctx: RunContext): Promise<Pick<ActorState, 'db' | 'dedupe'>> {
    const { result, dedupe, input } = executed;
    const now = this.now();
    // Only an error needs the triggering event (size-checked) in its $errors event.
    const original = () => originalEventWithin(input.event, this.deps.config.eventMaxBytes);
    const out = buildOutputs(result, { sourceId: this.sourceId, ownerId: ctx.desired?.ownerId ?? '', invocationId: input.invocationId, dedupe, originalEvent: result.error ? original() : null, now }, state.dedupe, ctx.clock);
    let db = state.db;
    const writes = Object.entries(result.dbWrites ?? {});
    if (writes.length) {
      const next = { ...state.db };
      for (const [k, v] of writes) {
        if (v === undefined) delete next[k];
        else next[k] = v;
      }
      // Measured as the sandbox measures it, so a run the sandbox let through is never refused here
      // (unless the whole state would not fit one NATS message: then it could never be saved).
      const size = dbSizeBytes(next);
      const overMessage = this.stateOverMessage(size, { ...state, db: next, dedupe: out.dedupe });
      if (size > this.dbMaxBytes() || overMessage) {
        const message = overMessage
          ? `$.service.db size limit exceeded: the source's state would be ${overMessage} bytes, more than one NATS message holds (${this.deps.config.stateMaxBytes} bytes); this run's db writes were discarded`
          : `$.service.db size limit exceeded: the db would hold ${size} bytes, the limit is ${this.dbMaxBytes()} bytes; this run's db writes were discarded`;
        const error = { name: 'DbSizeLimitError', message };
        out.events.push({ id: ctx.clock.next(), emitterId: this.sourceId, ownerId: ctx.desired?.ownerId ?? '', name: '$errors', event: errorEvent(error, original(), now), ts: now, emitId: `${input.invocationId}:db0`, emittedAtMs: now });
      } else db = next;
    }
    if (out.events.length) {
      await this.deps.publisher.publishEvents(out.events);
      for (const e of out.events) this.deps.metrics.emits.inc({ channel: e.name === '' ? 'default' : e.name.startsWith('$') ? e.name : 'custom' });
    }
    return { db, dedupe: out.dedupeChanged ? out.dedupe : state.dedupe };
  }

  /**
   * The db cap runs get: `DB_MAX_BYTES`, lowered when needed so that the whole
   * actor state (db plus dedupe cache, recent invocations…) fits one NATS message.
   */
  private dbMaxBytes(): number {
    const { dbMaxBytes, stateMaxBytes } = this.deps.config;
    if (!stateMaxBytes) return dbMaxBytes;
    return Math.min(dbMaxBytes, stateMaxBytes - Math.min(STATE_ROOM_BYTES, Math.floor(stateMaxBytes / 8)));
  }

  /** The encoded size of a state that would not fit one NATS message, else 0 (encoded only when the db is near the limit). */
  private stateOverMessage(dbBytes: number, state: ActorState): number {
    const max = this.deps.config.stateMaxBytes;
    if (!max || dbBytes < max - 4 * STATE_ROOM_BYTES) return 0;
    const bytes = encodeJson(state).length + STATE_ENVELOPE_BYTES;
    return bytes > max ? bytes : 0;
  }

}

import { EntityManager, raw } from '@mikro-orm/postgresql';
import { Source } from '@app/db';
import { UsageError } from '../admin/usage-error';

type Command = (flags: Record<string, string>, em: EntityManager, positional: string[]) => Promise<unknown>;

const MAX_SECONDS = 24 * 3600;

/** Operator commands on deployed sources (registered in the admin CLI). */
export const SOURCE_COMMANDS: Record<string, Command> = {
  /**
   * `sources set-timeout --source <dc_id> --seconds <n>|default`: the run timeout of one
   * source (DESIGN.md: a per-source setting, capped by the operator's MAX_RUN_TIMEOUT_MS
   * when the api publishes it). It is a change of the source: its revision moves and the
   * runner applies it like an update (deactivate, activate).
   */
  'sources set-timeout': async (flags, em) => {
    const id = flags.source;
    if (!id) throw new UsageError('--source is required');
    if (!flags.seconds) throw new UsageError('--seconds is required');
    const text = flags.seconds;
    let ms: number | null;
    if (text === 'default') ms = null;
    else if (text && /^\d+$/.test(text) && Number(text) >= 1 && Number(text) <= MAX_SECONDS) ms = Number(text) * 1000;
    else throw new Error(`--seconds must be a whole number from 1 to ${MAX_SECONDS}, or "default" (the installation's RUN_TIMEOUT_MS)`);
    const updated = await em.nativeUpdate(Source, { id, deletedAt: null }, { runTimeoutMs: ms, rev: raw('rev + 1'), updatedAt: Math.floor(Date.now() / 1000) });
    if (!updated) throw new Error(`source ${id} not found`);
    return { id, run_timeout_ms: ms };
  },
};

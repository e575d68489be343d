/** A chain's count is forgotten this long after its last routed run. */
const CHAIN_IDLE_MS = 10 * 60_000;
/** Chains remembered at most (the least recently routed are forgotten first). */
const CHAINS_MAX = 100_000;

/** What the router does with one more run of a chain: route it, route it as a refusal (recorded, not run), or drop it. */
export type ChainVerdict = 'run' | 'refuse' | 'drop';

/**
 * Runs routed per chain of subscriptions (`Chain.root`), for SUBSCRIPTION_CHAIN_MAX_RUNS: past the bound, or past
 * SUBSCRIPTION_MAX_DEPTH (`pastDepth`), each listener gets the chain's next event once more, as a refusal its runner
 * records as an `$errors` event, and nothing after that. Kept in this replica's memory, so with several delivery
 * replicas a chain may pass the bound once in each.
 */
export class ChainBudget {
  /** In order of last use. */
  private readonly chains = new Map<string, { runs: number; at: number; refused?: Set<string> }>();

  constructor(private readonly maxRuns: number, private readonly now: () => number = Date.now) {}

  take(root: string, listenerId: string, pastDepth = false): ChainVerdict {
    const now = this.now();
    const chain = this.chains.get(root) ?? { runs: 0, at: now };
    this.chains.delete(root);
    chain.at = now;
    this.chains.set(root, chain);
    this.forget(now);
    if (!pastDepth && ++chain.runs <= this.maxRuns) return 'run';
    chain.refused ??= new Set();
    if (chain.refused.has(listenerId)) return 'drop';
    chain.refused.add(listenerId);
    return 'refuse';
  }

  private forget(now: number): void {
    for (const [root, chain] of this.chains) {
      if (this.chains.size <= CHAINS_MAX && now - chain.at < CHAIN_IDLE_MS) return;
      this.chains.delete(root);
    }
  }
}

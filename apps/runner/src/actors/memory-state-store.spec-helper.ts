import { type ActorState, type ActorStateStore, StateConflictError, type StoredState } from './actor-state';

/** KV `source-state` in memory for actor specs, compare-and-set included; its first `failLoads` reads fail as NATS does while it elects a leader. */
export class MemoryStore implements ActorStateStore {
  data = new Map<string, StoredState>();
  rev = 0;
  constructor(public failLoads = 0) {}
  async load(id: string) {
    if (this.failLoads-- > 0) throw new Error('TIMEOUT');
    const s = this.data.get(id);
    return s ? structuredClone(s) : null;
  }
  async save(id: string, state: ActorState, revision: number) {
    if ((this.data.get(id)?.revision ?? 0) !== revision) throw new StateConflictError('conflict');
    this.data.set(id, { state: structuredClone(state), revision: ++this.rev });
    return this.rev;
  }
  async remove(id: string) {
    this.data.delete(id);
  }
}

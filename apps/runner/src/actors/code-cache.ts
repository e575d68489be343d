import type { ObjectStore } from 'nats';
import type { ComponentDescriptor } from '@app/component-model';
import type { Executor } from '../executor/executor.port';

export interface LoadedComponent {
  codeHash: string;
  code: string;
  descriptor: ComponentDescriptor;
  /** npm versions the sandbox resolved while reading the code. */
  dependencyVersions?: Record<string, string>;
}

/** Port: where component code comes from (object store `components` by code hash). */
export interface CodeSource {
  get(codeHash: string): Promise<string | null>;
}

export class ObjectStoreCodeSource implements CodeSource {
  constructor(private readonly os: ObjectStore) {}
  async get(codeHash: string): Promise<string | null> {
    const r = await this.os.get(codeHash);
    if (!r) return null;
    const chunks: Uint8Array[] = [];
    const reader = r.data.getReader();
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      if (value) chunks.push(value);
    }
    await r.error;
    return Buffer.concat(chunks).toString('utf8');
  }
}

/**
 * Component code and descriptor per code hash, loaded once per replica and
 * shared by every source of one account running that code (10,000 sources of
 * one component hold one copy). Least recently used entries go beyond `maxEntries`.
 */
export class ComponentCache {
  private readonly entries = new Map<string, Promise<LoadedComponent>>();

  constructor(
    private readonly source: CodeSource,
    private readonly executor: Pick<Executor, 'describe'>,
    private readonly onLoad: (outcome: 'ok' | 'error') => void = () => undefined,
    private readonly maxEntries = 2000,
  ) {}

  /** The code and descriptor of `codeHash` as read in `account`'s sandbox (an account never shares another's reading). */
  get(codeHash: string, account: string): Promise<LoadedComponent> {
    const key = `${account}|${codeHash}`;
    const hit = this.entries.get(key);
    if (hit) {
      this.entries.delete(key);
      this.entries.set(key, hit);
      return hit;
    }
    const p = this.load(codeHash, account);
    this.entries.set(key, p);
    p.catch(() => this.entries.delete(key));
    while (this.entries.size > this.maxEntries) this.entries.delete(this.entries.keys().next().value as string);
    return p;
  }

  private async load(codeHash: string, account: string): Promise<LoadedComponent> {
    try {
      const code = await this.source.get(codeHash);
      if (code === null) throw new Error(`component code ${codeHash} is not in the object store`);
      const described = await this.executor.describe(code, account);
      if (!described.descriptor) throw new Error(`component ${codeHash} cannot be loaded: ${described.error?.message ?? 'unknown error'}`);
      this.onLoad('ok');
      return { codeHash, code, descriptor: described.descriptor, dependencyVersions: described.dependencyVersions };
    } catch (e) {
      this.onLoad('error');
      throw e;
    }
  }
}

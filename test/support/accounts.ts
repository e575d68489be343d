import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { System } from './system';

export interface TestUser {
  id: string;
  apiKey: string;
}

const ROOT = join(__dirname, '..', '..');

/** Runs the real admin CLI against a system's database; returns its JSON line. */
export function admin(system: System, args: string[]): Record<string, string> {
  const r = spawnSync(process.execPath, [join(ROOT, 'scripts', 'admin.js'), ...args], {
    env: { ...process.env, DATABASE_URL: system.databaseUrl, DATA_DIR: system.env.DATA_DIR },
    encoding: 'utf8',
  });
  if (r.status !== 0) throw new Error(`admin ${args.join(' ')} failed (${r.status}): ${r.stderr}`);
  return JSON.parse(r.stdout) as Record<string, string>;
}

let counter = 0;
export function createUser(system: System, plan: 'free' | 'paid' = 'free'): TestUser {
  const username = `user${process.pid}x${++counter}x${Date.now() % 100000}`;
  const out = admin(system, ['users', 'create', '--username', username, '--email', `${username}@example.com`, '--plan', plan]);
  return { id: out.id, apiKey: out.api_key };
}

/** A small JSON client for the api. */
export function client(system: System, apiKey?: string) {
  const call = async (method: string, path: string, body?: unknown, headers: Record<string, string> = {}) => {
    const res = await fetch(system.baseUrl + path, {
      method,
      headers: {
        ...(apiKey ? { authorization: `Bearer ${apiKey}` } : {}),
        ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
        ...headers,
      },
      body: body !== undefined ? JSON.stringify(body) : undefined,
    });
    const text = await res.text();
    let json: any; // eslint-disable-line @typescript-eslint/no-explicit-any
    try {
      json = text ? JSON.parse(text) : undefined;
    } catch {
      json = undefined;
    }
    return { status: res.status, body: json, text, headers: res.headers };
  };
  return {
    get: (p: string, h?: Record<string, string>) => call('GET', p, undefined, h),
    post: (p: string, b?: unknown, h?: Record<string, string>) => call('POST', p, b, h),
    put: (p: string, b?: unknown, h?: Record<string, string>) => call('PUT', p, b, h),
    del: (p: string, h?: Record<string, string>) => call('DELETE', p, undefined, h),
  };
}

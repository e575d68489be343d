import { Agent, Dispatcher, request } from 'undici';

type RequestOptions = Omit<NonNullable<Parameters<typeof request>[1]>, 'dispatcher'>;

/** What one sprayed request was answered: its status, its headers and its body read as JSON (undefined if it was not). */
export interface Sprayed {
  status: number;
  headers: Dispatcher.ResponseData['headers'];
  body: { code?: string; error?: string } | undefined;
}

export interface Sprayers {
  /** How many answers had each status. */
  statuses: Map<number, number>;
  /** The answers `expected` refused, as `<status> <body>`. */
  malformed: string[];
  /** Stops the sprayers after the request each is sending and closes their connections. */
  stop(): Promise<void>;
}

/** A 503 the api sends when a bound is reached: `unavailable`, to be retried after a second. */
export const isRetryLater = (r: Sprayed): boolean => r.status === 503 && r.body?.code === 'unavailable' && typeof r.body.error === 'string' && r.headers['retry-after'] === '1';

/**
 * `count` callers, each on a connection of its own, sending requests one after the other (`next` gives each one's
 * url and options) until stopped, every answer tallied by status and checked with `expected`.
 */
export function startSprayers(count: number, next: () => { url: string; options?: RequestOptions }, expected: (r: Sprayed) => boolean): Sprayers {
  const agent = new Agent({ connections: count });
  const statuses = new Map<number, number>();
  const malformed: string[] = [];
  let spraying = true;
  const sprayers = Array.from({ length: count }, async () => {
    while (spraying) {
      const { url, options } = next();
      const r = await request(url, { ...options, dispatcher: agent });
      const sprayed: Sprayed = { status: r.statusCode, headers: r.headers, body: (await r.body.json().catch(() => undefined)) as Sprayed['body'] };
      statuses.set(sprayed.status, (statuses.get(sprayed.status) ?? 0) + 1);
      if (!expected(sprayed)) malformed.push(`${sprayed.status} ${JSON.stringify(sprayed.body)}`);
    }
  });
  return {
    statuses,
    malformed,
    async stop() {
      spraying = false;
      await Promise.all(sprayers);
      await agent.close();
    },
  };
}

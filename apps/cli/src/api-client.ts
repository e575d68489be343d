import { ApiResponseError, CliError, ForeignErrorAnswer } from './errors';
import { apiOrigin, ResolvedConfig } from './config';
import { arr, nullable, num, obj, readShape, Shape, ShapeError, str } from './answer-shape';

export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
export type Query = Record<string, string | number | boolean | undefined>;

export interface RequestOptions {
  query?: Query;
  body?: unknown;
  /** Most routes need the API key; `pd login` verifies a key it has not saved yet. */
  apiKey?: string;
  timeoutMs?: number;
  signal?: AbortSignal;
}

/** The most items asked for in one page (the API's maximum `limit`). */
const PAGE_SIZE = 100;
/** The most pages of one list `pd` reads: 100,000 items, far more than an account holds. */
const MAX_PAGES = 1000;

const pageOf = <T>(item: Shape<T>) => obj({ data: arr(item, PAGE_SIZE), page_info: obj({ total_count: num, end_cursor: nullable(str) }) });

// Saving a component may install its npm imports on the server first.
const DEFAULT_TIMEOUT_MS = 300_000;

/**
 * The most of one answer (or one event of a stream) `pd` reads: far more than any answer of this API (a page
 * of events ends at 8 MiB, an event is at most EVENT_MAX_BYTES, which NATS caps at 64 MiB), so a server that
 * sends without end is refused instead of filling memory until the timeout or the process dies.
 */
export const MAX_RESPONSE_BYTES = 128 * 1024 * 1024;
/** An error answer is `{ error, code, details? }`: its first 64 KiB say what went wrong. */
export const MAX_ERROR_BYTES = 64 * 1024;

/** Reads a body up to `limit` bytes: its text, and whether that is all of it (the rest is not read). */
export async function readUpTo(res: Response, limit: number): Promise<{ text: string; whole: boolean }> {
  const chunks: Buffer[] = [];
  let size = 0;
  const reader = res.body?.getReader();
  for (;;) {
    const next = reader ? await reader.read() : { done: true as const };
    if (next.done) return { text: Buffer.concat(chunks).toString('utf8'), whole: true };
    size += next.value.byteLength;
    chunks.push(Buffer.from(next.value.buffer, next.value.byteOffset, next.value.byteLength));
    if (size > limit) {
      await reader?.cancel().catch(() => undefined);
      return { text: Buffer.concat(chunks).subarray(0, limit).toString('utf8'), whole: false };
    }
  }
}

const IDEMPOTENT = new Set(['GET', 'HEAD', 'PUT', 'DELETE']);

function isStaleConnection(e: unknown): boolean {
  const code = (e as { cause?: { code?: string } })?.cause?.code;
  return code === 'UND_ERR_SOCKET' || code === 'ECONNRESET';
}

/** A thin JSON client for `/v1` that turns every failure into one clear CliError. */
export class ApiClient {
  constructor(readonly config: ResolvedConfig) {}

  get origin(): string {
    return apiOrigin(this.config.apiBaseUrl);
  }

  url(path: string, query?: Query): string {
    const base = path.startsWith('/sse/') ? this.origin : this.config.apiBaseUrl;
    const u = new URL(base + path);
    for (const [k, v] of Object.entries(query ?? {})) if (v !== undefined) u.searchParams.set(k, String(v));
    return u.toString();
  }

  requireKey(explicit?: string): string {
    const key = explicit ?? this.config.apiKey;
    if (!key) {
      throw new CliError(`no API key configured for profile "${this.config.profile}": run \`pd login\` or set PD_API_KEY`);
    }
    return key;
  }

  headers(apiKey?: string): Record<string, string> {
    return { authorization: `Bearer ${this.requireKey(apiKey)}`, accept: 'application/json', 'user-agent': 'pd-cli' };
  }

  /** Sends a request; resolves with the parsed body (undefined for 204), not yet read through a shape (see `read`). */
  async request(method: string, path: string, opts: RequestOptions = {}): Promise<unknown> {
    const url = this.url(path, opts.query);
    const headers = this.headers(opts.apiKey);
    if (opts.body !== undefined) headers['content-type'] = 'application/json';
    const timeout = AbortSignal.timeout(opts.timeoutMs ?? DEFAULT_TIMEOUT_MS);
    const signal = opts.signal ? AbortSignal.any([opts.signal, timeout]) : timeout;
    const init = { method, headers, body: opts.body === undefined ? undefined : JSON.stringify(opts.body), signal };
    const res = await fetch(url, init).catch((e: unknown) => {
      // A kept-alive connection the server closed meanwhile (e.g. it restarted during `pd dev`):
      // idempotent requests are sent once more on a fresh connection.
      if (IDEMPOTENT.has(method) && isStaleConnection(e)) return fetch(url, init);
      throw e;
    }).catch((e: unknown) => {
      throw this.networkError(e);
    });
    const { text, whole } = await readUpTo(res, res.ok ? MAX_RESPONSE_BYTES : MAX_ERROR_BYTES).catch((e: unknown) => {
      throw this.networkError(e);
    });
    if (!res.ok) throw this.httpError(res.status, text, `${method} ${url}`);
    if (!whole) throw this.oversized(`the answer to ${method} ${url}`);
    if (res.status === 204 || text.trim() === '') return undefined;
    try {
      return JSON.parse(text) as unknown;
    } catch {
      throw new CliError(`unexpected response from ${method} ${url}: HTTP ${res.status} with a body that is not JSON`);
    }
  }

  /** Sends a request and reads its answer through `shape`: an answer of another shape is a CliError naming what is wrong. */
  async read<T>(method: string, path: string, shape: Shape<T>, opts: RequestOptions = {}): Promise<T> {
    return this.readAnswer(await this.request(method, path, opts), shape, `${method} ${this.url(path, opts.query)}`);
  }

  /** `what` is the request (`GET <url>`) or the stream the answer came from. */
  readAnswer<T>(answer: unknown, shape: Shape<T>, what: string): T {
    try {
      return readShape(answer, shape);
    } catch (e) {
      if (e instanceof ShapeError) throw new CliError(`unexpected answer from ${what}: ${e.message}`);
      throw e;
    }
  }

  get<T>(path: string, shape: Shape<T>, query?: Query): Promise<T> {
    return this.read('GET', path, shape, { query });
  }

  /**
   * Reads every page of a paginated list (`{ page_info, data }`), following `end_cursor`. A cursor that comes
   * back, or more than MAX_PAGES pages, is an unexpected answer: a list that would otherwise never end.
   */
  async listAll<T>(path: string, item: Shape<T>, query: Query = {}): Promise<T[]> {
    const items: T[] = [];
    const cursors = new Set<string>();
    let after: string | undefined;
    for (let pages = 1; ; pages++) {
      const q = { ...query, limit: PAGE_SIZE, after };
      const page = await this.get(path, pageOf(item), q);
      items.push(...page.data);
      const cursor = page.page_info.end_cursor;
      if (page.data.length === 0 || !cursor || items.length >= page.page_info.total_count) return items;
      const unexpected = (what: string): CliError => new CliError(`unexpected answer from GET ${this.url(path, q)}: ${what}`);
      if (cursors.has(cursor)) throw unexpected("page_info.end_cursor repeats an earlier page's: the list would never end");
      if (pages >= MAX_PAGES) throw unexpected(`page_info says more items follow after ${pages} pages (${items.length} items): the list would never end`);
      cursors.add(cursor);
      after = cursor;
    }
  }

  /** A server that sends more than any answer of this API is not this API. */
  oversized(what: string): CliError {
    return new CliError(`${what} is larger than ${MAX_RESPONSE_BYTES / 1024 / 1024} MiB, more than any answer of this API: is api_base_url ${this.config.apiBaseUrl} right?`);
  }

  networkError(e: unknown): CliError {
    if (e instanceof CliError) return e;
    const err = e as Error & { cause?: { code?: string; message?: string } };
    if (err?.name === 'TimeoutError') return new CliError(`the API at ${this.config.apiBaseUrl} did not answer in time`);
    if (err?.name === 'AbortError') return new CliError('request aborted');
    const code = err?.cause?.code;
    const reason =
      code === 'ECONNREFUSED'
        ? 'connection refused (is the server running?)'
        : code === 'ENOTFOUND' || code === 'EAI_AGAIN'
          ? 'host not found'
          : code === 'ECONNRESET' || code === 'UND_ERR_SOCKET'
            ? 'the connection was closed by the server'
            : (err?.cause?.message ?? err?.message ?? String(e));
    return new CliError(`cannot reach the API at ${this.config.apiBaseUrl}: ${reason}; check api_base_url (\`pd config\`) or PD_API_BASE_URL`);
  }

  /** `request` (`GET <url>`) is named when the answer is not an error of this API: a server that is not this service. */
  httpError(status: number, text: string, request: string): CliError {
    let body: { error?: unknown; code?: unknown; details?: unknown } | undefined;
    try {
      body = JSON.parse(text) as typeof body;
    } catch {
      body = undefined;
    }
    if (typeof body?.error !== 'string' && status !== 401) {
      const start = text.replace(/\s+/g, ' ').trim();
      const shown = start ? ` ("${start.length > 100 ? `${start.slice(0, 100)}…` : start}")` : '';
      return new ForeignErrorAnswer(status, `http_${status}`, `${request} answered HTTP ${status} with a body that is not an error of this API${shown}: is api_base_url ${this.config.apiBaseUrl} right?`);
    }
    const message = typeof body?.error === 'string' ? body.error : `HTTP ${status}`;
    const code = typeof body?.code === 'string' ? body.code : `http_${status}`;
    const details = body?.details && typeof body.details === 'object' ? (body.details as Record<string, unknown>) : undefined;
    if (status === 401) {
      return new ApiResponseError(status, code, `authentication failed (${message}): check your API key with \`pd login\` or PD_API_KEY (profile "${this.config.profile}")`, details);
    }
    // Details are shown only when the message does not already say what they hold.
    const said = (v: unknown): boolean => (Array.isArray(v) ? v.every(said) : v === null || typeof v === 'object' ? false : message.includes(String(v)));
    const news = details ? Object.values(details).some((v) => !said(v)) : false;
    const suffix = details && news ? ` ${JSON.stringify(details)}` : '';
    if (status === 404 && /^no such route/.test(message)) {
      return new ApiResponseError(status, code, `${message} (HTTP 404): is api_base_url ${this.config.apiBaseUrl} right? It ends in /v1`, details);
    }
    return new ApiResponseError(status, code, `${message}${suffix} (HTTP ${status})`, details);
  }
}

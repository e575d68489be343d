/** Reading routes and schemas out of the served OpenAPI document, for tests that generate requests from it. */

export type Json = Record<string, unknown>;

export interface DocParameter {
  name: string;
  in: 'path' | 'query';
  required: boolean;
  schema: Json;
}

export interface DocOperation {
  method: string;
  path: string;
  operationId: string;
  extension: boolean;
  public: boolean;
  parameters: DocParameter[];
  body?: Json;
  /** status → JSON schema (`null`: no body, `'sse'`: an event stream, `'text'`: plain text such as metrics). */
  success: Record<string, Json | null | 'sse' | 'text'>;
  /** Every status the operation declares. */
  statuses: number[];
}

export function operationsOf(doc: Json): DocOperation[] {
  const out: DocOperation[] = [];
  for (const [path, item] of Object.entries(doc.paths as Record<string, Record<string, Json>>)) {
    for (const [method, op] of Object.entries(item)) {
      const responses = op.responses as Record<string, Json>;
      const success: DocOperation['success'] = {};
      for (const [status, r] of Object.entries(responses)) {
        if (!status.startsWith('2')) continue;
        const content = r.content as Record<string, { schema: Json }> | undefined;
        success[status] = content?.['application/json'] ? content['application/json'].schema : content?.['text/event-stream'] ? 'sse' : content?.['text/plain'] ? 'text' : null;
      }
      const body = (op.requestBody as { content: Record<string, { schema: Json }> } | undefined)?.content['application/json'].schema;
      out.push({
        method: method.toUpperCase(),
        path,
        operationId: String(op.operationId),
        extension: op['x-extension'] === true,
        public: Array.isArray(op.security) && op.security.length === 0,
        parameters: (op.parameters as DocParameter[]) ?? [],
        body,
        success,
        statuses: Object.keys(responses).map(Number),
      });
    }
  }
  return out;
}

/** Fills `{name}` segments of a path. */
export function fillPath(path: string, values: Record<string, string>): string {
  // Lone surrogates cannot be percent-encoded: they become U+FFFD, as a browser would send them.
  const wellFormed = (v: string): string => v.replace(/[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g, '\uFFFD');
  return path.replace(/\{([^}]+)\}/g, (_m, name: string) => encodeURIComponent(wellFormed(values[name] ?? `missing-${name}`)));
}

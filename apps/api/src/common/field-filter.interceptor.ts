import { CallHandler, ExecutionContext, Injectable, NestInterceptor } from '@nestjs/common';
import { FastifyRequest } from 'fastify';
import { map, Observable } from 'rxjs';

/** The field names of an include / exclude; none named (`""`, `","`) is the parameter absent. */
function fields(value: unknown): string[] | undefined {
  if (typeof value !== 'string') return undefined;
  const names = value.split(',').map((f) => f.trim()).filter(Boolean);
  return names.length ? names : undefined;
}

function filterObject(item: unknown, include?: string[], exclude?: string[]): unknown {
  if (typeof item !== 'object' || item === null || Array.isArray(item)) return item;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(item)) {
    if (include && !include.includes(k)) continue;
    if (exclude && exclude.includes(k)) continue;
    out[k] = v;
  }
  return out;
}

/** The common `include` / `exclude` parameters of a request: each object given keeps or drops its top-level fields. */
export function fieldFilter(params: Record<string, unknown>): (item: unknown) => unknown {
  const include = fields(params.include);
  const exclude = fields(params.exclude);
  return include || exclude ? (item) => filterObject(item, include, exclude) : (item) => item;
}

/** The common `include` / `exclude` parameters (query or body): keep or drop top-level fields of each returned object. */
@Injectable()
export class FieldFilterInterceptor implements NestInterceptor {
  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    const req = context.switchToHttp().getRequest<FastifyRequest>();
    const q = (req.query ?? {}) as Record<string, unknown>;
    // Like every parameter of a POST or PUT, they may come in the JSON body instead (body wins).
    const b = typeof req.body === 'object' && req.body !== null && !Array.isArray(req.body) ? (req.body as Record<string, unknown>) : {};
    const include = fields(b.include ?? q.include);
    const exclude = fields(b.exclude ?? q.exclude);
    if (!include && !exclude) return next.handle();
    return next.handle().pipe(
      map((body: unknown) => {
        if (typeof body !== 'object' || body === null || !('data' in body)) return body;
        const data = (body as { data: unknown }).data;
        const filtered = Array.isArray(data) ? data.map((d) => filterObject(d, include, exclude)) : filterObject(data, include, exclude);
        return { ...body, data: filtered };
      }),
    );
  }
}

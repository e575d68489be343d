import { TSchema, Type } from '@sinclair/typebox';

/** Building blocks shared by the route declarations. */

export const Timestamp = Type.Integer({ description: 'epoch seconds' });

/** `{ data: <item> }`, the envelope of single-object responses. */
export const Data = <T extends TSchema>(item: T) => Type.Object({ data: item });

export const PageInfo = Type.Object({
  total_count: Type.Integer({ minimum: 0 }),
  count: Type.Integer({ minimum: 0 }),
  start_cursor: Type.String(),
  end_cursor: Type.String(),
});

/** A keyset-paginated list (docs/api.md "Pagination"). */
export const PageOf = <T extends TSchema>(item: T) => Type.Object({ page_info: PageInfo, data: Type.Array(item) });

/** `limit`, `after`, `before` of every paginated list. */
export const PAGE_QUERY = {
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, description: 'page size, default 10' })),
  after: Type.Optional(Type.String({ maxLength: 1024, description: 'cursor from page_info.end_cursor: the next (older) page' })),
  before: Type.Optional(Type.String({ maxLength: 1024, description: 'cursor from page_info.start_cursor: the previous (newer) page' })),
};

export const Id = (description: string) => Type.String({ minLength: 1, description });

/** An event id (`<epoch_ms>-<seq>`); a malformed one answers 400 "… must be an event id like 1700000000000-0". */
export const EventIdText = (description: string) => Type.String({ pattern: '^\\d{1,15}-\\d{1,9}$', 'x-expected': 'an event id like 1700000000000-0', description });

/** `expand` of event summary reads: `event` (no truncation), `summary` (the `$emit` summary), or both. */
export const Expand = Type.Union([Type.Literal(''), Type.Literal('event'), Type.Literal('summary'), Type.Literal('event,summary'), Type.Literal('summary,event')], {
  description: '"event" (full events, no truncation), "summary" (each event\'s $emit summary), or "event,summary"',
});

/** A string that may also be null (to clear it). */
export const NullableString = (maxLength: number) => Type.Union([Type.String({ maxLength }), Type.Null()]);

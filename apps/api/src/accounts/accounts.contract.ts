import { Type } from '@sinclair/typebox';
import { orgTwinOf, RouteContract } from '../contract/route-contract';
import { Data, Id } from '../contract/schemas';

/** The spec's `orgs` items: four strings, never null (an org made without an email has ""). */
const Org = Type.Object({ name: Type.String(), id: Type.String(), orgname: Type.String(), email: Type.String() }, { additionalProperties: false });

/** The free form (orgs and daily quotas) or the paid form (billing period figures). */
export const Me = Type.Object(
  {
    id: Type.String(),
    username: Type.String(),
    email: Type.String(),
    orgs: Type.Optional(Type.Array(Org)),
    daily_compute_time_quota: Type.Optional(Type.Integer()),
    daily_compute_time_used: Type.Optional(Type.Integer()),
    daily_invocations_quota: Type.Optional(Type.Integer()),
    daily_invocations_used: Type.Optional(Type.Integer()),
    billing_period_start_ts: Type.Optional(Type.Integer()),
    billing_period_end_ts: Type.Optional(Type.Integer()),
    billing_period_invocations: Type.Optional(Type.Integer()),
  },
  { additionalProperties: false },
);

/** Longest window of `GET …/usage` (a year). */
export const USAGE_MAX_DAYS = 366;
export const USAGE_DEFAULT_DAYS = 30;

const Day = Type.String({ pattern: '^\\d{4}-\\d{2}-\\d{2}$', description: 'a UTC date, YYYY-MM-DD' });
const Quota = (what: string) => Type.Union([Type.Integer({ minimum: 0 }), Type.Null()], { description: `${what} per UTC day allowed by the plan; null when the plan sets none (paid plan, orgs)` });

/** Invocations and compute time per UTC day over the last `days` days, oldest first, today last. */
export const Usage = Type.Object(
  {
    owner_id: Type.String({ description: 'the user (u_…) or org (o_…) whose usage this is' }),
    from: Day,
    to: Day,
    daily_invocations_quota: Quota('invocations'),
    daily_compute_time_quota: Quota('compute time (ms)'),
    total_invocations: Type.Integer({ minimum: 0 }),
    total_compute_time_ms: Type.Integer({ minimum: 0 }),
    days: Type.Array(
      Type.Object(
        { day: Day, invocations: Type.Integer({ minimum: 0 }), compute_time_ms: Type.Integer({ minimum: 0, description: 'compute time of the invocations finished that day, in ms' }) },
        { additionalProperties: false },
      ),
      { description: 'one entry per UTC day from `from` to `to`, oldest first; a day without usage has zeros' },
    ),
  },
  { additionalProperties: false },
);

const UsageQuery = Type.Object({
  days: Type.Optional(Type.Integer({ minimum: 1, maximum: USAGE_MAX_DAYS, description: `how many UTC days, today included (default ${USAGE_DEFAULT_DAYS})` })),
});

/** An org as Pipedream's "Get a Workspace" shows it (without its credit figures: this service counts invocations). */
export const Workspace = Type.Object({ id: Type.String(), orgname: Type.String(), name: Type.String(), email: Type.String() }, { additionalProperties: false });

export const ACCOUNT_ROUTES: RouteContract[] = [
  { method: 'GET', path: '/v1/users/me', tag: 'users', summary: 'The current user', responses: { 200: Data(Me) } },
  {
    method: 'GET',
    path: '/v1/users/me/workspaces',
    tag: 'users',
    summary: 'The orgs (workspaces) you are a member of',
    description: 'Oldest first; the same orgs as `orgs` of GET /users/me.',
    responses: { 200: Type.Object({ data: Type.Array(Type.Object({ id: Type.String(), orgname: Type.String(), name: Type.String() }, { additionalProperties: false })) }) },
  },
  {
    method: 'GET',
    path: '/v1/workspaces/{org_id}',
    tag: 'users',
    summary: 'An org (workspace) you are a member of',
    description: 'Members only (404 otherwise).',
    params: Type.Object({ org_id: Id('o_…') }),
    responses: { 200: Data(Workspace) },
    errors: [404],
  },
  {
    method: 'GET',
    path: '/v1/users/me/usage',
    tag: 'users',
    extension: true,
    summary: 'Your invocations and compute time per UTC day',
    description: `The last \`days\` UTC days (today last, still counting), with the daily quotas of your plan. ${orgTwinOf('GET /orgs/{org_id}/usage')}`,
    query: UsageQuery,
    responses: { 200: Data(Usage) },
  },
  {
    method: 'GET',
    path: '/v1/orgs/{org_id}/usage',
    tag: 'users',
    extension: true,
    summary: "An org's invocations and compute time per UTC day",
    description: 'The usage of sources owned by the org; members only (404 otherwise).',
    params: Type.Object({ org_id: Id('o_…') }),
    query: UsageQuery,
    responses: { 200: Data(Usage) },
    errors: [404],
  },
];

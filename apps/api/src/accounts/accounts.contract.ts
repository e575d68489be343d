import { Type } from '@sinclair/typebox';
import { RouteContract } from '../contract/route-contract';
import { Data } from '../contract/schemas';

const Org = Type.Object({ name: Type.Union([Type.String(), Type.Null()]), id: Type.String(), orgname: Type.Union([Type.String(), Type.Null()]), email: Type.Union([Type.String(), Type.Null()]) });

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

export const ACCOUNT_ROUTES: RouteContract[] = [{ method: 'GET', path: '/v1/users/me', tag: 'users', summary: 'The current user', responses: { 200: Data(Me) } }];

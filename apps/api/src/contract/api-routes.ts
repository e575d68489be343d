import { Type } from '@sinclair/typebox';
import { ACCOUNT_ROUTES } from '../accounts/accounts.contract';
import { APP_HOOK_ROUTES } from '../app-hooks/app-hooks.contract';
import { COMPONENT_ROUTES } from '../components/components.contract';
import { EVENT_ROUTES } from '../events/events.contract';
import { SOURCE_ROUTES } from '../sources/sources.contract';
import { SSE_ROUTES } from '../sse/sse.contract';
import { SUBSCRIPTION_ROUTES } from '../subscriptions/subscriptions.contract';
import { WEBHOOK_ROUTES } from '../webhooks/webhooks.contract';
import { WORKFLOW_ROUTES } from '../workflows/workflows.contract';
import { RouteContract } from './route-contract';

const META_ROUTES: RouteContract[] = [
  {
    method: 'GET',
    path: '/healthz',
    tag: 'meta',
    extension: true,
    public: true,
    summary: 'Liveness and what is still starting',
    responses: { 200: Type.Object({ status: Type.Literal('ok'), registry: Type.String(), component_gc: Type.Object({}, { additionalProperties: true }), isolation: Type.String({ description: 'namespaces or none' }),
        ingest: Type.Object(
          { invocations_pending: Type.Integer(), events_unrouted: Type.Integer(), max_pending: Type.Integer(), max_pending_per_source: Type.Integer(), refused_total: Type.Integer() },
          { description: 'back-pressure of HTTP ingress: invocations waiting and emitted events not yet routed by the delivery app (as last read every INGEST_BACKLOG_POLL_MS), the bounds (0 = none), requests this replica refused with 429' },
        ),
      }),
    },
  },
  {
    method: 'GET',
    path: '/metrics',
    tag: 'meta',
    extension: true,
    public: true,
    summary: "This api replica's back-pressure figures in the Prometheus text format",
    description: 'api_ingest_invocations_pending, api_ingest_events_unrouted, api_ingest_deliveries_pending, api_ingest_retries_pending, api_ingest_drain_per_second, api_ingest_bound{bound} and api_ingest_refused_total{scope,waiting}: service-wide totals with no ids (docs/operations.md, "Api metrics").',
    responses: { 200: 'prometheus' },
  },
  {
    method: 'GET',
    path: '/v1/openapi.json',
    tag: 'meta',
    extension: true,
    public: true,
    summary: 'This OpenAPI 3.1 document',
    responses: { 200: Type.Object({ openapi: Type.String(), paths: Type.Object({}, { additionalProperties: true }) }, { additionalProperties: true }) },
  },
];

/** Every route the api serves besides the HTTP interface of sources (`/e/<endpoint_key>`), each declared once. */
export const API_ROUTES: RouteContract[] = [
  ...COMPONENT_ROUTES,
  ...SOURCE_ROUTES,
  ...APP_HOOK_ROUTES,
  ...EVENT_ROUTES,
  ...SUBSCRIPTION_ROUTES,
  ...WEBHOOK_ROUTES,
  ...ACCOUNT_ROUTES,
  ...SSE_ROUTES,
  ...WORKFLOW_ROUTES,
  ...META_ROUTES,
];

import { Names } from '@app/contracts';

/** The apps that connect to NATS, each as its own user. */
export const NATS_APPS = ['api', 'runner', 'delivery'] as const;
export type NatsApp = (typeof NATS_APPS)[number];

/** A nats-server user's permissions (the server config's `permissions` block). */
export interface NatsPermissions {
  publish: { allow: string[] };
  subscribe: { allow: string[] };
}

/** The reply-subject prefix of one user: no user can subscribe to another's replies. */
export function natsInboxPrefix(user: string): string {
  return `_INBOX_${user.replace(/[^A-Za-z0-9_-]/g, '_')}`;
}

export const kvStream = (bucket: string): string => `KV_${bucket}`;
export const objStream = (store: string): string => `OBJ_${store}`;
const kvSubjects = (bucket: string): string => `$KV.${bucket}.>`;
const objSubjects = (store: string): string => `$O.${store}.>`;

/** Reading a stream: its info, and single messages (KV and object store gets). */
function readStream(stream: string): string[] {
  return [`$JS.API.STREAM.INFO.${stream}`, `$JS.API.STREAM.MSG.GET.${stream}`, `$JS.API.DIRECT.GET.${stream}`, `$JS.API.DIRECT.GET.${stream}.>`];
}

/**
 * Consuming a stream: creating, reading and deleting consumers, pulling, acking,
 * answering flow control (ordered consumers: KV watches, object reads, SSE).
 * A consumer's deliver subject is not covered by any permission in JetStream,
 * so only streams an app must read get this.
 */
function consumeStream(stream: string): string[] {
  return [
    `$JS.API.CONSUMER.CREATE.${stream}`,
    `$JS.API.CONSUMER.CREATE.${stream}.>`,
    `$JS.API.CONSUMER.DURABLE.CREATE.${stream}.>`,
    `$JS.API.CONSUMER.INFO.${stream}.>`,
    `$JS.API.CONSUMER.DELETE.${stream}.>`,
    `$JS.API.CONSUMER.MSG.NEXT.${stream}.>`,
    `$JS.ACK.${stream}.>`,
    `$JS.FC.${stream}.>`,
  ];
}

/** Creating and changing a stream's configuration: only the api does it (a stream's config can republish or source into any subject). */
function manageStream(stream: string): string[] {
  return [`$JS.API.STREAM.CREATE.${stream}`, `$JS.API.STREAM.UPDATE.${stream}`];
}

/** Every stream of an installation, KV buckets and the object store included. */
export function installationStreams(n: Names): string[] {
  return [n.invocationsStream, n.emitsStream, n.deliveriesStream, n.usageStream, n.sendsStream, kvStream(n.sourcesBucket), kvStream(n.sourceStateBucket), kvStream(n.leasesBucket), objStream(n.componentsStore)];
}

/**
 * What each app may publish and subscribe to under an installation's prefix,
 * found from every subject, bucket and stream it uses:
 *
 * - api: stores invocations (HTTP ingress, manual runs), writes desired state
 *   (KV `sources`), the collector's and reconciler's slots (KV `leases`) and
 *   component code (object store); creates and updates every stream and bucket
 *   at start; reads EMITS for SSE; purges a deleted webhook's deliveries and a deleted
 *   source's or workflow's invocations; erases deleted events from EMITS, storing
 *   again the other events of a message holding several (so it publishes emits);
 *   publishes `changed.*`, `ctl.restart-sandboxes` and the `ctl.delete-events` request; receives
 *   custom HTTP responses on `resp.*`. It cannot publish deliveries or usage,
 *   nor write actor state.
 * - runner: consumes INVOCATIONS, watches KV `sources` and reads component code
 *   (both read only), reads and writes KV `source-state` and `leases` (and
 *   lists the live replicas' keys there),
 *   publishes emits (and reads an EMITS message back by sequence: a part of a
 *   message's events a run again found stored), usage, workflow sends, timer
 *   invocations and custom HTTP responses; hears `ctl.restart-sandboxes`. It
 *   cannot write desired state or code, publish deliveries, nor change streams.
 * - delivery: consumes EMITS, USAGE, DELIVERIES and SENDS, publishes deliveries,
 *   workflow sends (a retry or a held-back send, republished when due), listener
 *   invocations, `changed.webhooks`, and answers `ctl.delete-events`.
 *   It cannot touch any bucket nor publish emits.
 *
 * Every app reads stream info (a non-api app waits for the api's streams) and
 * gets its own reply subjects (`natsInboxPrefix`).
 */
/**
 * `apiInboxPrefix`: where the api's requests want their answers (delivery answers
 * `ctl.delete-events` there). Not `allow_responses`: with it the server records
 * the reply subject of every message delivered to the app (every JetStream
 * message has one) and the delivery app slowed to a crawl (about 15x fewer
 * invocations/s through the whole system).
 */
export function natsPermissions(app: NatsApp, n: Names, inboxPrefix: string, apiInboxPrefix: string): NatsPermissions {
  const subject = (...tokens: string[]): string => (n.prefix ? [n.prefix, ...tokens] : tokens).join('.');
  const all = installationStreams(n);
  // STREAM.NAMES: the client looks up the stream of a subject (object store reads) by name; it lists names only.
  const info = ['$JS.API.INFO', '$JS.API.STREAM.NAMES', ...all.map((s) => `$JS.API.STREAM.INFO.${s}`)];
  const inbox = `${inboxPrefix}.>`;
  switch (app) {
    case 'api':
      return {
        publish: {
          allow: [
            ...info,
            ...all.flatMap(manageStream),
            subject('inv', '>'),
            subject('changed', '>'),
            subject('ctl', '>'),
            kvSubjects(n.sourcesBucket),
            kvSubjects(n.leasesBucket),
            objSubjects(n.componentsStore),
            `$JS.API.STREAM.PURGE.${n.deliveriesStream}`,
            // A deleted workflow's sends not performed yet.
            `$JS.API.STREAM.PURGE.${n.sendsStream}`,
            // A deleted source's or workflow's waiting invocations.
            `$JS.API.STREAM.PURGE.${n.invocationsStream}`,
            // Deleted events leave EMITS too (DELETE /sources/{id}/events): a purge of the source's subject, or one message at a time.
            `$JS.API.STREAM.PURGE.${n.emitsStream}`,
            `$JS.API.STREAM.MSG.DELETE.${n.emitsStream}`,
            // A range that covers part of a message holding several events: its other events are stored again (emits-eraser.ts).
            n.allEmits,
            // Back-pressure reads a sample of the messages waiting for the router, to tell how many events they hold and whose.
            `$JS.API.STREAM.MSG.GET.${n.emitsStream}`,
            `$JS.API.STREAM.PURGE.${objStream(n.componentsStore)}`,
            ...readStream(kvStream(n.sourcesBucket)),
            ...readStream(kvStream(n.leasesBucket)),
            ...readStream(objStream(n.componentsStore)),
            ...consumeStream(n.emitsStream),
            ...consumeStream(kvStream(n.sourcesBucket)),
            ...consumeStream(objStream(n.componentsStore)),
          ],
        },
        subscribe: { allow: [inbox, subject('resp', '>'), subject('sse', '>'), subject('changed', 'endpoints'), subject('changed', 'deleted'), n.restartSandboxes] },
      };
    case 'runner':
      return {
        publish: {
          allow: [
            ...info,
            subject('inv', '>'),
            subject('emit', '>'),
            // A part of a message's events found already stored (a run again of the message) is read back.
            `$JS.API.STREAM.MSG.GET.${n.emitsStream}`,
            subject('usage', '>'),
            subject('send', '>'),
            subject('sse', '>'),
            subject('resp', '>'),
            kvSubjects(n.sourceStateBucket),
            kvSubjects(n.leasesBucket),
            ...readStream(kvStream(n.sourcesBucket)),
            ...readStream(kvStream(n.sourceStateBucket)),
            ...readStream(kvStream(n.leasesBucket)),
            ...readStream(objStream(n.componentsStore)),
            ...consumeStream(n.invocationsStream),
            ...consumeStream(kvStream(n.sourcesBucket)),
            ...consumeStream(kvStream(n.leasesBucket)),
            ...consumeStream(objStream(n.componentsStore)),
          ],
        },
        // Access changes that restart accounts' sandbox processes (every replica hears them: no queue group).
        subscribe: { allow: [inbox, n.restartSandboxes] },
      };
    case 'delivery':
      return {
        publish: {
          allow: [
            ...info,
            subject('inv', '>'),
            subject('dlv', '>'),
            subject('send', '>'),
            subject('changed', '>'),
            ...consumeStream(n.emitsStream),
            ...consumeStream(n.usageStream),
            ...consumeStream(n.deliveriesStream),
            ...consumeStream(n.sendsStream),
            `${apiInboxPrefix}.>`,
          ],
        },
        subscribe: { allow: [inbox, subject('changed', '>'), subject('ctl', '>')] },
      };
  }
}

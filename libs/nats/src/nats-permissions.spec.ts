import { Names } from '@app/contracts';
import { natsInboxPrefix, natsPermissions } from './nats-permissions';

// The permission lists themselves; test/nats-auth.e2e-spec.ts checks what the server does with them.
describe('per-app NATS permissions', () => {
  const names = new Names('acme');
  const pub = (app: 'api' | 'runner' | 'delivery'): string[] => natsPermissions(app, names, natsInboxPrefix(`acme_${app}`), natsInboxPrefix('acme_api')).publish.allow;

  it('lets only the api write desired state and code, and change streams', () => {
    expect(pub('api')).toEqual(expect.arrayContaining(['$KV.acme_sources.>', '$O.acme_components.>', '$JS.API.STREAM.UPDATE.acme_EMITS', '$JS.API.STREAM.CREATE.KV_acme_sources']));
    for (const app of ['runner', 'delivery'] as const) {
      expect(pub(app).filter((s) => /^\$KV\.acme_sources|^\$O\.|STREAM\.(CREATE|UPDATE|DELETE|PURGE)/.test(s))).toEqual([]);
    }
  });

  it('lets only the runner write actor state, only delivery publish deliveries, and never delivery publish emits', () => {
    const holders = (subject: string): string[] => (['api', 'runner', 'delivery'] as const).filter((a) => pub(a).includes(subject));
    // The api stores again the events a range delete leaves of a message holding several.
    expect(holders('acme.emit.>')).toEqual(['api', 'runner']);
    expect(holders('$KV.acme_source-state.>')).toEqual(['runner']);
    expect(holders('acme.dlv.>')).toEqual(['delivery']);
    // Delivery republishes a workflow send's retry when it is due.
    expect(holders('acme.send.>')).toEqual(['runner', 'delivery']);
    expect(holders('acme.inv.>')).toEqual(['api', 'runner', 'delivery']);
  });

  it('scopes every subject to the installation and each app to its own replies', () => {
    for (const app of ['api', 'runner', 'delivery'] as const) {
      const p = natsPermissions(app, names, natsInboxPrefix(`acme_${app}`), natsInboxPrefix('acme_api'));
      expect([...p.publish.allow, ...p.subscribe.allow].filter((s) => !/acme/.test(s) && !['$JS.API.INFO', '$JS.API.STREAM.NAMES', `_INBOX_acme_${app}.>`].includes(s))).toEqual([]);
      expect(p.subscribe.allow).toContain(`_INBOX_acme_${app}.>`);
      expect(p.subscribe.allow.some((s) => s.startsWith('_INBOX.'))).toBe(false);
    }
  });

  it('needs no prefix token without NATS_PREFIX', () => {
    expect(natsPermissions('runner', new Names(''), '_INBOX_runner', '_INBOX_api').publish.allow).toEqual(expect.arrayContaining(['emit.>', '$KV.source-state.>', '$JS.ACK.INVOCATIONS.>']));
  });
});

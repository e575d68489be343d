import { routesOf } from './route-queries';

const bytes = (text: string): Uint8Array => Buffer.from(text);

describe('routesOf (the payload of changed.subscriptions / webhooks / sources)', () => {
  it('names the routes a change carries', () => {
    expect(routesOf(bytes('{"emitters":[{"emitter_id":"dc_1","owner_id":"u_1"}],"listeners":["wh_1"]}'))).toEqual({
      emitters: [{ emitter_id: 'dc_1', owner_id: 'u_1' }],
      listeners: ['wh_1'],
    });
    expect(routesOf(bytes('{"listeners":["wh_1"]}'))).toEqual({ emitters: [], listeners: ['wh_1'] });
    // A change that touched no route (a workflow trigger set to none from none): nothing to read.
    expect(routesOf(bytes('{"emitters":[]}'))).toEqual({ emitters: [], listeners: [] });
  });

  it('reads every route when the payload is absent or not of that shape', () => {
    for (const text of ['', 'not json', '{"emitters":"dc_1"}', '{"emitters":[{"emitter_id":"dc_1"}]}', '{"listeners":[1]}', '{"emitters":[null]}']) {
      expect(routesOf(bytes(text))).toBeUndefined();
    }
  });
});

import { request } from 'node:http';
import { HTTP_SOURCE } from './support/components';
import { deployHttpSource, postUntilOk } from './support/http-sources';
import { eventually } from './support/system';
import { systemWithUser } from './support/system-with-user';

/**
 * A hostile tenant against the API contract and the HTTP endpoints of sources, sixth pass: what earlier passes left.
 */
describe('API red team, sixth pass', () => {
  const ctx = systemWithUser({ REGISTRY_DIR: 'off' });

  /** A POST of `body` in chunks, with `Transfer-Encoding: <coding>` (Node chunks the body when the coding ends in chunked). */
  const chunkedPost = (url: string, coding: string, body: string): Promise<{ status: number; body: any }> => // eslint-disable-line @typescript-eslint/no-explicit-any
    new Promise((resolve, reject) => {
      const req = request(url, { method: 'POST', headers: { 'content-type': 'application/json', 'transfer-encoding': coding } }, (res) => {
        let text = '';
        res.on('data', (d) => (text += d));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(text) }));
      });
      req.on('error', reject);
      req.end(body);
    });

  it('refuses at an HTTP endpoint a body in a transfer coding other than chunked, as the API does, and stores nothing (it was stored undecoded)', async () => {
    const { id, url } = await deployHttpSource(ctx.system, ctx.user, HTTP_SOURCE);
    await postUntilOk(url, { first: true });
    const refused = await chunkedPost(url, 'gzip, chunked', '{"coded":true}');
    expect(refused).toEqual({ status: 415, body: { error: 'Transfer-Encoding gzip, chunked is not accepted: send the request body with no transfer coding but chunked', code: 'unsupported_media_type', details: { header: 'transfer-encoding' } } });
    expect(await chunkedPost(url, 'chunked', '{"chunked":true}')).toEqual({ status: 200, body: { success: true } });
    const events = await eventually(async () => {
      const data = (await ctx.api.get(`/sources/${id}/event_summaries`)).body.data as { event: unknown }[];
      return data.length >= 2 ? data.map((e) => e.event) : undefined;
    }, { what: 'the two stored requests' });
    expect(events).toEqual([{ chunked: true }, { first: true }]);
  });
});

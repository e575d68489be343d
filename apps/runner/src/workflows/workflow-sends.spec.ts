import { sendProblem } from './workflow-sends';

const settings = { smtpUrl: 'smtp://127.0.0.1:2525', s3Endpoint: 'http://127.0.0.1:9000' };
const s3 = (payload: unknown) => sendProblem({ kind: 's3', payload } as Parameters<typeof sendProblem>[0], settings);
const sse = (payload: unknown) => sendProblem({ kind: 'sse', payload } as Parameters<typeof sendProblem>[0], settings);

describe('$.send checks made when a step calls them', () => {
  it('keeps $.send.s3 inside the bucket it names', () => {
    expect(s3({ bucket: 'my-bucket', prefix: 'orders/', payload: {} })).toBeUndefined();
    for (const prefix of ['../other-bucket/', 'a/../../other-bucket/', '/other-bucket/', './x/', 'a/./b']) expect(s3({ bucket: 'my-bucket', prefix, payload: {} })).toMatch(/prefix must not/);
    expect(s3({ bucket: 'Bad_Bucket', payload: {} })).toMatch(/valid bucket name/);
  });

  it('refuses a $.send.sse channel that could break the stream into forged fields', () => {
    expect(sse({ channel: 'orders', payload: 1 })).toBeUndefined();
    for (const channel of ['a\ndata: forged', 'a\r\nid: 1', '', 'x'.repeat(65)]) expect(sse({ channel, payload: 1 })).toMatch(/channel of letters/);
  });
});

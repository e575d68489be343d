import { createHash, createHmac } from 'node:crypto';

export interface S3Target {
  endpoint: string;
  region: string;
  accessKeyId: string;
  secretAccessKey: string;
}

const sha256 = (data: string | Buffer): string => createHash('sha256').update(data).digest('hex');
const hmac = (key: Buffer | string, data: string): Buffer => createHmac('sha256', key).update(data).digest();

/** RFC 3986 encoding of one path segment, as SigV4 wants it. */
function encodeSegment(s: string): string {
  return encodeURIComponent(s).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
}

/**
 * A path-style `PUT <endpoint>/<bucket>/<key>` signed with AWS Signature
 * Version 4 (the scheme every S3-compatible server accepts): the URL and the
 * headers to send with `body`.
 */
export function signS3Put(target: S3Target, bucket: string, key: string, body: Buffer, contentType: string, now = new Date()): { url: string; headers: Record<string, string> } {
  const base = new URL(target.endpoint);
  const path = `${base.pathname.replace(/\/+$/, '')}/${encodeSegment(bucket)}/${key.split('/').map(encodeSegment).join('/')}`;
  const amzDate = now.toISOString().replace(/[-:]/g, '').replace(/\.\d{3}/, '');
  const day = amzDate.slice(0, 8);
  const payloadHash = sha256(body);
  const headers: Record<string, string> = { host: base.host, 'content-type': contentType, 'x-amz-content-sha256': payloadHash, 'x-amz-date': amzDate };
  const names = Object.keys(headers).sort();
  const canonical = ['PUT', path, '', ...names.map((n) => `${n}:${headers[n].trim()}`), '', names.join(';'), payloadHash].join('\n');
  const scope = `${day}/${target.region}/s3/aws4_request`;
  const toSign = ['AWS4-HMAC-SHA256', amzDate, scope, sha256(canonical)].join('\n');
  const key4 = hmac(hmac(hmac(hmac(`AWS4${target.secretAccessKey}`, day), target.region), 's3'), 'aws4_request');
  const signature = createHmac('sha256', key4).update(toSign).digest('hex');
  return {
    url: `${base.protocol}//${base.host}${path}`,
    headers: { ...headers, authorization: `AWS4-HMAC-SHA256 Credential=${target.accessKeyId}/${scope}, SignedHeaders=${names.join(';')}, Signature=${signature}` },
  };
}

/** Object key of one `$.send.s3` payload: `<prefix><yyyy>/<mm>/<dd>/<hh>/<ts>-<invocation>-<index>.json`, so keys sort by time. */
export function s3KeyOf(prefix: string, invocationId: string, index: number, atMs: number): string {
  const d = new Date(atMs).toISOString();
  return `${prefix}${d.slice(0, 4)}/${d.slice(5, 7)}/${d.slice(8, 10)}/${d.slice(11, 13)}/${atMs}-${invocationId}-${index}.json`;
}

import { Type } from '@sinclair/typebox';
import { RouteValidator } from './contract-validator';
import { allowedMethods } from './contract.interceptor';

const route = new RouteValidator({
  method: 'POST',
  path: '/v1/things/{id}',
  tag: 't',
  summary: 's',
  params: Type.Object({ id: Type.String() }),
  query: Type.Object({ limit: Type.Optional(Type.Integer({ minimum: 1 })) }),
  body: Type.Object({ url: Type.String(), page: Type.Optional(Type.Integer({ minimum: 0 })), kind: Type.Optional(Type.Union([Type.Literal('$errors'), Type.Literal('$logs')])) }),
  responses: { 200: null },
});

describe('a route contract', () => {
  it('accepts what it declares, the common parameters included, and body fields sent in the query', () => {
    expect(() => route.validate({ id: 'x' }, { limit: '5', include: 'id' }, { url: 'u', page: 0, org_id: 'o_1' })).not.toThrow();
    expect(() => route.validate({ id: 'x' }, { url: 'u', page: '2' }, undefined)).not.toThrow();
  });

  it('names unknown parameters and fields, and where they were', () => {
    expect(() => route.validate({ id: 'x' }, { bogus: '1' }, { url: 'u' })).toThrow('unknown query parameter: bogus');
    expect(() => route.validate({ id: 'x' }, {}, { url: 'u', owner_id: 'u_x', more: 1 })).toThrow('unknown fields: owner_id, more');
  });

  it('lists at most 20 unknown names, each cut at 100 characters, and says how many more', () => {
    const body: Record<string, number> = { url: 1 };
    for (let i = 0; i < 100_000; i++) body[`k${i}`] = 1;
    body['x'.repeat(5000)] = 1;
    let error: { message: string; details?: Record<string, unknown> } | undefined;
    try {
      route.validate({ id: 'x' }, {}, body);
    } catch (e) {
      error = e as typeof error;
    }
    expect(error?.message).toBe(`unknown fields: ${Array.from({ length: 20 }, (_, i) => `k${i}`).join(', ')} and 99981 more`);
    expect(error?.details).toMatchObject({ in: 'body', more: 99_981 });
    expect((error?.details?.fields as string[]).length).toBe(20);
    expect(() => route.validate({ id: 'x' }, {}, { url: 'u', ['y'.repeat(5000)]: 1 })).toThrow(`unknown field: ${'y'.repeat(100)}…`);
  });

  it('names the field of a wrong type or range, and a missing required field', () => {
    expect(() => route.validate({ id: 'x' }, {}, { url: 'u', page: [[1]] })).toThrow('page must be an integer');
    expect(() => route.validate({ id: 'x' }, { limit: '0' }, { url: 'u' })).toThrow('limit must be >= 1');
    expect(() => route.validate({ id: 'x' }, {}, { page: 1 })).toThrow('url is required');
    expect(() => route.validate({ id: 'x' }, {}, { url: 'u', kind: 'x' })).toThrow('kind must be one of "$errors", "$logs"');
  });

  it('reads an integer in the query only when written in digits (blank is not 0), and refuses any parameter given twice', () => {
    for (const limit of ['', ' ', '\t', 'ten', '+1', '1.0']) {
      expect(() => route.validate({ id: 'x' }, { limit }, { url: 'u' })).toThrow(expect.objectContaining({ message: 'limit must be an integer written in digits', details: { in: 'query', field: 'limit', value: limit } }));
    }
    // A union (no `type`), like `expand`: repeated, it was left to Ajv ("expand must be a string").
    const union = new RouteValidator({ method: 'GET', path: '/v1/things', tag: 't', summary: 's', query: Type.Object({ expand: Type.Optional(Type.Union([Type.Literal('a'), Type.Literal('b')])) }), responses: { 200: null } });
    expect(() => union.validate({}, { expand: ['a', 'b'] }, undefined)).toThrow(expect.objectContaining({ message: 'expand was given more than once', details: { in: 'query', field: 'expand' } }));
  });

  it('takes a JSON object body or none', () => {
    for (const body of ['str', 123, [], null]) expect(() => route.validate({ id: 'x' }, { url: 'u' }, body)).toThrow('the request body must be a JSON object');
  });

  it('checks the body of a route that declares none (only the common parameters, never ignored)', () => {
    const bare = new RouteValidator({ method: 'DELETE', path: '/v1/things/{id}', tag: 't', summary: 's', responses: { 204: null } });
    for (const body of [undefined, {}, { org_id: 'o_1' }]) expect(() => bare.validate({}, {}, body)).not.toThrow();
    expect(() => bare.validate({}, {}, { start_id: '1-0' })).toThrow('unknown field: start_id');
    expect(() => bare.validate({}, {}, 'x')).toThrow('the request body must be a JSON object');
  });

  it('lists the methods of a known path for a 405', () => {
    expect(allowedMethods('/v1/sources/dc_1?x=1')).toEqual(['GET', 'HEAD', 'PUT', 'DELETE']);
    expect(allowedMethods('/v1/users/me')).toEqual(['GET', 'HEAD']);
    expect(allowedMethods('/v1/webhooks')).toEqual(['POST']);
    expect(allowedMethods('/v1/nowhere')).toEqual([]);
  });
});

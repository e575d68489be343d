import { openFileLimit, totalConnectionBound } from './connection-bounds';

const LIMITS = `Limit                     Soft Limit           Hard Limit           Units
Max cpu time              unlimited            unlimited            seconds
Max open files            20000                524288               files
Max locked memory         8388608              8388608              bytes
`;

describe('connection bounds', () => {
  it("reads the process's soft open-file limit, or nothing when it cannot", () => {
    expect(openFileLimit(() => LIMITS)).toBe(20_000);
    expect(openFileLimit(() => 'Max open files  unlimited  unlimited  files')).toBeUndefined();
    expect(
      openFileLimit(() => {
        throw new Error('no /proc here');
      }),
    ).toBeUndefined();
  });

  it('takes HTTP_MAX_CONNECTIONS as set, else the open-file limit less 1,024, else no bound', () => {
    expect(totalConnectionBound(500, 20_000)).toBe(500);
    expect(totalConnectionBound(0, 20_000)).toBe(18_976);
    expect(totalConnectionBound(0, 1_024)).toBeUndefined();
    expect(totalConnectionBound(0, undefined)).toBeUndefined();
  });
});

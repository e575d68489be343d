import { chartScale, duration, niceCeil } from './usage-scale';

describe('dashboard usage chart scale', () => {
  it('rounds the top of the scale up to 1, 2 or 5 × 10ⁿ', () => {
    expect([0, 1, 3, 7, 10, 11, 150, 201, 999, 1_800_000].map(niceCeil)).toEqual([1, 1, 5, 10, 10, 20, 200, 500, 1000, 2_000_000]);
  });

  it('scales to the quota when usage comes within a tenth of it, else to the usage', () => {
    expect(chartScale([0, 3, 1], 10_000)).toEqual({ top: 5, quotaOnScale: false });
    expect(chartScale([0, 1_000, 20], 10_000)).toEqual({ top: 10_000, quotaOnScale: true });
    expect(chartScale([12_000, 1], 10_000)).toEqual({ top: 20_000, quotaOnScale: true });
    expect(chartScale([0, 0], null)).toEqual({ top: 1, quotaOnScale: false });
    expect(chartScale([], 0)).toEqual({ top: 1, quotaOnScale: false });
  });

  it('writes compute time in ms, s, min or h', () => {
    expect([350, 12_400, 210_000, 4_320_000].map(duration)).toEqual(['350 ms', '12.4 s', '3.5 min', '1.2 h']);
  });
});

import { describe, expect, it } from 'vitest';
import { median, p90, percentile, summarize } from '../../bench/stats.js';

describe('bench statistics', () => {
  it.each([
    { xs: [5], median: 5, p90: 5 },
    { xs: [3, 1, 2], median: 2, p90: 3 },
    { xs: [4, 1, 3, 2], median: 2.5, p90: 4 },
    // nearest rank: p90 of ten samples is the 9th smallest, a value that was measured
    { xs: [10, 9, 8, 7, 6, 5, 4, 3, 2, 1], median: 5.5, p90: 9 },
    { xs: Array.from({ length: 20 }, (_, i) => i + 1), median: 10.5, p90: 18 },
  ])('median and p90 of $xs', ({ xs, median: m, p90: p }) => {
    expect(median(xs)).toBe(m);
    expect(p90(xs)).toBe(p);
  });

  it('percentile 100 is the maximum; out-of-range percentiles and empty lists are errors', () => {
    expect(percentile([1, 7, 3], 100)).toBe(7);
    expect(() => percentile([1], 0)).toThrow(/percentile/);
    expect(() => median([])).toThrow(/no samples/);
  });

  it('summarize does not reorder its input', () => {
    const xs = [3, 1, 2];
    expect(summarize(xs)).toEqual({ n: 3, min: 1, median: 2, p90: 3, max: 3, mean: 2 });
    expect(xs).toEqual([3, 1, 2]);
  });
});

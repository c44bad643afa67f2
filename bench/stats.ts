/** Order statistics for benchmark samples: plain functions of a list of numbers. */

const sorted = (xs: readonly number[]): number[] => {
  if (xs.length === 0) throw new Error('no samples: a statistic of an empty list is undefined');
  return [...xs].sort((a, b) => a - b);
};

/** The middle value; for an even count, the mean of the two middle values. */
export function median(xs: readonly number[]): number {
  const s = sorted(xs);
  const mid = s.length >> 1;
  return s.length % 2 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
}

/**
 * Nearest-rank percentile: the smallest sample with at least p % of the samples at or below it
 * (p90 of 10 samples is the 9th smallest). Always a value that was measured, never interpolated.
 */
export function percentile(xs: readonly number[], p: number): number {
  if (!(p > 0 && p <= 100)) throw new Error(`percentile must be in (0, 100], got ${p}`);
  const s = sorted(xs);
  return s[Math.ceil((p / 100) * s.length) - 1]!;
}

export const p90 = (xs: readonly number[]): number => percentile(xs, 90);

export interface Summary {
  n: number;
  min: number;
  median: number;
  p90: number;
  max: number;
  mean: number;
}

export function summarize(xs: readonly number[]): Summary {
  const s = sorted(xs);
  return { n: s.length, min: s[0]!, median: median(s), p90: p90(s), max: s.at(-1)!, mean: s.reduce((a, b) => a + b, 0) / s.length };
}

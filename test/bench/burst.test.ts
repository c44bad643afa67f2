/**
 * Burst mode's delays: drawn from a seed, so a run repeats exactly; each within 1–3 s; which
 * starts each failure scenario runs from the command-line flags.
 */
import { describe, expect, it } from 'vitest';
import { BURST_DELAY_MS, burstDelays } from '../../bench/burst.js';
import { startsOf, type BenchOptions } from '../../bench/fleet.js';

describe('burst delays', () => {
  it('the same seed gives the same delays; another seed others', () => {
    expect(burstDelays(17, 10)).toEqual(burstDelays(17, 10));
    expect(burstDelays(18, 10)).not.toEqual(burstDelays(17, 10));
  });

  it('run i gets the same delay however many runs are asked for', () => {
    expect(burstDelays(17, 3)).toEqual(burstDelays(17, 10).slice(0, 3));
  });

  it('whole milliseconds within 1–3 s', () => {
    const ds = burstDelays(5, 1_000);
    for (const d of ds) {
      expect(Number.isInteger(d)).toBe(true);
      expect(d).toBeGreaterThanOrEqual(BURST_DELAY_MS.min);
      expect(d).toBeLessThanOrEqual(BURST_DELAY_MS.max);
    }
    // spread over the range, not stuck at one end
    expect(Math.min(...ds)).toBeLessThan(1_100);
    expect(Math.max(...ds)).toBeGreaterThan(2_900);
  });

  it('a range of one value, and bad arguments refused', () => {
    expect(burstDelays(1, 2, { min: 1_500, max: 1_500 })).toEqual([1_500, 1_500]);
    expect(() => burstDelays(1, -1)).toThrow(/runs/);
    expect(() => burstDelays(1, 1, { min: 3, max: 2 })).toThrow(/min/);
  });
});

describe('starts of a failure scenario', () => {
  const opts = (starts: BenchOptions['starts']): BenchOptions => ({ quick: false, modes: ['default', 'short'], starts, seed: 17, push: true, session: true });

  it('settled first, then burst, each in its modes', () => {
    expect(startsOf(opts({ settled: ['default', 'short'], burst: ['default'], signalBurst: [] }))).toEqual([
      { start: 'settled', mode: 'default' },
      { start: 'settled', mode: 'short' },
      { start: 'burst', mode: 'default' },
    ]);
  });

  it('the platform-signal scenario passes its own burst modes', () => {
    const o = opts({ settled: [], burst: ['default'], signalBurst: [] });
    expect(startsOf(o, o.starts.signalBurst)).toEqual([]);
  });
});

import { describe, expect, it } from 'vitest';
import { killPhases, renewCycleMs } from '../../bench/sweep.js';

describe('kill phases of the crash runs', () => {
  it.each([
    { runs: 1, retry: 2_000, want: [1_000] },
    { runs: 2, retry: 500, want: [125, 375] },
    { runs: 4, retry: 2_000, want: [250, 750, 1_250, 1_750] },
  ])('$runs runs over a $retry ms renew cycle: the midpoints of equal slices', ({ runs, retry, want }) => {
    expect(killPhases(runs, retry)).toEqual(want);
  });

  it('ten runs cover the whole cycle evenly, every phase inside it', () => {
    const phases = killPhases(10, 2_000);
    expect(phases).toHaveLength(10);
    expect(phases.every((p) => p > 0 && p < 2_000)).toBe(true);
    expect(new Set(phases.slice(1).map((p, i) => p - phases[i]!))).toEqual(new Set([200]));
  });

  it('refuses a number of runs that is not a whole number ≥ 1', () => {
    expect(() => killPhases(0, 2_000)).toThrow(/runs/);
    expect(() => killPhases(1.5, 2_000)).toThrow(/runs/);
  });
});

describe('renewCycleMs: each system killed across its own renew cycle', () => {
  it('the baseline renews every retry period; Conclave at its default renew interval less the phase step', () => {
    const t = { renewDeadlineMs: 10_000, retryPeriodMs: 2_000 };
    expect(renewCycleMs('baseline', t)).toBe(2_000);
    expect(renewCycleMs('conclave', t)).toBe(6_000 - 137); // the default interval: two retry periods short of the renew deadline
    expect(renewCycleMs('conclave', { renewDeadlineMs: 3_000, retryPeriodMs: 500 })).toBe(2_000 - 137);
  });
});

describe('renewCycleMs: a timing that sets its own renew interval', () => {
  it("Conclave's cycle is that interval less the phase step (the short timing's 1 s: 863 ms, not the default interval's 1,863)", async () => {
    const { DEMO_TIMING } = await import('../../lib/local/demo/stories.js');
    expect(renewCycleMs('conclave', DEMO_TIMING)).toBe(1_000 - 137);
    expect(renewCycleMs('conclave', { renewDeadlineMs: 10_000, retryPeriodMs: 2_000, renewIntervalMs: 7_999 })).toBe(7_999 - 137);
    expect(renewCycleMs('baseline', DEMO_TIMING)).toBe(500); // the baseline renews every retry period whatever
  });
});

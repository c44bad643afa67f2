/**
 * The wake a recovery gives a follower napping out an error backoff (step.ts endpointRecovered,
 * recoveryWake): a request of its process answered after failures. Under partial throttling every
 * answer is one; before a review (2026-12-08, sixteenth), each woke every follower that had failed
 * at once, and the followers that had just failed tried again at a round trip's pace.
 */
import { describe, expect, it } from 'vitest';
import { RETRY_CAP_PERIODS, RETRY_JITTER, retryDelayMs } from '../../lib/sdk/faults.js';
import { decide, recoveryWake, START, type Effect, type Event, type State } from '../../lib/sdk/step.js';
import { at, stepSettings, T } from './step-fixtures.js';

const s = stepSettings('b');
const P = s.retryPeriodMs;
const recovered = (failures: number, triedAt: number | undefined, random: number): Event => ({ kind: 'endpointRecovered', failures, triedAt, random });
const effects = (st: State, e: Event, dt: number): Effect[] => decide(s, st, e, at(dt)).effects;

describe('a recovery wakes a follower backing off no sooner than a retry period after its own last try', () => {
  it('tried less than a retry period ago (it had just failed): it wakes a retry period after that try, jittered, never at once', () => {
    // before the fix: [{ kind: 'stepNow' }], at once: a retry a round trip after the one that failed
    expect(effects(START, recovered(1, T, 0), 50)).toEqual([{ kind: 'stepNow', at: T + P }]);
    expect(effects(START, recovered(4, T, 0.5), 1_999)).toEqual([{ kind: 'stepNow', at: T + P + P * RETRY_JITTER * 0.5 }]);
  });

  it('tried a retry period ago or more: at once (random 0), or within the jitter (a fifth of a retry period), so followers that failed together spread', () => {
    expect(effects(START, recovered(3, T, 0), P)).toEqual([{ kind: 'stepNow' }]);
    expect(effects(START, recovered(3, T, 0), 5_000)).toEqual([{ kind: 'stepNow' }]);
    expect(effects(START, recovered(3, T, 0.99), 5_000)).toEqual([{ kind: 'stepNow', at: T + 5_000 + P * RETRY_JITTER * 0.99 }]);
  });

  it('not backing off (no failure): nothing moves (nor for a leader: decide.test.ts)', () => {
    const resting = decide(s, START, recovered(0, T, 0.5), at(50));
    expect(resting.effects).toEqual([]);
    expect(resting.state).toBe(START);
  });

  it('however many recoveries come and whenever: each wake it is given is a retry period or more after its last try, and before its backoff would have ended', () => {
    for (const failures of [1, 2, 3, 4, 9])
      for (const dt of [0, 1, 10, 500, 1_999, 2_000, 2_001, 4_000, 7_999])
        for (const random of [0, 0.25, 0.5, 0.999]) {
          const wake = recoveryWake(P, T, T + dt, random);
          expect(wake).toBeGreaterThanOrEqual(T + P);
          expect(wake).toBeGreaterThanOrEqual(T + dt);
          expect(wake).toBeLessThanOrEqual(Math.max(T + dt, T + P) + P * RETRY_JITTER);
          // the purpose kept: it never waits longer than a retry period and its jitter past the recovery
          expect(wake - (T + dt)).toBeLessThanOrEqual(P * (1 + RETRY_JITTER));
          // a long backoff (from the third failure, four retry periods) recovered from one to two retry periods in: cut short
          if (failures >= 3 && dt >= P && dt <= 2 * P) expect(wake).toBeLessThan(T + retryDelayMs(failures, P, random));
        }
    expect(RETRY_CAP_PERIODS).toBeGreaterThan(1 + RETRY_JITTER);
  });
});

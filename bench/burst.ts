/**
 * Burst mode: failures that do not wait for the group to settle. After a first failure of the
 * same kind (not measured), the next leader is failed a few seconds into its term — before the
 * coordinator has necessarily named its successor, while the dead leader's candidate row may still
 * rank first — and that second failure is the one measured (issue 17: "a new leader can die 1–3 s
 * into its term"). The delays are drawn from a seeded generator, so a run can be repeated exactly:
 * run i of every scenario and mode gets the same delay, Conclave's and the baseline's alike.
 */
import { seededRandom } from '../lib/clock.js';

/** How far into the new term the measured failure comes: uniform in [min, max] ms. */
export const BURST_DELAY_MS = { min: 1_000, max: 3_000 } as const;

/** The default seed of the delays (`--seed`). */
export const DEFAULT_BURST_SEED = 17;

/** The delay of each of `runs` runs, whole milliseconds in [min, max], the same for the same seed. */
export function burstDelays(seed: number, runs: number, range: { min: number; max: number } = BURST_DELAY_MS): number[] {
  if (!Number.isInteger(runs) || runs < 0) throw new Error(`runs must be a whole number ≥ 0, got ${runs}`);
  if (!(range.min >= 0 && range.max >= range.min)) throw new Error(`need 0 ≤ min ≤ max, got ${range.min}…${range.max}`);
  const random = seededRandom(seed);
  return Array.from({ length: runs }, () => Math.round(range.min + random() * (range.max - range.min)));
}

/** How the group stood when the measured failure came: settled (the steady state), or in a burst. */
export type Start = 'settled' | 'burst';

export const describeStart = (start: Start): string =>
  start === 'settled' ? 'settled' : `burst (each failure ${BURST_DELAY_MS.min / 1000}–${BURST_DELAY_MS.max / 1000} s into the previous term)`;

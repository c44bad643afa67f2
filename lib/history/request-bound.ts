/**
 * The request bound (the checker's `requests` rule): the most DynamoDB requests a worker process
 * may send for one lease within one lease duration, whatever fails. Derived from the protocol's
 * cadences, not fitted to a run: each term is one way the SDK makes a request, at the fastest pace
 * its code allows, and every request counts as often as the AWS SDK may attempt it.
 */
import { CHASE_FIRST_MS, SETTLING_READ_MS } from '../sdk/step.js';
import type { RequestBound } from './checker.js';

/** The timings the bound is derived from: an elector's, and the AWS SDK client's attempts per request. */
export interface BoundTimings {
  readonly leaseDurationMs: number;
  readonly retryPeriodMs: number;
  /** The AWS SDK's attempts per request (its standard retry mode: 3). */
  readonly maxAttempts: number;
}

/**
 * Per worker process and lease, within any window W of one lease duration, with P the retry period:
 *
 * - Steps of the elector's loop, one read each. After a step that succeeds the next comes at the
 *   soonest SETTLING_READ_MS later (a lease in flux), or, chasing a renewal it expects, CHASE_FIRST_MS
 *   later and twice as long each miss: log2(SETTLING_READ_MS / CHASE_FIRST_MS) reads sooner than
 *   the settling pace per renewal, and a holder renews at most once per P. After a step that
 *   fails, the next waits at least P (lib/sdk/faults.ts' retryDelayMs: the retry period, doubling
 *   to RETRY_CAP_PERIODS, jittered up, never less). A wake makes a step at once: one per change of
 *   the lease row, and its copy (the broker may deliver one twice); a row changes at most once per
 *   P per writer, and the writers a worker hears of are the coordinator and its peers. So
 *   reads ≤ W / SETTLING_READ_MS + (W / P + 1) · (log2(SETTLING_READ_MS / CHASE_FIRST_MS) + 2).
 * - Writes: a step decides to write at most three times (a takeover lost and tried once more; a
 *   vacancy report and a candidacy renewal; an ack), a leader renews at most once per P, and a
 *   write that fails fails its step (the next waits P): writes ≤ 3 · (W / P + 1).
 * - Every request is attempted up to maxAttempts times by the AWS SDK (throttling, 5xx, timeouts).
 *
 * With the simulator's timings (W = 15 s, P = 2 s, 3 attempts): reads ≤ 100 + 8.5 · 3.6 = 131,
 * writes ≤ 25.5: 3 · 156 = 468 requests in 15 s, 31 a second. A failed step retried at once sends
 * one per round trip: 250 a second at 4 ms, the 260 a second issue 36 measured on DynamoDB Local.
 */
export function requestBound(t: BoundTimings): RequestBound {
  const W = t.leaseDurationMs;
  const perPeriod = W / t.retryPeriodMs + 1;
  const reads = W / SETTLING_READ_MS + perPeriod * (Math.log2(SETTLING_READ_MS / CHASE_FIRST_MS) + 2);
  const writes = 3 * perPeriod;
  return { windowMs: W, max: Math.ceil(t.maxAttempts * (reads + writes)) };
}

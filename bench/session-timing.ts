/**
 * The Session timings the multi-lease worker (bench/multi-lease-worker.ts) runs with, from its
 * electors' renew deadline D and retry period R: ended at D − 1.25 R (so an elector has a try and a
 * retry to renew its leases itself once the session ends, as the SDK demands), retried every
 * 0.75 R, renewed every D − 2.5 R (a renewal and a retry fit in the session's deadline), rows living
 * one lease duration. For client-go's default timings (15 s / 10 s / 2 s) these are the Session's
 * own defaults (5 s, 1.5 s, 7.5 s, 15 s); the short timings of the tests get the same shape.
 */
import type { SessionOptions } from '../lib/sdk/session.js';

export function sessionTimingFor(t: { leaseDurationMs: number; renewDeadlineMs: number; retryPeriodMs: number }): Required<Pick<SessionOptions, 'renewIntervalMs' | 'retryPeriodMs' | 'renewDeadlineMs' | 'maxLeaseDurationMs'>> {
  const r = t.retryPeriodMs;
  return { renewIntervalMs: Math.round(t.renewDeadlineMs - 2.5 * r), retryPeriodMs: Math.round(0.75 * r), renewDeadlineMs: Math.round(t.renewDeadlineMs - 1.25 * r), maxLeaseDurationMs: t.leaseDurationMs };
}

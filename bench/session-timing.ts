/**
 * The Session timings the multi-lease worker (bench/multi-lease-worker.ts) runs with, from its
 * electors' timings: renewed every 0.6 of the electors' renew deadline, retried every retry
 * period, ended at the electors' renew deadline, rows living one lease duration. For client-go's
 * default timings (15 s / 10 s / 2 s) these are the Session's own defaults (6 s, 2 s, 10 s, 15 s),
 * which the SDK checks fit the electors (renewal + retry inside the renew deadline, leases no
 * longer than the session's maxLeaseDurationMs); the short timings of the tests get the same shape.
 */
import type { SessionOptions } from '../lib/sdk/session.js';

export function sessionTimingFor(t: { leaseDurationMs: number; renewDeadlineMs: number; retryPeriodMs: number }): Required<Pick<SessionOptions, 'renewIntervalMs' | 'retryPeriodMs' | 'renewDeadlineMs' | 'maxLeaseDurationMs'>> {
  return { renewIntervalMs: Math.round(0.6 * t.renewDeadlineMs), retryPeriodMs: t.retryPeriodMs, renewDeadlineMs: t.renewDeadlineMs, maxLeaseDurationMs: t.leaseDurationMs };
}

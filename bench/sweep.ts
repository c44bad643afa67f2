import { defaultRenewIntervalMs, renewCadenceMs } from '../lib/sdk/elector.js';

/**
 * Where in the leader's renew cycle each crash run kills it. A failover's length depends on that
 * phase (how much of the term is left, and where the followers' reads fall), so runs are spread
 * evenly over one renew cycle rather than all killed at the same instant: run i of n kills
 * (i + ½)/n of a cycle after a renewal was sent — the midpoints of n equal slices.
 */
export function killPhases(runs: number, cycleMs: number): number[] {
  if (!Number.isInteger(runs) || runs < 1) throw new Error(`runs must be a whole number ≥ 1, got ${runs}`);
  return Array.from({ length: runs }, (_, i) => Math.round(((i + 0.5) / runs) * cycleMs));
}

/**
 * How often each system's leader renews with these timings: the baseline every retry period
 * (client-go); Conclave's coordinated worker at its renew interval's cadence (lib/sdk/elector.ts):
 * the timing's own `renewIntervalMs` where it sets one (the short timing's 1 s), else the default
 * interval. A crash sweep covers each system's own cycle.
 */
export function renewCycleMs(system: 'conclave' | 'baseline', t: { renewDeadlineMs: number; retryPeriodMs: number; renewIntervalMs?: number }): number {
  if (system === 'baseline') return t.retryPeriodMs;
  return renewCadenceMs(t.renewIntervalMs ?? defaultRenewIntervalMs({ mode: 'coordinated', ...t }), t.retryPeriodMs);
}

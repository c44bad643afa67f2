/**
 * Where in the leader's renew cycle each crash run kills it. A failover's length depends on that
 * phase (how much of the term is left, and where the followers' polls fall), so runs are spread
 * evenly over one retry period rather than all killed at the same instant: run i of n kills
 * (i + ½)/n of a retry period after a renewal was sent — the midpoints of n equal slices.
 */
export function killPhases(runs: number, retryPeriodMs: number): number[] {
  if (!Number.isInteger(runs) || runs < 1) throw new Error(`runs must be a whole number ≥ 1, got ${runs}`);
  return Array.from({ length: runs }, (_, i) => Math.round(((i + 0.5) / runs) * retryPeriodMs));
}

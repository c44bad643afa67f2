/**
 * The sweep: leader discovery's own check of the names it set, once a minute (the function's
 * schedule). Events name every new term and every end that writes the lease, but a term can end
 * with no write at all: its holder crashed and nobody took the lease after it (a `NoCoordination`
 * lease whose last worker died, a coordinated one with no live candidate left). No event comes of
 * that, and the name would point at the dead holder's address, which the VPC may give to another
 * host. So each name still pointing at a holder is judged by the lease as `getLeader` reads it: a
 * term over is ended on the name, and a newer term than the name shows (its event lost) is named.
 * Both go through applyLeaderChange, so the sweep and the events order one another by fencing
 * token: an ending it judged from an older read never undoes a newer term's name.
 */
import type { LeaderInfo } from '../election/leader.js';
import { applyLeaderChange, type ApplyOutcome, type DiscoveryDeps } from './apply.js';
import type { LeaderChange } from './change.js';
import type { DiscoveryRow } from './state-store.js';

/** What a sweep did. */
export interface SweepResult {
  /** Names pointing at a holder, judged. */
  readonly judged: number;
  /** Changes applied to names, by lease: a term over (`end N`) or a newer one (`term N`). */
  readonly changed: Readonly<Record<string, string>>;
  /** Leases left for the next sweep: a read or a write failed (each logged by the caller), or the invocation's time ran short. */
  readonly left: readonly string[];
  readonly errors: readonly { readonly lease: string; readonly error: Error }[];
}

export interface SweepDeps {
  readonly discovery: DiscoveryDeps;
  /** The lease's leader as getLeader judges it (null: no live term). */
  readonly leaderOf: (lease: string) => Promise<LeaderInfo | null>;
}

/** Time kept back from the invocation's deadline: a lease is not started later than this before it. */
export const SWEEP_MARGIN_MS = 5_000;

/**
 * The change the sweep makes to a name showing `row`'s state, given the lease's `leader` now: an
 * end of the term the name shows when no term is live, the newer term when one is, none when the
 * name shows the live term (or an ending, or a newer term than the read: an event came since).
 */
export function sweepChange(row: Pick<DiscoveryRow, 'lease' | 'fencingToken' | 'ended'>, leader: LeaderInfo | null): LeaderChange | undefined {
  if (row.ended) return undefined;
  if (leader === null) return { kind: 'ended', lease: row.lease, fencingToken: row.fencingToken, why: 'expired', eventId: `sweep:end:${row.fencingToken}` };
  if (leader.fencingToken <= row.fencingToken) return undefined;
  return { kind: 'began', lease: row.lease, fencingToken: leader.fencingToken, holder: leader.holder, address: leader.address, eventId: `sweep:term:${leader.fencingToken}` };
}

/** Judges every name pointing at a holder (`rows`, the discovery table's), one lease at a time, until `deadline` less SWEEP_MARGIN_MS. */
export async function sweepNames(deps: SweepDeps, rows: readonly DiscoveryRow[], deadline: number): Promise<SweepResult> {
  const changed: Record<string, string> = {};
  const left: string[] = [];
  const errors: { lease: string; error: Error }[] = [];
  const named = rows.filter((r) => !r.ended);
  for (const row of named) {
    if (deps.discovery.clock.now() > deadline - SWEEP_MARGIN_MS) {
      left.push(row.lease);
      continue;
    }
    try {
      const change = sweepChange(row, await deps.leaderOf(row.lease));
      if (!change) continue;
      const out: ApplyOutcome = await applyLeaderChange(deps.discovery, change, deadline);
      if (out.outcome === 'applied') changed[row.lease] = out.state;
    } catch (e) {
      left.push(row.lease);
      errors.push({ lease: row.lease, error: e instanceof Error ? e : new Error(String(e)) });
    }
  }
  return { judged: named.length, changed, left, errors };
}

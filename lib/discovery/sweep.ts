/**
 * The sweep: leader discovery's own check of the names it set, once a minute (the function's
 * schedule). Events name every new term and every end that writes the lease, but a term can end
 * with no write at all: its holder crashed and nobody took the lease after it (a `NoCoordination`
 * lease whose last worker died, a coordinated one with no live candidate left). No event comes of
 * that, and the name would point at the dead holder's address, which the VPC may give to another
 * host. So each name is judged by its lease as `getLeader` reads it: a term over is ended on the
 * name, and a newer term than the name shows (its event lost: past its retries, or older than an
 * hour) is named. Both go through applyLeaderChange, so the sweep and the events order one another
 * by fencing token: an ending it judged from an older read never undoes a newer term's name.
 */
import type { Leadership } from '../election/leader.js';
import { applyLeaderChange, type DiscoveryDeps } from './apply.js';
import type { LeaderChange } from './change.js';
import type { DiscoveryRow } from './state-store.js';

/** What a sweep did. */
export interface SweepResult {
  /** Names judged. */
  readonly judged: number;
  /** Changes applied to names, by lease: a term over (`end N`) or a newer one (`term N`). */
  readonly changed: Readonly<Record<string, string>>;
  /** Leases left for the next sweep: a read or a write failed, or the invocation's time ran short. */
  readonly left: readonly string[];
  readonly errors: readonly { readonly lease: string; readonly error: Error }[];
}

export interface SweepDeps {
  readonly discovery: DiscoveryDeps;
  /** The lease's leadership as getLeader judges it (leadershipOf), its reads ended by `signal`. */
  readonly leadershipOf: (lease: string, signal: AbortSignal) => Promise<Leadership>;
}

/**
 * Time kept back from the invocation's deadline: no lease is started later than this before it, and
 * its reads are abandoned then; each write to a name is bounded to what is left (apply.ts), so the
 * sweep ends before Lambda's timeout, which would retry it and dead-letter it as a lost event.
 */
export const SWEEP_MARGIN_MS = 5_000;

/**
 * The change the sweep makes to a name showing `row`'s state, given the lease's `leadership` now: a
 * newer term than the name shows is named (an ended name included: the event of the term after it
 * lost); with nobody leading, the term the name shows is ended, unless the lease shows only a
 * vacancy report (a follower's or the platform's, which the holder's next renewal takes back with
 * the same token: an end of that term would be final). Otherwise none.
 */
export function sweepChange(row: Pick<DiscoveryRow, 'lease' | 'fencingToken' | 'ended'>, leadership: Leadership): LeaderChange | undefined {
  const l = leadership.leader;
  if (l !== null) return l.fencingToken > row.fencingToken ? { kind: 'began', lease: row.lease, fencingToken: l.fencingToken, holder: l.holder, address: l.address, eventId: `sweep:term:${l.fencingToken}` } : undefined;
  if (row.ended || leadership.vacancy === 'reported') return undefined;
  return { kind: 'ended', lease: row.lease, fencingToken: row.fencingToken, why: 'expired', eventId: `sweep:end:${row.fencingToken}` };
}

/** Judges every name (`rows`, the discovery table's), one lease at a time, until `deadline` (epoch ms on the deps' clock) less SWEEP_MARGIN_MS. */
export async function sweepNames(deps: SweepDeps, rows: readonly DiscoveryRow[], deadline: number): Promise<SweepResult> {
  const clock = deps.discovery.clock;
  const changed: Record<string, string> = {};
  const left: string[] = [];
  const errors: { lease: string; error: Error }[] = [];
  const late = new AbortController();
  const timer = clock.setTimer(Math.max(0, deadline - SWEEP_MARGIN_MS - clock.now()), () => late.abort(new Error('the invocation\'s time ran short: left for the next sweep')));
  try {
    for (const row of rows) {
      if (late.signal.aborted || clock.now() > deadline - SWEEP_MARGIN_MS) {
        left.push(row.lease);
        continue;
      }
      try {
        const change = sweepChange(row, await deps.leadershipOf(row.lease, late.signal));
        if (!change) continue;
        const out = await applyLeaderChange(deps.discovery, change, deadline - SWEEP_MARGIN_MS);
        if (out.outcome === 'applied') changed[row.lease] = out.state;
      } catch (e) {
        left.push(row.lease);
        errors.push({ lease: row.lease, error: e instanceof Error ? e : new Error(String(e)) });
      }
    }
  } finally {
    timer.cancel();
  }
  return { judged: rows.length, changed, left, errors };
}

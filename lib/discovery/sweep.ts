/**
 * The sweep: leader discovery's own check of the names it set, once a minute (the function's
 * schedule). Events name every new term and every end that writes the lease, but a term can end
 * with no write at all: its holder crashed and nobody took the lease after it (a `NoCoordination`
 * lease whose last worker died, a coordinated one with no live candidate left). No event comes of
 * that, and the name would point at the dead holder's address, which the VPC may give to another
 * host. So each name is judged by its lease as `getLeader` reads it: a term over is ended on the
 * name, and a newer term than the name shows (its event lost: past its retries, or older than an
 * hour) is named. And a state the name was never set to (every try of its event's write failed, the
 * event dead-lettered: its row unapplied, its writers gone) is written again. All go through
 * applyLeaderChange, so the sweep and the events order one another by fencing token: an ending it
 * judged from an older read never undoes a newer term's name.
 *
 * A lease the deployment names (`leaderDiscovery.leaseNames`) with no row is judged too: its name
 * was never set (every try of its first term's claim failed, its event dead-lettered or older than
 * the function's maxEventAge, or it was led before leader discovery was deployed), so its holder,
 * if any, is named, through the same claim as an event's. Without leaseNames the sweep knows only
 * the leases with a row (the function may not scan the leases table): such a lease is named at its
 * next leader change.
 *
 * A sweep judges the leases in name order from where the last one stopped (the discovery table
 * keeps it: DiscoveryStateStore.list and saveSweepFrom), round to the start: with more leases
 * than one invocation can judge, each is judged within a few sweeps, not only the first ones. Each
 * costs one getLeader read (three on a session-held lease), and a claim, a write to the name and a
 * settle when it changes; a named lease with no row and nobody holding it costs its read at every
 * sweep until it is led.
 */
import type { Leadership } from '../election/leader.js';
import { applyLeaderChange, expiredWriters, type DiscoveryDeps } from './apply.js';
import type { LeaderChange } from './change.js';
import type { DiscoveryRow } from './state-store.js';

/** What a sweep did. */
export interface SweepResult {
  /** Names judged. */
  readonly judged: number;
  /** Names written, by lease: a term over (`end N`), a newer one (`term N`), or the state a name was never set to, written again. */
  readonly changed: Readonly<Record<string, string>>;
  /** Led leases not named, by lease, and why: the name they share is another lease's (apply.ts, `refused`). */
  readonly refused: Readonly<Record<string, string>>;
  /** Leases left unjudged: a read or a write failed, or the invocation's time ran short. */
  readonly left: readonly string[];
  /** Where the next sweep starts: the first lease left for lack of time; `''` (the first lease) when none was. */
  readonly next: string;
  readonly errors: readonly { readonly lease: string; readonly error: Error }[];
}

/** A lease the deployment names that has no row: its name was never set. */
export interface UnnamedLease {
  readonly lease: string;
  readonly unnamed: true;
}

/** What the sweep judges: a row of the discovery table, or a named lease without one. */
export type Swept = Pick<DiscoveryRow, 'lease' | 'fencingToken' | 'ended' | 'holder' | 'address' | 'applied' | 'writers'> | UnnamedLease;

/**
 * The leases the sweep judges: the rows, and each of `named` (the deployment's leaseNames;
 * undefined: every lease, and only the rows are known) with no row. `refused`: leases whose row the
 * schema refuses, which have a row all the same (left to the events).
 */
export function sweptLeases(rows: readonly DiscoveryRow[], refused: readonly string[], named: ReadonlySet<string> | undefined): Swept[] {
  if (!named) return [...rows];
  const seen = new Set([...rows.map((r) => r.lease), ...refused]);
  return [...rows.filter((r) => named.has(r.lease)), ...[...named].filter((lease) => !seen.has(lease)).map((lease): UnnamedLease => ({ lease, unnamed: true }))];
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
 * The change the sweep makes to a name showing `row`'s state, given the lease's `leadership` at
 * `now`: a newer term than the name shows is named (an ended name included: the event of the term
 * after it lost); with nobody leading, the term the name shows is ended, unless the lease shows only
 * a vacancy report on a term not yet over (`reported`: a follower's or the platform's, which the
 * holder's next renewal takes back with the same token: an end of that term would be final). A
 * report on a term over by its own stamp is `expired` (leadershipOf: its holder stopped at its renew
 * deadline), and is ended as any term run out: a holder that crashed after its follower reported
 * it, nobody taking the lease after it. Otherwise, a state never seen through with
 * nobody left writing it (each try of its event failed at the naming service) is written again: the
 * row's own state, which applyLeaderChange claims nothing for, and sees through as it does a
 * redelivery that finds a write unsettled. Otherwise none. A lease with no row (`unnamed`): its
 * holder's term is named, as its Leader Elected would have named it; with nobody leading, none.
 */
export function sweepChange(row: Swept, leadership: Leadership, now: number): LeaderChange | undefined {
  const l = leadership.leader;
  // a name never set shows no term: any term is newer (claimed as an event's: a late one orders with it by token)
  if (l !== null && ('unnamed' in row || l.fencingToken > row.fencingToken)) return { kind: 'began', lease: row.lease, fencingToken: l.fencingToken, holder: l.holder, address: l.address, eventId: `sweep:term:${l.fencingToken}` };
  if ('unnamed' in row) return undefined;
  // `reported`: the report of a term not over yet (a report on one over is `expired`: leadershipOf)
  if (l === null && !row.ended && leadership.vacancy !== 'reported') return { kind: 'ended', lease: row.lease, fencingToken: row.fencingToken, why: 'expired', eventId: `sweep:end:${row.fencingToken}` };
  // a live writer is still at work on it (or its call may still land): it settles it itself
  if (row.applied || expiredWriters(row, now).length < (row.writers?.size ?? 0)) return undefined;
  const eventId = `sweep:again:${row.fencingToken}`;
  // not newer than the row's state, so never claimed: holder and address are only what the row holds
  return row.ended
    ? { kind: 'ended', lease: row.lease, fencingToken: row.fencingToken, why: 'expired', eventId }
    : { kind: 'began', lease: row.lease, fencingToken: row.fencingToken, holder: row.holder ?? '', address: row.address, eventId };
}

/** `rows` in name order, from the first at or after `from`, round to the start. */
export function sweepOrder<R extends { readonly lease: string }>(rows: readonly R[], from: string): R[] {
  const sorted = [...rows].sort((a, b) => (a.lease < b.lease ? -1 : a.lease > b.lease ? 1 : 0));
  const i = sorted.findIndex((r) => r.lease >= from);
  return i <= 0 ? sorted : [...sorted.slice(i), ...sorted.slice(0, i)];
}

/**
 * Judges every name (`all`: sweptLeases, the discovery table's and the named leases with none; a
 * lease the naming service gives no name of its own passed by), one lease at a time in sweepOrder
 * from `from` (where the last sweep stopped), until `deadline` (epoch ms on the deps' clock) less
 * SWEEP_MARGIN_MS.
 */
export async function sweepNames(deps: SweepDeps, all: readonly Swept[], deadline: number, from = ''): Promise<SweepResult> {
  const clock = deps.discovery.clock;
  // a lease with no name of its own (LeaderNaming.leaseIssue): its writes would be another lease's name (its row, a function's before it was refused)
  const rows = all.filter((r) => deps.discovery.naming.leaseIssue?.(r.lease) === undefined);
  const changed: Record<string, string> = {};
  const refused: Record<string, string> = {};
  const left: string[] = [];
  const errors: { lease: string; error: Error }[] = [];
  let next: string | undefined;
  const late = new AbortController();
  const timer = clock.setTimer(Math.max(0, deadline - SWEEP_MARGIN_MS - clock.now()), () => late.abort(new Error('the invocation\'s time ran short: left for the next sweep')));
  try {
    for (const row of sweepOrder(rows, from)) {
      if (late.signal.aborted || clock.now() > deadline - SWEEP_MARGIN_MS) {
        next ??= row.lease;
        left.push(row.lease);
        continue;
      }
      try {
        const change = sweepChange(row, await deps.leadershipOf(row.lease, late.signal), clock.now());
        if (!change) continue;
        const out = await applyLeaderChange(deps.discovery, change, deadline - SWEEP_MARGIN_MS);
        if (out.writes > 0) changed[row.lease] = out.state;
        if (out.refused !== undefined && !out.state.startsWith('end ')) refused[row.lease] = out.refused;
      } catch (e) {
        if (late.signal.aborted) next ??= row.lease; // cut short: the next sweep starts with it
        left.push(row.lease);
        errors.push({ lease: row.lease, error: e instanceof Error ? e : new Error(String(e)) });
      }
    }
  } finally {
    timer.cancel();
  }
  return { judged: rows.length, changed, refused, left, errors, next: next ?? '' };
}

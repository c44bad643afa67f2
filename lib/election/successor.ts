import type { Candidate } from '../schemas/candidate.js';
import type { ElectionConfig } from '../schemas/config.js';
import type { Lease } from '../schemas/lease.js';
import { decide, ignoredLastPing, type Decision } from './decide.js';
import { locationOf, preferredLocationsOf } from './location.js';
import { compareMerit, orderCandidates } from './ordering.js';
import { isDeparted, liveCandidates } from './vacancy.js';

export interface Successor {
  name: string;
  /** The successor's process (its candidate row's `identity`), when the row carries one. */
  instance?: string;
}

/**
 * The candidate the coordinator would elect if `holder` left now: the best of the live candidates
 * that did not ignore their last ping (of all the live ones, when every one did), the holder
 * excluded, and those `gone` says departed (the previous holder whose row showed no life since:
 * vacancy.ts `isDeparted`), ranked with the lease's preferred locations (`preferred`, by default
 * the coordinator's); of the best's equals on merit, one in another failure domain than the
 * holder's when there is one. Undefined when nobody else can win.
 */
export function successorOf(
  holder: string,
  candidates: readonly Candidate[],
  now: number,
  config: ElectionConfig,
  opts: { gone?: (c: Candidate) => boolean; preferred?: readonly string[] } = {},
): Successor | undefined {
  const { gone, preferred = config.preferredLocations } = opts;
  const others = liveCandidates(candidates, now, config.candidateStaleAfterMs).filter((c) => c.name !== holder && !gone?.(c));
  const responsive = others.filter((c) => !ignoredLastPing(c, now, config.ackWindowMs));
  // Nobody else answered its last ping: name the best of the rest all the same. A missed ping is
  // often one that came between a worker's reads (a successor reads once a renewal); a designation
  // is not a grant — a dead successor never takes the lease — and none at all means an election.
  const ordered = orderCandidates(responsive.length ? responsive : others, now, preferred);
  const best = ordered[0];
  if (!best) return undefined;
  // An equal of the best in another failure domain than the holder's (another Region, else another
  // zone) stands instead: a Region or zone that takes the holder down then leaves its successor up.
  const held = candidates.find((c) => c.name === holder);
  const apart = held ? ordered.find((r) => compareMerit(r, best) === 0 && inAnotherDomain(r.candidate, held)) : undefined;
  const pick = apart ?? best;
  return { name: pick.candidate.name, ...(pick.candidate.identity ? { instance: pick.candidate.identity } : {}) };
}

/** Whether `a` runs in another Region than `b`, or, in one Region, in another zone (as far as both are known). */
export function inAnotherDomain(a: Candidate, b: Candidate): boolean {
  const [x, y] = [locationOf(a), locationOf(b)];
  if (x.region !== undefined && y.region !== undefined && x.region !== y.region) return true;
  return x.zone !== undefined && y.zone !== undefined && x.zone !== y.zone;
}

/**
 * For a lease `decide()` leaves alone because its holder is healthy (or already asked to yield):
 * a `setSuccessor` decision when the designated successor is not the one `successorOf` names.
 * Succession is the fast path of a failover and a hand-off — the successor takes a vacant lease
 * without waiting for an election — and it never decides who may lead that the election would
 * not: a dead successor simply never takes the lease, and the election runs as before.
 */
export function successorDecision(lease: Lease | undefined, candidates: readonly Candidate[], now: number, config: ElectionConfig, d: Decision): Decision | undefined {
  if (d.kind !== 'leaveAlone' || (d.reason !== 'leaderHealthy' && d.reason !== 'preemptionPending')) return undefined;
  const want = lease?.holderIdentity === undefined || !config.succession ? undefined : successorOf(lease.holderIdentity, candidates, now, config, { gone: (c) => isDeparted(c, lease), preferred: preferredLocationsOf(lease, config) });
  if (want?.name === lease?.successor && want?.instance === lease?.successorInstance) return undefined;
  return { kind: 'setSuccessor', strategy: d.strategy!, ...(want ? { successor: want } : {}) };
}

/** What one reconcile does: `decide()`, and when that leaves a healthy lease alone, its succession. */
export function decideWithSuccession(name: string, lease: Lease | undefined, candidates: readonly Candidate[], now: number, config: ElectionConfig): Decision {
  const d = decide(name, lease, candidates, now, config);
  if (d.kind === 'elect' && config.succession) {
    // The new term starts with its successor, so a failover right after an election is fast too.
    // Passed over: the holder whose term just ran out, unless it answered this election (or renewed since it opened).
    const successor = successorOf(d.winner, candidates, now, config, { gone: (c) => d.election !== undefined && isDeparted(c, lease, d.election.startedAt), preferred: preferredLocationsOf(lease, config) });
    return successor ? { ...d, successor } : d;
  }
  if (d.kind === 'preempt' && config.succession) {
    // The candidate the holder yields to takes the released lease itself, not the old successor.
    const instance = candidates.find((c) => c.name === d.preferredHolder)?.identity;
    return { ...d, successor: { name: d.preferredHolder, ...(instance ? { instance } : {}) } };
  }
  return successorDecision(lease, candidates, now, config, d) ?? d;
}

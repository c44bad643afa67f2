import type { Candidate } from '../schemas/candidate.js';
import type { ElectionConfig } from '../schemas/config.js';
import type { Election, Lease } from '../schemas/lease.js';
import { answeredLastPing, decide, electionIdFor, passedOver, reelectionWindowMs, standingDown, type Decision, type DecideTrigger } from './decide.js';
import { locationOf, preferredLocationsOf } from './location.js';
import { compareMerit, orderCandidates, rank, type Ranked } from './ordering.js';
import { isDeparted, liveCandidates } from './vacancy.js';

export interface Successor {
  name: string;
  /** The successor's process (its candidate row's `identity`), when the row carries one. */
  instance?: string;
}

/** Who the coordinator names to take the lease at once if the holder leaves (successorsOf). */
export interface Succession {
  /** The successor: it takes a vacant lease the moment the term runs out as it watched it. */
  successor?: Successor;
  /** The next in line: it takes the lease a moment later if the successor has not (lib/sdk/step.ts). */
  second?: Successor;
  /**
   * Candidates to ask whether they are alive before they are named (a ping each): the responsive
   * ones not known to be alive (showedLifeSince), when one of them would be named were it known to
   * be alive. Empty when the two named are the best two, or nobody can be asked.
   */
  check: string[];
}

/**
 * Since when a candidate must have shown life to be named successor without being asked first:
 * about a lease duration (the term the successor would take over; never under the ack window)
 * before the holder's term began. So a candidate that renewed its row or answered a ping in this
 * term, or just before it (an election's answers), counts for the whole term, and a row left by a
 * process that died before the term began (a `kill -9`'d worker's row stays live for 30 minutes:
 * a crash before this one) does not. Without a term yet, about a lease duration before `now`.
 */
export function knownAliveSince(lease: Lease | undefined, now: number, config: ElectionConfig): number {
  const within = Math.max(config.ackWindowMs, (lease?.leaseDurationSeconds ?? config.defaultLeaseDurationSeconds) * 1000);
  return Math.min(now, lease?.holderIdentity !== undefined && lease.acquireTime !== undefined ? lease.acquireTime : now) - within;
}

/**
 * Whether the candidate showed life at or after `since`: a renewal of its row (by its stamp, and
 * not one from a clock running ahead: `notAfter`, as isFresh), or an answer to a ping (the copy of
 * the coordinator's own stamp, which no worker's clock can move). A row that is merely not stale
 * proves nothing.
 */
export function showedLifeSince(c: Candidate, since: number, notAfter: number): boolean {
  const renewed = c.renewTime >= since && c.renewTime <= notAfter;
  const answered = c.ackedPingTime !== undefined && c.ackedPingTime >= since && answeredLastPing(c);
  return renewed || answered;
}

/**
 * The two the coordinator would elect, in order, if `holder` left now, and whom to ask first.
 *
 * The field: the live candidates (not stale) but the holder, those standing down (decide.ts
 * standingDown) and those `gone` says departed (the previous holder whose row showed no life
 * since: vacancy.ts `isDeparted`), of those the ones that
 * are not passed over for a ping they let pass (passedOver: asked again `askAgainAfterMs` after
 * it; all of them, when every one is), ranked with the lease's
 * preferred locations (`preferred`, by default the coordinator's). Of the best's equals on merit,
 * one in another failure domain than the holder's stands first when there is one; the second is
 * picked alike from the rest.
 *
 * Named only when known to be alive (issue 38): a candidate that renewed its row or answered a
 * ping at or after `since` (knownAliveSince: in this term, or about a lease duration before it).
 * When the best two include one not known to be alive, `check` lists the responsive candidates not
 * known to be alive, to be pinged (a re-election: the holder leads on), and the two named meanwhile
 * are the best known to be alive, else the best of the rest (a designation is not a grant: a dead
 * one never takes the lease, and the second successor, then an election, covers it).
 */
export function successorsOf(
  holder: string,
  candidates: readonly Candidate[],
  now: number,
  config: ElectionConfig,
  opts: { gone?: (c: Candidate) => boolean; preferred?: readonly string[]; since?: number } = {},
): Succession {
  const { gone, preferred = config.preferredLocations, since = knownAliveSince(undefined, now, config) } = opts;
  const others = liveCandidates(candidates, now, config.candidateStaleAfterMs).filter((c) => c.name !== holder && !gone?.(c) && !standingDown(c, now, config.clockSkewMs));
  const responsive = others.filter((c) => !passedOver(c, now, config));
  // Everyone else is passed over for a missed ping: name the best of the rest all the same. A missed
  // ping is often one that came between a worker's reads; none at all means an election. Each is
  // asked again once its ping is askAgainAfterMs old.
  const askable = responsive.length > 0;
  const ordered = orderCandidates(askable ? responsive : others, now, preferred);
  const held = candidates.find((c) => c.name === holder);
  const known = (c: Candidate) => showedLifeSince(c, since, now + config.clockSkewMs);
  const ideal = bestTwo(ordered, held);
  const unknown = ideal.filter((r) => !known(r.candidate));
  // (only those that could win: another's answer names nobody)
  const check = askable && unknown.length > 0 ? responsive.filter((c) => !known(c) && rank(c, now, preferred) !== undefined).map((c) => c.name).sort() : [];
  // Those known to be alive first, then the rest: the best two of that order are named meanwhile.
  const picks = unknown.length === 0 ? ideal : bestTwo([...ordered.filter((r) => known(r.candidate)), ...ordered.filter((r) => !known(r.candidate))], held);
  // One of the two in another failure domain than the holder's whenever a candidate runs there: else
  // a Region (or zone) lost with the holder takes both watchers with it, and nobody near the lease
  // reads it until a backstop read or the tick (issue 38). The second gives way: the best there
  // known to be alive, else the best there that answers pings, else the best there at all — one
  // passed over for an ignored ping is often one whose Region was cut off when it was asked, and
  // a designation is not a grant (a dead one never takes the lease).
  // And, where candidates run in a third, the two apart from each other too: a Region cut off (or
  // catching up) with both watchers in it as the holder's is lost leaves nobody who can read.
  const lead = picks[0]?.candidate;
  const apart = (c: Candidate) => held !== undefined && inAnotherDomain(c, held);
  const apartFromBoth = (c: Candidate) => apart(c) && lead !== undefined && lead.name !== c.name && inAnotherDomain(c, lead);
  const secondOk = picks[1] !== undefined && (lead === undefined || !apart(lead) ? apart(picks[1].candidate) : apartFromBoth(picks[1].candidate));
  const better = held && !secondOk ? (bestOf(ordered, others, known, apartFromBoth, now, preferred) ?? (picks.some((r) => apart(r.candidate)) ? undefined : bestOf(ordered, others, known, apart, now, preferred))) : undefined;
  const named = better ? [...picks.slice(0, 1), better] : picks;
  // Nobody else to name second, yet a live candidate only let its last ping pass (paused, or read
  // late): named second all the same, the best of them. An empty slot leaves a vacancy, should the
  // successor die too, to the fallback (three lease durations) or the tick; a designation is not a
  // grant, so a dead one never takes the lease.
  const spare = named.length === 1 && askable ? orderCandidates(others.filter((c) => c.name !== named[0]!.candidate.name && !responsive.includes(c)), now, preferred)[0] : undefined;
  const [first, second] = (spare ? [...named, spare] : named).map((r) => successorFrom(r.candidate));
  return { ...(first ? { successor: first } : {}), ...(second ? { second } : {}), check };
}

/**
 * The candidate to name second in place of the one picked (successorsOf): of those `where` allows,
 * the first of `ordered` known to be alive, else the first of `ordered` (they answer pings), else
 * the first of the rest of `others` (each passed over for an ignored ping).
 */
function bestOf(ordered: readonly Ranked[], others: readonly Candidate[], known: (c: Candidate) => boolean, where: (c: Candidate) => boolean, now: number, preferred: readonly string[]): Ranked | undefined {
  const there = ordered.filter((r) => where(r.candidate));
  const inOrder = new Set(ordered.map((r) => r.candidate.name));
  const rest = orderCandidates(others.filter((c) => !inOrder.has(c.name) && where(c)), now, preferred);
  return there.find((r) => known(r.candidate)) ?? there[0] ?? rest[0];
}

/** The first two of `ordered` as named: each the first in order, or an equal of it on merit in another failure domain than the holder's. */
function bestTwo(ordered: readonly Ranked[], held: Candidate | undefined): Ranked[] {
  const first = pickApart(ordered, held);
  if (!first) return [];
  const second = pickApart(ordered.filter((r) => r !== first), held);
  return second ? [first, second] : [first];
}

/**
 * The first of `ordered`, or an equal of it on merit in another failure domain (another Region,
 * else another zone) than the holder's: a Region or zone that takes the holder down then leaves
 * its successor up.
 */
function pickApart(ordered: readonly Ranked[], held: Candidate | undefined): Ranked | undefined {
  const best = ordered[0];
  if (!best || !held) return best;
  return ordered.find((r) => compareMerit(r, best) === 0 && inAnotherDomain(r.candidate, held)) ?? best;
}

const successorFrom = (c: Candidate): Successor => ({ name: c.name, ...(c.identity ? { instance: c.identity } : {}) });

/**
 * The candidate the coordinator would elect if `holder` left now (successorsOf's successor),
 * undefined when nobody else can win.
 */
export function successorOf(
  holder: string,
  candidates: readonly Candidate[],
  now: number,
  config: ElectionConfig,
  opts: { gone?: (c: Candidate) => boolean; preferred?: readonly string[]; since?: number } = {},
): Successor | undefined {
  return successorsOf(holder, candidates, now, config, opts).successor;
}

/** Whether `a` runs in another Region than `b`, or, in one Region, in another zone (as far as both are known). */
export function inAnotherDomain(a: Candidate, b: Candidate): boolean {
  const [x, y] = [locationOf(a), locationOf(b)];
  if (x.region !== undefined && y.region !== undefined && x.region !== y.region) return true;
  return x.zone !== undefined && y.zone !== undefined && x.zone !== y.zone;
}

const sameSuccessor = (a: Successor | undefined, name: string | undefined, instance: string | undefined): boolean => a?.name === name && a?.instance === instance;

/** The succession of a held lease as the coordinator would name it now (successorsOf with the lease's own notes). */
function successionOf(lease: Lease, candidates: readonly Candidate[], now: number, config: ElectionConfig): Succession {
  return successorsOf(lease.holderIdentity!, candidates, now, config, {
    gone: (c) => isDeparted(c, lease),
    preferred: preferredLocationsOf(lease, config),
    since: knownAliveSince(lease, now, config),
  });
}

/** The two named in a decision's write: `successor` and `secondSuccessor`, each absent when nobody. */
const named = (s: Succession): Pick<Extract<Decision, { kind: 'setSuccessor' }>, 'successor' | 'secondSuccessor'> => ({
  ...(s.successor ? { successor: s.successor } : {}),
  ...(s.second ? { secondSuccessor: s.second } : {}),
});

/**
 * For a lease `decide()` leaves alone because its holder is healthy (or already asked to yield):
 * a `setSuccessor` decision when the designated successors are not the ones `successorsOf` names,
 * or, for a healthy holder, a liveness check when one of the best two is not known to be alive: a
 * re-election (the holder leads on) that pings the candidates not known to be alive, naming
 * meanwhile the best known ones. When it closes (every one answered, or its ack window passed),
 * those that answered are known to be alive, those that did not are passed over, and the best two
 * are named in the closing write. Succession is the fast path of a failover and a hand-off — the
 * successor takes a vacant lease without waiting for an election — and it never decides who may
 * lead that the election would not: a dead successor simply never takes the lease.
 */
export function successorDecision(lease: Lease | undefined, candidates: readonly Candidate[], now: number, config: ElectionConfig, d: Decision): Decision | undefined {
  // a strategy Conclave does not run (set by an operator or a third party): the successors it named
  // before are cleared, or they would take the lease at the term's end ahead of that strategy's choice
  if (d.kind === 'leaveAlone' && (d.reason === 'noCoordination' || d.reason === 'unknownStrategy')) return lease?.successor !== undefined || lease?.secondSuccessor !== undefined ? { kind: 'setSuccessor', strategy: d.strategy! } : undefined;
  if (d.kind !== 'leaveAlone' || (d.reason !== 'leaderHealthy' && d.reason !== 'preemptionPending')) return undefined;
  const s: Succession = lease?.holderIdentity === undefined || !config.succession ? { check: [] } : successionOf(lease, candidates, now, config);
  if (s.check.length > 0 && d.reason === 'leaderHealthy') {
    const election: Election = { id: electionIdFor(lease!.name, lease), startedAt: now, deadline: now + reelectionWindowMs(lease!, config), strategy: d.strategy!, holder: lease!.holderIdentity! };
    return { kind: 'openElection', strategy: d.strategy!, election, ping: s.check, ...named(s) };
  }
  const n = d.reason === 'preemptionPending' && config.succession ? preemptedTo(lease!, candidates, s) : s;
  if (sameSuccessor(n.successor, lease?.successor, lease?.successorInstance) && sameSuccessor(n.second, lease?.secondSuccessor, lease?.secondSuccessorInstance)) return undefined;
  return { kind: 'setSuccessor', strategy: d.strategy!, ...named(n) };
}

/**
 * A preemption pending: the candidate the holder yields to (`preferredHolder`) stays its successor,
 * whom it hands the lease over to (the SDK's heir); the second is the best of the others. An equal
 * of it on merit in another failure domain (successorsOf) named in its place turned the hand-over
 * into a release: the lease vacant until someone took it, and not by the one preferred.
 */
function preemptedTo(lease: Lease, candidates: readonly Candidate[], s: Succession): Succession {
  const preferred = candidates.find((c) => c.name === lease.preferredHolder);
  if (preferred === undefined) return s;
  const second = [s.successor, s.second].find((x) => x !== undefined && x.name !== preferred.name);
  return { successor: successorFrom(preferred), ...(second ? { second } : {}), check: s.check };
}

/** What one reconcile does: `decide()`, and when that leaves a healthy lease alone, its succession. */
export function decideWithSuccession(name: string, lease: Lease | undefined, candidates: readonly Candidate[], now: number, config: ElectionConfig, trigger: DecideTrigger = {}): Decision {
  const d = decide(name, lease, candidates, now, config, trigger);
  if (d.kind === 'elect' && config.succession) {
    // The new term starts with its successors, so a failover right after an election is fast too.
    // Passed over: the holder whose term just ran out, unless it answered this election (or renewed since it opened).
    const s = successorsOf(d.winner, candidates, now, config, {
      gone: (c) => d.election !== undefined && isDeparted(c, lease, d.election.startedAt),
      preferred: preferredLocationsOf(lease, config),
      // the new term begins now: those that answered this election are known to be alive
      since: knownAliveSince(undefined, now, config),
    });
    return { ...d, ...named(s) };
  }
  if (d.kind === 'preempt' && config.succession) {
    // The candidate the holder yields to takes the released lease itself, not the old successor.
    const instance = candidates.find((c) => c.name === d.preferredHolder)?.identity;
    return { ...d, successor: { name: d.preferredHolder, ...(instance ? { instance } : {}) } };
  }
  if (d.kind === 'cancelElection' && d.why === 'holderIsBest' && config.succession && lease?.holderIdentity !== undefined) {
    // A re-election closed with the holder best (a liveness check among them): those that answered
    // are known to be alive now, those that let its window pass are passed over; named in this write.
    return { ...d, ...named(successionOf(lease, candidates, now, config)) };
  }
  return successorDecision(lease, candidates, now, config, d) ?? d;
}

import { MAX_RENEW_INTERVAL_MS, type Candidate } from '../schemas/candidate.js';
import type { ElectionConfig } from '../schemas/config.js';
import { failureMessage, type Election, type ElectionFailure, type Lease } from '../schemas/lease.js';
import type { Platform } from '../schemas/platform.js';
import { NO_COORDINATION, OLDEST_EMULATION_VERSION, isKnownStrategy } from '../schemas/strategy.js';
import { preferredLocationsOf } from './location.js';
import { compareRanked, isBetterThanHolder, orderCandidates, pickBest, rank, skewPrevented } from './ordering.js';
import { strategyConsensus, type StrategyConsensus } from './strategy.js';
import { deletedSessionTermOverAt, deletedTermOverAt, isDeparted, liveCandidates, SESSION_QUIET_LEASES, vacancy, type DeletedTerm, type JudgingRow, type SessionStamp, type VacancyReason } from './vacancy.js';

export type LeaveAloneReason =
  | 'noCandidates'
  | 'noLiveCandidates'
  /** Vacant, and every live candidate let a failed election's whole ack window pass: asked in vain (askedInVain). */
  | 'noResponsiveCandidates'
  /** Vacant, and no live candidate could win (none has versions that parse): recorded once (lastElectionFailure). */
  | 'noValidCandidates'
  | 'noCoordination'
  | 'unknownStrategy'
  | 'contradictoryStrategies'
  | 'leaderHealthy'
  | 'preemptionPending';

/** What one reconcile of one lease should do. Pure: the same inputs always give the same decision. */
export type Decision =
  | { kind: 'leaveAlone'; reason: LeaveAloneReason; strategy?: string; detail?: string }
  | { kind: 'awaitAcks'; strategy: string; election: Election; pending: string[] }
  /**
   * Ping `ping` (the live candidates that neither renewed lately nor ignored their last ping), then
   * open. Without `vacancy` it is a re-election: the holder keeps leading while candidates answer.
   */
  | {
      kind: 'openElection';
      strategy: string;
      vacancy?: VacancyReason;
      election: Election;
      ping: string[];
      /**
       * A re-election for a better candidate than the preferredHolder pending: that preference, taken
       * back in the same write. Left standing, the holder yielded to it meanwhile and the re-election
       * moved the lease on again: two hand-overs for one.
       */
      withdrawsPreferredHolder?: string;
      /** A liveness check (a re-election that asks who is alive before naming successors: ./successor.ts): named meanwhile. */
      successor?: { name: string; instance?: string };
      secondSuccessor?: { name: string; instance?: string };
    }
  /** Give the lease to `winner`. `election` is absent when every live candidate was fresh: no ping needed. */
  | {
      kind: 'elect';
      strategy: string;
      winner: string;
      winnerInstance?: string;
      winnerPlatform?: Platform;
      /** Where clients reach the winner (its candidate row's `address`): the lease's holderAddress in its term. */
      winnerAddress?: string;
      acked: string[];
      election?: Election;
      vacancy?: VacancyReason;
      skewPrevented: boolean;
      /** Designated with the new term (./successor.ts); absent: nobody else could win. */
      successor?: { name: string; instance?: string };
      /** The next in line, designated with it; absent: nobody else. */
      secondSuccessor?: { name: string; instance?: string };
    }
  | { kind: 'failElection'; strategy?: string; failure: ElectionFailure }
  /** With the holder best (`holderIsBest`), the successors named in the same write (./successor.ts): a liveness check closes. */
  | { kind: 'cancelElection'; strategy: string; election: Election; why: 'holderChanged' | 'strategyChanged' | 'holderIsBest'; successor?: { name: string; instance?: string }; secondSuccessor?: { name: string; instance?: string } }
  /** Ask the holder to yield to `preferredHolder`; closes the re-election `election` that found it. */
  | { kind: 'preempt'; strategy: string; holder: string; preferredHolder: string; election?: Election; successor?: { name: string; instance?: string } }
  | { kind: 'clearPreferredHolder'; strategy: string; preferredHolder: string; why: 'holderIsBest' | 'noValidCandidate' }
  /** Designate (or clear, without `successor`) who takes the lease at once if it falls vacant, and who next (./successor.ts). */
  | { kind: 'setSuccessor'; strategy: string; successor?: { name: string; instance?: string }; secondSuccessor?: { name: string; instance?: string } };

export type DecisionKind = Decision['kind'];

/** Whether a decision writes nothing. */
export const isNoop = (d: Decision): boolean => d.kind === 'leaveAlone' || d.kind === 'awaitAcks';

/** Election ids are derived, not random: the lease name and the revision the election is written at. */
export const electionIdFor = (name: string, lease: Lease | undefined): string => `${name}#${(lease?.revision ?? 0) + 1}`;

/**
 * Fresh: renewed less than one ack window before `at`; such a candidate counts as acknowledged
 * without a ping (Kubernetes: renewTime + electionDuration > now, strictly). A stamp later than
 * `notAfter` (the coordinator's now plus clockSkewMs) comes from a clock running ahead — a worker
 * that is not measuring DynamoDB's time — and proves nothing: it would keep a dead candidate fresh
 * for as long as its clock is fast.
 */
export const isFresh = (c: Candidate, at: number, ackWindowMs: number, notAfter = Infinity): boolean => c.renewTime + ackWindowMs > at && c.renewTime <= notAfter;

/**
 * Whether the candidate answered its last ping (true when it has none): its row was renewed after
 * the ping landed. The renewal copies the row's pingTime into `ackedPingTime` inside DynamoDB, so
 * this compares the coordinator's stamp with itself — no worker's clock, however wrong or stepped,
 * has a say. A row without `ackedPingTime` (a KEP-style client) is judged by KEP's renewTime ≥ pingTime.
 */
export const answeredLastPing = (c: Candidate): boolean =>
  c.pingTime === undefined || (c.ackedPingTime !== undefined ? c.ackedPingTime >= c.pingTime : c.renewTime >= c.pingTime);

/** Acknowledged: answered a ping of this election (or a later one), or fresh when it opened, or renewed any time since. */
export const hasAcked = (c: Candidate, e: Pick<Election, 'startedAt'>, ackWindowMs: number, notAfter = Infinity): boolean =>
  (c.ackedPingTime !== undefined && c.ackedPingTime >= e.startedAt) || isFresh(c, e.startedAt, ackWindowMs, notAfter);

/** Pinged for this election and not answered yet: the election waits for it until its deadline. */
export const isPending = (c: Candidate, e: Pick<Election, 'startedAt'>, ackWindowMs: number, notAfter = Infinity): boolean =>
  c.pingTime !== undefined && c.pingTime >= e.startedAt && !answeredLastPing(c) && !hasAcked(c, e, ackWindowMs, notAfter);

/**
 * Ignored its last ping (Kubernetes: "send another ping only if it already acked the first one"):
 * such a candidate is neither pinged nor waited for again until it renews on its own, so one dead
 * candidate costs one ack window, not one per election.
 */
export const ignoredLastPing = (c: Candidate, now: number, ackWindowMs: number): boolean => !answeredLastPing(c) && c.pingTime! + ackWindowMs <= now;

/**
 * Passed over while a holder leads: it ignored its last ping less than `askAgainAfterMs` ago.
 * Past that, a liveness check or a re-election asks it again (a live candidate whose read came late,
 * or whose Region was cut off when it was asked, answers this time; a dead one lets this ping pass
 * too, and is passed over as long again). Never named successor nor preferred meanwhile.
 */
export const passedOver = (c: Candidate, now: number, config: Pick<ElectionConfig, 'ackWindowMs' | 'askAgainAfterMs'>): boolean =>
  ignoredLastPing(c, now, config.ackWindowMs) && now < c.pingTime! + config.askAgainAfterMs;

/**
 * Whether decide() leaves `c` out when it looks for whom to elect or prefer on a lease now: on a
 * vacant lease (`vacant`), a candidate that ignored its last ping (ignoredLastPing: presumed dead
 * until it renews on its own; every one is asked again only when none left could win); on a held
 * one, a candidate passed over (passedOver). describe's standings (lib/cli/explain.ts) judge by it
 * too, so that the best candidate they name is the one decide() acts on.
 */
export const setAside = (c: Candidate, vacant: boolean, now: number, config: Pick<ElectionConfig, 'ackWindowMs' | 'askAgainAfterMs'>): boolean =>
  vacant ? ignoredLastPing(c, now, config.ackWindowMs) : passedOver(c, now, config);

/**
 * Whether `c`'s worker stands down at `now` (its row's standsDownUntil): neither asked, elected,
 * named successor nor preferred meanwhile. A mark more than the longest stand-down (and `skewMs`)
 * ahead comes from a clock running ahead and proves nothing (as isFresh's stamps); one a process
 * that died left runs out by itself.
 */
export const standingDown = (c: Candidate, now: number, skewMs: number): boolean =>
  c.standsDownUntil !== undefined && now < c.standsDownUntil && c.standsDownUntil <= now + MAX_RENEW_INTERVAL_MS + skewMs;

/**
 * Whether decide() counts live candidate `c` when it looks for whom to ask, elect, name successor or
 * prefer: not while it stands down (standingDown), but as the holder of a term that lives (`holder`:
 * the lease's holder, undefined on a lease vacant as judged), ranked against the best. describe's
 * standings (lib/cli/explain.ts) judge by it too.
 */
export const counted = (c: Candidate, holder: string | undefined, now: number, skewMs: number): boolean => !standingDown(c, now, skewMs) || c.name === holder;

/**
 * Whether live candidate `c` has a say in the lease's strategy (strategyOf): not while a ping of the
 * coordinator's stands unanswered (answeredLastPing: a dead row's ping stays so, and asking it again
 * gives it no say), as Kubernetes takes the strategy from the candidates that acked
 * (pickBestStrategy(ackedCandidates)); before, a crashed row preferring a third party's strategy
 * held a lost lease vacant for the 30 minutes it stays live. The holder of a term that lives has
 * its say (it renews the lease).
 */
function hasSay(c: Candidate, lease: Lease | undefined, now: number, skewMs: number): boolean {
  return answeredLastPing(c) || (c.name === lease?.holderIdentity && !vacancy(lease, now, skewMs).vacant);
}

/**
 * The strategy decide() runs on a lease: the lease's own (set by an operator or a third party), else
 * the consensus of its live candidates that have their say (hasSay; all of them, when none has),
 * those standing down included: a mark passes its worker over for a while, it does not change who
 * governs the lease. An election open keeps its strategy while the consensus with those it asked
 * still gives it: their answers are awaited, not taken for silence (else it was cancelled, its pings
 * taken back, and opened again); past its deadline the silent have no say. The CLI says the
 * strategy, and whether the coordinator elects, by it (describe.ts, priority.ts notElected).
 */
export function strategyOf(lease: Lease | undefined, candidates: readonly Candidate[], now: number, config: Pick<ElectionConfig, 'candidateStaleAfterMs' | 'clockSkewMs'>): StrategyConsensus {
  if (lease?.strategy) return { ok: true, strategy: lease.strategy };
  const live = liveCandidates(candidates, now, config.candidateStaleAfterMs);
  const heard = live.filter((c) => hasSay(c, lease, now, config.clockSkewMs));
  const said = strategyConsensus(heard.length > 0 ? heard : live);
  const e = lease?.election;
  if (!e || now >= e.deadline || (said.ok && said.strategy === e.strategy)) return said;
  const asked = strategyConsensus(live.filter((c) => heard.includes(c) || (c.pingTime !== undefined && c.pingTime >= e.startedAt)));
  return asked.ok && asked.strategy === e.strategy ? asked : said;
}

/**
 * The pings to take back when `d` closes the lease's election before its deadline (the holder
 * changed — a successor took the lease — or everyone answered but a departed holder, or a
 * re-election found a better candidate that answered and preempts for it): a candidate
 * pinged for it that has not answered had no ack window to answer in, and left standing its ping
 * would count as ignored (`ignoredLastPing`) — passed over as successor and for preemption until it
 * renewed on its own, minutes later. Each is named with the ping time it carries.
 */
export function pingsToWithdraw(d: Decision, lease: Lease | undefined, candidates: readonly Candidate[], now: number): { name: string; pingTime: number }[] {
  const e = lease?.election;
  if (!e || now >= e.deadline || (d.kind !== 'cancelElection' && d.kind !== 'elect' && d.kind !== 'preempt')) return [];
  return candidates.filter((c) => c.pingTime !== undefined && c.pingTime >= e.startedAt && !answeredLastPing(c)).map((c) => ({ name: c.name, pingTime: c.pingTime! }));
}

/**
 * Whether the live candidates `silent` (those that could win: another is never asked), all of which
 * ignored their last ping, were asked in vain: the
 * lease's last election failed with nobody answering at least an ack window after each one's last
 * ping. Asking again would change nothing (kill -9 of the last candidate: an election every tick
 * for the 30 minutes its row stays live), and their pings still stand: a candidate that comes back
 * answers by renewing (the candidate stream reconciles: it answered), and a new one is fresh, so
 * either is elected at once, by the stream or by the tick. A live candidate that missed that
 * window too (partitioned, paused) takes the vacant lease by the SDK's fallback.
 */
/**
 * How long a held lease's re-election (a preemption asked first, a liveness check) waits for its
 * answers: a lease duration, never under the ack window nor over half of askAgainAfterMs (one that
 * let it pass stays passed over a while after it closes). Nobody waits for
 * a leader meanwhile, and it closes as soon as everyone asked has answered. A candidate without the
 * push path sees the election only at its next read of the lease: a successor reads once its
 * holder's renewal interval (6 s at client-go's timings, over the 5 s ack window), every follower
 * at least once a term.
 */
export const reelectionWindowMs = (lease: Pick<Lease, 'leaseDurationSeconds'>, config: Pick<ElectionConfig, 'ackWindowMs' | 'askAgainAfterMs'>): number =>
  Math.max(config.ackWindowMs, Math.min(lease.leaseDurationSeconds * 1000, config.askAgainAfterMs / 2));

function askedInVain(lease: Lease, silent: readonly Candidate[], ackWindowMs: number): boolean {
  const failure = lease.lastElectionFailure;
  return failure?.reason === 'noLiveCandidates' && silent.every((c) => c.pingTime !== undefined && c.pingTime + ackWindowMs <= failure.at);
}

/**
 * What follows an operator's delete of a row that was held (`deleted`, the stream record's old
 * image), decided when the lease stream's function has marked the term ended on its holder's
 * session and finds no row: the decision `decide()` makes for a missing row, except that no one is
 * elected before `now` plus the deleted term's lease duration — an election opened now, pinging
 * whom `decide()` would ping, with that `notBefore` (and a deadline no earlier). Why that bound:
 * the holder stops at its next renewal that tells it (a session renewal reads the mark, written
 * before `now`; a lease renewal finds the row gone, deleted before `now`), and with its renewals
 * failing it stops at its renew deadline after the last one that succeeded — sent before `now`
 * either way, and the renew deadline is shorter than the lease duration. `now` is the function's
 * own clock, as the election's closing will be, so no worker's clock takes part. The row's
 * `renewTime` would not do for a term that may live on a session: it does not renew its row. One no
 * session can hold is held only until its own stamp runs out, as `vacancy` judges a standing row
 * (deleteHoldMs). Where nobody can be elected, `decide()`'s own decision. `holdMs`: the hold
 * (deleteHoldMs: a longer one before the mark is written, unmarkedHoldMs; a shorter one by the
 * term's own stamp). `row`: the lease's row, when a term ended by someone
 * else left it vacant and the mark could not be written yet (the same hold, on the row as it is).
 * A row it creates (no `row`) waits for the lease stream too (`awaitsStream`), as any created row:
 * the delete handled may not be the latest — the row may be missing by a later delete of a held row
 * the stream has not reached (a record delivered again, or a stream running behind), whose holder
 * leads on unmarked — and the stream reaches that delete before the created row.
 */
export function heldAfterDelete(name: string, deleted: Pick<Lease, 'leaseDurationSeconds' | 'holderIdentity'>, candidates: readonly Candidate[], now: number, config: ElectionConfig, holdMs = deleted.leaseDurationSeconds * 1000, row?: Lease): Decision {
  const d = decide(name, row, candidates, now, config);
  if (d.kind !== 'elect' && d.kind !== 'openElection') return d;
  const notBefore = now + holdMs;
  const election: Election = {
    id: electionIdFor(name, row),
    startedAt: now,
    deadline: Math.max(now + config.ackWindowMs, notBefore),
    strategy: d.strategy,
    notBefore,
    // the holder of the deleted term is asked like everyone else, never waited for
    ...(deleted.holderIdentity !== undefined ? { departed: deleted.holderIdentity } : {}),
    ...(row ? {} : { awaitsStream: true as const }),
  };
  return { kind: 'openElection', strategy: d.strategy, vacancy: row ? 'noHolder' : 'noLease', election, ping: d.kind === 'openElection' ? d.ping : [] };
}

/**
 * How long the next election after a held row's delete is held before the mark on the holder's
 * session is written (the lease stream's function holds it first, then marks): sound without the
 * mark. A holder on a session reads its lease at least every SESSION_QUIET_LEASES lease durations
 * (jittered up to a tenth more) and stops at a read that finds the row gone or in another term; its
 * renew deadline and a retry period are each shorter than a lease duration. Once the mark is
 * written, the hold is cut to a lease duration from then (heldAfterDelete).
 */
export function unmarkedHoldMs(leaseDurationSeconds: number): number {
  return Math.ceil((1.1 * SESSION_QUIET_LEASES + 2) * leaseDurationSeconds * 1000);
}

/**
 * The session rows a deleted term whose holder names a process is judged by (deletedSessionTermOverAt):
 * judgingRow of the deleted row over rows read consistently after the delete was seen, the reads
 * sent at or after `readAt`; `endMarked`: the named row as read shows the term's end.
 */
export interface DeletedTermSessions {
  readonly judged: JudgingRow<unknown> | undefined;
  readonly endMarked: boolean;
  readonly readAt: number;
}

/**
 * How long the next election after a held row's delete is held, from `now`: a lease duration once
 * the mark on the holder's session is written (`marked`), unmarkedHoldMs before; but no later than
 * the deleted term is over, for a term no session can hold by its own stamp (deletedTermOverAt:
 * `session`, the row its row named, read after the delete; undefined for none there or none named),
 * for one whose holder names a process by that process's session rows (deletedSessionTermOverAt:
 * `sessions`; undefined: not read, or not to be judged by, the whole hold).
 * Never below zero: a term long over holds nothing.
 */
export function deleteHoldMs(deleted: DeletedTerm, session: SessionStamp | undefined, now: number, config: Pick<ElectionConfig, 'clockSkewMs'>, marked: boolean, sessions?: DeletedTermSessions): number {
  const hold = marked ? deleted.leaseDurationSeconds * 1000 : unmarkedHoldMs(deleted.leaseDurationSeconds);
  const over = deletedTermOverAt(deleted, session, config.clockSkewMs) ?? (sessions && deletedSessionTermOverAt(deleted, sessions.judged, sessions.endMarked, sessions.readAt, config.clockSkewMs));
  return over === undefined ? hold : Math.max(0, Math.min(hold, over - now));
}

/**
 * Who asks for a decision. `streamBehind`: a trigger other than the lease stream's own records (the
 * tick, the candidate stream, a timer, the CLI), which cannot know whether the stream has yet
 * handled every change of the lease — an operator's delete of a held row above all. The lease
 * stream, handling a record, has handled every earlier one of that lease.
 */
export interface DecideTrigger {
  readonly streamBehind?: boolean;
}

/** The election fails (`election`: the one open, if any). */
function failed(now: number, election: { id: string } | undefined, reason: ElectionFailure['reason'], message: string, strategy?: string): Decision {
  return {
    kind: 'failElection',
    ...(strategy ? { strategy } : {}),
    failure: { at: now, ...(election ? { electionId: election.id } : {}), reason, message: failureMessage(message) },
  };
}

/**
 * The coordinator's decision for one lease, from the lease (absent if none), all its candidate
 * rows (stale ones included: they are filtered here) and the time.
 */
export function decide(name: string, lease: Lease | undefined, candidates: readonly Candidate[], now: number, config: ElectionConfig, trigger: DecideTrigger = {}): Decision {
  const v = vacancy(lease, now, config.clockSkewMs);
  // A worker's stamp later than this is from a clock running ahead: it proves nothing (isFresh).
  const notAfter = now + config.clockSkewMs;
  const election = lease?.election;

  // 1. Which strategy: the lease's (set by an operator or a third party), else the consensus of the
  // live candidates with no ping left unanswered, those standing down included (strategyOf).
  const consensus = strategyOf(lease, candidates, now, config);
  if (!consensus.ok) {
    if (consensus.reason === 'noCandidates') {
      if (election) return failed(now, election, 'noLiveCandidates', `no live candidate is left for election ${election.id}`);
      return { kind: 'leaveAlone', reason: candidates.length ? 'noLiveCandidates' : 'noCandidates' };
    }
    const recorded = lease?.lastElectionFailure;
    const alreadySaid = !election && recorded?.reason === 'contradictoryStrategies' && recorded.message === failureMessage(consensus.message);
    if ((election || v.vacant) && !alreadySaid) return failed(now, election, 'contradictoryStrategies', consensus.message);
    return { kind: 'leaveAlone', reason: 'contradictoryStrategies', detail: consensus.message };
  }
  const strategy = consensus.strategy;

  // 2. Strategies Conclave does not run.
  if (strategy !== OLDEST_EMULATION_VERSION) {
    if (election) return { kind: 'cancelElection', strategy, election, why: 'strategyChanged' };
    return { kind: 'leaveAlone', reason: strategy === NO_COORDINATION ? 'noCoordination' : 'unknownStrategy', strategy, ...(isKnownStrategy(strategy) ? {} : { detail: `strategy "${strategy}" is elected by a third party` }) };
  }

  // The candidates counted from here on: one standing down only as the holder of a term that lives (counted).
  const live = liveCandidates(candidates, now, config.candidateStaleAfterMs).filter((c) => counted(c, v.vacant ? undefined : lease!.holderIdentity, now, config.clockSkewMs));

  // The lease's own preferred zones and regions, else the coordinator's (the same for every rank below).
  const places = preferredLocationsOf(lease, config);
  // Candidates a vacancy's election asks: a candidate that ignored its last ping is presumed dead
  // until it renews on its own, so a crashed candidate costs one ack window, not one per election.
  // (A held lease asks it again after askAgainAfterMs, in step 5; preempting only for one that
  // answered, so a crashed candidate cannot make the coordinator hand leadership back and forth, as
  // Kubernetes would for up to 30 minutes.)
  const responsive = live.filter((c) => !setAside(c, v.vacant, now, config)); // read only when vacant (step 4)
  // An answer from a candidate that cannot win (its versions do not parse) is no answer.
  const canWin = (cs: readonly Candidate[]) => cs.some((c) => rank(c, now, places) !== undefined);
  // Nor is one asked or waited for, when any live candidate could win: its answer changes nothing.
  const anyCanWin = canWin(live);
  const worthAsking = (c: Candidate) => !anyCanWin || rank(c, now, places) !== undefined;

  // 3. An election in flight: finish it when nobody is pending or the ack window is over.
  if (election) {
    if (election.strategy !== strategy) return { kind: 'cancelElection', strategy, election, why: 'strategyChanged' };
    const holder = v.vacant ? undefined : lease!.holderIdentity;
    if (holder !== undefined && holder !== election.holder) return { kind: 'cancelElection', strategy, election, why: 'holderChanged' };
    const pendingRows = live.filter((c) => isPending(c, election, config.ackWindowMs, notAfter));
    const pending = pendingRows.map((c) => c.name);
    // The holder proves it is alive by renewing the lease; it needs no ack.
    const acked = live.filter((c) => hasAcked(c, election, config.ackWindowMs, notAfter) || c.name === holder);
    // A holder whose term just ran out is not waited for, unless nobody else has answered. Nor is
    // one that ranks below the best that answered when that answer elects (a vacancy) or preempts
    // (better than the holder): its answer cannot change the outcome (a crashed candidate below a
    // pinned one costs no ack window). A re-election the holder wins (a liveness check) waits for
    // every answer: who answered is its outcome (the successors it names), and closed at once it
    // would take its pings back and open again at the next reconcile.
    const ahead = pickBest(acked, now, places);
    const decisive = ahead !== undefined && (holder === undefined || isBetterThanHolder(ahead, holder, live, now, places));
    const couldWin = (c: Candidate) => {
      const r = rank(c, now, places);
      return !decisive || (r !== undefined && compareRanked(r, ahead) < 0);
    };
    const waitFor = pendingRows.filter((c) => c.name !== election.departed && worthAsking(c) && couldWin(c));
    // Opened after an operator deleted the row while held (heldAfterDelete): nobody is elected
    // before the deleted term's holder has had its renew deadline to hear of the end, however soon
    // everyone answered. The deadline is never before it, so the timer finishes it.
    if (election.notBefore !== undefined && now < election.notBefore) return { kind: 'awaitAcks', strategy, election, pending };
    // Opened on a missing row: not before the lease stream has seen that row, and so any delete before it.
    if (election.awaitsStream) return { kind: 'awaitAcks', strategy, election, pending };
    if (now < election.deadline && (waitFor.length > 0 || (pendingRows.some(worthAsking) && !canWin(acked)))) return { kind: 'awaitAcks', strategy, election, pending };
    if (holder === undefined) return finish(acked, election);
    // A re-election: preempt only in favour of a candidate that just answered.
    const best = pickBest(acked, now, places);
    if (best && isBetterThanHolder(best, holder, live, now, places)) return { kind: 'preempt', strategy, holder, preferredHolder: best.candidate.name, election };
    return { kind: 'cancelElection', strategy, election, why: 'holderIsBest' };
  }

  // 4. Vacant: elect at once if every live candidate is fresh, else ping and open an election.
  const fresh = live.filter((c) => isFresh(c, now, config.ackWindowMs, notAfter));
  const toPing = () => responsive.filter((c) => !fresh.includes(c) && worthAsking(c)).map((c) => c.name);
  if (v.vacant) {
    if (live.length === 0) return { kind: 'leaveAlone', reason: candidates.length ? 'noLiveCandidates' : 'noCandidates', strategy };
    // Nobody live could win whoever answered (no versions that parse): an election would fail as
    // this one does. Recorded once, not at every trigger; a candidate that could win, or a fixed
    // row, changes the message. (A missing row waits for the lease stream as below.)
    if (lease && !canWin(live)) {
      const message = `live candidates ${live.map((c) => c.name).sort().join(', ')} have no valid emulationVersion and binaryVersion: none can be elected`;
      const recorded = lease.lastElectionFailure;
      if (recorded?.reason === 'noValidCandidates' && recorded.message === failureMessage(message)) return { kind: 'leaveAlone', reason: 'noValidCandidates', strategy, detail: message };
      return failed(now, undefined, 'noValidCandidates', message, strategy);
    }
    // Every live candidate that could win ignored its last ping — typically pinged for an election
    // that closed before its next poll, so it never saw it: a vacancy asks them all again rather
    // than fail (a dead one never answers, and the election fails when its window closes). A lease
    // already without holder whose candidates were asked in vain is not asked again until one shows
    // life (askedInVain); a new vacancy (a term run out, a report) asks them all again.
    const silent = !canWin([...fresh, ...responsive]);
    if (silent && v.reason === 'noHolder' && askedInVain(lease!, live.filter(worthAsking), config.ackWindowMs)) return { kind: 'leaveAlone', reason: 'noResponsiveCandidates', strategy };
    const ping = silent ? live.filter((c) => !fresh.includes(c) && worthAsking(c)).map((c) => c.name) : toPing();
    // No row, and the lease stream may not have reached its delete (any trigger but the stream's
    // own records: the tick, the candidate stream, a timer): an operator may just have deleted a
    // held row, whose holder leads on until the stream marks its term ended. The election waits for
    // the stream to see the new row (awaitsStream), and so that delete, even with every live
    // candidate fresh.
    const awaitsStream = !lease && trigger.streamBehind === true;
    if (ping.length === 0 && !awaitsStream) return finish(fresh, undefined, v.reason);
    const departed = v.reason === 'expired' || v.reason === 'reported' ? lease!.holderIdentity : undefined;
    const opened: Election = { id: electionIdFor(name, lease), startedAt: now, deadline: now + config.ackWindowMs, strategy, ...(departed ? { departed } : {}), ...(awaitsStream ? { awaitsStream: true as const } : {}) };
    return { kind: 'openElection', strategy, vacancy: v.reason, election: opened, ping };
  }

  // 5. Held and renewed: preempt a worse holder, keep preferredHolder pointing at the best candidate
  // (never the holder before this one while its row has not shown life since: isDeparted).
  // While the holder leads, a candidate that ignored its last ping is asked again once that ping is
  // askAgainAfterMs old (passedOver): a re-election costs nobody a vacancy.
  const holder = lease!.holderIdentity!;
  const preferred = lease!.preferredHolder;
  const askable = live.filter((c) => !setAside(c, v.vacant, now, config));
  const best = pickBest(askable.filter((c) => c.name === holder || !isDeparted(c, lease)), now, places);
  const want = best && isBetterThanHolder(best, holder, live, now, places) ? best.candidate.name : undefined;
  if (want === preferred) return { kind: 'leaveAlone', reason: want ? 'preemptionPending' : 'leaderHealthy', strategy };
  if (want) {
    // A fresh candidate has just shown it is alive; otherwise ask everyone first (a re-election).
    if (fresh.some((c) => c.name === want)) return { kind: 'preempt', strategy, holder, preferredHolder: want };
    // A preemption pending for another is taken back: the holder leads on until `want` answers.
    const opened: Election = { id: electionIdFor(name, lease), startedAt: now, deadline: now + reelectionWindowMs(lease!, config), strategy, holder };
    return { kind: 'openElection', strategy, election: opened, ping: askable.filter((c) => !fresh.includes(c) && worthAsking(c)).map((c) => c.name), ...(preferred !== undefined ? { withdrawsPreferredHolder: preferred } : {}) };
  }
  return { kind: 'clearPreferredHolder', strategy, preferredHolder: preferred!, why: best ? 'holderIsBest' : 'noValidCandidate' };

  function finish(acked: Candidate[], e: Election | undefined, reason?: VacancyReason): Decision {
    const ranked = orderCandidates(acked, now, places);
    const winner = ranked[0];
    if (!winner) {
      return acked.length === 0
        ? failed(now, election, 'noLiveCandidates', e ? (live.length ? `no candidate acknowledged election ${e.id} within ${config.ackWindowMs} ms` : `no live candidate is left for election ${e.id}`) : 'every live candidate ignored its last ping', strategy)
        : failed(now, election, 'noValidCandidates', `candidates ${acked.map((c) => c.name).sort().join(', ')} acknowledged but none has a valid emulationVersion and binaryVersion`, strategy);
    }
    return {
      kind: 'elect',
      strategy,
      winner: winner.candidate.name,
      ...(winner.candidate.identity ? { winnerInstance: winner.candidate.identity } : {}),
      ...(winner.candidate.platform ? { winnerPlatform: winner.candidate.platform } : {}),
      ...(winner.candidate.address ? { winnerAddress: winner.candidate.address } : {}),
      acked: acked.map((c) => c.name).sort(),
      ...(e ? { election: e } : {}),
      ...(reason ? { vacancy: reason } : {}),
      skewPrevented: skewPrevented(winner, ranked),
    };
  }
}

/**
 * The election as a transition system for the explorer (./explorer.ts): a few electors of one
 * lease, the coordinator, the lease row (./lease-rows.ts) and the candidate rows. Each elector is
 * the real step, lib/sdk/step.ts `decide(settings, State, event, moment) → { state, effects }`: its
 * record is the step's own `State`, every event it learns goes through `decide`, and the model
 * carries out the effects as lib/sdk/elector.ts's shell does (LeaderElector.feed, note and carry):
 * a read or a write becomes a request on the row, and its answer the next event; the deadline's
 * timer, the leader's work and the clock's jumps are events too. The model decides nothing an
 * elector decides. The coordinator runs lib/election's decideWithSuccession and plan. The
 * decisions come in through a `Protocol` (the Settings' decideFollower, decideLeader and
 * leadFromRead, and the lock's writes), so a test can hand it a wrapped (buggy) one.
 *
 * What is nondeterministic, each choice a transition:
 * - who steps, and when: any elector whose loop is idle may take its next step (the 'poll' event:
 *   a follower reads, a leader renews, or reads its lease if a wake came) at any moment, and the
 *   coordinator may reconcile at any moment. This is every timing of polls, renewals and ticks at once, so the cadence functions
 *   (followerDelay, leaderDelay, RenewalPhase) only time reads and are not needed for safety;
 * - every request is in flight until the explorer lands it: late (time passes meanwhile), before or
 *   after others (reordered), or never. Within the fault budget: a request's answer arrives later
 *   than it landed, or not at all (a timeout: the shell's step fails; a write that had not landed
 *   may still land later, or never — a lost write);
 * - wakes: a hand-over, release or end an elector wrote is announced to every other elector
 *   (LeaderElector.ended); each wake is delivered (the 'wake' event) at any moment, in any order,
 *   or lost;
 * - time: a tick advances the true time by one unit; a leader's renew deadline timer (armed by the
 *   step's 'armDeadline' effect) fires at the first tick at or past it (it is on the monotonic clock);
 * - clocks: each elector's stamp clock (DynamoDB's time as it measures it) is off by one of
 *   `stampOffsetsMs`, within ±maxClockErrorMs, and may jump to another within the bound
 *   (`clockJumps` times): its StampClock then counts the jump (the 'clockJump' event) and is in
 *   doubt for its next CONFIRMATIONS answers; monotonic clocks run at true rate;
 * - faults a run can meet: the leader's work fails (`workFailures`: the 'workFailed' event, at any
 *   moment of a term, its give-up carried out beside the loop, as LeaderElector.note does); an
 *   operator moves the lease's fencing token under its holder (`tokenMoves`);
 * - eventually consistent reads (`staleReads`): a read the step sends without `consistent` may be
 *   answered with any version of the row replaced less than `staleLagUnits` ago (the row before it
 *   was created included), as DynamoDB's copies and the simulator's model's are;
 * - cancel (`cancels`): run()'s signal aborts while the loop is idle; the elector is fed 'cancel'
 *   and carries out the chain (a cancelled leader reads its lease, leads on — the 'sleep' effect ends
 *   at or after its time; between its slices it reads its heir's candidate row, as it is, and the
 *   lease again if the row is gone — then hands over, or steps down), then, as LeaderElector.takePart's
 *   `finally`, withdraws its candidacy (its candidate row deleted) and leaves the lease as the step
 *   decides (step.ts leave: the 'leave' event; its consistent reads and its writes — a release, a
 *   decline, a kept term's take-off — in flight as any request, slow, lost, refused, landing late,
 *   each answer fed back); its wakes and clock jumps no longer reach it;
 * - a take in doubt (with `sessions`): a write putting a term on the elector's session that timed
 *   out (it may have landed) holds that session's renewals (LeaderElector.putOnSession), until a
 *   consistent read shows no term of this start-up there, it leads a term there, or its leaving
 *   settles it (the 'leave' event's `held`; step.ts leave's `doubt` part);
 * - an operator's delete of the row (`deletes`, coordinated electors only; not within clockSkewMs
 *   of the last term's start: the fencing token's assumption (2)): its leader leads on until it
 *   hears (its next renewal finds the row gone; on a session, the mark in the answer to its next
 *   session renewal, or its own read of the lease) or its renew deadline; the lease stream's
 *   function handles the delete's record in order (lib/functions/core.ts onLeaseChange: the election
 *   it opens, or holds, for the deleted term; on a session, held unmarked, the term marked ended on
 *   its session, then held a lease duration), and clears a waiting election's
 *   `awaitsStream` once it has; the coordinator's other triggers reconcile a missing row as behind
 *   the stream (`streamBehind`); a follower's consistent read finding the row gone, its candidates
 *   check and its take of the vanished row;
 * - the mode (`mode`): Conclave's coordinated election, or client-go's NoCoordination, where no
 *   coordinator runs and every elector takes a vacant lease itself;
 * - a suspend (`sleeps`, `sleepUnits`; not with sessions): one machine's monotonic clock and the
 *   timers on it stand still while the others go on; it sends and hears nothing, its requests in
 *   flight may land meanwhile, their answers (or timeouts) heard once it wakes. Woken, as
 *   LeaderElector does: its StampClock's estimate is behind by the sleep (its check says noSamples)
 *   until a response's sample, which counts it among its jumps and looks at the clocks (onSleep) before the answer is fed; a
 *   timeout, a wake or its work failing may come first; its loop's next step, isLeader() and its
 *   clocks' timer (by the next tick) look at the clocks (lookAtClocks: 'slept', then 'wake'). Its
 *   renew deadline is judged on true time, as isLeader() would answer (after that look);
 * - where it starts: no lease row yet (every candidate just registered), or `held` — the first
 *   elector leads a confirmed term naming the second successor, as an election leaves it, so a
 *   hand-off (the leader's work failing) and what the heir does with it are a few steps away.
 *
 * - sessions (`sessions`): each elector's process on a Session of its own, its instance naming the
 *   process; a leader moves its term onto its live session by a renewal naming it, then renews the
 *   session instead (the 'sessionRenewed' event) and reads its lease; the session renews at any
 *   moment (answered within the unit, or, within the fault budget, its answer lost or arriving after
 *   time passed) or ends
 *   (`sessionEnds`: 'sessionEnded'), and a next session's row is started after; followers read the
 *   session row a lease names, and their holder's process's rows, answered with the rows as they
 *   are; the coordinator judges a session-held lease by the later of its stamp and the session's
 *   (reconcileOnce's effectiveLease); a peer may rewrite the lease's `session` (`sessionRedirects`,
 *   as the simulator's `sessionRedirect`: to its own session, or to one that does not exist);
 * - kept stops (`keptStops`): a stopped leader's term left to run out, named on its process's
 *   session rows (`leftTerms`) until the Session's consistent read of the lease, due a lease
 *   duration past the name's stamp, shows the term no more (Session.lookAtLeft, through
 *   step.ts showsLeftTerm); an operator may move the fencing token under it (`tokenMoves`: its
 *   `termToken` kept). Checked besides: while the row shows a term so left, no session row of its
 *   process vouches for it past the stamp it was left at (renewedBySession: a bound on how long
 *   nobody leads, not a second leader); with `takeOffs`, the stopped elector takes the term off the
 *   session its process runs on (step.ts leave, its `kept` part: a consistent read, leavingKept, a
 *   renewal naming no session, decided again from a new read where refused or unanswered:
 *   afterLeaving), checked never to stamp it later than observers judged it by as it lands; with
 *   `leftElsewhere`, the process's other electors left terms of other leases, and past
 *   MAX_LEFT_TERMS its session rows are held (step.ts holdsForLeft);
 *
 * Not modelled: the push path's health (pushLive false), faults on the candidates table (its writes
 * and reads land at once), a deleted row in NoCoordination; of sessions, the SessionReader's sharing of an
 * earlier read among a process's electors, older copies of a session row, the functions' marks of
 * terms ended by anything but a delete; more than one elector per process.
 */
import type { Candidate } from '../../lib/schemas/candidate.js';
import { MAX_LEFT_TERMS, processOf, type IdentityLease, type LeftTerm } from '../../lib/schemas/identity.js';
import { instanceOnSession } from '../../lib/schemas/instance.js';
import { effectiveLease, judgingRow, marksTermEnded, renewedBySession, sessionStampAt, type SessionStamp } from '../../lib/election/vacancy.js';
import { ElectionConfigSchema, type ElectionConfig, type ElectionConfigInput } from '../../lib/schemas/config.js';
import { acquisition, takenAgain } from '../../lib/sdk/lock.js';
import type { Lease } from '../../lib/schemas/lease.js';
import type { RowPatch } from '../../lib/schemas/common.js';
import { declinePatch, type Heir, type LeaseRead, type SecondSuccessor, type Term } from '../../lib/stores/lease-store.js';
import {
  decide,
  decideFollower,
  decideLeader,
  FOLLOWING,
  holdsForLeft,
  inTerm,
  leadFromRead,
  SESSION_QUIET_LEASES,
  showsLeftTerm,
  sleepToCount,
  sleptSince,
  sessionFallbackMs,
  STAMP_ERROR_MS,
  START,
  type Effect,
  type Event,
  type FollowerDecision,
  type FollowerState,
  type FollowerView,
  type Lead,
  type Moment,
  type Next,
  type Settings,
  type State,
} from '../../lib/sdk/step.js';
import { CONFIRMATIONS } from '../../lib/sdk/server-clock.js';
import { nextFencingToken } from '../../lib/schemas/fencing-token.js';
import { decideWithSuccession } from '../../lib/election/successor.js';
import { deleteHoldMs, heldAfterDelete, isNoop, pingsToWithdraw, type Decision } from '../../lib/election/decide.js';
import { plan } from '../../lib/election/plan.js';
import { leaseRows, type LeaseRows, type Landed, type Row, type RowRead } from './lease-rows.js';
import type { Spec, Transition } from './explorer.js';

/** What the environment knows that no decision should read: a planted bug may (expiryByHolderTimestamp). */
export interface Environment {
  /** The deciding machine's wall clock (epoch ms): off by anything; the SDK stamps with DynamoDB's time instead. */
  readonly wallNow: number;
  /** DynamoDB's time as the deciding process measures it now (its StampClock's now: what a renewal is stamped with). */
  readonly stampNow: number;
}

/** The decisions the model runs, as the elector's Settings take them (sim/bugs.ts plants there too): the real ones by default (`realProtocol`), or a test's wrapped ones. */
export interface Protocol {
  /** The elector's step itself (lib/sdk/step.ts decide): a plant may wrap it (how it takes 'slept'). */
  readonly decide: typeof decide;
  /** Settings.decideFollower: the follower's decision on a poll. */
  readonly decideFollower: (v: FollowerView, env: Environment) => FollowerDecision;
  /** Settings.decideLeader: the leader's decision on an observation. */
  readonly decideLeader: typeof decideLeader;
  /** Settings.leadFromRead: whether an heir leads a handed term from its read (before confirming it), and from when. */
  readonly leadFromRead: typeof leadFromRead;
  readonly decideCoordinator: typeof decideWithSuccession;
  readonly plan: typeof plan;
  /** The lease row's conditional writes (the lock's). */
  readonly rows: LeaseRows;
  /** The session rows as a reader finds them: the lock's session reads (`by: 'elector'`: the row named, and a process's rows for its query) and the coordinator's. */
  readonly sessionRows: (rows: readonly IdentityLease[], by: 'elector' | 'coordinator') => readonly IdentityLease[];
  /** What the coordinator judges a lease by, given the session row it read after it (reconcileOnce: effectiveLease). */
  readonly coordinatorView: (lease: Lease, session: SessionStamp | undefined, now: number) => Lease;
  /** The Session's rule for a term its process left (SessionSeam.leave's `stillHeld`, as LeaderElector.leaveTerm builds it): whether a consistent read of the lease still shows it (false: the name is dropped). */
  readonly showsLeftTerm: typeof showsLeftTerm;
  /** Whether a process that left `count` terms to run out holds its session rows (Session.heldFor and start: step.ts holdsForLeft). */
  readonly holdsForLeft: typeof holdsForLeft;
}

export const realProtocol: Protocol = { decide, decideFollower: (v) => decideFollower(v), decideLeader, leadFromRead, decideCoordinator: decideWithSuccession, plan, rows: leaseRows, sessionRows: (rows) => rows, coordinatorView: effectiveLease, showsLeftTerm, holdsForLeft };

export interface ModelConfig {
  readonly electors: number;
  /** One tick of true time. */
  readonly unitMs: number;
  readonly leaseDurationMs: number;
  readonly renewDeadlineMs: number;
  readonly retryPeriodMs: number;
  readonly fallbackAfterMs: number;
  /** The stamp clocks' errors an elector may have (each within ±maxClockErrorMs). */
  readonly stampOffsetsMs: readonly number[];
  /** The electors' maxClockErrorMs: every stamp is within it of DynamoDB's (true) time. */
  readonly maxClockErrorMs: number;
  /** client-go's mode without a coordinator (`NoCoordination`: every elector takes a vacant lease itself; no candidates, no successors), or Conclave's (the default). */
  readonly mode?: 'coordinated' | 'NoCoordination';
  /** Where it starts: no lease row (`vacant`), or the first elector leading a confirmed term that names the second successor (`held`). */
  readonly start?: 'vacant' | 'held';
  /** The coordinator's clock's error. */
  readonly coordinatorOffsetMs: number;
  /** The machines' wall clocks' errors (read by no real decision). */
  readonly wallOffsetsMs: readonly number[];
  /** Each elector's emulation (and binary) version: a lower one is preferred, so the holder is preempted. */
  readonly versions: readonly string[];
  /** Requests answered late or not at all (timeouts), in all. */
  readonly faults: number;
  readonly clockJumps: number;
  readonly workFailures: number;
  readonly tokenMoves: number;
  /** Eventually consistent reads answered with an older copy of the row, in all (0: every read answers the row as it is). */
  readonly staleReads?: number;
  /** run() cancelled, in all: an elector steps down as LeaderElector.takePart's `finally` does (see `Cancel`). */
  readonly cancels?: number;
  /** Every elector's process on a Session (see `ElectorSession`): its terms move onto it, and followers and the coordinator judge them by its row. */
  readonly sessions?: boolean;
  /** Sessions ended, in all (a Session ends when its renewals fail past its own deadline; here at any moment). */
  readonly sessionEnds?: number;
  /**
   * An operator deleting the lease row, in all (not with sessions or NoCoordination: see `deleteRow`).
   * Only once the last term began more than clockSkewMs (and a unit) ago: the fencing token's
   * assumption (2) (docs/safety.md), that a row is not deleted and taken again within S of the last
   * acquisition.
   */
  readonly deletes?: number;
  /** A peer of the lease rewriting its `session` (issue 36: a same-lease worker's write the holder did not make), in all: to the peer's own session, or to one that does not exist. */
  readonly sessionRedirects?: number;
  /**
   * With `sessions` and `cancels`: every elector runs with `releaseOnCancel: false` and its
   * process's Session runs on after its run() ends (its other electors, not modelled, keep it
   * renewed): a cancelled leader releases nothing, and names the term it led last as left
   * (SessionSeam.leave: `leftTerms` on every row its process writes from then on), dropped once a
   * consistent read of the lease shows the term no more (Session.lookAtLeft). Without `takeOffs`,
   * the term stays where the row has it, as where the take-off's read or write fails on every try.
   */
  readonly keptStops?: boolean;
  /**
   * With `keptStops`: the stopped elector then takes its kept term off the session its process
   * runs on (step.ts leave, its `kept` part): a consistent read of the lease, leavingKept's
   * decision from it, a renewal conditioned on the term's token naming no session (`session: null`),
   * stamped from the session's stamp as its process last knew it landed, announced to the others
   * once it lands; refused or unanswered, decided again from a new read (afterLeaving, up to
   * LEAVING_READS reads). Checked besides: a take-off that lands never stamps the term later than
   * observers judged it by as it landed (the later of the row's stamp, a millisecond past it, and
   * the session row's, as renewedBySession reads it: the stamp a term named as left was left at).
   */
  readonly takeOffs?: boolean;
  /**
   * With `keptStops`: terms the first elector's process's other electors (not modelled) left to
   * run out before the model starts, of other leases (their rows are not modelled: each name is
   * dropped at any moment, as its lease's read may show it no more). Past MAX_LEFT_TERMS in all,
   * the process holds its session rows (step.ts holdsForLeft: none renewed, none started); a
   * Session that wrote on would name the first MAX_LEFT_TERMS it left (IdentityLeaseItem.leftTerms
   * names no more), so not the newest: the modelled term.
   */
  readonly leftElsewhere?: number;
  /** With `start: 'held'`: the held row names this `session` from the start (a peer's earlier redirect, as `sessionRedirects` writes it), its holder's own or not. */
  readonly heldSession?: string;
  /** How far back such a copy may be: a version replaced less than this many units ago (DynamoDB's copies lag by up to about a second; the simulator's by up to 1,000 ms). */
  readonly staleLagUnits?: number;
  /**
   * A machine suspended, in all (a laptop's suspend; not with sessions): its monotonic clock and the
   * timers on it stand still, it sends and hears nothing while others go on, for one of `sleepUnits`.
   */
  readonly sleeps?: number;
  /** How long a suspend lasts, in units of true time (its monotonic clock runs half a unit of the first before it stops). */
  readonly sleepUnits?: readonly number[];
  /** Time passes by 1 to this many units in one transition (shorter traces; the same states). */
  readonly maxTickUnits: number;
  readonly coordinator: ElectionConfigInput;
}

/**
 * Small enough to explore, with the SDK's ratios kept where they matter: unit 500 ms; lease 2 s
 * (4 units), renew deadline 1.5 s, retry period 0.5 s; stamp clocks off by ±maxClockErrorMs
 * (500 ms, the default), so any two are a clockSkewMs (1 s) apart; elections: first term 1 s, ack
 * window 1 s.
 */
export const SMALL: ModelConfig = {
  electors: 2,
  unitMs: 500,
  leaseDurationMs: 2_000,
  renewDeadlineMs: 1_500,
  retryPeriodMs: 500,
  fallbackAfterMs: 3_000,
  stampOffsetsMs: [-500, 500],
  maxClockErrorMs: 500,
  coordinatorOffsetMs: 0,
  wallOffsetsMs: [0],
  versions: ['1.30.0', '1.30.0', '1.29.0'],
  faults: 1,
  clockJumps: 0,
  workFailures: 0,
  tokenMoves: 0,
  maxTickUnits: 4,
  coordinator: { ackWindowMs: 1_000, electedLeaseDurationSeconds: 1, defaultLeaseDurationSeconds: 2, clockSkewMs: 1_000, candidateStaleAfterMs: 600_000, candidateRepingAfterMs: 300_000 },
};

const LEASE = 'model';
const KEY = { name: LEASE };
/** True time starts here (units): far enough from 0 that every stamp and token is positive. */
const T0 = 1_000_000;

/** A request on the lease row in flight. */
type Request =
  | { readonly kind: 'read'; readonly consistent: boolean }
  | { readonly kind: 'write'; readonly read: RowRead; readonly patch: RowPatch<Lease> }
  | { readonly kind: 'renew'; readonly term: Term; readonly renewTime: number; readonly seconds: number; readonly session?: string | null; readonly takeOff?: true }
  | { readonly kind: 'handOver'; readonly term: Term; readonly heir: Heir; readonly now: number; readonly firstTermSeconds: number; readonly leaseTransitions: number; readonly second: SecondSuccessor }
  | { readonly kind: 'release'; readonly term: Term; readonly now: number }
  | { readonly kind: 'endChanged'; readonly termToken: number; readonly lastHolder: string; readonly now: number }
  /** A cancelled leader leading on until `until` (monotonic): the shell's sleep, which ends at or after it (a timer may fire late). */
  | { readonly kind: 'sleep'; readonly until: number };

/**
 * What the shell makes of a request's answer (LeaderElector.carry's `answer`, `conflict` and
 * `fault`): a follower's event, or the leader's `answer` with its `rest` — the lease it returned
 * (`lease`), whether it landed (`ok`), or nothing (`none`). On a fault (a timeout): `throw` ends
 * the chain (feed throws), `failed` answers `failed: true`, `quiet` answers as if refused
 * (LeaderElector.ended reports the fault and the term runs out).
 */
type Then =
  | { readonly kind: 'leaseRead' | 'confirmed' | 'acquired' | 'reported' | 'released' | 'endChanged' }
  /** A stopping elector's consistent read of the lease, and its write leaving it (step.ts leave: readToLeave, leavingWrite; a fault is reported, answered 'unread' or as the write may have landed). */
  | { readonly kind: 'leavingRead' | 'leavingWritten' }
  | { readonly kind: 'answer'; readonly rest: readonly Next[]; readonly as: 'lease' | 'ok' | 'none'; readonly onFault: 'throw' | 'failed' | 'quiet' };

interface Op {
  readonly req: Request;
  readonly then: Then;
  /** Monotonic send time. */
  readonly sentAt: number;
  /** Slow (the fault budget): it may land after time passed, be answered late, or time out. Others land within the unit they are sent in. */
  readonly slow?: boolean;
  /** Landed already; its answer not delivered yet. */
  readonly landed?: Landed;
}

/** A write nobody waits for (a timed-out request, a leader's endTerm): it may still land. */
interface Orphan {
  readonly req: Request;
  /** Who wrote it, if its landing is announced to the others (LeaderElector.ended's wake). */
  readonly by?: number;
}

/**
 * Where a cancelled elector is in LeaderElector.takePart's `finally`: its 'cancel' event's chain
 * running (`steppingDown`: the loop's wakes and clock jumps no longer reach it), stepped down (`down`:
 * the step's 'steppedDown' said what it led), its candidacy withdrawn and the lease being left as the
 * step decides (`leaving`: the 'leave' event and the answers it asks for, step.ts leave), then `gone`.
 */
type Cancel = { readonly phase: 'steppingDown' } | { readonly phase: 'down' | 'leaving' | 'gone'; readonly led: { readonly term: Term; readonly handed: boolean } | undefined };

/**
 * The process's Session (lib/sdk/session.ts), as its electors see it: the live session's name, or
 * null once it ended and before the next one starts (Moment.session: a write then takes a term off
 * its session). `gen` numbers the process's sessions, each a row of its own (`World.sessionRows`).
 */
interface ElectorSession {
  readonly name: string | null;
  readonly gen: number;
  /** A renewal sent at `sentAt` (monotonic) that landed, its answer still on its way: the Session waits for it before renewing again. */
  readonly late?: number;
  /** The term its process's stopped elector left to run out (SessionSeam.leave), named on every row it writes from then on, until a read of the lease shows it no more (Session.lookAtLeft). */
  readonly left?: LeftTerm;
  /** While a renewal's answer is late (`late`): the stamp its process last knew landed (SessionSeam.stamp), the row's before that renewal (kept with `takeOffs` only). */
  readonly known?: number;
  /** Terms its process's other electors left to run out, of other leases (`leftElsewhere`): counted toward MAX_LEFT_TERMS. */
  readonly others?: number;
}

export interface Elector {
  readonly name: string;
  readonly instance: string;
  /** Its process (`p1`…): on a Session, the instance names it (instanceOnSession), and the session rows carry it. */
  readonly process: string;
  /** Its process's Session, if `sessions`. */
  readonly session?: ElectorSession;
  /** The term it left to run out as it stopped (keptStops), and the stamp: the model's own record, kept after the Session drops the name (the invariant's). */
  readonly leftTerm?: LeftTerm;
  /**
   * A write putting a term on this session (a take, a confirmation, a leader's renewal naming it)
   * timed out, so it may have landed: the session's renewals are held (LeaderElector.putOnSession,
   * doubtTake) until a consistent read of the lease shows no term of this start-up on it
   * (doubtRead: while held, every read of the lease is consistent), it leads a term on it, or its
   * leaving settles it (step.ts leave's `doubt` part: the 'leave' event's `held`, 'settleDoubt').
   */
  readonly held?: string;
  readonly stampOffset: number;
  readonly wallOffset: number;
  /** Its StampClock's jumps so far (Moment.jumps), and answers still to come before it is trusted again after the last. */
  readonly jumps: number;
  readonly unconfirmed: number;
  /** The real step's record (lib/sdk/step.ts State): following, or leading (`lead`). */
  readonly state: State;
  /** The renew deadline's timer (the shell's), as the step last armed it: monotonic time, and the term's number. */
  readonly deadline?: { readonly at: number; readonly no: number };
  /** The request its loop (LeaderElector.takePart's feed) waits on. */
  readonly busy?: Op;
  /** Requests of chains begun outside the loop (LeaderElector.note: the leader's work failing, say), each waited on by its own chain. */
  readonly background: readonly Op[];
  /** run() cancelled: how far its step-down has gone. */
  readonly cancel?: Cancel;
  /** How far its monotonic clock is behind true time (ms): what a suspend took from it. */
  readonly lag?: number;
  /** Its machine's suspend: its monotonic clock read `from` when it stopped (readings before are ≤ it, after ≥ from + half a unit), and lost `lost` ms; asleep until true time `until` (ms). */
  readonly sleep?: { readonly from: number; readonly lost: number; readonly until: number; readonly asleep: boolean; readonly counted?: true };
  /** Its clock since boot gained this on its monotonic clock since the shell last looked (sleepGauge): not looked at yet (lookAtClocks). */
  readonly gain?: number;
  /** Its StampClock's estimate is behind DynamoDB's time by this (it is on the monotonic clock) until its next response's sample starts it again. */
  readonly behind?: number;
}

/**
 * A held row's delete whose stream record the lease stream's function is handling (onLeaseChange):
 * `hold` — the next election held without the mark (unmarkedHoldMs); `mark` — the term marked ended
 * on its holder's session; `reconcile` — held a lease duration (the mark written). A term on no
 * session skips to `reconcile` (nothing to mark).
 */
interface PendingDelete {
  readonly old: Lease;
  readonly next: 'hold' | 'mark' | 'reconcile';
}

/** A wake in flight to elector `to` (the revision the announcing write left). */
interface WakeMsg {
  readonly to: number;
  readonly revision: number | undefined;
}

export interface World {
  /** True time, in units. */
  readonly t: number;
  readonly row: Row;
  readonly candidates: readonly Candidate[];
  readonly electors: readonly Elector[];
  /** The coordinator's lease write in flight, and the pings to withdraw once it lands. */
  readonly coordinator?: { readonly read: RowRead; readonly patch: RowPatch<Lease>; readonly withdraw: readonly { name: string; pingTime: number }[] };
  readonly orphans: readonly Orphan[];
  readonly wakes: readonly WakeMsg[];
  /** The row's versions an eventually consistent read may still return, oldest first: each with the unit it was replaced in (kept only while `budget.staleReads` lasts). */
  readonly history: readonly { readonly row: Row; readonly until: number }[];
  /** The session rows of the identities table (every session each process started; only its owner writes one). */
  readonly sessionRows: readonly IdentityLease[];
  /** Held rows an operator deleted whose stream record the lease stream's function has not handled yet, oldest first. */
  readonly pendingDeletes: readonly PendingDelete[];
  /** The fencing tokens of terms whose row was deleted under them: their leader leads on, without a row, until its next renewal or its renew deadline. */
  readonly deletedTokens: readonly number[];
  /** When (unit) the last term was written on the row: a delete comes more than clockSkewMs after it. */
  readonly lastTermAt?: number;
  /** A term held on a session ended by another's take (a goal: what the followers' session reads are for). */
  readonly takenFromSession?: true;
  /** A kept term (its elector gone, releaseOnCancel false) whose row a peer pointed at a session not its process's, ended (a goal: it ran out). */
  readonly keptRedirectEnded?: true;
  /** A kept term taken off its session by its stopped elector (a goal: takeOffs). */
  readonly keptTakenOff?: true;
  readonly budget: { readonly faults: number; readonly jumps: number; readonly workFailures: number; readonly tokenMoves: number; readonly staleReads: number; readonly cancels: number; readonly sessionEnds: number; readonly sessionRedirects: number; readonly deletes: number; readonly sleeps: number };
  /** Reads answered with an older copy so far (a goal's count: the budget's spending, so not in the key twice). */
  readonly copies: number;
  /** The last term begun (the history checker's token rule). */
  readonly lastStarted?: { readonly instance: string; readonly token: number };
  /** An invariant the transition into this state broke. */
  readonly violation?: string;
}

/** The model of `cfg` driving `proto`: initial states, transitions, invariants and the canonical key. */
export function electionSpec(cfg: ModelConfig, proto: Protocol = realProtocol): Spec<World> {
  const U = cfg.unitMs;
  // in NoCoordination a missing row is taken at once (an overlap the checker forgives)
  if ((cfg.deletes ?? 0) > 0 && cfg.mode === 'NoCoordination') throw new Error('test/model: deletes are modelled with coordinated electors only');
  const election: ElectionConfig = ElectionConfigSchema.parse(cfg.coordinator);
  const leaseSeconds = Math.ceil(cfg.leaseDurationMs / 1000);
  const names = Array.from({ length: cfg.electors }, (_, i) => `w${i + 1}`);
  if ((cfg.sleeps ?? 0) > 0 && cfg.sessions) throw new Error('test/model: a suspend is modelled without sessions');
  /** True time (ms): what the machines' clocks since boot and wall clocks count. */
  const mono = (w: World) => w.t * U;
  /** `e`'s monotonic clock: true time less what a suspend took from it. */
  const monoOf = (w: World, e: Elector) => w.t * U - (e.lag ?? 0);
  const stamp = (w: World, e: Elector) => w.t * U + e.stampOffset - (e.behind ?? 0);
  const session = sessionFallbackMs({ sessionBackstopMs: SESSION_QUIET_LEASES * cfg.leaseDurationMs, renewDeadlineMs: cfg.renewDeadlineMs, retryPeriodMs: cfg.retryPeriodMs });
  /** LeaderElector's Settings, as its constructor builds them. */
  const settings = (w: World, e: Elector): Settings => ({
    leaseName: LEASE,
    identity: e.name,
    instance: e.instance,
    mode: cfg.mode ?? 'coordinated',
    leaseDurationMs: cfg.leaseDurationMs,
    renewDeadlineMs: cfg.renewDeadlineMs,
    retryPeriodMs: cfg.retryPeriodMs,
    fallbackAfterMs: cfg.fallbackAfterMs,
    sessionFallbackMs: session,
    candidate: cfg.mode !== 'NoCoordination',
    decideFollower: (v) => proto.decideFollower(v, { wallNow: mono(w) + e.wallOffset, stampNow: stamp(w, e) }),
    leadFromRead: proto.leadFromRead,
    decideLeader: proto.decideLeader,
    onWorkFailure: 'giveUp',
    releaseOnCancel: !cfg.keptStops,
    promptly: false,
    cadenceMs: cfg.retryPeriodMs,
    stampErrorMs: Math.max(STAMP_ERROR_MS, cfg.maxClockErrorMs),
    clockMeasured: true,
  });
  /** LeaderElector.moment: its StampClock measures DynamoDB's time to within its own error (true time lies inside), or doubts it after a jump or a sleep no sample showed yet. */
  const moment = (w: World, e: Elector): Moment => ({
    now: monoOf(w, e),
    // (woken from a sleep no response has shown yet: its estimate lost the sleep, and its check says so, as before a first sample)
    clock: e.behind !== undefined ? { ok: false, reason: 'noSamples' } : e.unconfirmed > 0 ? { ok: false, reason: 'jumped', jumpMs: 2 * cfg.maxClockErrorMs } : { ok: true, errorMs: Math.abs(e.stampOffset) },
    offset: e.stampOffset - (e.behind ?? 0),
    jumps: e.jumps,
    session: e.session ? e.session.name : undefined,
    pushLive: false,
    sessionStamp: sessionStampOf(w, e),
  });
  /** SessionSeam.stamp of the live session: its row's stamp, or while a renewal's answer is late, the stamp before it (kept with `takeOffs` only: else no take-off reads it). */
  const sessionStampOf = (w: World, e: Elector): number | undefined => {
    const name = e.session?.name;
    if (!name) return undefined;
    return e.session!.late !== undefined ? e.session!.known : w.sessionRows.find((r) => r.name === name)?.renewTime;
  };

  // ---- world updates (immutable) ----
  const withElector = (w: World, i: number, e: Elector): World => ({ ...w, electors: w.electors.map((x, j) => (j === i ? e : x)) });
  const patchElector = (w: World, i: number, p: Partial<Elector>): World => withElector(w, i, { ...w.electors[i]!, ...p });
  const broke = (w: World, message: string): World => (w.violation ? w : { ...w, violation: message });
  const lag = cfg.staleLagUnits ?? 2;
  function setRow(w: World, row: Row, req?: Request): World {
    // along one row, its token never goes back; across a delete (the delete itself is no step back), a term on the row
    // written again carries a token above the deleted term's: a row created without a term (an election's) carries 0, no token of a term
    const before = w.row?.fencingToken ?? (row?.holderIdentity !== undefined ? (w.deletedTokens.at(-1) ?? -1) : -1);
    const after = row?.fencingToken ?? before;
    // the version replaced stays readable as a copy for a while (an eventually consistent read), while copies may still be answered
    const history = w.budget.staleReads > 0 && row !== w.row ? [...w.history, { row: w.row, until: w.t }] : w.history;
    const taken = w.row?.session !== undefined && w.row.holderIdentity !== undefined && row?.holderInstance !== undefined && row.holderInstance !== w.row.holderInstance;
    const newTerm = row?.holderIdentity !== undefined && (row.fencingToken !== w.row?.fencingToken || row.holderInstance !== w.row?.holderInstance);
    const old = w.row;
    const keptRedirectEnded =
      old?.holderInstance !== undefined && old.session !== undefined && !old.session.startsWith(`${processOf(old.holderInstance)}-`) && w.electors.some((e) => e.instance === old.holderInstance && e.cancel?.phase === 'gone') && (row?.holderInstance !== old.holderInstance || row.fencingToken !== old.fencingToken);
    const next: World = { ...w, row, history, ...(taken ? { takenFromSession: true as const } : {}), ...(keptRedirectEnded ? { keptRedirectEnded: true as const } : {}), ...(newTerm ? { lastTermAt: w.t } : {}) };
    if (after < before) return broke(next, `the lease's fencing token went back from ${before} to ${after}`);
    // a kept term's take-off (takeOffs) that lands: never stamped later than observers judged the term by as it landed — the
    // row's own stamp (a millisecond past it: a renewal never leaves the stamp where it was) or its session row's, as
    // renewedBySession reads it (for a term named as left, the stamp it was left at): a later stamp lengthens the time nobody leads it
    if (req?.kind === 'renew' && req.takeOff && row !== old && old?.session !== undefined && row?.renewTime !== undefined) {
      const named = w.sessionRows.find((r) => r.name === old.session && r.process === processOf(old.holderInstance));
      const judged = Math.max((old.renewTime ?? 0) + 1, named ? (renewedBySession(old, named).renewTime ?? 0) : 0);
      if (row.renewTime > judged) return broke(next, `a take-off stamped term ${old.termToken ?? old.fencingToken} ${row.renewTime - judged} ms past the stamp observers judged it by (session ${old.session}'s row${named?.leftTerms ? ', naming it as left' : ''})`);
    }
    return next;
  }
  /** LeaseCandidate.renew: an acknowledgement (the candidate row's renewTime, and the ping copied). Immediate: the candidates table is not faulted. */
  function renewCandidate(w: World, i: number): World {
    const e = w.electors[i]!;
    const now = stamp(w, e);
    return { ...w, candidates: w.candidates.map((c) => (c.name === e.name ? { ...c, renewTime: Math.max(c.renewTime, now), ackedPingTime: c.pingTime ?? 0, revision: c.revision + 1 } : c)) };
  }
  const spend = (w: World): World => ({ ...w, budget: { ...w.budget, faults: w.budget.faults - 1 } });
  /** One copy answered: the budget spent (the versions kept are forgotten with its last one). */
  const spendCopy = (w: World): World => ({ ...w, copies: w.copies + 1, ...(w.budget.staleReads > 1 ? { budget: { ...w.budget, staleReads: w.budget.staleReads - 1 } } : { history: [], budget: { ...w.budget, staleReads: 0 } }) });
  /** The older versions an eventually consistent read of `op` may be answered with now (none for a consistent read, or once the budget is spent). */
  const copies = (w: World, op: Op): readonly Row[] => (op.req.kind === 'read' && !op.req.consistent && w.budget.staleReads > 0 ? w.history.filter((h) => h.until > w.t - lag && h.row !== w.row).map((h) => h.row) : []);
  /** LeaderElector.ended's wake: to every other elector. */
  const announce = (w: World, by: number, revision: number | undefined): World => ({ ...w, wakes: [...w.wakes, ...w.electors.flatMap((e, j) => (j === by || e.cancel ? [] : [{ to: j, revision }]))] });

  function land(row: Row, req: Request): Landed {
    switch (req.kind) {
      case 'read':
        return { row, answer: row };
      case 'write':
        return proto.rows.write(row, req.read, req.patch, LEASE);
      case 'renew':
        return proto.rows.renewTerm(row, req.term, req.renewTime, req.seconds, req.session);
      case 'handOver':
        return proto.rows.handOver(row, req.term, req.heir, req.now, req.firstTermSeconds, req.leaseTransitions, req.second);
      case 'release':
        return proto.rows.releaseTerm(row, req.term, req.now);
      case 'endChanged':
        return proto.rows.endChangedTerm(row, req.termToken, req.lastHolder, req.now);
      case 'sleep':
        throw new Error('a sleep does not land on the row');
    }
  }
  const releaseRequest = (w: World, e: Elector, term: Term): Request => ({ kind: 'release', term, now: stamp(w, e) });
  const endRequest = (w: World, e: Elector, term: Term): Request => ({ kind: 'endChanged', termToken: term.fencingToken, lastHolder: term.holderIdentity, now: stamp(w, e) });

  // ---- the shell: LeaderElector.feed, note and carry ----
  /**
   * `ev` through the real step, its effects carried out in order, each immediate answer (the
   * candidates table's, the leader's work started) fed back at once; a request on the lease row is
   * left in flight: the loop's (`main`), or a chain's begun outside it (LeaderElector.note).
   */
  function feed(w: World, i: number, ev: Event, main: boolean): World {
    for (let next: Event | undefined = ev; next; ) {
      const e = w.electors[i]!;
      const { state, effects } = proto.decide(settings(w, e), e.state, next, moment(w, e));
      // (LeaderElector.feed: the session its term is on, as it knows it)
      // (LeaderElector.feed: leading a term it knows is on the held session settles the doubt)
      w = patchElector(w, i, state.lead !== undefined && state.lead.session === e.held ? { state, held: undefined } : { state });
      next = undefined;
      for (const f of effects) {
        const c = carry(w, i, f);
        w = c.w;
        if (c.next) next = c.next;
        else if (c.req) {
          // (a sleep is in flight while time passes, as a slow request is)
          const op: Op = { req: c.req, then: c.then!, sentAt: monoOf(w, w.electors[i]!), ...(c.req.kind === 'sleep' ? { slow: true } : {}) };
          const x = w.electors[i]!;
          w = patchElector(w, i, main ? { busy: op } : { background: [...x.background, op] });
        }
      }
    }
    return w;
  }

  /** LeaderElector.carry: one effect carried out — a request on the row to send (`req`, its answer made by `then`), an answer at once (`next`), or neither. */
  function carry(w: World, i: number, f: Effect): { w: World; req?: Request; then?: Then; next?: Event } {
    const e = w.electors[i]!;
    const now = stamp(w, e);
    const lease = (rest: readonly Next[], onFault: 'throw' | 'failed'): Then => ({ kind: 'answer', rest, as: 'lease', onFault });
    switch (f.kind) {
      case 'readLease':
        // (a take in doubt: a copy may not show it, so the row itself)
        return { w, req: { kind: 'read', consistent: f.consistent || e.held !== undefined }, then: { kind: 'leaseRead' } };
      case 'settleDoubt':
        return { w: patchElector(w, i, { held: undefined }) };
      case 'readSession':
        // (answered with the row as it is: the SessionReader's sharing of an earlier read, and older copies, are not modelled)
        return { w, next: { kind: 'sessionRead', read: { row: proto.sessionRows(w.sessionRows, 'elector').find((r) => r.name === f.name), sentAt: monoOf(w, e), ...(f.consistent ? {} : { consistent: false }) } } };
      case 'readProcessSession': {
        // LeaseLock.processSession: the freshest row of that process, by a consistent query
        const rows = proto.sessionRows(w.sessionRows, 'elector').filter((r) => r.process === f.process);
        const row = rows.reduce<IdentityLease | undefined>((a, r) => (a === undefined || r.renewTime > a.renewTime ? r : a), undefined);
        return { w, next: { kind: 'processSessionRead', read: { row, sentAt: monoOf(w, e) } } };
      }
      case 'readCandidates':
        // LeaseLock.candidates: the lease's candidate rows (the vanished take's check), read at once
        return { w, next: { kind: 'candidatesRead', instances: w.candidates.map((c) => c.identity) } };
      case 'renewCandidate':
        return { w: renewCandidate(w, i), next: { kind: 'candidateRenewed' } };
      case 'reportVacancy':
        return { w, req: { kind: 'write', read: f.read, patch: { set: { vacancyReport: { by: e.name, at: now, observedRevision: f.read.revision } } } }, then: { kind: 'reported' } };
      case 'confirm':
        // LeaderElector.carry: onto the live session, or leaving `session` as it is
        return { w, req: { kind: 'renew', term: f.term, renewTime: now, seconds: leaseSeconds, session: e.session?.name ?? undefined }, then: { kind: 'confirmed' } };
      case 'endChanged':
        return { w, req: endRequest(w, e, f.term), then: { kind: 'endChanged' } };
      case 'acquire':
        return { w, req: { kind: 'write', read: f.read, patch: acquisition(f.read.item, { identity: e.name, instance: e.instance, now, leaseDurationSeconds: leaseSeconds, electedBy: f.electedBy, session: e.session?.name }) }, then: { kind: 'acquired' } };
      case 'takeAgain':
        // LeaderElector.carry: onto the live session, or leaving `session` as it is
        return { w, req: { kind: 'write', read: f.read, patch: takenAgain(f.read.item!, { now, leaseDurationSeconds: leaseSeconds, session: e.session?.name }) }, then: { kind: 'acquired' } };
      case 'release':
        return { w, req: releaseRequest(w, e, f.term), then: { kind: 'released' } };
      case 'claim':
        return { w: renewCandidate(w, i) }; // void: refuses the claimant (no claims arise here)
      case 'armDeadline':
        return { w: patchElector(w, i, { deadline: { at: f.at, no: f.no } }) };
      case 'started': {
        // the leader's work starts (it may fail at any moment from now: a transition), answered at once
        let after = w;
        const last = w.lastStarted;
        if (last && f.term.fencingToken <= last.token)
          after = broke(after, `${e.name} began a term with fencing token ${f.term.fencingToken}, not above the last term's ${last.token}`);
        // (the gain stays: the gauge was taken before the step that took the term, so a sleep while its take was in flight is counted against it)
        return { w: { ...after, lastStarted: { instance: e.instance, token: f.term.fencingToken } }, next: { kind: 'answer', rest: f.rest } };
      }
      case 'stop':
        return { w: patchElector(w, i, { deadline: undefined }) };
      case 'endTerm':
        // void: in flight beside whatever the loop does next
        return { w: { ...w, orphans: [...w.orphans, { req: endRequest(w, e, f.term), by: i }] } };
      case 'renew':
        return { w, req: { kind: 'renew', term: f.term, renewTime: now, seconds: leaseSeconds, session: f.session }, then: lease(f.rest, 'failed') };
      case 'look':
        return { w, req: { kind: 'read', consistent: f.consistent }, then: lease(f.rest, f.reportFault ? 'failed' : 'throw') };
      case 'readHeir': {
        const row = w.candidates.find((c) => c.name === f.name);
        return { w, next: { kind: 'answer', rest: f.rest, row } };
      }
      case 'handOver':
        return { w, req: { kind: 'handOver', term: f.term, heir: f.heir, now, firstTermSeconds: Math.max(1, Math.ceil(cfg.leaseDurationMs / 3000)), leaseTransitions: f.leaseTransitions, second: f.second }, then: { kind: 'answer', rest: f.rest, as: 'ok', onFault: 'quiet' } };
      case 'releaseTerm':
        return { w, req: releaseRequest(w, e, f.term), then: { kind: 'answer', rest: f.rest, as: 'none', onFault: 'quiet' } };
      case 'renewCandidacy':
        return { w: renewCandidate(w, i), next: { kind: 'answer', rest: f.rest } };
      case 'standDown':
        return { w }; // the candidacy's mark on a session's row: the model's candidate rows carry none (its coordinator elects as before)
      case 'sleep':
        return { w, req: { kind: 'sleep', until: monoOf(w, e) + f.ms }, then: { kind: 'answer', rest: f.rest, as: 'none', onFault: 'throw' } };
      case 'steppedDown':
        return { w: patchElector(w, i, { cancel: { phase: 'down', led: f.led } }) };
      case 'readToLeave':
        // without `takeOffs`, a kept term's take-off is not tried: its read fails (reported), as where it fails on every try
        if (!cfg.takeOffs && e.state.leaving?.part === 'kept') return { w, next: { kind: 'leavingRead', read: 'unread' } };
        return { w, req: { kind: 'read', consistent: true }, then: { kind: 'leavingRead' } };
      case 'leavingWrite': {
        const m = f.write;
        const req: Request = m.kind === 'release' ? releaseRequest(w, e, m.term) : m.kind === 'decline' ? { kind: 'write', read: m.read, patch: declinePatch(m.read.item!, m.role) } : { kind: 'renew', term: m.term, renewTime: m.stamp, seconds: m.seconds, session: null, takeOff: true };
        return { w, req, then: { kind: 'leavingWritten' } };
      }
      case 'leaveTerm':
        return leaveTerm(w, i, f.term);
      case 'newLeader':
      case 'twin':
      case 'clockSkew':
      case 'tookUnelected':
      case 'stalled':
      case 'stepNow':
      case 'workFailure':
      case 'sessionCadence':
        return { w }; // callbacks, reports, the end of a nap and a session's read cadence: every timing is explored anyway
    }
  }

  /** What the sender does with the answer to `op` (undefined: it timed out), in the loop (`main`) or its own chain. */
  function answered(w: World, i: number, op: Op, answer: Lease | undefined, timedOut: boolean, main: boolean): World {
    const before = w.electors[i]!;
    const onSession = timedOut && before.session ? sessionPut(op) : undefined;
    const read = !timedOut && op.then.kind === 'leaseRead' && op.req.kind === 'read' && op.req.consistent;
    // LeaderElector.putOnSession: a write naming a session that timed out holds that session (one hold: a later one replaces it);
    // doubtRead: a consistent read of the lease settles it unless the row shows a term of this start-up on it
    const held = onSession ?? (read && before.held !== undefined && !(answer?.holderInstance === before.instance && answer.session === before.held) ? undefined : before.held);
    // each answer is a sample of DynamoDB's time: after a jump, the estimate is trusted again after CONFIRMATIONS of them
    w = patchElector(w, i, {
      unconfirmed: timedOut ? before.unconfirmed : Math.max(0, before.unconfirmed - 1),
      ...(main ? { busy: undefined } : { background: before.background.filter((o) => o !== op) }),
      held,
    });
    const t = op.then;
    // LeaderElector.ended: a hand-over, release or end that landed is announced
    const ends = op.req.kind === 'handOver' || op.req.kind === 'release' || op.req.kind === 'endChanged' || (op.req.kind === 'renew' && op.req.takeOff === true);
    if (!timedOut && answer && ends) w = announce(w, i, answer.revision);
    if (t.kind === 'answer') {
      if (timedOut && t.onFault === 'throw') return w;
      const a: Event = timedOut && t.onFault === 'failed' ? { kind: 'answer', rest: t.rest, failed: true } : t.as === 'lease' ? { kind: 'answer', rest: t.rest, lease: answer } : t.as === 'ok' ? { kind: 'answer', rest: t.rest, ok: !timedOut && answer !== undefined } : { kind: 'answer', rest: t.rest };
      return feed(w, i, a, main);
    }
    switch (t.kind) {
      case 'leavingRead':
        return leaving(w, i, { kind: 'leavingRead', read: timedOut ? 'unread' : { key: KEY, item: answer, revision: answer?.revision ?? 0 } });
      case 'leavingWritten': {
        // LeaderElector.leavingWrite: landed (a release or take-off announced: endWith), refused (a lost race), or unanswered (it may have landed)
        const out = timedOut ? 'unknown' : answer ? 'landed' : 'refused';
        const takenOff = out === 'landed' && op.req.kind === 'renew' && op.req.takeOff === true;
        return leaving(takenOff ? { ...w, keptTakenOff: true } : w, i, { kind: 'leavingWritten', out });
      }
      case 'released':
        // LeaderElector.ended reports a fault: the term runs out
        return feed(w, i, { kind: 'released' }, main);
      case 'endChanged':
        return w; // the poll ends with it
    }
    // a fault fails the step (LeaderElector.feed throws): the chain ends
    if (timedOut) return w;
    switch (t.kind) {
      case 'leaseRead':
        return feed(w, i, { kind: 'leaseRead', raw: { key: KEY, item: answer, revision: answer?.revision ?? 0 } }, main);
      case 'confirmed':
        return feed(w, i, { kind: 'confirmed', lease: answer }, main);
      case 'acquired':
        return feed(w, i, { kind: 'acquired', got: answer ? { written: answer } : { refusedBy: w.row?.holderIdentity } }, main);
      case 'reported':
        return feed(w, i, { kind: 'reported', lease: answer }, main);
    }
  }

  /** A leader answered with `lease`: it must not lead on in a term the answer shows gone (checked after each answer to a leader's request). */
  function actedOnAnswer(w: World, i: number, before: Lead | undefined, op: Op, answer: Lease | undefined): World {
    const e = w.electors[i]!;
    const l = e.state.lead;
    // (only an answer the step acts on: a renewal's, or a read of the lease; not the read for a Date while the clock is in doubt)
    const head = op.then.kind === 'answer' ? op.then.rest[0] : undefined;
    if (!before || !l || l.no !== before.no || !head || (head.k !== 'renewed' && head.k !== 'read') || head.no !== l.no) return w;
    const term = l.term;
    const gone = !inTerm(answer, { holderIdentity: term.holderIdentity, instance: e.instance, fencingToken: term.fencingToken, renewedAt: 0, session: undefined, shortMs: 0 });
    // (an eventually consistent copy is no proof: a leader on its session that reads its lease again, consistently, leads on
    // until that answer, which this check judges in turn)
    const b = e.busy;
    const readsAgain = op.req.kind === 'read' && !op.req.consistent && b?.req.kind === 'read' && b.req.consistent && b.then.kind === 'answer' && b.then.rest[0]?.k === 'read' && b.then.rest[0].no === l.no;
    return gone && !readsAgain ? broke(w, `${e.name} leads on in term ${term.fencingToken} after being answered with a row not in it (${shown(answer)})`) : w;
  }
  /** `answered`, then the check above. */
  function answer(w: World, i: number, op: Op, lease: Lease | undefined, timedOut: boolean, main: boolean): World {
    // a response's Date header after a suspend: the StampClock's sample shows the sleep (no jump), starts its estimate again
    // (counted among its jumps: Moment.jumps) and tells the elector (onSleep: lookAtClocks), before the answer is fed
    const x = w.electors[i]!;
    if (!timedOut && x.behind !== undefined && op.req.kind !== 'sleep') w = lookAtClocks(patchElector(w, i, { behind: undefined, jumps: x.jumps + 1 }), i, x.behind);
    const before = w.electors[i]!.state.lead;
    const after = answered(w, i, op, lease, timedOut, main);
    return timedOut ? after : actedOnAnswer(after, i, before, op, lease);
  }

  // ---- transitions ----
  /** The loop's next step (LeaderElector.takePart): the 'poll' event — a follower reads; a leader renews, or, woken, reads its lease. */
  function step(w0: World, i: number): { label: string; w: World } {
    // (each turn of the loop looks at the clocks first; following, it takes the sleep gauge afresh)
    const looked = lookAtClocks(w0, i);
    const w = looked.electors[i]!.state.lead ? looked : patchElector(looked, i, { gain: undefined });
    const e = w.electors[i]!;
    const woken = e.state.wakePending;
    const l = e.state.lead;
    const label = (looked !== w0 ? `${e.name} counts its sleep, then: ` : '') + (l ? (woken ? `${e.name}, woken, reads its lease` : `${e.name} steps in term ${l.term.fencingToken}`) : `${e.name} polls${woken ? ' (woken)' : ''}`);
    return { label, w: feed(w, i, { kind: 'poll', pushLive: false }, true) };
  }

  /**
   * LeaderElector.lookAtClocks: while leading, a gain of its clock since boot on its monotonic one
   * (sleptSince; `seenMs`: the sleep a response's Date header showed) is a sleep, fed as 'slept'
   * (sleepToCount: the gain and the clock's resolution), then 'wake' (it reads its lease at once).
   * Not leading: nothing (the gain stays until the loop's next step takes the gauge afresh).
   */
  function lookAtClocks(w: World, i: number, seenMs?: number): World {
    const e = w.electors[i]!;
    if (e.gain === undefined || !e.state.lead || !sleptSince(e.gain, seenMs)) return w;
    w = feed(patchElector(w, i, { gain: undefined, ...(e.sleep ? { sleep: { ...e.sleep, counted: true as const } } : {}) }), i, { kind: 'slept', ms: sleepToCount(e.gain) }, false);
    return feed(w, i, { kind: 'wake', revision: undefined }, false);
  }

  /**
   * `e`'s machine suspends for `units` of true time: its monotonic clock runs half a unit more (so
   * every reading after it is above every one before), then stands still with the timers on it; its
   * requests in flight may land meanwhile, their answers waiting for it (or lost, timed out once it
   * wakes).
   */
  function suspend(w: World, i: number, units: number): World {
    const e = w.electors[i]!;
    const slow = (o: Op): Op => (o.slow ? o : { ...o, slow: true });
    const sleep = { from: monoOf(w, e), lost: units * U - U / 2, until: (w.t + units) * U, asleep: true };
    return patchElector({ ...w, budget: { ...w.budget, sleeps: w.budget.sleeps - 1 } }, i, { lag: (e.lag ?? 0) - U / 2, sleep, ...(e.busy ? { busy: slow(e.busy) } : {}), background: e.background.map(slow) });
  }

  /** A sleeping machine's requests: each may land (its answer waits for the machine to wake). */
  function* whileAsleep(w: World, i: number): Generator<Transition<World>> {
    const e = w.electors[i]!;
    const ops: [Op, boolean][] = [...(e.busy ? [[e.busy, true] as [Op, boolean]] : []), ...e.background.map((o): [Op, boolean] => [o, false])];
    for (const [op, main] of ops) {
      if (op.landed || op.req.kind === 'sleep') continue;
      const l = land(w.row, op.req);
      const marked = main ? patchElector(w, i, { busy: { ...op, landed: l } }) : patchElector(w, i, { background: e.background.map((o) => (o === op ? { ...op, landed: l } : o)) });
      yield { label: `${e.name}'s ${what(op)} lands${l.answer ? '' : ' (refused)'} while its machine sleeps`, state: setRow(marked, l.row, op.req) };
    }
  }

  /** `op` lands now and its answer comes back at once. */
  function complete(w: World, i: number, op: Op, main: boolean): World {
    const l = land(w.row, op.req);
    return answer(setRow(w, l.row, op.req), i, op, l.answer, false, main);
  }

  /** The transitions of a request in flight (`main`: the loop's; else a chain's of its own). */
  function* inFlight(w: World, i: number, op: Op, main: boolean, faults: boolean): Generator<Transition<World>> {
    const e = w.electors[i]!;
    const mark = (p: Partial<Op>): World => (main ? patchElector(w, i, { busy: { ...op, ...p } }) : patchElector(w, i, { background: e.background.map((o) => (o === op ? { ...op, ...p } : o)) }));
    if (op.req.kind === 'sleep') {
      // it ends once due, or later (time may pass first)
      if (!e.sleep?.asleep && monoOf(w, e) >= op.req.until) yield { label: `${e.name}'s sleep ends`, state: answer(w, i, op, undefined, false, main) };
      return;
    }
    if (op.landed) {
      yield { label: `${e.name} is answered (${what(op)}, late)`, state: answer(w, i, op, op.landed.answer, false, main) };
      yield { label: `${e.name}'s ${what(op)} answer is lost (a timeout)`, state: answer(w, i, op, undefined, true, main) };
      return;
    }
    const l = land(w.row, op.req);
    const said = `${e.name}'s ${what(op)}${op.slow ? ' (slow)' : ''} lands${l.answer ? '' : ' (refused)'}`;
    yield { label: `${said} and is answered`, state: answer(setRow(w, l.row, op.req), i, op, l.answer, false, main) };
    for (const old of copies(w, op)) yield { label: `${e.name}'s ${what(op)}${op.slow ? ' (slow)' : ''} is answered with an older copy (${shown(old)}, revision ${old?.revision ?? 0})`, state: answer(spendCopy(w), i, op, old, false, main) };
    if (op.slow) {
      yield { label: `${said}, its answer late`, state: setRow(mark({ landed: l }), l.row, op.req) };
      // the sender gives up; the request may still land later (an orphan), or never: a lost write
      const gaveUp = answer(w, i, op, undefined, true, main);
      yield { label: `${e.name}'s ${what(op)} times out before landing`, state: op.req.kind === 'read' ? gaveUp : { ...gaveUp, orphans: [...gaveUp.orphans, { req: op.req }] } };
    } else if (faults) yield { label: `${e.name}'s ${what(op)} is slow`, state: spend(mark({ slow: true })) };
  }

  function* next(w: World): Generator<Transition<World>> {
    if (w.violation) return;
    const faults = w.budget.faults > 0;
    for (let i = 0; i < w.electors.length; i++) {
      const e = w.electors[i]!;
      if (e.sleep?.asleep) {
        yield* whileAsleep(w, i);
        continue;
      }
      if (w.budget.sleeps > 0 && !e.cancel) for (const k of cfg.sleepUnits ?? []) yield { label: `${e.name}'s machine sleeps ${k * U - U / 2} ms`, state: suspend(w, i, k) };
      // woken, not looked yet: isLeader() or healthy() asked, or its clocks' timer (a retry period at most: a tick does it too)
      if (e.gain !== undefined && e.state.lead && !e.cancel) yield { label: `${e.name} looks at its clocks (isLeader())`, state: lookAtClocks(w, i) };
      if (e.cancel) yield* cancelled(w, i);
      else if (!e.busy) {
        if (w.budget.cancels > 0) yield { label: `${e.name} is cancelled`, state: feed(patchElector({ ...w, budget: { ...w.budget, cancels: w.budget.cancels - 1 }, wakes: w.wakes.filter((m) => m.to !== i) }, i, { cancel: { phase: 'steppingDown' } }), i, { kind: 'cancel' }, true) };
        const s = step(w, i);
        const sent = s.w.electors[i]!.busy;
        if (sent && !sent.slow) {
          // its request lands and is answered within the unit it is sent in…
          yield { label: s.label, state: complete(s.w, i, sent, true) };
          for (const old of copies(s.w, sent)) yield { label: `${s.label}, answered with an older copy (${shown(old)}, revision ${old?.revision ?? 0})`, state: answer(spendCopy(s.w), i, sent, old, false, true) };
          // …or it is slow (the fault budget): in flight while time passes and others act
          if (faults) yield { label: `${s.label} (slow)`, state: patchElector(spend(s.w), i, { busy: { ...sent, slow: true } }) };
        } else yield { label: s.label, state: s.w };
      } else yield* inFlight(w, i, e.busy, true, faults);
      for (const op of e.background) yield* inFlight(w, i, op, false, faults);
      const l = e.state.lead;
      if (l && w.budget.workFailures > 0)
        yield { label: `${e.name}'s work fails`, state: feed({ ...w, budget: { ...w.budget, workFailures: w.budget.workFailures - 1 } }, i, { kind: 'workFailed', no: l.no, token: l.term.fencingToken, cause: 'planned', random: 0 }, false) };
      if (w.budget.jumps > 0 && !e.cancel) for (const o of cfg.stampOffsetsMs) if (o !== e.stampOffset) yield { label: `${e.name}'s stamp clock jumps to ${o >= 0 ? '+' : ''}${o} ms`, state: jump(w, i, o) };
      if (e.session && (e.cancel?.phase !== 'gone' || cfg.keptStops)) yield* sessionSteps(w, i);
    }
    for (let k = 0; k < w.orphans.length; k++) {
      const o = w.orphans[k]!;
      const l = land(w.row, o.req);
      const after = setRow({ ...w, orphans: w.orphans.filter((_, j) => j !== k) }, l.row, o.req);
      yield { label: `a late ${o.req.kind} lands${l.answer ? '' : ' (refused)'}`, state: l.answer && o.by !== undefined ? announce(after, o.by, l.answer.revision) : after };
    }
    for (let k = 0; k < w.wakes.length; k++) {
      const m = w.wakes[k]!;
      const rest = { ...w, wakes: w.wakes.filter((_, j) => j !== k) };
      if (!w.electors[m.to]!.cancel && !w.electors[m.to]!.sleep?.asleep) yield { label: `${w.electors[m.to]!.name} is woken (revision ${m.revision ?? '?'})`, state: feed(rest, m.to, { kind: 'wake', revision: m.revision }, false) };
      yield { label: `a wake to ${w.electors[m.to]!.name} is lost`, state: rest };
    }
    // the coordinator (lib/coordinator/reconcile.ts reconcileOnce: read, decide, pings, then the lease write); none in NoCoordination
    if (cfg.mode === 'NoCoordination') {
      // (no coordinator runs)
    } else if (w.coordinator) {
      yield { label: `the coordinator's write (slow) lands`, state: coordinatorLands(w) };
      yield { label: `the coordinator's write is lost`, state: { ...w, coordinator: undefined } };
    } else {
      const now = w.t * U + cfg.coordinatorOffsetMs;
      // reconcileOnce: a lease held on a session is judged by the later of its own stamp and the session row's (read after the lease)
      const r = w.row;
      const effective = r?.holderIdentity !== undefined && r.session !== undefined ? proto.coordinatorView(r, sessionStampAt(proto.sessionRows(w.sessionRows, 'coordinator').find((x) => x.name === r.session), now, now), now) : r;
      // (any trigger but the lease stream's own records: where rows are deleted, a missing row may be one whose delete the stream has not reached)
      const d: Decision = proto.decideCoordinator(LEASE, effective, w.candidates, now, election, { streamBehind: (cfg.deletes ?? 0) > 0 });
      if (!isNoop(d)) {
        const p = proto.plan(d, w.row, now, election);
        let after: World = w;
        if (p.ping.length) after = { ...after, candidates: after.candidates.map((x) => (p.ping.includes(x.name) && (x.pingTime === undefined || x.pingTime < p.pingTime!) ? { ...x, pingTime: p.pingTime!, revision: x.revision + 1 } : x)) };
        if (p.lease) after = { ...after, coordinator: { read: { item: w.row, revision: w.row?.revision ?? 0 }, patch: p.lease, withdraw: pingsToWithdraw(d, w.row, w.candidates, now) } };
        yield { label: `the coordinator decides ${describe(d)}`, state: after.coordinator ? coordinatorLands(after) : after };
        if (after.coordinator && faults) yield { label: `the coordinator decides ${describe(d)} (its write slow)`, state: spend(after) };
      }
    }
    // an operator deletes the row; the lease stream's function handles the delete's record, then sees a row created after it
    const S = Math.ceil(election.clockSkewMs / U);
    if (w.row !== undefined && w.budget.deletes > 0 && (w.lastTermAt === undefined || w.t - w.lastTermAt > S)) yield { label: `an operator deletes the lease row (${shown(w.row)})`, state: deleteRow(w) };
    if (w.pendingDeletes.length > 0) yield { label: `the lease stream handles the delete of ${shown(w.pendingDeletes[0]!.old)} (${w.pendingDeletes[0]!.next})`, state: streamHandlesDelete(w) };
    else if (w.row?.election?.awaitsStream) yield { label: 'the lease stream sees the row created after the delete', state: setRow(w, { ...w.row, election: withoutAwait(w.row.election), revision: w.row.revision + 1 }) };
    // a peer rewrites the lease's `session` (sim/faults.ts redirectSession: SET session, ADD revision, if the row exists)
    if (w.row !== undefined && w.budget.sessionRedirects > 0)
      for (const e of w.electors) {
        const own = e.session?.name;
        for (const to of own ? [own, 'no-such-session'] : ['no-such-session']) {
          const row = { ...w.row, session: to, revision: w.row.revision + 1 };
          yield { label: `${e.name} rewrites the lease's session to ${to}`, state: setRow({ ...w, budget: { ...w.budget, sessionRedirects: w.budget.sessionRedirects - 1 } }, row) };
        }
      }
    if (w.row?.holderIdentity !== undefined && w.budget.tokenMoves > 0)
      yield { label: `an operator moves the fencing token under ${w.row.holderIdentity}`, state: setRow({ ...w, budget: { ...w.budget, tokenMoves: w.budget.tokenMoves - 1 } }, { ...w.row, fencingToken: w.row.fencingToken + 1, revision: w.row.revision + 1 }) };
    // time waits for every request that is not slow: those land within the unit they were sent in
    if (w.electors.every((e) => (!e.busy || e.busy.slow) && e.background.every((o) => o.slow))) {
      let later = w;
      for (let k = 1; k <= cfg.maxTickUnits; k++) {
        later = tick(later);
        yield { label: k === 1 ? 'tick' : `${k} ticks`, state: later };
        if (later.violation) break;
      }
    }
  }

  /**
   * A cancelled elector (LeaderElector.takePart's `finally`): its cancel chain's request in flight;
   * once stepped down, its candidacy withdrawn (the candidate row deleted: no election picks it),
   * then the lease left as the step decides (step.ts leave: the 'leave' event, each request it asks
   * for in flight as any other, its answer fed back), and it is gone once the step asks for nothing more.
   */
  function* cancelled(w: World, i: number): Generator<Transition<World>> {
    const e = w.electors[i]!;
    const c = e.cancel!;
    if (e.busy) yield* inFlight(w, i, e.busy, true, w.budget.faults > 0);
    else if (c.phase === 'steppingDown') throw new Error(`${e.name}'s cancel ended without stepping down`);
    else if (c.phase === 'down') {
      const withdrawn: World = { ...w, candidates: w.candidates.filter((x) => x.name !== e.name) };
      const after = leaving(patchElector(withdrawn, i, { cancel: { phase: 'leaving', led: c.led } }), i, { kind: 'leave', led: c.led, held: e.held });
      const x = after.electors[i]!;
      const doing = x.busy ? (x.busy.req.kind === 'read' ? 'reads the lease to leave it' : `sends its ${what(x.busy)}`) : 'is gone';
      yield { label: `${e.name} withdraws its candidacy${x.leftTerm && !e.leftTerm ? `, leaves term ${x.leftTerm.token} to run out,` : ''} and ${doing}`, state: after };
    }
  }

  /** The session a write of `op` puts a term on (LeaderElector.putOnSession: a take, a confirmation, a leader's renewal naming it), if any. */
  function sessionPut(op: Op): string | undefined {
    const r = op.req;
    if (r.kind === 'renew' && !r.takeOff && typeof r.session === 'string') return r.session;
    if (r.kind === 'write' && op.then.kind === 'acquired' && typeof r.patch.set?.session === 'string') return r.patch.set.session;
    return undefined;
  }

  /** A stopping elector's leaving event (step.ts leave) through the step: gone once it asks for nothing more. */
  function leaving(w: World, i: number, ev: Event): World {
    const after = feed(w, i, ev, true);
    const x = after.electors[i]!;
    return x.busy ? after : patchElector(after, i, { cancel: { phase: 'gone', led: x.cancel && 'led' in x.cancel ? x.cancel.led : undefined } });
  }

  /**
   * SessionSeam.leave, as LeaderElector.leaveTerm calls it (the step's 'leaveTerm': step.ts leftTerm):
   * `term`, stamped with the latest stamp of its process's session rows (each renewal here lands as
   * sent: no earlier than any its electors counted), named on every row its process writes from now
   * on; answered with that stamp.
   */
  function leaveTerm(w: World, i: number, term: { readonly token: number; readonly instance: string }): { w: World; next: Event } {
    const e = w.electors[i]!;
    const stampNow = w.sessionRows.filter((r) => r.process === e.process).reduce((m, r) => Math.max(m, r.renewTime), 0);
    const left = { ...term, stamp: stampNow };
    return { w: patchElector(w, i, { session: { ...e.session!, left }, leftTerm: left }), next: { kind: 'termLeft', at: stampNow } };
  }
  /** A row as its process writes it: naming the term it left, or none once that name is dropped (IdentityStore.renewSession: `leftTerms` removed). */
  const withLeft = (r: IdentityLease, left: LeftTerm | undefined): IdentityLease => {
    if (left) return { ...r, leftTerms: { [LEASE]: left } };
    if (r.leftTerms === undefined) return r;
    const { leftTerms: _, ...rest } = r;
    return rest;
  };

  /**
   * The process's Session (lib/sdk/session.ts), at any moment: its renewal (answered within the unit,
   * its electors told 'sessionRenewed'; or, within the fault budget, landed with its answer lost); its
   * end (`sessionEnds`: 'sessionEnded', as when its renewals failed past its deadline); and, once
   * ended, the next session's row written. Its renewals are conditioned on the row as its owner left
   * it, which only its owner writes here, so each lands.
   */
  function* sessionSteps(w: World, i: number): Generator<Transition<World>> {
    const e = w.electors[i]!;
    const s = e.session!;
    // (its elector gone, a kept stop's: the Session runs on for the process's other electors, and tells it nothing)
    const gone = e.cancel?.phase === 'gone' || e.cancel?.phase === 'leaving';
    const tell = (x: World, ev: Event) => (gone ? x : feed(x, i, ev, false));
    const kept = { ...(s.left ? { left: s.left } : {}), ...(s.others ? { others: s.others } : {}) };
    // more terms left than a row names: the rows held (Session.heldFor and start), none renewed or started
    const held = proto.holdsForLeft((s.others ?? 0) + (s.left ? 1 : 0));
    // what a row it writes names: each term left, the first MAX_LEFT_TERMS left if more (IdentityLeaseItem.leftTerms: only under a
    // plant, the real Session holds): the other electors' (left before) first, so the modelled term, the newest, unnamed past it
    const named = s.left && (s.others ?? 0) < MAX_LEFT_TERMS ? s.left : undefined;
    // a term another of its electors left (leftElsewhere), its lease not modelled: its name dropped at any moment (its lease read)
    if ((s.others ?? 0) > 0) yield { label: `${e.process}'s Session drops the name of a term another of its electors left (${s.others! - 1} left besides)`, state: patchElector(w, i, { session: { ...s, others: s.others! - 1 } }) };
    // Session.lookAtLeft, at each turn of its loop: the lease read (consistently, answered at once) once the term left is due a
    // look — its stamp plus a lease duration (and the clock's error) past, by DynamoDB's time as the process measures it — and
    // the name dropped if the row shows that term no more. (After a look that keeps it, the real Session looks again a lease
    // duration on; here a drop may come at any moment past the first: every later timing, and more.)
    if (s.left && stamp(w, e) >= s.left.stamp + cfg.leaseDurationMs + cfg.maxClockErrorMs && !proto.showsLeftTerm(w.row, s.left)) {
      const { left: _, ...rest } = s;
      yield { label: `${e.process}'s Session reads the lease and drops the name of term ${s.left.token} (the lease read: ${shown(w.row)})`, state: patchElector(w, i, { session: rest }) };
    }
    if (s.name === null) {
      if (held) return;
      const name = `${e.process}-s${s.gen + 1}`;
      const row = withLeft(sessionRow(name, e.process, stamp(w, e)), named);
      yield { label: `${e.process} starts session ${name}`, state: patchElector({ ...w, sessionRows: [...w.sessionRows, row] }, i, { session: { name, gen: s.gen + 1, ...kept } }) };
      return;
    }
    const name = s.name;
    // (answered with the row as it is then: the terms Conclave's functions marked ended on it)
    const endedOn = (x: World) => x.sessionRows.find((r) => r.name === name)!.endedTerms ?? {};
    if (s.late !== undefined) {
      const sentAt = s.late;
      yield { label: `${e.process}'s session ${name}: the late answer to its renewal arrives`, state: tell(patchElector(w, i, { session: { name, gen: s.gen, ...kept } }), { kind: 'sessionRenewed', name, sentAt, ended: endedOn(w) }) };
    } else if (!held && e.held !== name) {
      // (each renewal names the terms its process left: leftTerms)
      const renewed: World = { ...w, sessionRows: w.sessionRows.map((r) => (r.name === name ? withLeft({ ...r, renewTime: stamp(w, e), revision: r.revision + 1 }, named) : r)) };
      yield { label: `${e.process}'s session ${name} renews`, state: tell(renewed, { kind: 'sessionRenewed', name, sentAt: monoOf(w, e), ended: endedOn(renewed) }) };
      if (w.budget.faults > 0) {
        yield { label: `${e.process}'s session ${name} renews, its answer lost`, state: spend(renewed) };
        // the answer comes later, after time passed: what it extends is judged then (decideLeader: not past the renew deadline)
        const known = cfg.takeOffs ? { known: w.sessionRows.find((r) => r.name === name)!.renewTime } : {};
        yield { label: `${e.process}'s session ${name} renews, its answer late`, state: patchElector(spend(renewed), i, { session: { name, gen: s.gen, late: monoOf(w, e), ...known, ...kept } }) };
      }
    }
    if (w.budget.sessionEnds > 0) yield { label: `${e.process}'s session ${name} ends`, state: tell(patchElector({ ...w, budget: { ...w.budget, sessionEnds: w.budget.sessionEnds - 1 } }, i, { session: { ...s, name: null } }), { kind: 'sessionEnded', name }) };
  }

  /** An operator's delete of the row: a held row's record waits for the lease stream's function, and its term's leader leads on until it hears. */
  function deleteRow(w: World): World {
    const old = w.row!;
    const held = old.holderIdentity !== undefined;
    const pending: PendingDelete = { old, next: old.session !== undefined ? 'hold' : 'reconcile' };
    const after: World = { ...w, budget: { ...w.budget, deletes: w.budget.deletes - 1 }, ...(held ? { pendingDeletes: [...w.pendingDeletes, pending], deletedTokens: [...w.deletedTokens, old.fencingToken] } : {}) };
    return setRow(after, undefined);
  }

  /**
   * One step of the lease stream's function on a held row's delete (lib/functions/core.ts
   * onLeaseChange): a term held on a session is held unmarked, then marked ended on its session
   * (`endedTerms`, which its holder reads in the answer to its next session renewal), then held a
   * lease duration; a term on no session is held a lease duration at once.
   */
  function streamHandlesDelete(w0: World): World {
    const pd = w0.pendingDeletes[0]!;
    const rest = w0.pendingDeletes.slice(1);
    const old = pd.old;
    switch (pd.next) {
      case 'hold':
        return reconcileAfterDelete({ ...w0, pendingDeletes: [{ old, next: 'mark' }, ...rest] }, old, false);
      case 'mark': {
        // IdentityStore.markTermEnded: on the session row, if it is still there
        const rows = w0.sessionRows.map((r) => (r.name === old.session ? { ...r, endedTerms: { ...r.endedTerms, [LEASE]: old.fencingToken }, revision: r.revision + 1 } : r));
        return { ...w0, sessionRows: rows, pendingDeletes: [{ old, next: 'reconcile' }, ...rest] };
      }
      case 'reconcile':
        return reconcileAfterDelete({ ...w0, pendingDeletes: rest }, old, true);
    }
  }

  /**
   * lib/functions/core.ts reconcileAfterDelete: with the row still gone, the election
   * heldAfterDelete decides — none elected before its clock's now plus the hold (the deleted term's
   * lease duration once its end is marked, unmarkedHoldMs before; no later than its own stamp runs
   * out for a term no session can hold, nor than its process's session rows show it over for a
   * holder naming a process: deleteHoldMs) — written if the row is still
   * absent; with the row back and an election open on it but nobody elected, that election held the
   * same (holdOpenElection: a longer hold cut to it, a shorter one kept); otherwise the lease is
   * reconciled as usual (the coordinator's transitions).
   */
  function reconcileAfterDelete(w0: World, deleted: Lease, marked: boolean): World {
    let w = w0;
    const now = w.t * U + cfg.coordinatorOffsetMs;
    // the session rows the deleted term is judged by, read now (namedSessionAfterDelete): a term no session can hold is held only until its own
    // stamp runs out; one whose holder names a process, until its process's rows show it over (judgingRow: the named row, or the process's own)
    const named = deleted.session === undefined ? undefined : w.sessionRows.find((r) => r.name === deleted.session);
    const onProcess = processOf(deleted.holderInstance) !== undefined && deleted.session !== undefined;
    const sessions = onProcess ? { judged: judgingRow(deleted, named, (p) => w.sessionRows.filter((r) => r.process === p)), endMarked: marksTermEnded(named?.endedTerms, deleted), readAt: now } : undefined;
    const notBefore = now + deleteHoldMs(deleted, named && { name: named.name, renewTime: named.renewTime, process: named.process }, now, election, marked, sessions);
    if (w.row === undefined) {
      const d = heldAfterDelete(LEASE, deleted, w.candidates, now, election, notBefore - now);
      if (d.kind !== 'openElection') return w;
      const p = proto.plan(d, undefined, now, election);
      if (p.ping.length) w = { ...w, candidates: w.candidates.map((x) => (p.ping.includes(x.name) && (x.pingTime === undefined || x.pingTime < p.pingTime!) ? { ...x, pingTime: p.pingTime!, revision: x.revision + 1 } : x)) };
      const l = proto.rows.write(w.row, { item: undefined, revision: 0 }, p.lease!, LEASE);
      return setRow(w, l.row);
    }
    const e = w.row.election;
    // a row awaiting the stream was created after this delete: a hold on it for another term is pushed out to this one's (holdOpenElection `departed`)
    const awaiting = e?.awaitsStream === true;
    const later = awaiting && e.notBefore !== undefined && e.departed !== deleted.holderIdentity;
    if (!e || w.row.holderIdentity !== undefined || (!later && e.notBefore !== undefined && e.notBefore <= notBefore)) return w;
    const until = later ? Math.max(e.notBefore!, notBefore) : notBefore;
    const held = { ...e, notBefore: until, deadline: Math.max(e.notBefore === undefined ? e.deadline : e.startedAt + election.ackWindowMs, until), ...(awaiting && deleted.holderIdentity !== undefined ? { departed: deleted.holderIdentity } : {}) };
    return setRow(w, proto.rows.write(w.row, { item: w.row, revision: w.row.revision }, { set: { election: held } }, LEASE).row);
  }

  /** The coordinator's lease write lands (conditioned on the revision it read); then the pings it took back. */
  function coordinatorLands(w: World): World {
    const c = w.coordinator!;
    const l = proto.rows.write(w.row, c.read, c.patch, LEASE);
    const after = setRow({ ...w, coordinator: undefined }, l.row);
    if (!l.answer) return after;
    const withdrawn = (x: Candidate) => c.withdraw.some((p) => p.name === x.name && p.pingTime === x.pingTime && (x.ackedPingTime === undefined || x.ackedPingTime < p.pingTime));
    return { ...after, candidates: after.candidates.map((x) => (withdrawn(x) ? withoutPing(x) : x)) };
  }

  /** Time passes one unit; each leader's renew deadline timer fires once it is due (the 'deadline' event; it fires once). */
  function tick(w0: World): World {
    const t = w0.t + 1;
    let w: World = { ...w0, t, history: w0.history.filter((h) => h.until > t - lag) };
    for (let i = 0; i < w.electors.length; i++) {
      const e = w.electors[i]!;
      const z = e.sleep;
      if (z?.asleep) {
        // its monotonic clock stands still; woken at `until`: its clock since boot gained the sleep, its StampClock's estimate is behind by it
        const lag = (e.lag ?? 0) + U;
        w = patchElector(w, i, mono(w) >= z.until ? { lag, sleep: { ...z, asleep: false }, gain: z.lost, behind: z.lost } : { lag });
        continue;
      }
      // its clocks' timer (every retry period, a unit, on its monotonic clock) looks at a gain not looked at yet
      if (e.gain !== undefined) w = lookAtClocks(w, i);
      const d = w.electors[i]!.deadline;
      if (d === undefined || monoOf(w, w.electors[i]!) < d.at) continue;
      w = feed(patchElector(w, i, { deadline: undefined }), i, { kind: 'deadline', no: d.no }, false);
    }
    return w;
  }

  /** The StampClock's estimate jumped to `offset`: counted, in doubt for the next answers, and told to the step (the 'clockJump' event). */
  function jump(w: World, i: number, offset: number): World {
    const e = w.electors[i]!;
    w = patchElector({ ...w, budget: { ...w.budget, jumps: w.budget.jumps - 1 } }, i, { stampOffset: offset, jumps: e.jumps + 1, unconfirmed: CONFIRMATIONS });
    return feed(w, i, { kind: 'clockJump', jumpMs: Math.abs(offset - e.stampOffset) }, false);
  }

  /**
   * The term `e` leads as isLeader() would answer now: after its look at the clocks ('asked', then a
   * sleep not looked at yet counted); none while its machine sleeps (it answers nothing: judged once it wakes).
   */
  function leadNow(w: World, e: Elector): Lead | undefined {
    const l = e.state.lead;
    if (e.sleep?.asleep) return undefined;
    if (!l || e.gain === undefined || !sleptSince(e.gain)) return l;
    const s = settings(w, e);
    const asked = proto.decide(s, e.state, { kind: 'asked' }, moment(w, e)).state;
    return asked.lead && proto.decide(s, asked, { kind: 'slept', ms: sleepToCount(e.gain) }, moment(w, e)).state.lead;
  }
  /**
   * How long ago, in true time (its clock since boot), `e` sent the renewal its term `l` stands on. A
   * reading of its monotonic clock from before its suspend misses the sleep, unless the step moved it
   * back by at least the sleep ('slept': the term's record says so, and the reading is that far back).
   */
  function renewedAgo(w: World, e: Elector, l: Lead): number {
    const ago = monoOf(w, e) - l.renewedAt;
    const z = e.sleep;
    if (!z || l.renewedAt > z.from) return ago;
    return (l.slept?.ms ?? 0) >= z.lost && l.renewedAt <= z.from - z.lost ? ago : ago + z.lost;
  }

  function check(w: World): string | undefined {
    if (w.violation) return w.violation;
    const leaders = w.electors.flatMap((e) => {
      const l = leadNow(w, e);
      return l ? [{ e, l }] : [];
    });
    if (leaders.length > 1) return `two leaders at once: ${leaders.map(({ e, l }) => `${e.name} (token ${l.term.fencingToken}, renewed ${renewedAgo(w, e, l) / U} units ago)`).join(' and ')}`;
    for (const { e, l } of leaders) {
      // (on true time: a sleep its monotonic clock did not count is counted here)
      if (renewedAgo(w, e, l) >= cfg.renewDeadlineMs) return `${e.name} leads past its renew deadline (renewed ${renewedAgo(w, e, l) / U} units ago${e.sleep ? ', by its clock since boot' : ''})`;
      // the row is in its term (its token, or the row's copy of it: an operator moved the token, which the leader learns at its next renewal)
      const r = w.row;
      // (a term whose row an operator deleted: its leader leads on until its next renewal finds the row gone, or its renew
      // deadline, while the row is gone or written again without a term — an election's; never while another's term is on it)
      const rowGoneUnder = r?.holderIdentity === undefined && w.deletedTokens.includes(l.term.fencingToken);
      if (!rowGoneUnder && !(r?.holderIdentity === e.name && r.holderInstance === e.instance && (r.fencingToken === l.term.fencingToken || r.termToken === l.term.fencingToken)))
        return `${e.name} leads in term ${l.term.fencingToken} while the lease row is in ${r?.holderIdentity === undefined ? 'no term' : `${r.holderIdentity}'s term ${r.fencingToken}`}`;
    }
    // A term a stopped elector left to run out (keptStops): while the row shows it — its holder's instance and the token it
    // began with (`termToken`: a move of the fencing token under it begins no term) — no session row of its process vouches
    // for it past the stamp it was left at (SessionSeam.leave's promise), whichever session the row names: judged as followers,
    // the coordinator and its tick judge a term by a row of its holder's process (renewedBySession). Nobody leads that term,
    // so this is a bound on leaderless time, not a second leader: past it, the process's other electors' renewals would keep
    // it alive for ever.
    for (const e of w.electors) {
      const left = e.leftTerm;
      const r = w.row;
      if (!left || r?.holderInstance !== left.instance || (r.termToken ?? r.fencingToken) !== left.token) continue;
      const bound = Math.max(r.renewTime ?? 0, left.stamp);
      for (const sr of w.sessionRows) {
        const by = sr.process === e.process ? (renewedBySession(r, sr).renewTime ?? 0) : 0;
        if (by > bound) return `${e.process}'s session row ${sr.name} vouches for term ${left.token}, which ${e.name} left to run out, ${by - bound} ms past the stamp it was left at (row ${shown(r)})`;
      }
    }
    return undefined;
  }

  // ---- initial states: no lease row yet, every candidate just registered; every combination of clock errors ----
  const init: World[] = [];
  const combos = (k: number, of: readonly number[]): number[][] => (k === 0 ? [[]] : combos(k - 1, of).flatMap((c) => of.map((o) => [...c, o])));
  for (const stamps of combos(cfg.electors, cfg.stampOffsetsMs))
    for (const walls of combos(cfg.electors, cfg.wallOffsetsMs)) {
      const electors: Elector[] = names.map((name, i) => ({
        name,
        process: `p${i + 1}`,
        instance: cfg.sessions ? instanceOnSession(name, '1', `p${i + 1}`) : `${name}#1`,
        ...(cfg.sessions ? { session: { name: `p${i + 1}-s1`, gen: 1, ...(i === 0 && cfg.leftElsewhere ? { others: cfg.leftElsewhere } : {}) } } : {}),
        stampOffset: stamps[i]!,
        wallOffset: walls[i]!,
        jumps: 0,
        unconfirmed: 0,
        state: START,
        background: [],
      }));
      const sessionRows = cfg.sessions ? electors.map((e) => sessionRow(e.session!.name!, e.process, T0 * U + e.stampOffset)) : [];
      // (NoCoordination: no candidacy, so no candidate rows)
      const candidates: Candidate[] = (cfg.mode === 'NoCoordination' ? [] : electors).map((e, i) => ({
        leaseName: LEASE,
        name: e.name,
        binaryVersion: cfg.versions[i] ?? '1.30.0',
        emulationVersion: cfg.versions[i] ?? '1.30.0',
        preferredStrategies: ['OldestEmulationVersion'],
        renewTime: T0 * U + e.stampOffset,
        createdAt: 1_000 + i,
        identity: e.instance,
        revision: 1,
      }));
      const w: World = { t: T0, row: undefined, candidates, electors, orphans: [], wakes: [], history: [], copies: 0, sessionRows, pendingDeletes: [], deletedTokens: [], budget: { faults: cfg.faults, jumps: cfg.clockJumps, workFailures: cfg.workFailures, tokenMoves: cfg.tokenMoves, staleReads: cfg.staleReads ?? 0, cancels: cfg.cancels ?? 0, sessionEnds: cfg.sessionEnds ?? 0, sessionRedirects: cfg.sessionRedirects ?? 0, deletes: cfg.deletes ?? 0, sleeps: cfg.sleeps ?? 0 } };
      init.push(cfg.start === 'held' ? held(w) : w);
    }

  /**
   * `w` with the first elector leading a term the coordinator elected it to a unit ago and it
   * confirmed now (its renewal sent and answered), naming the second elector successor; every
   * elector has seen that row now (the 'observed' event: as its own write, or a read).
   */
  function held(w: World): World {
    const [a, b] = w.electors as [Elector, Elector];
    const token = nextFencingToken(undefined, (w.t - 1) * U);
    const row: Lease = {
      name: LEASE,
      holderIdentity: a.name,
      holderInstance: a.instance,
      acquireTime: (w.t - 1) * U,
      renewTime: stamp(w, a),
      leaseDurationSeconds: leaseSeconds,
      leaseTransitions: 0,
      fencingToken: token,
      termToken: token,
      electedBy: 'coordinator',
      successor: b.name,
      successorInstance: b.instance,
      ...(cfg.heldSession !== undefined ? { session: cfg.heldSession } : {}),
      revision: 3,
    } as Lease;
    for (let i = 0; i < w.electors.length; i++) w = feed(w, i, { kind: 'observed', read: { key: KEY, item: row, revision: row.revision } }, false);
    const x = w.electors[0]!;
    const lead: Lead = { term: { holderIdentity: a.name, fencingToken: token }, renewedAt: mono(w), renewals: 1, retrying: false, triedAt: mono(w), contended: 0, lease: row, session: undefined, since: mono(w) - U, no: 1 };
    w = patchElector(w, 0, { state: { ...x.state, lead, terms: 1, ledToken: token }, deadline: { at: mono(w) + cfg.renewDeadlineMs, no: 1 } });
    return { ...w, row, lastStarted: { instance: a.instance, token }, lastTermAt: w.t - 1 };
  }

  return { init, next, check, key: (w) => canonicalKey(w, U, cfg.sessions === true) };
}

/** What a request is, for a trace. */
function what(op: Op): string {
  const t = op.then;
  if (t.kind !== 'answer')
    return t.kind === 'leavingRead' ? 'read (to leave the lease)' : t.kind === 'leavingWritten' ? leavingWhat(op.req) : t.kind === 'leaseRead' ? 'read' : t.kind === 'confirmed' ? 'confirmation' : t.kind === 'acquired' ? 'acquisition' : t.kind === 'reported' ? 'vacancy report' : t.kind === 'released' ? 'release (given back)' : 'end of a rewritten term';
  const head = t.rest[0]?.k;
  switch (op.req.kind) {
    case 'renew':
      return 'renewal';
    case 'read':
      return head === 'read' ? 'read (woken)' : 'read (clock in doubt)';
    case 'handOver':
      return 'hand-over';
    case 'release':
      return 'release';
    default:
      return op.req.kind;
  }
}

/** A stopping elector's write, for a trace. */
const leavingWhat = (r: Request): string => (r.kind === 'release' ? 'release (leaving)' : r.kind === 'renew' ? 'take-off (its kept term off its session)' : 'decline (its name off the lease)');

const shown = (l: Lease | undefined) => (l ? `holder ${l.holderIdentity}, token ${l.fencingToken}` : 'no row');

/** An election with its wait for the lease stream cleared (LeaseStore.clearAwaitsStream). */
function withoutAwait(e: NonNullable<Lease['election']>): NonNullable<Lease['election']> {
  const { awaitsStream: _, ...rest } = e;
  return rest;
}

/** A session row as a Session writes it when it starts (lib/sdk/session.ts): its process's, stamped `at`. */
function sessionRow(name: string, process: string, at: number): IdentityLease {
  return { component: 'conclave-session', name, holderIdentity: process, hostname: 'model', leaseDurationSeconds: 2, acquireTime: at, renewTime: at, revision: 1, process };
}

function withoutPing(c: Candidate): Candidate {
  const { pingTime: _, ...rest } = c;
  return { ...rest, revision: c.revision + 1 };
}

function describe(d: Decision): string {
  switch (d.kind) {
    case 'elect':
      return `elect ${d.winner}${d.successor ? ` (successor ${d.successor.name})` : ''}`;
    case 'openElection':
      return `openElection${d.vacancy ? ` (${d.vacancy})` : ''}, ping ${d.ping.join(',') || 'nobody'}`;
    case 'preempt':
      return `preempt ${d.holder} for ${d.preferredHolder}`;
    case 'setSuccessor':
      return `setSuccessor ${d.successor?.name ?? 'none'}`;
    default:
      return d.kind;
  }
}

// ---- the canonical key: time is relative to now, tokens to now's floor, revisions to the row's ----

/**
 * The fields of the follower's record (lib/sdk/step.ts FollowerState) that only time reads or
 * feed callbacks and counters — read by followerDelay, pollPlan's session-only read (only with the
 * push path live, never here), RenewalPhase, the session reads' sharing, onNewLeader, what onError is told (`twinTold`) and stats,
 * none of which the model runs or lets decide (it explores every timing) — and `pending`, which is
 * inert between steps (the next poll replaces it). `lastRaw` is also read when a consistent read
 * finds the row gone (vanishedUnder), which no read does here once a row exists: the model deletes
 * no row (an older copy from before the row was created is never a consistent read's answer).
 * `lastRead` is also read when a copy of a session row is judged (notOlder): it is in the key when
 * the electors are on sessions. Left out of the key: two states that differ only in these behave
 * alike.
 */
const FOLLOWER_TIMING = new Set<keyof State>(['lastRaw', 'lastRead', 'leaseReadAt', 'previousReadSentAt', 'settlingSince', 'misses', 'cadence', 'viewedSession', 'offNamedSession', 'wakeAt', 'lastLeader', 'twinTold', 'preventions', 'pending', 'lead']);
/** …and the fields every decision may read: in the key. */
const FOLLOWER_KEYED: readonly (keyof State)[] = ['observed', 'vacantSince', 'vanished', 'ledToken', 'endedToken', 'unanswered', 'ackedElection', 'doubt', 'wakePending', 'lastHeldOnSession', 'lastHeldSeconds', 'askSeen', 'answeredClaim', 'terms', 'ownFound', 'standAgain', 'awaited', 'heldOff', 'standsDown', 'ledOn', 'leaving'];
// A field added to FollowerState must be placed in one of the two lists: else the key would silently merge states it tells apart.
for (const f of Object.keys(START) as (keyof State)[])
  if (!FOLLOWER_TIMING.has(f) && !FOLLOWER_KEYED.includes(f)) throw new Error(`test/model: State.${f} is in neither FOLLOWER_KEYED nor FOLLOWER_TIMING (election-model.ts): say whether a decision reads it`);
/** The leader's record's fields a decision reads (renewals, retrying, triedAt and since time the next step and a cancelled leader's hand-off only). */
const LEADER_KEYED: readonly (keyof Lead)[] = ['term', 'renewedAt', 'lease', 'session', 'no'];

/**
 * The state's key, with every absolute time made relative to now, every token to now's floor
 * (nextFencingToken is max(previous + 1, floor(now)·1000): shifting both alike shifts its result
 * alike) and every revision and election id to the row's revision. Every decision compares these
 * with each other only, so two states alike but for when they happen behave alike from there on.
 * Fields no decision reads (leaseTransitions: only ever +1 on a new term; renewalMark: the lease
 * stream's filter; candidate rows'
 * revisions, names and versions: fixed per elector; the timing fields above) are left out. Object
 * fields are written in sorted order: rows built by different writes list them in different orders.
 */
export function canonicalKey(w: World, unitMs: number, sessions = false): string {
  const c: Shift = { now: w.t * unitMs, rev: w.row?.revision ?? 0 };
  let out = enc(w.row);
  for (const x of w.candidates) out += `\n${T(c, x.renewTime)}/${T(c, x.pingTime)}/${T(c, x.ackedPingTime)}`;
  for (const e of w.electors) {
    out += `\n${e.stampOffset};${e.wallOffset};${e.jumps};${e.unconfirmed};`;
    const f = e.state as unknown as Record<string, unknown>;
    for (const k of FOLLOWER_KEYED) out += `${enc(f[k], k)};`;
    if (sessions) out += `${enc(f['lastRead'])};`;
    // the follower's pending poll matters while a request of the loop is in flight (else the next poll replaces it)
    if (e.busy) out += `${enc(e.state.pending)};${enc(e.busy)}`;
    for (const o of e.background) out += `+${enc(o)}`;
    const l = e.state.lead as unknown as Record<string, unknown> | undefined;
    if (l) {
      out += '|L';
      for (const k of LEADER_KEYED) out += `${enc(l[k], k)};`;
    }
    if (e.deadline) out += `|D${T(c, e.deadline.at)}/${e.deadline.no}`;
    if (e.cancel) out += `|X${enc(e.cancel)}`;
    if (e.leftTerm) out += `|Y${K(c, e.leftTerm.token)}/${T(c, e.leftTerm.stamp)}`;
    if (e.held !== undefined) out += `|H${e.held}`;
    if (e.session) out += `|S${e.session.name ?? '-'}${e.session.late !== undefined ? `@${T(c, e.session.late)}` : ''}${e.session.known !== undefined ? `k${T(c, e.session.known)}` : ''}${e.session.others ? `o${e.session.others}` : ''}${e.session.left ? `<${K(c, e.session.left.token)}/${e.session.left.instance}/${T(c, e.session.left.stamp)}` : ''}`;
    if (e.sleep) out += `|Z${e.lag ?? 0}/${enc(e.sleep)}/${e.gain ?? ''}/${e.behind ?? ''}`;
  }
  const co = w.coordinator;
  if (co) out += `\nC${enc(co)}`;
  for (const o of w.orphans) out += `\n&${enc(o)}`;
  for (const m of w.wakes) out += `\n~${m.to}/${R(c, m.revision)}`;
  for (const h of w.history) out += `\nH${enc(h.row)}@${h.until - w.t}`;
  for (const r of w.sessionRows) out += `\nS${r.name}/${T(c, r.renewTime)}${r.endedTerms ? enc(r.endedTerms) : ''}${r.leftTerms ? Object.entries(r.leftTerms).map(([k, v]) => `<${k}:${K(c, v.token)}/${v.instance}/${T(c, v.stamp)}`).join('') : ''}`;
  if (w.takenFromSession) out += '\nT';
  if (w.keptRedirectEnded) out += '\nK';
  if (w.keptTakenOff) out += '\nO';
  for (const d of w.pendingDeletes) out += `\nP${enc(d)}`;
  for (const k of w.deletedTokens) out += `\nX${K(c, k)}`;
  // (only whether a delete may come now, or in how many units, tells states apart)
  if (w.budget.deletes > 0 && w.lastTermAt !== undefined) out += `\nA${Math.min(w.t - w.lastTermAt, 9)}`;
  const b = w.budget;
  out += `\n${b.faults}/${b.jumps}/${b.workFailures}/${b.tokenMoves}/${b.staleReads}/${b.cancels}/${b.sessionEnds}/${b.sessionRedirects}/${b.deletes}/${b.sleeps}`;
  if (w.lastStarted) out += `\n${w.lastStarted.instance}/${K(c, w.lastStarted.token)}`;
  return shifted(c, out);
}

/** What the key is relative to: now (ms) and the row's revision. */
interface Shift {
  readonly now: number;
  readonly rev: number;
}
/** Absolute times are this large; smaller numbers (0: never pinged; -1: no token yet; durations) are not shifted. */
const ABSOLUTE = 1_000_000;
/** …and fencing tokens (ms·1000) this large. */
const TOKEN = 1e11;
const REVISIONS = new Set(['revision', 'observedRevision']);
const ELECTION_IDS = new Set(['id', 'electionId', 'ackedElection']);
/** Fields no decision reads, left out wherever they appear. */
const UNREAD = new Set(['leaseTransitions', 'renewalMark', 'renewals', 'retrying', 'triedAt']);

// (module-level functions, not closures: the key is made once per transition)
function T(c: Shift, v: number | undefined): string | number {
  return v === undefined ? '' : v >= ABSOLUTE ? v - c.now : v;
}
function K(c: Shift, v: number | undefined): string | number {
  return v === undefined ? '' : v >= ABSOLUTE ? v - c.now * 1000 : v;
}
function R(c: Shift, v: number | undefined): string | number {
  return v === undefined ? '' : v - c.rev;
}
/**
 * Any value of the state, canonically, its absolute times and tokens marked `§n` and its revisions
 * `®n` (by the field's name; an election id's after its `#`) but not shifted: so each object's text
 * is made once and kept (the states share most of their objects: a transition copies only what it
 * changes). `shifted` then shifts the marks of a whole key at once.
 */
function enc(v: unknown, field = ''): string {
  if (v === undefined) return '';
  if (typeof v === 'number') return REVISIONS.has(field) ? `®${v}` : v >= ABSOLUTE ? `§${v}` : String(v);
  if (typeof v === 'string') {
    const at = ELECTION_IDS.has(field) ? v.lastIndexOf('#') : -1;
    return at < 0 ? v : `${v.slice(0, at)}#®${v.slice(at + 1)}`;
  }
  if (typeof v !== 'object' || v === null) return String(v);
  const seen = written.get(v);
  if (seen !== undefined) return seen;
  let out: string;
  if (Array.isArray(v)) out = `[${v.map((x) => enc(x)).join(',')}]`;
  else {
    const o = v as Record<string, unknown>;
    out = '{';
    for (const k of Object.keys(o).sort()) if (o[k] !== undefined && !UNREAD.has(k)) out += `${k}:${enc(o[k], k)},`;
    out += '}';
  }
  written.set(v, out);
  return out;
}
const written = new WeakMap<object, string>();
/** `key` with its marks shifted: times relative to now, tokens to now's floor, revisions to the row's. */
function shifted(c: Shift, key: string): string {
  let out = '';
  let from = 0;
  for (let i = 0; i < key.length; i++) {
    const ch = key.charCodeAt(i);
    if (ch !== ABS_MARK && ch !== REV_MARK) continue;
    let j = i + 1;
    if (key.charCodeAt(j) === 45) j++; // '-'
    while (j < key.length && key.charCodeAt(j) >= 48 && key.charCodeAt(j) <= 57) j++;
    const n = Number(key.slice(i + 1, j));
    out += key.slice(from, i) + (ch === REV_MARK ? `r${n - c.rev}` : String(n >= TOKEN ? n - c.now * 1000 : n - c.now));
    from = j;
    i = j - 1;
  }
  return out + key.slice(from);
}
const ABS_MARK = '§'.charCodeAt(0);
const REV_MARK = '®'.charCodeAt(0);

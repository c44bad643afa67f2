/**
 * The election as a transition system for the explorer (./explorer.ts): a few electors of one
 * lease, the coordinator, the lease row (./lease-rows.ts) and the candidate rows, driven by the
 * SDK's and the coordinator's own decision functions — decideFollower, isVacant, decideLeader, afterRenewal,
 * heirOf (lib/sdk), decideWithSuccession and plan (lib/election) — passed in as a `Protocol`, so a
 * test can hand it a wrapped (buggy) one.
 *
 * What is nondeterministic, each choice a transition:
 * - who steps, and when: any elector may poll (a follower), renew or read (a leader) at any moment,
 *   and the coordinator may reconcile at any moment. This is every timing of polls, renewals,
 *   ticks, stream records and wakes at once — a wake only makes a worker read — so the cadence
 *   functions (nextReadDelay, leaderDelay, RenewalPhase) are not needed for safety and not run;
 * - every request is in flight until the explorer lands it: late (time passes meanwhile), before or
 *   after others (reordered), or never. Within the fault budget: a request's answer arrives later
 *   than it landed, or not at all (a timeout: the sender gives up; a request that had not landed
 *   may still land later, or never — a lost write);
 * - time: a tick advances the true time by one unit; a leader's renew deadline timer fires at the
 *   first tick at or past it (it is on the monotonic clock);
 * - clocks: each elector's stamp clock (DynamoDB's time as it measures it) is off by one of
 *   `stampOffsetsMs`, within ±maxClockErrorMs, and may jump to another within the bound
 *   (`clockJumps` times); monotonic clocks run at true rate;
 * - faults a run can meet: the leader's work fails (`workFailures`); an operator moves the lease's
 *   fencing token under its holder, leaving the term's copy (`tokenMoves`);
 * - where it starts: no lease row yet (every candidate just registered), or `held` — the first
 *   elector leads a confirmed term naming the second successor, as an election leaves it, so a
 *   hand-off (the leader's work failing) and what the heir does with it are a few steps away.
 *
 * The order that turns decisions into requests — the follower's poll (lib/sdk/step.ts
 * followerStep: polled, rest, acquire, attempted) and the leader's (lib/sdk/elector.ts Leadership
 * apply/step/giveUp, TermWrites) — is followed here line by line, in the functions named after
 * them below.
 */
import type { Candidate } from '../../lib/schemas/candidate.js';
import { ElectionConfigSchema, type ElectionConfig, type ElectionConfigInput } from '../../lib/schemas/config.js';
import { acquisition } from '../../lib/sdk/lock.js';
import type { Lease } from '../../lib/schemas/lease.js';
import type { RowPatch } from '../../lib/schemas/common.js';
import type { Heir, Term } from '../../lib/stores/lease-store.js';
import { decideFollower, isVacant, leadFromRead, watchesTerm, type FollowerDecision, type FollowerView } from '../../lib/sdk/step.js';
import { nextFencingToken } from '../../lib/schemas/fencing-token.js';
import { afterRenewal, decideLeader, heirOf, inTerm, type LeaderStep } from '../../lib/sdk/step.js';
import { decideWithSuccession } from '../../lib/election/successor.js';
import { isNoop, pingsToWithdraw, type Decision } from '../../lib/election/decide.js';
import { plan } from '../../lib/election/plan.js';
import { leaseRows, type LeaseRows, type Landed, type Row, type RowRead } from './lease-rows.js';
import type { Spec, Transition } from './explorer.js';

/** What the environment knows that no decision should read: a planted bug may (expiryByHolderTimestamp). */
export interface Environment {
  /** The deciding machine's wall clock (epoch ms): off by anything; the SDK stamps with DynamoDB's time instead. */
  readonly wallNow: number;
}

/** The decisions the model runs: the real ones by default (`realProtocol`), or a test's wrapped ones. */
export interface Protocol {
  readonly decideFollower: (v: FollowerView, env: Environment) => FollowerDecision;
  /** The successor's second look after its takeover lost a race. */
  readonly isVacant: typeof isVacant;
  readonly decideLeader: typeof decideLeader;
  readonly afterRenewal: typeof afterRenewal;
  readonly heirOf: typeof heirOf;
  /** Whether an heir leads a handed term from its read (before confirming it), and from when. */
  readonly leadFromRead: typeof leadFromRead;
  readonly decideCoordinator: typeof decideWithSuccession;
  readonly plan: typeof plan;
  /** The lease row's conditional writes. */
  readonly rows: LeaseRows;
}

export const realProtocol: Protocol = { decideFollower, isVacant, decideLeader, afterRenewal, heirOf, leadFromRead, decideCoordinator: decideWithSuccession, plan, rows: leaseRows };

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
/** True time starts here (units): far enough from 0 that every stamp and token is positive. */
const T0 = 1_000_000;

/** A request in flight and what its answer is for. */
type Request =
  | { readonly kind: 'read' }
  | { readonly kind: 'write'; readonly read: RowRead; readonly patch: RowPatch<Lease> }
  | { readonly kind: 'renew'; readonly term: Term; readonly renewTime: number; readonly seconds: number }
  | { readonly kind: 'handOver'; readonly term: Term; readonly heir: Heir; readonly now: number; readonly firstTermSeconds: number; readonly leaseTransitions: number; readonly secondNamed: boolean }
  | { readonly kind: 'release'; readonly term: Term; readonly now: number }
  | { readonly kind: 'endChanged'; readonly termToken: number; readonly lastHolder: string; readonly now: number };

type Purpose = 'poll' | 'leaderRead' | 'renew' | 'confirm' | 'acquire' | 'secondLook' | 'report' | 'handOver' | 'release' | 'endChanged';

interface Op {
  readonly purpose: Purpose;
  readonly req: Request;
  /** Monotonic send time. */
  readonly sentAt: number;
  /** The term the request is for (a renewal, a confirmation, a hand-off). */
  readonly term?: Term;
  /** The read an acquisition or a vacancy report is conditioned on. */
  readonly read?: RowRead;
  /** After a vacancy report: the fallback's acquisition (step.ts afterReport). */
  readonly thenAcquire?: boolean;
  /** An acquisition as the designated successor (step.ts attempted), and whether it is the second try. */
  readonly successor?: 'first' | 'second';
  /** Slow (the fault budget): it may land after time passed, be answered late, or time out. Others land within the unit they are sent in. */
  readonly slow?: boolean;
  /** Landed already; its answer not delivered yet. */
  readonly landed?: Landed;
}

interface Leading {
  readonly term: Term;
  /** Monotonic send time of the last renewal: the term is safe until renewedAt + renewDeadline. */
  readonly renewedAt: number;
  readonly lease: Lease | undefined;
  /** Led from a read of the hand-over, not yet renewed (leadFromRead). */
  readonly fromRead?: true;
}

interface Elector {
  readonly name: string;
  readonly instance: string;
  readonly stampOffset: number;
  readonly wallOffset: number;
  /** FollowerState.observed: the term as last seen, and since when (monotonic). */
  readonly observed?: { readonly key: TermKey | undefined; readonly at: number; readonly revision: number };
  readonly vacantSince?: number;
  readonly acked?: string;
  /** The highest token this start-up has led with. */
  readonly ledToken: number;
  readonly leading?: Leading;
  /** The request its loop waits on. */
  readonly busy?: Op;
}

/** What the follower's step compares to tell a new term (or renewal) from the one it saw. */
type TermKey = Pick<Lease, 'holderIdentity' | 'holderInstance' | 'renewTime' | 'fencingToken' | 'leaseDurationSeconds'>;

export interface World {
  /** True time, in units. */
  readonly t: number;
  readonly row: Row;
  readonly candidates: readonly Candidate[];
  readonly electors: readonly Elector[];
  /** The coordinator's lease write in flight, and the pings to withdraw once it lands. */
  readonly coordinator?: { readonly read: RowRead; readonly patch: RowPatch<Lease>; readonly withdraw: readonly { name: string; pingTime: number }[] };
  /** Requests whose sender gave up on them (timed out) or never waited (a term ended on the row): they may still land. */
  readonly orphans: readonly Op[];
  readonly budget: { readonly faults: number; readonly jumps: number; readonly workFailures: number; readonly tokenMoves: number };
  /** The last term begun (the history checker's token rule). */
  readonly lastStarted?: { readonly instance: string; readonly token: number };
  /** An invariant the transition into this state broke. */
  readonly violation?: string;
}

/** The model of `cfg` driving `proto`: initial states, transitions, invariants and the canonical key. */
export function electionSpec(cfg: ModelConfig, proto: Protocol = realProtocol): Spec<World> {
  const U = cfg.unitMs;
  const election: ElectionConfig = ElectionConfigSchema.parse(cfg.coordinator);
  const leaseSeconds = Math.ceil(cfg.leaseDurationMs / 1000);
  const names = Array.from({ length: cfg.electors }, (_, i) => `w${i + 1}`);
  const mono = (w: World) => w.t * U;
  const stamp = (w: World, e: Elector) => w.t * U + e.stampOffset;
  const settings = (e: Elector) => ({ leaseName: LEASE, identity: e.name, mode: 'coordinated' as const, renewDeadlineMs: cfg.renewDeadlineMs });

  // ---- world updates (immutable) ----
  const withElector = (w: World, i: number, e: Elector): World => ({ ...w, electors: w.electors.map((x, j) => (j === i ? e : x)) });
  const broke = (w: World, message: string): World => (w.violation ? w : { ...w, violation: message });
  function setRow(w: World, row: Row): World {
    const before = w.row?.fencingToken ?? -1;
    const after = row?.fencingToken ?? -1;
    const next = { ...w, row };
    return after < before ? broke(next, `the lease's fencing token went back from ${before} to ${after}`) : next;
  }
  /** LeaseCandidate.renew: an acknowledgement (the candidate row's renewTime, and the ping copied). Immediate: the candidates table is not faulted. */
  function renewCandidate(w: World, e: Elector): World {
    const now = stamp(w, e);
    return { ...w, candidates: w.candidates.map((c) => (c.name === e.name ? { ...c, renewTime: Math.max(c.renewTime, now), ackedPingTime: c.pingTime ?? 0, revision: c.revision + 1 } : c)) };
  }
  const send = (w: World, i: number, op: Omit<Op, 'sentAt'>): World => withElector(w, i, { ...w.electors[i]!, busy: { ...op, sentAt: mono(w) } });

  function land(row: Row, req: Request): Landed {
    switch (req.kind) {
      case 'read':
        return { row, answer: row };
      case 'write':
        return proto.rows.write(row, req.read, req.patch, LEASE);
      case 'renew':
        return proto.rows.renewTerm(row, req.term, req.renewTime, req.seconds);
      case 'handOver':
        return proto.rows.handOver(row, req.term, req.heir, req.now, req.firstTermSeconds, req.leaseTransitions, req.secondNamed);
      case 'release':
        return proto.rows.releaseTerm(row, req.term, req.now);
      case 'endChanged':
        return proto.rows.endChangedTerm(row, req.termToken, req.lastHolder, req.now);
    }
  }

  // ---- the follower (elector.ts) ----
  /** The follower's observe (lib/sdk/step.ts): a term seen for the first time is timed from now, on this worker's monotonic clock. */
  function observe(w: World, e: Elector, read: RowRead): Elector {
    const l = read.item;
    const key: TermKey | undefined = l && { holderIdentity: l.holderIdentity, holderInstance: l.holderInstance, renewTime: l.renewTime, fencingToken: l.fencingToken, leaseDurationSeconds: l.leaseDurationSeconds };
    const o = e.observed;
    const same = o !== undefined && (key === undefined ? o.key === undefined : o.key !== undefined && sameKey(o.key, key));
    return { ...e, observed: same ? { ...o!, revision: read.revision } : { key, at: mono(w), revision: read.revision } };
  }

  /** A direct acquisition's write (lib/sdk/lock.ts acquisition: the record LeaderElector writes), conditioned on the revision read. */
  function acquireRequest(w: World, e: Elector, read: RowRead, electedBy: 'self' | 'successor'): Request {
    return { kind: 'write', read, patch: acquisition(read.item, { identity: e.name, instance: e.instance, now: stamp(w, e), leaseDurationSeconds: leaseSeconds, electedBy }) };
  }

  /** step.ts polled and rest: the poll decided on, then acted on in order. */
  function afterPoll(w: World, i: number, read: RowRead): World {
    let e = observe(w, w.electors[i]!, read);
    const d = proto.decideFollower(
      {
        lease: read.item,
        identity: e.name,
        instance: e.instance,
        mode: 'coordinated',
        candidate: true,
        ackedElection: e.acked,
        unanswered: false,
        now: mono(w),
        observedAt: e.observed!.at,
        vacantSince: e.vacantSince,
        retryPeriodMs: cfg.retryPeriodMs,
        fallbackAfterMs: cfg.fallbackAfterMs,
      },
      { wallNow: mono(w) + e.wallOffset },
    );
    if (d.confirm) {
      w = withElector(w, i, e);
      const l = read.item!;
      if (l.fencingToken < e.ledToken || (l.termToken !== undefined && l.termToken !== l.fencingToken))
        return send(w, i, { purpose: 'endChanged', req: { kind: 'endChanged', termToken: l.termToken ?? l.fencingToken, lastHolder: l.holderIdentity!, now: stamp(w, e) } });
      const term = { holderIdentity: l.holderIdentity!, fencingToken: l.fencingToken };
      // handed over: led from this read, confirmed by a later renewal (the leader's steps); every
      // read here is strongly consistent. Its own clock's error is known to |offset| at best.
      const h = proto.leadFromRead({ lease: l, identity: e.name, consistent: true, clock: { offset: e.stampOffset, errorMs: Math.abs(e.stampOffset) }, stampErrorMs: cfg.maxClockErrorMs, now: mono(w), leaseDurationMs: cfg.leaseDurationMs, renewDeadlineMs: cfg.renewDeadlineMs, retryPeriodMs: cfg.retryPeriodMs });
      if (h.kind === 'lead') {
        const s = startLeading(w, i, term, h.renewedAt, l);
        return s.started ? withElector(s.w, i, { ...s.w.electors[i]!, leading: { ...s.w.electors[i]!.leading!, fromRead: true } }) : s.w;
      }
      return send(w, i, { purpose: 'confirm', term, req: { kind: 'renew', term, renewTime: stamp(w, e), seconds: leaseSeconds } });
    }
    if (d.answer !== undefined && d.answer !== 'unanswered') {
      w = renewCandidate(withElector(w, i, e), e);
      e = { ...w.electors[i]!, acked: d.answer.election };
    }
    e = { ...e, vacantSince: d.vacantSince };
    w = withElector(w, i, e);
    if (d.take === 'successor') return send(w, i, { purpose: 'acquire', read, successor: 'first', req: acquireRequest(w, e, read, 'successor') });
    if (d.reportVacancy) return send(w, i, { purpose: 'report', read, thenAcquire: d.take === 'self', req: { kind: 'write', read, patch: { set: { vacancyReport: { by: e.name, at: stamp(w, e), observedRevision: read.revision } } } } });
    if (d.take === 'self') return send(w, i, { purpose: 'acquire', read, req: acquireRequest(w, e, read, 'self') });
    return w;
  }

  /** step.ts won and Leadership.start: never a term whose renew deadline has passed (given back instead). */
  function startLeading(w: World, i: number, term: Term, sentAt: number, lease: Lease): { w: World; started: boolean } {
    const e = w.electors[i]!;
    if (mono(w) >= sentAt + cfg.renewDeadlineMs) return { w: send(w, i, { purpose: 'release', term, req: { kind: 'release', term, now: stamp(w, e) } }), started: false };
    const last = w.lastStarted;
    if (last && !(term.fencingToken > last.token || (last.instance === e.instance && last.token === term.fencingToken)))
      w = broke(w, `${e.name} began a term with fencing token ${term.fencingToken}, not above the last term's ${last.token}`);
    w = { ...w, lastStarted: { instance: e.instance, token: term.fencingToken } };
    return { w: withElector(w, i, { ...e, leading: { term, renewedAt: sentAt, lease }, ledToken: Math.max(e.ledToken, term.fencingToken), vacantSince: undefined }), started: true };
  }

  // ---- the leader (lib/sdk/elector.ts Leadership) ----
  /** Leadership.apply: carries out decideLeader's step. */
  function applyLeader(w: World, i: number, step: LeaderStep): World {
    const e = w.electors[i]!;
    const l = e.leading!;
    switch (step.kind) {
      case 'stop': {
        w = withElector(w, i, { ...e, leading: undefined });
        // endChanged is not waited for (void): in flight beside whatever the loop does next
        if (step.endTerm) w = { ...w, orphans: [...w.orphans, { purpose: 'endChanged', sentAt: mono(w), req: { kind: 'endChanged', termToken: l.term.fencingToken, lastHolder: l.term.holderIdentity, now: stamp(w, e) } }] };
        return w;
      }
      case 'renewed':
        return withElector(w, i, { ...e, leading: { term: l.term, renewedAt: step.renewedAt, lease: step.lease ?? l.lease } });
      case 'seen':
        return withElector(w, i, { ...e, leading: { ...l, lease: step.lease } });
      case 'look':
      case 'none':
        return w;
    }
  }

  /** A leader was answered with `lease` (a renewal, a read): it must not lead on in a term the answer shows gone. */
  function actedOnAnswer(w: World, i: number, term: Term, lease: Lease | undefined): World {
    const e = w.electors[i]!;
    const stillLeads = e.leading !== undefined && e.leading.term.fencingToken === term.fencingToken;
    const gone = !inTerm(lease, { holderIdentity: term.holderIdentity, instance: e.instance, fencingToken: term.fencingToken, renewedAt: 0, session: undefined });
    return stillLeads && gone ? broke(w, `${e.name} leads on in term ${term.fencingToken} after being answered with a row not in it (${shown(lease)})`) : w;
  }

  /** Leadership.afterRenewal and yieldOrAck. */
  function afterRenewalStep(w: World, i: number, lease: Lease): World {
    const e = w.electors[i]!;
    if (!e.leading) return w;
    const next = proto.afterRenewal(settings(e), lease, { candidate: true, ackedElection: e.acked });
    if (next.kind === 'yield') return renewCandidate(giveUp(w, i), w.electors[i]!);
    if (next.kind === 'ack') {
      w = renewCandidate(w, e);
      return withElector(w, i, { ...w.electors[i]!, acked: next.election });
    }
    return w;
  }

  /** Leadership.giveUp: stop, then hand the term to the heir the lease names (TermWrites.handOver), else release it. */
  function giveUp(w: World, i: number): World {
    const e = w.electors[i]!;
    const l = e.leading!;
    const heir = proto.heirOf(settings(e), l.lease);
    w = withElector(w, i, { ...e, leading: undefined });
    const now = stamp(w, e);
    // TermWrites.handOver: only to the process the heir's candidate row names
    const row = heir && w.candidates.find((c) => c.name === heir.name);
    if (heir && row?.identity === heir.instance && l.lease) {
      const secondNamed = l.lease.secondSuccessor !== undefined || l.lease.secondSuccessorInstance !== undefined;
      const firstTermSeconds = Math.max(1, Math.ceil(cfg.leaseDurationMs / 3000));
      return send(w, i, { purpose: 'handOver', term: l.term, req: { kind: 'handOver', term: l.term, heir, now, firstTermSeconds, leaseTransitions: l.lease.leaseTransitions, secondNamed } });
    }
    return send(w, i, { purpose: 'release', term: l.term, req: { kind: 'release', term: l.term, now } });
  }

  /** What the sender does with the answer to `op` (undefined: it timed out). */
  function answered(w: World, i: number, op: Op, answer: Lease | undefined, timedOut: boolean): World {
    w = withElector(w, i, { ...w.electors[i]!, busy: undefined });
    const e = w.electors[i]!;
    switch (op.purpose) {
      case 'poll':
        return timedOut ? w : afterPoll(w, i, { item: answer, revision: answer?.revision ?? 0 });
      case 'leaderRead': {
        if (timedOut || !e.leading) return w;
        const term = e.leading.term;
        const view = { holderIdentity: term.holderIdentity, instance: e.instance, fencingToken: term.fencingToken, renewedAt: e.leading.renewedAt, session: undefined };
        w = applyLeader(w, i, proto.decideLeader(settings(e), view, { kind: 'read', lease: answer }));
        w = actedOnAnswer(w, i, term, answer);
        return w.electors[i]!.leading && answer ? afterRenewalStep(w, i, answer) : w;
      }
      case 'renew': {
        // Leadership.step: a renewal answered after the term stopped (its deadline) changes nothing
        if (timedOut || !e.leading || e.leading.term.fencingToken !== op.term!.fencingToken) return w;
        const view = { holderIdentity: op.term!.holderIdentity, instance: e.instance, fencingToken: op.term!.fencingToken, renewedAt: e.leading.renewedAt, session: undefined };
        w = applyLeader(w, i, proto.decideLeader(settings(e), view, { kind: 'renewed', sentAt: op.sentAt, lease: answer }));
        w = actedOnAnswer(w, i, op.term!, answer);
        return w.electors[i]!.leading && answer ? afterRenewalStep(w, i, answer) : w;
      }
      case 'confirm': {
        // step.ts confirm: won
        if (timedOut || !answer) return w;
        w = withElector(w, i, observe(w, e, { item: answer, revision: answer.revision }));
        const s = startLeading(w, i, op.term!, op.sentAt, answer);
        return s.started ? afterRenewalStep(s.w, i, answer) : s.w;
      }
      case 'acquire': {
        // step.ts acquire; a successor that lost the race looks again at once (step.ts attempted)
        if (!timedOut && !answer && op.successor === 'first') return send(w, i, { purpose: 'secondLook', req: { kind: 'read' } });
        if (timedOut || !answer) return w;
        w = withElector(w, i, observe(w, e, { item: answer, revision: answer.revision }));
        return startLeading(w, i, { holderIdentity: e.name, fencingToken: answer.fencingToken }, op.sentAt, answer).w;
      }
      case 'secondLook': {
        // step.ts viewed, the second look: still vacant as it watched, and still its to take: once more
        if (timedOut) return w;
        const read = { item: answer, revision: answer?.revision ?? 0 };
        const seen = observe(w, e, read);
        w = withElector(w, i, seen);
        return proto.isVacant(answer, seen.observed!.at, mono(w)) && watchesTerm(answer, e.name, e.instance) ? send(w, i, { purpose: 'acquire', read, successor: 'second', req: acquireRequest(w, seen, read, 'successor') }) : w;
      }
      case 'report':
        if (!timedOut && answer) w = renewCandidate(w, e);
        return op.thenAcquire ? send(w, i, { purpose: 'acquire', read: op.read!, req: acquireRequest(w, e, op.read!, 'self') }) : w;
      case 'handOver':
        // refused, or no answer: release instead (Leadership.giveUp)
        return !timedOut && answer ? w : send(w, i, { purpose: 'release', term: op.term!, req: { kind: 'release', term: op.term!, now: stamp(w, e) } });
      case 'release':
      case 'endChanged':
        return w;
    }
  }

  // ---- transitions ----
  /** The elector's own step: a follower polls; a leader renews, or reads its lease. */
  function steps(w: World, e: Elector): { label: string; op: Omit<Op, 'sentAt'> }[] {
    if (!e.leading) return [{ label: `${e.name} polls`, op: { purpose: 'poll', req: { kind: 'read' } } }];
    const term = e.leading.term;
    return [
      { label: `${e.name} renews term ${term.fencingToken}`, op: { purpose: 'renew', term, req: { kind: 'renew', term, renewTime: stamp(w, e), seconds: leaseSeconds } } },
      { label: `${e.name} reads its lease`, op: { purpose: 'leaderRead', req: { kind: 'read' } } },
    ];
  }

  /** `op` lands now and its answer comes back at once. */
  function complete(w: World, i: number, op: Op): World {
    const l = land(w.row, op.req);
    return answered(setRow(w, l.row), i, op, l.answer, false);
  }

  function* next(w: World): Generator<Transition<World>> {
    if (w.violation) return;
    const faults = w.budget.faults > 0;
    for (let i = 0; i < w.electors.length; i++) {
      const e = w.electors[i]!;
      const op = e.busy;
      if (!op) {
        for (const s of steps(w, e)) {
          // a step's request lands and is answered within the unit it is sent in…
          yield { label: s.label, state: complete(w, i, { ...s.op, sentAt: mono(w) }) };
          // …or it is slow (the fault budget): in flight while time passes and others act
          if (faults) yield { label: `${s.label} (slow)`, state: send(spend(w), i, { ...s.op, slow: true }) };
        }
        if (e.leading && w.budget.workFailures > 0) yield { label: `${e.name}'s work fails`, state: giveUp({ ...w, budget: { ...w.budget, workFailures: w.budget.workFailures - 1 } }, i) };
      } else if (op.landed) {
        yield { label: `${e.name} is answered (${op.purpose}, late)`, state: answered(w, i, op, op.landed.answer, false) };
        yield { label: `${e.name}'s ${op.purpose} answer is lost (a timeout)`, state: answered(w, i, op, undefined, true) };
      } else {
        const l = land(w.row, op.req);
        const what = `${e.name}'s ${op.purpose}${op.slow ? ' (slow)' : ''} lands${l.answer ? '' : ' (refused)'}`;
        yield { label: `${what} and is answered`, state: answered(setRow(w, l.row), i, op, l.answer, false) };
        if (op.slow) {
          yield { label: `${what}, its answer late`, state: withElector(setRow(w, l.row), i, { ...e, busy: { ...op, landed: l } }) };
          // the sender gives up; the request may still land later (an orphan), or never: a lost write
          const gaveUp = answered(w, i, op, undefined, true);
          yield { label: `${e.name}'s ${op.purpose} times out before landing`, state: op.req.kind === 'read' ? gaveUp : { ...gaveUp, orphans: [...gaveUp.orphans, op] } };
        } else if (faults) yield { label: `${e.name}'s ${op.purpose} is slow`, state: withElector(spend(w), i, { ...e, busy: { ...op, slow: true } }) };
      }
      if (w.budget.jumps > 0)
        for (const o of cfg.stampOffsetsMs) if (o !== e.stampOffset) yield { label: `${e.name}'s stamp clock jumps to ${o >= 0 ? '+' : ''}${o} ms`, state: withElector({ ...w, budget: { ...w.budget, jumps: w.budget.jumps - 1 } }, i, { ...e, stampOffset: o }) };
    }
    for (let k = 0; k < w.orphans.length; k++) {
      const op = w.orphans[k]!;
      const l = land(w.row, op.req);
      yield { label: `a late ${op.purpose} lands${l.answer ? '' : ' (refused)'}`, state: setRow({ ...w, orphans: w.orphans.filter((_, j) => j !== k) }, l.row) };
    }
    // the coordinator (lib/coordinator/reconcile.ts reconcileOnce: read, decide, pings, then the lease write)
    if (w.coordinator) {
      yield { label: `the coordinator's write (slow) lands`, state: coordinatorLands(w) };
      yield { label: `the coordinator's write is lost`, state: { ...w, coordinator: undefined } };
    } else {
      const now = w.t * U + cfg.coordinatorOffsetMs;
      const d: Decision = proto.decideCoordinator(LEASE, w.row, w.candidates, now, election);
      if (!isNoop(d)) {
        const p = proto.plan(d, w.row, now, election);
        let after: World = w;
        if (p.ping.length) after = { ...after, candidates: after.candidates.map((x) => (p.ping.includes(x.name) && (x.pingTime === undefined || x.pingTime < p.pingTime!) ? { ...x, pingTime: p.pingTime!, revision: x.revision + 1 } : x)) };
        if (p.lease) after = { ...after, coordinator: { read: { item: w.row, revision: w.row?.revision ?? 0 }, patch: p.lease, withdraw: pingsToWithdraw(d, w.row, w.candidates, now) } };
        yield { label: `the coordinator decides ${describe(d)}`, state: after.coordinator ? coordinatorLands(after) : after };
        if (after.coordinator && faults) yield { label: `the coordinator decides ${describe(d)} (its write slow)`, state: spend(after) };
      }
    }
    if (w.row?.holderIdentity !== undefined && w.budget.tokenMoves > 0)
      yield { label: `an operator moves the fencing token under ${w.row.holderIdentity}`, state: setRow({ ...w, budget: { ...w.budget, tokenMoves: w.budget.tokenMoves - 1 } }, { ...w.row, fencingToken: w.row.fencingToken + 1, revision: w.row.revision + 1 }) };
    // time waits for every request that is not slow: those land within the unit they were sent in
    if (w.electors.every((e) => !e.busy || e.busy.slow)) {
      let later = w;
      for (let k = 1; k <= cfg.maxTickUnits; k++) {
        later = tick(later);
        yield { label: k === 1 ? 'tick' : `${k} ticks`, state: later };
        if (later.violation) break;
      }
    }
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

  const spend = (w: World): World => ({ ...w, budget: { ...w.budget, faults: w.budget.faults - 1 } });

  /** Time passes one unit; each leader's renew deadline timer fires once it is due (Leadership.armDeadline). */
  function tick(w0: World): World {
    let w: World = { ...w0, t: w0.t + 1 };
    for (let i = 0; i < w.electors.length; i++) {
      const e = w.electors[i]!;
      if (!e.leading || mono(w) < e.leading.renewedAt + cfg.renewDeadlineMs) continue;
      const term = e.leading.term;
      w = applyLeader(w, i, proto.decideLeader(settings(e), { holderIdentity: term.holderIdentity, instance: e.instance, fencingToken: term.fencingToken, renewedAt: e.leading.renewedAt, session: undefined }, { kind: 'deadline', now: mono(w) }));
    }
    return w;
  }

  function check(w: World): string | undefined {
    if (w.violation) return w.violation;
    const leaders = w.electors.filter((e) => e.leading);
    if (leaders.length > 1) return `two leaders at once: ${leaders.map((e) => `${e.name} (token ${e.leading!.term.fencingToken}, renewed ${(mono(w) - e.leading!.renewedAt) / U} units ago)`).join(' and ')}`;
    for (const e of leaders) {
      const l = e.leading!;
      if (mono(w) >= l.renewedAt + cfg.renewDeadlineMs) return `${e.name} leads past its renew deadline (renewed ${(mono(w) - l.renewedAt) / U} units ago)`;
      // the row is in its term (its token, or the row's copy of it: an operator moved the token, which the leader learns at its next renewal)
      const r = w.row;
      if (!(r?.holderIdentity === e.name && r.holderInstance === e.instance && (r.fencingToken === l.term.fencingToken || r.termToken === l.term.fencingToken)))
        return `${e.name} leads in term ${l.term.fencingToken} while the lease row is in ${r?.holderIdentity === undefined ? 'no term' : `${r.holderIdentity}'s term ${r.fencingToken}`}`;
    }
    return undefined;
  }

  // ---- initial states: no lease row yet, every candidate just registered; every combination of clock errors ----
  const init: World[] = [];
  const combos = (k: number, of: readonly number[]): number[][] => (k === 0 ? [[]] : combos(k - 1, of).flatMap((c) => of.map((o) => [...c, o])));
  for (const stamps of combos(cfg.electors, cfg.stampOffsetsMs))
    for (const walls of combos(cfg.electors, cfg.wallOffsetsMs)) {
      const electors: Elector[] = names.map((name, i) => ({ name, instance: `${name}#1`, stampOffset: stamps[i]!, wallOffset: walls[i]!, ledToken: -1 }));
      const candidates: Candidate[] = electors.map((e, i) => ({
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
      const w: World = { t: T0, row: undefined, candidates, electors, orphans: [], budget: { faults: cfg.faults, jumps: cfg.clockJumps, workFailures: cfg.workFailures, tokenMoves: cfg.tokenMoves } };
      init.push(cfg.start === 'held' ? held(w) : w);
    }

  /**
   * `w` with the first elector leading a term the coordinator elected it to a unit ago and it
   * confirmed now (its renewal sent and answered), naming the second elector successor; every
   * elector has seen that row now.
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
      revision: 3,
    } as Lease;
    const read = { item: row, revision: row.revision };
    const electors = w.electors.map((e) => observe(w, e, read)).map((e, i) => (i === 0 ? { ...e, leading: { term: { holderIdentity: a.name, fencingToken: token }, renewedAt: mono(w), lease: row }, ledToken: token } : e));
    return { ...w, row, electors, lastStarted: { instance: a.instance, token } };
  }

  return { init, next, check, key: (w) => canonicalKey(w, U) };
}

const shown = (l: Lease | undefined) => (l ? `holder ${l.holderIdentity}, token ${l.fencingToken}` : 'no row');

const sameKey = (a: TermKey, b: TermKey) =>
  a.holderIdentity === b.holderIdentity && a.holderInstance === b.holderInstance && a.renewTime === b.renewTime && a.fencingToken === b.fencingToken && a.leaseDurationSeconds === b.leaseDurationSeconds;

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
 * The state's key, with every absolute time made relative to now, every token to now's floor
 * (nextFencingToken is max(previous + 1, floor(now)·1000): shifting both alike shifts its result
 * alike) and every revision to the row's (the election id, `lease#revision`, with them). Every
 * decision compares these with each other only, so two states alike but for when they happen
 * behave alike from there on. Fields no decision reads (leaseTransitions: only ever +1 on a new
 * term; candidate rows' revisions, names and versions: fixed per elector) are left out. Written
 * field by field, in a fixed order, rather than JSON.stringify: rows built by different writes list
 * their fields in different orders, and this runs once per transition.
 */
export function canonicalKey(w: World, unitMs: number): string {
  const c: Shift = { now: w.t * unitMs, rev: w.row?.revision ?? 0 };
  let out = leaseKey(c, w.row);
  for (const x of w.candidates) out += `\n${T(c, x.renewTime)}/${T(c, x.pingTime)}/${T(c, x.ackedPingTime)}`;
  for (const e of w.electors) {
    const o = e.observed;
    const k = o?.key;
    out += `\n${e.stampOffset};${e.wallOffset};`;
    if (o) out += `${k ? `${k.holderIdentity}/${k.holderInstance}/${T(c, k.renewTime)}/${K(c, k.fencingToken)}/${k.leaseDurationSeconds}` : '-'}/${T(c, o.at)}/${R(c, o.revision)}`;
    out += `;${T(c, e.vacantSince)};${I(c, e.acked)};${K(c, e.ledToken)};`;
    if (e.leading) out += `${termKey(c, e.leading.term)}/${T(c, e.leading.renewedAt)}/${leaseKey(c, e.leading.lease)}${e.leading.fromRead ? '/r' : ''}`;
    out += `;${opKey(c, e.busy)}`;
  }
  const co = w.coordinator;
  if (co) {
    out += `\n${readKey(c, co.read)}${patchKey(c, co.patch)}`;
    for (const x of co.withdraw) out += `.${x.name}/${T(c, x.pingTime)}`;
  }
  for (const o of w.orphans) out += `\n&${opKey(c, o)}`;
  const b = w.budget;
  out += `\n${b.faults}/${b.jumps}/${b.workFailures}/${b.tokenMoves}`;
  if (w.lastStarted) out += `\n${w.lastStarted.instance}/${K(c, w.lastStarted.token)}`;
  return out;
}

/** What the key is relative to: now (ms) and the row's revision. */
interface Shift {
  readonly now: number;
  readonly rev: number;
}
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
function I(c: Shift, v: string | undefined): string {
  if (v === undefined) return '';
  const at = v.lastIndexOf('#');
  return at < 0 ? v : `${v.slice(0, at)}#${Number(v.slice(at + 1)) - c.rev}`;
}
function leaseKey(c: Shift, l: Partial<Lease> | undefined): string {
  if (!l) return '-';
  const e = l.election;
  const r = l.vacancyReport;
  const f = l.lastElectionFailure;
  return (
    `${l.holderIdentity},${l.holderInstance},${T(c, l.acquireTime)},${T(c, l.renewTime)},${l.leaseDurationSeconds},${K(c, l.fencingToken)},${K(c, l.termToken)},${l.electedBy},` +
    `${l.preferredHolder},${l.successor},${l.successorInstance},${l.secondSuccessor},${l.secondSuccessorInstance},${l.lastHolderIdentity},${l.session},` +
    (e ? `${I(c, e.id)}/${T(c, e.startedAt)}/${T(c, e.deadline)}/${e.holder}/${e.departed}/${e.strategy},` : ',') +
    (r ? `${r.by}/${T(c, r.at)}/${R(c, r.observedRevision)},` : ',') +
    (f ? `${T(c, f.at)}/${I(c, f.electionId)}/${f.reason},` : ',') +
    (l.revision === undefined ? '' : R(c, l.revision))
  );
}
function patchKey(c: Shift, p: RowPatch<Lease>): string {
  return `${leaseKey(c, p.set as Partial<Lease>)}|${p.remove ? [...p.remove].sort().join('.') : ''}`;
}
function readKey(c: Shift, r: RowRead | undefined): string {
  return r ? `${leaseKey(c, r.item)}@${R(c, r.revision)}` : '';
}
function termKey(c: Shift, t: Term | undefined): string {
  return t ? `${t.holderIdentity}:${K(c, t.fencingToken)}` : '';
}
function requestKey(c: Shift, q: Request): string {
  switch (q.kind) {
    case 'read':
      return 'r';
    case 'write':
      return `w${readKey(c, q.read)}${patchKey(c, q.patch)}`;
    case 'renew':
      return `n${termKey(c, q.term)}/${T(c, q.renewTime)}/${q.seconds}`;
    case 'handOver':
      return `h${termKey(c, q.term)}/${q.heir.name}/${q.heir.instance}/${T(c, q.now)}/${q.firstTermSeconds}/${q.secondNamed}`;
    case 'release':
      return `x${termKey(c, q.term)}/${T(c, q.now)}`;
    case 'endChanged':
      return `e${K(c, q.termToken)}/${q.lastHolder}/${T(c, q.now)}`;
  }
}
function opKey(c: Shift, o: Op | undefined): string {
  if (!o) return '';
  return `${o.purpose}/${T(c, o.sentAt)}/${termKey(c, o.term)}/${readKey(c, o.read)}/${o.thenAcquire ?? ''}/${o.successor ?? ''}/${o.slow ?? ''}/${o.landed ? `${leaseKey(c, o.landed.row)}>${leaseKey(c, o.landed.answer)}` : ''}/${requestKey(c, o.req)}`;
}

/** Absolute times and tokens are this large; smaller numbers (0: never pinged; -1: no token yet) are not shifted. */
const ABSOLUTE = 1_000_000;

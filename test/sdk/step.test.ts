/**
 * The follower's step (lib/sdk/step.ts followerStep) fed events by hand, no I/O: each row is a
 * poll's events in order and the effects the step asks for after each, so the poll's order — the
 * reads, the writes, what it tells — is pinned where it is decided.
 */
import { describe, expect, it } from 'vitest';
import type { Lease } from '../../lib/schemas/lease.js';
import { at, OFFSET, read, stepSettings, T } from './step-fixtures.js';
import { FOLLOWING, followerDelay, followerStep, leadFromRead, READ_AFTER_MS, RenewalPhase, type FollowerEvent, type FollowerSettings, type FollowerState, type Moment } from '../../lib/sdk/step.js';

const settings = (o: Partial<FollowerSettings> = {}): FollowerSettings => stepSettings('b', o);
/** A held row, renewed (by its stamp) at monotonic T: a term first seen at T or later is counted from when it was seen, not from its stamp. */
const held = (o: Partial<Lease> = {}): Lease =>
  ({ name: 'job', revision: 3, holderIdentity: 'a', holderInstance: 'a-1', leaseDurationSeconds: 15, acquireTime: T + OFFSET - 6_000, renewTime: T + OFFSET, leaseTransitions: 0, fencingToken: 7, ...o }) as Lease;
const election = { id: 'e1', startedAt: 1, deadline: 2 } as unknown as Lease['election'];

/** Feeds `events` in order; returns each step's effects (by kind) and the last state. */
function run(s: FollowerSettings, events: [FollowerEvent, Moment][], state: FollowerState = FOLLOWING): { effects: string[][]; state: FollowerState } {
  const effects: string[][] = [];
  for (const [e, m] of events) {
    const out = followerStep(s, state, e, m);
    state = out.state;
    effects.push(out.effects.map((f) => f.kind));
  }
  return { effects, state };
}

const poll: FollowerEvent = { kind: 'poll', pushLive: false };

describe("the follower's step", () => {
  it('changes nothing it is given: a successor of a term held on a session learns the session’s renewal cadence as a value, handed back as an effect and shared through the moment', () => {
    /** Every object reachable from `v` frozen (class instances too): a step that wrote to one would throw. */
    const frozen = <V>(v: V): V => {
      if (typeof v === 'object' && v !== null && !Object.isFrozen(v)) {
        Object.freeze(v);
        for (const x of Object.values(v)) frozen(x);
      }
      return v;
    };
    /** The process's session cadences, as the shell keeps them: a map the step may only read. */
    class ReadOnly<K, V> extends Map<K, V> {
      private sealed = false;
      constructor(from: Map<K, V>) {
        super(from);
        this.sealed = true;
      }
      override set(k: K, v: V): this {
        if (this.sealed) throw new Error('the step wrote to the moment');
        return super.set(k, v);
      }
    }
    const s = frozen(settings());
    const onSession = held({ session: 'p1', holderInstance: 'a-1@pa', successor: 'b', successorInstance: 'b-1', acquireTime: 1, renewTime: 2 });
    const row = (k: number) => ({ component: 'conclave-session', name: 'p1', holderIdentity: 'p1', hostname: 'h', leaseDurationSeconds: 15, acquireTime: 1, renewTime: OFFSET + T + k * 5_000, revision: k, process: 'pa' });
    let shared = new Map<string, RenewalPhase>();
    let state: FollowerState = frozen({ ...FOLLOWING });
    const learnt: RenewalPhase[] = [];
    for (let k = 1; k <= 4; k++) {
      const now = k * 5_000 + 20;
      const moment = (dt: number) => frozen({ ...at(now + dt), sessionCadences: new ReadOnly(shared) });
      for (const [e, dt] of [[poll, 0], [{ kind: 'leaseRead', raw: read(onSession) }, 5], [{ kind: 'sessionRead', read: { row: row(k), sentAt: T + now + 5, consistent: true } }, 10]] as [FollowerEvent, number][]) {
        const out = followerStep(s, state, frozen(e), moment(dt));
        state = frozen(out.state);
        for (const f of out.effects) {
          if (f.kind !== 'sessionCadence') continue;
          learnt.push(f.phase);
          shared = new Map([...shared, [f.name, f.phase]]); // as the shell does: before anything else is carried out
        }
      }
    }
    // one new phase per renewal seen, each a new value (the one before left as it was), and the holder's own cadence untouched
    expect(learnt).toHaveLength(4);
    expect(new Set(learnt).size).toBe(4);
    expect(learnt[0]!.known).toBe(false);
    expect(learnt[3]!.intervalMs()).toBe(5_000);
    expect(state.cadence).toBe(RenewalPhase.NONE);
    // the shared cadence times the next read (at its expectation of the next renewal); without it the successor polls every retry period
    const next = at(4 * 5_000 + 40);
    expect(followerDelay(s, state, { ...next, sessionCadences: shared }, true, 0)).toBe(shared.get('p1')!.expectedAt()! + READ_AFTER_MS - next.now);
    expect(followerDelay(s, state, next, true, 0)).toBe(s.retryPeriodMs);
  });

  it('a quiet poll: one eventually consistent read, then nothing; the holder is told once', () => {
    const r = run(settings(), [
      [poll, at()],
      [{ kind: 'leaseRead', raw: read(held()) }, at(20)],
    ]);
    expect(r.effects).toEqual([['readLease'], ['newLeader']]);
    expect(r.state.pending).toBeUndefined();
    expect(r.state.observed?.at).toBe(T + 20);
    expect(r.state.leaseReadAt).toBe(T);
    expect(followerStep(settings(), FOLLOWING, poll, at()).effects).toEqual([{ kind: 'readLease', consistent: false }]);
  });

  it('a copy older than one seen is read again, consistently, before it is judged', () => {
    const seen = run(settings(), [
      [poll, at()],
      [{ kind: 'leaseRead', raw: read(held({ revision: 5 })) }, at(10)],
    ]).state;
    const again = followerStep(settings(), seen, poll, at(100));
    const stale = followerStep(settings(), again.state, { kind: 'leaseRead', raw: read(held({ revision: 4 })) }, at(110));
    expect(stale.effects).toEqual([{ kind: 'readLease', consistent: true }]);
    expect(followerStep(settings(), stale.state, { kind: 'leaseRead', raw: read(held({ revision: 4 })) }, at(120)).state.pending).toBeUndefined(); // once only
  });

  it("a copy of a term from before the row was deleted and created again (its revision started over) is read again, consistently: no leader told of twice", () => {
    const c = held({ holderIdentity: 'c', holderInstance: 'c-1', revision: 1, fencingToken: 9_000 });
    const seen = run(settings(), [
      [poll, at()],
      [{ kind: 'leaseRead', raw: read(c) }, at(10)],
    ]).state;
    const again = followerStep(settings(), seen, poll, at(100));
    const copy = followerStep(settings(), again.state, { kind: 'leaseRead', raw: read(held({ revision: 5 })) }, at(110));
    expect(copy.effects).toEqual([{ kind: 'readLease', consistent: true }]);
    const current = followerStep(settings(), copy.state, { kind: 'leaseRead', raw: read(c) }, at(120));
    expect(current.effects).toEqual([]);
    expect(current.state.lastLeader).toBe('c');
  });

  it('a lease held on a session: its session row is read, and read again when the answer is older than the margin', () => {
    const onSession = held({ session: 'p1', holderInstance: 'a-1@pa' });
    const first = run(settings(), [
      [poll, at()],
      [{ kind: 'leaseRead', raw: read(onSession) }, at(10)],
    ]);
    expect(first.effects).toEqual([['readLease'], ['readSession']]);
    const old = followerStep(settings(), first.state, { kind: 'sessionRead', read: { row: undefined, sentAt: T - 5_000 } }, at(20));
    expect(old.effects).toEqual([{ kind: 'readSession', name: 'p1', shareMs: 0, pendingMs: 0, consistent: false, term: { holderIdentity: 'a', fencingToken: 7 } }]);
    // the row named is gone: the holder's own process's session is looked for (ownSessionRead)
    const query = followerStep(settings(), old.state, { kind: 'sessionRead', read: { row: undefined, sentAt: T + 20 } }, at(30));
    expect(query.effects).toEqual([{ kind: 'readProcessSession', named: 'p1', process: 'pa', term: { holderIdentity: 'a', fencingToken: 7 } }]);
    const judged = followerStep(settings(), query.state, { kind: 'processSessionRead', read: { row: undefined, sentAt: T + 30 } }, at(40));
    expect(judged.state.pending).toBeUndefined();
    expect(judged.state.lastRead?.leaseDurationSeconds).toBe(40); // no session vouches: the term lasts the holder's backstop read (sessionFallbackMs)
    // a holder on no session (it renews the lease itself): a `session` a peer wrote on its lease is not its own (seed 9248)
    const noSession = run(settings(), [
      [poll, at()],
      [{ kind: 'leaseRead', raw: read(held({ session: 'p1' })) }, at(10)],
      [{ kind: 'sessionRead', read: { row: undefined, sentAt: T + 10 } }, at(20)],
    ]);
    expect(noSession.state.lastRead?.leaseDurationSeconds).toBe(15);
  });

  it('session rows read as copies while the watched term has more than a retry period left; a copy that would end the term is read again consistently first; a copy never moves a term back', () => {
    const s = settings();
    const onSession = held({ session: 'p1', holderInstance: 'a-1@pa', successor: 'b', successorInstance: 'b-1', acquireTime: 1, renewTime: 2 }); // renewed on its session since
    // a session renewal stamped `at` ms after monotonic T (by this clock's measure)
    const row = (at: number) => ({ component: 'conclave-session', name: 'p1', holderIdentity: 'p1', hostname: 'h', leaseDurationSeconds: 15, acquireTime: 1, renewTime: OFFSET + T + at, revision: 1, process: 'pa' });
    const copy = (renewTime: number, sentAt: number): FollowerEvent => ({ kind: 'sessionRead', read: { row: row(renewTime), sentAt: T + sentAt, consistent: false } });
    const strong = (renewTime: number, sentAt: number): FollowerEvent => ({ kind: 'sessionRead', read: { row: row(renewTime), sentAt: T + sentAt, consistent: true } });
    const sessionReadAsked = (o: { effects: { kind: string }[] }) => o.effects.find((f) => f.kind === 'readSession') as { consistent: boolean } | undefined;
    // the first poll: a copy (nothing watched yet), judged renewed at 100
    let st = followerStep(s, FOLLOWING, poll, at()).state;
    let out = followerStep(s, st, { kind: 'leaseRead', raw: read(onSession) }, at(10));
    expect(sessionReadAsked(out)?.consistent).toBe(false);
    st = followerStep(s, out.state, copy(100, 10), at(20)).state;
    expect(st.observed?.at).toBe(T + 20);
    // 5 s in: a copy older than the renewal already seen counts as that renewal, so the term is not seen to change
    st = followerStep(s, st, poll, at(5_000)).state;
    out = followerStep(s, st, { kind: 'leaseRead', raw: read(onSession) }, at(5_010));
    expect(sessionReadAsked(out)?.consistent).toBe(false);
    st = followerStep(s, out.state, copy(50, 5_010), at(5_020)).state;
    expect(st.observed?.at).toBe(T + 20);
    expect(st.lastRead?.renewTime).toBe(OFFSET + T + 100);
    // within a retry period of the term's end as watched (T + 20 + 15 s): consistent
    out = followerStep(s, followerStep(s, st, poll, at(13_100)).state, { kind: 'leaseRead', raw: read(onSession) }, at(13_110));
    expect(sessionReadAsked(out)?.consistent).toBe(true);
    // past it, a copy (a shared one, say) that shows no renewal since: read again, consistently, before any take
    st = followerStep(s, st, poll, at(16_000)).state;
    out = followerStep(s, st, { kind: 'leaseRead', raw: read(onSession) }, at(16_010));
    const again = followerStep(s, out.state, copy(100, 16_010), at(16_020));
    expect(again.effects).toEqual([{ kind: 'readSession', name: 'p1', shareMs: 0, pendingMs: 0, consistent: true, term: { holderIdentity: 'a', fencingToken: 7 } }]);
    // the consistent read shows the renewal the copy missed: the term goes on, watched from now
    const renewed = followerStep(s, again.state, strong(16_000, 16_020), at(16_030));
    expect(renewed.effects.map((f) => f.kind)).not.toContain('acquire');
    expect(renewed.state.observed?.at).toBe(T + 16_030);
    // …or shows none: the successor takes the term
    const ran = followerStep(s, again.state, strong(100, 16_020), at(16_030));
    expect(ran.effects.map((f) => f.kind)).toContain('acquire');
    // without the consistent read the copy would have taken it: the rule is what stands between
    const copyTaken = followerStep(s, out.state, strong(100, 16_010), at(16_020));
    expect(copyTaken.effects.map((f) => f.kind)).toContain('acquire');
  });

  it('a term whose holder names a session process counts as held on a session for the fallback, even read off one (a copy before its move onto the session; seed 61866678)', () => {
    const off = run(settings(), [
      [poll, at()],
      [{ kind: 'leaseRead', raw: read(held({ holderInstance: 'a-1@pa' })) }, at(10)],
    ]);
    expect(off.state.lastHeldOnSession).toBe(true);
    const plain = run(settings(), [
      [poll, at()],
      [{ kind: 'leaseRead', raw: read(held({ holderInstance: 'a-1' })) }, at(10)],
    ]);
    expect(plain.state.lastHeldOnSession).toBe(false);
  });

  it('a holder on no session whose lease a peer pointed at a session: judged by the lease’s own stamp, as the coordinator does (seed 9248)', () => {
    const first = run(settings(), [
      [poll, at()],
      [{ kind: 'leaseRead', raw: read(held({ session: 'p1' })) }, at(10)], // holderInstance a-1 names no process
    ]);
    const judged = followerStep(settings(), first.state, { kind: 'sessionRead', read: { row: undefined, sentAt: T + 10 } }, at(20));
    expect(judged.state.lastRead?.leaseDurationSeconds).toBe(15);
  });

  it('a vacant row whose election failed with no live candidate (its ping missed): the candidacy renewed once, not at every read of the same failure (seed 12040)', () => {
    const failed = { name: 'job', revision: 4, leaseDurationSeconds: 15, leaseTransitions: 1, fencingToken: 7, lastElectionFailure: { at: 1, electionId: 'job#4', reason: 'noLiveCandidates', message: 'no live candidate' } } as Lease;
    const r = run(settings(), [
      [poll, at()],
      [{ kind: 'leaseRead', raw: read(failed) }, at(10)],
      [{ kind: 'candidateRenewed' }, at(20)],
      [poll, at(2_000)],
      [{ kind: 'leaseRead', raw: read(failed) }, at(2_010)],
    ]);
    expect(r.effects.map((e) => e.filter((k) => k === 'renewCandidate'))).toEqual([[], ['renewCandidate'], [], [], []]);
    expect(r.state.ackedElection).toBe('failed:job#4@1');
  });

  it('an open election: answered by renewing the candidacy, then remembered; in lasting doubt of the clock, held back', () => {
    const s = settings();
    const r = run(s, [
      [poll, at()],
      [{ kind: 'leaseRead', raw: read(held({ election })) }, at(10)],
      [{ kind: 'candidateRenewed' }, at(20)],
    ]);
    expect(r.effects).toEqual([['readLease'], ['newLeader', 'renewCandidate'], []]);
    expect(r.state.ackedElection).toBe('e1@1');
    const doubt = { ok: false, reason: 'noSamples' } as const;
    const held_ = run(s, [
      [poll, at(0, { clock: doubt })],
      [{ kind: 'leaseRead', raw: read(held({ election })) }, at(10, { clock: doubt })],
    ]);
    expect(held_.effects).toEqual([['readLease'], ['newLeader']]);
    expect(held_.state).toMatchObject({ unanswered: true, preventions: 1, ackedElection: undefined });
  });

  it("the lease row made again after a delete, its first election of an id answered before (`<lease>#1` again: ids count the row's revisions): answered (it was let pass, as answered already; a review, 2026-12-05)", () => {
    const s = settings();
    const first = held({ revision: 1, election: { id: 'job#1', startedAt: 1, deadline: 2 } as Lease['election'] });
    const again = held({ revision: 1, election: { id: 'job#1', startedAt: 60_000, deadline: 65_000 } as Lease['election'] });
    const r = run(s, [
      [poll, at()],
      [{ kind: 'leaseRead', raw: read(first) }, at(10)],
      [{ kind: 'candidateRenewed' }, at(20)],
      [poll, at(60_010)],
      [{ kind: 'leaseRead', raw: read(again) }, at(60_020)],
    ]);
    expect(r.effects.at(-1)).toContain('renewCandidate');
  });

  it('handed over to this start-up (issue 38, cut 2): a consistent read leads at once, anchored at the hand-over’s stamp, and the lead effect says to confirm after; an eventually consistent one is read again first; a stamp a first term old is confirmed first', () => {
    // stamped 30 ms before monotonic T + 0 (the giver's clock), first term 5 s: the renew deadline's share (2/3) from stamp - 5 - 1 - 500 ms
    const stamp = OFFSET + T - 30;
    const handed = held({ holderIdentity: 'b', holderInstance: 'b-1', fencingToken: 9, termToken: 9, electedBy: 'successor', lastHolderIdentity: 'a', acquireTime: stamp, renewTime: stamp, leaseDurationSeconds: 5 });
    // a poll after a wake (its record's wakePending)
    const woken: FollowerEvent = { kind: 'poll', pushLive: true };
    const wokenUp: FollowerState = { ...FOLLOWING, wakePending: true };
    const led = run(settings(), [
      [woken, at()],
      [{ kind: 'leaseRead', raw: read(handed) }, at(10)],
    ], wokenUp);
    expect(led.effects).toEqual([['readLease'], ['newLeader', 'lead']]);
    const lead = followerStep(settings(), run(settings(), [[woken, at()]], wokenUp).state, { kind: 'leaseRead', raw: read(handed) }, at(10)).effects.at(-1);
    const until = T - 30 - 5 - 1 - 500 + (5_000 * 10_000) / 15_000;
    expect(lead).toMatchObject({ kind: 'lead', handed: true, confirmed: false, sentAt: until - 10_000 });
    // an eventually consistent poll: read again, consistently, then led
    const again = run(settings(), [
      [poll, at()],
      [{ kind: 'leaseRead', raw: read(handed) }, at(10)],
      [{ kind: 'leaseRead', raw: read(handed) }, at(20)],
    ]);
    expect(again.effects).toEqual([['readLease'], ['newLeader', 'readLease'], ['lead']]);
    // read 4 s after its stamp: less than half a retry period of its 3.3 s left, so confirmed first
    const late = run(settings(), [
      [woken, at(4_000)],
      [{ kind: 'leaseRead', raw: read(handed) }, at(4_010)],
    ], wokenUp);
    expect(late.effects).toEqual([['readLease'], ['newLeader', 'confirm']]);
  });

  it('elected for this start-up: confirms by renewing, leads, and remembers the token; a term won across a clock jump is given back', () => {
    const mine = held({ holderIdentity: 'b', holderInstance: 'b-1', fencingToken: 9 });
    const confirmed = run(settings(), [
      [poll, at()],
      [{ kind: 'leaseRead', raw: read(mine) }, at(10)],
      [{ kind: 'confirmed', lease: { ...mine, revision: 4 } }, at(20)],
      [{ kind: 'led', ok: true, leading: true }, at(30)],
    ]);
    expect(confirmed.effects).toEqual([['readLease'], ['newLeader', 'confirm'], ['lead'], []]);
    expect(confirmed.state.ledToken).toBe(9);
    const jumped = run(settings(), [
      [poll, at()],
      [{ kind: 'leaseRead', raw: read(mine) }, at(10)],
      [{ kind: 'confirmed', lease: { ...mine, revision: 4 } }, at(20, { jumps: 1 })],
      [{ kind: 'released' }, at(30)],
    ]);
    expect(jumped.effects).toEqual([['readLease'], ['newLeader', 'confirm'], ['release'], []]);
    expect(jumped.state).toMatchObject({ preventions: 1, leaseReadAt: undefined, ledToken: -1 });
  });

  it('the successor whose takeover lost a race looks once more, and takes the lease again if it is still vacant and still its', () => {
    const vacant = { name: 'job', revision: 6, leaseDurationSeconds: 15, leaseTransitions: 1, fencingToken: 7, successor: 'b' } as Lease;
    const r = run(settings(), [
      [poll, at()],
      [{ kind: 'leaseRead', raw: read(vacant) }, at(10)],
      [{ kind: 'acquired', got: { refusedBy: undefined } }, at(20)],
      [{ kind: 'leaseRead', raw: read({ ...vacant, revision: 7 }) }, at(30)],
      [{ kind: 'acquired', got: { refusedBy: 'c' } }, at(40)],
    ]);
    expect(r.effects).toEqual([['readLease'], ['acquire'], ['readLease'], ['acquire'], ['newLeader']]);
    expect(r.state.pending).toBeUndefined();
  });

  it('a term watched run out: reported, acknowledged, and taken by fallback once the fallback is due', () => {
    const s = settings({ fallbackAfterMs: 0 });
    const first = run(s, [
      [poll, at()],
      [{ kind: 'leaseRead', raw: read(held()) }, at(10)],
    ]).state;
    const r = run(
      s,
      [
        [poll, at(16_000)],
        [{ kind: 'leaseRead', raw: read(held()) }, at(16_010)],
        [{ kind: 'reported', lease: held({ vacancyReport: { by: 'b', at: 1, observedRevision: 3 } }) }, at(16_020)],
        [{ kind: 'candidateRenewed' }, at(16_030)],
      ],
      first,
    );
    expect(r.effects).toEqual([['readLease'], ['reportVacancy'], ['renewCandidate'], ['acquire']]);
  });

  it('a term first seen long after its stamp (a follower back from an outage, a new process): counted from its stamp, as the coordinator counts it, so it runs out a lease duration after the renewal, not after the first sight; only in coordinated mode, with the clock measured and trusted, off a session or judged by the session row it names', () => {
    // renewed 14 s before T by its stamp; this successor first reads it at T + 10
    const old = held({ successor: 'b', successorInstance: 'b-1', renewTime: OFFSET + T - 14_000 });
    const firstSight = (s: FollowerSettings, m: Moment = at(10), l: Lease = old) => run(s, [[poll, at()], [{ kind: 'leaseRead', raw: read(l) }, m]]).state;
    const s = settings();
    const st = firstSight(s);
    // the latest the renewal can have been sent, on this clock: its stamp, the stamp's error (500), this clock's (5), 1 ms of rounding
    expect(st.observed?.at).toBe(T - 14_000 + 506);
    expect(st.wakeAt).toBe(T - 14_000 + 506 + 15_001);
    expect(run(s, [[poll, at(1_506)], [{ kind: 'leaseRead', raw: read(old) }, at(1_506)]], st).effects).toEqual([['readLease'], []]);
    expect(run(s, [[poll, at(1_507)], [{ kind: 'leaseRead', raw: read(old) }, at(1_507)]], st).effects).toEqual([['readLease'], ['acquire']]);
    // a renewal read at once is counted from when it was read, as before (its stamp's bound is later)
    expect(firstSight(s, at(10), held({ successor: 'b', successorInstance: 'b-1' })).observed?.at).toBe(T + 10);
    // not by the stamp: NoCoordination (client-go's watch, no clock assumed), a clock not measured or in doubt, a term on a session
    expect(firstSight(settings({ mode: 'NoCoordination' })).observed?.at).toBe(T + 10);
    expect(firstSight(settings({ clockMeasured: false })).observed?.at).toBe(T + 10);
    expect(firstSight(s, at(10, { clock: { ok: false, reason: 'noSamples' } })).observed?.at).toBe(T + 10);
    const onSession = held({ session: 'p1', holderInstance: 'a-1@pa', successor: 'b', successorInstance: 'b-1', renewTime: OFFSET + T - 14_000 });
    const sessionRow = { component: 'conclave-session', name: 'p1', holderIdentity: 'p1', hostname: 'h', leaseDurationSeconds: 15, acquireTime: 1, renewTime: OFFSET + T - 14_000, revision: 1, process: 'pa' };
    // a term on a session judged by the session row it names: by that row's stamp, the later of the two
    const judged = run(s, [[poll, at()], [{ kind: 'leaseRead', raw: read(onSession) }, at(10)], [{ kind: 'sessionRead', read: { row: sessionRow, sentAt: T + 10 } }, at(20)]]).state;
    expect(judged.observed?.at).toBe(T - 14_000 + 506);
    const later = run(s, [[poll, at()], [{ kind: 'leaseRead', raw: read(onSession) }, at(10)], [{ kind: 'sessionRead', read: { row: { ...sessionRow, renewTime: OFFSET + T - 3_000 }, sentAt: T + 10 } }, at(20)]]).state;
    expect(later.observed?.at).toBe(T - 3_000 + 506);
    // the lease row's own stamp, older than its session's, as a write's answer shows the row: not judged by it
    const stale = held({ session: 'p1', holderInstance: 'a-1@pa', successor: 'b', successorInstance: 'b-1', renewTime: OFFSET + T - 60_000 });
    const viewed = run(s, [[poll, at()], [{ kind: 'leaseRead', raw: read(stale) }, at(10)], [{ kind: 'sessionRead', read: { row: { ...sessionRow, renewTime: OFFSET + T - 3_000 }, sentAt: T + 10 } }, at(20)]]).state;
    expect(viewed.observed?.at).toBe(T - 3_000 + 506);
    expect(run(s, [[{ kind: 'observed', read: read(stale) }, at(40)]], viewed).state.observed?.at).toBe(T + 40);
    // …not one judged by its holder's other session row (the named one gone), nor by the session fallback
    const ownRow = { ...sessionRow, name: 'p2' };
    const byOwn = run(s, [[poll, at()], [{ kind: 'leaseRead', raw: read(onSession) }, at(10)], [{ kind: 'sessionRead', read: { row: undefined, sentAt: T + 10 } }, at(20)], [{ kind: 'processSessionRead', read: { row: ownRow, sentAt: T + 20 } }, at(30)]]).state;
    expect(byOwn.observed?.at).toBe(T + 30);
    const fallback = run(s, [[poll, at()], [{ kind: 'leaseRead', raw: read(onSession) }, at(10)], [{ kind: 'sessionRead', read: { row: undefined, sentAt: T + 10 } }, at(20)], [{ kind: 'processSessionRead', read: { row: undefined, sentAt: T + 20 } }, at(30)]]).state;
    expect(fallback.observed?.at).toBe(T + 30);
  });

  it('a holder on no session whose lease a peer pointed at a missing session row: counted from the lease row’s own stamp once a consistent read of that row finds it cannot hold the term, as the coordinator counts it; a copy of the session row is not enough (seed 117605: a successor paused across the term’s end took it 16 s late)', () => {
    const s = settings();
    // holderInstance a-1 names no process: it renews the lease row itself, whatever `session` a peer wrote on it
    const redirected = held({ session: 'gone', successor: 'b', successorInstance: 'b-1', renewTime: OFFSET + T - 14_000 });
    const judged = (consistent: boolean | undefined) => run(s, [[poll, at()], [{ kind: 'leaseRead', raw: read(redirected) }, at(10)], [{ kind: 'sessionRead', read: { row: undefined, sentAt: T + 10, ...(consistent === undefined ? {} : { consistent }) } }, at(20)]]);
    const byStamp = judged(undefined);
    expect(byStamp.state.observed?.at).toBe(T - 14_000 + 506);
    expect(byStamp.state.wakeAt).toBe(T - 14_000 + 506 + 15_001);
    expect(judged(true).state.observed?.at).toBe(T - 14_000 + 506);
    // a copy that shows no row may be older than the row: counted from when the term was seen
    expect(judged(false).state.observed?.at).toBe(T + 20);
    // another process's row named: the same (its holder on none)
    const others = { component: 'conclave-session', name: 'gone', holderIdentity: 'gone', hostname: 'h', leaseDurationSeconds: 15, acquireTime: 1, renewTime: OFFSET + T, revision: 1, process: 'px' };
    expect(run(s, [[poll, at()], [{ kind: 'leaseRead', raw: read(redirected) }, at(10)], [{ kind: 'sessionRead', read: { row: others, sentAt: T + 10 } }, at(20)]]).state.observed?.at).toBe(T - 14_000 + 506);
    // the next read of the lease row alone (the view's judgement not made again): counted from when it was seen
    expect(run(s, [[{ kind: 'observed', read: read({ ...redirected, renewTime: OFFSET + T - 13_000 }) }, at(40)]], byStamp.state).state.observed?.at).toBe(T + 40);
  });

  it('a term on a session watched run out by session-only polls: once its report landed, or was refused, the next poll reads the lease row, not the session again (seed 51881: a report sent again every poll, refused every time, for up to the backstop)', () => {
    const s = settings();
    const live: FollowerEvent = { kind: 'poll', pushLive: true };
    const onSession = held({ session: 'p1', holderInstance: 'a-1@pa' });
    const row = { component: 'conclave-session', name: 'p1', holderIdentity: 'p1', hostname: 'h', leaseDurationSeconds: 15, acquireTime: 1, renewTime: 2, revision: 1, process: 'pa' };
    const watched = run(s, [
      [live, at()],
      [{ kind: 'leaseRead', raw: read(onSession) }, at(10)],
      [{ kind: 'sessionRead', read: { row, sentAt: T + 10 } }, at(20)],
    ]).state;
    const ranOut = run(s, [
      [live, at(16_000)],
      [{ kind: 'sessionRead', read: { row, sentAt: T + 16_000 } }, at(16_010)],
    ], watched);
    expect(ranOut.effects).toEqual([['readSession'], ['reportVacancy']]); // a quiet term on a live session: its session row only
    for (const answer of [held({ session: 'p1', holderInstance: 'a-1@pa', vacancyReport: { by: 'b', at: 1, observedRevision: 3 }, revision: 4 }), undefined]) {
      const r = run(s, [
        [{ kind: 'reported', lease: answer }, at(16_020)],
        ...(answer ? [[{ kind: 'candidateRenewed' }, at(16_030)] as [FollowerEvent, Moment]] : []),
        [live, at(16_300)],
      ], ranOut.state);
      expect(r.effects.at(-1)).toEqual(['readLease']);
      const after = run(s, [[{ kind: 'reported', lease: answer }, at(16_020)], ...(answer ? [[{ kind: 'candidateRenewed' }, at(16_030)] as [FollowerEvent, Moment]] : [])], ranOut.state).state;
      // and soon: the report standing is read while it stands (its REPORT_ANSWER_MS counted from the write), whoever moved first at once
      if (answer) {
        expect(after.askSeen).toEqual({ key: 'report|b|1|3', at: T + 16_020 });
        expect(followerDelay(s, after, at(16_030), true, 0)).toBeLessThanOrEqual(s.retryPeriodMs);
      } else expect(after.wakeAt).toBe(T + 16_020);
    }
  });

  it('the second successor of a term on a session, its take refused (the successor moved first): it looks again at the lease row itself, not the session (a session-only poll would take again, refused every time)', () => {
    const s = settings();
    const live: FollowerEvent = { kind: 'poll', pushLive: true };
    const onSession = held({ session: 'p1', holderInstance: 'a-1@pa', successor: 'c', successorInstance: 'c-1', secondSuccessor: 'b', secondSuccessorInstance: 'b-1' });
    const row = { component: 'conclave-session', name: 'p1', holderIdentity: 'p1', hostname: 'h', leaseDurationSeconds: 15, acquireTime: 1, renewTime: 2, revision: 1, process: 'pa' };
    const sessionRead = (t: number): FollowerEvent => ({ kind: 'sessionRead', read: { row, sentAt: T + t, consistent: true } });
    const watched = run(s, [
      [live, at()],
      [{ kind: 'leaseRead', raw: read(onSession) }, at(10)],
      [sessionRead(10), at(20)],
    ]).state;
    const took = run(s, [
      [live, at(15_100)],
      [sessionRead(15_100), at(15_110)],
      [live, at(15_400)],
      [sessionRead(15_400), at(15_410)],
    ], watched);
    expect(took.effects).toEqual([['readSession'], [], ['readSession'], ['acquire']]);
    const refused = run(s, [[{ kind: 'acquired', got: { refusedBy: 'c' } }, at(15_420)]], took.state);
    expect(refused.effects).toEqual([['newLeader', 'readLease']]); // its second look: the row itself
  });

  it('what the row asks of a coordinator (a vacancy report with no election on it, or an election): first seen when a read first showed it, kept while it stands, counted afresh for each new ask, cleared once nothing is asked (REPORT_ANSWER_MS counts from then)', () => {
    const report = { by: 'c', at: 1, observedRevision: 3 };
    const r = run(settings(), [
      [poll, at()],
      [{ kind: 'leaseRead', raw: read(held({ vacancyReport: report })) }, at(10)],
      [poll, at(2_000)],
      [{ kind: 'leaseRead', raw: read(held({ vacancyReport: report })) }, at(2_010)],
    ]);
    expect(r.state.askSeen).toEqual({ key: 'report|c|1|3', at: T + 10 });
    // answered: the election opened on it is what the row asks now, counted from when it was first seen
    const answered = run(settings(), [
      [poll, at(3_000)],
      [{ kind: 'leaseRead', raw: read(held({ vacancyReport: report, election })) }, at(3_010)],
    ], r.state);
    expect(answered.state.askSeen).toEqual({ key: 'election|e1@1', at: T + 3_010 });
    // held for the lease stream, then the stream has seen the row: counted afresh
    const forStream = run(settings(), [
      [poll, at(4_000)],
      [{ kind: 'leaseRead', raw: read(held({ election: { ...election!, awaitsStream: true } })) }, at(4_010)],
      [poll, at(6_000)],
      [{ kind: 'leaseRead', raw: read(held({ election })) }, at(6_010)],
    ], answered.state);
    expect(forStream.state.askSeen).toEqual({ key: 'election|e1@1', at: T + 6_010 });
    // an election of the same id started later (the row made again after a delete): a new ask, seen afresh
    const again = run(settings(), [
      [poll, at(6_500)],
      [{ kind: 'leaseRead', raw: read(held({ election: { ...election!, startedAt: 6_000 } })) }, at(6_510)],
    ], forStream.state);
    expect(again.state.askSeen).toEqual({ key: 'election|e1@6000', at: T + 6_510 });
    const done = run(settings(), [
      [poll, at(7_000)],
      [{ kind: 'leaseRead', raw: read(held()) }, at(7_010)],
    ], forStream.state);
    expect(done.state.askSeen).toBeUndefined();
  });

  it('no row, then a row without a holder (an election held for a deleted term): the fallback still waits the session fallback from when the row was first found gone, not the three-term one (seed 6306473: 137.7 ms of two leaders)', () => {
    const s = settings({ sessionFallbackMs: 78_000 });
    const gone = read(undefined);
    const held = { name: 'job', revision: 1, leaseDurationSeconds: 15, leaseTransitions: 0, fencingToken: 0, election: { id: 'job#1', startedAt: 1, deadline: 2, strategy: 'OldestEmulationVersion', notBefore: 2 } } as unknown as Lease;
    const r = run(s, [
      [poll, at()],
      [{ kind: 'leaseRead', raw: gone }, at(10)],
      [{ kind: 'leaseRead', raw: gone }, at(20)],
    ]);
    expect(r.state.lastHeldOnSession).toBe(true);
    const at46 = run(s, [
      [poll, at(46_000)],
      [{ kind: 'leaseRead', raw: read(held) }, at(46_010)],
      [{ kind: 'candidateRenewed' }, at(46_020)],
    ], r.state);
    expect(at46.effects.flat()).not.toContain('acquire'); // before: taken at the three-term fallback (45 s)
    const at78 = run(s, [
      [poll, at(78_100)],
      [{ kind: 'leaseRead', raw: read(held) }, at(78_110)],
    ], at46.state);
    expect(at78.effects.flat()).toContain('acquire');
  });

  describe('the lease row found gone under a term that named this start-up (vanished)', () => {
    const gone = read(undefined);
    /** A term its holder renewed at monotonic T (stamped by a clock on time). */
    const live = (o: Partial<Lease>): Lease => held({ renewTime: OFFSET + T, ...o });
    /**
     * Reads `last`, then finds the row gone: a copy, read again consistently, at T + 1_020. A
     * start-up not named in that term renews its candidacy first (noRow: its row may be gone too),
     * answered at once.
     */
    const goneAfter = (s: FollowerSettings, last: Lease): ReturnType<typeof run> => answered(s, run(s, [
        [poll, at()],
        [{ kind: 'leaseRead', raw: read(last) }, at(10)],
        [poll, at(1_000)],
        [{ kind: 'leaseRead', raw: gone }, at(1_010)],
        [{ kind: 'leaseRead', raw: gone }, at(1_020)],
      ]));
    /** `r` with its candidacy renewal answered, if its last step asked for one. */
    const answered = (s: FollowerSettings, r: ReturnType<typeof run>, dt = 1_020): ReturnType<typeof run> => {
      if (!r.effects.at(-1)?.includes('renewCandidate')) return r;
      const then = run(s, [[{ kind: 'candidateRenewed' }, at(dt)]], r.state);
      return { effects: [...r.effects, ...then.effects], state: then.state };
    };
    /** A poll at `dt` that finds the row still gone: its effects. */
    const pollGone = (s: FollowerSettings, st: FollowerState, dt: number): string[][] =>
      run(s, [
        [poll, at(dt)],
        [{ kind: 'leaseRead', raw: gone }, at(dt)],
      ], st).effects;

    it('the successor takes the lease a lease duration after it first found the row gone, conditioned on no row (seed 19136)', () => {
      const s = settings();
      const r = goneAfter(s, live({ successor: 'b', successorInstance: 'b-1', secondSuccessor: 'c' }));
      // its candidacy renewed first, as every start-up's that finds the row gone (noRow: its row may be gone too)
      expect(r.effects.slice(2)).toEqual([['readLease'], ['readLease'], ['renewCandidate'], []]);
      expect(r.state.vanished).toEqual({ role: 'successor', termMs: 15_000 });
      expect(r.state.wakeAt).toBe(T + 1_020 + 15_000 + 1);
      expect(pollGone(s, r.state, 1_020 + 15_000)).toEqual([['readLease'], []]);
      // due: the lease's candidates are read first, and none can hold a term on a session
      const take = run(s, [
        [poll, at(1_020 + 15_001)],
        [{ kind: 'leaseRead', raw: gone }, at(1_020 + 15_001)],
        [{ kind: 'candidatesRead', instances: ['a-1', 'b-1', undefined] }, at(1_020 + 15_010)],
      ], r.state);
      expect(take.effects).toEqual([['readLease'], ['readCandidates'], ['acquire']]);
      expect(take.state.vanished).toEqual({ role: 'successor', termMs: 15_000, checked: true });
      const pending = followerStep(s, r.state, poll, at(1_020 + 15_001)).state;
      const check = followerStep(s, pending, { kind: 'leaseRead', raw: gone }, at(1_020 + 15_001));
      expect(followerStep(s, check.state, { kind: 'candidatesRead', instances: ['a-1', 'b-1'] }, at(1_020 + 15_010)).effects).toEqual([{ kind: 'acquire', read: gone, electedBy: 'successor' }]);
    });

    it('not while a candidate can hold a term on a session: the term read last may have been handed to it, or released and elected, and moved onto its session before the delete, which it hears of only from the stream or its backstop read; the session fallback then', () => {
      const s = settings();
      const r = goneAfter(s, live({ successor: 'b', successorInstance: 'b-1', secondSuccessor: 'c' }));
      const check = run(s, [
        [poll, at(1_020 + 15_001)],
        [{ kind: 'leaseRead', raw: gone }, at(1_020 + 15_001)],
        [{ kind: 'candidatesRead', instances: ['a-1', 'b-1', 'c-1@pc'] }, at(1_020 + 15_010)],
      ], r.state);
      expect(check.effects).toEqual([['readLease'], ['readCandidates'], []]);
      expect(check.state.vanished).toBeUndefined();
      // the read failed (denied, throttled): nothing proved, the session fallback as well
      const failed = run(s, [
        [poll, at(1_020 + 15_001)],
        [{ kind: 'leaseRead', raw: gone }, at(1_020 + 15_001)],
        [{ kind: 'candidatesRead', instances: undefined }, at(1_020 + 15_010)],
      ], r.state);
      expect(failed.effects).toEqual([['readLease'], ['readCandidates'], []]);
      expect(failed.state.vanished).toBeUndefined();
      // the missing row's fallback: 78 s at these timings (sessionFallbackMs), from when it was first found gone
      const fallbackMs = Math.max(s.fallbackAfterMs, s.sessionFallbackMs);
      expect(pollGone(s, check.state, 1_020 + fallbackMs - 1)).toEqual([['readLease'], []]);
      expect(pollGone(s, check.state, 1_020 + fallbackMs)).toEqual([['readLease'], ['acquire']]);
      // this start-up's own instance on a session is no reason: it is the one taking
      const onItsSession = settings({ instance: 'b-1@pb' });
      const mine = goneAfter(onItsSession, live({ successor: 'b', successorInstance: 'b-1@pb' }));
      const own = run(onItsSession, [
        [poll, at(1_020 + 15_001)],
        [{ kind: 'leaseRead', raw: gone }, at(1_020 + 15_001)],
        [{ kind: 'candidatesRead', instances: ['a-1', 'b-1@pb'] }, at(1_020 + 15_010)],
      ], mine.state);
      expect(own.effects).toEqual([['readLease'], ['readCandidates'], ['acquire']]);
    });

    it('the second successor takes it a lease duration and its grace after', () => {
      const s = settings();
      const r = goneAfter(s, live({ successor: 'c', secondSuccessor: 'b', secondSuccessorInstance: 'b-1' }));
      expect(r.state.vanished).toEqual({ role: 'second', termMs: 15_000 });
      expect(r.state.wakeAt).toBe(T + 1_020 + 15_200 + 1);
      expect(pollGone(s, r.state, 1_020 + 15_001)).toEqual([['readLease'], []]);
      expect(pollGone(s, r.state, 1_020 + 15_200)).toEqual([['readLease'], []]);
      expect(pollGone(s, r.state, 1_020 + 15_201)).toEqual([['readLease'], ['readCandidates']]);
    });

    it('a term held on a session, or one naming somebody else, or a holder on a session process, a first term, or a row found gone a term after its renewal keeps the fallback’s wait', () => {
      const s = settings();
      const onSession = held({ session: 'p1', holderInstance: 'a-1@pa', successor: 'b' });
      const sessionHeldRun = answered(s, run(s, [
        [poll, at()],
        [{ kind: 'leaseRead', raw: read(onSession) }, at(10)],
        [{ kind: 'sessionRead', read: { row: undefined, sentAt: T + 10 } }, at(10)],
        [{ kind: 'processSessionRead', read: { row: undefined, sentAt: T + 10 } }, at(10)],
        [poll, at(1_000)],
        [{ kind: 'leaseRead', raw: gone }, at(1_010)],
        [{ kind: 'leaseRead', raw: gone }, at(1_020)],
      ]));
      const sessionHeld = sessionHeldRun.state;
      const others = [
        live({ successor: 'c', secondSuccessor: 'd' }),
        live({ successor: 'b', successorInstance: 'b-0' }), // another start-up of this name
        live({ holderInstance: 'a-1@pa', successor: 'b' }), // off its session now, but it may put the term on one
        live({ successor: 'b', acquireTime: OFFSET + T, renewTime: OFFSET + T }), // a first term: its holder may renew it for longer
        live({ successor: 'b', renewTime: OFFSET + T - 14_000 }), // found gone a term after the renewal's stamp: another may have taken the term since
      ].map((l) => goneAfter(s, l));
      // not named in the term on the row (or not by it alone): its candidacy renewed first (noRow), its row perhaps gone too
      for (const r of [sessionHeldRun, ...others]) expect(r.effects.flat()).toContain('renewCandidate');
      for (const st of [sessionHeld, ...others.map((r) => r.state)]) {
        expect(st.vanished).toBeUndefined();
        expect(st.vacantSince).toBe(T + 1_020);
        expect(pollGone(s, st, 1_020 + 44_999)).toEqual([['readLease'], []]);
        expect(pollGone(s, st, 1_020 + 45_000)).toEqual([['readLease'], ['acquire']]); // the fallback
      }
    });

    describe("a holder on no session whose row named a session (a peer's redirect, issue 36; seed 97467's tail)", () => {
      /** w0's term on no session, naming this start-up successor, its `session` a peer's write. */
      const redirected = live({ successor: 'b', successorInstance: 'b-1', session: 'job-no-such-session' });
      /** A session row named `name` of process `process` (none: an older SDK's). */
      const sessionRow = (name: string, process?: string) => ({ component: 'conclave-session', name, holderIdentity: name, hostname: 'h', leaseDurationSeconds: 15, acquireTime: 1, renewTime: OFFSET + T, revision: 1, ...(process ? { process } : {}) });
      /** Reads the redirected row (judged by its own stamp: the named row is none of its holder's), then finds it gone: a copy, read again consistently at T + 1_020. */
      const goneRedirected = (s: FollowerSettings) =>
        run(s, [
          [poll, at()],
          [{ kind: 'leaseRead', raw: read(redirected) }, at(10)],
          [{ kind: 'sessionRead', read: { row: undefined, sentAt: T + 10 } }, at(10)],
          [poll, at(1_000)],
          [{ kind: 'leaseRead', raw: gone }, at(1_010)],
          [{ kind: 'leaseRead', raw: gone }, at(1_020)],
        ]);

      it('the row found gone, the session it named is read (consistently, no earlier read shared) before the row counts as vanished', () => {
        const s = settings();
        const r = goneRedirected(s);
        expect(r.effects.slice(3)).toEqual([['readLease'], ['readLease'], ['readSession']]);
        expect(r.state.vanished).toBeUndefined();
        const pending = run(s, [
          [poll, at()],
          [{ kind: 'leaseRead', raw: read(redirected) }, at(10)],
          [{ kind: 'sessionRead', read: { row: undefined, sentAt: T + 10 } }, at(10)],
          [poll, at(1_000)],
          [{ kind: 'leaseRead', raw: gone }, at(1_010)],
        ]).state;
        // for the last term read (a row the schema refuses is its BrokenSessionError; before: none, a plain ValidationError)
        expect(followerStep(s, pending, { kind: 'leaseRead', raw: gone }, at(1_020)).effects).toEqual([{ kind: 'readSession', name: 'job-no-such-session', shareMs: 0, pendingMs: 0, consistent: true, term: { holderIdentity: redirected.holderIdentity, fencingToken: redirected.fencingToken } }]);
      });

      it.each([
        { named: 'no such row', row: undefined },
        { named: "another process's row", row: sessionRow('job-no-such-session', 'pz') },
      ])('$named: it cannot hold the term, which lives on the lease row alone; the successor takes it a lease duration after that read was answered', ({ row }) => {
        const s = settings();
        const r = answered(s, run(s, [[{ kind: 'sessionRead', read: { row, sentAt: T + 1_020, consistent: true } }, at(1_500)]], goneRedirected(s).state), 1_500);
        expect(r.effects).toEqual([['renewCandidate'], []]); // its candidacy renewed first (noRow)
        expect(r.state.vanished).toEqual({ role: 'successor', termMs: 15_000 });
        // counted from the session read's answer, not from the lease read before it
        expect(r.state.wakeAt).toBe(T + 1_500 + 15_000 + 1);
        const take = run(s, [
          [poll, at(1_500 + 15_001)],
          [{ kind: 'leaseRead', raw: gone }, at(1_500 + 15_001)],
          [{ kind: 'candidatesRead', instances: ['a-1', 'b-1'] }, at(1_500 + 15_010)],
        ], r.state);
        // (vanished already: the poll's read is judged at once, the session not read again)
        expect(take.effects).toEqual([['readLease'], ['readCandidates'], ['acquire']]);
      });

      it("a session row that exists and vouches (an older SDK's, naming no process) may hold the term: the fallback's wait, the session's", () => {
        const s = settings();
        const r = answered(s, run(s, [[{ kind: 'sessionRead', read: { row: sessionRow('job-no-such-session'), sentAt: T + 1_020, consistent: true } }, at(1_030)]], goneRedirected(s).state), 1_030);
        expect(r.state.vanished).toBeUndefined();
        expect(r.state.vacantSince).toBe(T + 1_030);
        expect(pollGone(s, r.state, 1_030 + 44_999)).toEqual([['readLease'], []]);
        expect(pollGone(s, r.state, 1_030 + 45_000)).toEqual([['readLease'], ['acquire']]); // the fallback
      });

      it('a row found gone a term after its renewal: no session read, the fallback', () => {
        const s = settings();
        const late = run(s, [
          [poll, at()],
          [{ kind: 'leaseRead', raw: read(live({ successor: 'b', successorInstance: 'b-1', session: 'x', renewTime: OFFSET + T - 14_000 })) }, at(10)],
          [{ kind: 'sessionRead', read: { row: undefined, sentAt: T + 10 } }, at(10)],
          [poll, at(1_000)],
          [{ kind: 'leaseRead', raw: gone }, at(1_010)],
          [{ kind: 'leaseRead', raw: gone }, at(1_020)],
        ]);
        // no session read: its candidacy renewed (noRow: not named in a term it may take itself)
        expect(late.effects.at(-1)).toEqual(['renewCandidate']);
        expect(late.state.vanished).toBeUndefined();
      });
    });

    it('a copy that finds no row is read again consistently before it counts; a row found clears it', () => {
      const s = settings();
      const named = live({ successor: 'b', successorInstance: 'b-1' });
      const copy = run(s, [
        [poll, at()],
        [{ kind: 'leaseRead', raw: read(named) }, at(10)],
        [poll, at(1_000)],
        [{ kind: 'leaseRead', raw: gone }, at(1_010)],
      ]);
      expect(copy.effects.at(-1)).toEqual(['readLease']);
      expect(copy.state.vanished).toBeUndefined();
      // the consistent read finds the row after all (the copy lagged a re-creation): nothing remembered
      const back = run(s, [[{ kind: 'leaseRead', raw: read(named) }, at(1_020)]], copy.state).state;
      expect(back.vanished).toBeUndefined();
      // remembered once a consistent read finds it gone; cleared by the next read that finds a row
      const r = goneAfter(s, named);
      expect(r.state.vanished).toBeDefined();
      const again = run(s, [
        [poll, at(2_000)],
        [{ kind: 'leaseRead', raw: read(held({ holderIdentity: 'c', holderInstance: 'c-1', fencingToken: 8, revision: 1 })) }, at(2_000)],
      ], r.state).state;
      expect(again.vanished).toBeUndefined();
    });
  });

  it("a wake for the revision already read is nothing new; any other asks for a step now", () => {
    const seen = run(settings(), [
      [poll, at()],
      [{ kind: 'leaseRead', raw: read(held()) }, at(10)],
    ]).state;
    expect(followerStep(settings(), seen, { kind: 'wake', revision: 3 }, at(20))).toEqual({ state: seen, effects: [] });
    expect(followerStep(settings(), seen, { kind: 'wake', revision: 4 }, at(20)).effects).toEqual([{ kind: 'stepNow' }]);
    expect(followerStep(settings(), seen, { kind: 'wake', revision: undefined }, at(20)).state.wakePending).toBe(true);
  });

  it('a wake announcing a revision not read yet (a hand-over sent beside its write): a woken read older than it is read again at once, at most AWAIT_REREADS times', () => {
    const woken: FollowerEvent = { kind: 'poll', pushLive: true };
    const seen = run(settings(), [
      [poll, at()],
      [{ kind: 'leaseRead', raw: read(held()) }, at(10)],
      [{ kind: 'wake', revision: 4 }, at(20)],
    ]).state;
    expect(seen.awaited).toBe(4);
    // the woken read still shows revision 3: read again, strongly consistent, twice
    let r = followerStep(settings(), seen, woken, at(21));
    expect(r.effects).toEqual([{ kind: 'readLease', consistent: true }]);
    for (const t of [30, 40]) {
      r = followerStep(settings(), r.state, { kind: 'leaseRead', raw: read(held()) }, at(t));
      expect(r.effects).toEqual([{ kind: 'readLease', consistent: true }]);
    }
    // then no more: that read is judged as it is, and the announced revision forgotten (a refused write never lands)
    r = followerStep(settings(), r.state, { kind: 'leaseRead', raw: read(held()) }, at(50));
    expect(r.effects).not.toContainEqual({ kind: 'readLease', consistent: true });
    expect(r.state.awaited).toBeUndefined();
    // a read showing the announced revision is judged at once
    const landed = followerStep(settings(), followerStep(settings(), seen, woken, at(21)).state, { kind: 'leaseRead', raw: read(held({ renewTime: T + 5, revision: 4 })) }, at(30));
    expect(landed.state.awaited).toBeUndefined();
    expect(landed.effects).not.toContainEqual({ kind: 'readLease', consistent: true });
    // a wake for an older revision (a re-created row counting from 1 again), none, or before any read announces nothing to wait for
    const before = run(settings(), [
      [poll, at()],
      [{ kind: 'leaseRead', raw: read(held()) }, at(10)],
    ]).state;
    for (const revision of [1, 2, undefined]) expect(followerStep(settings(), before, { kind: 'wake', revision }, at(20)).state.awaited).toBeUndefined();
    expect(followerStep(settings(), FOLLOWING, { kind: 'wake', revision: 1 }, at(20)).state.awaited).toBeUndefined();
  });
});

describe('leadFromRead: an heir handed a term judges it from the hand-over stamp, on its own clock', () => {
  // handed over by the giver 2 s before this read was answered, stamped with DynamoDB's time
  const handed: Lease = { name: 'job', holderIdentity: 'b', holderInstance: 'b-1', fencingToken: 7, leaseDurationSeconds: 15, leaseTransitions: 3, revision: 9, electedBy: 'successor', acquireTime: OFFSET + T - 2_000, renewTime: OFFSET + T - 2_000 } as Lease;
  const judged = (offset: number) => leadFromRead({ lease: handed, identity: 'b', consistent: true, clock: { offset, errorMs: 1 }, stampErrorMs: 500, now: T, leaseDurationMs: 15_000, renewDeadlineMs: 10_000, retryPeriodMs: 2_000 });

  it.each([
    // a clock that agrees with DynamoDB's: led from the stamp (less the errors), not from the read
    { name: 'its clock agrees', offset: OFFSET, want: { kind: 'lead', renewedAt: T - 2_000 - 1 - 500 } },
    // ahead of DynamoDB's: the stamp looks older, the term shorter (here too short: confirmed first)
    { name: 'its clock 9 s ahead', offset: OFFSET + 9_000, want: { kind: 'confirm' } },
    // behind (clockSync 'none' on a wall clock 10 min slow): the stamp looks 10 min ahead of now. Before, it
    // was led from then: renewedAt 10 min in the monotonic future, so no renewal was due and no deadline came
    // for 10 min (seen with real processes: isLeader() true and 0 requests for 35 s while another led)
    { name: 'its clock 10 min behind', offset: OFFSET - 600_000, want: { kind: 'confirm' } },
    { name: 'its clock 3 s behind (the stamp after its now by more than the errors)', offset: OFFSET - 3_000, want: { kind: 'confirm' } },
  ])('$name', ({ offset, want }) => expect(judged(offset)).toEqual(want));
});

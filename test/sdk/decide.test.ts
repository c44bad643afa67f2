/**
 * The elector's step (lib/sdk/step.ts decide) fed events by hand, no I/O: the leader's order of
 * actions — renew, read instead when the clock is in doubt, yield or acknowledge, give up, hand
 * over, step down — pinned where it is decided. Each row feeds events in order and lists the
 * effects the step asks for after each.
 */
import { describe, expect, it } from 'vitest';
import type { Lease } from '../../lib/schemas/lease.js';
import { at, OFFSET, read, stepSettings, T } from './step-fixtures.js';
import { decide, decideLeader, nextStepDelay, START, type Effect, type Event, type Lead, type Moment, type Settings, type State } from '../../lib/sdk/step.js';
import { FencingError, LeaseLostError } from '../../lib/sdk/fencing.js';

const settings = (o: Partial<Settings> = {}): Settings => stepSettings('a', o);
const mine = (o: Partial<Lease> = {}): Lease =>
  ({ name: 'job', revision: 3, holderIdentity: 'a', holderInstance: 'a-1', leaseDurationSeconds: 15, acquireTime: 1, renewTime: 2, leaseTransitions: 4, fencingToken: 7, termToken: 7, ...o }) as Lease;
const heirNamed = { successor: 'b', successorInstance: 'b-1' } as const;
/** Leading term 7 (this start-up's first), last renewed at T. */
const leading = (lease: Lease = mine(), o: Partial<Lead> = {}): State => ({
  ...START,
  lastLeader: 'a',
  ledToken: 7,
  terms: 1,
  lead: { term: { holderIdentity: 'a', fencingToken: 7 }, renewedAt: T, renewals: 3, retrying: false, triedAt: T, contended: 0, lease, session: undefined, since: T - 60_000, no: 1, ...o },
});

/** Feeds `events` in order (an `answer` takes the `rest` of the last effect that has one); returns each step's effects and the last state. */
function run(s: Settings, state: State, events: [Event | Omit<Extract<Event, { kind: 'answer' }>, 'rest'>, Moment][]): { effects: Effect[][]; kinds: string[][]; state: State } {
  const effects: Effect[][] = [];
  let rest: Extract<Event, { kind: 'answer' }>['rest'] = [];
  for (const [e, m] of events) {
    const out = decide(s, state, e.kind === 'answer' ? { ...e, rest } : (e as Event), m);
    state = out.state;
    effects.push(out.effects);
    const waiting = out.effects.findLast((f) => 'rest' in f);
    if (waiting && 'rest' in waiting) rest = waiting.rest;
  }
  return { effects, kinds: effects.map((fx) => fx.map((f) => f.kind)), state };
}
const answer = (o: { lease?: Lease; row?: unknown; ok?: boolean; failed?: boolean; contended?: boolean; refused?: boolean } = {}) => ({ kind: 'answer' as const, ...o }) as Omit<Extract<Event, { kind: 'answer' }>, 'rest'>;
const poll: Event = { kind: 'poll', pushLive: false };

describe("the elector's step: the leader's order of actions", () => {
  /** A term the coordinator gave, with an election open on the row: read, confirmed, started; its acknowledgement sent. */
  const elected = mine({ renewTime: 1, election: { id: 'e1', startedAt: 1 } as Lease['election'] });
  const startedWithElection: Parameters<typeof run>[2] = [
    [poll, at()],
    [{ kind: 'leaseRead', raw: read(elected) }, at(10)],
    [{ kind: 'confirmed', lease: { ...elected, revision: 4, renewTime: 3 } }, at(30)],
    [answer(), at(30)],
  ];

  it('a term the coordinator gave it is confirmed, then led: its deadline armed and its work started, an open election acknowledged, then the follower told', () => {
    const r = run(settings(), START, [...startedWithElection, [answer(), at(50)]]);
    expect(r.kinds).toEqual([['readLease'], ['newLeader', 'confirm'], ['armDeadline', 'started'], ['renewCandidacy'], []]);
    expect(r.effects[2]![0]).toEqual({ kind: 'armDeadline', at: T + 10 + 10_000, no: 1 }); // from the confirmation's send time
    expect(r.effects[3]![0]).toMatchObject({ kind: 'renewCandidacy', withinMs: 4_990 }); // the acknowledgement is waited for half the 9,980 ms left
    expect(r.state.lead).toMatchObject({ term: { holderIdentity: 'a', fencingToken: 7 }, renewedAt: T + 10, no: 1 });
    expect(r.state.ackedElection).toBe('e1@1');
    expect(r.state.ledToken).toBe(7);
    expect(r.state.pending).toBeUndefined();
  });

  it("a term led is recorded as led when it starts, not at the end of its first chain; an acknowledgement that failed is not taken as made (seed 8702338)", () => {
    const r = run(settings(), START, startedWithElection);
    expect(r.kinds.slice(2)).toEqual([['armDeadline', 'started'], ['renewCandidacy']]);
    // before the fix: -1 until the acknowledgement was answered (and never, when the shell dropped the chain on its fault)
    expect(r.state.ledToken).toBe(7);
    const failed = run(settings(), START, [...startedWithElection, [answer({ failed: true }), at(50)]]);
    expect(failed.state.lead).toMatchObject({ term: { fencingToken: 7 } });
    expect(failed.state.ledToken).toBe(7);
    expect(failed.state.pending).toBeUndefined(); // the chain went on to its end
    // before the fix: taken as acknowledged, so no later renewal answered the election
    expect(failed.state.ackedElection).toBeUndefined();
    const renewed = run(settings(), START, [...startedWithElection, [answer({ failed: true }), at(50)], [poll, at(5_000)], [answer({ lease: { ...elected, revision: 5, renewTime: 4 } }), at(5_010)]]);
    expect(renewed.kinds.at(-1)).toContain('renewCandidacy'); // acknowledged again
  });

  it('a term won whose renew deadline has already passed (a frozen process) is given back, never led', () => {
    const r = run(settings(), START, [
      [poll, at()],
      [{ kind: 'leaseRead', raw: read(mine({ renewTime: 1 })) }, at(10)],
      [{ kind: 'confirmed', lease: mine({ revision: 4, renewTime: 3 }) }, at(10_010)],
      [answer(), at(10_050)],
    ]);
    expect(r.kinds).toEqual([['readLease'], ['newLeader', 'confirm'], ['releaseTerm'], []]);
    expect(r.state.lead).toBeUndefined();
  });

  it('its step renews; the answer extends the term from the send time and re-arms the deadline', () => {
    const r = run(settings(), leading(), [
      [poll, at(5_900)],
      [answer({ lease: mine({ revision: 4, renewTime: 3 }) }), at(5_930)],
    ]);
    expect(r.kinds).toEqual([['renew'], ['armDeadline']]);
    expect(r.effects[1]).toEqual([{ kind: 'armDeadline', at: T + 5_900 + 10_000, no: 1 }]);
    expect(r.state.lead).toMatchObject({ renewedAt: T + 5_900, renewals: 4, retrying: false });
  });

  it('the answer’s row is kept (a successor named), and the session it names', () => {
    const answered = mine({ revision: 4, renewTime: 3, session: 's2', successor: 'b' });
    const r = run(settings(), leading(), [[poll, at(5_900)], [answer({ lease: answered }), at(5_930)]]);
    expect(r.state.lead).toMatchObject({ lease: answered, session: 's2' });
  });

  it('its session renewed by a write sent later than the last renewal: the term extended from that send, the deadline re-armed, the row as it was', () => {
    const r = run(settings(), leading(mine({ session: 's1' }), { session: 's1' }), [[{ kind: 'sessionRenewed', name: 's1', sentAt: T + 3_000, ended: {} }, at(3_050)]]);
    expect(r.effects[0]).toEqual([{ kind: 'armDeadline', at: T + 13_000, no: 1 }]);
    expect(r.state.lead).toMatchObject({ renewedAt: T + 3_000, renewals: 4, lease: mine({ session: 's1' }) });
  });

  it('woken, it reads its lease: a term rewritten under it (the token moved, its copy kept) is stopped, then ended on the row, then looked at again, in that order', () => {
    const r = run(settings(), { ...leading(), wakePending: true }, [
      [{ kind: 'poll', pushLive: true }, at(100)],
      [answer({ lease: mine({ fencingToken: 8, termToken: 7, revision: 9 }) }), at(120)],
    ]);
    expect(r.effects[0]).toMatchObject([{ kind: 'look', consistent: true, withinMs: 4_950 }]); // half the 9,900 ms left before the renew deadline
    expect(r.kinds[1]).toEqual(['stop', 'endTerm', 'stepNow']);
    expect(r.effects[1]![0]).toEqual({ kind: 'stop', reason: 'deposed', token: 7 });
    expect(r.state.endedToken).toBe(7);
  });

  it('asked inside its renew deadline it leads on; at it, it stops; a planted decision is the one obeyed', () => {
    expect(run(settings(), leading(), [[{ kind: 'asked' }, at(9_999)]]).state.lead?.no).toBe(1);
    expect(run(settings(), leading(), [[{ kind: 'asked' }, at(10_000)]]).kinds).toEqual([['stop']]);
    const planted = settings({ decideLeader: (s, t, o) => (o.kind === 'deadline' ? { kind: 'none' } : decideLeader(s, t, o)) });
    expect(run(planted, leading(), [[{ kind: 'deadline', no: 1 }, at(10_000)]]).state.lead?.no).toBe(1);
  });

  it("its loop stalled past its renew deadline (a busy machine), the renewal's turn seen before the deadline's timer: it stops ('renewDeadline'), never renews; the read sent instead in doubt of its clock, or a handed term's first step, the same", () => {
    // the clock moved past renewedAt + renewDeadline, the deadline's timer not fired yet: the step's poll comes first
    const late = run(settings(), leading(), [[poll, at(12_500)]]);
    // judged a retry period or more past it: its timers were held, and onError is told how late (LeaderStalledError)
    expect(late.effects[0]).toEqual([
      { kind: 'stalled', lateMs: 2_500 },
      { kind: 'stop', reason: 'renewDeadline', token: 7 },
    ]);
    expect(run(settings(), leading(), [[poll, at(11_999)]]).kinds).toEqual([['stop']]); // late by less than a retry period (2 s): a busy loop, nothing told
    expect(late.state.lead).toBeUndefined();
    expect(late.state.standAgain).toBe(7); // lost, as at the timer: it stands again once the lease is in a later term
    expect(run(settings(), leading(), [[poll, at(10_000)]]).kinds).toEqual([['stop']]); // at the deadline itself, as 'asked'
    expect(run(settings(), leading(), [[poll, at(9_999)]]).kinds).toEqual([['renew']]); // inside it: renewed as ever
    // the read sent instead of a renewal while the clock was in doubt, answered past the deadline, its Date settling the doubt
    const doubt = { clock: { ok: false, reason: 'uncertain', errorMs: 502 } as Moment['clock'] };
    const resampled = run(settings(), leading(), [
      [poll, at(9_000, doubt)],
      [answer({ lease: mine() }), at(10_200)],
    ]);
    expect(resampled.effects[1]).toEqual([{ kind: 'stop', reason: 'renewDeadline', token: 7 }]);
    // judged as a 'step' observation: a planted decision is the one obeyed (the simulator's leaderIgnoresRenewDeadline, the model's)
    const planted = settings({ decideLeader: (s, t, o) => (o.kind === 'step' ? { kind: 'none' } : decideLeader(s, t, o)) });
    expect(run(planted, leading(), [[poll, at(12_500)]]).kinds).toEqual([['renew']]);
  });

  it('a renewal that fails (a fault) leaves the term retrying until its deadline; the deadline stops it; an earlier term’s timer does nothing', () => {
    const r = run(settings(), leading(), [
      [poll, at(5_900)],
      [answer({ failed: true }), at(5_930)],
      [{ kind: 'deadline', no: 0 }, at(9_000)],
      [{ kind: 'deadline', no: 1 }, at(10_000)],
    ]);
    expect(r.kinds).toEqual([['renew'], [], [], ['stop']]);
    expect(r.effects[3]).toEqual([{ kind: 'stop', reason: 'renewDeadline', token: 7 }]);
    expect(r.state.lead).toBeUndefined();
  });

  it('a term stopped at its renew deadline (or at a clock jump) is never led again: a later read of the row still in it takes it again as a new term, its token raised on the revision read; the row moved on meanwhile, it is read again', () => {
    for (const stopped of [
      run(settings(), leading(), [[{ kind: 'deadline', no: 1 }, at(10_000)]]),
      run(settings(), leading(), [[{ kind: 'asked' }, at(10_000)]]),
      run(settings(), leading(), [[{ kind: 'clockJump', jumpMs: 3_000 }, at(100)]]),
    ]) {
      expect(stopped.state.lead).toBeUndefined();
      const row = mine({ preferredHolder: 'b' } as Partial<Lease>);
      const later = run(settings(), stopped.state, [
        [poll, at(12_000)],
        [{ kind: 'leaseRead', raw: read(row) }, at(12_010)],
      ]);
      expect(later.kinds).toEqual([['readLease'], ['takeAgain']]);
      expect(later.effects[1]).toEqual([{ kind: 'takeAgain', read: read(row) }]);
      // taken: led as term 8, and acted on as any confirmed term (the operator's preferredHolder is yielded to)
      const won = { ...row, fencingToken: 8, termToken: 8, revision: 4, acquireTime: 3, renewTime: 3 };
      const taken = run(settings(), later.state, [
        [{ kind: 'acquired', got: { written: won } }, at(12_030)],
        [answer(), at(12_030)],
      ]);
      expect(taken.kinds[0]).toEqual(['armDeadline', 'started']);
      expect(taken.effects[0]![0]).toEqual({ kind: 'armDeadline', at: T + 12_010 + 10_000, no: 2 }); // from the write's send time
      expect(taken.effects[0]![1]).toMatchObject({ kind: 'started', term: { holderIdentity: 'a', fencingToken: 8 } });
      expect(taken.effects[1]![0]).toEqual({ kind: 'stop', reason: 'preempted', token: 8 });
      // refused (the row moved on): not led, and the next poll reads the row itself
      const refused = run(settings(), later.state, [[{ kind: 'acquired', got: { refusedBy: 'b' } }, at(12_030)]]);
      expect(refused.kinds[0]).not.toContain('lead');
      expect(refused.state.lead).toBeUndefined();
      expect(refused.state.leaseReadAt).toBeUndefined();
    }
    // a term the coordinator gives it (a token it never led) is confirmed by renewing, as before
    const given = run(settings(), START, [
      [poll, at(14_000)],
      [{ kind: 'leaseRead', raw: read(mine({ fencingToken: 8, termToken: 8, revision: 5, renewTime: 3 })) }, at(14_010)],
    ]);
    expect(given.effects[1]).toContainEqual({ kind: 'confirm', term: { holderIdentity: 'a', fencingToken: 8 } });
  });

  it("a term won by a write whose landed row shows a shorter lease duration than it wrote (5 s of 15: the coordinator's election of it led as its own take, 5b64190; a foreign writer) is led only until the renew deadline scaled to that row (3,333 ms after its send), never the 10 s its own duration allows", () => {
    const stopped = run(settings(), leading(), [[{ kind: 'deadline', no: 1 }, at(10_000)]]);
    const row = mine();
    const later = run(settings(), stopped.state, [
      [poll, at(12_000)],
      [{ kind: 'leaseRead', raw: read(row) }, at(12_010)],
    ]);
    expect(later.kinds).toEqual([['readLease'], ['takeAgain']]);
    // its own write set 15 s; the row that came back says 5 s: observers count it out 5 s after they see it
    const short = { ...row, fencingToken: 8, termToken: 8, revision: 4, acquireTime: 3, renewTime: 3, leaseDurationSeconds: 5 };
    const taken = run(settings(), later.state, [[{ kind: 'acquired', got: { written: short } }, at(12_030)]]);
    expect(taken.effects[0]![0]).toEqual({ kind: 'armDeadline', at: T + 12_010 + 3_333, no: 2 }); // before: T + 12_010 + 10_000
    expect(taken.state.lead).toMatchObject({ renewedAt: T + 12_010 - 6_667 });
    // isLeader() past it: stopped, though its own renew deadline is far off
    const asked = run(settings(), taken.state, [[{ kind: 'asked' }, at(12_010 + 3_333)]]);
    expect(asked.state.lead).toBeUndefined();
    expect(asked.effects[0]).toContainEqual({ kind: 'stop', reason: 'renewDeadline', token: 8 });
    // won too late for even that (the answer came 3,333 ms after the send): given back, never led
    const late = run(settings(), later.state, [[{ kind: 'acquired', got: { written: short } }, at(12_010 + 3_333)], [answer(), at(12_010 + 3_400)]]);
    expect(late.kinds[0]).toEqual(['releaseTerm']);
    expect(late.state.lead).toBeUndefined();
  });

  it('a renewal waits for its answer half the time left before the renew deadline; abandoned unanswered, it is tried again at once, a fast failure a retry period after it went out', () => {
    const r = run(settings(), leading(), [
      [poll, at(5_900)],
      [answer({ failed: true }), at(5_900 + 2_050)], // the bound passed: abandoned (a black-holed connection)
    ]);
    expect(r.effects[0]).toMatchObject([{ kind: 'renew', withinMs: 2_050 }]); // (10,000 - 5,900) / 2
    expect(nextStepDelay(settings(), r.state, at(5_900 + 2_050), () => 0)).toBe(0);
    // the second try: 2,050 ms left, so it waits the least bound; a failure answered at once waits out the retry period from its send
    const again = run(settings(), r.state, [
      [poll, at(7_950)],
      [answer({ failed: true }), at(7_960)],
    ]);
    expect(again.effects[0]).toMatchObject([{ kind: 'renew', withinMs: 1_025 }]);
    expect(nextStepDelay(settings(), again.state, at(7_960), () => 0)).toBe(1_990);
    expect(again.state.lead).toMatchObject({ retrying: true, triedAt: T + 7_950 });
  });

  it('a renewal a transaction on the lease row refused is tried again a moment after it went out, half again as long each time in a row; a renewal that lands starts the count anew', () => {
    const r = run(settings(), leading(), [
      [poll, at(5_900)],
      [answer({ failed: true, contended: true }), at(5_905)],
    ]);
    expect(r.state.lead).toMatchObject({ retrying: true, triedAt: T + 5_900, contended: 1 });
    expect(nextStepDelay(settings(), r.state, at(5_905), () => 0.5)).toBe(15); // 20 ms after the try went out
    const twice = run(settings(), r.state, [
      [poll, at(5_920)],
      [answer({ failed: true, contended: true }), at(5_925)],
    ]);
    expect(twice.state.lead?.contended).toBe(2);
    expect(nextStepDelay(settings(), twice.state, at(5_925), () => 0.5)).toBe(25); // 30 ms after it went out
    // another fault in between: a retry period, as before
    const other = run(settings(), twice.state, [
      [poll, at(5_950)],
      [answer({ failed: true }), at(5_960)],
    ]);
    expect(other.state.lead?.contended).toBe(0);
    expect(nextStepDelay(settings(), other.state, at(5_960), () => 0.5)).toBe(1_990);
    const landed = run(settings(), twice.state, [
      [poll, at(5_950)],
      [answer({ lease: mine({ revision: 4, renewTime: 3 }) }), at(5_960)],
    ]);
    expect(landed.state.lead).toMatchObject({ retrying: false, contended: 0 });
  });

  it('with DynamoDB’s time in doubt it does not stamp a renewal: it reads the lease instead (the next response’s Date), counted as a prevention', () => {
    const r = run(settings(), leading(), [[poll, at(5_900, { clock: { ok: false, reason: 'noSamples' } as Moment['clock'] })]]);
    expect(r.effects[0]).toEqual([{ kind: 'look', consistent: true, reportFault: false, rest: [{ k: 'resampled', no: 1 }], withinMs: 2_050 }]); // abandoned in time for a renewal before the deadline
    expect(r.state.preventions).toBe(1);
    expect(r.state.lead?.retrying).toBe(true);
  });

  it('the read sent instead renews at once when its Date header settled the doubt, not a retry period on; still in doubt, it renews nothing', () => {
    const doubt = { clock: { ok: false, reason: 'uncertain', errorMs: 502 } as Moment['clock'] };
    const settled = run(settings(), leading(), [
      [poll, at(9_000, doubt)],
      [answer({ lease: mine() }), at(9_010)],
    ]);
    // before: nothing until a retry period after the read went out (2 s), past the renew deadline 1 s on
    expect(settled.effects[1]).toMatchObject([{ kind: 'renew', term: { holderIdentity: 'a', fencingToken: 7 }, rest: [{ k: 'renewed', no: 1, sentAt: T + 9_010 }] }]);
    const still = run(settings(), leading(), [
      [poll, at(9_000, doubt)],
      [answer({ lease: mine() }), at(9_010, doubt)],
    ]);
    expect(still.kinds[1]).toEqual([]);
    const failed = run(settings(), leading(), [
      [poll, at(9_000, doubt)],
      [answer({ failed: true }), at(9_010)],
    ]);
    expect(failed.kinds[1]).toEqual(['renew']); // a failed read's header may settle it too (an error status has one)
    const stopped = run(settings(), leading(), [
      [poll, at(9_000, doubt)],
      [{ kind: 'deadline', no: 1 }, at(10_000)],
      [answer({ lease: mine() }), at(10_010)],
    ]);
    expect(stopped.kinds[2]).toEqual([]); // a term stopped meanwhile renews nothing
  });

  it('in doubt of its clock, it reads again within half the time left before its renew deadline (at least 20 ms on), not a retry period on', () => {
    const doubt = { clock: { ok: false, reason: 'uncertain', errorMs: 502 } as Moment['clock'] };
    const r = run(settings(), leading(), [
      [poll, at(9_400, doubt)],
      [answer({ lease: mine() }), at(9_410, doubt)],
    ]);
    expect(nextStepDelay(settings(), r.state, at(9_410, doubt), () => 0.5)).toBe(295); // (10,000 - 9,410) / 2, under the clock's resample pace (500 ms)
    expect(nextStepDelay(settings(), r.state, at(9_990, doubt), () => 0.5)).toBe(20);
    expect(nextStepDelay(settings(), r.state, at(5_000, doubt), () => 0.5)).toBe(500); // far from its deadline: the resample pace, as before
    expect(nextStepDelay(settings(), r.state, at(9_410), () => 0.5)).toBe(1_990); // vouched for again: a retry period after the try, as before
    // held on its live session, its session renews the term: nothing changes
    const onSession = leading(mine({ session: 's1' }), { session: 's1', retrying: true, triedAt: T + 9_400 });
    expect(nextStepDelay(settings(), onSession, at(9_410, { ...doubt, session: 's1' }), () => 0.5)).toBe(500);
  });

  it('held on its live session it renews nothing itself: it reads its lease (eventually consistent, again consistently when the copy is older than its own)', () => {
    const r = run(settings(), leading(mine({ session: 's1' }), { session: 's1' }), [
      [poll, at(5_900, { session: 's1' })],
      [answer({ lease: mine({ session: 's1', revision: 2 }) }), at(5_920, { session: 's1' })],
      [answer({ lease: mine({ session: 's1' }) }), at(5_940, { session: 's1' })],
    ]);
    expect(r.effects[0]).toMatchObject([{ kind: 'look', consistent: false }]);
    expect(r.effects[1]).toMatchObject([{ kind: 'look', consistent: true }]);
    expect(r.kinds[2]).toEqual([]);
    expect(r.state.lead?.no).toBe(1);
  });

  it('the coordinator prefers another holder: it stops (preempted), hands the term to the heir (its row read, the clock vouched for), steps at once and renews its candidacy', () => {
    const r = run(settings(), leading(), [
      [poll, at(5_900)],
      [answer({ lease: mine({ revision: 4, renewTime: 3, preferredHolder: 'b', ...heirNamed }) }), at(5_930)],
      [answer({ row: { identity: 'b-1', platform: undefined, address: 'b:1' } }), at(5_950)],
      [answer({ ok: true }), at(5_980)],
      [answer(), at(6_000)],
    ]);
    expect(r.kinds).toEqual([['renew'], ['armDeadline', 'stop', 'readHeir'], ['handOver'], ['stepNow', 'renewCandidacy'], []]);
    expect(r.effects[1]![1]).toEqual({ kind: 'stop', reason: 'preempted', token: 7 });
    expect(r.effects[2]![0]).toMatchObject({ kind: 'handOver', term: { holderIdentity: 'a', fencingToken: 7 }, heir: { name: 'b', instance: 'b-1', address: 'b:1' }, leaseTransitions: 4, second: { name: undefined, instance: undefined } });
    expect(r.state.lead).toBeUndefined();
  });

  it('a hand-over refused (or an heir row of another process) is a release instead', () => {
    const preferred = mine({ revision: 4, renewTime: 3, preferredHolder: 'b', ...heirNamed });
    const refused = run(settings(), leading(), [
      [poll, at(5_900)],
      [answer({ lease: preferred }), at(5_930)],
      [answer({ row: { identity: 'b-1' } }), at(5_950)],
      [answer({ ok: false }), at(5_980)],
    ]);
    expect(refused.kinds.slice(2)).toEqual([['handOver'], ['releaseTerm']]);
    const otherProcess = run(settings(), leading(), [
      [poll, at(5_900)],
      [answer({ lease: preferred }), at(5_930)],
      [answer({ row: { identity: 'b-2' } }), at(5_950)],
    ]);
    expect(otherProcess.kinds[2]).toEqual(['releaseTerm']);
  });

  it('the work failed: reported and given up; a poll beside the give-up reads the row still in its term and ends it there, never confirming it again (the model check’s trace)', () => {
    const given = run(settings(), leading(mine(heirNamed)), [[{ kind: 'workFailed', no: 1, token: 7, cause: new Error('boom'), random: 0 }, at(1_000)]]);
    expect(given.kinds).toEqual([['workFailure', 'stop', 'readHeir']]);
    expect(given.effects[0]![0]).toMatchObject({ kind: 'workFailure', token: 7, outcome: 'givenUp' });
    const beside = run(settings(), given.state, [
      [poll, at(1_010)],
      [{ kind: 'leaseRead', raw: read(mine(heirNamed)) }, at(1_020)],
    ]);
    expect(beside.kinds).toEqual([['readLease'], ['endChanged']]);
    expect(beside.state.lead).toBeUndefined();
    expect(beside.state.leaseReadAt).toBeUndefined(); // the next poll reads the row it ended, not only a session
    const kept = run(settings({ onWorkFailure: 'keep' }), leading(), [[{ kind: 'workFailed', no: 1, token: 7, cause: 'x', random: 0 }, at(1_000)]]);
    expect(kept.effects[0]).toMatchObject([{ kind: 'workFailure', outcome: 'kept' }]);
    expect(kept.state.lead?.no).toBe(1);
  });

  it.each([
    ['a FencingError of its own term (the fence found the lease moved on)', new FencingError('job', 7)],
    ['a FencingError of its own term (a newer term wrote the fenced item)', new FencingError('job', 7, 'the item was written by a newer term (fencing token 9)')],
    ['a LeaseLostError of its own term', new LeaseLostError('job', 7, 'deposed')],
  ])("the work rethrew %s (the shell tells it `fenced`): the term is over, deposed as the next read would find; no LeaderWorkError, no backoff, no hand-over or release, whatever onLeaderWorkFailure says", (_, cause) => {
    for (const onWorkFailure of ['giveUp', 'keep'] as const) {
      const out = run(settings({ onWorkFailure }), leading(mine(heirNamed)), [[{ kind: 'workFailed', no: 1, token: 7, cause, fenced: true, random: 0 }, at(1_000)]]);
      // before the fix: ['workFailure' (givenUp), 'stop' (workFailed), 'readHeir' → a hand-over or release of a term it no longer holds]
      expect(out.effects).toEqual([[{ kind: 'stop', reason: 'deposed', token: 7 }, { kind: 'stepNow' }]]);
      expect(out.state.lead).toBeUndefined(); // it acts as leader no more: the shell aborts the work's signal on 'stop'
      expect(out.state.heldOff).toBeUndefined();
      expect(out.state.standAgain).toBe(7); // it stands again once the lease is in a later term, as one deposed by a read does
    }
    // a term already over: nothing more
    expect(run(settings(), START, [[{ kind: 'workFailed', no: 1, token: 7, cause, fenced: true, random: 0 }, at(1_000)]]).effects).toEqual([[]]);
  });

  // a review (2026-12-07, thirteenth): an item carrying another lease's token (or an operator's) ended each
  // new term at its first write, the lease taken again a retry period later, and nothing told onError
  it("the work rethrew a fencedItemWrite refused by the item's own fence (`itemFenced`) while the lease, as last read, was still in its term: deposed all the same, and told (workFailure, `itemFence`), its retake held off as a failed start's", () => {
    const cause = new FencingError('job', 7, 'the item was written with fencing token 900, a higher fencing token than this term\'s');
    const failed = { kind: 'workFailed', no: 1, token: 7, cause, fenced: true, itemFenced: true, random: 0 } as const;
    // its work failed at its start (within a lease duration): a retry period, doubling while it keeps failing so
    for (const [since, held] of [[T, { until: T + 1_000 + 2_000, failures: 1 }], [T - 60_000, { until: T + 1_000 + 2_000, failures: 0 }]] as const) {
      const out = run(settings(), leading(mine(heirNamed), { since }), [[failed, at(1_000)]]);
      // before the fix: [stop, stepNow], nothing told, no backoff
      expect(out.effects).toEqual([[{ kind: 'workFailure', token: 7, outcome: 'ended', cause, itemFence: true }, { kind: 'stop', reason: 'deposed', token: 7 }, { kind: 'stepNow' }]]);
      expect(out.state.lead).toBeUndefined();
      expect(out.state.heldOff).toEqual(held);
      expect(out.state.standAgain).toBe(7);
    }
    const again = run(settings(), { ...leading(mine(heirNamed), { since: T }), heldOff: { until: T - 1, failures: 1 } }, [[failed, at(1_000)]]);
    expect(again.state.heldOff).toEqual({ until: T + 1_000 + 4_000, failures: 2 });
    // the lease as last read in a later term (or another holder's): the refusal is that term's, nothing more told
    for (const lease of [mine({ fencingToken: 9, termToken: 9 }), mine({ holderIdentity: 'b' })]) {
      const out = run(settings(), leading(lease), [[failed, at(1_000)]]);
      expect(out.effects).toEqual([[{ kind: 'stop', reason: 'deposed', token: 7 }, { kind: 'stepNow' }]]);
      expect(out.state.heldOff).toBeUndefined();
    }
  });

  // chaos (2026-12-06, seed 7): a process frozen between the decision to lead and the shell's start ran
  // onStartedLeading for its term after a newer term had begun (token 1796540038545000 after ...42286000)
  it("a term whose work the shell could not start before its renew deadline (startedLate): given back as a term won too late, never led: no stop (no onStoppedLeading for work never started), a release conditioned on it, standing again", () => {
    const stopped = run(settings(), leading(), [[{ kind: 'clockJump', jumpMs: 3_000 }, at(100)]]);
    const row = mine({ preferredHolder: 'b' } as Partial<Lease>);
    const later = run(settings(), stopped.state, [
      [poll, at(12_000)],
      [{ kind: 'leaseRead', raw: read(row) }, at(12_010)],
    ]);
    const won = { ...row, fencingToken: 8, termToken: 8, revision: 4, acquireTime: 3, renewTime: 3 };
    const taken = run(settings(), later.state, [[{ kind: 'acquired', got: { written: won } }, at(12_030)]]);
    const started = taken.effects[0]!.find((f) => f.kind === 'started');
    // the deadline the shell judges it by: the write's send time plus the renew deadline, as armDeadline's
    expect(started).toMatchObject({ kind: 'started', no: 2, deadline: T + 12_010 + 10_000 });
    const late = run(settings(), taken.state, [[{ kind: 'startedLate', no: 2 }, at(12_010 + 16_000)]]);
    expect(late.effects).toEqual([[{ kind: 'stalled', lateMs: 6_000 }, { kind: 'releaseTerm', term: expect.objectContaining({ fencingToken: 8 }) as unknown, rest: [{ k: 'led', ok: false }] }]]);
    expect(late.state.lead).toBeUndefined();
    expect(late.state.standAgain).toBe(8);
    // another term's, or none led: nothing
    expect(run(settings(), taken.state, [[{ kind: 'startedLate', no: 1 }, at(12_010 + 16_000)]]).effects).toEqual([[]]);
  });

  it('the work failed otherwise (not `fenced`): a failure of the work as before, the term given up', () => {
    for (const fenced of [false, undefined]) {
      const out = run(settings(), leading(mine(heirNamed)), [[{ kind: 'workFailed', no: 1, token: 7, cause: new FencingError('job', 6), ...(fenced === undefined ? {} : { fenced }), random: 0 }, at(1_000)]]);
      expect(out.kinds).toEqual([['workFailure', 'stop', 'readHeir']]);
      expect(out.effects[0]![0]).toMatchObject({ kind: 'workFailure', outcome: 'givenUp' });
    }
  });

  it('the work failed soon after its start: elected again, it confirms only once its backoff is over (a retry period, doubling while the work keeps failing), then at once', () => {
    const elected = mine({ fencingToken: 8, termToken: 8, renewTime: 1, revision: 5, election: { id: 'e2' } as Lease['election'] });
    const given = run(settings(), leading(mine(), { since: T }), [
      [{ kind: 'workFailed', no: 1, token: 7, cause: 'boom', random: 0 }, at(100)],
      [answer(), at(110)],
      [poll, at(120)],
      [{ kind: 'leaseRead', raw: read(elected) }, at(130)],
    ]);
    expect(given.kinds[0]).toEqual(['workFailure', 'stop', 'releaseTerm']);
    expect(given.state.heldOff).toEqual({ until: T + 100 + 2_000, failures: 1 }); // a retry period
    expect(given.kinds[3]).not.toContain('confirm'); // before the fix: confirmed at once, and the work started again
    expect(given.state.wakeAt).toBe(T + 100 + 2_000); // it reads again as the backoff ends
    const later = run(settings(), given.state, [
      [poll, at(2_100)],
      [{ kind: 'leaseRead', raw: read(elected) }, at(2_110)],
    ]);
    expect(later.kinds[1]).toContain('confirm');
    // failed again within a lease duration of its start: twice as long
    const second = (since: number) => ({ ...leading(mine({ fencingToken: 8, termToken: 8 }), { since, term: { holderIdentity: 'a', fencingToken: 8 }, no: 2 }), heldOff: given.state.heldOff });
    const fail = (st: State, ms: number) => run(settings(), st, [[{ kind: 'workFailed', no: 2, token: 8, cause: 'boom', random: 0 }, at(ms)]]).state.heldOff;
    expect(fail(second(T + 2_110), 2_200)).toEqual({ until: T + 2_200 + 4_000, failures: 2 });
    // after a term that lasted a lease duration: a retry period again
    expect(fail(second(T + 2_110), 2_110 + 15_000)).toEqual({ until: T + 17_110 + 2_000, failures: 1 });
  });

  it('DynamoDB answers again (endpointRecovered): a follower napping out an error backoff steps at once; one not backing off, or a leader, is left as it was', () => {
    expect(run(settings(), START, [[{ kind: 'endpointRecovered', failures: 3 }, at(100)]]).effects).toEqual([[{ kind: 'stepNow' }]]);
    const resting = run(settings(), START, [[{ kind: 'endpointRecovered', failures: 0 }, at(100)]]);
    expect(resting.effects).toEqual([[]]);
    expect(resting.state).toBe(START);
    expect(run(settings(), leading(), [[{ kind: 'endpointRecovered', failures: 2 }, at(100)]]).effects).toEqual([[]]);
  });

  it('the clock jumped: it stops at once, the prevention counted and reported', () => {
    const r = run(settings(), leading(), [[{ kind: 'clockJump', jumpMs: 3_000 }, at(100)]]);
    expect(r.kinds).toEqual([['stop', 'clockSkew']]);
    expect(r.state.preventions).toBe(1);
    expect(r.state.lead).toBeUndefined();
  });

  it("two failed starts in a row: the stand-again left from the first goes, and it stands down until its candidacy renews its row on its own: neither its row renewed at the next term's read nor an election answered meanwhile (a review, 2026-12-07, ninth)", () => {
    const failed = (no: number, token: number): Event => ({ kind: 'workFailed', no, token, cause: 'boom', random: 0 });
    const first = run(settings(), leading(mine(), { since: T }), [[failed(1, 7), at(100)]]).state;
    expect(first.standAgain).toBe(7);
    // elected back (no term of another's between: the stand-again is left), it leads term 8 and fails at its start again
    const again = leading(mine({ fencingToken: 8, termToken: 8 }), { since: T + 2_110, term: { holderIdentity: 'a', fencingToken: 8 }, no: 2 });
    const second = run(settings(), { ...again, heldOff: first.heldOff, standAgain: first.standAgain }, [[failed(2, 8), at(2_200)]]).state;
    expect(second.heldOff?.failures).toBe(2);
    expect(second.standAgain).toBeUndefined(); // before the fix: 7
    expect(second.standsDown).toBe(true);
    // the healthy worker's term, then an election on it: nothing sent to the candidacy
    const stamp = OFFSET + T + 19_990;
    const theirs = mine({ revision: 6, holderIdentity: 'b', holderInstance: 'b-1', fencingToken: 9, termToken: 9, acquireTime: stamp, renewTime: stamp, lastHolderIdentity: 'a' });
    const asked = { ...theirs, revision: 7, election: { id: 'job#7', startedAt: stamp + 2_000, deadline: stamp + 17_000, strategy: 'OldestEmulationVersion', holder: 'b' } } as Lease;
    const down = run(settings(), second, [
      [poll, at(20_000)],
      [{ kind: 'leaseRead', raw: read(theirs) }, at(20_010)],
      [poll, at(22_000)],
      [{ kind: 'leaseRead', raw: read(asked) }, at(22_010)],
    ]);
    expect(down.kinds[1]).not.toContain('renewCandidate'); // before the fix: renewed, and the coordinator preempted for it at once
    expect(down.kinds[3]).not.toContain('renewCandidate');
    expect(down.state.standsDown).toBe(true);
    // its candidacy's own renewal stands it again: the election is answered
    const up = run(settings(), down.state, [
      [{ kind: 'candidateRenewed', onTurn: true }, at(60_000)],
      [poll, at(60_100)],
      [{ kind: 'leaseRead', raw: read(asked) }, at(60_110)],
    ]);
    expect(up.effects[0]).toEqual([]);
    expect(up.state.standsDown).toBe(false);
    expect(up.kinds[2]).toContain('renewCandidate');
  });

  it('a term stopped before any renewal of it landed is a failed start, a second in a row ends its standing again until its candidacy\'s renewal; a clock jump is none (review)', () => {
    const fresh = (st: State = START) => ({ ...leading(mine(), { renewals: 0, since: T }), heldOff: st.heldOff });
    // two clock jumps, each right after a term began: it stands again after each
    const jumped = run(settings(), fresh(), [[{ kind: 'clockJump', jumpMs: 3_000 }, at(100)]]).state;
    expect(jumped.standAgain).toBe(7);
    expect(run(settings(), fresh(jumped), [[{ kind: 'clockJump', jumpMs: 3_000 }, at(100)]]).state.standAgain).toBe(7);
    // two renew deadlines passed with no renewal landed, each refused (a role denied the lease's UpdateItem): it stands again only after the first
    const denied = (st: State) => run(settings(), fresh(st), [[poll, at(5_900)], [answer({ failed: true, refused: true }), at(5_930)], [{ kind: 'deadline', no: 1 }, at(10_001)]]).state;
    const once = denied(START);
    expect(once.lead).toBeUndefined();
    expect(once.standAgain).toBe(7);
    expect(once.heldOff?.failures).toBe(1);
    const twice = denied(once);
    expect(twice.lead).toBeUndefined();
    expect(twice.standAgain).toBeUndefined();
    // then a term deposed early is no failed start: it stands again
    const deposed = run(settings(), { ...leading(mine({ fencingToken: 9, termToken: 9 }), { renewals: 2, since: T }), heldOff: twice.heldOff }, [[{ kind: 'workFailed', no: 1, token: 7, cause: 'x', random: 0, fenced: true }, at(100)]]).state;
    expect(deposed.standAgain).toBe(7);
  });

  it('a term whose renewals DynamoDB or the network failed (a 5xx, a throttle, a timeout, an answer lost), or that were never answered (a paused process), is no failed start: after two in a row it stands again, not down (review, 2026-12-07, twelfth)', () => {
    const fresh = (st: State = START) => ({ ...leading(mine(), { renewals: 0, since: T }), heldOff: st.heldOff, standAgain: st.standAgain });
    const deadline: [Event, Moment] = [{ kind: 'deadline', no: 1 }, at(10_001)];
    const failed: [ReturnType<typeof answer>, Moment] = [answer({ failed: true }), at(5_930)];
    for (const lost of [[[poll, at(5_900)], failed, deadline], [[poll, at(5_900)], deadline]] as Parameters<typeof run>[2][]) {
      const once = run(settings(), fresh(), lost).state;
      const twice = run(settings(), fresh(once), lost).state;
      expect(twice.lead).toBeUndefined();
      expect(twice.standAgain).toBe(7); // before the fix: undefined, and it stood down until its candidacy's renewal
      expect(twice.standsDown).toBe(false);
      expect(twice.heldOff?.failures ?? 0).toBe(0);
    }
    // one refused for its own reasons among them counts: its role denied one, then DynamoDB failed the next
    const mixed: Parameters<typeof run>[2] = [[poll, at(5_900)], [answer({ failed: true, refused: true }), at(5_930)], [poll, at(7_930)], [answer({ failed: true }), at(7_960)], deadline];
    expect(run(settings(), fresh(run(settings(), fresh(), mixed).state), mixed).state.standsDown).toBe(true);
  });

  it('standing down, it takes a lease left vacant a lease duration past the fallback by the fallback all the same, not sooner: a healthy candidate takes it first, and none leaves it leaderless until its candidacy renews (review, 2026-12-07, twelfth)', () => {
    const vacant = mine({ revision: 9, holderIdentity: undefined, holderInstance: undefined, fencingToken: 8, termToken: 8 });
    const looks = (st: State, ms: number[]) => run(settings(), st, ms.flatMap((t): Parameters<typeof run>[2] => [[poll, at(t)], [{ kind: 'leaseRead', raw: read(vacant) }, at(t + 10)]]));
    // a healthy candidate takes it by the fallback once it stood vacant 45 s (fallbackAfterMs)
    const healthy = looks(START, [0, 44_000, 46_000]);
    expect(healthy.kinds[3]).not.toContain('acquire');
    expect(healthy.kinds[5]).toContain('acquire');
    // one that stands down: a lease duration (15 s) later; before the fix, never until its candidacy renewed
    const down = looks({ ...START, standsDown: true }, [0, 46_000, 58_000, 60_100]);
    expect(down.kinds.slice(0, 7).flat()).not.toContain('acquire');
    expect(down.effects[7]).toContainEqual(expect.objectContaining({ kind: 'acquire', electedBy: 'self' }));
    expect(down.state.standsDown).toBe(true); // until the term it takes is led
  });

  it("a term on a session whose Session's renewals its role denied: the session ends at its own deadline, before the term's, the term renews itself, and that renewal refused counts it as a failed start (own-diff review, 2026-12-07, twelfth)", () => {
    const fresh = (st: State = START) => ({ ...leading(mine({ session: 's1' }), { session: 's1', renewals: 0, since: T }), heldOff: st.heldOff, standAgain: st.standAgain });
    const denied: Parameters<typeof run>[2] = [
      [{ kind: 'sessionEnded', name: 's1' }, at(7_600)], // the Session's renew deadline (7.5 s) passed, its renewals denied
      [poll, at(7_600)],
      [answer({ failed: true, refused: true }), at(7_630)],
      [{ kind: 'deadline', no: 1 }, at(10_001)],
    ];
    const once = run(settings(), fresh(), denied);
    expect(once.kinds[1]).toContain('renew'); // the term's own renewal, on the path that tells a refusal
    expect(once.state.heldOff?.failures).toBe(1);
    expect(run(settings(), fresh(once.state), denied).state.standsDown).toBe(true);
  });

  it('standing down, after a term held on a session (or with no lease row at all) it takes the vacant lease a lease duration after the longer fallback a healthy candidate waits there, not with it (own-diff review, 2026-12-07, twelfth)', () => {
    const vacant = mine({ revision: 9, holderIdentity: undefined, holderInstance: undefined, fencingToken: 8, termToken: 8 });
    const s = settings({ sessionFallbackMs: 120_000 });
    for (const [row, st] of [
      [vacant, { ...START, lastHeldOnSession: true }], // the last term was held on a session
      [undefined, START], // no lease row: its last term may have been on a session
    ] as const) {
      const looks = (from: State, ms: number[]) => run(s, from, ms.flatMap((t): Parameters<typeof run>[2] => [[poll, at(t)], [{ kind: 'leaseRead', raw: read(row) }, at(t + 10)]]));
      // a healthy candidate takes it by the session's fallback once it stood vacant 120 s
      const healthy = looks(st, [0, 119_000, 121_000]);
      expect(healthy.kinds[3]).not.toContain('acquire');
      expect(healthy.kinds[5]).toContain('acquire');
      // one that stands down: a lease duration (15 s) later; before the fix, at 120 s with it (60 s past the plain fallback),
      // and a worker that cannot hold a term won about half those races, failed, and left the lease another fallback
      const down = looks({ ...st, standsDown: true }, [0, 121_000, 134_000, 135_100]);
      expect(down.kinds.slice(0, 7).flat()).not.toContain('acquire');
      expect(down.effects[7]).toContainEqual(expect.objectContaining({ kind: 'acquire', electedBy: 'self' }));
    }
  });

  it("a term stopped at a clock jump or its renew deadline reads the lease row itself next, not the session alone: its follower's view of the row is from before it led (seed 12800135: a session-only read of that old view ended the old term on the row, refused, and the lease waited out its own term, 124 s leaderless over a run)", () => {
    const old = mine({ fencingToken: 5, termToken: 5, session: 's1' }); // quiet: renewed since taken
    const before: State = { ...leading(mine({ session: 's1' }), { session: 's1' }), lastRaw: read(old), lastRead: old, leaseReadAt: T - 1_000 };
    const woken: Event = { kind: 'poll', pushLive: true };
    for (const stop of [{ kind: 'clockJump', jumpMs: -400 }, { kind: 'deadline', no: 1 }] as Event[]) {
      const r = run(settings(), before, [[stop, at(10_000)], [woken, at(10_000)]]);
      expect(r.kinds[0]![0]).toBe('stop');
      expect(r.kinds[1]).toEqual(['readLease']);
    }
    // a follower that never led keeps its session-only poll while the lease is quiet and a session row
    // vouched for its last view's term (the plan this guards); with none that did, it reads the lease (a lost wake)
    const following: State = { ...START, lastRaw: read(old), lastRead: old, leaseReadAt: T - 1_000, observed: { at: T - 1_000 }, viewedSession: { name: 's1', renewTime: T - 1_000, of: 's1' } } as State;
    expect(run(settings(), following, [[woken, at(0)]]).kinds[0]).toEqual(['readSession']);
    expect(run(settings(), { ...following, viewedSession: undefined } as State, [[woken, at(0)]]).kinds[0]).toEqual(['readLease']);
  });

  it('cancelled with an heir: the lease refreshed, led on until the heir reads (looking whether the heir still stands, after 250 ms, then less often), stopped, then the heir’s row read and the term handed over', () => {
    const stands = answer({ row: { identity: 'b-1' } });
    const r = run(settings(), leading(mine(heirNamed)), [
      [{ kind: 'cancel' }, at(1_000)],
      [answer({ lease: mine({ ...heirNamed, revision: 4 }) }), at(1_020)],
      [answer(), at(1_270)],
      [stands, at(1_280)],
      [answer(), at(1_780)],
      [stands, at(1_790)],
      [answer(), at(2_790)],
      [stands, at(2_800)],
      [answer(), at(4_800)],
      [stands, at(4_810)],
      [answer(), at(5_900)],
      [stands, at(5_900)],
      [answer({ ok: true }), at(5_930)],
    ]);
    expect(r.kinds).toEqual([['look'], ['sleep'], ['readHeir'], ['sleep'], ['readHeir'], ['sleep'], ['readHeir'], ['sleep'], ['readHeir'], ['sleep'], ['stop', 'readHeir'], ['handOver'], ['steppedDown']]);
    // its hand-over's moment, fixed at the cancel: its next renewal slot (renewedAt + cadenceMs), 5,900; the looks at 250 ms, then doubling up to a retry period
    expect([1, 3, 5, 7, 9].map((i) => (r.effects[i]![0] as Extract<Effect, { kind: 'sleep' }>).ms)).toEqual([250, 500, 1_000, 2_000, 5_900 - 4_810]);
    expect(r.effects[2]![0]).toMatchObject({ kind: 'readHeir', name: 'b' });
    expect(r.effects[10]![1]).toMatchObject({ kind: 'readHeir', name: 'b' });
    expect(r.effects[11]![0]).toMatchObject({ kind: 'handOver', heir: { name: 'b', instance: 'b-1' }, revision: 5 });
    expect(r.effects[12]).toEqual([{ kind: 'steppedDown', led: { term: { holderIdentity: 'a', fencingToken: 7 }, handed: true } }]);
  });

  it('cancelled with an heir while wakes reach it: no refresh, and the heir’s row is read only at the hand-over; an heir that withdrew by then is not handed the term', () => {
    const pushed = (dt: number): Moment => at(dt, { pushLive: true });
    const r = run(settings(), leading(mine(heirNamed)), [
      [{ kind: 'cancel' }, pushed(1_000)],
      [answer({ row: undefined }), pushed(1_010)],
      [answer({ lease: mine({ successor: 'c', successorInstance: 'c-1', revision: 5 }) }), pushed(1_020)],
      [answer({ row: { identity: 'c-1' } }), pushed(1_030)],
      [answer({ ok: true }), pushed(1_040)],
    ]);
    // read at the hand-over, not before: b's row is gone (it withdrew), so nothing is written to
    // it; the lease is read once more (the view may be stale) and handed to the heir it names now
    expect(r.kinds).toEqual([['stop', 'readHeir'], ['look'], ['readHeir'], ['handOver'], ['steppedDown']]);
    expect(r.effects[0]![1]).toMatchObject({ kind: 'readHeir', name: 'b' });
    expect(r.effects[2]![0]).toMatchObject({ kind: 'readHeir', name: 'c' });
    expect(r.effects[3]![0]).toMatchObject({ kind: 'handOver', heir: { name: 'c', instance: 'c-1' } });
    expect(r.effects[4]).toEqual([{ kind: 'steppedDown', led: { term: { holderIdentity: 'a', fencingToken: 7 }, handed: true } }]);
    // another start-up of the named heir is not that heir either: the term is not handed to it
    const other = run(settings(), leading(mine(heirNamed)), [
      [{ kind: 'cancel' }, pushed(1_000)],
      [answer({ row: { identity: 'b-2' } }), pushed(1_010)],
      [answer({ lease: mine({ ...heirNamed, revision: 4 }) }), pushed(1_020)],
      [answer({ row: { identity: 'b-2' } }), pushed(1_030)],
    ]);
    expect(other.kinds).toEqual([['stop', 'readHeir'], ['look'], ['readHeir'], ['steppedDown']]);
    expect(other.effects[3]).toEqual([{ kind: 'steppedDown', led: { term: { holderIdentity: 'a', fencingToken: 7 }, handed: false } }]);
  });

  it('cancelled without an heir, or not leading: stepped down at once (the shell releases after withdrawing the candidacy)', () => {
    expect(run(settings(), leading(), [[{ kind: 'cancel' }, at(0)], [answer({ lease: mine() }), at(10)]]).effects[1]).toEqual([{ kind: 'stop', reason: 'cancelled', token: 7 }, { kind: 'steppedDown', led: { term: { holderIdentity: 'a', fencingToken: 7 }, handed: false } }]);
    expect(run(settings(), START, [[{ kind: 'cancel' }, at(0)]]).effects[0]).toEqual([{ kind: 'steppedDown', led: undefined }]);
  });
});

describe("the elector's step: a sleep counted against the renew deadline ('slept')", () => {
  const deadlines = (r: ReturnType<typeof run>) => r.effects.flat().filter((f) => f.kind === 'armDeadline');

  it('moves the renewal back by the sleep and re-arms the deadline there', () => {
    const r = run(settings(), leading(), [[{ kind: 'slept', ms: 4_000 }, at(200)]]);
    expect(r.state.lead).toMatchObject({ renewedAt: T - 4_000, slept: { ms: 4_000, at: T + 200 } });
    expect(deadlines(r)).toEqual([{ kind: 'armDeadline', at: T + 6_000, no: 1 }]);
  });

  it('past the deadline counting the sleep: stops at once', () => {
    const r = run(settings(), leading(), [[{ kind: 'slept', ms: 9_000 }, at(1_500)]]);
    expect(r.state.lead).toBeUndefined();
    expect(r.effects[0]).toContainEqual({ kind: 'stop', reason: 'renewDeadline', token: 7 });
  });

  it('a renewal sent before the sleep was counted, answered after: counted from before the sleep, not from its send time', () => {
    const r = run(settings(), leading(), [
      [poll, at(100)], // the renewal goes out (perhaps before the machine slept)
      [{ kind: 'slept', ms: 4_000 }, at(200)],
      [answer({ lease: mine({ revision: 4 }) }), at(300)],
    ]);
    expect(r.effects[0]).toContainEqual(expect.objectContaining({ kind: 'renew' }));
    expect(r.state.lead).toMatchObject({ renewedAt: T + 100 - 4_000 });
    expect(deadlines(r).at(-1)).toEqual({ kind: 'armDeadline', at: T + 100 - 4_000 + 10_000, no: 1 });
  });

  it('a renewal sent after the count: from its send time', () => {
    const r = run(settings(), leading(), [
      [{ kind: 'slept', ms: 4_000 }, at(200)],
      [poll, at(300)],
      [answer({ lease: mine({ revision: 4 }) }), at(400)],
    ]);
    expect(r.state.lead).toMatchObject({ renewedAt: T + 300 });
  });
});

describe("the elector's step: a NoCoordination follower's take in doubt as it stops", () => {
  const s = settings({ mode: 'NoCoordination', candidate: false });
  const vacant = mine({ holderIdentity: undefined, holderInstance: undefined, revision: 5, fencingToken: 7, termToken: undefined });
  /** Polled, read the lease vacant, sent its take: the take's answer never came (a timeout, a dropped connection: the shell's step failed). */
  const taking: Parameters<typeof run>[2] = [
    [poll, at()],
    [{ kind: 'leaseRead', raw: read(vacant) }, at(10)],
  ];

  it('run() cancelled with its take unanswered: the lease is read, and a term of this start-up the row shows is released by its holder and token; one it never got is left alone', () => {
    const r = run(s, START, [...taking, [{ kind: 'cancel' }, at(30)], [{ kind: 'leave', led: undefined, held: undefined }, at(40)]]);
    expect(r.kinds[1]).toContain('acquire');
    expect(r.kinds.slice(2)).toEqual([['steppedDown'], ['readToLeave']]);
    // the take landed: its term is released, conditioned on holder and token
    const taken = mine({ revision: 6, fencingToken: 8, termToken: 8 });
    const landed = decide(s, r.state, { kind: 'leavingRead', read: read(taken) }, at(50));
    expect(landed.effects).toEqual([{ kind: 'leavingWrite', write: { kind: 'release', term: { holderIdentity: 'a', fencingToken: 8 } } }]);
    // another holds it (the take never landed, or lost the race): nothing to write
    const other = decide(s, r.state, { kind: 'leavingRead', read: read(mine({ holderIdentity: 'b', holderInstance: 'b-1', revision: 6, fencingToken: 8 })) }, at(50));
    expect(other.effects).toEqual([]);
    expect(other.state.leaving?.part).toBe('gone');
  });

  it('a take answered (won and given back, or refused) leaves no doubt: stopped as before, without a read', () => {
    const refused = run(s, START, [...taking, [{ kind: 'acquired', got: { refusedBy: 'b' } }, at(20)], [{ kind: 'cancel' }, at(30)], [{ kind: 'leave', led: undefined, held: undefined }, at(40)]]);
    expect(refused.kinds.slice(3)).toEqual([['steppedDown'], []]);
  });
});

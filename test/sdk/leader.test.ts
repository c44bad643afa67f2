/**
 * The leader's decisions (lib/sdk/step.ts) as tables, as lib/election's are: what it knows, one
 * observation → what it does. No I/O, no clock: decide (test/sdk/decide.test.ts) carries them out.
 */
import { describe, expect, it } from 'vitest';
import type { Lease } from '../../lib/schemas/lease.js';
import { declinePatch } from '../../lib/stores/lease-store.js';
import { afterLeaving, afterRenewal, decideLeader, departure, LEAVING_READS, handOffDelay, HEIR_WAIT_MAX_MS, heirOf, leaderDelay, leavingDoubt, leavingKept, leftTerm, showsLeftTerm, MIN_RENEWAL_BOUND_MS, pacedCadenceMs, renewalBoundMs, sessionFallbackFor, sessionFallbackMs, type LeaderObservation, type LeaderSettings, type LeaderStep, type TermView } from '../../lib/sdk/step.js';

const S: LeaderSettings = { leaseName: 'job', identity: 'a', mode: 'coordinated', leaseDurationMs: 15_000, renewDeadlineMs: 10_000 };
const T: TermView = { holderIdentity: 'a', instance: 'a_1', fencingToken: 7, renewedAt: 100_000, session: 's-1', shortMs: 0 };
const lease = (over: Partial<Lease> = {}): Lease =>
  ({ name: 'job', holderIdentity: 'a', holderInstance: 'a_1', fencingToken: 7, leaseDurationSeconds: 15, leaseTransitions: 1, renewTime: 1, acquireTime: 1, revision: 3, ...over }) as Lease;

describe('decideLeader', () => {
  const rows: { name: string; t?: Partial<TermView>; o: LeaderObservation; want: LeaderStep }[] = [
    { name: 'asked inside the renew deadline: leads on', o: { kind: 'asked', now: 109_999 }, want: { kind: 'none' } },
    { name: 'asked at the renew deadline: stops (client-go)', o: { kind: 'asked', now: 110_000 }, want: { kind: 'stop', reason: 'renewDeadline', look: false } },
    { name: "its step's turn inside the renew deadline: renews on", o: { kind: 'step', now: 109_999 }, want: { kind: 'none' } },
    { name: "its step's turn at or past the renew deadline (a loop stalled past it, the deadline's timer not fired yet): stops, never renews", o: { kind: 'step', now: 112_500 }, want: { kind: 'stop', reason: 'renewDeadline', look: false } },
    { name: "the deadline's timer fired: stops, even a hair early by the monotonic clock", o: { kind: 'deadline', now: 109_999 }, want: { kind: 'stop', reason: 'renewDeadline', look: false } },
    { name: 'its session renewed by a write sent later than the last: the term is renewed from that send', o: { kind: 'sessionRenewed', name: 's-1', sentAt: 105_000, now: 105_050, ended: {} }, want: { kind: 'renewed', renewedAt: 105_000, lease: undefined } },
    { name: 'a session renewal sent before the last renewal: nothing new', o: { kind: 'sessionRenewed', name: 's-1', sentAt: 99_000, now: 105_050, ended: {} }, want: { kind: 'none' } },
    { name: 'a session renewal answered after the deadline extends nothing: it stops', o: { kind: 'sessionRenewed', name: 's-1', sentAt: 105_000, now: 110_000, ended: {} }, want: { kind: 'stop', reason: 'renewDeadline', look: false } },
    { name: 'another session renewed: not this term’s', o: { kind: 'sessionRenewed', name: 's-2', sentAt: 105_000, now: 105_050, ended: { job: 7 } }, want: { kind: 'none' } },
    // ended on the row too (conditioned on its token copy: a no-op where the end was written there): a moved fencing token is marked so, and the session would keep the term alive (issue 36)
    { name: 'its session marks this term ended (someone else ended it): deposed, it ends the term on the row, and it looks at once', o: { kind: 'sessionRenewed', name: 's-1', sentAt: 105_000, now: 105_050, ended: { job: 7 } }, want: { kind: 'stop', reason: 'deposed', look: true, endTerm: true } },
    { name: 'a later term of the lease marked ended: this one is over too', o: { kind: 'sessionRenewed', name: 's-1', sentAt: 105_000, now: 105_050, ended: { job: 9 } }, want: { kind: 'stop', reason: 'deposed', look: true, endTerm: true } },
    { name: 'an earlier term marked ended (its own, before this one): renewed as usual', o: { kind: 'sessionRenewed', name: 's-1', sentAt: 105_000, now: 105_050, ended: { job: 5, other: 99 } }, want: { kind: 'renewed', renewedAt: 105_000, lease: undefined } },
    { name: 'its session ended: look now (it renews its lease itself)', o: { kind: 'sessionEnded', name: 's-1' }, want: { kind: 'look' } },
    { name: 'another session ended: nothing', o: { kind: 'sessionEnded', name: 's-2' }, want: { kind: 'none' } },
    { name: 'its renewal refused: deposed (the lease is no longer in this term)', o: { kind: 'renewed', sentAt: 104_000, lease: undefined }, want: { kind: 'stop', reason: 'deposed', look: false } },
    { name: 'its renewal answered: renewed from its send time', o: { kind: 'renewed', sentAt: 104_000, lease: lease() }, want: { kind: 'renewed', renewedAt: 104_000, lease: lease() } },
    { name: 'an old renewal answered late: the later session renewal stands', t: { renewedAt: 106_000 }, o: { kind: 'renewed', sentAt: 104_000, lease: lease() }, want: { kind: 'renewed', renewedAt: 106_000, lease: lease() } },
    // the row's term shorter than the leader's own (5 s of 15: a write of its term it did not make, as 5b64190's coordinator election led as its own take):
    // observers count it out 5 s after they see it, so the leader stops at the renew deadline scaled to it (10 s x 5/15 = 3,333 ms), as leadFromRead scales a handed term's
    { name: "its renewal answered with a row shorter than its own lease duration (5 s of 15): counted from 6,667 ms before its send, so it stops 3,333 ms after it, inside the row's 5 s", o: { kind: 'renewed', sentAt: 104_000, lease: lease({ leaseDurationSeconds: 5 }) }, want: { kind: 'renewed', renewedAt: 97_333, lease: lease({ leaseDurationSeconds: 5 }) } },
    { name: 'a later session renewal never keeps it past such a row: counted from the renewal that answered it', t: { renewedAt: 106_000 }, o: { kind: 'renewed', sentAt: 104_000, lease: lease({ leaseDurationSeconds: 5 }) }, want: { kind: 'renewed', renewedAt: 97_333, lease: lease({ leaseDurationSeconds: 5 }) } },
    { name: 'a row longer than its own (a fleet part way through a change of timings): from its send, as any', o: { kind: 'renewed', sentAt: 104_000, lease: lease({ leaseDurationSeconds: 30 }) }, want: { kind: 'renewed', renewedAt: 104_000, lease: lease({ leaseDurationSeconds: 30 }) } },
    { name: 'its session renewed while its row is shorter than its own (shortMs): counted from that much before the send', t: { shortMs: 6_667 }, o: { kind: 'sessionRenewed', name: 's-1', sentAt: 109_000, now: 109_050, ended: {} }, want: { kind: 'renewed', renewedAt: 102_333, lease: undefined } },
    { name: 'a read shows its term: seen (the row may name a successor or a preferred holder)', o: { kind: 'read', lease: lease({ successor: 'b', session: 's-1' }) }, want: { kind: 'seen', lease: lease({ successor: 'b', session: 's-1' }) } },
    { name: 'a read shows its term, renewed by the holder itself: seen', t: { session: undefined }, o: { kind: 'read', lease: lease() }, want: { kind: 'seen', lease: lease() } },
    // issue 36: observers no longer judge the term by its holder's renewals (lib/election/vacancy.ts sessionStanding); they wait out this read
    { name: "a read shows its term on another session than its holder's (`session` rewritten under it): deposed, it ends the term on the row and looks", o: { kind: 'read', lease: lease({ session: 's-peer' }) }, want: { kind: 'stop', reason: 'deposed', look: true, endTerm: true } },
    { name: 'a read shows its term taken off its session by someone else: likewise', o: { kind: 'read', lease: lease() }, want: { kind: 'stop', reason: 'deposed', look: true, endTerm: true } },
    { name: 'a read shows another token: deposed', o: { kind: 'read', lease: lease({ fencingToken: 8 }) }, want: { kind: 'stop', reason: 'deposed', look: false } },
    { name: "a read shows another token with this term's token copy (moved under it): deposed, it ends the term on the row and looks", o: { kind: 'read', lease: lease({ fencingToken: 8, termToken: 7 }) }, want: { kind: 'stop', reason: 'deposed', look: true, endTerm: true } },
    { name: 'a read shows another start-up of the same worker: deposed', o: { kind: 'read', lease: lease({ holderInstance: 'a_2' }) }, want: { kind: 'stop', reason: 'deposed', look: false } },
    { name: 'a read finds the row deleted: deposed', o: { kind: 'read', lease: undefined }, want: { kind: 'stop', reason: 'deposed', look: false } },
  ];
  it.each(rows)('$name', ({ t, o, want }) => expect(decideLeader(S, { ...T, ...t }, o)).toEqual(want));
});

describe('afterRenewal and heirOf', () => {
  it.each([
    { name: 'another holder preferred: yield', lease: lease({ preferredHolder: 'b' }), k: { candidate: true, ackedElection: undefined }, want: { kind: 'yield' } },
    { name: 'itself preferred: nothing', lease: lease({ preferredHolder: 'a' }), k: { candidate: true, ackedElection: undefined }, want: { kind: 'none' } },
    { name: 'an open election not answered: ack it', lease: lease({ election: { id: 'e1', startedAt: 1, deadline: 2 } } as Partial<Lease>), k: { candidate: true, ackedElection: undefined }, want: { kind: 'ack', election: 'e1@1' } },
    { name: 'the election already answered: nothing', lease: lease({ election: { id: 'e1', startedAt: 1, deadline: 2 } } as Partial<Lease>), k: { candidate: true, ackedElection: 'e1@1' }, want: { kind: 'none' } },
    { name: 'an election of the id of the one answered, started later (the row made again): ack it', lease: lease({ election: { id: 'e1', startedAt: 7, deadline: 9 } } as Partial<Lease>), k: { candidate: true, ackedElection: 'e1@1' }, want: { kind: 'ack', election: 'e1@7' } },
    { name: 'no candidacy: nothing to answer', lease: lease({ election: { id: 'e1', startedAt: 1, deadline: 2 } } as Partial<Lease>), k: { candidate: false, ackedElection: undefined }, want: { kind: 'none' } },
  ])('$name', ({ lease: l, k, want }) => expect(afterRenewal(S, l, k)).toEqual(want));

  it('NoCoordination ignores preferredHolder (it does not take part in coordination)', () => {
    expect(afterRenewal({ ...S, mode: 'NoCoordination' }, lease({ preferredHolder: 'b' }), { candidate: false, ackedElection: undefined })).toEqual({ kind: 'none' });
  });

  it.each([
    { name: 'the designated successor', l: lease({ successor: 'b', successorInstance: 'b_1' }), want: { name: 'b', instance: 'b_1' } },
    { name: 'none when the lease prefers somebody else', l: lease({ successor: 'b', successorInstance: 'b_1', preferredHolder: 'c' }), want: undefined },
    { name: 'none when the successor is itself', l: lease({ successor: 'a', successorInstance: 'a_1' }), want: undefined },
    { name: 'none without its process named', l: lease({ successor: 'b' }), want: undefined },
    { name: 'none when the lease is set to a strategy Conclave does not run (a successor named before it)', l: lease({ successor: 'b', successorInstance: 'b_1', strategy: 'example.com/x' }), want: undefined },
  ])('heir: $name', ({ l, want }) => expect(heirOf(S, l)).toEqual(want));
});

describe('departure: what a stopping follower gives up', () => {
  // b's start-up b_1 stops, having led nothing; the lease is a's term (token 7 in lease())
  it.each([
    { name: 'a term handed to it as it stopped: released, never led', l: lease({ holderIdentity: 'b', holderInstance: 'b_1', successor: 'c', successorInstance: 'c_1' }), want: { kind: 'release', term: { holderIdentity: 'b', fencingToken: lease().fencingToken } } },
    { name: 'named successor: declined', l: lease({ successor: 'b', successorInstance: 'b_1', secondSuccessor: 'c', secondSuccessorInstance: 'c_1' }), want: { kind: 'decline', role: 'successor' } },
    { name: 'named second successor: declined', l: lease({ successor: 'c', successorInstance: 'c_1', secondSuccessor: 'b', secondSuccessorInstance: 'b_1' }), want: { kind: 'decline', role: 'second' } },
    { name: 'another start-up of its identity named (the next deploy’s): nothing', l: lease({ successor: 'b', successorInstance: 'b_2' }), want: undefined },
    { name: 'another start-up of its identity holding: nothing', l: lease({ holderIdentity: 'b', holderInstance: 'b_2' }), want: undefined },
    { name: 'not named: nothing', l: lease({ successor: 'c', successorInstance: 'c_1' }), want: undefined },
    { name: 'no row: nothing', l: undefined, want: undefined },
  ])('$name', ({ l, want }) => expect(departure(l, 'b', 'b_1')).toEqual(want));

  // releaseOnCancel false: the elector passes the highest token it led, whose term is left to run out
  it.each([
    { name: 'a term it led (stopped at its renew deadline, the row still naming it): kept, to run out', l: lease({ holderIdentity: 'b', holderInstance: 'b_1' }), kept: lease().fencingToken, want: undefined },
    { name: 'a term handed to it that it never led (a later token): released', l: lease({ holderIdentity: 'b', holderInstance: 'b_1' }), kept: lease().fencingToken - 1, want: { kind: 'release', term: { holderIdentity: 'b', fencingToken: lease().fencingToken } } },
    { name: 'named successor: declined, whatever it led', l: lease({ successor: 'b', successorInstance: 'b_1' }), kept: lease().fencingToken, want: { kind: 'decline', role: 'successor' } },
    { name: "a term it led whose fencing token a peer or an operator moved up under it (termToken kept): kept, to run out, not released", l: lease({ holderIdentity: 'b', holderInstance: 'b_1', fencingToken: 9, termToken: 7 }), kept: 7, want: undefined },
  ])('releaseOnCancel false, $name', ({ l, kept, want }) => expect(departure(l, 'b', 'b_1', kept)).toEqual(want));

  it.each([
    { name: 'the successor declines: the second successor moves up', l: lease({ successor: 'b', successorInstance: 'b_1', secondSuccessor: 'c', secondSuccessorInstance: 'c_1' }), role: 'successor' as const, want: { set: { successor: 'c', successorInstance: 'c_1' }, remove: ['secondSuccessor', 'secondSuccessorInstance'] } },
    { name: 'the successor declines, no second: nobody named until the coordinator names again', l: lease({ successor: 'b', successorInstance: 'b_1' }), role: 'successor' as const, want: { set: {}, remove: ['successor', 'successorInstance'] } },
    { name: 'the second successor declines: the successor stays', l: lease({ successor: 'c', successorInstance: 'c_1', secondSuccessor: 'b', secondSuccessorInstance: 'b_1' }), role: 'second' as const, want: { remove: ['secondSuccessor', 'secondSuccessorInstance'] } },
  ])('declinePatch: $name', ({ l, role, want }) => expect(declinePatch(l, role)).toEqual(want));
});

describe("afterLeaving: a stopping elector's write leaving the lease (a release, a decline, a kept term's move off its session), and what it does next", () => {
  it.each([
    { name: 'landed: settled', out: 'landed' as const, reads: 1, want: 'settled' },
    { name: 'landed on the last read: settled', out: 'landed' as const, reads: LEAVING_READS, want: 'settled' },
    { name: 'a release decided from the term its step-down led (no read yet), landed: settled', out: 'landed' as const, reads: 0, want: 'settled' },
    { name: 'refused (a lost race: the row moved on since the read): decided again from a new read', out: 'refused' as const, reads: 1, want: 'again' },
    { name: 'a release decided from the term its step-down led, refused: decided from a read', out: 'refused' as const, reads: 0, want: 'again' },
    { name: 'unanswered on every try (it may have landed): decided again from a new read', out: 'unknown' as const, reads: 1, want: 'again' },
    { name: 'unanswered, from the term its step-down led: decided from a read', out: 'unknown' as const, reads: 0, want: 'again' },
    { name: 'refused with one read left: decided again', out: 'refused' as const, reads: LEAVING_READS - 1, want: 'again' },
    { name: 'refused on the last read: left as it is', out: 'refused' as const, reads: LEAVING_READS, want: 'unsettled' },
    { name: 'unanswered on the last read: left as it is', out: 'unknown' as const, reads: LEAVING_READS, want: 'unsettled' },
    { name: 'a fault after which it did not land: left as it is, however many reads remain', out: 'failed' as const, reads: 1, want: 'unsettled' },
    { name: 'a fault, from the term its step-down led: left as it is', out: 'failed' as const, reads: 0, want: 'unsettled' },
  ])('$name', ({ out, reads, want }) => expect(afterLeaving(out, reads)).toBe(want));
});

describe("leavingDoubt: a stopping elector's hold on its session (a write of its term onto it may have landed unanswered)", () => {
  // b's start-up b_1 stops holding session s-1's renewals; lease() is a's term (token 7)
  const mine = (over: Partial<Lease> = {}) => lease({ holderIdentity: 'b', holderInstance: 'b_1', session: 's-1', ...over });
  it.each([
    { name: 'its term on the held session (the write landed): released, the hold dropped once that lands', l: mine(), kept: -1, want: { kind: 'release', term: { holderIdentity: 'b', fencingToken: 7 } } },
    { name: 'its term on the held session, led and kept (releaseOnCancel false): kept, taken off the session as leavingKept says; named as left (leftTerm), so the hold goes even where that does not land', l: mine(), kept: 7, want: { kind: 'keep', left: true } },
    { name: 'its kept term on the held session, its fencing token moved back under it (termToken kept): kept, named as left', l: mine({ fencingToken: 5, termToken: 7 }), kept: 7, want: { kind: 'keep', left: true } },
    { name: 'a term of its on the held session with an earlier token than it led last (not the term it left): kept, not named as left, so the hold stays where the move off does not land', l: mine({ fencingToken: 5 }), kept: 7, want: { kind: 'keep', left: false } },
    { name: 'its term on the held session, a later token than it led (never led): released', l: mine({ fencingToken: 9 }), kept: 7, want: { kind: 'release', term: { holderIdentity: 'b', fencingToken: 9 } } },
    { name: 'its kept term on the held session, its fencing token moved up under it (termToken kept): kept, named as left, not released', l: mine({ fencingToken: 9, termToken: 7 }), kept: 7, want: { kind: 'keep', left: true } },
    { name: 'its term on no session (the write never landed): the hold dropped', l: mine({ session: undefined }), kept: -1, want: { kind: 'drop' } },
    { name: 'its term on another session: the hold dropped', l: mine({ session: 's-2' }), kept: -1, want: { kind: 'drop' } },
    { name: "another's term (a take since, whatever session it names): the hold dropped", l: lease({ session: 's-1' }), kept: -1, want: { kind: 'drop' } },
    { name: 'another start-up of its identity holding on it: the hold dropped', l: mine({ holderInstance: 'b_2' }), kept: -1, want: { kind: 'drop' } },
    { name: 'no row: the hold dropped', l: undefined, kept: -1, want: { kind: 'drop' } },
  ])('$name', ({ l, kept, want }) => expect(leavingDoubt(l, 's-1', 'b', 'b_1', kept)).toEqual(want));
});

describe('leftTerm and showsLeftTerm: the term a stopping elector leaves to run out on its process\'s session rows', () => {
  it('is the last term it led, with releaseOnCancel false (kept ≥ 0), on a process that runs a Session; whatever the row shows', () => {
    expect(leftTerm(7, 'b_1@p', true)).toEqual({ token: 7, instance: 'b_1@p' });
    expect(leftTerm(-1, 'b_1@p', true)).toBeUndefined(); // releaseOnCancel true, or never led
    expect(leftTerm(7, 'b_1@p', false)).toBeUndefined(); // no Session: its term runs out on the lease's own stamp
  });
  it('is kept on the rows while the lease shows that term: the same instance and token', () => {
    const t = { token: 7, instance: 'b_1@p' };
    expect(showsLeftTerm(lease({ holderInstance: 'b_1@p', fencingToken: 7 }), t)).toBe(true);
    expect(showsLeftTerm(lease({ holderInstance: 'b_1@p', fencingToken: 7, session: 'gone' }), t)).toBe(true); // wherever its session points
    expect(showsLeftTerm(lease({ holderInstance: 'c_1@q', fencingToken: 9 }), t)).toBe(false); // taken over
    expect(showsLeftTerm(lease({ holderInstance: 'b_1@p', fencingToken: 9 }), t)).toBe(false);
    expect(showsLeftTerm(undefined, t)).toBe(false); // the row gone
    expect(showsLeftTerm(lease({ holderInstance: 'b_1@p', fencingToken: 619, termToken: 7 }), t)).toBe(true); // its fencing token moved under it (termToken kept): the same term (seed 14000169, --kept all)
    expect(showsLeftTerm(lease({ holderInstance: 'b_1@p', fencingToken: 7, termToken: 9 }), t)).toBe(false); // another term
  });
});

describe("leavingKept: a stopping elector's term that releaseOnCancel false keeps, on the session its process renews on", () => {
  // b's start-up b_1 stops; it led token 7 (kept: 7); session s-1 lives, its row stamped 110_000 as the process last knew it
  const live = { name: 's-1', stamp: 110_000 };
  const mine = (over: Partial<Lease> = {}) => lease({ holderIdentity: 'b', holderInstance: 'b_1', session: 's-1', renewTime: 100_000, leaseDurationSeconds: 15, ...over });
  const off = (stamp: number, fencingToken = 7) => ({ kind: 'offSession', term: { holderIdentity: 'b', fencingToken }, stamp, seconds: 15 });
  it.each([
    { name: "its kept term on the live session: off it, stamped with the session's stamp (later than the lease row's)", l: mine(), kept: 7, want: off(110_000) },
    { name: "the lease row's stamp the later (a take or a move onto the session since the session's last renewal): a millisecond past it", l: mine({ renewTime: 112_000 }), kept: 7, want: off(112_001) },
    { name: "the stamps equal: a millisecond past them (a renewal never leaves the stamp where it was)", l: mine({ renewTime: 110_000 }), kept: 7, want: off(110_001) },
    { name: 'the duration the row has (a first term shorter than its own), never a longer one', l: mine({ leaseDurationSeconds: 5 }), kept: 7, want: { ...off(110_000), seconds: 5 } },
    { name: 'the lease not read (a fault), its last term on that session as it last knew: the session held', l: 'unread' as const, kept: 7, ledOn: 's-1', want: { kind: 'hold', session: 's-1' } },
    { name: 'the lease not read, its last term on another session as it last knew: nothing', l: 'unread' as const, kept: 7, ledOn: 's-0', want: { kind: 'none' } },
    { name: 'the lease not read, its last term on no session: nothing', l: 'unread' as const, kept: 7, ledOn: undefined, want: { kind: 'none' } },
    { name: 'the lease not read, nothing kept (releaseOnCancel true): nothing', l: 'unread' as const, kept: -1, ledOn: 's-1', want: { kind: 'none' } },
    { name: 'releaseOnCancel true (nothing kept: released at the step-down): nothing', l: mine(), kept: -1, want: { kind: 'none' } },
    { name: 'a later token than it led (never led: departure releases it): nothing', l: mine({ fencingToken: 9 }), kept: 7, want: { kind: 'none' } },
    { name: 'on another session (an ended one of its process: nobody renews it): nothing, it runs out', l: mine({ session: 's-0' }), kept: 7, want: { kind: 'none' } },
    { name: 'off any session: nothing, it runs out on its own stamp', l: mine({ session: undefined }), kept: 7, want: { kind: 'none' } },
    { name: "another's term on the session's name: nothing", l: lease({ session: 's-1' }), kept: 7, want: { kind: 'none' } },
    { name: 'another start-up of its identity: nothing', l: mine({ holderInstance: 'b_2' }), kept: 7, want: { kind: 'none' } },
    { name: 'no row: nothing', l: undefined, kept: 7, want: { kind: 'none' } },
  ])('$name', (row: { l: Lease | undefined | 'unread'; kept: number; ledOn?: string; want: unknown }) => expect(leavingKept(row.l, live, 'b', 'b_1', row.kept, row.ledOn)).toEqual(row.want));
  it('no live session (ended, or its deadline passed): nothing, the term runs out on the stamps its session last had', () => expect(leavingKept(mine(), undefined, 'b', 'b_1', 7)).toEqual({ kind: 'none' }));
  // the term named as left at 108_000 (SessionSeam.leave), the session renewed since (110_000): its row names the term, so observers
  // judge it by 108_000, not by the later renewal (renewedBySession); stamped later, the take-off would lengthen the time nobody leads it
  // (test/model: the scope "take-off: a held lease on sessions, …")
  it('the session renewed since the term was left: stamped from the stamp it was left at, as observers judge it, never later', () => {
    expect(leavingKept(mine(), { ...live, leftAt: 108_000 }, 'b', 'b_1', 7)).toEqual(off(108_000));
    expect(leavingKept(mine({ renewTime: 108_500 }), { ...live, leftAt: 108_000 }, 'b', 'b_1', 7)).toEqual(off(108_501));
    // (a term is left at the latest stamp landed, so never later than the live session's; were it, the session's would still bound it)
    expect(leavingKept(mine(), { ...live, leftAt: 111_000 }, 'b', 'b_1', 7)).toEqual(off(110_000));
  });
});

describe('leaderDelay and sessionFallbackMs', () => {
  const base = { onLiveSession: false, pushLive: false, holderBackstopMs: 31_818, retrying: false, triedAt: 100_000, contended: 0, everyRetryPeriod: false, retryPeriodMs: 2_000, cadenceMs: 5_863, renewedAt: 100_000, now: 101_000, random: 0.5 };
  it.each([
    { name: 'a renew interval (less the phase step) after the last renewal was sent', t: {}, want: 4_863 },
    { name: 'a retry period after a failed try went out', t: { retrying: true, triedAt: 100_500 }, want: 1_500 },
    { name: 'at once after a try abandoned unanswered after a retry period or more', t: { retrying: true, triedAt: 98_000 }, want: 0 },
    { name: 'a moment after a try a transaction on the row refused', t: { retrying: true, triedAt: 100_990, contended: 1 }, want: 10 },
    { name: 'half again as long after each such try in a row', t: { retrying: true, triedAt: 100_990, contended: 3 }, want: 35 },
    { name: 'never longer than a retry period', t: { retrying: true, triedAt: 100_500, contended: 40 }, want: 1_500 },
    { name: 'NoCoordination without a renew interval of its own: every retry period (client-go)', t: { everyRetryPeriod: true }, want: 2_000 },
    { name: 'on its live session, wakes reaching it: its backstop read, jittered up to a tenth', t: { onLiveSession: true, pushLive: true }, want: 31_818 * 1.05 },
    { name: 'on its live session without wakes: every renew interval', t: { onLiveSession: true }, want: 5_863 },
    { name: 'overdue: at once', t: { now: 200_000 }, want: 0 },
  ])('$name', ({ t, want }) => expect(leaderDelay({ ...base, ...t })).toBeCloseTo(want, 6));

  it("a follower's fallback on a lease last held on a session waits out the holder's backstop read (jittered), its renew deadline and a retry", () => {
    // client-go's timings: the holder reads its lease every 4 lease durations (60 s, up to 66 s), stops within 10 s
    expect(sessionFallbackMs({ sessionBackstopMs: 60_000, renewDeadlineMs: 10_000, retryPeriodMs: 2_000 })).toBe(78_000);
  });

  it("a term whose row shows a longer lease duration than the follower's own (a fleet part way through a change of timings): figured on the holder's duration, its renew deadline and retry at most that", () => {
    const s = { leaseDurationMs: 15_000, sessionFallbackMs: 78_000 };
    expect(sessionFallbackFor(s, 15)).toBe(78_000);
    expect(sessionFallbackFor(s, 5)).toBe(78_000); // a first term, or a shorter holder: its own wait covers it
    expect(sessionFallbackFor(s, undefined)).toBe(78_000); // no row seen: only its own timings to go by
    // a 30 s holder reads its row every 120 s, up to 132 s, and stops within its renew deadline (< 30 s)
    expect(sessionFallbackFor(s, 30)).toBe(132_000 + 30_000 + 30_000);
  });
});

describe('renewalBoundMs: how long a renewal waits for its answer', () => {
  it.each([
    // client-go's timings: sent 5,863 ms after the last renewal, 4,137 ms before the renew deadline
    { name: 'half the time left before the renew deadline: abandoned unanswered, a second try still fits', left: 4_137, want: 2_068.5 },
    { name: 'never under the least bound (a healthy DynamoDB answers well within it)', left: 1_500, want: MIN_RENEWAL_BOUND_MS },
    // before: half the time left whatever DynamoDB's pace, so one answering every request in 2.5 s lost the term at each renewal
    { name: 'a DynamoDB answering slowly (the last answer took 2.5 s): half again that, up to 1 s before the deadline', left: 4_137, answer: 2_500, want: 3_137 },
    { name: 'a DynamoDB answering in 2 s: half again that', left: 4_137, answer: 2_000, want: 3_000 },
    { name: 'a healthy DynamoDB (10 ms): half the time left', left: 4_137, answer: 10, want: 2_068.5 },
    { name: 'past the deadline: the least bound (the deadline has stopped the term; the request is let go)', left: -200, want: MIN_RENEWAL_BOUND_MS },
  ])('$name', ({ left, want, answer }: { left: number; want: number; answer?: number }) => expect(renewalBoundMs(left, answer)).toBe(want));
});

describe('pacedCadenceMs: how long after a renewal was sent the next goes out', () => {
  const leader = { cadenceMs: 5_863, renewDeadlineMs: 10_000, retryPeriodMs: 2_000 };
  const session = { cadenceMs: 4_863, renewDeadlineMs: 7_500, retryPeriodMs: 1_500 };
  it.each([
    { name: 'a healthy DynamoDB (10 ms): the cadence', o: leader, answer: 10, want: 5_863 },
    { name: 'no answer known yet: the cadence', o: leader, want: 5_863 },
    { name: 'a leader on a DynamoDB answering in 2 s: the cadence still leaves the renewal 3 s and a try again 1 s', o: leader, answer: 2_000, want: 5_863 },
    // before: every 5,863 ms, 4,137 ms before the deadline: a renewal given 3,137 ms, abandoned, the term lost every cycle
    { name: 'a leader on one answering in 4 s: sooner, 6 s and 1 s before the deadline', o: leader, answer: 4_000, want: 3_000 },
    // before: every 4,863 ms, 2,637 ms before the deadline: a renewal given 1,637 ms at the most, each abandoned
    { name: 'a Session on one answering in 1.5 s: sooner, 2.25 s and 1 s before the deadline', o: session, answer: 1_500, want: 4_250 },
    { name: 'never sooner than a retry period (no hot loop, however slow)', o: session, answer: 6_000, want: 1_500 },
    { name: 'timings shorter than the least bound (a 1 s renew deadline): the cadence, on a healthy DynamoDB', o: { cadenceMs: 663, renewDeadlineMs: 1_000, retryPeriodMs: 200 }, answer: 5, want: 663 },
  ])('$name', ({ o, answer, want }: { o: typeof leader; answer?: number; want: number }) => expect(pacedCadenceMs(o, answer)).toBe(want));
});

describe('handOffDelay: a cancelled leader with an heir leads on until the heir reads', () => {
  const base = { promptly: false, pushLive: false, retrying: false, renewals: 5, since: 0, renewedAt: 100_000, cadenceMs: 5_863, leaseDurationMs: 15_000, now: 101_000 };
  it.each([
    { name: 'until its next renewal would be due', t: {}, want: 4_863 },
    { name: 'the heir is told by a wake: at once', t: { pushLive: true }, want: 0 },
    { name: 'the caller waits for the release (withLease): at once', t: { promptly: true }, want: 0 },
    { name: 'after a failed renewal: at once', t: { retrying: true }, want: 0 },
    { name: 'a term not yet renewed twice, the heir still settling on it: at once', t: { renewals: 1, since: 90_000 }, want: 0 },
    { name: 'renewed once but older than the settling terms: until the next renewal', t: { renewals: 1, since: 0 }, want: 4_863 },
    // a 60 s lease's 30 s renew interval: waited out whole, the stop's 10 s on DynamoDB came after it, past the 30 s before SIGKILL
    { name: 'a renewal due past HEIR_WAIT_MAX_MS: HEIR_WAIT_MAX_MS', t: { cadenceMs: 29_863 }, want: HEIR_WAIT_MAX_MS },
  ])('$name', ({ t, want }) => expect(handOffDelay({ ...base, ...t })).toBe(want));
});

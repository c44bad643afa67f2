import { describe, expect, it } from 'vitest';
import type { Lease } from '../../lib/schemas/lease.js';
import { CHASE_FIRST_MS, READ_AFTER_MS, RenewalPhase, SETTLING_READ_MS, decideFollower, holderSilent, isQuiet, isVacant, judgedOnSession, nextReadDelay, ownSessionRead, pollPlan, stepDelay, termToConfirm, type CadenceView, type SessionRow, type FollowerDecision, type FollowerView } from '../../lib/sdk/step.js';

const T = 100_000; // monotonic now
const held = (o: Partial<Lease> = {}): Lease =>
  ({ name: 'job', revision: 3, holderIdentity: 'a', holderInstance: 'a-1', leaseDurationSeconds: 15, acquireTime: 1, renewTime: 1, leaseTransitions: 0, fencingToken: 7, ...o }) as Lease;
const vacant = (o: Partial<Lease> = {}): Lease => ({ name: 'job', revision: 3, leaseDurationSeconds: 15, leaseTransitions: 1, fencingToken: 7, ...o }) as Lease;
const view = (o: Partial<FollowerView>): FollowerView => ({
  lease: held(),
  identity: 'b',
  instance: 'b-1',
  mode: 'coordinated',
  candidate: true,
  ackedElection: undefined,
  unanswered: false,
  standAgain: undefined,
  // (only a lease row found gone since the read before asks anything of its own: noRow, below)
  hadRow: false,
  now: T,
  observedAt: T - 1_000,
  vacantSince: undefined,
  vanished: undefined,
  retryPeriodMs: 2_000,
  fallbackAfterMs: 45_000,
  ...o,
});
const decision = (o: Partial<FollowerDecision>): FollowerDecision => ({ confirm: false, answer: undefined, vacantSince: undefined, wakeAt: undefined, reportVacancy: false, take: undefined, ...o });
const election: Lease['election'] = { id: 'e1', startedAt: 1, deadline: 5_001, strategy: 'OldestEmulationVersion' }; // an ack window of 5 s
const heldElection: Lease['election'] = { id: 'e2', startedAt: 1, deadline: 96_001, notBefore: 96_001, strategy: 'OldestEmulationVersion' };
const failure: NonNullable<Lease['lastElectionFailure']> = { at: 50, electionId: 'job#3', reason: 'noLiveCandidates', message: 'no live candidate' };

const rows: { name: string; view: Partial<FollowerView>; want: FollowerDecision }[] = [
  { name: 'a live term held by another: nothing', view: {}, want: decision({}) },
  { name: 'elected for this start-up: confirm, nothing else', view: { lease: held({ holderIdentity: 'b', holderInstance: 'b-1', election }) }, want: decision({ confirm: true }) },
  { name: 'elected for an earlier start-up of this name: not ours to confirm', view: { lease: held({ holderIdentity: 'b', holderInstance: 'b-0' }) }, want: decision({}) },
  { name: 'an open election not yet answered: answer it', view: { lease: held({ election }) }, want: decision({ answer: { election: 'e1@1' } }) },
  { name: 'an election answered already: not again', view: { lease: held({ election }), ackedElection: 'e1@1' }, want: decision({}) },
  // found by a review (2026-12-05): ids are `<lease>#<revision>`, and a row made again after a delete
  // starts at revision 1: a worker that had answered `job#1` let the new `job#1` pass unanswered
  { name: 'an election of the id of one answered before, started later (the row made again after a delete): answer it', view: { lease: held({ election: { ...election, startedAt: 9_000, deadline: 14_000 } }), ackedElection: 'e1@1' }, want: decision({ answer: { election: 'e1@9000' } }) },
  { name: 'no candidacy (NoCoordination): never answers', view: { lease: held({ election }), candidate: false, mode: 'NoCoordination' }, want: decision({}) },
  { name: 'a ping unanswered while in doubt: answer now', view: { unanswered: true }, want: decision({ answer: 'unanswered' }) },
  // the tables made anew (a new user's trial, 2026-12-05): the candidate row gone too, registered again only at the candidacy's renewal, 10 minutes on
  { name: 'the lease row gone since the read before: renew the candidacy (noRow), which registers a row gone too', view: { lease: undefined, hadRow: true }, want: decision({ answer: 'noRow', vacantSince: T }) },
  { name: '… still gone at the next read: not again', view: { lease: undefined, hadRow: false, vacantSince: T - 2_000 }, want: decision({ vacantSince: T - 2_000 }) },
  { name: '… nor without a candidacy (NoCoordination)', view: { lease: undefined, hadRow: true, candidate: false, mode: 'NoCoordination' }, want: decision({ vacantSince: T, take: 'self' }) },
  { name: 'a term this start-up lost, the lease in a later term held by another: stand again (renew the candidacy)', view: { identity: 'a', instance: 'a-2', standAgain: 6 }, want: decision({ answer: 'standAgain' }) },
  { name: '… or by this name again in a later term (another start-up): stand again too', view: { identity: 'a', instance: 'a-2', standAgain: 6, lease: held({ holderInstance: 'a-1', fencingToken: 9 }) }, want: decision({ answer: 'standAgain' }) },
  { name: '… but not while the lease still shows the term it lost', view: { identity: 'a', instance: 'a-2', standAgain: 7 }, want: decision({}) },
  { name: '… nor while the lease has no holder (no later term yet: the election pings it anyway)', view: { identity: 'a', instance: 'a-2', standAgain: 7, lease: vacant({ fencingToken: 7 }), observedAt: T }, want: decision({ vacantSince: T }) },
  { name: '… nor without a candidacy', view: { identity: 'a', instance: 'a-2', standAgain: 6, candidate: false }, want: decision({}) },
  { name: 'the successor, term live: wakes the moment it would run out', view: { lease: held({ successor: 'b' }) }, want: decision({ wakeAt: T - 1_000 + 15_000 + 1 }) },
  { name: 'the successor of another start-up: no wake-up', view: { lease: held({ successor: 'b', successorInstance: 'b-0' }) }, want: decision({}) },
  { name: 'the successor, but the lease prefers another: not the successor', view: { lease: held({ successor: 'b', preferredHolder: 'c' }) }, want: decision({}) },
  { name: 'the term ran out (watched unchanged for a term): report it', view: { observedAt: T - 15_001 }, want: decision({ vacantSince: T - 1, reportVacancy: true }) },
  { name: 'exactly a term watched: not yet expired', view: { observedAt: T - 15_000 }, want: decision({}) },
  { name: 'ran out, reported already: do not report again', view: { observedAt: T - 20_000, lease: held({ vacancyReport: { by: 'c', at: 1, observedRevision: 3 } }) }, want: decision({ vacantSince: T - 5_000 }) },
  { name: 'a report standing unanswered (no election on it), seen less than REPORT_ANSWER_MS ago: look again then', view: { observedAt: T - 20_000, lease: held({ vacancyReport: { by: 'c', at: 1, observedRevision: 3 } }), askSeenAt: T - 9_000 }, want: decision({ vacantSince: T - 5_000, wakeAt: T + 1_000 + 1 }) },
  { name: '… seen REPORT_ANSWER_MS ago: no coordinator runs; the report proves the term over, so take it itself', view: { observedAt: T - 20_000, lease: held({ vacancyReport: { by: 'c', at: 1, observedRevision: 3 } }), askSeenAt: T - 10_000 }, want: decision({ vacantSince: T - 5_000, take: 'self' }) },
  { name: '… answered (an election opened on it, first seen 5 s ago): the election decides, for its ack window and REPORT_ANSWER_MS from then', view: { observedAt: T - 20_000, lease: held({ vacancyReport: { by: 'c', at: 1, observedRevision: 3 }, election }), ackedElection: 'e1@1', askSeenAt: T - 5_000 }, want: decision({ vacantSince: T - 5_000, wakeAt: T - 5_000 + 5_000 + 10_000 + 1 }) },
  { name: 'ran out, an election open: no report', view: { observedAt: T - 20_000, lease: held({ election }), ackedElection: 'e1@1', askSeenAt: T - 1_000 }, want: decision({ vacantSince: T - 5_000, wakeAt: T - 1_000 + 15_000 + 1 }) },
  { name: '… the election left open its ack window and REPORT_ANSWER_MS (a coordinator gone mid-election, seed 49950): no coordinator runs, so take it itself', view: { observedAt: T - 20_000, lease: held({ election }), ackedElection: 'e1@1', askSeenAt: T - 15_000 }, want: decision({ vacantSince: T - 5_000, take: 'self' }) },
  { name: '… but not before the successors had their turn', view: { observedAt: T - 15_500, lease: held({ election, successor: 'c' }), ackedElection: 'e1@1', askSeenAt: T - 60_000 }, want: decision({ vacantSince: T - 500, wakeAt: T - 500 + 2_000 + 1 }) },
  { name: '… nor one waiting for the lease stream (awaitsStream: a deleted term\'s holder may lead on until it has handled the delete): the fallback only', view: { observedAt: T - 20_000, lease: held({ election: { ...election, awaitsStream: true } }), ackedElection: 'e1@1', askSeenAt: T - 60_000 }, want: decision({ vacantSince: T - 5_000 }) },
  { name: '… nor while the term runs (a re-election left open: the holder leads on)', view: { observedAt: T - 14_000, lease: held({ election }), ackedElection: 'e1@1', askSeenAt: T - 60_000 }, want: decision({}) },
  { name: 'no holder, an election left open its ack window and REPORT_ANSWER_MS: take it itself', view: { lease: vacant({ election }), ackedElection: 'e1@1', vacantSince: T - 14_000, askSeenAt: T - 15_000 }, want: decision({ vacantSince: T - 14_000, take: 'self' }) },
  { name: 'ran out, a successor named: its turn for one poll', view: { observedAt: T - 16_000, lease: held({ successor: 'c' }) }, want: decision({ vacantSince: T - 1_000 }) },
  { name: 'ran out, the successor had its poll: report', view: { observedAt: T - 18_000, lease: held({ successor: 'c' }) }, want: decision({ vacantSince: T - 3_000, reportVacancy: true }) },
  { name: 'ran out, this worker the successor: take it as successor', view: { observedAt: T - 16_000, lease: held({ successor: 'b' }) }, want: decision({ vacantSince: T - 1_000, take: 'successor' }) },
  // found by a review (2026-12-06): named under OldestEmulationVersion, it took the lease ahead of the third party's choice
  { name: 'ran out, this worker named successor but the lease set to a strategy Conclave does not run: not taken as successor', view: { observedAt: T - 16_000, lease: held({ successor: 'b', strategy: 'example.com/x' }) }, want: decision({ vacantSince: T - 1_000, reportVacancy: true }) },
  { name: '… nor as second successor', view: { observedAt: T - 16_000, lease: held({ successor: 'c', secondSuccessor: 'b', strategy: 'NoCoordination' }) }, want: decision({ vacantSince: T - 1_000, reportVacancy: true }) },
  { name: 'vacant (released): vacant since now, no report (nothing expired)', view: { lease: vacant() }, want: decision({ vacantSince: T }) },
  { name: 'vacant past fallbackAfter: take it itself', view: { lease: vacant(), vacantSince: T - 45_000 }, want: decision({ vacantSince: T - 45_000, take: 'self' }) },
  // a held election (notBefore: an ended term's holder on a session not yet told, unmarkedHoldMs at 15 s leases), first seen when the row was
  { name: 'vacant past fallbackAfter, its election held longer (a term ended, its mark not yet written): not before the hold ends as this worker counts it', view: { lease: vacant({ election: heldElection }), ackedElection: 'e2@1', vacantSince: T - 45_000, askSeenAt: T - 45_000 }, want: decision({ vacantSince: T - 45_000, wakeAt: T - 45_000 + 96_000 + 1 }) },
  { name: '… nor by the session fallback, the hold longer still', view: { lease: vacant({ election: heldElection }), ackedElection: 'e2@1', vacantSince: T - 78_000, askSeenAt: T - 78_000, fallbackAfterMs: 78_000 }, want: decision({ vacantSince: T - 78_000, wakeAt: T - 78_000 + 96_000 + 1 }) },
  { name: '… the hold over: taken by fallback', view: { lease: vacant({ election: heldElection }), ackedElection: 'e2@1', vacantSince: T - 96_000, askSeenAt: T - 96_000 }, want: decision({ vacantSince: T - 96_000, take: 'self' }) },
  { name: 'vacant, its election held, this worker still named successor (a hold written by a coordinator that does not unname successors): not before the hold ends', view: { lease: vacant({ election: heldElection, successor: 'b' }), ackedElection: 'e2@1', vacantSince: T - 45_000, askSeenAt: T - 45_000 }, want: decision({ vacantSince: T - 45_000, wakeAt: T - 45_000 + 96_000 + 1 }) },
  { name: '… nor as second successor', view: { lease: vacant({ election: heldElection, successor: 'c', secondSuccessor: 'b' }), ackedElection: 'e2@1', vacantSince: T - 45_000, askSeenAt: T - 45_000 }, want: decision({ vacantSince: T - 45_000, wakeAt: T - 45_000 + 96_000 + 1 }) },
  { name: '… the hold over: taken as successor', view: { lease: vacant({ election: heldElection, successor: 'b' }), ackedElection: 'e2@1', vacantSince: T - 96_000, askSeenAt: T - 96_000 }, want: decision({ vacantSince: T - 96_000, take: 'successor' }) },
  { name: '… a hold cut once the mark landed: taken by fallback as it ends', view: { lease: vacant({ election: { ...heldElection, notBefore: 40_001, deadline: 40_001 } }), ackedElection: 'e2@1', vacantSince: T - 45_000, askSeenAt: T - 45_000 }, want: decision({ vacantSince: T - 45_000, take: 'self' }) },
  { name: 'NoCoordination, vacant: take it itself at once', view: { lease: vacant(), mode: 'NoCoordination', candidate: false }, want: decision({ vacantSince: T, take: 'self' }) },
  { name: 'NoCoordination, expired: take it, never report', view: { mode: 'NoCoordination', candidate: false, observedAt: T - 30_000 }, want: decision({ vacantSince: T - 15_000, take: 'self' }) },
  { name: 'no row at all: vacant since now', view: { lease: undefined }, want: decision({ vacantSince: T }) },
  { name: 'no row, the term read before it named this start-up successor (vanished): taken once gone longer than that term', view: { lease: undefined, observedAt: T - 15_001, vanished: { role: 'successor', termMs: 15_000 } }, want: decision({ vacantSince: T, take: 'successor' }) },
  { name: '… gone exactly that term: not yet, it looks again just after', view: { lease: undefined, observedAt: T - 15_000, vanished: { role: 'successor', termMs: 15_000 } }, want: decision({ vacantSince: T, wakeAt: T + 1 }) },
  { name: '… named second successor: the successor’s grace first', view: { lease: undefined, observedAt: T - 15_001, vanished: { role: 'second', termMs: 15_000 } }, want: decision({ vacantSince: T, wakeAt: T + 200 }) },
  { name: '… named second successor, gone longer than the term and the grace: taken', view: { lease: undefined, observedAt: T - 15_201, vanished: { role: 'second', termMs: 15_000 } }, want: decision({ vacantSince: T, take: 'successor' }) },
  { name: '… not yet due, but the fallback is: taken by fallback', view: { lease: undefined, observedAt: T - 1_000, vacantSince: T - 45_000, vanished: { role: 'successor', termMs: 60_000 } }, want: decision({ vacantSince: T - 45_000, wakeAt: T + 59_001, take: 'self' }) },
  { name: 'no row, nothing remembered of the term before: the fallback’s wait (three terms)', view: { lease: undefined, observedAt: T - 15_001, vacantSince: T - 15_001 }, want: decision({ vacantSince: T - 15_001 }) },
  { name: 'vacant, its election failed with no live candidate (asked in vain, the ping missed): answer the failure by renewing', view: { lease: vacant({ lastElectionFailure: failure }) }, want: decision({ vacantSince: T, answer: { election: 'failed:job#3@50' } }) },
  { name: 'vacant, the same failed election answered already: not again', view: { lease: vacant({ lastElectionFailure: failure }), ackedElection: 'failed:job#3@50' }, want: decision({ vacantSince: T }) },
  { name: 'vacant, a later failure: answered once more', view: { lease: vacant({ lastElectionFailure: { ...failure, electionId: 'job#9' } }), ackedElection: 'failed:job#3@50' }, want: decision({ vacantSince: T, answer: { election: 'failed:job#9@50' } }) },
  { name: 'a failure of another reason (contradictory strategies): renewing would not help', view: { lease: vacant({ lastElectionFailure: { ...failure, reason: 'contradictoryStrategies' } }) }, want: decision({ vacantSince: T }) },
  { name: 'a failure on a held row: nothing to answer', view: { lease: held({ lastElectionFailure: failure }) }, want: decision({}) },
];

describe('decideFollower', () => {
  it.each(rows)('$name', ({ view: v, want }) => expect(decideFollower(view(v))).toEqual(want));
});

describe('isVacant: as this follower watched it', () => {
  it.each([
    { name: 'held, watched for less than a term: not vacant', l: held(), at: T - 15_000, want: false },
    { name: 'held, watched unchanged for more than a term: vacant', l: held(), at: T - 15_001, want: true },
    { name: 'held, a vacancy reported: vacant', l: held({ vacancyReport: { by: 'c', at: 1, observedRevision: 3 } }), at: T, want: true },
    { name: 'nobody holds it: vacant', l: vacant(), at: T, want: true },
    { name: 'no row: vacant', l: undefined, at: T, want: true },
  ])('$name', ({ l, at, want }) => expect(isVacant(l, at, T)).toBe(want));
});

describe('pollPlan: what a follower reads next', () => {
  const onSession = held({ session: 'p:s', renewTime: 2 }); // renewed since acquired: quiet
  const base = { mode: 'coordinated' as const, woken: false, pushLive: true, raw: onSession, view: onSession, leaseReadAt: T - 1_000, now: T, backstopMs: 30_000, vouched: true };
  it.each([
    { name: 'coordinated, a quiet lease on a session, wakes live, row read lately: the session row alone, eventually consistent', p: {}, want: { consistent: false, sessionOnly: true } },
    { name: 'woken: the lease row, consistently (it is news)', p: { woken: true }, want: { consistent: true, sessionOnly: false } },
    { name: 'wakes not reaching it: the lease row', p: { pushLive: false }, want: { consistent: false, sessionOnly: false } },
    { name: 'the row not read for the backstop: the lease row', p: { leaseReadAt: T - 30_000 }, want: { consistent: false, sessionOnly: false } },
    { name: 'the row never read: the lease row', p: { leaseReadAt: undefined }, want: { consistent: false, sessionOnly: false } },
    { name: 'not held on a session: the lease row', p: { raw: held(), view: held() }, want: { consistent: false, sessionOnly: false } },
    { name: 'not quiet (an election open): the lease row', p: { view: held({ session: 'p:s', election }) }, want: { consistent: false, sessionOnly: false } },
    // a review: a hand-over by an elector whose process ran on, its wake lost, left the heir reading only that process's session row, renewed on, for 49.4 s
    { name: 'the session row names the term as left, or none vouches for it (its elector stopped: handed over, released or left to run out; its session ended): the lease row', p: { vouched: false }, want: { consistent: false, sessionOnly: false } },
    { name: 'NoCoordination: the lease row, consistently, as client-go reads', p: { mode: 'NoCoordination' as const }, want: { consistent: true, sessionOnly: false } },
  ])('$name', ({ p, want }) => expect(pollPlan({ ...base, ...p })).toEqual(want));
});

describe('holderSilent: a renewal stamped longer ago than the renew deadline and a stamp’s error, when the lease was read', () => {
  const s = { renewDeadlineMs: 10_000, stampErrorMs: 500 };
  const OFF = 1_000_000; // DynamoDB's time less monotonic
  const read = (renewTime: number) => ({ lastRead: held({ renewTime: OFF + renewTime }), leaseReadAt: T });
  it.each([
    { name: 'stamped 10.5 s before the read: not yet', st: read(T - 10_500), offset: OFF, want: false },
    { name: 'stamped 10.501 s before it: silent', st: read(T - 10_501), offset: OFF, want: true },
    { name: 'the clock not vouched for: never', st: read(T - 60_000), offset: undefined, want: false },
    { name: 'nobody holds it: never', st: { lastRead: vacant(), leaseReadAt: T }, offset: OFF, want: false },
  ])('$name', ({ st, offset, want }) => expect(holderSilent(s, st, offset)).toBe(want));
});

describe('nextReadDelay: when a follower reads next', () => {
  const quiet = (o: Partial<Lease> = {}) => held({ acquireTime: 1, renewTime: 5_001, ...o });
  const cadence = (o: Partial<CadenceView>): CadenceView => ({ lease: quiet(), identity: 'b', instance: 'b-1', mode: 'coordinated', now: T, retryPeriodMs: 2_000, expectedAt: undefined, cadenceKnown: o.expectedAt !== undefined, settlingForMs: undefined, leaseDurationMs: 15_000, termEndsAt: undefined, misses: 0, random: 0.5, ...o });
  it.each<{ name: string; view: Partial<CadenceView>; want: number }>([
    { name: 'NoCoordination: every retry period, jittered up to a fifth (client-go)', view: { mode: 'NoCoordination' }, want: 2_200 },
    { name: 'a quiet lease, not its successor: every two retry periods, jittered up to a tenth', view: {}, want: 4_200 },
    { name: 'a vacant lease: every retry period', view: { lease: vacant() }, want: 2_200 },
    { name: 'an election open: every retry period (to answer its ping)', view: { lease: quiet({ election }) }, want: 2_200 },
    { name: 'an electee not confirmed yet (never renewed since taken): every retry period', view: { lease: held({ acquireTime: 5, renewTime: 5 }) }, want: 2_200 },
    { name: 'a preemption aimed at another: every retry period', view: { lease: quiet({ preferredHolder: 'c' }) }, want: 2_200 },
    { name: 'the successor, cadence not known yet: every retry period', view: { lease: quiet({ successor: 'b', successorInstance: 'b-1' }) }, want: 2_200 },
    { name: 'the successor, a renewal expected later: just after it lands', view: { lease: quiet({ successor: 'b' }), expectedAt: T + 700 }, want: 700 + READ_AFTER_MS },
    { name: 'the successor, the renewal not there at the expected time: again 50 ms later', view: { lease: quiet({ successor: 'b' }), expectedAt: T - READ_AFTER_MS, misses: 1 }, want: CHASE_FIRST_MS },
    { name: '… then as long again as it has been overdue (50, 100, 200 … ms after the aim)', view: { lease: quiet({ successor: 'b' }), expectedAt: T - 100 - READ_AFTER_MS, misses: 3 }, want: 2 * CHASE_FIRST_MS },
    { name: '… never more than a retry period', view: { lease: quiet({ successor: 'b' }), expectedAt: T - 9_000, misses: 12 }, want: 2_000 },
    { name: 'the successor, a miss moved the aim up (the bracket is wide): waits for the new aim', view: { lease: quiet({ successor: 'b' }), expectedAt: T + 300, misses: 1 }, want: 300 + READ_AFTER_MS },
    { name: 'the successor, cadence known but no aim (the renewals land later than any bound): chases', view: { lease: quiet({ successor: 'b' }), cadenceKnown: true, misses: 2 }, want: 2 * CHASE_FIRST_MS },
    // a cadence learnt wrong (seed 1846405520: 275 s from stamps on both sides of a spell on a session) never outlasts the term
    { name: 'the successor, a renewal expected after the term it watches runs out: reads as it runs out', view: { lease: quiet({ successor: 'b' }), expectedAt: T + 270_000, termEndsAt: T + 4_000 }, want: 4_000 + READ_AFTER_MS },
    { name: 'the successor, the term it watches already ran out (its takeover failed, or its answer was lost): again within 150 ms', view: { lease: quiet({ successor: 'b' }), expectedAt: T + 259_000, termEndsAt: T - 500 }, want: SETTLING_READ_MS },
    { name: '… for two lease durations after the term ran out; a take held off longer (a session’s fallback): every retry period', view: { lease: quiet({ successor: 'b' }), expectedAt: T + 259_000, termEndsAt: T - 30_001 }, want: 2_000 },
    { name: '… and just inside those two lease durations: still within 150 ms', view: { lease: quiet({ successor: 'b' }), expectedAt: T + 259_000, termEndsAt: T - 29_999 }, want: SETTLING_READ_MS },
    // the crash test of test/sdk/elector.test.ts (seed 1 with 8614b8b): the second successor first read the successor's new term 211 ms after it landed, at its grace, so it watched that term run out as late
    { name: 'the second successor, the term it watches about to run out: reads as it runs out, when the successor takes it, not only after its grace', view: { lease: quiet({ secondSuccessor: 'b' }), expectedAt: T + 270_000, termEndsAt: T + 4_000 }, want: 4_000 + READ_AFTER_MS },
    { name: '… the successor’s take not seen there: chased as a renewal is, 50 ms later', view: { lease: quiet({ secondSuccessor: 'b' }), expectedAt: T + 270_000, termEndsAt: T - READ_AFTER_MS }, want: CHASE_FIRST_MS },
    { name: '… then as long again as the term has been over', view: { lease: quiet({ secondSuccessor: 'b' }), expectedAt: T + 270_000, termEndsAt: T - 60 }, want: 60 },
    { name: '… but not past its grace (200 ms)', view: { lease: quiet({ secondSuccessor: 'b' }), expectedAt: T + 270_000, termEndsAt: T - 120 }, want: 200 - 120 + READ_AFTER_MS },
    { name: '… its grace over: within 150 ms, as the successor', view: { lease: quiet({ secondSuccessor: 'b' }), expectedAt: T + 259_000, termEndsAt: T - 500 }, want: SETTLING_READ_MS },
    { name: 'the lease prefers this worker (its holder yields after its next renewal): 50 ms, then backing off', view: { lease: quiet({ preferredHolder: 'b', successor: 'b' }), misses: 0 }, want: CHASE_FIRST_MS },
    { name: 'the successor of another start-up: an ordinary follower', view: { lease: quiet({ successor: 'b', successorInstance: 'b-0' }), expectedAt: T + 700 }, want: 4_200 },
    { name: 'a lease settling (a new term not renewed yet), for less than two terms: every 250 ms, jittered', view: { lease: held({ acquireTime: 5, renewTime: 5 }), settlingForMs: 29_000 }, want: SETTLING_READ_MS * 1.1 },
    { name: '… settling for two terms already (an election failing again and again): every retry period', view: { lease: vacant(), settlingForMs: 30_000 }, want: 2_200 },
    { name: 'the successor, the holder’s cadence not learnt yet, settling: every 250 ms', view: { lease: quiet({ successor: 'b' }), settlingForMs: 3_000 }, want: SETTLING_READ_MS * 1.1 },
    { name: 'a quiet lease not renewed (as seen) for nearly a term: every 250 ms until the successor’s takeover is seen', view: { termEndsAt: T + 4_000 }, want: SETTLING_READ_MS * 1.1 },
    { name: '… but not earlier than two retry periods before its end (its next read wakes for that)', view: { termEndsAt: T + 4_500 }, want: 4_500 - 4_400 },
    { name: '… a term far from its end: the quiet poll', view: { termEndsAt: T + 14_000 }, want: 4_200 },
    { name: '… nor two terms after it (a holder that keeps the row but never renews: a broken clock)', view: { termEndsAt: T - 30_000 }, want: 4_200 },
    { name: 'never more often than every retry period (short retry periods)', view: { lease: vacant(), settlingForMs: 0, retryPeriodMs: 100 }, want: 110 },
    // seeds 21049 and 22064 --regions: a holder found silent, its successors out of reach, and no wake will come
    { name: 'wakes live, a quiet lease: the backstop, two lease durations', view: { pushLive: true, termEndsAt: T + 9_000 }, want: 31_500 },
    { name: '… its holder silent when last read: once the successors’ turn is over (the term as watched, a retry period, the second’s grace)', view: { pushLive: true, holderSilent: true, lease: quiet({ secondSuccessor: 'c' }), termEndsAt: T + 9_000 }, want: 9_000 + 2_000 + 200 + READ_AFTER_MS },
    { name: '… that turn over and the term still unreported: every 150 ms, jittered', view: { pushLive: true, holderSilent: true, termEndsAt: T - 3_000 }, want: SETTLING_READ_MS * 1.1 },
    { name: '… for two lease durations past the term’s end at most, then the backstop', view: { pushLive: true, holderSilent: true, termEndsAt: T - 30_000 }, want: 31_500 },
  ])('$name', ({ view: v, want }) => expect(nextReadDelay(cadence(v))).toBeCloseTo(want, 6));

  it('isQuiet: held, renewed since taken, nothing pending', () => {
    expect(isQuiet(held({ acquireTime: 1, renewTime: 2 }))).toBe(true);
    expect(isQuiet(held({ acquireTime: 2, renewTime: 2 }))).toBe(false);
    expect(isQuiet(held({ acquireTime: 1, renewTime: 2, vacancyReport: { by: 'c', at: 1, observedRevision: 3 } }))).toBe(false);
    expect(isQuiet(vacant())).toBe(false);
    expect(isQuiet(undefined)).toBe(false);
  });
});

describe('RenewalPhase: where the holder’s next renewal lands, on the successor’s clock', () => {
  // The holder's stamps run 1.8e12 ahead of the successor's monotonic clock; its renewals land 7 ms
  // after their stamp and are read 2 ms later. Only differences matter.
  const BASE = 1_800_000_000_000;
  const term = 'a-1|7';
  it('two stamps farther apart than the lease lasts are not a cadence: it starts again from the newer (the term lived on a session between)', () => {
    let p = RenewalPhase.NONE;
    p = p.seen(term, BASE + 5_000, 5_300, undefined, 15_000);
    p = p.seen(term, BASE + 280_000, 280_300, undefined, 15_000);
    expect(p.intervalMs()).toBeUndefined();
    expect(p.expectedAt()).toBeUndefined();
    p = p.seen(term, BASE + 285_000, 285_300, undefined, 15_000);
    expect(p.intervalMs()).toBe(5_000);
    // without the bound (the old behaviour) the gap was taken for the cadence
    let q = RenewalPhase.NONE;
    q = q.seen(term, BASE + 5_000, 5_300);
    q = q.seen(term, BASE + 280_000, 280_300);
    expect(q.intervalMs()).toBe(275_000);
  });

  it('knows nothing before two renewals', () => {
    let p = RenewalPhase.NONE;
    expect(p.expectedAt()).toBeUndefined();
    p = p.seen(term, BASE + 5_000, 5_300);
    expect(p.expectedAt()).toBeUndefined();
  });

  it('learns the cadence, aims earlier until a read comes too early, then reads within a few ms of the landing', () => {
    let p = RenewalPhase.NONE;
    const landing = (k: number) => k * 5_000 + 7; // on the successor's clock, renewal k
    p = p.seen(term, BASE + 5_000, 5_400); // first seen 393 ms late (an ordinary poll)
    p = p.seen(term, BASE + 10_000, 10_300);
    expect(p.intervalMs()).toBe(5_000);
    let read = p.expectedAt()!;
    expect(read).toBe(15_300 - 100); // aims 100 ms earlier than its best so far
    let k = 3;
    for (let step = 0; step < 40 && k < 12; step++) {
      if (read >= landing(k)) {
        p = p.seen(term, BASE + k * 5_000, read + 2);
        k++;
        read = p.expectedAt()!;
      } else {
        p = p.missed(read);
        read += CHASE_FIRST_MS;
      }
    }
    const lag = p.expectedAt()! - landing(k);
    expect(lag).toBeGreaterThanOrEqual(0);
    expect(lag).toBeLessThanOrEqual(CHASE_FIRST_MS);
  });

  it('follows a holder whose renewals come to land later (its phase moved): the old bounds are dropped', () => {
    let p = RenewalPhase.NONE;
    for (let k = 1; k <= 4; k++) p = p.seen(term, BASE + k * 5_000, k * 5_000 + 10);
    expect(p.expectedAt()).toBe(25_000 + 10 - 100); // no read has come too early yet: it probes 100 ms earlier
    p = p.missed(24_910);
    p = p.missed(25_300); // the renewal lands 400 ms later than before
    p = p.seen(term, BASE + 25_000, 25_410);
    expect(p.expectedAt()).toBeGreaterThan(30_300);
    expect(p.expectedAt()).toBeLessThanOrEqual(30_410);
  });

  it('follows a holder whose stamps step back (a later sample moved its estimate of DynamoDB\'s time down, within its error): it aims at the landing, not that much early', () => {
    // renewals land every 863 ms (k * 863 on the successor's clock) and are read 3 ms later; stamped 492 ms
    // ahead of that, from the fourth on 73 ms ahead (the holder's offset clamped down by 419 ms)
    const stampOf = (k: number) => BASE + k * 863 + (k < 4 ? 492 : 73);
    let p = RenewalPhase.NONE;
    for (let k = 1; k <= 4; k++) p = p.seen(term, stampOf(k), k * 863 + 3);
    expect(p.intervalMs()).toBe(863);
    // before: it kept the bound learnt against the older stamps and aimed 516 ms early (3799 for a landing at 4315)
    expect(p.expectedAt()).toBeGreaterThanOrEqual(5 * 863 - 100);
    expect(p.expectedAt()).toBeLessThanOrEqual(5 * 863 + 3);
    p = p.seen(term, stampOf(5), 5 * 863 + 3);
    expect(p.expectedAt()).toBeGreaterThanOrEqual(6 * 863 - 100);
    expect(p.expectedAt()).toBeLessThanOrEqual(6 * 863 + 3);
  });

  it('an older copy (an eventually consistent read) teaches nothing; a new term starts afresh', () => {
    let p = RenewalPhase.NONE;
    p = p.seen(term, BASE + 5_000, 5_010);
    p = p.seen(term, BASE + 10_000, 10_010);
    p = p.seen(term, BASE + 5_000, 12_000);
    expect(p.intervalMs()).toBe(5_000);
    p = p.seen('c-1|8', BASE + 11_000, 11_010);
    expect(p.intervalMs()).toBeUndefined();
  });
});

describe('stepDelay: when an elector steps next', () => {
  const base = { planned: 4_000, clockKnown: true, random: 0.5, wakeAt: undefined, now: 100_000 };
  it.each([
    { name: 'as its side planned', d: {}, want: 4_000 },
    { name: "DynamoDB's time in doubt: within about half a second (jittered)", d: { clockKnown: false }, want: 500 },
    { name: 'in doubt, the draw at its lowest: 0.6 of it', d: { clockKnown: false, random: 0 }, want: 300 },
    { name: 'in doubt, but planned sooner: as planned', d: { clockKnown: false, planned: 100 }, want: 100 },
    { name: 'the watched term runs out sooner: then', d: { wakeAt: 101_000 }, want: 1_000 },
    { name: 'the watched term ran out already: at once', d: { wakeAt: 99_000 }, want: 0 },
  ])('$name', ({ d, want }) => expect(stepDelay({ ...base, ...d })).toBe(want));
});

describe('termToConfirm: a term the coordinator gave this start-up, or one rewritten under it', () => {
  const mine = (o: Partial<Lease>) => held({ holderIdentity: 'b', holderInstance: 'b-1', fencingToken: 9, termToken: 9, ...o });
  it.each([
    { name: 'its own term: confirmed as the row has it', l: mine({}), led: 7, want: { end: false, term: { holderIdentity: 'b', fencingToken: 9 } } },
    { name: 'a row without a token copy (an older writer): confirmed', l: mine({ termToken: undefined }), led: -1, want: { end: false, term: { holderIdentity: 'b', fencingToken: 9 } } },
    { name: 'a token below one this start-up led (moved back): ended on the row', l: mine({ fencingToken: 6, termToken: 6 }), led: 7, want: { end: true, term: { holderIdentity: 'b', fencingToken: 6 } } },
    { name: "a token moved under the term's copy: ended on the row, conditioned on the copy", l: mine({ fencingToken: 12 }), led: 7, want: { end: true, term: { holderIdentity: 'b', fencingToken: 9 } } },
    { name: 'a term its own leader ended on the row (its end in flight): ended again, not confirmed (seed 970345)', l: mine({}), led: 9, ended: 9, want: { end: true, term: { holderIdentity: 'b', fencingToken: 9 } } },
    { name: 'a newer term after one it ended: confirmed', l: mine({ fencingToken: 12, termToken: 12 }), led: 9, ended: 9, want: { end: false, term: { holderIdentity: 'b', fencingToken: 12 } } },
  ])('$name', ({ l, led, ended, want }: { l: Lease; led: number; ended?: number; want: unknown }) => expect(termToConfirm(l, led, ended)).toEqual(want));
});

describe('judgedOnSession and ownSessionRead: a term held on a session, as a follower judges it', () => {
  const onSession = (o: Partial<Lease> = {}) => held({ holderInstance: 'a_1@pa', session: 's-a', renewTime: 1_000, ...o });
  const row = (name: string, renewTime: number, process?: string) => ({ name, renewTime, ...(process ? { process } : {}) });
  const FALLBACK = 78_000;
  it.each([
    { name: 'the named row is the holder’s process’s: renewed by the later stamp', l: onSession(), named: row('s-a', 5_000, 'pa'), own: undefined, want: { renewTime: 5_000, leaseDurationSeconds: 15 } },
    { name: 'an older SDK’s row (no process): trusted as it was', l: onSession(), named: row('s-a', 5_000), own: undefined, want: { renewTime: 5_000, leaseDurationSeconds: 15 } },
    // simulator seed 9248: a peer wrote `session` on the lease of a holder on no session (it renews the lease itself)
    { name: 'a holder on no session: judged by the lease’s own stamp, whatever its `session` names', l: onSession({ holderInstance: 'a-1', session: 'gone' }), named: undefined, own: undefined, want: { renewTime: 1_000, leaseDurationSeconds: 15 } },
    { name: 'the named row is gone, the holder’s own process’s found: judged by it', l: onSession({ session: 'gone' }), named: undefined, own: row('s-a', 6_000, 'pa'), want: { renewTime: 6_000, leaseDurationSeconds: 15 } },
    { name: 'the named row is another process’s, the holder’s own found: judged by the holder’s, not the other’s', l: onSession({ session: 's-b' }), named: row('s-b', 9_000, 'pb'), own: row('s-a', 6_000, 'pa'), want: { renewTime: 6_000, leaseDurationSeconds: 15 } },
    { name: 'a row passed as the holder’s that is another process’s vouches for nothing: the fallback', l: onSession({ session: 'gone' }), named: undefined, own: row('s-b', 6_000, 'pb'), want: { renewTime: 1_000, leaseDurationSeconds: 78 } },
    { name: 'no row of the holder’s process: the fallback, as a lease that long', l: onSession({ session: 'gone' }), named: undefined, own: undefined, want: { renewTime: 1_000, leaseDurationSeconds: 78 } },
    // leftTerms: the holder's elector stopped and its process left the term to run out (releaseOnCancel false)
    { name: 'the named row names the term as left: renewed by the stamp it was left at, not by the row’s later renewals', l: onSession(), named: { ...row('s-a', 9_000, 'pa'), leftTerms: { job: { token: 7, instance: 'a_1@pa', stamp: 3_000 } } }, own: undefined, want: { renewTime: 3_000, leaseDurationSeconds: 15 } },
    { name: 'the named row gone, the holder’s own row names the term as left: by that stamp, however fresh the row (seeds 9400162, 9500512)', l: onSession({ session: 'gone' }), named: undefined, own: { ...row('s-a', 60_000, 'pa'), leftTerms: { job: { token: 7, instance: 'a_1@pa', stamp: 2_000 } } }, want: { renewTime: 2_000, leaseDurationSeconds: 15 } },
    { name: 'left at a stamp before the lease’s own: the lease’s own', l: onSession({ session: 'gone' }), named: undefined, own: { ...row('s-a', 60_000, 'pa'), leftTerms: { job: { token: 7, instance: 'a_1@pa', stamp: 500 } } }, want: { renewTime: 1_000, leaseDurationSeconds: 15 } },
    { name: 'a left term of another token (an earlier term): the row vouches for this one', l: onSession(), named: { ...row('s-a', 9_000, 'pa'), leftTerms: { job: { token: 6, instance: 'a_1@pa', stamp: 3_000 } } }, own: undefined, want: { renewTime: 9_000 } },
    // an operator or a peer moved the row's fencing token under the term (termToken kept: the same term, its holder's renewals still match): the name still holds (seed 14000169, --kept all)
    { name: 'the named row names the term as left, its fencing token since moved under it: by the stamp it was left at', l: onSession({ fencingToken: 619, termToken: 7 }), named: { ...row('s-a', 9_000, 'pa'), leftTerms: { job: { token: 7, instance: 'a_1@pa', stamp: 3_000 } } }, own: undefined, want: { renewTime: 3_000, leaseDurationSeconds: 15 } },
    { name: 'a left term named by a moved token, the term another (termToken 9): the row vouches for this one', l: onSession({ fencingToken: 619, termToken: 9 }), named: { ...row('s-a', 9_000, 'pa'), leftTerms: { job: { token: 619, instance: 'a_1@pa', stamp: 3_000 } } }, own: undefined, want: { renewTime: 9_000 } },
    { name: 'a left term of another instance of the process: the row vouches for this one', l: onSession(), named: { ...row('s-a', 9_000, 'pa'), leftTerms: { job: { token: 7, instance: 'a_2@pa', stamp: 3_000 } } }, own: undefined, want: { renewTime: 9_000 } },
    { name: 'a left term of another lease: the row vouches for this one', l: onSession(), named: { ...row('s-a', 9_000, 'pa'), leftTerms: { other: { token: 7, instance: 'a_1@pa', stamp: 3_000 } } }, own: undefined, want: { renewTime: 9_000 } },
  ])('$name', ({ l, named, own, want }) => expect(judgedOnSession(l, named as SessionRow | undefined, own as SessionRow | undefined, FALLBACK).lease).toMatchObject(want));

  it('reads the holder’s own process’s session only for a term its named row does not vouch for: a query, then by name within a lease duration at the same revision', () => {
    const l = onSession({ session: 'gone' });
    const L = 15_000;
    expect(ownSessionRead(onSession(), 3, row('s-a', 5_000, 'pa'), undefined, T, L)).toBeUndefined(); // vouched
    expect(ownSessionRead(onSession({ holderInstance: 'a-1' }), 3, undefined, undefined, T, L)).toBeUndefined(); // a holder on no session
    expect(ownSessionRead(l, 3, undefined, undefined, T, L)).toEqual({ kind: 'query', process: 'pa' });
    const found = { holderInstance: 'a_1@pa', revision: 3, name: 's-a', at: T - 1_000 };
    expect(ownSessionRead(l, 3, undefined, found, T, L)).toEqual({ kind: 'read', name: 's-a' });
    expect(ownSessionRead(l, 3, undefined, { ...found, name: undefined }, T, L)).toEqual({ kind: 'none' });
    // looked for again: a lease duration on, at another revision (the holder may have moved its term onto a newer session), for another holder
    expect(ownSessionRead(l, 3, undefined, { ...found, at: T - L }, T, L)).toEqual({ kind: 'query', process: 'pa' });
    expect(ownSessionRead(l, 4, undefined, found, T, L)).toEqual({ kind: 'query', process: 'pa' });
    expect(ownSessionRead(l, 3, undefined, { ...found, holderInstance: 'a_0@pa' }, T, L)).toEqual({ kind: 'query', process: 'pa' });
  });
});

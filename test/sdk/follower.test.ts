import { describe, expect, it } from 'vitest';
import type { Lease } from '../../lib/schemas/lease.js';
import { decideFollower, type FollowerDecision, type FollowerView } from '../../lib/sdk/follower.js';

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
  now: T,
  observedAt: T - 1_000,
  vacantSince: undefined,
  retryPeriodMs: 2_000,
  fallbackAfterMs: 45_000,
  ...o,
});
const decision = (o: Partial<FollowerDecision>): FollowerDecision => ({ confirm: false, answer: undefined, vacantSince: undefined, wakeAt: undefined, reportVacancy: false, take: undefined, ...o });
const election = { id: 'e1', openedAt: 1, deadline: 2 } as unknown as Lease['election'];

const rows: { name: string; view: Partial<FollowerView>; want: FollowerDecision }[] = [
  { name: 'a live term held by another: nothing', view: {}, want: decision({}) },
  { name: 'elected for this start-up: confirm, nothing else', view: { lease: held({ holderIdentity: 'b', holderInstance: 'b-1', election }) }, want: decision({ confirm: true }) },
  { name: 'elected for an earlier start-up of this name: not ours to confirm', view: { lease: held({ holderIdentity: 'b', holderInstance: 'b-0' }) }, want: decision({}) },
  { name: 'an open election not yet answered: answer it', view: { lease: held({ election }) }, want: decision({ answer: { election: 'e1' } }) },
  { name: 'an election answered already: not again', view: { lease: held({ election }), ackedElection: 'e1' }, want: decision({}) },
  { name: 'no candidacy (NoCoordination): never answers', view: { lease: held({ election }), candidate: false, mode: 'NoCoordination' }, want: decision({}) },
  { name: 'a ping unanswered while in doubt: answer now', view: { unanswered: true }, want: decision({ answer: 'unanswered' }) },
  { name: 'the successor, term live: wakes the moment it would run out', view: { lease: held({ successor: 'b' }) }, want: decision({ wakeAt: T - 1_000 + 15_000 + 1 }) },
  { name: 'the successor of another start-up: no wake-up', view: { lease: held({ successor: 'b', successorInstance: 'b-0' }) }, want: decision({}) },
  { name: 'the successor, but the lease prefers another: not the successor', view: { lease: held({ successor: 'b', preferredHolder: 'c' }) }, want: decision({}) },
  { name: 'the term ran out (watched unchanged for a term): report it', view: { observedAt: T - 15_001 }, want: decision({ vacantSince: T - 1, reportVacancy: true }) },
  { name: 'exactly a term watched: not yet expired', view: { observedAt: T - 15_000 }, want: decision({}) },
  { name: 'ran out, reported already: do not report again', view: { observedAt: T - 20_000, lease: held({ vacancyReport: { by: 'c', at: 1, observedRevision: 3 } }) }, want: decision({ vacantSince: T - 5_000 }) },
  { name: 'ran out, an election open: no report', view: { observedAt: T - 20_000, lease: held({ election }), ackedElection: 'e1' }, want: decision({ vacantSince: T - 5_000 }) },
  { name: 'ran out, a successor named: its turn for one poll', view: { observedAt: T - 16_000, lease: held({ successor: 'c' }) }, want: decision({ vacantSince: T - 1_000 }) },
  { name: 'ran out, the successor had its poll: report', view: { observedAt: T - 18_000, lease: held({ successor: 'c' }) }, want: decision({ vacantSince: T - 3_000, reportVacancy: true }) },
  { name: 'ran out, this worker the successor: take it as successor', view: { observedAt: T - 16_000, lease: held({ successor: 'b' }) }, want: decision({ vacantSince: T - 1_000, take: 'successor' }) },
  { name: 'vacant (released): vacant since now, no report (nothing expired)', view: { lease: vacant() }, want: decision({ vacantSince: T }) },
  { name: 'vacant past fallbackAfter: take it itself', view: { lease: vacant(), vacantSince: T - 45_000 }, want: decision({ vacantSince: T - 45_000, take: 'self' }) },
  { name: 'NoCoordination, vacant: take it itself at once', view: { lease: vacant(), mode: 'NoCoordination', candidate: false }, want: decision({ vacantSince: T, take: 'self' }) },
  { name: 'NoCoordination, expired: take it, never report', view: { mode: 'NoCoordination', candidate: false, observedAt: T - 30_000 }, want: decision({ vacantSince: T - 15_000, take: 'self' }) },
  { name: 'no row at all: vacant since now', view: { lease: undefined }, want: decision({ vacantSince: T }) },
];

describe('decideFollower', () => {
  it.each(rows)('$name', ({ view: v, want }) => expect(decideFollower(view(v))).toEqual(want));
});

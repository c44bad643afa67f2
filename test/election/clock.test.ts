/**
 * The coordinator's time judgements when a worker's clock lies (issue 15, item 4). Acks are judged
 * by observed change — DynamoDB copies the coordinator's own pingTime into ackedPingTime with the
 * worker's renewal — and a stamp from the future (a clock running ahead of the coordinator's by
 * more than clockSkewMs) proves nothing. Pure rows, as in decide.test.ts.
 */
import { describe, expect, it } from 'vitest';
import { answeredLastPing, decide, hasAcked, ignoredLastPing, isFresh, isPending, type Decision } from '../../lib/election/decide.js';
import type { Candidate } from '../../lib/schemas/candidate.js';
import { electionConfig } from '../../lib/schemas/config.js';
import type { Election, Lease } from '../../lib/schemas/lease.js';
import { NOW, SEC, cand, lease } from '../fixtures.js';

const config = electionConfig();
const E = config.ackWindowMs;
const SKEW = config.clockSkewMs;
const OEV = 'OldestEmulationVersion';
const run = (l: Lease | undefined, cs: Candidate[], now = NOW) => decide('component-A', l, cs, now, config);
/** An election opened (and its candidates pinged) at `startedAt`, its window ending one ack window later. */
const electionAt = (startedAt: number, extra: Partial<Election> = {}): Election => ({ id: 'component-A#13', startedAt, deadline: startedAt + E, strategy: OEV, ...extra });
const notAfter = NOW + SKEW;

describe('per-candidate judgements', () => {
  const pinged = NOW - 2 * SEC;
  it.each([
    // ackedPingTime present: the copy decides, whatever renewTime (the worker's clock) says
    { name: 'answered, clock 30 s slow', c: { pingTime: pinged, ackedPingTime: pinged, renewTime: NOW - 30 * SEC }, answered: true, ignored: false },
    { name: 'answered, clock 30 s fast', c: { pingTime: pinged, ackedPingTime: pinged, renewTime: NOW + 30 * SEC }, answered: true, ignored: false },
    { name: 'not answered, clock 30 s fast (its renewTime is after the ping, its row did not change after it)', c: { pingTime: pinged - E, ackedPingTime: 0, renewTime: NOW + 30 * SEC }, answered: false, ignored: true },
    { name: 'answered an earlier ping, not this one', c: { pingTime: pinged - E, ackedPingTime: pinged - 2 * E, renewTime: NOW }, answered: false, ignored: true },
    { name: 'never pinged', c: { ackedPingTime: 0, renewTime: NOW - 30 * SEC }, answered: true, ignored: false },
    // a KEP-style row (no ackedPingTime): renewTime ≥ pingTime
    { name: 'KEP row, renewed after the ping', c: { pingTime: pinged, renewTime: pinged + 1 }, answered: true, ignored: false },
    { name: 'KEP row, not renewed since', c: { pingTime: pinged - E, renewTime: pinged - E - 1 }, answered: false, ignored: true },
  ])('$name', ({ c, answered, ignored }) => {
    const row = cand('w', '1.30.0', '1.30.0', c);
    expect(answeredLastPing(row)).toBe(answered);
    expect(ignoredLastPing(row, NOW, E)).toBe(ignored);
  });

  it.each([
    { name: 'renewed just now', renewTime: NOW, fresh: true },
    { name: 'renewed within the margin ahead (a clock a little fast)', renewTime: NOW + SKEW, fresh: true },
    { name: 'renewed beyond the margin ahead (a clock 30 s fast): proves nothing', renewTime: NOW + 30 * SEC, fresh: false },
    { name: 'renewed an ack window ago', renewTime: NOW - E, fresh: false },
  ])('fresh: $name', ({ renewTime, fresh }) => {
    expect(isFresh(cand('w', '1.30.0', '1.30.0', { renewTime }), NOW, E, notAfter)).toBe(fresh);
  });

  it('acked: a copy of this election’s ping counts though the worker’s clock is 30 s slow; a stamp from the future does not', () => {
    const e = electionAt(NOW - SEC);
    const slowAnswer = cand('s', '1.30.0', '1.30.0', { pingTime: e.startedAt, ackedPingTime: e.startedAt, renewTime: NOW - 30 * SEC });
    expect(hasAcked(slowAnswer, e, E, notAfter)).toBe(true);
    expect(isPending(slowAnswer, e, E, notAfter)).toBe(false);
    const fastDead = cand('f', '1.30.0', '1.30.0', { pingTime: e.startedAt, ackedPingTime: 0, renewTime: NOW + 29 * SEC });
    expect(hasAcked(fastDead, e, E, notAfter)).toBe(false);
    expect(isPending(fastDead, e, E, notAfter)).toBe(true);
  });
});

interface Row {
  name: string;
  lease?: Lease;
  candidates: Candidate[];
  now?: number;
  want: Partial<Decision> & { kind: Decision['kind'] };
}

const rows: Row[] = [
  {
    name: 'vacant: a dead candidate whose clock ran 30 s fast is not fresh, so it is pinged, not elected at once',
    lease: lease(undefined),
    candidates: [cand('fast', '1.29.0', '1.30.0', { ackedPingTime: 0, renewTime: NOW + 25 * SEC }), cand('b', '1.30.0', '1.30.0', { ackedPingTime: 0, renewTime: NOW })],
    want: { kind: 'openElection', vacancy: 'noHolder', ping: ['fast'] },
  },
  {
    name: 'the election: the fast one never answered; the live one wins at the deadline',
    lease: lease(undefined, { election: electionAt(NOW - E) }),
    candidates: [cand('fast', '1.29.0', '1.30.0', { pingTime: NOW - E, ackedPingTime: 0, renewTime: NOW + 25 * SEC }), cand('b', '1.30.0', '1.30.0', { ackedPingTime: 0, renewTime: NOW - E - SEC / 2 })],
    want: { kind: 'elect', winner: 'b', acked: ['b'] },
  },
  {
    name: 'a KEP-style row 30 s fast is not waited for (answered by its own stamp) yet not counted (the stamp is from the future)',
    lease: lease(undefined, { election: electionAt(NOW - SEC) }),
    candidates: [cand('fast', '1.29.0', '1.30.0', { pingTime: NOW - SEC, renewTime: NOW + 25 * SEC }), cand('b', '1.30.0', '1.30.0', { ackedPingTime: 0, renewTime: NOW - SEC / 2 })],
    want: { kind: 'elect', winner: 'b', acked: ['b'] },
  },
  {
    name: 'the election: a worker whose clock stepped back 30 s answered (the copy of the ping): it wins at once',
    lease: lease(undefined, { election: electionAt(NOW - SEC) }),
    candidates: [
      cand('stepped', '1.29.0', '1.30.0', { pingTime: NOW - SEC, ackedPingTime: NOW - SEC, renewTime: NOW - 30 * SEC }),
      cand('b', '1.30.0', '1.30.0', { pingTime: NOW - SEC, ackedPingTime: NOW - SEC, renewTime: NOW }),
    ],
    want: { kind: 'elect', winner: 'stepped', acked: ['b', 'stepped'] },
  },
  {
    name: 'a re-election: the better candidate answered with a slow clock; the holder is preempted for it',
    lease: lease('a', { election: electionAt(NOW - SEC, { holder: 'a' }) }),
    candidates: [cand('a', '1.30.0', '1.30.0', { ackedPingTime: 0, renewTime: NOW - 10 * SEC }), cand('slow', '1.29.0', '1.30.0', { pingTime: NOW - SEC, ackedPingTime: NOW - SEC, renewTime: NOW - 31 * SEC })],
    want: { kind: 'preempt', holder: 'a', preferredHolder: 'slow' },
  },
  {
    name: 'a slow candidate that answered its last ping is still responsive: it is pinged again, not written off',
    lease: lease('a'),
    candidates: [cand('a', '1.30.0', '1.30.0', { ackedPingTime: 0, renewTime: NOW - 10 * SEC }), cand('slow', '1.29.0', '1.30.0', { pingTime: NOW - 20 * SEC, ackedPingTime: NOW - 20 * SEC, renewTime: NOW - 50 * SEC })],
    want: { kind: 'openElection', ping: ['a', 'slow'] },
  },
];

describe('decide with clocks that lie', () => {
  it.each(rows)('$name', ({ lease: l, candidates, now, want }) => {
    expect(run(l, candidates, now)).toMatchObject(want);
  });
});

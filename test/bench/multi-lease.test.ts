/**
 * The many-leases scenario judges "settled" from the processes' own lines: per lease, the
 * processes whose last line for it is `started`. At the window's end it says where the leases
 * landed (on whose session, whose successor) and what each process's session did in the window.
 */
import { describe, expect, it } from 'vitest';
import { byRoleOrder } from '../../bench/scenarios/rates.js';
import { roleLabel } from '../../bench/scenarios/steady-state.js';
import { landing, leadersByLease, sessionCounts } from '../../bench/scenarios/multi-lease.js';

describe('leaders by lease', () => {
  it('the last started/stopped line of each process for each lease decides; other lines are ignored', () => {
    const lines = [
      { identity: 'p1', event: 'ready' },
      { identity: 'p1', event: 'started', lease: 'm-0' },
      { identity: 'p2', event: 'started', lease: 'm-1' },
      { identity: 'p1', event: 'stopped', lease: 'm-0' },
      { identity: 'p3', event: 'started', lease: 'm-0' },
      { identity: 'p2', event: 'requests' },
      { identity: 'p2', event: 'started', lease: 'm-2' },
      { identity: 'p3', event: 'started', lease: 'm-2' }, // two at once: the scenario waits
    ];
    const leaders = leadersByLease(lines);
    expect([...leaders.entries()].map(([l, s]) => [l, [...s].sort()])).toEqual([
      ['m-0', ['p3']],
      ['m-1', ['p2']],
      ['m-2', ['p2', 'p3']],
    ]);
  });
});

describe('where the leases landed', () => {
  it('per process: leases on its session (its rows are named session-<identity>-…), leases naming it successor; held leases without a session counted apart', () => {
    const leases = [
      { holderIdentity: 'p1', session: 'session-p1-abc', successor: 'p2' },
      { holderIdentity: 'p1', session: 'session-p1-abc', successor: 'p3' },
      { holderIdentity: 'p2', session: 'session-p2-def', successor: 'p1' },
      { holderIdentity: 'p3', successor: 'p1' }, // renewed by its leader, no session
      {}, // vacant
      { holderIdentity: 'p1', session: 'session-p10-x' }, // another process's prefix is not p1's
    ];
    expect(landing(leases, ['p1', 'p2', 'p3'])).toEqual({ onSession: { p1: 2, p2: 1, p3: 0 }, withoutSession: 1, successorOf: { p1: 2, p2: 1, p3: 1 } });
  });
});

describe("a process's session counts over the window", () => {
  const line = (at: number, renewals: number, extra: Partial<{ started: number; failedRenewals: number; ended: number }> = {}) => ({ event: 'requests' as const, at, session: { started: 1, renewals, failedRenewals: 0, ended: 0, ...extra } });

  it('the last count inside the window minus the first; none without a session', () => {
    const lines = [line(0, 1), line(1_000, 2), { event: 'started' as const, at: 1_500 }, line(2_000, 3), line(60_000, 13, { failedRenewals: 1 }), line(70_000, 15)];
    expect(sessionCounts(lines, 500, 65_000)).toEqual({ started: 0, renewals: 11, failedRenewals: 1, foreignWrites: 0, lostAnswers: 0, ended: 0 });
    expect(sessionCounts([{ event: 'requests', at: 1 }, { event: 'requests', at: 2 }], 0, 10)).toBeUndefined();
  });
});

describe('session kinds in the figures', () => {
  it('named in words, shown after the identity heartbeats and before the coordinator', () => {
    expect(roleLabel('session-renewal', 3)).toBe('session renewals (one row per process)');
    expect(roleLabel('session-read', 3)).toBe('session reads');
    const roles = ['coordinator', 'session-read', 'leader', 'session-renewal', 'candidate'].map((r) => [r, 0] as [string, unknown]);
    expect(roles.sort(byRoleOrder).map(([r]) => r)).toEqual(['leader', 'candidate', 'session-renewal', 'session-read', 'coordinator']);
  });
});

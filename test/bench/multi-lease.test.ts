/**
 * The many-leases scenario judges "settled" from the processes' own lines: per lease, the
 * processes whose last line for it is `started`.
 */
import { describe, expect, it } from 'vitest';
import { leadersByLease } from '../../bench/scenarios/multi-lease.js';

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

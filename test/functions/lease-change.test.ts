import { describe, expect, it } from 'vitest';
import { heirsNamed, leaseChangeMatters } from '../../lib/functions/core.js';
import type { Change } from '../../lib/functions/records.js';
import type { Lease } from '../../lib/schemas/lease.js';
import { NOW, lease } from '../fixtures.js';

const change = (old: Lease | undefined, neu: Lease | undefined): Change<Lease> => ({ eventID: 'e1', eventName: old && neu ? 'MODIFY' : neu ? 'INSERT' : 'REMOVE', at: NOW, old, new: neu });
const held = lease('a', { fencingToken: 7 });

describe('leaseChangeMatters: which lease writes the lease stream reconciles on', () => {
  it.each([
    { name: 'released', old: held, neu: lease(undefined, { fencingToken: 7 }), want: true },
    { name: 'reported vacant', old: held, neu: lease('a', { fencingToken: 7, vacancyReport: { by: 'b', at: NOW, observedRevision: 12 } }), want: true },
    { name: 'strategy changed', old: held, neu: lease('a', { fencingToken: 7, strategy: 'NoCoordination' }), want: true },
    { name: 'preferred locations set (an operator’s set-locations)', old: held, neu: lease('a', { fencingToken: 7, preferredLocations: ['us-east-1a'] }), want: true },
    { name: 'preferred locations reordered', old: lease('a', { fencingToken: 7, preferredLocations: ['us-east-1a', 'us-east-1b'] }), neu: lease('a', { fencingToken: 7, preferredLocations: ['us-east-1b', 'us-east-1a'] }), want: true },
    { name: 'preferred locations cleared', old: lease('a', { fencingToken: 7, preferredLocations: [] }), neu: held, want: true },
    { name: 'taken by its successor: name the next one', old: held, neu: lease('b', { fencingToken: 8, electedBy: 'successor' }), want: true },
    { name: 'taken by the fallback: a better candidate may be waiting', old: held, neu: lease('b', { fencingToken: 8, electedBy: 'self' }), want: true },
    { name: 'created by a worker taking it directly', old: undefined, neu: lease('b', { fencingToken: 1, electedBy: 'self' }), want: true },
    { name: 'elected by the coordinator (it named the successor in the same write)', old: lease(undefined, { fencingToken: 7 }), neu: lease('b', { fencingToken: 8, electedBy: 'coordinator', successor: 'c' }), want: false },
    { name: 'a successor designated', old: held, neu: lease('a', { fencingToken: 7, successor: 'b' }), want: false },
    { name: 'a renewal', old: held, neu: lease('a', { fencingToken: 7, renewTime: NOW + 2000 }), want: false },
    { name: 'deleted while held (an operator’s delete): an election now (held until the deleted term is over), not at the next tick', old: held, neu: undefined, want: true },
    { name: 'deleted vacant', old: lease(undefined, { fencingToken: 7 }), neu: undefined, want: false },
  ])('$name → $want', ({ old, neu, want }) => {
    expect(leaseChangeMatters(change(old, neu))).toBe(want);
  });
});

describe('heirsNamed: the successors a lease write names anew, whose candidate rows the lease stream reads', () => {
  const named = lease('a', { fencingToken: 7, successor: 'b', successorInstance: 'b-1', secondSuccessor: 'c', secondSuccessorInstance: 'c-1' });
  it.each([
    { name: 'a successor designated', old: held, neu: lease('a', { fencingToken: 7, successor: 'b' }), want: [{ name: 'b' }] },
    { name: 'both named, with their start-ups', old: held, neu: named, want: [{ name: 'b', instance: 'b-1' }, { name: 'c', instance: 'c-1' }] },
    { name: 'a renewal naming the same two', old: named, neu: { ...named, renewTime: NOW + 2000 }, want: [] },
    { name: 'the same name, another start-up', old: named, neu: { ...named, successorInstance: 'b-2' }, want: [{ name: 'b', instance: 'b-2' }] },
    { name: 'the second moved up, nobody second', old: named, neu: lease('a', { fencingToken: 7, successor: 'c', successorInstance: 'c-1' }), want: [{ name: 'c', instance: 'c-1' }] },
    { name: 'names taken off', old: named, neu: held, want: [] },
    { name: 'created naming one (an election’s write)', old: undefined, neu: lease('b', { fencingToken: 8, successor: 'c' }), want: [{ name: 'c' }] },
    { name: 'deleted', old: named, neu: undefined, want: [] },
  ])('$name', ({ old, neu, want }) => {
    expect(heirsNamed(change(old, neu))).toEqual(want);
  });
});

import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { decide, type Decision } from '../../lib/election/decide.js';
import { locationOf, locationRank, preferredLocationsOf } from '../../lib/election/location.js';
import { pickBest } from '../../lib/election/ordering.js';
import { decideWithSuccession, successorOf } from '../../lib/election/successor.js';
import type { Candidate } from '../../lib/schemas/candidate.js';
import { electionConfig } from '../../lib/schemas/config.js';
import type { Lease } from '../../lib/schemas/lease.js';
import { MIN, NOW, SEC, cand, lease } from '../fixtures.js';

// The location-aware option of OldestEmulationVersion (issue 18): priority, then the emulation
// version, then the place in the preferred zones and regions, then binary version, creation, name.

const in_ = (zone: string | undefined, region?: string): Partial<Candidate> => ({ location: { ...(zone ? { zone } : {}), ...(region ? { region } : {}) } });
const ecsIn = (zone: string): Partial<Candidate> => ({ platform: { kind: 'ecs', id: 'arn:aws:ecs:us-east-1:123456789012:task/c/1', cluster: 'c', availabilityZone: zone } });
const older = (extra: Partial<Candidate> = {}): Partial<Candidate> => ({ createdAt: NOW - 2 * 60 * MIN, ...extra });
const PREF = ['us-east-1a', 'us-east-1'];

describe('where a candidate runs, and its place in a preference', () => {
  it.each([
    { name: 'a stated zone implies its region', row: cand('c', '1.0.0', '1.0.0', in_('us-east-1a')), want: { zone: 'us-east-1a', region: 'us-east-1' } },
    { name: 'a stated region alone', row: cand('c', '1.0.0', '1.0.0', in_(undefined, 'eu-west-1')), want: { region: 'eu-west-1' } },
    { name: 'the platform’s zone when none is stated (rows from before `location`)', row: cand('c', '1.0.0', '1.0.0', ecsIn('us-west-2b')), want: { zone: 'us-west-2b', region: 'us-west-2' } },
    { name: 'a stated zone over the platform’s', row: cand('c', '1.0.0', '1.0.0', { ...ecsIn('us-west-2b'), ...in_('us-east-1a') }), want: { zone: 'us-east-1a', region: 'us-east-1' } },
    { name: 'a zone ID implies no region', row: cand('c', '1.0.0', '1.0.0', in_('use1-az1')), want: { zone: 'use1-az1' } },
    { name: 'unknown', row: cand('c', '1.0.0', '1.0.0'), want: {} },
  ])('locationOf: $name', ({ row, want }) => {
    expect(locationOf(row)).toEqual(want);
  });

  it.each([
    { name: 'the zone listed first', row: cand('c', '1.0.0', '1.0.0', in_('us-east-1a')), want: 0 },
    { name: 'another zone of a listed region', row: cand('c', '1.0.0', '1.0.0', in_('us-east-1c')), want: 1 },
    { name: 'a region stated without a zone', row: cand('c', '1.0.0', '1.0.0', in_(undefined, 'us-east-1')), want: 1 },
    { name: 'a location in no entry: after all of them', row: cand('c', '1.0.0', '1.0.0', in_('eu-west-1a')), want: 2 },
    { name: 'an unknown location: the same as unlisted', row: cand('c', '1.0.0', '1.0.0'), want: 2 },
  ])('locationRank in [us-east-1a, us-east-1]: $name', ({ row, want }) => {
    expect(locationRank(row, PREF)).toBe(want);
  });

  it('no preference: everyone ranks 0', () => {
    expect(locationRank(cand('c', '1.0.0', '1.0.0', in_('us-east-1a')), [])).toBe(0);
    expect(locationRank(cand('c', '1.0.0', '1.0.0'), [])).toBe(0);
  });

  it('the lease’s own preference replaces the coordinator’s; [] on the lease turns it off', () => {
    const config = electionConfig({ preferredLocations: ['us-east-1a'] });
    expect(preferredLocationsOf(undefined, config)).toEqual(['us-east-1a']);
    expect(preferredLocationsOf(lease('a'), config)).toEqual(['us-east-1a']);
    expect(preferredLocationsOf(lease('a', { preferredLocations: ['eu-west-1'] }), config)).toEqual(['eu-west-1']);
    expect(preferredLocationsOf(lease('a', { preferredLocations: [] }), config)).toEqual([]);
  });
});

describe('pickBest with preferred locations (the order, row by row)', () => {
  it.each([
    { name: 'the preferred zone wins over an older binary elsewhere', candidates: [cand('a', '1.0.0', '1.0.0', older(in_('eu-west-1a'))), cand('b', '1.0.0', '1.1.0', in_('us-east-1a'))], want: 'b' },
    { name: 'an earlier entry wins: zone us-east-1a before the rest of us-east-1', candidates: [cand('a', '1.0.0', '1.0.0', older(in_('us-east-1c'))), cand('b', '1.0.0', '1.0.0', in_('us-east-1a'))], want: 'b' },
    { name: 'a listed region wins over an unlisted one', candidates: [cand('a', '1.0.0', '1.0.0', older(in_('eu-west-1a'))), cand('b', '1.0.0', '1.0.0', in_('us-east-1c'))], want: 'b' },
    { name: 'a known location wins over an unknown one only when it is listed', candidates: [cand('a', '1.0.0', '1.0.0', older()), cand('b', '1.0.0', '1.0.0', in_('us-east-1c'))], want: 'b' },
    { name: 'unknown and unlisted are equal: the version order decides', candidates: [cand('a', '1.0.0', '1.0.0', older()), cand('b', '1.0.0', '1.0.0', in_('eu-west-1a'))], want: 'a' },
    { name: 'within a location the version order decides', candidates: [cand('a', '1.0.0', '1.1.0', older(in_('us-east-1a'))), cand('b', '1.0.0', '1.0.0', in_('us-east-1a'))], want: 'b' },
    { name: 'the emulation version comes first: an older one elsewhere wins', candidates: [cand('a', '1.0.0', '1.1.0', in_('eu-west-1a')), cand('b', '1.1.0', '1.1.0', older(in_('us-east-1a')))], want: 'a' },
    { name: 'priority comes first: a pinned candidate elsewhere wins', candidates: [cand('a', '1.0.0', '1.0.0', { priority: 5, ...in_('eu-west-1a') }), cand('b', '1.0.0', '1.0.0', older(in_('us-east-1a')))], want: 'a' },
    { name: 'the platform’s zone counts when none is stated', candidates: [cand('a', '1.0.0', '1.0.0', older(ecsIn('eu-west-1a'))), cand('b', '1.0.0', '1.0.0', ecsIn('us-east-1a'))], want: 'b' },
    { name: 'nobody in a listed location: everyone stays eligible, the version order decides', candidates: [cand('a', '1.0.0', '1.0.0', older(in_('eu-west-1a'))), cand('b', '1.0.0', '1.0.0', in_('ap-south-1a'))], want: 'a' },
  ])('$name', ({ candidates, want }) => {
    expect(pickBest(candidates, NOW, PREF)?.candidate.name).toBe(want);
    expect(pickBest([...candidates].reverse(), NOW, PREF)?.candidate.name).toBe(want);
  });

  it('without a preference the zone plays no part', () => {
    expect(pickBest([cand('a', '1.0.0', '1.0.0', older(in_('eu-west-1a'))), cand('b', '1.0.0', '1.0.0', in_('us-east-1a'))], NOW)?.candidate.name).toBe('a');
  });
});

const config = electionConfig({ preferredLocations: ['us-east-1a'] });
const run = (l: Lease | undefined, cs: Candidate[], now = NOW, c = config) => decide('component-A', l, cs, now, c);
const inA = in_('us-east-1a');
const inB = in_('us-east-1b');

describe('decide with preferred locations: preemption as for a better version', () => {
  it.each<{ name: string; lease?: Lease; candidates: Candidate[]; configured?: typeof config; want: Partial<Decision> & { kind: Decision['kind'] } }>([
    { name: 'a candidate in the preferred zone joins (fresh): preempt the holder elsewhere', lease: lease('a'), candidates: [cand('a', '1.0.0', '1.0.0', older(inB)), cand('b', '1.0.0', '1.0.0', inA)], want: { kind: 'preempt', holder: 'a', preferredHolder: 'b' } },
    { name: '… not fresh: a re-election first, the holder keeps leading', lease: lease('a'), candidates: [cand('a', '1.0.0', '1.0.0', older(inB)), cand('b', '1.0.0', '1.0.0', { ...inA, renewTime: NOW - MIN })], want: { kind: 'openElection', ping: ['b'] } },
    { name: '… that ignored its last ping: not preferred (a crashed worker cannot pull leadership)', lease: lease('a'), candidates: [cand('a', '1.0.0', '1.0.0', older(inB)), cand('b', '1.0.0', '1.0.0', { ...inA, renewTime: NOW - 2 * MIN, pingTime: NOW - 30 * SEC })], want: { kind: 'leaveAlone', reason: 'leaderHealthy' } },
    { name: '… until that ping is askAgainAfterMs old: asked again by a re-election, preferred only if it answers', lease: lease('a'), candidates: [cand('a', '1.0.0', '1.0.0', older(inB)), cand('b', '1.0.0', '1.0.0', { ...inA, renewTime: NOW - 2 * MIN, pingTime: NOW - config.askAgainAfterMs })], want: { kind: 'openElection', ping: ['b'] } },
    { name: 'the holder is in the preferred zone: an older binary elsewhere does not preempt', lease: lease('b'), candidates: [cand('a', '1.0.0', '1.0.0', older(inB)), cand('b', '1.0.0', '1.1.0', inA)], want: { kind: 'leaveAlone', reason: 'leaderHealthy' } },
    { name: 'nobody in the preferred zone: the holder stays (no leadership lost for want of a location)', lease: lease('a'), candidates: [cand('a', '1.0.0', '1.0.0', older(inB)), cand('b', '1.0.0', '1.0.0', in_('us-east-1c'))], want: { kind: 'leaveAlone', reason: 'leaderHealthy' } },
    { name: 'a holder of unknown location and a candidate in an unlisted zone: no preemption either way (equal places)', lease: lease('a'), candidates: [cand('a', '1.0.0', '1.0.0', older()), cand('b', '1.0.0', '1.0.0', inB)], want: { kind: 'leaveAlone', reason: 'leaderHealthy' } },
    { name: 'a newer emulation version in the preferred zone does not preempt an older one', lease: lease('a'), candidates: [cand('a', '1.0.0', '1.0.0', inB), cand('b', '1.1.0', '1.1.0', older(inA))], want: { kind: 'leaveAlone', reason: 'leaderHealthy' } },
    { name: 'the lease’s own preference replaces the coordinator’s', lease: lease('b', { preferredLocations: ['us-east-1b'] }), candidates: [cand('a', '1.0.0', '1.0.0', inB), cand('b', '1.0.0', '1.0.0', older(inA))], want: { kind: 'preempt', preferredHolder: 'a' } },
    { name: 'an empty preference on the lease turns the default off', lease: lease('a', { preferredLocations: [] }), candidates: [cand('a', '1.0.0', '1.0.0', older(inB)), cand('b', '1.0.0', '1.0.0', inA)], want: { kind: 'leaveAlone', reason: 'leaderHealthy' } },
    { name: 'a vacancy elects the best-placed candidate', lease: lease(undefined), candidates: [cand('a', '1.0.0', '1.0.0', older(inB)), cand('b', '1.0.0', '1.1.0', inA)], want: { kind: 'elect', winner: 'b', skewPrevented: false } },
    { name: 'a preemption for the preferred zone already asked: nothing new', lease: lease('a', { preferredHolder: 'b' }), candidates: [cand('a', '1.0.0', '1.0.0', older(inB)), cand('b', '1.0.0', '1.0.0', inA)], want: { kind: 'leaveAlone', reason: 'preemptionPending' } },
    { name: 'the preference removed while a preemption for it is pending: cleared', lease: lease('a', { preferredHolder: 'b', preferredLocations: [] }), candidates: [cand('a', '1.0.0', '1.0.0', older(inB)), cand('b', '1.0.0', '1.0.0', inA)], want: { kind: 'clearPreferredHolder', why: 'holderIsBest' } },
  ])('$name', ({ lease: l, candidates, configured, want }) => {
    expect(run(l, candidates, NOW, configured)).toMatchObject(want);
  });

  it('the successor is the best-placed candidate but the holder', () => {
    const cs = [cand('h', '1.0.0', '1.0.0', older(inA)), cand('x', '1.0.0', '1.0.0', older(inB)), cand('y', '1.0.0', '1.0.0', inA)];
    expect(successorOf('h', cs, NOW, config)?.name).toBe('y');
    expect(successorOf('h', cs, NOW, config, { preferred: [] })?.name).toBe('x');
    expect(decideWithSuccession('component-A', lease('h'), cs, NOW, config)).toMatchObject({ kind: 'setSuccessor', successor: { name: 'y' } });
    // with the lease preferring us-east-1b, x outranks the holder itself: it is asked to yield to x
    expect(decideWithSuccession('component-A', lease('h', { preferredLocations: ['us-east-1b'] }), cs, NOW, config)).toMatchObject({ kind: 'preempt', preferredHolder: 'x', successor: { name: 'x' } });
  });
});

describe('no flapping', () => {
  const zones = fc.constantFrom<string | undefined>(undefined, 'us-east-1a', 'us-east-1b', 'eu-west-1a', 'use1-az1');
  const arbCandidate = fc.record({
    emu: fc.constantFrom('1.0.0', '1.1.0'),
    bin: fc.constantFrom('1.1.0', '1.2.0'),
    zone: zones,
    viaPlatform: fc.boolean(),
    createdAt: fc.integer({ min: 0, max: 3 }),
  });
  const rowsOf = (specs: { emu: string; bin: string; zone: string | undefined; viaPlatform: boolean; createdAt: number }[]) =>
    specs.map((s, i) => cand(`c${i}`, s.emu, s.bin, { createdAt: NOW - s.createdAt * MIN, ...(s.zone === undefined ? {} : s.viaPlatform ? ecsIn(s.zone) : in_(s.zone)) }));
  const preference = fc.subarray(['us-east-1a', 'us-east-1', 'eu-west-1a', 'use1-az1', 'us-east-1b']).chain((l) => fc.shuffledSubarray(l, { minLength: l.length }));

  it('once the coordinator preempted for a candidate, with it leading the same rows never preempt it back', () => {
    fc.assert(
      fc.property(fc.array(arbCandidate, { minLength: 2, maxLength: 5 }), preference, fc.nat(4), (specs, preferred, h) => {
        const cs = rowsOf(specs);
        const holder = cs[h % cs.length]!.name;
        const cfg = electionConfig({ preferredLocations: preferred });
        const d = decide('component-A', lease(holder), cs, NOW, cfg);
        if (d.kind !== 'preempt') return;
        // the preferred candidate now leads: nobody is better than it, least of all the old holder
        expect(decide('component-A', lease(d.preferredHolder), cs, NOW, cfg)).toMatchObject({ kind: 'leaveAlone', reason: 'leaderHealthy' });
      }),
      { numRuns: 500 },
    );
  });

  it('the order is total: the winner does not depend on the order rows come back in', () => {
    fc.assert(
      fc.property(fc.array(arbCandidate, { minLength: 1, maxLength: 5 }), preference, (specs, preferred) => {
        const cs = rowsOf(specs);
        expect(pickBest([...cs].reverse(), NOW, preferred)?.candidate.name).toBe(pickBest(cs, NOW, preferred)?.candidate.name);
      }),
      { numRuns: 300 },
    );
  });
});

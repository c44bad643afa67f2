import { describe, expect, it } from 'vitest';
import { CandidateSpec } from '../lib/schemas/candidate.js';
import { electionConfig } from '../lib/schemas/config.js';
import { LeaseItem } from '../lib/schemas/lease.js';
import { parse } from '../lib/schemas/validation.js';
import { validationError as errorOf } from './sdk/harness.js';

const spec = { leaseName: 'jobs', name: 'worker-1', binaryVersion: '1.31.0', emulationVersion: '1.30.0', preferredStrategies: ['OldestEmulationVersion'] };
describe('CandidateSpec: strict at the edge', () => {
  it('accepts a well-formed candidate', () => {
    expect(parse(CandidateSpec, spec, 'candidate')).toEqual(spec);
  });

  it.each([
    { name: 'emulation newer than binary', change: { emulationVersion: '1.32.0' }, field: 'emulationVersion', message: /<= binaryVersion 1\.31\.0/ },
    { name: 'leading v', change: { binaryVersion: 'v1.31.0' }, field: 'binaryVersion', message: /no leading "v"/ },
    { name: 'short form', change: { emulationVersion: '1.30' }, field: 'emulationVersion', message: /MAJOR\.MINOR\.PATCH/ },
    // The picker reads these (parseVersionTolerant); the write edge stays strict.
    { name: 'major alone', change: { emulationVersion: '1' }, field: 'emulationVersion', message: /MAJOR\.MINOR\.PATCH/ },
    { name: 'leading zeros', change: { binaryVersion: '1.031.0' }, field: 'binaryVersion', message: /MAJOR\.MINOR\.PATCH/ },
    // an operator's pin, never the worker's own
    { name: 'a priority', change: { priority: 5 }, field: 'priority', message: /priority/ },
    { name: 'empty name', change: { name: '' }, field: 'name', message: /must not be empty/ },
    { name: 'empty lease name', change: { leaseName: '' }, field: 'leaseName', message: /must not be empty/ },
    { name: 'no strategies', change: { preferredStrategies: [] }, field: 'preferredStrategies', message: /at least one/ },
    { name: 'a strategy twice', change: { preferredStrategies: ['OldestEmulationVersion', 'OldestEmulationVersion'] }, field: 'preferredStrategies', message: /twice/ },
    { name: 'unknown field', change: { prority: 3 }, field: 'prority', message: /prority/ },
    // issue 18: a location, as a worker states it
    { name: 'an uppercase zone', change: { location: { zone: 'US-EAST-1A' } }, field: 'location.zone', message: /lowercase .* us-east-1a/ },
    { name: 'a region the zone is not in', change: { location: { zone: 'us-east-1a', region: 'eu-west-1' } }, field: 'location.region', message: /must be us-east-1, the region of zone us-east-1a/ },
    { name: 'an empty zone', change: { location: { zone: '' } }, field: 'location.zone', message: /must not be empty/ },
  ])('rejects $name, naming the field', ({ change, field, message }) => {
    const e = errorOf(() => parse(CandidateSpec, { ...spec, ...change }, 'candidate "worker-1"'));
    expect(e.fields).toEqual([field]);
    expect(e.issues[0]!.message).toMatch(message);
    expect(e.message).toMatch(/^invalid candidate "worker-1": /);
  });
});

describe('LeaseItem', () => {
  it('names every bad field of a malformed item', () => {
    const e = errorOf(() => parse(LeaseItem, { name: 'x', leaseDurationSeconds: '15', leaseTransitions: -1, fencingToken: 0, revision: 1, election: { id: 'e', startedAt: 'soon' } }, 'lease "x"'));
    expect(e.fields.sort()).toEqual(['election.deadline', 'election.startedAt', 'election.strategy', 'leaseDurationSeconds', 'leaseTransitions']);
  });
});

describe('locations', () => {
  it('a zone with a region of its own name, a zone ID, a Local Zone and a region are accepted', () => {
    for (const location of [{ zone: 'us-east-1a', region: 'us-east-1' }, { zone: 'use1-az1', region: 'us-east-1' }, { zone: 'us-west-2-lax-1a' }, { region: 'eu-central-1' }]) {
      expect(parse(CandidateSpec, { ...spec, location }, 'candidate').location).toEqual(location);
    }
  });
  it('the coordinator prefers nothing by default; a lease may carry its own list (empty: none)', () => {
    expect(electionConfig().preferredLocations).toEqual([]);
    expect(electionConfig({ preferredLocations: ['us-east-1a', 'us-east-1'] }).preferredLocations).toEqual(['us-east-1a', 'us-east-1']);
    const row = { name: 'x', leaseDurationSeconds: 15, leaseTransitions: 0, fencingToken: 0, revision: 1 };
    expect(parse(LeaseItem, { ...row, preferredLocations: [] }, 'lease').preferredLocations).toEqual([]);
    expect(errorOf(() => parse(LeaseItem, { ...row, preferredLocations: ['Us-East-1'] }, 'lease "x"')).fields).toEqual(['preferredLocations[0]']);
  });
});

describe('ElectionConfig', () => {
  it('has Kubernetes’ defaults', () => {
    expect(electionConfig()).toMatchObject({ ackWindowMs: 5000, electedLeaseDurationSeconds: 5, candidateStaleAfterMs: 1_800_000, candidateRepingAfterMs: 900_000, askAgainAfterMs: 60_000 });
  });
  it('takes the largest ack window with the default askAgainAfterMs (a config written before the field still parses)', () => {
    expect(electionConfig({ ackWindowMs: 60_000 })).toMatchObject({ ackWindowMs: 60_000, askAgainAfterMs: 60_000 });
  });
  it.each([
    { input: { ackWindowMs: 0 }, field: 'ackWindowMs' },
    { input: { candidateRepingAfterMs: 1_800_000 }, field: 'candidateRepingAfterMs' },
    // asked again before its last ping's window closed: every reconcile would ping a dead candidate
    { input: { ackWindowMs: 10_000, askAgainAfterMs: 5_000 }, field: 'askAgainAfterMs' },
    { input: { concurency: 3 }, field: 'concurency' },
    { input: { preferredLocations: ['us-east-1a', 'us-east-1a'] }, field: 'preferredLocations' },
    { input: { preferredLocations: ['us east 1'] }, field: 'preferredLocations[0]' },
    { input: { preferredLocations: 'us-east-1a' }, field: 'preferredLocations' },
  ])('rejects $input naming $field', ({ input, field }) => {
    expect(errorOf(() => electionConfig(input as never)).fields).toEqual([field]);
  });
});

/**
 * What a worker may name as its strategies and versions (KEP-4355 review: a misspelt strategy left
 * a lease to nobody; a version with build metadata was refused), and what the worker that takes a
 * lease nobody elects is told of the strategies.
 */
import { describe, expect, it } from 'vitest';
import { LeaseCandidate } from '../../lib/sdk/candidate.js';
import { LeaderElector } from '../../lib/sdk/elector.js';
import { NoCoordinatorError } from '../../lib/sdk/faults.js';
import { CandidateItem } from '../../lib/schemas/candidate.js';
import { LeaseItem } from '../../lib/schemas/lease.js';
import { strategyProblem } from '../../lib/schemas/strategy.js';
import { StrictVersion, emulationWithinBinary } from '../../lib/schemas/version.js';
import { ValidationError } from '../../lib/schemas/validation.js';
import { orderCandidates } from '../../lib/election/ordering.js';
import { nextFencingToken } from '../../lib/schemas/fencing-token.js';
import { DynamoDBModel } from '../../sim/dynamodb-model/index.js';
import { Sim, T0 } from '../../sim/harness.js';
import { cand, NOW, MIN } from '../fixtures.js';

const client = new DynamoDBModel({ now: () => T0 }).client();
const elector = (candidacy: object) => () =>
  new LeaderElector({ leaseName: 'jobs', identity: 'w1', client, callbacks: { onStartedLeading: () => undefined }, candidacy: { emulationVersion: '1.30.0', binaryVersion: '1.31.0', ...candidacy } } as never);
const candidate = (over: object) => () => new LeaseCandidate({ leaseName: 'jobs', name: 'w1', tables: 'conclave', client, binaryVersion: '1.31.0', emulationVersion: '1.30.0', ...over } as never);
const issues = (make: () => unknown) => {
  try {
    make();
  } catch (e) {
    expect(e).toBeInstanceOf(ValidationError);
    return (e as ValidationError).issues.map((i) => `${i.field}: ${i.message}`);
  }
  return [];
};

describe("a worker's preferredStrategies, by Kubernetes' rule for a CoordinatedLeaseStrategy", () => {
  const PREFIX = `a third party's strategy is a qualified name with a domain prefix, such as "example.com/my-strategy"`;

  it("refuses a name without '/' Conclave does not know, naming the field, the name meant and the prefix rule (before: accepted, and the coordinator left the lease to nobody)", () => {
    // KEP-4355's own older spelling
    expect(issues(elector({ preferredStrategies: ['OldestEmulatedVersion'] }))).toEqual([`candidacy.preferredStrategies[0]: "OldestEmulatedVersion" is not a strategy Conclave knows (did you mean "OldestEmulationVersion"?); ${PREFIX}`]);
    expect(issues(elector({ preferredStrategies: ['OldestEmulationVersion', 'nocoordination'] }))).toEqual([`candidacy.preferredStrategies[1]: "nocoordination" is not a strategy Conclave knows (did you mean "NoCoordination"?); ${PREFIX}`]);
    expect(issues(elector({ preferredStrategies: ['MinimumCompatibilityVersion'] }))).toEqual([`candidacy.preferredStrategies[0]: "MinimumCompatibilityVersion" is not a strategy Conclave knows (the options: OldestEmulationVersion, NoCoordination); ${PREFIX}`]);
    // a LeaseCandidate's own options, the same rule
    expect(issues(candidate({ preferredStrategies: ['OldestEmulatedVersion'] }))).toEqual([`preferredStrategies[0]: "OldestEmulatedVersion" is not a strategy Conclave knows (did you mean "OldestEmulationVersion"?); ${PREFIX}`]);
  });

  it('refuses a name with a "/" that is no qualified name with a domain prefix', () => {
    for (const name of ['Example.com/my-strategy', 'example.com/', 'example.com/-x', 'a/b/c', 'example..com/x', 'example.com/x'.padEnd(80, 'y')]) {
      expect(issues(elector({ preferredStrategies: [name] }))).toEqual([expect.stringMatching(new RegExp(`^candidacy\\.preferredStrategies\\[0\\]: "[^"]+" is no qualified name: ${PREFIX}`))]);
    }
  });

  it("accepts Conclave's strategies and a third party's qualified name; a name of the wrong shape is told once, by the row's rule", () => {
    for (const preferredStrategies of [['OldestEmulationVersion'], ['NoCoordination', 'OldestEmulationVersion'], ['example.com/my-strategy', 'OldestEmulationVersion'], ['elect.example.co.uk/Oldest_First.v2']]) {
      expect(elector({ preferredStrategies })).not.toThrow();
      expect(candidate({ preferredStrategies })).not.toThrow();
    }
    expect(issues(elector({ preferredStrategies: ['no spaces'] }))).toEqual(['candidacy.preferredStrategies[0]: must be a strategy name such as "OldestEmulationVersion" or "NoCoordination"']);
    // a misspelt one is not counted twice with its twin: each told once
    expect(issues(elector({ preferredStrategies: ['OldestEmulatedVersion', 'OldestEmulatedVersion'] }))).toHaveLength(2);
  });

  it('rows written by others still parse: a candidate row or a lease with a name Conclave does not know (the coordinator leaves such a lease alone)', () => {
    expect(CandidateItem.safeParse(cand('x', '1.30.0', '1.30.0', { preferredStrategies: ['OldestEmulatedVersion'] })).success).toBe(true);
    expect(LeaseItem.safeParse({ name: 'l', strategy: 'MyElector', leaseDurationSeconds: 15, leaseTransitions: 0, fencingToken: 1, revision: 1 }).success).toBe(true);
    expect(strategyProblem('MyElector')).toMatch(/is not a strategy Conclave knows/);
  });
});

describe('versions with build metadata (semver 2.0: 1.31.0+git.abc123)', () => {
  it('are accepted where a worker states its versions (before: "must be a semantic version like 1.30.2")', () => {
    expect(StrictVersion.safeParse('1.31.0+git.abc123').success).toBe(true);
    expect(StrictVersion.safeParse('1.31.0-rc.1+build.007').success).toBe(true);
    expect(elector({ binaryVersion: '1.31.0+git.abc123', emulationVersion: '1.30.0+git.abc123' })).not.toThrow();
    expect(candidate({ binaryVersion: '1.31.0+git.abc123' })).not.toThrow();
    // still refused: a leading v, a short form, a suffix with nothing after it
    for (const v of ['v1.31.0+git.abc123', '1.31+git.abc123', '1.31.0+', '1.31.0+git..abc']) expect(StrictVersion.safeParse(v).success, v).toBe(false);
  });

  it('are ignored in ordering and in emulation <= binary: equal versions tie, and registration time, then name, decide', () => {
    expect(emulationWithinBinary('1.31.0+b', '1.31.0+a')).toBe(true);
    expect(issues(elector({ emulationVersion: '1.31.1+a', binaryVersion: '1.31.0+a' }))).toEqual([expect.stringMatching(/^candidacy\.emulationVersion: must be <= binaryVersion 1\.31\.0\+a/)]);
    const older = cand('zed', '1.30.0', '1.31.0+git.zzz', { createdAt: NOW - 2 * 60 * MIN });
    const newer = cand('abe', '1.30.0', '1.31.0+git.aaa');
    expect(orderCandidates([newer, older], NOW).map((r) => r.candidate.name)).toEqual(['zed', 'abe']);
    const tied = cand('abe', '1.30.0', '1.31.0+git.aaa', { createdAt: older.createdAt });
    expect(orderCandidates([older, tied], NOW).map((r) => r.candidate.name)).toEqual(['abe', 'zed']);
  });
});

describe('the worker that takes a lease nobody elects is told the strategies may be why', () => {
  const FAST_FALLBACK = { fallbackAfterMs: 1_500 };

  it("names its own third party's strategy, which its candidacy alone makes the lease's (before: only a missing coordinator was blamed)", async () => {
    const sim = await Sim.create({ seed: 3, config: { ackWindowMs: 500, electedLeaseDurationSeconds: 2 } });
    sim.coordinator();
    const errors: Error[] = [];
    const w = sim.elector('tp', { leaseName: 'job', ...FAST_FALLBACK, candidacy: { emulationVersion: '1.31.0', binaryVersion: '1.31.0', preferredStrategies: ['example.com/my-strategy'] } }, { errors });
    await sim.until('tp takes the lease by its fallback', () => w.elector.isLeader(), 60_000);
    expect((await sim.leases.read('job')).item).toMatchObject({ holderIdentity: 'tp', electedBy: 'self' });
    const told = errors.filter((e) => e instanceof NoCoordinatorError);
    expect(told).toHaveLength(1);
    expect(told[0]).toMatchObject({ strategies: { preferred: ['example.com/my-strategy'] } });
    expect(told[0]!.message).toMatch(/its term was not chosen by versions or priority\. The strategies may be why nobody elects: this worker prefers "example\.com\/my-strategy"; the coordinator elects only under OldestEmulationVersion, and leaves alone a lease whose strategy \(an operator's, else the candidates' consensus\) is another/);
    expect(told[0]!.message).toMatch(/else check that Conclave's coordinator runs on these tables/);
    await w.stop();
  });

  it("names the lease's strategy an operator set, and the coordinator's recorded contradiction", async () => {
    const sim = await Sim.create({ seed: 4, config: { ackWindowMs: 500, electedLeaseDurationSeconds: 2 } });
    const now = sim.clock.now();
    await sim.leases.write(await sim.leases.read('job'), {
      set: { strategy: 'example.com/other', leaseDurationSeconds: 2, leaseTransitions: 0, fencingToken: nextFencingToken(undefined, now - 60_000), lastElectionFailure: { at: now - 1_000, reason: 'contradictoryStrategies', message: 'candidates a, b are at the same binary version 1.31.0 but prefer different strategies; make their preferredStrategies agree' } },
    });
    const errors: Error[] = [];
    const w = sim.elector('a', { leaseName: 'job', ...FAST_FALLBACK }, { errors });
    await sim.until('a takes the lease by its fallback', () => w.elector.isLeader(), 60_000);
    const told = errors.filter((e) => e instanceof NoCoordinatorError);
    expect(told).toHaveLength(1);
    expect(told[0]!.message).toMatch(/The strategies may be why nobody elects: the lease's strategy is "example\.com\/other", set by an operator \(`conclave set-strategy job --clear` lets the candidates decide\); the coordinator recorded: candidates a, b are at the same binary version/);
    await w.stop();
  });

  it('with none seen, the coordinator first, then the strategies as a cause to check', () => {
    const e = new NoCoordinatorError('job', 'w', 4_500);
    expect(e.message).toMatch(/priority\. Check that Conclave's coordinator runs on these tables \(.*\), and that the candidates' strategies let it elect: the coordinator elects only under OldestEmulationVersion.*`conclave describe lease job` shows the strategy in force and each candidate's\); or give mode: 'NoCoordination' for a plain race without one$/);
  });
});

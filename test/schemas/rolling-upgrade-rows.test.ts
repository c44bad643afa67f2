/**
 * Rolling upgrades (CHANGELOG.md, "Versioning policy (0.x)": mixed SDK versions read each other's
 * items within one minor). A reader drops what it does not know of a newer writer's row, nested
 * objects included (the platform a worker records, a platform loss, a session's left terms), so it
 * does not refuse the whole row over an advisory key; a row a reader must not judge without a newer
 * field says so (`minReader`), and an older reader refuses it, naming the upgrade.
 */
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { describe, expect, it } from 'vitest';
import { SessionVouch } from '../../lib/coordinator/vouched.js';
import { CandidateItem } from '../../lib/schemas/candidate.js';
import { READER_FORMAT } from '../../lib/schemas/common.js';
import { IdentityLeaseItem } from '../../lib/schemas/identity.js';
import { LeaseItem } from '../../lib/schemas/lease.js';
import { HolderLoss, Platform } from '../../lib/schemas/platform.js';
import { ValidationError, parse } from '../../lib/schemas/validation.js';
import { CandidateStore } from '../../lib/stores/candidate-store.js';
import { IdentityStore } from '../../lib/stores/identity-store.js';
import { LeaseStore } from '../../lib/stores/lease-store.js';

const T0 = Date.UTC(2026, 11, 7);
const ecs = { kind: 'ecs', id: 'arn:aws:ecs:us-east-1:123456789012:task/c/abc', cluster: 'c' };
// stores only parse here: no request is sent
const client = new DynamoDBClient({ region: 'us-east-1', endpoint: 'http://127.0.0.1:9', credentials: { accessKeyId: 'x', secretAccessKey: 'x' } });
const leases = new LeaseStore(client, 'leases');
const identities = new IdentityStore(client, 'identities');
const candidates = new CandidateStore(client, 'candidates');

const lease = (more: Record<string, unknown> = {}) => ({
  name: 'job', holderIdentity: 'a', holderInstance: 'a_1', leaseDurationSeconds: 15, acquireTime: T0, renewTime: T0, leaseTransitions: 1, fencingToken: 1_000, termToken: 1_000, revision: 5, ...more,
});
const session = (more: Record<string, unknown> = {}) => ({
  component: 'conclave-session', name: 's1', holderIdentity: 'p_1', hostname: 'h', leaseDurationSeconds: 15, acquireTime: T0, renewTime: T0, revision: 1, process: 'p', ...more,
});
const candidate = (more: Record<string, unknown> = {}) => ({
  leaseName: 'job', name: 'b', binaryVersion: '1.30.0', emulationVersion: '1.30.0', preferredStrategies: ['OldestEmulationVersion'], createdAt: T0, renewTime: T0, revision: 1, ...more,
});
const refusal = (f: () => unknown): ValidationError => {
  try {
    f();
  } catch (e) {
    if (e instanceof ValidationError) return e;
    throw e;
  }
  throw new Error('not refused');
};

describe('a newer writer’s key in a nested object is dropped, not the row refused', () => {
  it('a lease’s holderPlatform and holderLoss with a key this reader does not know: read, the key dropped (before: the whole row refused, the lease broken)', () => {
    const l = leases.parseItem(lease({ holderPlatform: { ...ecs, launchType: 'FARGATE' }, holderPlatformId: ecs.id, holderLoss: { holder: 'z', fencingToken: 5, source: 'aws.ecs', platformId: ecs.id, reason: 'x', at: T0, exitCode: 1 } }));
    expect(l.holderPlatform).toEqual(ecs);
    expect(l.holderLoss).toEqual({ holder: 'z', fencingToken: 5, source: 'aws.ecs', platformId: ecs.id, reason: 'x', at: T0 });
  });

  it('a candidate’s platform with a key this reader does not know: read (before: refused, and its holder preempted)', () => {
    expect(candidates.parseItem(candidate({ platform: { ...ecs, launchType: 'FARGATE' } })).platform).toEqual(ecs);
    expect(CandidateItem.safeParse(candidate({ platform: { kind: 'ec2', id: 'i-0123456789abcdef0', placement: 'x' } })).success).toBe(true);
  });

  it('a session row’s left term with a key this reader does not know: read (before: refused, the session broken)', () => {
    const s = identities.parseItem(session({ leftTerms: { job: { token: 1000, instance: 'a@p', stamp: T0, futureNested: 1 } } }));
    expect(s.leftTerms).toEqual({ job: { token: 1000, instance: 'a@p', stamp: T0 } });
  });

  it('a kind or a value this reader does not know is still refused: a new enum value is a minor version’s change', () => {
    expect(refusal(() => leases.parseItem(lease({ holderPlatform: { kind: 'eks', id: 'pod-1' }, holderPlatformId: 'pod-1' }))).fields).toEqual(['holderPlatform.kind']);
    expect(HolderLoss.safeParse({ holder: 'z', fencingToken: 5, source: 'aws.eks', platformId: 'p', reason: 'x', at: T0 }).success).toBe(false);
    expect(refusal(() => leases.parseItem(lease({ electedBy: 'operator' }))).fields).toEqual(['electedBy']);
  });

  it('a platform a worker gives (its options, its detection) still refuses a key it does not know: a typo is named', () => {
    const e = refusal(() => parse(Platform, { ...ecs, availabiltyZone: 'us-east-1a' }, 'platform'));
    expect(e.message).toContain('availabiltyZone');
    expect(e.message).toContain('did you mean "availabilityZone"');
  });
});

describe('minReader: a row an older reader must not judge', () => {
  it('this Conclave reads rows of format 1', () => expect(READER_FORMAT).toBe(1));

  it('a lease row of minReader 2 is refused, the message naming the upgrade', () => {
    const e = refusal(() => leases.parseItem(lease({ minReader: 2 })));
    expect(e.fields).toEqual(['minReader']);
    expect(e.message).toBe('invalid lease "job" in table leases: minReader: is 2: the row needs a newer Conclave, one that reads rows of format 2 (this one reads format 1): upgrade this reader');
  });

  it('a session row of minReader 2 is refused the same way', () => {
    const e = refusal(() => identities.parseItem(session({ minReader: 2 })));
    expect(e.fields).toEqual(['minReader']);
    expect(e.message).toMatch(/^invalid identity lease .*: minReader: is 2: the row needs a newer Conclave, one that reads rows of format 2 \(this one reads format 1\): upgrade this reader$/);
  });

  it("a session row of minReader 2 vouches for no candidate: the coordinator's narrow read of it (SessionVouch) refuses it too", () => {
    expect(SessionVouch.safeParse(session({ minReader: 2 })).success).toBe(false);
    expect(SessionVouch.safeParse(session({ minReader: 1 })).success).toBe(true);
  });

  it('a candidate row of minReader 3 is refused (never elected, collected once stale)', () => {
    expect(refusal(() => candidates.parseItem(candidate({ minReader: 3 }))).message).toContain('minReader: is 3: the row needs a newer Conclave, one that reads rows of format 3');
  });

  it('rows of minReader 1, or none (every writer of today), are read', () => {
    for (const more of [{}, { minReader: 1 }]) {
      expect(leases.parseItem(lease(more)).holderIdentity).toBe('a');
      expect(identities.parseItem(session(more)).process).toBe('p');
      expect(candidates.parseItem(candidate(more)).name).toBe('b');
    }
  });

  it('a minReader that is no reader format is refused as malformed', () => {
    for (const v of [0, 1.5, '2', -1]) expect(LeaseItem.safeParse(lease({ minReader: v })).success, String(v)).toBe(false);
    expect(IdentityLeaseItem.safeParse(session({ minReader: 0 })).success).toBe(false);
  });
});

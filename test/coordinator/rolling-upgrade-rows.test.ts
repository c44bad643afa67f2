/**
 * Rolling upgrades (CHANGELOG.md, "Versioning policy (0.x)"): an older Conclave beside a newer one's
 * rows, on DynamoDB Local with simulated time.
 *
 * - A write that changes part of a nested object (the hold of an open election) writes only the
 *   keys it changes, by their paths: a key a newer coordinator put in the election stays. The keys
 *   ride in the patch (`within`), so a wrapper of the store's write that passes the patch on (the
 *   chaos harness's, a planted bug's) passes them too.
 * - A newer worker's key in a nested object (its platform) is dropped by an older coordinator, not
 *   the whole row refused: the holder is not preempted, its lease not left broken.
 * - A row whose `minReader` is above this reader's format is refused: the coordinator leaves the
 *   lease alone (no election, no successor), and a follower takes nothing however old its stamp.
 */
import { GetItemCommand, PutItemCommand } from '@aws-sdk/client-dynamodb';
import { marshall, unmarshall } from '@aws-sdk/util-dynamodb';
import { afterEach, describe, expect, it } from 'vitest';
import { manualClock } from '../../lib/clock.js';
import { coordinatorDeps, reconcileAll } from '../../lib/coordinator/reconcile.js';
import { onMarkEnded, type FunctionDeps } from '../../lib/functions/core.js';
import { observability } from '../../lib/functions/env.js';
import { sessionKey } from '../../lib/schemas/identity.js';
import { OLDEST_EMULATION_VERSION } from '../../lib/schemas/strategy.js';
import { ValidationError } from '../../lib/schemas/validation.js';
import { dynamoLeaseLock, SessionReader, type LeaseLock } from '../../lib/sdk/lock.js';
import { FOLLOWING, followerStep, type FollowerEvent, type FollowerState, type Moment } from '../../lib/sdk/step.js';
import { CandidateStore } from '../../lib/stores/candidate-store.js';
import { BrokenSessionError } from '../../lib/stores/errors.js';
import { LeaseStore } from '../../lib/stores/lease-store.js';
import { MIN, NOW, SEC } from '../fixtures.js';
import { carryFollowerEffect, stepSettings } from '../sdk/step-fixtures.js';
import { testTables, type TestTables } from '../support.js';

const ecs = { kind: 'ecs', id: 'arn:aws:ecs:us-east-1:123456789012:task/c/abc', cluster: 'c' };
let t: TestTables | undefined;
afterEach(async () => {
  await t?.drop();
  t = undefined;
});
const tables = async (label: string): Promise<TestTables> => (t = await testTables(label));

const put = (tt: TestTables, table: string, item: Record<string, unknown>) => tt.client.send(new PutItemCommand({ TableName: table, Item: marshall(item, { removeUndefinedValues: true }) }));
const raw = async (tt: TestTables, name: string) => {
  const r = await tt.client.send(new GetItemCommand({ TableName: tt.names.leases, Key: marshall({ name }), ConsistentRead: true }));
  return r.Item ? unmarshall(r.Item) : undefined;
};
/** A live candidate row of lease `lease`, as a worker writes it. */
const candidateRow = (lease: string, name: string, at: number, more: Record<string, unknown> = {}) => ({
  leaseName: lease, name, identity: `${name}_1`, binaryVersion: '1.30.0', emulationVersion: '1.30.0', preferredStrategies: [OLDEST_EMULATION_VERSION], createdAt: at - 60_000, renewTime: at, revision: 1, ...more,
});
/** Lease `name` held by a (a_1), its own stamp at `renewTime`. */
const heldRow = (name: string, renewTime: number, more: Record<string, unknown> = {}) => ({
  name, holderIdentity: 'a', holderInstance: 'a_1', leaseDurationSeconds: 15, acquireTime: renewTime - MIN, renewTime, leaseTransitions: 1, fencingToken: 1_000, termToken: 1_000, revision: 5, electedBy: 'coordinator', ...more,
});

describe('a hold of an open election writes only the keys it changes', () => {
  it('ItemStore.write `within`: the keys given set by their paths, the election’s other keys (one this reader dropped) kept; none on a map the read does not have', async () => {
    const tt = await tables('within');
    const leases = new LeaseStore(tt.client, tt.names.leases);
    await put(tt, tt.names.leases, { name: 'w', leaseDurationSeconds: 15, renewTime: NOW, leaseTransitions: 1, fencingToken: 1_000, revision: 3, election: { id: 'w#2', startedAt: NOW, deadline: NOW + 5_000, strategy: OLDEST_EMULATION_VERSION, futureWait: NOW + 9_000 } });
    const read = await leases.read('w');
    expect(read.item!.election).not.toHaveProperty('futureWait');
    const written = await leases.write(read, { set: { lastHolderIdentity: 'a' }, within: { election: { notBefore: NOW + 20_000, deadline: NOW + 20_000 } } });
    expect(written.election).toEqual({ id: 'w#2', startedAt: NOW, deadline: NOW + 20_000, strategy: OLDEST_EMULATION_VERSION, notBefore: NOW + 20_000 });
    const row = await raw(tt, 'w');
    expect(row).toMatchObject({ revision: 4, lastHolderIdentity: 'a', election: { id: 'w#2', deadline: NOW + 20_000, notBefore: NOW + 20_000, futureWait: NOW + 9_000 } });
    // a bad value is refused before anything is sent, as any write's
    await expect(leases.write(await leases.read('w'), { within: { election: { deadline: -1 } } })).rejects.toThrow(ValidationError);
    await put(tt, tt.names.leases, { name: 'none', leaseDurationSeconds: 15, leaseTransitions: 1, fencingToken: 1_000, revision: 1 });
    await expect(leases.write(await leases.read('none'), { within: { election: { notBefore: NOW } } })).rejects.toThrow(/election is set within only where the item read has it/);
  });

  /** The functions' dependencies on `tt`, the leases store as `wrap` makes it. */
  const functionDeps = (tt: TestTables, wrap: (s: LeaseStore) => LeaseStore = (s) => s): FunctionDeps => {
    const coordinator = coordinatorDeps(tt.client, tt.names, { clock: manualClock(NOW), config: { ackWindowMs: 5_000 } });
    return { coordinator: { ...coordinator, leases: wrap(coordinator.leases) }, timer: { schedule: async () => undefined }, publish: async () => undefined, deadLetter: async () => undefined, ...observability('test', 'SILENT') };
  };
  // the term of a (token 1,000, on session s-gone) was ended by someone else; the next election is open, not held yet
  const election = { id: 'job#2', startedAt: NOW - 1_000, deadline: NOW + 4_000, strategy: OLDEST_EMULATION_VERSION, futureWait: NOW + 30_000 };
  const vacated = { name: 'job', leaseDurationSeconds: 15, renewTime: NOW - 2_000, leaseTransitions: 1, fencingToken: 1_000, revision: 7, lastHolderIdentity: 'a', election };
  const ended = { lease: 'job', markEnded: { holderIdentity: 'a', session: 's-gone', fencingToken: 1_000, leaseDurationSeconds: 15, deleted: false }, since: NOW - 1_000, attempt: 1 };

  it('a deferred mark’s hold (onMarkEnded) of an election a newer coordinator opened keeps the election’s key it does not know (before: the whole election rewritten, the key erased)', async () => {
    const tt = await tables('hold-nested');
    await put(tt, tt.names.leases, vacated);
    const held = await onMarkEnded(functionDeps(tt), ended);
    expect(held?.decision.kind).toBe('awaitAcks');
    const row = await raw(tt, 'job');
    expect(row!['revision']).toBe(8);
    expect(row!['election']).toEqual({ ...election, notBefore: NOW + 15_000, deadline: NOW + 15_000 });
  });

  it('the hold through a store whose write is wrapped (read, patch) => store.write(read, patch), as the chaos harness’s reconciler crashes and the simulator’s planted bugs wrap it, still holds the election (before, 3af2abd4: the keys a third argument the wrapper dropped, the hold a write of the revision alone; chaos ‘lying clocks’ 19 s leaderless)', async () => {
    const tt = await tables('hold-wrapped');
    await put(tt, tt.names.leases, vacated);
    const wrap = (store: LeaseStore): LeaseStore => {
      const wrapped = Object.create(store) as LeaseStore;
      wrapped.write = (read, patch) => store.write(read, patch);
      return wrapped;
    };
    const held = await onMarkEnded(functionDeps(tt, wrap), ended);
    expect(held?.after?.election).toMatchObject({ notBefore: NOW + 15_000, deadline: NOW + 15_000 });
    const row = await raw(tt, 'job');
    expect(row).toMatchObject({ revision: 8, election: { ...election, notBefore: NOW + 15_000, deadline: NOW + 15_000 } });
  });
});

describe('an older coordinator, a newer worker’s key in a nested object', () => {
  it('a holder whose candidate row’s platform has a key it does not know is a candidate, not preempted (before: refused, and the holder preempted for b at the first pass)', async () => {
    const tt = await tables('nested-candidate');
    const clock = manualClock(NOW);
    const deps = coordinatorDeps(tt.client, tt.names, { clock });
    await put(tt, tt.names.leases, heldRow('job', NOW));
    await put(tt, tt.names.candidates, candidateRow('job', 'a', NOW, { createdAt: NOW - 120_000, platform: { ...ecs, launchType: 'FARGATE' } }));
    await put(tt, tt.names.candidates, candidateRow('job', 'b', NOW));
    for (let pass = 0; pass < 3; pass++) {
      const r = await reconcileAll(deps);
      expect(r.invalid).toEqual([]);
      expect(r.outcomes.filter((o) => o.lease === 'job').map((o) => o.decision.kind)).not.toContain('preempt');
      const row = await raw(tt, 'job');
      expect(row!['preferredHolder']).toBeUndefined();
      expect(row!['holderIdentity']).toBe('a');
      // a renews its term and its candidacy
      clock.advance(5_000);
      await put(tt, tt.names.leases, { ...row, renewTime: clock.now(), revision: (row!['revision'] as number) + 1 });
      for (const [n, more] of [['a', { createdAt: NOW - 120_000, platform: { ...ecs, launchType: 'FARGATE' } }], ['b', {}]] as const) await put(tt, tt.names.candidates, candidateRow('job', n, clock.now(), more));
    }
  });

  it('a held lease whose holderPlatform has a key it does not know is judged, not broken: its expired term ends, b elected (before: broken at every pass, led by nobody)', async () => {
    const tt = await tables('nested-lease');
    const clock = manualClock(NOW);
    const deps = coordinatorDeps(tt.client, tt.names, { clock });
    await put(tt, tt.names.leases, heldRow('job', NOW - 5 * MIN, { holderPlatform: { ...ecs, launchType: 'FARGATE' }, holderPlatformId: ecs.id }));
    await put(tt, tt.names.candidates, candidateRow('job', 'b', NOW));
    const r = await reconcileAll(deps);
    expect(r.broken.map((b) => b.lease)).toEqual([]);
    expect(r.outcomes.find((o) => o.lease === 'job')?.decision.kind).toBe('elect');
    expect((await raw(tt, 'job'))!['holderIdentity']).toBe('b');
  });
});

describe('a row of a newer reader format (minReader 2): left alone', () => {
  /** Lease `name` held by a, its term's stamp 10 minutes old (long expired), b its successor, b a live candidate. */
  async function expired(tt: TestTables, name: string, minReader: number | undefined) {
    await put(tt, tt.names.leases, heldRow(name, NOW - 10 * MIN, { minReader, successor: 'b', successorInstance: 'b_1' }));
    await put(tt, tt.names.candidates, candidateRow(name, 'b', NOW));
  }

  it('the coordinator leaves such a lease broken: no election, no successor, the row as it was; one of minReader 1 is elected anew', async () => {
    const tt = await tables('min-reader-co');
    const clock = manualClock(NOW);
    const deps = coordinatorDeps(tt.client, tt.names, { clock });
    await expired(tt, 'newer', 2);
    await expired(tt, 'today', 1);
    await put(tt, tt.names.leases, heldRow('plain', NOW - 10 * MIN, { name: 'plain' }));
    await put(tt, tt.names.candidates, candidateRow('plain', 'b', NOW));
    const before = await raw(tt, 'newer');
    for (let pass = 0; pass < 3; pass++) {
      const r = await reconcileAll(deps);
      expect(r.broken.map((b) => b.lease)).toEqual(['newer']);
      expect(r.broken[0]!.message).toContain('minReader: is 2: the row needs a newer Conclave, one that reads rows of format 2 (this one reads format 1): upgrade this reader');
      expect(r.outcomes.filter((o) => o.lease === 'newer')).toEqual([]);
      expect(await raw(tt, 'newer')).toEqual(before);
      clock.advance(5_000);
    }
    expect((await raw(tt, 'today'))!['election']).toBeDefined();
    expect((await raw(tt, 'plain'))!['election']).toBeDefined();
  });

  /**
   * A follower (b, instance b_1; client-go's timings) of lease `lease`, its step fed by the lock on
   * DynamoDB Local as the elector's shell feeds it (test/sdk/follower-refused.test.ts). `poll(ms)`:
   * one poll `ms` after the first (DynamoDB's time NOW then), carried to its end.
   */
  function follower(tt: TestTables, lease: string) {
    const s = stepSettings('b', { leaseName: lease, instance: 'b_1', candidate: false, sessionFallbackMs: 78_000 });
    const M0 = 1_000_000;
    let mono = M0;
    const lock: LeaseLock = dynamoLeaseLock(lease, new LeaseStore(tt.client, tt.names.leases), new CandidateStore(tt.client, tt.names.candidates), new SessionReader(tt.client, tt.names.identities, { monotonic: () => mono }));
    let state: FollowerState = FOLLOWING;
    const moment = (): Moment => ({ now: mono, clock: { ok: true, errorMs: 5 }, offset: NOW - M0, jumps: 0 });
    const carry = carryFollowerEffect(lock, s, () => NOW + mono - M0);
    /** Polls every 2 s from 0 to `toMs`: whether it took or reported, and each poll's fault. */
    return async (toMs: number) => {
      const out = { took: false, reported: false, faults: [] as unknown[] };
      for (let ms = 0; ms <= toMs && !out.took; ms += 2 * SEC) {
        mono = M0 + ms;
        let next: FollowerEvent | undefined = { kind: 'poll', pushLive: false };
        try {
          while (next) {
            const o = followerStep(s, state, next, moment());
            state = o.state;
            next = undefined;
            for (const f of o.effects) {
              if (f.kind === 'lead') out.took = true;
              if (f.kind === 'reportVacancy') out.reported = true;
              next = (await carry(f)) ?? next;
            }
          }
          out.faults.push(undefined);
        } catch (fault) {
          out.faults.push(fault);
        }
      }
      return out;
    };
  }

  it('its successor does not take it, nor report it, however long past its stamp: each poll fails on the row (invalidRow); of minReader 1 it is taken at once', async () => {
    const tt = await tables('min-reader-follower');
    await expired(tt, 'newer', 2);
    await expired(tt, 'today', 1);
    const before = await raw(tt, 'newer');
    const seen = await follower(tt, 'newer')(100 * SEC);
    expect(seen.took).toBe(false);
    expect(seen.reported).toBe(false);
    expect(seen.faults).toHaveLength(51);
    for (const f of seen.faults) {
      expect(f).toBeInstanceOf(ValidationError);
      expect((f as ValidationError).message).toContain('minReader: is 2: the row needs a newer Conclave');
    }
    expect(await raw(tt, 'newer')).toEqual(before);
    const today = await follower(tt, 'today')(10 * SEC);
    expect(today).toMatchObject({ took: true, faults: [undefined] });
  });

  it('a term held on a session row of minReader 2 is judged by nobody: the follower neither takes nor reports, each poll a BrokenSessionError', async () => {
    const tt = await tables('min-reader-session');
    const session = 's-newer';
    await put(tt, tt.names.leases, heldRow('held', NOW - 10 * MIN, { holderInstance: 'a_1@p1', session, successor: 'b', successorInstance: 'b_1' }));
    await put(tt, tt.names.identities, { ...sessionKey(session), minReader: 2, holderIdentity: `${session}_1`, process: 'p1', hostname: 'h', leaseDurationSeconds: 15, acquireTime: NOW - 10 * MIN, renewTime: NOW - 10 * MIN, revision: 3 });
    const seen = await follower(tt, 'held')(100 * SEC);
    expect(seen.took).toBe(false);
    expect(seen.reported).toBe(false);
    for (const f of seen.faults) {
      expect(f).toBeInstanceOf(BrokenSessionError);
      expect((f as Error).message).toContain('minReader: is 2: the row needs a newer Conclave');
    }
  });
});

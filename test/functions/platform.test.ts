/**
 * The platform function on DynamoDB Local: a stopped ECS task or EC2 instance ends exactly the
 * terms held there, and nothing else — not a lease that moved on, not another cluster's, not a
 * candidate that does not hold, not an in-between state.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { makeHandler } from '../../functions/platform.js';
import { coordinatorDeps, reconcileLease } from '../../lib/coordinator/reconcile.js';
import { eventsFromLeaseChange } from '../../lib/events/derive.js';
import type { FunctionDeps } from '../../lib/functions/core.js';
import { noDeadLetter } from '../../lib/functions/dead-letter.js';
import { observability } from '../../lib/functions/env.js';
import type { PlatformResult } from '../../lib/functions/platform.js';
import { lambdaContext } from '../../lib/local/runtime.js';
import { vacateStoppedHolder } from '../../lib/platform/vacate.js';
import { readPlatformEvent } from '../../lib/platform/signals.js';
import { MAX_LOSS_REASON, type Platform } from '../../lib/schemas/platform.js';
import { ValidationError } from '../../lib/schemas/validation.js';
import { LeaseStore } from '../../lib/stores/lease-store.js';
import { ACCOUNT, CLUSTER, REGION, TIME, ec2StateChange, ecsTaskStateChange, taskArn } from '../platform-fixtures.js';
import { Log, startElector, waitFor } from '../sdk/harness.js';
import { testTables, type TestTables } from '../support.js';

let t: TestTables;
let deps: FunctionDeps;
let leases: LeaseStore;
/** The wakes the function published (lease, revision, and the processes addressed, if any). */
const woken: { lease: string; revision: number | undefined; processes?: readonly string[] }[] = [];
let n = 0;
beforeAll(async () => {
  t = await testTables('platform');
  deps = {
    coordinator: coordinatorDeps(t.client, t.names),
    timer: { schedule: async () => undefined },
    publish: async () => undefined,
    deadLetter: noDeadLetter,
    wake: async (lease, revision, processes) => void woken.push({ lease, revision, ...(processes ? { processes } : {}) }),
    ...observability('test', 'SILENT'),
  };
  leases = deps.coordinator.leases;
});
afterAll(() => t.drop());

/** The function as Lambda runs it in ACCOUNT and REGION, where the fixtures' events come from. */
const context = { ...lambdaContext('platform'), invokedFunctionArn: `arn:aws:lambda:${REGION}:${ACCOUNT}:function:conclave-platform` };
const handler = () => (event: unknown) => makeHandler(deps)(event as never, context) as Promise<PlatformResult>;
const ecs = (id: string, cluster = CLUSTER): Platform => ({ kind: 'ecs', id: taskArn(id), cluster, availabilityZone: 'eu-west-1a' });
const ec2 = (id: string): Platform => ({ kind: 'ec2', id });

/** When the terms `held` writes began: an hour before the fixtures' events (TIME). */
const TERM_BEGAN = Date.parse(TIME) - 3_600_000;

/** A lease held by `holder` on `platform`, in term `token`, begun at `acquireTime`; returns its name. */
async function held(holder: string, platform: Platform | undefined, token = 3, acquireTime = TERM_BEGAN): Promise<string> {
  const name = `lease-${++n}`;
  const now = Date.now();
  await leases.write(await leases.read(name), {
    set: { holderIdentity: holder, holderInstance: `${holder}_1`, holderPlatform: platform, holderPlatformId: platform?.id, leaseDurationSeconds: 15, acquireTime, renewTime: now, leaseTransitions: 2, fencingToken: token, electedBy: 'coordinator' },
  });
  return name;
}

/** A candidate row for `lease` on `platform`. */
async function candidate(lease: string, name: string, platform: Platform) {
  const store = deps.coordinator.candidates;
  await store.write(await store.read(lease, name), { set: { binaryVersion: '1.0.0', emulationVersion: '1.0.0', preferredStrategies: ['OldestEmulationVersion'], renewTime: Date.now(), createdAt: Date.now(), platform } });
}

describe('the SDK records where it runs', () => {
  it('on its candidate row, and on the lease when the coordinator elects it or it acquires directly', async () => {
    const log = new Log();
    const task = ecs('aaaa1111');
    const e = startElector(t, log, 'w1', { leaseName: 'sdk-lease', platform: task });
    const fallback = startElector(t, log, 'solo', { leaseName: 'solo-lease', mode: 'NoCoordination', platform: ec2('i-0aaaaaaaaaaaaaaaa') });
    try {
      await waitFor('w1 registered', async () => (await deps.coordinator.candidates.read('sdk-lease', 'w1')).item);
      expect((await deps.coordinator.candidates.read('sdk-lease', 'w1')).item!.platform).toEqual(task);
      await reconcileLease(deps.coordinator, 'sdk-lease');
      await waitFor('w1 leading', () => e.elector.isLeader());
      expect((await leases.read('sdk-lease')).item).toMatchObject({ holderIdentity: 'w1', holderPlatform: task, holderPlatformId: task.id });
      await waitFor('solo leading', () => fallback.elector.isLeader());
      expect((await leases.read('solo-lease')).item).toMatchObject({ holderIdentity: 'solo', holderPlatformId: 'i-0aaaaaaaaaaaaaaaa' });
      expect(await leases.heldOnPlatform(task.id)).toEqual(['sdk-lease']);
    } finally {
      await e.stop();
      await fallback.stop();
    }
    // A release takes the platform off the lease with the holder.
    const after = (await leases.read('sdk-lease')).item!;
    expect(after.holderPlatform).toBeUndefined();
    expect(after.holderPlatformId).toBeUndefined();
  });
});

describe('platform function', () => {
  beforeEach(() => void (n += 100));

  it('ECS task STOPPED: its holder’s term ends at once, with the reason and the ended fencing token on the lease; the stream tells it as Leader Lost', async () => {
    const task = ecs('bbbb2222');
    const name = await held('w1', task, 7);
    await candidate(name, 'w1', task);
    await candidate(name, 'w2', ecs('bbbb3333'));
    const before = (await leases.read(name)).item!;
    const r = await handler()(ecsTaskStateChange(task.id, 'STOPPED', { stoppedReason: 'Task failed ELB health checks', stopCode: 'TaskFailedToStart' }));
    const after = (await leases.read(name)).item!;
    expect(r.outcomes).toEqual([{ lease: name, outcome: 'vacated', holder: 'w1', fencingToken: 7, revision: after.revision }]);
    // the successor hears of the vacancy from the function itself, before the lease stream's hop: the vacated revision
    expect(woken.filter((w) => w.lease === name)).toEqual([{ lease: name, revision: after.revision }]);
    expect(after.holderIdentity).toBeUndefined();
    expect(after.holderPlatformId).toBeUndefined();
    expect(after.lastHolderIdentity).toBe('w1');
    expect(after.holderLoss).toMatchObject({ holder: 'w1', fencingToken: 7, source: 'aws.ecs', platformId: task.id, reason: 'Task failed ELB health checks (TaskFailedToStart)' });
    expect(after.fencingToken).toBe(7); // the next term gets 8; fenced writes with 7 now fail
    // The dead worker's candidacy is gone (the election that follows must not pick it); w2's stays.
    expect((await deps.coordinator.candidates.read(name, 'w1')).item).toBeUndefined();
    expect((await deps.coordinator.candidates.read(name, 'w2')).item).toBeDefined();

    const events = eventsFromLeaseChange({ eventID: 'rec-1', at: Date.now(), oldLease: before, newLease: after });
    expect(events.map((e) => e.detailType)).toEqual(['Leader Lost']);
    expect(events[0]!.detail).toMatchObject({ previousHolder: 'w1', fencingToken: 7, source: 'aws.ecs', platformId: task.id, reason: 'Task failed ELB health checks (TaskFailedToStart)' });
  });

  it('every lease the task held ends; leases held elsewhere are untouched', async () => {
    const task = ecs('cccc3333');
    const [a, b] = [await held('w1', task), await held('w1', task)];
    const other = await held('w2', ecs('dddd4444'));
    const r = await handler()(ecsTaskStateChange(task.id, 'STOPPED'));
    expect(r.outcomes.map((o) => o.lease).sort()).toEqual([a, b].sort());
    expect((await leases.read(other)).item!.holderIdentity).toBe('w2');
  });

  it('EC2 instance stopped or terminated ends its terms; pending, running, stopping and shutting-down change nothing', async () => {
    const lease1 = await held('host-1', ec2('i-0123456789abcdef0'));
    for (const state of ['pending', 'running', 'stopping', 'shutting-down']) {
      const r = await handler()(ec2StateChange('i-0123456789abcdef0', state));
      expect(r.ignored).toMatch(new RegExp(`is ${state}, not stopped or terminated`));
      expect((await leases.read(lease1)).item!.holderIdentity).toBe('host-1');
    }
    expect((await handler()(ec2StateChange('i-0123456789abcdef0', 'terminated'))).outcomes).toEqual([expect.objectContaining({ lease: lease1, outcome: 'vacated' })]);
    const lease2 = await held('host-2', ec2('i-0fedcba9876543210'));
    expect((await handler()(ec2StateChange('i-0fedcba9876543210', 'stopped'))).outcomes).toEqual([expect.objectContaining({ lease: lease2, outcome: 'vacated' })]);
    expect((await leases.read(lease2)).item!.holderLoss).toMatchObject({ source: 'aws.ec2', reason: 'instance stopped' });
  });

  it('ECS states before STOPPED (PROVISIONING … DEACTIVATING, STOPPING, DEPROVISIONING) change nothing', async () => {
    const task = ecs('eeee5555');
    const name = await held('w1', task);
    for (const s of ['PROVISIONING', 'PENDING', 'ACTIVATING', 'RUNNING', 'DEACTIVATING', 'STOPPING', 'DEPROVISIONING']) {
      expect((await handler()(ecsTaskStateChange(task.id, s))).ignored).toMatch(/not STOPPED/);
    }
    expect((await leases.read(name)).item!.holderIdentity).toBe('w1');
  });

  it('unknown task, a candidate that does not hold, another cluster: nothing changes', async () => {
    expect((await handler()(ecsTaskStateChange(taskArn('ffff0000'), 'STOPPED'))).outcomes).toEqual([]);
    // A candidate row on the task, but the lease is held by someone else elsewhere.
    const task = ecs('ffff1111');
    await candidate('cand-lease', 'c1', task);
    const holderElsewhere = await held('c2', ecs('ffff2222'));
    expect((await handler()(ecsTaskStateChange(task.id, 'STOPPED'))).outcomes).toEqual([]);
    expect((await leases.read(holderElsewhere)).item!.holderIdentity).toBe('c2');
    // The same task ARN reported from another cluster (a forged or misrouted event).
    const mine = ecs('ffff3333');
    const name = await held('w9', mine);
    const r = await handler()(ecsTaskStateChange(mine.id, 'STOPPED', { clusterArn: 'arn:aws:ecs:eu-west-1:000000000000:cluster/other' }));
    expect(r.outcomes).toEqual([{ lease: name, outcome: 'movedOn', why: expect.stringMatching(/cluster/) }]);
    expect((await leases.read(name)).item!.holderIdentity).toBe('w9');
  });

  it('a duplicate event is harmless: the second finds nothing held there', async () => {
    const task = ecs('abab1212');
    const name = await held('w1', task);
    const event = ecsTaskStateChange(task.id, 'STOPPED');
    expect((await handler()(event)).outcomes).toHaveLength(1);
    const after = (await leases.read(name)).item!;
    expect((await handler()(event)).outcomes).toEqual([]);
    expect((await leases.read(name)).item).toEqual(after);
  });

  it('malformed events are ValidationErrors naming the field (Lambda retries, then the dead-letter queue)', async () => {
    const bad = ecsTaskStateChange(taskArn('x'), 'STOPPED') as Record<string, unknown> & { detail: Record<string, unknown> };
    delete bad.detail['taskArn'];
    await expect(handler()(bad)).rejects.toThrow(ValidationError);
    await expect(handler()(bad)).rejects.toThrow(/detail\.taskArn/);
    await expect(handler()({ ...ec2StateChange('i-0123456789abcdef0', 'stopped'), time: 'yesterday' })).rejects.toThrow(/time/);
    await expect(handler()({ ...ec2StateChange('i-0123456789abcdef0', 'stopped'), source: 'aws.rds' })).rejects.toThrow(/source/);
    await expect(handler()(ec2StateChange('not-an-instance', 'stopped'))).rejects.toThrow(/instance-id/);
  });
});

describe('attacks on the safety argument', () => {
  it('an event for a task already replaced: the restarted worker (new task, new term) keeps its lease', async () => {
    const old = ecs('1111aaaa');
    const name = await held('w1', old, 4);
    // w1 restarts as a new task and is elected again: new task ARN, new term.
    const read = await leases.read(name);
    const replacement = ecs('2222bbbb');
    await leases.write(read, { set: { holderInstance: 'w1_2', holderPlatform: replacement, holderPlatformId: replacement.id, fencingToken: 5 } });
    await candidate(name, 'w1', replacement);
    expect((await handler()(ecsTaskStateChange(old.id, 'STOPPED'))).outcomes).toEqual([]);
    expect((await deps.coordinator.candidates.read(name, 'w1')).item!.platform).toEqual(replacement);
    expect((await leases.read(name)).item).toMatchObject({ holderIdentity: 'w1', fencingToken: 5, holderPlatformId: replacement.id });
  });

  it('an event arriving late, after a new holder took over: nothing changes', async () => {
    const dead = ecs('3333cccc');
    const name = await held('w1', dead, 4);
    const read = await leases.read(name);
    const w2 = ecs('4444dddd');
    await leases.write(read, { set: { holderIdentity: 'w2', holderInstance: 'w2_1', holderPlatform: w2, holderPlatformId: w2.id, fencingToken: 5 } });
    expect((await handler()(ecsTaskStateChange(dead.id, 'STOPPED'))).outcomes).toEqual([]);
    expect((await leases.read(name)).item!.holderIdentity).toBe('w2');
  });

  it('an event racing a renewal: the renewal lands between the read and the write; the term still ends, and no renewal after it succeeds', async () => {
    const task = ecs('5555eeee');
    const name = await held('w1', task, 9);
    // A store whose first read is followed, before the write, by the holder's renewal (sent
    // before its process died, landing late): real writes, a forced interleaving.
    let raced = false;
    const racing = new LeaseStore(t.client, t.names.leases);
    const read = racing.read.bind(racing);
    racing.read = async (lease: string) => {
      const r = await read(lease);
      if (!raced) {
        raced = true;
        expect(await leases.renewTerm(lease, { holderIdentity: 'w1', fencingToken: 9 }, Date.now(), 15)).toBeDefined();
      }
      return r;
    };
    const stop = readPlatformEvent(ecsTaskStateChange(task.id, 'STOPPED'));
    if (!('stop' in stop)) throw new Error('expected a stop');
    expect(await vacateStoppedHolder({ leases: racing, candidates: deps.coordinator.candidates, config: deps.coordinator.config }, stop.stop, Date.now())).toEqual([{ lease: name, outcome: 'vacated', holder: 'w1', fencingToken: 9, revision: expect.any(Number) }]);
    expect(raced).toBe(true);
    // Whatever else was in flight from the dead holder fails now.
    expect(await leases.renewTerm(name, { holderIdentity: 'w1', fencingToken: 9 }, Date.now(), 15)).toBeUndefined();
    expect((await leases.read(name)).item!.holderIdentity).toBeUndefined();
  });
});

describe('late, replayed and foreign events (issue 15): they never end a live term', () => {
  // EC2 keeps an instance id across stop and start, and an event can arrive minutes late (Lambda's
  // asynchronous retries, a dead-letter redrive, an archive replay): only an event whose time is
  // after the term began — by more than clockSkewMs (1 s), the platform's clock against the
  // writer's — may end it. When in doubt, the term runs out as it would without the signal.
  const vacated = (r: PlatformResult) => r.outcomes.filter((o) => o.outcome === 'vacated');
  const AT = Date.parse(TIME);

  it.each([
    { name: 'a STOPPED event from before the term began', acquireTime: AT + 5 * 60_000, ends: false },
    { name: 'an event one second before the term began', acquireTime: AT + 1_000, ends: false },
    { name: 'an event at the very time the term began', acquireTime: AT, ends: false },
    { name: 'an event within the skew margin after the term began', acquireTime: AT - 1_000, ends: false },
    { name: 'an event just past the skew margin', acquireTime: AT - 1_001, ends: true },
    { name: 'a timely event, long after the term began', acquireTime: AT - 3_600_000, ends: true },
  ])('$name: ends the term: $ends', async ({ acquireTime, ends }) => {
    const id = `i-0${(n + 1).toString(16).padStart(16, '0')}`;
    const name = await held('host-1', ec2(id), 5, acquireTime);
    const r = await handler()(ec2StateChange(id, 'stopped'));
    expect(vacated(r)).toHaveLength(ends ? 1 : 0);
    expect((await leases.read(name)).item!.holderIdentity).toBe(ends ? undefined : 'host-1');
  });

  it('an old event replayed after a restart on the same instance id leaves the new term alone', async () => {
    const id = 'i-0aaaa0000bbbb1111';
    const name = await held('host-1', ec2(id), 5);
    const stopped = ec2StateChange(id, 'stopped', { id: 'stop-of-the-first-run' });
    expect(vacated(await handler()(stopped))).toHaveLength(1);
    // The instance starts again, keeping its id; the worker on it is elected: a new term.
    const restartedAt = Date.parse(TIME) + 3 * 60_000;
    await leases.write(await leases.read(name), {
      set: { holderIdentity: 'host-1', holderInstance: 'host-1_2', holderPlatform: ec2(id), holderPlatformId: id, acquireTime: restartedAt, renewTime: Date.now(), fencingToken: 6 },
    });
    // The first run's event again: a dead-letter redrive, an archive replay, a late retry.
    const r = await handler()(stopped);
    expect(vacated(r)).toEqual([]);
    expect((await leases.read(name)).item).toMatchObject({ holderIdentity: 'host-1', holderInstance: 'host-1_2', fencingToken: 6, holderPlatformId: id });
  });

  it('a late event after the instance restarted, before the new start-up took the lease: the old term ends, but the new start-up’s candidacy (same instance id) stays', async () => {
    const id = 'i-0cccc0000dddd2222';
    const name = await held('host-1', ec2(id), 5); // its start-up: host-1_1
    // the instance started again, keeping its id; the worker's new start-up stands for the lease
    const store = deps.coordinator.candidates;
    await store.write(await store.read(name, 'host-1'), { set: { binaryVersion: '1.0.0', emulationVersion: '1.0.0', preferredStrategies: ['OldestEmulationVersion'], renewTime: Date.now(), createdAt: Date.now(), platform: ec2(id), identity: 'host-1_2' } });
    const r = await handler()(ec2StateChange(id, 'stopped'));
    expect(vacated(r)).toHaveLength(1);
    expect((await store.read(name, 'host-1')).item).toMatchObject({ identity: 'host-1_2' });
  });

  it.each([
    { name: 'another account', envelope: { account: '111111111111' } },
    { name: 'another region', envelope: { region: 'us-east-1' } },
  ])('an event from $name is ignored, and logged', async ({ envelope }) => {
    const task = ecs(`acc0${(n + 1).toString(16)}`);
    const name = await held('w1', task);
    const warn = vi.spyOn(deps.logger, 'warn');
    try {
      const r = await handler()(ecsTaskStateChange(task.id, 'STOPPED', envelope));
      expect(r.ignored).toMatch(/account|region/);
      expect(r.outcomes).toEqual([]);
      expect(warn).toHaveBeenCalledWith(expect.stringMatching(/account or region/), expect.objectContaining({ account: envelope.account ?? ACCOUNT, region: envelope.region ?? REGION }));
    } finally {
      warn.mockRestore();
    }
    expect((await leases.read(name)).item!.holderIdentity).toBe('w1');
  });

  it('an event that does not say where it comes from is ignored too', async () => {
    const task = ecs('acc0ffff');
    const name = await held('w1', task);
    const { account: _a, ...event } = ecsTaskStateChange(task.id, 'STOPPED');
    expect((await handler()(event)).ignored).toMatch(/account/);
    expect((await leases.read(name)).item!.holderIdentity).toBe('w1');
  });
});

describe('the stopped task or instance was home to more than its holder (a review, 2026-12-06)', () => {
  /** An instance that stopped a moment ago: its event's time (whole seconds, as EventBridge's). */
  const stoppedAt = () => Math.floor((Date.now() - 2_000) / 1000) * 1000;
  /** A candidate row made before the terms began and renewed at `renewTime` (by default, a second before the stop: fresh, so it counts as acked). */
  async function before(lease: string, name: string, platform: Platform, renewTime: number) {
    const store = deps.coordinator.candidates;
    await store.write(await store.read(lease, name), { set: { binaryVersion: '1.0.0', emulationVersion: '1.0.0', preferredStrategies: ['OldestEmulationVersion'], renewTime, createdAt: TERM_BEGAN, platform, identity: `${name}_1` } });
  }

  it("its co-located successor's row goes with the holder's: the election that follows elects the live candidate, not the dead one without a ping (before: the dead worker elected, its term waited out too)", async () => {
    const id = `i-0${(n + 1).toString(16).padStart(16, '0')}`;
    const name = await held('h1', ec2(id));
    const at = stoppedAt();
    await before(name, 'h1', ec2(id), at - 1_000);
    await before(name, 'h2', ec2(id), at - 1_000); // a second worker on the stopped host
    await before(name, 'h3', ec2('i-0fffffffffffffff3'), Date.now()); // alive elsewhere
    const r = await handler()(ec2StateChange(id, 'stopped', { time: new Date(at).toISOString().replace('.000Z', 'Z') }));
    expect(r.outcomes.map((o) => o.outcome)).toEqual(['vacated']);
    expect((await deps.coordinator.candidates.read(name, 'h2')).item).toBeUndefined();
    expect((await deps.coordinator.candidates.read(name, 'h3')).item).toBeDefined();
    await reconcileLease(deps.coordinator, name);
    expect((await leases.read(name)).item!.holderIdentity).not.toBe('h2');
  });

  it('a worker started again on the restarted instance under its old name keeps its row, renewed after the stop, though the row keeps its first start-up\'s createdAt: a late stopped event deletes only what the dead run left (before: the live row deleted)', async () => {
    const id = `i-0${(n + 7).toString(16).padStart(16, '0')}`;
    const name = await held('h6', ec2(id));
    const at = stoppedAt();
    await before(name, 'h6', ec2(id), at - 1_000);
    // its run after the restart registered again under the same name: the row's createdAt is the first run's (register keeps it), its renewTime after the stop
    await before(name, 'h7', ec2(id), at + 1_500 + deps.coordinator.config.clockSkewMs);
    const r = await handler()(ec2StateChange(id, 'stopped', { time: new Date(at).toISOString().replace('.000Z', 'Z') }));
    expect(r.outcomes.map((o) => o.outcome)).toEqual(['vacated']);
    expect((await deps.coordinator.candidates.read(name, 'h7')).item).toBeDefined();
  });

  it('an ECS term begun after its task STOPPED (handed or elected to a dead task) ends all the same: a task ARN names one run (before: "beforeTerm", the term left to run out)', async () => {
    const task = ecs(`dea0${(++n).toString(16).padStart(4, '0')}`);
    const name = await held('h4', task, 4, Date.parse(TIME) + 10_000);
    const r = await handler()(ecsTaskStateChange(task.id, 'STOPPED'));
    expect(r.outcomes).toEqual([expect.objectContaining({ lease: name, outcome: 'vacated' })]);
  });
});

describe('a stop reason longer than a lease keeps (a hand-made or forwarded event)', () => {
  it('is cut to MAX_LOSS_REASON and the term ends (before: the vacate refused as a row the schema refuses, "broken", the term left to run out)', async () => {
    const task = ecs(`bee0${(++n).toString(16).padStart(4, '0')}`);
    const name = await held('h5', task);
    const r = await handler()(ecsTaskStateChange(task.id, 'STOPPED', { stoppedReason: 'x'.repeat(MAX_LOSS_REASON + 500) }));
    expect(r.outcomes).toEqual([expect.objectContaining({ lease: name, outcome: 'vacated' })]);
    expect((await leases.read(name)).item!.holderLoss!.reason).toHaveLength(MAX_LOSS_REASON);
  });
});

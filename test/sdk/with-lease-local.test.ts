/**
 * withLease's run-once windows on DynamoDB Local: the window's row claimed by the run's term and
 * marked by it (alone, or with the run's result in one fenced transaction), on the real engine. Every run here takes a vacant (or released) lease at its
 * first step, so nothing waits for time to pass. The protocol on simulated time: with-lease.test.ts.
 */
import { CreateTableCommand, DeleteItemCommand, DeleteTableCommand, GetItemCommand, UpdateItemCommand, type DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { marshall, unmarshall } from '@aws-sdk/util-dynamodb';
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { manualClock, skewedClock } from '../../lib/clock.js';
import { coordinatorDeps, reconcileAll } from '../../lib/coordinator/reconcile.js';
import { localClient } from '../../lib/local/dynamodb-local.js';
import { matchesFilter } from '../../lib/local/event-filter.js';
import { SESSION_COMPONENT } from '../../lib/schemas/identity.js';
import { MAX_COMPLETED_RUNS } from '../../lib/schemas/lease.js';
import { OLDEST_EMULATION_VERSION } from '../../lib/schemas/strategy.js';
import { PERIODIC_WINDOWS, keyedWindowRow } from '../../lib/schemas/run-once.js';
import { ValidationError } from '../../lib/schemas/validation.js';
import { DynamoDBRefusedError } from '../../lib/sdk/faults.js';
import { FencingError } from '../../lib/sdk/fencing.js';
import { serverClockOf } from '../../lib/sdk/server-clock.js';
import { LeaseLostError, tryWithLease, withLease, type RunOnce, type WithLeaseOptions } from '../../lib/sdk/with-lease.js';
import { CandidateStore } from '../../lib/stores/candidate-store.js';
import { IdentityStore } from '../../lib/stores/identity-store.js';
import { BrokenSessionError, ConflictError } from '../../lib/stores/errors.js';
import { LeaseStore } from '../../lib/stores/lease-store.js';
import { RunOnceStore } from '../../lib/stores/run-once-store.js';
import { wiring } from '../../lib/wiring.js';
import { FAST } from '../../sim/harness.js';
import { streamRecords, testTables, type TestTables } from '../support.js';

const L = 'nightly-report';
let t: TestTables;
const reports = `t-reports-${randomUUID().slice(0, 8)}`;

beforeAll(async () => {
  t = await testTables('with-lease');
  await t.client.send(new CreateTableCommand({ TableName: reports, BillingMode: 'PAY_PER_REQUEST', AttributeDefinitions: [{ AttributeName: 'id', AttributeType: 'S' }], KeySchema: [{ AttributeName: 'id', KeyType: 'HASH' }] }));
});
afterAll(async () => {
  await t?.client.send(new DeleteTableCommand({ TableName: reports }));
  await t?.drop();
});

const opts = (identity: string, extra: Partial<WithLeaseOptions> = {}): WithLeaseOptions => ({ client: t.client, tables: t.names, identity, platform: 'none', ...extra });
const report = async (id: string) => {
  const r = await t.client.send(new GetItemCommand({ TableName: reports, Key: marshall({ id }), ConsistentRead: true }));
  return r.Item && unmarshall(r.Item);
};
const put = (id: string, by: string) => ({ Put: { TableName: reports, Item: marshall({ id, by }) } });
const rowOf = (lease: string, name: string) => new RunOnceStore(t.client, t.names.candidates).read(lease, name);
/** The windows recorded for `lease`: each keyed window's row, and the periodic windows' list. */
const keyed = async (lease: string, key: string) => (await rowOf(lease, keyedWindowRow(key))).runs;
const periodic = async (lease: string) => (await rowOf(lease, PERIODIC_WINDOWS)).runs.map((r) => r.window);

describe('run-once windows on DynamoDB Local', () => {
  it('the first run marks the window with its token; the second skips without running; the lease is released each time', async () => {
    let calls = 0;
    const first = await withLease(L, async () => ++calls, opts('inv-1', { runOnce: { window: '2026-11-24' } }));
    expect(first).toMatchObject({ status: 'ran', value: 1, window: '2026-11-24' });
    const lease = (await new LeaseStore(t.client, t.names.leases).read(L)).item!;
    const runs = await keyed(L, '2026-11-24');
    expect(runs).toEqual([expect.objectContaining({ window: '2026-11-24', holder: 'inv-1', fencingToken: first.status === 'ran' ? first.fencingToken : -1 })]);
    expect(lease.holderIdentity).toBeUndefined();
    expect(lease.runs).toBeUndefined(); // nothing on the lease row: a delete of it forgets nothing
    const second = await withLease(L, async () => ++calls, opts('inv-2', { runOnce: { window: '2026-11-24' } }));
    expect(second).toEqual({ status: 'skipped', window: '2026-11-24', run: runs[0] });
    expect(calls).toBe(1);
  });

  it('a failed run leaves the window open; the next one completes it, its result and the marker in one transaction', async () => {
    const failed = await withLease(L, async (_s, term) => {
      await t.client.send(new GetItemCommand({ TableName: reports, Key: marshall({ id: 'r-25' }) }));
      throw new Error(`the report for ${term.window} failed`);
    }, opts('inv-3', { runOnce: { window: '2026-11-25' } })).catch((e: unknown) => e);
    expect((failed as Error).message).toBe('the report for 2026-11-25 failed');
    expect(await keyed(L, '2026-11-25')).toEqual([]);
    const ok = await withLease(L, async (_s, term) => {
      await term.complete([put('r-25', term.identity)]);
      return 'written';
    }, opts('inv-4', { runOnce: { window: '2026-11-25' } }));
    expect(ok).toMatchObject({ status: 'ran', value: 'written' });
    expect(await report('r-25')).toEqual({ id: 'r-25', by: 'inv-4' });
    expect((await keyed(L, '2026-11-25')).map((r) => [r.window, r.holder])).toEqual([['2026-11-25', 'inv-4']]);
  });

  it('a run whose term moved on while it worked: complete() is refused by DynamoDB, and neither its result nor the marker lands', async () => {
    const leases = new LeaseStore(t.client, t.names.leases);
    const e = await withLease(L, async (_s, term) => {
      // another holder took the lease meanwhile (as after a freeze): the token is raised
      const read = await leases.read(L);
      await leases.write(read, { set: { holderIdentity: 'inv-6', holderInstance: 'inv-6_1', fencingToken: term.fencingToken + 1, renewTime: read.item!.renewTime!, acquireTime: read.item!.renewTime! } });
      await term.complete([put('r-26', term.identity)]);
      return 'unreachable';
    }, opts('inv-5', { runOnce: { window: '2026-11-26' } })).catch((x: unknown) => x);
    expect(e).toBeInstanceOf(FencingError);
    expect(await report('r-26')).toBeUndefined();
    const lease = (await leases.read(L)).item!;
    expect(await keyed(L, '2026-11-26')).toEqual([]);
    expect(lease.holderIdentity).toBe('inv-6'); // inv-5's release was refused too: the term is inv-6's
  });
});

describe('run-once windows that never run twice (issue 27)', () => {
  const day = (d: number) => new Date(Date.UTC(2026, 0, d, 6)).toISOString(); // 06:00 UTC on the d-th day of 2026
  const dayWindow = (d: number) => day(d).slice(0, 10);
  const runDay = (lease: string, d: number, who: string) => withLease(lease, async () => who, opts(who, { mode: 'NoCoordination', runOnce: { every: 'day', at: day(d) } }));

  it('a keyed window is never forgotten: migration-0 after 40 other keys does not run again', async () => {
    const lease = 'migrations';
    const ran: string[] = [];
    for (let i = 0; i <= 40; i++) {
      const r = await withLease(lease, async () => void ran.push(`migration-${i}`), opts(`deploy-${i}`, { mode: 'NoCoordination', runOnce: { window: `migration-${i}` } }));
      expect(r.status).toBe('ran');
    }
    const again = await withLease(lease, async () => void ran.push('migration-0 again'), opts('deploy-late', { mode: 'NoCoordination', runOnce: { window: 'migration-0' } }));
    expect(again).toMatchObject({ status: 'skipped', window: 'migration-0', run: { window: 'migration-0', holder: 'deploy-0' } });
    expect(ran).toHaveLength(41);
    expect(await keyed(lease, 'migration-0')).toEqual([expect.objectContaining({ holder: 'deploy-0' })]);
  });

  it('a delete of the lease row forgets no window: a completed keyed or periodic window skips afterwards', async () => {
    const lease = 'deleted-lease';
    const leases = new LeaseStore(t.client, t.names.leases);
    // an operator deletes the lease row (the console, `aws dynamodb delete-item`): the windows' rows stay
    const deleteLease = () => t.client.send(new DeleteItemCommand({ TableName: t.names.leases, Key: marshall({ name: lease }) }));
    let calls = 0;
    // A token issued after a delete exceeds the deleted row's only if it comes more than the clock-skew
    // bound (1 s) after the last acquisition (lib/schemas/fencing-token.ts, assumption 2); within it, the
    // new term's claim of the window row is refused (safe, and what a run seconds after the delete met
    // under load, its server-clock estimate moved back meanwhile). So each run after a delete comes 2 s
    // after every run before it, on its own clock, as a later run after an operator's delete does.
    const later = (ms: number) => ({ clockSync: 'none' as const, clock: skewedClock(() => ms) });
    const first = await withLease(lease, async () => ++calls, opts('deploy-1', { mode: 'NoCoordination', runOnce: { window: 'migration-7' } }));
    expect(first.status).toBe('ran');
    await deleteLease();
    expect((await leases.read(lease)).item).toBeUndefined();
    const again = await withLease(lease, async () => ++calls, opts('deploy-2', { mode: 'NoCoordination', runOnce: { window: 'migration-7' }, ...later(2_000) }));
    expect(again).toMatchObject({ status: 'skipped', run: { holder: 'deploy-1' } });
    // the lease was taken again for that check, with a token above the deleted row's
    expect((await leases.read(lease)).item!.fencingToken).toBeGreaterThan(first.status === 'ran' ? first.fencingToken : Infinity);

    expect((await runDay(lease, 3, 'cron-1')).status).toBe('ran');
    await deleteLease();
    const dailyAgain = await withLease(lease, async () => ++calls, opts('cron-2', { mode: 'NoCoordination', runOnce: { every: 'day', at: day(3) }, ...later(4_000) }));
    expect(dailyAgain).toMatchObject({ status: 'skipped', window: '2026-01-03', run: { holder: 'cron-1' } });
    expect(calls).toBe(1);
  });

  it('periodic windows named by the scheduled time: the 32 newest windows are remembered, a late one in them runs or skips by its own record, an older one skips', async () => {
    const lease = 'daily-report';
    for (let d = 1; d <= 34; d++) if (d !== 20) expect((await runDay(lease, d, `day-${d}`)).status).toBe('ran'); // day 20's run failed, say
    const remembered = Array.from({ length: 33 }, (_, i) => 34 - i).filter((d) => d !== 20).map(dayWindow);
    expect(await periodic(lease)).toEqual(remembered); // 2026-01-01 dropped, the oldest
    expect(remembered).toHaveLength(MAX_COMPLETED_RUNS);
    // retries, long after: each counts for the day it was scheduled for
    expect(await runDay(lease, 2, 'retry-2')).toMatchObject({ status: 'skipped', window: '2026-01-02', run: { holder: 'day-2' } });
    expect(await runDay(lease, 1, 'retry-1')).toEqual({ status: 'skipped', window: '2026-01-01', run: undefined }); // older than all remembered: it may have run
    expect(await runDay(lease, 20, 'retry-20')).toMatchObject({ status: 'ran', value: 'retry-20', window: '2026-01-20' }); // newer than the oldest remembered, not among them: never ran
    expect(await periodic(lease)).toEqual(Array.from({ length: 32 }, (_, i) => dayWindow(34 - i))); // in its place by date: the oldest, 2026-01-02, dropped instead
    expect(await runDay(lease, 2, 'retry-2b')).toEqual({ status: 'skipped', window: '2026-01-02', run: undefined });
  });

  it('a window row written from outside the run’s term after it was read: complete() is refused, and neither the result nor the marker lands', async () => {
    const lease = 'restored';
    const e = await withLease(lease, async (_s, term) => {
      // an operator (or a restore) writes the window's row while the run works
      await t.client.send(new UpdateItemCommand({
        TableName: t.names.candidates, Key: marshall({ leaseName: lease, name: keyedWindowRow('w-9') }),
        UpdateExpression: 'SET #runs = :runs, #rev = :one', ExpressionAttributeNames: { '#runs': 'runs', '#rev': 'revision' },
        ExpressionAttributeValues: marshall({ ':runs': [{ window: 'w-9', fencingToken: 1, holder: 'operator', at: Date.now() }], ':one': 1 }),
      }));
      await term.complete([put('r-w9', term.identity)]);
      return 'unreachable';
    }, opts('inv-9', { mode: 'NoCoordination', runOnce: { window: 'w-9' } })).catch((x: unknown) => x);
    expect(e).toBeInstanceOf(ConflictError);
    expect(await report('r-w9')).toBeUndefined();
    expect(await keyed(lease, 'w-9')).toEqual([expect.objectContaining({ holder: 'operator' })]);
  });

  it('mixed periods: after 40 hourly windows a day window that never ran runs, once, and neither period pushes the other’s windows out (issue 36)', async () => {
    const lease = 'mixed-report';
    const hour = (h: number) => new Date(Date.UTC(2026, 1, 1, h, 5)).toISOString(); // h hours into 2026-02-01
    const runHour = (h: number, who: string) => withLease(lease, async () => who, opts(who, { mode: 'NoCoordination', runOnce: { every: 'hour', at: hour(h) } }));
    const runDaily = (who: string) => withLease(lease, async () => who, opts(who, { mode: 'NoCoordination', runOnce: { every: 'day', at: hour(6) } }));
    for (let h = 0; h < 40; h++) expect((await runHour(h, `hour-${h}`)).status).toBe('ran');
    // the hours kept: the 32 newest, 2026-02-01T08 … 2026-02-02T15; the day 2026-02-01 sorts before them all, and is no hour
    expect(await runDaily('day-1')).toMatchObject({ status: 'ran', value: 'day-1', window: '2026-02-01' });
    expect(await runDaily('day-1-retry')).toMatchObject({ status: 'skipped', window: '2026-02-01', run: { holder: 'day-1', every: 'day' } });
    for (let h = 40; h < 44; h++) expect((await runHour(h, `hour-${h}`)).status).toBe('ran');
    expect(await runDaily('day-1-late')).toMatchObject({ status: 'skipped', run: { holder: 'day-1' } }); // still remembered
    const kept = await periodic(lease);
    expect(kept.filter((w) => w.length === 13)).toEqual(Array.from({ length: 32 }, (_, i) => hour(43 - i).slice(0, 13)));
    expect(kept.filter((w) => w.length !== 13)).toEqual(['2026-02-01']);
    // an hour dropped from the hours' list still skips as it did: it may have run
    expect(await runHour(0, 'hour-0-again')).toEqual({ status: 'skipped', window: '2026-02-01T00', run: undefined });
  });

  it('a ninth period on one lease is refused before it runs, naming runOnce.every and the way out; the lease is released', async () => {
    const lease = 'many-periods';
    const at = '2026-03-01T00:00:00Z';
    const everies = ['day', 'hour', 60_000, 120_000, 300_000, 600_000, 900_000, 1_800_000] as const;
    for (const every of everies) expect((await withLease(lease, async () => 1, opts(`p-${every}`, { mode: 'NoCoordination', runOnce: { every, at } }))).status).toBe('ran');
    let ran = false;
    const e = await withLease(lease, async () => (ran = true), opts('p-ninth', { mode: 'NoCoordination', runOnce: { every: 7_200_000, at } })).catch((x: unknown) => x);
    expect((e as Error).message).toMatch(/runOnce\.every: this lease already keeps windows of 8 periods \(.*\), the most one lease keeps, and 7200000 ms is not one of them: run this schedule under a lease of its own/);
    expect(ran).toBe(false);
    expect((await new LeaseStore(t.client, t.names.leases).read(lease)).item!.holderIdentity).toBeUndefined();
    expect((await withLease(lease, async () => 2, opts('p-day-again', { mode: 'NoCoordination', runOnce: { every: 'day', at: '2026-03-02T00:00:00Z' } }))).status).toBe('ran'); // a period it keeps runs on
  });

  it('bad scheduled times are refused, naming runOnce.at and what to pass', async () => {
    for (const at of ['yesterday', '2026-11-24', -1, {}] as unknown[]) {
      const e = await withLease('bad-at', async () => 1, opts('x', { mode: 'NoCoordination', runOnce: { every: 'day', at } as RunOnce })).catch((x: unknown) => x);
      expect((e as Error).message).toMatch(/runOnce\.at: must be/);
    }
    const e = await withLease('bad-at', async () => 1, opts('x', { mode: 'NoCoordination', runOnce: { every: 'day', at: 'yesterday' } as RunOnce })).catch((x: unknown) => x);
    expect((e as Error).message).toMatch(/runOnce\.at: must be the time this run was scheduled for: pass the EventBridge scheduled event's `time`/);
  });

  it('a scheduled time in epoch seconds is refused, naming runOnce.at and the fix, before the function runs (it named a window of 1970 that every later day shared)', async () => {
    const lease = 'seconds-at';
    const seconds = (d: number) => Date.UTC(2026, 0, d, 6) / 1000; // 06:00 UTC on the d-th day of 2026, in seconds
    const ran: number[] = [];
    for (const d of [1, 2]) {
      // before the fix: day 1 ran for the window 1970-01-21, and day 2 was skipped as that window's repeat
      const e = await withLease(lease, async () => void ran.push(d), opts(`cron-${d}`, { mode: 'NoCoordination', runOnce: { every: 'day', at: seconds(d) } })).catch((x: unknown) => x);
      expect(e).toBeInstanceOf(ValidationError);
      expect((e as ValidationError).fields).toEqual(['runOnce.at']);
      expect((e as Error).message).toMatch(new RegExp(`runOnce\\.at: must be epoch milliseconds; ${seconds(d)} is 1970-01-21T\\S+ as milliseconds, so it looks like epoch seconds: pass ${seconds(d) * 1000} \\(seconds \\* 1000\\)`));
    }
    const e = await withLease(lease, async () => void ran.push(0), opts('cron-0', { mode: 'NoCoordination', runOnce: { every: 'hour', at: new Date(0) } })).catch((x: unknown) => x);
    expect((e as Error).message).toMatch(/runOnce\.at: must be the time this run was scheduled for, and 1970-01-01T00:00:00\.000Z is before 2000/);
    expect(ran).toEqual([]);
    expect(await periodic(lease)).toEqual([]);
  });

  it('a scheduled time later than now (a caller’s clock running fast) is refused before the lease is taken, naming runOnce.at: the window it names, not yet begun, is neither marked nor run, and its own run still runs', async () => {
    const lease = 'future-at';
    const leases = new LeaseStore(t.client, t.names.leases);
    // 23:59 on a day: the caller's own clock, 3 min fast, makes `at` tomorrow 00:02
    const clock = manualClock(Date.UTC(2026, 11, 1, 23, 59));
    const onOwnClock = { clockSync: 'none' as const, clock };
    const ran: string[] = [];
    const daily = (who: string, at: string | number) => withLease(lease, async () => void ran.push(who), opts(who, { mode: 'NoCoordination', runOnce: { every: 'day', at }, ...onOwnClock }));
    // before the fix: it ran for 2026-12-02 and marked it, and the next day's own run was skipped
    const e = await daily('fast-clock', '2026-12-02T00:02:00Z').catch((x: unknown) => x);
    expect(e).toBeInstanceOf(ValidationError);
    expect((e as ValidationError).fields).toEqual(['runOnce.at']);
    expect((e as Error).message).toMatch(/runOnce\.at: is 180\.0 s after this machine's time now \(2026-12-01T23:59:00\.000Z\), so it names a window that may not have begun \(2026-12-02\): pass the scheduled event's `time` as it is/);
    expect(ran).toEqual([]);
    expect(await periodic(lease)).toEqual([]);
    expect((await leases.read(lease)).item).toBeUndefined(); // refused before anything was written
    // within the clocks' error (the coordinator's clockSkewMs, 1 s): the window it falls in runs
    expect(await daily('slightly-ahead', clock.now() + 900)).toMatchObject({ status: 'ran', window: '2026-12-01' });
    clock.set(Date.UTC(2026, 11, 2, 0, 0, 5));
    expect(await daily('on-time', '2026-12-02T00:00:00Z')).toMatchObject({ status: 'ran', window: '2026-12-02' });
    expect(ran).toEqual(['slightly-ahead', 'on-time']);

    // judged against DynamoDB's time (clockSync 'server', the default), whatever this machine's wall clock says
    const fastWall = skewedClock(() => 10 * 60_000);
    const ahead = await withLease('future-at-server', async () => void ran.push('server'), opts('server', { mode: 'NoCoordination', runOnce: { every: 'hour', at: fastWall.now() }, clock: fastWall })).catch((x: unknown) => x);
    expect((ahead as ValidationError).fields).toEqual(['runOnce.at']);
    expect((ahead as Error).message).toMatch(/runOnce\.at: is (59\d|60\d)\.\d s after DynamoDB's time now/);
    expect(ran).toEqual(['slightly-ahead', 'on-time']);
    expect((await leases.read('future-at-server')).item).toBeUndefined();
  });

  it('a scheduled time later than now, DynamoDB’s time not yet known when the lease was read: refused once the run leads (on the time it led by), before anything is marked or run', async () => {
    const lease = 'future-at-unknown';
    const client = localClient(inject('ddbEndpoint'));
    const fastWall = skewedClock(() => 10 * 60_000);
    // the lease read's answer carries no Date header: DynamoDB's time is unknown, and this machine's wall clock 10 min fast
    serverClockOf(client, fastWall);
    let answers = 0;
    const noFirstDate = (next: (args: unknown) => Promise<{ response: unknown }>) => async (args: unknown) => {
      const out = await next(args);
      if (answers++ === 0) delete (out.response as { headers: Record<string, string> }).headers['date'];
      return out;
    };
    // inside the server clock's own middleware: it sees the answer without its Date
    client.middlewareStack.addRelativeTo(noFirstDate as Parameters<typeof client.middlewareStack.addRelativeTo>[0], { relation: 'after', toMiddleware: 'conclaveServerTime', name: 'noFirstDate' });
    let ran = false;
    const e = await withLease(lease, async () => (ran = true), { ...opts('unknown', { mode: 'NoCoordination', runOnce: { every: 'hour', at: fastWall.now() } }), client, clock: fastWall }).catch((x: unknown) => x);
    client.destroy();
    expect((e as ValidationError).fields).toEqual(['runOnce.at']);
    expect((e as Error).message).toMatch(/runOnce\.at: is (59\d|60\d)\.\d s after DynamoDB's time now/);
    expect(ran).toBe(false);
    expect(await periodic(lease)).toEqual([]);
    expect((await new LeaseStore(t.client, t.names.leases).read(lease)).item!.holderIdentity).toBeUndefined(); // taken to learn the time, and given up
  });

  it('run-once rows are no candidates: the listing, the coordinator’s tick and its garbage collection leave them alone, and the candidate stream’s filter drops their records', async () => {
    const lease = 'migrations'; // 41 keyed windows by now
    const candidates = new CandidateStore(t.client, t.names.candidates);
    const now = Date.now();
    await candidates.write(await candidates.read(lease, 'w-1'), { set: { binaryVersion: '1.30.0', emulationVersion: '1.30.0', preferredStrategies: [OLDEST_EMULATION_VERSION], renewTime: now, createdAt: now } });
    expect(await candidates.list(lease)).toEqual({ candidates: [expect.objectContaining({ name: 'w-1' })], invalid: [] });
    const scanned: string[] = [];
    for await (const page of candidates.scan()) for (const s of page) scanned.push(s.ok ? `${s.item.leaseName}/${s.item.name}` : `invalid ${JSON.stringify(s.invalid.key)}`);
    expect(scanned).toEqual([`${lease}/w-1`]);
    // a tick an hour later: the candidate is stale and collected; the run-once rows are neither reported nor collected
    const tick = await reconcileAll(coordinatorDeps(t.client, t.names, { clock: manualClock(now + 3_600_000) }));
    expect(tick).toMatchObject({ errors: [], invalid: [], broken: [], collectedCandidates: [{ leaseName: lease, name: 'w-1' }] });
    expect(await keyed(lease, 'migration-0')).toHaveLength(1);
    expect(await periodic('daily-report')).toHaveLength(MAX_COMPLETED_RUNS);
    // the stream: the candidate's INSERT, its collection's mark (a row never renewed has no renewalMark
    // for the mark to flip, so the filter lets it through) and its REMOVE reach the function, no run-once row's record does
    const trigger = wiring.candidateStream.trigger;
    const records = await streamRecords(t.client, t.names.candidates);
    const passed = records.filter((r) => (trigger.filters ?? []).some((f) => matchesFilter(f, r)));
    const named = (rs: typeof records) => rs.map((r) => `${r.eventName} ${r.dynamodb?.Keys?.['name']?.S}`);
    expect(named(passed)).toEqual(['INSERT w-1', 'MODIFY w-1', 'REMOVE w-1']);
    expect(records.length - passed.length).toBeGreaterThan(41); // every window row's write
  });
});

describe('run-once rows claimed by the term (no transaction needed)', () => {
  it('a newer term that looked at the window while an older one worked: the older mark is refused, and the newer term runs and marks it', async () => {
    const lease = 'claimed-report';
    const rows = new RunOnceStore(t.client, t.names.candidates);
    const e = await withLease(lease, async (_s, term) => {
      // a newer term (after a freeze of this one, say) claims the window's row while this run works
      expect(await rows.claim(lease, keyedWindowRow('w-1'), term.fencingToken + 1)).toEqual({ runs: [], revision: 0, fence: term.fencingToken + 1 });
      return 'old';
    }, opts('old', { mode: 'NoCoordination', runOnce: { window: 'w-1' } })).catch((x: unknown) => x);
    expect(e).toBeInstanceOf(LeaseLostError);
    expect(await keyed(lease, 'w-1')).toEqual([]);
    // an older term than the claim cannot even read the row for a run: told the row's higher fence
    expect(await rows.claim(lease, keyedWindowRow('w-1'), 1)).toEqual({ higherFence: (await rowOf(lease, keyedWindowRow('w-1'))).fence });
    const next = await withLease(lease, async () => 'new', opts('new', { mode: 'NoCoordination', runOnce: { window: 'w-1' } }));
    expect(next).toMatchObject({ status: 'ran', value: 'new', window: 'w-1' });
    expect(await keyed(lease, 'w-1')).toEqual([expect.objectContaining({ holder: 'new' })]);
    expect((await rowOf(lease, keyedWindowRow('w-1'))).fence).toBe(next.status === 'ran' ? next.fencingToken : -1);
  });

  it('multiRegion: a run-once run sends no transaction and no eventually consistent read; complete(items) and fencedWrite are refused with the way out', async () => {
    const sent: string[] = [];
    const observe = 'conclave-test-observe';
    t.client.middlewareStack.add(
      (next, context) => async (args) => {
        const input = args.input as { ConsistentRead?: boolean };
        sent.push(`${context.commandName}${input.ConsistentRead === false ? ' (eventual)' : ''}`);
        return next(args);
      },
      { step: 'initialize', name: observe },
    );
    try {
      const ran = await withLease('mrsc-report', async () => 'ok', opts('mrsc-1', { mode: 'NoCoordination', multiRegion: true, runOnce: { every: 'day', at: '2026-11-27T00:00:00Z' } }));
      expect(ran).toMatchObject({ status: 'ran', window: '2026-11-27' });
      expect(sent.length).toBeGreaterThan(3);
      expect(sent.filter((c) => c.startsWith('Transact') || c.endsWith('(eventual)'))).toEqual([]);
      const refused = await withLease('mrsc-report', async (_s, term) => {
        const fenced = await term.fencedWrite({ TransactItems: [put('r-mrsc', term.identity)] }).catch((x: unknown) => x);
        expect((fenced as Error).message).toMatch(/offer no transactions: fence your own items with fencedItemWrite/);
        await term.complete([put('r-mrsc', term.identity)]);
      }, opts('mrsc-2', { mode: 'NoCoordination', multiRegion: true, runOnce: { window: 'with-items' } })).catch((x: unknown) => x);
      expect(refused).toBeInstanceOf(RangeError);
      expect((refused as Error).message).toMatch(/complete\(items\): .*write the items with fencedItemWrite, then call complete\(\)/);
      expect(await report('r-mrsc')).toBeUndefined();
      expect(sent.filter((c) => c.startsWith('Transact'))).toEqual([]);
    } finally {
      t.client.middlewareStack.remove(observe);
    }
  });
});

describe('tryWithLease and a lease held on a session', () => {
  const NOW = Date.UTC(2026, 0, 1, 12);
  /** A command recorder on a client of the run's DynamoDB Local. */
  function recorded(): { client: DynamoDBClient; sent: string[] } {
    const client = localClient(inject('ddbEndpoint'));
    const sent: string[] = [];
    client.middlewareStack.add((next, context) => async (args) => (sent.push(context.commandName ?? '?'), next(args)), { step: 'initialize', name: 'record' });
    return { client, sent };
  }

  it('a live holder on a session, its own stamp long old: busy at once, judged by the session’s renewals (nothing written, no candidacy)', async () => {
    const lease = 'on-session';
    const identities = new IdentityStore(t.client, t.names.identities);
    // a long-lived worker leads on its session: the session renews, the lease row's own stamp stays at the term's start
    await new LeaseStore(t.client, t.names.leases).write(LeaseStore.readOf(lease, undefined), {
      set: { holderIdentity: 'w1', holderInstance: 'w1_1@p1', session: 's-live', acquireTime: NOW - 10 * 60_000, renewTime: NOW - 10 * 60_000, leaseDurationSeconds: 15, leaseTransitions: 1, fencingToken: 42 },
    });
    await identities.write({ key: { component: SESSION_COMPONENT, name: 's-live' }, item: undefined, revision: 0 }, { set: { holderIdentity: 's-live_1', process: 'p1', hostname: 'web-1', leaseDurationSeconds: 15, acquireTime: NOW - 20 * 60_000, renewTime: NOW - 1_000 } });
    const { client, sent } = recorded();
    let ran = false;
    const r = await tryWithLease(lease, async () => (ran = true), { client, tables: t.names, identity: 'cron-1', mode: 'coordinated', candidacy: { emulationVersion: '1.30.0', binaryVersion: '1.30.0' }, platform: 'none', clockSync: 'none', clock: manualClock(NOW), ...FAST, onError: () => undefined });
    expect(r).toEqual({ status: 'busy', holder: 'w1' });
    expect(ran).toBe(false);
    // before the fix: judged stale by the lease row's own stamp, the run stood as a candidate and waited a term out
    expect(sent.filter((c) => c !== 'GetItemCommand')).toEqual([]);
    client.destroy();

    // the session row not granted (grantWorker without `sessions`): told, judged by the lease's own stamp as before, not thrown
    const denied = recorded();
    denied.client.middlewareStack.add(
      (next, context) => async (args) => {
        if (context.commandName === 'GetItemCommand' && (args.input as { TableName?: string }).TableName === t.names.identities) throw Object.assign(new Error('not authorized to perform: dynamodb:GetItem'), { name: 'AccessDeniedException' });
        return next(args);
      },
      { step: 'initialize', name: 'deny' },
    );
    const told: Error[] = [];
    const cancel = new AbortController();
    const e = await tryWithLease(lease, async () => (ran = true), {
      client: denied.client, tables: t.names, identity: 'cron-2', mode: 'coordinated', candidacy: { emulationVersion: '1.30.0', binaryVersion: '1.30.0' }, platform: 'none', clockSync: 'none', clock: manualClock(NOW), ...FAST, signal: cancel.signal,
      onError: (x) => {
        told.push(x);
        cancel.abort(new Error('seen enough')); // it goes on to wait the term out, as before
      },
    }).catch((x: unknown) => x);
    expect((e as Error).message).toBe('seen enough');
    expect(told[0]!.message).toMatch(/^tryWithLease run "cron-2" of lease "on-session": lease "on-session" is held on session "s-live", whose row could not be read: its holder is judged by the lease's own stamp/);
    expect(ran).toBe(false);
    denied.client.destroy();
  });

  it('a holder on a session row the schema refuses: busy at once, told the row and its repair (nobody judges that term: never taken for stale)', async () => {
    const lease = 'on-refused-session';
    const identities = new IdentityStore(t.client, t.names.identities);
    // an older SDK's holder (no process in its instance), its own stamp long old: before, judged by it (the row taken for gone),
    // stale, so the run stood as a candidate and waited a term out
    await new LeaseStore(t.client, t.names.leases).write(LeaseStore.readOf(lease, undefined), {
      set: { holderIdentity: 'w1', holderInstance: 'w1_1', session: 's-refused', acquireTime: NOW - 10 * 60_000, renewTime: NOW - 10 * 60_000, leaseDurationSeconds: 15, leaseTransitions: 1, fencingToken: 42 },
    });
    await identities.write({ key: { component: SESSION_COMPONENT, name: 's-refused' }, item: undefined, revision: 0 }, { set: { holderIdentity: 's-refused_1', hostname: 'web-1', leaseDurationSeconds: 15, acquireTime: NOW - 20 * 60_000, renewTime: NOW - 1_000 } });
    await t.client.send(new UpdateItemCommand({ TableName: t.names.identities, Key: marshall({ component: SESSION_COMPONENT, name: 's-refused' }), UpdateExpression: 'SET renewTime = :r', ExpressionAttributeValues: marshall({ ':r': 'just now' }) }));
    const { client, sent } = recorded();
    const told: Error[] = [];
    let ran = false;
    const r = await tryWithLease(lease, async () => (ran = true), { client, tables: t.names, identity: 'cron-3', mode: 'coordinated', candidacy: { emulationVersion: '1.30.0', binaryVersion: '1.30.0' }, platform: 'none', clockSync: 'none', clock: manualClock(NOW), ...FAST, onError: (x) => void told.push(x) });
    client.destroy();
    expect(r).toEqual({ status: 'busy', holder: 'w1' });
    expect(ran).toBe(false);
    expect(sent.filter((c) => c !== 'GetItemCommand')).toEqual([]);
    expect(told).toHaveLength(1);
    expect(told[0]).toBeInstanceOf(BrokenSessionError);
    expect(told[0]!.message).toMatch(new RegExp(`^tryWithLease run "cron-3" of lease "${lease}": the term of w1 \\(fencing token 42\\) is held on session "s-refused", whose row on the identities table "${t.names.identities}" does not match the schema \\(renewTime: .*Rewrite the row valid, or delete it: aws dynamodb delete-item --table-name ${t.names.identities} `));
  });
});

describe("withLease's first reads refused by DynamoDB (a role not allowed them, a throttled table)", () => {
  /** A client of DynamoDB Local whose requests `refuse` picks are refused with `name` before they are sent (as DynamoDB answers them). */
  const refusing = (name: string, message: string, refuse: (command: string, table: string | undefined) => boolean): DynamoDBClient => {
    const client = localClient(inject('ddbEndpoint'));
    client.middlewareStack.add(
      (next, context) => async (args) => {
        if (refuse(String(context.commandName), (args.input as { TableName?: string }).TableName)) throw Object.assign(new Error(message), { name, $fault: 'client', $metadata: { httpStatusCode: 400 } });
        return next(args);
      },
      { step: 'initialize', name: 'refuse' },
    );
    return client;
  };

  it.each([
    {
      call: 'withLease',
      refused: 'the lease row (AccessDenied)',
      name: 'AccessDeniedException',
      refuse: (c: string, table: string | undefined) => c === 'GetItemCommand' && table === t.names.leases,
      want: () =>
        `withLease of lease "denied-first-read": DynamoDB refused the request (AccessDeniedException: User: arn:aws:sts::1:assumed-role/job is not authorized to perform this action): ` +
        `the lease's row on the leases table "${t.names.leases}" this role may not read (GetItem); grant it Conclave's grantWorker with the lease among its leaseNames (or allLeases), and check its credentials`,
    },
    {
      call: 'tryWithLease',
      refused: "auto mode's candidates (AccessDenied)",
      name: 'AccessDeniedException',
      refuse: (c: string, table: string | undefined) => c === 'QueryCommand' && table === t.names.candidates,
      want: () =>
        `tryWithLease of lease "denied-first-read": DynamoDB refused the request (AccessDeniedException: User: arn:aws:sts::1:assumed-role/job is not authorized to perform this action): ` +
        `the lease's candidates on the candidates table "${t.names.candidates}" this role may not read (Query); grant it Conclave's grantWorker with the lease among its leaseNames (or allLeases), and check its credentials`,
    },
    {
      call: 'withLease',
      refused: 'the lease row (throttled)',
      name: 'ThrottlingException',
      refuse: (c: string, table: string | undefined) => c === 'GetItemCommand' && table === t.names.leases,
      want: () =>
        `withLease of lease "denied-first-read": DynamoDB throttled the request (ThrottlingException): the lease's row on the leases table "${t.names.leases}" was not read: ` +
        `the table's capacity is exhausted (on-demand tables: a hot partition, or the account's limit), the AWS SDK's own retries used up, and withLease does not retry: call it again later`,
    },
  ])('$call, $refused: a DynamoDBRefusedError naming the call, the lease, the table and what to check (not the bare SDK error)', async ({ call, name, refuse, want }) => {
    const client = refusing(name, 'User: arn:aws:sts::1:assumed-role/job is not authorized to perform this action', refuse);
    let ran = false;
    try {
      const e = await (call === 'withLease' ? withLease : tryWithLease)('denied-first-read', async () => (ran = true), { ...opts('denied', { client }), waitMs: 0 }).catch((x: unknown) => x);
      // before the fix: the SDK's own error, bare
      expect(e).toBeInstanceOf(DynamoDBRefusedError);
      expect(e).toMatchObject({ kind: name === 'ThrottlingException' ? 'throttled' : 'denied', cause: { name } });
      expect((e as Error).message).toBe(want());
      expect(ran).toBe(false);
    } finally {
      client.destroy();
    }
  });
});

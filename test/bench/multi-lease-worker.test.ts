/**
 * The many-leases steady state prices the push path as one connection per process, whatever the
 * number of leases it stands for: bench/multi-lease-worker.ts must open ONE PushChannel (one
 * connection, one subscription) shared by all its electors, so a wake reaches the process once.
 * Likewise ONE Session (unless SESSION=off): every lease the process wins is held on it, kept
 * alive by its renewals (counted as `session-renewal`) instead of the leader's; its timings come
 * from the electors' and are the Session's defaults for client-go's.
 */
import { randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { DynamoDBClient, QueryCommand } from '@aws-sdk/client-dynamodb';
import { IoTDataPlaneClient } from '@aws-sdk/client-iot-data-plane';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { sessionTimingFor } from '../../bench/session-timing.js';
import { coordinatorDeps } from '../../lib/coordinator/reconcile.js';
import { sessionKey } from '../../lib/schemas/session-partition.js';
import { iotWaker } from '../../lib/functions/wake.js';
import { startPushBroker, type PushBroker } from '../../lib/local/push-broker.js';
import { WorkerProcess, type WorkerEvent } from '../../lib/local/worker-process.js';
import { Session } from '../../lib/sdk/session.js';
import { LeaseStore } from '../../lib/stores/lease-store.js';
import { LOCAL_CREDENTIALS } from '../../lib/stores/client.js';
import { testTables, type TestTables } from '../support.js';
import { coordinatorLoop, waitFor } from '../sdk/harness.js';

const WORKER = fileURLToPath(new URL('../../bench/multi-lease-worker.ts', import.meta.url));
/**
 * client-go's timings, for both tests: the process runs a session (SESSION defaults to on), and with
 * short ones (2/1.5/0.25 s) its deadline is 1.2 s, which a process starved on a busy machine misses:
 * the session ends, reports it as an error and hands its terms back to their electors. These give
 * it 7.5 s.
 */
const STEADY = { leaseDurationMs: 15_000, renewDeadlineMs: 10_000, retryPeriodMs: 2_000 } as const;
let t: TestTables;
let broker: PushBroker;

beforeAll(async () => {
  t = await testTables('bench-multi-push');
  broker = await startPushBroker();
});
afterAll(async () => {
  await broker.stop();
  await t.drop();
});

describe('the multi-lease worker on the push path', () => {
  it('one connection for five electors, and a wake for one of their leases is delivered to the process once', async () => {
    const stem = `m-${randomUUID().slice(0, 8)}`;
    const prefix = t.names.leases.replace(/-leases$/, '');
    const w = new WorkerProcess(
      { identity: 'p1', lease: stem, emulationVersion: '1.30.0', binaryVersion: '1.30.0', timing: STEADY, script: WORKER },
      { endpoint: inject('ddbEndpoint'), tablePrefix: prefix, pushUrl: broker.wsEndpoint, extra: { LEASE_COUNT: '5', COUNT_REQUESTS_EVERY_MS: '200' } },
    );
    const data = new IoTDataPlaneClient({ endpoint: broker.httpEndpoint, region: 'us-east-1', credentials: LOCAL_CREDENTIALS });
    try {
      await waitFor('the worker connected', () => broker.stats().connections >= 1 && w.events.some((e) => e.event === 'ready'));
      // every elector is running by the time the process has counted its requests a few times
      await waitFor('a few request counts', () => w.events.filter((e) => e.event === 'requests').length >= 3);
      expect(broker.stats().connections).toBe(1);
      const before = broker.stats().delivered;
      await iotWaker(data, t.names.leases)(`${stem}-2`, undefined);
      await waitFor('the wake delivered', () => broker.stats().delivered > before);
      expect(broker.stats().delivered - before).toBe(1);
      expect(w.events.filter((e) => e.event === 'error')).toEqual([]);
    } finally {
      data.destroy();
      await w.stop();
    }
    await waitFor('the channel closed with the process', () => broker.stats().connections === 0);
  });
});

type Tallies = NonNullable<WorkerEvent['requests']>;
const counts = (w: WorkerProcess): Tallies[] => w.events.filter((e) => e.event === 'requests').map((e) => e.requests!);
const writes = (t: Tallies | undefined, role: string) => t?.[role]?.commands['UpdateItem'] ?? 0;

describe('the multi-lease worker with one session per process', () => {
  it("the session's timings: the Session's defaults for client-go's 15/10/2 s", () => {
    const client = new DynamoDBClient({ region: 'local' });
    const defaults = new Session({ client }).options;
    client.destroy();
    expect(sessionTimingFor({ leaseDurationMs: 15_000, renewDeadlineMs: 10_000, retryPeriodMs: 2_000 })).toEqual({
      renewIntervalMs: defaults.renewIntervalMs,
      retryPeriodMs: defaults.retryPeriodMs,
      renewDeadlineMs: defaults.renewDeadlineMs,
      maxLeaseDurationMs: defaults.maxLeaseDurationMs,
    });
  });

  it('SESSION on: every lease it wins is held on its one session, whose renewals replace the leader renewals; SESSION=off: none', async () => {
    const prefix = t.names.leases.replace(/-leases$/, '');
    const spec = (identity: string, stem: string) => ({ identity, lease: stem, emulationVersion: '1.30.0', binaryVersion: '1.30.0', timing: STEADY, script: WORKER });
    const on = `s-${randomUUID().slice(0, 8)}`;
    const off = `n-${randomUUID().slice(0, 8)}`;
    const leases = [0, 1, 2].flatMap((i) => [`${on}-${i}`, `${off}-${i}`]);
    const loops = leases.map((l) => coordinatorLoop(coordinatorDeps(t.client, t.names, { config: { ackWindowMs: 500 } }), l, 200));
    const env = (session: string) => ({ endpoint: inject('ddbEndpoint'), tablePrefix: prefix, extra: { LEASE_COUNT: '3', COUNT_REQUESTS_EVERY_MS: '200', SESSION: session } });
    const withSession = new WorkerProcess(spec('p1', on), env('on'));
    const without = new WorkerProcess(spec('p2', off), env('off'));
    try {
      const started = (w: WorkerProcess) => new Set(w.events.filter((e) => e.event === 'started').map((e) => (e as { lease?: string }).lease)).size;
      await waitFor('both processes lead their 3 leases', () => started(withSession) === 3 && started(without) === 3);
      const last = (w: WorkerProcess) => counts(w).at(-1);
      await waitFor('a session renewal counted since the last start', () => last(withSession) !== undefined && last(without) !== undefined && writes(last(withSession)!, 'session-renewal') > 0);
      const before = last(withSession)!;
      const beforeOff = last(without)!;
      // a request is counted as it is sent, a renewal by the session once answered: wait for both
      type SessionStats = { renewals: number; failedRenewals: number; ended: number };
      const sessionStats = () => (withSession.events.findLast((e) => e.event === 'requests') as unknown as { session: SessionStats }).session;
      await waitFor('two more session renewals (sent, and counted by the session) and three lease renewals without a session', () => writes(last(withSession)!, 'session-renewal') - writes(before, 'session-renewal') >= 2 && sessionStats().renewals >= 2 && writes(last(without)!, 'leader') - writes(beforeOff, 'leader') >= 3);
      const after = last(withSession)!;
      const afterOff = last(without)!;
      // on the session: no lease renewal at all, the session's renewals instead (every 5 s here);
      // a failure says what ended a term, and the session's own figures
      const told = JSON.stringify(withSession.events.filter((e) => e.event === 'stopped' || e.event === 'error' || e === withSession.events.findLast((x) => x.event === 'requests')));
      expect(writes(after, 'leader') - writes(before, 'leader'), told).toBe(0);
      expect(writes(after, 'session-renewal') - writes(before, 'session-renewal')).toBeGreaterThanOrEqual(2);
      // without: each leader renews its own lease, and nothing touches a session row
      expect(writes(afterOff, 'leader') - writes(beforeOff, 'leader')).toBeGreaterThanOrEqual(3);
      expect(afterOff['session-renewal']).toBeUndefined();
      expect(afterOff['session-read']).toBeUndefined();

      const ready = withSession.events.find((e) => e.event === 'ready') as unknown as { session: string | null };
      expect(ready.session).toMatch(/^all-\d{2}:session-p1-/); // a worker granted every lease: its process's one of the 64 session partitions
      expect((without.events.find((e) => e.event === 'ready') as unknown as { session: string | null }).session).toBeNull();
      const store = new LeaseStore(t.client, t.names.leases);
      for (let i = 0; i < 3; i++) {
        expect((await store.read(`${on}-${i}`)).item?.session).toBe(ready.session);
        expect((await store.read(`${off}-${i}`)).item?.session).toBeUndefined();
      }
      const stats = sessionStats();
      expect(stats.renewals, told).toBeGreaterThanOrEqual(2);
      expect(stats, told).toMatchObject({ failedRenewals: 0, ended: 0 });
    } finally {
      await Promise.all([withSession.stop(), without.stop()]);
      await Promise.all(loops.map((l) => l.stop()));
    }
    // The session outlived its electors and deleted its row on the way out: the row live when the
    // process left. Past the window above, a busy machine may end a session (renewals answered too
    // late for its 7.5 s deadline; reported, and followed by a new row): such a row is not the
    // leaving's to delete (it expires and is collected), so the delete is owed for the live one only.
    expect(withSession.events.at(-1)?.event, 'the process exited on its own, its counts flushed').toBe('exited');
    const flushed = withSession.events.findLast((e) => e.event === 'requests') as unknown as { requests: Tallies; session: { started: number } };
    const told = JSON.stringify(withSession.events.filter((e) => e.event === 'stopped' || e.event === 'error' || e === (flushed as unknown)));
    const session = (withSession.events.find((e) => e.event === 'ready') as unknown as { session: string }).session;
    const endedName = (e: WorkerEvent) => (e.event === 'error' ? /^session: Session (\S+) ended: /.exec(e.message ?? '')?.[1] : undefined);
    const endedEarlier = withSession.events.map(endedName).filter((n) => n !== undefined);
    const liveAtLeave = flushed.session.started - endedEarlier.length; // every row started ended, reported, or by the leaving
    expect(liveAtLeave, told).toBeGreaterThanOrEqual(0);
    expect(liveAtLeave, told).toBeLessThanOrEqual(1);
    expect(flushed.requests['session-renewal']!.commands['DeleteItem'] ?? 0, told).toBe(liveAtLeave);
    // and it is gone: of the process's session rows, only those it reported ended may be left
    const [shard] = session.split(':');
    const rows = await t.client.send(new QueryCommand({ TableName: t.names.identities, KeyConditionExpression: 'component = :c AND begins_with(#n, :p)', ExpressionAttributeNames: { '#n': 'name' }, ExpressionAttributeValues: { ':c': { S: sessionKey(session).component }, ':p': { S: `${shard}:session-p1-` } }, ConsistentRead: true }));
    expect((rows.Items ?? []).map((r) => r['name']!.S).filter((n) => !endedEarlier.includes(n!)), told).toEqual([]);
    // no fault but DynamoDB Local answering too late for a request's timeout, which a busy machine
    // brings (load 14: a read timed out and was retried) and the elector reports and retries, or a
    // session ended by it past the window (above); what this test is about (no leader renewal on
    // the session, none failed or ended while measured) is asserted above
    const unreachable = (e: WorkerEvent) => e.name === 'DynamoDBUnreachableError';
    expect([...withSession.events, ...without.events].filter((e) => e.event === 'error' && !unreachable(e) && endedName(e) === undefined)).toEqual([]);
  });
});

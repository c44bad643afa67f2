/**
 * The sweep (lib/discovery/sweep.ts): a term that ends with no write (its holder crashed, nobody
 * took the lease after it) publishes no event, so only the function's own schedule can clear the
 * name that points at the dead holder (it stayed for good; a review, 2026-12-06). On DynamoDB Local
 * (the leases and identities tables read by the real getLeader) and the fake Cloud Map.
 */
import { randomUUID } from 'node:crypto';
import type { Context } from 'aws-lambda';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { DISCOVERY_ACCESS } from '../../infra/access.js';
import { makeHandler } from '../../functions/leader-discovery.js';
import { manualClock, type ManualClock } from '../../lib/clock.js';
import { coordinatorDeps } from '../../lib/coordinator/reconcile.js';
import { cloudMapNaming } from '../../lib/discovery/cloud-map.js';
import type { DiscoveryFunctionDeps } from '../../lib/discovery/handler.js';
import { DiscoveryStateStore } from '../../lib/discovery/state-store.js';
import { sweepChange, sweepNames, SWEEP_MARGIN_MS } from '../../lib/discovery/sweep.js';
import { DISCOVERY_FUNCTION, DISCOVERY_SWEEP_LEFT_METRIC, DISCOVERY_TABLE } from '../../lib/discovery/wiring.js';
import { observability } from '../../lib/functions/observability.js';
import { localClient } from '../../lib/local/dynamodb-local.js';
import { leadershipOf } from '../../lib/sdk/get-leader.js';
import { createTable, deleteTable } from '../../lib/stores/table-admin.js';
import type { LeaseStore } from '../../lib/stores/lease-store.js';
import { testTables, type TestTables } from '../support.js';
import { fakeAws, type FakeAws } from './fake-aws.js';

let aws: FakeAws;
let t: TestTables;
let table: string;
beforeAll(async () => {
  aws = await fakeAws();
  t = await testTables('discovery-sweep');
  table = `${t.names.leases}-discovery`;
  await createTable(t.client, table, DISCOVERY_TABLE);
});
afterAll(async () => {
  await deleteTable(t.client, table);
  await t.drop();
  await aws?.close();
});

const T0 = Date.UTC(2026, 11, 6, 3);
const context = { getRemainingTimeInMillis: () => 30_000, functionName: 'conclave-leaderDiscovery', awsRequestId: 'r' } as unknown as Context;
const schedule = { version: '0', id: randomUUID(), source: 'aws.events', 'detail-type': 'Scheduled Event', account: '123456789012', region: 'us-east-1', time: new Date(T0).toISOString(), resources: [], detail: {} };
const elected = (lease: string, holder: string, fencingToken: number, address: string) => ({
  version: '0', id: randomUUID(), source: 'conclave', 'detail-type': 'Leader Elected', account: '123456789012', region: 'us-east-1', time: new Date(T0).toISOString(), resources: [],
  detail: { id: `rec-${randomUUID()}:leader-elected`, lease, time: new Date(T0).toISOString(), holder, fencingToken, leaseTransitions: 1, address },
});

function handlerAt(clock: ManualClock) {
  const deps: DiscoveryFunctionDeps = {
    discovery: { state: new DiscoveryStateStore(t.client, table), naming: cloudMapNaming(aws.cloudMap(), aws.serviceId), clock },
    // the real read, on this test's clock (no Date headers to sync with: DynamoDB Local's are the machine's)
    leadershipOf: (lease, signal) => leadershipOf(lease, { client: t.client, tables: t.names, clock, clockSync: 'none', signal }),
    leases: undefined,
    ...observability('leaderDiscovery', 'SILENT'),
  };
  return makeHandler(deps);
}

/** Lease `name` held by `holder` (NoCoordination: no candidate, so nobody elects after it), renewed at `at`. */
async function hold(leases: LeaseStore, name: string, holder: string, fencingToken: number, at: number, address: string): Promise<void> {
  await leases.write(await leases.read(name), { set: { holderIdentity: holder, holderInstance: `${holder}-1`, holderAddress: address, leaseDurationSeconds: 15, acquireTime: at, renewTime: at, leaseTransitions: 1, fencingToken, electedBy: 'self' } });
}

describe('the sweep', () => {
  it("ends before the invocation's time does, its margin kept: slow naming calls leave leases for the next sweep, and nothing throws (a throw would be retried and dead-lettered as a lost event)", async () => {
    const clock = manualClock(T0);
    const rows = ['a', 'b', 'c', 'd'].map((lease, i) => ({ lease, fencingToken: i + 1, ended: false, holder: 'w', address: 'http://10.0.0.9:80', applied: true, eventId: 'e', changedAt: T0, revision: 1 }));
    const state = new DiscoveryStateStore(t.client, table);
    // each naming call takes 10 s of the invocation's 30 (the leases' terms all over)
    const naming = { describe: 'slow', point: async () => void clock.advance(10_000), clear: async (_lease: string, withinMs?: number) => void (seenWithin.push(withinMs ?? -1), clock.advance(10_000)) };
    const seenWithin: number[] = [];
    const result = await sweepNames({ discovery: { state, naming, clock }, leadershipOf: async () => ({ leader: null, vacancy: 'expired' }) }, rows, T0 + 30_000);
    expect(clock.now() - T0).toBeLessThanOrEqual(30_000 - SWEEP_MARGIN_MS + 10_000); // no lease started within the margin
    expect(result.left).toEqual(['d']);
    expect(Object.keys(result.changed).length + result.left.length).toBe(4);
    // each call was told how long it had: never past the deadline less the margin
    expect(seenWithin.length).toBeGreaterThan(0);
    for (const w of seenWithin) expect(w >= 0 && w <= 30_000 - SWEEP_MARGIN_MS, String(w)).toBe(true);
  });

  it('a sweep whose scan fails is told (a metric of leases left, which the namesUnswept alarm watches) and returns: never thrown', async () => {
    const clock = manualClock(T0);
    const seen = observability(DISCOVERY_FUNCTION.name, 'SILENT');
    const counted: unknown[][] = [];
    const addMetric = seen.metrics.addMetric.bind(seen.metrics);
    seen.metrics.addMetric = (...args: Parameters<typeof addMetric>) => (counted.push(args), addMetric(...args));
    const handler = makeHandler({
      discovery: { state: new DiscoveryStateStore(t.client, `${table}-missing`), naming: cloudMapNaming(aws.cloudMap(), aws.serviceId), clock },
      leadershipOf: () => Promise.reject(new Error('not reached')),
      leases: undefined,
      ...seen,
    });
    expect(await handler(schedule, context)).toMatchObject({ judged: 0, left: ['*'], errors: [{ lease: '*', error: expect.objectContaining({ name: 'ResourceNotFoundException' }) }] });
    expect(counted).toEqual([[DISCOVERY_SWEEP_LEFT_METRIC, 'Count', 1]]);
  });

  it("clears the name of a holder that crashed with nobody after it (no event ever comes), and leaves a live holder's", async () => {
    const clock = manualClock(T0);
    const leases = coordinatorDeps(t.client, t.names, { clock }).leases;
    const handler = handlerAt(clock);
    await hold(leases, 'crashed', 'w1', 5, T0, 'http://10.0.0.7:8080');
    await hold(leases, 'alive', 'w2', 3, T0, 'http://10.0.0.8:8080');
    await handler(elected('crashed', 'w1', 5, 'http://10.0.0.7:8080'), context);
    await handler(elected('alive', 'w2', 3, 'http://10.0.0.8:8080'), context);
    expect(aws.instances.get('crashed')).toMatchObject({ holder: 'w1' });
    // while the term is on, the sweep changes nothing
    clock.set(T0 + 10_000);
    expect(await handler(schedule, context)).toMatchObject({ changed: {}, left: [] });
    expect(aws.instances.get('crashed')).toMatchObject({ holder: 'w1' });
    // w1 crashes (its renewals stop); w2 renews on
    clock.set(T0 + 20_000);
    await leases.write(await leases.read('alive'), { set: { renewTime: clock.now() } });
    expect(await handler(schedule, context)).toMatchObject({ changed: { crashed: 'end 5' }, left: [] });
    // before the fix: still registered, for good
    expect(aws.instances.has('crashed')).toBe(false);
    expect(aws.instances.get('alive')).toMatchObject({ holder: 'w2' });
    // an ended name with nobody leading is left as it is
    expect(await handler(schedule, context)).toMatchObject({ changed: {} });
  });

  it("sends the discovery table only what the construct grants (the Scan and the claims' UpdateItem)", async () => {
    const clock = manualClock(T0);
    const seen = new Set<string>();
    const store = localClient(inject('ddbEndpoint'));
    store.middlewareStack.add((next, c) => (args) => (seen.add(`dynamodb:${String(c.commandName).replace(/Command$/, '')}`), next(args)), { step: 'initialize', name: 'recordActions' });
    const leases = coordinatorDeps(t.client, t.names, { clock }).leases;
    await hold(leases, 'granted', 'w1', 2, T0, 'http://10.0.0.2:8080');
    const handler = makeHandler({
      discovery: { state: new DiscoveryStateStore(store, table), naming: cloudMapNaming(aws.cloudMap(), aws.serviceId), clock },
      leadershipOf: (lease, signal) => leadershipOf(lease, { client: t.client, tables: t.names, clock, clockSync: 'none', signal }),
      leases: undefined,
      ...observability('leaderDiscovery', 'SILENT'),
    });
    await handler(elected('granted', 'w1', 2, 'http://10.0.0.2:8080'), context);
    clock.set(T0 + 60_000);
    await handler(schedule, context);
    expect([...seen].sort()).toEqual([...DISCOVERY_ACCESS.table].sort());
    store.destroy();
  });

  it("names a newer term whose event never came (the dead-letter queue's), and an ending judged from an older read never undoes a newer term's name", async () => {
    const clock = manualClock(T0);
    const leases = coordinatorDeps(t.client, t.names, { clock }).leases;
    const handler = handlerAt(clock);
    await hold(leases, 'moved', 'w1', 7, T0, 'http://10.0.0.1:8080');
    await handler(elected('moved', 'w1', 7, 'http://10.0.0.1:8080'), context);
    await hold(leases, 'moved', 'w3', 8, T0 + 1_000, 'http://10.0.0.3:8080'); // its Leader Elected lost
    expect(await handler(schedule, context)).toMatchObject({ changed: { moved: 'term 8' } });
    expect(aws.instances.get('moved')).toMatchObject({ holder: 'w3', fencingToken: '8' });
    // what the sweep decides from a read: nothing older than the name shows
    const row = { lease: 'moved', fencingToken: 8, ended: false };
    const led = (fencingToken: number) => ({ leader: { lease: 'moved', holder: 'w2', fencingToken, since: T0 } });
    expect(sweepChange(row, led(7))).toBeUndefined();
    expect(sweepChange(row, led(8))).toBeUndefined();
    expect(sweepChange(row, { leader: null, vacancy: 'expired' })).toMatchObject({ kind: 'ended', fencingToken: 8 });
    expect(sweepChange({ ...row, ended: true }, { leader: null, vacancy: 'noHolder' })).toBeUndefined();
    // an ended name and a newer term whose event was lost: named (before: ended names were never judged)
    expect(sweepChange({ ...row, ended: true }, led(9))).toMatchObject({ kind: 'began', fencingToken: 9, holder: 'w2' });
    // a vacancy report, which the holder's next renewal takes back with the same token: no end (it would be final for that term)
    expect(sweepChange(row, { leader: null, vacancy: 'reported' })).toBeUndefined();
  });
});

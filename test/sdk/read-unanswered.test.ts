/**
 * A read a call makes once and does not retry (getLeader, withLease's and tryWithLease's first
 * look), sent on a connection that took it and never answers (a route black-holed after the
 * connection was made, a NAT that forgot the flow): abandoned at its bound, and told as DynamoDB out
 * of reach, as a handshake never answered is (test/sdk/on-the-way.test.ts): the call, the lease, the
 * endpoint, what was not read and to call it again, the timeout its cause. Nothing of a read lands,
 * so it is no "may have landed" timeout. On DynamoDB Local behind a proxy that stops answering
 * (test/proxy.ts), the clock driven.
 */
import { afterAll, afterEach, beforeAll, describe, expect, inject, it } from 'vitest';
import { localClient } from '../../lib/local/dynamodb-local.js';
import { MIN_REQUEST_BOUND_MS, RequestBoundError } from '../../lib/sdk/bounded-client.js';
import { oneShotFault, noteLastTry } from '../../lib/sdk/faults.js';
import { DynamoDBRefusedError, DynamoDBUnreachableError, getLeader, listIdentities, listLiveIdentities, tryWithLease } from '../../lib/sdk/index.js';
import { drivenClock, hangingProxy, inFlight } from '../proxy.js';
import { testTables, type TestTables } from '../support.js';

let t: TestTables;
beforeAll(async () => void (t = await testTables('read-unanswered')));
afterAll(async () => t.drop());
const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

/** A client to DynamoDB Local through a proxy that answers until `hang()`, and a clock driven while it is idle or hung. */
async function blackHoled() {
  const proxy = await hangingProxy(inject('ddbEndpoint'));
  cleanups.push(() => proxy.close());
  const client = localClient(proxy.endpoint);
  cleanups.push(() => client.destroy());
  const busy = inFlight(client);
  // a request the proxy took and never answers is waited on by its bound, on this clock
  const c = drivenClock(() => busy() && proxy.hung() === 0);
  return { proxy, client, c };
}

/** What `p` settles with, the clock driven until it does. */
async function settled(c: ReturnType<typeof drivenClock>, p: Promise<unknown>): Promise<unknown> {
  let out: { v: unknown } | undefined;
  p.then(
    (v) => void (out = { v }),
    (e: unknown) => void (out = { v: e }),
  );
  await c.drive(() => out !== undefined);
  return out!.v;
}

describe('a one-shot read sent and never answered (black-holed after connecting)', () => {
  it('getLeader: a DynamoDBUnreachableError naming the call, the lease, the endpoint, what was not read and to call it again; the timeout its cause', async () => {
    const { proxy, client, c } = await blackHoled();
    // the connection made while DynamoDB answered
    expect(await settled(c, getLeader('black-holed', { client, clock: c.clock, tables: t.names, clockSync: 'none' }))).toBeNull();
    proxy.hang();
    const from = c.clock.monotonic();
    const e = await settled(c, getLeader('black-holed', { client, clock: c.clock, tables: t.names, clockSync: 'none' }));
    expect(proxy.hung()).toBe(1);
    expect(c.clock.monotonic() - from).toBe(MIN_REQUEST_BOUND_MS); // at its bound
    // before: the bare TimeoutError "DynamoDB gave no answer within 5000 ms: the request was abandoned", naming nothing
    expect(e).toBeInstanceOf(DynamoDBUnreachableError);
    expect(e).toMatchObject({ endpoint: proxy.endpoint, code: 'timed out', cause: expect.any(RequestBoundError) });
    // sent on a connection made and never answered: told as DynamoDB taking the request and giving no answer (slow, or cut off once
    // connected), the network path to check (to 2026-12-07: "cannot reach DynamoDB at … (timed out): check the client's endpoint and
    // region, and that DynamoDB … is up", the endpoint's configuration blamed); a read, so no renewal gap is named
    expect((e as Error).message).toBe(
      `getLeader of lease "black-holed": DynamoDB at ${proxy.endpoint} took the request and gave no answer within ${MIN_REQUEST_BOUND_MS} ms (timed out after it was sent on a connection made: DynamoDB slow to answer, or the connection cut off on the way): ` +
        `check the network path to the endpoint (a route, NAT, proxy or firewall that drops a flow once made; the client's endpoint and region; a DynamoDB Local wedged or starved of CPU); ` +
        `the lease's row on the leases table "${t.names.leases}" was not read, and getLeader does not retry: call it again once DynamoDB answers`,
    );
  });

  it("tryWithLease's first read: the same, through the same path", async () => {
    const { proxy, client, c } = await blackHoled();
    proxy.hang();
    let ran = false;
    const e = await settled(c, tryWithLease('black-holed-run', async () => void (ran = true), { client, clock: c.clock, tables: t.names, clockSync: 'none', mode: 'NoCoordination', platform: 'none' }));
    expect(ran).toBe(false);
    // before: the bare TimeoutError
    expect(e).toBeInstanceOf(DynamoDBUnreachableError);
    // (the proxy took the request on a connection made: told as taken and unanswered, as getLeader's above)
    expect((e as Error).message).toMatch(
      new RegExp(`^tryWithLease of lease "black-holed-run": DynamoDB at ${proxy.endpoint.replace(/[.]/g, '\\.')} took the request and gave no answer within \\d+ ms \\(timed out after it was sent on a connection made: .*\\): check the network path .*; the lease's row on the leases table "${t.names.leases}" was not read, and tryWithLease does not retry: call it again once DynamoDB answers$`),
    );
  });

  // found by a review (2026-12-07, tenth): listIdentities threw the bare TimeoutError, naming no call, component or endpoint
  it.each(['listIdentities', 'listLiveIdentities'] as const)('%s: the same, naming the component and the partition not read', async (call) => {
    const { proxy, client, c } = await blackHoled();
    const list = call === 'listIdentities' ? listIdentities : listLiveIdentities;
    const options = { client, clock: c.clock, tables: t.names, clockSync: 'none', component: 'workers' } as const;
    // the connection made while DynamoDB answered
    expect(await settled(c, list(options))).toBeDefined();
    proxy.hang();
    const from = c.clock.monotonic();
    const e = await settled(c, list(options));
    expect(proxy.hung()).toBe(1);
    expect(c.clock.monotonic() - from).toBe(MIN_REQUEST_BOUND_MS); // at its bound
    // before: the bare TimeoutError "DynamoDB gave no answer within 5000 ms: the request was abandoned", naming nothing
    expect(e).toBeInstanceOf(DynamoDBUnreachableError);
    expect(e).toMatchObject({ endpoint: proxy.endpoint, code: 'timed out', cause: expect.any(RequestBoundError) });
    expect((e as Error).message).toMatch(
      new RegExp(`^${call} of component "workers": DynamoDB at ${proxy.endpoint.replace(/[.]/g, '\\.')} took the request and gave no answer within ${MIN_REQUEST_BOUND_MS} ms \\(timed out after it was sent on a connection made: .*\\): check the network path .*; the partition of component "workers" on the identities table "${t.names.identities}" was not read, and ${call} does not retry: call it again once DynamoDB answers$`),
    );
  });

  it('a read abandoned at its bound while the AWS SDK backed off from a throttle is told as throttled, not as DynamoDB out of reach', async () => {
    const client = localClient(inject('ddbEndpoint'));
    cleanups.push(() => client.destroy());
    const abandoned = new RequestBoundError(MIN_REQUEST_BOUND_MS);
    noteLastTry(abandoned, Object.assign(new Error('Rate of requests exceeds the allowed throughput.'), { name: 'ThrottlingException', $metadata: { httpStatusCode: 400 } }));
    const e = await oneShotFault(abandoned, 'getLeader', 'lease "hot"', 'the lease row', client);
    expect(e).toBeInstanceOf(DynamoDBRefusedError);
    expect(e).toMatchObject({ kind: 'throttled' });
    expect((e as Error).message).toMatch(/^getLeader of lease "hot": .*the lease row was not read: the table's capacity is exhausted .* call it again later$/);
  });

  it("a read DynamoDB failed on its side (HTTP 5xx, the AWS SDK's retries used up) names the call and what was not read, under the SDK's own name", async () => {
    const client = localClient(inject('ddbEndpoint'));
    cleanups.push(() => client.destroy());
    const failed = Object.assign(new Error('Internal server error'), { name: 'InternalServerError', $fault: 'server', $metadata: { httpStatusCode: 500 } });
    const e = await oneShotFault(failed, 'getLeader', 'lease "hot"', 'the lease row', client);
    // before: the SDK's bare "Internal server error", naming no call nor lease
    expect(e).toMatchObject({ name: 'InternalServerError', cause: failed });
    expect((e as Error).message).toBe(
      `getLeader of lease "hot": DynamoDB failed the request on its side (InternalServerError: Internal server error, HTTP 500), the AWS SDK's own retries used up: a fault of DynamoDB's; the lease row was not read, and getLeader does not retry: call it again (if it lasts, see the AWS Health Dashboard for DynamoDB in the client's Region)`,
    );
  });
});

/**
 * A leader whose own work fills its DynamoDB client's connection pool: the AWS SDK's Node.js
 * request handler opens at most maxSockets connections per host (50 by default) and queues the
 * rest, so a leader whose work keeps that many requests in flight on the client it gave the
 * elector has its renewals wait behind them. It stops by its renew deadline (it cannot show its
 * term is renewed), and is told why: the pool, not an unreachable DynamoDB. On DynamoDB Local,
 * the real AWS SDK with a pool of 2, through a loopback proxy that holds the work's requests; the
 * clock driven while a request not held is in flight.
 */
import { GetItemCommand } from '@aws-sdk/client-dynamodb';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { localClient } from '../../lib/local/dynamodb-local.js';
import { DynamoDBUnreachableError, getLeader } from '../../lib/sdk/index.js';
import { drivenClock, holdingProxy, inFlight } from '../proxy.js';
import { testTables, type TestTables } from '../support.js';
import { bound, drivenElector, handedOver, type Terms } from './driven-elector.js';

let t: TestTables;
beforeAll(async () => void (t = await testTables('pool')));
afterAll(async () => t.drop());

const POOL = 2;
/** Whether a request is the work's: a read of the item `work` (the lease rows' table, any table will do). */
const isWork = (operation: string, body: string) => operation === 'GetItem' && body.includes('"work"');

const POOL_FULL = (subject: string, then: string) =>
  new RegExp(
    `^${subject.replace(/[()"]/g, '\\$&')}: no answer within \\d+ ms, the request abandoned, while the DynamoDB client's connection pool was full \\(all ${POOL} sockets its HTTP agent may open in use, \\d+ requests? waiting for one\\): ` +
      `this process's other requests on the same client \\(a leader's own work, say\\) hold the sockets, and Conclave's requests wait behind them; give the LeaderElector \\(and Session\\) a DynamoDBClient of their own, or the client a larger pool \\(new DynamoDBClient\\(\\{ requestHandler: \\{ httpsAgent: \\{ maxSockets: 500 \\} \\} \\}\\), httpAgent for an http endpoint\\); ${then}$`,
  );

describe("a leader whose own work fills its client's connection pool", () => {
  it('stops by its renew deadline and a peer leads; each try is told as waiting on the full pool with what to do, not "cannot reach DynamoDB"; once the work lets go, it follows again', async () => {
    const proxy = await holdingProxy(inject('ddbEndpoint'), isWork);
    const client = localClient(proxy.endpoint, 'local', { requestHandler: { httpAgent: { maxSockets: POOL } } });
    const healthy = localClient(inject('ddbEndpoint'));
    const healthyBusy = inFlight(healthy);
    const c = drivenClock(() => proxy.inFlight() > proxy.held() || healthyBusy());
    const terms: Terms = [];
    const errors = { a: [] as Error[], b: [] as Error[] };
    const a = drivenElector(t.names, 'a', 'pooled', client, c, terms, errors.a);
    await c.drive(() => a.e.isLeader());
    const b = drivenElector(t.names, 'b', 'pooled', healthy, c, terms, errors.b);
    await c.drive(() => b.e.leader === 'a');

    // the leader's work: twice the pool's requests, on the client it gave the elector, answered slowly (held)
    proxy.holding(true);
    const from = c.clock.monotonic();
    const work = Array.from({ length: 2 * POOL }, () => client.send(new GetItemCommand({ TableName: t.names.leases, Key: { name: { S: 'work' } } })).catch(() => undefined));
    await c.drive(() => proxy.held() === POOL);
    await c.drive(() => c.clock.monotonic() - from >= 40_000);
    handedOver(terms, from);
    // before: each told as DynamoDBUnreachableError "cannot reach DynamoDB at … (timed out): check the client's endpoint and region, and that DynamoDB … is up"
    expect(errors.a.length).toBeGreaterThanOrEqual(3);
    expect(errors.a.length).toBeLessThanOrEqual(2 * bound(40_000)); // its renewals (each at its own bound) and polls
    for (const x of errors.a) {
      expect(x).not.toBeInstanceOf(DynamoDBUnreachableError);
      expect(x.name).toBe('TimeoutError');
      expect(x.message).toMatch(POOL_FULL('LeaderElector "a" of lease "pooled"', 'retrying with backoff'));
    }
    // a one-shot read on the same client is told the same, naming the call
    let read: unknown;
    getLeader('pooled', { client, tables: t.names, clock: c.clock }).then((x) => (read = x), (x: unknown) => (read = x));
    await c.drive(() => read !== undefined);
    expect((read as Error).message).toMatch(POOL_FULL('getLeader of lease "pooled"', `the lease's row on the leases table "${t.names.leases}" was not read, and getLeader does not retry`));

    proxy.release();
    await Promise.all(work);
    await c.drive(() => a.e.leader === 'b' && a.e.healthy());
    const quiet = errors.a.length;
    await b.stop();
    await c.drive(() => a.e.isLeader());
    expect(errors.a.length).toBe(quiet);
    await a.stop();
    client.destroy();
    healthy.destroy();
    await proxy.close();
  });
});

/**
 * Answers that are not DynamoDB's: something else at the client's endpoint (a proxy's or load
 * balancer's error page, a stand-in that says "200 OK" to anything, an answer cut short). The AWS
 * SDK takes an empty "200 OK" for a write that landed and a read that found no item: before
 * fromDynamoDB (lib/sdk/faults.ts), a worker behind such a thing read its lease as missing, "created"
 * it and led on a term no row held, beside the worker that took the real row. On DynamoDB Local,
 * through a loopback proxy (test/proxy.ts foreignAnswersProxy), on a clock moved while no request is
 * in flight: waits on simulated time, never on a time budget.
 */
import { PutItemCommand } from '@aws-sdk/client-dynamodb';
import { marshall } from '@aws-sdk/util-dynamodb';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { localClient } from '../../lib/local/dynamodb-local.js';
import { DynamoDBRefusedError, DynamoDBUnreachableError, fencedItemWrite, getLeader, listIdentities, NotDynamoDBError } from '../../lib/sdk/index.js';
import { drivenClock, foreignAnswersProxy, inFlight, type ForeignAnswer } from '../proxy.js';
import { bound, CLIENT_GO, drivenElector, type Terms } from './driven-elector.js';
import { testTables, type TestTables } from '../support.js';

let t: TestTables;
beforeAll(async () => void (t = await testTables('foreign')));
afterAll(async () => t.drop());

/** The longest time two terms overlapped (0: never two leaders at once). */
function overlapMs(terms: Terms, now: number): number {
  let most = 0;
  for (const a of terms)
    for (const b of terms) if (a !== b && a.who !== b.who) most = Math.max(most, Math.min(a.to ?? now, b.to ?? now) - Math.max(a.from, b.from));
  return most;
}

/**
 * A proxy in front of DynamoDB Local, a client through it and one straight to DynamoDB Local, and a
 * clock driven while neither has a request in flight; with `sdkRetriesTakeTime`, while the proxy
 * has none (the clock moves while the AWS SDK waits to try a request again, as time passes then).
 */
async function setUp(o: { sdkRetriesTakeTime?: boolean; retryMode?: 'adaptive' } = {}) {
  const proxy = await foreignAnswersProxy(inject('ddbEndpoint'));
  const through = localClient(proxy.endpoint, undefined, o.retryMode ? { retryMode: o.retryMode } : {});
  const direct = localClient(inject('ddbEndpoint'));
  // (a request counts as in flight while the AWS SDK waits to try it again, as it does after a 5xx, on its own timers)
  const busy = [inFlight(through), inFlight(direct)];
  const c = drivenClock(() => proxy.inFlight() > 0 || (!o.sdkRetriesTakeTime && busy.some((b) => b())));
  return {
    proxy,
    through,
    direct,
    c,
    close: async () => {
      through.destroy();
      direct.destroy();
      await proxy.close();
    },
  };
}

describe('a worker behind something that answers every request "200 OK" with no body (no x-amzn-RequestId)', () => {
  it('never leads, nor does a second one behind it: each try is told as a NotDynamoDBError naming the endpoint, at most once per retry period; run() resolves on cancel', async () => {
    const s = await setUp();
    s.proxy.answer('empty200');
    const terms: Terms = [];
    const errors = { a: [] as Error[], b: [] as Error[] };
    const a = drivenElector(t.names, 'a', 'stand-in', s.through, s.c, terms, errors.a);
    const b = drivenElector(t.names, 'b', 'stand-in', s.through, s.c, terms, errors.b);
    await s.c.drive(() => s.c.waited() >= 60_000);
    // before: each read "found no row", each create "landed", and both led at once (a term no row holds)
    expect(terms).toEqual([]);
    for (const x of [errors.a, errors.b]) {
      expect(x.length).toBeGreaterThanOrEqual(3);
      expect(x.length).toBeLessThanOrEqual(bound(60_000));
      for (const err of x) {
        expect(err).toBeInstanceOf(NotDynamoDBError);
        expect(err).toMatchObject({ endpoint: s.proxy.endpoint, httpStatusCode: 200 });
        expect(err.message).toBe(
          `the answer from ${s.proxy.endpoint} is not DynamoDB's (HTTP 200, no x-amzn-RequestId header, which DynamoDB sends with every answer): something else answers there (a proxy's or load balancer's error page, a captive portal, another server on that port): check the client's endpoint and region, and any HTTPS_PROXY or HTTP_PROXY setting; retrying with backoff`,
        );
      }
    }
    expect(s.proxy.foreign()).toBeLessThanOrEqual(2 * 2 * bound(60_000)); // a read and a write a try at most, no hot loop
    expect([a.settled(), b.settled()]).toEqual([undefined, undefined]);
    await a.stop();
    await b.stop();
    expect([a.settled(), b.settled()]).toEqual(['resolved', 'resolved']);
    await s.close();
  });

  it('a leader whose answers turn so mid-term, beside a peer that reaches DynamoDB: it stops by its renew deadline and never leads on a term no row holds; the peer takes the real lease, one leader at a time', async () => {
    const s = await setUp();
    const terms: Terms = [];
    const errors = { a: [] as Error[], b: [] as Error[] };
    const a = drivenElector(t.names, 'a', 'mid-term', s.through, s.c, terms, errors.a);
    await s.c.drive(() => a.e.isLeader());
    const b = drivenElector(t.names, 'b', 'mid-term', s.direct, s.c, terms, errors.b);
    await s.c.drive(() => s.c.waited() >= 20_000);
    const from = s.c.clock.monotonic();
    s.proxy.answer('empty200');
    await s.c.drive(() => s.c.clock.monotonic() - from >= 60_000);
    const now = s.c.clock.monotonic();
    // before: 'a' led again on a lease it read as missing and "created", beside 'b' on the real row (10 s of two leaders, measured)
    expect(overlapMs(terms, now)).toBe(0);
    expect(terms.filter((x) => x.who === 'a')).toHaveLength(1);
    expect(terms[0]!.to! - from).toBeLessThanOrEqual(CLIENT_GO.renewDeadlineMs);
    expect(terms.filter((x) => x.who === 'b' && x.to === undefined)).toHaveLength(1); // b leads now
    expect(errors.a.length).toBeGreaterThanOrEqual(3);
    expect(errors.a.every((x) => x instanceof NotDynamoDBError)).toBe(true);
    expect(errors.b).toEqual([]);
    await a.stop();
    await b.stop();
    await s.close();
  });
});

describe.each<[ForeignAnswer, string, RegExp]>([
  ['html502', 'a load balancer answering its HTML error page (HTTP 502)', /^the answer from \S+ is not DynamoDB's \(HTTP 502, content-type text\/html, a body the AWS SDK could not read: Unexpected token '\\u001b', "\\u001b\[2J<html>"\.\.\. is not valid JSON\): .*; retrying with backoff$/],
  ['forbidden403', "an API gateway's refusal (HTTP 403, JSON with no DynamoDB error type)", /^the answer from \S+ is not DynamoDB's \(HTTP 403, no x-amzn-RequestId header and no DynamoDB error type, saying: Forbidden\): .*; retrying with backoff$/],
  ['cut200', 'answers cut to half their length on the way (HTTP 200, the write landed)', /^the answer from \S+ is not DynamoDB's \(HTTP 200, content-type application\/x-amz-json-1\.0, a body the AWS SDK could not read: .*JSON.*\): .*; retrying with backoff$/],
])('a leader whose answers turn into %s', (kind, _, told) => {
  it('stops by its renew deadline, each try told as a NotDynamoDBError (control characters escaped), no hot loop; it leads again once DynamoDB answers', async () => {
    const s = await setUp();
    const terms: Terms = [];
    const errors: Error[] = [];
    const a = drivenElector(t.names, 'a', `turned-${kind}`, s.through, s.c, terms, errors);
    await s.c.drive(() => a.e.isLeader());
    await s.c.drive(() => s.c.waited() >= 10_000);
    const from = s.c.clock.monotonic();
    s.proxy.answer(kind);
    await s.c.drive(() => s.c.clock.monotonic() - from >= 60_000);
    expect(terms).toHaveLength(1);
    expect(terms[0]!.to! - from).toBeLessThanOrEqual(CLIENT_GO.renewDeadlineMs);
    // before: the AWS SDK's bare SyntaxError ("Unexpected token '<' … Deserialization error"), naming neither the endpoint nor what answered
    expect(errors.length).toBeGreaterThanOrEqual(3);
    for (const e of errors) {
      expect(e).toBeInstanceOf(NotDynamoDBError);
      expect(e.message).toMatch(told);
      expect(e.message).not.toMatch(/[\u0000-\u001f]/);
      expect((e as NotDynamoDBError).cause?.name).toBe(kind === 'forbidden403' ? 'Unknown' : 'SyntaxError'); // the AWS SDK's own error
    }
    expect(s.proxy.foreign()).toBeLessThanOrEqual(3 * 2 * bound(60_000)); // the AWS SDK tries a 5xx three times; a read and a write a try
    s.proxy.answer(undefined);
    await s.c.drive(() => a.e.isLeader());
    expect(s.c.clock.monotonic() - from - 60_000).toBeLessThanOrEqual(2 * 4 * CLIENT_GO.retryPeriodMs + CLIENT_GO.leaseDurationMs);
    expect(a.settled()).toBeUndefined();
    await a.stop();
    await s.close();
  });
});

describe('a leader every request of which DynamoDB throttles, the AWS SDK trying each again until its bound passes', () => {
  it('each try is told as throttled (DynamoDBRefusedError), not as "cannot reach DynamoDB (timed out)"; it stops by its renew deadline and leads again once answered', async () => {
    const s = await setUp({ sdkRetriesTakeTime: true });
    const terms: Terms = [];
    const errors: Error[] = [];
    const a = drivenElector(t.names, 'a', 'throttled', s.through, s.c, terms, errors);
    await s.c.drive(() => a.e.isLeader());
    await s.c.drive(() => s.c.waited() >= 10_000);
    const from = s.c.clock.monotonic();
    s.proxy.answer('throttled');
    await s.c.drive(() => s.c.clock.monotonic() - from >= 60_000);
    expect(terms).toHaveLength(1);
    expect(terms[0]!.to! - from).toBeLessThanOrEqual(CLIENT_GO.renewDeadlineMs);
    expect(errors.length).toBeGreaterThanOrEqual(3);
    // before: every try abandoned at its bound was told "cannot reach DynamoDB at … (timed out): check the client's endpoint and region"
    expect(errors.filter((e) => e instanceof DynamoDBUnreachableError)).toEqual([]);
    for (const e of errors) {
      expect(e).toBeInstanceOf(DynamoDBRefusedError);
      expect(e).toMatchObject({ kind: 'throttled', cause: { name: 'ThrottlingException' } });
    }
    s.proxy.answer(undefined);
    await s.c.drive(() => a.e.isLeader());
    await a.stop();
    await s.close();
  });
});

describe("a leader whose client uses the AWS SDK's adaptive retry mode, every request throttled", () => {
  it('a request the SDK holds in the process (its rate limiter) past its bound is told as held and throttled, not as "cannot reach DynamoDB (timed out)"', async () => {
    // the adaptive mode's rate limiter waits on real time; the clock moves while the proxy has no request, as it does then
    const s = await setUp({ sdkRetriesTakeTime: true, retryMode: 'adaptive' });
    const terms: Terms = [];
    const errors: Error[] = [];
    const a = drivenElector(t.names, 'a', 'adaptive', s.through, s.c, terms, errors);
    await s.c.drive(() => a.e.isLeader());
    const from = s.c.clock.monotonic();
    s.proxy.answer('throttled');
    const held = () => errors.filter((e) => /the AWS SDK held the request in this process for \d+ ms and never sent it/.test(e.message));
    await s.c.drive(() => s.c.clock.monotonic() - from >= 60_000);
    expect(held().length).toBeGreaterThan(0);
    // before: told "cannot reach DynamoDB at … (timed out): check the client's endpoint and region"
    expect(errors.filter((e) => e instanceof DynamoDBUnreachableError)).toEqual([]);
    for (const e of errors) expect(e).toMatchObject({ name: 'DynamoDBRefusedError', kind: 'throttled' });
    expect(held()[0]!.message).toMatch(
      /^LeaderElector "a" of lease "adaptive": the AWS SDK held the request in this process for \d+ ms and never sent it \(the client's retry mode is adaptive, which slows every request once DynamoDB throttled some, a renewal past its deadline too: give Conclave a client in the standard retry mode\): the table's capacity is exhausted .*; retrying with backoff$/,
    );
    expect(held()[0]!.cause).toMatchObject({ name: 'TimeoutError' });
    expect(terms[0]!.to! - from).toBeLessThanOrEqual(CLIENT_GO.renewDeadlineMs);
    // (no recovery asked for here: the rate limiter waits on real time, which this clock outruns)
    await a.stop();
    await s.close();
  });

  it('getLeader, which does not retry, says the same and what it did not read', async () => {
    const s = await setUp({ sdkRetriesTakeTime: true, retryMode: 'adaptive' });
    s.proxy.answer('throttled');
    const read = () => getLeader('adaptive-one-shot', { client: s.through, tables: t.names, clockSync: 'none', clock: s.c.clock }).then((r) => r, (x: unknown) => x as Error);
    // DynamoDB's throttles slow the client's rate limiter: a later call waits in it past its bound
    const told: Error[] = [];
    for (let calls = 0; calls < 20 && !told.some((e) => /held the request in this process/.test(e.message)); calls++) {
      const r = read();
      let done: Error | undefined;
      void r.then((x) => void (done = x as Error));
      await s.c.drive(() => done !== undefined);
      told.push(done!);
    }
    const held = told.find((e) => /held the request in this process/.test(e.message));
    expect(held).toBeInstanceOf(DynamoDBRefusedError);
    expect(held!.message).toMatch(/^getLeader of lease "adaptive-one-shot": the AWS SDK held the request in this process for \d+ ms and never sent it \(the client's retry mode is adaptive, .*\): the lease's row on the leases table "\S+" was not read, and getLeader does not retry: call it again later$/);
    expect(told.filter((e) => e instanceof DynamoDBUnreachableError)).toEqual([]);
    await s.close();
  });
});

describe('one-shot calls behind something that answers "200 OK" with no body', () => {
  it('getLeader rejects with a NotDynamoDBError naming the call and what it did not read (before: "no leader", a lease it never read)', async () => {
    const s = await setUp();
    await s.direct.send(new PutItemCommand({ TableName: t.names.leases, Item: marshall({ name: 'held', holderIdentity: 'w9', holderInstance: 'w9_1@p1', leaseDurationSeconds: 3_600, acquireTime: Date.now(), renewTime: Date.now(), leaseTransitions: 1, fencingToken: 7, revision: 1 }) }));
    s.proxy.answer('empty200');
    const e = await getLeader('held', { client: s.through, tables: t.names, clockSync: 'none' }).then(
      (r) => r,
      (x: unknown) => x,
    );
    expect(e).toBeInstanceOf(NotDynamoDBError);
    expect((e as Error).message).toMatch(/^getLeader of lease "held": the answer from \S+ is not DynamoDB's \(HTTP 200, no x-amzn-RequestId header.*; the lease's row on the leases table "\S+" was not read, and getLeader does not retry: call it again once DynamoDB answers there$/);
    s.proxy.answer(undefined);
    expect(await getLeader('held', { client: s.through, tables: t.names, clockSync: 'none' })).toMatchObject({ holder: 'w9', fencingToken: 7 });
    await s.close();
  });

  it('listIdentities rejects with a NotDynamoDBError (before: a listing of no identities, a table it never read) naming the call and the partition it did not read, as getLeader', async () => {
    const s = await setUp();
    s.proxy.answer('empty200');
    const r = await listIdentities({ client: s.through, tables: t.names, component: 'scheduler', clockSync: 'none' }).then(
      (x) => x,
      (x: unknown) => x,
    );
    expect(r).toBeInstanceOf(NotDynamoDBError);
    // to 2026-12-07 (tenth): "the answer from … is not DynamoDB's …", naming neither the call nor what it did not read
    expect((r as Error).message).toMatch(/^listIdentities of component "scheduler": the answer from \S+ is not DynamoDB's \(HTTP 200, .*; the partition of component "scheduler" on the identities table "\S+" was not read, and listIdentities does not retry: call it again once DynamoDB answers there$/);
    await s.close();
  });

  it('fencedItemWrite rejects with a NotDynamoDBError, never resolving as a write that landed', async () => {
    const s = await setUp();
    s.proxy.answer('empty200');
    const table = t.names.leases; // any table: the write never reaches it
    const r = await fencedItemWrite(s.through, { leaseName: 'job', fencingToken: 3 }, { put: { TableName: table, Item: marshall({ name: 'fenced-item', v: 1 }) } }).then(
      () => 'landed',
      (x: unknown) => x,
    );
    expect(r).toBeInstanceOf(NotDynamoDBError);
    // a call that does not retry: named, and told its write may have landed (not "retrying with backoff")
    expect((r as Error).message).toMatch(/^fencedItemWrite on lease "job": the answer from \S+ is not DynamoDB's \(HTTP 200, no x-amzn-RequestId header.*; the write may have landed \(what answered may have passed it on\): read what it writes before writing again$/);
    await s.close();
  });
});

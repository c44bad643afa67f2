/**
 * A term's fenced transaction that DynamoDB throttled: a TransactionCanceledException whose
 * CancellationReasons throttle one of its items (ThrottlingError on an on-demand table,
 * ProvisionedThroughputExceeded on a provisioned one). Nothing of it was written (a transaction is
 * all or nothing) and the AWS SDK does not send it again (a cancellation is no throttle to its
 * retry), so the term's writes (withLease's, LeaderElector's) send it again after a pause, its fence
 * checked again at each try; throttled at every try, it rejects saying so: which items, that nothing
 * was written, what to do.
 *
 * On DynamoDB Local and the real AWS SDK. DynamoDB Local never throttles: a loopback proxy in front
 * of it answers the transactions picked as DynamoDB answers a throttled one (its wire answer, which
 * the SDK deserializes), and passes every other request on. Time is a driven clock (test/proxy.ts
 * drivenClock): the pauses pass on it, never on the machine's.
 */
import { CreateTableCommand, DeleteTableCommand, GetItemCommand, PutItemCommand, type DynamoDBClient, type TransactWriteItem } from '@aws-sdk/client-dynamodb';
import { marshall, unmarshall } from '@aws-sdk/util-dynamodb';
import { randomUUID } from 'node:crypto';
import { createServer, request } from 'node:http';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { localClient } from '../../lib/local/dynamodb-local.js';
import { FencingError, THROTTLED_TRIES, throttledRetryMs } from '../../lib/sdk/fencing.js';
import { LeaderElector, type LeadingTerm } from '../../lib/sdk/index.js';
import { withLease, type LeaseTerm, type WithLeaseOptions } from '../../lib/sdk/with-lease.js';
import { keyedWindowRow } from '../../lib/schemas/run-once.js';
import { RunOnceStore } from '../../lib/stores/run-once-store.js';
import { drivenClock, inFlight } from '../proxy.js';
import { listenOnLoopback, testTables, type TestTables } from '../support.js';
import { CLIENT_GO } from './driven-elector.js';

let t: TestTables;
const APP = `t-throttled-app-${randomUUID().slice(0, 8)}`;
beforeAll(async () => {
  t = await testTables('fenced-throttled');
  await t.client.send(new CreateTableCommand({ TableName: APP, BillingMode: 'PAY_PER_REQUEST', AttributeDefinitions: [{ AttributeName: 'id', AttributeType: 'S' }], KeySchema: [{ AttributeName: 'id', KeyType: 'HASH' }] }));
});
afterAll(async () => {
  await t?.client.send(new DeleteTableCommand({ TableName: APP }));
  await t?.drop();
});

/** DynamoDB's cancellation reasons for a throttled item (TransactionCanceledException's documentation in the AWS SDK). */
const THROTTLED = {
  ThrottlingError: 'Throughput exceeds the current capacity of your table or index. DynamoDB is automatically scaling your table or index so please try again shortly. If exceptions persist, check if you have a hot key: https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/bp-partition-key-design.html.',
  ProvisionedThroughputExceeded: 'The level of configured provisioned throughput for the table was exceeded. Consider increasing your provisioning level with the UpdateTable API.',
} as const;
type Code = keyof typeof THROTTLED;
type Items = { TransactItems: TransactWriteItem[] };

/**
 * A proxy in front of DynamoDB Local whose next `n` transactions (`throttle(n, …)`) are answered as
 * DynamoDB answers one it throttled: HTTP 400, a TransactionCanceledException whose reasons give
 * `code` to the items `which` picks (by their number) and None to the others; not passed on, so
 * nothing of it is written. `before` runs as each arrives, before it is answered (a write of the
 * test's own between two tries). Every other request is passed on as it is. `sent` holds each
 * transaction that arrived, throttled or not: its items, and when, on `now`.
 */
async function throttlingProxy(now: () => number) {
  const to = new URL(inject('ddbEndpoint'));
  let left = 0;
  let rule: { which: (items: number) => number[]; code: Code; before?: () => Promise<void> } | undefined;
  const sent: { at: number; items: TransactWriteItem[]; throttled: boolean }[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      const passOn = () => {
        const up = request({ host: to.hostname, port: Number(to.port), method: req.method, path: req.url, headers: req.headers }, (r) => {
          res.writeHead(r.statusCode ?? 500, r.headers);
          r.pipe(res);
        });
        up.on('error', () => res.destroy());
        up.end(body);
      };
      if (req.headers['x-amz-target'] !== 'DynamoDB_20120810.TransactWriteItems') return passOn();
      const items = (JSON.parse(body.toString('utf8')) as Items).TransactItems;
      const throttled = left > 0 && rule !== undefined;
      sent.push({ at: now(), items, throttled });
      if (!throttled) return passOn();
      left--;
      const { which, code, before } = rule!;
      const picked = new Set(which(items.length));
      const reasons = items.map((_, k) => (picked.has(k) ? { Code: code, Message: THROTTLED[code] } : { Code: 'None' }));
      const answer = JSON.stringify({
        __type: 'com.amazonaws.dynamodb.v20120810#TransactionCanceledException',
        Message: `Transaction cancelled, please refer cancellation reasons for specific reasons [${reasons.map((r) => r.Code).join(', ')}]`,
        CancellationReasons: reasons,
      });
      void (before ?? (async () => undefined))().then(() =>
        res.writeHead(400, { 'content-type': 'application/x-amz-json-1.0', 'content-length': Buffer.byteLength(answer), 'x-amzn-requestid': `throttled-${sent.length}`, date: new Date().toUTCString() }).end(answer),
      );
    });
  });
  const port = await listenOnLoopback(server);
  return {
    endpoint: `http://127.0.0.1:${port}`,
    sent,
    throttle: (n: number, which: (items: number) => number[], code: Code = 'ThrottlingError', before?: () => Promise<void>) => {
      left = n;
      rule = { which, code, ...(before ? { before } : {}) };
    },
    close: () => new Promise<void>((r) => { server.closeAllConnections(); server.close(() => r()); }),
  };
}

/** A client through a throttling proxy, on a clock driven while a request of it is in flight; both closed after `test`. */
async function throughProxy(test: (x: { proxy: Awaited<ReturnType<typeof throttlingProxy>>; client: DynamoDBClient; c: ReturnType<typeof drivenClock> }) => Promise<void>) {
  let c: ReturnType<typeof drivenClock> | undefined;
  const proxy = await throttlingProxy(() => c!.clock.monotonic());
  const client = localClient(proxy.endpoint);
  c = drivenClock(inFlight(client));
  try {
    await test({ proxy, client, c });
  } finally {
    client.destroy();
    await proxy.close();
  }
}

const put = (id: string, by: string): TransactWriteItem => ({ Put: { TableName: APP, Item: marshall({ id, by }) } });
const itemOf = async (id: string) => {
  const r = await t.client.send(new GetItemCommand({ TableName: APP, Key: marshall({ id }), ConsistentRead: true }));
  return r.Item && unmarshall(r.Item);
};
/** Whether a transaction's last item is the fence: a ConditionCheck of lease `lease`'s row on the leases table. */
const fencedBy = (items: TransactWriteItem[], lease: string) => items.at(-1)?.ConditionCheck?.TableName === t.names.leases && unmarshall(items.at(-1)!.ConditionCheck!.Key!)['name'] === lease;
/** The pauses between the transactions that arrived, on the driven clock. */
const gaps = (sent: { at: number }[]) => sent.slice(1).map((s, k) => s.at - sent[k]!.at);
/** What a driven clock's random always draws (drivenClock). */
const RANDOM = 0.5;

let n = 0;
/** withLease of a new lease through `client` until it settles, the clock driven meanwhile: how it settled. */
async function run(client: DynamoDBClient, c: ReturnType<typeof drivenClock>, fn: (term: LeaseTerm) => Promise<unknown>, extra: Partial<WithLeaseOptions> = {}) {
  const lease = `throttled-${++n}`;
  const opts: WithLeaseOptions = { client, tables: t.names, clock: c.clock, clockSync: 'none', identity: 'a', mode: 'NoCoordination', platform: 'none', ...CLIENT_GO, onError: () => undefined, ...extra };
  let settled: { ok: boolean; value: unknown } | undefined;
  void withLease(lease, (_signal, term) => fn(term), opts).then(
    (value) => void (settled = { ok: true, value }),
    (value: unknown) => void (settled = { ok: false, value }),
  );
  await c.drive(() => settled !== undefined);
  return { ...settled!, lease };
}

describe('a fenced transaction DynamoDB throttled (nothing of it written): sent again after a pause, its fence checked again', () => {
  it("withLease's fencedWrite, its own item throttled once: sent again after a pause on the caller's clock, fenced again, and it lands", async () => {
    await throughProxy(async ({ proxy, client, c }) => {
      proxy.throttle(1, () => [0]);
      const r = await run(client, c, async (term) => (await term.fencedWrite({ TransactItems: [put('once', 'a')] }), 'written'));
      // before: the run rejected with DynamoDB's TransactionCanceledException, nothing written
      expect(r.ok, String((r.value as Error)?.message)).toBe(true);
      expect(r.value).toMatchObject({ status: 'ran', value: 'written' });
      expect(proxy.sent.map((s) => s.throttled)).toEqual([true, false]);
      expect(proxy.sent.every((s) => fencedBy(s.items, r.lease))).toBe(true);
      expect(gaps(proxy.sent)[0]).toBeGreaterThanOrEqual(throttledRetryMs(1, CLIENT_GO.retryPeriodMs, RANDOM));
      expect(await itemOf('once')).toMatchObject({ by: 'a' });
    });
  });

  it('the lease moved on while the transaction was throttled: the try again meets the fence, refused with FencingError, and nothing is written', async () => {
    await throughProxy(async ({ proxy, client, c }) => {
      let lease = '';
      // an operator's `release --force` and another's take, as the throttled try is answered
      proxy.throttle(1, () => [0], 'ThrottlingError', async () => {
        const row = unmarshall((await t.client.send(new GetItemCommand({ TableName: t.names.leases, Key: marshall({ name: lease }), ConsistentRead: true }))).Item!);
        const token = (row['fencingToken'] as number) + 1;
        await t.client.send(new PutItemCommand({ TableName: t.names.leases, Item: marshall({ ...row, holderIdentity: 'intruder', holderInstance: undefined, fencingToken: token, termToken: token }, { removeUndefinedValues: true }) }));
      });
      let refusal: unknown;
      const r = await run(client, c, async (term) => {
        lease = term.leaseName;
        refusal = await term.fencedWrite({ TransactItems: [put('moved-on', 'a')] }).catch((e: unknown) => e);
        return 'caught';
      });
      // before: DynamoDB's TransactionCanceledException at the first try, the fence never asked again
      expect(refusal).toBeInstanceOf(FencingError);
      expect((refusal as Error).message).toContain('holder "intruder"');
      expect(proxy.sent).toHaveLength(2);
      expect(proxy.sent.every((s) => fencedBy(s.items, r.lease))).toBe(true);
      expect(await itemOf('moved-on')).toBeUndefined();
    });
  });

  it.each(Object.keys(THROTTLED) as Code[])(`throttled at every try (%s): sent ${THROTTLED_TRIES} times, each pause longer, then rejects saying it was throttled, which items, that nothing was written, and what to do`, async (code) => {
    await throughProxy(async ({ proxy, client, c }) => {
      proxy.throttle(Infinity, () => [1], code);
      let e: unknown;
      let held: boolean | undefined;
      const r = await run(client, c, async (term) => {
        e = await term.fencedWrite({ TransactItems: [put(`always-${code}-0`, 'a'), put(`always-${code}-1`, 'a')] }).catch((x: unknown) => x);
        held = term.held();
        return 'caught';
      });
      expect(e).toMatchObject({ name: 'TransactionCanceledException' });
      const message = (e as Error).message;
      // before: sent once, and DynamoDB's own message: "Transaction cancelled, please refer cancellation reasons for specific reasons [None, ThrottlingError, None]"
      expect(proxy.sent).toHaveLength(THROTTLED_TRIES);
      expect(message).toContain(`DynamoDB throttled TransactItems[1] (Put on table "${APP}") (${code})`);
      expect(message).not.toContain('TransactItems[0]');
      expect(message).toContain('nothing was written');
      expect(message).toContain(`Sent ${THROTTLED_TRIES} times in this term`);
      expect(message).toMatch(code === 'ThrottlingError' ? /on-demand table: .*hot item.*account's/ : /provisioned table: raise its write capacity/);
      // each try fenced, each pause on the caller's clock and longer than the last, within the term (it still leads)
      expect(proxy.sent.every((s) => fencedBy(s.items, r.lease))).toBe(true);
      const pauses = gaps(proxy.sent);
      pauses.forEach((ms, k) => expect(ms).toBeGreaterThanOrEqual(throttledRetryMs(k + 1, CLIENT_GO.retryPeriodMs, RANDOM)));
      expect(pauses.reduce((a, b) => a + b, 0)).toBeLessThan(CLIENT_GO.renewDeadlineMs);
      expect(held).toBe(true);
      expect(r.value).toMatchObject({ status: 'ran', value: 'caught' });
      expect(await itemOf(`always-${code}-0`)).toBeUndefined();
      expect(await itemOf(`always-${code}-1`)).toBeUndefined();
    });
  });

  it("withLease's complete(items), throttled twice: sent again and lands, the items written and the window marked", async () => {
    await throughProxy(async ({ proxy, client, c }) => {
      proxy.throttle(2, () => [0]);
      const r = await run(client, c, async (term) => (await term.complete([put('completed', 'a')]), 'done'), { runOnce: { window: 'w-1' } });
      expect(r.ok, String((r.value as Error)?.message)).toBe(true);
      expect(r.value).toMatchObject({ status: 'ran', value: 'done', window: 'w-1' });
      expect(proxy.sent.map((s) => s.throttled)).toEqual([true, true, false]);
      expect(await itemOf('completed')).toMatchObject({ by: 'a' });
      expect((await new RunOnceStore(t.client, t.names.candidates).read(r.lease, keyedWindowRow('w-1'))).runs).toHaveLength(1);
    });
  });

  it("LeaderElector's fencedWrite, the fence's own item throttled once (the leases table): sent again and lands", async () => {
    await throughProxy(async ({ proxy, client, c }) => {
      const leaseName = `throttled-elector-${++n}`;
      let term: LeadingTerm | undefined;
      const elector = new LeaderElector({ client, tables: t.names, clock: c.clock, clockSync: 'none', leaseName, identity: 'a', mode: 'NoCoordination', platform: 'none', ...CLIENT_GO, onError: () => undefined, callbacks: { onStartedLeading: (_signal, leading) => void (term = leading) } });
      const cancel = new AbortController();
      let stopped = false;
      const running = elector.run(cancel.signal).finally(() => void (stopped = true));
      await c.drive(() => term !== undefined);
      proxy.throttle(1, (items) => [items - 1], 'ProvisionedThroughputExceeded');
      let outcome: unknown;
      void term!.fencedWrite({ TransactItems: [put('by-elector', 'a')] }).then(() => (outcome = 'landed'), (e: unknown) => (outcome = e));
      await c.drive(() => outcome !== undefined);
      expect(outcome).toBe('landed');
      expect(proxy.sent.map((s) => s.throttled)).toEqual([true, false]);
      expect(proxy.sent.every((s) => fencedBy(s.items, leaseName))).toBe(true);
      expect(await itemOf('by-elector')).toMatchObject({ by: 'a' });
      cancel.abort();
      await c.drive(() => stopped);
      await running;
    });
  });
});

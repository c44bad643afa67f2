/**
 * A fenced write called while leading, held in the process before it is sent (a slow credential
 * fetch, the process frozen: SIGSTOP), while the term runs out and a peer takes the lease. As the
 * process wakes, the AWS SDK's pending steps may run before the renew deadline's timer: the term
 * is judged again just before each try is handed to the HTTP handler, so the write is not sent
 * and its caller gets the term's LeaseLostError. (Before: a fencedItemWrite landed in the
 * successor's term, its item fence passing on an item that term had not written yet.)
 *
 * On DynamoDB Local and the real AWS SDK, each worker on a clock of its own the test drives: the
 * leader's stands still while it is "frozen", then moves past its renew deadline without firing
 * its timers, as a woken process's pending steps run before them.
 */
import { CreateTableCommand, DeleteTableCommand, GetItemCommand, type DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { marshall } from '@aws-sdk/util-dynamodb';
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { localClient } from '../../lib/local/dynamodb-local.js';
import { LeaseLostError } from '../../lib/sdk/fencing.js';
import { LeaderElector, type LeadingTerm } from '../../lib/sdk/index.js';
import { drivenClock, inFlight } from '../proxy.js';
import { CLIENT_GO, drivenElector } from './driven-elector.js';
import { testTables, type TestTables } from '../support.js';

let t: TestTables;
const APP = `t-frozen-app-${randomUUID().slice(0, 8)}`;
beforeAll(async () => {
  t = await testTables('fenced-after-freeze');
  await t.client.send(new CreateTableCommand({ TableName: APP, BillingMode: 'PAY_PER_REQUEST', AttributeDefinitions: [{ AttributeName: 'id', AttributeType: 'S' }], KeySchema: [{ AttributeName: 'id', KeyType: 'HASH' }] }));
});
afterAll(async () => {
  await t?.client.send(new DeleteTableCommand({ TableName: APP }));
  await t?.drop();
});

type Middleware = (next: (args: unknown) => Promise<unknown>) => (args: unknown) => Promise<unknown>;
type Args = { input?: { TableName?: string; TransactItems?: { Put?: { TableName?: string } }[] } };

/** Whether a request of the application's table (a put, or a transaction whose first item puts there): not the elector's own. */
const ofApp = (args: unknown) => {
  const input = (args as Args).input;
  return input?.TableName === APP || input?.TransactItems?.[0]?.Put?.TableName === APP;
};

/**
 * `client`, whose requests of the application's table are held while a hold is on, until
 * `release()`: `hold('beforeSending')` in the build step (past their credentials, before their
 * first try); `hold('firstTry')` their first try as it is handed to the HTTP handler, which then
 * fails as DynamoDB's 503 does (the AWS SDK tries it again). Each try handed to the HTTP handler
 * (the deserialize step, after every finalizeRequest middleware) is counted: `handed()`.
 */
function heldWrites(client: DynamoDBClient) {
  let holding: 'beforeSending' | 'firstTry' | undefined;
  const held: (() => void)[] = [];
  let handed = 0;
  const wait = () => new Promise<void>((resolve) => held.push(resolve));
  const beforeSending: Middleware = (next) => async (args) => {
    if (holding === 'beforeSending' && ofApp(args)) await wait();
    return next(args);
  };
  const atHandler: Middleware = (next) => async (args) => {
    if (!ofApp(args)) return next(args);
    handed++;
    if (holding !== 'firstTry' || handed > 1) return next(args);
    await wait();
    throw Object.assign(new Error('Service Unavailable'), { name: 'ServiceUnavailable', $fault: 'server', $metadata: { httpStatusCode: 503 } });
  };
  client.middlewareStack.add(beforeSending as never, { step: 'build', name: 'heldBeforeSending', priority: 'low' });
  client.middlewareStack.add(atHandler as never, { step: 'deserialize', name: 'handedToHandler', priority: 'low' });
  return {
    hold: (at: 'beforeSending' | 'firstTry') => void (holding = at),
    held: () => held.length,
    release: () => {
      holding = undefined;
      for (const go of held.splice(0)) go();
    },
    handed: () => handed,
  };
}

/**
 * Leader `a` of a new lease, on a DynamoDB Local client whose application writes `writes` holds,
 * and a clock of its own; `freeze()` lets `b` (a clock of its own too) take the lease while a's
 * clock stands still, `wake()` moves a's clock as far without firing its timers and lets the held
 * writes go on; `stop()` ends both.
 */
async function frozenLeader() {
  const leaseName = `frozen-${randomUUID().slice(0, 8)}`;
  const aClient = localClient(inject('ddbEndpoint'));
  const writes = heldWrites(aClient);
  const bClient = localClient(inject('ddbEndpoint'));
  const ca = drivenClock(inFlight(aClient));
  const cb = drivenClock(inFlight(bClient));
  let term: LeadingTerm | undefined;
  const stopped: string[] = [];
  const a = new LeaderElector({
    client: aClient,
    tables: t.names,
    clock: ca.clock,
    clockSync: 'none',
    leaseName,
    identity: 'a',
    mode: 'NoCoordination',
    ...CLIENT_GO,
    onError: () => undefined,
    callbacks: { onStartedLeading: (_signal, leading) => void (term = leading), onStoppedLeading: (info) => void stopped.push(info.reason) },
  });
  const cancel = new AbortController();
  let settled = false;
  const running = a.run(cancel.signal).finally(() => void (settled = true));
  await ca.drive(() => term !== undefined && a.isLeader());
  let b: ReturnType<typeof drivenElector> | undefined;
  return {
    leaseName,
    a,
    term: term!,
    writes,
    stopped,
    /** Until `n` writes are held (a's timers fire meanwhile only while none of its requests is in flight). */
    heldUntil: (n: number) => ca.drive(() => writes.held() === n),
    /** a frozen: b reads the lease, sees it go unrenewed, and takes it; b's term's fencing token. */
    async freeze() {
      b = drivenElector(t.names, 'b', leaseName, bClient, cb, [], []);
      await cb.drive(() => b!.e.isLeader());
      return b.e.fencingToken!;
    },
    /** a wakes: its clock past its renew deadline, its timers not yet run, the held writes going on first. */
    wake() {
      ca.stall(cb.waited() - ca.waited());
      writes.release();
    },
    async stop() {
      cancel.abort();
      await ca.drive(() => settled);
      await running;
      await b?.stop();
      aClient.destroy();
      bClient.destroy();
    },
  };
}

const itemOf = async (id: string) => (await t.client.send(new GetItemCommand({ TableName: APP, Key: marshall({ id }), ConsistentRead: true }))).Item;
const outcome = (p: Promise<unknown>) => p.then(() => 'landed', (e: unknown) => e);

describe('a fenced write held in a frozen leader until its term is over', () => {
  it('is not sent as the process wakes: the caller gets the term’s LeaseLostError and nothing lands in the successor’s term', async () => {
    const f = await frozenLeader();
    // the work writes an item of its own and a transaction, both held past their credentials
    f.writes.hold('beforeSending');
    const item = outcome(f.term.fencedItemWrite({ put: { TableName: APP, Item: marshall({ id: 'by-item-fence', v: 1 }) } }));
    const transaction = outcome(f.term.fencedWrite({ TransactItems: [{ Put: { TableName: APP, Item: marshall({ id: 'by-lease-row', v: 1 }) } }] }));
    await f.heldUntil(2);
    expect(await f.freeze()).toBeGreaterThan(f.term.fencingToken);
    f.wake();
    const [byItem, byRow] = await Promise.all([item, transaction]);

    // before: both were sent; the item landed in b's term with a's token (its fence passes: b had
    // not written it), its caller told LeaseLostError only after; the transaction DynamoDB refused
    expect(await itemOf('by-item-fence')).toBeUndefined();
    expect(await itemOf('by-lease-row')).toBeUndefined();
    expect(f.writes.handed()).toBe(0);
    expect(byItem).toBeInstanceOf(LeaseLostError);
    expect(byItem).toMatchObject({ leaseName: f.leaseName, fencingToken: f.term.fencingToken, reason: 'renewDeadline' });
    expect(byRow).toBeInstanceOf(LeaseLostError);
    expect(f.a.isLeader()).toBe(false);
    await f.stop();
    expect(f.stopped).toEqual(['renewDeadline']);
  });

  it('is judged again at each try: a try answered 503 after the term ended is not sent again by the AWS SDK’s retry', async () => {
    const f = await frozenLeader();
    f.writes.hold('firstTry');
    const item = outcome(f.term.fencedItemWrite({ update: { TableName: APP, Key: marshall({ id: 'retried' }), UpdateExpression: 'SET v = :v', ExpressionAttributeValues: marshall({ ':v': 1 }) } }));
    await f.heldUntil(1);
    await f.freeze();
    f.wake();
    const byItem = await item;

    // before: the SDK's second try was sent, and landed in b's term
    expect(await itemOf('retried')).toBeUndefined();
    expect(f.writes.handed()).toBe(1);
    expect(byItem).toBeInstanceOf(LeaseLostError);
    expect(byItem).toMatchObject({ fencingToken: f.term.fencingToken, reason: 'renewDeadline' });
    await f.stop();
  });
});

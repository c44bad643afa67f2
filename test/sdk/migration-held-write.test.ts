/**
 * KEP-2436's last step, a migrated controller's write held on the network: a replica with migration
 * on (ccm-a) runs `cloud-route` under the migration lease and writes through its term; the request
 * is held on the way; ccm-a is stopped (its primary term ends, its controllers stop) while its
 * migration lease's hand-over waits on a slow read; ccm-b (migration off) leads the primary lease,
 * runs `cloud-route` under it and writes the same item. ccm-a's held write reaches DynamoDB after
 * ccm-b's. Its fence must refuse it: the migration lease's row still names ccm-a's term, so only a
 * check of the primary lease's row (in the same transaction) can.
 */
import { GetItemCommand, PutItemCommand, type TransactWriteItem, type TransactWriteItemsCommandInput } from '@aws-sdk/client-dynamodb';
import { marshall, unmarshall } from '@aws-sdk/util-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FencingError, LeaseLostError, alsoFencedBy, fencedTransactWrite } from '../../lib/sdk/fencing.js';
import { DEFAULT_MIGRATION_LEADER_NAME, defaultLeaderMigrationConfiguration, electorStarter, runWithLeaderMigration, type ControllerTerm, type LeaderMigrationConfiguration } from '../../lib/sdk/migration.js';
import { aborted } from '../../lib/sdk/options.js';
import { ConflictError } from '../../lib/stores/errors.js';
import { Sim } from '../../sim/harness.js';
import { testTables, type TestTables } from '../support.js';
import { FAST } from './harness.js';

/** The controller's item, written by whichever replica runs cloud-route (on the candidates table: any table of the model does). */
const put = (sim: Sim, by: string): TransactWriteItemsCommandInput => ({ TransactItems: [{ Put: { TableName: sim.names.candidates, Item: marshall({ leaseName: 'route-output', name: 'route', by }) } }] });
const route = async (sim: Sim) => {
  const r = await sim.client.send(new GetItemCommand({ TableName: sim.names.candidates, Key: marshall({ leaseName: 'route-output', name: 'route' }), ConsistentRead: true }));
  return r.Item && unmarshall(r.Item);
};

type Middleware = (next: (args: unknown) => Promise<unknown>) => (args: unknown) => Promise<unknown>;

describe('runWithLeaderMigration: a migrated controller’s write held on the network past its primary term', () => {
  it('lands after the replica with migration off wrote the item: its fence refuses it (the primary lease’s row names another term), and the item keeps the newer write', async () => {
    const sim = await Sim.create({ config: { ackWindowMs: 500, electedLeaseDurationSeconds: 2 } });
    sim.coordinator({ tickEveryMs: 100 });
    const terms = new Map<string, ControllerTerm>();
    const start = (identity: string, config: LeaderMigrationConfiguration | undefined) => {
      const machine = sim.machine();
      const abort = new AbortController();
      const done = runWithLeaderMigration({
        startElector: electorStarter({ identity, tables: sim.names, ...FAST, platform: 'none', client: machine.client, clock: machine.clock, candidacy: { emulationVersion: '1.30.0', binaryVersion: '1.30.0' }, onError: () => undefined }),
        controllers: {
          'cloud-route': async (signal: AbortSignal, term: ControllerTerm) => {
            terms.set(identity, term);
            await aborted(signal);
          },
        },
        component: 'ccm',
        primaryLeaseName: 'ccm',
        config,
        signal: abort.signal,
      });
      return { abort, done, machine };
    };
    const a = start('ccm-a', defaultLeaderMigrationConfiguration(['cloud-route']));
    await sim.until('ccm-a runs cloud-route under the migration lease', () => terms.get('ccm-a')?.leaseName === DEFAULT_MIGRATION_LEADER_NAME);
    const b = start('ccm-b', undefined); // migration off: cloud-route under the primary lease
    await sim.run(3 * FAST.leaseDurationMs);
    expect(terms.has('ccm-b')).toBe(false);
    // ccm-a's hand-over of the migration lease waits on a slow read: its row names ccm-a's term meanwhile
    a.machine.slow = (req) => (req.operation === 'GetItem' && JSON.stringify(req.input).includes(DEFAULT_MIGRATION_LEADER_NAME) ? 30_000 : 0);
    // ccm-a's write of the item is held on the network until ccm-b has written it
    let release!: () => void;
    const released = new Promise<void>((r) => (release = r));
    let held = false;
    let reached = false;
    const hold: Middleware = (next) => async (args) => {
      if (!JSON.stringify((args as { input?: unknown }).input).includes('route-output')) return next(args);
      held = true;
      await released;
      return next(args).finally(() => (reached = true)); // (DynamoDB's answer, a refusal too)
    };
    a.machine.client.middlewareStack.add(hold as never, { step: 'finalizeRequest' });
    const aWrite = terms.get('ccm-a')!.fencedWrite(put(sim, 'ccm-a')).catch((e: unknown) => e);
    await sim.until('ccm-a’s write is on the way', () => held);
    a.abort.abort(); // ccm-a is stopped: its primary term ends
    await sim.until('ccm-b runs cloud-route under the primary lease', () => terms.get('ccm-b')?.leaseName === 'ccm', 10 * FAST.leaseDurationMs);
    await sim.settle(terms.get('ccm-b')!.fencedWrite(put(sim, 'ccm-b')));
    // the migration lease's row still names ccm-a's term (its hand-over waits on the read): that fence alone passes the held write
    const migrationRow = await sim.client.send(new GetItemCommand({ TableName: sim.names.leases, Key: marshall({ name: DEFAULT_MIGRATION_LEADER_NAME }), ConsistentRead: true }));
    expect(unmarshall(migrationRow.Item!)).toMatchObject({ holderIdentity: 'ccm-a/ccm' });
    release();
    await sim.until('ccm-a’s held write reaches DynamoDB', () => reached);
    // abandoned by ccm-a as its primary term ended
    expect(await aWrite).toBeInstanceOf(LeaseLostError);
    // Before the fix: it landed (the migration lease's row, its only fence, still named ccm-a's term), the item read ccm-a's older data
    expect(await route(sim)).toMatchObject({ by: 'ccm-b' });
    b.abort.abort();
    await sim.settle(Promise.all([a.done, b.done]), 'both replicas stopped', 120_000);
  });
});

describe('fencedTransactWrite of an input alsoFencedBy another lease’s term (a migrated controller’s, on DynamoDB Local)', () => {
  let t: TestTables;
  beforeAll(async () => void (t = await testTables('also-fenced')));
  afterAll(async () => t?.drop());
  const refusal = (p: Promise<unknown>) => p.then(() => undefined, (e: unknown) => e);
  const lease = (name: string, holderIdentity: string, fencingToken: number) => t.client.send(new PutItemCommand({ TableName: t.names.leases, Item: marshall({ name, holderIdentity, fencingToken }) }));
  const item = async (name: string) => {
    const r = await t.client.send(new GetItemCommand({ TableName: t.names.candidates, Key: marshall({ leaseName: 'route-output', name }), ConsistentRead: true }));
    return r.Item && unmarshall(r.Item);
  };
  const write = (name: string, extra: TransactWriteItem[] = []): TransactWriteItemsCommandInput => ({ TransactItems: [{ Put: { TableName: t.names.candidates, Item: marshall({ leaseName: 'route-output', name }) } }, ...extra] });
  // the migration lease's term writes, fenced by the primary term too
  const primary = { leaseName: 'ccm', term: { holderIdentity: 'ccm-a', fencingToken: 3 }, refused: 'the term of lease "ccm" it ran in has ended' };
  const send = (input: TransactWriteItemsCommandInput) => fencedTransactWrite(t.client, { table: t.names.leases, leaseName: 'migration', term: { holderIdentity: 'ccm-a/ccm', fencingToken: 7 } }, alsoFencedBy(input, primary));

  it('lands while both rows name their terms; refused, nothing written, once the other lease’s row names another term: a FencingError of the writing term saying why', async () => {
    await lease('migration', 'ccm-a/ccm', 7);
    await lease('ccm', 'ccm-a', 3);
    await send(write('both'));
    expect(await item('both')).toBeDefined();
    await lease('ccm', 'ccm-b', 4); // ccm-b leads the primary lease
    const e = await refusal(send(write('after')));
    expect(e).toBeInstanceOf(FencingError);
    expect(e).toMatchObject({ leaseName: 'migration', fencingToken: 7 });
    expect((e as Error).message).toBe('fenced write on lease "migration" with fencing token 7 refused: the term of lease "ccm" it ran in has ended (the row of lease "ccm" names holder "ccm-b", fencing token 4); nothing was written');
    expect(await item('after')).toBeUndefined();
    // its own lease's row moved on too: told as its own fence's refusal
    await lease('migration', 'ccm-b/ccm', 8);
    expect(((await refusal(send(write('after')))) as Error).message).toMatch(/refused: the lease is no longer in this term \(its row names holder "ccm-b\/ccm", fencing token 8\)/);
  });

  it('its own condition failing while both fences pass is a ConflictError naming its item; an item of either lease row is refused before it is sent', async () => {
    await lease('migration', 'ccm-a/ccm', 7);
    await lease('ccm', 'ccm-a', 3);
    const taken = { Put: { TableName: t.names.candidates, Item: marshall({ leaseName: 'route-output', name: 'both' }), ConditionExpression: 'attribute_not_exists(#n)', ExpressionAttributeNames: { '#n': 'name' } } };
    await t.client.send(new PutItemCommand({ TableName: t.names.candidates, Item: marshall({ leaseName: 'route-output', name: 'both' }) }));
    const e = await refusal(send(write('own', [taken])));
    expect(e).toBeInstanceOf(ConflictError);
    expect((e as Error).message).toContain('TransactItems[1] (Put on table');
    expect(((e as Error).cause as { CancellationReasons: unknown[] }).CancellationReasons).toHaveLength(4);
    const onRow = (name: string): TransactWriteItem => ({ ConditionCheck: { TableName: t.names.leases, Key: marshall({ name }), ConditionExpression: 'attribute_exists(#n)', ExpressionAttributeNames: { '#n': 'name' } } });
    await expect(send(write('row', [onRow('ccm')]))).rejects.toThrow(/TransactItems\[1\] is the lease row "ccm" itself/);
    await expect(send(write('row', [onRow('migration')]))).rejects.toThrow(/TransactItems\[1\] is the lease row "migration" itself/);
  });
});

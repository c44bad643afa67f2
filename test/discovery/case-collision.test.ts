/**
 * Two leases whose names differ only in case, under Route 53 with every lease named (no
 * leaseNames): DNS names ignore case, so both gave one record (`orders.leader…`), while their
 * discovery rows and fencing order are each their own. A worker granted only `Orders` took a term
 * and the record clients use to reach `orders`' leader pointed at it; its release deleted the record
 * (a review, 2026-12-07). On DynamoDB Local and the fake Route 53 (test/discovery/fake-aws.ts).
 */
import { randomUUID } from 'node:crypto';
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { Context } from 'aws-lambda';
import { afterAll, beforeAll, beforeEach, describe, expect, inject, it } from 'vitest';
import { DISCOVERY_ACCESS } from '../../infra/access.js';
import { makeHandler } from '../../functions/leader-discovery.js';
import { manualClock } from '../../lib/clock.js';
import { applyLeaderChange, NAME_HANDOVER_IDLE_MS } from '../../lib/discovery/apply.js';
import { parseAddress } from '../../lib/discovery/address.js';
import { cloudMapNaming, instanceIdOf } from '../../lib/discovery/cloud-map.js';
import type { DiscoveryFunctionDeps } from '../../lib/discovery/handler.js';
import { route53Naming } from '../../lib/discovery/route53.js';
import { DiscoveryStateStore } from '../../lib/discovery/state-store.js';
import { sweepNames } from '../../lib/discovery/sweep.js';
import { DISCOVERY_TABLE } from '../../lib/discovery/wiring.js';
import type { Leadership } from '../../lib/election/leader.js';
import { observability } from '../../lib/functions/observability.js';
import { localClient } from '../../lib/local/dynamodb-local.js';
import { ValidationError } from '../../lib/schemas/validation.js';
import { createTable, deleteTable } from '../../lib/stores/table-admin.js';
import { NOW } from '../fixtures.js';
import { fakeAws, type FakeAws } from './fake-aws.js';

let aws: FakeAws;
let client: DynamoDBClient;
/** The state store's own client: what it sends is recorded, as IAM sees it (a transaction: each item's action). */
let store: DynamoDBClient;
const storeActions = new Set<string>();
let table: string;
beforeAll(async () => {
  aws = await fakeAws();
  client = localClient(inject('ddbEndpoint'));
  store = localClient(inject('ddbEndpoint'));
  store.middlewareStack.add(
    (next, c) => (args) => {
      const items = (args.input as { TransactItems?: Record<string, unknown>[] }).TransactItems;
      for (const a of items ? items.flatMap((i) => Object.keys(i).map((k) => (k === 'ConditionCheck' ? 'ConditionCheckItem' : `${k}Item`))) : [String(c.commandName).replace(/Command$/, '')]) storeActions.add(`dynamodb:${a}`);
      return next(args);
    },
    { step: 'initialize', name: 'recordActions' },
  );
  table = `t-discovery-case-${randomUUID().slice(0, 8)}`;
  await createTable(client, table, DISCOVERY_TABLE);
});
afterAll(async () => {
  await deleteTable(client, table);
  client.destroy();
  store.destroy();
  await aws?.close();
});

const zone = 'internal.example.com';
const template = `{lease}.leader.${zone}`;
const context = { getRemainingTimeInMillis: () => 30_000, functionName: 'conclave-leaderDiscovery', awsRequestId: 'r' } as unknown as Context;
const envelope = (detailType: string, detail: Record<string, unknown>) => ({ version: '0', id: randomUUID(), source: 'conclave', 'detail-type': detailType, account: '123456789012', region: 'us-east-1', time: new Date(NOW).toISOString(), resources: [], detail: { id: `rec-${randomUUID()}`, time: new Date(NOW).toISOString(), ...detail } });
const elected = (lease: string, holder: string, fencingToken: number, address: string) => envelope('Leader Elected', { lease, holder, fencingToken, leaseTransitions: 1, address });
const released = (lease: string, holder: string, fencingToken: number) => envelope('Lease Released', { lease, previousHolder: holder, fencingToken });

/** The function on Route 53 for `leases` (undefined: every lease); its logged errors collected. */
function handlerOn(leases?: readonly string[], leadership?: (lease: string) => Leadership, clock = manualClock(NOW)) {
  const seen = observability('leaderDiscovery', 'SILENT');
  const errors: string[] = [];
  seen.logger.error = (...args: unknown[]) => void errors.push(String(args[0]));
  const naming = route53Naming(aws.route53(), { hostedZoneId: aws.hostedZoneId, recordName: template, ttlSeconds: 5, leases: leases && new Set(leases) });
  const deps: DiscoveryFunctionDeps = {
    discovery: { state: new DiscoveryStateStore(store, table), naming, clock },
    leadershipOf: (lease) => (leadership ? Promise.resolve(leadership(lease)) : Promise.reject(new Error('no sweep here'))),
    leases: leases && new Set(leases),
    ...seen,
  };
  return { handler: makeHandler(deps), deps, errors };
}

describe('leases whose names differ only in case, under Route 53', () => {
  let lower: string;
  let upper: string;
  let at: string;
  const records = () => aws.records.filter((r) => r.name.toLowerCase() === at).map((r) => `${r.type} ${r.values.join(',')}`);
  beforeEach(() => {
    const id = randomUUID().slice(0, 8);
    lower = `orders-${id}`;
    upper = `Orders-${id}`;
    at = `${lower}.leader.${zone}.`;
  });

  it("with leaseNames, a worker of `Orders` taking a term and releasing it neither points nor deletes `orders`' record", async () => {
    const { handler } = handlerOn([lower]);
    expect(await handler(elected(lower, 'w2', 1, 'http://10.0.0.2:8080'), context)).toMatchObject({ outcome: 'applied', state: 'term 1' });
    expect(records()).toEqual(['A 10.0.0.2']);
    const writes = aws.calls.length;
    // with every lease named, the record pointed at w1, then was deleted, while w2 led `orders` on
    expect(await handler(elected(upper, 'w1', 7, 'http://10.0.0.1:8080'), context)).toEqual({ ignored: expect.stringMatching(/not one of leaderDiscovery.leaseNames/) });
    expect(await handler(released(upper, 'w1', 7), context)).toEqual({ ignored: expect.stringMatching(/not one of leaderDiscovery.leaseNames/) });
    expect(records()).toEqual(['A 10.0.0.2']);
    expect(aws.calls.length).toBe(writes); // not even listed
    expect(await handler(released(lower, 'w2', 1), context)).toMatchObject({ outcome: 'applied', state: 'end 1' });
    expect(records()).toEqual([]);
  });

  it('with every lease named, a lease with upper-case letters is named (an upgraded deployment\'s record follows its leader; a record two leases share: below)', async () => {
    const { handler } = handlerOn();
    expect(await handler(elected(upper, 'w1', 7, 'http://10.0.0.1:8080'), context)).toMatchObject({ outcome: 'applied', state: 'term 7' });
    expect(records()).toEqual(['A 10.0.0.1']);
    expect(await handler(elected(upper, 'w3', 8, 'http://10.0.0.3:8080'), context)).toMatchObject({ outcome: 'applied', state: 'term 8' });
    expect(records()).toEqual(['A 10.0.0.3']);
    expect(await handler(released(upper, 'w3', 8), context)).toMatchObject({ outcome: 'applied', state: 'end 8' });
    expect(records()).toEqual([]);
  });

  it("with leaseNames, the sweep leaves a row of `Orders` (claimed before they were given) alone: its term's end does not delete `orders`' record", async () => {
    const { handler, deps } = handlerOn([lower], (lease) => (lease === lower ? { leader: { holder: 'w2', fencingToken: 1, address: 'http://10.0.0.2:8080' } } : { leader: null, vacancy: 'noHolder' }) as Leadership);
    await handler(elected(lower, 'w2', 1, 'http://10.0.0.2:8080'), context);
    // a row of `Orders` as the function before the fix left it: claimed, and written
    const unguarded = { ...deps.discovery, naming: route53Naming(aws.route53(), { hostedZoneId: aws.hostedZoneId, recordName: `{lease}.leader.${zone}`, ttlSeconds: 5, leases: new Set([upper]) }) };
    await applyLeaderChange(unguarded, { kind: 'began', lease: upper, fencingToken: 7, holder: 'w1', address: 'http://10.0.0.2:8080', eventId: 'old' }, NOW + 30_000);
    expect(records()).toEqual(['A 10.0.0.2']);
    const listed = await deps.discovery.state.list();
    const swept = await sweepNames(deps, listed.rows.filter((r) => r.lease === upper || r.lease === lower), NOW + 30_000);
    expect(swept.errors).toEqual([]);
    expect(swept.changed).toEqual({});
    expect(records()).toEqual(['A 10.0.0.2']);
  });

  it('the naming refuses a pair in leaseNames itself (a ValidationError before any call), and names a lease with upper-case letters when leaseNames gives it alone', async () => {
    const every = route53Naming(aws.route53(), { hostedZoneId: aws.hostedZoneId, recordName: template, ttlSeconds: 5 });
    const target = { holder: 'w1', fencingToken: 7, address: parseAddress('10.0.0.1') as Exclude<ReturnType<typeof parseAddress>, { issue: string }> };
    const calls = aws.calls.length;
    const pair = route53Naming(aws.route53(), { hostedZoneId: aws.hostedZoneId, recordName: template, ttlSeconds: 5, leases: new Set([upper, lower]) });
    await expect(pair.point(upper, target)).rejects.toThrow(ValidationError);
    await expect(pair.clear(upper)).rejects.toThrow(ValidationError);
    expect(aws.calls.length).toBe(calls);
    expect(every.leaseIssue?.(lower)).toBeUndefined();
    expect(every.leaseIssue?.(upper)).toBeUndefined();
    // leaseNames: the rule and the function name only these, and synth refuses two that share a record
    const one = route53Naming(aws.route53(), { hostedZoneId: aws.hostedZoneId, recordName: template, ttlSeconds: 5, leases: new Set([upper]) });
    expect(one.leaseIssue?.(upper)).toBeUndefined();
    await one.point(upper, target);
    expect(records()).toEqual(['A 10.0.0.1']);
    await one.clear(upper);
    const both = route53Naming(aws.route53(), { hostedZoneId: aws.hostedZoneId, recordName: template, ttlSeconds: 5, leases: new Set([upper, lower]) });
    expect(both.leaseIssue?.(upper)).toMatch(new RegExp(`lease "${lower}"`));
    expect(both.leaseIssue?.(lower)).toMatch(new RegExp(`lease "${upper}"`));
    // one fixed record name (no {lease}) names one lease: with every lease, none
    const fixed = route53Naming(aws.route53(), { hostedZoneId: aws.hostedZoneId, recordName: `leader.${zone}`, ttlSeconds: 5 });
    expect(fixed.leaseIssue?.(lower)).toMatch(/\{lease\}/);
  });
});

/**
 * With every lease named, leases named alike but for case still share one record: each holds it in
 * turn (a row of the discovery table per record name), and a lease whose record another holds
 * writes nothing to it until that lease's term has ended, its record was cleared, and no term
 * followed for NAME_HANDOVER_IDLE_MS. Before, `Orders`' term pointed `orders`' record at its own
 * leader and its release deleted it while `orders` was led (a review, 2026-12-07, fourteenth).
 */
describe('with every lease named, leases named alike but for case never write each other\'s record', () => {
  let lower: string;
  let upper: string;
  let at: string;
  const records = () => aws.records.filter((r) => r.name.toLowerCase() === at).map((r) => `${r.type} ${r.values.join(',')}`);
  beforeEach(() => {
    const id = randomUUID().slice(0, 8);
    lower = `orders-${id}`;
    upper = `Orders-${id}`;
    at = `${lower}.leader.${zone}.`;
  });

  it("`Orders` neither points nor deletes `orders`' record, and is told why; it takes the record once `orders` has been over for an hour", async () => {
    const clock = manualClock(NOW);
    const { handler, errors } = handlerOn(undefined, undefined, clock);
    expect(await handler(elected(lower, 'w7', 7, 'http://10.0.0.7:8080'), context)).toMatchObject({ outcome: 'applied', state: 'term 7' });
    expect(records()).toEqual(['A 10.0.0.7']);
    // before the fix: the record pointed at 10.0.0.3, then was deleted, while w7 led `orders`
    expect(await handler(elected(upper, 'w3', 3, 'http://10.0.0.3:8080'), context)).toMatchObject({ outcome: 'refused', state: 'term 3', writes: 0 });
    expect(records()).toEqual(['A 10.0.0.7']);
    expect(errors).toEqual([expect.stringMatching(new RegExp(`lease "${upper}".*lease "${lower}".*leaseNames`))]);
    expect(await handler(released(upper, 'w3', 3), context)).toMatchObject({ outcome: 'refused', state: 'end 3', writes: 0 });
    expect(records()).toEqual(['A 10.0.0.7']);
    expect(errors).toHaveLength(1); // an end has nothing to write: no error
    // `orders`' own terms go on naming it
    expect(await handler(elected(lower, 'w8', 8, 'http://10.0.0.8:8080'), context)).toMatchObject({ outcome: 'applied', state: 'term 8' });
    expect(records()).toEqual(['A 10.0.0.8']);
    expect(await handler(released(lower, 'w8', 8), context)).toMatchObject({ outcome: 'applied', state: 'end 8' });
    expect(records()).toEqual([]);
    // within the hour, `orders` may be led again (a hand-off's gap): the record stays its own
    clock.advance(NAME_HANDOVER_IDLE_MS - 1);
    expect(await handler(elected(upper, 'w4', 4, 'http://10.0.0.4:8080'), context)).toMatchObject({ outcome: 'refused', state: 'term 4' });
    expect(records()).toEqual([]);
    clock.advance(2);
    expect(await handler(elected(upper, 'w5', 5, 'http://10.0.0.5:8080'), context)).toMatchObject({ outcome: 'applied', state: 'term 5' });
    expect(records()).toEqual(['A 10.0.0.5']);
    // and now `orders` is the one refused
    expect(await handler(elected(lower, 'w9', 9, 'http://10.0.0.9:8080'), context)).toMatchObject({ outcome: 'refused', state: 'term 9' });
    expect(await handler(released(lower, 'w9', 9), context)).toMatchObject({ outcome: 'refused', state: 'end 9' });
    expect(records()).toEqual(['A 10.0.0.5']);
  });

  it('a lease is refused the record while its holder has a write in flight, however long the holder was over before', async () => {
    const clock = manualClock(NOW);
    const { handler } = handlerOn(undefined, undefined, clock);
    await handler(elected(lower, 'w7', 7, 'http://10.0.0.7:8080'), context);
    await handler(released(lower, 'w7', 7), context);
    clock.advance(NAME_HANDOVER_IDLE_MS + 1);
    // `orders`' next term: its record's write held back until `Orders` has tried
    let letGo!: () => void;
    const held = new Promise<void>((resolve) => (letGo = resolve));
    let reached!: () => void;
    const atWrite = new Promise<void>((resolve) => (reached = resolve));
    aws.beforeWrite = async () => {
      aws.beforeWrite = undefined;
      reached();
      await held;
    };
    const first = handler(elected(lower, 'w8', 8, 'http://10.0.0.8:8080'), context);
    try {
      await Promise.race([atWrite, first]);
      expect(await handler(elected(upper, 'w3', 3, 'http://10.0.0.3:8080'), context)).toMatchObject({ outcome: 'refused', state: 'term 3' });
    } finally {
      aws.beforeWrite = undefined;
      letGo();
    }
    expect(await first).toMatchObject({ outcome: 'applied', state: 'term 8' });
    expect(records()).toEqual(['A 10.0.0.8']);
  });

  it('the sweep tries a refused term again each minute (an error each time), and names it once the holder is over for an hour', async () => {
    const clock = manualClock(NOW);
    const leadership = (lease: string) => (lease === upper ? { leader: { holder: 'w3', fencingToken: 3, address: 'http://10.0.0.3:8080' } } : { leader: null, vacancy: 'noHolder' }) as Leadership;
    const { handler, deps, errors } = handlerOn(undefined, leadership, clock);
    await handler(elected(lower, 'w7', 7, 'http://10.0.0.7:8080'), context);
    expect(await handler(elected(upper, 'w3', 3, 'http://10.0.0.3:8080'), context)).toMatchObject({ outcome: 'refused' });
    await handler(released(lower, 'w7', 7), context);
    const mine = async () => (await deps.discovery.state.list()).rows.filter((r) => r.lease === upper || r.lease === lower);
    // the record's holder is a row of the table, but no lease's: the sweep neither judges nor refuses it
    expect((await deps.discovery.state.list()).refused).toEqual([]);
    clock.advance(60_000);
    const swept = await sweepNames(deps, await mine(), clock.now() + 30_000);
    expect(swept).toMatchObject({ changed: {}, errors: [], refused: { [upper]: expect.stringMatching(new RegExp(`lease "${lower}"`)) } });
    expect(records()).toEqual([]);
    clock.advance(NAME_HANDOVER_IDLE_MS);
    expect(await sweepNames(deps, await mine(), clock.now() + 30_000)).toMatchObject({ changed: { [upper]: 'term 3' }, errors: [], refused: {} });
    expect(records()).toEqual(['A 10.0.0.3']);
    expect(errors).toHaveLength(1); // the event's; the sweep's are the handler's to log
  });

  it('a lease leaseNames gives takes its record from the lease that held it (the deployment named it since), which writes it no more', async () => {
    const every = handlerOn();
    expect(await every.handler(elected(upper, 'w3', 3, 'http://10.0.0.3:8080'), context)).toMatchObject({ outcome: 'applied' });
    const named = handlerOn([lower]);
    expect(await named.handler(elected(lower, 'w7', 7, 'http://10.0.0.7:8080'), context)).toMatchObject({ outcome: 'applied', state: 'term 7' });
    expect(records()).toEqual(['A 10.0.0.7']);
    // leaseNames left out again: `Orders`' end, delivered late, deletes nothing of `orders`'
    expect(await every.handler(released(upper, 'w3', 3), context)).toMatchObject({ outcome: 'refused', state: 'end 3' });
    expect(records()).toEqual(['A 10.0.0.7']);
  });
});

it('sends the discovery table only what the construct grants, a hold taken over included (infra/access.ts DISCOVERY_ACCESS)', () => {
  expect([...storeActions].sort()).toEqual([...DISCOVERY_ACCESS.table].sort());
});

it('Cloud Map: instance ids are the lease names as written (no case folded); a lease named like a hashed id gets a hash of its own', () => {
  expect(instanceIdOf('Orders')).toBe('Orders');
  expect(instanceIdOf('orders')).toBe('orders');
  const long = `reports-${'x'.repeat(80)}`;
  const hashed = instanceIdOf(long);
  expect(hashed).toMatch(/^conclave-h:/);
  // before the fix: a lease named `conclave-h:…` was its own id, the id of the long lease's instance
  expect(instanceIdOf(hashed)).not.toBe(hashed);
  expect(instanceIdOf(hashed)).toMatch(/^conclave-h:/);
  expect(cloudMapNaming(aws.cloudMap(), aws.serviceId).describe).toMatch(/Cloud Map/);
});

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
import { makeHandler } from '../../functions/leader-discovery.js';
import { manualClock } from '../../lib/clock.js';
import { applyLeaderChange } from '../../lib/discovery/apply.js';
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
let table: string;
beforeAll(async () => {
  aws = await fakeAws();
  client = localClient(inject('ddbEndpoint'));
  table = `t-discovery-case-${randomUUID().slice(0, 8)}`;
  await createTable(client, table, DISCOVERY_TABLE);
});
afterAll(async () => {
  await deleteTable(client, table);
  client.destroy();
  await aws?.close();
});

const zone = 'internal.example.com';
const template = `{lease}.leader.${zone}`;
const context = { getRemainingTimeInMillis: () => 30_000, functionName: 'conclave-leaderDiscovery', awsRequestId: 'r' } as unknown as Context;
const envelope = (detailType: string, detail: Record<string, unknown>) => ({ version: '0', id: randomUUID(), source: 'conclave', 'detail-type': detailType, account: '123456789012', region: 'us-east-1', time: new Date(NOW).toISOString(), resources: [], detail: { id: `rec-${randomUUID()}`, time: new Date(NOW).toISOString(), ...detail } });
const elected = (lease: string, holder: string, fencingToken: number, address: string) => envelope('Leader Elected', { lease, holder, fencingToken, leaseTransitions: 1, address });
const released = (lease: string, holder: string, fencingToken: number) => envelope('Lease Released', { lease, previousHolder: holder, fencingToken });

/** The function on Route 53 for `leases` (undefined: every lease); its logged errors collected. */
function handlerOn(leases?: readonly string[], leadership?: (lease: string) => Leadership) {
  const seen = observability('leaderDiscovery', 'SILENT');
  const errors: string[] = [];
  seen.logger.error = (...args: unknown[]) => void errors.push(String(args[0]));
  const naming = route53Naming(aws.route53(), { hostedZoneId: aws.hostedZoneId, recordName: template, ttlSeconds: 5, leases: leases && new Set(leases) });
  const deps: DiscoveryFunctionDeps = {
    discovery: { state: new DiscoveryStateStore(client, table), naming, clock: manualClock(NOW) },
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

  it('with every lease named, a lease with upper-case letters is named (an upgraded deployment\'s record follows its leader; keeping such names apart is the deployment\'s: deploy.md)', async () => {
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

/**
 * The leader-discovery function end to end, short of AWS: the events the lease stream derives from
 * real lease changes (lib/events/derive.ts), as EventBridge delivers them, into the function's
 * handler (functions/leader-discovery.ts), on DynamoDB Local and the fake Cloud Map and Route 53.
 */
import { randomUUID } from 'node:crypto';
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { Context, EventBridgeEvent } from 'aws-lambda';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { makeHandler } from '../../functions/leader-discovery.js';
import { manualClock } from '../../lib/clock.js';
import { changeOfEvent } from '../../lib/discovery/change.js';
import { cloudMapNaming } from '../../lib/discovery/cloud-map.js';
import { discoveryDepsFromEnv, type DiscoveryFunctionDeps } from '../../lib/discovery/handler.js';
import type { LeaderNaming } from '../../lib/discovery/naming.js';
import { route53Naming } from '../../lib/discovery/route53.js';
import { DiscoveryStateStore } from '../../lib/discovery/state-store.js';
import { DISCOVERY_DETAIL_TYPES, DISCOVERY_ENV, DISCOVERY_EVENT_SOURCE, DISCOVERY_TABLE } from '../../lib/discovery/wiring.js';
import { eventsFromLeaseChange } from '../../lib/events/derive.js';
import { DETAIL_TYPES, EVENT_SOURCE, type ConclaveEvent } from '../../lib/events/schemas.js';
import { observability } from '../../lib/functions/observability.js';
import { localClient } from '../../lib/local/dynamodb-local.js';
import { createTable, deleteTable } from '../../lib/stores/table-admin.js';
import { fencingTokenFloor } from '../../lib/schemas/fencing-token.js';
import type { Lease } from '../../lib/schemas/lease.js';
import { ValidationError } from '../../lib/schemas/validation.js';
import { lease as leaseRow, NOW, SEC } from '../fixtures.js';
import { fakeAws, type FakeAws } from './fake-aws.js';

let aws: FakeAws;
let client: DynamoDBClient;
let table: string;
beforeAll(async () => {
  aws = await fakeAws();
  client = localClient(inject('ddbEndpoint'));
  table = `t-discovery-h-${randomUUID().slice(0, 8)}`;
  await createTable(client, table, DISCOVERY_TABLE);
});
afterAll(async () => {
  await deleteTable(client, table);
  client.destroy();
  await aws?.close();
});

const context = { getRemainingTimeInMillis: () => 30_000, functionName: 'conclave-leaderDiscovery', awsRequestId: 'r' } as unknown as Context;

/** The function's handler on `naming`, for `leases` (undefined: every lease); these tests send no schedule (test/discovery/sweep.test.ts does). */
function handlerOn(naming: LeaderNaming, leases?: string[], leasesTableArn?: string) {
  const deps: DiscoveryFunctionDeps = {
    discovery: { state: new DiscoveryStateStore(client, table), naming, clock: manualClock(NOW) },
    leadershipOf: () => Promise.reject(new Error('no sweep in these tests')),
    leases: leases && new Set(leases),
    leasesTableArn,
    ...observability('leaderDiscovery', 'SILENT'),
  };
  return makeHandler(deps);
}

/** The events of one lease change, as EventBridge delivers them to a rule's Lambda target. */
let record = 0;
function delivered(oldLease: Lease | undefined, newLease: Lease): { event: ConclaveEvent; envelope: EventBridgeEvent<string, unknown> }[] {
  return eventsFromLeaseChange({ eventID: `rec-${++record}`, at: NOW, oldLease, newLease }).map((event) => ({
    event,
    envelope: { version: '0', id: randomUUID(), source: EVENT_SOURCE, 'detail-type': event.detailType, account: '123456789012', region: 'us-east-1', time: event.detail.time, resources: [], detail: event.detail },
  }));
}
/** The envelopes of the detail-types the construct's rule matches (DISCOVERY_DETAIL_TYPES). */
const subscribed = (d: ReturnType<typeof delivered>) => d.filter((x) => (DISCOVERY_DETAIL_TYPES as readonly string[]).includes(x.event.detailType)).map((x) => x.envelope);

describe('the function on the events the lease stream publishes', () => {
  const name = `reports-${randomUUID().slice(0, 8)}`;
  const handler = () => handlerOn(cloudMapNaming(aws.cloudMap(), aws.serviceId));
  const instance = () => aws.instances.get(name);
  const held = (holder: string, fencingToken: number, extra: Partial<Lease> = {}) => leaseRow(holder, { name, holderInstance: `${holder}-1`, fencingToken, ...extra });

  it('a new term (Leader Elected) registers the leader with its address; its Leader Changed is not subscribed, and would change nothing', async () => {
    const events = delivered(held('A', 7, { holderAddress: 'http://10.0.0.1:8080' }), held('B', 8, { holderAddress: 'http://10.0.0.2:8080' }));
    expect(events.map((e) => e.event.detailType)).toEqual(['Leader Elected', 'Leader Changed']);
    for (const e of subscribed(events)) await handler()(e, context);
    expect(instance()).toMatchObject({ holder: 'B', fencingToken: '8', address: 'http://10.0.0.2:8080', AWS_INSTANCE_IPV4: '10.0.0.2', AWS_INSTANCE_PORT: '8080' });
    expect(await handler()(events[1]!.envelope, context)).toEqual({ ignored: 'Leader Changed names no new leader and ends no term' });
  });

  it('a release (Lease Released) deregisters it; a redelivered Leader Elected of that term does not bring it back', async () => {
    const term = held('B', 8, { holderAddress: 'http://10.0.0.2:8080' });
    const { holderIdentity, holderInstance, holderAddress, ...free } = term;
    void holderIdentity, void holderInstance, void holderAddress;
    const events = delivered(term, { ...free, lastHolderIdentity: 'B', revision: term.revision + 1 });
    expect(events.map((e) => e.event.detailType)).toEqual(['Lease Released']);
    expect(await handler()(events[0]!.envelope, context)).toMatchObject({ outcome: 'applied', state: 'end 8' });
    expect(instance()).toBeUndefined();
    const late = delivered(held('A', 7), held('B', 8, { holderAddress: 'http://10.0.0.2:8080' }));
    expect(await handler()(late[0]!.envelope, context)).toMatchObject({ outcome: 'stale', state: 'end 8' });
    expect(instance()).toBeUndefined();
  });

  it('the platform ending a term (Leader Lost), and an election opened on an expired term (Election Started), clear the name; a re-election does not', async () => {
    const lost = delivered(held('C', 9, { holderAddress: '10.0.0.3:80' }), { ...leaseRow(undefined, { name, fencingToken: 9 }), holderLoss: { holder: 'C', at: NOW, fencingToken: 9, source: 'aws.ecs', platformId: 'arn:aws:ecs:us-east-1:123456789012:task/c/1', reason: 'stopped' } });
    expect(lost.map((e) => changeOfEvent(e.envelope))).toEqual([expect.objectContaining({ kind: 'ended', fencingToken: 9, why: 'lost' })]);
    const expired = delivered(held('D', 10), { ...leaseRow(undefined, { name, fencingToken: 10 }), election: { id: 'e1', startedAt: NOW, deadline: NOW + 5 * SEC, strategy: 'OldestEmulationVersion' } });
    expect(expired.map((e) => e.event.detailType)).toEqual(['Election Started']);
    expect(changeOfEvent(expired[0]!.envelope)).toEqual(expect.objectContaining({ kind: 'ended', fencingToken: 10, why: 'expired' }));
    const reelection = delivered(held('E', 11), held('E', 11, { election: { id: 'e2', startedAt: NOW, deadline: NOW + 5 * SEC, strategy: 'OldestEmulationVersion', holder: 'E' } }));
    expect(changeOfEvent(reelection[0]!.envelope)).toEqual({ ignored: 'a re-election: the holder leads on' });

    await handler()(delivered(held('B', 8), held('C', 9, { holderAddress: '10.0.0.3:80' }))[0]!.envelope, context);
    expect(instance()).toMatchObject({ holder: 'C' });
    await handler()(lost[0]!.envelope, context);
    expect(instance()).toBeUndefined();
    await handler()(delivered(held('C', 9), held('D', 10, { holderAddress: '10.0.0.4:80' }))[0]!.envelope, context);
    expect(instance()).toMatchObject({ holder: 'D' });
    await handler()(expired[0]!.envelope, context);
    expect(instance()).toBeUndefined();
  });

  it("an operator's delete of a held lease row: the row made again (an election held, naming the deleted term's holder departed) clears its name (it stayed registered until the next Leader Elected; a review, 2026-12-05)", async () => {
    // a lease of its own: the row made again has a token from the clock, above this describe's others
    const other = `${name}-deleted`;
    const held = (holder: string, fencingToken: number, extra: Partial<Lease> = {}) => leaseRow(holder, { name: other, holderInstance: `${holder}-1`, fencingToken, ...extra });
    const instance = () => aws.instances.get(other);
    await handler()(delivered(held('I', 15), held('J', 16, { holderAddress: '10.0.0.9:80' }))[0]!.envelope, context);
    expect(instance()).toMatchObject({ holder: 'J' });
    // deleting a held row tells its term's end (Lease Released, rowDeleted); the lease stream then makes it again, as reconcileAfterDelete does (lastHolderIdentity, departed, notBefore)
    const deleted = eventsFromLeaseChange({ eventID: 'rec-delete', at: NOW, oldLease: held('J', 16), newLease: undefined });
    expect(deleted.map((e) => [e.detailType, (e.detail as { rowDeleted?: true }).rowDeleted])).toEqual([['Lease Released', true]]);
    const made = leaseRow(undefined, { name: other, fencingToken: fencingTokenFloor(NOW), lastHolderIdentity: 'J', election: { id: `${other}#1`, startedAt: NOW, deadline: NOW + 15 * SEC, notBefore: NOW + 15 * SEC, strategy: 'OldestEmulationVersion', departed: 'J', awaitsStream: true } });
    const started = delivered(undefined, made);
    expect(started.map((e) => [e.event.detailType, (e.event.detail as { previousHolder?: string }).previousHolder])).toEqual([['Election Started', 'J']]);
    expect(await handler()(started[0]!.envelope, context)).toMatchObject({ outcome: 'applied', state: `end ${fencingTokenFloor(NOW)}` });
    expect(instance()).toBeUndefined();
  });

  it("another deployment's events on a shared bus (another leases table as their resource, or none) are ignored: its leader is not named here (it was, and this deployment's own next terms were then stale)", async () => {
    // a lease of its own: the other deployment's term has a higher token than this describe's others
    const other = `${name}-shared`;
    const held = (holder: string, fencingToken: number, extra: Partial<Lease> = {}) => leaseRow(holder, { name: other, holderInstance: `${holder}-1`, fencingToken, ...extra });
    const instance = () => aws.instances.get(other);
    const own = 'arn:aws:dynamodb:us-east-1:123456789012:table/a-leases';
    const theirTable = 'arn:aws:dynamodb:us-east-1:123456789012:table/b-leases';
    const h = handlerOn(cloudMapNaming(aws.cloudMap(), aws.serviceId), undefined, own);
    const ours = delivered(held('K', 20, { holderAddress: '10.0.0.20:80' }), held('L', 21, { holderAddress: '10.0.0.21:80' }))[0]!.envelope;
    expect(await h({ ...ours, resources: [own] }, context)).toMatchObject({ outcome: 'applied', state: 'term 21' });
    expect(instance()).toMatchObject({ holder: 'L', fencingToken: '21' });
    // a newer term of a lease of the same name, in another deployment
    const theirs = delivered(held('L', 21), held('Z', 99, { holderAddress: '10.9.9.9:80' }))[0]!.envelope;
    for (const resources of [[theirTable], []]) expect(await h({ ...theirs, resources }, context)).toMatchObject({ ignored: expect.stringMatching(/^published by another deployment/) as unknown });
    expect(instance()).toMatchObject({ holder: 'L', fencingToken: '21' });
    // the ARN read from the function's environment
    expect(discoveryDepsFromEnv({ [DISCOVERY_ENV.table]: table, [DISCOVERY_ENV.cloudMapServiceId]: 'srv-1', [DISCOVERY_ENV.leasesTable]: 'a-leases', [DISCOVERY_ENV.identitiesTable]: 'a-identities', [DISCOVERY_ENV.leasesTableArn]: own }).leasesTableArn).toBe(own);
  });

  it('a new leader whose address Cloud Map cannot take (an attribute value over 1024 characters) clears the name, with the reason: the previous leader is not left named', async () => {
    await handler()(delivered(held('F', 12), held('G', 13, { holderAddress: '10.0.0.7:80' }))[0]!.envelope, context);
    expect(instance()).toMatchObject({ holder: 'G' });
    const long = `http://10.0.0.8:8080/${'p'.repeat(1100)}`; // a URL the SDK's advertise option takes (at most 2048)
    const elected = delivered(held('G', 13), held('H', 14, { holderAddress: long }))[0]!.envelope;
    // before the fix: a ValidationError on every delivery (Lambda's retries, then the dead-letter queue), G left named as leader
    expect(await handler()(elected, context)).toMatchObject({ outcome: 'applied', state: 'term 14', name: { kind: 'clear', why: expect.stringMatching(/address.*1024/) } });
    expect(instance()).toBeUndefined();
  });

  // found by a review (2026-12-07): the SDK takes an `advertise` of up to 2048 characters, Cloud Map an
  // attribute value of up to 1024; the name was cleared with the reason at info level, which no alarm or error filter sees
  it('a leader whose address is too long for Cloud Map is logged as an error naming the lease, the length, the fix and what the name shows; a leader that advertises nothing is not', async () => {
    const seen = observability('leaderDiscovery', 'SILENT');
    const errors: unknown[][] = [];
    seen.logger.error = (...args: unknown[]) => void errors.push(args);
    const h = makeHandler({ discovery: { state: new DiscoveryStateStore(client, table), naming: cloudMapNaming(aws.cloudMap(), aws.serviceId), clock: manualClock(NOW) }, leadershipOf: () => Promise.reject(new Error('no sweep')), leases: undefined, ...seen });
    const long = `http://10.0.0.8:8080/${'p'.repeat(1100)}`; // 1121 characters: the SDK takes it
    expect(await h(delivered(held('H', 14), held('K', 15, { holderAddress: long }))[0]!.envelope, context)).toMatchObject({ outcome: 'applied', state: 'term 15', name: { kind: 'clear' } });
    expect(instance()).toBeUndefined();
    expect(errors).toHaveLength(1);
    const [message, fields] = errors[0] as [string, Record<string, unknown>];
    expect(message).toMatch(new RegExp(`^lease "${name}": its leader K \\(term 15\\) cannot be named, so the name shows no leader`));
    expect(fields).toMatchObject({ lease: name, holder: 'K', fencingToken: 15 });
    expect(String(fields['why'])).toMatch(/address is 1121 characters; Cloud Map takes attribute values of at most 1024/);
    expect(String(fields['why'])).toMatch(/advertise .*at most 1024 characters/);
    expect(String(fields['why'])).toMatch(/no instance/);
    // a leader with no `advertise`: its name is cleared as ever, not an error
    expect(await h(delivered(held('K', 15), held('M', 16))[0]!.envelope, context)).toMatchObject({ outcome: 'applied', state: 'term 16', name: { kind: 'clear' } });
    expect(errors).toHaveLength(1);
  });

  it('keeps to leaderDiscovery.leaseNames (the rule does too): an event of another lease writes nothing', async () => {
    const other = `other-${randomUUID().slice(0, 8)}`;
    const before = aws.calls.length;
    const events = delivered(undefined, leaseRow('A', { name: other, fencingToken: 1, holderAddress: '10.0.0.1:80' }));
    expect(await handlerOn(cloudMapNaming(aws.cloudMap(), aws.serviceId), [name])(events[0]!.envelope, context)).toEqual({ ignored: `lease "${other}" is not one of leaderDiscovery.leaseNames` });
    expect(aws.calls.length).toBe(before);
  });

  it('a malformed event, or one from another source, fails with a ValidationError naming the field (Lambda retries, then the dead-letter queue)', async () => {
    const ok = delivered(undefined, leaseRow('A', { name, fencingToken: 1 }))[0]!.envelope;
    await expect(handler()({ ...ok, source: 'someone.else' }, context)).rejects.toThrow(/source: must be "conclave"/);
    await expect(handler()({ ...ok, detail: { ...(ok.detail as object), fencingToken: 'seven' } }, context)).rejects.toThrow(ValidationError);
    await expect(handler()({ ...ok, detail: { ...(ok.detail as object), fencingToken: 'seven' } }, context)).rejects.toThrow(/fencingToken/);
  });
});

it('Route 53: the function points the lease’s record at each leader and deletes it when the term ends', async () => {
  const name = `jobs-${randomUUID().slice(0, 8)}`;
  const handler = handlerOn(route53Naming(aws.route53(), { hostedZoneId: aws.hostedZoneId, recordName: '{lease}.leader.internal.example.com', ttlSeconds: 5 }));
  const records = () => aws.records.filter((r) => r.name === `${name}.leader.internal.example.com.`).map((r) => `${r.type} ${r.values.join(',')}`);
  for (const e of subscribed(delivered(undefined, leaseRow('A', { name, fencingToken: 1, holderAddress: 'http://10.0.0.1:8080' })))) await handler(e, context);
  expect(records()).toEqual(['A 10.0.0.1']);
  for (const e of subscribed(delivered(leaseRow('A', { name, fencingToken: 1 }), leaseRow('B', { name, fencingToken: 2, holderAddress: 'worker-b.internal:8080' })))) await handler(e, context);
  expect(records()).toEqual(['CNAME worker-b.internal']);
  const { holderIdentity, ...free } = leaseRow('B', { name, fencingToken: 2 });
  for (const e of subscribed(delivered(leaseRow('B', { name, fencingToken: 2 }), { ...free, lastHolderIdentity: holderIdentity }))) await handler(e, context);
  expect(records()).toEqual([]);
});

it('Route 53: a record the zone refuses at the name (a CNAME beside a TXT) clears it, with the reason in the outcome, not the previous leader left named', async () => {
  const name = `conflict-${randomUUID().slice(0, 8)}`;
  const at = `${name}.leader.internal.example.com.`;
  aws.records.push({ name: at, type: 'TXT', ttl: 300, values: ['"owner=team-a"'] });
  const handler = handlerOn(route53Naming(aws.route53(), { hostedZoneId: aws.hostedZoneId, recordName: '{lease}.leader.internal.example.com', ttlSeconds: 5 }));
  const records = () => aws.records.filter((r) => r.name === at).map((r) => `${r.type} ${r.values.join(',')}`);
  for (const e of subscribed(delivered(undefined, leaseRow('A', { name, fencingToken: 1, holderAddress: 'http://10.0.0.1:8080' })))) await handler(e, context);
  expect(records()).toEqual(['TXT "owner=team-a"', 'A 10.0.0.1']);
  const [elected] = subscribed(delivered(leaseRow('A', { name, fencingToken: 1 }), leaseRow('B', { name, fencingToken: 2, holderAddress: 'worker-b.internal:8080' })));
  expect(await handler(elected!, context)).toMatchObject({
    outcome: 'applied',
    state: 'term 2',
    name: { kind: 'clear', why: expect.stringMatching(/^Route 53 zone ZFAKE\w+ \(\{lease\}\.leader\.internal\.example\.com\) refused to name the leader: it refused the CNAME record/) },
  });
  expect(records()).toEqual(['TXT "owner=team-a"']);
});

describe('the wiring', () => {
  it('subscribes detail-types Conclave publishes, from its source', () => {
    expect(DISCOVERY_EVENT_SOURCE).toBe(EVENT_SOURCE);
    for (const t of DISCOVERY_DETAIL_TYPES) expect(DETAIL_TYPES).toContain(t);
  });

  it('reads its environment with errors naming the variable', () => {
    const base = { [DISCOVERY_ENV.table]: 'conclave-discovery', [DISCOVERY_ENV.leasesTable]: 'conclave-leases', [DISCOVERY_ENV.identitiesTable]: 'conclave-identities' };
    expect(() => discoveryDepsFromEnv({})).toThrow(new RegExp(DISCOVERY_ENV.table));
    // the sweep's tables (getLeader's reads)
    expect(() => discoveryDepsFromEnv({ ...base, [DISCOVERY_ENV.leasesTable]: undefined, [DISCOVERY_ENV.cloudMapServiceId]: 'srv-1' })).toThrow(new RegExp(DISCOVERY_ENV.leasesTable));
    expect(() => discoveryDepsFromEnv(base)).toThrow(new RegExp(`${DISCOVERY_ENV.cloudMapServiceId}: give it, or ${DISCOVERY_ENV.hostedZoneId}`));
    expect(() => discoveryDepsFromEnv({ ...base, [DISCOVERY_ENV.cloudMapServiceId]: 'srv-1', [DISCOVERY_ENV.hostedZoneId]: 'Z1', [DISCOVERY_ENV.recordName]: 'x', [DISCOVERY_ENV.ttlSeconds]: '5' })).toThrow(/one naming service/);
    expect(() => discoveryDepsFromEnv({ ...base, [DISCOVERY_ENV.hostedZoneId]: 'Z1', [DISCOVERY_ENV.recordName]: 'x' })).toThrow(new RegExp(`${DISCOVERY_ENV.ttlSeconds}: is required for Route 53`));
    expect(() => discoveryDepsFromEnv({ ...base, [DISCOVERY_ENV.cloudMapServiceId]: 'srv-1', [DISCOVERY_ENV.leases]: 'jobs' })).toThrow(new RegExp(`${DISCOVERY_ENV.leases}: must be a JSON list`));
    const deps = discoveryDepsFromEnv({ ...base, [DISCOVERY_ENV.cloudMapServiceId]: 'srv-1', [DISCOVERY_ENV.leases]: '["jobs","reports"]', AWS_REGION: 'us-east-1' });
    expect([...deps.leases!]).toEqual(['jobs', 'reports']);
    expect(deps.discovery.naming.describe).toBe('Cloud Map service srv-1');
    expect(discoveryDepsFromEnv({ ...base, [DISCOVERY_ENV.hostedZoneId]: 'Z1', [DISCOVERY_ENV.recordName]: '{lease}.leader.example.internal', [DISCOVERY_ENV.ttlSeconds]: '5', AWS_REGION: 'us-east-1' }).discovery.naming.describe).toBe(
      'Route 53 zone Z1 ({lease}.leader.example.internal)',
    );
  });
});

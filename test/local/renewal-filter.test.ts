/**
 * The lease stream's event filter drops renewals (most of the stream) before they invoke the
 * function — and nothing else: a change of holder, instance or fencing token always reaches the
 * function, whatever the write left on the row. Run on DynamoDB Local with the local poller,
 * which applies the wiring's filters as Lambda does.
 */
import { DescribeTableCommand, UpdateItemCommand } from '@aws-sdk/client-dynamodb';
import { DynamoDBStreamsClient } from '@aws-sdk/client-dynamodb-streams';
import { marshall } from '@aws-sdk/util-dynamodb';
import type { DynamoDBRecord } from 'aws-lambda';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { LOCAL_CREDENTIALS, LOCAL_REGION } from '../../lib/local/dynamodb-local.js';
import { matchesFilter } from '../../lib/local/event-filter.js';
import { StreamPoller } from '../../lib/local/stream-poller.js';
import { candidateChangeMatters } from '../../lib/functions/core.js';
import { candidateChange } from '../../lib/functions/records.js';
import { CandidacyStore, CandidateStore } from '../../lib/stores/candidate-store.js';
import { LeaseStore } from '../../lib/stores/lease-store.js';
import { wiring } from '../../lib/wiring.js';
import { waitFor } from '../sdk/harness.js';
import { testTables, type TestTables } from '../support.js';

let t: TestTables;
let streams: DynamoDBStreamsClient;
beforeAll(async () => {
  t = await testTables('renewal-filter');
  streams = new DynamoDBStreamsClient({ endpoint: inject('ddbEndpoint'), region: LOCAL_REGION, credentials: LOCAL_CREDENTIALS });
});
afterAll(async () => {
  streams.destroy();
  await t.drop();
});

const holderOf = (r: DynamoDBRecord) => {
  const n = r.dynamodb?.NewImage;
  return `${n?.['holderIdentity']?.S}/${n?.['fencingToken']?.N}${n?.['successor'] ? ` successor ${n['successor'].S}` : ''}`;
};

describe("the lease stream's filter", () => {
  it('drops renewals, and delivers a holder change a worker writes right after one (the mark a renewal leaves hides nothing)', async () => {
    const leases = new LeaseStore(t.client, t.names.leases);
    const now = Date.now();
    const a = { holderIdentity: 'a', fencingToken: 1 };
    let lease = await leases.write(await leases.read('jobs'), {
      set: { holderIdentity: 'a', holderInstance: 'a-1', leaseDurationSeconds: 15, acquireTime: now, renewTime: now, leaseTransitions: 0, fencingToken: 1, electedBy: 'coordinator' },
    });
    for (let i = 1; i <= 2; i++) lease = (await leases.renewTerm('jobs', a, now + i, 15))!;
    expect(lease.holderIdentity).toBe('a');

    // Worker b writes itself in as holder, as a direct acquisition does, right after a's renewal:
    // a plain conditional UpdateItem that names only holder attributes (what IAM lets a worker's
    // non-renewal writes name) and leaves whatever mark the renewal put on the row.
    await t.client.send(
      new UpdateItemCommand({
        TableName: t.names.leases,
        Key: marshall({ name: 'jobs' }),
        UpdateExpression: 'SET #h = :h, #i = :i, #t = :t, #tt = :t, #by = :by ADD #rev :one',
        ConditionExpression: '#rev = :rev',
        ExpressionAttributeNames: { '#h': 'holderIdentity', '#i': 'holderInstance', '#t': 'fencingToken', '#tt': 'termToken', '#by': 'electedBy', '#rev': 'revision' },
        ExpressionAttributeValues: marshall({ ':h': 'b', ':i': 'b-1', ':t': 2, ':by': 'self', ':one': 1, ':rev': lease.revision }),
      }),
    );
    const b = { holderIdentity: 'b', fencingToken: 2 };
    for (let i = 3; i <= 4; i++) expect(await leases.renewTerm('jobs', b, now + i, 15)).toBeDefined();
    // the coordinator's note on the lease: an ordinary write, delivered
    await leases.write(await leases.read('jobs'), { set: { successor: 'a' } });

    const arn = (await t.client.send(new DescribeTableCommand({ TableName: t.names.leases }))).Table!.LatestStreamArn!;
    const delivered: DynamoDBRecord[] = [];
    const poller = new StreamPoller({
      client: streams,
      streamArn: arn,
      trigger: wiring.leaseStream.trigger,
      functionName: 'leaseStream',
      invoke: async (e) => void delivered.push(...e.Records),
      deadLetter: () => undefined,
    });
    poller.start();
    const total = 1 + 2 + 1 + 2 + 1;
    try {
      await waitFor('every record read', () => delivered.length + poller.filtered >= total);
    } finally {
      await poller.stop();
    }
    expect(delivered.map((r) => `${r.eventName} ${holderOf(r)}`)).toEqual(['INSERT a/1', 'MODIFY b/2', 'MODIFY b/2 successor a']);
    expect(poller.filtered).toBe(4); // the four renewals
  });

  it('keeps every record whose renewal mark did not change (whatever its value), drops only a change of the mark to 1 or 2', () => {
    const filters = wiring.leaseStream.trigger.filters ?? [];
    // Lambda's default quota: five filters per event source mapping (a sixth fails the deploy)
    expect(filters.length).toBeGreaterThan(0);
    expect(filters.length).toBeLessThanOrEqual(5);
    const kept = (old: Record<string, unknown> | undefined, neu: Record<string, unknown> | undefined, eventName = 'MODIFY') =>
      filters.some((f) => matchesFilter(f, { eventName, dynamodb: { ...(old ? { OldImage: old } : {}), ...(neu ? { NewImage: neu } : {}) } }));
    const mark = (v: unknown) => ({ name: { S: 'jobs' }, ...(v === undefined ? {} : { renewalMark: v }) });
    // what a renewal does to the mark: absent → 1, 1 → 2, 2 → 1
    expect(kept(mark(undefined), mark({ N: '1' }))).toBe(false);
    expect(kept(mark({ N: '1' }), mark({ N: '2' }))).toBe(false);
    expect(kept(mark({ N: '2' }), mark({ N: '1' }))).toBe(false);
    // any other change to 1 or 2 names the mark too, so only the renewal statement lets it through IAM
    expect(kept(mark(undefined), mark({ N: '2' }))).toBe(false);
    expect(kept(mark({ N: '7' }), mark({ N: '1' }))).toBe(false);
    // a write that does not touch the mark leaves it as it was: always delivered
    for (const v of [undefined, { N: '1' }, { N: '2' }, { N: '7' }, { N: '-4' }, { S: '1' }, { S: 'renewal' }, { BOOL: true }]) expect(kept(mark(v), mark(v)), JSON.stringify(v)).toBe(true);
    // a mark removed, or set to what no renewal writes: delivered
    expect(kept(mark({ N: '2' }), mark(undefined))).toBe(true);
    expect(kept(mark({ N: '1' }), mark({ N: '9' }))).toBe(true);
    // a renewal withdraws any vacancy report: a record whose new image has one is no renewal
    expect(kept(mark({ N: '1' }), { ...mark({ N: '2' }), vacancyReport: { M: {} } })).toBe(true);
    expect(kept(undefined, mark(undefined), 'INSERT')).toBe(true);
    expect(kept(mark({ N: '1' }), undefined, 'REMOVE')).toBe(true);
  });
});

describe("the candidate stream's filter", () => {
  it("drops a candidate's renewal that follows a renewal, and delivers the answer to a ping, a registration and an operator's pin (issue 38, cheaper at rest)", async () => {
    const candidates = new CandidateStore(t.client, t.names.candidates);
    const now = Date.now();
    const key = { leaseName: 'jobs', name: 'w-1' };
    const spec = { ...key, binaryVersion: '1.30.0', emulationVersion: '1.30.0', preferredStrategies: ['OldestEmulationVersion'], createdAt: now, ackedPingTime: 0 };
    // registered as LeaseCandidate.register writes it
    await candidates.write(await candidates.get(key), { set: { ...spec, identity: 'w-1-a', renewTime: now } });
    let at = now;
    const renew = async () => expect(await candidates.renew('jobs', 'w-1', ++at)).toBe(true);
    await renew(); // the first after registration: no mark before, delivered
    await renew(); // 1 → 2: dropped
    await renew(); // 2 → 1: dropped
    expect(await candidates.ping('jobs', 'w-1', at + 1)).toBe(true); // removes the mark: delivered
    await renew(); // answers the ping: no mark before, delivered
    await renew(); // dropped
    // a new start-up registers under the same name as LeaseCandidate.register does (acked 0, the
    // previous start-up's ping removed, so a row with a mark has acked its ping, if any): delivered
    await candidates.write(await candidates.get(key), { set: { ...spec, identity: 'w-1-b', renewTime: ++at }, remove: ['pingTime'] });
    await renew(); // dropped
    await candidates.write(await candidates.get(key), { set: { priority: 5 } }); // an operator's pin: delivered
    await candidates.delete(await candidates.get(key));

    const arn = (await t.client.send(new DescribeTableCommand({ TableName: t.names.candidates }))).Table!.LatestStreamArn!;
    const delivered: DynamoDBRecord[] = [];
    const poller = new StreamPoller({
      client: streams,
      streamArn: arn,
      trigger: wiring.candidateStream.trigger,
      functionName: 'candidateStream',
      invoke: async (e) => void delivered.push(...e.Records),
      deadLetter: () => undefined,
    });
    poller.start();
    const total = 1 + 3 + 1 + 2 + 1 + 1 + 1 + 1;
    try {
      await waitFor('every record read', () => delivered.length + poller.filtered >= total);
    } finally {
      await poller.stop();
    }
    const shown = delivered.map((r) => {
      const n = r.dynamodb?.NewImage;
      return `${r.eventName}${n ? ` ${n['identity']?.S} mark ${n['renewalMark']?.N ?? '-'} acked ${n['ackedPingTime']?.N}${n['priority'] ? ' pinned' : ''}` : ''}`;
    });
    expect(shown).toEqual([
      'INSERT w-1-a mark - acked 0',
      'MODIFY w-1-a mark 1 acked 0',
      'MODIFY w-1-a mark - acked 0',
      `MODIFY w-1-a mark 1 acked ${at - 3}`,
      'MODIFY w-1-b mark 2 acked 0',
      'MODIFY w-1-b mark 1 acked 0 pinned',
      'REMOVE',
    ]);
    expect(poller.filtered).toBe(4); // the four renewals right after a renewal
    // the delivered answer to the ping is one the function reconciles on
    expect(candidateChangeMatters(candidateChange(delivered[3]!))).toBe(true);
  });

  it("delivers a stand-down's mark and its removal (neither flips the renewal mark), and the function reconciles on each (before: not until the next tick)", async () => {
    const candidates = new CandidacyStore(t.client, t.names.candidates);
    const now = Date.now();
    const key = { leaseName: 'down', name: 'w-1' };
    await candidates.write(await candidates.get(key), { set: { ...key, binaryVersion: '1.30.0', emulationVersion: '1.30.0', preferredStrategies: ['OldestEmulationVersion'], createdAt: now, ackedPingTime: 0, identity: 'w-1-a', renewTime: now } });
    expect(await candidates.renew('down', 'w-1', now + 1)).toBe(true); // no mark before: delivered
    expect(await candidates.renew('down', 'w-1', now + 2)).toBe(true); // 1 → 2: dropped
    expect(await candidates.markStandsDown('down', 'w-1', 'w-1-a', now + 600_000)).toBe(true); // as LeaseCandidate marks it: delivered
    expect(await candidates.markStandsDown('down', 'w-1', 'w-1-a', undefined)).toBe(true); // its renewal's turn takes it off first: delivered
    expect(await candidates.renew('down', 'w-1', now + 3)).toBe(true); // 2 → 1: dropped
    await candidates.delete(await candidates.get(key)); // delivered: read last, so every record before it was read

    const arn = (await t.client.send(new DescribeTableCommand({ TableName: t.names.candidates }))).Table!.LatestStreamArn!;
    const delivered: DynamoDBRecord[] = [];
    const poller = new StreamPoller({
      client: streams,
      streamArn: arn,
      trigger: wiring.candidateStream.trigger,
      functionName: 'candidateStream',
      invoke: async (e) => void delivered.push(...e.Records.filter((r) => (r.dynamodb?.NewImage ?? r.dynamodb?.OldImage)?.['leaseName']?.S === 'down')),
      deadLetter: () => undefined,
    });
    poller.start();
    try {
      await waitFor('every record read', () => delivered.some((r) => r.eventName === 'REMOVE'));
    } finally {
      await poller.stop();
    }
    const shown = delivered.map((r) => `${r.eventName} mark ${r.dynamodb?.NewImage?.['renewalMark']?.N ?? '-'} down ${r.dynamodb?.NewImage?.['standsDownUntil']?.N ?? '-'}`);
    expect(shown).toEqual(['INSERT mark - down -', 'MODIFY mark 1 down -', `MODIFY mark 2 down ${now + 600_000}`, 'MODIFY mark 2 down -', 'REMOVE mark - down -']);
    expect(delivered.map((r) => candidateChangeMatters(candidateChange(r)))).toEqual([true, false, true, true, true]);
  });

  it("drops only a mark flipped from 1 to 2 or 2 to 1 — a renewal after a renewal, which the function would not act on — and no run-once row's record", () => {
    const filters = wiring.candidateStream.trigger.filters ?? [];
    expect(filters.length).toBeLessThanOrEqual(5); // Lambda's default quota per event source mapping
    const row = (mark: unknown, more: Record<string, unknown> = {}) => ({ leaseName: { S: 'jobs' }, name: { S: 'w-1' }, ...(mark === undefined ? {} : { renewalMark: mark }), ...more });
    const kept = (old: Record<string, unknown> | undefined, neu: Record<string, unknown> | undefined) =>
      filters.some((f) => matchesFilter(f, { dynamodb: { ...(old ? { OldImage: old } : {}), ...(neu ? { NewImage: neu } : {}) } }));
    // a renewal right after a renewal: dropped
    expect(kept(row({ N: '1' }), row({ N: '2' }))).toBe(false);
    expect(kept(row({ N: '2' }), row({ N: '1' }))).toBe(false);
    // the first renewal after a ping (which removed the mark), a registration or an older release's write: delivered
    expect(kept(row(undefined), row({ N: '1' }))).toBe(true);
    expect(kept(undefined, row(undefined))).toBe(true); // INSERT
    expect(kept(row({ N: '1' }), undefined)).toBe(true); // REMOVE
    expect(kept(row({ N: '2' }), row(undefined))).toBe(true); // a ping
    for (const v of [undefined, { N: '1' }, { N: '2' }, { N: '7' }]) expect(kept(row(v), row(v)), JSON.stringify(v)).toBe(true);
    expect(kept(row({ N: '1' }), row({ N: '9' }))).toBe(true);
    // run-once rows never reach the function, whatever their mark
    for (const more of [{ fence: { N: '3' } }, { runs: { L: [] } }]) {
      expect(kept(row(undefined, more), row(undefined, more))).toBe(false);
      expect(kept(undefined, row(undefined, more))).toBe(false);
      expect(kept(row(undefined, more), undefined)).toBe(false);
    }
  });
});

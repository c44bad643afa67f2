/**
 * The events of a term that ends unlike the usual (a review of the lease-change events, 2026-12-07),
 * records fed through functions/lease-stream.ts on DynamoDB Local: a holder rewritten by hand at an
 * unchanged fencing token publishes nothing, and the release that ends that term names its own
 * holder, not the name written over it; a hand-off while a re-election is open finishes no election,
 * so its Leader Elected names none.
 */
import { UpdateItemCommand } from '@aws-sdk/client-dynamodb';
import { marshall } from '@aws-sdk/util-dynamodb';
import type { DynamoDBStreamEvent } from 'aws-lambda';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeHandler as leaseStream } from '../../functions/lease-stream.js';
import type { FunctionDeps } from '../../lib/functions/core.js';
import { DETAIL_SCHEMAS, type ConclaveEvent } from '../../lib/events/schemas.js';
import { lambdaContext } from '../../lib/local/runtime.js';
import { OLDEST_EMULATION_VERSION } from '../../lib/schemas/strategy.js';
import { NOW } from '../fixtures.js';
import { publishingDeps } from './publishing-deps.js';
import { streamRecords, testTables, type TestTables } from '../support.js';

let t: TestTables;
beforeAll(async () => {
  t = await testTables('term-events');
});
afterAll(async () => {
  await t.drop();
});

const setup = (start: number) => publishingDeps(t, start);

const recordsOf = async (lease: string) => (await streamRecords(t.client, t.names.leases)).filter((x) => x.dynamodb!.Keys!['name']!.S === lease);
const feed = async (d: FunctionDeps, recs: Awaited<ReturnType<typeof recordsOf>>) =>
  expect(await leaseStream(d)({ Records: recs } as DynamoDBStreamEvent, lambdaContext('leaseStream'))).toEqual({ batchItemFailures: [] });
/** Each event as [detail-type, the holder it names (holder, else previousHolder), fencingToken]. */
const told = (events: readonly ConclaveEvent[]) =>
  events.map((e) => {
    const d = e.detail as { holder?: string; previousHolder?: string; fencingToken?: number };
    return [e.detailType, d.holder ?? d.previousHolder, d.fencingToken];
  });

describe('a holder rewritten by hand at an unchanged fencing token', () => {
  it("publishes nothing; the release that ends the term names its own holder a (before: b, never reported holding it)", async () => {
    const { clock, d, events } = setup(NOW);
    const c = d.coordinator;
    const lease = 'rewritten-holder';
    await c.leases.write(await c.leases.read(lease), {
      set: { holderIdentity: 'a', holderInstance: 'a-1', leaseDurationSeconds: 15, acquireTime: NOW, renewTime: NOW, leaseTransitions: 0, fencingToken: 1, termToken: 1, electedBy: 'coordinator' },
    });
    await feed(d, await recordsOf(lease));
    expect(told(events)).toEqual([['Leader Elected', 'a', 1]]);
    events.length = 0;
    // an operator's `aws dynamodb update-item`: another holder, the token as it was
    await t.client.send(
      new UpdateItemCommand({
        TableName: t.names.leases,
        Key: marshall({ name: lease }),
        UpdateExpression: 'SET holderIdentity = :h, holderInstance = :i',
        ExpressionAttributeValues: marshall({ ':h': 'b', ':i': 'b-1' }),
      }),
    );
    await feed(d, (await recordsOf(lease)).slice(1));
    expect(told(events)).toEqual([]);
    // a's elector reads the row rewritten under it and ends its term there (step.ts termToConfirm)
    clock.advance(1_000);
    expect(await c.leases.endChangedTerm(lease, 1, 'a', clock.now())).toMatchObject({ lastHolderIdentity: 'a' });
    await feed(d, (await recordsOf(lease)).slice(2, 3));
    expect(told(events)).toEqual([['Lease Released', 'a', 1]]);
    for (const e of events) DETAIL_SCHEMAS[e.detailType].parse(e.detail);
  });
});

describe('a hand-off while a re-election is open', () => {
  it('Leader Elected (electedBy successor) names no electionId: the election chose nobody (before: the re-election’s)', async () => {
    const { clock, d, events } = setup(NOW);
    const c = d.coordinator;
    const lease = 'handoff-in-reelection';
    await c.leases.write(await c.leases.read(lease), {
      set: { holderIdentity: 'a', holderInstance: 'a-1', leaseDurationSeconds: 15, acquireTime: NOW, renewTime: NOW, leaseTransitions: 0, fencingToken: 1, termToken: 1, electedBy: 'coordinator', electedStrategy: OLDEST_EMULATION_VERSION, successor: 'b', successorInstance: 'b-1' },
    });
    const read = await c.leases.read(lease);
    // the coordinator's routine re-election (a liveness check): the holder leads on while candidates answer
    await c.leases.write(read, { set: { election: { id: `${lease}#${read.revision}`, startedAt: NOW, deadline: NOW + 5_000, strategy: OLDEST_EMULATION_VERSION, holder: 'a' } } });
    clock.advance(1_000);
    // a steps down and hands its term to b, the designated successor (its patch removes the election)
    const handed = await c.leases.handOver(lease, { holderIdentity: 'a', fencingToken: 1 }, { name: 'b', instance: 'b-1' }, clock.now(), 15, 0);
    expect(handed).toMatchObject({ holderIdentity: 'b', electedBy: 'successor' });
    expect(handed?.election).toBeUndefined();
    await feed(d, (await recordsOf(lease)).slice(0, 3));
    expect(events.map((e) => e.detailType)).toEqual(['Leader Elected', 'Election Started', 'Leader Elected', 'Leader Changed']);
    const started = events[1]!.detail as { electionId: string };
    expect(started).toMatchObject({ reelection: true, holder: 'a' });
    const elected = events[2]!.detail;
    expect(elected).toMatchObject({ holder: 'b', electedBy: 'successor', previousHolder: 'a' });
    expect(elected).not.toHaveProperty('electionId');
    for (const e of events) DETAIL_SCHEMAS[e.detailType].parse(e.detail);
  });
});

/**
 * The platform function's removal of a stopped task's candidate rows, on DynamoDB Local, its
 * records fed through functions/candidate-stream.ts (a review, 2026-12-07, thirteenth): the holder's
 * row and its peers' on the stopped task were deleted plainly, fresh as they were, so no Candidate
 * Expired told the deaths the platform reported. They are collected as the coordinator collects a
 * stale row (`collectedAt`, then the delete): each is a Candidate Expired.
 */
import type { DynamoDBStreamEvent } from 'aws-lambda';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeHandler as candidateStream } from '../../functions/candidate-stream.js';
import { makeHandler as platform } from '../../functions/platform.js';
import { DETAIL_SCHEMAS } from '../../lib/events/schemas.js';
import type { PlatformResult } from '../../lib/functions/platform.js';
import { lambdaContext } from '../../lib/local/runtime.js';
import type { Platform } from '../../lib/schemas/platform.js';
import { OLDEST_EMULATION_VERSION } from '../../lib/schemas/strategy.js';
import { publishingDeps } from '../events/publishing-deps.js';
import { ACCOUNT, CLUSTER, REGION, ecsTaskStateChange, taskArn } from '../platform-fixtures.js';
import { streamRecords, testTables, type TestTables } from '../support.js';

let t: TestTables;
beforeAll(async () => {
  t = await testTables('platform-expired');
});
afterAll(async () => {
  await t.drop();
});

const context = { ...lambdaContext('platform'), invokedFunctionArn: `arn:aws:lambda:${REGION}:${ACCOUNT}:function:conclave-platform` };
const ecs = (id: string): Platform => ({ kind: 'ecs', id: taskArn(id), cluster: CLUSTER, availabilityZone: 'eu-west-1a' });

describe('candidates stopped with their task', () => {
  it('the holder and its peer on the stopped task are each told as Candidate Expired; a candidate elsewhere is kept (before: no event)', async () => {
    // the stream records carry DynamoDB Local's own time: the rows are fresh by it (renewed seconds before the stop), never stale
    const start = Date.now();
    const { d, events } = publishingDeps(t, start);
    const c = d.coordinator;
    const lease = 'stopped-task';
    const task = ecs('cccc1111');
    await c.leases.write(await c.leases.read(lease), {
      set: { holderIdentity: 'w1', holderInstance: 'w1-1', holderPlatform: task, holderPlatformId: task.id, leaseDurationSeconds: 15, acquireTime: start - 60_000, renewTime: start - 5_000, leaseTransitions: 1, fencingToken: 3, electedBy: 'coordinator' },
    });
    const candidate = async (name: string, on: Platform) =>
      c.candidates.write(await c.candidates.read(lease, name), { set: { identity: `${name}-1`, binaryVersion: '1.0.0', emulationVersion: '1.0.0', preferredStrategies: [OLDEST_EMULATION_VERSION], renewTime: start - 5_000, createdAt: start - 60_000, platform: on } });
    await candidate('w1', task);
    await candidate('w2', task); // a peer in the same task
    await candidate('w3', ecs('cccc2222'));
    const r = (await platform(d)(ecsTaskStateChange(task.id, 'STOPPED', { time: new Date(start).toISOString() }) as never, context)) as PlatformResult;
    expect(r.outcomes).toMatchObject([{ lease, outcome: 'vacated', holder: 'w1' }]);
    expect((await c.candidates.list(lease)).candidates.map((x) => x.name)).toEqual(['w3']);

    const records = (await streamRecords(t.client, t.names.candidates)).filter((x) => x.dynamodb!.Keys!['leaseName']!.S === lease);
    expect(await candidateStream(d)({ Records: records } as DynamoDBStreamEvent, lambdaContext('candidateStream'))).toEqual({ batchItemFailures: [] });
    const expired = events.filter((e) => e.detailType === 'Candidate Expired');
    expect(expired.map((e) => (e.detail as { candidate: string }).candidate).sort()).toEqual(['w1', 'w2']);
    for (const e of expired) DETAIL_SCHEMAS[e.detailType].parse(e.detail);
  });
});


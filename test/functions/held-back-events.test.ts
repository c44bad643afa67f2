/**
 * The events of a stream record held behind a failed record of its row (a review, 2026-12-07,
 * eleventh): the record was reported failed without running, so without publishing its events, and
 * the candidate stream's source gives a batch up after 3 retries (lib/wiring.ts): a row joined,
 * collected and joined again behind a join whose reconcile kept failing lost its Candidate Expired
 * and its second Candidate Joined. Now a held record publishes its events (same ids as its run's),
 * in its row's order, after the failed record's own; only its work waits.
 */
import type { DynamoDBBatchResponse, DynamoDBRecord } from 'aws-lambda';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { makeHandler as candidateStream } from '../../functions/candidate-stream.js';
import { makeHandler as leaseStream } from '../../functions/lease-stream.js';
import type { ConclaveEvent } from '../../lib/events/schemas.js';
import type { FunctionDeps } from '../../lib/functions/core.js';
import { METRIC } from '../../lib/functions/metrics.js';
import { lambdaContext } from '../../lib/local/runtime.js';
import { OLDEST_EMULATION_VERSION } from '../../lib/schemas/strategy.js';
import { publishingDeps } from '../events/publishing-deps.js';
import { singleMetricNames, streamRecords, testTables, type TestTables } from '../support.js';

let t: TestTables;
beforeAll(async () => void (t = await testTables('held-back')));
afterAll(() => t.drop());

const throttled = () => Object.assign(new Error('Rate exceeded'), { name: 'ThrottlingException' });
const ids = (events: readonly ConclaveEvent[]) => events.map((e) => e.detail.id);
const failedIds = (r: DynamoDBBatchResponse) => r.batchItemFailures.map((f) => f.itemIdentifier);
const seq = (r: DynamoDBRecord) => BigInt(r.dynamodb!.SequenceNumber!);

/** Candidate `name` of `lease` joined (or joined again) at `now`. */
async function join(d: FunctionDeps, lease: string, name: string, now: number) {
  const c = d.coordinator.candidates;
  await c.write(await c.read(lease, name), { set: { binaryVersion: '1.30.0', emulationVersion: '1.30.0', preferredStrategies: [OLDEST_EMULATION_VERSION], renewTime: now, createdAt: now, identity: `${name}-1` } });
}

/**
 * The candidates' records of this shape, from `before`: w of `bad` joins, v of `ok` joins, w is
 * collected (its mark, then its delete: Candidate Expired) and joins again; the reconciles of `bad`
 * fail (its partition throttled) while `failing()`.
 */
async function collectedAndJoinedAgain(d: FunctionDeps, bad: string, failing: () => boolean) {
  const c = d.coordinator;
  const now = c.clock.now();
  const before = (await streamRecords(t.client, t.names.candidates)).length;
  await join(d, bad, 'w', now);
  await join(d, `${bad}-ok`, 'v', now);
  await c.candidates.collect(await c.candidates.read(bad, 'w'), now + 3_600_000);
  await join(d, bad, 'w', now);
  const recs = (await streamRecords(t.client, t.names.candidates)).slice(before);
  expect(recs.map((r) => `${r.eventName} ${r.dynamodb!.Keys!['leaseName']!.S}`)).toEqual([`INSERT ${bad}`, `INSERT ${bad}-ok`, `MODIFY ${bad}`, `REMOVE ${bad}`, `INSERT ${bad}`]);
  const list = c.candidates.list.bind(c.candidates);
  c.candidates.list = async (lease, ...rest) => {
    if (lease === bad && failing()) throw throttled();
    return list(lease, ...rest);
  };
  return recs;
}

it("candidate stream: a row's records held behind its failing join publish their events, in order, before the source's 3 retries give the batch up", async () => {
  const { d, events } = publishingDeps(t, Date.now());
  const recs = await collectedAndJoinedAgain(d, 'bad', () => true);
  const [joined, other, , expired, joinedAgain] = recs.map((r) => r.eventID!);
  const want = [`${joined}:candidate-joined`, `${other}:candidate-joined`, `${expired}:candidate-expired`, `${joinedAgain}:candidate-joined`];
  const handler = candidateStream(d);
  let batch = recs;
  // the first delivery and the source's 3 retries (lib/wiring.ts), each from the earliest failure
  for (let attempt = 0; attempt < 4; attempt++) {
    const out = await handler({ Records: batch }, lambdaContext('candidateStream'));
    expect(failedIds(out)).toEqual([recs[0]!, ...recs.slice(2)].map((r) => r.dynamodb!.SequenceNumber));
    // before the fix: only the failing join's and the other lease's, and so after the last retry
    expect(ids(events)).toEqual(want);
    batch = batch.filter((r) => seq(r) >= BigInt(out.batchItemFailures[0]!.itemIdentifier));
  }
  // then Lambda gives the batch up: its position to the dead-letter queue; every change's event is out, once by this instance
});

it("candidate stream: a held record's events are published again by its run on another instance, with the same ids", async () => {
  const { d, events } = publishingDeps(t, Date.now());
  let failing = true;
  const recs = await collectedAndJoinedAgain(d, 'elsewhere', () => failing);
  await candidateStream(d)({ Records: recs }, lambdaContext('candidateStream'));
  const first = ids(events);
  expect(first).toHaveLength(4);
  failing = false;
  // another instance: its own publisher (publishedIds is per publisher)
  const again: ConclaveEvent[] = [];
  const other = candidateStream({ ...d, publish: async (list) => void again.push(...list) });
  expect(failedIds(await other({ Records: [recs[0]!, ...recs.slice(2)] }, lambdaContext('candidateStream')))).toEqual([]);
  expect(ids(again)).toEqual(first.filter((id) => !id.startsWith(recs[1]!.eventID!)));
});

it("candidate stream: a failing record whose events could be neither published nor deferred holds its row's events too, not to go out before its own", async () => {
  const { d } = publishingDeps(t, Date.now());
  const recs = await collectedAndJoinedAgain(d, 'unsent', () => true);
  const deferred: string[][] = [];
  let schedules = 0;
  const down: FunctionDeps = {
    ...d,
    publish: async () => {
      throw new Error('EventBridge unreachable');
    },
    // the timer queue refuses the failing join's events, then takes the others'
    timer: {
      schedule: async (m) => {
        if (schedules++ === 0) throw throttled();
        if ('republish' in m) deferred.push(ids(m.republish));
      },
    },
  };
  const out = await candidateStream(down)({ Records: recs }, lambdaContext('candidateStream'));
  expect(failedIds(out)).toEqual([recs[0]!, ...recs.slice(2)].map((r) => r.dynamodb!.SequenceNumber));
  // the other lease's join is deferred; the held records' events are not (before the guard they were, ahead of the failed join's)
  expect(deferred).toEqual([[`${recs[1]!.eventID}:candidate-joined`]]);
});

it("lease stream: a take held behind its lease's failing release publishes its Leader Elected and Leader Changed, counted by the delivery that runs it", async () => {
  const { d, events } = publishingDeps(t, Date.now());
  const c = d.coordinator;
  const now = c.clock.now();
  const hold = async (lease: string, holder: string, token: number) =>
    c.leases.write(await c.leases.read(lease), { set: { holderIdentity: holder, holderInstance: `${holder}-1`, leaseDurationSeconds: 15, acquireTime: now, renewTime: now, leaseTransitions: token - 1, fencingToken: token, electedBy: 'coordinator' } });
  await hold('held', 'a', 1);
  const before = (await streamRecords(t.client, t.names.leases)).length;
  await c.leases.write(await c.leases.read('held'), { set: { renewTime: now, lastHolderIdentity: 'a' }, remove: ['holderIdentity', 'holderInstance'] }); // released: its reconcile fails
  await hold('held', 'b', 2); // the next term, held behind it
  const recs = (await streamRecords(t.client, t.names.leases)).slice(before);
  const list = c.candidates.list.bind(c.candidates);
  let failing = true;
  c.candidates.list = async (lease, ...rest) => {
    if (lease === 'held' && failing) throw throttled();
    return list(lease, ...rest);
  };
  const counted = singleMetricNames(d.metrics);
  const handler = leaseStream(d);
  const want = [`${recs[0]!.eventID}:lease-released`, `${recs[1]!.eventID}:leader-elected`, `${recs[1]!.eventID}:leader-changed`];
  for (let delivery = 0; delivery < 3; delivery++) {
    await expect(handler({ Records: recs }, lambdaContext('leaseStream'))).rejects.toThrow(/All records failed/); // both reported failed
    // before the fix: the release's alone, until the release succeeded (the lease stream retries without bound, for up to 12 h)
    expect(ids(events)).toEqual(want);
  }
  expect(counted.filter((n) => n === METRIC.leaderChanges)).toHaveLength(0);
  failing = false;
  expect(failedIds(await handler({ Records: recs }, lambdaContext('leaseStream')))).toEqual([]);
  expect(ids(events)).toEqual(want);
  expect(counted.filter((n) => n === METRIC.leaderChanges)).toHaveLength(1);
});

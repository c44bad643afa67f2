/**
 * A stream batch with a failing record (a review, 2026-12-07): the records behind it were not run,
 * whatever row they changed, so the candidate stream, whose source gives a batch up after 3 retries
 * (lib/wiring.ts), lost the events of every record behind a failing one (Candidate Joined,
 * Candidate Expired). Now only the records of the failing record's row wait (in order: a row's
 * later change is never handled before its earlier one); the others run, and run again when Lambda
 * resumes from the earliest failure, with the same event ids.
 */
import type { DynamoDBBatchResponse, DynamoDBRecord, DynamoDBStreamEvent } from 'aws-lambda';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeHandler as candidateStream } from '../../functions/candidate-stream.js';
import { makeHandler as leaseStream } from '../../functions/lease-stream.js';
import { manualClock } from '../../lib/clock.js';
import type { ConclaveEvent } from '../../lib/events/schemas.js';
import type { FunctionDeps } from '../../lib/functions/core.js';
import { observability } from '../../lib/functions/env.js';
import { streamBatchHandler } from '../../lib/functions/lambda.js';
import { METRIC } from '../../lib/functions/metrics.js';
import { lambdaContext } from '../../lib/local/runtime.js';
import { OLDEST_EMULATION_VERSION } from '../../lib/schemas/strategy.js';
import { publishingDeps } from '../events/publishing-deps.js';
import { singleMetricNames, streamRecords, testTables, type TestTables } from '../support.js';

let t: TestTables;
beforeAll(async () => void (t = await testTables('failed-row')));
afterAll(() => t.drop());

const throttled = () => Object.assign(new Error('Rate exceeded'), { name: 'ThrottlingException' });
const failedIds = (r: DynamoDBBatchResponse) => r.batchItemFailures.map((f) => f.itemIdentifier);
const seq = (r: DynamoDBRecord) => r.dynamodb!.SequenceNumber!;
const ids = (events: ConclaveEvent[]) => events.map((e) => e.detail.id);

describe('a failed stream record holds only its own row’s records behind it', () => {
  /** A record of row `key` (no keys: undefined), sequence number `n`. */
  const rec = (n: number, key: string | undefined): DynamoDBRecord => ({ eventID: `e${n}`, eventName: 'MODIFY', dynamodb: { ...(key === undefined ? {} : { Keys: { leaseName: { S: 'l' }, name: { S: key } } }), SequenceNumber: String(n) } });

  /** The generic handler: each record parsed as itself, the ones named in `failing` failing; what ran, and the answer. */
  async function run(records: DynamoDBRecord[], failing: string[]) {
    const ran: string[] = [];
    const held: string[] = [];
    const deps = { coordinator: { clock: manualClock(0) }, ...observability('test', 'SILENT') } as unknown as FunctionDeps;
    const handler = streamBatchHandler(deps, 'candidateStream', (r) => r, () => ({
      record: async (r) => {
        if ((r as { held?: true }).held) return void held.push(r.eventID!); // held behind its row's failed record: its events only (held-back-events.test.ts)
        ran.push(r.eventID!);
        if (failing.includes(r.eventID!)) throw throttled();
      },
    }));
    const answer = await handler({ Records: records } as DynamoDBStreamEvent, lambdaContext('candidateStream')).catch((e: unknown) => e as Error);
    return { ran, held, answer };
  }

  it('the later records of other rows run; the later ones of the failed row are not run, and reported failed, the earliest failure first', async () => {
    const { ran, held, answer } = await run([rec(1, 'a'), rec(2, 'b'), rec(3, 'a'), rec(4, 'c'), rec(5, 'b')], ['e1']);
    // before the fix: ['e1'] (nothing behind a failure ran), and every record reported failed
    expect(ran).toEqual(['e1', 'e2', 'e4', 'e5']);
    expect(held).toEqual(['e3']);
    expect(failedIds(answer as DynamoDBBatchResponse)).toEqual(['1', '3']);
  });

  it('a second row failing holds its own records too; a record with no keys is every row’s', async () => {
    const two = await run([rec(1, 'a'), rec(2, 'b'), rec(3, 'b'), rec(4, 'c'), rec(5, 'a')], ['e1', 'e2']);
    expect(two.ran).toEqual(['e1', 'e2', 'e4']);
    expect(two.held).toEqual(['e3', 'e5']);
    expect(failedIds(two.answer as DynamoDBBatchResponse)).toEqual(['1', '2', '3', '5']);
    // a keyless record failed: nothing behind it runs; a keyless record behind a failure waits, and so does every record after it
    const keyless = await run([rec(1, undefined), rec(2, 'b')], ['e1']);
    expect(keyless.ran).toEqual(['e1']);
    const behind = await run([rec(1, 'a'), rec(2, 'b'), rec(3, undefined), rec(4, 'c')], ['e1']);
    expect(behind.ran).toEqual(['e1', 'e2']);
    expect(behind.held).toEqual(['e3', 'e4']);
    expect(failedIds(behind.answer as DynamoDBBatchResponse)).toEqual(['1', '3', '4']);
  });

  it('candidate stream: a join whose reconcile fails no longer keeps the joins behind it from publishing; its row’s next change waits', async () => {
    const { d, events } = publishingDeps(t, Date.now());
    const c = d.coordinator;
    const now = c.clock.now();
    const join = async (lease: string, name: string, priority?: number) =>
      c.candidates.write(await c.candidates.read(lease, name), { set: { binaryVersion: '1.30.0', emulationVersion: '1.30.0', preferredStrategies: [OLDEST_EMULATION_VERSION], renewTime: now, createdAt: now, identity: `${name}-1`, ...(priority ? { priority } : {}) } });
    await join('bad', 'w');
    for (let i = 0; i < 4; i++) await join(`ok-${i}`, 'w');
    await join('bad', 'w', 5); // the failing row's next change: a new priority
    const recs = await streamRecords(t.client, t.names.candidates);
    expect(recs.map((r) => r.dynamodb!.Keys!['leaseName']!.S)).toEqual(['bad', 'ok-0', 'ok-1', 'ok-2', 'ok-3', 'bad']);
    const list = c.candidates.list.bind(c.candidates);
    let failing = true;
    c.candidates.list = async (lease, ...rest) => {
      if (lease === 'bad' && failing) throw throttled();
      return list(lease, ...rest);
    };
    const handler = candidateStream(d);
    const first = await handler({ Records: recs }, lambdaContext('candidateStream'));
    // before the fix: every record failed (FullBatchFailureError), and only the failing join's event went out
    expect(failedIds(first)).toEqual([seq(recs[0]!), seq(recs[5]!)]);
    const joined = recs.slice(0, 5).map((r) => `${r.eventID}:candidate-joined`);
    expect(ids(events)).toEqual(joined);
    // Lambda resumes from the earliest failure: the fault gone, every record from it runs (the joins of other rows again, published once by this instance)
    failing = false;
    expect(failedIds(await handler({ Records: recs }, lambdaContext('candidateStream')))).toEqual([]);
    expect(ids(events)).toEqual(joined);
  });

  it("lease stream: a failing release holds its lease's take behind it, not the other leases' records", async () => {
    const { d, events } = publishingDeps(t, Date.now());
    const c = d.coordinator;
    const now = c.clock.now();
    const hold = async (lease: string, holder: string, token: number) =>
      c.leases.write(await c.leases.read(lease), { set: { holderIdentity: holder, holderInstance: `${holder}-1`, leaseDurationSeconds: 15, acquireTime: now, renewTime: now, leaseTransitions: token - 1, fencingToken: token, electedBy: 'coordinator' } });
    await hold('held', 'a', 1);
    await hold('other', 'x', 1);
    const before = (await streamRecords(t.client, t.names.leases)).length;
    await c.leases.write(await c.leases.read('held'), { set: { renewTime: now, lastHolderIdentity: 'a' }, remove: ['holderIdentity', 'holderInstance'] }); // released
    await hold('held', 'b', 2); // the next term
    await c.leases.write(await c.leases.read('other'), { set: { renewTime: now, lastHolderIdentity: 'x' }, remove: ['holderIdentity', 'holderInstance'] }); // released
    const recs = (await streamRecords(t.client, t.names.leases)).slice(before);
    expect(recs.map((r) => r.dynamodb!.Keys!['name']!.S)).toEqual(['held', 'held', 'other']);
    const list = c.candidates.list.bind(c.candidates);
    let failing = true;
    c.candidates.list = async (lease, ...rest) => {
      if (lease === 'held' && failing) throw throttled();
      return list(lease, ...rest);
    };
    const handler = leaseStream(d);
    const first = await handler({ Records: recs }, lambdaContext('leaseStream'));
    expect(failedIds(first)).toEqual([seq(recs[0]!), seq(recs[1]!)]);
    // the failing release's events (published before it failed), the take's (held behind it: its events
    // published, its work not run; held-back-events.test.ts), the other lease's release
    const taken = [`${recs[1]!.eventID}:leader-elected`, `${recs[1]!.eventID}:leader-changed`];
    expect(ids(events)).toEqual([`${recs[0]!.eventID}:lease-released`, ...taken, `${recs[2]!.eventID}:lease-released`]);
    failing = false;
    expect(failedIds(await handler({ Records: recs }, lambdaContext('leaseStream')))).toEqual([]);
    expect(ids(events)).toHaveLength(4); // the take's run publishes none again on this instance
  });

  it("lease stream: another lease's new leader behind a failing record runs on each retry; its Leader Changed is counted once by the instance", async () => {
    const { d, events } = publishingDeps(t, Date.now());
    const c = d.coordinator;
    const now = c.clock.now();
    const hold = async (lease: string, holder: string, token: number) =>
      c.leases.write(await c.leases.read(lease), { set: { holderIdentity: holder, holderInstance: `${holder}-1`, leaseDurationSeconds: 15, acquireTime: now, renewTime: now, leaseTransitions: token - 1, fencingToken: token, electedBy: 'coordinator' } });
    await hold('stuck', 'a', 1);
    await hold('changed', 'x', 1);
    const before = (await streamRecords(t.client, t.names.leases)).length;
    await c.leases.write(await c.leases.read('stuck'), { set: { renewTime: now, lastHolderIdentity: 'a' }, remove: ['holderIdentity', 'holderInstance'] }); // released: its reconcile fails
    await hold('changed', 'y', 2); // another lease's new leader: Leader Changed
    const recs = (await streamRecords(t.client, t.names.leases)).slice(before);
    const list = c.candidates.list.bind(c.candidates);
    let failing = true;
    c.candidates.list = async (lease, ...rest) => {
      if (lease === 'stuck' && failing) throw throttled();
      return list(lease, ...rest);
    };
    const counted = singleMetricNames(d.metrics);
    const handler = leaseStream(d);
    for (let delivery = 0; delivery < 3; delivery++) expect(failedIds(await handler({ Records: recs }, lambdaContext('leaseStream')))).toEqual([seq(recs[0]!)]);
    failing = false;
    expect(failedIds(await handler({ Records: recs }, lambdaContext('leaseStream')))).toEqual([]);
    const changed = `${recs[1]!.eventID}:leader-changed`;
    expect(ids(events).filter((i) => i === changed)).toEqual([changed]);
    // before the fix: 4, one per delivery of the batch
    expect(counted.filter((n) => n === METRIC.leaderChanges)).toHaveLength(1);
  });
});

/**
 * What becomes of a stream record's EventBridge events when the record's own work keeps failing
 * (found in a review, 2026-11-30): the events are facts of the change the record carries, so they
 * reach the bus whether or not its reconcile, or its session mark, ever succeeds. Records from
 * DynamoDB Local's real streams, delivered as Lambda delivers them (the first attempt and the
 * event source's retries, lib/wiring.ts); events published with the real EventBridgeClient to the
 * local bus (lib/local/event-bus.ts). Published once on the instance that published them, however
 * often the record is retried there (a review, 2026-12-06: the lease stream retries a failing record
 * without bound, for up to 12 h, and each retry published its events again: a rule paging to chat
 * paged once per retry); again on another instance, with the same ids.
 */
import type { EventBridgeClient } from '@aws-sdk/client-eventbridge';
import type { DynamoDBRecord, DynamoDBStreamEvent } from 'aws-lambda';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { makeHandler as candidateStream } from '../../functions/candidate-stream.js';
import { makeHandler as leaseStream } from '../../functions/lease-stream.js';
import { manualClock } from '../../lib/clock.js';
import { coordinatorDeps } from '../../lib/coordinator/reconcile.js';
import { publishOrThrow } from '../../lib/events/publisher.js';
import type { FunctionDeps } from '../../lib/functions/core.js';
import { METRIC } from '../../lib/functions/metrics.js';
import { observability } from '../../lib/functions/env.js';
import { localEventBridgeClient, startLocalEventBus, type LocalBusEntry, type LocalEventBus } from '../../lib/local/event-bus.js';
import { lambdaContext } from '../../lib/local/runtime.js';
import { sessionKey } from '../../lib/schemas/identity.js';
import { OLDEST_EMULATION_VERSION } from '../../lib/schemas/strategy.js';
import { wiring } from '../../lib/wiring.js';
import { instantClock } from '../events/publishing-deps.js';
import { singleMetricNames, streamRecords, testTables, type TestTables } from '../support.js';

const BUS = 'conclave-test';
let t: TestTables;
beforeAll(async () => void (t = await testTables('event-delivery')));
afterAll(() => t.drop());

let bus: LocalEventBus | undefined;
let client: EventBridgeClient | undefined;
afterEach(async () => {
  client?.destroy();
  await bus?.stop();
  bus = undefined;
  client = undefined;
});

/** Function deps publishing to a fresh local bus, and what the bus received. */
async function withBus() {
  const delivered: LocalBusEntry[] = [];
  bus = await startLocalEventBus({ onEvent: (e) => delivered.push(e) });
  client = localEventBridgeClient(bus.endpoint, { maxAttempts: 1 });
  const c = client;
  const d: FunctionDeps = {
    coordinator: coordinatorDeps(t.client, t.names, { clock: manualClock(Date.now()), config: { ackWindowMs: 5_000 } }),
    timer: { schedule: async () => undefined },
    publish: (events) => publishOrThrow(c, BUS, events, { clock: instantClock }),
    deadLetter: async () => undefined,
    ...observability('test', 'SILENT'),
  };
  return { d, ids: () => delivered.map((e) => (e.detail as { id: string }).id) };
}

const throttled = () => Object.assign(new Error('Rate exceeded'), { name: 'ThrottlingException' });
const keyOf = (r: DynamoDBRecord) => JSON.stringify(r.dynamodb!.Keys);

/** The next candidate list of `c` throttled, the ones after it as they are. */
function throttleOnce(c: FunctionDeps['coordinator']): void {
  const list = c.candidates.list.bind(c.candidates);
  let faults = 1;
  c.candidates.list = async (l) => {
    if (faults-- > 0) throw throttled();
    return list(l);
  };
}

/**
 * Delivers `record` as Lambda does while it keeps failing: the first attempt and each of the
 * event source's retries (a batch whose every record failed throws: Powertools' FullBatchFailureError,
 * a function error to Lambda); after them Lambda sends only the record's shard position to the
 * on-failure destination (infra/triggers.ts), and the shard moves on. The lease stream's source
 * retries without bound (-1), until its function dead-letters the record 12 h after its change
 * (STUCK_RECORD_MS, test/functions/stuck-record.test.ts); four deliveries stand for those.
 */
async function deliverUntilGivenUp(handler: (e: DynamoDBStreamEvent, c: ReturnType<typeof lambdaContext>) => Promise<unknown>, fn: 'leaseStream' | 'candidateStream', record: DynamoDBRecord) {
  const retries = wiring[fn].trigger.retryAttempts;
  for (let attempt = 0; attempt <= (retries === -1 ? 3 : retries); attempt++) {
    await expect(handler({ Records: [record] }, lambdaContext(fn))).rejects.toThrow(/All records failed processing/);
  }
}

/** Lease `lease` held by a (on `session`, if given), then released: the release's stream record. */
async function released(d: FunctionDeps, lease: string, session?: string): Promise<DynamoDBRecord> {
  const c = d.coordinator;
  const now = c.clock.now();
  await c.leases.write(await c.leases.read(lease), { set: { holderIdentity: 'a', holderInstance: 'a-1', leaseDurationSeconds: 15, acquireTime: now, renewTime: now, leaseTransitions: 0, fencingToken: 1, electedBy: 'coordinator', ...(session ? { session } : {}) } });
  await c.leases.write(await c.leases.read(lease), { set: { renewTime: now, lastHolderIdentity: 'a' }, remove: ['holderIdentity', 'holderInstance', ...(session ? (['session'] as const) : [])] });
  const r = (await streamRecords(t.client, t.names.leases)).filter((x) => keyOf(x).includes(lease)).at(-1)!;
  expect(r.eventName).toBe('MODIFY');
  return r;
}

describe('a stream record whose work keeps failing', () => {
  it('lease stream: a release whose reconcile is throttled on every delivery still publishes its Lease Released (same id)', async () => {
    const { d, ids } = await withBus();
    const c = d.coordinator;
    const lease = 'released-throttled';
    const now = c.clock.now();
    await c.candidates.write(await c.candidates.read(lease, 'b'), { set: { binaryVersion: '1.30.0', emulationVersion: '1.30.0', preferredStrategies: [OLDEST_EMULATION_VERSION], renewTime: now, createdAt: now - 60_000 } });
    const record = await released(d, lease);

    c.candidates.list = async () => {
      throw throttled();
    };
    await deliverUntilGivenUp(leaseStream(d), 'leaseStream', record);
    // before the fix: nothing reached the bus, and nothing would — Lambda's on-failure record is a shard position;
    // then: once per delivery (each retry on the same instance published it again)
    expect(ids()).toEqual([`${record.eventID}:lease-released`]);
  });

  it('lease stream: a session-held term released while its session mark fails on every delivery still publishes its Lease Released', async () => {
    const { d, ids } = await withBus();
    const c = d.coordinator;
    const lease = 'released-unmarked';
    const now = c.clock.now();
    const k = sessionKey('s-unmarked');
    await c.identities.write(await c.identities.read(k.component, k.name), { set: { holderIdentity: 's-unmarked', hostname: 'h', leaseDurationSeconds: 15, acquireTime: now, renewTime: now } });
    const record = await released(d, lease, 's-unmarked');

    c.identities.markTermEnded = async () => {
      throw throttled();
    };
    await deliverUntilGivenUp(leaseStream(d), 'leaseStream', record);
    expect(ids()).toEqual([`${record.eventID}:lease-released`]);
  });

  it('candidate stream: a join whose reconcile is throttled on every delivery still publishes its Candidate Joined', async () => {
    const { d, ids } = await withBus();
    const c = d.coordinator;
    const lease = 'joined-throttled';
    const now = c.clock.now();
    await c.candidates.write(await c.candidates.read(lease, 'j'), { set: { binaryVersion: '1.30.0', emulationVersion: '1.30.0', preferredStrategies: [OLDEST_EMULATION_VERSION], renewTime: now, createdAt: now } });
    const joined = (await streamRecords(t.client, t.names.candidates)).filter((r) => keyOf(r).includes(lease)).at(-1)!;
    expect(joined.eventName).toBe('INSERT');

    c.candidates.list = async () => {
      throw throttled();
    };
    await deliverUntilGivenUp(candidateStream(d), 'candidateStream', joined);
    expect(ids()).toEqual([`${joined.eventID}:candidate-joined`]);
  });

  it('lease stream: a release and the next term in one batch, the release failing once: on the bus the release comes before the new leader, and each once by id', async () => {
    const { d, ids } = await withBus();
    const c = d.coordinator;
    const lease = 'release-then-take';
    const now = c.clock.now();
    const release = await released(d, lease);
    await c.leases.write(await c.leases.read(lease), { set: { holderIdentity: 'b', holderInstance: 'b-1', leaseDurationSeconds: 15, acquireTime: now, renewTime: now, leaseTransitions: 1, fencingToken: 2, electedBy: 'self' } });
    const take = (await streamRecords(t.client, t.names.leases)).filter((r) => keyOf(r).includes(lease)).at(-1)!;
    throttleOnce(c);
    const handler = leaseStream(d);
    // the release fails, the take behind it is not run: the batch fails whole, and comes again
    await expect(handler({ Records: [release, take] }, lambdaContext('leaseStream'))).rejects.toThrow(/All records failed processing/);
    expect((await handler({ Records: [release, take] }, lambdaContext('leaseStream'))).batchItemFailures).toEqual([]);
    // the release's Lease Released by its failing delivery, not again by the one that succeeds; then the take's events
    const gone = `${release.eventID}:lease-released`;
    expect(ids()).toEqual([gone, `${take.eventID}:leader-elected`, `${take.eventID}:leader-changed`]);
  });

  it('lease stream: a new leader whose reconcile fails once: Leader Changed is published once (by the failing delivery), its metric counted once (by the one that succeeds)', async () => {
    const { d, ids } = await withBus();
    const c = d.coordinator;
    const lease = 'changed-counted-once';
    const now = c.clock.now();
    await released(d, lease);
    await c.leases.write(await c.leases.read(lease), { set: { holderIdentity: 'b', holderInstance: 'b-1', leaseDurationSeconds: 15, acquireTime: now, renewTime: now, leaseTransitions: 1, fencingToken: 2, electedBy: 'self' } });
    const take = (await streamRecords(t.client, t.names.leases)).filter((r) => keyOf(r).includes(lease)).at(-1)!;
    const counted = singleMetricNames(d.metrics);
    throttleOnce(c);
    const handler = leaseStream(d);
    await expect(handler({ Records: [take] }, lambdaContext('leaseStream'))).rejects.toThrow(/All records failed processing/);
    expect((await handler({ Records: [take] }, lambdaContext('leaseStream'))).batchItemFailures).toEqual([]);
    const changed = `${take.eventID}:leader-changed`;
    expect(ids().filter((i) => i === changed)).toEqual([changed]);
    // before the fix: 2, one per delivery
    expect(counted.filter((n) => n === METRIC.leaderChanges)).toHaveLength(1);
  });

  it('lease stream: a release failing on every delivery is published once by the instance that published it, however often retried there; another instance (a cold start) publishes it again, with the same id', async () => {
    const { d, ids } = await withBus();
    const c = d.coordinator;
    const record = await released(d, 'released-retried');
    c.candidates.list = async () => {
      throw throttled();
    };
    const handler = leaseStream(d);
    for (let delivery = 0; delivery < 10; delivery++) await expect(handler({ Records: [record] }, lambdaContext('leaseStream'))).rejects.toThrow(/All records failed processing/);
    const gone = `${record.eventID}:lease-released`;
    // before: ten, one per delivery
    expect(ids()).toEqual([gone]);
    // another instance: its own deps, built at its cold start (depsFromEnv), its own publisher
    const other: FunctionDeps = { ...d, publish: (events) => d.publish(events) };
    for (let delivery = 0; delivery < 2; delivery++) await expect(leaseStream(other)({ Records: [record] }, lambdaContext('leaseStream'))).rejects.toThrow(/All records failed processing/);
    expect(ids()).toEqual([gone, gone]);
  });

  it('lease stream: events neither published nor deferred at a failing delivery are published by the next one on the same instance', async () => {
    const { d, ids } = await withBus();
    const c = d.coordinator;
    const record = await released(d, 'released-unpublished');
    c.candidates.list = async () => {
      throw throttled();
    };
    let down = true;
    const flaky: FunctionDeps = {
      ...d,
      publish: (events) => (down ? Promise.reject(new Error('EventBridge unreachable')) : d.publish(events)),
      timer: {
        schedule: async () => {
          if (down) throw new Error('SQS unreachable');
        },
      },
    };
    const handler = leaseStream(flaky);
    await expect(handler({ Records: [record] }, lambdaContext('leaseStream'))).rejects.toThrow(/All records failed processing/);
    expect(ids()).toEqual([]);
    down = false;
    for (let delivery = 0; delivery < 2; delivery++) await expect(handler({ Records: [record] }, lambdaContext('leaseStream'))).rejects.toThrow(/All records failed processing/);
    expect(ids()).toEqual([`${record.eventID}:lease-released`]);
  });
});

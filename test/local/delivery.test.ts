/**
 * Delivery on the local runtime: a poison record on a stream goes to the dead-letter file at once,
 * with its content, while the records behind it are handled; a transient fault is retried; events
 * published again after a lost response carry the same ids, so a consumer that drops repeats sees
 * each change once.
 */
import { randomUUID } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PutItemCommand } from '@aws-sdk/client-dynamodb';
import { afterEach, describe, expect, inject, it } from 'vitest';
import type { DynamoDBStreamEvent } from 'aws-lambda';
import { PublishError } from '../../lib/events/publisher.js';
import type { FunctionDeps } from '../../lib/functions/core.js';
import { startLocalRuntime, type LocalRuntime, type LocalRuntimeOptions } from '../../lib/local/runtime.js';
import type { DeadLetter } from '../../lib/local/stream-poller.js';
import { sessionKey } from '../../lib/schemas/identity.js';
import { wiring } from '../../lib/wiring.js';
import { leaderNow, Log, STEADY, startElector, waitFor, type RunningElector } from '../sdk/harness.js';

const open: { rt: LocalRuntime; electors: RunningElector[] }[] = [];
afterEach(async () => {
  for (const { rt, electors } of open.splice(0)) {
    await Promise.all(electors.map((e) => e.stop()));
    await rt.stop();
  }
});

async function runtime(extra: Partial<LocalRuntimeOptions> = {}) {
  const rt = await startLocalRuntime({
    endpoint: inject('ddbEndpoint'),
    prefix: `dl-${randomUUID().slice(0, 8)}`,
    dir: mkdtempSync(join(tmpdir(), 'conclave-delivery-')),
    tickEveryMs: 600_000,
    logLevel: 'SILENT',
    ...extra,
  });
  const env = { rt, electors: [] as RunningElector[] };
  open.push(env);
  return env;
}

describe('local runtime delivery', () => {
  it('a session-held term ended by someone else is marked on its session even when the mark fails more often than Lambda used to retry (3): none given up', async () => {
    let faults = 5; // the first delivery and 4 retries: past the 3 after which the record, and its mark, were given up
    const { rt } = await runtime({
      decorate: (d: FunctionDeps): FunctionDeps => {
        const ids = d.coordinator.identities;
        const mark = ids.markTermEnded.bind(ids);
        ids.markTermEnded = async (...a) => {
          if (faults-- > 0) throw Object.assign(new Error('Rate of requests exceeds the allowed throughput'), { name: 'ThrottlingException' });
          return mark(...a);
        };
        return d;
      },
    });
    const co = rt.deps.coordinator;
    const now = Date.now();
    const session = 'p1';
    const key = sessionKey(session);
    await co.identities.write(await co.identities.read(key.component, key.name), { set: { holderIdentity: session, hostname: 'h', leaseDurationSeconds: 15, acquireTime: now, renewTime: now } });
    await co.leases.write(await co.leases.read('marked'), { set: { holderIdentity: 'a', holderInstance: 'a-1@p1', leaseDurationSeconds: 15, acquireTime: now, renewTime: now, leaseTransitions: 0, fencingToken: 1, electedBy: 'self', session } });
    // ended by a write its holder did not make (an operator's, the CLI's), which marks nothing itself
    await co.leases.write(await co.leases.read('marked'), { set: { lastHolderIdentity: 'a' }, remove: ['holderIdentity', 'holderInstance', 'session'] });
    const markOf = async () => (await co.identities.read(key.component, key.name)).item?.endedTerms?.['marked'];
    await waitFor('the mark, or the record given up', async () => (await markOf()) !== undefined || rt.deadLetters.some((d) => d.function === 'leaseStream'));
    expect(rt.deadLetters).toEqual([]);
    expect(await markOf()).toBe(1);
    expect(faults).toBeLessThan(0);
  });

  it('a poison lease record is dead-lettered at its first delivery, with the record itself; the change behind it is handled', async () => {
    const deliveries = new Map<string, number>();
    const { rt } = await runtime({
      // counts how often each lease record reaches the function
      intercept: (name, event, invoke) => {
        if (name === 'leaseStream') for (const r of (event as DynamoDBStreamEvent).Records) deliveries.set(r.eventID!, (deliveries.get(r.eventID!) ?? 0) + 1);
        return invoke(event);
      },
    });
    // A row no Conclave component would write: its fencing token is a string.
    await rt.client.send(new PutItemCommand({ TableName: rt.tables.leases, Item: { name: { S: 'broken' }, fencingToken: { S: 'seven' }, revision: { N: '1' } } }));
    // Then a good change on the same shard: a worker takes a new lease directly (NoCoordination).
    const leases = rt.deps.coordinator.leases;
    const now = Date.now();
    await leases.write(await leases.read('fine'), { set: { holderIdentity: 'x', leaseDurationSeconds: 15, acquireTime: now, renewTime: now, leaseTransitions: 0, fencingToken: 1, electedBy: 'self' } });

    const dead = await waitFor('the dead letter', () => rt.deadLetters.find((d) => d.function === 'leaseStream'));
    // The good record behind it was handled: its Leader Elected event went out.
    const elected = await waitFor('the good record handled', () => rt.events.find((e) => e.detailType === 'Leader Elected' && e.detail.lease === 'fine'));
    expect(elected.detail).toMatchObject({ holder: 'x', fencingToken: 1, electedBy: 'self' });

    expect(dead.reason).toMatch(/fencingToken/);
    expect(dead.records).toHaveLength(1);
    const poison = dead.records[0]!;
    // the record itself, not only its position (the stream trims it after 24 h)
    expect(poison.record).toMatchObject({ eventName: 'INSERT', dynamodb: { NewImage: { name: { S: 'broken' }, fencingToken: { S: 'seven' } } } });
    expect(deliveries.get(poison.eventID!)).toBe(1); // no retry: it cannot succeed on one
    const file = readFileSync(rt.deadLetterFile, 'utf8').trim().split('\n').map((l) => JSON.parse(l) as DeadLetter);
    expect(file).toEqual([expect.objectContaining({ function: 'leaseStream', records: [expect.objectContaining({ eventID: poison.eventID, record: poison.record })] })]);
    expect(rt.deadLetters).toHaveLength(1);
  });

  it('the dead-letter and events files unwritable (a full disk, say): each line is a process warning naming the file, the runtime goes on, and each event is kept once (a dead letter crashed the process; an event was published again, kept once more each time; a review, 2026-12-05)', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'conclave-delivery-'));
    mkdirSync(join(dir, 'dead-letters.jsonl')); // a folder where the file goes: every append fails (EISDIR)
    const warnings: Error[] = [];
    const onWarning = (w: Error) => void warnings.push(w);
    process.on('warning', onWarning);
    try {
      const { rt } = await runtime({ dir });
      // the events file made a folder too, under the running runtime
      rmSync(rt.eventsFile);
      mkdirSync(rt.eventsFile);
      await rt.client.send(new PutItemCommand({ TableName: rt.tables.leases, Item: { name: { S: 'broken' }, fencingToken: { S: 'seven' }, revision: { N: '1' } } }));
      const leases = rt.deps.coordinator.leases;
      const now = Date.now();
      await leases.write(await leases.read('fine'), { set: { holderIdentity: 'x', leaseDurationSeconds: 15, acquireTime: now, renewTime: now, leaseTransitions: 0, fencingToken: 1, electedBy: 'self' } });
      await waitFor('the dead letter', () => rt.deadLetters.some((d) => d.function === 'leaseStream'));
      const elected = await waitFor('the good record handled', () => rt.events.find((e) => e.detailType === 'Leader Elected' && e.detail.lease === 'fine'));
      await waitFor('both told', () => warnings.some((w) => w.message.includes('a dead letter')) && warnings.some((w) => w.message.includes(elected.detail.id)));
      expect(warnings.find((w) => w.message.includes('a dead letter'))!.message).toMatch(new RegExp(`^local mode could not write a dead letter to ${rt.deadLetterFile} \\(EISDIR.*\\); the line it would have written: \\{"function":"leaseStream"`));
      expect(warnings.find((w) => w.message.includes(elected.detail.id))!.message).toMatch(new RegExp(`^local mode could not write an event to ${rt.eventsFile} \\(EISDIR`));
      expect(rt.events.filter((e) => e.detail.id === elected.detail.id)).toHaveLength(1);
    } finally {
      process.off('warning', onWarning);
    }
  });

  it('a transient fault (DynamoDB throttling) is retried through batch item failures, not dead-lettered', async () => {
    let throttled = 0;
    const deliveries: string[] = [];
    const { rt } = await runtime({
      // the longest ack window: a's row, renewed as the test writes it, counts as an answer for the
      // whole of it, so the election asks nobody (a ping would write the row: a second record) and
      // no busy machine delays the retries past it. (Before: the 5 s default: a stall or a slow
      // DynamoDB Local there pinged a, which no worker answers, and the election failed: hung)
      config: { ackWindowMs: 60_000 },
      intercept: (name, event, invoke) => {
        if (name === 'candidateStream') deliveries.push(...(event as DynamoDBStreamEvent).Records.map((r) => r.eventID!));
        return invoke(event);
      },
      decorate: (d: FunctionDeps): FunctionDeps => {
        const candidates = Object.create(d.coordinator.candidates) as typeof d.coordinator.candidates;
        candidates.list = async (lease) => {
          if (lease === 'flaky' && throttled++ === 0) throw Object.assign(new Error('Throughput exceeds the current capacity of your table'), { name: 'ProvisionedThroughputExceededException' });
          return d.coordinator.candidates.list(lease);
        };
        return { ...d, coordinator: { ...d.coordinator, candidates } };
      },
    });
    const now = Date.now();
    const c = rt.deps.coordinator.candidates;
    await c.write(await c.read('flaky', 'a'), { set: { binaryVersion: '1.30.0', emulationVersion: '1.30.0', preferredStrategies: ['OldestEmulationVersion'], renewTime: now, createdAt: now } });
    await waitFor('elected after the retry', async () => (await rt.deps.coordinator.leases.read('flaky')).item?.holderIdentity === 'a');
    expect(throttled).toBeGreaterThanOrEqual(2);
    expect(deliveries.length).toBeGreaterThanOrEqual(2); // the same record, delivered again
    expect(new Set(deliveries).size).toBe(1);
    expect(rt.deadLetters).toEqual([]);
  });

  it('an EventBridge outage does not stall elections; once PutEvents works again every event arrives, with its original id', async () => {
    let outage = true;
    const attempted = new Map<string, unknown>(); // id → detail, as first handed to the publisher
    const { rt, electors } = await runtime({
      config: { ackWindowMs: 1_000 },
      // PutEvents fails outright (every entry) while the outage lasts: the bus is unreachable
      decorate: (d: FunctionDeps): FunctionDeps => ({
        ...d,
        publish: async (events) => {
          for (const e of events) if (!attempted.has(e.detail.id)) attempted.set(e.detail.id, e.detail);
          if (outage) throw new PublishError(events.map((event) => ({ event, errorCode: 'ServiceUnavailable', errorMessage: 'EventBridge is unavailable' })), 0);
          await d.publish(events);
        },
      }),
    });
    const log = new Log();
    const t = { client: rt.client, names: rt.tables, drop: async () => undefined };
    // no fallback within the test: whoever leads was elected by the coordinator, from the streams.
    // STEADY: a term outlives a busy machine's stall, so the leader picked below still leads when it stops.
    for (const id of ['a', 'b', 'c']) electors.push(startElector(t, log, id, { leaseName: 'outage', ...STEADY, fallbackAfterMs: 600_000 }));
    const read = async () => (await rt.deps.coordinator.leases.read('outage')).item;
    const first = await leaderNow(electors, read);
    expect(first.row.electedBy).toBe('coordinator'); // from the candidates' stream
    // and a graceful hand-off, still during the outage: the leader hands the lease to the successor
    // the coordinator named (or, with none named yet, releases it and the coordinator elects)
    await first.leader.stop();
    const id = first.leader.elector.options.identity;
    expect(log.of('stopped', id).at(-1)).toMatchObject({ reason: 'cancelled', token: first.token }); // it stopped leading that term by the stop
    await waitFor('a second leader during the outage', () => electors.some((e) => e !== first.leader && e.elector.isLeader()));
    expect(['coordinator', 'successor']).toContain((await rt.deps.coordinator.leases.read('outage')).item!.electedBy);
    expect(rt.events).toEqual([]); // nothing got through
    expect(attempted.size).toBeGreaterThan(0);

    outage = false;
    await waitFor('every event, once PutEvents works again', () => [...attempted.keys()].every((id) => rt.events.some((e) => e.detail.id === id)));
    for (const [id, detail] of attempted) expect(rt.events.find((e) => e.detail.id === id)!.detail).toEqual(detail);
    const kinds = new Set(rt.events.map((e) => e.detailType));
    for (const k of ['Candidate Joined', 'Leader Elected', 'Leader Changed'] as const) expect(kinds, k).toContain(k);
    expect(rt.deadLetters).toEqual([]);
  });

  it('publishes answered by a lost response are retried: a consumer dropping duplicate ids sees one Leader Changed per holder change', async () => {
    let lost = 0;
    const seen = new Set<string>();
    const { rt, electors } = await runtime({
      config: { ackWindowMs: 1_000 },
      // The first publish of every set of events "times out" after EventBridge took it: the events
      // are published again, with the same ids.
      decorate: (d: FunctionDeps): FunctionDeps => ({
        ...d,
        publish: async (events) => {
          await d.publish(events);
          const key = events.map((e) => e.detail.id).join();
          if (!seen.has(key)) {
            seen.add(key);
            lost++;
            throw new Error('socket hang up (after EventBridge accepted the entries)');
          }
        },
      }),
    });
    const log = new Log();
    const t = { client: rt.client, names: rt.tables, drop: async () => undefined };
    // STEADY: a term outlives a busy machine's stall, so the leader picked at a hand-off still leads when it stops
    for (const id of ['a', 'b', 'c']) electors.push(startElector(t, log, id, { leaseName: 'ingest', ...STEADY }));
    const read = async () => (await rt.deps.coordinator.leases.read('ingest')).item;
    // Two graceful hand-offs: two holder changes. Each leader is picked as it leads, and stops in that term.
    for (let n = 1; n <= 2; n++) {
      const { leader, token } = await leaderNow(electors, read);
      await leader.stop();
      expect(log.of('stopped', leader.elector.options.identity).at(-1), `hand-off ${n}`).toMatchObject({ reason: 'cancelled', token });
      await waitFor(`holder change ${n}`, () => electors.some((e) => e !== leader && e.elector.isLeader()));
    }
    const starts = log.of('started').map((s) => s.who);
    const changes = starts.flatMap((w, i) => (i > 0 && w !== starts[i - 1] ? [[starts[i - 1], w]] : []));
    expect(changes.length, JSON.stringify(starts)).toBeGreaterThanOrEqual(2); // the two hand-offs (and any other change a busy machine made)
    const leaderChanged = () => rt.events.filter((e) => e.detailType === 'Leader Changed');
    await waitFor('the events of every change, delivered twice each', () => leaderChanged().length >= 2 * changes.length);

    const unique = new Map(leaderChanged().map((e) => [e.detail.id, e.detail as { previousHolder: string; holder: string; fencingToken: number }]));
    expect(unique.size).toBe(changes.length);
    // In term order, as a consumer orders them (docs/deploy.md, "Ordering events": by fencingToken),
    // not in the order they reached the bus: a lost answer is an outage to its invocation, whose
    // later records' events go to the timer queue without a call (lib/functions/core.ts tryPublish),
    // so a hand-off batched behind a term's Leader Elected is published a second later, and the next
    // hand-off, in a batch of its own, may reach the bus first (safety.md says events come at least
    // once, and maybe after later changes' events).
    const inTermOrder = [...unique.values()].sort((x, y) => x.fencingToken - y.fencingToken);
    expect(inTermOrder.map((d) => [d.previousHolder, d.holder])).toEqual(changes);
    expect(lost).toBeGreaterThan(0);
    expect(rt.deadLetters).toEqual([]);
    expect(wiring.leaseStream.trigger.retryAttempts).not.toBe(0);
  });
});

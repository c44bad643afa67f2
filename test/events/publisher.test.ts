import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { PutEventsCommand, type EventBridgeClient } from '@aws-sdk/client-eventbridge';
import { afterEach, describe, expect, it } from 'vitest';
import { simulatedClock } from '../../lib/clock.js';
import { eventsFromCandidateChange, eventsFromLeaseChange } from '../../lib/events/derive.js';
import { envelopeOf, localEventBridgeClient, startLocalEventBus, type LocalBusEntry, type LocalEventBus, type LocalEventBusOptions } from '../../lib/local/event-bus.js';
import { MAX_CALL_BYTES, PUBLISH_TIMEOUT, PUBLISH_WITHIN_MS, PublishError, publishEvents, publishOrThrow, type FailedEvent } from '../../lib/events/publisher.js';
import { EVENT_SOURCE, parseEvent, type ConclaveEvent } from '../../lib/events/schemas.js';
import { NOW, cand, lease } from '../fixtures.js';
import { waitFor } from '../sdk/harness.js';

const BUS = 'conclave-test';

/** `n` distinct events (a candidate joining per record). */
const joined = (n: number): ConclaveEvent[] =>
  Array.from({ length: n }, (_, i) => eventsFromCandidateChange({ eventID: `rec-${i}`, at: NOW + i, newCandidate: cand(`c${i}`, '1.30.0', '1.31.0'), staleAfterMs: 30 * 60_000 })[0]!);

/** An Election Failed event whose message makes it about `bytes` big. */
const big = (i: number, bytes: number): ConclaveEvent =>
  eventsFromLeaseChange({
    eventID: `big-${i}`,
    at: NOW,
    oldLease: lease(undefined),
    newLease: lease(undefined, { revision: 13, lastElectionFailure: { at: NOW, reason: 'noLiveCandidates', message: 'x'.repeat(bytes) } }),
  })[0]!;

const idOf = (e: LocalBusEntry) => (e.detail as { id: string }).id;

let bus: LocalEventBus | undefined;
let client: EventBridgeClient | undefined;
afterEach(async () => {
  client?.destroy();
  await bus?.stop();
  bus = undefined;
  client = undefined;
});

/** A local bus recording deliveries and call sizes, and a real EventBridgeClient on it (no SDK retries). */
async function start(opts: Omit<LocalEventBusOptions, 'onEvent'> = {}) {
  const delivered: LocalBusEntry[] = [];
  const calls: number[] = [];
  bus = await startLocalEventBus({
    ...opts,
    onEvent: (e) => delivered.push(e),
    rejectCall: (entries) => {
      calls.push(entries.length);
      return opts.rejectCall?.(entries);
    },
  });
  client = localEventBridgeClient(bus.endpoint, { maxAttempts: 1 });
  const sleeps: number[] = [];
  const sleep = async (ms: number) => {
    sleeps.push(ms);
  };
  // a clock whose sleeps are recorded and take no time, and whose bound (PUBLISH_WITHIN_MS) never comes
  const clock = { sleep, setTimer: () => ({ cancel: () => undefined }) };
  return { delivered, calls, sleeps, clock, client };
}

describe('publishEvents against a real EventBridgeClient on the local bus', () => {
  it('publishes every event once, with source, detail-type, detail, time and bus', async () => {
    const t = await start();
    const events = joined(3);
    const r = await publishEvents(t.client, BUS, events, { clock: t.clock });
    expect(r).toEqual({ published: 3, failed: [] });
    expect(t.calls).toEqual([3]);
    expect(t.sleeps).toEqual([]);
    expect(t.delivered.map((d) => ({ source: d.source, detailType: d.detailType, detail: d.detail, time: d.time, bus: d.eventBusName, resources: d.resources }))).toEqual(
      events.map((e) => ({ source: EVENT_SOURCE, detailType: e.detailType, detail: e.detail, time: e.detail.time, bus: BUS, resources: [] })),
    );
    // What a consumer receives parses back into the same event.
    for (const [i, d] of t.delivered.entries()) {
      const env = envelopeOf(d);
      expect(parseEvent(env['detail-type'], env.detail)).toEqual(events[i]);
    }
  });

  it("with `resources` (the deployment's leases table ARN, for rules on a shared bus): every entry carries them", async () => {
    const t = await start();
    const arn = 'arn:aws:dynamodb:us-east-1:123456789012:table/conclave-leases';
    const events = joined(12); // two calls
    expect(await publishEvents(t.client, BUS, events, { clock: t.clock, resources: [arn] })).toEqual({ published: 12, failed: [] });
    expect(t.delivered.map((d) => d.resources)).toEqual(events.map(() => [arn]));
  });

  it('nothing to publish: no call', async () => {
    const t = await start();
    expect(await publishEvents(t.client, BUS, [], { clock: t.clock })).toEqual({ published: 0, failed: [] });
    expect(t.calls).toEqual([]);
  });

  it('entries failing once are retried, alone, and then published exactly once', async () => {
    const seen = new Set<string>();
    const flaky = new Set(['rec-1:candidate-joined', 'rec-3:candidate-joined']);
    const t = await start({
      failNext: (e) => {
        const first = flaky.has(idOf(e)) && !seen.has(idOf(e));
        seen.add(idOf(e));
        return first;
      },
    });
    const r = await publishEvents(t.client, BUS, joined(5), { clock: t.clock, backoffMs: 50 });
    expect(r).toEqual({ published: 5, failed: [] });
    expect(t.calls).toEqual([5, 2]); // the second call carries only the two that failed
    expect(t.sleeps).toEqual([50]);
    const ids = t.delivered.map(idOf);
    expect(ids).toHaveLength(5);
    expect(new Set(ids).size).toBe(5);
    expect(ids.slice(3).sort()).toEqual([...flaky].sort());
  });

  it('entries failing every time are returned in failed after maxAttempts; the others are published', async () => {
    const t = await start({ failNext: (e) => idOf(e) === 'rec-2:candidate-joined' });
    const events = joined(4);
    const r = await publishEvents(t.client, BUS, events, { clock: t.clock, maxAttempts: 4, backoffMs: 10 });
    expect(r.published).toBe(3);
    expect(r.failed).toEqual([{ event: events[2], errorCode: 'InternalFailure', errorMessage: 'injected failure (local event bus)' }]);
    expect(t.calls).toEqual([4, 1, 1, 1]);
    expect(t.sleeps).toEqual([10, 20, 40]); // doubling, none after the last attempt
    expect(t.delivered.map(idOf)).not.toContain('rec-2:candidate-joined');
  });

  it('more than 10 events go in calls of at most 10', async () => {
    const t = await start();
    const events = joined(23);
    const r = await publishEvents(t.client, BUS, events, { clock: t.clock });
    expect(r).toEqual({ published: 23, failed: [] });
    expect(t.calls).toEqual([10, 10, 3]);
    expect(t.delivered.map(idOf)).toEqual(events.map((e) => e.detail.id));
  });

  it('calls stay under 256 KB; an entry over it fails without a call', async () => {
    const t = await start();
    const events = [big(0, 100_000), big(1, 100_000), big(2, 100_000), big(3, MAX_CALL_BYTES)];
    const r = await publishEvents(t.client, BUS, events, { clock: t.clock });
    expect(r.published).toBe(3);
    expect(t.calls).toEqual([2, 1]);
    expect(r.failed.map((f) => [f.event.detail.id, f.errorCode])).toEqual([['big-3:election-failed', 'EntryTooLarge']]);
  });

  it('a throttled call counts as every entry of it failed, and is retried', async () => {
    let throttle = 1;
    const t = await start({ rejectCall: () => (throttle-- > 0 ? { type: 'ThrottlingException', message: 'Rate exceeded' } : undefined) });
    const r = await publishEvents(t.client, BUS, joined(12), { clock: t.clock });
    expect(r).toEqual({ published: 12, failed: [] });
    expect(t.calls).toEqual([10, 2, 10]); // the first call was throttled; its ten go again
    expect(t.delivered).toHaveLength(12);
    expect(t.sleeps).toEqual([100]);
  });

  it('a call failing every time: all its entries in failed, with the error', async () => {
    const t = await start({ rejectCall: () => ({ type: 'ThrottlingException', message: 'Rate exceeded' }) });
    const r = await publishEvents(t.client, BUS, joined(2), { clock: t.clock });
    expect(r.published).toBe(0);
    expect(r.failed.map((f) => [f.event.detail.id, f.errorCode, f.errorMessage])).toEqual([
      ['rec-0:candidate-joined', 'ThrottlingException', 'Rate exceeded'],
      ['rec-1:candidate-joined', 'ThrottlingException', 'Rate exceeded'],
    ]);
    expect(t.calls).toEqual([2, 2, 2]);
  });

  it('publishOrThrow throws a PublishError listing the events that failed', async () => {
    const t = await start({ failNext: (e) => idOf(e) === 'rec-0:candidate-joined' });
    const err = await publishOrThrow(t.client, BUS, joined(2), { clock: t.clock }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(PublishError);
    expect((err as PublishError).eventIds).toEqual(['rec-0:candidate-joined']);
    expect((err as PublishError).published).toBe(1);
    expect((err as PublishError).message).toMatch(/1 of 2 events could not be published.*Candidate Joined rec-0:candidate-joined: InternalFailure/);
    await expect(publishOrThrow(t.client, BUS, joined(2).slice(1), { clock: t.clock })).resolves.toBeUndefined();
  });
});

/**
 * An EventBridge that accepts connections and never answers (a review, 2026-12-07): each publish
 * waited its 3 attempts of the client's 3 tries of 2 s, 18.6 s a record, past the margin a batch
 * keeps before its deadline. A publish is bounded now (PUBLISH_WITHIN_MS, on the publisher's clock).
 */
describe('publishEvents on an EventBridge that never answers', () => {
  it('is abandoned at its bound, on its own clock: every event failed (PublishTimeout, the whole call), no other call started', async () => {
    const requests: IncomingMessage[] = [];
    const hole = createServer((req) => void requests.push(req)); // accepts, reads, never answers
    await new Promise<void>((r) => hole.listen(0, '127.0.0.1', r));
    try {
      // the SDK's own retries (3 tries) as in the functions; no socket timeout: only the bound ends the call
      const c = localEventBridgeClient(`http://127.0.0.1:${(hole.address() as AddressInfo).port}`);
      client = c;
      const clock = simulatedClock({ start: NOW });
      const events = joined(12); // two calls' worth
      const publishing = publishEvents(c, BUS, events, { clock });
      await waitFor('the first call at the bus', () => requests.length === 1);
      // before the fix: no bound (0 timers), and the publish waited for the client's tries and its own attempts
      expect(clock.pending(), "the publish's bound, a timer on its clock").toBe(1);
      await clock.run(PUBLISH_WITHIN_MS);
      const r = await publishing;
      expect(r.published).toBe(0);
      expect(r.failed.map((f) => [f.event.detail.id, f.errorCode, f.wholeCall])).toEqual(events.map((e) => [e.detail.id, PUBLISH_TIMEOUT, true]));
      expect(requests, 'the second call (events 11 and 12) never started').toHaveLength(1);
      expect(new PublishError(r.failed, 0).outage).toBe(true);
    } finally {
      hole.closeAllConnections();
      await new Promise<void>((r) => hole.close(() => r()));
    }
  });

  it('PublishError.outage: the calls failed (a whole call, an entry throttled), not only some entries refused', () => {
    const [a, b] = joined(2) as [ConclaveEvent, ConclaveEvent];
    const entry = (event: ConclaveEvent, errorCode: string): FailedEvent => ({ event, errorCode, errorMessage: 'x' });
    expect(new PublishError([entry(a, 'InternalFailure'), entry(b, 'EntryTooLarge')], 0).outage).toBe(false);
    expect(new PublishError([entry(a, 'InternalFailure'), entry(b, 'ThrottlingException')], 0).outage).toBe(true);
    expect(new PublishError([{ ...entry(a, 'TimeoutError'), wholeCall: true }], 0).outage).toBe(true);
  });
});

describe('the local bus speaks PutEvents like EventBridge', () => {
  it('refuses a call of more than 10 entries, and a Detail that is not a JSON object', async () => {
    const t = await start();
    const entry = { Source: EVENT_SOURCE, DetailType: 'Lease Released', Detail: '{}', EventBusName: BUS };
    await expect(t.client.send(new PutEventsCommand({ Entries: Array.from({ length: 11 }, () => entry) }))).rejects.toMatchObject({ name: 'ValidationException' });
    const r = await t.client.send(new PutEventsCommand({ Entries: [entry, { ...entry, Detail: 'not json' }, { ...entry, Detail: '[1]' }] }));
    expect(r.FailedEntryCount).toBe(2);
    expect(r.Entries?.map((e) => e.ErrorCode ?? 'ok')).toEqual(['ok', 'MalformedDetail', 'MalformedDetail']);
    expect(r.Entries?.[0]?.EventId).toBe(t.delivered[0]?.eventId);
  });

  it('an onEvent that throws fails that entry only', async () => {
    const delivered: string[] = [];
    bus = await startLocalEventBus({
      onEvent: (e) => {
        if (idOf(e) === 'rec-1:candidate-joined') throw new Error('consumer broke');
        delivered.push(idOf(e));
      },
    });
    client = localEventBridgeClient(bus.endpoint, { maxAttempts: 1 });
    const r = await publishEvents(client, BUS, joined(3), { maxAttempts: 1 });
    expect(delivered).toEqual(['rec-0:candidate-joined', 'rec-2:candidate-joined']);
    expect(r.failed.map((f) => [f.event.detail.id, f.errorCode, f.errorMessage])).toEqual([['rec-1:candidate-joined', 'InternalFailure', 'onEvent threw: consumer broke']]);
  });
});

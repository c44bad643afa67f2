/**
 * The in-memory SQS of local mode, on a simulated clock: every delivery, redelivery and dead
 * letter is checked at the simulated millisecond it happens.
 */
import type { SQSEvent } from 'aws-lambda';
import { describe, expect, it } from 'vitest';
import { simulatedClock } from '../../lib/clock.js';
import { DelayQueue } from '../../lib/local/delay-queue.js';
import type { DeadLetter } from '../../lib/local/stream-poller.js';
import { wiring } from '../../lib/wiring.js';

const T0 = Date.UTC(2027, 0, 1);

describe('DelayQueue (the election timer queue in local mode)', () => {
  it('delivers a message in the SQS event shape, redelivers a failed one after the visibility timeout, and dead-letters it after maxReceiveCount receives', async () => {
    const clock = simulatedClock({ start: T0 });
    const received: { at: number; event: SQSEvent }[] = [];
    const dead: DeadLetter[] = [];
    const VISIBILITY_MS = 10;
    const q = new DelayQueue({
      trigger: wiring.electionTimer.trigger,
      functionName: 'electionTimer',
      visibilityTimeoutMs: VISIBILITY_MS,
      clock,
      invoke: async (e) => {
        received.push({ at: clock.now() - T0, event: e });
        const r = e.Records[0]!;
        return JSON.parse(r.body).fail ? { batchItemFailures: [{ itemIdentifier: r.messageId }] } : {};
      },
      deadLetter: (d) => dead.push(d),
    });
    await q.schedule({ fail: false }, 0);
    await q.schedule({ fail: true }, 0);
    const receives = wiring.electionTimer.trigger.maxReceiveCount;
    await clock.run((receives - 1) * VISIBILITY_MS - 1);
    expect(dead).toEqual([]); // its last receive is still to come
    await clock.run(1);
    expect(dead).toHaveLength(1);
    await clock.run(60_000);
    await q.stop();
    const bodies = received.map((r) => r.event.Records[0]!.body);
    expect(bodies.filter((b) => b.includes('false'))).toHaveLength(1);
    const failing = received.filter((r) => r.event.Records[0]!.body.includes('true'));
    // received at once, then again each visibility timeout after it failed
    expect(failing.map((r) => r.at)).toEqual(Array.from({ length: receives }, (_, i) => i * VISIBILITY_MS));
    expect(failing.map((r) => r.event.Records[0]!.attributes.ApproximateReceiveCount)).toEqual(failing.map((_, i) => String(i + 1)));
    expect(dead).toEqual([expect.objectContaining({ function: 'electionTimer', records: [{ eventID: failing[0]!.event.Records[0]!.messageId }], at: new Date(T0 + (receives - 1) * VISIBILITY_MS).toISOString() })]);
  });

  it('never delivers before the delay, rounded up to whole seconds as SQS does; stop drops what is pending', async () => {
    const clock = simulatedClock({ start: T0 });
    const received: number[] = [];
    const q = new DelayQueue({ trigger: wiring.electionTimer.trigger, functionName: 'electionTimer', clock, invoke: async () => void received.push(clock.now() - T0), deadLetter: () => undefined });
    await q.schedule({}, 1); // 1 ms → 1 s
    await q.schedule({}, 60_000);
    await clock.run(999);
    expect(received).toEqual([]);
    await clock.run(1);
    expect(received).toEqual([1_000]);
    await q.stop();
    expect(clock.pending()).toBe(0);
    await clock.run(120_000);
    expect(received).toEqual([1_000]);
  });
  it('a message on its last receive whose invocation fails as the queue stops (its requests abandoned by the stop) is dropped, not dead-lettered', async () => {
    const clock = simulatedClock({ start: T0 });
    const dead: DeadLetter[] = [];
    let stopping: () => void = () => undefined;
    const stopped = new Promise<void>((resolve) => (stopping = resolve));
    let invoked = false;
    const q = new DelayQueue({
      trigger: { ...wiring.electionTimer.trigger, maxReceiveCount: 1 },
      functionName: 'electionTimer',
      clock,
      invoke: async () => {
        invoked = true;
        await stopped;
        throw new Error('the local runtime is stopped');
      },
      deadLetter: (d) => dead.push(d),
    });
    await q.schedule({}, 0);
    await clock.run(0);
    expect(invoked).toBe(true);
    const stop = q.stop();
    stopping();
    await stop;
    expect(dead).toEqual([]);
  });
});

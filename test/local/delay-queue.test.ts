import type { SQSEvent } from 'aws-lambda';
import { describe, expect, it } from 'vitest';
import { DelayQueue } from '../../lib/local/delay-queue.js';
import type { DeadLetter } from '../../lib/local/stream-poller.js';
import { wiring } from '../../lib/wiring.js';
import { waitFor } from '../sdk/harness.js';

describe('DelayQueue (the election timer queue in local mode)', () => {
  it('delivers a message in the SQS event shape, redelivers a failed one, and dead-letters it after maxReceiveCount receives', async () => {
    const received: SQSEvent[] = [];
    const dead: DeadLetter[] = [];
    const q = new DelayQueue({
      trigger: wiring.electionTimer.trigger,
      functionName: 'electionTimer',
      visibilityTimeoutMs: 10,
      invoke: async (e) => {
        received.push(e);
        const r = e.Records[0]!;
        return JSON.parse(r.body).fail ? { batchItemFailures: [{ itemIdentifier: r.messageId }] } : {};
      },
      deadLetter: (d) => dead.push(d),
    });
    await q.schedule({ fail: false }, 0);
    await q.schedule({ fail: true }, 0);
    await waitFor('the dead letter', () => dead.length > 0);
    await q.stop();
    const bodies = received.map((e) => e.Records[0]!.body);
    expect(bodies.filter((b) => b.includes('false'))).toHaveLength(1);
    const failing = received.filter((e) => e.Records[0]!.body.includes('true'));
    expect(failing).toHaveLength(wiring.electionTimer.trigger.maxReceiveCount);
    expect(failing.map((e) => e.Records[0]!.attributes.ApproximateReceiveCount)).toEqual(failing.map((_, i) => String(i + 1)));
    expect(dead).toEqual([expect.objectContaining({ function: 'electionTimer', records: [{ eventID: failing[0]!.Records[0]!.messageId }] })]);
  });

  it('never delivers before the delay, rounded up to whole seconds as SQS does; stop drops what is pending', async () => {
    const received: number[] = [];
    const q = new DelayQueue({ trigger: wiring.electionTimer.trigger, functionName: 'electionTimer', invoke: async () => void received.push(performance.now()), deadLetter: () => undefined });
    const at = performance.now();
    await q.schedule({}, 1); // 1 ms → 1 s
    await q.schedule({}, 60_000);
    await waitFor('the first delivery', () => received.length > 0);
    await q.stop();
    expect(received).toHaveLength(1);
    expect(received[0]! - at).toBeGreaterThanOrEqual(999);
  });
});

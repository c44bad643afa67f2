import { randomUUID } from 'node:crypto';
import type { SQSEvent, SQSRecord } from 'aws-lambda';
import type { TimerQueue } from '../functions/timer.js';
import { sqsDelaySeconds } from '../functions/timer.js';
import type { QueueTrigger } from '../wiring.js';
import type { BatchResponse, DeadLetter } from './stream-poller.js';
import { systemClock, type Clock, type Timer } from '../clock.js';

export interface DelayQueueOptions {
  trigger: QueueTrigger;
  functionName: string;
  invoke: (event: SQSEvent) => Promise<BatchResponse | void>;
  deadLetter: (entry: DeadLetter) => void;
  /**
   * How long a failed message stays invisible before it is received again. Not AWS's on purpose:
   * the timer queue's visibility timeout is 6× the function's timeout (infra/deployment.ts, 360 s),
   * AWS's advice so that a batch Lambda's poller holds while the function is throttled is not
   * received twice; here a message waits in no poller, so nothing needs that guard, and a retry a
   * second later lets a test or the demo waiting on the system go on in seconds, not minutes. What a
   * retry does is the same either way and nothing depends on when it comes (the handler is
   * idempotent; the tick finishes an election past its deadline): docs/architecture.md, local mode.
   * @default 1000 ms
   */
  visibilityTimeoutMs?: number;
  /** Whose time the delays run on. @default systemClock */
  clock?: Clock;
}

/**
 * SQS with per-message delay, in memory: the election timer's queue in local mode. It rounds the
 * delay up to whole seconds as SQS does, delivers in Lambda's SQS event shape, redelivers a
 * message the handler reported failed, and dead-letters it after maxReceiveCount receives.
 */
export class DelayQueue implements TimerQueue {
  private readonly timers = new Set<Timer>();
  private inFlight = new Set<Promise<void>>();
  private stopped = false;
  /** Messages delivered, for tests and the summary. */
  delivered = 0;

  private readonly clock: Clock;

  constructor(private readonly o: DelayQueueOptions) {
    this.clock = o.clock ?? systemClock;
  }

  async schedule(message: unknown, delayMs: number): Promise<void> {
    this.later({ id: randomUUID(), body: JSON.stringify(message), receives: 0 }, sqsDelaySeconds(delayMs) * 1000);
  }

  private later(m: { id: string; body: string; receives: number }, ms: number): void {
    if (this.stopped) return;
    const t = this.clock.setTimer(ms, () => {
      this.timers.delete(t);
      const p = this.receive(m).finally(() => this.inFlight.delete(p));
      this.inFlight.add(p);
    });
    this.timers.add(t);
  }

  private async receive(m: { id: string; body: string; receives: number }): Promise<void> {
    m.receives++;
    const record: SQSRecord = {
      messageId: m.id,
      receiptHandle: `${m.id}:${m.receives}`,
      body: m.body,
      attributes: { ApproximateReceiveCount: String(m.receives), SentTimestamp: String(this.clock.now()), SenderId: 'local', ApproximateFirstReceiveTimestamp: String(this.clock.now()) },
      messageAttributes: {},
      md5OfBody: '',
      eventSource: 'aws:sqs',
      eventSourceARN: `arn:aws:sqs:local:000000000000:${this.o.trigger.queue}`,
      awsRegion: 'local',
    };
    this.delivered++;
    let failed: string | undefined;
    try {
      const res = await this.o.invoke({ Records: [record] });
      if (res?.batchItemFailures?.some((f) => f.itemIdentifier === m.id)) failed = 'reported as a batch item failure';
    } catch (e) {
      failed = `handler threw: ${(e as Error).message}`;
    }
    if (!failed) return;
    if (this.stopped) return; // failed as the queue stopped (its requests abandoned): dropped as a pending message is, not dead-lettered
    if (m.receives >= this.o.trigger.maxReceiveCount) {
      this.o.deadLetter({ function: this.o.functionName, reason: failed, records: [{ eventID: m.id }], at: new Date(this.clock.now()).toISOString() });
      return;
    }
    this.later(m, this.o.visibilityTimeoutMs ?? 1000);
  }

  /** Pending messages are dropped (the tick finishes their elections); in-flight ones are awaited. */
  async stop(): Promise<void> {
    this.stopped = true;
    for (const t of this.timers) t.cancel();
    this.timers.clear();
    await Promise.all(this.inFlight);
  }
}

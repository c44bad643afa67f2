/**
 * startLocalRuntime's `clock` is the time of every part it starts: the tick, the stream pollers, the
 * functions' contexts and the election timer's queue (DelayQueue). A timer message's delay runs on
 * that clock, as the others' waits do, so a simulated clock decides when it is delivered.
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, expect, inject, it } from 'vitest';
import { systemClock, type Clock } from '../../lib/clock.js';
import { startLocalRuntime, type LocalRuntime } from '../../lib/local/runtime.js';

let rt: LocalRuntime | undefined;
afterAll(async () => rt?.stop());

it("the timer queue's delays run on the runtime's clock, not the system's: a message is delivered when that clock fires its timer", async () => {
  // the system clock but for timers set while `holding`: those wait for the test to fire them
  const held: { ms: number; fire: () => void }[] = [];
  let holding = false;
  const clock: Clock = {
    ...systemClock,
    setTimer: (ms, fn, opts) => {
      if (!holding) return systemClock.setTimer(ms, fn, opts);
      held.push({ ms, fire: fn });
      return { cancel: () => undefined };
    },
  };
  const delivered: unknown[] = [];
  let arrived!: () => void;
  const arrival = new Promise<void>((r) => (arrived = r));
  rt = await startLocalRuntime({
    endpoint: inject('ddbEndpoint'),
    prefix: `rt-clock-${randomUUID().slice(0, 8)}`,
    dir: mkdtempSync(join(tmpdir(), 'conclave-rt-clock-')),
    tickEveryMs: 600_000,
    push: false,
    logLevel: 'SILENT',
    clock,
    intercept: async (name, event, invoke) => {
      if (name !== 'electionTimer') return invoke(event);
      delivered.push(event);
      arrived();
      return undefined; // withheld: the message's arrival is what is measured
    },
  });
  const message = { lease: 'component-A', electionId: 'e-1', deadline: 0 };
  holding = true;
  const scheduled = rt.deps.timer.schedule(message, 2500);
  holding = false;
  await scheduled;
  // before: the queue set its timer on the system clock, so none was held here (and it fired 3 s later, whatever the runtime's clock)
  expect(held.map((t) => t.ms)).toEqual([3000]); // SQS's whole seconds, rounded up
  expect(delivered).toEqual([]);
  held[0]!.fire();
  await arrival;
  expect(delivered).toHaveLength(1);
  const [event] = delivered as { Records: { body: string }[] }[];
  expect(JSON.parse(event!.Records[0]!.body)).toEqual(message);
});

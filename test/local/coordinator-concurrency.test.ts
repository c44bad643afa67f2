/**
 * Local mode runs the coordinator as Lambda does with its reserved concurrency of 1
 * (lib/wiring.ts): one tick at a time; a tick asked for meanwhile waits its turn.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
import { describe, expect, inject, it } from 'vitest';
import { simulatedClock } from '../../lib/clock.js';
import { atMost, startLocalRuntime } from '../../lib/local/runtime.js';
import { wiring } from '../../lib/wiring.js';

describe('the coordinator in local mode', () => {
  it('runs one tick at a time, as its reserved concurrency says', async () => {
    expect(wiring.coordinator.reservedConcurrency).toBe(1);
    let running = 0;
    let most = 0;
    const rt = await startLocalRuntime({
      endpoint: inject('ddbEndpoint'),
      prefix: `cc-${randomUUID().slice(0, 8)}`,
      dir: mkdtempSync(join(tmpdir(), 'conclave-cc-')),
      tickEveryMs: 600_000,
      logLevel: 'SILENT',
      intercept: async (name, event, invoke) => {
        if (name !== 'coordinator') return invoke(event);
        running++;
        most = Math.max(most, running);
        try {
          // the tick's reads and writes on DynamoDB Local keep it running across event-loop turns:
          // a second tick let in meanwhile would count here
          return await invoke(event);
        } finally {
          running--;
        }
      },
    });
    try {
      await Promise.all([rt.tick(), rt.tick(), rt.tick()]);
      expect(most).toBe(1);
    } finally {
      await rt.stop();
    }
  });

  it('ticks against a deadline, as on Lambda: its context gives the wiring’s timeout on the runtime’s clock, and the tick reports its round (lib/coordinator/tick.ts)', async () => {
    const rt = await startLocalRuntime({
      endpoint: inject('ddbEndpoint'),
      prefix: `cd-${randomUUID().slice(0, 8)}`,
      dir: mkdtempSync(join(tmpdir(), 'conclave-cd-')),
      tickEveryMs: 600_000,
      logLevel: 'SILENT',
    });
    try {
      // without a deadline (the simulator's context) a tick reports no round
      expect(await rt.tick()).toMatchObject({ round: { segments: 1, invocations: 1, done: true, lostRace: false } });
    } finally {
      await rt.stop();
    }
  });

  it('atMost hands a finished call’s slot to the next waiter, so no caller slips in between', async () => {
    const clock = simulatedClock({ start: 0 });
    let running = 0;
    let most = 0;
    const started: [number, number][] = [];
    const f = atMost(2, async (ms: number) => {
      running++;
      most = Math.max(most, running);
      started.push([ms, clock.now()]);
      await clock.sleep(ms);
      running--;
      return ms;
    });
    const all = Promise.all([f(30), f(10), f(20), f(5), f(1)]);
    await clock.run(100);
    expect(await all).toEqual([30, 10, 20, 5, 1]);
    expect(most).toBe(2);
    // each waiter starts the moment a slot frees, in the order it came
    expect(started).toEqual([[30, 0], [10, 0], [20, 10], [5, 30], [1, 30]]);
  });
});

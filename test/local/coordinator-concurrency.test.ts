/**
 * Local mode runs the coordinator as Lambda does with its reserved concurrency of 1
 * (lib/wiring.ts): one tick at a time; a tick asked for meanwhile waits its turn.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
import { describe, expect, inject, it } from 'vitest';
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
          await new Promise((r) => setTimeout(r, 100));
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

  it('atMost hands a finished call’s slot to the next waiter, so no caller slips in between', async () => {
    let running = 0;
    let most = 0;
    const f = atMost(2, async (ms: number) => {
      running++;
      most = Math.max(most, running);
      await new Promise((r) => setTimeout(r, ms));
      running--;
      return ms;
    });
    expect(await Promise.all([f(30), f(10), f(20), f(5), f(1)])).toEqual([30, 10, 20, 5, 1]);
    expect(most).toBe(2);
  });
});

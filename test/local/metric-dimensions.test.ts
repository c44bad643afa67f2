/**
 * Local mode publishes the functions' metrics (when asked to: POWERTOOLS_METRICS_DISABLED=false) as
 * Lambda does, with the same dimensions: its `deployment` is its leases table's name, as on AWS
 * (test/functions/metric-dimensions.test.ts).
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, inject, it, vi } from 'vitest';
import { METRIC } from '../../lib/functions/metrics.js';
import { startLocalRuntime } from '../../lib/local/runtime.js';
import { deleteTables } from '../../lib/local/tables.js';
import { localClient } from '../../lib/stores/client.js';
import { defaultTableNames } from '../../lib/tables.js';

const admin = localClient(inject('ddbEndpoint'));
const prefix = `metricdims-${randomUUID().slice(0, 8)}`;
afterAll(async () => {
  vi.unstubAllEnvs();
  await deleteTables(admin, defaultTableNames(prefix));
  admin.destroy();
});

describe('local mode', () => {
  it("publishes the tick's gauges with deployment = its leases table's name", async () => {
    vi.stubEnv('POWERTOOLS_METRICS_DISABLED', 'false'); // (local mode's default: off)
    const docs: Record<string, unknown>[] = [];
    const stdout = vi.spyOn(process.stdout, 'write').mockImplementation((chunk: string | Uint8Array) => {
      for (const l of String(chunk).split('\n')) if (l.includes('"CloudWatchMetrics"')) docs.push(JSON.parse(l) as Record<string, unknown>);
      return true;
    });
    const rt = await startLocalRuntime({ endpoint: inject('ddbEndpoint'), prefix, dir: mkdtempSync(join(tmpdir(), 'conclave-metricdims-')), tickEveryMs: 600_000, logLevel: 'WARN', push: false });
    try {
      await rt.tick();
    } finally {
      stdout.mockRestore();
      await rt.stop();
    }
    const gauges = docs.filter((d) => METRIC.leaderless in d);
    expect(gauges.length).toBeGreaterThanOrEqual(1);
    for (const g of gauges) {
      expect(g).toMatchObject({ service: 'conclave', deployment: defaultTableNames(prefix).leases });
      expect((g['_aws'] as { CloudWatchMetrics: { Dimensions: string[][] }[] }).CloudWatchMetrics[0]!.Dimensions).toEqual([expect.arrayContaining(['service', 'function', 'deployment'])]);
    }
  });
});

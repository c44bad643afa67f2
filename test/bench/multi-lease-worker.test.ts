/**
 * The many-leases steady state prices the push path as one connection per process, whatever the
 * number of leases it stands for: bench/multi-lease-worker.ts must open ONE PushChannel (one
 * connection, one subscription) shared by all its electors, so a wake reaches the process once.
 */
import { randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { IoTDataPlaneClient } from '@aws-sdk/client-iot-data-plane';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { iotWaker } from '../../lib/functions/wake.js';
import { startPushBroker, type PushBroker } from '../../lib/local/push-broker.js';
import { WorkerProcess } from '../../lib/local/worker-process.js';
import { LOCAL_CREDENTIALS } from '../../lib/stores/client.js';
import { testTables, type TestTables } from '../support.js';
import { waitFor } from '../sdk/harness.js';

const WORKER = fileURLToPath(new URL('../../bench/multi-lease-worker.ts', import.meta.url));
const TIMING = { leaseDurationMs: 2_000, renewDeadlineMs: 1_500, retryPeriodMs: 250 } as const;
let t: TestTables;
let broker: PushBroker;

beforeAll(async () => {
  t = await testTables('bench-multi-push');
  broker = await startPushBroker();
});
afterAll(async () => {
  await broker.stop();
  await t.drop();
});

describe('the multi-lease worker on the push path', () => {
  it('one connection for five electors, and a wake for one of their leases is delivered to the process once', async () => {
    const stem = `m-${randomUUID().slice(0, 8)}`;
    const prefix = t.names.leases.replace(/-leases$/, '');
    const w = new WorkerProcess(
      { identity: 'p1', lease: stem, emulationVersion: '1.30.0', binaryVersion: '1.30.0', timing: TIMING, script: WORKER },
      { endpoint: inject('ddbEndpoint'), tablePrefix: prefix, pushUrl: broker.wsEndpoint, extra: { LEASE_COUNT: '5', COUNT_REQUESTS_EVERY_MS: '200' } },
    );
    const data = new IoTDataPlaneClient({ endpoint: broker.httpEndpoint, region: 'us-east-1', credentials: LOCAL_CREDENTIALS });
    try {
      await waitFor('the worker connected', () => broker.stats().connections >= 1 && w.events.some((e) => e.event === 'ready'), 30_000);
      // every elector is running by the time the process has counted its requests a few times
      await waitFor('a few request counts', () => w.events.filter((e) => e.event === 'requests').length >= 3, 30_000);
      expect(broker.stats().connections).toBe(1);
      const before = broker.stats().delivered;
      await iotWaker(data, t.names.leases)(`${stem}-2`, undefined);
      await waitFor('the wake delivered', () => broker.stats().delivered > before);
      expect(broker.stats().delivered - before).toBe(1);
      expect(w.events.filter((e) => e.event === 'error')).toEqual([]);
    } finally {
      data.destroy();
      await w.stop();
    }
    await waitFor('the channel closed with the process', () => broker.stats().connections === 0);
  }, 60_000);
});

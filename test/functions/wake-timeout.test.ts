/**
 * The lease stream's function with an IoT Core that never answers (issue 27): the wake is published
 * alongside the reconcile, never before it, and given up after WAKE_TIMEOUT_MS, so a hung endpoint
 * does not hold up the election. The endpoint is an HTTP server on loopback that takes each request
 * and never answers; the timeout is the waker's clock's timer, fired by the test (no sleeping).
 */
import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { IoTDataPlaneClient } from '@aws-sdk/client-iot-data-plane';
import type { DynamoDBStreamEvent } from 'aws-lambda';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeHandler as leaseStream } from '../../functions/lease-stream.js';
import { systemClock, type Clock } from '../../lib/clock.js';
import { coordinatorDeps } from '../../lib/coordinator/reconcile.js';
import type { ConclaveEvent } from '../../lib/events/schemas.js';
import type { FunctionDeps } from '../../lib/functions/core.js';
import { observability } from '../../lib/functions/env.js';
import type { TimerMessage } from '../../lib/functions/timer.js';
import { iotWaker, WAKE_TIMEOUT_MS } from '../../lib/functions/wake.js';
import { lambdaContext } from '../../lib/local/runtime.js';
import { LOCAL_CREDENTIALS } from '../../lib/stores/client.js';
import { OLDEST_EMULATION_VERSION } from '../../lib/schemas/strategy.js';
import { waitFor } from '../sdk/harness.js';
import { streamRecords, testTables, type TestTables } from '../support.js';

let t: TestTables;
const MIN = 60_000;

/** An IoT data endpoint that accepts every request and never answers it. */
async function hungEndpoint() {
  const requests: IncomingMessage[] = [];
  let closed = 0;
  const server = createServer((req) => {
    requests.push(req);
    req.socket.once('close', () => closed++);
  });
  server.listen(0, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    requests,
    closed: () => closed,
    stop: () => new Promise<void>((resolve) => (server.closeAllConnections(), server.close(() => resolve()))),
  };
}

/** The system clock, but its timers fire only when the test says so: the waker's timeout, on demand. */
function heldTimers(): Clock & { fire(): number } {
  const held = new Set<{ ms: number; fn: () => void }>();
  return {
    ...systemClock,
    setTimer(ms, fn) {
      const timer = { ms, fn };
      held.add(timer);
      return { cancel: () => void held.delete(timer) };
    },
    fire() {
      const due = [...held];
      held.clear();
      for (const x of due) x.fn();
      return due.length ? due[0]!.ms : 0;
    },
  };
}

beforeAll(async () => {
  t = await testTables('wake-timeout');
});
afterAll(async () => {
  await t.drop();
});

describe('the lease stream with an IoT Core that never answers', () => {
  it('reconciles while the wake hangs (the election opens), gives the wake up at its timeout, and the next record does not wait on it at all', async () => {
    const lease = 'hung-iot';
    const leases = coordinatorDeps(t.client, t.names).leases;
    const cands = coordinatorDeps(t.client, t.names).candidates;
    const now = Date.now();
    // b and c stand, last renewed 10 minutes ago (an election has to ping them); a holds, then releases
    for (const [name, age] of [['b', 3], ['c', 2]] as const) {
      await cands.write(await cands.read(lease, name), { set: { binaryVersion: '1.30.0', emulationVersion: '1.30.0', preferredStrategies: [OLDEST_EMULATION_VERSION], renewTime: now - 10 * MIN, createdAt: now - age * 60 * MIN } });
    }
    await leases.write(await leases.read(lease), { set: { holderIdentity: 'a', holderInstance: 'a-1', leaseDurationSeconds: 15, acquireTime: now, renewTime: now, leaseTransitions: 0, fencingToken: 1, electedBy: 'coordinator' } });
    await leases.write(await leases.read(lease), { set: { renewTime: Date.now(), lastHolderIdentity: 'a' }, remove: ['holderIdentity', 'holderInstance'] });
    const released = (await streamRecords(t.client, t.names.leases)).filter((r) => r.eventName === 'MODIFY' && JSON.stringify(r.dynamodb!.Keys).includes(lease));
    expect(released).toHaveLength(1);

    const iot = await hungEndpoint();
    const clock = heldTimers();
    const data = new IoTDataPlaneClient({ endpoint: iot.url, region: 'us-east-1', credentials: LOCAL_CREDENTIALS });
    const published: ConclaveEvent[] = [];
    const timers: TimerMessage[] = [];
    const d: FunctionDeps = {
      coordinator: coordinatorDeps(t.client, t.names, { config: { ackWindowMs: 5_000 } }),
      timer: { schedule: async (m) => void ('electionId' in m ? timers.push(m) : undefined) },
      publish: async (events) => void published.push(...events),
      deadLetter: async () => undefined,
      wake: iotWaker(data, t.names.leases, { clock }),
      ...observability('test', 'SILENT'),
    };
    const handler = leaseStream(d);
    const batch: DynamoDBStreamEvent = { Records: released };
    try {
      let done = false;
      const first = handler(batch, lambdaContext('leaseStream')).finally(() => (done = true));
      await waitFor('the wake to reach the endpoint', () => iot.requests.length >= 1);
      // the election opened while the publish hangs: today's main waited for the wake first, for ever
      const opened = await waitFor('the reconcile', async () => (await leases.read(lease)).item?.election);
      // …and its write's own wake sent as it landed, hanging beside the record's
      await waitFor("the election's wake to reach the endpoint", () => iot.requests.length === 2);
      expect((await cands.read(lease, 'b')).item!.pingTime).toBe(opened.startedAt);
      await waitFor('the deadline timer and the events', () => timers.length > 0 && published.length > 0);
      expect(timers.map((m) => m.electionId)).toEqual([opened.id]);
      expect(published.map((e) => e.detailType)).toEqual(['Lease Released']);
      expect(done).toBe(false); // the record waits for its wake, up to the timeout

      expect(clock.fire()).toBe(WAKE_TIMEOUT_MS);
      expect(await first).toEqual({ batchItemFailures: [] });
      await waitFor('both publishes aborted (their connections closed)', () => iot.closed() === 2);

      // a redelivery while IoT Core still does not answer: the wake is sent, but not waited for (the
      // election stands as it was: nothing written, nothing more to wake)
      expect(await handler(batch, lambdaContext('leaseStream'))).toEqual({ batchItemFailures: [] });
      await waitFor('the third wake to reach the endpoint', () => iot.requests.length === 3);
    } finally {
      clock.fire();
      data.destroy();
      await iot.stop();
    }
  });
});

/**
 * A worker of lease A writes 1,000 candidate rows of A, each naming a made-up process
 * (`identity: "w@proc-<i>"`): an attacker review, 2026-12-07. Before, every wake of A (each
 * non-renewal write to its row) was published on 1,001 topics, its lease's and one per process,
 * all at once: a thousand IoT Core messages billed a write, drawn from the publish quota every
 * lease's wakes share. Now a wake goes to at most MAX_WAKE_PROCESSES processes (past them, on the
 * lease's topic alone, the refusal logged), and a waker has at most PUBLISHES_IN_FLIGHT publishes
 * out at once. The function's own wake path (withWakes: the candidates Query on DynamoDB Local,
 * wakeBatch, iotWaker) over an IoT data plane that counts what it is asked to publish.
 */
import { BatchWriteItemCommand, type WriteRequest } from '@aws-sdk/client-dynamodb';
import type { IoTDataPlaneClient, PublishCommand } from '@aws-sdk/client-iot-data-plane';
import { marshall } from '@aws-sdk/util-dynamodb';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { simulatedClock } from '../../lib/clock.js';
import { coordinatorDeps } from '../../lib/coordinator/reconcile.js';
import { withWakes, type FunctionDeps } from '../../lib/functions/core.js';
import { observability } from '../../lib/functions/env.js';
import { iotWaker, MAX_WAKE_PROCESSES, PUBLISHES_IN_FLIGHT, TooManyWakeProcessesError, WAKE_TIMEOUT_MS } from '../../lib/functions/wake.js';
import { processTopic, pushTopic } from '../../lib/schemas/push.js';
import { testTables, type TestTables } from '../support.js';

let t: TestTables;
beforeAll(async () => {
  t = await testTables('wake-flood');
});
afterAll(async () => {
  await t.drop();
});

/** `n` valid candidate rows of `lease`, each of its own process (`w@<lease>-proc-<i>`), as a worker's BatchWriteItem would put them. */
async function candidates(lease: string, n: number, renewedAt = Date.now(), prefix = 'proc'): Promise<void> {
  const now = renewedAt;
  const rows = Array.from({ length: n }, (_, i) => ({ leaseName: lease, name: `${prefix}${String(i).padStart(5, '0')}`, identity: `w@${lease}-${prefix}-${i}`, binaryVersion: '1.31.0', emulationVersion: '1.30.0', preferredStrategies: ['OldestEmulationVersion'], renewTime: now, createdAt: now, revision: 1 }));
  for (let i = 0; i < n; i += 25) {
    let req: Record<string, WriteRequest[]> | undefined = { [t.names.candidates]: rows.slice(i, i + 25).map((r) => ({ PutRequest: { Item: marshall(r) } })) };
    while (req && Object.keys(req).length) req = (await t.client.send(new BatchWriteItemCommand({ RequestItems: req }))).UnprocessedItems;
  }
}

/** An IoT data plane that takes every publish at once, and the topics it was asked to publish on. */
function countingDataPlane(): { client: IoTDataPlaneClient; topics: string[] } {
  const topics: string[] = [];
  const client = { send: async (c: PublishCommand) => void topics.push(c.input.topic!) } as unknown as IoTDataPlaneClient;
  return { client, topics };
}

/** The stream functions' wake path on the test tables: one invocation's wake of `lease`, sent and settled; the topics published and the warnings logged. */
async function wakeOnce(lease: string): Promise<{ topics: string[]; warned: unknown[][] }> {
  const iot = countingDataPlane();
  const o = observability('test', 'SILENT');
  const warn = vi.spyOn(o.logger, 'warn');
  const deps: FunctionDeps = {
    coordinator: coordinatorDeps(t.client, t.names),
    timer: { schedule: async () => undefined },
    publish: async () => undefined,
    deadLetter: async () => undefined,
    wake: iotWaker(iot.client, t.names.leases),
    ...o,
  };
  const { deps: d, end } = withWakes(deps);
  d.wakes!.send(lease, 5);
  await end(undefined);
  return { topics: iot.topics, warned: warn.mock.calls };
}

describe('a wake of a lease whose candidate rows name many processes', () => {
  it('a lease with 997 made-up processes among its 1,000 candidates (the cap): one wake is its lease topic and the 25 most recently renewed processes, its 3 live candidates among them (before: 1,001 publishes)', async () => {
    const now = Date.now();
    await candidates('flooded', 997, now - 60_000);
    await candidates('flooded', 3, now, 'live'); // the lease's own candidates, renewing
    const { topics, warned } = await wakeOnce('flooded');
    expect(topics).toHaveLength(MAX_WAKE_PROCESSES + 1);
    expect(topics).toContain(pushTopic(t.names.leases, 'flooded'));
    for (let i = 0; i < 3; i++) expect(topics).toContain(processTopic(t.names.leases, `flooded-live-${i}`));
    expect(warned).toEqual([]);
  });

  it('up to MAX_WAKE_PROCESSES processes, each hears the wake on its own topic: a lease of 3, and one of 25', async () => {
    for (const [lease, n] of [['three', 3], ['at-the-cap', MAX_WAKE_PROCESSES]] as const) {
      await candidates(lease, n);
      const { topics, warned } = await wakeOnce(lease);
      expect(new Set(topics)).toEqual(new Set([pushTopic(t.names.leases, lease), ...Array.from({ length: n }, (_, i) => processTopic(t.names.leases, `${lease}-proc-${i}`))]));
      expect(topics).toHaveLength(n + 1);
      expect(warned).toEqual([]);
    }
  });
});

describe("iotWaker's publishes in flight", () => {
  /** An IoT data plane that answers each publish only when the test says so. */
  function heldDataPlane() {
    const held: { topic: string; answer: () => void; signal: AbortSignal | undefined }[] = [];
    let out = 0;
    let most = 0;
    const client = {
      send: (c: PublishCommand, o?: { abortSignal?: AbortSignal }) =>
        new Promise<void>((resolve) => {
          most = Math.max(most, ++out);
          held.push({ topic: c.input.topic!, signal: o?.abortSignal, answer: () => (out--, resolve()) });
        }),
    } as unknown as IoTDataPlaneClient;
    return { client, held, most: () => most };
  }

  /** Until every promise chain that can go on has (the fake data plane does nothing of its own). */
  const drained = () => new Promise<void>((resolve) => setImmediate(resolve));

  it('at most PUBLISHES_IN_FLIGHT at once over many wakes, the others sent as those are answered', async () => {
    const iot = heldDataPlane();
    const clock = simulatedClock({ start: 0 });
    const wake = iotWaker(iot.client, 'tbl', { clock });
    const processes = (w: number) => Array.from({ length: MAX_WAKE_PROCESSES }, (_, i) => `p${w}-${i}`);
    // 16 wakes (WAKES_IN_FLIGHT) of 25 processes each: 400 publishes asked for at once (before: all 400 out)
    const wakes = Array.from({ length: 16 }, (_, w) => wake(`lease-${w}`, 1, processes(w)));
    await drained();
    expect(iot.held).toHaveLength(PUBLISHES_IN_FLIGHT);
    for (let answered = 0; answered < 16 * MAX_WAKE_PROCESSES; answered++) {
      iot.held[answered]!.answer();
      await drained();
    }
    await Promise.all(wakes);
    expect(iot.held).toHaveLength(16 * MAX_WAKE_PROCESSES);
    expect(iot.most()).toBe(PUBLISHES_IN_FLIGHT);
  });

  it("a wake given up at its timeout frees its places though its publishes never answer (a handler that ignores the abort): the publishes waiting their turn go out", async () => {
    const iot = heldDataPlane();
    const clock = simulatedClock({ start: 0 });
    const wake = iotWaker(iot.client, 'tbl', { clock });
    const many = (lease: string) => Array.from({ length: MAX_WAKE_PROCESSES }, (_, i) => `${lease}-p${i}`);
    const first = wake('a', 1, many('a')).catch((e: unknown) => e);
    await clock.run(WAKE_TIMEOUT_MS / 2);
    const second = wake('b', 1, many('b'));
    await drained();
    expect(iot.held).toHaveLength(PUBLISHES_IN_FLIGHT); // 2 of b's wait their turn
    await clock.run(WAKE_TIMEOUT_MS / 2); // a's timeout: given up, the broker stalled
    expect(await first).toMatchObject({ name: 'WakeTimeoutError' });
    await drained();
    expect(iot.held).toHaveLength(2 * MAX_WAKE_PROCESSES);
    expect(iot.held.filter((h) => h.topic.includes('/process/a-')).every((h) => h.signal?.aborted)).toBe(true);
    // stalled: a wake to more than MAX_WAKE_PROCESSES is refused all the same
    await expect(wake('d', 1, Array.from({ length: MAX_WAKE_PROCESSES + 1 }, (_, i) => `d-p${i}`))).rejects.toBeInstanceOf(TooManyWakeProcessesError);
    for (const h of iot.held.filter((h) => h.topic.includes('/process/b-'))) h.answer();
    await expect(second).resolves.toBeUndefined();
    await drained();
    expect(iot.held.filter((h) => h.topic.includes('/process/d-'))).toEqual([]);
  });

  it('a wake to more than MAX_WAKE_PROCESSES processes publishes nothing on any of their topics', async () => {
    const iot = countingDataPlane();
    const wake = iotWaker(iot.client, 'tbl');
    const many = Array.from({ length: MAX_WAKE_PROCESSES + 1 }, (_, i) => `p${i}`);
    await expect(wake('a', 1, many)).rejects.toBeInstanceOf(TooManyWakeProcessesError);
    expect(iot.topics).toEqual([]);
    await expect(wake('a', 1, [...many.slice(0, MAX_WAKE_PROCESSES), 'p0'])).resolves.toBeUndefined(); // 25 distinct
    expect(iot.topics).toHaveLength(MAX_WAKE_PROCESSES);
  });
});

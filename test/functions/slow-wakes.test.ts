/**
 * The lease stream's function with an IoT Core that is slow but not hung (issue 36, item 7): each
 * publish is answered after 1.4 s, under the waker's 1.5 s timeout, so the waker never counts the
 * broker as stalled. A batch's elections and session marks must not wait on its wakes: with 6
 * released leases, every election opens within 2 s (when each record waited for its wake, the 6th
 * opened at 7 s). DynamoDB Local is real; the IoT data plane is a stand-in request handler that
 * answers on simulated time. The time is a simulatedClock whose timers fire only once no DynamoDB
 * request is in flight, so simulated time moves only while everything waits on a timer.
 */
import { Readable } from 'node:stream';
import { IoTDataPlaneClient } from '@aws-sdk/client-iot-data-plane';
import type { DynamoDBRecord } from 'aws-lambda';
import { afterAll, beforeAll, describe, expect, inject, it, vi } from 'vitest';
import { makeHandler as leaseStream } from '../../functions/lease-stream.js';
import { simulatedClock, type SimulatedClock } from '../../lib/clock.js';
import { coordinatorDeps, type CoordinatorDeps } from '../../lib/coordinator/reconcile.js';
import type { FunctionDeps } from '../../lib/functions/core.js';
import { observability } from '../../lib/functions/env.js';
import type { TimerMessage } from '../../lib/functions/timer.js';
import { iotWaker, WAKE_TIMEOUT_MS } from '../../lib/functions/wake.js';
import { localClient } from '../../lib/local/dynamodb-local.js';
import { lambdaContext } from '../../lib/local/runtime.js';
import { SESSION_COMPONENT } from '../../lib/schemas/identity.js';
import { pushTopic } from '../../lib/schemas/push.js';
import { OLDEST_EMULATION_VERSION } from '../../lib/schemas/strategy.js';
import { LOCAL_CREDENTIALS } from '../../lib/stores/client.js';
import { streamRecords, testTables, type TestTables } from '../support.js';

const MIN = 60_000;
/** How long the stand-in IoT Core takes to answer a publish: under WAKE_TIMEOUT_MS. */
const SLOW_MS = 1_400;

let t: TestTables;
beforeAll(async () => {
  t = await testTables('slow-wakes');
});
afterAll(async () => {
  await t.drop();
});

/** A publish as the stand-in IoT Core saw it: its path, its payload, and when (simulated) it came and was answered. */
interface Publish {
  path: string;
  payload: { lease: string; revision?: number; by: string };
  at: number;
  answeredAt?: number;
}

/**
 * DynamoDB Local with every request counted while in flight and logged at its simulated send
 * time, on a simulatedClock (from the real time: DynamoDB Local applies TTLs on its own clock) whose
 * next timer fires only once no request has been in flight for a few turns of the event loop.
 */
function world() {
  const client = localClient(inject('ddbEndpoint'));
  let inFlight = 0;
  const sent: { command: string; table: unknown; at: number }[] = [];
  const settle = async () => {
    for (let quiet = 0; quiet < 3; ) {
      await new Promise((resolve) => setImmediate(resolve));
      quiet = inFlight ? 0 : quiet + 1;
    }
  };
  const clock = simulatedClock({ start: Math.floor(Date.now()), settle });
  client.middlewareStack.add(
    (next, context) => async (args) => {
      inFlight++;
      sent.push({ command: context.commandName ?? '?', table: (args.input as { TableName?: unknown }).TableName, at: clock.now() });
      try {
        return await next(args);
      } finally {
        inFlight--;
      }
    },
    { step: 'initialize', name: 'countInFlight' },
  );
  return { client, clock, sent, deps: coordinatorDeps(client, t.names, { clock, config: { ackWindowMs: 5_000 } }) };
}

/**
 * Leases `names`, each held by a on session row `session` (fresh), with b and c standing (last
 * renewed 10 minutes ago: an election pings them), then released by an operator's `release --force`
 * (holder and session gone, no election yet): the stream records of those releases, one per lease.
 */
async function releasedOnSession(deps: CoordinatorDeps, session: string, names: string[]): Promise<DynamoDBRecord[]> {
  const T = deps.clock.now();
  await deps.identities.write(await deps.identities.read(SESSION_COMPONENT, session), { set: { holderIdentity: `${session}_1`, hostname: 'host-a', leaseDurationSeconds: 15, acquireTime: T, renewTime: T } });
  for (const lease of names) {
    for (const [name, age] of [['b', 3], ['c', 2]] as const) {
      await deps.candidates.write(await deps.candidates.read(lease, name), { set: { binaryVersion: '1.30.0', emulationVersion: '1.30.0', preferredStrategies: [OLDEST_EMULATION_VERSION], renewTime: T - 10 * MIN, createdAt: T - age * 60 * MIN } });
    }
    await deps.leases.write(await deps.leases.read(lease), { set: { holderIdentity: 'a', holderInstance: 'a-1', session, leaseDurationSeconds: 15, acquireTime: T, renewTime: T, leaseTransitions: 0, fencingToken: 1, electedBy: 'coordinator' } });
  }
  for (const lease of names) await deps.leases.write(await deps.leases.read(lease), { set: { lastHolderIdentity: 'a' }, remove: ['holderIdentity', 'holderInstance', 'session'] });
  const mine = new Set(names);
  const released = (await streamRecords(t.client, t.names.leases)).filter((r) => r.eventName === 'MODIFY' && mine.has(r.dynamodb!.Keys!['name']!.S!) && r.dynamodb!.OldImage!['holderIdentity'] && !r.dynamodb!.NewImage!['holderIdentity']);
  expect(released).toHaveLength(names.length);
  return released;
}

/** IoT Core's data plane: `answer` settles each publish SLOW_MS (simulated) after it came. */
function iotData(clock: SimulatedClock, answer: { statusCode: number; body: string }) {
  const publishes: Publish[] = [];
  const client = new IoTDataPlaneClient({
    endpoint: 'https://iot.test',
    region: 'us-east-1',
    credentials: LOCAL_CREDENTIALS,
    maxAttempts: 1,
    requestHandler: {
      handle: (req: { path: string; body?: unknown }, opts?: { abortSignal?: AbortSignal }) =>
        new Promise((resolve, reject) => {
          const p: Publish = { path: decodeURIComponent(req.path), payload: JSON.parse(new TextDecoder().decode(req.body as Uint8Array)), at: clock.now() };
          publishes.push(p);
          const timer = clock.setTimer(SLOW_MS, () => {
            p.answeredAt = clock.now();
            resolve({ response: { statusCode: answer.statusCode, headers: { 'content-type': 'application/json' }, body: Readable.from([Buffer.from(answer.body)]) } });
          });
          opts?.abortSignal?.addEventListener('abort', () => (timer.cancel(), reject(new Error('aborted'))), { once: true });
        }),
    } as never,
  });
  return { client, publishes };
}

/** Runs one invocation of the lease stream's function on `records` in simulated time: its answer, and when it returned. */
async function invoke(w: ReturnType<typeof world>, iot: IoTDataPlaneClient, records: DynamoDBRecord[]) {
  const timers: TimerMessage[] = [];
  const o = observability('test', 'SILENT');
  const warn = vi.spyOn(o.logger, 'warn');
  const d: FunctionDeps = {
    coordinator: w.deps,
    timer: { schedule: async (m) => void ('electionId' in m ? timers.push(m) : undefined) },
    publish: async () => undefined,
    deadLetter: async () => undefined,
    wake: iotWaker(iot, t.names.leases, { clock: w.clock }),
    ...o,
  };
  const start = w.clock.now();
  let returnedAt: number | undefined;
  const invocation = leaseStream(d)({ Records: records }, lambdaContext('leaseStream', w.clock)).finally(() => (returnedAt = w.clock.now()));
  // simulated time, a tenth of a second at a time, until the invocation returns (at most 30 s)
  while (returnedAt === undefined && w.clock.now() - start < 30_000) await w.clock.run(100);
  return { answer: await invocation, returnedAt: returnedAt!, timers, warnings: warn.mock.calls.map((c) => c[0]) };
}

describe('the lease stream with an IoT Core that answers in 1.4 s', () => {
  it('opens every election and marks every ended term of a 6-record batch within 2 s; the batch then waits for its wakes together, not each record for its own', async () => {
    expect(SLOW_MS).toBeLessThan(WAKE_TIMEOUT_MS);
    const leases = ['slow-1', 'slow-2', 'slow-3', 'slow-4', 'slow-5', 'slow-6'];
    const w = world();
    const iot = iotData(w.clock, { statusCode: 200, body: '{}' });
    try {
      const released = await releasedOnSession(w.deps, 'slow-session', leases);
      const setUp = w.sent.length;
      const T = w.clock.now();
      const { answer, returnedAt, timers, warnings } = await invoke(w, iot.client, released);
      expect(answer).toEqual({ batchItemFailures: [] });

      // every election opened, within 2 s of the batch's start (each record waiting for its wake: 0, 1.4, … 7 s)
      const opened = await Promise.all(leases.map(async (lease) => (await w.deps.leases.read(lease)).item!.election!));
      const openedAfter = opened.map((e) => e.startedAt - T);
      expect(Math.max(...openedAfter), `elections opened after ${openedAfter.join(', ')} ms`).toBeLessThanOrEqual(2_000);
      expect(timers.map((m) => m.electionId).sort()).toEqual(opened.map((e) => e.id).sort());
      // every ended term marked on the session row, within 2 s too
      const marksAfter = w.sent.slice(setUp).filter((s) => s.command === 'UpdateItemCommand' && s.table === t.names.identities).map((s) => s.at - T);
      expect(marksAfter).toHaveLength(leases.length);
      expect(Math.max(...marksAfter), `session marks after ${marksAfter.join(', ')} ms`).toBeLessThanOrEqual(2_000);
      expect((await w.deps.identities.read(SESSION_COMPONENT, 'slow-session')).item!.endedTerms).toEqual(Object.fromEntries(leases.map((l) => [l, 1])));

      // on each lease's topic, two wakes: the record's (the release), then the election's write, sent as it landed,
      // not a stream hop later; all of them at once, and answered before the invocation returned
      expect(iot.publishes.map((p) => p.path).sort()).toEqual(leases.flatMap((l) => [`/topics/${pushTopic(t.names.leases, l)}`, `/topics/${pushTopic(t.names.leases, l)}`]).sort());
      const rows = await Promise.all(leases.map(async (lease) => (await w.deps.leases.read(lease)).item!));
      for (const row of rows) {
        const revisions = iot.publishes.filter((p) => p.payload.lease === row.name).map((p) => p.payload.revision);
        expect(revisions, row.name).toEqual([row.revision - 1, row.revision]);
      }
      expect(iot.publishes.map((p) => p.payload)).toEqual(expect.arrayContaining(leases.map((lease) => expect.objectContaining({ lease, by: 'stream' }))));
      for (const p of iot.publishes) expect(p.answeredAt).toBeLessThanOrEqual(returnedAt);
      expect(returnedAt - T).toBe(SLOW_MS); // the batch paid one slow answer, not six
      expect(warnings).toEqual([]);
    } finally {
      iot.client.destroy();
      w.client.destroy();
    }
  });

  it('a wake IoT Core refuses fails no record: the elections open, the marks land, the failures are logged', async () => {
    const leases = ['refused-1', 'refused-2'];
    const w = world();
    const iot = iotData(w.clock, { statusCode: 403, body: JSON.stringify({ message: 'not authorized to publish' }) });
    try {
      const released = await releasedOnSession(w.deps, 'refused-session', leases);
      const { answer, warnings } = await invoke(w, iot.client, released);
      expect(answer).toEqual({ batchItemFailures: [] });
      for (const lease of leases) expect((await w.deps.leases.read(lease)).item!.election).toBeDefined();
      expect((await w.deps.identities.read(SESSION_COMPONENT, 'refused-session')).item!.endedTerms).toEqual(Object.fromEntries(leases.map((l) => [l, 1])));
      expect(iot.publishes).toHaveLength(2 * leases.length); // each record's wake, and each election's
      expect(warnings).toEqual(iot.publishes.map(() => 'wake not published; the workers see the change at their next poll'));
    } finally {
      iot.client.destroy();
      w.client.destroy();
    }
  });
});

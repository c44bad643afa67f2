/**
 * The functions' DynamoDB requests wait for a slow answer as a worker's do (lib/functions/requests.ts).
 * Each try gave up after 2 s, while a worker waits at least 5 s (MIN_REQUEST_BOUND_MS): with
 * DynamoDB answering in 2.5 s, which the workers ride out, every tick, timer and stream invocation
 * failed (`TimeoutError … exceeded the configured 2000 ms requestTimeout`), and the lease stream,
 * retried without limit, stopped at its first record (a review, 2026-12-07). On DynamoDB Local
 * behind a loopback proxy that holds back each of its answers SLOW_MS: the clients the functions
 * are made with, the real AWS SDK and sockets.
 */
import { connect } from 'node:net';
import { afterAll, beforeAll, expect, inject, it } from 'vitest';
import { manualClock, sleepOn, systemClock } from '../../lib/clock.js';
import { coordinatorDeps, reconcileLease } from '../../lib/coordinator/reconcile.js';
import { depsFromEnv } from '../../lib/functions/env.js';
import { FUNCTION_REQUEST_TIMEOUT_MS } from '../../lib/functions/requests.js';
import { MIN_REQUEST_BOUND_MS } from '../../lib/sdk/bounded-client.js';
import { OLDEST_EMULATION_VERSION } from '../../lib/schemas/strategy.js';
import { close, listen, type Listening } from '../proxy.js';
import { testTables, type TestTables } from '../support.js';

/** How long the proxy holds back each answer: past the 2 s of before, well within a worker's 5 s (a busy machine's own delay fits in the rest). */
const SLOW_MS = 2_100;

let t: TestTables;
let proxy: Listening;
const saved = { ...process.env };

beforeAll(async () => {
  t = await testTables('slow-fn');
  const to = new URL(inject('ddbEndpoint'));
  // each chunk DynamoDB Local answers is passed on SLOW_MS later (in order: the timers are alike)
  proxy = await listen((s) => {
    const up = connect(Number(to.port), to.hostname);
    up.on('error', () => undefined);
    s.on('data', (d) => up.write(d));
    up.on('data', (d) => void sleepOn(systemClock, SLOW_MS).then(() => s.destroyed || s.write(d)));
    s.on('close', () => up.destroy());
    up.on('close', () => void sleepOn(systemClock, SLOW_MS).then(() => s.destroy()));
  });
  // the functions read their endpoint, Region and credentials from the environment, as on Lambda
  Object.assign(process.env, { AWS_ENDPOINT_URL: proxy.endpoint, AWS_REGION: 'us-east-1', AWS_ACCESS_KEY_ID: 'test', AWS_SECRET_ACCESS_KEY: 'test', AWS_EC2_METADATA_DISABLED: 'true' });
});
afterAll(async () => {
  process.env = saved;
  await close(proxy);
  await t.drop();
});

it("a try waits at least as long as a worker's whole request", () => {
  expect(FUNCTION_REQUEST_TIMEOUT_MS).toBeGreaterThanOrEqual(MIN_REQUEST_BOUND_MS);
});

it("DynamoDB answering in 2.1 s: a function's reconcile reads and writes through the functions' client and elects", async () => {
  const now = Date.now();
  const setup = coordinatorDeps(t.client, t.names);
  await setup.candidates.write(await setup.candidates.read('job', 'w'), { set: { binaryVersion: '1.30.0', emulationVersion: '1.30.0', preferredStrategies: [OLDEST_EMULATION_VERSION], renewTime: now, createdAt: now, identity: 'w-1' } });
  const env = { CONCLAVE_LEASES_TABLE: t.names.leases, CONCLAVE_CANDIDATES_TABLE: t.names.candidates, CONCLAVE_IDENTITIES_TABLE: t.names.identities, CONCLAVE_EVENT_BUS: 'bus', CONCLAVE_TIMER_QUEUE_URL: 'https://sqs.us-east-1.amazonaws.com/000000000000/timer' };
  // the decision on a clock held at the candidate's renewal: its reads, 2.1 s each, leave it fresh
  const fn = { ...depsFromEnv('leaseStream', env).coordinator, clock: manualClock(now) };
  // before the fix: TimeoutError, "exceeded the configured 2000 ms requestTimeout", at the lease's read
  const o = await reconcileLease(fn, 'job');
  expect(o.decision.kind).toBe('elect');
  expect((await setup.leases.read('job')).item).toMatchObject({ holderIdentity: 'w' });
}, 60_000);

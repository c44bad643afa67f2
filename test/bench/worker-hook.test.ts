/**
 * The steady-state scenario reads each worker's own request counts (COUNT_REQUESTS_EVERY_MS):
 * the demo's worker (lib/local/demo/worker.ts) run through bench/counting-worker.ts, and the baseline's worker, must print
 * them, by role — the leader's renewals, a follower's polls (Conclave: the designated successor's
 * apart from the other followers'), and (Conclave) the candidate row's writes apart — and once
 * more on exit. The Conclave pair is coordinated by an in-process
 * reconcile loop standing in for the functions. The demo's worker itself imports nothing of bench/.
 */
import { readFileSync } from 'node:fs';
import { randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { createBaselineTable, baselineTableName } from '../../bench/baseline/table.js';
import { WorkerProcess, type WorkerEvent, type WorkerSpec } from '../../lib/local/worker-process.js';
import { coordinatorDeps } from '../../lib/coordinator/reconcile.js';
import { LeaseStore } from '../../lib/stores/lease-store.js';
import { testTables, type TestTables } from '../support.js';
import { coordinatorLoop, waitFor } from '../sdk/harness.js';

// Steady timings (what is counted is who sent a request, not how often): a's term outlives a busy
// machine's stall, so a leads and b follows throughout. On 2 s / 1.5 s a stall gave a's term back,
// b took it, and b's requests counted as the leader's. RENEW_INTERVAL_MS (below): a coordinated
// leader's default renews only 2 retry periods before its deadline.
const TIMING = { leaseDurationMs: 8_000, renewDeadlineMs: 6_000, retryPeriodMs: 500 } as const;
const BASELINE_WORKER = fileURLToPath(new URL('../../bench/baseline/worker.ts', import.meta.url));
const COUNTING_WORKER = fileURLToPath(new URL('../../bench/counting-worker.ts', import.meta.url));
const DEMO_WORKER = fileURLToPath(new URL('../../lib/local/demo/worker.ts', import.meta.url));
let t: TestTables;
let prefix: string;
let leases: LeaseStore;

beforeAll(async () => {
  t = await testTables('bench-hook');
  prefix = t.names.leases.replace(/-leases$/, '');
  await createBaselineTable(t.client, baselineTableName(prefix));
  leases = new LeaseStore(t.client, t.names.leases);
});
afterAll(() => t.drop());

type Tallies = NonNullable<WorkerEvent['requests']>;
const lastCounts = (w: WorkerProcess): Tallies => w.events.filter((e) => e.event === 'requests').at(-1)?.requests ?? {};

const reads = (t: Tallies) => (t['follower']?.requests ?? 0) + (t['successor']?.requests ?? 0);

async function pair(script: string) {
  const lease = `hook-${randomUUID().slice(0, 8)}`;
  const coordinator = script === BASELINE_WORKER ? undefined : coordinatorLoop(coordinatorDeps(t.client, t.names, { config: { ackWindowMs: 500 } }), lease);
  const spec = (identity: string): WorkerSpec => ({ identity, lease, emulationVersion: '1.30.0', binaryVersion: '1.30.0', timing: TIMING, script });
  const env = { endpoint: inject('ddbEndpoint'), tablePrefix: prefix, extra: { COUNT_REQUESTS_EVERY_MS: '200', RENEW_INTERVAL_MS: '2000' } };
  const first = new WorkerProcess(spec('a'), env);
  await waitFor('a to lead', () => first.leading);
  const second = new WorkerProcess(spec('b'), env);
  // a few polls and renewals counted on each side
  // (Conclave: b is the only other candidate, so the coordinator names it successor: its polls count as `successor` from then on)
  const followed = () => (script === BASELINE_WORKER ? reads(lastCounts(second)) : (lastCounts(second)['successor']?.requests ?? 0)) >= 3;
  await waitFor('counts from both', () => followed() && (lastCounts(first)['leader']?.requests ?? 0) >= 6);
  // the roles held throughout: a's one term, and b never leading (a failure here names a lost term, not the counting)
  expect(first.events.filter((e) => e.event === 'started' || e.event === 'stopped').map((e) => e.event)).toEqual(['started']);
  expect(second.events.filter((e) => e.event === 'started')).toEqual([]);
  // (Conclave) The coordinator stops before the workers do: b withdraws its candidacy before it
  // reads the lease to leave it (LeaderElector.leaveLease), and a pass between the two un-names b
  // itself, so b reads no name to decline. A busy machine stalling b there made its decline
  // missing from the counts (seen at load 11: 1 run in 12; every run with a 1 s stall there). Once
  // stopped, nothing but b's own decline takes b's name off the row: named at its stop (read here),
  // b must decline it.
  await coordinator?.stop();
  expect(coordinator?.errors ?? []).toEqual([]);
  const namedAtStop = script === BASELINE_WORKER ? undefined : (await leases.read(lease)).item?.successor;
  await second.stop(); // the follower first, so it cannot take the lease the leader releases
  const namedAfterStop = script === BASELINE_WORKER ? undefined : (await leases.read(lease)).item?.successor;
  await first.stop();
  return { leader: first, follower: second, namedAtStop, namedAfterStop };
}

describe('request counting in the worker processes', () => {
  it('the demo worker is a plain consumer: it imports the SDK by its package name and nothing of bench/', () => {
    const imports = [...readFileSync(DEMO_WORKER, 'utf8').matchAll(/^import .* from '([^']+)';$|import\('([^']+)'\)/gm)].map((m) => m[1] ?? m[2]);
    expect(imports).toEqual(['node:http', '@aws-sdk/client-dynamodb', '@conclave/sdk', '@conclave/sdk/push']); // node:http: its application behind a load balancer (HTTP_PORT); the push path, loaded on use
  });

  it('the demo worker through bench/counting-worker.ts: leader renewals, follower polls and candidate writes each under their own role, flushed on exit', async () => {
    const { leader, follower, namedAtStop, namedAfterStop } = await pair(COUNTING_WORKER);
    const l = lastCounts(leader);
    const f = lastCounts(follower);
    // b was the lease's successor when it stopped, and its own decline took its name off
    expect([namedAtStop, namedAfterStop]).toEqual(['b', undefined]);
    // renewals, and on the way out one read of the lease (whom to hand it to) and the hand-off or release
    expect(Object.keys(l.leader!.commands).sort()).toEqual(['GetItem', 'UpdateItem']);
    expect(l.leader!.commands['GetItem']).toBe(1);
    expect(l.leader!.wru).toBeGreaterThan(0);
    // the designated successor's polls apart from the polls before it was named, and on its way out
    // (stopped first) its name taken off the lease: one write, more only if a renewal moved the row
    // between its read and that write (LeaderElector.leaveLease)
    expect(Object.keys(f.successor!.commands).sort()).toEqual(['GetItem', 'UpdateItem']);
    expect(f.successor!.commands['UpdateItem']).toBeGreaterThanOrEqual(1);
    expect(f.successor!.rru).toBeGreaterThan(0);
    for (const c of Object.keys(f.follower?.commands ?? {})) expect(c).toBe('GetItem');
    expect(l['successor']).toBeUndefined();
    expect(f['leader']).toBeUndefined();
    // the candidate rows: registered (and acknowledged, withdrawn) apart from the lease's requests
    expect(l.candidate!.requests).toBeGreaterThanOrEqual(1);
    expect(f.candidate!.requests).toBeGreaterThanOrEqual(1);
    // the last line is printed after the elector has stopped: it includes the release
    const events = leader.events.map((e) => e.event);
    expect(events.lastIndexOf('requests')).toBe(events.indexOf('exited') - 1);
  });

  it('the baseline worker: leader writes and follower reads apart, no candidate role', async () => {
    const { leader, follower } = await pair(BASELINE_WORKER);
    const l = lastCounts(leader);
    const f = lastCounts(follower);
    expect(Object.keys(l.leader!.commands)).toEqual(['PutItem']);
    expect(Object.keys(f.follower!.commands)).toEqual(['GetItem']);
    expect(f['leader']).toBeUndefined();
    expect(l['candidate']).toBeUndefined();
  });
});

/**
 * The chaos harness's own judgements, on one real worker process: the settle after the last fault
 * (chaos/harness.ts) ends when the fleet has converged, and what a sessionLoss did to its worker
 * (chaos/injectors.ts) is counted for the window as the worker lived it — a session that ended
 * while its writes were refused is counted though the worker's line saying so reached the harness
 * only after the window closed (a busy harness reads late). A worker that dies starting fails the
 * warm-up at once, named; a fault aimed at a lease's leader hits the holder the lease row names (a
 * sessionLoss: a process that still leads it as the fault takes effect); a kill's restart starts a process loaded before the kill, so its window ends when the worker is back; a kill ends the terms it held when the signal is sent, not when its window opened.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { randomUUID } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { CoordinatorFaults } from '../../chaos/coordinator-faults.js';
import { Fleet } from '../../chaos/fleet.js';
import { settle, warmUp } from '../../chaos/harness.js';
import { Injectors } from '../../chaos/injectors.js';
import { rng } from '../../chaos/rng.js';
import { CHAOS_ELECTION, generateSchedule, type Fault } from '../../chaos/schedule.js';
import { Feed } from '../../chaos/verdict.js';
import { waitFor } from '../../chaos/wait.js';
import { createLedgerTable, deleteLedgerTable, ledgerTableName } from '../../lib/history/ledger.js';
import { monoNow, type FaultWindow } from '../../lib/history/schema.js';
import { localClient } from '../../lib/local/dynamodb-local.js';
import { startLocalRuntime, type LocalRuntime } from '../../lib/local/runtime.js';
import { deleteTables } from '../../lib/local/tables.js';
import { CandidateStore } from '../../lib/stores/candidate-store.js';
import { LeaseStore } from '../../lib/stores/lease-store.js';
import { WAIT_GUARD_MS } from '../guards.js';

const s = { ...generateSchedule(23, 0, { workers: 1, leases: 1, kinds: ['sessionLoss'], session: true, push: false }), faults: [] };
const lease = s.leases[0]!;
const dir = mkdtempSync(join(tmpdir(), 'conclave-chaos-harness-'));
const prefix = `chaos-h-${randomUUID().slice(0, 8)}`;
let rt: LocalRuntime;
let fleet: Fleet;
let injectors: Injectors;
let leases: LeaseStore;
let feed: Feed;
let candidates: CandidateStore;

beforeAll(async () => {
  const coordinator = new CoordinatorFaults(rng(1));
  rt = await startLocalRuntime({ endpoint: inject('ddbEndpoint'), prefix, dir, tickEveryMs: s.timing.tickMs, config: CHAOS_ELECTION, logLevel: 'SILENT' });
  await createLedgerTable(rt.client, ledgerTableName(prefix));
  leases = new LeaseStore(rt.client, rt.tables.leases);
  candidates = new CandidateStore(rt.client, rt.tables.candidates);
  feed = new Feed();
  const errorsLog = join(dir, 'worker-errors.log');
  writeFileSync(errorsLog, '');
  fleet = new Fleet(s, { rt, prefix, ledgerTable: ledgerTableName(prefix), errorsLog }, feed, (p, l) => feed.onLine(p, l));
  injectors = new Injectors({ s, rt, fleet, feed, coordinator, leases, print: () => undefined });
  await fleet.start(s.workers[0]!).readyOrExited();
});

afterAll(async () => {
  await fleet?.stopAll();
  await rt?.stop();
  const admin = localClient(inject('ddbEndpoint'));
  await deleteTables(admin, rt.tables);
  await deleteLedgerTable(admin, ledgerTableName(prefix));
  admin.destroy();
});

describe('settle', () => {
  it('ends once the worker leads, the table agrees, its row is in place and the job has run: converged', async () => {
    expect(await settle(s, fleet, feed, leases, candidates, { stableMs: s.timing.leaseDurationMs, timeoutMs: WAIT_GUARD_MS })).toBe(true);
    expect((await leases.read(lease)).item?.holderInstance).toBe(fleet.procs.get('w1')!.instances[lease]);
  });
});

describe('sessionLoss outcome', () => {
  it("counts a session that ended in the window, though the worker's line saying so arrives after it closed", async () => {
    const p = fleet.procs.get('w1')!;
    const heldOnSession = await waitFor(async () => {
      const l = (await leases.read(lease)).item;
      return fleet.leading(lease).length === 1 && l !== undefined && l.holderInstance === p.instances[lease] && l.session !== undefined;
    }, { timeoutMs: WAIT_GUARD_MS, everyMs: 100 });
    expect(heldOnSession, 'the worker leads on its session').toBe(true);

    // the harness reads none of the worker's lines meanwhile, as when it is too busy to
    p.child.stdout!.pause();
    const f: Fault = { kind: 'sessionLoss', at: 0, worker: 'w1', durationMs: 4_000, mode: 'error' };
    const w: FaultWindow = { kind: f.kind, from: monoNow(), to: '0', detail: 'sessionLoss' };
    expect(await injectors.begin(f, w)).toBe(true);
    // DynamoDB says the session ended: the elector renews its lease itself
    const offSession = await waitFor(async () => {
      const l = (await leases.read(lease)).item;
      return l !== undefined && l.holderInstance === p.instances[lease] && l.session === undefined;
    }, { timeoutMs: WAIT_GUARD_MS, everyMs: 100 });
    expect(offSession, 'the lease held without a session during the loss').toBe(true);
    await injectors.end(f, w);
    w.to = monoNow();
    p.child.stdout!.resume();

    // told once the worker has answered the loss's end
    await injectors.endAll();
    const [x] = injectors.sessionLosses;
    expect(x!.ledAtStart, JSON.stringify(x)).toEqual([lease]);
    expect(x!.sessionsEnded, JSON.stringify(x)).toBe(1);
  });
});

describe("a fault aimed at a lease's leader", () => {
  it('hits the worker the lease row names, not one whose end of term is still in transit to the harness', async () => {
    const held = await waitFor(async () => (await leases.read(lease)).item?.holderInstance, { timeoutMs: WAIT_GUARD_MS, everyMs: 100 });
    expect(held, 'the lease has a holder').toBeDefined();
    // w2 led before; its line saying its term ended has not reached the harness yet
    const hit: string[] = [];
    const proc = (identity: string, instance: string) => ({ alive: true, paused: false, plan: { identity }, instances: { [lease]: instance }, send: () => hit.push(identity) });
    const leader = proc('w1', held!);
    const former = proc('w2', 'w2-former-instance');
    const view = { procs: new Map([['w2', former], ['w1', leader]]), leading: () => [former], steps: new Map() } as unknown as Fleet;
    const two = { ...s, workers: [s.workers[0]!, { ...s.workers[0]!, identity: 'w2' }] };
    const aimed = new Injectors({ s: two, rt, fleet: view, feed: new Feed(), coordinator: new CoordinatorFaults(rng(2)), leases, print: () => undefined });
    const f: Fault = { kind: 'clockStep', at: 0, worker: `leader:${lease}`, stepMs: 10, durationMs: 1_000 };
    expect(await aimed.begin(f, { kind: f.kind, from: monoNow(), to: '0', detail: 'clockStep' })).toBe(true);
    expect(hit).toEqual(['w1']);
  });

  it('a sessionLoss hits a process that leads the lease as the fault takes effect: aimed again when its term had ended meanwhile', async () => {
    const row = await waitFor(async () => {
      const l = (await leases.read(lease)).item;
      return l?.holderInstance !== undefined && l.session !== undefined ? l : undefined;
    }, { timeoutMs: WAIT_GUARD_MS, everyMs: 100 });
    expect(row, 'the lease held on a session').toBeDefined();
    // By its lines w1 leads, with the row's token, when the harness looks; its term ends (a starved
    // process at its renew deadline, the row still naming it) before it takes the fault, and it
    // leads again by the time it takes the fault a second time.
    const stats = { started: 1, renewals: 0, failedRenewals: 0, ended: 0 };
    const sent: unknown[] = [];
    let takes = 0;
    const w1 = {
      alive: true,
      paused: false,
      plan: { identity: 'w1' },
      instances: { [lease]: row!.holderInstance },
      open: new Map([[lease, { fencingToken: row!.fencingToken }]]),
      session: stats,
      send: (cmd: unknown) => sent.push(cmd),
      sendMarked: (cmd: unknown) => {
        sent.push(cmd);
        return Promise.resolve({ stats, led: new Map(++takes === 1 ? [] : [[lease, row!.fencingToken]]) });
      },
    };
    const view = { procs: new Map([['w1', w1]]), sessionFaults: new Map(), steps: new Map() } as unknown as Fleet;
    const aimed = new Injectors({ s, rt, fleet: view, feed: new Feed(), coordinator: new CoordinatorFaults(rng(3)), leases, print: () => undefined });
    const f: Fault = { kind: 'sessionLoss', at: 0, worker: `leader:${lease}`, durationMs: 2_000, mode: 'error' };
    const w: FaultWindow = { kind: f.kind, from: monoNow(), to: '0', detail: 'sessionLoss' };
    expect(await aimed.begin(f, w)).toBe(true);
    await aimed.end(f, w);
    w.to = monoNow();
    await aimed.endAll();
    const [x] = aimed.sessionLosses;
    expect(x!.ledAtStart, JSON.stringify(x)).toEqual([lease]);
    // the miss lifted, the fault sent again, then lifted at its end
    const loss = { session: { mode: 'error', rate: 1 } };
    expect(sent.map((c) => ({ session: (c as { session: unknown }).session }))).toEqual([loss, { session: null }, loss, { session: null }]);
  });
});

describe('the warm-up', () => {
  it('fails at once, naming the worker, its exit code and its stderr, when a worker exits before it is ready', async () => {
    // a skew the worker's environment refuses: it exits while starting, never ready
    const bad = { ...s, workers: [{ ...s.workers[0]!, identity: 'w9', skewMs: 0.5 }] };
    const dead = new Fleet(bad, { rt, prefix, ledgerTable: ledgerTableName(prefix), errorsLog: join(dir, 'dead-worker-errors.log') }, new Feed(), () => undefined);
    await expect(warmUp(bad, dead, { endpoint: inject('ddbEndpoint'), dir }, () => undefined, 0)).rejects.toThrow(/worker w9 exited before it was ready \(exit code 1\)[\s\S]*CHAOS_SKEW_MS/);
  });
});

/** This process's chaos worker processes, by pid. */
const workerPids = (): number[] =>
  execFileSync('ps', ['-o', 'pid=,args=', '--ppid', String(process.pid)], { encoding: 'utf8' })
    .split('\n')
    .filter((l) => l.includes('worker.ts'))
    .map((l) => Number.parseInt(l.trim(), 10));

describe("a kill's restart", () => {
  it('starts a process loaded while the killed one ran: the window ends when the worker is back, not when its boot begins', async () => {
    expect(await waitFor(() => fleet.procs.get('w1')!.open.has(lease), { timeoutMs: WAIT_GUARD_MS, everyMs: 50 }), 'w1 leads the lease before it is killed').toBe(true);
    const before = workerPids();
    const f: Fault = { kind: 'kill', at: 0, worker: 'w1', restartAfterMs: 500 };
    // the window opened 50 ms before the kill is aimed (a busy harness reading the lease row meanwhile)
    const aimed = monoNow();
    const w: FaultWindow = { kind: f.kind, from: (BigInt(aimed) - 50_000_000n).toString(), to: '0', detail: 'kill' };
    const led = fleet.procs.get('w1')!.open.get(lease);
    expect(await injectors.begin(f, w)).toBe(true);
    // its term ends when the signal is sent, not when the window opened: the work wrote until then
    const stop = feed.history.find((h) => h.event === 'stopped' && h.reason === 'killed' && h.instance === led!.instance);
    expect(BigInt(stop!.mono)).toBeGreaterThanOrEqual(BigInt(aimed));
    await injectors.end(f, w);
    const p = fleet.procs.get('w1')!;
    expect(before, `the restarted process (pid ${p.child.pid}) was running before the kill`).toContain(p.child.pid);
    await p.readyOrExited();
  });
});

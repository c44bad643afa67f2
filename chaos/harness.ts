/**
 * Runs one fault schedule on the local runtime: the real handlers, stream pollers, timer and tick,
 * chaos worker processes (chaos/fleet.ts, running chaos/worker.ts), the faults at their times
 * (chaos/timeline.ts plays the schedule, chaos/injectors.ts begins and ends each fault), then a
 * settle period after the last one healed. The history, the ledger of accepted fenced writes and
 * the harness's own observations of the leases table go to the checker (chaos/verdict.ts).
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { randomUUID } from 'node:crypto';
import { join, resolve } from 'node:path';
import type { Verdict } from '../lib/history/checker.js';
import { createLedgerTable, deleteLedgerTable, ledgerTableName, readLedger } from '../lib/history/ledger.js';
import type { EndState, FaultWindow, LedgerEntry } from '../lib/history/schema.js';
import { localClient } from '../lib/local/dynamodb-local.js';
import type { PushBrokerStats } from '../lib/local/push-broker.js';
import { startLocalRuntime, type LocalRuntime } from '../lib/local/runtime.js';
import { deleteTables } from '../lib/local/tables.js';
import { CandidateStore } from '../lib/stores/candidate-store.js';
import { LeaseStore } from '../lib/stores/lease-store.js';
import { CoordinatorFaults } from './coordinator-faults.js';
import { Fleet, JOB_LEASE } from './fleet.js';
import { Injectors, type SessionLossOutcome } from './injectors.js';
import { rng } from './rng.js';
import { CHAOS_ELECTION, type FaultFigureKind, type Schedule } from './schedule.js';
import { playSchedule } from './timeline.js';
import { endState, faultsByKind, Feed, judge, type SessionFigures } from './verdict.js';
import { waitFor } from './wait.js';

export { JOB_LEASE } from './fleet.js';
export { ChaosProcess, WORKER } from './process.js';
export type { SessionLossOutcome } from './injectors.js';
export type { SessionFigures } from './verdict.js';

export interface HarnessOptions {
  /** DynamoDB Local (shared by every schedule of a run; each schedule has its own tables). */
  endpoint: string;
  /** Per-schedule files go to `${dir}/${seed}-${index}/`. */
  dir: string;
  print?: (line: string) => void;
  /** The checker's bound on leaderless time after the last fault healed. @default 15 s */
  healMs?: number;
  /** Overlap tolerated between two terms. @default 0 (one machine, one monotonic clock) */
  allowedSkewMs?: number;
  /**
   * How long the first leaders may take before the warm-up fails: a hang guard, not a budget (beside
   * busy processes the first leaders took 20 s at load 20, and over 30 s at load 40). @default 180 s
   */
  warmupTimeoutMs?: number;
  /** After the last fault: how long every lease must have one agreed leader before the run ends. @default 2 lease durations */
  stableMs?: number;
  /** After the last fault: how long to wait for that before the checker judges as things are (a hang guard). @default 180 s */
  settleTimeoutMs?: number;
}

export interface ScheduleResult {
  schedule: Schedule;
  verdict: Verdict;
  windows: FaultWindow[];
  /** Injections actually made, by kind (ticks skipped, batches duplicated, requests failed, …). */
  injected: Record<string, number>;
  /** Schedule faults by kind, clock skew counted per skewed worker. */
  faultsByKind: Partial<Record<FaultFigureKind, number>>;
  fenced: { accepted: number; refused: number; zombieAccepted: number; zombieRefused: number };
  deadLetters: number;
  /** What went over the push path's broker (undefined: the workers polled). */
  push: PushBrokerStats | undefined;
  /** The workers' sessions (undefined: no sessions in this schedule). */
  sessions: SessionFigures | undefined;
  /** What each sessionLoss did, in the order they began. */
  sessionLosses: SessionLossOutcome[];
  workerErrors: number;
  elapsedMs: number;
  dir: string;
}

/** Starts the workers and waits for a leader of every lease; fails at once if a worker dies starting. */
export async function warmUp(s: Schedule, fleet: Fleet, o: HarnessOptions, print: (l: string) => void, began: number): Promise<void> {
  const runtimeUp = performance.now();
  for (const w of s.workers) fleet.start(w);
  await Promise.all([...fleet.procs.values()].map((p) => p.readyOrExited()));
  const workersReady = performance.now();
  const timeoutMs = o.warmupTimeoutMs ?? 180_000;
  const led = await waitFor(() => s.leases.every((l) => fleet.leading(l).length > 0), { timeoutMs, everyMs: 100 });
  if (!led) throw new Error(`warm-up: no leader for ${s.leases.filter((l) => fleet.leading(l).length === 0).join(', ')} within ${timeoutMs} ms`);
  const secs = (a: number, b: number) => `${((b - a) / 1000).toFixed(1)}s`;
  print(`  warm-up ${secs(began, performance.now())} (runtime ${secs(began, runtimeUp)}, workers ${secs(runtimeUp, workersReady)}, first leaders ${secs(workersReady, performance.now())}): leaders ${s.leases.map((l) => `${l}=${fleet.leading(l)[0]!.plan.identity}`).join(', ')}`);
}

/**
 * After the last fault: until every lease has had one leader, agreeing with the table, and every
 * running worker's row in place, for `stableMs`, and the scheduled job has run at least once (so its
 * terms are judged too, however slowly the processes came up). Whether it did before `timeoutMs` (a
 * hang guard: if not, the checker judges as things are; its leaderless rule counts from the heal,
 * not from here).
 */
export async function settle(s: Schedule, fleet: Fleet, feed: Feed, leases: LeaseStore, candidates: CandidateStore, o: { stableMs: number; timeoutMs: number }): Promise<boolean> {
  const converged = async () => {
    let ok = feed.history.some((r) => r.lease === JOB_LEASE && r.event === 'started');
    for (const lease of s.leases) {
      const ls = fleet.leading(lease);
      const l = (await leases.read(lease)).item;
      const rows = (await candidates.list(lease)).candidates;
      const rowsOk = fleet.alive().every((p) => rows.some((r) => r.name === p.plan.identity && r.identity === p.instances[lease]));
      if (ls.length !== 1 || l?.holderInstance !== ls[0]!.instances[lease] || l?.election || l?.preferredHolder || !rowsOk) ok = false;
    }
    return ok;
  };
  let stableSince: number | undefined;
  const stable = async () => {
    if (!(await converged())) return (stableSince = undefined);
    stableSince ??= performance.now();
    return performance.now() - stableSince >= o.stableMs;
  };
  return (await waitFor(stable, { timeoutMs: o.timeoutMs, everyMs: 200 })) === true;
}

export async function runSchedule(s: Schedule, o: HarnessOptions): Promise<ScheduleResult> {
  const print = o.print ?? ((l: string) => process.stdout.write(`${l}\n`));
  const healMs = o.healMs ?? 15_000;
  const began = performance.now();
  const dir = resolve(o.dir, `${s.seed}-${s.index}`);
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'schedule.json'), `${JSON.stringify(s, null, 2)}\n`);
  const errorsLog = join(dir, 'worker-errors.log');
  writeFileSync(errorsLog, '');

  const coordinator = new CoordinatorFaults(rng(s.scheduleSeed ^ 0x5eed));
  const prefix = `chaos-${s.index}-${randomUUID().slice(0, 8)}`;
  const rt: LocalRuntime = await startLocalRuntime({ endpoint: o.endpoint, prefix, dir, tickEveryMs: s.timing.tickMs, config: CHAOS_ELECTION, logLevel: 'SILENT', decorate: coordinator.decorate, intercept: coordinator.intercept });
  const ledgerTable = ledgerTableName(prefix);
  await createLedgerTable(rt.client, ledgerTable);
  const leases = new LeaseStore(rt.client, rt.tables.leases);
  const candidates = new CandidateStore(rt.client, rt.tables.candidates);

  const feed = new Feed();
  const fleet = new Fleet(s, { rt, prefix, ledgerTable, errorsLog }, feed, (p, l) => feed.onLine(p, l));
  const injectors = new Injectors({ s, rt, fleet, feed, coordinator, leases, print });
  const stopWatching = feed.watch(leases, s.leases, (lease, holder, onSession) => injectors.seen(lease, holder, onSession));
  let ledger: LedgerEntry[] = [];
  let end: EndState | undefined;
  let pushStats: PushBrokerStats | undefined;
  try {
    await warmUp(s, fleet, o, print, began);
    // a kill's or hand-off's restart starts a spare loaded beforehand: the fault lasts as scheduled, not a boot longer
    await fleet.sparesLoaded();
    await playSchedule(s, injectors, feed);
    if (injectors.heldMs > 0) print(`  the schedule stood still ${(injectors.heldMs / 1000).toFixed(1)}s while faults waited for their target (a leader on its session)`);
    const healed = performance.now();
    const settled = await settle(s, fleet, feed, leases, candidates, { stableMs: o.stableMs ?? 2 * s.timing.leaseDurationMs, timeoutMs: o.settleTimeoutMs ?? 180_000 });
    end = await endState(s, fleet.alive(), candidates);
    print(`  healed; ${settled ? 'settled' : 'not settled (the checker judges)'} ${((performance.now() - healed) / 1000).toFixed(1)}s after the last fault`);
  } finally {
    await stopWatching();
    await fleet.stopAll();
    await injectors.endAll();
    await coordinator.drain();
    await fleet.drain();
    ledger = await readLedger(rt.client, ledgerTable);
    pushStats = s.push ? rt.pushBroker?.stats() : undefined;
    await rt.stop();
    // DynamoDB Local keeps every table in memory for the rest of the run.
    const admin = localClient(o.endpoint);
    await deleteTables(admin, rt.tables);
    await deleteLedgerTable(admin, ledgerTable);
    admin.destroy();
  }

  const verdict: Verdict = judge(feed, ledger, end!, dir, { healMs, allowedSkewMs: o.allowedSkewMs ?? 0, episodicLeases: [JOB_LEASE] });
  for (const [k, v] of Object.entries(coordinator.injected)) feed.injected[k] = (feed.injected[k] ?? 0) + v;
  return {
    schedule: s,
    verdict,
    windows: feed.windows,
    injected: feed.injected,
    faultsByKind: faultsByKind(s),
    fenced: feed.fenced,
    deadLetters: rt.deadLetters.length,
    push: pushStats,
    sessions: feed.sessions(s),
    sessionLosses: injectors.sessionLosses,
    workerErrors: feed.workerErrors,
    elapsedMs: performance.now() - began,
    dir,
  };
}

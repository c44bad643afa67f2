/**
 * Runs one fault schedule on the local runtime: the real handlers, stream pollers, timer and tick,
 * chaos worker processes (chaos/worker.ts), the faults at their times, then a settle period after
 * the last one healed. Collects the history, the ledger of accepted fenced writes and the harness's
 * own observations of the leases table, and hands them to the checker (lib/history/checker.ts).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { appendFileSync, mkdirSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { checkHistory, type Verdict } from '../lib/history/checker.js';
import { createLedgerTable, deleteLedgerTable, ledgerTableName, readLedger } from '../lib/history/ledger.js';
import { monoNow, type EndState, type FaultWindow, type HistoryRecord, type LedgerEntry, type Observation } from '../lib/history/schema.js';
import { DeleteItemCommand } from '@aws-sdk/client-dynamodb';
import { marshall } from '@aws-sdk/util-dynamodb';
import { localClient } from '../lib/local/dynamodb-local.js';
import { instanceStoppedEvent } from '../lib/local/ecs-task.js';
import type { PushBrokerStats } from '../lib/local/push-broker.js';
import { startLocalRuntime, type LocalRuntime } from '../lib/local/runtime.js';
import { CandidateStore } from '../lib/stores/candidate-store.js';
import { LeaseStore } from '../lib/stores/lease-store.js';
import { deleteTables } from '../lib/local/tables.js';
import { CoordinatorFaults } from './coordinator-faults.js';
import type { DynamoDBFault } from './ddb-faults.js';
import { WorkerLine, type WorkerCommand, type WorkerEnvInput } from './protocol.js';
import { rng } from './rng.js';
import { CHAOS_ELECTION, describeFault, faultDuration, type Fault, type FaultFigureKind, type Schedule, type WorkerPlan } from './schedule.js';

export const WORKER = fileURLToPath(new URL('./worker.ts', import.meta.url));
/** The scheduled job every worker process also runs (withLease, run once per window): chaos/worker.ts. */
export const JOB_LEASE = 'scheduled-job';
/** Faults the coordinator's side (CoordinatorFaults) injects; the harness does the others itself. */
const COORDINATOR_SIDE: ReadonlySet<Fault['kind']> = new Set(['coordinatorDown', 'streamDuplicate', 'streamReorder', 'streamDelay', 'streamStale', 'reconcilerCrash', 'timerLoss', 'publishFailure']);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

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
  /** How long the first leaders may take. @default 30 s */
  warmupTimeoutMs?: number;
  /** After the last fault: how long every lease must have one agreed leader before the run ends. @default 2 lease durations */
  stableMs?: number;
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

export interface SessionFigures {
  /** Summed over every worker process (the last `session` line of each): rows started, renewals answered in time, renewals failed, sessions ended. */
  started: number;
  renewals: number;
  failedRenewals: number;
  ended: number;
  /** The harness's reads of the leases table (every 100 ms) that found a lease held on a session, or held without one (its holder renewing it itself). */
  leaseReadsOnSession: number;
  leaseReadsOwn: number;
}

/** What one sessionLoss did to the worker it hit. */
export interface SessionLossOutcome {
  worker: string;
  mode: string;
  /** Its sessions that ended during the window, and its renewals that failed. */
  sessionsEnded: number;
  failedRenewals: number;
  /** Leases the harness saw held by the worker without a session during the window: renewed by their elector itself. */
  heldWithoutSession: string[];
  /** Leases the worker led when the window began, and those of them it still led, in the same term, when it ended. */
  ledAtStart: string[];
  kept: string[];
  /** The worker's terms that stopped during the window, as `lease:reason` (killed, cancelled, renewDeadline, …). */
  stops: string[];
}

type SessionStats = Extract<WorkerLine, { type: 'session' }>['stats'];

/** One worker start-up as an OS process. */
export class ChaosProcess {
  readonly child: ChildProcess;
  instances: Record<string, string> = {};
  /** Leases this process leads now (by its own history lines): the term's token and when it began. */
  readonly open = new Map<string, { fencingToken: number; mono: string; identity: string; instance: string }>();
  readonly ready: Promise<void>;
  /** Resolves once the process exited and its stdout was read to the end. */
  readonly closed: Promise<void>;
  alive = true;
  paused = false;

  constructor(
    readonly plan: WorkerPlan,
    env: WorkerEnvInput,
    onLine: (p: ChaosProcess, l: WorkerLine) => void,
    onBadLine: (text: string) => void,
  ) {
    this.child = spawn(process.execPath, ['--import', 'tsx', WORKER], { env: { ...process.env, ...env }, stdio: ['pipe', 'pipe', 'pipe'] });
    let ready!: () => void;
    this.ready = new Promise((r) => (ready = r));
    const exited = new Promise<void>((r) => this.child.on('exit', () => r()));
    const lines = createInterface({ input: this.child.stdout! });
    const eof = new Promise<void>((r) => lines.on('close', () => r()));
    lines.on('line', (text) => {
      let parsed: ReturnType<typeof WorkerLine.safeParse>;
      try {
        parsed = WorkerLine.safeParse(JSON.parse(text));
      } catch {
        return onBadLine(text);
      }
      if (!parsed.success) return onBadLine(text);
      const l = parsed.data;
      if (l.type === 'ready') {
        this.instances = l.instances;
        ready();
      }
      if (l.type === 'history') {
        if (l.record.event === 'started') this.open.set(l.record.lease, { fencingToken: l.record.fencingToken, mono: l.record.mono, identity: l.record.identity, instance: l.record.instance });
        else this.open.delete(l.record.lease);
      }
      onLine(this, l);
    });
    this.child.stderr!.on('data', (d: Buffer) => onBadLine(d.toString()));
    this.child.stdin!.on('error', () => undefined); // a killed worker's pipe
    this.closed = Promise.all([exited, eof]).then(() => {
      this.alive = false;
    });
  }

  send(cmd: WorkerCommand): void {
    if (this.alive) this.child.stdin!.write(`${JSON.stringify(cmd)}\n`);
  }
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

  const faults = new CoordinatorFaults(rng(s.scheduleSeed ^ 0x5eed));
  const prefix = `chaos-${s.index}-${randomUUID().slice(0, 8)}`;
  const rt: LocalRuntime = await startLocalRuntime({
    endpoint: o.endpoint,
    prefix,
    dir,
    tickEveryMs: s.timing.tickMs,
    config: CHAOS_ELECTION,
    logLevel: 'SILENT',
    decorate: faults.decorate,
    intercept: faults.intercept,
  });
  const ledgerTable = ledgerTableName(prefix);
  await createLedgerTable(rt.client, ledgerTable);
  const leases = new LeaseStore(rt.client, rt.tables.leases);
  const candidates = new CandidateStore(rt.client, rt.tables.candidates);

  const history: HistoryRecord[] = [];
  const observations: Observation[] = [];
  const windows: FaultWindow[] = [];
  const injected: Record<string, number> = {};
  const fenced = { accepted: 0, refused: 0, zombieAccepted: 0, zombieRefused: 0 };
  let workerErrors = 0;
  const count = (k: string) => (injected[k] = (injected[k] ?? 0) + 1);

  const procs = new Map<string, ChaosProcess>();
  const ddbFaults = new Map<string, DynamoDBFault[]>();
  /** sessionLoss faults in force per worker (a restarted worker is sent the last). */
  const sessionFaults = new Map<string, DynamoDBFault[]>();
  /** Each process's session as its last `session` line said. */
  const sessionStats = new Map<ChaosProcess, SessionStats>();
  /** sessionLoss faults under way: what they do to their worker, so far. */
  const losses = new Map<Fault, SessionLossOutcome & { tokens: Map<string, number> }>();
  const sessionLosses: SessionLossOutcome[] = [];
  const leaseReads = { onSession: 0, own: 0 };
  /** Clock steps in force per worker (a restarted worker starts with them). */
  const steps = new Map<string, number>();
  /** The platform's last "instance stopped" event per worker (sent when the harness killed it), for replays. */
  const lastStop = new Map<string, Record<string, unknown>>();
  const platformEvents = new Set<Promise<void>>();
  const sendPlatformEvent = (event: Record<string, unknown>) => {
    const delivery = rt.platformEvent(event);
    platformEvents.add(delivery);
    void delivery.finally(() => platformEvents.delete(delivery));
  };
  const onLine = (p: ChaosProcess, l: WorkerLine) => {
    switch (l.type) {
      case 'history':
        history.push(l.record);
        break;
      case 'injected':
        count(l.session ? `sessionLoss:${l.mode}` : `dynamodb:${l.mode}`);
        break;
      case 'session': {
        const before = sessionStats.get(p) ?? { started: 0, renewals: 0, failedRenewals: 0, ended: 0 };
        sessionStats.set(p, l.stats);
        // the last line, as the process exits, counts its own clean end too
        for (const x of l.final ? [] : losses.values()) {
          if (x.worker !== p.plan.identity) continue;
          x.sessionsEnded += l.stats.ended - before.ended;
          x.failedRenewals += l.stats.failedRenewals - before.failedRenewals;
        }
        break;
      }
      case 'fenced':
        if (l.zombie) fenced[l.accepted ? 'zombieAccepted' : 'zombieRefused']++;
        else fenced[l.accepted ? 'accepted' : 'refused']++;
        break;
      case 'error':
        workerErrors++;
        appendFileSync(errorsLog, `${p.plan.identity} ${l.lease ?? ''} ${l.message}\n`);
        break;
      default:
        break;
    }
  };
  const start = (plan: WorkerPlan): ChaosProcess => {
    const env: WorkerEnvInput = {
      CONCLAVE_ENDPOINT: rt.endpoint,
      CONCLAVE_TABLE_PREFIX: prefix,
      ...(s.push && rt.pushEndpoint ? { CONCLAVE_PUSH_URL: rt.pushEndpoint } : {}),
      IDENTITY: plan.identity,
      CHAOS_LEASES: s.leases.join(','),
      EMULATION_VERSION: plan.emulationVersion,
      BINARY_VERSION: plan.binaryVersion,
      LEASE_DURATION_MS: String(s.timing.leaseDurationMs),
      RENEW_DEADLINE_MS: String(s.timing.renewDeadlineMs),
      RETRY_PERIOD_MS: String(s.timing.retryPeriodMs),
      CANDIDATE_RENEW_MS: String(s.timing.candidateRenewMs),
      ...(s.session
        ? {
            CHAOS_SESSION: 'true',
            SESSION_RENEW_INTERVAL_MS: String(s.timing.session.renewIntervalMs),
            SESSION_RETRY_PERIOD_MS: String(s.timing.session.retryPeriodMs),
            SESSION_RENEW_DEADLINE_MS: String(s.timing.session.renewDeadlineMs),
            SESSION_MAX_LEASE_DURATION_MS: String(s.timing.session.maxLeaseDurationMs),
          }
        : {}),
      CHAOS_SKEW_MS: String(plan.skewMs + (steps.get(plan.identity) ?? 0)),
      CHAOS_PLATFORM_ID: plan.instanceId,
      CHAOS_SEED: String((s.scheduleSeed + plan.identity.charCodeAt(1) * 7919 + procs.size) >>> 0),
      CHAOS_LEDGER_TABLE: ledgerTable,
      CHAOS_ZOMBIE_MS: String(s.timing.zombieMs),
      CHAOS_JOB_LEASE: JOB_LEASE,
      CHAOS_JOB_EVERY_MS: String(4 * s.timing.leaseDurationMs),
      CHAOS_JOB_WORK_MS: String(Math.round(1.5 * s.timing.leaseDurationMs)),
    };
    const p = new ChaosProcess(plan, env, onLine, (text) => {
      workerErrors++;
      appendFileSync(errorsLog, `${plan.identity} (not a protocol line) ${text.trimEnd()}\n`);
    });
    procs.set(plan.identity, p);
    void p.ready.then(() => {
      // a restarted worker is still inside its fault windows
      const f = ddbFaults.get(plan.identity)?.at(-1);
      if (f) p.send({ dynamodb: f });
      const sf = sessionFaults.get(plan.identity)?.at(-1);
      if (sf) p.send({ session: sf });
    });
    return p;
  };
  /** SIGKILL: the terms it held end at this instant (it can no longer act); its instance stopped, and EC2 says so. */
  const kill = async (p: ChaosProcess, at = monoNow()) => {
    p.child.kill('SIGKILL');
    await p.closed;
    const stopped = instanceStoppedEvent(p.plan.instanceId, Date.now());
    lastStop.set(p.plan.identity, stopped);
    sendPlatformEvent(stopped);
    for (const [lease, term] of p.open) {
      // a term that began between the stamp and the signal ends the moment it began
      const mono = BigInt(term.mono) > BigInt(at) ? term.mono : at;
      history.push({ event: 'stopped', lease, identity: term.identity, instance: term.instance, fencingToken: term.fencingToken, mono, wall: Date.now(), reason: 'killed' });
    }
    p.open.clear();
  };

  // The harness watches the leases table: a token it has seen is evidence the term had begun.
  let watching = true;
  const lastToken = new Map<string, number>();
  const watcher = (async () => {
    while (watching) {
      for (const lease of s.leases) {
        try {
          const l = (await leases.read(lease)).item;
          if (l?.holderIdentity !== undefined) {
            leaseReads[l.session !== undefined ? 'onSession' : 'own']++;
            if (l.session === undefined) for (const x of losses.values()) if (x.worker === l.holderIdentity && !x.heldWithoutSession.includes(lease)) x.heldWithoutSession.push(lease);
          }
          if (l && l.fencingToken !== lastToken.get(lease)) {
            lastToken.set(lease, l.fencingToken);
            observations.push({ lease, fencingToken: l.fencingToken, ...(l.holderIdentity ? { holder: l.holderIdentity } : {}), mono: monoNow() });
          }
        } catch {
          // DynamoDB Local busy: the next round looks again
        }
      }
      await sleep(100);
    }
  })();

  /** Push outages under way, and how each ends. */
  const pushRestores = new Map<Fault, () => Promise<void>>();
  const leading = (lease: string) => [...procs.values()].filter((p) => p.alive && p.open.has(lease));
  let verdict: Verdict | undefined;
  let ledger: LedgerEntry[] = [];
  let end: EndState | undefined;
  let pushStats: PushBrokerStats | undefined;
  try {
    const runtimeUp = performance.now();
    for (const w of s.workers) start(w);
    await Promise.all([...procs.values()].map((p) => p.ready));
    const workersReady = performance.now();
    const warmEnd = performance.now() + (o.warmupTimeoutMs ?? 30_000);
    while (!s.leases.every((l) => leading(l).length > 0)) {
      if (performance.now() > warmEnd) throw new Error(`warm-up: no leader for ${s.leases.filter((l) => leading(l).length === 0).join(', ')} within ${o.warmupTimeoutMs ?? 30_000} ms`);
      await sleep(100);
    }
    const secs = (a: number, b: number) => `${((b - a) / 1000).toFixed(1)}s`;
    print(`  warm-up ${secs(began, performance.now())} (runtime ${secs(began, runtimeUp)}, workers ${secs(runtimeUp, workersReady)}, first leaders ${secs(workersReady, performance.now())}): leaders ${s.leases.map((l) => `${l}=${leading(l)[0]!.plan.identity}`).join(', ')}`);

    // The faults, at their times.
    type Action = { at: number; begin: boolean; f: Fault };
    // An instant (a deleted row, a platform event) has no end: its window closes as it begins.
    const instant = (f: Fault) => f.kind === 'leaseDelete' || f.kind === 'platformLate';
    const actions: Action[] = s.faults.flatMap((f) => [{ at: f.at, begin: true, f }, ...(instant(f) ? [] : [{ at: f.at + faultDuration(f), begin: false, f }])]);
    actions.sort((a, b) => a.at - b.at || Number(a.begin) - Number(b.begin));
    const open = new Map<Fault, FaultWindow>();
    // Worker faults aim at a worker, or at whoever leads a lease when they begin; a worker is in at
    // most one kill, pause or handoff at a time (another free one is taken instead).
    const busy = new Set<string>();
    const resolved = new Map<Fault, string>();
    const resolve = (target: string, exclusive: boolean): string | undefined => {
      const free = (id: string) => {
        const p = procs.get(id);
        return Boolean(p?.alive && !p.paused && !(exclusive && busy.has(id)));
      };
      const first = target.startsWith('leader:') ? leading(target.slice('leader:'.length)).map((p) => p.plan.identity).find(free) : free(target) ? target : undefined;
      return first ?? s.workers.map((w) => w.identity).find(free);
    };
    const successorOf = async (lease: string): Promise<string | undefined> => (await leases.read(lease)).item?.successor;
    const t0 = performance.now();
    for (const a of actions) {
      const wait = t0 + a.at - performance.now();
      if (wait > 0) await sleep(wait);
      const f = a.f;
      if (a.begin) {
        const w: FaultWindow = { kind: f.kind, from: monoNow(), to: '0', detail: describeFault(f).trim() };
        if (f.kind === 'pushOutage') {
          if (!rt.pushBroker) {
            count('skipped:pushOutage');
            continue;
          }
          pushRestores.set(f, await rt.pushBroker.outage());
          count('pushOutage:begun');
        } else if (f.kind === 'leaseDelete') {
          w.lease = f.lease;
          // an operator's delete: unconditional, whoever holds the lease
          await rt.client.send(new DeleteItemCommand({ TableName: rt.tables.leases, Key: marshall({ name: f.lease }) }));
          count('leaseDelete:deleted');
        } else if (f.kind === 'sessionLoss' && !s.session) {
          count('skipped:sessionLoss'); // no sessions to lose
          continue;
        } else if (f.kind === 'kill' || f.kind === 'pause' || f.kind === 'handoff' || f.kind === 'dynamodb' || f.kind === 'clockStep' || f.kind === 'platformLate' || f.kind === 'sessionLoss') {
          // `successor:<lease>`: the worker the lease names its successor now (the one reading right behind the leader)
          const target = f.worker.startsWith('successor:') ? ((await successorOf(f.worker.slice('successor:'.length))) ?? f.worker) : f.worker;
          const id = resolve(target, f.kind !== 'dynamodb' && f.kind !== 'clockStep' && f.kind !== 'platformLate' && f.kind !== 'sessionLoss');
          if (!id) {
            count(`skipped:${f.kind}`); // nobody free to hit
            continue;
          }
          resolved.set(f, id);
          w.detail = `${w.detail} → ${id}`;
          const p = procs.get(id)!;
          if (f.kind === 'clockStep') {
            steps.set(id, (steps.get(id) ?? 0) + f.stepMs);
            p.send({ clockStepMs: f.stepMs });
          } else if (f.kind === 'platformLate') {
            // the target's own instance's last stop; else the last stop of any instance (its worker restarted there)
            const replayed = f.replay ? (lastStop.get(id) ?? [...lastStop.values()].at(-1)) : undefined;
            sendPlatformEvent(replayed ?? instanceStoppedEvent(p.plan.instanceId, Date.now() - f.lateMs));
            count(replayed ? 'platformLate:replayed' : 'platformLate:late');
          } else if (f.kind === 'dynamodb') {
            ddbFaults.set(id, [...(ddbFaults.get(id) ?? []), { mode: f.mode, rate: f.rate, ...(f.latencyMs ? { latencyMs: f.latencyMs } : {}) }]);
            p.send({ dynamodb: ddbFaults.get(id)!.at(-1)! });
          } else if (f.kind === 'sessionLoss') {
            // every session row write of the process, whatever else it suffers
            sessionFaults.set(id, [...(sessionFaults.get(id) ?? []), { mode: f.mode, rate: 1, ...(f.latencyMs ? { latencyMs: f.latencyMs } : {}) }]);
            p.send({ session: sessionFaults.get(id)!.at(-1)! });
            const tokens = new Map([...p.open].map(([lease, t]) => [lease, t.fencingToken]));
            losses.set(f, { worker: id, mode: f.mode, sessionsEnded: 0, failedRenewals: 0, heldWithoutSession: [], ledAtStart: [...tokens.keys()].filter((x) => x !== JOB_LEASE), kept: [], stops: [], tokens });
            count('sessionLoss:begun');
          } else {
            busy.add(id);
            // the electors' start-ups, and the scheduled job's run if one leads now (a frozen run must be forgiven as a frozen leader is)
            w.instances = [...new Set([...Object.values(p.instances), ...[...p.open.values()].map((t) => t.instance)])];
            if (f.kind === 'kill') await kill(p, w.from);
            else if (f.kind === 'handoff') {
              p.child.kill('SIGTERM');
              const done = await Promise.race([p.closed.then(() => true), sleep(15_000).then(() => false)]);
              if (!done) await kill(p);
            } else {
              p.paused = true;
              p.child.kill('SIGSTOP');
            }
          }
        } else faults.begin(f);
        if (instant(f)) {
          w.to = w.from;
          windows.push(w);
        } else open.set(f, w);
      } else {
        const w = open.get(f);
        if (!w) continue; // skipped at its start
        const id = resolved.get(f);
        if (f.kind === 'kill' || f.kind === 'handoff') {
          busy.delete(id!);
          start(s.workers.find((x) => x.identity === id)!);
        } else if (f.kind === 'pause') {
          busy.delete(id!);
          const p = procs.get(id!)!;
          p.paused = false;
          p.child.kill('SIGCONT');
        } else if (f.kind === 'clockStep') {
          steps.set(id!, (steps.get(id!) ?? 0) - f.stepMs);
          procs.get(id!)!.send({ clockStepMs: -f.stepMs }); // NTP puts it right (a restarted process started stepped)
        } else if (f.kind === 'dynamodb') {
          const list = [...(ddbFaults.get(id!) ?? [])];
          list.splice(list.findIndex((x) => x.mode === f.mode && x.rate === f.rate), 1);
          ddbFaults.set(id!, list);
          procs.get(id!)!.send({ dynamodb: list.at(-1) ?? null });
        } else if (f.kind === 'sessionLoss') {
          const list = [...(sessionFaults.get(id!) ?? [])];
          list.splice(list.findIndex((x) => x.mode === f.mode), 1);
          sessionFaults.set(id!, list);
          procs.get(id!)!.send({ session: list.at(-1) ?? null });
          const x = losses.get(f)!;
          losses.delete(f);
          const p = procs.get(id!)!;
          // a frozen process has not said yet which terms it lost: none kept
          x.kept = x.ledAtStart.filter((lease) => p.alive && !p.paused && p.open.get(lease)?.fencingToken === x.tokens.get(lease));
          const stops = history.filter((h) => h.identity === id && h.event === 'stopped' && BigInt(h.mono) >= BigInt(w.from)).map((h) => `${h.lease}:${h.reason ?? '?'}`);
          const outcome: SessionLossOutcome = { worker: x.worker, mode: x.mode, sessionsEnded: x.sessionsEnded, failedRenewals: x.failedRenewals, heldWithoutSession: x.heldWithoutSession, ledAtStart: x.ledAtStart, kept: x.kept, stops };
          sessionLosses.push(outcome);
          if (outcome.sessionsEnded > 0) count('sessionLoss:sessionEnded');
          count(outcome.ledAtStart.length === 0 ? 'sessionLoss:ledNothing' : `sessionLoss:terms${outcome.kept.length === outcome.ledAtStart.length ? 'Kept' : 'Lost'}`);
          print(
            `  sessionLoss → ${id} (${f.mode}): sessions ended ${outcome.sessionsEnded}, renewals failed ${outcome.failedRenewals}; held without a session: ${outcome.heldWithoutSession.join(', ') || '-'}; led ${outcome.ledAtStart.join(', ') || '-'}, kept ${outcome.kept.join(', ') || '-'}${stops.length ? `; stopped ${stops.join(', ')}` : ''}`,
          );
        } else if (f.kind === 'pushOutage') {
          await pushRestores.get(f)?.();
          pushRestores.delete(f);
        } else if (COORDINATOR_SIDE.has(f.kind)) faults.end(f);
        w.to = monoNow();
        windows.push(w);
      }
    }
    const healed = performance.now();

    // Settle: one leader per lease, agreeing with the table, every running worker's row in place.
    const settleEnd = healed + healMs + 5_000;
    let stableSince: number | undefined;
    while (performance.now() < settleEnd) {
      let converged = true;
      for (const lease of s.leases) {
        const ls = leading(lease);
        const l = (await leases.read(lease)).item;
        const rows = (await candidates.list(lease)).candidates;
        const rowsOk = [...procs.values()].filter((p) => p.alive).every((p) => rows.some((r) => r.name === p.plan.identity && r.identity === p.instances[lease]));
        if (ls.length !== 1 || l?.holderInstance !== ls[0]!.instances[lease] || l?.election || l?.preferredHolder || !rowsOk) converged = false;
      }
      if (converged) {
        stableSince ??= performance.now();
        if (performance.now() - stableSince >= (o.stableMs ?? 2 * s.timing.leaseDurationMs)) break;
      } else stableSince = undefined;
      await sleep(200);
    }
    const alive = [...procs.values()].filter((p) => p.alive);
    const rows = (await Promise.all(s.leases.map((l) => candidates.list(l)))).flatMap((r) => r.candidates);
    end = {
      mono: monoNow(),
      live: alive.flatMap((p) => s.leases.map((lease) => ({ lease, identity: p.plan.identity, instance: p.instances[lease]! }))),
      candidateRows: rows.map((r) => ({ lease: r.leaseName, name: r.name, ...(r.identity ? { identity: r.identity } : {}) })),
    };
    print(`  healed; settled ${((performance.now() - healed) / 1000).toFixed(1)}s after the last fault`);
  } finally {
    watching = false;
    await watcher;
    // Graceful stop: SIGCONT first (a paused worker cannot step down), then SIGTERM.
    const stopping = [...procs.values()].filter((p) => p.alive);
    for (const p of stopping) {
      if (p.paused) p.child.kill('SIGCONT');
      p.child.kill('SIGTERM');
    }
    await Promise.all(
      stopping.map(async (p) => {
        const done = await Promise.race([p.closed.then(() => true), sleep(15_000).then(() => false)]);
        if (!done) await kill(p);
      }),
    );
    for (const f of s.faults) if (COORDINATOR_SIDE.has(f.kind)) faults.end(f);
    for (const restore of pushRestores.values()) await restore();
    await faults.drain();
    await Promise.all([...platformEvents]);
    ledger = await readLedger(rt.client, ledgerTable);
    pushStats = s.push ? rt.pushBroker?.stats() : undefined;
    await rt.stop();
    // DynamoDB Local keeps every table in memory for the rest of the run.
    const admin = localClient(o.endpoint);
    await deleteTables(admin, rt.tables);
    await deleteLedgerTable(admin, ledgerTable);
    admin.destroy();
  }

  verdict = checkHistory({ history, ledger, observations, faults: windows, end: end! }, { healMs, allowedSkewMs: o.allowedSkewMs ?? 0, episodicLeases: [JOB_LEASE] });
  const jsonl = (xs: readonly unknown[]) => xs.map((x) => `${JSON.stringify(x)}\n`).join('');
  writeFileSync(join(dir, 'history.jsonl'), jsonl(history));
  writeFileSync(join(dir, 'ledger.jsonl'), jsonl(ledger));
  writeFileSync(join(dir, 'observations.jsonl'), jsonl(observations));
  writeFileSync(join(dir, 'faults.jsonl'), jsonl(windows));
  writeFileSync(join(dir, 'verdict.json'), `${JSON.stringify({ ok: verdict.ok, violations: verdict.violations, figures: verdict.figures, end }, null, 2)}\n`);

  const faultsByKind: Partial<Record<FaultFigureKind, number>> = {};
  for (const f of s.faults) faultsByKind[f.kind] = (faultsByKind[f.kind] ?? 0) + 1;
  const skewed = s.workers.filter((w) => w.skewMs !== 0 && Math.abs(w.skewMs) < 30_000).length;
  if (skewed) faultsByKind.clockSkew = skewed;
  const skewed30 = s.workers.filter((w) => Math.abs(w.skewMs) >= 30_000).length;
  if (skewed30) faultsByKind.clockSkew30s = skewed30;
  for (const [k, v] of Object.entries(faults.injected)) injected[k] = (injected[k] ?? 0) + v;
  const sum = (k: keyof SessionStats) => [...sessionStats.values()].reduce((n, x) => n + x[k], 0);
  const sessions = s.session ? { started: sum('started'), renewals: sum('renewals'), failedRenewals: sum('failedRenewals'), ended: sum('ended'), leaseReadsOnSession: leaseReads.onSession, leaseReadsOwn: leaseReads.own } : undefined;
  return { schedule: s, verdict, windows, injected, faultsByKind, fenced, deadLetters: rt.deadLetters.length, push: pushStats, sessions, sessionLosses, workerErrors, elapsedMs: performance.now() - began, dir };
}

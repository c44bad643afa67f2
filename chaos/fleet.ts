/**
 * The chaos workers: one OS process per worker start-up (chaos/process.ts), started with the
 * schedule's timings, its clock steps and DynamoDB faults still in force, killed with SIGKILL (its
 * terms end at that instant, and EC2 says its instance stopped), stopped with SIGTERM at the end.
 */
import { appendFileSync } from 'node:fs';
import { monoNow } from '../lib/history/schema.js';
import { instanceStoppedEvent } from '../lib/local/ecs-task.js';
import type { LocalRuntime } from '../lib/local/runtime.js';
import type { DynamoDBFault } from './ddb-faults.js';
import { ChaosProcess, type Told } from './process.js';
import type { WorkerLine, WorkerEnvInput } from './protocol.js';
import type { Schedule, WorkerPlan } from './schedule.js';
import type { Feed } from './verdict.js';
import { settlesWithin } from './wait.js';

/** The scheduled job every worker process also runs (withLease, run once per window): chaos/worker.ts. */
export const JOB_LEASE = 'scheduled-job';

/** Where a fleet's workers connect, and what they write to. */
export interface FleetOptions {
  readonly rt: LocalRuntime;
  readonly prefix: string;
  readonly ledgerTable: string;
  /** Where lines that are not the protocol's, and the workers' errors, go. */
  readonly errorsLog: string;
}

/** The schedule's workers: the process each runs now, and what a restarted one must start with. */
export class Fleet {
  readonly procs = new Map<string, ChaosProcess>();
  /** Clock steps in force per worker (a restarted worker starts with them). */
  readonly steps = new Map<string, number>();
  /** DynamoDB faults in force per worker, and sessionLoss faults (a restarted worker is sent the last of each). */
  readonly ddbFaults = new Map<string, DynamoDBFault[]>();
  readonly sessionFaults = new Map<string, DynamoDBFault[]>();
  /** What each process told as the sessionLoss in force at its start took effect on it (undefined: none was, or it exited first). */
  readonly sessionFaultTaken = new Map<ChaosProcess, Promise<Told | undefined>>();
  /** The platform's last "instance stopped" event per worker (sent when the harness killed it), for replays. */
  readonly lastStop = new Map<string, Record<string, unknown>>();
  private readonly platformEvents = new Set<Promise<void>>();
  /** Per worker, a process loaded and held for its next restart. */
  private readonly spares = new Map<string, ChaosProcess>();
  private stopping = false;

  constructor(
    private readonly s: Schedule,
    private readonly o: FleetOptions,
    private readonly feed: Feed,
    private readonly onLine: (p: ChaosProcess, l: WorkerLine) => void,
  ) {}

  /**
   * Starts `plan`'s worker (its successor if one ran): its spare if it has one, else a new process.
   * Once it stands, the next spare is loaded (held: code loaded, nothing started).
   */
  start(plan: WorkerPlan): ChaosProcess {
    const spare = this.spares.get(plan.identity);
    this.spares.delete(plan.identity);
    const p = spare?.alive ? spare : this.held(plan);
    p.start(this.env(plan));
    this.procs.set(plan.identity, p);
    void p.ready.then(() => {
      if (!this.stopping) this.spares.set(plan.identity, this.held(plan));
    });
    const restored = p.ready.then(() => {
      // a restarted worker is still inside its fault windows
      const f = this.ddbFaults.get(plan.identity)?.at(-1);
      if (f) p.send({ dynamodb: f });
      const sf = this.sessionFaults.get(plan.identity)?.at(-1);
      return sf ? p.sendMarked({ session: sf }) : undefined;
    });
    this.sessionFaultTaken.set(p, Promise.race([restored, p.closed.then(() => undefined)]));
    return p;
  }

  /**
   * Starts `plan`'s worker again after a kill or hand-off, once its spare is loaded (loaded while the
   * worker before it ran: the restart is not delayed by a boot; if it is not loaded yet, the restart
   * waits for it, and the fault's window with it).
   */
  async restart(plan: WorkerPlan): Promise<ChaosProcess> {
    const spare = this.spares.get(plan.identity);
    if (spare) await Promise.race([spare.loaded, spare.closed]);
    return this.start(plan);
  }

  /** Resolves once every worker's spare is loaded (or gone). */
  async sparesLoaded(): Promise<void> {
    await Promise.all([...this.spares.values()].map((p) => Promise.race([p.loaded, p.closed])));
  }

  private held(plan: WorkerPlan): ChaosProcess {
    return new ChaosProcess(plan, 'held', (q, l) => this.line(q, l), (text) => {
      this.feed.workerErrors++;
      appendFileSync(this.o.errorsLog, `${plan.identity} (not a protocol line) ${text.trimEnd()}\n`);
    });
  }

  private line(p: ChaosProcess, l: WorkerLine): void {
    if (l.type === 'error') {
      this.feed.workerErrors++;
      appendFileSync(this.o.errorsLog, `${p.plan.identity} ${l.lease ?? ''} ${l.message}\n`);
    }
    this.onLine(p, l);
  }

  private env(plan: WorkerPlan): WorkerEnvInput {
    const { s, o } = this;
    return {
      CONCLAVE_ENDPOINT: o.rt.endpoint,
      CONCLAVE_TABLE_PREFIX: o.prefix,
      ...(s.push && o.rt.pushEndpoint ? { CONCLAVE_PUSH_URL: o.rt.pushEndpoint } : {}),
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
      CHAOS_SKEW_MS: String(plan.skewMs + (this.steps.get(plan.identity) ?? 0)),
      CHAOS_PLATFORM_ID: plan.instanceId,
      CHAOS_SEED: String((s.scheduleSeed + plan.identity.charCodeAt(1) * 7919 + this.procs.size) >>> 0),
      CHAOS_LEDGER_TABLE: o.ledgerTable,
      CHAOS_ZOMBIE_MS: String(s.timing.zombieMs),
      CHAOS_JOB_LEASE: JOB_LEASE,
      CHAOS_JOB_EVERY_MS: String(4 * s.timing.leaseDurationMs),
      CHAOS_JOB_WORK_MS: String(Math.round(1.5 * s.timing.leaseDurationMs)),
    };
  }

  /** The live processes leading `lease` now (by their own history lines). */
  leading(lease: string): ChaosProcess[] {
    return [...this.procs.values()].filter((p) => p.alive && p.open.has(lease));
  }

  alive(): ChaosProcess[] {
    return [...this.procs.values()].filter((p) => p.alive);
  }

  /** The platform's event, delivered to the functions (awaited at the end). */
  sendPlatformEvent(event: Record<string, unknown>): void {
    const delivery = this.o.rt.platformEvent(event);
    this.platformEvents.add(delivery);
    void delivery.finally(() => this.platformEvents.delete(delivery));
  }

  /**
   * SIGKILL: the terms it held end the instant the signal is sent (it can no longer act after it);
   * its instance stopped, and EC2 says so. Not when the fault's window opened: the process works on
   * until the signal (a busy harness reading the lease row to aim the kill took 20.9 ms, and a
   * write the work sent meanwhile was judged sent after its term stopped).
   */
  async kill(p: ChaosProcess): Promise<void> {
    p.child.kill('SIGKILL');
    const at = monoNow();
    await p.closed;
    const stopped = instanceStoppedEvent(p.plan.instanceId, Date.now());
    this.lastStop.set(p.plan.identity, stopped);
    this.sendPlatformEvent(stopped);
    for (const [lease, term] of p.open) {
      this.feed.history.push({ event: 'stopped', lease, identity: term.identity, instance: term.instance, fencingToken: term.fencingToken, mono: at, wall: Date.now(), reason: 'killed' });
    }
    p.open.clear();
  }

  /** SIGTERM, and SIGKILL if it has not exited within 15 s (a paused process gets SIGCONT first: it cannot step down frozen). */
  async stop(p: ChaosProcess): Promise<void> {
    if (p.paused) p.child.kill('SIGCONT');
    p.child.kill('SIGTERM');
    if (!(await settlesWithin(p.closed, 15_000))) await this.kill(p);
  }

  /** Stops every live process (each signalled before any is waited for: they step down together), and ends the spares. */
  async stopAll(): Promise<void> {
    this.stopping = true;
    const spares = [...this.spares.values()];
    this.spares.clear();
    for (const p of spares) p.child.kill('SIGKILL');
    await Promise.all([...this.alive().map((p) => this.stop(p)), ...spares.map((p) => p.closed)]);
  }

  /** Waits for the platform events still on their way. */
  async drain(): Promise<void> {
    await Promise.all([...this.platformEvents]);
  }
}

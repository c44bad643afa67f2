/**
 * The fault injectors of a chaos run: each fault of the schedule begun and ended — on a worker
 * (SIGKILL, SIGSTOP/SIGCONT, a SIGTERM hand-off, a clock step, DynamoDB faults and sessionLoss
 * through the worker's stdin, a late or replayed platform event), on a row (an operator's delete),
 * on the push broker (an outage), or on the coordinator's side (chaos/coordinator-faults.ts). A
 * worker fault aims at a worker, or at whoever leads or succeeds a lease when it begins.
 */
import { DeleteItemCommand } from '@aws-sdk/client-dynamodb';
import { marshall } from '@aws-sdk/util-dynamodb';
import type { FaultWindow } from '../lib/history/schema.js';
import { instanceStoppedEvent } from '../lib/local/ecs-task.js';
import type { LocalRuntime } from '../lib/local/runtime.js';
import type { LeaseStore } from '../lib/stores/lease-store.js';
import type { CoordinatorFaults } from './coordinator-faults.js';
import { JOB_LEASE, type Fleet } from './fleet.js';
import type { ChaosProcess } from './process.js';
import type { WorkerLine } from './protocol.js';
import type { Fault, Schedule } from './schedule.js';
import type { Feed, SessionStats } from './verdict.js';

/** Faults the coordinator's side (CoordinatorFaults) injects; the injectors here do the others. */
const COORDINATOR_SIDE: ReadonlySet<Fault['kind']> = new Set(['coordinatorDown', 'streamDuplicate', 'streamReorder', 'streamDelay', 'streamStale', 'reconcilerCrash', 'timerLoss', 'publishFailure']);

type WorkerFault = Extract<Fault, { worker: string }>;

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

export interface InjectorDeps {
  readonly s: Schedule;
  readonly rt: LocalRuntime;
  readonly fleet: Fleet;
  readonly feed: Feed;
  readonly coordinator: CoordinatorFaults;
  readonly leases: LeaseStore;
  readonly print: (line: string) => void;
}

export class Injectors {
  /** Workers in a kill, pause or hand-off now: in at most one at a time (another free one is taken instead). */
  private readonly busy = new Set<string>();
  /** The worker each worker fault hit. */
  private readonly resolved = new Map<Fault, string>();
  /** Push outages under way, and how each ends. */
  private readonly pushRestores = new Map<Fault, () => Promise<void>>();
  /** sessionLoss faults under way: what they do to their worker, so far. */
  private readonly losses = new Map<Fault, SessionLossOutcome & { tokens: Map<string, number> }>();
  /** What each sessionLoss did, in the order they began. */
  readonly sessionLosses: SessionLossOutcome[] = [];

  constructor(private readonly d: InjectorDeps) {}

  /** Begins `f`, filling in its window `w`; false if it was skipped (nothing to hit). */
  async begin(f: Fault, w: FaultWindow): Promise<boolean> {
    const { rt, feed } = this.d;
    if (f.kind === 'pushOutage') {
      if (!rt.pushBroker) {
        feed.count('skipped:pushOutage');
        return false;
      }
      this.pushRestores.set(f, await rt.pushBroker.outage());
      feed.count('pushOutage:begun');
    } else if (f.kind === 'leaseDelete') {
      w.lease = f.lease;
      // an operator's delete: unconditional, whoever holds the lease
      await rt.client.send(new DeleteItemCommand({ TableName: rt.tables.leases, Key: marshall({ name: f.lease }) }));
      feed.count('leaseDelete:deleted');
    } else if (f.kind === 'sessionLoss' && !this.d.s.session) {
      feed.count('skipped:sessionLoss'); // no sessions to lose
      return false;
    } else if ('worker' in f) return this.beginOnWorker(f, w);
    else this.d.coordinator.begin(f);
    return true;
  }

  /** The worker `f` aims at, free to be hit now (a `successor:<lease>` is the worker the lease names its successor now). */
  private async target(f: WorkerFault): Promise<string | undefined> {
    const { s, fleet, leases } = this.d;
    const target = f.worker.startsWith('successor:') ? ((await leases.read(f.worker.slice('successor:'.length))).item?.successor ?? f.worker) : f.worker;
    const exclusive = f.kind !== 'dynamodb' && f.kind !== 'clockStep' && f.kind !== 'platformLate' && f.kind !== 'sessionLoss';
    const free = (id: string) => {
      const p = fleet.procs.get(id);
      return Boolean(p?.alive && !p.paused && !(exclusive && this.busy.has(id)));
    };
    const first = target.startsWith('leader:') ? fleet.leading(target.slice('leader:'.length)).map((p) => p.plan.identity).find(free) : free(target) ? target : undefined;
    return first ?? s.workers.map((x) => x.identity).find(free);
  }

  private async beginOnWorker(f: WorkerFault, w: FaultWindow): Promise<boolean> {
    const { fleet, feed } = this.d;
    const id = await this.target(f);
    if (!id) {
      feed.count(`skipped:${f.kind}`); // nobody free to hit
      return false;
    }
    this.resolved.set(f, id);
    w.detail = `${w.detail} → ${id}`;
    const p = fleet.procs.get(id)!;
    if (f.kind === 'clockStep') {
      fleet.steps.set(id, (fleet.steps.get(id) ?? 0) + f.stepMs);
      p.send({ clockStepMs: f.stepMs });
    } else if (f.kind === 'platformLate') {
      // the target's own instance's last stop; else the last stop of any instance (its worker restarted there)
      const replayed = f.replay ? (fleet.lastStop.get(id) ?? [...fleet.lastStop.values()].at(-1)) : undefined;
      fleet.sendPlatformEvent(replayed ?? instanceStoppedEvent(p.plan.instanceId, Date.now() - f.lateMs));
      feed.count(replayed ? 'platformLate:replayed' : 'platformLate:late');
    } else if (f.kind === 'dynamodb') {
      fleet.ddbFaults.set(id, [...(fleet.ddbFaults.get(id) ?? []), { mode: f.mode, rate: f.rate, ...(f.latencyMs ? { latencyMs: f.latencyMs } : {}) }]);
      p.send({ dynamodb: fleet.ddbFaults.get(id)!.at(-1)! });
    } else if (f.kind === 'sessionLoss') {
      // every session row write of the process, whatever else it suffers
      fleet.sessionFaults.set(id, [...(fleet.sessionFaults.get(id) ?? []), { mode: f.mode, rate: 1, ...(f.latencyMs ? { latencyMs: f.latencyMs } : {}) }]);
      p.send({ session: fleet.sessionFaults.get(id)!.at(-1)! });
      const tokens = new Map([...p.open].map(([lease, t]) => [lease, t.fencingToken]));
      this.losses.set(f, { worker: id, mode: f.mode, sessionsEnded: 0, failedRenewals: 0, heldWithoutSession: [], ledAtStart: [...tokens.keys()].filter((x) => x !== JOB_LEASE), kept: [], stops: [], tokens });
      feed.count('sessionLoss:begun');
    } else {
      this.busy.add(id);
      // the electors' start-ups, and the scheduled job's run if one leads now (a frozen run must be forgiven as a frozen leader is)
      w.instances = [...new Set([...Object.values(p.instances), ...[...p.open.values()].map((t) => t.instance)])];
      if (f.kind === 'kill') await fleet.kill(p, w.from);
      else if (f.kind === 'handoff') await fleet.stop(p);
      else {
        p.paused = true;
        p.child.kill('SIGSTOP');
      }
    }
    return true;
  }

  /** Ends `f` (begun, with window `w`). */
  async end(f: Fault, w: FaultWindow): Promise<void> {
    const { s, fleet } = this.d;
    const id = this.resolved.get(f);
    if (f.kind === 'kill' || f.kind === 'handoff') {
      this.busy.delete(id!);
      fleet.start(s.workers.find((x) => x.identity === id)!);
    } else if (f.kind === 'pause') {
      this.busy.delete(id!);
      const p = fleet.procs.get(id!)!;
      p.paused = false;
      p.child.kill('SIGCONT');
    } else if (f.kind === 'clockStep') {
      fleet.steps.set(id!, (fleet.steps.get(id!) ?? 0) - f.stepMs);
      fleet.procs.get(id!)!.send({ clockStepMs: -f.stepMs }); // NTP puts it right (a restarted process started stepped)
    } else if (f.kind === 'dynamodb') {
      const list = [...(fleet.ddbFaults.get(id!) ?? [])];
      list.splice(list.findIndex((x) => x.mode === f.mode && x.rate === f.rate), 1);
      fleet.ddbFaults.set(id!, list);
      fleet.procs.get(id!)!.send({ dynamodb: list.at(-1) ?? null });
    } else if (f.kind === 'sessionLoss') this.endSessionLoss(f, id!, w);
    else if (f.kind === 'pushOutage') {
      await this.pushRestores.get(f)?.();
      this.pushRestores.delete(f);
    } else if (COORDINATOR_SIDE.has(f.kind)) this.d.coordinator.end(f);
  }

  /** The worker's session writes go through again; what the loss did to it is told. */
  private endSessionLoss(f: Extract<Fault, { kind: 'sessionLoss' }>, id: string, w: FaultWindow): void {
    const { fleet, feed } = this.d;
    const list = [...(fleet.sessionFaults.get(id) ?? [])];
    list.splice(list.findIndex((x) => x.mode === f.mode), 1);
    fleet.sessionFaults.set(id, list);
    fleet.procs.get(id)!.send({ session: list.at(-1) ?? null });
    const x = this.losses.get(f)!;
    this.losses.delete(f);
    const p = fleet.procs.get(id)!;
    // a frozen process has not said yet which terms it lost: none kept
    x.kept = x.ledAtStart.filter((lease) => p.alive && !p.paused && p.open.get(lease)?.fencingToken === x.tokens.get(lease));
    const stops = feed.history.filter((h) => h.identity === id && h.event === 'stopped' && BigInt(h.mono) >= BigInt(w.from)).map((h) => `${h.lease}:${h.reason ?? '?'}`);
    const outcome: SessionLossOutcome = { worker: x.worker, mode: x.mode, sessionsEnded: x.sessionsEnded, failedRenewals: x.failedRenewals, heldWithoutSession: x.heldWithoutSession, ledAtStart: x.ledAtStart, kept: x.kept, stops };
    this.sessionLosses.push(outcome);
    if (outcome.sessionsEnded > 0) feed.count('sessionLoss:sessionEnded');
    feed.count(outcome.ledAtStart.length === 0 ? 'sessionLoss:ledNothing' : `sessionLoss:terms${outcome.kept.length === outcome.ledAtStart.length ? 'Kept' : 'Lost'}`);
    this.d.print(
      `  sessionLoss → ${id} (${f.mode}): sessions ended ${outcome.sessionsEnded}, renewals failed ${outcome.failedRenewals}; held without a session: ${outcome.heldWithoutSession.join(', ') || '-'}; led ${outcome.ledAtStart.join(', ') || '-'}, kept ${outcome.kept.join(', ') || '-'}${stops.length ? `; stopped ${stops.join(', ')}` : ''}`,
    );
  }

  /** A worker's `session` line (`before`: its previous one): a sessionLoss under way on it counts what its session lost. */
  sessionLine(p: ChaosProcess, before: SessionStats | undefined, l: Extract<WorkerLine, { type: 'session' }>): void {
    const was = before ?? { started: 0, renewals: 0, failedRenewals: 0, ended: 0 };
    // the last line, as the process exits, counts its own clean end too
    for (const x of l.final ? [] : this.losses.values()) {
      if (x.worker !== p.plan.identity) continue;
      x.sessionsEnded += l.stats.ended - was.ended;
      x.failedRenewals += l.stats.failedRenewals - was.failedRenewals;
    }
  }

  /** The harness read `lease` held by `holder`: held without a session during a sessionLoss on it, its elector renews it itself. */
  seen(lease: string, holder: string, onSession: boolean): void {
    if (onSession) return;
    for (const x of this.losses.values()) if (x.worker === holder && !x.heldWithoutSession.includes(lease)) x.heldWithoutSession.push(lease);
  }

  /** The run's end: every coordinator-side fault ended, every push outage over. */
  async endAll(): Promise<void> {
    for (const f of this.d.s.faults) if (COORDINATOR_SIDE.has(f.kind)) this.d.coordinator.end(f);
    for (const restore of this.pushRestores.values()) await restore();
  }
}

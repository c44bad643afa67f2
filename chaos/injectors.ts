/**
 * The fault injectors of a chaos run: each fault of the schedule begun and ended — on a worker
 * (SIGKILL, SIGSTOP/SIGCONT, a SIGTERM hand-off, a clock step, DynamoDB faults and sessionLoss
 * through the worker's stdin, a late or replayed platform event), on a row (an operator's delete),
 * on the push broker (an outage), or on the coordinator's side (chaos/coordinator-faults.ts). A
 * worker fault aims at a worker, or at whoever leads or succeeds a lease when it begins; a
 * sessionLoss aimed at a lease's leader waits for one holding it on its session, and hits a process
 * that still leads it as the fault takes effect (the schedule stands still meanwhile: heldMs).
 */
import { DeleteItemCommand } from '@aws-sdk/client-dynamodb';
import { marshall } from '@aws-sdk/util-dynamodb';
import { systemClock } from '../lib/clock.js';
import { monoNow, type FaultWindow } from '../lib/history/schema.js';
import { instanceStoppedEvent } from '../lib/local/ecs-task.js';
import type { LocalRuntime } from '../lib/local/runtime.js';
import type { LeaseStore } from '../lib/stores/lease-store.js';
import type { CoordinatorFaults } from './coordinator-faults.js';
import type { DynamoDBFault } from './ddb-faults.js';
import { JOB_LEASE, type Fleet } from './fleet.js';
import type { ChaosProcess, Told } from './process.js';
import type { Fault, Schedule } from './schedule.js';
import type { Feed } from './verdict.js';
import { waitFor } from './wait.js';

/** Faults the coordinator's side (CoordinatorFaults) injects; the injectors here do the others. */
const COORDINATOR_SIDE: ReadonlySet<Fault['kind']> = new Set(['coordinatorDown', 'streamDuplicate', 'streamReorder', 'streamDelay', 'streamStale', 'reconcilerCrash', 'timerLoss', 'publishFailure']);

type WorkerFault = Extract<Fault, { worker: string }>;
type SessionLossFault = Extract<Fault, { kind: 'sessionLoss' }>;

/**
 * How long a sessionLoss aimed at a lease's leader waits for a process leading it on its session,
 * and tries again when the one it hit no longer led it as the fault took effect: a hang guard (a
 * lease nobody can lead, its workers all down), not a budget. Once it has passed, the fault hits the
 * worker the row names, as any other fault does.
 */
const LEADER_WAIT_MS = 30_000;

/** One process's part in a sessionLoss: what it told as the fault took effect on it, and as it was lifted. */
interface LossSpan {
  p: ChaosProcess;
  from: Promise<Told | undefined>;
  to?: Promise<Told | undefined>;
}

/** A sessionLoss begun: the processes of its worker it hit (the first, and those started during it). */
interface Loss {
  worker: string;
  mode: string;
  spans: LossSpan[];
  heldWithoutSession: string[];
  /** Once lifted: its window, when it was lifted (monotonic), and whether its first process was frozen or gone then. */
  closed?: { window: FaultWindow; to: string; frozen: boolean };
}

/**
 * What one sessionLoss did to the worker it hit, by what the worker told as the fault took effect
 * and as it was lifted (its marked `session` lines): the window as the worker lived it, however late
 * its lines reached the harness.
 */
export interface SessionLossOutcome {
  worker: string;
  mode: string;
  /** Its sessions that ended during the window, and its renewals that failed (a restarted process's too). */
  sessionsEnded: number;
  failedRenewals: number;
  /** Leases the harness saw held by the worker without a session during the window: renewed by their elector itself. */
  heldWithoutSession: string[];
  /** Leases the worker led as the fault took effect on it, and those of them it still led, in the same term, as it was lifted. */
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
  /** sessionLoss faults under way. */
  private readonly losses = new Map<Fault, Loss>();
  /** Every sessionLoss, in the order they began. */
  private readonly begunLosses: Loss[] = [];
  /** What each sessionLoss did, in the order they began (told at the run's end: endAll). */
  readonly sessionLosses: SessionLossOutcome[] = [];
  /**
   * How long the schedule stood still while faults waited for their target (a sessionLoss for a
   * leader on its session): the timeline (chaos/timeline.ts) plays every later step that much later,
   * so each fault still lasts as long as scheduled and the steps keep their order.
   */
  heldMs = 0;

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
    } else if (f.kind === 'sessionLoss') return this.beginSessionLoss(f, w);
    else if ('worker' in f) return this.beginOnWorker(f, w);
    else this.d.coordinator.begin(f);
    return true;
  }

  /**
   * The worker `f` aims at, free to be hit now: a `leader:<lease>` is the worker whose instance the
   * lease's row names its holder now, a `successor:<lease>` the worker it names its successor.
   */
  private async target(f: WorkerFault): Promise<string | undefined> {
    const { s, fleet, leases } = this.d;
    const [aim, lease] = f.worker.split(/:(.*)/s) as [string, string | undefined];
    const row = lease !== undefined && (aim === 'leader' || aim === 'successor') ? (await leases.read(lease)).item : undefined;
    // the row, not the history lines read so far: a change of leader whose lines are in transit would aim at the former one
    const holder = aim === 'leader' && row?.holderInstance ? [...fleet.procs.values()].find((p) => p.instances[lease!] === row.holderInstance)?.plan.identity : undefined;
    const target = aim === 'leader' ? holder : aim === 'successor' ? row?.successor : f.worker;
    const exclusive = f.kind !== 'dynamodb' && f.kind !== 'clockStep' && f.kind !== 'platformLate' && f.kind !== 'sessionLoss';
    const free = (id: string) => {
      const p = fleet.procs.get(id);
      return Boolean(p?.alive && !p.paused && !(exclusive && this.busy.has(id)));
    };
    const first = target !== undefined && free(target) ? target : undefined;
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
    } else {
      this.busy.add(id);
      // the electors' start-ups, and the scheduled job's run if one leads now (a frozen run must be forgiven as a frozen leader is)
      w.instances = [...new Set([...Object.values(p.instances), ...[...p.open.values()].map((t) => t.instance)])];
      if (f.kind === 'kill') await fleet.kill(p);
      else if (f.kind === 'handoff') await fleet.stop(p);
      else {
        p.paused = true;
        p.child.kill('SIGSTOP');
      }
    }
    return true;
  }

  /**
   * Begins a sessionLoss. Aimed at `leader:<lease>`, it is what it says only if it hits a process
   * whose term of that lease is on its session as the fault takes effect: on a busy machine a starved
   * leader's term may have ended at its renew deadline (its row still naming it) before the fault was
   * sent, or between sending and taking. So it waits until the row names, on a session, a live
   * process whose own lines say it leads with the row's token (the schedule standing still
   * meanwhile), hits that one, and if the process tells that it led nothing as the fault took effect,
   * lifts it there and waits and aims again. Bounded by LEADER_WAIT_MS; then, and for other aims, it
   * hits the worker `target` gives. The window opens as the fault is first sent.
   */
  private async beginSessionLoss(f: SessionLossFault, w: FaultWindow): Promise<boolean> {
    const { fleet, feed } = this.d;
    const [aim, lease] = f.worker.split(/:(.*)/s) as [string, string | undefined];
    const forLeader = aim === 'leader' && lease !== undefined ? lease : undefined;
    const spec: DynamoDBFault = { mode: f.mode, rate: 1, ...(f.latencyMs ? { latencyMs: f.latencyMs } : {}) };
    const began = systemClock.monotonic();
    const deadline = began + LEADER_WAIT_MS;
    let opened = false;
    for (;;) {
      const waiting = forLeader !== undefined && systemClock.monotonic() < deadline;
      if (waiting) await waitFor(() => this.leadsOnSession(forLeader), { timeoutMs: Math.max(0, deadline - systemClock.monotonic()), everyMs: 50 });
      const id = await this.target(f);
      if (!id) {
        feed.count('skipped:sessionLoss'); // nobody free to hit
        this.heldMs += systemClock.monotonic() - began;
        return false;
      }
      const p = fleet.procs.get(id)!;
      if (!opened) w.from = monoNow(); // in force from here (on some process)
      opened = true;
      // every session row write of the process, whatever else it suffers
      fleet.sessionFaults.set(id, [...(fleet.sessionFaults.get(id) ?? []), spec]);
      const sent = systemClock.monotonic();
      const from = p.sendMarked({ session: spec });
      const told = waiting ? await from : undefined;
      if (waiting && !told?.led.has(forLeader!)) {
        // it no longer led as the fault took effect: lifted there, aimed again
        this.liftSessionFault(id, spec);
        feed.count('sessionLoss:missed');
        continue;
      }
      // the schedule stood still until the fault was in force on its target: it lasts as scheduled from then
      this.heldMs += sent - began;
      w.detail = `${w.detail} → ${id}`;
      this.resolved.set(f, id);
      const loss: Loss = { worker: id, mode: f.mode, spans: [{ p, from }], heldWithoutSession: [] };
      this.losses.set(f, loss);
      this.begunLosses.push(loss);
      feed.count('sessionLoss:begun');
      return true;
    }
  }

  /** Whether the row of `lease` names, on a session, a live, running process whose own lines say it leads with the row's token. */
  private async leadsOnSession(lease: string): Promise<boolean> {
    let row;
    try {
      row = (await this.d.leases.read(lease)).item;
    } catch {
      return false; // DynamoDB Local busy: the next round looks again
    }
    if (!row?.holderInstance || row.session === undefined) return false;
    const p = [...this.d.fleet.procs.values()].find((q) => q.instances[lease] === row.holderInstance);
    return Boolean(p?.alive && !p.paused && p.open.get(lease)?.fencingToken === row.fencingToken);
  }

  /** Takes `spec` (one sessionLoss) off worker `id`'s session faults, and tells its process the one now in force. */
  private liftSessionFault(id: string, spec: DynamoDBFault): void {
    const { fleet } = this.d;
    const list = [...(fleet.sessionFaults.get(id) ?? [])];
    list.splice(list.lastIndexOf(spec), 1);
    fleet.sessionFaults.set(id, list);
    fleet.procs.get(id)?.send({ session: list.at(-1) ?? null });
  }

  /** Ends `f` (begun, with window `w`). */
  async end(f: Fault, w: FaultWindow): Promise<void> {
    const { s, fleet } = this.d;
    const id = this.resolved.get(f);
    if (f.kind === 'kill' || f.kind === 'handoff') {
      this.busy.delete(id!);
      const p = await fleet.restart(s.workers.find((x) => x.identity === id)!);
      // a sessionLoss under way on the worker hits its new process too, from when it takes it
      for (const x of this.losses.values()) if (x.worker === id) x.spans.push({ p, from: fleet.sessionFaultTaken.get(p)! });
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

  /** The worker's session writes go through again: each of its processes the loss hit is told so, and answers with what it did meanwhile. */
  private endSessionLoss(f: Extract<Fault, { kind: 'sessionLoss' }>, id: string, w: FaultWindow): void {
    const { fleet } = this.d;
    const list = [...(fleet.sessionFaults.get(id) ?? [])];
    list.splice(list.findIndex((x) => x.mode === f.mode), 1);
    fleet.sessionFaults.set(id, list);
    const next = { session: list.at(-1) ?? null };
    const x = this.losses.get(f)!;
    this.losses.delete(f);
    const first = x.spans[0]!.p;
    // a frozen process has not said yet which terms it lost: none kept
    x.closed = { window: w, to: monoNow(), frozen: first.paused || !first.alive };
    for (const span of x.spans) span.to = span.p.sendMarked(next);
    const now = fleet.procs.get(id)!;
    if (!x.spans.some((span) => span.p === now)) now.send(next);
  }

  /** What `x` did: each process's counts from what it told as the fault took effect to what it told as it was lifted (or its last, had it exited). */
  private async outcomeOf(x: Loss): Promise<SessionLossOutcome> {
    let sessionsEnded = 0;
    let failedRenewals = 0;
    for (const span of x.spans) {
      const from = await span.from;
      if (!from) continue; // it exited before the fault took effect on it
      const to = (await span.to)?.stats ?? span.p.session ?? from.stats;
      sessionsEnded += to.ended - from.stats.ended;
      failedRenewals += to.failedRenewals - from.stats.failedRenewals;
    }
    const { window: w, to, frozen } = x.closed!;
    const head = await x.spans[0]!.from;
    const tail = frozen ? undefined : await x.spans[0]!.to;
    const ledAtStart = head ? [...head.led.keys()].filter((lease) => lease !== JOB_LEASE) : [];
    const kept = tail ? ledAtStart.filter((lease) => tail.led.get(lease) === head!.led.get(lease)) : [];
    // every line written before the answers has been read: the stops within the window are all in
    const stops = this.d.feed.history
      .filter((h) => h.identity === x.worker && h.event === 'stopped' && BigInt(h.mono) >= BigInt(w.from) && BigInt(h.mono) <= BigInt(to))
      .map((h) => `${h.lease}:${h.reason ?? '?'}`);
    return { worker: x.worker, mode: x.mode, sessionsEnded, failedRenewals, heldWithoutSession: x.heldWithoutSession, ledAtStart, kept, stops };
  }

  /** What each lifted sessionLoss did, once its processes have answered (or exited): counted and printed in the order they began. */
  private async tellSessionLosses(): Promise<void> {
    const { feed } = this.d;
    for (const x of this.begunLosses.splice(0)) {
      if (!x.closed) continue; // the run stopped inside it
      const outcome = await this.outcomeOf(x);
      this.sessionLosses.push(outcome);
      if (outcome.sessionsEnded > 0) feed.count('sessionLoss:sessionEnded');
      feed.count(outcome.ledAtStart.length === 0 ? 'sessionLoss:ledNothing' : `sessionLoss:terms${outcome.kept.length === outcome.ledAtStart.length ? 'Kept' : 'Lost'}`);
      const stops = outcome.stops;
      this.d.print(
        `  sessionLoss → ${x.worker} (${x.mode}): sessions ended ${outcome.sessionsEnded}, renewals failed ${outcome.failedRenewals}; held without a session: ${outcome.heldWithoutSession.join(', ') || '-'}; led ${outcome.ledAtStart.join(', ') || '-'}, kept ${outcome.kept.join(', ') || '-'}${stops.length ? `; stopped ${stops.join(', ')}` : ''}`,
      );
    }
  }

  /** The harness read `lease` held by `holder`: held without a session during a sessionLoss on it, its elector renews it itself. */
  seen(lease: string, holder: string, onSession: boolean): void {
    if (onSession) return;
    for (const x of this.losses.values()) if (x.worker === holder && !x.heldWithoutSession.includes(lease)) x.heldWithoutSession.push(lease);
  }

  /**
   * The run's end: every coordinator-side fault ended, every push outage over, and what each
   * sessionLoss did told (after the fleet stopped: every process has answered or exited).
   */
  async endAll(): Promise<void> {
    for (const f of this.d.s.faults) if (COORDINATOR_SIDE.has(f.kind)) this.d.coordinator.end(f);
    for (const restore of this.pushRestores.values()) await restore();
    await this.tellSessionLosses();
  }
}

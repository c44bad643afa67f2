/**
 * Workloads, the workers' side: worker processes, each on a machine of its own running the real
 * SDK — a LeaderElector per lease with its candidacy, writing to the ledger, fenced, while it leads;
 * in session worlds one Session per process holding its electors' terms; the scheduled jobs
 * (sim/jobs.ts). One worker runs one process at a time; a fault (sim/faults.ts) ends it and starts
 * the next.
 */
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { ledgerAppend, ledgerWrite } from '../lib/history/ledger.js';
import { LOCAL_DEPLOYMENT } from '../lib/local/ecs-task.js';
import type { Platform } from '../lib/schemas/platform.js';
import { FencingError } from '../lib/sdk/fencing.js';
import { electorWith, type LeaderElector } from '../lib/sdk/elector.js';
import type { Push } from '../lib/sdk/push.js';
import { Session } from '../lib/sdk/session.js';
import { electorInternals } from './bugs.js';
import { ns } from './feed.js';
import { scheduleJobs, type JobsState } from './jobs.js';
import type { Proc } from './proc.js';
import { hostState } from './network.js';
import { sessionTimings, type WorldContext, type WorldSettings } from './settings.js';

const SIM_CLUSTER = `arn:aws:ecs:${LOCAL_DEPLOYMENT.region}:${LOCAL_DEPLOYMENT.account}:cluster/sim`;

export class Workers {
  /** The process each worker runs now (or ran last). */
  readonly procs: Proc[] = [];
  /** Every process's Session (sessions worlds): their counts go into the world's. */
  readonly sessions: Session[] = [];
  private readonly starts: number[] = [];
  private readonly jobs: JobsState = { invocations: 0 };
  private readonly leaseNames: string[];

  constructor(private readonly c: WorldContext) {
    this.leaseNames = Array.from({ length: c.settings.leases }, (_, i) => `job-${i}`);
  }

  /** Processes started under a worker's identity beside its own (sim/faults.ts: a twin). */
  readonly twins: Proc[] = [];
  /** Each process's push channel and Session, for an elector started again in it (`--kept` worlds' elector stops). */
  private readonly wiring = new WeakMap<Proc, { readonly push: Push | undefined; readonly session: Session | undefined }>();

  /** `--kept` worlds: worker `i`'s process starts a new elector for `leaseName` in place of one that stopped (sim/faults.ts: an elector stop). */
  restartElector(proc: Proc, i: number, leaseName: string): void {
    const w = this.wiring.get(proc)!;
    this.c.feed.log(`${proc.identity} starts its elector of ${leaseName} again`);
    this.startElector(proc, i, leaseName, w.push, w.session);
  }

  /** Starts worker `i`'s next process. */
  start(i: number): Proc {
    const proc = this.launch(i);
    this.c.feed.log(`start ${proc.identity}`);
    this.procs[i] = proc;
    return proc;
  }

  /**
   * Starts a second process under worker `i`'s identity beside its own (a copied command line, a
   * deployment started twice): its electors find the name held by a live start-up and are refused
   * (DuplicateIdentityError), or take over from one that died. It is not the worker's process: the
   * worker's faults and restarts do not see it.
   */
  twin(i: number): Proc {
    // on a host of its own (an ECS task): its exit stops no instance the worker's own process runs on
    const proc = this.launch(i, true);
    this.c.feed.log(`start a second process under ${proc.identity}'s identity`);
    this.twins.push(proc);
    return proc;
  }

  private launch(i: number, twin = false): Proc {
    const { world, schedule } = this.c;
    const identity = `w${i}`;
    this.starts[i] = (this.starts[i] ?? 0) + 1;
    // an ECS task has a new ARN each start; an EC2 instance keeps its id across a stop and a start
    const platform: Platform =
      schedule.platforms[i] === 'ecs' || twin
        ? { kind: 'ecs', id: `arn:aws:ecs:${LOCAL_DEPLOYMENT.region}:${LOCAL_DEPLOYMENT.account}:task/sim/w${i}-${this.starts[i]}`, cluster: SIM_CLUSTER }
        : { kind: 'ec2', id: `i-${(0x51a00000 + i).toString(16)}` };
    const machine = world.machine(identity, this.c.network, hostState({ worker: i, name: `${identity}#${this.starts[i]}` }));
    if (this.c.gone?.(machine)) machine.kill(); // its Region is lost: nothing runs there any more
    machine.clock.offsetMs = schedule.skewMs[i] ?? 0;
    machine.clock.rate = (schedule.driftPpm?.[i] ?? 0) * 1e-6;
    const proc: Proc = { identity, platform, runs: [], restart: () => undefined, machine, electors: [], leading: new Map(), stop: new AbortController(), cronRuns: new Map(), jobs: new Set(), writes: 0, failWork: new Map(), ...(schedule.kept ? { own: new Map() } : {}) };
    // as a worker with a Session passes it to its PushChannel: wakes addressed to its process; on
    // its own Region's IoT Core endpoint (a world across Regions: sim/push.ts)
    const region = this.c.regionOf?.(identity);
    const push = world.brokerOf(region) ? world.connect(machine, () => world.clock.now() < machine.partitionedUntil, () => proc.session?.process, region) : undefined;
    const session = schedule.session && !schedule.session.without?.includes(i) ? this.startSession(proc, i) : undefined;
    if (session) proc.session = session;
    this.wiring.set(proc, { push, session });
    for (const leaseName of this.leaseNames) this.startElector(proc, i, leaseName, push, session);
    if (this.c.settings.cronEveryMs > 0) scheduleJobs(this.c, this.jobs, proc, i, machine.client);
    return proc;
  }

  /**
   * The process's Session, on its machine's clock and client (so every fault of the process is its
   * fault too), started before the electors and run until they have all finished: a SIGTERMed
   * process exits once it has deleted its row; a killed one's row is simply no longer renewed.
   */
  private startSession(proc: Proc, i: number): Session {
    const { feed, schedule, world } = this.c;
    const settings = this.timingsOf(i);
    const identity = proc.identity;
    const session = new Session({
      client: proc.machine.client,
      tables: world.names,
      clock: proc.machine.clock,
      prefix: identity,
      ...sessionTimings(settings, schedule.session!),
      onError: (e) => {
        feed.count('session:errors');
        if (e.message.startsWith('Session ')) feed.log(`${identity}: ${e.message.replace(/;.*/, '')}`);
        this.alarm();
      },
    });
    this.sessions.push(session);
    // a Session's run() rejects only for a table that does not exist, which no world has: anything else is a defect (test/sim/sim.test.ts)
    proc.runs.push(session.run(proc.stop.signal).catch(() => void feed.count('session:runRejected')));
    void session.ready.then(
      () => feed.log(`${identity} session ${session.name ?? '(already ended)'} started`),
      () => feed.log(`${identity} session failed to start: its electors renew their leases themselves`),
    );
    return session;
  }

  /** An elector for `leaseName` in the process: while it leads, a fenced ledger write every writeEveryMs. */
  /** The world's timings, scaled for worker `i` (Schedule.timingScale). */
  private timingsOf(i: number): WorldSettings {
    const { settings, schedule } = this.c;
    const k = schedule.timingScale?.[i] ?? 1;
    return k === 1 ? settings : { ...settings, leaseDurationMs: k * settings.leaseDurationMs, renewDeadlineMs: k * settings.renewDeadlineMs, retryPeriodMs: k * settings.retryPeriodMs };
  }

  /** After an `onError` has counted its fault: a broken alarm throws (WorldContext.brokenAlarms). */
  private alarm(): void {
    if (this.c.brokenAlarms) throw new Error('the alarm is down');
  }

  private startElector(proc: Proc, i: number, leaseName: string, push: Push | undefined, session: Session | undefined): void {
    const { feed, schedule, world } = this.c;
    const settings = this.timingsOf(i);
    const { identity, machine } = proc;
    const pc = machine.clock;
    const client: DynamoDBClient = machine.client;
    // --kept worlds: this worker's electors leave a term they led to run out when they stop
    const keeps = schedule.kept?.workers.includes(i) === true;
    const ledgerTable = feed.ledgerTable;
    // a planted bug goes into this elector's lock or decisions (sim/bugs.ts)
    const planted = electorInternals(this.c.plant, { client, leasesTable: world.names.leases, wallNow: () => pc.now() }) ?? {};
    const elector: LeaderElector = electorWith(planted, {
      leaseName,
      identity,
      tables: world.names,
      client,
      clock: pc,
      platform: proc.platform,
      leaseDurationMs: settings.leaseDurationMs,
      renewDeadlineMs: settings.renewDeadlineMs,
      retryPeriodMs: settings.retryPeriodMs,
      ...(this.c.multiRegion ? { multiRegion: true } : {}),
      ...(keeps ? { releaseOnCancel: false } : {}),
      candidacy: { emulationVersion: schedule.versions[i] ?? '1.30.0', binaryVersion: schedule.versions[i] ?? '1.30.0', ...(this.c.regionOf ? { location: { region: this.c.regionOf(identity) } } : {}) },
      ...(push ? { push } : {}),
      ...(session ? { session } : {}),
      callbacks: {
        onStartedLeading: (signal, { fencingToken }) => {
          proc.leading.set(leaseName, fencingToken);
          feed.started({ lease: leaseName, identity, instance: elector.instance, fencingToken }, Math.max(0, Math.round(pc.now())));
          feed.log(`${identity} leads ${leaseName} (token ${fencingToken})`);
          // the work rejects when a fault makes it fail (sim/faults.ts), and writes nothing more
          return new Promise<void>((resolve, reject) => {
            const failed = { now: false };
            proc.failWork.set(leaseName, (e) => {
              failed.now = true;
              proc.failWork.delete(leaseName);
              reject(e);
            });
            work(signal, fencingToken, failed).then(resolve, reject);
          });
        },
        onStoppedLeading: ({ reason, fencingToken }) => {
          if (pc.dead) return;
          proc.leading.delete(leaseName);
          proc.failWork.delete(leaseName);
          feed.stopped({ lease: leaseName, identity, instance: elector.instance, fencingToken }, Math.max(0, Math.round(pc.now())), reason);
          feed.log(`${identity} stops leading ${leaseName} (${reason})`);
        },
      },
      onError: (e) => {
        feed.count('workerErrors');
        feed.log(`${identity} ${leaseName}: ${e.message}`);
        this.alarm();
      },
    });
    /** A leader's work: a fenced ledger write every writeEveryMs until its term ends or the work fails. */
    const work = async (signal: AbortSignal, fencingToken: number, failed: { now: boolean }) => {
      while (!signal.aborted && !pc.dead && !failed.now) {
        const entry = { lease: leaseName, id: `${elector.instance}#${++proc.writes}`, identity, instance: elector.instance, fencingToken, sentMono: ns(world.clock.monotonic()), zombie: false };
        try {
          await (this.c.multiRegion ? elector.fencedItemWrite(ledgerAppend(ledgerTable, entry)) : elector.fencedWrite(ledgerWrite(ledgerTable, entry)));
          feed.count('fenced:accepted');
        } catch (e) {
          feed.count(e instanceof FencingError ? 'fenced:refused' : 'fenced:error');
        }
        await pc.sleep(settings.writeEveryMs);
      }
    };
    const rejected = (e: unknown) => void feed.count(`runRejected:${e instanceof Error ? e.name : 'other'}`);
    if (!proc.own) {
      proc.electors.push(elector);
      proc.runs.push(elector.run(proc.stop.signal).catch(rejected));
      return;
    }
    // --kept worlds: the elector's own stop, aborted with the process's or alone (an elector stop);
    // a stopping leader that keeps its term is counted by where its term is as it stops (keptStop)
    const stop = new AbortController();
    stop.signal.addEventListener('abort', () => (keeps ? this.keptStop(proc, elector, leaseName, run) : undefined), { once: true });
    proc.stop.signal.addEventListener('abort', () => stop.abort(), { once: true });
    const at = proc.electors.findIndex((x) => x.options.leaseName === leaseName);
    if (at >= 0) proc.electors[at] = elector;
    else proc.electors.push(elector);
    const run: Promise<void> = elector.run(stop.signal).catch(rejected);
    proc.own.set(leaseName, { stop, run });
    proc.runs.push(run);
  }

  /**
   * A leader with releaseOnCancel false stops (`--kept` worlds): counted by where its term is as
   * it stops (the lease row, as the model holds it now: `kept:stopsOnSession` when the row names
   * it and a session, `kept:stopsOffSession` otherwise; `kept:electorStopsOnSession` for an
   * elector stopped alone, its process's Session running on), and, for a term on a session, where
   * its term is once its run() has ended: taken off the session (`kept:takenOffSession`), still on
   * it (`kept:leftOnSession`: named as left on its process's session rows, leftTerms), or moved on (`kept:movedOn`).
   */
  private keptStop(proc: Proc, elector: LeaderElector, leaseName: string, run: Promise<void>): void {
    const { feed } = this.c;
    if (!proc.leading.has(leaseName) || proc.machine.clock.dead) return;
    const before = this.leaseRow(leaseName);
    const onSession = before?.['holderInstance']?.S === elector.instance && typeof before['session']?.S === 'string';
    const alone = !proc.stop.signal.aborted;
    feed.count('kept:stops');
    feed.count(onSession ? 'kept:stopsOnSession' : 'kept:stopsOffSession');
    if (alone && onSession) feed.count('kept:electorStopsOnSession');
    if (!onSession) return;
    void run.then(() => {
      if (proc.machine.clock.dead) return;
      const after = this.leaseRow(leaseName);
      const same = after?.['holderInstance']?.S === elector.instance && after['fencingToken']?.N === before['fencingToken']?.N;
      const outcome = !same ? 'movedOn' : typeof after['session']?.S === 'string' ? 'leftOnSession' : 'takenOffSession';
      feed.count(`kept:${outcome}`);
      feed.log(`${proc.identity} ${leaseName}: its kept term (token ${before['fencingToken']?.N}) ${outcome === 'movedOn' ? 'moved on' : outcome === 'leftOnSession' ? `left on session ${after!['session']!.S}` : 'taken off its session'} as its elector stopped`);
    });
  }

  /** A lease's row as the model holds it now (no request: nothing of the world's moves). */
  private leaseRow(leaseName: string) {
    return this.c.world.model.items(this.c.world.names.leases).find((it) => it['name']?.S === leaseName);
  }
}

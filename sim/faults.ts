/**
 * Faults, part two: what the schedule does to processes and rows at its times — a kill (SIGKILL),
 * a pause (anywhere, or aimed between a request landing and its answer), a stop (SIGTERM: the
 * process hands off and exits), a partition, a step of a wall clock, an operator's delete of a
 * lease row — each recorded as a fault window for the checker, as are the schedule's DynamoDB and
 * coordinator windows. (The network's faults are sim/network.ts'.)
 */
import { DeleteItemCommand } from '@aws-sdk/client-dynamodb';
import type { Functions } from './functions.js';
import { ns, T0 } from './feed.js';
import type { ProcessFault } from './schedule.js';
import { CRON_LEASE, type WorldContext } from './settings.js';
import type { Proc, Workers } from './workers.js';

type WorkerFault = Exclude<ProcessFault, { kind: 'deleteLease' }>;

/** Sets a timer for each of the schedule's faults, and one closing each DynamoDB and coordinator window. */
export function scheduleFaults(c: WorldContext, workers: Workers, fns: Functions): void {
  const { world, schedule, feed } = c;
  for (const f of schedule.processFaults) world.clock.setTimer(f.at, () => (f.kind === 'deleteLease' ? deleteLease(c, f) : hit(c, workers, fns, f)));
  for (const w of [...schedule.ddbFaults, ...schedule.coordinatorDown]) {
    world.clock.setTimer(w.to, () => feed.window(schedule.ddbFaults.includes(w) ? 'dynamodb' : 'coordinatorDown', T0 + w.from, T0 + w.to));
  }
}

/** An operator's delete: unconditional, whoever holds the lease. */
function deleteLease(c: WorldContext, f: Extract<ProcessFault, { kind: 'deleteLease' }>): void {
  const { world, feed } = c;
  const from = world.clock.monotonic();
  feed.log(`delete lease job-${f.lease}`);
  feed.count('fault:deleteLease');
  world.model.client({ name: 'operator' }).send(new DeleteItemCommand({ TableName: world.names.leases, Key: { name: { S: `job-${f.lease}` } } })).catch(() => feed.count('fault:deleteLeaseFailed'));
  feed.faults.push({ kind: 'leaseDelete', lease: `job-${f.lease}`, from: ns(from), to: ns(from) });
}

/** A fault aimed at worker `f.worker`'s process as it is now. */
function hit(c: WorldContext, workers: Workers, fns: Functions, f: WorkerFault): void {
  const { world, feed } = c;
  const clock = world.clock;
  const from = clock.monotonic();
  const proc = workers.procs[f.worker]!;
  // one worker, one process: the next starts only when this one is gone (and only once)
  let restarted = false;
  const restart = (afterMs: number, kind: string) => {
    if (restarted) return;
    restarted = true;
    clock.setTimer(afterMs, () => {
      workers.start(f.worker);
      feed.window(kind, from, clock.monotonic(), kind === 'kill' ? { instances: proc.electors.map((e) => e.instance) } : {});
    });
  };
  if (proc.machine.clock.dead || (proc.stop.signal.aborted && f.kind === 'stop')) {
    feed.count(`skipped:${f.kind}`); // already gone, or already stopping
    return;
  }
  const m = proc.machine;
  if (f.kind === 'kill') {
    feed.log(`kill ${proc.identity}`);
    killProc(c, proc);
    fns.platformStopped(proc.platform);
    proc.restart = () => undefined; // a stop under way restarts nothing now
    restart(f.forMs, 'kill');
  } else if (f.kind === 'pause') {
    if (f.aimed) m.pauseAtNextAnswer = () => pause(c, proc, f.forMs, true);
    else pause(c, proc, f.forMs, false);
  } else if (f.kind === 'partition') {
    feed.log(`partition ${proc.identity} for ${f.forMs} ms`);
    m.partitionedUntil = clock.now() + f.forMs;
    clock.setTimer(f.forMs, () => feed.window('partition', from, clock.monotonic()));
  } else if (f.kind === 'clockStep') {
    feed.log(`step ${proc.identity}'s wall clock by ${f.stepMs} ms`);
    m.clock.offsetMs += f.stepMs;
  } else if (f.kind === 'stop') {
    feed.log(`stop ${proc.identity} (SIGTERM)`);
    // a frozen process handles the signal when it runs again
    m.clock.gate(() => proc.stop.abort());
    // the process exits once its electors have handed off; then its task or instance stops
    proc.restart = () => restart(f.forMs, 'handoff');
    void Promise.all([...proc.runs, ...proc.jobs]).then(() => {
      if (m.clock.dead) return; // killed meanwhile: the kill restarts it
      // exited: a fault that comes for it before its successor starts finds nothing to hit (seed
      // 251652818 killed the exited process and so started a second one beside the first's successor)
      m.kill();
      fns.platformStopped(proc.platform);
      proc.restart();
    });
  }
}

/** SIGKILL: the process is gone at once, and the terms it held (its leaders' and its job runs') end now. */
/** The process dies at once (SIGKILL): its terms and its jobs' runs end with it, as the history records. */
export function killProc(c: WorldContext, proc: Proc): void {
  const { world, feed } = c;
  const wall = () => Math.round(world.clock.now());
  proc.machine.kill();
  for (const [lease, token] of proc.leading) {
    const e = proc.electors.find((x) => x.options.leaseName === lease)!;
    feed.stopped({ lease, identity: proc.identity, instance: e.instance, fencingToken: token }, wall(), 'killed');
  }
  proc.leading.clear();
  for (const [instance, token] of proc.cronRuns) {
    if (token !== undefined) feed.stopped({ lease: CRON_LEASE, identity: instance.replace(/_run$/, ''), instance, fencingToken: token }, wall(), 'killed');
  }
  proc.cronRuns.clear();
}

/** Freezes the process for `forMs`; the window names every term it might have held meanwhile. */
function pause(c: WorldContext, proc: Proc, forMs: number, aimed: boolean): void {
  const { world, feed } = c;
  const clock = world.clock;
  const from = clock.monotonic();
  feed.log(`pause ${proc.identity} for ${forMs} ms${aimed ? ' (between a request landing and its answer)' : ''}`);
  proc.machine.clock.pause();
  const runs = [...proc.cronRuns.keys()];
  clock.setTimer(forMs, () => {
    feed.log(`resume ${proc.identity}`);
    feed.window('pause', from, clock.monotonic(), { instances: [...new Set([...proc.electors.map((e) => e.instance), ...runs, ...proc.cronRuns.keys()])] });
    proc.machine.clock.resume();
  });
}

/**
 * Faults, part two: what the schedule does to processes and rows at its times — a kill (SIGKILL),
 * a pause (anywhere, or aimed between a request landing and its answer), a stop (SIGTERM: the
 * process hands off and exits), a partition, a step of a wall clock, an operator's delete of a
 * lease row, a short freeze of a leader — each recorded as a fault window for the checker, as are
 * the schedule's DynamoDB and coordinator windows, a worker's slow DynamoDB, the stream functions'
 * outage, the fleet's DynamoDB outage, the throttling the fleet shares and a slow IoT Core. (The
 * network's faults are sim/network.ts', the functions' outages and slow publishes sim/functions.ts'.)
 */
import { DeleteItemCommand, GetItemCommand, UpdateItemCommand } from '@aws-sdk/client-dynamodb';
import type { Functions } from './functions.js';
import { ns, T0 } from './feed.js';
import { sessionKey } from '../lib/schemas/identity.js';
import { describeDynamoOutage, describePartialThrottle, describeSlowBroker, describeSlowDynamo, describeStreamsDown, type PeerFault, type ProcessFault, type Schedule, type SessionDelete, type ShortPause, type UserFault } from './schedule.js';
import { CRON_LEASE, sessionTimings, type WorldContext } from './settings.js';
import type { Proc } from './proc.js';
import type { Workers } from './workers.js';

type WorkerFault = Exclude<ProcessFault, { kind: 'deleteLease' }>;

/** When each process died (killed, its Region lost, or exited after SIGTERM), in simulated monotonic ms. */
const diedAt = new WeakMap<Proc, number>();
/**
 * The end of a fault's window on `proc` (a pause, a partition, a twin's run): now, or when the
 * process died if it died first. The fault ended with it: its successor is a new process on a new
 * machine, neither frozen nor cut off, and one killed with its Region is gone.
 */
const endOn = (c: WorldContext, proc: Proc, from: number): number => Math.max(from, diedAt.get(proc) ?? c.world.clock.monotonic());

/** Sets a timer for each of the schedule's faults, and one closing each DynamoDB and coordinator window. */
export function scheduleFaults(c: WorldContext, workers: Workers, fns: Functions): void {
  const { world, schedule, feed } = c;
  for (const f of schedule.processFaults) world.clock.setTimer(f.at, () => (f.kind === 'deleteLease' ? deleteLease(c, f) : hit(c, workers, fns, f)));
  for (const w of [...schedule.ddbFaults, ...schedule.coordinatorDown]) {
    world.clock.setTimer(w.to, () => feed.window(schedule.ddbFaults.includes(w) ? 'dynamodb' : 'coordinatorDown', T0 + w.from, T0 + w.to));
  }
  for (const f of schedule.userFaults) world.clock.setTimer(f.at, () => userFault(c, workers, f));
  for (const f of schedule.peerFaults) world.clock.setTimer(f.at, () => (f.kind === 'sessionRedirect' ? void redirectSession(c, workers, f) : twin(c, workers, fns, f)));
  for (const f of schedule.kept?.electorStops ?? []) world.clock.setTimer(f.at, () => stopElector(c, workers, f));
  const slow = schedule.slowDynamo;
  if (slow) {
    // the network slows the answers (sim/network.ts); here its window: over once the last answer to a request that landed in it is back
    world.clock.setTimer(slow.at, () => {
      const from = world.clock.monotonic();
      feed.count('fault:slowDynamo');
      feed.log(describeSlowDynamo(slow));
      world.clock.setTimer(slow.forMs + slow.delayMs[1] + schedule.requestFaults.latencyMs[1], () => {
        feed.log(`w${slow.worker}'s DynamoDB answers on time again`);
        feed.window('slowDynamo', from, world.clock.monotonic(), { detail: `w${slow.worker}` });
      });
    });
  }
  const down = schedule.streamsDown;
  if (down) {
    // the functions hold the records (sim/functions.ts); here its window
    world.clock.setTimer(down.at, () => {
      const from = world.clock.monotonic();
      feed.count('fault:streamsDown');
      feed.count(`fault:streamsDown:${down.functions.join('+')}`);
      feed.log(describeStreamsDown(down));
      world.clock.setTimer(down.forMs, () => {
        feed.log(`${down.functions.join(' and ')} up again`);
        feed.window('streamsDown', from, world.clock.monotonic(), { detail: down.functions.join(',') });
      });
    });
  }
  for (const f of schedule.shortPauses ?? []) world.clock.setTimer(f.at, () => shortPause(c, workers, f));
  const outage = schedule.dynamoOutage;
  if (outage) {
    // the network fails the requests (sim/network.ts); here its window: the outage, from its start to its end
    world.clock.setTimer(outage.at, () => {
      const from = world.clock.monotonic();
      feed.count('fault:dynamoOutage');
      feed.count(`fault:dynamoOutage:${outage.answers}`);
      feed.log(describeDynamoOutage(outage));
      world.clock.setTimer(outage.forMs, () => {
        feed.log('DynamoDB back for the whole fleet');
        feed.window('dynamoOutage', from, world.clock.monotonic(), { detail: outage.answers });
      });
    });
  }
  const throttle = schedule.partialThrottle;
  if (throttle) {
    // the network throttles the requests (sim/network.ts); here its window: the throttling, from its start to its end
    world.clock.setTimer(throttle.at, () => {
      const from = world.clock.monotonic();
      feed.count('fault:partialThrottle');
      feed.log(describePartialThrottle(throttle));
      world.clock.setTimer(throttle.forMs, () => {
        feed.log('DynamoDB throttles no more');
        feed.window('partialThrottle', from, world.clock.monotonic(), { detail: `${Math.round(throttle.share * 100)} %` });
      });
    });
  }
  const broker = schedule.slowBroker;
  if (broker && schedule.push) {
    // the functions' publishes and the broker's deliveries are slowed (sim/functions.ts, sim/push.ts); here its window:
    // over once the last publish made in it may have landed
    world.clock.setTimer(broker.at, () => {
      const from = world.clock.monotonic();
      feed.count('fault:slowBroker');
      feed.log(describeSlowBroker(broker));
      world.clock.setTimer(broker.forMs, () => {
        feed.log('IoT Core answers publishes on time again');
        world.clock.setTimer(broker.delayMs[1], () => feed.window('slowBroker', from, world.clock.monotonic()));
      });
    });
  }
  const sd = schedule.sessionDelete;
  if (sd) {
    const aim = sd.beforeTick ? tickAfter(c, sd) : undefined;
    world.clock.setTimer(aim ? aim.pick : sd.at, () => deleteSession(c, workers, sd, aim?.tick));
  }
}

/** How often a session-row delete looks at the holder's row for its next renewal (no request: the model's own items). */
const RENEWAL_WATCH_MS = 20;

/**
 * An aimed session-row delete (`beforeTick`): the coordinator's first tick after `f.at` (the ticks
 * run every tickEveryMs from the world's start), and when to pick the holder, two longest renew
 * intervals (and a margin) before it. The delete then watches for the holder's renewal from a renew
 * interval before the tick, so it lands `phase` of an interval after the holder's last renewal
 * before that pass (the one that judges a term on a missing row): before the pass, and the holder's
 * next renewal, which tells it, after it, in about 1 − phase of them.
 */
function tickAfter(c: WorldContext, f: SessionDelete): { tick: number; pick: number } {
  const { tickEveryMs } = c.settings;
  const longest = Math.max(...Array.from({ length: c.settings.workers }, (_, i) => sessionTimings(scaled(c, i), c.schedule.session!).renewIntervalMs!));
  const tick = Math.ceil((f.at + 2 * longest + 500) / tickEveryMs) * tickEveryMs;
  return { tick, pick: tick - 2 * longest - 500 };
}

/** The world's timings, scaled for worker `i` (Schedule.timingScale), as sim/workers.ts runs them. */
const scaled = (c: WorldContext, i: number) => {
  const k = c.schedule.timingScale?.[i] ?? 1;
  return k === 1 ? c.settings : { ...c.settings, leaseDurationMs: k * c.settings.leaseDurationMs, renewDeadlineMs: k * c.settings.renewDeadlineMs, retryPeriodMs: k * c.settings.retryPeriodMs };
};

/**
 * Someone deletes the live session row a lease's holder holds its term on (Schedule.sessionDelete):
 * `job-${f.lease}`'s holder, else the other lease's, as the rows are now (no request). Waits for the
 * holder's next session renewal to land (its row's renewTime moves), then `f.phase` of its renew
 * interval, and deletes the row the lease still names, unconditionally: an operator's consistent
 * client, or the peer's own client (its faults are the delete's: a dead peer deletes nothing, a
 * partitioned one's request may or may not land). No term is ended by it, so it is no strike and the
 * checker forgives nothing for it: a window from the send to the answer (or the send, unanswered).
 */
function deleteSession(c: WorldContext, workers: Workers, f: SessionDelete, tick?: number): void {
  const { world, feed, schedule } = c;
  const clock = world.clock;
  const row = (table: string, key: string, value: string) => world.model.items(table).find((it) => it[key]?.S === value);
  const onSession = (n: number) => {
    const l = row(world.names.leases, 'name', `job-${n}`);
    const holder = l?.['holderIdentity']?.S;
    const session = l?.['session']?.S;
    const worker = workers.procs.findIndex((p) => p.identity === holder && !p.machine.clock.dead && p.session !== undefined);
    return holder === undefined || session === undefined || worker < 0 ? undefined : { lease: `job-${n}`, session, worker };
  };
  const target = onSession(f.lease) ?? onSession(1 - f.lease);
  if (!target) {
    feed.count('skipped:sessionDelete'); // no lease held on a session now
    return;
  }
  const { lease, session, worker } = target;
  const key = sessionKey(session);
  const stamp = () => world.model.items(world.names.identities).find((it) => it['component']?.S === key.component && it['name']?.S === key.name)?.['renewTime']?.N;
  const intervalMs = sessionTimings(scaled(c, worker), schedule.session!).renewIntervalMs!;
  let was: string | undefined;
  let watchUntil = 0;
  const watch = () => {
    const now = stamp();
    if (now === undefined || clock.now() > watchUntil) return void feed.count('skipped:sessionDelete'); // the row gone, or not renewed: no live session to delete
    if (now === was) return void clock.setTimer(RENEWAL_WATCH_MS, watch);
    clock.setTimer(f.phase * intervalMs, () => void send());
  };
  const send = async () => {
    // still that lease's session: the holder may have moved on meanwhile
    if (row(world.names.leases, 'name', lease)?.['session']?.S !== session) return void feed.count('skipped:sessionDelete');
    const peer = f.by === 'peer' ? workers.procs[(worker + f.peer) % workers.procs.length]! : undefined;
    if (peer?.machine.clock.dead) return void feed.count('skipped:sessionDelete');
    const who = peer ? `${peer.identity} (a peer of the same grant)` : 'an operator';
    const from = clock.monotonic();
    feed.count('fault:sessionDelete');
    feed.count(`fault:sessionDelete:${f.by}:${schedule.push ? 'push' : 'noPush'}`);
    feed.log(`${who} deletes session ${session}, which ${lease}'s holder w${worker} leads on (${(f.phase * intervalMs).toFixed(0)} ms after its renewal)`);
    const client = peer ? peer.machine.client : world.model.client({ name: 'operator' });
    // a partitioned peer's request is never answered (it may have landed): the window closes when the delete is answered, or a few seconds after it went
    const sent = client.send(new DeleteItemCommand({ TableName: world.names.identities, Key: { component: { S: key.component }, name: { S: key.name } } })).then(
      () => undefined,
      () => void feed.count('fault:sessionDeleteFailed'), // lost on the way, or its answer lost
    );
    await Promise.race([sent, clock.sleep(5_000)]);
    feed.window('sessionDelete', from, clock.monotonic(), { lease, detail: session });
  };
  const begin = () => {
    was = stamp();
    watchUntil = clock.now() + 2 * intervalMs + 1_000;
    watch();
  };
  // aimed: from an interval before the tick (ms from the start, as the schedule's times), so that the
  // renewal it waits for is the holder's last before the tick, and its next is after it
  const wait = tick === undefined ? 0 : tick - intervalMs - 200 - (clock.now() - T0);
  if (wait > 0) clock.setTimer(wait, begin);
  else begin();
}

/**
 * `--kept` worlds: one elector of a kept worker's process stops (its run()'s signal aborted) while
 * the process, its Session and its other electors run on — the process of the kept worker that
 * leads the lease now, if one does, else the schedule's worker — and a new one for the lease starts in the
 * same process `forMs` after the old one's run() ended (unless the process is gone or stopping by
 * then). The window spans the stop to the new start.
 */
/** Electors already asked to stop: a frozen process's stop waits on its gate, so its signal is not yet aborted. */
const stopAsked = new WeakSet<object>();

function stopElector(c: WorldContext, workers: Workers, f: NonNullable<Schedule['kept']>['electorStops'][number]): void {
  const { world, feed } = c;
  const clock = world.clock;
  const lease = `job-${f.lease}`;
  // the kept worker whose process leads the lease now, if one does (its kept term is the point); else the one drawn
  const worker = c.schedule.kept!.workers.find((w) => workers.procs[w]?.leading.has(lease) && !workers.procs[w]!.machine.clock.dead) ?? f.worker;
  const proc = workers.procs[worker]!;
  const own = proc.own?.get(lease);
  if (!own || proc.machine.clock.dead || proc.stop.signal.aborted || own.stop.signal.aborted || stopAsked.has(own)) {
    feed.count('skipped:electorStop'); // gone, stopping, or that elector already stopped
    return;
  }
  stopAsked.add(own);
  const from = clock.monotonic();
  feed.count('fault:electorStop');
  feed.log(`stop ${proc.identity}'s elector of ${lease} (its process runs on)`);
  // a frozen process stops it when it runs again
  proc.machine.clock.gate(() => own.stop.abort());
  void own.run.then(() =>
    clock.setTimer(f.forMs, () => {
      feed.window('electorStop', from, clock.monotonic(), { lease });
      if (proc.machine.clock.dead || proc.stop.signal.aborted) return void feed.count('skipped:electorRestart');
      workers.restartElector(proc, worker, lease);
    }),
  );
}

/**
 * A peer of the same lease writes the lease's `session` alone, as its grant allows (the statement
 * of a worker's acquisitions and releases): to its own process's session, or to a row that does
 * not exist. No term changes, so nothing here is a strike: the holder leads on, on its own session,
 * until its own read of the lease shows the row moved off it (lib/sdk/step.ts decideLeader), and observers do
 * not judge the term by a session that does not vouch for it (lib/election/vacancy.ts).
 */
async function redirectSession(c: WorldContext, workers: Workers, f: Extract<PeerFault, { kind: 'sessionRedirect' }>): Promise<void> {
  const { world, feed } = c;
  const lease = `job-${f.lease}`;
  const proc = workers.procs[f.worker]!;
  if (proc.machine.clock.dead) {
    feed.count('skipped:sessionRedirect');
    return;
  }
  const own = proc.session?.name;
  // the schedule asks for its own session only of a process that runs one; a session with no live
  // row at the moment (still starting, or ended) has none to point at: a missing row, told as such
  const to = f.to === 'ownSession' && own !== undefined ? own : `${lease}-no-such-session`;
  const what = to === own ? "its own process's" : f.to === 'ownSession' ? "a missing row: its own process's session has no live row now" : 'a missing row';
  const from = world.clock.monotonic();
  feed.count('fault:sessionRedirect');
  feed.log(`${proc.identity} rewrites ${lease}'s session to ${to} (${what})`);
  try {
    await proc.machine.client.send(
      new UpdateItemCommand({
        TableName: world.names.leases,
        Key: { name: { S: lease } },
        UpdateExpression: 'SET #s = :to ADD #rev :one',
        ConditionExpression: 'attribute_exists(#n)',
        ExpressionAttributeNames: { '#s': 'session', '#rev': 'revision', '#n': 'name' },
        ExpressionAttributeValues: { ':to': { S: to }, ':one': { N: '1' } },
      }),
    );
  } catch {
    feed.count('skipped:sessionRedirect'); // no row, or the request lost
  }
  feed.window('sessionRedirect', from, world.clock.monotonic(), { lease, detail: to });
}

/** A second process under a worker's identity, for a while (Workers.twin); SIGTERMed then, if it still runs. */
function twin(c: WorldContext, workers: Workers, fns: Functions, f: Extract<PeerFault, { kind: 'twin' }>): void {
  const { world, feed } = c;
  const from = world.clock.monotonic();
  feed.count('fault:twin');
  const proc = workers.twin(f.worker);
  let done = false;
  const exit = () => {
    if (done) return;
    done = true;
    feed.window('twin', from, endOn(c, proc, from), { instances: proc.electors.map((e) => e.instance) });
    if (proc.machine.clock.dead) return;
    killProc(c, proc);
    fns.platformStopped(proc.platform);
  };
  // refused (every elector's run() rejected), or stopped after its while: it exits
  void Promise.allSettled(proc.runs).then(exit);
  world.clock.setTimer(f.forMs, () => {
    if (done) return;
    if (proc.machine.clock.dead) return exit(); // killed meanwhile (its Region lost): its window closes at its death
    feed.log(`stop the second process under ${proc.identity}'s identity (SIGTERM)`);
    proc.machine.clock.gate(() => proc.stop.abort());
  });
}

/**
 * A fault as users bring them. Denials and throttling are the network's (sim/network.ts) and a slow
 * IoT Core the functions' (sim/functions.ts): here their windows. A malformed row, a moved token
 * and failed work are done here. A failed leader's work and a moved token are strikes (the checker
 * judges the lease from them, and they heal nothing); the rest are windows.
 */
function userFault(c: WorldContext, workers: Workers, f: UserFault): void {
  const { world, feed } = c;
  const from = world.clock.monotonic();
  feed.count(`fault:${f.kind}`);
  const closeAfter = (ms: number, extra: { lease?: string; detail?: string } = {}) => world.clock.setTimer(ms, () => feed.window(f.kind, from, world.clock.monotonic(), extra));
  switch (f.kind) {
    case 'denied':
      feed.log(`w${f.worker}'s role loses ${f.operation} for ${f.forMs} ms`);
      closeAfter(f.forMs, { detail: f.operation });
      break;
    case 'throttled':
      feed.log(`w${f.worker} throttled (${f.error}) for ${f.forMs} ms`);
      closeAfter(f.forMs);
      break;
    case 'slowPush':
      feed.log(`IoT Core slow (wakes ${f.delayMs} ms late) for ${f.forMs} ms`);
      closeAfter(f.forMs);
      break;
    case 'malformedRow':
      // its window closes at the repair: the repair is the fault's end (closing it a second
      // `forMs` later gave the rules that start their clocks at the last heal that long for free)
      void malformRow(c, `job-${f.lease}`, f.forMs, () => feed.window(f.kind, from, world.clock.monotonic(), { lease: `job-${f.lease}` }));
      break;
    case 'tokenMoved':
      void moveToken(c, `job-${f.lease}`, f.by);
      break;
    case 'workFails': {
      const lease = `job-${f.lease}`;
      const proc = workers.procs.find((p) => p.failWork.has(lease) && !p.machine.clock.dead);
      if (!proc) {
        feed.count('skipped:workFails'); // nobody's work runs for it now
        break;
      }
      const e = proc.electors.find((x) => x.options.leaseName === lease)!;
      feed.log(`${proc.identity}'s work for ${lease} fails`);
      // a frozen process's work fails when it runs again
      proc.machine.clock.gate(() => {
        const fail = proc.failWork.get(lease);
        if (!fail) return;
        feed.faults.push({ kind: 'workFailed', lease, instances: [e.instance], from: ns(world.clock.monotonic()), to: ns(world.clock.monotonic()) });
        fail(new Error(`the job of ${proc.identity} on ${lease} died`));
      });
      break;
    }
  }
}

/** An operator writes `leaseTransitions` as a string (the row fails its schema), and sets it back after `forMs`: `healed` then, at the repair. */
async function malformRow(c: WorldContext, lease: string, forMs: number, healed: () => void): Promise<void> {
  const { world, feed } = c;
  const operator = world.model.client({ name: 'operator' });
  const Key = { name: { S: lease } };
  const row = await operator.send(new GetItemCommand({ TableName: world.names.leases, Key, ConsistentRead: true }));
  const was = row.Item?.['leaseTransitions']?.N;
  if (was === undefined) {
    feed.count('skipped:malformedRow'); // no row yet
    return;
  }
  feed.log(`operator writes ${lease} malformed (leaseTransitions "${was} transitions")`);
  await operator.send(new UpdateItemCommand({ TableName: world.names.leases, Key, UpdateExpression: 'SET #t = :bad', ExpressionAttributeNames: { '#t': 'leaseTransitions' }, ExpressionAttributeValues: { ':bad': { S: `${was} transitions` } } }));
  world.clock.setTimer(forMs, () => {
    feed.log(`operator repairs ${lease}`);
    // only what it broke: a row deleted and written anew meanwhile is left alone
    void operator
      .send(new UpdateItemCommand({ TableName: world.names.leases, Key, UpdateExpression: 'SET #t = :n', ConditionExpression: 'attribute_type(#t, :s)', ExpressionAttributeNames: { '#t': 'leaseTransitions' }, ExpressionAttributeValues: { ':n': { N: was }, ':s': { S: 'S' } } }))
      .catch(() => feed.count('skipped:repair'));
    healed();
  });
}

/** An operator or a peer moves the lease's fencing token by `by`, leaving termToken (the holder's renewals still match). */
async function moveToken(c: WorldContext, lease: string, by: number): Promise<void> {
  const { world, feed } = c;
  const operator = world.model.client({ name: 'operator' });
  const Key = { name: { S: lease } };
  const row = await operator.send(new GetItemCommand({ TableName: world.names.leases, Key, ConsistentRead: true }));
  const token = row.Item?.['fencingToken']?.N;
  if (token === undefined || Number(token) + by < 0) {
    feed.count('skipped:tokenMoved');
    return;
  }
  const moved = String(Number(token) + by);
  feed.log(`${lease}'s fencing token moved from ${token} to ${moved} (holder ${row.Item?.['holderIdentity']?.S ?? 'none'})`);
  await operator.send(new UpdateItemCommand({ TableName: world.names.leases, Key, UpdateExpression: 'SET #f = :moved', ConditionExpression: '#f = :was', ExpressionAttributeNames: { '#f': 'fencingToken' }, ExpressionAttributeValues: { ':moved': { N: moved }, ':was': { N: token } } }));
  const now = ns(world.clock.monotonic());
  feed.faults.push({ kind: 'tokenMoved', lease, from: now, to: now, detail: `${token} -> ${moved}` });
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
    // a process killed meanwhile is no longer cut off: its successor runs on a machine of its own
    clock.setTimer(f.forMs, () => feed.window('partition', from, endOn(c, proc, from)));
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
      diedAt.set(proc, clock.monotonic());
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
  if (!diedAt.has(proc)) diedAt.set(proc, world.clock.monotonic());
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

/**
 * A short freeze (Schedule.shortPauses): the process that leads `job-${f.lease}` now, if one does,
 * else worker `f.worker`'s, frozen for 10–15 s — past its renew deadline, within its lease — as a
 * pause of `processFaults` (aimed: from its next request landing).
 */
function shortPause(c: WorldContext, workers: Workers, f: ShortPause): void {
  const { feed } = c;
  const lease = `job-${f.lease}`;
  const leader = workers.procs.findIndex((p) => p.leading.has(lease) && !p.machine.clock.dead && !p.machine.clock.paused);
  const proc = workers.procs[leader >= 0 ? leader : f.worker]!;
  const m = proc.machine;
  // gone, frozen already, or another freeze waiting for its next answer (the drawn fault keeps it)
  if (m.clock.dead || m.clock.paused || (f.aimed && m.pauseAtNextAnswer)) return void feed.count('skipped:shortPause');
  const by = leader >= 0 ? 'leader' : 'worker';
  const strike = () => {
    if (m.clock.dead || m.clock.paused) return void feed.count('skipped:shortPause'); // frozen by another since
    feed.count('fault:shortPause');
    feed.count(`fault:shortPause:${by}`);
    pause(c, proc, f.forMs, f.aimed, true);
  };
  if (f.aimed) m.pauseAtNextAnswer = strike;
  else strike();
}

/** Per process, how many freezes have begun on it (a short freeze resumes only if none began after it). */
const freezesBegun = new WeakMap<Proc, number>();

/**
 * Freezes the process for `forMs`; the window names every term it might have held meanwhile.
 * `short` (a short freeze, Schedule.shortPauses): at its end the process runs again only if no
 * other freeze began on it meanwhile (that one's end resumes it); its window is its own span.
 */
function pause(c: WorldContext, proc: Proc, forMs: number, aimed: boolean, short = false): void {
  const { world, feed } = c;
  const clock = world.clock;
  const from = clock.monotonic();
  const nth = (freezesBegun.get(proc) ?? 0) + 1;
  freezesBegun.set(proc, nth);
  feed.log(`pause ${proc.identity} for ${forMs} ms${aimed ? ' (between a request landing and its answer)' : ''}`);
  proc.machine.clock.pause();
  const runs = [...proc.cronRuns.keys()];
  clock.setTimer(forMs, () => {
    const resumes = !short || freezesBegun.get(proc) === nth;
    feed.log(resumes ? `resume ${proc.identity}` : `${proc.identity}'s short freeze over; still frozen by a later one`);
    // a process killed while frozen: the pause ended with it
    feed.window('pause', from, endOn(c, proc, from), { instances: [...new Set([...proc.electors.map((e) => e.instance), ...runs, ...proc.cronRuns.keys()])] });
    if (resumes) proc.machine.clock.resume();
  });
}

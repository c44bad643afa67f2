/**
 * KEP-4355's stories, played by worker processes on the local runtime: node-by-node upgrade,
 * rollback, a priority override, a leader crash, a graceful hand-off, and the leader moving to
 * the preferred zone (issue 18). Prints a live leader timeline and a closing summary; the result
 * says whether every expectation held.
 */
import { preferredLocationsOf } from '../../election/location.js';
import { compareMerit, pickBest, rank } from '../../election/ordering.js';
import { successorOf } from '../../election/successor.js';
import { checkHistory, formatVerdict } from '../../history/checker.js';
import { historyFromWorkerEvents } from '../../history/worker-events.js';
import type { LocalRuntime } from '../runtime.js';
import { retryOnConflict } from '../../stores/errors.js';
import { LOCAL_ZONE } from '../ecs-task.js';
import { startEcsWorker } from '../ecs-worker.js';
import type { WorkerEvent, WorkerProcess, WorkerSpec } from '../worker-process.js';
import { systemClock } from '../../clock.js';

export interface DemoOptions {
  /** A shorter play (start, one upgrade step, a crash, a hand-off) for CI. */
  short?: boolean;
  print?: (line: string) => void;
}

export interface StepResult {
  story: string;
  step: string;
  leader: string | undefined;
  fencingToken: number | undefined;
  /** From the step's action to the expected leader acting (onStartedLeading), when the leader changed. */
  msToNewLeader: number | undefined;
  ok: boolean;
  note?: string;
}

export interface DemoResult {
  steps: StepResult[];
  /** Moments at which two workers acted as leader at once (by their own start/stop lines). */
  overlaps: number;
  leaderChanges: number;
  ok: boolean;
}

export const LEASE = 'nightly-report';
/**
 * Short terms so the stories take seconds: lease 4 s, renew deadline 3 s, retry 0.5 s, and a leader
 * renewing every second. (The default interval, the renew deadline less two retry periods, would
 * leave a leader 1 s of stall before its deadline: on a busy laptop the story would show leader
 * changes nobody asked for. The demo's renewals cost nothing.)
 */
export const DEMO_TIMING = { leaseDurationMs: 4_000, renewDeadlineMs: 3_000, retryPeriodMs: 500, renewIntervalMs: 1_000 } as const;
/** The coordinator's settings for the demo (passed to startLocalRuntime). */
export const DEMO_ELECTION = { ackWindowMs: 1_500, electedLeaseDurationSeconds: 4 } as const;

const V_OLD = '1.30.0';
const V_NEW = '1.31.0';
/** The zone the location story prefers; every other worker runs in LOCAL_ZONE. */
const PREFERRED_ZONE = 'local-1b';
const clock = systemClock;
const sleep = (ms: number) => clock.sleep(ms);

export async function playStories(rt: LocalRuntime, opts: DemoOptions = {}): Promise<DemoResult> {
  const print = opts.print ?? ((l: string) => process.stdout.write(`${l}\n`));
  const t0 = clock.now();
  const since = () => `${((clock.now() - t0) / 1000).toFixed(1).padStart(5)}s`;
  const workers = new Map<string, WorkerProcess>();
  const all: WorkerProcess[] = [];
  const timeline: WorkerEvent[] = [];
  const steps: StepResult[] = [];
  let story = '';

  // Every worker runs as a local ECS task: its own task metadata endpoint, and a STOPPED event
  // for the platform function when it exits (switched off for the crash without the signal).
  const tasks = new Map<WorkerProcess, { signal: boolean }>();
  const start = async (spec: Omit<WorkerSpec, 'lease' | 'timing'>, zone = LOCAL_ZONE) => {
    const w = await startEcsWorker(rt, { ...spec, lease: LEASE, timing: DEMO_TIMING }, { zone });
    tasks.set(w, w.task);
    w.on((e) => {
      if (e.event !== 'started' && e.event !== 'stopped') return;
      timeline.push(e);
      const where = zone === LOCAL_ZONE ? '' : `, zone ${zone}`;
      if (e.event === 'started') print(`  ${since()}  ▶ ${e.identity} leads (emulation ${spec.emulationVersion}, binary ${spec.binaryVersion}${spec.priority ? `, priority ${spec.priority}` : ''}${where}) · fencing token ${e.fencingToken}`);
      else print(`  ${since()}  ■ ${e.identity} stops leading (${e.reason})`);
    });
    workers.set(spec.identity, w);
    all.push(w);
    return w;
  };
  const leader = () => [...workers.values()].find((w) => w.leading);

  /**
   * Waits until the best live candidate (by the coordinator's own ordering) is the one leading, and the
   * lease is quiet: no election, no preemption, and (for a few seconds at most) the successor the
   * coordinator would name is on the lease, so the next step starts from a settled system rather than
   * racing the stream that carries a new candidate to the coordinator.
   */
  async function settle(step: string, actionAt: number, previous: string | undefined, timeoutMs = 30_000): Promise<void> {
    const end = clock.now() + timeoutMs;
    let note: string | undefined;
    let ledSince: number | undefined;
    for (;;) {
      const now = clock.now();
      const lease = (await rt.deps.coordinator.leases.read(LEASE)).item;
      const { candidates } = await rt.deps.coordinator.candidates.list(LEASE);
      const running = candidates.filter((c) => workers.get(c.name)?.alive);
      // ranked as the coordinator ranks: with the lease's preferred locations, else its default
      const preferred = preferredLocationsOf(lease, rt.deps.coordinator.config);
      // the best on merit: the holder when it is one of them (an equal that sorts first does not preempt)
      const top = pickBest(running, now, preferred);
      const holderRow = running.find((c) => c.name === lease?.holderIdentity);
      const held = holderRow && rank(holderRow, now, preferred);
      const best = top && held && compareMerit(held, top) === 0 ? held.candidate.name : top?.candidate.name;
      const l = leader();
      const leaders = [...workers.values()].filter((w) => w.leading).length;
      const led = best && l?.identity === best && leaders === 1 && lease?.holderIdentity === best && !lease.election && !lease.preferredHolder;
      ledSince = led ? (ledSince ?? now) : undefined;
      const successorNamed = !led || !rt.deps.coordinator.config.succession || lease.successor === successorOf(best, candidates, now, rt.deps.coordinator.config, { preferred })?.name;
      if (led && (successorNamed || now - ledSince! > 5_000)) {
        const started = l.events.filter((e) => e.event === 'started').at(-1)!;
        const changed = previous !== best || started.at >= actionAt;
        steps.push({ story, step, leader: best, fencingToken: lease.fencingToken, msToNewLeader: changed ? started.at - actionAt : undefined, ok: true });
        return;
      }
      if (clock.now() > end) {
        note = `expected ${best ?? 'a leader'} to lead; leading: ${l?.identity ?? 'nobody'}; lease holder ${lease?.holderIdentity ?? '-'}`;
        steps.push({ story, step, leader: l?.identity, fencingToken: lease?.fencingToken, msToNewLeader: undefined, ok: false, note });
        print(`  ${since()}  ✗ ${step}: ${note}`);
        return;
      }
      await sleep(100);
    }
  }

  async function act(step: string, action: () => Promise<void>) {
    print(`  ${since()}  · ${step}`);
    const previous = leader()?.identity;
    const at = clock.now();
    await action();
    await settle(step, at, previous);
  }

  /** Until the worker's own start-up owns its candidate row (so a step is judged with it in the field). */
  const registered = async (w: WorkerProcess) => {
    for (let i = 0; i < 300; i++) {
      const instance = w.events.find((e) => e.event === 'ready')?.instance;
      const row = instance && (await rt.deps.coordinator.candidates.read(LEASE, w.identity)).item;
      if (row && row.identity === instance) return;
      await sleep(50);
    }
  };
  const restart = async (name: string, emulationVersion: string, binaryVersion: string) => {
    await workers.get(name)?.stop();
    await registered(await start({ identity: name, emulationVersion, binaryVersion }));
  };
  /** An operator's `conclave set-locations` (undefined: `--clear`); the holder renews meanwhile, so a lost race writes again. */
  const setLocations = (preferred: string[] | undefined) =>
    retryOnConflict(async () => {
      const leases = rt.deps.coordinator.leases;
      await leases.write(await leases.read(LEASE), preferred ? { set: { preferredLocations: preferred } } : { remove: ['preferredLocations'] });
    });
  const setPriority = async (name: string, priority: number | undefined) => {
    const store = rt.deps.coordinator.candidates;
    const read = await store.read(LEASE, name);
    await store.write(read, priority === undefined ? { remove: ['priority'] } : { set: { priority } });
  };

  try {
    story = 'start';
    print(`\n▸ Three workers stand for lease "${LEASE}", all at ${V_OLD}`);
    await act('w1, w2, w3 start', async () => {
      // One after another: with equal versions the longest-standing candidate wins, so w1 leads.
      for (const id of ['w1', 'w2', 'w3']) await registered(await start({ identity: id, emulationVersion: V_OLD, binaryVersion: V_OLD }));
    });

    story = 'upgrade';
    print(`\n▸ Story 1: node-by-node upgrade to ${V_NEW} — the leader stays on the oldest version until the last node`);
    for (const id of opts.short ? ['w1'] : ['w1', 'w2', 'w3']) await act(`upgrade ${id} to ${V_NEW}`, () => restart(id, V_NEW, V_NEW));

    if (!opts.short) {
      story = 'rollback';
      print(`\n▸ Story 2: node-by-node rollback to ${V_OLD} — the first rolled-back node preempts the newer leader`);
      for (const id of ['w1', 'w2', 'w3']) await act(`roll ${id} back to ${V_OLD}`, () => restart(id, V_OLD, V_OLD));

      story = 'priority';
      print('\n▸ Priority override: an operator pins w3 with priority 100, then unpins it');
      await act('set priority 100 on w3', () => setPriority('w3', 100));
      await act('clear the priority on w3', () => setPriority('w3', undefined));
    }

    story = 'crash';
    print('\n▸ A leader crash (SIGKILL) the platform does not report: its designated successor takes the lease as the term runs out');
    const crashed = leader()!;
    tasks.get(crashed)!.signal = false;
    await act(`kill -9 ${crashed.identity}`, () => crashed.kill());
    await act(`restart ${crashed.identity}`, async () => registered(await start({ identity: crashed.identity, emulationVersion: crashed.spec.emulationVersion, binaryVersion: crashed.spec.binaryVersion })));

    story = 'crash-signal';
    print('\n▸ A leader crash (SIGKILL) with the platform signal: ECS says the task STOPPED, its term ends at once');
    const signalled = leader()!;
    // ECS's event carries whole seconds, and it ends only a term that began more than clockSkewMs
    // before it (a late or replayed event must never end a newer term): let the term age past that.
    const began = (await rt.deps.coordinator.leases.read(LEASE)).item?.acquireTime ?? 0;
    await sleep(Math.max(0, began + rt.deps.coordinator.config.clockSkewMs + 1_000 - clock.now()));
    await act(`kill -9 ${signalled.identity} (task STOPPED)`, () => signalled.kill());
    await act(`restart ${signalled.identity}`, async () => registered(await start({ identity: signalled.identity, emulationVersion: signalled.spec.emulationVersion, binaryVersion: signalled.spec.binaryVersion })));

    story = 'handoff';
    print('\n▸ A graceful hand-off (SIGTERM): the leader hands the lease to its successor in one write, as the successor reads');
    const leaving = leader()!;
    await act(`stop ${leaving.identity}`, () => leaving.stop());

    story = 'location';
    print(`\n▸ Location (issue 18): the operator prefers zone ${PREFERRED_ZONE}; every worker runs in ${LOCAL_ZONE}, so the leader stays — until a candidate in ${PREFERRED_ZONE} appears and preempts it`);
    await act(`prefer zone ${PREFERRED_ZONE}`, () => setLocations([PREFERRED_ZONE]));
    await act(`w4 starts in ${PREFERRED_ZONE}`, async () => registered(await start({ identity: 'w4', emulationVersion: V_OLD, binaryVersion: V_OLD }, PREFERRED_ZONE)));
    if (!opts.short) await act('clear the preference', () => setLocations(undefined));
  } finally {
    // Followers first: a leader stopping hands its lease to its successor, and one stopping at the
    // same moment would get a term only to give it up (a Leader Changed nobody led for).
    const ws = [...workers.values()];
    await Promise.all(ws.filter((w) => !w.leading).map((w) => w.stop()));
    await Promise.all(ws.map((w) => w.stop()));
  }

  // Overlaps: replay every worker's start/stop lines in time order.
  const sorted = all.flatMap((w) => w.events.filter((e) => e.event === 'started' || e.event === 'stopped')).sort((a, b) => a.at - b.at);
  const leading = new Set<string>();
  let overlaps = 0;
  for (const e of sorted) {
    if (e.event === 'started') {
      if (leading.size > 0) overlaps++;
      leading.add(e.identity);
    } else leading.delete(e.identity);
  }
  // Leader changes as the workers lived them, against the Leader Changed events a consumer that
  // drops duplicate ids would count (the last change's event may still be on its way).
  const starts = sorted.filter((e) => e.event === 'started').map((e) => e.identity);
  const leaderChanges = starts.filter((id, i) => i > 0 && id !== starts[i - 1]).length;
  const changedEvents = () => new Set(rt.events.filter((e) => e.detailType === 'Leader Changed').map((e) => e.detail.id)).size;
  for (let i = 0; i < 50 && changedEvents() < leaderChanges; i++) await sleep(100);
  // The history checker the chaos runs are judged by (lib/history): overlaps, fencing tokens per lease.
  const history = checkHistory({ history: historyFromWorkerEvents(LEASE, all), end: { mono: (BigInt(clock.now()) * 1_000_000n).toString() } });
  const ok = steps.every((s) => s.ok) && overlaps === 0 && changedEvents() === leaderChanges && rt.deadLetters.length === 0 && history.ok;

  print('\nSummary');
  const w = Math.max(...steps.map((s) => s.step.length));
  for (const s of steps) {
    print(`  ${s.ok ? '✓' : '✗'} ${s.step.padEnd(w)}  leader ${String(s.leader ?? '-').padEnd(3)}  token ${String(s.fencingToken ?? '-').padStart(3)}  ${s.msToNewLeader === undefined ? 'leader unchanged' : `new leader after ${(s.msToNewLeader / 1000).toFixed(1)}s`}${s.note ? `  (${s.note})` : ''}`);
  }
  print(`  Leader Changed events: ${changedEvents()} for ${leaderChanges} leader changes; events published: ${rt.events.length}; dead letters: ${rt.deadLetters.length}`);
  const failover = (story: string) => steps.find((s) => s.story === story && s.step.startsWith('kill'))?.msToNewLeader;
  const [plain, signalled] = [failover('crash'), failover('crash-signal')];
  if (plain !== undefined && signalled !== undefined) {
    print(`  crash failover: ${(plain / 1000).toFixed(1)}s waiting out the term, ${(signalled / 1000).toFixed(1)}s with the platform signal (lease ${DEMO_TIMING.leaseDurationMs / 1000}s)`);
  }
  print(`  two leaders at once: ${overlaps === 0 ? 'never' : `${overlaps} time(s)`}`);
  for (const l of formatVerdict(history)) print(`  history check: ${l.trimStart()}`);
  print(`  ${ok ? 'all expectations held' : 'SOME EXPECTATIONS FAILED'} in ${((clock.now() - t0) / 1000).toFixed(1)}s`);
  return { steps, overlaps, leaderChanges, ok };
}

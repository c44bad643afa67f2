/**
 * Fault schedules, generated from a seed: the same seed and index always give the same schedule,
 * so a failing one is replayed with `npm run chaos -- --seed S --only I`.
 */
import type { DynamoDBFaultMode } from './ddb-faults.js';
import { rng, scheduleSeed } from './rng.js';

export const FAULT_KINDS = [
  'kill',
  'pause',
  'handoff',
  'dynamodb',
  'coordinatorDown',
  'streamDuplicate',
  'streamReorder',
  'streamDelay',
  'streamStale',
  'reconcilerCrash',
  'timerLoss',
  'publishFailure',
  'clockStep',
  'leaseDelete',
  'platformLate',
  'pushOutage',
  'sessionLoss',
] as const;
export type FaultKind = (typeof FAULT_KINDS)[number];
/** Skew is no window: each worker's clock is off for the whole schedule (clockSkew: ±1 s or less; clockSkew30s: ±30 s). */
export type FaultFigureKind = FaultKind | 'clockSkew' | 'clockSkew30s';

export type StreamFaultKind = Extract<FaultKind, `stream${string}`>;

export type Fault =
  /** SIGKILL; the worker is started again (a new instance, same name) after `restartAfterMs`. */
  | { kind: 'kill'; at: number; worker: WorkerTarget; restartAfterMs: number }
  /** SIGTERM (the worker steps down and releases: an election at once), started again after `restartAfterMs`. */
  | { kind: 'handoff'; at: number; worker: WorkerTarget; restartAfterMs: number }
  /** SIGSTOP for longer than a lease, then SIGCONT. */
  | { kind: 'pause'; at: number; worker: WorkerTarget; durationMs: number }
  | { kind: 'dynamodb'; at: number; worker: WorkerTarget; durationMs: number; mode: DynamoDBFaultMode; rate: number; latencyMs?: number }
  /** No tick, no stream or timer delivery: records wait, ticks are skipped. */
  | { kind: 'coordinatorDown'; at: number; durationMs: number }
  /** Stream batches (and timer messages, for duplicates) delivered twice, shuffled, held, or again later. */
  | { kind: StreamFaultKind; at: number; durationMs: number; rate: number; delayMs: number }
  /** A reconcile dies right before its lease write (after its pings) or right after it (before the timer is set). */
  | { kind: 'reconcilerCrash'; at: number; durationMs: number; rate: number; point: 'beforeLeaseWrite' | 'afterLeaseWrite' }
  | { kind: 'timerLoss'; at: number; durationMs: number; rate: number }
  | { kind: 'publishFailure'; at: number; durationMs: number; rate: number }
  /** The worker's wall clock jumps by `stepMs` (NTP stepping it), and back after `durationMs`; its monotonic clock runs on. */
  | { kind: 'clockStep'; at: number; worker: WorkerTarget; stepMs: number; durationMs: number }
  /** An operator deletes the lease's row (the holder's next renewal finds nothing; the lease is created again). */
  | { kind: 'leaseDelete'; at: number; lease: string }
  /**
   * The platform says the worker's EC2 instance stopped — an event from `lateMs` ago delivered now,
   * or (`replay`) the event of that instance's last stop delivered again — while the worker, restarted
   * on the same instance, runs (and may lead). The platform function must leave it alone.
   */
  | { kind: 'platformLate'; at: number; worker: WorkerTarget; lateMs: number; replay: boolean }
  /** The push path's broker goes down: every connection drops and none is taken until it is back (workers poll meanwhile). */
  | { kind: 'pushOutage'; at: number; durationMs: number }
  /**
   * A process heartbeat lost while its leases look healthy: for longer than the session's renew
   * deadline every write of the worker's session row (identities-table UpdateItem) is refused
   * (`error`: nothing written), held past the deadline and then sent (`latency`: it lands, too late
   * to extend anything) or applied with its answer lost (`lostResponse`), while its lease reads and
   * writes go through. Session schedules only.
   */
  | { kind: 'sessionLoss'; at: number; worker: WorkerTarget; durationMs: number; mode: SessionLossMode; latencyMs?: number };

export type SessionLossMode = Extract<DynamoDBFaultMode, 'error' | 'latency' | 'lostResponse'>;

/**
 * `w1`, `leader:<lease>`: the worker leading that lease when the fault begins, or `successor:<lease>`:
 * the worker the lease names its successor then (another free one if it is busy, or none is named).
 */
export type WorkerTarget = string;

export interface WorkerPlan {
  identity: string;
  emulationVersion: string;
  binaryVersion: string;
  /** Its wall clock's error for the whole run (ms, + ahead); the SDK must write DynamoDB's time regardless. */
  skewMs: number;
  /** The EC2 instance it runs on, the same across restarts (a process restarted on its instance): what platform events name. */
  instanceId: string;
}

/** A worker process's Session (lib/sdk/session.ts), to fit the electors' timing. */
export interface SessionTiming {
  renewIntervalMs: number;
  retryPeriodMs: number;
  renewDeadlineMs: number;
  maxLeaseDurationMs: number;
}

export interface Timing {
  leaseDurationMs: number;
  renewDeadlineMs: number;
  retryPeriodMs: number;
  candidateRenewMs: number;
  tickMs: number;
  /** Writes with a stopped term's old token, after each stop. */
  zombieMs: number;
  /** The session of a process in a session schedule. */
  session: SessionTiming;
}

/**
 * The session's timing fits the electors' as the SDK demands (renew interval + retry period 0.85 s <
 * the electors' renew deadline 2 s; maxLeaseDurationMs = the lease's 3 s; its renew deadline 1.1 s <
 * 3 s), and its renew deadline is 0.9 s short of the electors': an elector renews nothing itself
 * while its session lives, so once the session ends it needs that long to renew its lease before
 * its own deadline (counted from the same last session renewal) stops the term.
 */
export const CHAOS_TIMING: Timing = {
  leaseDurationMs: 3_000,
  renewDeadlineMs: 2_000,
  retryPeriodMs: 500,
  candidateRenewMs: 2_000,
  tickMs: 3_000,
  zombieMs: 1_500,
  session: { renewIntervalMs: 600, retryPeriodMs: 250, renewDeadlineMs: 1_100, maxLeaseDurationMs: 3_000 },
};

/** The coordinator's settings for chaos: short windows, and candidates stale after 6 s so long pauses lose their rows. */
export const CHAOS_ELECTION = { ackWindowMs: 1_000, electedLeaseDurationSeconds: 3, candidateStaleAfterMs: 6_000, candidateRepingAfterMs: 3_000 } as const;

export interface Schedule {
  seed: number;
  index: number;
  /** The seed of this schedule alone (derived from seed and index). */
  scheduleSeed: number;
  leases: string[];
  workers: WorkerPlan[];
  faults: Fault[];
  /** Faults start within [0, faultPhaseMs); the last one may end after it. */
  faultPhaseMs: number;
  timing: Timing;
  /** Whether the workers take the push path (wakes over local mode's broker); otherwise they poll. */
  push: boolean;
  /** Whether each worker process runs one Session, holding its electors' terms on it; otherwise each elector renews its own lease. */
  session: boolean;
}

export interface ScheduleOptions {
  faultPhaseMs?: number;
  workers?: number;
  leases?: number;
  minFaults?: number;
  maxFaults?: number;
  /** Only these kinds (regression tests pin one). */
  kinds?: readonly FaultKind[];
  /** Whether the workers take the push path. @default drawn: three schedules in four */
  push?: boolean;
  /** Whether each worker process runs a Session. @default drawn: one schedule in two (always, when `kinds` names sessionLoss) */
  session?: boolean;
}

const ms = (n: number) => `${(n / 1000).toFixed(1)}s`;

export function generateSchedule(seed: number, index: number, opts: ScheduleOptions = {}): Schedule {
  const own = scheduleSeed(seed, index);
  const r = rng(own);
  const timing = CHAOS_TIMING;
  const phase = opts.faultPhaseMs ?? 20_000;
  const workers: WorkerPlan[] = Array.from({ length: opts.workers ?? 3 }, (_, i) => ({
    identity: `w${i + 1}`,
    emulationVersion: r.pick(['1.30.0', '1.30.0', '1.31.0']),
    binaryVersion: '1.31.0',
    skewMs: r.pick([-30_000, -1_000, -500, 0, 0, 500, 1_000, 30_000]),
    instanceId: instanceIdOf(i),
  }));
  const leases = Array.from({ length: opts.leases ?? 2 }, (_, i) => ['alpha', 'beta', 'gamma', 'delta'][i] ?? `lease-${i}`);
  // Faults that move leadership weigh double: the coordinator's faults only bite during elections.
  // sessionLoss is drawn apart, after the rest (below): session schedules only, and the draws of a
  // seed's other faults stay what they were before sessions existed.
  const kinds = (opts.kinds ?? FAULT_KINDS).filter((k) => k !== 'sessionLoss').flatMap((k) => (['kill', 'pause', 'handoff', 'dynamodb'].includes(k) ? [k, k] : [k]));
  const n = r.int(opts.minFaults ?? 3, opts.maxFaults ?? 6);
  // A worker is either killed or paused at a time: the two do not mix on one process.
  const busy = new Map<string, [number, number][]>();
  const free = (w: string, from: number, to: number) => !(busy.get(w) ?? []).some(([a, b]) => from < b + 500 && a < to + 500);
  const faults: Fault[] = [];
  for (let tries = 0; kinds.length > 0 && faults.length < n && tries < 50; tries++) {
    const kind = r.pick(kinds);
    // Most worker faults hit whoever leads a lease at that moment (`leader:alpha`), many its designated
    // successor (`successor:alpha`: the worker reading right behind the leader's renewals, and the
    // one a hand-off goes to), resolved by the harness.
    const aim = r.int(0, 9);
    const worker = aim < 6 ? `leader:${r.pick(leases)}` : aim < 8 ? `successor:${r.pick(leases)}` : r.pick(workers).identity;
    const span = (min: number, max: number) => {
      const d = r.int(min, max);
      return { at: r.int(0, Math.max(0, phase - 1_000)), durationMs: d };
    };
    switch (kind) {
      case 'kill':
      case 'handoff': {
        const { at } = span(0, 0);
        const restartAfterMs = r.int(500, 4_000);
        if (!free(worker, at, at + restartAfterMs)) continue;
        (busy.get(worker) ?? busy.set(worker, []).get(worker)!).push([at, at + restartAfterMs]);
        faults.push({ kind, at, worker, restartAfterMs });
        break;
      }
      case 'pause': {
        const { at, durationMs } = span(timing.leaseDurationMs + 500, timing.leaseDurationMs + 5_000);
        if (!free(worker, at, at + durationMs)) continue;
        (busy.get(worker) ?? busy.set(worker, []).get(worker)!).push([at, at + durationMs]);
        faults.push({ kind, at, worker, durationMs });
        break;
      }
      case 'dynamodb': {
        const mode = r.pick(['error', 'throttle', 'latency', 'lostResponse'] as const);
        const { at, durationMs } = span(1_000, 5_000);
        const rate = mode === 'lostResponse' ? r.pick([0.3, 0.6]) : r.pick([0.3, 0.6, 1]);
        faults.push({ kind, at, worker, durationMs, mode, rate, ...(mode === 'latency' ? { latencyMs: r.int(200, 3_000) } : {}) });
        break;
      }
      case 'coordinatorDown':
        faults.push({ kind, ...span(3_000, 12_000) });
        break;
      case 'streamDuplicate':
      case 'streamReorder':
      case 'streamDelay':
      case 'streamStale':
        faults.push({ kind, ...span(2_000, 8_000), rate: r.pick([0.3, 0.6, 1]), delayMs: r.int(200, 2_000) });
        break;
      case 'reconcilerCrash':
        faults.push({ kind, ...span(2_000, 8_000), rate: r.pick([0.3, 0.5]), point: r.pick(['beforeLeaseWrite', 'afterLeaseWrite'] as const) });
        break;
      case 'timerLoss':
        faults.push({ kind, ...span(2_000, 8_000), rate: r.pick([0.5, 1]) });
        break;
      case 'publishFailure':
        faults.push({ kind, ...span(2_000, 6_000), rate: r.pick([0.3, 0.5]) });
        break;
      case 'clockStep':
        faults.push({ kind, worker, stepMs: r.pick([-30_000, 30_000]), ...span(2_000, 8_000) });
        break;
      case 'leaseDelete':
        faults.push({ kind, at: span(0, 0).at, lease: r.pick(leases) });
        break;
      case 'platformLate':
        faults.push({ kind, at: span(0, 0).at, worker, lateMs: r.int(60_000, 300_000), replay: r.chance(0.5) });
        break;
      case 'pushOutage':
        faults.push({ kind, ...span(1_000, 8_000) });
        break;
    }
  }
  // drawn last: the rest of a seed's schedule is what it was before the push path existed
  const push = opts.push ?? r.chance(0.75);
  // and after it, sessions: in half the schedules (sessions are opt-in, so the elector renewing its
  // own lease stays the path most users take), drawn apart from push so that a session-held lease is
  // seen both with wakes (followers quiet for four lease durations, the successor on the session row)
  // and by polling. A session schedule has 0–2 sessionLoss faults (one on average), most aimed at a
  // leader: its terms are the ones held on the heartbeat that goes missing.
  const lossAllowed = (opts.kinds ?? FAULT_KINDS).includes('sessionLoss');
  const session = opts.session ?? (opts.kinds?.includes('sessionLoss') ? true : r.chance(0.5));
  if (session && lossAllowed) {
    const sl = timing.session;
    for (let i = r.pick([0, 1, 1, 2]); i > 0; i--) {
      const aim = r.int(0, 9);
      const worker = aim < 7 ? `leader:${r.pick(leases)}` : aim < 8 ? `successor:${r.pick(leases)}` : r.pick(workers).identity;
      const mode = r.pick(['error', 'error', 'latency', 'lostResponse'] as const);
      const at = r.int(0, Math.max(0, phase - 1_000));
      const durationMs = r.int(sl.renewDeadlineMs + 1_000, 8_000);
      faults.push({ kind: 'sessionLoss', at, worker, durationMs, mode, ...(mode === 'latency' ? { latencyMs: r.int(sl.renewDeadlineMs + 200, 3_000) } : {}) });
    }
  }
  faults.sort((a, b) => a.at - b.at);
  return { seed, index, scheduleSeed: own, leases, workers, faults, faultPhaseMs: phase, timing, push, session };
}

/** How long a fault lasts (a kill: until the restart; a deletion or an event: an instant). */
export const faultDuration = (f: Fault): number => (f.kind === 'kill' || f.kind === 'handoff' ? f.restartAfterMs : f.kind === 'leaseDelete' || f.kind === 'platformLate' ? 0 : f.durationMs);

/** The EC2 instance id of worker `index` (17 hex digits, as EC2's). */
export const instanceIdOf = (index: number): string => `i-${(0xc0c1a0e0000 + index + 1).toString(16).padStart(17, '0')}`;

export function describeFault(f: Fault): string {
  const head = `+${ms(f.at).padStart(6)}  ${f.kind}`;
  switch (f.kind) {
    case 'kill':
    case 'handoff':
      return `${head} ${f.worker}${f.kind === 'handoff' ? ' (SIGTERM)' : ' (SIGKILL)'}, restarted after ${ms(f.restartAfterMs)}`;
    case 'pause':
      return `${head} ${f.worker} (SIGSTOP) for ${ms(f.durationMs)}`;
    case 'dynamodb':
      return `${head} ${f.worker}: ${f.mode} on ${Math.round(f.rate * 100)}% of requests${f.latencyMs ? ` (+${f.latencyMs} ms)` : ''} for ${ms(f.durationMs)}`;
    case 'coordinatorDown':
    case 'pushOutage':
      return `${head} for ${ms(f.durationMs)}`;
    case 'reconcilerCrash':
      return `${head} ${f.point} on ${Math.round(f.rate * 100)}% of lease writes for ${ms(f.durationMs)}`;
    case 'timerLoss':
    case 'publishFailure':
      return `${head} on ${Math.round(f.rate * 100)}% for ${ms(f.durationMs)}`;
    case 'clockStep':
      return `${head} ${f.worker}: wall clock ${f.stepMs >= 0 ? '+' : ''}${f.stepMs / 1000}s, back after ${ms(f.durationMs)}`;
    case 'leaseDelete':
      return `${head} ${f.lease}: the row deleted`;
    case 'platformLate':
      return `${head} ${f.worker}: instance stopped ${f.replay ? 'replayed (or ' : '('}${ms(f.lateMs)} late${f.replay ? ' if none yet)' : ')'}`;
    case 'sessionLoss':
      return `${head} ${f.worker}: session row writes ${f.mode === 'error' ? 'refused' : f.mode === 'latency' ? `held ${f.latencyMs ?? 0} ms, then sent` : 'applied, answers lost'} for ${ms(f.durationMs)} (lease requests unharmed)`;
    default:
      return `${head} on ${Math.round(f.rate * 100)}% of batches${f.kind === 'streamDelay' || f.kind === 'streamStale' ? ` (${f.delayMs} ms)` : ''} for ${ms(f.durationMs)}`;
  }
}

export function describeSchedule(s: Schedule): string[] {
  return [
    `schedule ${s.index} (seed ${s.seed}, schedule seed ${s.scheduleSeed}): leases ${s.leases.join(', ')}; workers ${s.workers.map((w) => `${w.identity} ${w.emulationVersion} skew ${w.skewMs >= 0 ? '+' : ''}${w.skewMs}ms`).join(', ')}; ${s.push ? 'push path' : 'polling only'}; ${s.session ? 'sessions' : 'no sessions'}`,
    ...s.faults.map((f) => `  ${describeFault(f)}`),
  ];
}

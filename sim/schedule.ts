/**
 * A fault schedule, drawn from a seed: everything that will go wrong in one simulated run, and
 * when. The same seed gives the same schedule on every machine (lib/clock's seededRandom).
 */
import { seededRandom } from '../lib/clock.js';

/** A fault that hits one worker process at `at` ms into the run. */
export type ProcessFault =
  | { kind: 'kill'; worker: number; at: number; forMs: number }
  /**
   * A freeze past the lease (GC, SIGSTOP, a throttled container). `aimed`: it waits for the
   * process's next DynamoDB request and strikes between the request landing and its answer being
   * read — the moment a decision rests on a read that the pause makes stale.
   */
  | { kind: 'pause'; worker: number; at: number; forMs: number; aimed: boolean }
  | { kind: 'stop'; worker: number; at: number; forMs: number }
  | { kind: 'partition'; worker: number; at: number; forMs: number }
  | { kind: 'clockStep'; worker: number; at: number; stepMs: number }
  /** An operator deletes a lease's row, whoever holds it (the fencing token must not go back). */
  | { kind: 'deleteLease'; lease: number; at: number };

/** An operation a worker's role may lose for a while (an IAM change, a policy rolled out wrong). */
export type DeniedOperation = 'leaseGet' | 'leaseUpdate' | 'candidatePut' | 'candidateUpdate' | 'candidateQuery';

/**
 * Faults as users bring them (issue 36): from permissions, bad rows, slow dependencies, peers and
 * the user's own code. `at` and `forMs` in ms from the run's start.
 */
export type UserFault =
  /** One operation of one worker's role refused (AccessDeniedException) for a while. */
  | { kind: 'denied'; worker: number; at: number; forMs: number; operation: DeniedOperation }
  /** Every request of one worker throttled for a while (a hot partition, the account's limit): ThrottlingException or ProvisionedThroughputExceededException. */
  | { kind: 'throttled'; worker: number; at: number; forMs: number; error: 'throttling' | 'provisionedThroughput' }
  /** An operator writes a lease row that fails its schema (`leaseTransitions` a string), and repairs it after a while. */
  | { kind: 'malformedRow'; lease: number; at: number; forMs: number }
  /** An operator or a peer moves a lease's fencing token by `by` (negative: back), leaving its termToken. */
  | { kind: 'tokenMoved'; lease: number; at: number; by: number }
  /** The leader's work fails: whoever leads the lease then has its onStartedLeading reject. */
  | { kind: 'workFails'; lease: number; at: number }
  /** IoT Core answers slowly (not hung): every wake published in the window is delivered `delayMs` late. */
  | { kind: 'slowPush'; at: number; forMs: number; delayMs: number };

/**
 * Faults from peers of the same lease (issue 36): what a worker's grant lets it write, and a second
 * process started under a worker's identity. `at` and `forMs` in ms from the run's start.
 */
export type PeerFault =
  /**
   * Worker `worker` writes the lease's `session` alone (its grant lets a holder put its term on its
   * session): to its own process's session, or to a session row that does not exist. `ownSession`
   * only for a worker that runs a Session (generateSchedule): one that runs none has no session of its own.
   */
  | { kind: 'sessionRedirect'; lease: number; worker: number; at: number; to: 'ownSession' | 'missing' }
  /** A second process started with worker `worker`'s identity (a copied command line), stopped after `forMs` if it still runs. */
  | { kind: 'twin'; worker: number; at: number; forMs: number };

/** A span of the run, in ms from its start. */
export interface Window {
  from: number;
  to: number;
}

export interface Schedule {
  seed: number;
  /** Each worker's wall clock offset at start (ms; ±30 s possible). */
  skewMs: number[];
  /** Each worker's version (emulation = binary): upgrades make the coordinator preempt. */
  versions: string[];
  processFaults: ProcessFault[];
  /** Windows where DynamoDB requests are throttled, lost, answered-but-lost or duplicated. */
  ddbFaults: Window[];
  /**
   * Per request, inside a DynamoDB fault window: throttled, lost, answered-but-lost, applied twice,
   * or landing late (`late`: the client times out after 1 s and retries or gives up, while the
   * request itself lands 5–30 s later — a stale write that only its condition can stop).
   */
  requestFaults: { latencyMs: [number, number]; throttle: number; lost: number; lostAnswer: number; duplicate: number; late: number };
  /** Windows where the coordinator's functions do not run (ticks skipped, streams and timers held). */
  coordinatorDown: Window[];
  /** How late a stream batch reaches its function, and how often one is delivered twice. */
  streamLagMs: [number, number];
  streamRedelivery: number;
  /**
   * Where each worker runs: an ECS task (a new task ARN per start) or an EC2 instance (the same
   * instance id across a stop and a start, so a late "stopped" event names a live run's platform).
   */
  platforms: ('ecs' | 'ec2')[];
  /**
   * The platform's "stopped" events for killed and stopped workers: how long EventBridge takes,
   * how often one comes twice, and how often one is late (asynchronous retries, a redrive, a
   * replay: 60–300 s, after the worker has started again).
   */
  platformEvents: { delayMs: [number, number]; duplicate: number; late: number };
  /** How stale an eventually consistent read may be. */
  staleReadLagMs: number;
  /** The longest a lease may stay leaderless (in all) after the last fault healed: 60 s, 120 s with a machine drifting beyond ±100 ppm. */
  healMs: number;
  /** The push path (wakes over MQTT), in about half the worlds: how wakes are delayed, lost, repeated, and when the broker is down. */
  push: PushFaults | undefined;
  /**
   * Sessions (lib/sdk/session.ts), in about half the worlds: every worker process runs one (all but
   * one worker's in a mixed fleet: generateSchedule), and its electors hold their terms on it
   * (sim/world.ts scales its timings to the world's).
   */
  session: SessionConfig | undefined;
  /**
   * Each worker machine's clock rate error in parts per million, in about half the worlds: its
   * monotonic clock, its timers and its wall clock run that much fast (positive) or slow. Within
   * the SDK's stated bound (±100 ppm, lib/sdk/server-clock.ts) in most of them; in a quarter of
   * them one machine's is far beyond it (±1–5 %: a VM whose clock source is broken).
   */
  driftPpm: number[] | undefined;
  /** Faults as users bring them (issue 36), in about half the worlds: one to three. */
  userFaults: UserFault[];
  /**
   * Each worker's timings as a multiple of the world's (lease duration, renew deadline, retry
   * period, and its Session's): a fleet part way through a change of its timings (in half the
   * mixed worlds, one worker at 2). Absent: all 1.
   */
  timingScale?: number[];
  /** Faults from peers of the same lease (issue 36), in about a third of the worlds: one or two. */
  peerFaults: PeerFault[];
  /** Kept terms (`--kept` worlds only): workers whose electors leave a term they led to run out when they stop. */
  kept?: KeptTerms;
  /** A stream re-read from an older point, in about a tenth of the worlds with faults (StreamReplay). */
  streamReplay?: StreamReplay;
  /** A live session row deleted under its leader's term, in about a tenth of the worlds with faults and sessions (SessionDelete). */
  sessionDelete?: SessionDelete;
  /** One worker's DynamoDB answering slowly for a while, in about a fifth of the worlds with faults (SlowDynamo). */
  slowDynamo?: SlowDynamo;
  /** The stream functions down while the tick runs, in about a fifth of the worlds with faults (StreamsDown). */
  streamsDown?: StreamsDown;
  /** Freezes of a leader past its renew deadline and within its lease, in about a third of the worlds with faults: one or two (ShortPause). */
  shortPauses?: readonly ShortPause[];
  /** DynamoDB lost to the whole fleet (every worker and the functions) for minutes, in about a tenth of the worlds with faults (DynamoOutage). */
  dynamoOutage?: DynamoOutage;
  /** IoT Core slower than the functions' publish timeout, in about a fifth of the push worlds with faults (SlowBroker). */
  slowBroker?: SlowBroker;
  /** The table's capacity throttling a share of every worker's requests, the rest passing, in about a tenth of the worlds with faults (PartialThrottle). */
  partialThrottle?: PartialThrottle;
}

/**
 * A freeze shorter than the others (a GC pause, a throttled container): from `at` (ms from the run's
 * start), `forMs` 10–15 s — past the renew deadline (10 s) and within the lease (15 s), so the
 * leader wakes with its term maybe still on the row, which it may no longer lead (the freezes of
 * `processFaults` are 16–40 s, past the lease). It freezes the process that leads `job-${lease}`
 * then, else worker `worker`'s; `aimed` as a pause of `processFaults` (sim/faults.ts).
 */
export interface ShortPause {
  readonly lease: number;
  readonly worker: number;
  readonly at: number;
  readonly forMs: number;
  readonly aimed: boolean;
}

/** The seed of a world's own stream for its short freezes: apart from the schedule's, so that no other draw moves. */
const SHORT_PAUSE_STREAM = 0x73707365; // "spse"

/** A world's short freezes, from a stream of their own (seed ^ SHORT_PAUSE_STREAM): a third of the worlds with faults, one or two, 10–15 s (exclusive). */
function drawShortPauses(seed: number, workers: number, faultEnd: number): ShortPause[] | undefined {
  const r = seededRandom((seed ^ SHORT_PAUSE_STREAM) >>> 0);
  const int = (lo: number, hi: number) => lo + Math.floor(r() * (hi - lo + 1));
  if (r() >= 1 / 3) return undefined;
  return Array.from({ length: int(1, 2) }, () => ({ lease: int(0, 1), worker: int(0, workers - 1), at: int(20_000, faultEnd), forMs: int(10_001, 14_999), aimed: r() < 0.5 })).sort((a, b) => a.at - b.at);
}

/**
 * DynamoDB lost to the whole fleet (a Region's endpoint down, its DNS gone): from `at` for `forMs`
 * (ms from the run's start, 1–5 minutes), no request of any worker or of the functions lands
 * (sim/network.ts). `answers`: how the requests fail — `errors`, each answered with a 500
 * (InternalServerError, which the AWS SDK retries); `silent`, none answered (a black-holed
 * endpoint: a worker's own request bound ends its wait, a function's client its request timeout);
 * `mixed`, each request one or the other, drawn from a stream of the outage's own. Its window is
 * the outage: from its start to its end.
 */
export interface DynamoOutage {
  readonly at: number;
  readonly forMs: number;
  readonly answers: 'errors' | 'silent' | 'mixed';
}

/** The seed of a world's own stream for its DynamoDB outage: apart from the schedule's, so that no other draw moves. */
const DYNAMO_OUTAGE_STREAM = 0x646f7574; // "dout"
/** The seed of the stream each request of a `mixed` outage draws its failure from (sim/network.ts). */
export const OUTAGE_ANSWER_STREAM = 0x64616e73; // "dans"

/** A world's DynamoDB outage, from a stream of its own (seed ^ DYNAMO_OUTAGE_STREAM): a tenth of the worlds with faults, 1–5 min, over by `faultEnd`. */
function drawDynamoOutage(seed: number, faultEnd: number): DynamoOutage | undefined {
  const r = seededRandom((seed ^ DYNAMO_OUTAGE_STREAM) >>> 0);
  const int = (lo: number, hi: number) => lo + Math.floor(r() * (hi - lo + 1));
  if (r() >= 0.1) return undefined;
  const forMs = int(60_000, 300_000);
  return { at: int(20_000, Math.max(20_000, faultEnd - forMs)), forMs, answers: (['errors', 'silent', 'mixed'] as const)[int(0, 2)]! };
}

/**
 * IoT Core slower than the functions' publish timeout (lib/functions/wake.ts WAKE_TIMEOUT_MS,
 * 1.5 s): from `at` for `forMs` (ms from the run's start), each publish is answered `delayMs[0]`–
 * `delayMs[1]` ms late (2–10 s, drawn per publish), so the functions' waker gives every one up
 * (and counts the broker stalled); a publish given up is still delivered then with chance `lands`
 * (the broker had it before the client hung up), else lost. A worker's own publishes (QoS 0, not
 * waited for) are delivered as late. The world's functions then publish through the real waker
 * (iotWaker), its timeout and its stall on simulated time (sim/functions.ts). Its window: until the
 * last publish made in it may land, `delayMs[1]` after it.
 */
export interface SlowBroker {
  readonly at: number;
  readonly forMs: number;
  readonly delayMs: readonly [number, number];
  readonly lands: number;
}

/** The seed of a world's own stream for its slow broker: apart from the schedule's, so that no other draw moves. */
const SLOW_BROKER_STREAM = 0x73627270; // "sbrp"
/** The seed of the stream each slow publish's delay and landing are drawn from (sim/functions.ts, sim/push.ts). */
export const SLOW_PUBLISH_STREAM = 0x73707562; // "spub"

/** A world's slow broker, from a stream of its own (seed ^ SLOW_BROKER_STREAM): a fifth of the push worlds with faults, 10–60 s, publishes 2–10 s late, over by `faultEnd`. */
function drawSlowBroker(seed: number, faultEnd: number): SlowBroker | undefined {
  const r = seededRandom((seed ^ SLOW_BROKER_STREAM) >>> 0);
  const int = (lo: number, hi: number) => lo + Math.floor(r() * (hi - lo + 1));
  if (r() >= 0.2) return undefined;
  const forMs = int(10_000, 60_000);
  const lo = int(2_000, 6_000);
  return { at: int(20_000, Math.max(20_000, faultEnd - forMs)), forMs, delayMs: [lo, int(lo, 10_000)], lands: 0.5 };
}

/**
 * Throttling the fleet shares (a table's capacity exceeded, on-demand or provisioned: DynamoDB
 * throttles part of the requests and lets the rest through): from `at` for `forMs` (ms from the run's
 * start, 20–120 s), each request of any worker's process is answered with `error`
 * (ThrottlingException or ProvisionedThroughputExceededException, as a `throttled` user fault's)
 * with chance `share` (0.5–0.95), drawn per request from a stream of the throttling's own
 * (sim/network.ts), and the rest land as ever. Every answer after a throttled one is a recovery to
 * the SDK (lib/sdk/faults.ts recovered), which wakes the process's followers backing off: the
 * storm a review found (2026-12-08, sixteenth; step.ts recoveryWake). Its window is the throttling.
 */
export interface PartialThrottle {
  readonly at: number;
  readonly forMs: number;
  readonly share: number;
  readonly error: 'throttling' | 'provisionedThroughput';
}

/** The seed of a world's own stream for its shared throttling: apart from the schedule's, so that no other draw moves. */
const PARTIAL_THROTTLE_STREAM = 0x70746872; // "pthr"
/** The seed of the stream each request under the shared throttling draws its fate from (sim/network.ts). */
export const THROTTLE_DRAW_STREAM = 0x74647277; // "tdrw"

/** A world's shared throttling, from a stream of its own (seed ^ PARTIAL_THROTTLE_STREAM): a tenth of the worlds with faults, 20–120 s, 50–95 % of the requests throttled, over by `faultEnd`. */
function drawPartialThrottle(seed: number, faultEnd: number): PartialThrottle | undefined {
  const r = seededRandom((seed ^ PARTIAL_THROTTLE_STREAM) >>> 0);
  const int = (lo: number, hi: number) => lo + Math.floor(r() * (hi - lo + 1));
  if (r() >= 0.1) return undefined;
  const forMs = int(20_000, 120_000);
  return { at: int(20_000, Math.max(20_000, faultEnd - forMs)), forMs, share: int(50, 95) / 100, error: r() < 0.5 ? 'throttling' : 'provisionedThroughput' };
}

/**
 * A slow DynamoDB for one worker (a degraded path, a slow proxy, an overloaded NAT): from `at` for
 * `forMs` (ms from the run's start), every request worker `worker`'s process sends lands on time,
 * and its answer (or its refusal) comes back `delayMs[0]`–`delayMs[1]` ms late, drawn per request
 * (sim/network.ts, from a stream of the window's own). The window's effects end when the last
 * answer to a request that landed in it is back: `delayMs[1]` after it (sim/faults.ts).
 */
export interface SlowDynamo {
  readonly worker: number;
  readonly at: number;
  readonly forMs: number;
  readonly delayMs: readonly [number, number];
}

/** The seed of a world's own stream for its slow DynamoDB: apart from the schedule's, so that no other draw moves. */
const SLOW_DYNAMO_STREAM = 0x736c6f77; // "slow"
/** The seed of the stream each slow answer's delay is drawn from (sim/network.ts): apart from the run's, so that no draw of the run's moves for it. */
export const SLOW_ANSWER_STREAM = 0x736c616e; // "slan"

/** A world's slow DynamoDB, from a stream of its own (seed ^ SLOW_DYNAMO_STREAM): a fifth of the worlds with faults, 10–120 s, answers 1–4 s late, over by `faultEnd`. */
function drawSlowDynamo(seed: number, workers: number, faultEnd: number): SlowDynamo | undefined {
  const r = seededRandom((seed ^ SLOW_DYNAMO_STREAM) >>> 0);
  const int = (lo: number, hi: number) => lo + Math.floor(r() * (hi - lo + 1));
  if (r() >= 0.2) return undefined;
  const forMs = int(10_000, 120_000);
  const lo = int(1_000, 3_000);
  return { worker: int(0, workers - 1), at: int(20_000, Math.max(20_000, faultEnd - forMs)), forMs, delayMs: [lo, int(lo, 4_000)] };
}

/** A stream-triggered function (lib/wiring.ts). */
export type StreamFunction = 'leaseStream' | 'candidateStream';

/**
 * The stream functions down while the coordinator's tick runs on (their Lambdas throttled, or
 * failing on a bad deploy, a dependency of theirs down): from `at` for `forMs` (ms from the run's
 * start), `functions`' stream records wait in their shards, in order, and reach them once the
 * window is over (sim/functions.ts). Unlike a `coordinatorDown` window, the tick, the election
 * timer and the platform's events run as ever.
 */
export interface StreamsDown {
  readonly at: number;
  readonly forMs: number;
  readonly functions: readonly StreamFunction[];
}

/** The seed of a world's own stream for its stream functions' outage: apart from the schedule's, so that no other draw moves. */
const STREAMS_DOWN_STREAM = 0x7364776e; // "sdwn"

/** A world's stream functions' outage, from a stream of its own (seed ^ STREAMS_DOWN_STREAM): a fifth of the worlds with faults, 10–120 s, both functions or one, over by `faultEnd`. */
function drawStreamsDown(seed: number, faultEnd: number): StreamsDown | undefined {
  const r = seededRandom((seed ^ STREAMS_DOWN_STREAM) >>> 0);
  const int = (lo: number, hi: number) => lo + Math.floor(r() * (hi - lo + 1));
  if (r() >= 0.2) return undefined;
  const forMs = int(10_000, 120_000);
  const at = int(20_000, Math.max(20_000, faultEnd - forMs));
  const functions = ([['leaseStream', 'candidateStream'], ['leaseStream', 'candidateStream'], ['leaseStream'], ['candidateStream']] as const)[int(0, 3)]!;
  return { at, forMs, functions };
}

/**
 * Someone deletes the live session row a lease's holder holds its term on (DeleteItem, unconditional,
 * as `conclave` or the console would, or a worker of the same grant, whose grant lets it delete
 * session rows of its partition): the lease row still names the session, and the holder hears only
 * when its session's next renewal fails. Done by sim/faults.ts at a point of the holder's renewal
 * cycle: from `at` (or, `beforeTick`, from a renew interval before the coordinator's first tick after
 * `at`, the pass that judges a term on a missing row), it waits for the holder's next session renewal
 * to land, then `phase` of its renew interval more, then deletes. `job-${lease}`'s, else the other
 * lease's if only that one is held on a session then; skipped if neither is.
 */
export interface SessionDelete {
  readonly lease: number;
  readonly at: number;
  /** Where in the holder's renewal cycle the delete is sent: this share (0–1) of its session's renew interval after a renewal landed. */
  readonly phase: number;
  /** Aimed at the coordinator's next pass over every lease (half of them): the delete lands within about a renew interval before it. */
  readonly beforeTick: boolean;
  /** Who deletes: an operator (a consistent client outside every worker), or a peer: the worker `peer` places after the holder's (1 or 2 of 3), through its own client and network. */
  readonly by: 'operator' | 'peer';
  readonly peer: number;
}

/** The seed of a world's own stream for its session-row delete: apart from the schedule's, so that no other draw moves. */
const SESSION_DELETE_STREAM = 0x7364656c; // "sdel"

/** A world's session-row delete, from a stream of its own (seed ^ SESSION_DELETE_STREAM): only in worlds with sessions, rare. */
function drawSessionDelete(seed: number, workers: number, faultEnd: number): SessionDelete | undefined {
  const r = seededRandom((seed ^ SESSION_DELETE_STREAM) >>> 0);
  const int = (lo: number, hi: number) => lo + Math.floor(r() * (hi - lo + 1));
  if (r() >= 0.1) return undefined;
  return { lease: int(0, 1), at: int(20_000, faultEnd), phase: r(), beforeTick: r() < 0.5, by: r() < 0.5 ? 'operator' : 'peer', peer: int(1, Math.max(1, workers - 1)) };
}

/**
 * The streams re-read from an older point, once: at `at` (ms from the start; the first look of each
 * stream's poller from then on), each poller goes back to its records of the last `backMs` and
 * delivers them again, in order, then reads on. What local mode does when its checkpoints file is
 * missing or corrupt (or `startLocalConclave({ endpoint })` without `eventsDir` starts), an older
 * release reading a newer checkpoints file, an event source mapping recreated at TRIM_HORIZON:
 * records long handled come again, unlike `streamRedelivery`'s batch delivered twice at once.
 */
export interface StreamReplay {
  readonly at: number;
  readonly backMs: number;
}

/** The seed of a world's own stream for its stream replay: apart from the schedule's, so that no other draw moves. */
const REPLAY_STREAM = 0x72706c79; // "rply"

/** A world's stream replay, from a stream of its own (seed ^ REPLAY_STREAM): rare, minutes back. */
function drawStreamReplay(seed: number, faultEnd: number): StreamReplay | undefined {
  const r = seededRandom((seed ^ REPLAY_STREAM) >>> 0);
  const int = (lo: number, hi: number) => lo + Math.floor(r() * (hi - lo + 1));
  return r() < 0.1 ? { at: int(20_000, faultEnd), backMs: int(60_000, 300_000) } : undefined;
}

/**
 * A `--kept` world's workers that run their electors with `releaseOnCancel: false` (client-go's
 * "leave the lease to run out"): a leader that stops writes nothing to its lease, and its term runs
 * out on its last renewal (taken off its process's live Session first: lib/sdk/step.ts leave, its `kept` part).
 */
export interface KeptTerms {
  /** The workers whose electors keep their terms on stop (at least one; in a `--kept all` world, every one). */
  readonly workers: readonly number[];
  /**
   * One elector of a kept worker's process stopped (its run()'s signal aborted) while the process,
   * its Session and its other electors run on, started again in the same process after `forMs`
   * (sim/faults.ts): the stop that leaves a kept term on a live session. `worker`: whose, unless
   * another kept worker leads the lease at `at` (then that one's). `at`, `forMs` in ms from the run's start.
   */
  readonly electorStops: readonly { readonly worker: number; readonly lease: number; readonly at: number; readonly forMs: number }[];
}

/** Which workers keep their terms in a `--kept` world: some (each with even odds, at least one), or all. */
export type KeptMode = 'some' | 'all';

/** The seed of a world's own stream for its kept terms: apart from the schedule's, so that no other draw moves. */
const KEPT_STREAM = 0x6b657074; // "kept"

/** A world's sessions: how often they are renewed, within what the electors' renew deadline allows. */
export interface SessionConfig {
  /**
   * The renew interval as a share (0.3–0.95) of the room the electors leave it: renewDeadlineMs −
   * retryPeriodMs (a session renewal and one retry must fit in an elector's renew deadline).
   */
  renewShare: number;
  /** Workers that run no Session (a fleet part way through adopting them): their electors renew their leases themselves. */
  without?: readonly number[];
}

/** How the simulated broker treats wakes (sim/push.ts). */
export interface PushFaults {
  delayMs: [number, number];
  loss: number;
  duplicate: number;
  /** When the broker is down (ms from the start): every connection drops, and comes back after. */
  outages: Window[];
}

/**
 * The schedule of seed `seed`. `mixed`: a fleet part way through a change — in a world with sessions
 * one worker runs none, and in half the worlds one worker's timings are twice the others'
 * (timingScale). Drawn last: the rest of the seed's world is as without it. `kept`: some or all
 * workers keep their terms on stop, with elector stops (KeptTerms), from a stream of its own.
 */
export function generateSchedule(seed: number, opts: { workers: number; durationMs: number; faults?: boolean; mixed?: boolean; kept?: KeptMode }): Schedule {
  const r = seededRandom(seed);
  const int = (lo: number, hi: number) => lo + Math.floor(r() * (hi - lo + 1));
  const faultsOn = opts.faults ?? true;
  // faults in the first 70% of the run, so the last 30% shows the system healed
  const faultEnd = Math.floor(opts.durationMs * 0.7);
  const skewMs = Array.from({ length: opts.workers }, () => (r() < 0.3 ? (r() < 0.5 ? -1 : 1) * int(20_000, 30_000) : int(-400, 400)));
  const versions = Array.from({ length: opts.workers }, () => `1.${int(29, 31)}.0`);
  const processFaults: ProcessFault[] = [];
  if (faultsOn) {
    const n = int(2, 8);
    for (let i = 0; i < n; i++) {
      const worker = int(0, opts.workers - 1);
      const at = int(20_000, faultEnd);
      const kind = (['kill', 'pause', 'stop', 'clockStep', 'partition', 'pause'] as const)[int(0, 5)]!;
      if (kind === 'clockStep') processFaults.push({ kind, worker, at, stepMs: (r() < 0.5 ? -1 : 1) * int(1_000, 30_000) });
      else if (kind === 'pause') processFaults.push({ kind, worker, at, forMs: int(16_000, 40_000), aimed: r() < 0.5 });
      else processFaults.push({ kind, worker, at, forMs: kind === 'partition' ? int(5_000, 40_000) : int(1_000, 30_000) });
    }
    if (r() < 0.2) processFaults.push({ kind: 'deleteLease', lease: int(0, 1), at: int(20_000, faultEnd) });
  }
  const windows = (k: number, maxLen: number): Window[] =>
    Array.from({ length: k }, () => {
      const from = int(10_000, faultEnd);
      return { from, to: Math.min(faultEnd, from + int(2_000, maxLen)) };
    });
  const base: Omit<Schedule, 'push' | 'session' | 'driftPpm' | 'userFaults' | 'peerFaults'> = {
    seed,
    skewMs: faultsOn ? skewMs : skewMs.map(() => 0),
    versions,
    processFaults: processFaults.sort((a, b) => a.at - b.at),
    ddbFaults: faultsOn ? windows(int(0, 3), 20_000) : [],
    requestFaults: { latencyMs: [1, int(3, 40)], throttle: 0.1, lost: 0.1, lostAnswer: 0.1, duplicate: 0.05, late: 0.05 },
    coordinatorDown: faultsOn ? windows(int(0, 2), 90_000) : [],
    streamLagMs: [0, int(10, 3_000)],
    streamRedelivery: faultsOn ? 0.05 : 0,
    staleReadLagMs: faultsOn ? int(0, 1_000) : 0,
    platforms: Array.from({ length: opts.workers }, () => (r() < 0.5 ? 'ecs' : 'ec2')),
    platformEvents: { delayMs: [200, int(500, 5_000)], duplicate: faultsOn ? 0.2 : 0, late: faultsOn ? 0.3 : 0 },
    healMs: 60_000,
  };
  // drawn last, so that the rest of a seed's schedule is what it was before the push path existed
  const push: PushFaults | undefined =
    r() < 0.5 ? { delayMs: [1, int(5, 500)], loss: faultsOn ? r() * 0.3 : 0, duplicate: faultsOn ? 0.1 : 0, outages: faultsOn ? windows(int(0, 2), 60_000) : [] } : undefined;
  // drawn after the push path, for the same reason: a seed's faults and push path are what they were before sessions
  const session: SessionConfig | undefined = r() < 0.5 ? { renewShare: 0.3 + 0.65 * r() } : undefined;
  // drawn after sessions, for the same reason
  const driftPpm = faultsOn && r() < 0.5 ? drift(r, int, opts.workers) : undefined;
  // A machine beyond the drift the SDK assumes doubts DynamoDB's time at every jump (every few tens
  // of seconds) and steps down, as it must; when it is the candidate the coordinator prefers, it
  // takes the lease back each time, and the seconds between add up. Safety is judged as in every
  // world; leaderless time after the heal may be twice the usual (seed 323828829: 62.9 s in all
  // over five minutes, in ten short spells and one election after an operator's delete).
  const healMs = driftPpm?.some((x) => Math.abs(x) > DRIFT_MAX_PPM) ? 2 * base.healMs : base.healMs;
  // drawn after drift, for the same reason: a world without them replays as before they existed
  const userFaults = faultsOn && r() < 0.5 ? drawUserFaults(r, int, opts.workers, faultEnd, push !== undefined) : [];
  // drawn after the user faults, for the same reason
  const peerFaults = faultsOn && r() < 0.35 ? drawPeerFaults(int, opts.workers, faultEnd) : [];
  // drawn after the peer faults, for the same reason
  const sessions = session && opts.mixed ? { ...session, without: [int(0, opts.workers - 1)] } : session;
  // a worker that runs no Session (a world without them, or the one without in a mixed fleet) has no
  // session of its own to point the lease at: its rewrite is to a missing row (what sim/faults.ts
  // writes), and the schedule says so (seed 97467 said "its own process's" over a missing row's write)
  const runsSession = (w: number) => sessions !== undefined && !sessions.without?.includes(w);
  const peers = peerFaults.map((f): PeerFault => (f.kind === 'sessionRedirect' && f.to === 'ownSession' && !runsSession(f.worker) ? { ...f, to: 'missing' } : f));
  // and in half the mixed worlds one worker's timings are twice the others' (a change of timings rolling out)
  const slow = opts.mixed && r() < 0.5 ? int(0, opts.workers - 1) : undefined;
  const timingScale = slow === undefined ? undefined : Array.from({ length: opts.workers }, (_, i) => (i === slow ? 2 : 1));
  // and in half the mixed worlds with faults, a role rolled out without the candidates Query for a while
  const roleChange: UserFault[] = opts.mixed && faultsOn && r() < 0.5 ? [{ kind: 'denied', worker: int(0, opts.workers - 1), at: int(20_000, faultEnd), forMs: int(5_000, 40_000), operation: 'candidateQuery' }] : [];
  const kept = opts.kept ? drawKept(seed, opts.kept, opts.workers, faultsOn, faultEnd) : undefined;
  const streamReplay = faultsOn ? drawStreamReplay(seed, faultEnd) : undefined;
  const sessionDelete = faultsOn && sessions ? drawSessionDelete(seed, opts.workers, faultEnd) : undefined;
  const slowDynamo = faultsOn ? drawSlowDynamo(seed, opts.workers, faultEnd) : undefined;
  const streamsDown = faultsOn ? drawStreamsDown(seed, faultEnd) : undefined;
  const shortPauses = faultsOn ? drawShortPauses(seed, opts.workers, faultEnd) : undefined;
  const dynamoOutage = faultsOn ? drawDynamoOutage(seed, faultEnd) : undefined;
  // only where the push path runs (whether it does is read, not drawn: the push path's draws are the schedule's)
  const slowBroker = faultsOn && push ? drawSlowBroker(seed, faultEnd) : undefined;
  const partialThrottle = faultsOn ? drawPartialThrottle(seed, faultEnd) : undefined;
  return {
    ...base,
    healMs,
    push,
    session: sessions,
    driftPpm,
    userFaults: [...userFaults, ...roleChange],
    peerFaults: peers,
    ...(timingScale ? { timingScale } : {}),
    ...(kept ? { kept } : {}),
    ...(streamReplay ? { streamReplay } : {}),
    ...(sessionDelete ? { sessionDelete } : {}),
    ...(slowDynamo ? { slowDynamo } : {}),
    ...(streamsDown ? { streamsDown } : {}),
    ...(shortPauses ? { shortPauses } : {}),
    ...(dynamoOutage ? { dynamoOutage } : {}),
    ...(slowBroker ? { slowBroker } : {}),
    ...(partialThrottle ? { partialThrottle } : {}),
  };
}

/**
 * A `--kept` world's kept terms, from a stream of their own (seed ^ KEPT_STREAM): the rest of the
 * seed's schedule is drawn as without `--kept`, and stays what it is. With faults, one to three
 * stops of one elector of a kept worker's process while the process runs on.
 */
function drawKept(seed: number, mode: KeptMode, workers: number, faultsOn: boolean, faultEnd: number): KeptTerms {
  const r = seededRandom((seed ^ KEPT_STREAM) >>> 0);
  const int = (lo: number, hi: number) => lo + Math.floor(r() * (hi - lo + 1));
  const all = Array.from({ length: workers }, (_, i) => i);
  let kept = mode === 'all' ? all : all.filter(() => r() < 0.5);
  if (kept.length === 0) kept = [int(0, workers - 1)];
  const electorStops = faultsOn ? Array.from({ length: int(1, 3) }, () => ({ worker: kept[int(0, kept.length - 1)]!, lease: int(0, 1), at: int(20_000, faultEnd), forMs: int(1_000, 30_000) })).sort((a, b) => a.at - b.at) : [];
  return { workers: kept, electorStops };
}

const DENIED_OPERATIONS: readonly DeniedOperation[] = ['leaseGet', 'leaseUpdate', 'candidatePut', 'candidateUpdate'];
/** How late a slow IoT Core delivers a wake: just under the lease stream function's 1.5 s publish timeout. */
export const SLOW_PUSH_MS = 1_400;

/** One to three faults as users bring them, each of a kind drawn (a slow IoT Core only where the push path runs). */
function drawUserFaults(r: () => number, int: (lo: number, hi: number) => number, workers: number, faultEnd: number, push: boolean): UserFault[] {
  const out: UserFault[] = [];
  for (let n = int(1, 3); n > 0; n--) {
    const at = int(20_000, faultEnd);
    const kind = (['denied', 'throttled', 'malformedRow', 'tokenMoved', 'workFails', 'slowPush'] as const)[int(0, push ? 5 : 4)]!;
    if (kind === 'denied') out.push({ kind, worker: int(0, workers - 1), at, forMs: int(5_000, 40_000), operation: DENIED_OPERATIONS[int(0, DENIED_OPERATIONS.length - 1)]! });
    else if (kind === 'throttled') out.push({ kind, worker: int(0, workers - 1), at, forMs: int(5_000, 30_000), error: r() < 0.5 ? 'throttling' : 'provisionedThroughput' });
    else if (kind === 'malformedRow') out.push({ kind, lease: int(0, 1), at, forMs: int(5_000, 60_000) });
    // up by at most a millisecond's worth of tokens (further would outrun the floor a deleted row's next term starts from); back by up to a second's
    else if (kind === 'tokenMoved') out.push({ kind, lease: int(0, 1), at, by: r() < 0.5 ? int(1, 1_000) : -int(1, 1_000_000) });
    else if (kind === 'workFails') out.push({ kind, lease: int(0, 1), at });
    else out.push({ kind, at, forMs: int(10_000, 60_000), delayMs: SLOW_PUSH_MS });
  }
  return out.sort((a, b) => a.at - b.at);
}

/** One or two faults from peers of the same lease. */
function drawPeerFaults(int: (lo: number, hi: number) => number, workers: number, faultEnd: number): PeerFault[] {
  const out: PeerFault[] = [];
  for (let n = int(1, 2); n > 0; n--) {
    const at = int(20_000, faultEnd);
    if (int(0, 2) < 2) out.push({ kind: 'sessionRedirect', lease: int(0, 1), worker: int(0, workers - 1), at, to: int(0, 1) === 0 ? 'ownSession' : 'missing' });
    else out.push({ kind: 'twin', worker: int(0, workers - 1), at, forMs: int(5_000, 60_000) });
  }
  return out.sort((a, b) => a.at - b.at);
}

/** The clock rate error the SDK assumes a machine stays within (lib/sdk/server-clock.ts: DRIFT_PER_MS). */
const DRIFT_MAX_PPM = 100;
/** A machine far beyond it: a VM whose clock source is broken, an oscillator gone bad. */
const DRIFT_WILD_PPM: [number, number] = [10_000, 50_000];
/** Every worker within ±DRIFT_MAX_PPM; in half the drifting worlds one worker far beyond. */
function drift(r: () => number, int: (lo: number, hi: number) => number, workers: number): number[] {
  const out = Array.from({ length: workers }, () => int(-DRIFT_MAX_PPM, DRIFT_MAX_PPM));
  if (r() < 0.5) out[int(0, workers - 1)] = (r() < 0.5 ? -1 : 1) * int(DRIFT_WILD_PPM[0], DRIFT_WILD_PPM[1]);
  return out;
}

/** The schedule, as lines for people. */
export function describeSchedule(s: Schedule): string[] {
  return [
    `schedule ${s.seed}: skew ${s.skewMs.map((x) => `${x} ms`).join(', ')}; versions ${s.versions.join(', ')}`,
    `  platforms ${s.platforms.map((p, i) => `w${i} ${p}`).join(', ')}; platform events after ${s.platformEvents.delayMs.join('–')} ms, twice ${s.platformEvents.duplicate}, late ${s.platformEvents.late}`,
    ...s.processFaults.map((f) => `  +${(f.at / 1000).toFixed(1)}s ${describeFault(f)}`),
    ...s.ddbFaults.map((w) => `  +${(w.from / 1000).toFixed(1)}s DynamoDB faults until +${(w.to / 1000).toFixed(1)}s`),
    ...s.coordinatorDown.map((w) => `  +${(w.from / 1000).toFixed(1)}s coordinator down until +${(w.to / 1000).toFixed(1)}s`),
    `  stream lag up to ${s.streamLagMs[1]} ms, redelivery ${s.streamRedelivery}, stale reads up to ${s.staleReadLagMs} ms`,
    ...(s.streamReplay ? [`  +${(s.streamReplay.at / 1000).toFixed(1)}s streams re-read from ${(s.streamReplay.backMs / 1000).toFixed(1)}s back`] : []),
    ...(s.sessionDelete ? [`  +${(s.sessionDelete.at / 1000).toFixed(1)}s ${describeSessionDelete(s.sessionDelete)}`] : []),
    ...(s.slowDynamo ? [`  +${(s.slowDynamo.at / 1000).toFixed(1)}s ${describeSlowDynamo(s.slowDynamo)}`] : []),
    ...(s.streamsDown ? [`  +${(s.streamsDown.at / 1000).toFixed(1)}s ${describeStreamsDown(s.streamsDown)}`] : []),
    ...(s.shortPauses ?? []).map((f) => `  +${(f.at / 1000).toFixed(1)}s ${describeShortPause(f)}`),
    ...(s.dynamoOutage ? [`  +${(s.dynamoOutage.at / 1000).toFixed(1)}s ${describeDynamoOutage(s.dynamoOutage)}`] : []),
    ...(s.slowBroker ? [`  +${(s.slowBroker.at / 1000).toFixed(1)}s ${describeSlowBroker(s.slowBroker)}`] : []),
    ...(s.partialThrottle ? [`  +${(s.partialThrottle.at / 1000).toFixed(1)}s ${describePartialThrottle(s.partialThrottle)}`] : []),
    s.push
      ? `  push: wakes after ${s.push.delayMs.join('–')} ms, lost ${s.push.loss.toFixed(2)}, twice ${s.push.duplicate}${s.push.outages.map((w) => `; broker down +${(w.from / 1000).toFixed(1)}s–+${(w.to / 1000).toFixed(1)}s`).join('')}`
      : '  push: none (followers poll)',
    s.session ? `  sessions: one per process${s.session.without?.length ? ` but ${s.session.without.map((w) => `w${w}`).join(', ')}'s` : ''}, renewed at ${s.session.renewShare.toFixed(2)} of the room the renew deadline leaves` : '  sessions: none (each leader renews its leases)',
    ...(s.kept ? [`  kept terms (releaseOnCancel false): ${s.kept.workers.map((w) => `w${w}`).join(', ')}`, ...s.kept.electorStops.map((f) => `  +${(f.at / 1000).toFixed(1)}s stop the elector of job-${f.lease} of its kept leader, else w${f.worker}'s (its process runs on), started again ${(f.forMs / 1000).toFixed(1)}s after it stopped`)] : []),
    ...(s.timingScale ? [`  timings: ${s.timingScale.map((k, w) => (k === 1 ? '' : `w${w}'s ×${k}`)).filter(Boolean).join(', ')} the others'`] : []),
    s.driftPpm ? `  clock drift: ${s.driftPpm.map((x, i) => `w${i} ${x > 0 ? '+' : ''}${x} ppm`).join(', ')}` : '  clock drift: none',
    ...s.userFaults.map((f) => `  +${(f.at / 1000).toFixed(1)}s ${describeUserFault(f)}`),
    ...s.peerFaults.map((f) =>
      f.kind === 'sessionRedirect'
        ? `  +${(f.at / 1000).toFixed(1)}s w${f.worker} rewrites job-${f.lease}'s session to ${f.to === 'ownSession' ? 'its own process\'s' : 'a missing row'}`
        : `  +${(f.at / 1000).toFixed(1)}s a second process under w${f.worker}'s identity for ${(f.forMs / 1000).toFixed(1)}s`,
    ),
  ];
}

/** A slow DynamoDB window, for people (the feed's line and the schedule's). */
export function describeSlowDynamo(f: SlowDynamo): string {
  return `w${f.worker}'s DynamoDB answers ${f.delayMs[0]}–${f.delayMs[1]} ms late (its requests landing on time) for ${(f.forMs / 1000).toFixed(1)}s`;
}

/** A short freeze, for people (the schedule's line). */
export function describeShortPause(f: ShortPause): string {
  return `pause job-${f.lease}'s leader, else w${f.worker}, for ${(f.forMs / 1000).toFixed(1)}s (past its renew deadline, within its lease)${f.aimed ? ' at its next answer' : ''}`;
}

/** A DynamoDB outage, for people (the feed's line and the schedule's). */
export function describeDynamoOutage(f: DynamoOutage): string {
  const how = f.answers === 'errors' ? 'every request answered with a 500' : f.answers === 'silent' ? 'no request answered' : 'each request answered with a 500 or not at all';
  return `DynamoDB down for the whole fleet (${how}) for ${(f.forMs / 1000).toFixed(1)}s`;
}

/** A slow broker, for people (the feed's line and the schedule's). */
export function describeSlowBroker(f: SlowBroker): string {
  return `IoT Core answers publishes ${f.delayMs[0]}–${f.delayMs[1]} ms late (past the 1.5 s publish timeout; ${Math.round(f.lands * 100)} % of those given up still delivered) for ${(f.forMs / 1000).toFixed(1)}s`;
}

/** The fleet's shared throttling, for people (the feed's line and the schedule's). */
export function describePartialThrottle(f: PartialThrottle): string {
  return `DynamoDB throttles ${Math.round(f.share * 100)} % of every worker's requests (${f.error}; the rest pass) for ${(f.forMs / 1000).toFixed(1)}s`;
}

/** A stream functions' outage, for people (the feed's line and the schedule's). */
export function describeStreamsDown(f: StreamsDown): string {
  return `${f.functions.join(' and ')} down (records held in their shards; the tick runs) for ${(f.forMs / 1000).toFixed(1)}s`;
}

function describeSessionDelete(f: SessionDelete): string {
  const who = f.by === 'operator' ? 'an operator' : `the worker ${f.peer} after the holder's`;
  return `${who} deletes the session row job-${f.lease}'s holder leads on, ${f.phase.toFixed(2)} of its renew interval after a renewal${f.beforeTick ? ', just before the next tick' : ''}`;
}

function describeUserFault(f: UserFault): string {
  switch (f.kind) {
    case 'denied':
      return `w${f.worker} denied ${f.operation} for ${(f.forMs / 1000).toFixed(1)}s`;
    case 'throttled':
      return `w${f.worker} throttled (${f.error}) for ${(f.forMs / 1000).toFixed(1)}s`;
    case 'malformedRow':
      return `lease job-${f.lease} written malformed, repaired after ${(f.forMs / 1000).toFixed(1)}s`;
    case 'tokenMoved':
      return `lease job-${f.lease}'s fencing token moved by ${f.by}`;
    case 'workFails':
      return `the work of job-${f.lease}'s leader fails`;
    case 'slowPush':
      return `IoT Core slow (wakes ${f.delayMs} ms late) for ${(f.forMs / 1000).toFixed(1)}s`;
  }
}

function describeFault(f: ProcessFault): string {
  switch (f.kind) {
    case 'deleteLease':
      return `delete lease job-${f.lease}`;
    case 'clockStep':
      return `clockStep w${f.worker} by ${f.stepMs} ms`;
    case 'pause':
      return `pause w${f.worker} for ${(f.forMs / 1000).toFixed(1)}s${f.aimed ? ' (at its next answer)' : ''}`;
    default:
      return `${f.kind} w${f.worker} for ${(f.forMs / 1000).toFixed(1)}s`;
  }
}

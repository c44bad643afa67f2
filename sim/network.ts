/**
 * Faults, part one: the network and DynamoDB between a simulated process and the model, as the
 * schedule draws them — latency each way, partitions, and inside the schedule's DynamoDB fault
 * windows throttling, lost requests, lost answers, duplicates and requests that land long after
 * their client gave up; one worker's answers coming back seconds late (a slow DynamoDB); and
 * DynamoDB lost to every machine for minutes (500s, or no answer: Schedule.dynamoOutage); the
 * table's capacity throttling a share of every worker's requests (Schedule.partialThrottle). A
 * partitioned process's requests are never answered (a black-holed route). A paused process sends
 * nothing and reads no answer until it runs again; a dead one is never answered.
 */
import { seededRandom, type SimulatedClock } from '../lib/clock.js';
import type { TableNames } from '../lib/schemas/config.js';
import { faults as ddbFaults, type ModelRequest } from './dynamodb-model/index.js';
import type { Feed } from './feed.js';
import { T0 } from './feed.js';
import type { Machine, Network } from './machines.js';
import { FUNCTION_REQUEST_TIMEOUT_MS } from '../lib/functions/requests.js';
import { OUTAGE_ANSWER_STREAM, SLOW_ANSWER_STREAM, THROTTLE_DRAW_STREAM, type DeniedOperation, type Schedule, type UserFault } from './schedule.js';

/** A worker machine as the schedule's network sees it. */
export interface Host extends Machine {
  /** Until when (simulated epoch ms) its requests reach nobody: a network partition. */
  partitionedUntil: number;
  /** An aimed pause: begins when the machine's next request has landed, before it reads the answer. */
  pauseAtNextAnswer: (() => void) | undefined;
  /** A worker process (its identity and start): its requests are counted for the checker's bound; undefined for Lambda's machines. */
  readonly process: { readonly worker: number; readonly name: string } | undefined;
}

/** A Host's network state as it starts: connected, nothing aimed at it; `process`: a worker process's, whose requests are counted. */
export const hostState = (process?: Host['process']): Pick<Host, 'partitionedUntil' | 'pauseAtNextAnswer' | 'process'> => ({ partitionedUntil: 0, pauseAtNextAnswer: undefined, process });

const hang = () => new Promise<never>(() => undefined);

/**
 * The schedule's network: every draw from `random`, the schedule's own stream of numbers. (Its
 * waits are all in this one function, and its draws in a fixed order: a seed replays exactly only
 * while every request takes the same turns of the event loop as it always did.)
 */
export function scheduleNetwork(clock: SimulatedClock, schedule: Schedule, random: () => number, feed: Feed, tables: TableNames): Network<Host> {
  const link = new Link(clock, schedule, random, feed, tables);
  // One promise per request, its waits timers (the same instants and draws as awaiting a sleep
  // each, which made two promises and an async function's frame per request); the steps are the
  // Link's methods, not closures made per request (tsx names each named closure as it is made).
  return (m, req, apply) => {
    feed.count('requests');
    if (m.clock.dead) return hang();
    return new Promise((resolve, reject) => {
      // a frozen process sends nothing until it runs again
      if (m.clock.paused) void m.clock.running().then(() => link.send(m, req, apply, resolve, reject));
      else link.send(m, req, apply, resolve, reject);
    });
  };
}

/** The schedule's network between the machines and the model: what a request meets on its way. */
class Link {
  constructor(
    private readonly clock: SimulatedClock,
    private readonly schedule: Schedule,
    private readonly random: () => number,
    private readonly feed: Feed,
    private readonly tables: TableNames,
  ) {
    this.refusals = schedule.userFaults.filter((f): f is Refusal => f.kind === 'denied' || f.kind === 'throttled');
    this.slowRandom = schedule.slowDynamo ? seededRandom((schedule.seed ^ SLOW_ANSWER_STREAM) >>> 0) : undefined;
    this.outageRandom = schedule.dynamoOutage?.answers === 'mixed' ? seededRandom((schedule.seed ^ OUTAGE_ANSWER_STREAM) >>> 0) : undefined;
    this.throttleRandom = schedule.partialThrottle ? seededRandom((schedule.seed ^ THROTTLE_DRAW_STREAM) >>> 0) : undefined;
  }

  /** Each request under the shared throttling draws whether it is throttled from here: a stream of its own, as the slow answers'. */
  private readonly throttleRandom: (() => number) | undefined;

  /**
   * The throttling answer to worker process `m`'s request that lands now (Schedule.partialThrottle:
   * the table's capacity, shared by the fleet, throttles that share of the requests and lets the
   * rest through), or undefined: outside its window, for Lambda's machines, or a request that passes.
   */
  private throttled(m: Host): Error | undefined {
    const f = this.schedule.partialThrottle;
    if (!f || !m.process) return undefined;
    const at = this.clock.now() - T0;
    if (at < f.at || at >= f.at + f.forMs) return undefined;
    if (this.throttleRandom!() >= f.share) {
      this.feed.count('fault:partialThrottlePassed');
      return undefined;
    }
    this.feed.count('fault:partialThrottled');
    return f.error === 'throttling' ? ddbFaults.throttling() : ddbFaults.provisionedThroughputExceeded();
  }

  /** Each request of a `mixed` outage draws its failure from here: a stream of its own, as the slow answers'. */
  private readonly outageRandom: (() => number) | undefined;

  /**
   * How DynamoDB fails a request that would land now (Schedule.dynamoOutage): answered with a 500,
   * not answered at all, or undefined outside the outage. Every machine alike: workers and Lambda's.
   */
  private outage(): 'error' | 'silent' | undefined {
    const f = this.schedule.dynamoOutage;
    if (!f) return undefined;
    const at = this.clock.now() - T0;
    if (at < f.at || at >= f.at + f.forMs) return undefined;
    const how = f.answers === 'mixed' ? (this.outageRandom!() < 0.5 ? 'error' : 'silent') : f.answers === 'errors' ? 'error' : 'silent';
    this.feed.count(how === 'error' ? 'fault:outageError' : 'fault:outageSilent');
    return how;
  }

  /** Each slow answer's delay is drawn from here: a stream of its own, so that the run's (`random`) is drawn as without the slow DynamoDB. */
  private readonly slowRandom: (() => number) | undefined;

  /** How much later than usual the answer to `m`'s request that lands now comes back (Schedule.slowDynamo): 0 outside its window. */
  private slowMs(m: Host): number {
    const f = this.schedule.slowDynamo;
    if (!f || !m.process || m.process.worker !== f.worker) return 0;
    const at = this.clock.now() - T0;
    if (at < f.at || at >= f.at + f.forMs) return 0;
    this.feed.count('fault:slowAnswer');
    return f.delayMs[0] + this.slowRandom!() * (f.delayMs[1] - f.delayMs[0]);
  }

  /** The schedule's denied operations and throttled workers. */
  private readonly refusals: Refusal[];

  /** What refuses `req` of worker process `m` now (AccessDenied, throttling), if anything. */
  private refusal(m: Host, req: ModelRequest): Error | undefined {
    if (!m.process || this.refusals.length === 0) return undefined;
    const at = this.clock.now() - T0;
    for (const f of this.refusals) {
      if (f.worker !== m.process.worker || at < f.at || at >= f.at + f.forMs) continue;
      const table = (req.input as { TableName?: string }).TableName ?? '';
      if (f.kind === 'throttled') {
        this.feed.count('fault:throttledWorker');
        return f.error === 'throttling' ? ddbFaults.throttling() : ddbFaults.provisionedThroughputExceeded();
      }
      if (deniedOperation(req.operation, table, this.tables) === f.operation) {
        this.feed.count(`fault:denied:${f.operation}`);
        return ddbFaults.accessDenied(req.operation, table);
      }
    }
    return undefined;
  }

  /** Whether now is inside one of the schedule's DynamoDB fault windows. */
  private inFaultWindow(): boolean {
    const at = this.clock.now() - T0;
    for (const w of this.schedule.ddbFaults) if (w.from <= at && at < w.to) return true;
    return false;
  }

  /** One way's latency, drawn now. */
  private latencyMs(): number {
    const l = this.schedule.requestFaults.latencyMs;
    return l[0] + this.random() * (l[1] - l[0]);
  }

  /** The request leaves `m`: it lands (or not) after one way's latency, and its answer comes back after another. */
  send(m: Host, req: ModelRequest, apply: () => unknown, resolve: (out: unknown) => void, reject: (e: unknown) => void): void {
    const { clock, feed } = this;
    if (m.process) feed.request(m.process.name, leaseOf(req, this.tables), clock.monotonic());
    if (clock.now() < m.partitionedUntil) {
      // cut off: the request dies on the way, or its answer does, and nothing comes back, not even a
      // reset (a black-holed route): the caller's own bound ends its wait (lib/sdk/bounded-client.ts),
      // as the AWS SDK, which sets no request timeout by default, never would
      const applied = this.random() < 0.5;
      feed.count(applied ? 'fault:partitionLostAnswer' : 'fault:partitionLostRequest');
      if (applied) {
        try {
          apply();
        } catch {
          // a condition that failed: its answer is lost all the same
        }
      }
      return;
    }
    clock.setTimer(this.latencyMs(), () => this.land(m, req, apply, resolve, reject));
  }

  /** The request reaches DynamoDB: what it meets there (strike), then its answer on the way back. */
  private land(m: Host, req: ModelRequest, apply: () => unknown, resolve: (out: unknown) => void, reject: (e: unknown) => void): void {
    const down = this.outage();
    if (down === 'error') {
      // DynamoDB down: nothing applied, a 500 back (the AWS SDK tries it again)
      this.clock.setTimer(this.latencyMs(), () => m.clock.gate(() => reject(ddbFaults.internalServerError())));
      return;
    }
    if (down === 'silent') {
      // DynamoDB down and silent: nothing applied, nothing back. A worker's own request bound ends
      // its wait (lib/sdk/bounded-client.ts); Lambda's clients time each try out (lib/functions/requests.ts)
      if (!m.process) this.clock.setTimer(FUNCTION_REQUEST_TIMEOUT_MS, () => m.clock.gate(() => reject(Object.assign(new Error(`Request timed out after ${FUNCTION_REQUEST_TIMEOUT_MS} ms`), { name: 'TimeoutError' }))));
      return;
    }
    const refused = this.refusal(m, req) ?? this.throttled(m);
    if (refused) {
      this.clock.setTimer(this.latencyMs() + this.slowMs(m), () => m.clock.gate(() => reject(refused)));
      return;
    }
    let fate: ReturnType<typeof strike>;
    try {
      fate = strike(this.inFaultWindow(), this.random(), this.clock, this.schedule, this.random, this.feed, m, req, apply);
    } catch (e) {
      reject(e);
      return;
    }
    if (fate.late) {
      this.clock.setTimer(1_000, () => reject(ddbFaults.timeout()));
      return;
    }
    if (m.pauseAtNextAnswer) {
      const pause = m.pauseAtNextAnswer;
      m.pauseAtNextAnswer = undefined;
      pause();
    }
    const out = fate.out;
    // a slow DynamoDB (a degraded path, a slow proxy): the request applied on time, its answer late
    this.clock.setTimer(this.latencyMs() + this.slowMs(m), () => {
      // a frozen process reads no answer until it runs again; a dead one never does
      if (m.clock.paused) void m.clock.running().then(() => void (m.clock.dead || resolve(out)));
      else if (!m.clock.dead) resolve(out);
    });
  }
}

type Refusal = Extract<UserFault, { kind: 'denied' | 'throttled' }>;

/** Which of the operations a role may lose `operation` on `table` is. */
function deniedOperation(operation: string, table: string, tables: TableNames): DeniedOperation | undefined {
  if (table === tables.leases) return operation === 'GetItem' ? 'leaseGet' : operation === 'UpdateItem' ? 'leaseUpdate' : undefined;
  if (table === tables.candidates) return operation === 'PutItem' ? 'candidatePut' : operation === 'UpdateItem' ? 'candidateUpdate' : operation === 'Query' ? 'candidateQuery' : undefined;
  return undefined;
}

type Key = Record<string, { S?: string } | undefined> | undefined;

/**
 * The lease a worker's request is for, as the request bound counts it: the lease row's or the
 * candidate row's lease, `session` for its session row (one per process), undefined for what is not
 * Conclave's (a transaction with a table of the user's: a fenced write, a run's completion, at
 * the user's own rate).
 */
export function leaseOf(req: ModelRequest, tables: TableNames): string | undefined {
  const input = req.input as { TableName?: string; Key?: Key; Item?: Key; TransactItems?: unknown[] };
  if (input.TransactItems) return undefined;
  const row = input.Key ?? input.Item;
  if (input.TableName === tables.leases) return row?.['name']?.S;
  if (input.TableName === tables.candidates) return row?.['leaseName']?.S ?? 'candidates';
  if (input.TableName === tables.identities) return 'session';
  return undefined;
}

/**
 * What a request that got through meets (`p`: its draw): outside a DynamoDB fault window DynamoDB
 * answers; inside one it may be throttled, lost, answered-but-lost (these throw), late (its client
 * times out while it lands much later), or applied twice.
 */
function strike(inFault: boolean, p: number, clock: SimulatedClock, schedule: Schedule, random: () => number, feed: Feed, m: Host, req: ModelRequest, apply: () => unknown): { late: true } | { late: false; out: unknown } {
  if (!inFault) return { late: false, out: apply() }; // (most requests: no draw is compared, nothing is counted)
  const f = schedule.requestFaults;
  if (inFault && p < f.throttle) {
    feed.count('fault:throttle');
    throw ddbFaults.provisionedThroughputExceeded();
  } else if (inFault && p < f.throttle + f.lost) {
    feed.count('fault:lostRequest');
    throw ddbFaults.timeout();
  } else if (inFault && p < f.throttle + f.lost + f.lostAnswer) {
    apply();
    feed.count('fault:lostAnswer');
    throw ddbFaults.timeout();
  } else if (inFault && p < f.throttle + f.lost + f.lostAnswer + f.late) {
    // stuck on the way: the client gives up after its timeout; the request lands much later
    feed.count('fault:lateLanding');
    const sentAt = clock.now();
    clock.setTimer(5_000 + random() * 25_000, () => {
      feed.log(`late landing: ${m.name}'s ${req.operation} sent ${((clock.now() - sentAt) / 1000).toFixed(1)} s ago`);
      try {
        apply();
      } catch {
        // a condition that no longer holds: what the condition is for
      }
    });
    return { late: true };
  } else if (inFault && p < f.throttle + f.lost + f.lostAnswer + f.late + f.duplicate && req.operation !== 'GetItem') {
    feed.count('fault:duplicate');
    try {
      apply();
    } catch {
      // the first copy's answer is lost; the second's is what comes back
    }
  }
  return { late: false, out: apply() };
}

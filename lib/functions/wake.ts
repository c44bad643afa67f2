/**
 * The functions' side of the push path: the lease stream's function publishes a wake for each lease
 * change that reaches it (renewals are filtered out before it), and a function whose reconcile
 * wrote a lease one as the write lands (lib/functions/core.ts afterReconcile), through IoT Core's data plane, so
 * the workers following the lease read it at once: on the lease's topic, and on the topic of each
 * process among the lease's candidates (lib/schemas/push.ts wakeTopics; docs/architecture.md,
 * "Wake-ups"). Local mode points the same client at its broker.
 */
import { IoTDataPlaneClient, PublishCommand } from '@aws-sdk/client-iot-data-plane';
import { Nap, systemClock, type Clock } from '../clock.js';
import { wakeTopics, type Wake } from '../schemas/push.js';

/**
 * Publishes one wake: on the lease's topic, or, given `processes`, on the topic of each of them
 * (wakeTopics); resolves once the broker took them, or at once while the broker is not answering
 * (see iotWaker). Rejects when one failed or took longer than the waker's timeout, and, publishing
 * nothing, when `processes` are more than MAX_WAKE_PROCESSES.
 */
export type Waker = (lease: string, revision: number | undefined, processes?: readonly string[]) => Promise<void>;

/** The processes a wake of `lease` is addressed to (the processes of its candidates): see wakeBatch. */
export type WakeAddresses = (lease: string) => Promise<readonly string[]>;

/**
 * How long a publish may take before it is given up. IoT Core answers in tens of milliseconds; a
 * hung endpoint must cost the record little (shorter than the clients' request bound,
 * lib/functions/requests.ts, with its retries).
 */
export const WAKE_TIMEOUT_MS = 1_500;

/**
 * The most processes one wake is addressed to. A lease's candidates are its workers' processes, a
 * handful (3 in every deployment docs/benchmarks.md models; a process's electors share its topic);
 * 25 is eight times that. But a worker of the lease may write any number of candidate rows, each
 * naming a made-up process (up to MAX_CANDIDATES_PER_LEASE, 1,000, which the coordinator reads): each
 * wake of the lease was then 1,001 publishes, billed to the account and drawn from its publish
 * quota, which every lease's wakes share. Past this, the wake goes out on the lease's topic alone
 * (26 publishes at most): the channels on those process topics hear the change at their next poll.
 */
export const MAX_WAKE_PROCESSES = 25;

/**
 * At most this many publishes of one waker are out at once, the others waiting their turn (within
 * the wake's timeout): under the SDK's 50 sockets per client, whatever the number of wakes in flight
 * (WAKES_IN_FLIGHT, each up to 1 + MAX_WAKE_PROCESSES topics) or left unwaited while the broker stalls.
 */
export const PUBLISHES_IN_FLIGHT = 48;

/** A wake addressed to more processes than MAX_WAKE_PROCESSES: published on none of their topics. */
export class TooManyWakeProcessesError extends Error {
  override readonly name = 'TooManyWakeProcessesError';
  constructor(lease: string, processes: number) {
    super(`a wake of lease "${lease}" addressed to ${processes} processes, over ${MAX_WAKE_PROCESSES}: published on none of their topics (their channels hear the change at their next poll); its candidate rows name that many processes`);
  }
}

export interface WakerOptions {
  /** What the timeout is measured on. @default systemClock */
  readonly clock?: Clock;
  /** @default WAKE_TIMEOUT_MS */
  readonly timeoutMs?: number;
}

/** A publish given up after the waker's timeout. */
export class WakeTimeoutError extends Error {
  override readonly name = 'WakeTimeoutError';
}

/**
 * A Waker publishing to `client`'s endpoint (IoT Core's data endpoint, `https://<id>-ats.iot.<region>.amazonaws.com`,
 * or local mode's broker) under the deployment's leases table, at QoS 1. Each publish is aborted
 * after `timeoutMs`. Once one has timed out, the broker counts as stalled: later wakes are still
 * sent (each with its timeout) but not waited for, so they take no place in a WakeBatch's flight
 * and a batch pays the timeout once; the first of them that gets through ends the stall. At most
 * PUBLISHES_IN_FLIGHT publishes are out at once; a wake to more than MAX_WAKE_PROCESSES processes
 * is refused, stalled or not.
 */
export function iotWaker(client: IoTDataPlaneClient, leasesTable: string, options: WakerOptions = {}): Waker {
  const clock = options.clock ?? systemClock;
  const timeoutMs = options.timeoutMs ?? WAKE_TIMEOUT_MS;
  let stalled = false;
  let sending = 0;
  const waiting: (() => void)[] = [];
  /** A place among the PUBLISHES_IN_FLIGHT, once one is free; the function that gives it back (again: nothing). */
  const slot = async (): Promise<() => void> => {
    // a waiter is handed the place of the publish that ends, so nobody can slip in between
    if (sending < PUBLISHES_IN_FLIGHT) sending++;
    else await new Promise<void>((resolve) => waiting.push(resolve));
    let held = true;
    return () => {
      if (!held) return;
      held = false;
      const next = waiting.shift();
      if (next) next();
      else sending--;
    };
  };
  const publish = async (lease: string, revision: number | undefined, processes: readonly string[] | undefined): Promise<void> => {
    const wake: Wake = { lease, by: 'stream', ...(revision !== undefined ? { revision } : {}) };
    const payload = new TextEncoder().encode(JSON.stringify(wake));
    const abort = new AbortController();
    let timedOut!: (e: Error) => void;
    const timeout = new Promise<never>((_, reject) => (timedOut = reject));
    const timer = clock.setTimer(
      timeoutMs,
      () => {
        const e = new WakeTimeoutError(`IoT Core did not answer a publish within ${timeoutMs} ms: given up`);
        timedOut(e);
        abort.abort(e);
      },
      { background: true },
    );
    const places: (() => void)[] = [];
    const send = async (topic: string): Promise<void> => {
      const free = await slot();
      places.push(free);
      if (abort.signal.aborted) return free(); // given up while it waited its turn: never sent
      try {
        await client.send(new PublishCommand({ topic, qos: 1, payload }), { abortSignal: abort.signal });
      } finally {
        free();
      }
    };
    try {
      // raced as well as aborted: the wake settles at the timeout whatever the HTTP handler does with the abort
      await Promise.race([Promise.all(wakeTopics(leasesTable, lease, processes).map(send)), timeout]);
      stalled = false;
    } catch (e) {
      if (e instanceof WakeTimeoutError) stalled = true;
      throw e;
    } finally {
      timer.cancel();
      // a publish given up keeps no place, whatever its HTTP handler does with the abort
      if (abort.signal.aborted) for (const free of places) free();
    }
  };
  return async (lease, revision, processes) => {
    const addressed = processes && new Set(processes).size;
    if (addressed && addressed > MAX_WAKE_PROCESSES) throw new TooManyWakeProcessesError(lease, addressed);
    if (!stalled) return publish(lease, revision, processes);
    // not waited for: its outcome only tells whether the stall is over
    void publish(lease, revision, processes).catch(() => undefined);
  };
}

/**
 * At most this many wakes of one invocation are in flight at once: a batch of 100 records goes out
 * in a few round trips, and stays under the SDK's 50 sockets per client.
 */
export const WAKES_IN_FLIGHT = 16;

/** What became of a WakeBatch's wakes when it settled. */
export interface WakesSettled {
  /** Leases whose wake was still queued when the time ran out: never sent. */
  readonly dropped: readonly string[];
  /** Wakes sent and not answered by then: left to their own timeout. */
  readonly unanswered: number;
}

/**
 * The wakes of one invocation of a function that wakes workers (wakeBatch). `send` never waits: the
 * record goes on to its decisions and writes, and the next record to its own, so a slow IoT Core
 * delays no election and no session mark (each record used to wait for its wake: with a 1.4 s
 * endpoint the 6th election of a batch opened at 7 s). `settle` waits, once the records are done,
 * for the wakes still out: a Lambda frozen with a publish in flight would lose it.
 */
export interface WakeBatch {
  /** Sends a wake of `lease` now, or as soon as one of the batch's wakes in flight is done. */
  send(lease: string, revision: number | undefined): void;
  /**
   * Resolves once every wake sent or queued is done, or after `withinMs` on the batch's clock,
   * whichever comes first; then what is still queued is dropped (the workers see the change at their
   * next poll) and nothing more is sent. Never rejects.
   */
  settle(withinMs: number): Promise<WakesSettled>;
}

/**
 * A WakeBatch on `waker`: at most `limit` wakes in flight, the rest queued in order, and a queued
 * wake of a lease giving way to a later one of the same lease (a wake only says "read the lease
 * now"; the later revision says all the earlier one did; a lower one, none). A failed wake is handed to `failed` and
 * fails nothing else: the records it came from are done, or reported, on their own. With `address`,
 * each wake also goes to the processes it gives (to none past MAX_WAKE_PROCESSES, which the waker
 * refuses: handed to `failed`), once read (when the wake leaves the queue, so the
 * candidates are as fresh as the change; the lease topic does not wait for the read); if that read
 * fails, the wake goes out on the lease's topic alone and the failure is handed to `failed` too (a
 * process topic's subscribers then see the change at their next poll).
 */
export function wakeBatch(waker: Waker, clock: Clock, failed: (lease: string, error: Error) => void, limit = WAKES_IN_FLIGHT, address?: WakeAddresses): WakeBatch {
  const queued = new Map<string, number | undefined>(); // lease → revision; a replaced key keeps its place
  let inFlight = 0;
  let closed = false;
  let nap: Nap | undefined;
  const next = (): void => {
    for (const [lease, revision] of queued) {
      if (inFlight >= limit) return;
      queued.delete(lease);
      inFlight++;
      void publish(lease, revision);
    }
  };
  const publish = async (lease: string, revision: number | undefined): Promise<void> => {
    try {
      // the lease topic at once (channels of the whole deployment need no read); the processes' once read
      await Promise.all([waker(lease, revision).catch((e: unknown) => failed(lease, e as Error)), address && toProcesses(lease, revision)]);
    } finally {
      inFlight--;
      if (!closed) next();
      if (!inFlight && !queued.size) nap?.end();
    }
  };
  const toProcesses = async (lease: string, revision: number | undefined): Promise<void> => {
    let processes: readonly string[];
    try {
      processes = await address!(lease);
    } catch (e) {
      return failed(lease, new Error(`the wake's processes could not be read; published on the lease's topic only: ${(e as Error).message}`, { cause: e }));
    }
    if (processes.length) await waker(lease, revision, processes).catch((e: unknown) => failed(lease, e as Error));
  };
  return {
    send(lease, revision) {
      if (closed) return;
      // A later wake names a later revision, but not always: a record behind the one whose reconcile
      // wrote the lease is older than that write, and a row created again starts its revisions over.
      // Naming the lower one, a worker that had read it took the wake as nothing new (lib/sdk/step.ts)
      // and missed the higher; naming none, every follower reads.
      const before = queued.get(lease);
      queued.set(lease, queued.has(lease) && (before === undefined || revision === undefined || revision < before) ? undefined : revision);
      next();
    },
    async settle(withinMs) {
      if (inFlight || queued.size) await (nap = new Nap(clock, withinMs)).done;
      closed = true;
      const dropped = [...queued.keys()];
      queued.clear();
      return { dropped, unanswered: inFlight };
    },
  };
}

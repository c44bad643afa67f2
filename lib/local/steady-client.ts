/**
 * A client that sends requests at a steady rate to one address (a load balancer in front of the
 * workers, lib/local/haproxy.ts), retries a failed one once, and records every answer: who answered
 * it, with which fencing token, when. What the load-balancer test, benchmark and story judge.
 */
import { request } from 'node:http';
import { systemClock, type Clock } from '../clock.js';

/** One try of a request. */
export interface Attempt {
  /** When it was sent and when its answer (or error) came (epoch ms, this machine's clock). */
  sentAt: number;
  doneAt: number;
  /** The HTTP status; undefined when the connection failed. */
  status?: number;
  /** The worker that answered, from its JSON body; undefined for the load balancer's own answer. */
  identity?: string;
  /** The answering leader's fencing token (200 only). */
  fencingToken?: number;
  error?: string;
}

/** One request: its first try and, when that failed, its one retry. */
export interface RequestRecord {
  first: Attempt;
  retry?: Attempt;
}

/**
 * When the one retry is sent: `retry-after`, after the Retry-After (seconds) of the failed answer
 * (1 s without one); `routed`, as soon as `routed(failed)` says the load balancer routes to someone
 * who may answer it (e.g. someone routed to behind the address, and not the worker that refused
 * `failed`), asked every `pollMs`, giving up after `maxWaitMs`.
 */
export type RetryPolicy = { after: 'retry-after' } | { after: 'routed'; routed: (failed: Attempt) => Promise<boolean>; pollMs: number; maxWaitMs: number };

export const succeeded = (a: Attempt | undefined): boolean => a?.status === 200;
/** The try that answered the request, if one did. */
export const answer = (r: RequestRecord): Attempt | undefined => (succeeded(r.first) ? r.first : succeeded(r.retry) ? r.retry : undefined);

export interface SteadyClientOptions {
  /** e.g. `http://127.0.0.1:8080/work`. */
  url: string;
  /** One request every this many ms, whether or not the earlier ones were answered. */
  everyMs: number;
  retry: RetryPolicy;
  /** A try not answered in this long fails. @default 10 s */
  timeoutMs?: number;
  clock?: Clock;
}

/** Sends a request every `everyMs` from start() until stop(); `records` holds the finished ones. */
export class SteadyClient {
  readonly records: RequestRecord[] = [];
  private readonly clock: Clock;
  private readonly stopped = new AbortController();
  private readonly inFlight = new Set<Promise<void>>();
  private loop: Promise<void> | undefined;

  constructor(private readonly o: SteadyClientOptions) {
    this.clock = o.clock ?? systemClock;
  }

  start(): this {
    this.loop ??= this.run();
    return this;
  }

  /** Stops sending, and resolves once every request sent has its answer (and retry). */
  async stop(): Promise<RequestRecord[]> {
    this.stopped.abort();
    await this.loop;
    await Promise.all([...this.inFlight]);
    return this.records;
  }

  private async run(): Promise<void> {
    const t0 = this.clock.monotonic();
    for (let k = 0; !this.stopped.signal.aborted; k++) {
      await this.clock.sleep(t0 + k * this.o.everyMs - this.clock.monotonic(), this.stopped.signal);
      if (this.stopped.signal.aborted) break;
      const p = this.one().then((r) => void this.records.push(r));
      this.inFlight.add(p);
      void p.finally(() => this.inFlight.delete(p));
    }
  }

  private async one(): Promise<RequestRecord> {
    const first = await this.attempt();
    if (succeeded(first.attempt)) return { first: first.attempt };
    const p = this.o.retry;
    if (p.after === 'retry-after') await this.clock.sleep(first.retryAfterMs ?? 1_000);
    else {
      const end = this.clock.monotonic() + p.maxWaitMs;
      while (!(await p.routed(first.attempt)) && this.clock.monotonic() < end) await this.clock.sleep(p.pollMs);
    }
    return { first: first.attempt, retry: (await this.attempt()).attempt };
  }

  private attempt(): Promise<{ attempt: Attempt; retryAfterMs?: number }> {
    const sentAt = this.clock.now();
    return new Promise((resolve) => {
      const req = request(this.o.url, { agent: false, timeout: this.o.timeoutMs ?? 10_000 }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (b: Buffer) => chunks.push(b));
        res.on('error', (e) => resolve({ attempt: { sentAt, doneAt: this.clock.now(), error: e.message } }));
        res.on('end', () => {
          const attempt: Attempt = { sentAt, doneAt: this.clock.now(), status: res.statusCode ?? 0 };
          if (res.headers['content-type']?.startsWith('application/json')) {
            const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { identity?: string; fencingToken?: number };
            if (body.identity !== undefined) attempt.identity = body.identity;
            if (body.fencingToken !== undefined) attempt.fencingToken = body.fencingToken;
          }
          const after = Number(res.headers['retry-after']);
          resolve(Number.isFinite(after) && after >= 0 ? { attempt, retryAfterMs: after * 1000 } : { attempt });
        });
      });
      req.on('timeout', () => req.destroy(new Error(`no answer within ${this.o.timeoutMs ?? 10_000} ms`)));
      req.on('error', (e) => resolve({ attempt: { sentAt, doneAt: this.clock.now(), error: e.message } }));
      req.end();
    });
  }
}

/** What a failover cost the client: from `at` (the SIGTERM or kill -9 of `from`, the leader then). */
export interface FailoverFigures {
  /** Requests sent (from the first record to the last). */
  sent: number;
  /** Requests whose first try failed. */
  failedFirst: number;
  /** Requests whose one retry failed too: lost for a client that retries once. */
  failedAfterRetry: number;
  /** From `at` to the first answer by another worker than `from`; undefined if none came. */
  msToNewLeader: number | undefined;
  /** Who answered first after `from`. */
  newLeader: string | undefined;
  /** Answers of 503 by a worker (not the load balancer): requests routed to one that was not leading. */
  refusedByWorker: number;
}

export function failoverFigures(records: readonly RequestRecord[], at: number, from: string): FailoverFigures {
  const tries = records.flatMap((r) => (r.retry ? [r.first, r.retry] : [r.first]));
  const next = tries
    .filter((a) => succeeded(a) && a.identity !== from && a.doneAt >= at)
    .sort((a, b) => a.doneAt - b.doneAt)[0];
  return {
    sent: records.length,
    failedFirst: records.filter((r) => !succeeded(r.first)).length,
    failedAfterRetry: records.filter((r) => !answer(r)).length,
    msToNewLeader: next && next.doneAt - at,
    newLeader: next?.identity,
    refusedByWorker: tries.filter((a) => a.status === 503 && a.identity !== undefined).length,
  };
}

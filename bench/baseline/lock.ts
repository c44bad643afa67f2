/**
 * The baseline Conclave is measured against: a plain client-go-style lease lock on DynamoDB, with
 * nothing coordinated. It follows client-go's tools/leaderelection/leaderelection.go:
 *
 * - tryAcquireOrRenew: a leader whose observed term is still valid first updates optimistically
 *   (the fast path); otherwise get the record (create it if absent), and if someone else holds it
 *   and `observedTime + leaseDurationSeconds` has not passed, give up this round; else write a
 *   record naming this holder, conditioned on the version read (client-go: resourceVersion).
 * - observedTime is this process's monotonic time when the record last changed as seen by it:
 *   expiry is judged on the observer's clock, never from another machine's renewTime.
 * - acquire: try at once, then every RetryPeriod jittered by JitterFactor 1.2 (wait.JitterUntil:
 *   a period in [retry, 2.2 × retry)); renew: try every RetryPeriod, and a round that has not
 *   renewed within RenewDeadline ends the leadership (the request in flight is aborted then).
 * - release on cancel: write the record with no holder and a 1 s duration, so the next poll of any
 *   follower acquires at once.
 *
 * Defaults are client-go's: lease 15 s, renew deadline 10 s, retry 2 s. There is no fencing token;
 * `leaseTransitions` is reported in its place.
 */
import { GetItemCommand, PutItemCommand, type DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { marshall, unmarshall } from '@aws-sdk/util-dynamodb';
import * as z from 'zod';
import { monotonicOf, systemClock, type Clock } from '../../lib/clock.js';
import { parse } from '../../lib/schemas/validation.js';
import { isConditionFailed } from '../../lib/stores/errors.js';

/** client-go's JitterFactor for acquisition. */
export const JITTER_FACTOR = 1.2;

/** client-go's LeaderElectionRecord, plus the version that stands in for resourceVersion. */
export const BaselineRecord = z.object({
  name: z.string().min(1),
  holderIdentity: z.string().min(1).optional(),
  leaseDurationSeconds: z.number().int().min(1),
  acquireTime: z.number().int(),
  renewTime: z.number().int(),
  leaseTransitions: z.number().int().min(0),
  version: z.number().int().min(1),
});
export type BaselineRecord = z.infer<typeof BaselineRecord>;

export const BaselineOptions = z
  .object({
    table: z.string().min(3),
    name: z.string().min(1),
    identity: z.string().min(1),
    leaseDurationMs: z.number().int().min(1_000).default(15_000),
    renewDeadlineMs: z.number().int().positive().default(10_000),
    retryPeriodMs: z.number().int().positive().default(2_000),
    releaseOnCancel: z.boolean().default(true),
  })
  .strict()
  .refine((o) => o.retryPeriodMs < o.renewDeadlineMs && o.renewDeadlineMs < o.leaseDurationMs, 'need retryPeriodMs < renewDeadlineMs < leaseDurationMs');
export type BaselineOptionsInput = z.input<typeof BaselineOptions>;

export interface BaselineCallbacks {
  onStartedLeading(signal: AbortSignal, term: { leaseTransitions: number }): void;
  onStoppedLeading?(info: { reason: 'cancelled' | 'renewDeadline'; leaseTransitions: number }): void;
  onNewLeader?(identity: string): void;
}

export interface BaselineDeps {
  client: DynamoDBClient;
  callbacks: BaselineCallbacks;
  clock?: Clock;
  /** For the jitter. @default Math.random */
  random?: () => number;
  onError?: (e: Error) => void;
}

const sleep = (ms: number, signal: AbortSignal) =>
  new Promise<void>((resolve) => {
    if (signal.aborted) return resolve();
    const done = () => {
      clearTimeout(t);
      signal.removeEventListener('abort', done);
      resolve();
    };
    const t = setTimeout(done, ms);
    signal.addEventListener('abort', done, { once: true });
  });

type RecordFields = Omit<BaselineRecord, 'name' | 'version'>;

/** The record's content in a fixed key order: what "the record changed" is judged on (client-go compares raw bytes). */
const canonical = (r: RecordFields): string => JSON.stringify(Object.fromEntries(Object.entries(r).filter(([, v]) => v !== undefined).sort(([a], [b]) => a.localeCompare(b))));

/** One contender for one lock: client-go's LeaderElector over a DynamoDB item. */
export class BaselineElector {
  readonly options: z.output<typeof BaselineOptions>;
  private readonly client: DynamoDBClient;
  private readonly clock: Clock;
  private readonly random: () => number;
  private readonly callbacks: BaselineCallbacks;
  private readonly onError: (e: Error) => void;
  /** The record as last read or written by us, its version, and when it last changed (monotonic). */
  private observed: { record: RecordFields; version: number; raw: string; at: number } | undefined;
  private reportedLeader: string | undefined;

  constructor(options: BaselineOptionsInput, deps: BaselineDeps) {
    this.options = parse(BaselineOptions, options, 'baseline lock options');
    this.client = deps.client;
    this.clock = deps.clock ?? systemClock;
    this.random = deps.random ?? Math.random;
    this.callbacks = deps.callbacks;
    this.onError = deps.onError ?? ((e) => process.emitWarning(e));
  }

  private mono(): number {
    return monotonicOf(this.clock);
  }

  isLeader(): boolean {
    return this.observed?.record.holderIdentity === this.options.identity;
  }

  private isLeaseValid(now: number): boolean {
    return this.observed !== undefined && this.observed.at + this.observed.record.leaseDurationSeconds * 1000 > now;
  }

  /**
   * client-go's Run: acquires, leads until the signal aborts or a renewal round misses the renew
   * deadline, then releases (if configured) and returns. Like client-go, it does not compete again
   * after losing the lease: the process is expected to exit and restart.
   */
  async run(signal: AbortSignal): Promise<void> {
    if (!(await this.acquire(signal))) return;
    const term = new AbortController();
    const leaseTransitions = this.observed!.record.leaseTransitions;
    this.callbacks.onStartedLeading(term.signal, { leaseTransitions });
    const reason = await this.renew(signal);
    term.abort(reason);
    this.callbacks.onStoppedLeading?.({ reason, leaseTransitions });
    if (this.options.releaseOnCancel) await this.release(); // client-go: "if we hold the lease, give it up"
  }

  /** wait.JitterUntil(tryAcquireOrRenew, RetryPeriod, 1.2, sliding): true once acquired, false when cancelled. */
  private async acquire(signal: AbortSignal): Promise<boolean> {
    while (!signal.aborted) {
      if (await this.attempt(undefined)) return true;
      await sleep(this.options.retryPeriodMs * (1 + this.random() * JITTER_FACTOR), signal);
    }
    return false;
  }

  /** wait.Until(PollImmediateUntil(RetryPeriod, tryAcquireOrRenew, RenewDeadline), RetryPeriod). */
  private async renew(signal: AbortSignal): Promise<'cancelled' | 'renewDeadline'> {
    const { retryPeriodMs, renewDeadlineMs } = this.options;
    for (;;) {
      const deadline = AbortSignal.timeout(renewDeadlineMs);
      let renewed = false;
      while (!renewed) {
        if (signal.aborted) return 'cancelled';
        renewed = await this.attempt(deadline);
        if (renewed) break;
        await sleep(retryPeriodMs, AbortSignal.any([signal, deadline]));
        if (deadline.aborted) return 'renewDeadline';
      }
      await sleep(retryPeriodMs, signal);
    }
  }

  private async attempt(deadline: AbortSignal | undefined): Promise<boolean> {
    try {
      return await this.tryAcquireOrRenew(deadline);
    } catch (e) {
      if ((e as Error).name !== 'AbortError' && !deadline?.aborted) this.onError(e as Error);
      return false;
    } finally {
      this.maybeReportTransition();
    }
  }

  private async tryAcquireOrRenew(deadline: AbortSignal | undefined): Promise<boolean> {
    const now = this.clock.now();
    const record: RecordFields = {
      holderIdentity: this.options.identity,
      leaseDurationSeconds: Math.ceil(this.options.leaseDurationMs / 1000),
      renewTime: now,
      acquireTime: now,
      leaseTransitions: 0,
    };

    // 1. Fast path: the leader updates optimistically against the version it last saw.
    if (this.isLeader() && this.isLeaseValid(this.mono())) {
      const o = this.observed!;
      const next = { ...record, acquireTime: o.record.acquireTime, leaseTransitions: o.record.leaseTransitions };
      if (await this.update(next, o.version, deadline)) return true;
    }

    // 2. Get the record, or create it.
    const got = await this.get(deadline);
    if (!got) return this.update(record, 0, deadline);

    // 3. Someone else holds it and its term, by our own clock, has not run out: wait.
    const { version, ...fields } = got;
    const raw = canonical(fields);
    if (raw !== this.observed?.raw) this.observed = { record: fields, version, raw, at: this.mono() };
    else this.observed!.version = version;
    if (fields.holderIdentity && this.isLeaseValid(this.mono()) && !this.isLeader()) return false;

    // 4. Take it (or renew it after the fast path failed).
    const next = this.isLeader()
      ? { ...record, acquireTime: fields.acquireTime, leaseTransitions: fields.leaseTransitions }
      : { ...record, leaseTransitions: fields.leaseTransitions + 1 };
    return this.update(next, version, deadline);
  }

  private async get(deadline: AbortSignal | undefined): Promise<BaselineRecord | undefined> {
    const r = await this.client.send(new GetItemCommand({ TableName: this.options.table, Key: marshall({ name: this.options.name }), ConsistentRead: true }), { abortSignal: deadline });
    return r.Item ? parse(BaselineRecord, unmarshall(r.Item), `baseline lock "${this.options.name}"`) : undefined;
  }

  /** Writes the whole record if the item is still at `version` (0: absent). False when it was not. */
  private async update(fields: RecordFields, version: number, deadline: AbortSignal | undefined): Promise<boolean> {
    const item = { ...fields, name: this.options.name, version: version + 1 };
    try {
      await this.client.send(
        new PutItemCommand({
          TableName: this.options.table,
          Item: marshall(item, { removeUndefinedValues: true }),
          ConditionExpression: version === 0 ? 'attribute_not_exists(#name)' : '#version = :version',
          ExpressionAttributeNames: version === 0 ? { '#name': 'name' } : { '#version': 'version' },
          ...(version === 0 ? {} : { ExpressionAttributeValues: marshall({ ':version': version }) }),
        }),
        { abortSignal: deadline },
      );
    } catch (e) {
      if (isConditionFailed(e)) return false;
      throw e;
    }
    const { version: _, name: __, ...written } = item;
    this.observed = { record: written, version: item.version, raw: canonical(written), at: this.mono() };
    return true;
  }

  /** client-go's release(): no holder, a 1 s term; only if we still hold it. */
  private async release(): Promise<void> {
    const o = this.observed;
    if (!o || !this.isLeader()) return;
    const now = this.clock.now();
    try {
      await this.update({ leaseDurationSeconds: 1, renewTime: now, acquireTime: now, leaseTransitions: o.record.leaseTransitions }, o.version, undefined);
    } catch (e) {
      this.onError(e as Error); // the term simply runs out
    }
  }

  private maybeReportTransition(): void {
    const holder = this.observed?.record.holderIdentity;
    if (!holder || holder === this.reportedLeader) return;
    this.reportedLeader = holder;
    this.callbacks.onNewLeader?.(holder);
  }
}

import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { createHash, randomUUID } from 'node:crypto';
import { hostname as osHostname } from 'node:os';
import * as z from 'zod';
import { every, Nap, systemClock, type Clock, type Timer } from '../clock.js';
import { callBack, errorSink, faultReporter, oneShotFault, retryDelayMs, START_RETRY_MS } from './faults.js';
import { boundedClient, requestBoundMs } from './bounded-client.js';
import { isIdentityExpired } from '../election/vacancy.js';
import { Labels, MAX_LABELS, Name } from '../schemas/common.js';
import { MAX_IDENTITY_LEASE_SECONDS, isSessionComponent, type IdentityLease } from '../schemas/identity.js';
import { COORDINATOR_COMPONENT } from '../schemas/session-partition.js';
import { ValidationError, parse } from '../schemas/validation.js';
import { ConflictError, retryOnConflict } from '../stores/errors.js';
import { base32 } from '../util/base32.js';
import { HeartbeatStore, IdentityStore, type IdentityLook } from '../stores/identity-store.js';
import type { InvalidItem } from '../stores/item-store.js';
import { ClientSchema, ClockSchema, ClockSyncSchema, StartUp, TableWait, TablesSchema, aborted, deepFreeze, everyProblem, fn, IDENTITIES_ONLY, optionErrors, runningTableFault, stampClockFor, tableNotThere, type DeepReadonly } from './options.js';
import { readWhileCreating, tableState } from './table-state.js';
import { sleptUnseen, stampNow, type StampClock } from './server-clock.js';

/** Bytes of sha256 kept in a name: 128 bits, as kube-apiserver keeps (26 base32 characters). */
const HASH_BYTES = 16;
const HASH_CHARS = Math.ceil((HASH_BYTES * 8) / 5);
/** The longest component whose `${component}-${hash}` still fits the 253 characters of a Name. */
const MAX_COMPONENT = 253 - 1 - HASH_CHARS;
/** kube-apiserver's renew interval, the default: also the longest a request waits for its answer (below). */
const DEFAULT_RENEW_INTERVAL_MS = 10_000;
/** How long a heartbeat's request waits for its answer: its renew interval, at most the default's (see the constructor). */
const requestBoundFor = (renewIntervalMs: number): number => requestBoundMs(Math.min(renewIntervalMs, DEFAULT_RENEW_INTERVAL_MS));
/**
 * The shortest lease that outlives one failed renewal: from the last answered renewal's send, the
 * next goes out an interval later and fails (given up after its bound at worst), the retry goes out
 * at the first interval that finds it over (the timer skips one while a renewal is out), and is
 * answered within its bound.
 */
const leastIdentityLeaseSeconds = (renewIntervalMs: number): number => {
  const bound = requestBoundFor(renewIntervalMs);
  return Math.ceil((renewIntervalMs * (2 + Math.floor(bound / renewIntervalMs)) + bound) / 1000);
};
/**
 * The longest renew interval whose least lease fits a day (MAX_IDENTITY_LEASE_SECONDS): at such an
 * interval a request's bound (the default's) is shorter than the interval, so the least lease is
 * two intervals and the bound.
 */
const MAX_RENEW_INTERVAL_MS = Math.floor((MAX_IDENTITY_LEASE_SECONDS * 1000 - requestBoundFor(DEFAULT_RENEW_INTERVAL_MS)) / 2);
/** The TTL backstop lies this many lease durations after the last renewal; GC normally comes first. */
const TTL_FACTOR = 2;
/** Lost write races in a row before an acquisition gives up (run() rejects, a renewal reports it). */

/** A component name that leaves room for the host hash in the identity lease's name. */
const Component = Name.max(MAX_COMPONENT, `must be at most ${MAX_COMPONENT} characters (the lease name adds "-" and a ${HASH_CHARS}-character hash)`);
/**
 * A heartbeat's component: never one of Conclave's own partitions of the identities table (a scoped
 * grant refuses them too: infra/settings.ts). In the coordinator's, the identities scan never returns
 * the row, so it is never collected; in a session partition, every judge takes it for a session row.
 */
const HeartbeatComponent = Component.refine((c) => !isSessionComponent(c), "is a session partition (conclave-session...), where Conclave's Session keeps its rows: name the component after your process, e.g. report-worker").refine(
  (c) => c !== COORDINATOR_COMPONENT,
  "is the coordinator's own partition (its tick cursor), which the coordinator never collects: name the component after your process, e.g. report-worker",
);
/** What the host calls itself: hashed into the name, and stored in the row and its labels as is. */
const Hostname = z.string().min(1, 'must not be empty').max(253, 'must be at most 253 characters (a DNS name)');


/**
 * The identity lease's name for `component` on `hostname` (KEP-1965): like kube-apiserver's
 * `apiserver-` + base32(sha256(host)[:16]), prefixed by the component instead. Deterministic, so
 * a restart on the same host takes its old row back; hashed, so a long host name never has to be
 * truncated into a collision. A bad component or host name is a ValidationError naming it.
 */
export function identityLeaseName(component: string, hostname: string): string {
  const v = parse(z.object({ component: Component, hostname: Hostname }), { component, hostname }, 'identity lease name');
  const hash = createHash('sha256').update(v.hostname, 'utf8').digest().subarray(0, HASH_BYTES);
  return `${v.component}-${base32(hash)}`;
}

/** How a heartbeat lost its row. */
export type IdentityLost =
  /**
   * The row was gone (collected after a long pause, or deleted by an operator): it was created again.
   * Gone at two renewals in a row, onError is told too, naming the likely cause (a clock behind).
   */
  | { reason: 'gone' }
  /**
   * The row was still this start-up's, but past its lease duration when renewed (a pause longer
   * than the lease, say): listIdentities listed it expired meanwhile, and a reader may have acted on
   * that (collected what the process owned, KEP-1965). The renewal wrote it as a new acquisition
   * (acquireTime reset, as a row created again after `gone`), so readers can tell the process came back.
   */
  | { reason: 'lapsed' }
  /**
   * A newer start-up with the same host and component took the row (KEP-1965: the newest start-up
   * owns the identity). This heartbeat stopped for good and never writes the row again.
   */
  | { reason: 'superseded'; by: string };

/** What one renewal did: `reacquired` is a new acquisition, after the row was gone or had lapsed (onLost says which). */
export type RenewOutcome = 'renewed' | 'reacquired' | 'superseded' | 'stopped';

/** Where a heartbeat is in its life. */
type HeartbeatState = 'idle' | 'running' | 'superseded' | 'stopped';

/** The options of an IdentityLeaseHeartbeat; a bad one is a ValidationError naming the field. */
export const IdentityLeaseHeartbeatOptionsSchema = z
  .strictObject(
    {
      /** The DynamoDB client the row is written with. */
      client: ClientSchema,
      /** Where the tables are: a prefix, or `{ prefix?, identities? }`; the identities table is used. @default 'conclave' */
      tables: TablesSchema,
      /** What kind of process this is, e.g. `report-worker`: the partition listIdentities lists. Not one of Conclave's own (`conclave-session…`, `conclave-coordinator`). */
      component: HeartbeatComponent,
      /** @default os.hostname() */
      hostname: Hostname.prefault(() => osHostname()),
      /** How often renewTime is written (kube-apiserver: 10 s). @default 10000 */
      renewIntervalMs: z
        .number()
        .int('must be whole milliseconds')
        .min(1_000, 'must be >= 1000 ms (milliseconds, not seconds: kube-apiserver\'s 10 s is 10000)')
        .max(MAX_RENEW_INTERVAL_MS, `must be at most ${MAX_RENEW_INTERVAL_MS} ms, so a failed renewal and its retry fit a lease of at most a day`)
        .default(DEFAULT_RENEW_INTERVAL_MS),
      /**
       * How long after its last renewal the row counts as dead (kube-apiserver: 3600 s): long enough
       * for a failed renewal and its retry (at least 40 s at the default interval; a shorter one is
       * refused, naming the least). @default 3600
       */
      leaseDurationSeconds: z.number().int('must be whole seconds').min(1, 'must be >= 1').max(MAX_IDENTITY_LEASE_SECONDS, `must be at most ${MAX_IDENTITY_LEASE_SECONDS} (a day)`).default(3_600),
      /** Extra labels; `component` and `hostname` are always set (and win over the same keys here). */
      labels: Labels.refine((l) => Object.keys(l).length <= MAX_LABELS - 2, `must have at most ${MAX_LABELS - 2} labels (component and hostname are added)`).optional(),
      /**
       * Delete the row when run() ends. `false` leaves it for the next start-up on this host to take
       * back, as after a crash (it expires after leaseDurationSeconds otherwise). @default true
       */
      releaseOnCancel: z.boolean().default(true),
      /** The row was lost (gone, lapsed or superseded); see IdentityLost. @default a process warning */
      onLost: fn<(lost: IdentityLost) => void>().optional(),
      /** A renewal failed for another reason (retried at the next interval), or the row could not be deleted; told once, too, when the start-up wrote over a row of its host the schema refused, naming what was wrong, and when the row was gone at two renewals in a row, naming the likely cause. @default a process warning */
      onError: fn<(error: Error) => void>().optional(),
      /**
       * Where row times come from: `server` (DynamoDB's clock, from its responses' Date header,
       * carried on this machine's monotonic clock: the wall clock may be off or step), or `none`
       * (this machine's wall clock, which must then be within the coordinator's clockSkewMs).
       * @default 'server'
       */
      clockSync: ClockSyncSchema,
      /** Test hook: this machine's clock (wall and monotonic). @default systemClock */
      clock: ClockSchema.default(systemClock),
      /** Test hook: the per-start-up part of holderIdentity. @default crypto.randomUUID */
      newId: fn<() => string>('a function returning a unique id').default(() => randomUUID),
    },
    { error: optionErrors('IdentityLeaseHeartbeat', 'client and component', { table: 'name the tables with `tables` (a prefix, or { identities })' }) },
  )
  .superRefine((o, ctx) => {
    if (!everyProblem.valid(ctx)('renewIntervalMs', 'leaseDurationSeconds')) return; // a bad one is reported as itself
    const least = leastIdentityLeaseSeconds(o.renewIntervalMs);
    if (o.leaseDurationSeconds < least) {
      ctx.addIssue({
        code: 'custom',
        path: ['leaseDurationSeconds'],
        message: `must be at least ${least} s with renewIntervalMs ${o.renewIntervalMs}, so a renewal that fails (given up after ${requestBoundFor(o.renewIntervalMs)} ms) is tried again at a later interval and answered before the row expires: raise leaseDurationSeconds or shorten renewIntervalMs`,
      });
    }
  }, { when: everyProblem.when });
/** The options of an IdentityLeaseHeartbeat as written. */
export type IdentityLeaseHeartbeatOptions = z.input<typeof IdentityLeaseHeartbeatOptionsSchema>;
/** An IdentityLeaseHeartbeat's options as resolved (defaults applied, tables named), read-only; the client and callbacks are not among them. */
export type ResolvedIdentityLeaseHeartbeatOptions = DeepReadonly<Omit<z.output<typeof IdentityLeaseHeartbeatOptionsSchema>, 'client' | 'clock' | 'newId' | 'onLost' | 'onError'>>;

/** Connection failures before anything was sent. */
const NEVER_SENT = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN']);
/**
 * Whether a failed write may still land: no answer (abandoned, a connection that failed on the way)
 * or DynamoDB's own failure. A refusal (4xx, a lost condition), a row refused before sending or a
 * connection never made never does.
 */
const unanswered = (e: unknown): boolean => {
  if (e instanceof ConflictError || e instanceof ValidationError) return false;
  const x = e as { $fault?: unknown; code?: unknown } | undefined;
  return x?.$fault !== 'client' && !(typeof x?.code === 'string' && NEVER_SENT.has(x.code));
};

/**
 * A renewal of the holder's row stamped `now`: never over a later stamp (a renewal abandoned
 * unanswered that lands after the next one would move the row's time back), nor over one stamped
 * before `liveFrom` (the row has lapsed: listed expired, it is acquired anew instead). A stamp that
 * is no number (an operator's edit) is written over: it compares with none, and the row would stay
 * unreadable. Only ever the holder's own row.
 */
const renewalCondition = (holder: string, now: number, liveFrom: number) => ({
  expression: '#holder = :holder AND (NOT attribute_type(#stamp, :number) OR (#stamp < :stampNow AND #stamp >= :liveFrom))',
  names: { '#holder': 'holderIdentity', '#stamp': 'renewTime' },
  values: { ':holder': holder, ':number': 'N', ':stampNow': now, ':liveFrom': liveFrom },
});

/**
 * The earliest DynamoDB's time may be when `time` says `now` (the estimate less its error; less a
 * jump not yet confirmed): expiry is judged there, late rather than early (KEP-1965), by
 * listIdentities and by a heartbeat judging whether its own row lapsed.
 */
const earliest = (time: StampClock, now: number): number => {
  const known = time.check(Infinity);
  return now - (known.ok || known.reason === 'uncertain' ? known.errorMs : known.reason === 'jumped' ? Math.abs(known.jumpMs) : 0);
};

/** Acquisitions of the row in a row that found it gone before onError is told the likely cause (a clock behind). */
const GONE_TOLD_AT = 2;

/**
 * A process heartbeat (KEP-1965): one row per host and component in the identities table, which
 * the process renews while it lives, so others can list which processes are alive. The row's name
 * is derived from host and component (a restart takes the same row back); holderIdentity is
 * `${name}_${uuid}`, new at every start-up. Expired rows are collected by the coordinator's
 * `reconcileAll`; `expiresAt` (2 lease durations) is the TTL backstop. `run(signal)` keeps the
 * heartbeat until the signal aborts, as LeaderElector and LeaseCandidate do.
 *
 * Two live processes with the same host and component share the row: the newest start-up owns
 * it, and the older one, finding another holder at its next renewal (in a row it can read or not),
 * reports `superseded` and stops for good. A row that is simply gone is created again; one renewed
 * past its lease duration (listed expired meanwhile) is acquired anew, `lapsed`. Neither can flap.
 */
export class IdentityLeaseHeartbeat {
  /** The options as resolved: defaults applied, table names resolved. Frozen. */
  readonly options: ResolvedIdentityLeaseHeartbeatOptions;
  /**
   * Resolves with the row as first written by run(); rejects if run() failed before that (or its
   * signal aborted first). Pending until run() is called.
   */
  readonly ready: Promise<IdentityLease>;
  /** Its requests (bounded): run() looks first whether they can ever be sent (a region, an endpoint with a host). */
  private readonly client: DynamoDBClient;
  private readonly store: HeartbeatStore;
  /** What the row's times are read from (clockSync); durations use its monotonic clock. */
  private readonly clock: StampClock;
  private readonly leaseName: string;
  private readonly holder: string;
  private readonly onLost: (lost: IdentityLost) => void;
  private readonly onError: (error: Error) => void;
  /** onError as given (errorSink): for what is no fault of DynamoDB's (the onLost callback failing). */
  private readonly told: (error: Error) => void;
  private readonly startUp: StartUp<IdentityLease>;
  private status: HeartbeatState = 'idle';
  /** Monotonic send time of the last write of the row that was answered (its creation or a renewal). */
  private writtenAt: number | undefined;
  /** acquireTime of the row as this start-up last wrote it whole: each renewal writes it again. */
  private acquiredAt: number | undefined;
  /** Renewals in a row that found the row gone (one that finds it, renewed or lapsed, starts the count again). */
  private goneInARow = 0;
  private timer: Timer | undefined;
  /** Unsubscribes the renewal at a sleep DynamoDB's answers show (set with the timer). */
  private unsleep: (() => void) | undefined;
  private ticking = false;
  /** How long each request waits for its answer (bounded-client.ts). */
  private readonly boundMs: number;
  /**
   * Monotonic time until which a write of the row that went unanswered (abandoned at its bound, or
   * failed on the way) may still land: stop() reads the row for the last time after it.
   */
  private landsBy: number | undefined;
  /** Every read-then-write runs here, one at a time: a renewal never races its own stop. */
  private queue: Promise<unknown> = Promise.resolve();

  /** Validates and resolves `options`; nothing is written until run(). @throws ValidationError naming each bad option */
  constructor(options: IdentityLeaseHeartbeatOptions) {
    const o = parse(IdentityLeaseHeartbeatOptionsSchema, options, 'IdentityLeaseHeartbeat options');
    const { client, clock, newId, onLost, onError, ...data } = o;
    this.options = deepFreeze(data);
    // its reads and writes give up after a renew interval: one that never answers must not stop the heartbeat (bounded-client.ts);
    // at most the default's, as a healthy DynamoDB answers in milliseconds: with an interval of hours, a
    // renewal that is never answered would otherwise hold stop() (which waits for it, then reads) for hours
    this.boundMs = requestBoundFor(data.renewIntervalMs);
    const requests = boundedClient(client, clock ?? systemClock, this.boundMs);
    this.client = requests;
    this.store = new HeartbeatStore(requests, this.options.tables.identities);
    this.clock = stampClockFor(data.clockSync, client, clock);
    this.leaseName = identityLeaseName(this.options.component, this.options.hostname);
    this.holder = `${this.leaseName}_${newId()}`;
    this.onLost = onLost ?? ((l) => process.emitWarning(`identity lease ${this.leaseName}: ${lostText(l)}`, { code: 'CONCLAVE_IDENTITY_LOST' }));
    // each fault named (DynamoDBUnreachableError, DynamoDBRefusedError), as an elector's are
    this.told = errorSink(onError, `identity lease ${this.leaseName}`, clock ?? systemClock);
    this.onError = faultReporter(this.told, `identity lease ${this.leaseName}`, client, runningTableFault(`identity lease ${this.leaseName}`, this.options.tables, IDENTITIES_ONLY));
    // a missing table is looked at (DescribeTable) before the start-up ends: one still being created is waited for
    this.startUp = new StartUp(`identity lease ${this.leaseName}`, this.options.tables, { state: tableState(requests), clock: clock ?? systemClock }, IDENTITIES_ONLY);
    this.ready = this.startUp.ready;
  }

  /** The row's name (sort key), the same for every start-up on this host. */
  get name(): string {
    return this.leaseName;
  }
  /** holderIdentity: unique to this start-up. */
  get identity(): string {
    return this.holder;
  }
  /** What kind of process this is: the row's partition. */
  get component(): string {
    return this.options.component;
  }
  /** The host, as hashed into the row's name. */
  get hostname(): string {
    return this.options.hostname;
  }
  /**
   * Whether others see this process alive now: run() keeps the row (written, and not taken by a
   * newer start-up on this host) and its last answered write was sent less than
   * leaseDurationSeconds ago, so listIdentities counts it live (judged on the monotonic clock when
   * asked). False before run() has written the row, once superseded (for good: onLost said so),
   * after run() ends, and while renewals have failed for a whole lease duration. False, too, after
   * a sleep of the machine that the monotonic clock did not count (clockSync 'server': the clock
   * since boot shows it), until DynamoDB answers again: asked then, it renews at once.
   */
  healthy(): boolean {
    if (this.status !== 'running') return false;
    if (sleptUnseen(this.clock)) {
      this.tick(); // the row may have expired while the machine slept: its renewal's answer tells
      return false;
    }
    return this.writtenAt !== undefined && this.clock.monotonic() - this.writtenAt < this.options.leaseDurationSeconds * 1000;
  }

  /**
   * Keeps the heartbeat until `signal` aborts. First creates the row, or takes it back from an
   * earlier start-up on this host (whoever holds it: this start-up is the newest; a row the schema
   * refuses is written over whole, and onError told once what was wrong with it); a lost race is
   * read again and retried. Then renews it every renewIntervalMs. Once the signal aborts, stops
   * renewing, deletes the row if it is still this start-up's (unless releaseOnCancel is false)
   * and resolves; when a write of the row went unanswered, it first waits a request bound after
   * that write was abandoned, so a write DynamoDB took up lands before the row is read for the last
   * time, not after run() resolved. A superseded heartbeat writes nothing more and waits for the signal too.
   * A fault it can outlive before the first write (DynamoDB unreachable, throttled or denied) is
   * reported to onError and tried again with backoff; it rejects only for what can never succeed, a
   * client that can never send (no region, an endpoint that is not a URL or has no host) or a
   * TableNotFoundError (`ready` rejects with it, or with the signal's reason if it aborts first). A
   * failed deletion is reported to onError (the row expires). Once per instance: a new start-up is a new IdentityLeaseHeartbeat.
   */
  async run(signal: AbortSignal): Promise<void> {
    this.startUp.claim('IdentityLeaseHeartbeat');
    if (signal.aborted) {
      this.status = 'stopped';
      return this.startUp.failed(signal.reason);
    }
    await this.startUp.checkClient(this.client, this.clock, signal).catch((e: unknown) => {
      this.status = 'stopped';
      throw e;
    });
    let row: IdentityLease | undefined;
    for (let failures = 1; !row; failures++) {
      // when this try goes out: the backoff after it fails counts from here (a try left unanswered waited its bound already)
      const triedAt = this.clock.monotonic();
      try {
        row = await this.startRenewing(signal);
      } catch (e) {
        if (signal.aborted && e === signal.reason) {
          // its read abandoned by the stop (a lookup of DynamoDB's name that takes long, say): nothing of it was written
          this.status = 'stopped';
          return this.startUp.failed(signal.reason);
        }
        // only what can never succeed ends run() (a table that does not exist); a fault it can
        // outlive (unreachable, denied, throttled) is reported and tried again with backoff
        if (await this.startUp.cannotStart(e)) {
          this.status = 'stopped';
          throw this.startUp.fail(e);
        }
        this.report(e);
        await new Nap(this.clock, Math.max(0, triedAt + retryDelayMs(failures, START_RETRY_MS, this.clock.random()) - this.clock.monotonic()), signal).done;
        if (signal.aborted) {
          this.status = 'stopped';
          try {
            await this.serial(() => this.releaseUnanswered());
          } catch (e) {
            this.report(e);
          }
          return this.startUp.failed(signal.reason);
        }
      }
    }
    this.startUp.started(row);
    await aborted(signal);
    try {
      await this.stopRenewing();
    } catch (e) {
      this.report(e);
    }
  }

  /**
   * One renewal, awaited (the timer does the same, reporting failures to onError instead): renewTime
   * and expiresAt move if the row is still this start-up's. A row that is gone is created again
   * (onLost `gone`, `reacquired`); one still this start-up's but past its lease duration (listed
   * expired) is written as a new acquisition, acquireTime reset (onLost `lapsed`, `reacquired`); a
   * row another start-up holds ends this heartbeat (onLost `superseded`), whether or not this
   * reader can read the rest of it (a newer SDK's row). Outside run() it writes nothing (`stopped`).
   */
  renew(): Promise<RenewOutcome> {
    return this.serial(() => this.renewOnce());
  }

  private startRenewing(signal: AbortSignal): Promise<IdentityLease> {
    return this.serial(async () => {
      const acquired = await this.acquire(true, undefined, signal);
      if ('supersededBy' in acquired) throw new Error('unreachable: a take-over is never superseded');
      const written = acquired.row;
      this.status = 'running';
      this.timer = every(this.clock, this.options.renewIntervalMs, () => this.tick(), { background: true }); // a heartbeat never keeps a process alive
      // a sleep any answer of this client shows: the row may have expired meanwhile, renewed at once
      this.unsleep = this.clock.onSleep(() => this.tick());
      return written;
    });
  }

  /** Stops renewing and deletes the row if it is still this start-up's (conditioned on the revision read), unless releaseOnCancel is false. */
  private async stopRenewing(): Promise<void> {
    this.clearTimer();
    await this.serial(async () => {
      this.clearTimer();
      if (this.status !== 'running') return; // superseded (the row is not ours)
      this.status = 'stopped';
      if (!this.options.releaseOnCancel) return;
      await this.landed();
      await this.release();
    });
  }

  /** Before run() wrote the row: deletes one a creation left that was never answered, once it can no longer land (unless releaseOnCancel is false). */
  private async releaseUnanswered(): Promise<void> {
    if (this.landsBy === undefined || !this.options.releaseOnCancel) return;
    await this.landed();
    await this.release();
  }

  /**
   * Waits until a write of the row left unanswered has landed, if it ever does: its request is
   * abandoned after its bound, and what DynamoDB took up by then is taken to land within a bound
   * more. A row written after stop() read it last would be a stopped start-up's, counted live.
   */
  private async landed(): Promise<void> {
    const left = (this.landsBy ?? 0) - this.clock.monotonic();
    if (left > 0) await new Nap(this.clock, left).done;
  }

  private serial<T>(work: () => Promise<T>): Promise<T> {
    const run = this.queue.then(work);
    this.queue = run.then(
      () => undefined,
      () => undefined, // the caller of `work` gets its error through `run`; the queue goes on
    );
    return run;
  }

  private tick(): void {
    if (this.ticking) return; // the previous renewal is still out: the next interval tries again
    this.ticking = true;
    void this.renew()
      .catch((e: unknown) => this.report(e))
      .finally(() => {
        this.ticking = false;
      });
  }

  private async renewOnce(): Promise<RenewOutcome> {
    if (this.status === 'superseded') return 'superseded';
    if (this.status !== 'running') return 'stopped';
    const now = await this.stampNow();
    const sentAt = this.clock.monotonic();
    // every attribute this start-up writes, not renewTime alone: one left malformed by someone else
    // (an operator's edit) is written whole again here, rather than renewed, unreadable, for ever
    if (await this.store.touch({ component: this.options.component, name: this.leaseName }, this.rowFields(this.acquiredAt ?? now, now), renewalCondition(this.holder, now, this.liveFrom(now)))) {
      this.writtenAt = sentAt;
      this.goneInARow = 0;
      return 'renewed';
    }
    // Lost the condition: the row is gone, another start-up holds it, or it is ours but lapsed. Read which
    // (looked at: another start-up's row this reader cannot parse, a newer SDK's, supersedes it all the same).
    const written = await this.acquire(false, await this.store.look(this.options.component, this.leaseName));
    if ('supersededBy' in written) {
      this.status = 'superseded';
      this.clearTimer();
      this.lost({ reason: 'superseded', by: written.supersededBy });
      return 'superseded';
    }
    // judged by the row as last read (a race lost to the coordinator's collection reads it again, gone)
    if (written.anew === 'gone') {
      this.lost({ reason: 'gone' });
      if (++this.goneInARow === GONE_TOLD_AT) this.told(new Error(this.goneAgainText()));
      return 'reacquired';
    }
    this.goneInARow = 0;
    if (!written.anew) return 'renewed'; // it was ours after all (written meanwhile by this start-up): renewed now
    this.lost({ reason: 'lapsed' });
    return 'reacquired';
  }

  /**
   * The oldest stamp a row of this start-up's may carry and still be renewed as it is: one older was
   * listed expired by the time `now` (as listIdentities judges, at the earliest DynamoDB's time may be).
   */
  private liveFrom(now: number): number {
    return earliest(this.clock, now) - this.options.leaseDurationSeconds * 1000;
  }

  /** What onError is told when the row was gone at GONE_TOLD_AT renewals in a row: what most likely deletes it. */
  private goneAgainText(): string {
    const why =
      this.options.clockSync === 'none'
        ? `most likely this machine's clock is behind by more than the lease duration (${this.options.leaseDurationSeconds} s): with clockSync 'none' the row is stamped with it, so the coordinator finds it expired as soon as it is written and collects it. Check this machine's clock (NTP), or use clockSync 'server' (the default: stamps by DynamoDB's clock)`
        : `the row is stamped by DynamoDB's clock (clockSync 'server'), so most likely something else deletes it (an operator, a tool), or the coordinator's clock is ahead by more than the lease duration (${this.options.leaseDurationSeconds} s): check what deletes it, and the coordinator's clock`;
    return `identity lease ${this.leaseName}: the row was gone at ${this.goneInARow} renewals in a row, each time created again (onLost 'gone'), and listed live in between at best for moments: ${why}`;
  }

  /**
   * Writes the row as this start-up's: a new acquisition (acquireTime = now) unless it already is
   * ours and has not lapsed; `anew` says why it was, where the row was gone or ours but lapsed (past
   * its lease duration, so listed expired).
   * Without `takeOver`, a row another start-up holds is left alone and reported instead, whether the
   * schema reads it or not (its holderIdentity alone tells), and one of this start-up's (or of no
   * start-up) the schema refuses is its ValidationError; with it, one the schema refuses is written
   * over whole (replaceRefused). `signal` abandons its read.
   */
  private async acquire(takeOver: boolean, first?: IdentityLook, signal?: AbortSignal): Promise<{ row: IdentityLease; anew?: 'gone' | 'lapsed' } | { supersededBy: string }> {
    return retryOnConflict(async (attempt) => {
      const look = attempt === 1 && first ? first : await this.store.look(this.options.component, this.leaseName, true, signal);
      if ('refused' in look) {
        // a renewal leaves a row it cannot read to whoever holds it (a newer start-up, which writes it whole at its next
        // renewal; a newer SDK's, minReader above this one's): another start-up's supersedes this one, as a row it reads
        const held = look.refused.row['holderIdentity'];
        if (!takeOver && typeof held === 'string' && held !== this.holder) return { supersededBy: held };
        if (!takeOver) throw look.refused.invalid.error;
        return { row: await this.replaceRefused(look.refused, signal) };
      }
      const read = look.read;
      const ours = read.item?.holderIdentity === this.holder;
      if (read.item && !ours && !takeOver) return { supersededBy: read.item.holderIdentity };
      const now = await this.stampNow(signal);
      const sentAt = this.clock.monotonic();
      if (ours && read.item!.renewTime >= now) {
        // renewed already at this stamp or later (a write of this start-up's that landed meanwhile, or
        // one stamped before this machine's clock stepped back): never moved back. The row lives at
        // least a lease duration from now, so it counts as renewed now (healthy() went false while it lived)
        this.acquiredAt = read.item!.acquireTime;
        this.writtenAt = sentAt;
        return { row: read.item! };
      }
      // ours, but listed expired by now (as listIdentities judges): readers may have acted on its absence, so a new acquisition
      const lapsed = ours && !isIdentityLive(read.item!, earliest(this.clock, now));
      const row = await this.written(sentAt, () => this.store.write(read, { set: this.rowFields(ours && !lapsed ? read.item!.acquireTime : now, now) }));
      return read.item === undefined ? { row, anew: 'gone' } : lapsed ? { row, anew: 'lapsed' } : { row };
    });
  }

  /**
   * A take-over of a row the schema refuses (an operator's edit, another writer's row, left by an
   * earlier start-up on this host): the newest start-up owns the name (KEP-1965), so the row is
   * written over whole, if it is still as read (a concurrent writer's row is read again instead), and
   * onError is told once what was replaced. Reading it through the schema instead threw at every
   * try, and nothing was written until the coordinator collected the old row, an hour on.
   */
  private async replaceRefused(refused: { invalid: InvalidItem; row: Record<string, unknown> }, signal?: AbortSignal): Promise<IdentityLease> {
    const now = await this.stampNow(signal);
    const sentAt = this.clock.monotonic();
    const written = await this.written(sentAt, () => this.store.replaceRefused({ component: this.options.component, name: this.leaseName }, refused.row, this.rowFields(now, now)));
    const error = refused.invalid.error;
    const held = refused.row['holderIdentity'];
    const what = error.issues.map((i) => `${i.field}: ${i.message}`).join('; ');
    this.told(
      new Error(
        `identity lease ${this.leaseName}: replaced the row of this host and component${typeof held === 'string' ? ` (held by ${JSON.stringify(held)})` : ''}, which the schema refused (${what}${error.count > error.issues.length ? `; and ${error.count - error.issues.length} more` : ''}), with this start-up's whole row (the newest start-up on a host owns it): nothing to do, unless something other than a heartbeat (an operator's edit, another tool) wrote it: mend that writer`,
        { cause: error },
      ),
    );
    return written;
  }

  /** Sends `write`, sent at monotonic `sentAt`, and records it as this start-up's last answered write of the row. */
  private async written(sentAt: number, write: () => Promise<IdentityLease>): Promise<IdentityLease> {
    let written: IdentityLease;
    try {
      written = await write();
    } catch (e) {
      // it may still land (a creation, even after stop() found the row gone): stop() waits it out before its last read
      if (unanswered(e)) this.landsBy = Math.max(this.landsBy ?? 0, sentAt + 2 * this.boundMs);
      throw e;
    }
    this.writtenAt = sentAt;
    this.acquiredAt = written.acquireTime;
    return written;
  }

  /** DynamoDB's time to stamp the row with (stampNow), its probe a read of the row (only its answer's time is wanted: a row the schema refuses must not fail it); `signal` abandons that read. */
  private stampNow(signal?: AbortSignal): Promise<number> {
    return stampNow(this.clock, () => this.store.look(this.options.component, this.leaseName, true, signal), `identity lease ${this.leaseName}`);
  }

  /** The row as this start-up writes it, renewed at `now`. */
  private rowFields(acquireTime: number, now: number) {
    return {
      holderIdentity: this.holder,
      hostname: this.options.hostname,
      leaseDurationSeconds: this.options.leaseDurationSeconds,
      acquireTime,
      renewTime: now,
      labels: { ...this.options.labels, component: this.options.component, hostname: this.options.hostname },
      expiresAt: this.expiresAt(now),
    };
  }

  /** Deletes the row if this start-up still holds it; a newer start-up's row is left alone. */
  private async release(): Promise<void> {
    await retryOnConflict(async () => {
      const read = await this.store.read(this.options.component, this.leaseName);
      if (read.item?.holderIdentity === this.holder) await this.store.delete(read); // else gone, or a newer start-up's
    });
  }

  private expiresAt(now: number): number {
    return Math.ceil((now + TTL_FACTOR * this.options.leaseDurationSeconds * 1000) / 1000);
  }

  private clearTimer(): void {
    this.timer?.cancel();
    this.timer = undefined;
    this.unsleep?.();
    this.unsleep = undefined;
  }

  private lost(l: IdentityLost): void {
    // a throwing callback must not turn a handled loss into a failed renewal; what it threw is told as its own, never as a DynamoDB fault
    callBack(
      () => this.onLost(l),
      (e) => this.told(new Error(`identity lease ${this.leaseName}: onLost (${l.reason}) threw: ${e instanceof Error ? `${e.name}: ${e.message}` : String(e)}; the heartbeat goes on as if it had returned`, { cause: e })),
    );
  }

  private report(e: unknown): void {
    this.onError(e instanceof Error ? e : new Error(String(e)));
  }
}

/** What the default onLost warns. */
const lostText = (l: IdentityLost): string => {
  switch (l.reason) {
    case 'gone':
      return 'the row was gone and was created again';
    case 'lapsed':
      return 'the row was renewed past its lease duration (listed expired meanwhile: a pause longer than the lease?) and was acquired anew, acquireTime reset';
    case 'superseded':
      return `taken by ${l.by}, a newer start-up; this one stopped`;
  }
};

/** Live: not expired by the coordinator's rule (strict, like Kubernetes': at renewTime + duration still live). */
export const isIdentityLive = (i: IdentityLease, now: number): boolean => !isIdentityExpired(i, now, 0);

/** One component's identity leases, sorted by what can be told of them (listIdentities). */
export interface IdentityListing {
  /** Rows renewed within their lease duration, by name. */
  live: IdentityLease[];
  /** Rows past their duration, not yet collected. */
  expired: IdentityLease[];
  /**
   * Rows that do not match the schema: neither live nor dead as far as anyone can tell. A caller
   * that acts on the absence of an identity (collecting what it owned) should hold back while any
   * are present: late rather than early (KEP-1965).
   */
  invalid: InvalidItem[];
}

/** The options of listIdentities and listLiveIdentities; a bad one is a ValidationError naming the field. */
export const ListIdentitiesOptionsSchema = z.strictObject(
  {
    /** The DynamoDB client the partition is read with. */
    client: ClientSchema,
    /** Where the tables are: a prefix, or `{ prefix?, identities? }`; the identities table is read. @default 'conclave' */
    tables: TablesSchema,
    /** The component whose identity leases are listed: the heartbeats' `component`. */
    component: Component,
    /**
     * The clock expiry is judged by: `server` (DynamoDB's, from the query's own response, as the
     * heartbeats stamp their rows), or `none` (this machine's wall clock, which must then be close
     * to DynamoDB's). @default 'server'
     */
    clockSync: ClockSyncSchema,
    /**
     * Cancels the call: listIdentities rejects with the signal's reason, at once or as it aborts. What
     * bounds its wait for the identities table while it is still being created
     * (`AbortSignal.timeout(ms)`), which is otherwise waited for as long as DynamoDB says it is being made.
     */
    signal: z.custom<AbortSignal>((v) => v instanceof AbortSignal, { error: 'must be an AbortSignal (an AbortController\'s signal, or AbortSignal.timeout(ms))', abort: false }).optional(),
    /** Test hook: this machine's clock (wall and monotonic). @default systemClock */
    clock: ClockSchema.optional(),
  },
  { error: optionErrors('listIdentities', 'client and component', { table: 'name the tables with `tables` (a prefix, or { identities })', now: 'expiry is judged when the query is sent, on the clock clockSync names' }) },
);
/** The options of listIdentities and listLiveIdentities as written. */
export type ListIdentitiesOptions = z.input<typeof ListIdentitiesOptionsSchema>;

/**
 * One consistent Query of the component's partition, sorted into live, expired and unreadable rows.
 * Expiry is judged at the moment the query was sent (on DynamoDB's clock by default, at the earliest
 * its estimate allows): a row that expires while the query is under way still counts as live, late
 * rather than early (KEP-1965).
 * The identities table still being created (CREATING: `cdk deploy` or local mode making it) is
 * waited for, queried again with backoff as a worker's start-up is, until it answers or `signal` aborts.
 * @throws ValidationError naming each bad option
 * @throws DynamoDBUnreachableError naming the call, the component, the endpoint and the partition not read, and to call it again, when DynamoDB cannot be reached or the query is given no answer within its bound (5 s: a connection black-holed once made, say; the timeout its `cause`, `code` `timed out`): a read, nothing of it landed (not retried)
 * @throws DynamoDBRefusedError naming the partition, when the query is throttled past the AWS SDK's own retries (`throttled`), or the role may not read it or DynamoDB refused the credentials (`denied`)
 * @throws TableNotFoundError naming the tables and the `tables` option, when the identities table does not exist or answers "not found" (at once where DescribeTable finds none either; where DescribeTable is refused, after 60 s of tries; where DescribeTable shows it ACTIVE, after one more try, the message saying so: a table deleted and created again under its name, or another endpoint or Region, which no wait mends); the identities table still being created (CREATING) is waited for, queried again with backoff as a worker's start-up is, until it answers or `signal` aborts
 * @throws the `signal` option's reason, when it aborts first
 */
export function listIdentities(options: ListIdentitiesOptions): Promise<IdentityListing> {
  return listing(options, 'listIdentities');
}

/** listIdentities, its missing table told as `call`'s (the function the caller called). */
async function listing(options: ListIdentitiesOptions, call: 'listIdentities' | 'listLiveIdentities'): Promise<IdentityListing> {
  const o = parse(ListIdentitiesOptionsSchema, options, 'listIdentities options');
  const clock = o.clock ?? systemClock;
  const time = stampClockFor(o.clockSync, o.client, clock);
  // each page's request gives up as the SDK's own do: one that never answers must not hang the call (bounded-client.ts)
  const requests = boundedClient(o.client, clock, requestBoundMs(0));
  const store = new IdentityStore(requests, o.tables.identities);
  // not retried: a fault rejects the call, named as getLeader's are; DynamoDB's missing table as it is, looked at below
  const partition = `the partition of component "${o.component}" on the identities table "${o.tables.identities}"`;
  const denied = `${partition}, which this role may not read (Query); grant it Conclave's grantWorker with the component among its components (or allComponents), and check its credentials`;
  const query = async () => {
    const sentAt = time.monotonic();
    const { items, invalid } = await store.query(o.component).catch(async (e: unknown) => {
      throw await oneShotFault(e, call, `component "${o.component}"`, partition, o.client, denied);
    });
    // the send time, on the estimate the answer improved (DynamoDB's Date header)
    return { items, invalid, now: time.now() - (time.monotonic() - sentAt) };
  };
  // DynamoDB answers a table still being made (CREATING) as one not there: looked at (DescribeTable),
  // and waited for while it is made, as getLeader waits; one not there is told as getLeader tells it
  const tables = new TableWait([o.tables.identities], { state: tableState(requests), clock });
  const { items, invalid, now } = await readWhileCreating(query, { tables, clock, signal: o.signal, fail: (e) => tableNotThere(`${call} of component "${o.component}"`, o.tables, e, IDENTITIES_ONLY) });
  const byName = (a: IdentityLease, b: IdentityLease) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0);
  // judged at the earliest DynamoDB's time may have been (the estimate less its error; less a jump
  // not yet confirmed): a row is called expired late rather than early (KEP-1965)
  const at = earliest(time, now);
  return {
    live: items.filter((i) => isIdentityLive(i, at)).sort(byName),
    expired: items.filter((i) => !isIdentityLive(i, at)).sort(byName),
    invalid,
  };
}

/** The component's live identity leases (renewTime + leaseDurationSeconds ≥ now), by name; malformed rows skipped. See listIdentities. */
export async function listLiveIdentities(options: ListIdentitiesOptions): Promise<IdentityLease[]> {
  return (await listing(options, 'listLiveIdentities')).live;
}

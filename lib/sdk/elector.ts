import type { DynamoDBClient, TransactWriteItemsCommandInput, TransactWriteItemsCommandOutput } from '@aws-sdk/client-dynamodb';
import * as z from 'zod';
import { systemClock, uniqueId, type Timer } from '../clock.js';
import { Name } from '../schemas/common.js';
import { nextFencingToken } from '../schemas/fencing-token.js';
import type { Lease } from '../schemas/lease.js';
import { HOLDER_FIELDS, Platform } from '../schemas/platform.js';
import { parse } from '../schemas/validation.js';
import { ConflictError } from '../stores/errors.js';
import { CandidateStore } from '../stores/candidate-store.js';
import { LeaseStore, type Heir, type LeaseRead, type Term } from '../stores/lease-store.js';
import { CandidacyShape, LeaseCandidate, checkCandidacy } from './candidate.js';
import { fencedTransactWrite, FencingError } from './fencing.js';
import { ClientSchema, ClockSchema, ClockSyncSchema, StartUp, TablesSchema, deepFreeze, fn, optionErrors, stampClockFor, type DeepReadonly } from './options.js';
import { decideFollower, isQuiet, isSuccessor, nextReadDelay, RenewalPhase, SESSION_QUIET_LEASES, SETTLING_TERMS } from './follower.js';
import { effectiveLease } from '../election/vacancy.js';
import { SessionReader, SessionSchema, SHARED_READ_MS, type Session, type SessionListener } from './session.js';
import { detectPlatform } from './platform.js';
import { ClockSkewError, type ClockDoubt, type StampClock } from './server-clock.js';
import type { Push, Wake } from './push.js';

/**
 * The callbacks of a LeaderElector (client-go's LeaderCallbacks): what this worker does when it
 * starts and stops leading, and whom it sees lead.
 */
export interface LeaderCallbacks {
  /** Runs when this worker becomes leader; `signal` aborts the moment it must stop acting. */
  onStartedLeading(signal: AbortSignal, term: { fencingToken: number }): void | Promise<void>;
  /** Runs when it stops leading, before the lease is released. */
  onStoppedLeading?(info: { reason: StopReason; fencingToken: number }): void;
  /** Runs whenever a new holder is observed (this worker included). */
  onNewLeader?(identity: string): void;
}

const CALLBACKS = '{ onStartedLeading(signal, term), onStoppedLeading?(info), onNewLeader?(identity) }';
const Callbacks = z.custom<LeaderCallbacks>((v) => {
  if (typeof v !== 'object' || v === null) return false;
  const c = v as Record<string, unknown>;
  return typeof c['onStartedLeading'] === 'function' && ['onStoppedLeading', 'onNewLeader'].every((k) => c[k] === undefined || typeof c[k] === 'function');
}, `must be ${CALLBACKS}, each a function`);

/** The candidacy of a coordinated LeaderElector: a LeaseCandidate's options less its names, tables and client (the elector's). */
export const CandidacySchema = z.strictObject(CandidacyShape, {
  error: optionErrors('candidacy', 'emulationVersion and binaryVersion', { table: 'name the tables with the elector\'s `tables` option' }),
});

/**
 * The options of a LeaderElector, with client-go's defaults; a bad one (or a bad combination) is
 * a ValidationError naming the field and what to do.
 */
export const LeaderElectorOptionsSchema = z
  .strictObject(
    {
      /** The lease to lead. */
      leaseName: Name,
      /** This worker's name: its candidate name and, while it leads, the lease's holderIdentity. */
      identity: Name,
      /** Where the tables are: a prefix, or `{ prefix?, leases?, candidates? }`; the leases and candidates tables are used. @default 'conclave' */
      tables: TablesSchema,
      /** How long a term lasts after a renewal (client-go LeaseDuration). @default 15000 */
      leaseDurationMs: z.number().int().min(1_000, 'must be ≥ 1000 ms (DynamoDB stores whole seconds)').max(86_400_000, 'must be at most 86400000 ms (a day: what a lease row holds)').default(15_000),
      /** A leader that could not renew for this long stops acting (client-go RenewDeadline). @default 10000 */
      renewDeadlineMs: z.number().int().positive().default(10_000),
      /**
       * How often a follower polls while the lease is in flux (vacant, an election, a preemption),
       * and how soon a leader tries again after a renewal failed (client-go RetryPeriod). @default 2000
       */
      retryPeriodMs: z.number().int().positive().default(2_000),
      /**
       * How often a leader renews. client-go renews every retry period; a lease only needs a renewal
       * often enough that a failed one can be retried before the renew deadline, and each renewal
       * is a write. Renewing less often also makes a crash failover faster (the term ends, on average,
       * half an interval sooner after the last renewal). Renewals go out 137 ms sooner than this, so
       * they meet DynamoDB's clock at ever other points of its second (what keeps its Date headers
       * informative). @default renewDeadlineMs − 2 × retryPeriodMs
       * in coordinated mode (6 s with client-go's timings: two more tries before the deadline), but
       * not below retryPeriodMs; retryPeriodMs with `NoCoordination` (client-go's), unless given
       */
      renewIntervalMs: z.number().int().positive().optional(),
      /** Give the lease up when run() is cancelled, so the next leader need not wait for expiry. @default true */
      releaseOnCancel: z.boolean().default(true),
      /**
       * `coordinated`: stand as a candidate (`candidacy`, required) and let the coordinator elect
       * (KEP-4355), with the fallback below. `NoCoordination`: a plain client-go race for the lease,
       * no coordinator and no candidacy. @default 'coordinated'
       */
      mode: z.enum(['coordinated', 'NoCoordination']).default('coordinated'),
      /**
       * Coordinated mode: what this worker stands with (versions, strategies, labels). Required
       * there, refused with `NoCoordination`.
       */
      candidacy: CandidacySchema.optional(),
      /** A coordinated worker acquires a lease vacant this long directly. @default 3 × leaseDurationMs */
      fallbackAfterMs: z.number().int().positive().optional(),
      /**
       * Where this worker runs, written on its candidate row and on the lease while it leads, so that
       * the platform's "task stopped" / "instance stopped" event ends its term at once. `detect`:
       * ECS task metadata, then EC2 IMDSv2, each with a short timeout; `none`: record nothing.
       * @default 'detect'
       */
      platform: z.union([Platform, z.enum(['detect', 'none'])]).default('detect'),
      /** healthy() turns false when a leader's term is expired by more than this (client-go healthz). @default 0 */
      healthToleranceMs: z.number().int().min(0).default(0),
      /** The DynamoDB client the lease and the candidate row are read and written with. */
      client: ClientSchema,
      /** What to do on leading, on stepping down, and on a new leader. */
      callbacks: Callbacks,
      /** Faults that were retried (a failed poll, a failed renewal inside the deadline). @default a process warning */
      onError: fn<(error: Error) => void>().optional(),
      /**
       * Where the times this worker writes (renewals, acquisitions, its candidate row) come from:
       * `server`, DynamoDB's clock from its responses' Date header, carried on this machine's
       * monotonic clock — the wall clock may be off by any amount, or step; `none`, this machine's
       * wall clock, which must then stay within the coordinator's clockSkewMs (1 s). @default 'server'
       */
      clockSync: ClockSyncSchema,
      /**
       * `server`: the most DynamoDB's time may be uncertain (± ms) for this worker to acquire, confirm,
       * renew or acknowledge; beyond it, or right after its measurement jumped, it stays a follower
       * (a clock skew prevention: `stats`, onError). One response bounds it to ±(500 ms + half its
       * round trip); responses at other points of the server's second narrow it to about the round
       * trip. At most half the coordinator's clockSkewMs (1 s), so any two workers' times are
       * within it. @default 500
       */
      maxClockErrorMs: z.number().int().min(1).max(60_000).default(500),
      /**
       * The push path (a PushChannel, shared by every elector of the process): wakes make this worker
       * read the lease the moment it changes — an election's ping, a hand-off, a preemption — and,
       * while they reach it, a follower that is not the designated successor reads rarely (every two
       * lease durations) and a cancelled leader hands over at once. Without it, or while it is down,
       * followers poll as before. Coordinated mode only.
       */
      push: z
        .custom<Push>((v) => typeof v === 'object' && v !== null && ['watch', 'wake'].every((m) => typeof (v as Record<string, unknown>)[m] === 'function') && 'live' in v, 'must be a PushChannel (or another Push: watch(), wake(), live)')
        .optional(),
      /**
       * The process's Session (shared by its electors, like `push`): a lease this worker holds is kept
       * alive by the session's renewals instead of its own, so a process holding many leases writes
       * once per renew interval for all of them. While the session is down the elector renews the
       * lease itself. With the push path live, a session-held lease's followers read the lease only
       * when woken (and every four lease durations), and the session row phase-locked. Coordinated
       * mode only; leaseDurationMs must be at most the session's maxLeaseDurationMs.
       */
      session: SessionSchema.optional(),
      /** Test hook: this machine's clock (wall and monotonic); terms are timed on its monotonic clock. @default systemClock */
      clock: ClockSchema.optional(),
      /** Test hook: how `platform: 'detect'` asks. @default detectPlatform() (lib/sdk/platform.ts) */
      detectPlatform: fn<() => Promise<Platform | undefined>>().optional(),
    },
    {
      error: optionErrors('LeaderElector', 'leaseName, identity, client, callbacks and (coordinated) candidacy', {
        table: 'name the tables with `tables` (a prefix, or { leases, candidates })',
        candidate: 'the candidacy is the `candidacy` option',
      }),
    },
  )
  .superRefine((o, ctx) => {
    if (o.renewDeadlineMs >= o.leaseDurationMs)
      ctx.addIssue({ code: 'custom', path: ['renewDeadlineMs'], message: `must be < leaseDurationMs (${o.leaseDurationMs}) so a leader stops acting before its term can expire` });
    if (o.retryPeriodMs >= o.renewDeadlineMs)
      ctx.addIssue({ code: 'custom', path: ['retryPeriodMs'], message: `must be < renewDeadlineMs (${o.renewDeadlineMs}) so a leader gets more than one try to renew` });
    if (o.renewIntervalMs !== undefined && o.renewIntervalMs + o.retryPeriodMs >= o.renewDeadlineMs)
      ctx.addIssue({
        code: 'custom',
        path: ['renewIntervalMs'],
        message: `must be < renewDeadlineMs − retryPeriodMs (${o.renewDeadlineMs - o.retryPeriodMs}) so a failed renewal is tried again before the renew deadline`,
      });
    if (o.mode === 'coordinated' && !o.candidacy)
      ctx.addIssue({
        code: 'custom',
        path: ['candidacy'],
        message: "is required in mode 'coordinated' (the default): give { emulationVersion, binaryVersion } so the coordinator can elect this worker, or set mode: 'NoCoordination' for a plain race without a coordinator",
      });
    if (o.mode === 'NoCoordination' && o.push)
      ctx.addIssue({ code: 'custom', path: ['push'], message: "must not be given with mode 'NoCoordination': it polls as client-go does. Drop push, or use mode 'coordinated'" });
    if (o.mode === 'NoCoordination' && o.session)
      ctx.addIssue({ code: 'custom', path: ['session'], message: "must not be given with mode 'NoCoordination': it renews as client-go does. Drop session, or use mode 'coordinated'" });
    if (o.session && o.session.options.maxLeaseDurationMs < o.leaseDurationMs)
      ctx.addIssue({
        code: 'custom',
        path: ['session'],
        message: `holds leases of at most ${o.session.options.maxLeaseDurationMs} ms (its maxLeaseDurationMs), and leaseDurationMs is ${o.leaseDurationMs}: raise the session's maxLeaseDurationMs`,
      });
    if (o.session && !o.session.covers(o.leaseName))
      ctx.addIssue({
        code: 'custom',
        path: ['session'],
        message: `serves the leases ${JSON.stringify(o.session.options.leaseNames)} (its leaseNames, the grant's), not '${o.leaseName}': add '${o.leaseName}' to the Session's leaseNames and to grantWorker's, or give this elector no session`,
      });
    // The session's own check makes its renewals and a retry fit in its deadline, so this one also
    // makes them fit in the elector's.
    if (o.session && o.session.options.renewDeadlineMs + o.retryPeriodMs >= o.renewDeadlineMs)
      ctx.addIssue({
        code: 'custom',
        path: ['session'],
        message: `ends at its renewDeadlineMs (${o.session.options.renewDeadlineMs} ms), too late for a leader on it to fall back: it then renews its leases itself, and needs a try and a retry (retryPeriodMs ${o.retryPeriodMs} ms) before its own renewDeadlineMs (${o.renewDeadlineMs} ms) stops the term. Give the session a renewDeadlineMs below ${o.renewDeadlineMs - o.retryPeriodMs}`,
      });
    if (o.mode === 'NoCoordination' && o.candidacy)
      ctx.addIssue({ code: 'custom', path: ['candidacy'], message: "must not be given with mode 'NoCoordination': no coordinator elects there. Drop candidacy, or use mode 'coordinated'" });
    if (o.candidacy) checkCandidacy({ leaseName: o.leaseName, name: o.identity, ...o.candidacy }, ctx, ['candidacy']);
  });

/** The options of a LeaderElector as written. */
export type LeaderElectorOptions = z.input<typeof LeaderElectorOptionsSchema>;
/** A LeaderElector's options as resolved (defaults applied, tables named), read-only; the client and callbacks are not among them. */
export type ResolvedLeaderElectorOptions = DeepReadonly<Omit<z.output<typeof LeaderElectorOptionsSchema>, 'client' | 'callbacks' | 'onError' | 'clock' | 'detectPlatform' | 'push' | 'session'>>;

/**
 * What a LeaderElector knows of time: how often it held back because it could not vouch for the
 * times it would write, and its measurement of DynamoDB's clock.
 */
export interface ElectorStats {
  /** Acquisitions, confirmations, renewals and acks not made, and terms stopped, because DynamoDB's time was not known well enough (or jumped). */
  clockSkewPreventions: number;
  /** Whether the times it writes now are within maxClockErrorMs of DynamoDB's clock (always, with clockSync 'none'). */
  clockSynced: boolean;
  /** How far off they may be (± ms); undefined before the first response. */
  clockErrorMs: number | undefined;
  /** DynamoDB's time minus this machine's wall clock (positive: the wall clock is behind); undefined before the first response. */
  clockOffsetMs: number | undefined;
}

/**
 * Why a leader stopped: run() cancelled, another candidate preferred, the renew deadline passed (or
 * its clock jumped, so the deadline could no longer be judged), or the lease moved on.
 */
export type StopReason = 'cancelled' | 'preempted' | 'renewDeadline' | 'deposed';

/** While DynamoDB's time is not known well enough, the elector polls about this soon (jittered, so responses land at other points of the server's second). */
const CLOCK_RESAMPLE_MS = 500;

/**
 * A leader renews this much sooner than its renew interval: an interval of whole seconds would have
 * every renewal meet DynamoDB's clock at the same point of its second, and the responses' Date
 * headers (whole seconds) would stop narrowing the estimate of that clock (server-clock.ts), for the
 * leader and for the successor reading right behind it. 137 ms steps through the whole second.
 */
export const PHASE_STEP_MS = 137;

/**
 * The renew interval a LeaderElector uses when `renewIntervalMs` is not given: the renew deadline
 * less two retry periods (two more tries before the deadline), not below the retry period;
 * `NoCoordination`, the retry period (client-go's). @internal
 */
export function defaultRenewIntervalMs(o: { mode: 'coordinated' | 'NoCoordination'; renewDeadlineMs: number; retryPeriodMs: number }): number {
  const twoTriesLeft = o.renewDeadlineMs - 2 * o.retryPeriodMs;
  return o.mode === 'NoCoordination' || twoTriesLeft < o.retryPeriodMs ? o.retryPeriodMs : twoTriesLeft;
}

/** How long after a renewal was sent a coordinated leader sends the next: `interval` less PHASE_STEP_MS, unless that falls below the retry period. @internal */
export function renewCadenceMs(interval: number, retryPeriodMs: number): number {
  const stepped = interval - PHASE_STEP_MS;
  return stepped >= retryPeriodMs ? stepped : interval;
}

interface Leading {
  term: Term;
  controller: AbortController;
  /** Monotonic time the last successful renewal was *sent*: the term is safe until then + renewDeadline. */
  renewedAt: number;
  deadline: Timer | undefined;
  /** The last renewal (or the next try) failed: try again after a retry period, not a renew interval. */
  retrying: boolean;
  /** The lease as the last renewal (or the acquisition) returned it: whom the coordinator named successor. */
  lease: Lease | undefined;
  /** Monotonic time the term was won, and how many renewals it has had since. */
  since: number;
  renewals: number;
  /** The session the term is held on (the lease's `session` as last written): its renewals are the term's. */
  session: string | undefined;
}

/**
 * client-go's LeaderElector on a DynamoDB lease, taking part in KEP-4355's coordinated election:
 * a follower polls the lease, judges expiry on its own monotonic clock, acknowledges elections and
 * reports vacancies; a leader renews every retry period, stops acting when it has not renewed for
 * the renew deadline (before the term can expire for anyone else), and yields to preferredHolder
 * by releasing the lease. Built from one options object (LeaderElectorOptions), then `run(signal)`
 * once per start-up.
 */
export class LeaderElector {
  /** The options as resolved: defaults applied, table names resolved. Frozen. */
  readonly options: ResolvedLeaderElectorOptions;
  /** Coordinated mode: this worker's candidacy, which run() runs beside the election. */
  readonly candidate: LeaseCandidate | undefined;
  /** Unique per start-up: written as the lease's holderInstance. */
  readonly instance: string;
  /**
   * Resolves once run() takes part: the platform looked up and, in coordinated mode, the candidate
   * row written. Rejects if run() failed before that (or its signal aborted first). Pending until
   * run() is called.
   */
  readonly ready: Promise<void>;
  private readonly leases: LeaseStore;
  private readonly candidates: CandidateStore;
  private readonly client: DynamoDBClient;
  /** The lease as this follower last read it: what its next read is timed by. */
  private lastRead: Lease | undefined;
  /** When this follower's last read was sent (monotonic): a renewal the next read finds first landed after it. */
  private previousReadSentAt: number | undefined;
  /** Since when (monotonic) the lease has been settling as this follower saw it (nextReadDelay). */
  private settlingSince: number | undefined;
  /** What every time this worker writes is read from (clockSync); durations use its monotonic clock. */
  private readonly time: StampClock;
  private preventions = 0;
  /** An ack was held back for the clock: given as soon as it can be. */
  private unanswered = false;
  /** Since when this worker could not vouch for its times, and whether it said so. */
  private doubt: { since: number; reported: boolean } | undefined;
  private readonly callbacks: LeaderCallbacks;
  private readonly onError: (e: Error) => void;
  private readonly startUp: StartUp<void>;
  private leading: Leading | undefined;
  private observed: { key: string; at: number; revision: number; token: number } | undefined;
  /** The holder's renewal cadence, as this worker saw it: when its designated successor reads. */
  private readonly phase = new RenewalPhase();
  /** Reads since the last new renewal seen that found nothing new past its expected time (nextReadDelay). */
  private misses = 0;
  private vacantSince: number | undefined;
  /** Monotonic time the successor should look again (when the term it watches would run out). */
  private wakeAt: number | undefined;
  private lastLeader: string | undefined;
  private ackedElection: string | undefined;
  private readonly detect: () => Promise<Platform | undefined>;
  private platformFound: Platform | undefined;
  /** Hand the term over at once when cancelled, not at the next renewal slot (withLease: short-lived code). */
  private promptHandOff = false;
  /** The push path, if any (the `push` option). */
  private readonly push: Push | undefined;
  /** A wake came (or the push path went up or down): look at the lease now, not after the sleep. */
  private wakePending = false;
  /** Ends the sleep between steps early (a wake). */
  private nap: AbortController | undefined;
  /** The process's session, if any (the `session` option). */
  private readonly session: Session | undefined;
  /** Where session rows are read (the session's reader, shared by the process's electors, or this elector's own). */
  private readonly sessions: SessionReader;
  /** The lease row as last read (for a lease held on a session, `lastRead` is the view with the session's stamp). */
  private lastRaw: LeaseRead | undefined;
  /** When (monotonic) the lease row itself was last read. */
  private leaseReadAt: number | undefined;
  /** The session row the last view was judged with (a lease held on a session), if any. */
  private viewedSession: { name: string; renewTime: number } | undefined;

  /**
   * The renewal cadence this follower times its reads by: for a lease held on a session, the
   * session's, shared by every elector of the process that follows a lease on it (they then aim at
   * the same moment, and one read serves them all); otherwise its own holder's.
   */
  private get activePhase(): RenewalPhase {
    const l = this.lastRaw?.item;
    return l?.session !== undefined && l.holderIdentity !== undefined && this.viewedSession !== undefined ? this.sessions.phase(l.session) : this.phase;
  }

  /** Validates and resolves `options`; nothing is read or written until run(). @throws ValidationError naming each bad option */
  constructor(options: LeaderElectorOptions) {
    const o = parse(LeaderElectorOptionsSchema, options, `LeaderElector options${typeof options?.identity === 'string' ? ` for "${options.identity}"` : ''}`);
    const { client, callbacks, onError, clock, detectPlatform: detect, push, session, ...data } = o;
    this.client = client;
    this.push = push;
    this.session = session;
    this.time = stampClockFor(data.clockSync, client, clock ?? systemClock);
    this.sessions = session?.reader ?? new SessionReader(client, data.tables.identities, this.time);
    this.callbacks = callbacks;
    this.onError = onError ?? ((e) => process.emitWarning(e));
    this.leases = new LeaseStore(client, data.tables.leases);
    this.candidates = new CandidateStore(client, data.tables.candidates);
    this.instance = `${data.identity}_${uniqueId(clock ?? systemClock)}`;
    this.detect = detect ?? (() => detectPlatform());
    const c = data.candidacy;
    this.candidate = c
      ? new LeaseCandidate({ ...c, leaseName: data.leaseName, name: data.identity, tables: data.tables, client, clock: this.time, clockSync: 'none', instance: this.instance, onError: this.onError })
      : undefined;
    this.options = deepFreeze(data);
    this.startUp = new StartUp(`LeaderElector "${this.options.identity}" of lease "${this.options.leaseName}"`);
    this.ready = this.startUp.ready;
  }

  private mono(): number {
    return this.time.monotonic();
  }

  /** Clock skew preventions so far, and this worker's measurement of DynamoDB's clock. */
  get stats(): ElectorStats {
    const c = this.time.check(this.options.maxClockErrorMs);
    return {
      clockSkewPreventions: this.preventions,
      clockSynced: c.ok,
      clockErrorMs: 'errorMs' in c ? c.errorMs : undefined,
      clockOffsetMs: this.time.wallOffsetMs(),
    };
  }

  /**
   * Whether the times this worker would write now are within maxClockErrorMs of DynamoDB's clock.
   * If not, the caller does not write them: a clock skew prevention, counted, and reported to
   * onError once per spell — at once after a jump, otherwise once it has lasted a lease duration
   * (the first responses of a start-up settle the estimate; that is no fault).
   *
   * `settling`: for an acknowledgement, a doubt that is about to clear does not count. An answer
   * carries no time the coordinator relies on (it judges the copy of its own ping), and a worker
   * that does not answer is written off until it renews on its own — minutes. Such a worker is
   * elected only to confirm the term a poll later, once the next responses have settled the
   * estimate; a worker whose doubt lasts (no Date header, responses too slow) does not answer.
   */
  private clockTrusted(settling = false): boolean {
    const c = this.time.check(this.options.maxClockErrorMs);
    if (c.ok) {
      this.doubt = undefined;
      return true;
    }
    const now = this.mono();
    this.doubt ??= { since: now, reported: false };
    const lasting = now - this.doubt.since >= this.options.leaseDurationMs;
    if (settling && c.reason !== 'noSamples' && !lasting) return true;
    this.preventions++;
    if (!this.doubt.reported && (c.reason === 'jumped' || lasting)) this.reportDoubt(c);
    return false;
  }

  private reportDoubt(d: ClockDoubt): void {
    this.doubt = { since: this.doubt?.since ?? this.mono(), reported: true };
    this.onError(new ClockSkewError(`LeaderElector "${this.options.identity}" of lease "${this.options.leaseName}"`, d, this.options.maxClockErrorMs));
  }

  /**
   * The measurement of DynamoDB's time jumped (a suspended machine's monotonic clock stood still,
   * or the server's clock stepped): the deadline this leader keeps on its monotonic clock, and the
   * renewal it last stamped, can no longer be vouched for. It stops at once.
   */
  private onClockJump(jumpMs: number): void {
    const leading = this.leading;
    if (!leading) return;
    this.preventions++;
    this.stopLeading(leading, 'renewDeadline');
    this.reportDoubt({ reason: 'jumped', jumpMs });
  }

  private get fallbackAfterMs(): number {
    return this.options.fallbackAfterMs ?? 3 * this.options.leaseDurationMs;
  }

  /** How often this worker renews while it leads (the `renewIntervalMs` option, or its default). */
  get renewIntervalMs(): number {
    const o = this.options;
    return o.renewIntervalMs ?? defaultRenewIntervalMs(o);
  }

  /**
   * A cancelled leader hands over (or releases) at once instead of leading on to its next renewal
   * slot: for short-lived code (withLease), whose caller waits for the release. @internal
   */
  static handOffPromptly(e: LeaderElector): void {
    e.promptHandOff = true;
  }

  /**
   * Whether this worker leads now (between onStartedLeading and onStoppedLeading). It judges the
   * renew deadline on the monotonic clock at the moment it is asked: a process that was frozen past
   * its deadline (a Lambda between invocations, SIGSTOP, a long pause) learns here that it stopped
   * leading — the term is stopped and the signal aborted — before any of its timers has run.
   */
  isLeader(): boolean {
    const l = this.leading;
    if (l && this.mono() >= l.renewedAt + this.options.renewDeadlineMs) this.stopLeading(l, 'renewDeadline');
    return this.leading !== undefined;
  }

  /** The fencing token of the current term; undefined when not leading. */
  get fencingToken(): number | undefined {
    return this.leading?.term.fencingToken;
  }

  /** The holder last observed (this worker included). */
  get leader(): string | undefined {
    return this.lastLeader;
  }

  /**
   * client-go's healthz adaptor: a leader whose term, as it last renewed it, is expired by more
   * than the tolerance is unhealthy (it is stuck: its renew deadline should have stopped it).
   */
  healthy(toleranceMs = this.options.healthToleranceMs): boolean {
    if (!this.leading) return true;
    return this.mono() - this.leading.renewedAt <= this.options.leaseDurationMs + toleranceMs;
  }

  /**
   * Runs the user's DynamoDB transaction with one more condition: the lease is still in this
   * worker's term (holder and fencing token). A deposed or paused leader's write fails with a
   * FencingError and writes nothing.
   */
  fencedWrite(input: TransactWriteItemsCommandInput): Promise<TransactWriteItemsCommandOutput> {
    const term = this.isLeader() ? this.leading?.term : undefined;
    if (!term) return Promise.reject(new FencingError(this.options.leaseName, undefined, 'this worker is not leading'));
    return fencedTransactWrite(this.client, { table: this.options.tables.leases, leaseName: this.options.leaseName, term }, input);
  }

  /** Where this worker runs, once run() has looked (undefined: not known, or `platform: 'none'`). */
  get platform(): Platform | undefined {
    return this.platformFound;
  }

  /**
   * Takes part until `signal` aborts: looks up the platform, runs the candidacy (coordinated
   * mode), then polls and leads as the options say; resolves after stepping down, withdrawing the
   * candidacy and releasing the lease (if releaseOnCancel). Rejects only if it cannot start (the
   * candidate row's first write failed; `ready` rejects with it); later faults go to onError.
   * Once per instance: a new start-up is a new LeaderElector.
   */
  async run(signal: AbortSignal): Promise<void> {
    this.startUp.claim('LeaderElector');
    const standing = new AbortController();
    let candidacy: Promise<void> | undefined;
    try {
      const p = this.options.platform;
      this.platformFound = p === 'none' ? undefined : p === 'detect' ? await this.detect() : p;
      if (signal.aborted) return this.startUp.failed(signal.reason);
      if (this.candidate) {
        this.candidate.setPlatform(this.platformFound);
        candidacy = this.candidate.run(standing.signal);
        await Promise.race([this.candidate.ready, candidacy]);
      }
    } catch (e) {
      this.startUp.failed(e);
      throw e;
    }
    this.startUp.started();
    const unsubscribe = this.time.onJump((j) => this.onClockJump(j));
    const unwatch = this.push?.watch(this.options.leaseName, (w) => this.onWake(w));
    const detach = this.session?.attach(this.sessionListener());
    try {
      while (!signal.aborted) {
        const woken = this.wakePending;
        this.wakePending = false;
        try {
          if (this.leading) await (woken ? this.leaderWoken(this.leading) : this.leaderStep());
          else await this.followerStep(woken);
        } catch (e) {
          this.onError(e as Error); // a fault: try again next period; the renew deadline guards a leader
        }
        let poll = this.leading ? this.leaderDelay(this.leading) : this.followerDelay();
        // DynamoDB's time not known well enough yet: the next response, at another point of the
        // server's second, narrows the doubt
        if (!this.time.check(this.options.maxClockErrorMs).ok) poll = Math.min(poll, CLOCK_RESAMPLE_MS * (0.6 + 0.8 * this.time.random()));
        const wake = !this.leading && this.wakeAt !== undefined ? Math.max(0, this.wakeAt - this.mono()) : Infinity;
        if (!this.wakePending) await this.napFor(Math.min(poll, wake), signal);
      }
    } finally {
      unsubscribe();
      unwatch?.();
      if (this.leading && this.options.releaseOnCancel) await this.refreshLease(this.leading);
      const heir = this.leading && this.options.releaseOnCancel ? this.heirOf(this.leading) : undefined;
      // With an heir, lead on until the next renewal would be due — the moment the heir reads — and
      // hand the term over then: no gap in which nobody leads, and no wait for a poll. The candidacy
      // stands until then: withdrawn earlier, the coordinator would re-elect meanwhile.
      if (heir && this.leading) await this.leadUntilHandOff(this.leading);
      const leading = this.leading;
      if (leading) this.stopLeading(leading, 'cancelled');
      const handed = leading !== undefined && heir !== undefined && (await this.handOff(leading, heir));
      // Candidacy goes before the lease is released, so the election the release starts cannot
      // pick this departing worker (it would never confirm, and its term would have to run out).
      standing.abort();
      await candidacy;
      if (leading && this.options.releaseOnCancel && !handed) await this.release(leading.term);
      detach?.(); // after the release: the session outlives every term held on it
    }
  }

  /**
   * What this elector does when its process's session is renewed or ends. A renewal answered while
   * a term held on the session is still inside its renew deadline extends the term from the
   * renewal's send time (as the holder's own renewal would); one answered later extends nothing —
   * the term stops (others may already have seen the session expire). An ended session wakes the
   * leader, which renews its lease itself from then on.
   */
  private sessionListener(): SessionListener {
    return {
      renewed: (name, sentAt, ended) => {
        const l = this.leading;
        if (!l || l.session !== name) return;
        // Someone else ended this term (the coordinator, the platform function, the CLI, an
        // operator's delete): the lease stream's function marked it on the session, wake or no wake.
        const end = ended[this.options.leaseName];
        if (end !== undefined && end >= l.term.fencingToken) {
          this.stopLeading(l, 'deposed');
          this.nap?.abort(); // read the lease now: a successor may be named, an election open
          return;
        }
        if (this.mono() >= l.renewedAt + this.options.renewDeadlineMs) return this.stopLeading(l, 'renewDeadline');
        if (sentAt <= l.renewedAt) return;
        l.renewedAt = sentAt;
        l.renewals++;
        l.retrying = false;
        this.armDeadline(l);
      },
      ended: (name) => {
        // the next step renews the lease itself (leaderStep), at once
        if (this.leading?.session === name) this.nap?.abort();
      },
    };
  }

  /** The session a write of this worker's term should name: the live one's, or null to take a term off a session that is gone (undefined: no session option, name nothing). */
  private sessionToWrite(): string | null | undefined {
    if (!this.session) return undefined;
    return this.session.name ?? null;
  }

  /** Whether `leading` is held on the process's live session (the holder then renews nothing itself). */
  private onLiveSession(leading: Leading): boolean {
    return leading.session !== undefined && this.session?.name === leading.session;
  }

  /**
   * Reads the lease and, if it is held on a session, that session's row: `raw` is the row (what
   * writes are conditioned on), `view` the lease as judged, renewTime the later of the two stamps
   * (effectiveLease). `sentAt`: when the read that could show a new renewal was sent.
   */
  private async readView(consistent: boolean, raw?: LeaseRead): Promise<{ raw: LeaseRead; view: LeaseRead; sentAt: number }> {
    let sentAt = this.mono();
    if (!raw) {
      raw = await this.leases.read(this.options.leaseName, consistent);
      if (!consistent && this.isStale(raw)) raw = await this.leases.read(this.options.leaseName);
      this.leaseReadAt = sentAt;
    }
    const l = raw.item;
    this.viewedSession = undefined;
    if (l?.session === undefined || l.holderIdentity === undefined) return { raw, view: raw, sentAt };
    // A read of the session serves every elector of the process that wants one about then: the
    // successor shares one sent SHARED_READ_MS ago (it times the holder's renewals), others one up to
    // a quarter of the margin between the renew deadline and the term, and anyone one still in flight
    // that was sent within that margin. A judgement from a read sent that much earlier is still sound:
    // any renewal landing after it was sent after the holder's own deadline (see Session).
    const margin = Math.max(SHARED_READ_MS, Math.min(this.options.retryPeriodMs, (this.options.leaseDurationMs - this.options.renewDeadlineMs) / 4));
    const successor = isSuccessor(l, this.options.identity, this.instance);
    let s = await this.sessions.read(l.session, successor ? SHARED_READ_MS : margin, margin);
    // A read sent longer ago than the margin (the process was frozen, or starved, between sending it
    // and now) proves nothing about now: read again before judging by it.
    if (this.mono() - s.sentAt > margin) s = await this.sessions.read(l.session, 0, 0);
    sentAt = s.sentAt;
    this.viewedSession = s.row && { name: s.row.name, renewTime: s.row.renewTime };
    return { raw, view: { ...raw, item: effectiveLease(l, s.row && { name: s.row.name, renewTime: s.row.renewTime }) }, sentAt };
  }

  /** Lease reads of a lease held on a session, while wakes reach this worker: this often (a backstop for a lost wake). */
  private get sessionBackstopMs(): number {
    return SESSION_QUIET_LEASES * this.options.leaseDurationMs;
  }

  /**
   * How often a leader on its live session reads its own lease while wakes reach it. A term end it
   * did not write reaches it through its session (the lease stream's mark, read at each session
   * renewal); this read is for when that function is down too. A lease deleted then is taken by a
   * follower's fallback acquisition no sooner than fallbackAfterMs after the delete, so the holder
   * reads (jittered by up to a tenth) and stops before that: at most (fallbackAfterMs − renew
   * deadline) / 1.1, and never more often than the followers' backstop.
   */
  private get holderBackstopMs(): number {
    const beforeFallback = (this.fallbackAfterMs - this.options.renewDeadlineMs) / 1.1;
    return Math.max(this.options.retryPeriodMs, Math.min(this.sessionBackstopMs, beforeFallback));
  }

  /** Sleeps until the next step is due, or until a wake (or `signal`) ends the sleep. */
  private async napFor(ms: number, signal: AbortSignal): Promise<void> {
    const nap = new AbortController();
    const stop = () => nap.abort();
    signal.addEventListener('abort', stop, { once: true });
    this.nap = nap;
    try {
      await this.time.sleep(ms, nap.signal);
    } finally {
      signal.removeEventListener('abort', stop);
      if (this.nap === nap) this.nap = undefined;
    }
  }

  /**
   * A wake for this lease (or `undefined`: the push path went up or down): look at the lease now.
   * A wake for the very revision this worker has read is nothing new (its own hand-off, say).
   */
  private onWake(w: Wake | undefined): void {
    // (only the very revision read: a deleted and re-created row counts its revisions from 1 again)
    if (w?.revision !== undefined && this.observed !== undefined && w.revision === this.observed.revision) return;
    this.wakePending = true;
    this.nap?.abort();
  }

  /** Whether wakes reach this worker now: quiet followers then read rarely, and a cancelled leader hands over at once. */
  private get pushLive(): boolean {
    return this.push?.live === true;
  }

  /**
   * A leader woken: the lease changed other than by its own renewals. It reads it (consistently):
   * a term that moved on is over now, not at the next renewal; a preemption is answered at once.
   * The renewal cadence is left as it was (the successor reads in step with it).
   */
  private async leaderWoken(leading: Leading, consistent = true): Promise<void> {
    let l = (await this.leases.read(this.options.leaseName, consistent)).item;
    // an eventually consistent copy older than what this term last wrote or saw proves nothing
    if (!consistent && (l === undefined || l.revision < (leading.lease?.revision ?? 0))) l = (await this.leases.read(this.options.leaseName)).item;
    if (this.leading !== leading) return;
    if (l?.holderIdentity !== leading.term.holderIdentity || l.holderInstance !== this.instance || l.fencingToken !== leading.term.fencingToken) {
      this.stopLeading(leading, 'deposed');
      return;
    }
    leading.lease = l;
    await this.afterRenewal(l);
  }

  /** Tells the other followers the lease changed (after a hand-off or a release this worker wrote). */
  private announce(revision: number | undefined): void {
    this.push?.wake(this.options.leaseName, revision);
  }

  /**
   * The follower's decision (lib/sdk/follower.ts). A static seam, not an option: the simulator
   * plants a wrong one to show its checker catches it (sim/bugs.ts); nothing else replaces it.
   * @internal
   */
  static decideFollower: typeof decideFollower = decideFollower;

  /** The part of the record a renewal changes: what client-go compares to reset observedTime. */
  private static termKey(l: Lease | undefined): string {
    return l ? `${l.holderIdentity ?? ''}|${l.holderInstance ?? ''}|${l.renewTime ?? ''}|${l.fencingToken}|${l.leaseDurationSeconds}` : '';
  }

  /** Records what was read; true when the term or its renewal changed since the last read. */
  private observe(read: LeaseRead, sentAt?: number): boolean {
    const key = LeaderElector.termKey(read.item);
    const changed = this.observed?.key !== key;
    const l = read.item;
    if (changed) {
      this.observed = { key, at: this.mono(), revision: read.revision, token: l?.fencingToken ?? -1 };
      // a term's first write (an election's, a hand-off's, an acquisition's) is not on the holder's renewal cadence
      const s = this.viewedSession;
      if (s && l?.session === s.name && l.holderInstance !== undefined && l.holderInstance !== this.instance) this.sessions.phase(s.name).seen(`session:${s.name}`, s.renewTime, this.observed.at, this.previousReadSentAt, l.leaseDurationSeconds * 1000);
      else if (l?.holderInstance !== undefined && l.renewTime !== undefined && l.renewTime !== l.acquireTime && l.holderInstance !== this.instance) this.phase.seen(`${l.holderInstance}|${l.fencingToken}`, l.renewTime, this.observed.at, this.previousReadSentAt, l.leaseDurationSeconds * 1000);
    } else this.observed!.revision = read.revision;
    this.noteHolder(read.item?.holderIdentity);
    return changed;
  }

  /**
   * An eventually consistent read older than one already seen (a lower revision in the same or an
   * earlier term, or no row where there was one): not acted on; it is read again, consistently.
   */
  private isStale(read: LeaseRead): boolean {
    const o = this.observed;
    if (!o || o.token < 0) return false;
    if (!read.item) return true;
    return read.revision < o.revision && read.item.fencingToken <= o.token;
  }

  /**
   * When a leader renews next: a retry period after a failed try; otherwise a renew interval (less
   * PHASE_STEP_MS) after the last renewal was sent — a steady cadence its successor can read right
   * behind; `NoCoordination` without a `renewIntervalMs` of its own, a retry period after the last
   * step ended, as client-go.
   */
  private leaderDelay(l: Leading): number {
    // Held on the live session: look at the lease rarely while wakes reach this worker, else every renew interval.
    if (this.onLiveSession(l)) return this.pushLive ? this.holderBackstopMs * (1 + 0.1 * this.time.random()) : this.cadenceMs;
    if (l.retrying || (this.options.mode === 'NoCoordination' && this.options.renewIntervalMs === undefined)) return this.options.retryPeriodMs;
    return Math.max(0, l.renewedAt + this.cadenceMs - this.mono());
  }

  /** How long after a renewal was sent a coordinated leader sends the next: the renew interval less PHASE_STEP_MS. */
  private get cadenceMs(): number {
    return renewCadenceMs(this.renewIntervalMs, this.options.retryPeriodMs);
  }

  /** When a follower reads next (lib/sdk/follower.ts `nextReadDelay`). */
  private followerDelay(): number {
    return nextReadDelay({
      lease: this.lastRead,
      identity: this.options.identity,
      instance: this.instance,
      mode: this.options.mode,
      now: this.mono(),
      retryPeriodMs: this.options.retryPeriodMs,
      expectedAt: this.activePhase.expectedAt(),
      cadenceKnown: this.activePhase.known,
      settlingForMs: this.settlingSince === undefined ? undefined : this.mono() - this.settlingSince,
      leaseDurationMs: this.options.leaseDurationMs,
      termEndsAt: this.lastRead?.holderIdentity !== undefined && this.observed ? this.observed.at + this.lastRead.leaseDurationSeconds * 1000 : undefined,
      misses: this.misses,
      pushLive: this.pushLive,
      sessionHeld: this.lastRaw?.item?.session !== undefined && this.lastRaw.item.holderIdentity !== undefined,
      random: this.time.random(),
    });
  }

  private async followerStep(woken = false): Promise<void> {
    // Coordinated: an eventually consistent read (half the cost) — every write a poll leads to is
    // conditioned on what it read. NoCoordination reads as client-go does.
    const coordinated = this.options.mode === 'coordinated';
    // A quiet lease held on a session, with wakes reaching this worker: the term lives in the session
    // row, so only that is read (shared by the process's electors); the lease row itself when woken,
    // and as a backstop for a lost wake.
    const last = this.lastRaw;
    const sessionOnly =
      !woken && coordinated && this.pushLive && last?.item?.session !== undefined && last.item.holderIdentity !== undefined && isQuiet(this.lastRead) && this.leaseReadAt !== undefined && this.mono() - this.leaseReadAt < this.sessionBackstopMs;
    // Woken: the change is news, so the read is consistent (an eventually consistent one may not have it yet).
    const { raw, view: read, sentAt } = await this.readView(!coordinated || woken, sessionOnly ? last : undefined);
    this.lastRaw = raw;
    if (this.observe(read)) this.misses = 0;
    else if (!woken) {
      this.misses++;
      this.activePhase.missed(sentAt); // the next renewal lands later than this read was served
    }
    this.previousReadSentAt = sentAt;
    this.lastRead = read.item;
    const settling = !isQuiet(read.item) || (isSuccessor(read.item, this.options.identity, this.instance) && !this.activePhase.known);
    this.settlingSince = settling ? (this.settlingSince ?? this.mono()) : undefined;
    const d = LeaderElector.decideFollower({
      lease: read.item,
      identity: this.options.identity,
      instance: this.instance,
      mode: this.options.mode,
      candidate: this.candidate !== undefined,
      ackedElection: this.ackedElection,
      unanswered: this.unanswered,
      now: this.mono(),
      observedAt: this.observed!.at,
      vacantSince: this.vacantSince,
      retryPeriodMs: this.options.retryPeriodMs,
      fallbackAfterMs: this.fallbackAfterMs,
    });
    if (d.confirm) {
      // Elected (by the coordinator, for this start-up): confirm by renewing before acting.
      this.wakeAt = undefined;
      await this.takeTerm({ holderIdentity: read.item!.holderIdentity!, fencingToken: read.item!.fencingToken });
      // not confirmed (the term moved on): the next step reads the lease row itself, not a copy
      if (!this.leading) this.leaseReadAt = undefined;
      return;
    }
    // An answer makes this worker electable: not while it cannot tell DynamoDB's time for long.
    if (d.answer !== undefined && this.candidate) {
      if (this.clockTrusted(true)) {
        await this.candidate.ack();
        if (d.answer === 'unanswered') this.unanswered = false;
        else this.ackedElection = d.answer.election;
      } else if (d.answer !== 'unanswered') this.unanswered = true;
    }
    this.vacantSince = d.vacantSince;
    this.wakeAt = d.wakeAt;
    if (d.take === 'successor') return this.succeed(raw);
    if (d.reportVacancy) await this.reportVacancy(raw);
    if (d.take === 'self') await this.acquire(raw, 'self');
  }

  /**
   * Takes a vacant lease as its designated successor. A lost race (a vacancy report, an election
   * opened, somebody else's write) is read again at once: if the lease is still vacant and still
   * names this worker, it tries once more; otherwise the election goes on as usual.
   */
  private async succeed(read: LeaseRead): Promise<void> {
    if (await this.acquire(read, 'successor')) return;
    const again = await this.readView(true);
    this.lastRaw = again.raw;
    this.observe(again.view);
    const l = again.view.item;
    const vacant = l?.holderIdentity === undefined || l.vacancyReport !== undefined || this.mono() - this.observed!.at > l.leaseDurationSeconds * 1000;
    if (vacant && isSuccessor(l, this.options.identity, this.instance)) await this.acquire(again.raw, 'successor');
  }

  /** Tells the coordinator the holder has not renewed for a whole term, as this worker watched. */
  private async reportVacancy(read: LeaseRead): Promise<void> {
    try {
      // The report rests on this worker's monotonic clock (a term watched unchanged); `at` is informational.
      await this.leases.write(read, { set: { vacancyReport: { by: this.options.identity, at: this.time.now(), observedRevision: read.revision } } });
      if (this.candidate && this.clockTrusted(true)) await this.candidate.ack();
    } catch (e) {
      if (!(e instanceof ConflictError)) throw e; // the lease moved on: nothing to report
    }
  }

  /**
   * Direct acquisition (NoCoordination, the fallback, or as the designated successor), conditioned
   * on the revision read. False when somebody else moved first.
   */
  private async acquire(read: LeaseRead, electedBy: 'self' | 'successor'): Promise<boolean> {
    if (!this.clockTrusted()) return false;
    const lease = read.item;
    const jumps = this.time.jumps;
    const sentAt = this.mono();
    const now = this.time.now();
    const session = this.sessionToWrite();
    try {
      const written = await this.leases.write(read, {
        set: {
          ...(session ? { session } : {}),
          holderIdentity: this.options.identity,
          holderInstance: this.instance,
          holderPlatform: this.platformFound,
          holderPlatformId: this.platformFound?.id,
          acquireTime: now,
          renewTime: now,
          leaseDurationSeconds: Math.ceil(this.options.leaseDurationMs / 1000),
          leaseTransitions: lease ? lease.leaseTransitions + 1 : 0,
          fencingToken: nextFencingToken(lease?.fencingToken, now),
          electedBy,
          // the holder whose term ran out: the coordinator passes over its candidate row until it shows life
          ...(lease?.holderIdentity !== undefined ? { lastHolderIdentity: lease.holderIdentity } : {}),
        },
        remove: [
          ...(['election', 'preferredHolder', 'vacancyReport', 'successor', 'successorInstance'] as const),
          ...(this.platformFound ? [] : HOLDER_FIELDS.filter((f) => f.startsWith('holderPlatform'))),
          ...(session ? [] : (['session'] as const)),
        ],
      });
      this.observe({ ...read, item: written, revision: written.revision });
      const term = { holderIdentity: this.options.identity, fencingToken: written.fencingToken };
      if (await this.jumpedSince(jumps, term)) return false;
      return await this.startLeading(term, sentAt, written);
    } catch (e) {
      if (!(e instanceof ConflictError)) throw e; // somebody else moved first
      // the row DynamoDB returned with the refusal names whoever did: a new holder, seen now
      this.noteHolder(e.current?.['holderIdentity']);
      return false;
    }
  }

  /** Reports a holder seen (onNewLeader) when it is not the one last reported. */
  private noteHolder(holder: unknown): void {
    if (typeof holder !== 'string' || holder === this.lastLeader) return;
    this.lastLeader = holder;
    this.callbacks.onNewLeader?.(holder);
  }

  /** Confirms a term the coordinator gave this worker: a renewal first, then the work. */
  private async takeTerm(term: Term): Promise<void> {
    if (!this.clockTrusted()) return; // not confirmed: the coordinator's short first term runs out, or the doubt clears first
    const jumps = this.time.jumps;
    const sentAt = this.mono();
    const renewed = await this.leases.renewTerm(this.options.leaseName, term, this.time.now(), Math.ceil(this.options.leaseDurationMs / 1000), this.sessionToWrite() ?? undefined);
    if (!renewed) return;
    this.observe({ key: { name: this.options.leaseName }, item: renewed, revision: renewed.revision });
    if (await this.jumpedSince(jumps, term)) return;
    if (await this.startLeading(term, sentAt, renewed)) await this.afterRenewal(renewed);
  }

  /** A term written while the clock jumped: its stamp may be off by the jump, so it is given back rather than led on. */
  private async jumpedSince(jumps: number, term: Term): Promise<boolean> {
    if (this.time.jumps === jumps) return false;
    this.preventions++;
    await this.release(term);
    return true;
  }

  /**
   * Leads the term won by the write sent at `renewedAt` — unless its renew deadline has already
   * passed (the process was frozen, or the answer came late, between the write landing and now):
   * a term others may already have seen expire is given back, never led, so a thawed process does
   * not start work on a stale term. False when it was given back.
   */
  private async startLeading(term: Term, renewedAt: number, lease: Lease): Promise<boolean> {
    if (this.mono() >= renewedAt + this.options.renewDeadlineMs) {
      await this.release(term);
      return false;
    }
    const controller = new AbortController();
    const leading: Leading = { term, controller, renewedAt, deadline: undefined, retrying: false, lease, since: renewedAt, renewals: 0, session: lease.session };
    this.phase.reset();
    this.misses = 0;
    this.previousReadSentAt = undefined;
    this.leading = leading;
    this.armDeadline(leading);
    this.vacantSince = undefined;
    try {
      const r = this.callbacks.onStartedLeading(controller.signal, { fencingToken: term.fencingToken });
      if (r instanceof Promise) r.catch((e: unknown) => this.onError(e as Error));
    } catch (e) {
      this.onError(e as Error);
    }
    return true;
  }

  /** Stop acting at renewedAt + renewDeadline even if a renewal hangs: before anyone can see the term expire. */
  private armDeadline(leading: Leading): void {
    leading.deadline?.cancel();
    const left = leading.renewedAt + this.options.renewDeadlineMs - this.mono();
    leading.deadline = this.time.setTimer(Math.max(0, left), () => {
      if (this.leading === leading) this.stopLeading(leading, 'renewDeadline');
    });
  }

  private stopLeading(leading: Leading, reason: StopReason): void {
    if (this.leading !== leading) return;
    this.leading = undefined;
    leading.deadline?.cancel();
    leading.controller.abort(reason);
    try {
      this.callbacks.onStoppedLeading?.({ reason, fencingToken: leading.term.fencingToken });
    } catch (e) {
      this.onError(e as Error);
    }
  }

  private async leaderStep(): Promise<void> {
    const leading = this.leading!;
    // Held on the live session: its renewals keep the term; the lease is only looked at (a backstop
    // for a lost wake: a preemption, a successor named, a term that moved on).
    if (this.onLiveSession(leading)) return this.leaderWoken(leading, false);
    leading.retrying = true; // until this renewal succeeds
    // A renewal stamped with a time this worker cannot vouch for is not sent: the renew deadline
    // (its monotonic clock) stops it unless the doubt clears first — a read instead brings the next
    // response's Date. A jump stops it at once (onClockJump).
    if (!this.clockTrusted()) {
      await this.leases.read(this.options.leaseName);
      return;
    }
    const sentAt = this.mono();
    let renewed: Lease | undefined;
    try {
      // onto the live session, or off one that ended
      const session = this.sessionToWrite();
      renewed = await this.leases.renewTerm(this.options.leaseName, leading.term, this.time.now(), Math.ceil(this.options.leaseDurationMs / 1000), session === null && leading.session === undefined ? undefined : session);
    } catch (e) {
      // a fault: keep trying until the renew deadline (the armed timer stops us there)
      this.onError(e as Error);
      return;
    }
    if (this.leading !== leading) return; // the deadline passed (or the clock jumped) while the renewal was in flight
    if (!renewed) {
      this.stopLeading(leading, 'deposed'); // the lease is no longer in our term
      return;
    }
    leading.renewedAt = Math.max(leading.renewedAt, sentAt);
    leading.renewals++;
    leading.retrying = false;
    leading.lease = renewed;
    leading.session = renewed.session;
    this.armDeadline(leading);
    this.observe({ key: { name: this.options.leaseName }, item: renewed, revision: renewed.revision });
    await this.afterRenewal(renewed);
  }

  private async afterRenewal(lease: Lease): Promise<void> {
    const leading = this.leading;
    if (!leading) return;
    if (this.options.mode === 'coordinated' && lease.preferredHolder && lease.preferredHolder !== this.options.identity) {
      // The preferred candidate is the designated successor (the coordinator names both at once):
      // it reads right after this renewal, so the term is handed to it now, in one write.
      const heir = this.heirOf(leading);
      this.stopLeading(leading, 'preempted');
      if (!(heir && (await this.handOff(leading, heir)))) await this.release(leading.term);
      // Still a candidate, and alive: its row says so, or the coordinator passes over the holder it
      // just replaced as departed (lib/election/vacancy.ts isDeparted).
      await this.candidate?.ack();
      return;
    }
    if (this.candidate && lease.election && this.ackedElection !== lease.election.id) {
      await this.candidate.ack();
      this.ackedElection = lease.election.id;
    }
  }

  /**
   * Whom a leader stepping down hands its term to: the successor the coordinator designated on the
   * lease as last renewed (its process named), in coordinated mode, unless the lease prefers
   * somebody else.
   */
  private heirOf(leading: Leading): Omit<Heir, 'platform'> | undefined {
    const l = leading.lease;
    if (this.options.mode !== 'coordinated' || !l?.successor || !l.successorInstance) return undefined;
    if (l.preferredHolder !== undefined && l.preferredHolder !== l.successor) return undefined;
    if (l.successor === this.options.identity) return undefined;
    return { name: l.successor, instance: l.successorInstance };
  }

  /**
   * The lease as it is now, if still in this term: the coordinator may have named the successor
   * since the last renewal (a term not renewed yet knows none). Coordinated mode only; a failed read
   * leaves what the last renewal said.
   */
  private async refreshLease(leading: Leading): Promise<void> {
    if (this.options.mode !== 'coordinated') return;
    try {
      const l = (await this.leases.read(this.options.leaseName)).item;
      if (l && this.leading === leading && l.holderIdentity === leading.term.holderIdentity && l.fencingToken === leading.term.fencingToken) leading.lease = l;
    } catch (e) {
      this.onError(e as Error);
    }
  }

  /**
   * A cancelled leader with an heir leads on until its next renewal would be due (at most a renew
   * interval): the heir reads just after each renewal it expects, so it finds the hand-off at once.
   * The renew deadline and clock jumps still stop it as usual.
   */
  private async leadUntilHandOff(leading: Leading): Promise<void> {
    // The heir is told (a wake): no need to wait until it reads.
    if (this.promptHandOff || this.pushLive) return;
    // A term not yet renewed twice is one the heir is still settling on (it reads it every
    // SETTLING_READ_MS for its first lease durations): it will see a hand-off now as soon.
    const young = leading.renewals < 2 && this.mono() - leading.since < (SETTLING_TERMS - 0.5) * this.options.leaseDurationMs;
    const wait = leading.retrying || young ? 0 : leading.renewedAt + this.cadenceMs - this.mono();
    if (wait > 0) await this.time.sleep(wait);
  }

  /**
   * Hands the term to `heir` in one write (LeaseStore.handOver), with its platform from its candidate
   * row so the platform's stop event can end its term too. False when the lease no longer names that
   * heir (or the row is not that process's, or the write failed): the caller releases instead. The
   * caller has stopped leading.
   */
  private async handOff(leading: Leading, heir: Omit<Heir, 'platform'>): Promise<boolean> {
    try {
      const row = (await this.candidates.read(this.options.leaseName, heir.name)).item;
      if (row?.identity !== heir.instance || !this.clockTrusted()) return false;
      const firstTermSeconds = Math.max(1, Math.ceil(this.options.leaseDurationMs / 3000));
      const given = await this.leases.handOver(this.options.leaseName, leading.term, { ...heir, platform: row.platform }, this.time.now(), firstTermSeconds, leading.lease!.leaseTransitions);
      if (given) this.announce(given.revision);
      return given !== undefined;
    } catch (e) {
      this.onError(e as Error);
      return false;
    }
  }

  private async release(term: Term): Promise<void> {
    try {
      const released = await this.leases.releaseTerm(this.options.leaseName, term, this.time.now());
      if (released) this.announce(released.revision);
    } catch (e) {
      this.onError(e as Error); // the term simply runs out
    }
  }
}

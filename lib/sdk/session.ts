/**
 * Per-process liveness: one row a process renews for every lease it holds (etcd's sessions, on
 * KEP-1965's identities table). A lease held on a session carries its name (`session`); the term
 * lives until the later of the lease's own stamp and the session's, plus the lease's duration
 * (`effectiveLease`), so a process holding a hundred leases keeps them all alive with one write per
 * renew interval instead of a hundred.
 *
 * Safety is client-go's argument, one level up. Every elector holding a lease on the session stops
 * at (the send time of the last session renewal that was answered in time) + its renew deadline,
 * which is before anyone can see the session's stamp expire; a renewal answered after that deadline
 * extends nothing. Observers judge the session's stamp exactly as they judge a lease's: on their own
 * monotonic clock (followers) or with the clock-skew margin (the coordinator), and only from a read
 * sent no earlier than the moment they judge for.
 */
import { hostname as osHostname } from 'node:os';
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import * as z from 'zod';
import { Nap, systemClock, uniqueId, type Clock, type Timer } from '../clock.js';
import { Name } from '../schemas/common.js';
import { MAX_LEFT_TERMS, SESSION_COMPONENT, allLeasesSessionComponent, sessionComponent, sessionScope, sessionShard, type LeftTerm } from '../schemas/identity.js';
import { parse } from '../schemas/validation.js';
import { ConflictError } from '../stores/errors.js';
import { errorSink, faultReporter, recovered, retryDelayMs, StopBudget } from './faults.js';
import { abortAfter, boundedClient, requestBoundMs } from './bounded-client.js';
import { holdsForLeft, pacedCadenceMs, paceMs, renewalBoundMs } from './step.js';
import { IdentityStore, canonicalLeft, type IdentityRead, type SessionRenewal } from '../stores/identity-store.js';
import type { IdentityLease } from '../schemas/identity.js';
import { ClientSchema, ClockSchema, ClockSyncSchema, PeriodMs, StartUp, TablesSchema, deepFreeze, defaulted, everyProblem, fn, IDENTITIES_ONLY, optionErrors, runningTableFault, stampClockFor, type DeepReadonly } from './options.js';
import { tableState } from './table-state.js';
import { ClockSkewError, type ClockDoubt, type StampClock } from './server-clock.js';

export { SESSION_COMPONENT };

export { SessionReader, SHARED_READ_MS, type SessionRead } from './lock.js';
import { SessionReader } from './lock.js';

/** A session's timings when not given: its renewals, their retry and deadline, and the longest lease it holds. */
const SESSION_DEFAULTS = { renewIntervalMs: 5_000, retryPeriodMs: 1_500, renewDeadlineMs: 7_500, maxLeaseDurationMs: 15_000 } as const;

/** The options of a Session; a bad one is a ValidationError naming the field. */
export const SessionOptionsSchema = z
  .strictObject(
    {
      /** The DynamoDB client the session row is written with (share the electors' client: one clock measurement). */
      client: ClientSchema,
      /** Where the tables are: a prefix, or `{ prefix?, identities? }`; the identities table holds the row. @default 'conclave' */
      tables: TablesSchema,
      /**
       * The leases this process's role was granted (grantWorker's `leaseNames`, in any order): the
       * session row lives in the identities partition of that grant (`conclave-session:<scope>`,
       * sessionComponent), the only session rows the role may write. Every elector on the session
       * must stand for one of them. Leave it out only for a role granted every lease (`allLeases`).
       * @default every lease: one of 64 partitions `conclave-session:all-<k>`, k from a hash of the
       * process id (the row's name starts `all-<k>:`), so the reads of a large fleet's sessions do
       * not all meet on one partition key
       */
      leaseNames: z.array(Name).min(1, "give at least one lease name (grantWorker's leaseNames), or leave leaseNames out for a role granted every lease").optional(),
      /** The start of the row's name; a unique id per start-up follows. @default 'session' */
      prefix: Name.max(190, 'must be at most 190 characters (the scope and a unique id follow it)')
        .refine((p) => !p.includes(':'), 'must not contain ":" (a session name is <scope>:<prefix>-<id>)')
        .default('session'),
      /** How often the session is renewed. @default 5000 */
      renewIntervalMs: PeriodMs.default(SESSION_DEFAULTS.renewIntervalMs),
      /** How soon a failed renewal is tried again. @default 1500 */
      retryPeriodMs: PeriodMs.default(SESSION_DEFAULTS.retryPeriodMs),
      /**
       * The session ends when it has not been renewed for this long: its electors renew their leases
       * themselves from then on, and a new session (a new row) starts. Every elector on the session
       * must have a renew deadline longer than this plus its retryPeriodMs, so that it has that
       * long to renew its leases itself before its own deadline stops its terms (the defaults fit
       * client-go's 15/10/2 s). @default 7500
       */
      renewDeadlineMs: z.number().int().positive().default(SESSION_DEFAULTS.renewDeadlineMs),
      /**
       * The longest lease duration an elector on this session may have: the row lives this long after
       * its last renewal (and the coordinator collects it only after that and a grace period). @default 15000
       */
      maxLeaseDurationMs: z.number().int().min(1_000).max(86_400_000).default(SESSION_DEFAULTS.maxLeaseDurationMs),
      /**
       * See LeaderElectorOptions.clockSync. Every term and candidacy held on the session is judged
       * by the session row's stamp, so an elector or candidate on clockSync 'server' (the default)
       * is refused on a session on 'none'. @default 'server'
       */
      clockSync: ClockSyncSchema,
      /**
       * See LeaderElectorOptions.maxClockErrorMs: beyond it the session is not renewed (its deadline
       * ends it). An elector on the session must have this maxClockErrorMs or a looser one. @default 500
       */
      maxClockErrorMs: z.number().int().min(1).max(60_000).default(500),
      /** A renewal that failed (retried), or a session that ended. @default a process warning */
      onError: fn<(error: Error) => void>().optional(),
      /** Test hook: this machine's clock. @default systemClock */
      clock: ClockSchema.optional(),
    },
    { error: optionErrors('Session', 'client', { table: 'name the tables with `tables` (a prefix, or { identities })' }) },
  )
  .superRefine((o, ctx) => {
    // compared only where each passed its own checks: a bad one is reported as itself
    const valid = everyProblem.valid(ctx);
    // a retry period at or past the deadline is its own fault, not renewIntervalMs's: no interval meets a bound of 0 or less
    if (valid('retryPeriodMs', 'renewDeadlineMs') && o.retryPeriodMs >= o.renewDeadlineMs)
      ctx.addIssue({ code: 'custom', path: ['retryPeriodMs'], message: `must be < renewDeadlineMs (${o.renewDeadlineMs}) so a failed renewal is tried again before the deadline${defaulted('retryPeriodMs', o.retryPeriodMs, SESSION_DEFAULTS.retryPeriodMs, 'with a shorter renewDeadlineMs')}` });
    else if (valid('renewIntervalMs', 'retryPeriodMs', 'renewDeadlineMs') && o.renewIntervalMs + o.retryPeriodMs >= o.renewDeadlineMs)
      ctx.addIssue({
        code: 'custom',
        path: ['renewIntervalMs'],
        message: `must be < renewDeadlineMs - retryPeriodMs (${o.renewDeadlineMs - o.retryPeriodMs}) so a failed renewal is tried again before the deadline${defaulted('renewIntervalMs', o.renewIntervalMs, SESSION_DEFAULTS.renewIntervalMs, 'with a shorter renewDeadlineMs')}`,
      });
    if (valid('renewDeadlineMs', 'maxLeaseDurationMs') && o.renewDeadlineMs >= o.maxLeaseDurationMs) {
      // the defaults' proportions (7500/5000/1500 of 15000) at the lease duration given
      const scaled = (ms: number) => Math.floor((ms * o.maxLeaseDurationMs) / SESSION_DEFAULTS.maxLeaseDurationMs);
      const fit = `such as ${scaled(SESSION_DEFAULTS.renewDeadlineMs)}, ${scaled(SESSION_DEFAULTS.renewIntervalMs)} and ${scaled(SESSION_DEFAULTS.retryPeriodMs)} (the defaults scaled)`;
      ctx.addIssue({
        code: 'custom',
        path: ['renewDeadlineMs'],
        message: `must be < maxLeaseDurationMs (${o.maxLeaseDurationMs}) so the session ends before anyone can see it expire${defaulted('renewDeadlineMs', o.renewDeadlineMs, SESSION_DEFAULTS.renewDeadlineMs, `with renewIntervalMs and retryPeriodMs for a shorter maxLeaseDurationMs, ${fit}`)}`,
      });
    }
  }, { when: everyProblem.when });

/** The options of a Session as written. */
export type SessionOptions = z.input<typeof SessionOptionsSchema>;
/** A Session's options as resolved (defaults applied, tables named), read-only. */
export type ResolvedSessionOptions = DeepReadonly<Omit<z.output<typeof SessionOptionsSchema>, 'client' | 'onError' | 'clock'>>;

/** What an elector on the session hears. */
export interface SessionListener {
  /**
   * Session `name` was renewed by a write sent at `sentAt` (monotonic), answered now. `ended`: the
   * terms held on it that ended by someone else's write (lease name → fencing token, the row's
   * `endedTerms`), to be stopped at once.
   */
  renewed(name: string, sentAt: number, ended: Readonly<Record<string, number>>): void;
  /** Session `name` ended (its deadline passed, its row was lost, or the process is leaving). */
  ended(name: string): void;
}

/** Session counts, for tests and the bench. */
export interface SessionStats {
  /** Rows created (1 + the sessions started again after one ended). */
  started: number;
  /** Renewals answered in time. */
  renewals: number;
  /** Renewals that failed (refused, or a fault). */
  failedRenewals: number;
  /**
   * Renewals refused because the row was not as this process last saw it: changed or deleted by
   * someone else, or collected. Each ends the session.
   */
  foreignWrites: number;
  /**
   * Renewals that landed though their answer was lost (a timeout, a dropped connection), found at
   * the next renewal: the session renews on from the row they left.
   */
  lostAnswers: number;
  /** Sessions that ended (deadline, lost row, or the process leaving). */
  ended: number;
}

/**
 * What the electors on a session use of it: its reader (shared session reads) and their
 * attachment. Kept off the exported Session class (not part of @conclave/sdk): LeaderElector
 * reaches it through sessionSeam().
 */
export interface SessionSeam {
  /** Reads session rows for the process's electors, sharing reads among them. */
  readonly reader: SessionReader;
  /** An elector takes part: the session keeps running until it leaves (the function returned). */
  attach(listener: SessionListener): () => void;
  /** Whether run()'s signal has aborted: the process is leaving, and waits only for those attached. */
  stopping(): boolean;
  /**
   * An elector may hold a term on session `name` that it does not know of (its take, naming the
   * session, may have landed with its answer lost): the session is not renewed until the function
   * returned is called (the elector read the lease, or leads), so that term is not kept alive for
   * nobody to lead; the session ends at its deadline meanwhile. `why` is told if it does. A hold
   * outlives its elector's run() when the doubt is not settled as it stops; it ends with the session.
   */
  hold(name: string, why: string): () => void;
  /**
   * The stamp (`renewTime`) of session `name`'s row as this process last knew it landed (its last
   * renewal answered, or found landed): no later than the row's, and no earlier than that of any
   * renewal its electors counted. Undefined unless `name` is the live session.
   */
  stamp(name: string): number | undefined;
  /**
   * An elector that stopped leaves the term of `lease` it led (`term`: its fencing token and
   * instance) to run out (releaseOnCancel false): every session row the process writes from now on
   * names it (IdentityLeaseItem.leftTerms) with the stamp it runs out from — the latest stamp of
   * this process's session rows as last known landed, no earlier than any renewal its electors
   * counted — so no row of the process vouches for the term past it, whichever session its lease
   * names. `stillHeld` reads the lease: once it answers false (the row shows that term no more),
   * looked at from the stamp plus `leaseDurationMs` on, once a lease duration, the term is dropped.
   * Past MAX_LEFT_TERMS terms, the process's session rows are held (not renewed, none started)
   * until some are dropped. Returns the stamp.
   */
  leave(lease: string, term: { readonly token: number; readonly instance: string }, leaseDurationMs: number, stillHeld: () => Promise<boolean>): number;
  /**
   * An elector's hand-over or release of the term of `lease` it led (`term`) landed: the rows the
   * process writes from now on name it as left too, for a lease duration past the stamp it is left
   * at, read by nobody's lease read (the row shows that term no more, and tokens only grow). A
   * successor reading only this process's session row while wakes seem to reach it (a wake lost)
   * then reads the lease at its next session read, not at its backstop read four lease durations
   * on. Sound as any term left: its elector stopped leading before the write. Named only while a row
   * has room (MAX_LEFT_TERMS), and the first dropped for a term left to run out (leave): it never
   * holds the session.
   */
  over(lease: string, term: { readonly token: number; readonly instance: string }, leaseDurationMs: number): void;
  /**
   * An elector began stopping, or leads on for its heir, its stop's budget `ms` from running out:
   * the session's stop waits at least as long (its row's delete comes after), whenever run()'s
   * signal aborted.
   */
  stopAtLeast(ms: number): void;
}

/** A term left to run out (SessionSeam.leave), as the Session keeps it until the lease shows it no more. */
interface Left {
  readonly term: LeftTerm;
  readonly stillHeld: () => Promise<boolean>;
  readonly leaseDurationMs: number;
  /** DynamoDB time (StampClock.now) the lease is next read at. */
  checkAt: number;
  checking: boolean;
  /** Handed over or released (SessionSeam.over): dropped at checkAt, and first, for a term left to run out, past MAX_LEFT_TERMS. */
  readonly over?: true;
}

const seams = new WeakMap<Session, SessionSeam>();

/** A term handed over or released (SessionSeam.over): the lease shows it no more, and never will again (tokens only grow). */
const NOT_HELD = (): Promise<boolean> => Promise.resolve(false);

/** Whether a row's (or a renewal's) `leftTerms` entry names `term` as it was left: its token, instance and stamp. */
const namesAsLeft = (named: LeftTerm | undefined, term: LeftTerm): boolean => named !== undefined && named.token === term.token && named.instance === term.instance && named.stamp === term.stamp;

/** The seam of `session`, for the electors on it. */
export function sessionSeam(session: Session): SessionSeam {
  const seam = seams.get(session);
  if (!seam) throw new TypeError('not a Session');
  return seam;
}

interface Live {
  name: string;
  read: IdentityRead;
  /** Monotonic send time of the last renewal answered in time (or of the creation). */
  renewedAt: number;
  /** The stamps of the renewals sent against `read` that were not answered: one of them may have landed. */
  unanswered: number[];
  /** The terms left (leftTerms) each of those renewals wrote. */
  unansweredLeft: (Record<string, LeftTerm> | undefined)[];
  deadline: Timer | undefined;
}

/** Why a Session's probe read was abandoned: it is leaving (run()'s signal aborted, no elector on it). Never told to onError. */
const LEAVING = new DOMException('the read was abandoned: the session is leaving', 'AbortError');

/**
 * A process's session: share one among all the process's LeaderElectors (the `session` option),
 * as a PushChannel is shared, and run it beside them. While it lives, the leases they hold are
 * kept alive by its renewals alone; while it does not (not started yet, renewals failing, the
 * clock in doubt), they renew their leases themselves. run() resolves once every elector on it has
 * finished (so their releases and hand-offs go out first) and its row is deleted.
 */
export class Session {
  /** The options as resolved. Frozen. */
  readonly options: ResolvedSessionOptions;
  /** Resolves once the first row is written; rejects if run() ends before that (its signal aborted, or a TableNotFoundError). */
  readonly ready: Promise<void>;
  /**
   * This process's id, written on every row the session writes; its electors' instances end with
   * it, so observers judge their terms by this session and by no other (IdentityLeaseItem.process).
   */
  readonly process: string;
  private readonly store: IdentityStore;
  private readonly time: StampClock;
  private readonly onError: (e: Error) => void;
  /** Tells a lease read's fault (a term left to run out looked at: lookAtLeft), without what a denial of its own rows tells to check. */
  private readonly leaseReadFailed: (e: unknown) => void;
  private readonly clock: Clock;
  private readonly startUp: StartUp<void>;
  private readonly listeners = new Set<SessionListener>();
  private current: Live | undefined;
  private counts: SessionStats = { started: 0, renewals: 0, failedRenewals: 0, foreignWrites: 0, lostAnswers: 0, ended: 0 };
  /** The identities partition the rows are written in: sessionComponent of the leaseNames option, or this process's shard (allLeasesSessionComponent). */
  private readonly component: string;
  private attached = 0;
  private nap: Nap | undefined;
  /** The client its rows are written with: told when a request answers again after failures (lib/sdk/faults.ts recovered). */
  private readonly client: DynamoDBClient;
  /** Whether its last request failed. */
  private failing = false;
  /** run()'s signal, once run() is called. */
  private signal: AbortSignal | undefined;
  /** Aborted (with LEAVING) once the session is leaving: the probe read a start waits on is abandoned (a lookup of DynamoDB's name that takes long, say). */
  private readonly departure = new AbortController();
  /**
   * Its stop's wait on DynamoDB, counted against what it sends once it is leaving (every elector on
   * it gone): a request then in flight and its row's delete. Started as it leaves, it ends at
   * `stopUntil`. Its renewals while its electors stop are not cut: they serve those electors.
   */
  private readonly stop: StopBudget;
  /**
   * Monotonic time its stop's wait on DynamoDB ends: STOP_BUDGET_MS from run()'s signal aborting, or
   * later, as late as the stop of any elector on it (SessionSeam.stopAtLeast: told as each begins
   * stopping, and as one leads on for its heir). An elector run on a signal of its own, aborted
   * later, gives its row's delete its own stop's wait: counted from run()'s signal alone, the wait
   * was spent on waiting for it, and the delete failed unsent, DynamoDB blamed (a review).
   */
  private stopUntil = -Infinity;
  /** Its stop's wait ran out before it could leave (its electors' stops took it all): told so, not as DynamoDB's silence. */
  private spentWaiting = false;
  /** Aborted once it is leaving and its stop's budget is spent (cutIfLeaving): its requests are abandoned then. */
  private readonly cut = new AbortController();

  /** @throws ValidationError naming each bad option */
  constructor(options: SessionOptions) {
    const o = parse(SessionOptionsSchema, options, 'Session options');
    const { client, onError, clock, ...data } = o;
    this.clock = clock ?? systemClock;
    this.client = client;
    this.process = uniqueId(this.clock);
    this.time = stampClockFor(data.clockSync, client, this.clock);
    this.component = data.leaseNames ? sessionComponent(data.leaseNames) : allLeasesSessionComponent(this.process);
    // each fault named (DynamoDBUnreachableError, DynamoDBRefusedError), as an elector's are, a denial with the partition its rows
    // are written in; a request its stop's budget cut is told once, as run() resolves
    const sink = errorSink(onError, 'Session', this.clock);
    const report = faultReporter(sink, 'Session', client, runningTableFault('Session', data.tables, IDENTITIES_ONLY), partitionDenied(data.leaseNames, this.component));
    this.onError = (e) => void ((this.leaving() && this.stop.failed(e)) || report(e));
    this.leaseReadFailed = faultReporter(sink, 'Session', client);
    // its reads and writes give up after its renew deadline: one that never answers must not stop the renewals (bounded-client.ts);
    // once it is leaving, within its stop's budget too
    this.stop = new StopBudget(this.clock);
    this.stop.doing = 'its request in flight (a renewal of its row, or a new row)';
    this.stop.signal.addEventListener('abort', () => this.cutIfLeaving(), { once: true });
    const requests = this.stop.requests(boundedClient(client, this.clock, requestBoundMs(data.renewDeadlineMs)), () => this.cut.signal);
    this.store = new IdentityStore(requests, data.tables.identities);
    const reader = new SessionReader(requests, data.tables.identities, this.time);
    seams.set(this, {
      reader,
      attach: (listener) => this.attach(listener),
      stopping: () => this.signal?.aborted === true,
      hold: (name, why) => this.hold(name, why),
      stamp: (name) => (this.name === name ? this.current?.read.item?.renewTime : undefined),
      leave: (lease, term, leaseDurationMs, stillHeld) => this.leave(lease, term, leaseDurationMs, stillHeld),
      over: (lease, term, leaseDurationMs) => this.over(lease, term, leaseDurationMs),
      stopAtLeast: (ms) => this.stopAtLeast(ms),
    });
    this.options = deepFreeze(data);
    // a missing table is looked at (DescribeTable) before the start-up ends: one still being created is waited for
    this.startUp = new StartUp<void>('Session', data.tables, { state: tableState(requests), clock: this.clock }, IDENTITIES_ONLY);
    this.ready = this.startUp.ready;
  }

  /**
   * Whether a term of `lease` may be held on this session: a session started for a grant's
   * `leaseNames` serves only those leases (observers find its row in that grant's partition).
   */
  covers(lease: string): boolean {
    return this.options.leaseNames === undefined || this.options.leaseNames.includes(lease);
  }

  /** The name of the live session row, or undefined while there is none. */
  get name(): string | undefined {
    return this.healthy() ? this.current!.name : undefined;
  }

  /** Rows started, renewals and sessions ended so far. */
  get stats(): SessionStats {
    return { ...this.counts };
  }

  /**
   * Whether the session lives now: a row is written and its last renewal answered in time was sent
   * less than renewDeadlineMs ago (judged on the monotonic clock when asked). While it is not, its
   * electors renew their leases themselves: false means more writes, not lost leases. False before
   * the first row, after run() ends, and between a session's end and the next row.
   */
  healthy(): boolean {
    const l = this.current;
    if (l && this.time.monotonic() >= l.renewedAt + this.options.renewDeadlineMs) {
      const held = this.heldFor(l.name);
      this.end(l, held === undefined ? 'its renew deadline passed' : `its renew deadline passed, its renewals held: ${held}`);
    }
    return this.current !== undefined;
  }

  /** Session rows not renewed: each hold (SessionSeam.hold) with its reason. */
  private readonly holds = new Map<string, Set<{ readonly why: string }>>();

  /** A hold on the renewals of session `name` (through sessionSeam), until the function returned is called. */
  private hold(name: string, why: string): () => void {
    // a session that ended is never renewed again: nothing to hold, and nobody would delete the entry (end() deletes a live session's)
    if (this.current?.name !== name) return () => undefined;
    const held = this.holds.get(name) ?? new Set();
    this.holds.set(name, held);
    const mine = { why };
    held.add(mine);
    return () => {
      if (!held.delete(mine) || held.size > 0) return;
      if (this.holds.get(name) === held) this.holds.delete(name);
      // renewed at once if it still lives (its next renewal may be due, or overdue)
      if (this.current?.name === name) this.nap?.end();
    };
  }

  /** Why session `name` is not renewed now (its holds' reasons, or too many terms left), or undefined. */
  private heldFor(name: string): string | undefined {
    const held = this.holds.get(name);
    const why = held && held.size > 0 ? [...new Set([...held].map((h) => h.why))] : [];
    if (holdsForLeft(this.left.size)) why.push(this.tooManyLeft());
    return why.length > 0 ? why.join('; ') : undefined;
  }

  private tooManyLeft(): string {
    return `its stopped electors left ${this.left.size} terms to run out, more than a row names (${MAX_LEFT_TERMS}), until the leases show some of them no more`;
  }

  /** Terms this process's stopped electors left to run out (SessionSeam.leave), by lease name, until their leases show them no more. */
  private readonly left = new Map<string, Left>();
  /** No row is started for too many terms left (holdsForLeft): told once, until a row may start again. */
  private heldForLeft = false;
  /** The latest stamp of any of this process's session rows as last known landed (0: none yet). */
  private lastStamp = 0;

  /** A term left to run out (through sessionSeam): named on every row written from now on. */
  private leave(lease: string, term: { readonly token: number; readonly instance: string }, leaseDurationMs: number, stillHeld: () => Promise<boolean>, over = false): number {
    const stamp = Math.max(this.lastStamp, this.current?.read.item?.renewTime ?? 0);
    this.left.delete(lease); // (last in the order: the oldest terms handed over or released are dropped first)
    this.left.set(lease, { term: { token: term.token, instance: term.instance, stamp }, stillHeld, leaseDurationMs, checkAt: stamp + leaseDurationMs + this.options.maxClockErrorMs, checking: false, ...(over ? { over } : {}) });
    // a term left to run out must be named (else the row would vouch for it): terms handed over or released make room
    for (const [k, x] of this.left) {
      if (this.left.size <= MAX_LEFT_TERMS) break;
      if (x.over) this.left.delete(k);
    }
    return stamp;
  }

  /** A term handed over or released (through sessionSeam): named as left while a row has room, never in place of a term left to run out. */
  private over(lease: string, term: { readonly token: number; readonly instance: string }, leaseDurationMs: number): void {
    const was = this.left.get(lease);
    if (was ? was.over === true : this.left.size < MAX_LEFT_TERMS) this.leave(lease, term, leaseDurationMs, NOT_HELD, true);
  }

  /**
   * Whether `l`'s row as last answered is stamped later than a term left to run out that it does
   * not name (as left): a renewal sent before the leave, without the name, landed after it. Until a
   * renewal names the term, observers judge it by that later stamp, up to a renew interval past the
   * stamp it was left at. Never true of a row this process wrote after the leave: each names every
   * term left, and the stamp a term is left at is the latest landed.
   */
  private vouchesPastLeft(l: Live): boolean {
    const row = l.read.item;
    if (row === undefined) return false;
    for (const [lease, x] of this.left) {
      if (!namesAsLeft(row.leftTerms?.[lease], x.term) && row.renewTime > x.term.stamp) return true;
    }
    return false;
  }

  /**
   * Whether `l`'s row may vouch for a term left to run out past the stamp it was left at: as last
   * answered (vouchesPastLeft), or as a renewal still unanswered may have left it (sent before the
   * leave, stamped later than the term is left at and without its name, it may land yet).
   */
  private mayVouchPastLeft(l: Live): boolean {
    if (this.vouchesPastLeft(l)) return true;
    return l.unanswered.some((stamp, i) => [...this.left].some(([lease, x]) => stamp > x.term.stamp && !namesAsLeft(l.unansweredLeft[i]?.[lease], x.term)));
  }

  /** The terms left, as a row names them (undefined: none). */
  private leftTerms(): Record<string, LeftTerm> | undefined {
    return this.left.size === 0 ? undefined : canonicalLeft(Object.fromEntries([...this.left].map(([k, v]) => [k, v.term])));
  }

  /** Each term left whose lease is due a look (its stamp and lease duration past, then once a lease duration): dropped once the lease shows it no more. A read that fails keeps it. */
  private lookAtLeft(): void {
    const now = this.time.now();
    for (const [lease, x] of this.left) {
      if (x.checking || now < x.checkAt) continue;
      x.checking = true;
      x.stillHeld().then(
        (held) => {
          x.checking = false;
          x.checkAt = this.time.now() + x.leaseDurationMs;
          if (!held && this.left.get(lease) === x) this.left.delete(lease);
        },
        (e: unknown) => {
          x.checking = false;
          x.checkAt = this.time.now() + x.leaseDurationMs;
          this.leaseReadFailed(e);
        },
      );
    }
  }

  /** A row of this process landed (or was found landed): its stamp is the latest known. */
  private landed(item: IdentityLease): void {
    if (item.renewTime > this.lastStamp) this.lastStamp = item.renewTime;
  }

  /**
   * An elector takes part (through sessionSeam): the session keeps running until it leaves. Its
   * leaving writes nothing: the row says nothing of who is attached, and a term it left to run out
   * (SessionSeam.leave) is judged by the stamp the row has now until the next renewal names it. Only
   * the last to leave a process that is leaving wakes the session, which then deletes its row.
   */
  private attach(listener: SessionListener): () => void {
    this.listeners.add(listener);
    this.attached++;
    if (!this.runCalled) this.tellIfNeverRun();
    let left = false;
    return () => {
      if (left) return;
      left = true;
      this.listeners.delete(listener);
      this.attached--;
      this.departIfLeaving();
    };
  }

  private neverRun: Timer | undefined;
  /** run() was called (whether or not it has rejected since: what it rejected with was its caller's to see). */
  private runCalled = false;

  /**
   * An elector took part in a session whose run() is not called: told once, a lease duration on, if
   * it still is not (its electors keep their terms themselves meanwhile, a write per lease every
   * renew interval, which nothing else would show).
   */
  private tellIfNeverRun(): void {
    this.neverRun ??= this.clock.setTimer(
      this.options.maxLeaseDurationMs,
      () => {
        if (!this.runCalled && this.attached > 0)
          this.onError(new Error(`Session of process ${this.process}: run() was never called: the electors on it renew their leases themselves (a write per lease every renew interval, where the session's one write would keep them all); call session.run(signal) beside the electors' run()`));
      },
      { background: true },
    );
  }

  /** Its stop's wait on DynamoDB lasts `ms` from now at least (its signal aborted, or an elector on it stopping). */
  private stopAtLeast(ms: number): void {
    this.stopUntil = Math.max(this.stopUntil, this.time.monotonic() + ms);
  }

  /** Once leaving: its stop's wait starts (to stopUntil), the nap ends, the probe read a start waits on is abandoned, and its requests are cut if that wait is over. */
  private departIfLeaving(): void {
    if (!this.leaving()) return;
    if (this.stop.remainingMs === Infinity) {
      const leftMs = this.stopUntil - this.time.monotonic();
      this.spentWaiting = leftMs <= 0;
      this.stop.start();
      this.stop.extend(Math.max(0, leftMs) - this.stop.ms);
    }
    this.nap?.end();
    this.departure.abort(LEAVING);
    this.cutIfLeaving();
  }

  /** Leaving, its stop's budget spent: what it has in flight is abandoned, and what it would send fails unsent (its row's delete: the row goes stale and is collected). */
  private cutIfLeaving(): void {
    if (this.leaving() && this.stop.spent) this.cut.abort(this.stop.signal.reason);
  }

  /** Whether run()'s signal has aborted and every elector on the session has left: run() deletes the row and ends. */
  private leaving(): boolean {
    return this.signal?.aborted === true && this.attached === 0;
  }

  /**
   * Creates the row and renews it until `signal` aborts and every elector on the session has
   * finished; then deletes it. A session that ends (deadline, lost row) is followed by a new one.
   * A fault it can outlive (DynamoDB unreachable, throttled or denied) is reported to onError and
   * tried again with backoff, before the first row as after it: its electors renew their leases
   * themselves meanwhile. Rejects only for what can never succeed: a client that can never
   * send (no region, an endpoint that is not a URL or has no host), a TableNotFoundError.
   */
  async run(signal: AbortSignal): Promise<void> {
    this.runCalled = true;
    this.startUp.claim('Session');
    await this.startUp.checkClient(this.client, this.clock, signal);
    this.signal = signal;
    const leaving = () => this.leaving();
    // A jump of DynamoDB's time as this machine measures it ends the session at once, as it stops
    // every elector's term (LeaderElector's onClockJump): the deadline it keeps on the monotonic
    // clock and the stamp it last wrote can no longer be vouched for. Renewed on, it would keep
    // alive the terms its electors have just given up, and nobody could take them over.
    const unsubscribe = this.time.onJump((jumpMs) => {
      if (this.current) this.end(this.current, `DynamoDB's time, measured on this machine's monotonic clock, jumped by ${Math.round(jumpMs)} ms`);
    });
    // A sleep of the machine (no jump: its clock since boot counted it) ends it too: its deadline on
    // the monotonic clock did not count the sleep. Its electors' terms stand: each counts the sleep
    // against its own deadline, and renews its lease itself until a new session starts.
    const unsleep = this.time.onSleep((sleptMs) => {
      if (this.current) this.end(this.current, `this machine slept ${Math.round(sleptMs)} ms, which its renew deadline on the monotonic clock did not count`);
    });
    // its stop's wait on DynamoDB counts from the signal (a SIGTERM), as its electors' do, or from a later elector's
    const depart = () => {
      this.stopAtLeast(this.stop.ms);
      this.departIfLeaving();
    };
    if (signal.aborted) this.stopAtLeast(this.stop.ms);
    signal.addEventListener('abort', depart, { once: true });
    try {
      await this.runRows(signal, leaving);
    } finally {
      signal.removeEventListener('abort', depart);
      unsubscribe();
      unsleep();
      this.stop.end();
      const undone = this.stop.leftUndone;
      const why = this.spentWaiting ? `the ${this.stop.ms / 1000} s a stop waits for DynamoDB had run out while its electors stopped (each tells what it left undone)` : `DynamoDB did not answer within the ${this.stop.ms / 1000} s a stop waits for it`;
      if (undone.length > 0) this.onError(new Error(`Session of process ${this.process}: its stop left undone ${undone.join('; ')}: ${why}, and run() resolved. Nothing waits on it: the row goes stale ${this.options.maxLeaseDurationMs / 1000} s after its last renewal (maxLeaseDurationMs) and is collected`));
    }
  }

  private async runRows(signal: AbortSignal, leaving: () => boolean): Promise<void> {
    let first = true;
    let failures = 0;
    while (!leaving()) {
      // when a start goes out: its backoff after a failure counts from here (a start left unanswered waited its bound already)
      const triedAt = this.time.monotonic();
      if (!this.current) {
        try {
          if (await this.start()) {
            if (first) this.startUp.started();
            first = false;
            failures = 0;
          }
        } catch (e) {
          if (e === LEAVING) break; // its probe read abandoned: nothing was written
          // only what can never succeed ends run() (a table that does not exist); a fault it can
          // outlive (unreachable, denied, throttled) is reported and tried again with backoff, as a
          // LeaderElector's start-up is: its electors renew their leases themselves meanwhile
          if (first && (await this.startUp.cannotStart(e))) throw this.startUp.fail(e);
          this.failing = true;
          this.onError(e as Error);
          failures++;
        }
      }
      const l = this.current;
      // no session: try again soon (while DynamoDB's time is in doubt, at another point of its second)
      const wait = l ? Math.max(0, l.renewedAt + this.cadenceMs - this.time.monotonic()) : failures > 0 ? Math.max(0, triedAt + retryDelayMs(failures, this.options.retryPeriodMs, this.time.random()) - this.time.monotonic()) : Math.min(this.options.retryPeriodMs, 500 * (0.6 + 0.8 * this.time.random()));
      // after a failed renewal, the next a retry period after it went out (at once after one abandoned unanswered: it waited its bound);
      // after one answered that vouches for a term left past its stamp (sent before the leave), the next at once, naming it
      await this.sleep(l && this.retrying ? Math.max(0, this.triedAt + this.options.retryPeriodMs - this.time.monotonic()) : l && this.vouchesPastLeft(l) ? 0 : wait, signal, leaving);
      if (leaving()) break;
      if (this.current) await this.renew(this.current);
      if (this.left.size > 0) this.lookAtLeft();
    }
    if (first) this.startUp.failed(signal.reason ?? new Error('Session: run() ended before its first row was written'));
    const l = this.current;
    if (l) {
      this.end(l, undefined);
      this.stop.doing = 'the delete of its row';
      // its stop's wait over before it could leave: the delete fails unsent, once the budget's timer (due now) has cut
      if (this.spentWaiting && !this.stop.spent) await new Promise((spent) => this.stop.signal.addEventListener('abort', spent, { once: true }));
      try {
        await this.store.delete(l.read);
      } catch (e) {
        if (!(e instanceof ConflictError)) this.onError(e as Error); // it expires and is collected
      }
    }
  }

  private retrying = false;
  /** Monotonic time the last renewal (or the read made instead of one) went out. */
  private triedAt = 0;
  /** DynamoDB's pace (paceMs) from the renewals' answers, and from one abandoned unanswered: how long it takes to answer now (renewalBoundMs, pacedCadenceMs). */
  private answerMs: number | undefined;

  /**
   * A renew interval less 137 ms, so the renewals meet DynamoDB's clock at ever other points of its
   * second; sooner where DynamoDB answers slowly (pacedCadenceMs).
   */
  private get cadenceMs(): number {
    const stepped = this.options.renewIntervalMs - 137;
    const cadenceMs = stepped >= this.options.retryPeriodMs ? stepped : this.options.renewIntervalMs;
    return pacedCadenceMs({ cadenceMs, renewDeadlineMs: this.options.renewDeadlineMs, retryPeriodMs: this.options.retryPeriodMs }, this.answerMs);
  }

  /** How long a renewal of `l` sent now waits for its answer before it is abandoned (renewalBoundMs): another try still fits. */
  private renewalBound(l: Live): ReturnType<typeof abortAfter> {
    return abortAfter(this.time, renewalBoundMs(l.renewedAt + this.options.renewDeadlineMs - this.time.monotonic(), this.answerMs));
  }

  private async sleep(ms: number, signal: AbortSignal, leaving: () => boolean): Promise<void> {
    if (leaving()) return;
    const nap = new Nap(this.time, ms, signal, leaving);
    this.nap = nap;
    try {
      await nap.done;
    } finally {
      if (this.nap === nap) this.nap = undefined;
    }
  }

  private trusted(): boolean {
    return this.time.check(this.options.maxClockErrorMs).ok;
  }

  /** While no row can start for DynamoDB's time (start): since when (monotonic), and the causes told. */
  private doubt: { readonly since: number; readonly told: Set<ClockDoubt['reason']> } | undefined;

  /**
   * No row started: DynamoDB's time is not known within maxClockErrorMs. Once that has lasted a
   * renew deadline (a fresh estimate settles within a few answers), onError is told, as an elector
   * is (a ClockSkewError): once a cause, until a row starts.
   */
  private doubted(): void {
    const c = this.time.check(this.options.maxClockErrorMs);
    if (c.ok) return;
    const now = this.time.monotonic();
    const d = (this.doubt ??= { since: now, told: new Set() });
    if (d.told.has(c.reason) || now - d.since < this.options.renewDeadlineMs) return;
    d.told.add(c.reason);
    const e = new ClockSkewError(`Session of process ${this.process}`, c, this.options.maxClockErrorMs);
    const why = e.message.slice(e.who.length + 2).replace(/; it does not lead until it knows \(a clock skew prevention\)$/, '');
    const advice =
      c.reason === 'uncertain'
        ? "; check what slows DynamoDB's answers (a proxy, a congested or distant path): its time is pinned only by answers that take well under a second"
        : c.reason === 'jumped'
          ? '; it starts once later answers confirm the new measurement'
          : '';
    e.message = `${e.who}: ${why}; it has started no session row for ${Math.round((now - d.since) / 1000)} s and starts none until it knows (a clock skew prevention): its electors renew their leases themselves meanwhile (more writes, no lost leases)${advice}`;
    this.onError(e);
  }

  /** Writes a new session row; false when DynamoDB's time is not known well enough to stamp it yet (a read was made instead). */
  private async start(): Promise<boolean> {
    // too many terms left to name on a row: no row vouches for any of this process's terms meanwhile (its electors renew their own)
    if (holdsForLeft(this.left.size)) {
      // told once for the spell (the loop tries again about twice a second meanwhile)
      if (!this.heldForLeft) this.onError(new Error(`Session: no session row is started: ${this.tooManyLeft()}; its electors renew their leases themselves`));
      this.heldForLeft = true;
      return false;
    }
    this.heldForLeft = false;
    if (!this.trusted()) {
      // a response with DynamoDB's Date: the estimate settles, over a few, before the row is stamped
      await this.store.read(this.component, `${this.options.prefix}-probe`, true, this.departure.signal);
      this.answered();
      if (!this.trusted()) return this.doubted(), false;
    }
    this.doubt = undefined;
    // the partition's part of the name (sessionKey reads the row's partition from it)
    const scope = this.options.leaseNames ? sessionScope(this.options.leaseNames) : sessionShard(this.process);
    const name = `${scope}:${this.options.prefix}-${uniqueId(this.clock)}`;
    const sentAt = this.time.monotonic();
    const now = this.time.now();
    const read: IdentityRead = { key: { component: this.component, name }, item: undefined, revision: 0 };
    const row = {
      holderIdentity: name,
      process: this.process,
      hostname: osHostname().slice(0, 253) || 'unknown',
      leaseDurationSeconds: Math.ceil(this.options.maxLeaseDurationMs / 1000),
      acquireTime: now,
      renewTime: now,
    };
    // the terms left so far: every row of this process names them
    const leftTerms = this.leftTerms();
    let item: IdentityLease;
    try {
      item = await this.store.write(read, { set: leftTerms ? { ...row, leftTerms } : row });
    } catch (e) {
      // The AWS SDK sent the creation again after the connection failed, and the copy was refused
      // by the first, which had landed: the row under this start's unique name is this creation's,
      // and the refusal is its answer.
      const own = e instanceof ConflictError && e.current?.['revision'] === 1 && Object.entries(row).every(([k, v]) => e.current?.[k] === v) && JSON.stringify(canonicalLeft(e.current?.['leftTerms'] as Record<string, LeftTerm> | undefined) ?? null) === JSON.stringify(leftTerms ?? null);
      if (!own) throw e;
      item = this.store.parseItem(e.current!);
    }
    this.answered();
    this.landed(item);
    const live: Live = { name, read: { key: read.key, item, revision: item.revision }, renewedAt: sentAt, unanswered: [], unansweredLeft: [], deadline: undefined };
    this.current = live;
    this.retrying = false;
    this.counts.started++;
    this.arm(live);
    return true;
  }

  private arm(l: Live): void {
    l.deadline?.cancel();
    const left = l.renewedAt + this.options.renewDeadlineMs - this.time.monotonic();
    // a timer may fire a millisecond early by the monotonic clock: if the session is still alive then, arm again
    l.deadline = this.time.setTimer(Math.max(0, left), () => void (this.healthy() && this.current === l && this.arm(l)), { background: true });
  }

  private async renew(l: Live): Promise<void> {
    // client-go: never renewed past its renew deadline. A process held past it (a GC pause, SIGSTOP,
    // a blocked event loop) runs its overdue timers in the order they were due, each one's
    // continuation first: the renewal's turn comes before the deadline's timer, and a renewal sent
    // then would keep every term on the session alive another lease duration, though its electors
    // stopped at their own deadline. Judged here as healthy() judges it, which ends the session.
    if (!this.healthy() || this.current !== l) return;
    this.retrying = true;
    this.triedAt = this.time.monotonic();
    // held (a term on it its elector may not know of): not renewed; looked at again a retry period
    // on, or at once when the hold ends; its deadline ends the session if it lasts. A row that may
    // vouch for a term left past the stamp it was left at (a renewal sent before the leave, landed
    // after it) is still made to name it, by a write that keeps its stamp: nothing else would,
    // while held, and the row would vouch for that term by the later stamp for as long as it stands
    if (this.heldFor(l.name) !== undefined) {
      if (!holdsForLeft(this.left.size) && this.mayVouchPastLeft(l)) await this.nameLeft(l);
      return;
    }
    if (!this.trusted()) {
      try {
        await this.store.read(this.component, l.name); // a response with DynamoDB's Date
        this.answered();
      } catch (e) {
        // a fault it outlives (throttled, unreachable): told, and tried again at the next turn
        this.failing = true;
        this.onError(e as Error);
      }
      return;
    }
    const bound = this.renewalBound(l);
    let sentAt = this.time.monotonic();
    try {
      let out = await this.sendRenewal(l, bound.signal);
      for (let round = 1; out.kind === 'landedUnanswered'; round++) {
        // A renewal of this process landed and its answer was lost (or the SDK sent it again and
        // the copy was refused): the row is as this process left it. That renewal extends nothing
        // (only one answered in time does); the next, written against the row it left, goes out
        // at once.
        this.counts.lostAnswers++;
        this.adopt(l, out.row);
        // the next goes out only within the deadline too (a slow answer may have brought it past)
        if (!this.healthy() || this.current !== l || round > 2) return;
        sentAt = this.time.monotonic();
        out = await this.sendRenewal(l, bound.signal);
      }
      this.answered();
      this.answerMs = paceMs(this.time.monotonic() - sentAt, this.answerMs);
      if (out.kind !== 'renewed') {
        // Someone other than this process wrote the row (or deleted it): whatever they wrote, the
        // stamp observers judge its terms by is no longer this process's word, so the session
        // ends, and its electors renew their leases themselves — finding out, at that write, any
        // term that was taken meanwhile.
        this.counts.failedRenewals++;
        this.counts.foreignWrites++;
        this.end(l, 'its row is not as this process last saw it (changed or deleted by someone else, or collected)');
        return;
      }
      if (this.current !== l || this.time.monotonic() >= l.renewedAt + this.options.renewDeadlineMs) {
        // answered after the deadline: it extends nothing (healthy() ends the session if it has not yet)
        this.healthy();
        return;
      }
      const item = out.row;
      this.adopt(l, item);
      l.renewedAt = sentAt;
      this.retrying = false;
      this.counts.renewals++;
      this.arm(l);
      const ended = item.endedTerms ?? {};
      for (const x of [...this.listeners]) x.renewed(l.name, sentAt, ended);
    } catch (e) {
      // abandoned unanswered: DynamoDB takes at least that long to answer now (a slow path, or a dead
      // connection, which the next answer in time tells apart), so the next renewal goes out sooner and waits longer
      if (bound.signal.aborted) this.answerMs = Math.max(this.answerMs ?? 0, this.time.monotonic() - sentAt);
      this.failing = true;
      this.counts.failedRenewals++;
      this.onError(e as Error);
    } finally {
      bound.cancel();
    }
  }

  /** The row as this process's write left it: read, nothing of it unanswered, the stamp it landed with recorded. */
  private adopt(l: Live, row: IdentityLease): void {
    l.read = { key: l.read.key, item: row, revision: row.revision };
    l.unanswered = [];
    l.unansweredLeft = [];
    this.landed(row);
  }

  /**
   * A held session's row made to name the terms left, its stamp as it is (a renewal in all but the
   * stamp): it renews nothing, so nobody is told of it and its deadline stays where it was. A
   * renewal of this process that landed unanswered is written over the same way.
   */
  private async nameLeft(l: Live): Promise<void> {
    const bound = this.renewalBound(l);
    try {
      let out = await this.sendRenewal(l, bound.signal, true);
      for (let round = 1; out.kind === 'landedUnanswered'; round++) {
        this.counts.lostAnswers++;
        this.adopt(l, out.row);
        if (this.current !== l || round > 2 || !this.vouchesPastLeft(l)) return;
        out = await this.sendRenewal(l, bound.signal, true);
      }
      this.answered();
      if (out.kind !== 'renewed') {
        // someone other than this process wrote the row (or deleted it): as for a renewal
        this.counts.foreignWrites++;
        this.end(l, 'its row is not as this process last saw it (changed or deleted by someone else, or collected)');
        return;
      }
      this.adopt(l, out.row); // its stamp as it was: nothing later landed
    } catch (e) {
      this.failing = true;
      this.onError(e as Error);
    } finally {
      bound.cancel();
    }
  }

  /** One renewal of `l` against the row as last seen (`keepStamp`: its stamp as it is, nameLeft); its stamp is kept as unanswered until an answer moves the row on. */
  private sendRenewal(l: Live, signal: AbortSignal, keepStamp = false): Promise<SessionRenewal> {
    const stamp = keepStamp ? l.read.item!.renewTime : Math.max(l.read.item!.renewTime, this.time.now());
    const left = this.leftTerms();
    const sentLeft = [...l.unansweredLeft];
    l.unanswered.push(stamp);
    l.unansweredLeft.push(left);
    return this.store.renewSession(l.read, stamp, signal, l.unanswered, left ?? {}, sentLeft);
  }

  /** A request answered: after failures, the process's electors waiting out a backoff read now. */
  private answered(): void {
    if (!this.failing) return;
    this.failing = false;
    recovered(this.client);
  }

  /** Ends session `l` (why: reported to onError; undefined: the process is leaving). */
  private end(l: Live, why: string | undefined): void {
    if (this.current !== l) return;
    this.current = undefined;
    l.deadline?.cancel();
    // its holds end with it (one an elector left when it stopped, its doubt unsettled, is released by nobody)
    this.holds.delete(l.name);
    this.counts.ended++;
    for (const x of [...this.listeners]) x.ended(l.name);
    if (why) this.onError(new Error(`Session ${l.name} ended: ${why}; its electors renew their leases themselves until a new session starts`));
    this.nap?.end();
  }
}

/**
 * What a Session's request IAM refused tells to check: the identities partition its rows are written
 * in, which only a role granted the same leases may write (grantWorker's `dynamodb:LeadingKeys`). A
 * review: a Session given other leaseNames than the role's grant was denied every write, told only to
 * check the role, and never started, its electors renewing each lease themselves.
 */
function partitionDenied(leaseNames: readonly string[] | undefined, component: string): string {
  const from = leaseNames ? `its leaseNames (${leaseNames.join(', ')})` : 'no leaseNames (a role granted every lease, allLeases)';
  return `its rows are written in the identities partition ${component}, chosen by ${from}, and a role may write only the partition of its own grant: give the Session the same leaseNames as the role's grantWorker({ leaseNames }) (in any order), or leave both out (allLeases); else check the role and its credentials. Retrying with backoff; its electors renew their leases themselves meanwhile`;
}

/** A Session option of a LeaderElector. @internal */
// abort: false (z.custom aborts by default), so that a session that is not one does not hide the
// options' other problems; the checks that read a session's options run only once it parsed
export const SessionSchema = z.custom<Session>((v) => v instanceof Session, { error: 'must be a Session (new Session({ client }))', abort: false });

/**
 * Why `session` cannot vouch for terms or candidacies on `tables`: its rows are in another identities
 * table, where neither the coordinator nor the other workers look for them (a review: each term on
 * it was judged ended about every 31 s, the lease leaderless 45% of the time, nothing told).
 */
export function sessionElsewhere(session: Session, tables: { readonly identities?: string | undefined } | undefined): string | undefined {
  const own = tables?.identities;
  const its = session.options.tables.identities;
  if (typeof own !== 'string' || own === its) return undefined;
  return `keeps its rows in the identities table ${its}, and these tables' is ${own}: the coordinator and the other workers look for a term's session in the lease's deployment, so every term on it would be judged ended. Give the Session the same tables (its \`tables\` option)`;
}

/**
 * Why `session` stamps less safely than its user asked (undefined when it does not): every term
 * held on a session, and a candidate on one, is judged alive by the session row's stamp, so the
 * session's clock options, not the user's, decide how a wrong wall clock is borne. A user on
 * clockSync 'server' over a session on 'none' (a wall clock 12 s slow gave a lease two leaders in a
 * review's simulation), or with a tighter maxClockErrorMs than the session's, would silently take
 * the session's.
 */
export function sessionClockLooser(session: Session, clockSync: 'server' | 'none', maxClockErrorMs?: number): string | undefined {
  const its = session.options;
  if (clockSync === 'server' && its.clockSync === 'none')
    return `stamps its row with this machine's wall clock (its clockSync 'none'), and clockSync here is 'server': every term and candidacy held on the session is judged by that stamp, so a wrong wall clock would decide it after all (two leaders of one lease, with a clock some seconds off). Give the Session clockSync 'server' (the default), or clockSync 'none' here too if the hosts' clocks are kept in step`;
  if (maxClockErrorMs !== undefined && its.maxClockErrorMs > maxClockErrorMs)
    return `renews its row while its estimate of DynamoDB's time is within ${its.maxClockErrorMs} ms (its maxClockErrorMs), looser than maxClockErrorMs here (${maxClockErrorMs} ms): every term held on the session is judged by the session's stamp. Give the Session a maxClockErrorMs of ${maxClockErrorMs} or less`;
  return undefined;
}

import * as z from 'zod';
import { Nap, every, systemClock, uniqueId, type Clock, type Timer } from '../clock.js';
import { CandidateSpec, CandidateSpecFields, candidateSpecRules, MAX_RENEW_INTERVAL_MS, type Candidate } from '../schemas/candidate.js';
import type { Lease } from '../schemas/lease.js';
import { Instance } from '../schemas/common.js';
import { Location } from '../schemas/location.js';
import { Platform } from '../schemas/platform.js';
import { OLDEST_EMULATION_VERSION, checkPreferredStrategies } from '../schemas/strategy.js';
import { parse } from '../schemas/validation.js';
import { CandidacyStore, CandidateStore } from '../stores/candidate-store.js';
import { LeaseStore } from '../stores/lease-store.js';
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { resolveLocation } from './platform.js';
import { errorSink, faultKind, faultReporter, mayHaveLanded, retryDelayMs, RETRY_JITTER, START_RETRY_MS, StopBudget } from './faults.js';
import { boundedClient, MIN_REQUEST_BOUND_MS, requestBoundMs } from './bounded-client.js';
import { retryOnConflict } from '../stores/errors.js';
import { STAMP_ERROR_MS } from './step.js';
import { ClientSchema, ClockSchema, ClockSyncSchema, StartUp, TablesSchema, aborted, deepFreeze, everyProblem, fn, optionErrors, runningTableFault, stampClockFor, LEASES_AND_CANDIDATES, type DeepReadonly } from './options.js';
import { tableState } from './table-state.js';
import { instanceOnSession, processOf } from '../schemas/instance.js';
import { Session, SessionSchema, sessionClockLooser, sessionElsewhere, sessionSeam } from './session.js';
import { sleptUnseen, stampNow, type StampClock } from './server-clock.js';

/**
 * The longest wait before a renewal that failed is tried again: the wait doubles from
 * START_RETRY_MS up to it (jittered), never past renewIntervalMs. Tried again only at the next
 * interval, one failure at the longest interval left the row unrenewed for 30 minutes, stale as the
 * next renewal landed (a live candidate collected); at this cap a DynamoDB that stays down is asked
 * about once a minute per candidate, and the row is renewed within a minute of its answering again.
 */
const RENEW_RETRY_CAP_MS = 60_000;

/**
 * What a worker stands with (KEP-4355's LeaseCandidate spec, less the names): the fields of a
 * LeaseCandidate's options, and the LeaderElector's `candidacy` option.
 */
export const CandidacyShape = {
  /** The version of the binary this worker runs (strict semver, e.g. `1.31.0`). */
  binaryVersion: CandidateSpec.shape.binaryVersion,
  /** The version it behaves as (≤ binaryVersion): the coordinator elects the oldest (KEP-4355). */
  emulationVersion: CandidateSpec.shape.emulationVersion,
  /**
   * The strategies this worker accepts, best first: `OldestEmulationVersion` (the coordinator
   * elects), `NoCoordination` (it elects nobody: this worker takes the lease by its fallback), or a third party's, a qualified name
   * with a domain prefix (`example.com/my-strategy`: the coordinator leaves the lease to it). A
   * name without a `/` that Conclave does not know is refused, as Kubernetes refuses it: misspelt,
   * it would leave the lease to nobody. @default ['OldestEmulationVersion']
   */
  preferredStrategies: CandidateSpec.shape.preferredStrategies.superRefine(checkPreferredStrategies).default([OLDEST_EMULATION_VERSION]),
  /** Free-form labels on the candidate row. */
  labels: CandidateSpec.shape.labels,
  /**
   * Where this worker runs, `{ zone?, region? }` (e.g. `{ zone: 'us-east-1a' }`): the coordinator
   * prefers candidates in its configured zones and regions (ElectionConfig `preferredLocations`).
   * A zone such as `us-east-1a` implies its region. @default the zone ECS task metadata or EC2
   * IMDS reports (the LeaderElector's `platform: 'detect'`), and its region, else AWS_REGION
   */
  location: Location.optional(),
  /**
   * How often the row is renewed without being asked. KEP-4355's candidates renew every 5 minutes;
   * Conclave's every 10: nothing waits for them. A candidate shows it is alive when asked (it
   * answers pings at once), so the renewal only keeps its row from being collected (30 minutes:
   * `candidateStaleAfterMs`), two missed renewals away. On a live session (the `session` option)
   * the session's renewals show it alive instead, and the row is renewed every
   * ON_SESSION_RENEW_MS. At most 900000 (twice in the coordinator's default stale age; with a
   * shorter `candidateStaleAfterMs`, keep it at most half of that). @default 600000
   */
  renewIntervalMs: z
    .number()
    .int('must be whole milliseconds')
    .min(1_000, 'must be >= 1000 ms')
    .max(MAX_RENEW_INTERVAL_MS, `must be <= ${MAX_RENEW_INTERVAL_MS} ms (15 minutes): the coordinator collects a row not renewed for 30 minutes by default (candidateStaleAfterMs), so it is renewed at least twice in that time`)
    .default(10 * 60_000),
};

/** The fields of the candidate row that are the spec, for CandidateSpec's cross-field rules. */
type SpecFields = Omit<CandidateSpec, 'identity' | 'platform'>;

/**
 * Adds CandidateSpec's cross-field issues (emulation ≤ binary, no strategy twice) under `path`: the one place those rules are written is the spec.
 * Each rule reads only the fields (and strategies) that passed their own checks, so a bad one is reported as itself and hides no rule over the
 * others (a bad strategy hid one listed twice, a bad zone an emulation above the binary). A field's own issue the spec finds is added only where
 * the options said nothing of that field, so none is reported twice. `from`: spec fields the caller took from options of its own (the
 * elector's identity is its candidate name): an issue there names that option, unless one already does.
 */
export function checkCandidacy(candidacy: SpecSource, ctx: z.RefinementCtx, path: readonly PropertyKey[] = [], from: Readonly<Partial<Record<keyof SpecFields, readonly PropertyKey[]>>> = {}): void {
  const reported = (at: readonly PropertyKey[]) => ctx.issues.some((i) => at.every((p, n) => i.path?.[n] === p));
  /** Where the spec's `at` is among the options. */
  const optionPath = (at: readonly PropertyKey[]): PropertyKey[] => {
    const own = from[at[0] as keyof SpecFields];
    return own ? [...own, ...at.slice(1)] : [...path, ...at];
  };
  const spec = specOf(candidacy);
  for (const issue of CandidateSpecFields.safeParse(spec).error?.issues ?? []) {
    if (!reported(optionPath(issue.path.slice(0, 1)))) ctx.addIssue({ code: 'custom', path: optionPath(issue.path), message: issue.message });
  }
  const before = [...ctx.issues]; // the fields' own, not the rules'
  const failed = (at: readonly PropertyKey[]) => before.some((i) => optionPath(at).every((p, n) => i.path?.[n] === p));
  candidateSpecRules(spec, failed, (at, message) => ctx.addIssue({ code: 'custom', path: optionPath(at), message }));
}

/** The options of a LeaseCandidate; a bad one is a ValidationError naming the field. */
export const LeaseCandidateOptionsSchema = z
  .strictObject(
    {
      /** The lease this candidate stands for. */
      leaseName: CandidateSpec.shape.leaseName,
      /** Its name, unique per lease; the lease's holderIdentity when it leads. */
      name: CandidateSpec.shape.name,
      ...CandidacyShape,
      /** Where the tables are: a prefix, or `{ prefix?, candidates?, leases? }`; the candidates table is used, and the leases table to claim a name another start-up holds. @default 'conclave' */
      tables: TablesSchema,
      /** The DynamoDB client the row is written with. */
      client: ClientSchema,
      /**
       * Where row times come from: `server` (DynamoDB's clock, from its responses' Date header,
       * carried on this machine's monotonic clock: the wall clock may be off or step), or `none`
       * (this machine's wall clock, which must then be within the coordinator's clockSkewMs).
       * @default 'server'
       */
      clockSync: ClockSyncSchema,
      /** Test hook: this machine's clock (wall and monotonic). @default systemClock */
      clock: ClockSchema.optional(),
      /**
       * Unique per start-up, written as the row's `identity`; a restarted worker is a new instance.
       * On a session it must name the session's process (`…@<process>`). @default `${name}_` and a
       * random UUID (and `@<process>` on a session)
       */
      instance: Instance.optional(),
      /**
       * The process's Session (lib/sdk/session.ts), shared with its LeaderElectors: while it lives,
       * the row names it and the coordinator counts the candidate alive by the session's renewals
       * (every few seconds) rather than by the row's own, which then come every ON_SESSION_RENEW_MS
       * instead of every renewIntervalMs — the candidates' writes are most of what a quiet lease
       * costs once its holder renews on a session (docs/benchmarks.md). A LeaderElector passes its
       * own `session`. @default none
       */
      session: SessionSchema.optional(),
      /**
       * One identity, one process: how long a new start-up that finds another start-up's row of its
       * name waits for that one to show itself (its electors answer the claim put on the lease, or
       * on its candidate row while the lease has none, at their next read). It is refused with a DuplicateIdentityError if that one answers, and takes
       * the row over if not (it was killed). A LeaderElector passes its leaseDurationMs. Only a
       * LeaderElector's candidacy answers: a LeaseCandidate run on its own reads no lease, so a
       * second process under its name is not refused but takes the row over after this window, and
       * the first learns it at its next renewal (onError, healthy() false). Give each process a
       * unique name (the pod's name, the ECS task ARN, or the host name and a randomUUID()).
       * @default 15000
       */
      claimWindowMs: z.number().int().min(100, 'must be >= 100 ms').max(86_400_000, 'must be at most 86400000 ms (a day, the longest lease)').default(15_000),
      /** A renewal that failed for a reason other than a race (tried again soon, with backoff up to a minute; the first failure in a row told, then every tenth), or a failed withdrawal. @default a process warning */
      onError: fn<(error: Error) => void>().optional(),
    },
    { error: optionErrors('LeaseCandidate', 'leaseName, name, emulationVersion, binaryVersion and client', { table: 'name the tables with `tables` (a prefix, or { candidates })' }) },
  )
  .superRefine((o, ctx) => {
    const valid = everyProblem.valid(ctx); // taken before checkCandidacy adds its issues
    // checkCandidacy leaves out the fields that failed their own schemas
    checkCandidacy(o, ctx);
    if (valid('session', 'instance') && o.session instanceof Session && o.instance !== undefined && processOf(o.instance) !== o.session.process) {
      ctx.addIssue({ code: 'custom', path: ['instance'], message: `must end with "@${o.session.process}" (the session's process) on a session, or be left out` });
    }
    const elsewhere = valid('session', 'tables') && o.session instanceof Session ? sessionElsewhere(o.session, o.tables) : undefined;
    if (elsewhere) ctx.addIssue({ code: 'custom', path: ['session'], message: elsewhere });
    const looser = valid('session', 'clockSync') && o.session instanceof Session ? sessionClockLooser(o.session, o.clockSync) : undefined;
    if (looser) ctx.addIssue({ code: 'custom', path: ['session'], message: looser });
  }, { when: everyProblem.when });

/** The options of a LeaseCandidate as written. */
export type LeaseCandidateOptions = z.input<typeof LeaseCandidateOptionsSchema>;
type Parsed = z.output<typeof LeaseCandidateOptionsSchema>;
/** A LeaseCandidate's options as resolved (defaults applied, tables named), read-only; the client is not among them. */
export type ResolvedLeaseCandidateOptions = DeepReadonly<Omit<z.output<typeof LeaseCandidateOptionsSchema>, 'client' | 'clock' | 'instance' | 'onError' | 'session'>>;

/**
 * How often a candidate on a live session renews its own row (the `session` option): the session's
 * renewals show it alive meanwhile, so its own renewal only keeps the row's TTL (twice this) ahead.
 */
export const ON_SESSION_RENEW_MS = 6 * 60 * 60_000;

/**
 * What to give each process instead of an identity another uses: not the host name and the pid,
 * which two containers on one host's network share (Kubernetes hostNetwork, ECS networkMode host,
 * docker --network host: the host's name, and node as PID 1 in each).
 */
export const UNIQUE_IDENTITY =
  "give each process a unique identity (the pod's name, the ECS task ARN, or the host name and a randomUUID(); not the host name and the pid, which containers on one host's network share, node being PID 1 in each), and each LeaderElector of one process on this lease an identity of its own";

/**
 * One identity, one process: two start-ups stood under one candidate name. The newcomer's run()
 * rejects with it (`refused`); the start-up that holds the name reports it to onError (`held`).
 * Both on one process's Session (two LeaderElectors there under one identity and lease), it says so.
 */
export class DuplicateIdentityError extends Error {
  /** Always `DuplicateIdentityError`. */
  override readonly name = 'DuplicateIdentityError';
  constructor(
    /** The candidate name (the worker's identity). */
    readonly identity: string,
    /** The lease the identity stands for. */
    readonly leaseName: string,
    /** The start-up that was refused (the newcomer); `(unnamed)` to the holder told of a claim put while the lease had no row. */
    readonly refused: string,
    /** The start-up that holds the name, alive: it answered the newcomer's claim. */
    readonly holder: string,
    /** Which of the two reports it. */
    readonly side: 'refused' | 'held',
  ) {
    // both instances name one process's session (processOf): two electors of this process, which a
    // unique identity per process would not tell apart
    const sameProcess = processOf(refused) !== undefined && processOf(refused) === processOf(holder);
    const fix = sameProcess ? 'run one LeaderElector per lease in a process (share it), or give each elector of this lease a distinct identity' : UNIQUE_IDENTITY;
    super(
      side === 'refused'
        ? `identity "${identity}" of lease "${leaseName}" is in use by ${sameProcess ? 'another LeaderElector in this process' : 'a live process'} (start-up ${holder} answered); this start-up (${refused}) is refused: ${fix}`
        : `start-up ${refused}${sameProcess ? ', another LeaderElector in this process,' : ''} tried to stand under identity "${identity}" of lease "${leaseName}", which this start-up (${holder}) holds; it was refused: ${fix}`,
    );
  }
}

/** The fields of a candidate row only others write (the coordinator's ping and collection, an operator's pin): a claim changes none of them. */
const othersFields = (c: Candidate): string => JSON.stringify([c.pingTime, c.collectedAt, c.priority, c.priorityExpiresAt]);

type SpecSource = DeepReadonly<Pick<Parsed, 'leaseName' | 'name' | 'binaryVersion' | 'emulationVersion' | 'preferredStrategies' | 'labels'>>;

function specOf(o: SpecSource): SpecFields {
  return {
    leaseName: o.leaseName,
    name: o.name,
    binaryVersion: o.binaryVersion,
    emulationVersion: o.emulationVersion,
    // a field not of its type (reported by the options' own schema, and not again) is not spread
    preferredStrategies: Array.isArray(o.preferredStrategies) ? [...o.preferredStrategies] : [],
    ...(o.labels && typeof o.labels === 'object' ? { labels: { ...o.labels } } : {}),
  };
}

const TTL_FACTOR = 2;
/** A claim's window is watched with this many reads of the row (an answer ends the wait early). */
const CLAIM_READS = 5;
/**
 * A row off a session not renewed for this long is left by no live start-up: two renewals missed at
 * the longest interval (the coordinator's default candidateStaleAfterMs, past which it collects it).
 */
const STALE_ROW_MS = 2 * MAX_RENEW_INTERVAL_MS;
/**
 * How much earlier than the claim an answer may be stamped: both stamps are DynamoDB's time as two
 * start-ups measure it (an elector's candidacy), each within STAMP_ERROR_MS of it.
 */
const CLAIM_ANSWER_SLACK_MS = 2 * STAMP_ERROR_MS;

/**
 * What the SDK's own code gives a candidate beyond its options (candidateWith). Not part of the
 * public API.
 * @internal
 */
export interface CandidateInternals {
  /** Its LeaderElector's `multiRegion`: every read of its row strongly consistent (an MRSC table). */
  readonly multiRegion?: boolean;
  /** Its LeaderElector's stop budget: the withdrawal waits within it, and what it cuts is told by the elector. */
  readonly stop?: StopBudget;
  /** Told as each renewal on its timer lands (not one asked for: renew()): its LeaderElector's start-up that stands down stands again (step.ts standsDown). */
  readonly renewedOnTurn?: () => void;
}

/** What its LeaderElector tells a candidacy (leaseRowRead): kept off the exported class. */
const leaseRowReads = new WeakMap<LeaseCandidate, (lease: Lease | undefined) => void>();

/**
 * Its LeaderElector read the lease row (`lease`; undefined: none). None: `candidate` looks for a
 * claim on its own row (askForName). One that says its own row may be gone (leaseSeen): renewed now.
 * @internal
 */
export function leaseRowRead(candidate: LeaseCandidate, lease: Lease | undefined): void {
  leaseRowReads.get(candidate)?.(lease);
}

/** A stand-down on a session (LeaseCandidate's `down`): its mark's time once sent, and earlier ones still owed a take-off. */
type Down = { until?: number; readonly earlier: number[] };

/** The marks `down` owes a take-off: its own (once sent) and its earlier ones'. */
const marksOf = (down: Down | undefined): number[] => (down ? [...down.earlier, ...(down.until !== undefined ? [down.until] : [])] : []);

/** What its LeaderElector tells a candidacy that stands down (standDown): kept off the exported class. */
const standDowns = new WeakMap<LeaseCandidate, (signal?: AbortSignal) => Promise<void>>();

/**
 * Its LeaderElector stands down until the next renewal on `candidate`'s timer (step.ts standsDown):
 * on a session, whose renewals show it alive, its row is marked so (standsDownUntil, a renew
 * interval ahead), and that renewal takes the mark off. Off one, nothing is written: its row
 * shows no life meanwhile. `signal` abandons the write (a fault rejects: the elector stands down all the same).
 * @internal
 */
export function standDown(candidate: LeaseCandidate, signal?: AbortSignal): Promise<void> {
  return standDowns.get(candidate)?.(signal) ?? Promise.resolve();
}

/** The internals of the candidate being constructed by candidateWith (read once, by the constructor). */
let building: CandidateInternals = {};

/**
 * A LeaseCandidate built with `internals`: how a LeaderElector builds its candidacy.
 * @internal
 */
export function candidateWith(internals: CandidateInternals, options: LeaseCandidateOptions): LeaseCandidate {
  building = internals;
  try {
    return new LeaseCandidate(options);
  } finally {
    building = {};
  }
}

/**
 * A worker's candidacy for one lease (KEP-4355's LeaseCandidate): `run(signal)` registers its row,
 * renews it every few minutes, acknowledges elections when asked, and removes the row once the
 * signal aborts. A LeaderElector in coordinated mode runs one itself (its `candidacy` option);
 * run one on its own to stand without electing in-process. Bad configuration (emulation above binary,
 * malformed semver, empty names) is a ValidationError at construction, naming the field.
 */
export class LeaseCandidate {
  /** The options as resolved: defaults applied, table names resolved. Frozen. */
  readonly options: ResolvedLeaseCandidateOptions;
  /** Unique per start-up: the row's `identity`. */
  readonly instance: string;
  /**
   * Resolves with the row as first written by run(); rejects if run() failed before that (or its
   * signal aborted first). Pending until run() is called.
   */
  readonly ready: Promise<Candidate>;
  private readonly store: CandidacyStore;
  /** The row's removal as it withdraws (and again later, a left-over row): each request bounded by MIN_REQUEST_BOUND_MS, not a claim window. */
  private readonly removals: CandidateStore;
  /** Its stop's wait on DynamoDB (STOP_BUDGET_MS from run()'s signal aborting): its LeaderElector's, or its own. */
  private readonly stopBudget: StopBudget;
  /** What the row's times are read from (clockSync); durations use its monotonic clock. */
  private readonly clock: StampClock;
  private readonly onError: (e: Error) => void;
  private readonly client: DynamoDBClient;
  /** onError, each fault named (lib/sdk/faults.ts). */
  private readonly report: (e: unknown) => void;
  private readonly startUp: StartUp<Candidate>;
  /** Whether its stop's budget is its own (run on its own), not its LeaderElector's: then it tells what its stop cut. */
  private readonly ownsStop: boolean;
  private readonly renewedOnTurn: (() => void) | undefined;
  private timer: Timer | undefined;
  /** The next try of a renewal on the timer that failed (sooner than the next interval), while one is due. */
  private retry: Timer | undefined;
  /** Renewals on the timer (and their tries again) that failed in a row. */
  private failures = 0;
  /** A renewal on the timer (or a try again) is in flight. */
  private turning = false;
  /** Unsubscribes the renewal at a sleep DynamoDB's answers show (set with the timer). */
  private unsleep: (() => void) | undefined;
  private registered = false;
  /** The other start-up a renewal found holding this candidate's row (two workers share one name). */
  private displacedBy: string | undefined;
  private platform: Platform | undefined;
  /** Where clients reach this worker (its LeaderElector's `advertise`), written on the row. */
  private address: string | undefined;
  /** The process's session, if any (the `session` option). */
  private readonly session: Session | undefined;
  /** The session the row names, as this start-up last wrote it. */
  private standsOn: string | undefined;
  /** When (monotonic) this start-up last wrote the row. */
  private wroteAt = -Infinity;
  /** Renew the row every renewIntervalMs even on a live session: it was found gone once under one (renew). */
  private ownRenewals = false;
  /** A renewal out of the timer's turn (renewUnscheduled: onto a new session, or after a sleep) is in flight. */
  private moving = false;
  /** The renewals in flight, which a withdrawal waits for. */
  private readonly renewals = new Set<Promise<void>>();
  /**
   * Set when the row's removal failed on a session: the row would count as alive for as long as
   * the process's session lives, so it is removed again at each session renewal (which says
   * DynamoDB answers) until that lands, the session ends or the process leaves; then this detaches
   * from the session.
   */
  private leftover: (() => void) | undefined;
  /** A removal of the leftover row is in flight. */
  private removing = false;
  /** The row's revision as this start-up's own writes left it: a higher one read is another's write (claimsOnRow). */
  private ownRevision = 0;
  /** The row's fields only others write, as this start-up last wrote or read them: a write that changed none of them is a claim. */
  private othersFields = '';
  /** The row's renewTime as this start-up last wrote or read it: a claim leaves it as it was (one of its own renewals in doubt that landed does not). */
  private ownRenewTime = 0;
  /** When (monotonic) the row was last read for a claim, and whether that read is in flight (claimsOnRow). */
  private claimsReadAt = -Infinity;
  private readingClaims = false;
  /** The lease row as its LeaderElector last read it (leaseSeen). */
  private leaseRead: Lease | undefined;
  /**
   * Its LeaderElector's stand-down on a session (markStandingDown), until the next renewal on its
   * timer takes it over (turn): `until` (DynamoDB's time) set as its mark is sent. Dropped when the
   * mark was refused unwritten (an older construct's grant refuses the attribute): only a mark that
   * landed, or may have, is owed a take-off. `earlier`: the marks of stand-downs before it still
   * owed one (a later mark that lands replaces them on the row; one that does not, leaves them).
   */
  private down: Down | undefined;
  /** Its LeaderElector's stand-downs so far: a renewal on the timer during which one began does not stand it again (onTurn). */
  private standDowns = 0;

  /** Validates and resolves `options`; nothing is written until run(). @throws ValidationError naming each bad option */
  constructor(options: LeaseCandidateOptions) {
    const internals = building;
    building = {};
    const o = parse(LeaseCandidateOptionsSchema, options, `LeaseCandidate options${typeof options?.name === 'string' ? ` for "${options.name}"` : ''}`);
    const { client, clock, instance, onError, session, ...data } = o;
    this.options = deepFreeze(data);
    this.session = session;
    // its reads and writes give up after a claim window: one that never answers must not stop the candidacy (bounded-client.ts);
    // as it stops, within its stop's budget, and its row's removal after a few seconds (a stop must not wait a claim window)
    this.stopBudget = internals.stop ?? new StopBudget(clock ?? systemClock);
    const requests = this.stopBudget.requests(boundedClient(client, clock ?? systemClock, requestBoundMs(data.claimWindowMs)));
    this.store = new CandidacyStore(requests, this.options.tables.candidates, internals.multiRegion === true);
    this.removals = new CandidateStore(this.stopBudget.requests(boundedClient(client, clock ?? systemClock, MIN_REQUEST_BOUND_MS)), this.options.tables.candidates, internals.multiRegion === true);
    this.clock = stampClockFor(data.clockSync, client, clock ?? systemClock);
    const unique = uniqueId(clock ?? systemClock);
    this.instance = instance ?? (session ? instanceOnSession(this.options.name, unique, session.process) : `${this.options.name}_${unique}`);
    this.onError = errorSink(onError, `candidate "${this.options.name}" of lease "${this.options.leaseName}"`, clock ?? systemClock);
    this.client = requests;
    const subject = `candidate "${this.options.name}" of lease "${this.options.leaseName}"`;
    const report = faultReporter(this.onError, subject, client, runningTableFault(subject, this.options.tables, LEASES_AND_CANDIDATES));
    // a request its stop's budget cut is told once, as run() resolves (its LeaderElector's, or tellUndone)
    this.report = (e) => void (this.stopBudget.failed(e) || report(e));
    this.ownsStop = internals.stop === undefined;
    this.renewedOnTurn = internals.renewedOnTurn;
    // a missing table is looked at (DescribeTable) before the start-up ends: one still being created is waited for
    this.startUp = new StartUp(`candidate "${this.options.name}" of lease "${this.options.leaseName}"`, this.options.tables, { state: tableState(requests), clock: clock ?? systemClock }, LEASES_AND_CANDIDATES);
    this.ready = this.startUp.ready;
    leaseRowReads.set(this, (lease) => this.leaseSeen(lease));
    standDowns.set(this, (signal) => this.markStandingDown(signal));
  }

  /**
   * @internal Where this worker runs: the LeaderElector sets what it detected before it runs the
   * candidacy; written at the next registration.
   */
  setPlatform(platform: Platform | undefined): void {
    this.platform = platform === undefined ? undefined : parse(Platform, platform, `LeaseCandidate platform for "${this.options.name}"`);
  }

  /**
   * @internal Where clients reach this worker: the LeaderElector sets its `advertise` option (already
   * validated) before it runs the candidacy; the coordinator's election and the holder's hand-off copy
   * it onto the lease with the term they give this worker.
   */
  setAddress(address: string | undefined): void {
    this.address = address;
  }

  /** The lease this candidate stands for. */
  get leaseName(): string {
    return this.options.leaseName;
  }
  /** The candidate's name (the worker's identity). */
  get name(): string {
    return this.options.name;
  }

  /**
   * Whether the coordinator sees this candidate now: run() has written its row and keeps it, and
   * the last renewal did not find it taken by another start-up of the same name. False before the
   * first write, after run() ends, and while another worker shares this name. A renewal that fails
   * for another reason (a fault, tried again soon with backoff) leaves it true: the row outlives
   * many missed renewals. False after a sleep of the machine that its monotonic clock did not count
   * (clockSync 'server': the clock since boot shows it), until DynamoDB answers again: the row may
   * have been collected meanwhile; asked then, it renews at once.
   */
  healthy(): boolean {
    if (this.registered && sleptUnseen(this.clock)) {
      this.renewUnscheduled();
      return false;
    }
    return this.registered && this.displacedBy === undefined;
  }

  /**
   * Its LeaderElector read the lease row (leaseRowRead). None: claims are looked for on this
   * candidate's own row (claimsOnRow). One made anew since the read before (its revision lower, its
   * term taken later: an older copy's is not), or a later one that no longer names this start-up
   * successor or second successor where that one did: its own row may be gone too (the tables made
   * anew, as local mode started again does, or a table restored; the coordinator names no candidate
   * without a row), and is renewed now, which registers it again (renewRow), rather than at the next
   * renewal, up to renewIntervalMs on: till then this worker is not electable nor named successor.
   * Only a change between two reads the elector makes anyway: nothing is sent in steady state.
   */
  private leaseSeen(lease: Lease | undefined): void {
    const last = this.leaseRead;
    this.leaseRead = lease;
    if (!lease) return this.claimsOnRow();
    if (!last || lease.holderInstance === this.instance) return;
    const anew = lease.revision < last.revision && (lease.acquireTime ?? 0) > (last.acquireTime ?? 0);
    const named = (l: Lease) => (l.successor === this.options.name && (l.successorInstance ?? this.instance) === this.instance) || (l.secondSuccessor === this.options.name && (l.secondSuccessorInstance ?? this.instance) === this.instance);
    if (anew || (lease.revision > last.revision && named(last) && !named(lease))) this.renewUnscheduled();
  }

  /**
   * Its LeaderElector read no lease row (leaseSeen): a new start-up of this name then puts its
   * claim on this candidate row (askForName), read here at most every claimWindowMs / CLAIM_READS.
   * A revision this start-up did not write is answered by a renewal, as a claim on the lease is.
   */
  private claimsOnRow(): void {
    if (!this.registered || this.readingClaims || this.clock.monotonic() - this.claimsReadAt < this.options.claimWindowMs / CLAIM_READS) return;
    this.readingClaims = true;
    this.claimsReadAt = this.clock.monotonic();
    void this.answerClaim()
      .catch(this.report)
      .finally(() => (this.readingClaims = false));
  }

  private async answerClaim(): Promise<void> {
    const row = (await this.store.read(this.options.leaseName, this.options.name, false)).item;
    if (row?.identity !== this.instance || row.revision <= this.ownRevision) return;
    // a ping, a collection's mark, an operator's pin, or a renewal of its own whose answer was lost (it landed) also
    // raise it: answered all the same, told only when nothing else changed, renewTime included
    const claim = othersFields(row) === this.othersFields && row.renewTime === this.ownRenewTime;
    this.ownRevision = row.revision;
    this.othersFields = othersFields(row);
    this.ownRenewTime = row.renewTime;
    await this.renew();
    // the newcomer is not named: a claim on the candidate row is its revision alone
    if (claim) this.onError(new DuplicateIdentityError(this.options.name, this.options.leaseName, '(unnamed)', this.instance, 'held'));
  }

  private spec(): CandidateSpec {
    const location = resolveLocation(this.options.location, this.platform);
    return { ...specOf(this.options), ...(this.platform ? { platform: this.platform } : {}), ...(this.address ? { address: this.address } : {}), ...(location ? { location } : {}) };
  }

  /** The row's TTL: twice the stale age ahead, or, on a session, twice ON_SESSION_RENEW_MS. */
  private expiresAt(now: number, onSession: boolean): number {
    return Math.ceil((now + TTL_FACTOR * (onSession ? ON_SESSION_RENEW_MS : 30 * 60_000)) / 1000);
  }

  /** The session a write of the row names: the live one's, or null to take the row off one that is gone (undefined: no session option). */
  private sessionToName(): string | null | undefined {
    return this.session ? (this.session.name ?? null) : undefined;
  }

  /**
   * Stands until `signal` aborts. Writes the row first — created, or taken over from a previous
   * start-up (its creation time is kept; versions and strategies are this start-up's, and an
   * operator's priority pin resets on restart, as in the KEP) — then renews it every
   * renewIntervalMs; once the signal aborts, removes the row if it is still this start-up's and
   * resolves. A first write that fails for a fault it can outlive (DynamoDB unreachable, a denied
   * or throttled request) is reported to onError and tried again with backoff; it rejects only when
   * its client can never send (no region, an endpoint that is not a URL or has no host) or its table
   * does not exist (a TableNotFoundError; `ready` rejects with it). A failed removal is
   * reported to onError (the row expires). Once per instance.
   */
  async run(signal: AbortSignal): Promise<void> {
    this.startUp.claim('LeaseCandidate');
    if (!this.ownsStop) return this.stand(signal);
    // its stop's wait on DynamoDB counts from the signal, whatever is in flight then
    const stopping = () => {
      this.stopBudget.doing = 'the removal of its row';
      this.stopBudget.start();
    };
    if (signal.aborted) stopping();
    else signal.addEventListener('abort', stopping, { once: true });
    try {
      await this.stand(signal);
    } finally {
      signal.removeEventListener('abort', stopping);
      this.stopBudget.end();
      const undone = this.stopBudget.leftUndone;
      if (undone.length > 0)
        this.onError(new Error(`candidate "${this.options.name}" of lease "${this.options.leaseName}": its stop left undone ${undone.join('; ')}: DynamoDB did not answer within the ${this.stopBudget.ms / 1000} s a stop waits for it, and run() resolved. The row answers no election and is collected once stale`));
    }
  }

  /** run() once claimed: registers, renews until `signal` aborts, then withdraws. */
  private async stand(signal: AbortSignal): Promise<void> {
    if (signal.aborted) return this.startUp.failed(signal.reason);
    await this.startUp.checkClient(this.client, this.clock, signal);
    let row: Candidate | undefined;
    let asked = false;
    for (let failures = 1; !row; failures++) {
      // when this try goes out: the backoff after it fails counts from here (a try left unanswered waited its bound already)
      const triedAt = this.clock.monotonic();
      try {
        if (!asked) await this.askForName(signal);
        asked = true;
        if (signal.aborted) return this.startUp.failed(signal.reason);
        row = await this.register();
        this.registered = true;
      } catch (e) {
        if (signal.aborted && e === signal.reason) return this.startUp.failed(signal.reason); // a read the stop abandoned
        if (e instanceof DuplicateIdentityError || (await this.startUp.cannotStart(e))) throw this.startUp.fail(e);
        // a fault it can outlive (unreachable, denied, throttled, a malformed row): told, tried again
        this.report(e);
        await new Nap(this.clock, Math.max(0, triedAt + retryDelayMs(failures, START_RETRY_MS, this.clock.random()) - this.clock.monotonic()), signal).done;
        if (signal.aborted) return this.startUp.failed(signal.reason);
      }
    }
    this.timer = every(this.clock, this.options.renewIntervalMs, () => this.onTurn(), { background: true });
    // a sleep any answer of this client shows: the row may have been collected meanwhile, renewed at once
    this.unsleep = this.clock.onSleep(() => this.renewUnscheduled());
    // a new session (the last one ended) is named on the row at once: the one it names vouches no more
    const detach = this.session ? sessionSeam(this.session).attach({ renewed: (name) => this.sessionRenewed(name), ended: () => this.dropLeftover() }) : undefined;
    this.startUp.started(row);
    await aborted(signal);
    try {
      await this.withdraw();
      detach?.();
    } catch (e) {
      this.report(e);
      // on a live session: removed again at its next renewals (sessionRenewed), not left alive by it;
      // on one that ended already, nothing vouches for the row (it names an ended session)
      if (detach && this.session?.name !== undefined) this.leftover = detach;
      else detach?.();
    }
  }

  /**
   * Stops looking after a left-over row: it was removed, or the session ended (the row then names
   * an ended session, goes stale by its own stamp and is collected).
   */
  private dropLeftover(): void {
    const detach = this.leftover;
    this.leftover = undefined;
    detach?.();
  }

  /**
   * A renewal on the timer. While the row names the live session and was written less than
   * ON_SESSION_RENEW_MS ago, it is read instead (eventually consistent: a tenth of a write's
   * price; strongly consistent under its elector's `multiRegion`, as every read is), and written
   * only if it is not as this start-up left it: gone (an operator's delete, or a coordinator that
   * does not count sessions collected it), another start-up's, or off the session.
   */
  private async scheduled(): Promise<void> {
    const onSession = this.standsOn !== undefined && this.standsOn === this.session?.name;
    if (!onSession || this.ownRenewals || this.clock.monotonic() - this.wroteAt >= ON_SESSION_RENEW_MS) return this.renew();
    const row = (await this.store.read(this.options.leaseName, this.options.name, false)).item;
    if (row?.identity === this.instance && row.session === this.standsOn) return;
    return this.renew();
  }

  /**
   * Its LeaderElector stands down (standDown): on the live session, its row is marked so until a
   * renew interval on. The mark lands only while the row's renewTime is as this start-up last wrote
   * it (CandidacyStore.markStandsDown): the timer's turn renews the row before it takes the mark off
   * (turn), so a mark still on its way then is refused, not left on the row while the elector stands
   * again. One refused so by another renewal of its own (an acknowledgement, say, or the turn's own
   * renewal during which it began, its answer waited for) is sent again.
   */
  private async markStandingDown(signal?: AbortSignal): Promise<void> {
    this.standDowns++;
    if (!this.registered || this.standsOn === undefined || this.standsOn !== this.session?.name) return;
    const down: Down = { earlier: marksOf(this.down) };
    this.down = down;
    const drop = () => {
      if (this.down === down) this.down = down.earlier.length > 0 ? { earlier: down.earlier } : undefined;
    };
    let until: number;
    try {
      until = (await this.stampNow()) + this.options.renewIntervalMs;
    } catch (e) {
      drop();
      throw e;
    }
    for (let tries = 1; ; tries++) {
      // the timer turned meanwhile (the stand-down is over: the turn takes off any mark sent), or it was abandoned
      if (this.down !== down) return;
      if (signal?.aborted) return drop();
      down.until = until;
      const renewedAt = this.ownRenewTime;
      try {
        if (await this.store.markStandsDown(this.options.leaseName, this.options.name, this.instance, until, { renewedAt }, signal)) return void this.ownRevision++;
      } catch (e) {
        // refused unwritten (an older construct's grant, a throttle): no take-off is owed
        if (!mayHaveLanded(e)) drop();
        throw e;
      }
      // refused by its condition: sent again if a renewal of its own landed since (one still to be answered waited
      // for: the timer's turn, say, which does not stand the elector again now), else left to the turn's take-off
      if (tries >= 3) return;
      if (this.ownRenewTime === renewedAt && this.renewals.size > 0) await Promise.race([Promise.allSettled([...this.renewals]), ...(signal ? [aborted(signal)] : [])]);
      if (this.ownRenewTime === renewedAt) return;
    }
  }

  /**
   * A renewal on the timer. After a stand-down, a write even on a session, and only then its mark
   * taken off (its LeaderElector stands again once this lands: renewedOnTurn): a mark still on its
   * way, which names the renewTime before, can no longer land, and one that landed is taken off
   * here: that one only (or an earlier one still owed), not a later stand-down's mark, landed while
   * the take-off was on its way. A take-off that fails does not hold the renewal up: one the grant
   * refuses (a construct before the mark, which refused the mark too) is told and let be; another is
   * tried again (onTurn), by a stand-down begun meanwhile if any.
   */
  private async turn(): Promise<void> {
    const down = this.down;
    if (down === undefined) return this.scheduled();
    // taken over: a mark not sent yet is not sent, and a registration below names none
    this.down = undefined;
    const owed = (e: unknown) => {
      // tried again with the renewal, or with a stand-down's begun meanwhile
      if (this.down === undefined) this.down = down;
      else this.down.earlier.push(...marksOf(down));
      throw e;
    };
    await this.renew().catch(owed);
    const marks = marksOf(down);
    if (marks.length === 0 || !this.registered) return;
    try {
      // its own marks only: a stand-down that began meanwhile (this turn does not stand the elector again) keeps its own
      if (await this.store.markStandsDown(this.options.leaseName, this.options.name, this.instance, undefined, { marked: marks })) this.ownRevision++;
    } catch (e) {
      if (faultKind(e) === 'denied' && !mayHaveLanded(e)) return this.report(e);
      owed(e);
    }
  }

  /**
   * A renewal on the timer, or a try again of one that failed: a failure (a fault: unreachable,
   * throttled) is told and tried again after a backoff (retryMs), not a renew interval on. None
   * starts while one is in flight.
   */
  private onTurn(): void {
    if (this.turning || this.timer === undefined) return;
    this.retry?.cancel();
    this.retry = undefined;
    this.turning = true;
    const standDowns = this.standDowns;
    void this.turn()
      .then(
        () => {
          this.failures = 0;
          // not once withdrawing, nor after a stand-down that began meanwhile (it lasts until the next turn)
          if (this.timer !== undefined && this.standDowns === standDowns) this.renewedOnTurn?.();
        },
        (e: unknown) => {
          // the first failure of a run told, then every tenth: a Session's hundred candidates in an
          // outage told 600 times its first minute at this backoff, where one failure each says it
          if (this.failures % 10 === 0) this.report(e);
          this.failures++;
          // not once withdrawing (its timer cancelled)
          if (this.timer !== undefined) this.retry = this.clock.setTimer(this.retryMs(), () => ((this.retry = undefined), this.onTurn()), { background: true });
        },
      )
      .finally(() => (this.turning = false));
  }

  /** How long after the `failures`-th renewal in a row failed the next try goes out: from START_RETRY_MS, doubled each time up to RENEW_RETRY_CAP_MS, jittered, at most renewIntervalMs. */
  private retryMs(): number {
    const backoff = Math.min(RENEW_RETRY_CAP_MS, START_RETRY_MS * 2 ** Math.min(this.failures - 1, 10));
    return Math.min(this.options.renewIntervalMs, backoff * (1 + RETRY_JITTER * this.clock.random()));
  }

  /** The process's session was renewed: a row that names another (or none) is moved onto it now. */
  private sessionRenewed(name: string): void {
    // a process leaving waits for nothing but its electors: the left-over row is given up (it goes stale once the session row is gone)
    if (this.leftover) return this.session && sessionSeam(this.session).stopping() ? this.dropLeftover() : this.removeLeftover();
    if (name !== this.standsOn) this.renewUnscheduled();
  }

  /** Renews the row now, out of the timer's turn, unless such a renewal is in flight (or run() does not stand). */
  private renewUnscheduled(): void {
    if (!this.registered || this.moving) return;
    this.moving = true;
    void this.renew()
      .catch(this.report)
      .finally(() => (this.moving = false));
  }

  /** DynamoDB's time to stamp the row with (stampNow), its probe a read of the row. */
  private stampNow(): Promise<number> {
    return stampNow(this.clock, () => this.store.read(this.options.leaseName, this.options.name), `candidate "${this.options.name}" of lease "${this.options.leaseName}"`);
  }

  /**
   * One identity, one process. Before taking over a row another start-up of this name holds (a
   * worker restarted after a crash, or a second process given the same identity), it asks that
   * start-up to show itself. Its electors read the lease at each poll, or at once when woken: the
   * claim goes on the lease row, or, while the lease has none (no coordinator yet, a new lease, a
   * row an operator deleted), on the candidate row as a write of its revision alone, which the
   * holder's candidacy reads while its elector finds no lease row (claimsOnRow); a lease row that
   * appears during the wait is given the claim too. A live one answers by renewing its candidate
   * row, and this start-up is refused (DuplicateIdentityError). No answer within claimWindowMs: it
   * is gone, and register() takes the row over. Nothing to ask when the row is this start-up's,
   * absent, or stale (no live start-up leaves one so). A LeaseCandidate run on its own (no elector)
   * never answers, so one alive is taken over too: answering would cost it a read every few
   * seconds, against a write every 10 minutes (claimWindowMs says so to the user).
   */
  private async askForName(signal: AbortSignal): Promise<void> {
    const { leaseName, name, claimWindowMs } = this.options;
    // a read the stop abandons (a lookup of DynamoDB's name that takes long, say); the claim's write is waited for
    const found = (await this.store.read(leaseName, name, true, signal)).item;
    const holder = found?.identity;
    if (!found || holder === undefined || holder === this.instance || this.stale(found)) return;
    const leases = new LeaseStore(this.client, this.options.tables.leases);
    let claimedAt: number | undefined;
    const onLease = () =>
      retryOnConflict(async () => {
        const lease = await leases.read(leaseName);
        if (!lease.item) return false;
        await leases.write(lease, { set: { identityClaim: { name, instance: this.instance, of: holder, at: (claimedAt ??= this.clock.now()) } } });
        return true;
      });
    let claimed = await onLease();
    if (!claimed) {
      await retryOnConflict(async () => {
        const row = await this.store.read(leaseName, name);
        if (row.item?.identity !== holder) return; // withdrawn, or another start-up's: the wait below ends at once
        claimedAt ??= this.clock.now();
        await this.store.write(row, {});
      });
    }
    const since = this.clock.monotonic();
    let seen = found.renewTime;
    for (let left = claimWindowMs; left > 0 && !signal.aborted; left = claimWindowMs - (this.clock.monotonic() - since)) {
      await new Nap(this.clock, Math.min(left, claimWindowMs / CLAIM_READS), signal).done;
      // a lease row written meanwhile (an election, a fallback): the holder's electors read claims there now, not on its candidate row
      if (!claimed && !signal.aborted) claimed = await onLease();
      const now = (await this.store.read(leaseName, name, true, signal)).item;
      if (now?.identity !== holder) return; // withdrawn (it stopped), or another start-up's now
      if (now.renewTime === seen) continue;
      // An answer is a renewal stamped after the claim was put. One stamped well before it was sent
      // before this start-up asked: a killed start-up's last renewal, landing late on a slow
      // DynamoDB (a request outlives its sender). It proves nothing: the wait goes on.
      if (now.renewTime > (claimedAt ?? 0) - CLAIM_ANSWER_SLACK_MS) throw new DuplicateIdentityError(name, leaseName, this.instance, holder, 'refused');
      seen = now.renewTime;
    }
  }

  /** Whether `row` was left by a start-up that is gone: past its TTL, or off a session and not renewed for STALE_ROW_MS. */
  private stale(row: Candidate): boolean {
    const now = this.clock.now();
    return (row.expiresAt !== undefined && row.expiresAt * 1000 <= now) || (row.session === undefined && now - row.renewTime > STALE_ROW_MS);
  }

  private register(): Promise<Candidate> {
    let first: { readonly holder: string | undefined } | undefined;
    return retryOnConflict(async () => {
      let read = await this.store.read(this.options.leaseName, this.options.name);
      // another start-up of this name wrote the row since the first read (two launched together):
      // it is alive, so this one is refused, as when a live one answers the claim (askForName)
      const holder = read.item?.identity;
      if (first && holder !== undefined && holder !== this.instance && holder !== first.holder) throw new DuplicateIdentityError(this.options.name, this.options.leaseName, this.instance, holder, 'refused');
      first ??= { holder };
      const now = await this.stampNow();
      const createdAt = read.item?.createdAt ?? now;
      // An operator's pin is for the start-up it was given to: a restart resets it (the KEP). A
      // worker may never name priority (IAM: infra/access.ts), so an earlier start-up's pinned
      // row is deleted and written anew, not cleared; the delete is conditioned on the revision read.
      if (read.item && read.item.identity !== this.instance && (read.item.priority !== undefined || read.item.priorityExpiresAt !== undefined)) {
        await this.store.delete(read);
        read = { ...read, item: undefined, revision: 0 };
      }
      const spec = this.spec();
      const session = this.sessionToName() ?? undefined;
      const downUntil = session ? this.down?.until : undefined;
      const written = await this.store.write(read, {
        // ackedPingTime 0: this row's acks are copies of the coordinator's pings (CandidateStore.renew)
        // (its stand-down's mark kept on a row registered again meanwhile)
        set: { ...spec, identity: this.instance, renewTime: now, ackedPingTime: 0, createdAt, expiresAt: this.expiresAt(now, session !== undefined), ...(session ? { session } : {}), ...(downUntil !== undefined ? { standsDownUntil: downUntil } : {}) },
        // a previous start-up's labels, platform, address, location, session and stand-down do not outlive it (the
        // mark named only where the row read has one: under a construct before it, whose grant refuses it, none has)
        remove: [...(spec.labels ? [] : (['labels'] as const)), ...(spec.platform ? [] : (['platform'] as const)), ...(spec.address ? [] : (['address'] as const)), ...(spec.location ? [] : (['location'] as const)), ...(session ? [] : (['session'] as const)), ...(downUntil !== undefined ? [] : read.item?.standsDownUntil !== undefined ? (['standsDownUntil'] as const) : []), 'pingTime'],
      });
      this.standsOn = session;
      this.wroteAt = this.clock.monotonic();
      this.displacedBy = undefined;
      this.ownRevision = written.revision;
      this.othersFields = othersFields(written);
      this.ownRenewTime = written.renewTime;
      return written;
    });
  }

  /**
   * Renews the row now, while run() stands (otherwise it does nothing); this is also the
   * acknowledgement of an election: DynamoDB copies the row's pingTime into ackedPingTime. A row
   * that is gone (collected after a long pause, or deleted by an operator) is registered again; a
   * row another start-up of the same name has taken is left to it (no tug of war) and reported to
   * onError.
   */
  async renew(): Promise<void> {
    if (!this.registered) return;
    // a withdrawal waits for the renewals in flight: none writes the row after run() resolved
    const renewing = this.renewRow();
    this.renewals.add(renewing);
    try {
      await renewing;
    } finally {
      this.renewals.delete(renewing);
    }
  }

  private async renewRow(): Promise<void> {
    const now = await this.stampNow();
    const named = this.sessionToName();
    // null takes the row off a session only when it names one
    const session = named === null && this.standsOn === undefined ? undefined : named;
    const sentAt = this.clock.monotonic();
    // conditioned on the row being this start-up's: another start-up's is never renewed, only reported (below)
    if (await this.store.renew(this.options.leaseName, this.options.name, now, this.expiresAt(now, typeof session === 'string'), session, this.instance)) {
      if (session !== undefined) this.standsOn = session ?? undefined;
      this.wroteAt = sentAt;
      this.displacedBy = undefined;
      this.ownRevision++; // a write of another's landed since is then read as one (claimsOnRow): answered by one more renewal
      this.ownRenewTime = now;
      return;
    }
    const read = await this.store.read(this.options.leaseName, this.options.name);
    if (!read.item) {
      // gone under a session: perhaps collected by a coordinator that does not count sessions (one
      // before 0.2.0, mid-upgrade): renewed on its own from now on, as on no session
      if (this.standsOn !== undefined) this.ownRenewals = true;
      if (this.registered) await this.register(); // not once withdrawing: its row is being removed
    } else if (read.item.identity !== this.instance) {
      this.displacedBy = read.item.identity;
      this.onError(new Error(`candidate "${this.options.name}" of lease "${this.options.leaseName}" was registered by another start-up (${read.item.identity}); two workers share one name - give each a unique name`));
    } else this.displacedBy = undefined; // renewed already at or after `now` (a clock step back): nothing to do
  }

  /** Stops renewing and removes the row if it is still this start-up's. */
  private async withdraw(): Promise<void> {
    this.timer?.cancel();
    this.timer = undefined;
    this.retry?.cancel();
    this.retry = undefined;
    this.unsleep?.();
    this.unsleep = undefined;
    if (!this.registered) return;
    this.registered = false;
    await Promise.allSettled([...this.renewals]);
    await this.removeRow();
  }

  /** Removes the row if it is still this start-up's (else it is gone, or a newer start-up's). */
  private removeRow(): Promise<void> {
    return retryOnConflict(async () => {
      const read = await this.removals.read(this.options.leaseName, this.options.name);
      if (read.item && read.item.identity === this.instance) await this.removals.delete(read);
    });
  }

  /** Tries the left-over removal again (its failure was reported once; the next renewal tries again). */
  private removeLeftover(): void {
    if (this.removing) return;
    this.removing = true;
    this.removeRow()
      .then(() => this.dropLeftover(), () => undefined)
      .finally(() => (this.removing = false));
  }
}

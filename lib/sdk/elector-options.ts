/**
 * A LeaderElector's options (client-go's LeaderElectionConfig, with KEP-4355's candidacy), its
 * callbacks and stop reasons, and the renewal cadence the options imply. Validated by zod: a bad
 * option, or a bad combination, is a ValidationError naming the field and what to do.
 */
import type { PutItemCommandOutput, TransactWriteItemsCommandInput, TransactWriteItemsCommandOutput, UpdateItemCommandOutput } from '@aws-sdk/client-dynamodb';
import * as z from 'zod';
import { Name } from '../schemas/common.js';
import { unknownKeyHint } from '../schemas/validation.js';
import { AdvertisedAddress } from '../schemas/lease.js';
import { Platform } from '../schemas/platform.js';
import type { FencedItemInput } from './fencing.js';
import { CandidacyShape, checkCandidacy } from './candidate.js';
import { ClientSchema, ClockSchema, ClockSyncSchema, PeriodMs, TablesSchema, defaulted, everyProblem, fn, optionErrors, type DeepReadonly } from './options.js';
import type { Push } from './push.js';
import { Session, SessionSchema, sessionClockLooser, sessionElsewhere } from './session.js';

/**
 * The term a leader's work runs in (onStartedLeading's second argument): its fencing token, and
 * writes fenced by this term alone. Unlike the elector's own `fencedWrite` and `fencedItemWrite`,
 * which write in whatever term the worker leads when they are called, these are refused once this
 * term ends, even after the same worker leads again: work that outlives its term (it ignored its
 * signal) can never write in a later one.
 */
export interface LeadingTerm {
  /** The term's fencing token. */
  readonly fencingToken: number;
  /**
   * LeaderElector.fencedWrite, in this term only: a FencingError once it has ended; one still
   * unanswered as it ends rejects with a LeaseLostError then, and one unanswered within the
   * elector's request bound (its retry period, at least 5 s) with a timeout.
   */
  fencedWrite(input: TransactWriteItemsCommandInput): Promise<TransactWriteItemsCommandOutput>;
  /** LeaderElector.fencedItemWrite, in this term only: refused, abandoned and bounded as this term's fencedWrite is. */
  fencedItemWrite(input: FencedItemInput, attribute?: string): Promise<PutItemCommandOutput | UpdateItemCommandOutput>;
}

/**
 * The callbacks of a LeaderElector (client-go's LeaderCallbacks): what this worker does when it
 * starts and stops leading, and whom it sees lead.
 */
export interface LeaderCallbacks {
  /**
   * Runs when this worker becomes leader; `signal` aborts the moment it must stop acting (its
   * `aborted` and `throwIfAborted()` judge the renew deadline when read, so work resumed after a
   * freeze sees it aborted before the elector's own timers have run), and `term` writes in this
   * term only. A promise it returns that rejects (or a throw) before the
   * signal aborts is the work failing (onLeaderWorkFailure); one that rejects after it is the work
   * stopping, as asked. One that rejects with a FencingError (or LeaseLostError) of its own term's
   * fencing token, a write of `term` refused because the lease moved on, is the term ending
   * (onStoppedLeading with `deposed`), whatever onLeaderWorkFailure says: nothing failed. Nothing
   * waits for it: on a step-down or a cancel, onStoppedLeading runs and run() resolves whether or
   * not the work has returned. Work that never returns, or ignores its signal, runs on in the
   * process; its term's writes (`term`) are refused from then on.
   */
  onStartedLeading(signal: AbortSignal, term: LeadingTerm): void | Promise<void>;
  /**
   * Runs when it stops leading: the moment it stops acting (the work's signal aborted), before the
   * hand-over to its successor or the release is written, so that no successor leads before it has
   * run. A promise it returns (an async function's: the declared `void` takes one) is waited for, as
   * client-go's Run waits for OnStoppedLeading, 10 s at most: before that hand-over or release
   * (reasons `preempted` and `workFailed`, and `cancelled` with releaseOnCancel), though then only
   * until the term's renew deadline, past which the term runs out whatever this worker writes (a
   * cancelled leader that leads on for its heir until its next renewal's moment has about the renew
   * deadline less the renew interval left then: 4 s with client-go's timings); and before run()
   * resolves. Meanwhile this worker does not lead (isLeader() is false), and one that writes
   * nothing after it (`renewDeadline`, `deposed`) goes on following. Past that bound onError is
   * told once, and the elector goes on without it; what it throws or rejects with goes to onError.
   * In a stop (`cancelled`, or a step-down while one is under way) it is counted in the 10 s a stop
   * waits on DynamoDB, and bounded by what is left of it less 3 s kept for the hand-over or release
   * after it, so a stop still ends inside the 30 s before SIGKILL, handing over.
   *
   * Called only for a term this worker led: never for one that never led (client-go calls
   * OnStoppedLeading on every exit of Run). Put per-process cleanup after `await run()`. Do not exit
   * the process here (client-go's example does, where OnStoppedLeading follows the release): the
   * write is cut off and the successor waits for the term to run out, which the process says on
   * stderr as it exits. Exit once run() has resolved.
   */
  onStoppedLeading?(info: { reason: StopReason; fencingToken: number }): void;
  /** Runs whenever a new holder is observed (this worker included); what it throws (or rejects with) goes to onError as an Error naming the elector and this callback, with it as its `cause`. */
  onNewLeader?(identity: string): void;
}

/** client-go's RenewDeadline and RetryPeriod: the defaults. */
const DEFAULT_RENEW_DEADLINE_MS = 10_000;
const DEFAULT_RETRY_PERIOD_MS = 2_000;

const CALLBACKS = '{ onStartedLeading(signal, term), onStoppedLeading?(info), onNewLeader?(identity) }';
const CALLBACK_NAMES = ['onStartedLeading', 'onStoppedLeading', 'onNewLeader'];
const Callbacks = z
  .custom<LeaderCallbacks>((v) => {
    if (typeof v !== 'object' || v === null) return false;
    const c = v as Record<string, unknown>;
    return typeof c['onStartedLeading'] === 'function' && ['onStoppedLeading', 'onNewLeader'].every((k) => c[k] === undefined || typeof c[k] === 'function');
  }, { error: `must be ${CALLBACKS}, each a function`, abort: false })
  // a callback no elector calls, silently (`onError` there, `onStopedLeading`): each named, with
  // what was meant. Only functions (and the elector's own options): an object of a class of its
  // own keeps its fields beside its methods
  .superRefine((v, ctx) => {
    if (typeof v !== 'object' || v === null) return;
    const own = v as unknown as Record<string, unknown>;
    for (const k of Object.keys(v).filter((k) => !CALLBACK_NAMES.includes(k) && (typeof own[k] === 'function' || k === 'onError' || k === 'onLeaderWorkFailure'))) {
      const meant = k === 'onError' || k === 'onLeaderWorkFailure' ? `: ${k} is an option of the LeaderElector itself, beside callbacks` : unknownKeyHint(k, CALLBACK_NAMES).replace(' (the options: ', ' (the callbacks: ');
      ctx.addIssue({ code: 'custom', path: [k], message: `is no callback, so nothing would call it${meant}` });
    }
  });

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
      /**
       * The tables are DynamoDB global tables with multi-Region strong consistency (MRSC): every read
       * is strongly consistent (an eventually consistent one may miss writes made in any Region,
       * this one included), and `fencedWrite` (a transaction, which MRSC does not offer) is refused:
       * fence your items with `fencedItemWrite`. @default false
       */
      multiRegion: z.boolean().default(false),
      /** How long a term lasts after a renewal (client-go LeaseDuration). @default 15000 */
      leaseDurationMs: z.number().int().min(1_000, 'must be >= 1000 ms (DynamoDB stores whole seconds)').max(86_400_000, 'must be at most 86400000 ms (a day: what a lease row holds)').default(15_000),
      /** A leader that could not renew for this long stops acting (client-go RenewDeadline). @default 10000 */
      renewDeadlineMs: z.number().int().positive().default(DEFAULT_RENEW_DEADLINE_MS),
      /**
       * How often a follower polls while the lease is in flux (vacant, an election, a preemption),
       * and how soon a leader tries again after a renewal failed (client-go RetryPeriod). Below
       * renewDeadlineMs; with renewIntervalMs left out, below half of it (the interval is then at
       * least a retry period, and a failed renewal needs a try again before the deadline). @default 2000
       */
      retryPeriodMs: PeriodMs.default(DEFAULT_RETRY_PERIOD_MS),
      /**
       * How often a leader renews. client-go renews every retry period; a lease only needs a renewal
       * often enough that a failed one can be retried before the renew deadline, and each renewal
       * is a write. Renewing less often also makes a crash failover faster (the term ends, on average,
       * half an interval sooner after the last renewal). Renewals go out 137 ms sooner than this, so
       * they meet DynamoDB's clock at ever other points of its second (what keeps its Date headers
       * informative); a failed one is tried again a retryPeriodMs after each try went out.
       * @default renewDeadlineMs − 2 × retryPeriodMs
       * in coordinated mode (6 s with client-go's timings: two more tries before the deadline, the
       * last 137 ms before it, so an outage of about 4 s costs no term), but not below retryPeriodMs;
       * retryPeriodMs with `NoCoordination` (client-go's), unless given. The longest the option
       * allows (below renewDeadlineMs − retryPeriodMs: 7,999 ms with client-go's timings) costs about
       * a quarter less at rest and leaves one retry, 138 ms before the deadline, so an outage of about
       * 2 s ends the term (docs/benchmarks.md, Cost at rest)
       */
      renewIntervalMs: PeriodMs.optional(),
      /**
       * Give the lease up when run() is cancelled, so the next leader need not wait for expiry: a
       * leader hands its term over or releases it. False: a term this worker led is left to run out
       * (its work may outlive run()) at its last renewal plus the lease duration; one held on the
       * process's `session`, which runs on for its other electors, is first taken off it (stamped
       * with the session's last renewal), or, where that write fails, the session is left to end at
       * its deadline; and the process's session rows name the term as left (`leftTerms`), so none of
       * them keeps it alive past that renewal wherever the lease's `session` points (a same-lease
       * peer's rewrite). Either way a follower, once stopped, releases a term handed to
       * it as it stopped that it never led, and takes its name off as successor, so no term waits
       * for it. Not client-go's default (its ReleaseOnCancel is false, and asks that the guarded code
       * has finished before the cancel): the work's signal aborts, but nothing waits for
       * onStartedLeading to return, so the successor may lead before the work has returned (its
       * writes through `term` are refused from then on). Stop unfenced work, and wait for it, before
       * aborting run()'s signal, or set this false.
       * @default true
       */
      releaseOnCancel: z.boolean().default(true),
      /**
       * What a leader does when its work fails (onStartedLeading rejects or throws): `release` ends
       * the term (onStoppedLeading with reason `workFailed`) and hands the lease to the successor, or
       * releases it for an election, so a leader whose work died does not hold the lease doing
       * nothing; `keep` leads on (the failure is only reported to onError). Either way onError gets
       * a LeaderWorkError. After a release this worker takes no term for a backoff (a retry period,
       * doubling while its work keeps failing soon after it starts, up to four, jittered), so work
       * that fails at every start is not started again and again. Work that rejects with a
       * FencingError or LeaseLostError of its own term (its fenced write refused: the lease moved on)
       * has not failed: the term ends as `deposed`, whatever this says, and nothing is reported.
       * @default 'release'
       */
      onLeaderWorkFailure: z.enum(['release', 'keep']).default('release'),
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
      /**
       * A coordinated worker acquires a lease vacant this long directly (sooner, 10 s after a
       * vacancy report no coordinator answered, or an election's ack window and 10 s after an
       * election no coordinator closed: no coordinator runs). @default 3 × leaseDurationMs
       */
      fallbackAfterMs: z.number().int().positive().optional(),
      /**
       * Where this worker runs, written on its candidate row and on the lease while it leads, so that
       * the platform's "task stopped" / "instance stopped" event ends its term at once. `detect`:
       * ECS task metadata, then EC2 IMDSv2, each with a short timeout (not IMDS when the client
       * sends to this machine: local mode); `none`: record nothing.
       * @default 'detect'
       */
      platform: z.union([Platform, z.enum(['detect', 'none'])]).default('detect'),
      /**
       * Where clients reach this worker while it leads: a URL (`http://10.0.0.5:8080`) or host:port
       * (`10.0.0.5:8080`). Written on the lease as `holderAddress` with every term this worker takes
       * (directly, as successor, elected: from its candidate row, handed over) and removed when the
       * term ends; `getLeader()`, `conclave leader` and the Leader Elected and Leader Changed events
       * give it to clients. Not the wildcard (0.0.0.0, ::) a server listens on: this worker's own
       * address (its task's or pod's IP). @default none: the lease names no address
       */
      advertise: AdvertisedAddress.optional(),
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
        .custom<Push>((v) => typeof v === 'object' && v !== null && ['watch', 'wake', 'healthy'].every((m) => typeof (v as Record<string, unknown>)[m] === 'function'), { error: 'must be a PushChannel (or another Push: watch(), wake(), healthy())', abort: false })
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
        // client-go's LeaderElectionConfig names, as its users write them
        leaseDuration: "it is leaseDurationMs here, in milliseconds (client-go's LeaseDuration is a Duration)",
        renewDeadline: "it is renewDeadlineMs here, in milliseconds (client-go's RenewDeadline is a Duration)",
        retryPeriod: "it is retryPeriodMs here, in milliseconds (client-go's RetryPeriod is a Duration)",
      }),
    },
  )
  .superRefine((o, ctx) => {
    const ok = everyProblem.parsed(ctx);
    // a comparison only between values that passed their own checks: a bad one is reported as itself
    const valid = everyProblem.valid(ctx);
    if (valid('renewDeadlineMs', 'leaseDurationMs') && o.renewDeadlineMs >= o.leaseDurationMs)
      ctx.addIssue({ code: 'custom', path: ['renewDeadlineMs'], message: `must be < leaseDurationMs (${o.leaseDurationMs}) so a leader stops acting before its term can expire${defaulted('renewDeadlineMs', o.renewDeadlineMs, DEFAULT_RENEW_DEADLINE_MS, `and retryPeriodMs with a shorter leaseDurationMs, such as ${Math.floor((o.leaseDurationMs * 2) / 3)} and ${Math.floor((o.leaseDurationMs * 2) / 15)} (client-go's 15000/10000/2000 scaled)`)}` });
    if (valid('retryPeriodMs', 'renewDeadlineMs') && o.retryPeriodMs >= o.renewDeadlineMs)
      ctx.addIssue({ code: 'custom', path: ['retryPeriodMs'], message: `must be < renewDeadlineMs (${o.renewDeadlineMs}) so a leader gets more than one try to renew${defaulted('retryPeriodMs', o.retryPeriodMs, DEFAULT_RETRY_PERIOD_MS, 'with a shorter renewDeadlineMs')}` });
    // (a retry period at or past the deadline is reported as itself above: no interval meets a bound of 0 or less)
    else if (valid('renewIntervalMs', 'retryPeriodMs', 'renewDeadlineMs') && o.renewIntervalMs !== undefined && o.renewIntervalMs + o.retryPeriodMs >= o.renewDeadlineMs)
      ctx.addIssue({
        code: 'custom',
        path: ['renewIntervalMs'],
        message: `must be < renewDeadlineMs - retryPeriodMs (${o.renewDeadlineMs - o.retryPeriodMs}) so a failed renewal is tried again before the renew deadline`,
      });
    // the same rule for the interval a leader renews at by default: NoCoordination's is the retry period
    // (client-go's), a coordinated one's never below it, so both need 2 x retryPeriodMs < renewDeadlineMs
    // (client-go itself asks RenewDeadline > 1.2 x RetryPeriod); else every renewal goes out at the deadline
    else if (valid('renewIntervalMs', 'retryPeriodMs', 'renewDeadlineMs', 'mode') && o.renewIntervalMs === undefined && defaultRenewIntervalMs(o) + o.retryPeriodMs >= o.renewDeadlineMs)
      ctx.addIssue({
        code: 'custom',
        path: ['retryPeriodMs'],
        message:
          `must be < renewDeadlineMs / 2 (${o.renewDeadlineMs / 2}) when renewIntervalMs is not given: a leader then renews every retry period (${o.mode === 'NoCoordination' ? "mode 'NoCoordination' renews as client-go does" : 'the default interval, renewDeadlineMs less two retry periods, is never below one'}), ` +
          `and a failed renewal must be tried again before the renew deadline. ${fittingRetry(o.renewDeadlineMs, o.retryPeriodMs)}`,
      });
    if (ok('mode', 'candidacy') && o.mode === 'coordinated' && !o.candidacy)
      ctx.addIssue({
        code: 'custom',
        path: ['candidacy'],
        message: "is required in mode 'coordinated' (the default): give { emulationVersion, binaryVersion } so the coordinator can elect this worker, or set mode: 'NoCoordination' for a plain race without a coordinator",
      });
    if (ok('mode', 'push') && o.mode === 'NoCoordination' && o.push)
      ctx.addIssue({ code: 'custom', path: ['push'], message: "must not be given with mode 'NoCoordination': it polls as client-go does. Drop push, or use mode 'coordinated'" });
    if (ok('mode', 'session') && o.mode === 'NoCoordination' && o.session)
      ctx.addIssue({ code: 'custom', path: ['session'], message: "must not be given with mode 'NoCoordination': it renews as client-go does. Drop session, or use mode 'coordinated'" });
    if (valid('session', 'leaseDurationMs') && o.session instanceof Session && o.session.options.maxLeaseDurationMs < o.leaseDurationMs)
      ctx.addIssue({
        code: 'custom',
        path: ['session'],
        message: `holds leases of at most ${o.session.options.maxLeaseDurationMs} ms (its maxLeaseDurationMs), and leaseDurationMs is ${o.leaseDurationMs}: raise the session's maxLeaseDurationMs`,
      });
    const unserved = valid('session', 'leaseName') && o.session instanceof Session ? sessionNotServing(o.session, o.leaseName) : undefined;
    if (unserved) ctx.addIssue({ code: 'custom', path: ['session'], message: unserved });
    const elsewhere = valid('session', 'tables') && o.session instanceof Session ? sessionElsewhere(o.session, o.tables) : undefined;
    if (elsewhere) ctx.addIssue({ code: 'custom', path: ['session'], message: elsewhere });
    const looser = valid('session', 'clockSync', 'maxClockErrorMs') && o.session instanceof Session ? sessionClockLooser(o.session, o.clockSync, o.maxClockErrorMs) : undefined;
    if (looser) ctx.addIssue({ code: 'custom', path: ['session'], message: looser });
    // The session's own check makes its renewals and a retry fit in its deadline, so this one also
    // makes them fit in the elector's.
    if (valid('session', 'retryPeriodMs', 'renewDeadlineMs') && o.session instanceof Session && o.session.options.renewDeadlineMs + o.retryPeriodMs >= o.renewDeadlineMs)
      ctx.addIssue({
        code: 'custom',
        path: ['session'],
        message: `ends at its renewDeadlineMs (${o.session.options.renewDeadlineMs} ms), too late for a leader on it to fall back: it then renews its leases itself, and needs a try and a retry (retryPeriodMs ${o.retryPeriodMs} ms) before its own renewDeadlineMs (${o.renewDeadlineMs} ms) stops the term. Give the session a renewDeadlineMs below ${o.renewDeadlineMs - o.retryPeriodMs}${fittingSession(o.renewDeadlineMs - o.retryPeriodMs)}`,
      });
    if (ok('mode', 'candidacy') && o.mode === 'NoCoordination' && o.candidacy)
      ctx.addIssue({ code: 'custom', path: ['candidacy'], message: "must not be given with mode 'NoCoordination': no coordinator elects there. Drop candidacy, or use mode 'coordinated'" });
    // checkCandidacy reads the candidacy's fields, identity and leaseName only where they passed their own schemas
    if (typeof o.candidacy === 'object' && o.candidacy !== null && !Array.isArray(o.candidacy)) checkCandidacy({ leaseName: o.leaseName, name: o.identity, ...o.candidacy }, ctx, ['candidacy'], { name: ['identity'], leaseName: ['leaseName'] });
  }, { when: everyProblem.when });

/**
 * A Session's timings under a renew deadline bound `belowMs`, its defaults' proportions (7500/5000/1500)
 * kept and rounded down to 100 ms, so its own rule (renewIntervalMs + retryPeriodMs < renewDeadlineMs)
 * holds too; none when its retry period would fall below 100 ms.
 */
function fittingSession(belowMs: number): string {
  const deadline = Math.floor((belowMs - 1) / 100) * 100;
  const [interval, retry] = [Math.floor((deadline * 2) / 3 / 100) * 100, Math.floor(deadline / 5 / 100) * 100];
  return retry < 100 ? '' : `, with its renewIntervalMs and retryPeriodMs below that, such as renewDeadlineMs ${deadline}, renewIntervalMs ${interval} and retryPeriodMs ${retry} (the session's defaults scaled)`;
}

/** What fits a renew deadline of `deadlineMs` with the default renew interval: a retry period below half of it (at least PeriodMs' 100 ms), else a longer deadline. */
function fittingRetry(deadlineMs: number, retryPeriodMs: number): string {
  const most = Math.ceil(deadlineMs / 2) - 1;
  if (most < 100) return `No retry period (at least 100 ms) fits: give renewDeadlineMs above ${2 * retryPeriodMs} (and leaseDurationMs above that)`;
  return `Give retryPeriodMs ${most} or less, such as ${Math.min(most, Math.max(100, Math.floor(deadlineMs / 5)))} (client-go's 10000/2000)`;
}

/** Why `session` cannot keep `leaseName`'s terms (not among its leaseNames, the grant's); undefined when it serves it. */
export function sessionNotServing(session: Session, leaseName: string): string | undefined {
  if (session.covers(leaseName)) return undefined;
  return `serves the leases ${JSON.stringify(session.options.leaseNames)} (its leaseNames, the grant's), not '${leaseName}': add '${leaseName}' to the Session's leaseNames and to grantWorker's, or give this elector no session`;
}

/**
 * The options of a LeaderElector as written (LeaderElectorOptionsSchema's input), by mode: in
 * `coordinated` mode (the default) with a `candidacy`, which the coordinator elects; in
 * `NoCoordination` mode with no candidacy, push or session, which the schema refuses there.
 */
export type LeaderElectorOptions =
  | (Omit<z.input<typeof LeaderElectorOptionsSchema>, 'mode' | 'candidacy'> & {
      /** Stand as a candidate and let the coordinator elect (KEP-4355). @default 'coordinated' */
      mode?: 'coordinated';
      /** What this worker stands with (versions, strategies, labels): required, or no coordinator can elect it. */
      candidacy: NonNullable<z.input<typeof LeaderElectorOptionsSchema>['candidacy']>;
    })
  | (Omit<z.input<typeof LeaderElectorOptionsSchema>, 'mode' | 'candidacy' | 'push' | 'session'> & {
      /** A plain client-go race for the lease: no coordinator, no candidacy. */
      mode: 'NoCoordination';
      /** Not in this mode: no coordinator elects. */
      candidacy?: undefined;
      /** Not in this mode: it polls as client-go does. */
      push?: undefined;
      /** Not in this mode: it renews as client-go does. */
      session?: undefined;
    });
/**
 * The options as the schema reads them, any option with any mode: what the SDK's own code and the
 * simulator build and hand to electorWith, whose constructor's parse refuses a bad combination
 * as it does a user's. @internal
 */
export type AnyLeaderElectorOptions = z.input<typeof LeaderElectorOptionsSchema>;
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

import type { StopReason } from './step.js';
export type { StopReason };

/**
 * Where a LeaderElector's run() is: `idle` (not called), `starting` (looking up the platform,
 * registering the candidacy), `running` (following or leading), `stopping` (its signal aborted:
 * handing over, withdrawing, releasing), `stopped` (run() resolved), `failed` (run() rejected: a
 * fault it cannot outlive, such as a missing table or a duplicate identity).
 */
export type ElectorRunPhase = 'idle' | 'starting' | 'running' | 'stopping' | 'stopped' | 'failed';


/**
 * A leader renews this much sooner than its renew interval: an interval of whole seconds would have
 * every renewal meet DynamoDB's clock at the same point of its second, and the responses' Date
 * headers (whole seconds) would stop narrowing the estimate of that clock (server-clock.ts), for the
 * leader and for the successor reading right behind it. 137 ms steps through the whole second. It
 * is also how long before the renew deadline the default interval's last retry goes out (interval
 * + 2 retry periods = the deadline); at 7,999 ms, 1 ms more (138 ms).
 */
export const PHASE_STEP_MS = 137;

/**
 * The renew interval a LeaderElector uses when `renewIntervalMs` is not given: the renew deadline
 * less two retry periods, so a failed renewal has two more tries before the deadline, the first of
 * them a whole retry period early (a DynamoDB outage of up to about 4 s at client-go's timings
 * costs no term); not below the retry period. `NoCoordination`: the retry period (client-go's).
 * Each renewal is a write, and a leader's renewals are most of what a lease costs at rest (10.2
 * writes a minute at 6 s). The longest interval the option allows (7,999 ms at client-go's
 * timings, whole seconds less 1 ms, which keeps renewals stepping through DynamoDB's second) costs
 * about a quarter less, for a user who chooses it: a failed renewal is then tried once more, a
 * retry period after the first try went out whatever that try took (7,862 + 2,000 ms), 138 ms
 * before the deadline, so an outage of about 2 s ends the term where the default rides out about
 * 4 s, and that one retry must be answered within 138 ms. How often a leader renews touches no safety bound: it stops at its renew deadline
 * from its last renewal sent, whatever the interval (docs/safety.md). @internal
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

/**
 * What the SDK's three long-lived objects (LeaderElector, LeaseCandidate, IdentityLeaseHeartbeat)
 * share: the option schemas every one of them takes (tables, client, clock, callbacks), the frozen
 * view of the options they expose, and the one lifecycle they follow (`run(signal)` once, `ready`).
 */
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import * as z from 'zod';
import { Nap, type Clock } from '../clock.js';
import { TableNamesSchema, type TableNames } from '../schemas/config.js';
import { FIXES, KEY_PARTS, knownKeys, unknownKeyHint } from '../schemas/validation.js';
import { TABLES, defaultTableNames as tableNamesUnder } from '../tables.js';
import { localPrefixesOf, unusableClient } from './faults.js';
import { serverClockOf, trustedClock, type StampClock } from './server-clock.js';
import { TableWait, activeNotFoundOf, isWrongKey, requestEndpointOf, requestTableOf, type TableState } from '../table-wait.js';

/** The prefix of the table names when `tables` is not given: `conclave-leases`, `conclave-candidates`, `conclave-identities`. */
export const DEFAULT_TABLE_PREFIX = 'conclave';

/**
 * The names of the three tables under `prefix`: `${prefix}-leases`, `${prefix}-candidates` and
 * `${prefix}-identities`, as local mode and the CDK construct name them by default. The SDK's
 * `tables` option does this itself; this is for code that needs the names (the CLI, a coordinator).
 * @param prefix - The prefix of the three names; `conclave` when not given.
 */
export const defaultTableNames: (prefix?: string) => TableNames = tableNamesUnder;

const LONGEST_SUFFIX = '-candidates'.length; // the longest of -leases, -candidates, -identities
const PREFIX_MAX = 255 - LONGEST_SUFFIX;
const TablePrefix = z
  .string()
  .regex(new RegExp(`^[A-Za-z0-9_.-]{1,${PREFIX_MAX}}$`), `must be a table name prefix such as "${DEFAULT_TABLE_PREFIX}": 1-${PREFIX_MAX} of A-Z a-z 0-9 _ . - (the tables are <prefix>-leases, <prefix>-candidates, <prefix>-identities)`);

const TablesObject: z.ZodType<Exclude<TablesOption, string>> = z.strictObject(
  {
    /** Names every table not named below `${prefix}-leases` etc. @default 'conclave' */
    prefix: TablePrefix.optional(),
    leases: TableNamesSchema.shape.leases.optional(),
    candidates: TableNamesSchema.shape.candidates.optional(),
    identities: TableNamesSchema.shape.identities.optional(),
  },
  {
    error: (issue) =>
      issue.code === 'unrecognized_keys'
        ? `unknown key${issue.keys.length > 1 ? 's' : ''} ${issue.keys.map((k) => `"${k}"`).join(', ')}: name tables with prefix, leases, candidates, identities`
        : undefined,
  },
);

/**
 * The `tables` option as written: a prefix (`'conclave'` names `conclave-leases`,
 * `conclave-candidates`, `conclave-identities`), or an object naming single tables, the others
 * following its `prefix`.
 */
export type TablesOption = string | ({ prefix?: string } & Partial<TableNames>);

const TABLES_SHAPE = `a table name prefix such as "${DEFAULT_TABLE_PREFIX}", or { prefix?, leases?, candidates?, identities? }`;

/**
 * The `tables` option of every SDK object: where the Conclave tables are. A string is a prefix;
 * an object may name single tables, the others following its `prefix`. Resolved to all three
 * names, so each object takes the one it needs. Nothing given: prefix `conclave`.
 */
const isTablesShape = (v: unknown): boolean => typeof v === 'string' || (typeof v === 'object' && v !== null && !Array.isArray(v));
export const TablesSchema = z
  // abort: false (z.custom aborts by default), so that a `tables` of the wrong type does not stop
  // the options object's cross-field checks (everyProblem); none of them reads `tables` untransformed
  .custom<TablesOption>(isTablesShape, { error: `must be ${TABLES_SHAPE}`, abort: false })
  .superRefine(
    (v, ctx) => {
      const schema = typeof v === 'string' ? TablePrefix : TablesObject;
      const r = schema.safeParse(v, { error: FIXES });
      for (const issue of r.error?.issues ?? []) ctx.addIssue({ code: 'custom', path: issue.path, message: issue.message });
    },
    // a value of neither shape is reported once, above, not again as the object it is not
    { when: (payload) => isTablesShape(payload.value) },
  )
  .optional()
  .transform((v): TableNames => {
    const given = typeof v === 'string' ? { prefix: v } : (v ?? {});
    const names = tableNamesUnder(given.prefix ?? DEFAULT_TABLE_PREFIX);
    return { leases: given.leases ?? names.leases, candidates: given.candidates ?? names.candidates, identities: given.identities ?? names.identities };
  });

/**
 * What a refusal of timing `option` adds when its value is its default (most likely not given):
 * that it is, and to give it `w` (with what, and values that fit). Empty for a value given otherwise.
 */
export const defaulted = (option: string, value: number, byDefault: number, w: string): string => (value === byDefault ? ` (${option} is ${byDefault} when not given: give it ${w})` : '');

/** The DynamoDB client an SDK object reads and writes with. */
export const ClientSchema = z.custom<DynamoDBClient>(
  (v) => typeof v === 'object' && v !== null && typeof (v as { send?: unknown }).send === 'function',
  { error: 'must be a DynamoDBClient (new DynamoDBClient({}) from @aws-sdk/client-dynamodb)', abort: false },
);

/** A Clock (lib/clock.ts): test code injects a manual one. */
const CLOCK_METHODS = ['now', 'monotonic', 'setTimer', 'sleep', 'random'] as const;
export const ClockSchema = z.custom<Clock>(
  (v) => typeof v === 'object' && v !== null && CLOCK_METHODS.every((m) => typeof (v as Record<string, unknown>)[m] === 'function'),
  { error: `must be a Clock: an object with ${CLOCK_METHODS.map((m) => `${m}()`).join(', ')} (systemClock, or skewedClock/manualClock/simulatedClock around one)`, abort: false },
);

/**
 * A period a worker's loop runs at (a retry period, a renew interval): at least 100 ms. A value
 * meant in seconds (2 for client-go's 2 s) polled or renewed hundreds of times a second.
 */
export const PeriodMs = z.number().int().min(100, "must be >= 100 ms (milliseconds, not seconds: client-go's 2 s is 2000)");
/**
 * Where the times the SDK writes come from. `server` (the default): DynamoDB's clock, read from the
 * `Date` header of its responses and carried forward on this machine's monotonic clock — this
 * machine's wall clock may be off by any amount, or step (lib/sdk/server-clock.ts). `none`: this
 * machine's wall clock as it is; it must then stay within the coordinator's `clockSkewMs` (1 s) of
 * the coordinator's clock, or the coordinator misjudges its renewals and acknowledgements.
 */
export const ClockSyncSchema = z.enum(['server', 'none']).default('server');
export type ClockSync = z.output<typeof ClockSyncSchema>;

/** The clock an SDK object stamps rows with, as its `clockSync` option says. */
export const stampClockFor = (sync: ClockSync, client: DynamoDBClient, base: Clock): StampClock => (sync === 'server' ? serverClockOf(client, base) : trustedClock(base));

/** A function option (a callback, or a hook tests inject). */
export const fn = <F>(what = 'a function') => z.custom<F>((v) => typeof v === 'function', { error: `must be ${what}`, abort: false });

/**
 * The messages of an options object's own issues: not an object at all (`required` names what it
 * needs), or unknown options (with what to write instead where an option moved).
 */
export function optionErrors(owner: string, required: string, moved: Readonly<Record<string, string>> = {}) {
  return (issue: { code?: string; keys?: string[]; inst?: unknown }): string | undefined => {
    if (issue.code === 'invalid_type') return `must be the ${owner} options: an object with ${required}`;
    if (issue.code !== 'unrecognized_keys' || !issue.keys) return undefined;
    const known = knownKeys(issue.inst);
    // one part a key: issuesOf reports each under the key's own name
    return issue.keys.map((k) => `unknown option of ${owner}: "${k}"${moved[k] ? `: ${moved[k]}` : unknownKeyHint(k, known)}`).join(KEY_PARTS);
  };
}

// everyProblem: for the cross-field checks of an options object (lib/schemas/validation.ts, shared with the CDK's settings)
export { everyProblem } from '../schemas/validation.js';

/** Read-only all the way down; functions are left as they are. */
export type DeepReadonly<T> = T extends (...args: never[]) => unknown
  ? T
  : T extends readonly (infer U)[]
    ? readonly DeepReadonly<U>[]
    : T extends object
      ? { readonly [K in keyof T]: DeepReadonly<T[K]> }
      : T;

/**
 * Freezes `value` and every plain object and array inside it. The options an SDK object exposes
 * are its own copy (zod parsed them), so nothing the caller holds is frozen.
 */
export function deepFreeze<T>(value: T): DeepReadonly<T> {
  if (typeof value === 'object' && value !== null && !Object.isFrozen(value)) {
    const proto = Object.getPrototypeOf(value) as unknown;
    if (Array.isArray(value) || proto === Object.prototype || proto === null) {
      Object.freeze(value);
      for (const v of Object.values(value)) deepFreeze(v);
    }
  }
  return value as DeepReadonly<T>;
}

/**
 * The reason of an internal abort whose reason nothing reads (an elector's candidacy when it
 * stops, withLease's elector when the run is over): the AbortError `abort()` would make, made
 * once (each DOMException captures a stack; a simulated schedule made hundreds).
 */
export const INTERNAL_STOP = new DOMException('This operation was aborted', 'AbortError');

/** Resolves once `signal` has aborted (at once if it already has). */
export const aborted = (signal: AbortSignal): Promise<void> =>
  new Promise((resolve) => {
    if (signal.aborted) resolve();
    else signal.addEventListener('abort', () => resolve(), { once: true });
  });

/** The longest run() waits for a client's region and endpoint to be resolved before its first request (StartUp.checkClient). */
const CLIENT_CHECK_MS = 4_000;

/**
 * The lifecycle the three objects share: `run(signal)` once per instance (a new start-up is a new
 * object), and `ready`, settled by the first write. `ready` rejects with run()'s error when run()
 * fails before it, or with the signal's reason when the signal aborted before anything was
 * written; it never counts as an unhandled rejection (run() reports the same failure).
 */
export class StartUp<T> {
  readonly ready: Promise<T>;
  private resolve!: (value: T) => void;
  private reject!: (error: unknown) => void;
  private claimed = false;
  /** How a missing table is waited for (its tables looked at); none: a missing table ends the start-up at once. */
  private readonly wait: TableWait | undefined;

  constructor(
    private readonly who: string,
    /** The tables the object uses: a missing one is reported as a TableNotFoundError naming them. */
    private readonly tables?: TableNames,
    /** How a missing table is looked at (tableState: DescribeTable, through the object's bounded client) and the wait timed; without it, a missing table ends the start-up at once. */
    private readonly look?: { state: (table: string) => Promise<TableState>; clock: Pick<Clock, 'monotonic'> },
    /** Which of `tables` the object uses: the only ones looked at and named. @default all three */
    private readonly uses: readonly TableKind[] = ALL_TABLES,
  ) {
    this.wait = look && tables && new TableWait(uses.map((k) => tables[k]), look);
    this.ready = new Promise<T>((resolve, reject) => {
      this.resolve = resolve;
      this.reject = reject;
    });
    this.ready.catch(() => undefined);
  }

  /** Marks run() as called; a second call is a mistake, reported as a rejection of that call. */
  claim(cls: string): void {
    if (this.claimed) throw new Error(`${this.who}: run() was already called on this ${cls}; each start-up is a new ${cls}`);
    this.claimed = true;
  }

  started(value: T): void {
    this.resolve(value);
  }

  failed(error: unknown): void {
    this.reject(error);
  }

  /**
   * run() cannot start: `ready` rejects with the error, which the caller throws. A table that does
   * not exist (DynamoDB's ResourceNotFoundException, which names no table) becomes a
   * TableNotFoundError naming the tables this object uses and how to fix the option; so does one a
   * part of it met (a LeaderElector's candidacy), named as this object.
   */
  fail(error: unknown): unknown {
    // a part's (a LeaderElector's candidacy) is told as this object's, the one its caller made
    const part = (error instanceof TableNotFoundError || error instanceof TableKeyError) && error.subject !== this.who ? error.cause : undefined;
    const e = this.tables ? (tableFault(this.who, this.tables, part ?? error, false, this.uses) ?? error) : error;
    this.reject(e);
    return e;
  }

  /**
   * Rejects run() (as fail() does) when `client` can never send a request: no region, or an
   * endpoint that is no URL or has no host (unusableClient). Looked at before anything is sent,
   * unless `signal` has aborted. A region or endpoint provider that does not answer (a function of
   * the user's) holds it at most CLIENT_CHECK_MS, or until the signal aborts: then the client is
   * taken as it is, and its requests, each within its bound, tell what they meet.
   */
  async checkClient(client: DynamoDBClient, clock: Pick<Clock, 'setTimer'>, signal: AbortSignal): Promise<void> {
    if (signal.aborted) return;
    const nap = new Nap(clock, CLIENT_CHECK_MS, signal);
    const unusable = await Promise.race([unusableClient(client, this.who), nap.done.then(() => undefined)]).finally(() => nap.end());
    if (unusable && !signal.aborted) throw this.fail(unusable);
  }

  /**
   * Whether `error`, met while starting, can never go away by trying again: a table the options
   * name does not exist (a `tables` option that names another deployment). run() rejects with it
   * (fail()); every other fault (an unreachable endpoint, a denied or throttled request, a
   * malformed row) is reported to onError and tried again with backoff. A missing table is first
   * looked at (TableWait, over each of the object's tables): one still being created is waited for.
   */
  async cannotStart(error: unknown): Promise<boolean> {
    if (this.tables === undefined) return false;
    // a table keyed otherwise than Conclave's: no try again, nor wait, changes it
    if (isWrongKey(error)) return true;
    if (!isTableNotFound(error)) return false;
    return !(await this.wait?.waitsFor(error));
  }
}

// the wait for a table still being created, shared with the CLI (which loads nothing of lib/sdk/)
export { TABLE_WAIT_MS, TableWait, type TableState } from '../table-wait.js';

const isTableNotFound = (e: unknown): boolean => e instanceof Error && !(e instanceof TableNotFoundError) && e.name === 'ResourceNotFoundException';

/**
 * DynamoDB's bare answers on a table that is not what `tables` says ("Requested resource not found"
 * and a refused key name no table, nor what to do) as the SDK's errors of `who`, naming the tables
 * of `tables` it `uses`: a TableNotFoundError, or a TableKeyError; undefined for any other fault.
 */
function tableFault(who: string, tables: TableNames, e: unknown, retrying: boolean, uses: readonly TableKind[]): TableNotFoundError | TableKeyError | undefined {
  if (isTableNotFound(e)) return new TableNotFoundError(who, tables, e as Error, retrying, uses);
  if (isWrongKey(e) && !(e instanceof TableKeyError)) return new TableKeyError(who, tables, e as Error, retrying, uses);
  return undefined;
}

/** For a running object's faultReporter: a table missing or keyed otherwise (tableFault), told as such while it goes on retrying; undefined for any other fault. */
export const runningTableFault =
  (who: string, tables: TableNames, uses: readonly TableKind[] = ALL_TABLES) =>
  (e: unknown): TableNotFoundError | TableKeyError | undefined =>
    tableFault(who, tables, e, true, uses);

/** `e` as tableFault tells it, else `e` itself: for calls that are no long-lived object (getLeader, withLease). */
export const tableNotThere = (who: string, tables: TableNames, e: unknown, uses: readonly TableKind[] = ALL_TABLES): unknown => tableFault(who, tables, e, false, uses) ?? e;

/** One of the three tables, as {@link TableNames} names it. */
type TableKind = keyof TableNames;
const ALL_TABLES: readonly TableKind[] = ['leases', 'candidates', 'identities'];
/** The identities table alone: what a Session and an IdentityLeaseHeartbeat read and write (their rows), and the identity listings read. */
export const IDENTITIES_ONLY: readonly TableKind[] = ['identities'];
/** The leases and identities tables: what a NoCoordination LeaderElector reads and writes (the lease row; a holder's session row, read), and getLeader reads. */
export const LEASES_AND_IDENTITIES: readonly TableKind[] = ['leases', 'identities'];
/** The leases and candidates tables: what a LeaseCandidate reads and writes (its row; a lease row, to claim its name: askForName), never the identities table (a session's row is the Session's). */
export const LEASES_AND_CANDIDATES: readonly TableKind[] = ['leases', 'candidates'];
/** The stack's output that names each table. */
const OUTPUT_OF: Record<TableKind, string> = { leases: 'LeasesTable', candidates: 'CandidatesTable', identities: 'IdentitiesTable' };
/** `a`, `a and b`, `a, b and c`. */
const listed = (xs: readonly string[]): string => (xs.length <= 1 ? xs.join('') : `${xs.slice(0, -1).join(', ')} and ${xs.at(-1)!}`);

/**
 * The sentence naming the prefix meant when `tables` was given a table's name
 * (`conclave-local-leases`, copied from a stack output or a table list) or the prefix with its dash
 * (`conclave-local-`): the names it resolved to then repeat a suffix or a dash. Empty for any other names.
 */
function meantPrefix(tables: TableNames): string {
  if (!tables.leases.endsWith('-leases')) return '';
  const given = tables.leases.slice(0, -'-leases'.length);
  if (tables.candidates !== `${given}-candidates` || tables.identities !== `${given}-identities`) return '';
  const meant = given.replace(/-(?:leases|candidates|identities)$|-+$/, '');
  return meant !== given && meant !== '' ? `\`tables\` is the prefix the three names share, without the dash: '${meant}', not '${given}'. ` : '';
}

/** `sep` and where the request went, where the request that failed with `cause` had it noted (namedRequests); else nothing. */
const at = (cause: Error, sep: string): string => {
  const where = requestEndpointOf(cause);
  return where === undefined ? '' : `${sep}${where}`;
};

/**
 * The sentence a start-up under `multiRegion` adds, where its leases table is not found off this
 * machine (multiRegionMissIn): the tables are there only in their replica Regions; else nothing.
 */
function multiRegionHint(cause: Error): string {
  const region = multiRegionMissIn(cause);
  return region === undefined
    ? ''
    : `Under \`multiRegion\` the client must send to one of the tables' replica Regions (the \`replicas\` of the Conclave construct's \`regions\`; its witness Region holds no table), and it sends to ${region}. `;
}

/** The prefix `tables` names, where its three names share one (`${prefix}-leases`, …); undefined for names of the user's own. */
const prefixOf = (tables: TableNames): string | undefined => {
  const given = tables.leases.endsWith('-leases') ? tables.leases.slice(0, -'-leases'.length) : undefined;
  return given !== undefined && tables.candidates === `${given}-candidates` && tables.identities === `${given}-identities` ? given : undefined;
};

/**
 * The sentence a missing table on DynamoDB Local on this machine adds (noteLocalPrefixes): the
 * Conclave prefixes there and the two fixes, `tables` or local mode's own prefix (`npx
 * conclave-local` makes `conclave-local` unless told `--table-prefix`: the quick start's worker names
 * `conclave`); else nothing (off this machine nothing is listed).
 */
function localPrefixesHint(tables: TableNames, cause: Error): string {
  const prefixes = localPrefixesOf(cause);
  if (prefixes === undefined) return '';
  // (a table's name given as the prefix: meantPrefix says the one meant)
  const given = meantPrefix(tables) === '' ? prefixOf(tables) : undefined;
  const start = given === undefined ? '' : `npx conclave-local --table-prefix ${given} (without --table-prefix it makes conclave-local's tables)`;
  if (prefixes.length === 0) return `There are no Conclave tables there (DynamoDB Local on this machine)${start ? `: start local mode with this prefix, ${start}` : ''}. `;
  const shown = prefixes.length > 20 ? `${prefixes.slice(0, 20).join(', ')}, ... and ${prefixes.length - 20} more` : prefixes.join(', ');
  return `The Conclave table prefixes there (DynamoDB Local on this machine): ${shown}; use one (tables: '${prefixes[0]!}')${start ? `, or start local mode with this prefix, ${start}` : ''}. `;
}

/** TableNotFoundError's message: the tables, and the fix. */
function notFoundMessage(subject: string, tables: TableNames, cause: Error, retrying: boolean, kinds: readonly TableKind[]): string {
  const one = kinds.length === 1;
  const uses = `It uses ${listed(kinds.map((k) => tables[k]))}, as its \`tables\` option names ${one ? 'it' : 'them'} (a prefix such as 'conclave', or { ${kinds.join(', ')} }).`;
  // a table DescribeTable showed ACTIVE, given up on (TableWait.active): it is there, so "does not exist" and "create them" would mislead
  const active = activeNotFoundOf(cause);
  if (active) {
    return (
      `${subject}: ${active.length === 1 ? `table ${active[0]}` : `a table of ${active.join(', ')}`} answered "not found" again after DescribeTable showed ${active.length === 1 ? 'it' : 'them'} ACTIVE (DynamoDB said: ${cause.message}), so it is not a table being created, and no wait helps: ` +
      `a table deleted and created again under its name may answer so for a moment (try again shortly); if it goes on, check the endpoint and Region its DynamoDB client points at. ${uses}` +
      (retrying ? ' Retrying with backoff: it takes part again once the table answers (a leader stops leading by its renew deadline meanwhile).' : '')
    );
  }
  return (
    `${subject}: a table it uses does not exist where its DynamoDB client points${at(cause, ', ')} (DynamoDB said: ${cause.message}). ` +
    (retrying ? 'It was deleted, or is being restored or created again, while this worker ran; or it was never there. ' : '') +
    `${uses} ` +
    multiRegionHint(cause) +
    meantPrefix(tables) +
    localPrefixesHint(tables, cause) +
    `Give \`tables\` your deployment's names: the stack's ${listed(kinds.map((k) => OUTPUT_OF[k]))} output${one ? ' (its prefix)' : 's (their common prefix)'}, in the account and Region the client uses; ` +
    `or create them: for local mode \`npx conclave-local\` (its CONCLAVE_TABLE_PREFIX) or startLocalConclave() (its tablePrefix) from @conclave/testing, \`cdk deploy\` in AWS.` +
    (retrying ? ' Retrying with backoff: it takes part again once the table is back (a leader stops leading by its renew deadline meanwhile).' : '')
  );
}

/** The Region a client sending off this machine sends to, by the leases-table error checkMultiRegion rethrew (noteMultiRegionMiss, multiRegionMissIn). Here, beside TableNotFoundError, so that options need not import the check (lib/sdk/multi-region.ts) and what it imports. */
const missedIn = new WeakMap<object, string>();

/**
 * The Region the client sent to where `error` is DynamoDB's "not found" for a leases table that
 * checkMultiRegion looked for under `multiRegion` off this machine (TableNotFoundError's message
 * then says the client must send to one of the replica Regions); undefined for any other error.
 * @internal
 */
export const multiRegionMissIn = (error: unknown): string | undefined => (typeof error === 'object' && error !== null ? missedIn.get(error) : undefined);

/** Notes that `error`, DynamoDB's "not found" for a leases table looked for under `multiRegion`, came from a client sending to `region` off this machine. @internal */
export function noteMultiRegionMiss(error: object, region: string): void {
  missedIn.set(error, region);
}

/**
 * A Conclave table an SDK object uses does not exist where its client points (a `tables` prefix or
 * name that does not match the deployment, another account or Region, or local mode not started;
 * or, told to onError by a running object, a table deleted or being created again under it).
 * The message names the tables and the fix; for a table DescribeTable shows ACTIVE that a request
 * sent after it said so found none of again, it says that instead (not "does not exist"). A
 * LeaderElector's start-up under `multiRegion` that finds no leases table through AWS's endpoint
 * also says the client must send to one of the tables' replica Regions.
 */
export class TableNotFoundError extends Error {
  /** Always `TableNotFoundError`. */
  override readonly name = 'TableNotFoundError';
  constructor(
    /** The object that could not start, e.g. `LeaderElector "w1" of lease "jobs"`. */
    readonly subject: string,
    /** The tables it uses, as its `tables` option resolved them. */
    readonly tables: TableNames,
    /** DynamoDB's error. */
    override readonly cause: Error,
    /**
     * Whether the object goes on trying, with backoff (told to its onError while it runs: a table
     * deleted, or being restored or created again, under a running worker), rather than failing to
     * start. @default false
     */
    readonly retrying: boolean = false,
    /** Which of `tables` the object or call uses, the only ones its message names. @default all three */
    readonly uses: readonly (keyof TableNames)[] = ALL_TABLES,
  ) {
    super(notFoundMessage(subject, tables, cause, retrying, uses));
  }
}

/** How each Conclave table is keyed (lib/tables.ts), in words. */
const keyOf = (k: TableKind): string => {
  const t: { partitionKey: string; sortKey?: string } = TABLES[k];
  return t.sortKey === undefined ? `partition key ${t.partitionKey} (string), no sort key` : `partition key ${t.partitionKey} (string) and sort key ${t.sortKey} (string)`;
};

/**
 * A table an SDK object uses exists but is keyed otherwise than Conclave's table of its kind, so
 * DynamoDB refuses the key of every request on it (a table made by hand, or another application's,
 * named in `tables`). No try again changes it: run() rejects with it, and a running object tells
 * it to onError while it retries (its table replaced under it). The message names the table where
 * the request named one, the key Conclave's has, and the fix.
 */
export class TableKeyError extends Error {
  /** Always `TableKeyError`. */
  override readonly name = 'TableKeyError';
  /** The table DynamoDB refused the key on, where the request named one (a transaction names none). */
  readonly table: string | undefined;
  constructor(
    /** The object or call, e.g. `LeaderElector "w1" of lease "jobs"`. */
    readonly subject: string,
    /** The tables it uses, as its `tables` option resolved them. */
    readonly tables: TableNames,
    /** DynamoDB's error (a ValidationException). */
    override readonly cause: Error,
    /** Whether the object goes on trying, with backoff (told to its onError while it runs), rather than failing to start. @default false */
    readonly retrying: boolean = false,
    /** Which of `tables` the object or call uses. @default all three */
    readonly uses: readonly (keyof TableNames)[] = ALL_TABLES,
  ) {
    const table = requestTableOf(cause);
    const kinds = uses.filter((k) => table === undefined || tables[k] === table);
    const named = kinds.length > 0 ? kinds : uses;
    super(
      `${subject}: DynamoDB refused the key of a request on ${table !== undefined ? `table ${table}` : `one of ${listed(named.map((k) => tables[k]))}`}${at(cause, ' at ')} (ValidationException: ${cause.message}): ` +
        `${named.length === 1 && table !== undefined ? 'it is' : 'one is'} not keyed as Conclave's ${named.length === 1 ? `${named[0]!} table` : 'tables are'} (${named.map((k) => (named.length === 1 ? keyOf(k) : `${k}: ${keyOf(k)}`)).join('; ')}), and no try again changes that. ` +
        `Give \`tables\` your deployment's names (the stack's ${listed(named.map((k) => OUTPUT_OF[k]))} output${named.length === 1 ? '' : 's'}), or create the tables as the Conclave construct does (\`cdk deploy\`; locally \`npx conclave-local\` or startLocalConclave() from @conclave/testing)` +
        (retrying ? '. Retrying with backoff (a leader stops leading by its renew deadline meanwhile)' : ''),
    );
    this.table = table;
  }
}

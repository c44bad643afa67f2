/**
 * The wait for a table still being created, shared by the SDK (a start-up, getLeader, withLease,
 * listIdentities) and the CLI: DynamoDB answers data-plane requests on a CREATING table with
 * ResourceNotFoundException, as on one that is not there. Pure: how a table is looked at
 * (DescribeTable, lib/stores/table-state.ts) is given, so that the SDK's push entry point, which
 * loads this through lib/sdk/options.ts, keeps no DynamoDB client at run time.
 */
import type { Clock } from './clock.js';

/**
 * Whether a start-up (StartUp.cannotStart), a call (getLeader, withLease, listIdentities) or a
 * CLI command that met a missing table tries again. DynamoDB answers a table still being created
 * (CREATING: `cdk deploy` or local mode making it as the worker starts) as it answers one that is
 * not there, so a missing table is first looked at (DescribeTable on each of `tables`): one
 * CREATING is waited for (tried again with backoff, for as long as DynamoDB says so); with none
 * CREATING, one that DescribeTable does not find either is given up on at once (a `tables` option
 * naming no table: one DescribeTable round trip later); where DescribeTable shows every one ACTIVE,
 * it is tried once more (the request may have met a table CREATING that turned ACTIVE before the
 * look), then given up on (`active`): a request sent after DescribeTable said ACTIVE that finds no
 * table again is no table being created; where DescribeTable tells nothing (not
 * granted: a role of grantWorker or grantGetLeader from @conclave/cdk before 0.2.0, or a policy of
 * the user's own; or it failed), it is tried again for TABLE_WAIT_MS from the first missing table,
 * then given up on. One per start-up or call: the wait runs from its first missing table. Only the
 * table the failing request named is looked at where it is known (namedRequests): another of
 * `tables`, being created meanwhile, is no reason to wait.
 */
export class TableWait {
  /** Monotonic time of the first missing table met, none being created since: where TABLE_WAIT_MS runs from. */
  private missingSince: number | undefined;
  /** The tables DescribeTable showed CREATING at the last look: none where it told nothing (the bounded wait). */
  creating: readonly string[] = [];
  /** The tables DescribeTable showed ACTIVE, every one looked at, at the last look: tried once more, then given up on. */
  active: readonly string[] = [];
  /** Whether the look before the last one showed every table ACTIVE too: the request since, sent after it, found none again. */
  private activeBefore = false;

  constructor(
    /** The tables looked at: those the caller uses. */
    private readonly tables: readonly string[],
    /** How a table is looked at (tableState: DescribeTable, through the caller's bounded client), and the clock the wait is timed on. */
    private readonly look: { state: (table: string) => Promise<TableState>; clock: Pick<Clock, 'monotonic'> },
  ) {}

  /** Whether `error` is DynamoDB's missing table and the caller is to try again after its backoff; false for any other error, and for a missing table given up on. */
  async waitsFor(error: unknown): Promise<boolean> {
    if (!isMissingTable(error)) return false;
    const { state, clock } = this.look;
    const now = clock.monotonic();
    this.missingSince ??= now;
    // the request's own table where it is known: another one CREATING says nothing of this one
    const asked = requestTables.get(error as object);
    const names = asked !== undefined && this.tables.includes(asked) ? [asked] : [...new Set(this.tables)];
    const states = await Promise.all(names.map(state));
    this.creating = names.filter((_, i) => states[i] === 'creating');
    this.active = states.every((s) => s === 'there') ? names : [];
    const activeBefore = this.activeBefore;
    this.activeBefore = this.active.length > 0;
    if (this.creating.length > 0) {
      this.missingSince = undefined; // being made: waited for, the wait counted again from the next missing table not being made
      return true;
    }
    // ACTIVE, yet not found: once, the request may have raced the table's last moment CREATING; a
    // request sent after DescribeTable said ACTIVE that finds none again is another endpoint or
    // region than the table's, or a table deleted and made again: no wait helps, and the caller
    // says so at once rather than after TABLE_WAIT_MS
    if (this.active.length > 0) {
      if (activeBefore) givenUpActive.set(error as object, this.active);
      return !activeBefore;
    }
    return !states.includes('missing') && now - this.missingSince < TABLE_WAIT_MS;
  }
}

/**
 * How long a start-up goes on trying while its table is missing and DescribeTable cannot say
 * whether it is being created (not granted, or failing): DynamoDB makes a new on-demand table
 * ACTIVE within seconds to a minute. A table DescribeTable shows CREATING is waited for without it.
 */
export const TABLE_WAIT_MS = 60_000;

/** How DescribeTable shows a table (lib/stores/table-state.ts): not there, being created, there, or not known (DescribeTable refused or failed). */
export type TableState = 'missing' | 'creating' | 'there' | 'unknown';

/** DynamoDB's own missing table (ResourceNotFoundException), not yet told as anyone's (the SDK's TableNotFoundError has a name of its own). */
export const isMissingTable = (e: unknown): boolean => e instanceof Error && e.name === 'ResourceNotFoundException';

/**
 * Whether `e` is DynamoDB refusing a request's key: the table exists but is keyed otherwise than
 * the request (a table made by hand, or another application's, named where a Conclave table was
 * meant). AWS: "The provided key element does not match the schema", "Missing the key … in the
 * item", "Type mismatch for key …", "Query condition missed key schema element"; DynamoDB Local:
 * "One of the required keys was not given a value", "The number of conditions on the keys is
 * invalid", "Query key condition not supported". No try again changes it.
 */
export const isWrongKey = (e: unknown): boolean =>
  e instanceof Error && e.name === 'ValidationException' && /key element|key schema|Missing the key|Type mismatch for key|required keys was not given a value|conditions on the keys|key condition not supported/i.test(e.message);

/** The table the request that failed with `e` named (noted by namedRequests); undefined when none was (a transaction) or it was not noted. */
export const requestTableOf = (e: unknown): string | undefined => (typeof e === 'object' && e !== null ? requestTables.get(e) : undefined);

/** The tables DescribeTable showed ACTIVE where TableWait gave up on a missing table (TableWait.active), by the error given up on. */
const givenUpActive = new WeakMap<object, readonly string[]>();

/**
 * The tables DescribeTable showed ACTIVE, though a request sent after it said so found none, where
 * `error` is the missing table TableWait gave up on for that; undefined for any other error (the
 * SDK's TableNotFoundError says which it was).
 */
export const activeNotFoundOf = (error: unknown): readonly string[] | undefined => (typeof error === 'object' && error !== null ? givenUpActive.get(error) : undefined);

/** The table each failed request named (its input's TableName), noted by namedRequests. */
const requestTables = new WeakMap<object, string>();

/** Where the client sent each request that met a table missing or keyed otherwise, noted by namedRequests given `where`. */
const requestEndpoints = new WeakMap<object, string>();

/** Where the request that failed with `e` went (the SDK's endpointOf: a URL, or the Region's endpoint in words), where namedRequests noted it: a table missing or keyed otherwise. */
export const requestEndpointOf = (e: unknown): string | undefined => (typeof e === 'object' && e !== null ? requestEndpoints.get(e) : undefined);

/**
 * `client` (a DynamoDB client) whose `send` notes, on the error a request meets, the table the
 * request named (a TransactWriteItems or a ListTables names none), so that TableWait looks at that
 * table only, and, given `where` (never rejecting), where the client sends a request that met a
 * table missing or keyed otherwise, for the error to name (a table in another Region is the usual
 * cause); everything else is the client's own (its configuration, middleware and credentials are
 * shared, not copied).
 */
export function namedRequests<C extends object>(client: C, where?: () => Promise<string>): C {
  const named = Object.create(client) as C;
  const own = client as unknown as { send(command: { input?: unknown }, ...rest: unknown[]): Promise<unknown> };
  const send = async (command: { input?: unknown }, ...rest: unknown[]): Promise<unknown> => {
    try {
      return await own.send(command, ...rest);
    } catch (e) {
      const table = (command.input as { TableName?: unknown } | undefined)?.TableName;
      if (typeof e === 'object' && e !== null) {
        if (typeof table === 'string') requestTables.set(e, table);
        if (where && (isMissingTable(e) || isWrongKey(e))) requestEndpoints.set(e, await where());
      }
      throw e;
    }
  };
  Object.defineProperty(named, 'send', { value: send });
  return named;
}

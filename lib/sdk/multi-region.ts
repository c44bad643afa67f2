/**
 * The `multiRegion` option checked against the tables as DynamoDB describes them, once per
 * start-up (LeaderElector.run, and so each withLease run). A global table with multi-Region
 * eventual consistency (MREC) checks a write's condition against the replica of the Region that
 * took the write, and settles concurrent writes by last writer wins: two Regions can each grant
 * the lease, and each pass a fenced write. Only MRSC (MultiRegionConsistency STRONG) keeps one
 * order for all Regions. A table with no replicas is one copy in one Region: `multiRegion` costs it
 * strongly consistent reads and no transactions, and is safe (and what tests on DynamoDB Local do).
 * Every table whose conditions a run relies on is checked: the leases table; the candidates table
 * where run-once windows are claimed and marked, or candidates stand; the identities table where
 * a term lives by its session's renewals. Each judged alone is not enough: once one of them is a
 * global table, all must be, in the same Regions, or a Region's worker uses that Region's own table
 * by that name (a session row, a window's claim, that the other Regions never see). A global table
 * of version 2017.11.29 (always MREC) is found by DescribeGlobalTable, as the Developer Guide finds
 * one ("Determining the version of a global table"): DescribeTable is only documented to show
 * version 2019.11.21's, so a table it shows with no replicas and no version is also looked up there.
 */
import { DescribeGlobalTableCommand, DescribeTableCommand, type DynamoDBClient, type GlobalTableDescription, type TableDescription } from '@aws-sdk/client-dynamodb';
import { ValidationError } from '../schemas/validation.js';

/** The global tables version whose tables are always MREC (found by DescribeGlobalTable; DescribeTable may not list their replicas or version). */
const LEGACY_GLOBAL_TABLES = '2017.11.29';

/** A table the start-up check describes: its role (what it holds) and name. */
export interface CheckedTable {
  readonly role: 'leases' | 'candidates' | 'identities';
  readonly name: string;
}

/** What two Regions can each do on an MREC table of that role. */
const UNSAFE: Record<CheckedTable['role'], string> = {
  leases: 'each grant the lease and each pass a fenced write',
  candidates: 'each claim and mark one run-once window (it runs twice)',
  identities: "each judge a session by its own replica's renewals (a term ended early in one Region while its holder leads on in another)",
};

/** Whether DescribeTable shows `table` as a single-Region table, which a 2017.11.29 global table's replica can look like. */
const mayBeLegacy = (table: TableDescription): boolean => !table.Replicas?.length && table.GlobalTableVersion === undefined;

/**
 * Why `multiRegion` cannot be given for the table (of `role`) DescribeTable described as `table`
 * (and DescribeGlobalTable as `legacyTable`, when it found one); undefined when it can: a table with
 * no replicas, or an MRSC one. @internal
 */
export function multiRegionRefusal(table: TableDescription, role: CheckedTable['role'] = 'leases', legacyTable?: GlobalTableDescription): string | undefined {
  const regions = legacyTable ? (legacyTable.ReplicationGroup ?? []).map((r) => r.RegionName ?? '?') : replicaRegions(table);
  const legacy = legacyTable !== undefined || table.GlobalTableVersion === LEGACY_GLOBAL_TABLES;
  if (regions.length === 0 && !legacy) return undefined; // one copy: every condition is checked on it
  if (table.MultiRegionConsistency === 'STRONG' && !legacy) return undefined;
  const what = legacy ? `a global table of version ${LEGACY_GLOBAL_TABLES}${regions.length ? ` (replicas in ${regions.join(', ')})` : ''}` : `a global table with multi-Region eventual consistency (MultiRegionConsistency ${table.MultiRegionConsistency ?? 'not set: EVENTUAL'}${regions.length ? `; replicas in ${regions.join(', ')}` : ''})`;
  return (
    `the ${role} table "${table.TableName ?? '?'}" is ${what}: each Region checks a write's condition against its own replica and the last writer wins, ` +
    `so two Regions can ${UNSAFE[role]}. Give multiRegion only with multi-Region strongly consistent tables ` +
    "(MultiRegionConsistency STRONG: the Conclave construct's `regions` makes them), or run in one Region on single-Region tables"
  );
}

/** The Regions a table's replicas are in, as the refusals name them. */
const replicaRegions = (table: TableDescription): string[] => (table.Replicas ?? []).map((r) => r.RegionName ?? '?');
const sameRegions = (a: readonly string[], b: readonly string[]): boolean => [...a].sort().join() === [...b].sort().join();

/**
 * Why `multiRegion` cannot be given for `tables` together, each of which multiRegionRefusal allows
 * alone (none listing replicas, or MRSC): once one lists replicas, every one must, in the same
 * Regions; judged against the leases table when it lists them, else the first that does.
 * undefined when they agree. @internal
 */
export function multiRegionMismatch(tables: readonly (CheckedTable & { table: TableDescription })[]): string | undefined {
  const global = tables.find((t) => t.role === 'leases' && replicaRegions(t.table).length > 0) ?? tables.find((t) => replicaRegions(t.table).length > 0);
  if (!global) return undefined; // all single-Region
  const regions = replicaRegions(global.table);
  const other = tables.find((t) => !sameRegions(replicaRegions(t.table), regions));
  if (!other) return undefined;
  const has = replicaRegions(other.table);
  return (
    `the ${other.role} table "${other.name}" ${has.length ? `has replicas in ${has.join(', ')}` : 'has no replicas (a table of this Region alone)'}, ` +
    `while the ${global.role} table "${global.name}" is a multi-Region strongly consistent global table with replicas in ${regions.join(', ')}: ` +
    `a worker in a Region where one has a replica and the other has none uses a table of that Region's own by that name (or finds none), so two Regions can ${UNSAFE[other.role]}. ` +
    `Make it an MRSC global table with the same Regions (MultiRegionConsistency STRONG; replicas in ${regions.join(', ')}: the Conclave construct's \`regions\` makes them), ` +
    'or run each Region on its own tables without multiRegion'
  );
}

/** What DescribeGlobalTable answers when the table is no global table of version 2017.11.29; UnknownOperationException: an endpoint without them (DynamoDB Local). */
const NOT_LEGACY = new Set(['GlobalTableNotFoundException', 'UnknownOperationException']);

const settle = <T>(p: Promise<T>): Promise<{ out: T; error?: undefined } | { out?: undefined; error: unknown }> => p.then((out) => ({ out }), (error: unknown) => ({ error }));
const failure = (error: unknown): string => (error instanceof Error ? `${error.name}: ${error.message}` : String(error));

/**
 * Refuses `multiRegion` where DescribeTable (and, for a table it shows with no replicas and no
 * version, DescribeGlobalTable) shows one of `tables` is not MRSC (the first, in their order), or,
 * each allowed alone, they do not agree (multiRegionMismatch: a global table beside a single-Region
 * one, or replicas in other Regions): a ValidationError naming the option, the table and the fix,
 * which run() rejects with (no start-up can succeed on that table). A table left unchecked (below) is
 * compared with none.
 * A leases table that does not exist is DynamoDB's ResourceNotFoundException, thrown as it is
 * (run() names the tables); another table that does not exist holds nothing to check (its own use
 * fails where it is needed). Any other failure of DescribeTable (not granted: a policy of the user's
 * own, or grantWorker before 0.2.0 on a construct without `regions`; a fault) leaves that table unchecked, and onError is told so;
 * the worker starts. So does a failure of DescribeGlobalTable, but for GlobalTableNotFoundException
 * (no such global table: single-Region) and UnknownOperationException (DynamoDB Local).
 * `signal` aborted (the worker stopped before the answers): rejects with its reason, nothing told.
 */
export async function checkMultiRegion(client: DynamoDBClient, tables: readonly CheckedTable[], subject: string, onError: (e: Error) => void, signal?: AbortSignal): Promise<void> {
  signal?.throwIfAborted();
  const sent = signal ? { abortSignal: signal } : {};
  // described at once: a DescribeTable never answered costs its bound once, not once per table
  const described = await Promise.all(
    tables.map(async (t) => {
      const { out, error } = await settle(client.send(new DescribeTableCommand({ TableName: t.name }), sent));
      const table = out?.Table;
      if (!table || !mayBeLegacy(table) || signal?.aborted) return { ...t, table, error, global: undefined };
      return { ...t, table, error, global: await settle(client.send(new DescribeGlobalTableCommand({ GlobalTableName: t.name }), sent)) };
    }),
  );
  signal?.throwIfAborted();
  const checked: (CheckedTable & { table: TableDescription })[] = [];
  for (const { role, name, table, error, global } of described) {
    if (error !== undefined) {
      if (error instanceof Error && error.name === 'ResourceNotFoundException') {
        if (role === 'leases') throw error;
        continue;
      }
      onError(new Error(`${subject}: multiRegion not checked: DescribeTable of the ${role} table "${name}" failed (${failure(error)}); allow dynamodb:DescribeTable on it to have an eventually consistent global table refused at start-up`, { cause: error }));
      continue;
    }
    if (global?.error !== undefined && !(global.error instanceof Error && NOT_LEGACY.has(global.error.name))) {
      onError(new Error(`${subject}: multiRegion not checked: DescribeGlobalTable of the ${role} table "${name}" failed (${failure(global.error)}); allow dynamodb:DescribeGlobalTable on it to have a global table of version ${LEGACY_GLOBAL_TABLES} refused at start-up`, { cause: global.error }));
      continue;
    }
    if (!table) continue;
    const why = multiRegionRefusal(table, role, global?.out?.GlobalTableDescription);
    if (why) throw new ValidationError(subject, [{ field: 'multiRegion', message: why }]);
    checked.push({ role, name, table });
  }
  const mismatch = multiRegionMismatch(checked);
  if (mismatch) throw new ValidationError(subject, [{ field: 'multiRegion', message: mismatch }]);
}

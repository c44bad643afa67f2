/**
 * The `multiRegion` option checked against the tables as DynamoDB describes them, once per
 * start-up (LeaderElector.run, and so each withLease run). A global table with multi-Region
 * eventual consistency (MREC) checks a write's condition against the replica of the Region that
 * took the write, and settles concurrent writes by last writer wins: two Regions can each grant
 * the lease, and each pass a fenced write. Only MRSC (MultiRegionConsistency STRONG) keeps one
 * order for all Regions. A table with no replicas is one copy in one Region: on DynamoDB Local (an
 * endpoint on this machine: the tests, local mode) `multiRegion` costs it strongly consistent reads
 * and no transactions, and is allowed. Through AWS's endpoint of a Region (any endpoint off this
 * machine) it is refused: a worker given `multiRegion` whose client sends to a Region that holds no
 * replica (the witness Region, a fourth one) but a table of the same name (an earlier single-Region
 * stack's, by the same tablePrefix) would run an election of its own there, beside the MRSC one: two
 * leaders for one lease name (judged so without DescribeGlobalTable too, which grantWorker does not
 * grant: a table DescribeTable shows with no replicas and no version is no MRSC table either way).
 * Where the leases table is not there at all, run()'s TableNotFoundError says the client must send
 * to a replica Region (multiRegionMissIn).
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
import { sendsToThisMachine } from './faults.js';
import { noteMultiRegionMiss } from './options.js';

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

/** `a`, `a and b`, `a, b and c`. */
const listed = (xs: readonly string[]): string => (xs.length <= 1 ? xs.join('') : `${xs.slice(0, -1).join(', ')} and ${xs.at(-1)!}`);

/**
 * Why `multiRegion` cannot be given for `tables`, each allowed alone and together
 * (multiRegionRefusal, multiRegionMismatch), where the client sends to `region` off this machine
 * (AWS's endpoint of that Region, or any other not on a loopback host): all of them with no replicas
 * are tables of that Region alone, and a worker there elects on them apart from the MRSC tables of
 * the same names that workers in the replica Regions use. undefined when `region` is (the client
 * sends to this machine: DynamoDB Local, whose tables are all single-Region) or a table lists
 * replicas (multiRegionMismatch judges those). A table given with `unlooked` (why DescribeGlobalTable
 * failed) is said to be that or a global table of version 2017.11.29: neither is MRSC. @internal
 */
export function singleRegionRefusal(tables: readonly (CheckedTable & { table: TableDescription; unlooked?: string })[], region: string | undefined): string | undefined {
  if (region === undefined || tables.length === 0 || tables.some((t) => replicaRegions(t.table).length > 0)) return undefined;
  const named = listed(tables.map((t) => `the ${t.role} table "${t.name}"`));
  const unlooked = tables.find((t) => t.unlooked !== undefined);
  return (
    `${named} ${tables.length === 1 ? 'has' : 'have'} no replicas in Region ${region}, where the client sends: ${tables.length === 1 ? 'a table' : 'tables'} of that Region alone` +
    (unlooked ? ` (or a global table of version ${LEGACY_GLOBAL_TABLES}, which DescribeTable shows so too and is no MRSC table either: DescribeGlobalTable of "${unlooked.name}" failed, ${unlooked.unlooked})` : '') +
    '. ' +
    "Workers given multiRegion in the tables' replica Regions elect on the multi-Region strongly consistent tables there, and this one would elect on its own beside them: two leaders for one lease name. " +
    "Point the client at one of the tables' replica Regions (the `replicas` of the Conclave construct's `regions`; its witness holds no table), " +
    'or drop multiRegion for tables of one Region (multiRegion allows single-Region tables only on an endpoint on this machine: DynamoDB Local at localhost or 127.0.0.1)'
  );
}

/**
 * The Region `client` sends to, where its endpoint is not on this machine (AWS's, or any off a
 * loopback host: sendsToThisMachine); undefined on this machine (DynamoDB Local), and for a client
 * that sends over no HTTP (an in-process stand-in: the simulator's model, whose endpoint is
 * `model:`) or is not the AWS SDK's (no config to judge).
 */
async function awayIn(client: DynamoDBClient): Promise<string | undefined> {
  const config = client.config as { region?: unknown; endpoint?: unknown } | undefined;
  const region = config?.region;
  if (typeof region !== 'function' || (await sendsToThisMachine(client))) return undefined;
  if (typeof config?.endpoint === 'function') {
    const protocol = await (config.endpoint as () => Promise<{ protocol?: string }>)().then(
      (e) => e.protocol,
      () => undefined,
    );
    if (protocol !== undefined && protocol !== 'http:' && protocol !== 'https:') return undefined;
  }
  return (region as () => Promise<string>)().then(
    (r) => r,
    () => '(not resolvable)',
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
 * one, or replicas in other Regions), or they are all single-Region and `client` sends off this
 * machine (singleRegionRefusal: a Region holding no replica): a ValidationError naming the option,
 * the table and the fix, which run() rejects with (no start-up can succeed on that table). A table
 * left unchecked (below) is compared with none.
 * A leases table that does not exist is DynamoDB's ResourceNotFoundException, thrown as it is
 * (run() names the tables; off this machine, with the client's Region noted for its message:
 * multiRegionMissIn); another table that does not exist holds nothing to check (its own use
 * fails where it is needed). Any other failure of DescribeTable (not granted: a policy of the user's
 * own, or grantWorker before 0.2.0 on a construct without `regions`; a fault) leaves that table unchecked, and onError is told so;
 * the worker starts. So does a failure of DescribeGlobalTable, but for GlobalTableNotFoundException
 * (no such global table: single-Region) and UnknownOperationException (DynamoDB Local), on this
 * machine; off it (grantWorker grants no DescribeGlobalTable) the table is judged as single-Region
 * (DescribeTable's answer, no replicas and no version, is no MRSC table's either way): refused.
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
  const checked: (CheckedTable & { table: TableDescription; unlooked?: string })[] = [];
  // where the client sends: asked once, and only where a table lists no replicas
  let away: Promise<string | undefined> | undefined;
  const awayRegion = () => (away ??= awayIn(client));
  for (const { role, name, table, error, global } of described) {
    if (error !== undefined) {
      if (error instanceof Error && error.name === 'ResourceNotFoundException') {
        if (role !== 'leases') continue;
        const region = await awayRegion();
        if (region !== undefined) noteMultiRegionMiss(error, region);
        throw error;
      }
      onError(new Error(`${subject}: multiRegion not checked: DescribeTable of the ${role} table "${name}" failed (${failure(error)}); allow dynamodb:DescribeTable on it to have an eventually consistent global table refused at start-up`, { cause: error }));
      continue;
    }
    if (global?.error !== undefined && !(global.error instanceof Error && NOT_LEGACY.has(global.error.name))) {
      // DescribeTable's answer (no replicas, no version) is no MRSC table's: off this machine that is enough
      // to refuse (singleRegionRefusal), which of the two it is aside (grantWorker grants no DescribeGlobalTable)
      if (table && (await awayRegion()) !== undefined) {
        checked.push({ role, name, table, unlooked: failure(global.error) });
        continue;
      }
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
  // all of one Region (or none checked): refused off this machine, where a replica Region's tables are the MRSC ones
  if (checked.length === 0 || checked.some((t) => replicaRegions(t.table).length > 0)) return;
  const region = await awayRegion();
  signal?.throwIfAborted();
  const alone = singleRegionRefusal(checked, region);
  if (alone) throw new ValidationError(subject, [{ field: 'multiRegion', message: alone }]);
}

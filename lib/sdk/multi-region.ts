/**
 * The `multiRegion` option checked against the leases table as DynamoDB describes it, once per
 * start-up (LeaderElector.run, and so each withLease run). A global table with multi-Region
 * eventual consistency (MREC) checks a write's condition against the replica of the Region that
 * took the write, and settles concurrent writes by last writer wins: two Regions can each grant
 * the lease, and each pass a fenced write. Only MRSC (MultiRegionConsistency STRONG) keeps one
 * order for all Regions. A table with no replicas is one copy in one Region: `multiRegion` costs it
 * strongly consistent reads and no transactions, and is safe (and what tests on DynamoDB Local do).
 */
import { DescribeTableCommand, type DynamoDBClient, type TableDescription } from '@aws-sdk/client-dynamodb';
import { ValidationError } from '../schemas/validation.js';

/** The global tables version whose tables are always MREC (and whose replicas DescribeTable may not list). */
const LEGACY_GLOBAL_TABLES = '2017.11.29';

/**
 * Why `multiRegion` cannot be given for the leases table DescribeTable described as `table`;
 * undefined when it can: a table with no replicas, or an MRSC one. @internal
 */
export function multiRegionRefusal(table: TableDescription): string | undefined {
  const regions = (table.Replicas ?? []).map((r) => r.RegionName ?? '?');
  const legacy = table.GlobalTableVersion === LEGACY_GLOBAL_TABLES;
  if (regions.length === 0 && !legacy) return undefined; // one copy: every condition is checked on it
  if (table.MultiRegionConsistency === 'STRONG' && !legacy) return undefined;
  const what = legacy ? `a global table of version ${LEGACY_GLOBAL_TABLES}` : `a global table with multi-Region eventual consistency (MultiRegionConsistency ${table.MultiRegionConsistency ?? 'not set: EVENTUAL'}${regions.length ? `; replicas in ${regions.join(', ')}` : ''})`;
  return (
    `the leases table "${table.TableName ?? '?'}" is ${what}: each Region checks a write's condition against its own replica and the last writer wins, ` +
    'so two Regions can each grant the lease and each pass a fenced write. Give multiRegion only with multi-Region strongly consistent tables ' +
    "(MultiRegionConsistency STRONG: the Conclave construct's `regions` makes them), or run in one Region on single-Region tables"
  );
}

/**
 * Refuses `multiRegion` where DescribeTable shows the leases table is not MRSC: a ValidationError
 * naming the option and the fix, which run() rejects with (no start-up can succeed on that table).
 * A table that does not exist is DynamoDB's ResourceNotFoundException, thrown as it is (run() names
 * the tables). Any other failure of DescribeTable (not granted: grantWorker grants it only on a construct with `regions`; a
 * fault) leaves the option unchecked, and onError is told so; the worker starts.
 */
export async function checkMultiRegion(client: DynamoDBClient, table: string, subject: string, onError: (e: Error) => void): Promise<void> {
  let described: TableDescription | undefined;
  try {
    described = (await client.send(new DescribeTableCommand({ TableName: table }))).Table;
  } catch (e) {
    if (e instanceof Error && e.name === 'ResourceNotFoundException') throw e;
    const why = e instanceof Error ? `${e.name}: ${e.message}` : String(e);
    onError(new Error(`${subject}: multiRegion not checked: DescribeTable of the leases table "${table}" failed (${why}); allow dynamodb:DescribeTable on it to have an eventually consistent global table refused at start-up`, { cause: e }));
    return;
  }
  const why = described && multiRegionRefusal(described);
  if (why) throw new ValidationError(subject, [{ field: 'multiRegion', message: why }]);
}

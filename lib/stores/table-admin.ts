/**
 * One declared table (lib/tables.ts' TableSpec) made on, or deleted from, a DynamoDB endpoint:
 * Conclave's tables in local mode (lib/local/tables.ts), the history's ledger (lib/history/ledger.ts)
 * and the bench's baseline table. Here, under both, so the history needs nothing of local mode.
 */
import {
  CreateTableCommand,
  DeleteTableCommand,
  DescribeTableCommand,
  DescribeTimeToLiveCommand,
  UpdateTimeToLiveCommand,
  waitUntilTableExists,
  waitUntilTableNotExists,
  type CreateTableCommandInput,
  type DynamoDBClient,
  type TableDescription,
} from '@aws-sdk/client-dynamodb';
import { TTL_ATTRIBUTE, type TableSpec } from '../tables.js';

/** The only stream Conclave's tables declare: the functions read both images. */
const STREAM_VIEW = 'NEW_AND_OLD_IMAGES';

export interface CreateTableOptions {
  /** Turn TTL on, on `expiresAt`. @default false */
  readonly ttl?: boolean;
  /**
   * A table of that name already there: `'reuse'` takes it as it is (its rows, its stream) if its
   * keys, attribute definitions, indexes and stream view are the ones declared, waiting until it is
   * active, and refuses one of another shape with a TableShapeError; `'fail'` throws DynamoDB's
   * ResourceInUseException, as for a table that must be new (a history's ledger). @default 'fail'
   */
  readonly ifExists?: 'fail' | 'reuse';
  /** For a TableShapeError: what the table is, and what to do instead. */
  readonly describedAs?: { readonly what: string; readonly fix: string };
}

/** One table found with another shape than declared: its name, what it is, and each difference. */
export interface TableShape {
  readonly table: string;
  /** What the table is, e.g. `Conclave's leases table`. */
  readonly what: string;
  /** Each difference, e.g. `stream: NEW_AND_OLD_IMAGES declared, none found`. */
  readonly differences: readonly string[];
}

/**
 * Tables of the names asked for exist, with another shape than declared: reusing them would run
 * Conclave's requests against keys, indexes or a stream they do not have. Names each table, each
 * difference and the fix; the tables are left as they are.
 */
export class TableShapeError extends Error {
  override readonly name = 'TableShapeError';
  /** The (first) table of another shape. */
  readonly table: string;
  /** Its differences. */
  readonly differences: readonly string[];
  /** Every table of another shape, with its differences. */
  readonly tables: readonly TableShape[];

  constructor(tables: readonly TableShape[], fix: string) {
    const [first] = tables;
    if (!first) throw new TypeError('TableShapeError: no table');
    super(
      tables.length === 1
        ? `table ${first.table} exists with another shape than ${first.what}: ${first.differences.join('; ')} - ${fix}`
        : `${tables.length} tables exist with another shape than declared:\n${tables.map((t) => `- table ${t.table}, ${t.what}: ${t.differences.join('; ')}`).join('\n')}\n${fix}`,
    );
    this.table = first.table;
    this.differences = first.differences;
    this.tables = tables;
  }
}

/** CreateTable's input for `t` (on-demand, string keys, keys-only indexes, a stream with both images when declared). */
function createInput(name: string, t: TableSpec): CreateTableCommandInput {
  const keys = [t.partitionKey, ...(t.sortKey ? [t.sortKey] : [])];
  const attributes = [...new Set([...keys, ...t.indexes.map((i) => i.partitionKey)])];
  return {
    TableName: name,
    BillingMode: 'PAY_PER_REQUEST',
    AttributeDefinitions: attributes.map((k) => ({ AttributeName: k, AttributeType: 'S' })),
    KeySchema: keys.map((k, i) => ({ AttributeName: k, KeyType: i === 0 ? 'HASH' : 'RANGE' })),
    ...(t.indexes.length
      ? { GlobalSecondaryIndexes: t.indexes.map((i) => ({ IndexName: i.name, KeySchema: [{ AttributeName: i.partitionKey, KeyType: 'HASH' as const }], Projection: { ProjectionType: 'KEYS_ONLY' as const } })) }
      : {}),
    ...(t.stream ? { StreamSpecification: { StreamEnabled: true, StreamViewType: STREAM_VIEW } } : {}),
  };
}

type Shape = Pick<TableDescription, 'KeySchema' | 'AttributeDefinitions' | 'GlobalSecondaryIndexes' | 'StreamSpecification'>;

/** Each part of a table's shape that is compared, and how it is shown. */
const ASPECTS: readonly (readonly [string, (s: Shape) => string])[] = [
  ['key schema', (s) => (s.KeySchema ?? []).map((k) => `${k.AttributeName} (${k.KeyType})`).join(', ') || 'none'],
  ['attribute definitions', (s) => (s.AttributeDefinitions ?? []).map((a) => `${a.AttributeName} (${a.AttributeType})`).sort().join(', ') || 'none'],
  [
    'indexes',
    (s) =>
      (s.GlobalSecondaryIndexes ?? [])
        .map((i) => `${i.IndexName} (${(i.KeySchema ?? []).map((k) => `${k.AttributeName} ${k.KeyType}`).join(', ')}, ${i.Projection?.ProjectionType}${i.Projection?.NonKeyAttributes?.length ? ` ${i.Projection.NonKeyAttributes.join(' ')}` : ''})`)
        .sort()
        .join(', ') || 'none',
  ],
  ['stream', (s) => (s.StreamSpecification?.StreamEnabled ? (s.StreamSpecification.StreamViewType ?? 'on') : 'none')],
];

/** How a table of shape `found` differs from `declared` (CreateTable's input or DescribeTable's table), one line each; none when it matches. */
export function shapeDifferences(declared: Shape, found: Shape): string[] {
  const out: string[] = [];
  for (const [what, show] of ASPECTS) {
    const [d, f] = [show(declared), show(found)];
    if (d !== f) out.push(`${what}: ${d} declared, ${f} found`);
  }
  return out;
}

/**
 * The shape `t` declares, in the words of a TableShapeError's differences (`key schema name (HASH);
 * attribute definitions …; indexes …; stream NEW_AND_OLD_IMAGES`, and the time to live with `ttl`):
 * what a user who has no copy of the declaration can compare a table with.
 */
export function declaredShape(t: TableSpec, opts: { readonly ttl?: boolean } = {}): string {
  const input = createInput('-', t);
  return [...ASPECTS.map(([what, show]) => `${what} ${show(input)}`), ...(opts.ttl ? [`time to live on ${TTL_ATTRIBUTE}`] : [])].join('; ');
}

const named = (e: unknown, name: string): boolean => e instanceof Error && e.name === name;

const DECLARED = { what: 'declared', fix: 'give the table another name, or delete this one if nothing else needs it' };

const shapeError = (table: string, differences: string[], described: CreateTableOptions['describedAs'] = DECLARED) =>
  new TableShapeError([{ table, what: described.what, differences }], described.fix);

/** A time to live on another attribute than declared. */
const ttlDifference = (found: string | undefined) => `time to live: on ${TTL_ATTRIBUTE} declared, on ${found} found`;

/**
 * How the table `name`, if there, differs from `t` (createTable's checks of a table to reuse: keys,
 * attribute definitions, indexes, stream view, and with `ttl` a time to live on another
 * attribute); none for a table that matches, is missing or is being deleted (made anew). What a
 * caller making several tables looks at before it makes any.
 */
export async function foundShapeDifferences(client: DynamoDBClient, name: string, t: TableSpec, opts: { readonly ttl?: boolean } = {}): Promise<string[]> {
  let found: TableDescription | undefined;
  try {
    found = (await client.send(new DescribeTableCommand({ TableName: name }))).Table;
  } catch (e) {
    if (named(e, 'ResourceNotFoundException')) return [];
    throw e;
  }
  if (found === undefined || found.TableStatus === 'DELETING') return [];
  const differences = shapeDifferences(createInput(name, t), found);
  if (opts.ttl) {
    const ttl = (await client.send(new DescribeTimeToLiveCommand({ TableName: name }))).TimeToLiveDescription;
    const on = ttl?.TimeToLiveStatus === 'ENABLED' || ttl?.TimeToLiveStatus === 'ENABLING';
    if (on && ttl?.AttributeName !== TTL_ATTRIBUTE) differences.push(ttlDifference(ttl?.AttributeName));
  }
  return differences;
}

/**
 * Creates one table as `t` declares it (on-demand, string keys, keys-only indexes, a stream with
 * both images when declared), waits until it is active, and enables TTL on `expiresAt` if asked.
 * One already there is DynamoDB's ResourceInUseException, or reused (`ifExists: 'reuse'`).
 */
export async function createTable(client: DynamoDBClient, name: string, t: TableSpec, opts: CreateTableOptions = {}): Promise<void> {
  const input = createInput(name, t);
  let reused = false;
  // a table being deleted is waited out and made again; one deleted between the create and the look, made again
  for (let attempt = 1; ; attempt++) {
    try {
      await client.send(new CreateTableCommand(input));
      break;
    } catch (e) {
      // a fault; a table there that must be new; or one still coming and going after three tries
      if (opts.ifExists !== 'reuse' || !named(e, 'ResourceInUseException') || attempt === 3) throw e;
    }
    const found = await client.send(new DescribeTableCommand({ TableName: name })).then(
      (d) => d.Table,
      (e: unknown) => {
        if (named(e, 'ResourceNotFoundException')) return undefined; // gone since: made again
        throw e;
      },
    );
    if (found === undefined) continue;
    if (found.TableStatus === 'DELETING') {
      await waitUntilTableNotExists({ client, maxWaitTime: 60, minDelay: 1, maxDelay: 2 }, { TableName: name });
      continue;
    }
    const differences = shapeDifferences(input, found);
    if (differences.length) throw shapeError(name, differences, opts.describedAs);
    reused = true;
    break;
  }
  await waitUntilTableExists({ client, maxWaitTime: 60, minDelay: 1, maxDelay: 2 }, { TableName: name }); // ACTIVE, a reused one too (CREATING, UPDATING)
  if (!opts.ttl) return;
  if (reused) {
    const ttl = (await client.send(new DescribeTimeToLiveCommand({ TableName: name }))).TimeToLiveDescription;
    const on = ttl?.TimeToLiveStatus === 'ENABLED' || ttl?.TimeToLiveStatus === 'ENABLING';
    if (on && ttl?.AttributeName === TTL_ATTRIBUTE) return;
    if (on) throw shapeError(name, [ttlDifference(ttl?.AttributeName)], opts.describedAs);
  }
  await client.send(new UpdateTimeToLiveCommand({ TableName: name, TimeToLiveSpecification: { Enabled: true, AttributeName: TTL_ATTRIBUTE } }));
}

/** Deletes a table; one already gone is fine. */
export async function deleteTable(client: DynamoDBClient, name: string): Promise<void> {
  try {
    await client.send(new DeleteTableCommand({ TableName: name }));
  } catch (e) {
    if (!(e instanceof Error && e.name === 'ResourceNotFoundException')) throw e; // already gone is fine
  }
}

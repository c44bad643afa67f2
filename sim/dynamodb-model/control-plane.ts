/** The table operations: CreateTable, DescribeTable, DeleteTable, ListTables. */
import type {
  CreateTableCommandInput,
  CreateTableCommandOutput,
  DeleteTableCommandInput,
  DeleteTableCommandOutput,
  DescribeTableCommandInput,
  DescribeTableCommandOutput,
  ListTablesCommandInput,
  ListTablesCommandOutput,
  TableDescription,
} from '@aws-sdk/client-dynamodb';
import type { Engine } from './engine.js';
import { resourceInUse, validationError } from './errors.js';
import { LEGACY_CREATE, unsupported } from './requests.js';
import { ModelStream, type StreamViewType } from './streams.js';
import { Table, type IndexDef, type KeyDef, type KeyType } from './table.js';

export function createTable(engine: Engine, input: CreateTableCommandInput): CreateTableCommandOutput {
  unsupported(input, LEGACY_CREATE, 'CreateTable');
  const name = input.TableName;
  if (!name || !/^[a-zA-Z0-9_.-]{3,255}$/.test(name)) throw validationError(`TableName must be 3-255 characters of a-z, A-Z, 0-9, '_', '-' and '.'; got ${JSON.stringify(name)}`);
  if (engine.tables.has(name)) throw resourceInUse(`Table already exists: ${name}`);
  const defs = new Map((input.AttributeDefinitions ?? []).map((d) => [d.AttributeName!, d.AttributeType as KeyType]));
  const used = new Set<string>();
  const keyDefs = (schema: readonly { AttributeName?: string; KeyType?: string }[] | undefined, what: string) => {
    const hash = schema?.find((k) => k.KeyType === 'HASH');
    const range = schema?.find((k) => k.KeyType === 'RANGE');
    if (!schema || !hash || schema.length > 2 || schema[0] !== hash || (schema.length === 2 && !range))
      throw validationError(`One or more parameter values were invalid: Invalid KeySchema of ${what}: a HASH key first, then at most one RANGE key`);
    const def = (k: { AttributeName?: string }): KeyDef => {
      const type = defs.get(k.AttributeName!);
      if (type !== 'S' && type !== 'N' && type !== 'B')
        throw validationError(`One or more parameter values were invalid: Some index key attributes are not defined in AttributeDefinitions. Keys: [${k.AttributeName}]`);
      used.add(k.AttributeName!);
      return { name: k.AttributeName!, type };
    };
    return { hash: def(hash), range: range ? def(range) : undefined };
  };
  const { hash, range } = keyDefs(input.KeySchema, 'the table');
  const region = engine.o.region;
  const arn = `arn:aws:dynamodb:${region}:000000000000:table/${name}`;
  const indexes: IndexDef[] = (input.GlobalSecondaryIndexes ?? []).map((g) => {
    const k = keyDefs(g.KeySchema, `index ${g.IndexName}`);
    const projection = (g.Projection?.ProjectionType ?? 'ALL') as IndexDef['projection'];
    return { name: g.IndexName!, arn: `${arn}/index/${g.IndexName}`, hash: k.hash, range: k.range, projection, include: g.Projection?.NonKeyAttributes ?? [] };
  });
  const unused = [...defs.keys()].filter((d) => !used.has(d));
  if (unused.length)
    throw validationError(
      `One or more parameter values were invalid: Some AttributeDefinitions are not used. AttributeDefinitions: [${[...defs.keys()].join(', ')}], keys used: [${[...used].join(', ')}]`,
    );
  const now = engine.o.now();
  let stream: ModelStream | undefined;
  if (input.StreamSpecification?.StreamEnabled) {
    const label = new Date(now).toISOString().slice(0, -1);
    const viewType = (input.StreamSpecification.StreamViewType ?? 'NEW_AND_OLD_IMAGES') as StreamViewType;
    const keyNames = range ? [hash.name, range.name] : [hash.name];
    stream = new ModelStream(`${arn}/stream/${label}`, label, name, viewType, now, keyNames, region, engine.o.streamShards, engine.o.streamRetentionMs);
    engine.streams.set(stream.arn, stream);
  }
  const keySchema = input.KeySchema!.map((k) => ({ AttributeName: k.AttributeName, KeyType: k.KeyType }));
  const attributeDefinitions = (input.AttributeDefinitions ?? []).map((d) => ({ AttributeName: d.AttributeName, AttributeType: d.AttributeType }));
  const t = new Table(name, arn, hash, range, attributeDefinitions, keySchema, indexes, now, stream);
  engine.tables.set(name, t);
  return { TableDescription: describe(t, 'ACTIVE'), $metadata: {} };
}

/** A table as DescribeTable (and CreateTable, DeleteTable) describe it. */
function describe(t: Table, status: 'ACTIVE' | 'DELETING'): TableDescription {
  const keySchema = (d: IndexDef | Table) => [
    { AttributeName: d.hash.name, KeyType: 'HASH' as const },
    ...(d.range ? [{ AttributeName: d.range.name, KeyType: 'RANGE' as const }] : []),
  ];
  return {
    TableName: t.name,
    TableArn: t.arn,
    TableStatus: status,
    CreationDateTime: new Date(t.createdAt),
    KeySchema: keySchema(t),
    AttributeDefinitions: t.attributeDefinitions.map((d) => ({ ...d })),
    ItemCount: t.itemCount,
    TableSizeBytes: 0,
    BillingModeSummary: { BillingMode: 'PAY_PER_REQUEST' },
    ProvisionedThroughput: { ReadCapacityUnits: 0, WriteCapacityUnits: 0, NumberOfDecreasesToday: 0 },
    ...(t.indexes.length
      ? {
          GlobalSecondaryIndexes: t.indexes.map((i) => ({
            IndexName: i.name,
            IndexArn: i.arn,
            KeySchema: keySchema(i),
            Projection: { ProjectionType: i.projection, ...(i.include.length ? { NonKeyAttributes: [...i.include] } : {}) },
            IndexStatus: 'ACTIVE' as const,
            ItemCount: 0,
            IndexSizeBytes: 0,
          })),
        }
      : {}),
    ...(t.stream ? { StreamSpecification: { StreamEnabled: true, StreamViewType: t.stream.viewType }, LatestStreamArn: t.stream.arn, LatestStreamLabel: t.stream.label } : {}),
    DeletionProtectionEnabled: false,
  };
}

export function describeTable(engine: Engine, input: DescribeTableCommandInput): DescribeTableCommandOutput {
  return { Table: describe(engine.table(input.TableName), 'ACTIVE'), $metadata: {} };
}

export function deleteTable(engine: Engine, input: DeleteTableCommandInput): DeleteTableCommandOutput {
  const t = engine.table(input.TableName);
  engine.tables.delete(t.name);
  if (t.stream) t.stream.enabled = false;
  return { TableDescription: describe(t, 'DELETING'), $metadata: {} };
}

export function listTables(engine: Engine, input: ListTablesCommandInput): ListTablesCommandOutput {
  const limit = input.Limit ?? 100;
  if (!Number.isInteger(limit) || limit < 1 || limit > 100) throw validationError("1 validation error detected: Value at 'limit' failed to satisfy constraint: Member must have value between 1 and 100");
  const start = input.ExclusiveStartTableName;
  const names = [...engine.tables.keys()].sort().filter((n) => start === undefined || n > start);
  const page = names.slice(0, limit);
  return { TableNames: page, ...(names.length > limit ? { LastEvaluatedTableName: page.at(-1) } : {}), $metadata: {} };
}

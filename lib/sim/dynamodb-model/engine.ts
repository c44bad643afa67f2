/**
 * The operations, applied synchronously to in-memory tables: each takes a command's input and
 * returns its output or throws the error DynamoDB would. No serialization and no SDK middleware:
 * inputs are validated and copied into the model's representation (values.ts), outputs copied
 * out. The client stand-in (client.ts) decides when an operation runs; here it runs at once.
 */
import type {
  AttributeValue,
  BatchGetItemCommandInput,
  BatchGetItemCommandOutput,
  BatchWriteItemCommandInput,
  BatchWriteItemCommandOutput,
  CancellationReason,
  CreateTableCommandInput,
  CreateTableCommandOutput,
  DeleteItemCommandInput,
  DeleteItemCommandOutput,
  DeleteTableCommandInput,
  DeleteTableCommandOutput,
  DescribeTableCommandInput,
  DescribeTableCommandOutput,
  DescribeTimeToLiveCommandInput,
  DescribeTimeToLiveCommandOutput,
  GetItemCommandInput,
  GetItemCommandOutput,
  ListTablesCommandInput,
  ListTablesCommandOutput,
  PutItemCommandInput,
  PutItemCommandOutput,
  QueryCommandInput,
  QueryCommandOutput,
  ScanCommandInput,
  ScanCommandOutput,
  TableDescription,
  TransactWriteItem,
  TransactWriteItemsCommandInput,
  TransactWriteItemsCommandOutput,
  UpdateItemCommandInput,
  UpdateItemCommandOutput,
  UpdateTimeToLiveCommandInput,
  UpdateTimeToLiveCommandOutput,
} from '@aws-sdk/client-dynamodb';
import {
  UnsupportedByModelError,
  conditionalCheckFailed,
  idempotentParameterMismatch,
  resourceInUse,
  tableNotFound,
  transactionCanceled,
  validationError,
} from './errors.js';
import { checkOverlaps, checkPlaceholders, copyMap, evalCondition, prepareUpdate, project, resolvePath, runUpdate, type Bindings, type PreparedUpdate, type Resolved } from './evaluate.js';
import { parseCondition, parseProjection, parseUpdate, type Condition, type Parsed, type Path } from './expressions.js';
import { ModelStream, type StreamViewType } from './streams.js';
import { Table, compareKeys, encodeKey, type Entry, type IndexDef, type KeyDef, type KeyType } from './table.js';
import { equalItems, exportItem, importMap, itemSize, newMap, tooLarge, type AV, type Item } from './values.js';

/** What the engine needs from the model's options. */
export interface EngineOptions {
  now: () => number;
  random: () => number;
  staleReadMaxLagMs: number;
  streamShards: number;
  streamRetentionMs: number;
  region: string;
  checkItemSize: boolean;
}

const EMPTY: Item = newMap();
/** DynamoDB stops a Query or Scan page at 1 MB of items read. */
const PAGE_BYTES = 1024 * 1024;
/** A transaction's client token is remembered this long. */
const TOKEN_TTL_MS = 10 * 60_000;
/** TTL leaves items expired more than five years ago alone. */
const TTL_MAX_AGE_MS = 5 * 365 * 86_400_000;

type ReturnValue = 'NONE' | 'ALL_OLD' | 'UPDATED_OLD' | 'ALL_NEW' | 'UPDATED_NEW';

/** Legacy (pre-expression) parameters, per operation: the model refuses them. */
const LEGACY_GET = ['AttributesToGet'] as const;
const LEGACY_WRITE = ['Expected', 'ConditionalOperator'] as const;
const LEGACY_UPDATE = ['AttributeUpdates', 'Expected', 'ConditionalOperator'] as const;
const LEGACY_QUERY = ['KeyConditions', 'QueryFilter', 'AttributesToGet', 'ConditionalOperator'] as const;
const LEGACY_SCAN = ['ScanFilter', 'AttributesToGet', 'ConditionalOperator'] as const;
const LEGACY_CREATE = ['LocalSecondaryIndexes'] as const; // not legacy: not modeled
const RV_OLD: readonly ReturnValue[] = ['NONE', 'ALL_OLD'];
const RV_ALL: readonly ReturnValue[] = ['NONE', 'ALL_OLD', 'UPDATED_OLD', 'ALL_NEW', 'UPDATED_NEW'];

function returnValues(rv: string | undefined, allowed: readonly ReturnValue[]): ReturnValue {
  const v = (rv ?? 'NONE') as ReturnValue;
  if (!allowed.includes(v)) throw validationError('Return values set to invalid value');
  return v;
}

function bindings(names: Record<string, string> | undefined, values: Record<string, AttributeValue> | undefined): Bindings {
  return { names, values: values ? importMap(values as Record<string, unknown>) : EMPTY };
}

const unsupported = (input: object, params: readonly string[], op: string) => {
  for (const p of params) if ((input as Record<string, unknown>)[p] !== undefined) throw new UnsupportedByModelError(`${op}'s legacy parameter ${p} (use expressions)`);
};

/** A write worked out and checked, not yet applied. */
interface Planned {
  table: Table;
  entry: Entry | undefined;
  pk: string;
  sk: string;
  key: Item;
  old: Item | undefined;
  next: Item | undefined;
}

/** The attributes an update named, as they are in `item` (UPDATED_OLD, UPDATED_NEW); undefined when none is there. */
function pick(item: Item | undefined, prepared: PreparedUpdate | undefined): Item | undefined {
  if (!item || !prepared) return undefined;
  const out = newMap();
  let any = false;
  for (const k of prepared.touched) {
    if (item[k] === undefined) continue;
    out[k] = item[k]!;
    any = true;
  }
  return any ? out : undefined;
}

/** The key attributes of an item, copied out (LastEvaluatedKey). */
function keyAttributes(item: Item, names: readonly string[]): Record<string, AttributeValue> {
  const k = newMap();
  for (const n of names) if (item[n] !== undefined) k[n] = item[n]!;
  return exportItem(k);
}

const hasKeyType = (v: AV, type: KeyType) => (type === 'S' ? v.S !== undefined : type === 'N' ? v.N !== undefined : v.B !== undefined);

/** A projection's paths, resolved; overlapping ones are refused. */
function projectionPaths(proj: Parsed<Path[]> | undefined, b: Bindings): Resolved[] | undefined {
  if (!proj) return undefined;
  const paths = proj.ast.map((p) => resolvePath(p, b));
  checkOverlaps(paths, 'ProjectionExpression');
  return paths;
}

function fingerprint(items: unknown): string {
  return JSON.stringify(items, (_k, v: unknown) => (v instanceof Uint8Array ? Buffer.from(v).toString('base64') : v));
}

/** The tables, their streams, and every operation on them. */
export class Engine {
  readonly tables = new Map<string, Table>();
  /** By ARN; a deleted table's stream stays readable until its records age out. */
  readonly streams = new Map<string, ModelStream>();
  private seq = 0;
  private readonly tokens = new Map<string, { at: number; fingerprint: string }>();

  constructor(readonly o: EngineOptions) {}

  private tokenSeq = 0;

  /** A transaction token no other client of this model has: what the SDK generates per request. */
  newClientToken(): string {
    return `model-token-${++this.tokenSeq}`;
  }

  /** The sequence number of the newest stream record of any table (0 before the first). */
  get lastSequence(): number {
    return this.seq;
  }

  table(name: string | undefined): Table {
    const t = name === undefined ? undefined : this.tables.get(name);
    if (!t) throw tableNotFound(String(name));
    return t;
  }

  /** When an eventually consistent read reads (undefined: the newest version). */
  private readAt(consistent: boolean | undefined): number | undefined {
    if (consistent || this.o.staleReadMaxLagMs <= 0) return undefined;
    return this.o.now() - this.o.random() * this.o.staleReadMaxLagMs;
  }

  private checkSize(item: Item): void {
    if (this.o.checkItemSize && tooLarge(item)) throw validationError('Item size has exceeded the maximum allowed size');
  }

  /** Applies a planned write: nothing at all when it changes nothing (no stream record either). */
  private commit(p: Planned, byTtl = false): void {
    const { old, next } = p;
    if (old === undefined && next === undefined) return;
    if (old !== undefined && next !== undefined && equalItems(old, next)) return;
    const now = this.o.now();
    p.table.write(p.pk, p.sk, p.key, next, now, this.o.staleReadMaxLagMs);
    const stream = p.table.stream;
    if (stream) {
      stream.append(p.pk, {
        seq: ++this.seq,
        eventName: old === undefined ? 'INSERT' : next === undefined ? 'REMOVE' : 'MODIFY',
        keys: p.key,
        newImage: next,
        oldImage: old,
        at: now,
        byTtl,
      });
    }
  }

  /** Throws ConditionalCheckFailedException (with the item, when asked for) unless `cond` holds for `old`. */
  private check(cond: Parsed<Condition> | undefined, old: Item | undefined, b: Bindings, rvOnFail: string | undefined): void {
    if (cond && !evalCondition(cond.ast, old ?? EMPTY, b)) throw conditionalCheckFailed(rvOnFail === 'ALL_OLD' && old ? exportItem(old) : undefined);
  }

  /** The table, key, placeholders and current item a single-item write names. */
  private target(input: { TableName?: string; Key?: Record<string, AttributeValue>; ExpressionAttributeNames?: Record<string, string>; ExpressionAttributeValues?: Record<string, AttributeValue> }) {
    const t = this.table(input.TableName);
    const { key, pk, sk } = t.keyOf(input.Key);
    const b = bindings(input.ExpressionAttributeNames, input.ExpressionAttributeValues);
    const entry = t.entry(pk, sk);
    return { t, key, pk, sk, b, entry, old: entry?.item };
  }

  // ---- items ----

  getItem(input: GetItemCommandInput): GetItemCommandOutput {
    unsupported(input, LEGACY_GET, 'GetItem');
    const proj = input.ProjectionExpression !== undefined ? parseProjection(input.ProjectionExpression) : undefined;
    checkPlaceholders(input.ExpressionAttributeNames, undefined, proj);
    const paths = proj ? projectionPaths(proj, bindings(input.ExpressionAttributeNames, undefined)) : undefined;
    const t = this.table(input.TableName);
    const { pk, sk } = t.keyOf(input.Key);
    const e = t.entry(pk, sk);
    const item = e && Table.visible(e, this.readAt(input.ConsistentRead));
    if (!item) return { $metadata: {} };
    return { Item: exportItem(paths ? project(item, paths) : item), $metadata: {} };
  }

  private planPut(t: Table, rawItem: Record<string, AttributeValue> | undefined): Planned {
    if (!rawItem) throw validationError('One or more parameter values were invalid: Item must be given');
    const item = importMap(rawItem as Record<string, unknown>);
    const { key, pk, sk } = t.keyOfItem(item);
    t.checkIndexKeys(item);
    this.checkSize(item);
    const entry = t.entry(pk, sk);
    return { table: t, entry, pk, sk, key, old: entry?.item, next: item };
  }

  putItem(input: PutItemCommandInput): PutItemCommandOutput {
    unsupported(input, LEGACY_WRITE, 'PutItem');
    const rv = returnValues(input.ReturnValues, RV_OLD);
    const cond = input.ConditionExpression !== undefined ? parseCondition(input.ConditionExpression) : undefined;
    checkPlaceholders(input.ExpressionAttributeNames, input.ExpressionAttributeValues, cond);
    const t = this.table(input.TableName);
    const b = bindings(input.ExpressionAttributeNames, input.ExpressionAttributeValues);
    const p = this.planPut(t, input.Item);
    this.check(cond, p.old, b, input.ReturnValuesOnConditionCheckFailure);
    this.commit(p);
    return rv === 'ALL_OLD' && p.old ? { Attributes: exportItem(p.old), $metadata: {} } : { $metadata: {} };
  }

  updateItem(input: UpdateItemCommandInput): UpdateItemCommandOutput {
    unsupported(input, LEGACY_UPDATE, 'UpdateItem');
    const rv = returnValues(input.ReturnValues, RV_ALL);
    const upd = input.UpdateExpression !== undefined ? parseUpdate(input.UpdateExpression) : undefined;
    const cond = input.ConditionExpression !== undefined ? parseCondition(input.ConditionExpression) : undefined;
    checkPlaceholders(input.ExpressionAttributeNames, input.ExpressionAttributeValues, upd, cond);
    const { t, key, pk, sk, b, entry, old } = this.target(input);
    const prepared = upd ? prepareUpdate(upd, b, t.keyNames) : undefined;
    this.check(cond, old, b, input.ReturnValuesOnConditionCheckFailure);
    const next = this.updated(t, prepared, old, key, b);
    this.commit({ table: t, entry, pk, sk, key, old, next });
    const attrs = rv === 'ALL_NEW' ? next : rv === 'ALL_OLD' ? old : rv === 'UPDATED_NEW' ? pick(next, prepared) : rv === 'UPDATED_OLD' ? pick(old, prepared) : undefined;
    return attrs ? { Attributes: exportItem(attrs), $metadata: {} } : { $metadata: {} };
  }

  private updated(t: Table, prepared: PreparedUpdate | undefined, old: Item | undefined, key: Item, b: Bindings): Item {
    const next = prepared ? runUpdate(prepared, old, key, b) : copyMap(old ?? key);
    t.checkIndexKeys(next);
    this.checkSize(next);
    return next;
  }

  deleteItem(input: DeleteItemCommandInput): DeleteItemCommandOutput {
    unsupported(input, LEGACY_WRITE, 'DeleteItem');
    const rv = returnValues(input.ReturnValues, RV_OLD);
    const cond = input.ConditionExpression !== undefined ? parseCondition(input.ConditionExpression) : undefined;
    checkPlaceholders(input.ExpressionAttributeNames, input.ExpressionAttributeValues, cond);
    const { t, key, pk, sk, b, entry, old } = this.target(input);
    this.check(cond, old, b, input.ReturnValuesOnConditionCheckFailure);
    this.commit({ table: t, entry, pk, sk, key, old, next: undefined });
    return rv === 'ALL_OLD' && old ? { Attributes: exportItem(old), $metadata: {} } : { $metadata: {} };
  }

  // ---- reads of many ----

  /** The key condition's partition value and the sort-key conjunct, checked against the key schema. */
  private keyCondition(c: Condition, hash: KeyDef, range: KeyDef | undefined, b: Bindings): { pk: AV; range: Condition | undefined } {
    const parts: Condition[] = [];
    const flatten = (x: Condition) => {
      if (x.kind === 'and') {
        flatten(x.a);
        flatten(x.b);
      } else if (x.kind === 'or' || x.kind === 'not') throw validationError(`Invalid operator used in KeyConditionExpression: ${x.kind.toUpperCase()}`);
      else parts.push(x);
    };
    flatten(c);
    if (parts.length > 2) throw validationError('Conditions can be of length 1 or 2 only');
    let pk: AV | undefined;
    let rangeCond: Condition | undefined;
    const attr = (p: Path | undefined) => (p && p.els.length === 1 ? (resolvePath(p, b)[0] as string) : undefined);
    const valueOf = (o: { kind: string; name?: string }): AV => {
      if (o.kind !== 'value') throw validationError('Query key condition not supported');
      return b.values[o.name!]!;
    };
    const checkType = (v: AV, def: KeyDef) => {
      const type = v.S !== undefined ? 'S' : v.N !== undefined ? 'N' : v.B !== undefined ? 'B' : undefined;
      if (type !== def.type) throw validationError('One or more parameter values were invalid: Condition parameter type does not match schema type');
    };
    for (const x of parts) {
      const path = x.kind === 'cmp' || x.kind === 'between' || x.kind === 'begins_with' ? (x.a.kind === 'path' ? x.a : undefined) : undefined;
      const name = attr(path);
      if (name !== undefined && name === hash.name && x.kind === 'cmp' && x.op === '=' && pk === undefined) {
        pk = valueOf(x.b);
        checkType(pk, hash);
      } else if (name !== undefined && range && name === range.name && rangeCond === undefined && (x.kind === 'between' || x.kind === 'begins_with' || (x.kind === 'cmp' && x.op !== '<>'))) {
        if (x.kind === 'between') {
          checkType(valueOf(x.lo), range);
          checkType(valueOf(x.hi), range);
        } else {
          const v = valueOf(x.b);
          checkType(v, range);
          if (x.kind === 'begins_with' && range.type === 'N')
            throw validationError('Invalid KeyConditionExpression: Incorrect operand type for operator or function; operator or function: begins_with, operand type: N');
        }
        rangeCond = x;
      } else throw validationError('Query key condition not supported');
    }
    if (pk === undefined) throw validationError(`Query condition missed key schema element: ${hash.name}`);
    return { pk, range: rangeCond };
  }

  private checkLimit(limit: number | undefined): number {
    if (limit === undefined) return Infinity;
    if (!Number.isInteger(limit) || limit < 1) throw validationError("1 validation error detected: Value at 'limit' failed to satisfy constraint: Member must have value greater than or equal to 1");
    return limit;
  }

  /** What a page of a Query or Scan read: the visible items in order, until Limit or 1 MB. */
  private page(
    candidates: Iterable<{ entry: Entry; item: Item }>,
    limit: number,
    filter: Parsed<Condition> | undefined,
    proj: Resolved[] | undefined,
    b: Bindings,
    select: string | undefined,
    lastKey: (e: Entry, item: Item) => Record<string, AttributeValue>,
  ) {
    const items: Record<string, AttributeValue>[] = [];
    let scanned = 0;
    let count = 0;
    let bytes = 0;
    let last: Record<string, AttributeValue> | undefined;
    for (const { entry, item } of candidates) {
      scanned++;
      bytes += itemSize(item);
      if (!filter || evalCondition(filter.ast, item, b, 'FilterExpression')) {
        count++;
        if (select !== 'COUNT') items.push(exportItem(proj ? project(item, proj) : item));
      }
      if (scanned >= limit || bytes >= PAGE_BYTES) {
        last = lastKey(entry, item);
        break;
      }
    }
    return { ...(select === 'COUNT' ? {} : { Items: items }), Count: count, ScannedCount: scanned, ...(last ? { LastEvaluatedKey: last } : {}), $metadata: {} };
  }

  query(input: QueryCommandInput): QueryCommandOutput {
    unsupported(input, LEGACY_QUERY, 'Query');
    if (input.KeyConditionExpression === undefined) throw validationError('Either the KeyConditions or KeyConditionExpression parameter must be specified in the request.');
    const kc = parseCondition(input.KeyConditionExpression, 'KeyConditionExpression');
    const filter = input.FilterExpression !== undefined ? parseCondition(input.FilterExpression, 'FilterExpression') : undefined;
    const proj = input.ProjectionExpression !== undefined ? parseProjection(input.ProjectionExpression) : undefined;
    checkPlaceholders(input.ExpressionAttributeNames, input.ExpressionAttributeValues, kc, filter, proj);
    const limit = this.checkLimit(input.Limit);
    const t = this.table(input.TableName);
    const index = input.IndexName !== undefined ? t.index(input.IndexName) : undefined;
    if (index && input.ConsistentRead) throw validationError('Consistent reads are not supported on global secondary indexes');
    const b = bindings(input.ExpressionAttributeNames, input.ExpressionAttributeValues);
    const hash = index ? index.hash : t.hash;
    const range = index ? index.range : t.range;
    const { pk, range: rangeCond } = this.keyCondition(kc.ast, hash, range, b);
    if (filter) {
      const keys = range ? [hash.name, range.name] : [hash.name];
      for (const p of this.conditionPaths(filter.ast)) {
        const name = resolvePath(p, b)[0] as string;
        if (keys.includes(name)) throw validationError(`Filter Expression can only contain non-primary key attributes: Primary key attribute: ${name}`);
      }
    }
    const projPaths = projectionPaths(proj, b);
    const forward = input.ScanIndexForward !== false;
    const readAt = index ? this.readAt(false) : this.readAt(input.ConsistentRead);
    const inRange = (item: Item) => !rangeCond || evalCondition(rangeCond, item, b, 'KeyConditionExpression');
    if (!index) {
      const start = input.ExclusiveStartKey ? t.keyOf(input.ExclusiveStartKey) : undefined;
      if (start && start.pk !== encodeKey(pk, t.hash.type)) throw validationError('The provided starting key is invalid: The provided key element does not match the schema');
      const p = t.partition(encodeKey(pk, t.hash.type));
      const entries = p ? t.sortedEntries(p) : [];
      const r = t.range;
      function* candidates() {
        for (let n = 0; n < entries.length; n++) {
          const e = entries[forward ? n : entries.length - 1 - n]!;
          if (start && r) {
            const c = compareKeys(e.sk, start.sk, r.type);
            if (forward ? c <= 0 : c >= 0) continue;
          } else if (start) continue;
          const item = Table.visible(e, readAt);
          if (item && inRange(item)) yield { entry: e, item };
        }
      }
      return this.page(candidates(), limit, filter, projPaths, b, input.Select, (e) => exportItem(e.key)) as QueryCommandOutput;
    }
    return this.indexQuery(t, index, pk, inRange, readAt, forward, limit, filter, projPaths, b, input);
  }

  private conditionPaths(c: Condition): Path[] {
    const out: Path[] = [];
    const operand = (o: unknown) => {
      const x = o as { kind: string; path?: Path };
      if (x.kind === 'path') out.push(x as Path);
      else if (x.kind === 'size' && x.path) out.push(x.path);
    };
    const walk = (x: Condition): void => {
      switch (x.kind) {
        case 'and':
        case 'or':
          walk(x.a);
          walk(x.b);
          return;
        case 'not':
          walk(x.a);
          return;
        case 'exists':
        case 'type':
          out.push(x.path);
          return;
        case 'cmp':
        case 'begins_with':
        case 'contains':
          operand(x.a);
          operand(x.b);
          return;
        case 'between':
          operand(x.a);
          operand(x.lo);
          operand(x.hi);
          return;
        case 'in':
          operand(x.a);
          x.list.forEach(operand);
          return;
      }
    };
    walk(c);
    return out;
  }

  /** A GSI query: always eventually consistent; items projected as the index projects them. */
  private indexQuery(
    t: Table,
    index: IndexDef,
    pk: AV,
    inRange: (item: Item) => boolean,
    readAt: number | undefined,
    forward: boolean,
    limit: number,
    filter: Parsed<Condition> | undefined,
    projPaths: Resolved[] | undefined,
    b: Bindings,
    input: QueryCommandInput,
  ): QueryCommandOutput {
    const want = encodeKey(pk, index.hash.type);
    const order = t.scanOrder();
    const matches: { entry: Entry; item: Item; pos: number; rk: string | undefined }[] = [];
    for (let pos = 0; pos < order.length; pos++) {
      const e = order[pos]!;
      const item = Table.visible(e, readAt);
      const v = item?.[index.hash.name];
      if (!item || !v || !hasKeyType(v, index.hash.type) || encodeKey(v, index.hash.type) !== want) continue; // indexes are sparse
      const rv = index.range ? item[index.range.name] : undefined;
      if (index.range && (!rv || !hasKeyType(rv, index.range.type))) continue;
      if (!inRange(item)) continue;
      matches.push({ entry: e, item, pos, rk: rv && index.range ? encodeKey(rv, index.range.type) : undefined });
    }
    const ir = index.range;
    const cmp = (a: { pos: number; rk: string | undefined }, c: { pos: number; rk: string | undefined }) =>
      (ir ? compareKeys(a.rk!, c.rk!, ir.type) : 0) || a.pos - c.pos;
    matches.sort(cmp);
    if (!forward) matches.reverse();
    let from = 0;
    if (input.ExclusiveStartKey) {
      const { pk: spk, sk: ssk } = t.keyOf(Object.fromEntries(t.keyNames.map((k) => [k, input.ExclusiveStartKey![k]])));
      const sv = input.ExclusiveStartKey[index.hash.name];
      const srv = ir ? input.ExclusiveStartKey[ir.name] : undefined;
      if (!sv || (ir && !srv)) throw validationError('The provided starting key is invalid: The provided key element does not match the schema');
      const after = t.scanIndexAfter(spk, ssk);
      const probe = { pos: after - 0.5, rk: srv && ir ? encodeKey(importMap({ v: srv }).v!, ir.type) : undefined };
      while (from < matches.length && (forward ? cmp(matches[from]!, probe) < 0 : cmp(matches[from]!, probe) > 0)) from++;
    }
    const projected = (item: Item): Item => {
      if (index.projection === 'ALL') return item;
      const out = newMap();
      for (const k of [...t.keyNames, index.hash.name, ...(ir ? [ir.name] : []), ...index.include]) if (item[k] !== undefined) out[k] = item[k]!;
      return out;
    };
    const keyNames = [...new Set([...t.keyNames, index.hash.name, ...(ir ? [ir.name] : [])])];
    const candidates = matches.slice(from).map((m) => ({ entry: m.entry, item: projected(m.item) }));
    return this.page(candidates, limit, filter, projPaths, b, input.Select, (_e, item) => keyAttributes(item, keyNames)) as QueryCommandOutput;
  }

  scan(input: ScanCommandInput): ScanCommandOutput {
    unsupported(input, LEGACY_SCAN, 'Scan');
    if (input.IndexName !== undefined) throw new UnsupportedByModelError('Scan of an index');
    const filter = input.FilterExpression !== undefined ? parseCondition(input.FilterExpression, 'FilterExpression') : undefined;
    const proj = input.ProjectionExpression !== undefined ? parseProjection(input.ProjectionExpression) : undefined;
    checkPlaceholders(input.ExpressionAttributeNames, input.ExpressionAttributeValues, filter, proj);
    const limit = this.checkLimit(input.Limit);
    const segments = input.TotalSegments;
    const segment = input.Segment;
    if ((segments === undefined) !== (segment === undefined) || (segments !== undefined && (segments < 1 || segments > 1_000_000 || segment! < 0 || segment! >= segments)))
      throw validationError('The Segment parameter is required but was not present in the request when parameter TotalSegments is present, or it is out of range');
    const t = this.table(input.TableName);
    const b = bindings(input.ExpressionAttributeNames, input.ExpressionAttributeValues);
    const readAt = this.readAt(input.ConsistentRead);
    const order = t.scanOrder();
    const start = input.ExclusiveStartKey ? t.keyOf(input.ExclusiveStartKey) : undefined;
    const from = start ? t.scanIndexAfter(start.pk, start.sk) : 0;
    function* candidates() {
      for (let i = from; i < order.length; i++) {
        const e = order[i]!;
        if (segments !== undefined && Math.floor((e.partition.hash / 2 ** 32) * segments) !== segment) continue;
        const item = Table.visible(e, readAt);
        if (item) yield { entry: e, item };
      }
    }
    return this.page(candidates(), limit, filter, projectionPaths(proj, b), b, input.Select, (e) => exportItem(e.key)) as ScanCommandOutput;
  }

  batchGetItem(input: BatchGetItemCommandInput): BatchGetItemCommandOutput {
    const requests = Object.entries(input.RequestItems ?? {});
    if (requests.length === 0) throw validationError("1 validation error detected: Value null at 'requestItems' failed to satisfy constraint: Member must not be null");
    const total = requests.reduce((n, [, r]) => n + (r.Keys?.length ?? 0), 0);
    if (total > 100) throw validationError('Too many items requested for the BatchGetItem call');
    const plans = requests.map(([name, r]) => {
      unsupported(r, LEGACY_GET, 'BatchGetItem');
      const proj = r.ProjectionExpression !== undefined ? parseProjection(r.ProjectionExpression) : undefined;
      checkPlaceholders(r.ExpressionAttributeNames, undefined, proj);
      if (!r.Keys?.length) throw validationError("1 validation error detected: Value '[]' at 'requestItems.keys' failed to satisfy constraint: Member must have length greater than or equal to 1");
      const t = this.table(name);
      const seen = new Set<string>();
      const keys = r.Keys.map((k) => {
        const key = t.keyOf(k);
        const id = `${key.pk}\u0000${key.sk}`;
        if (seen.has(id)) throw validationError('Provided list of item keys contains duplicates');
        seen.add(id);
        return key;
      });
      return { name, t, r, keys, proj: projectionPaths(proj, bindings(r.ExpressionAttributeNames, undefined)) };
    });
    const Responses: Record<string, Record<string, AttributeValue>[]> = {};
    for (const { name, t, r, keys, proj } of plans) {
      const readAt = this.readAt(r.ConsistentRead);
      const out: Record<string, AttributeValue>[] = [];
      for (const k of keys) {
        const e = t.entry(k.pk, k.sk);
        const item = e && Table.visible(e, readAt);
        if (item) out.push(exportItem(proj ? project(item, proj) : item));
      }
      Responses[name] = out;
    }
    return { Responses, UnprocessedKeys: {}, $metadata: {} };
  }

  batchWriteItem(input: BatchWriteItemCommandInput): BatchWriteItemCommandOutput {
    const requests = Object.entries(input.RequestItems ?? {});
    const total = requests.reduce((n, [, r]) => n + r.length, 0);
    if (total === 0) throw validationError("1 validation error detected: Value null at 'requestItems' failed to satisfy constraint: Member must not be null");
    if (total > 25) throw validationError('Too many items requested for the BatchWriteItem call');
    const plans: Planned[] = [];
    for (const [name, writes] of requests) {
      const t = this.table(name);
      const seen = new Set<string>();
      for (const w of writes) {
        if ((w.PutRequest === undefined) === (w.DeleteRequest === undefined)) throw validationError('Supplied AttributeValue has more than one datatypes set, must contain exactly one of the supported datatypes');
        const p: Planned = w.PutRequest
          ? this.planPut(t, w.PutRequest.Item)
          : (() => {
              const { key, pk, sk } = t.keyOf(w.DeleteRequest!.Key);
              const entry = t.entry(pk, sk);
              return { table: t, entry, pk, sk, key, old: entry?.item, next: undefined };
            })();
        const id = `${p.pk}\u0000${p.sk}`;
        if (seen.has(id)) throw validationError('Provided list of item keys contains duplicates');
        seen.add(id);
        plans.push(p);
      }
    }
    for (const p of plans) {
      p.entry = p.table.entry(p.pk, p.sk);
      p.old = p.entry?.item;
      this.commit(p);
    }
    return { UnprocessedItems: {}, $metadata: {} };
  }

  // ---- transactions ----

  transactWriteItems(input: TransactWriteItemsCommandInput): TransactWriteItemsCommandOutput {
    const items = input.TransactItems ?? [];
    if (items.length === 0) throw validationError("1 validation error detected: Value '[]' at 'transactItems' failed to satisfy constraint: Member must have length greater than or equal to 1");
    if (items.length > 100) throw validationError(`1 validation error detected: Value at 'transactItems' failed to satisfy constraint: Member must have length less than or equal to 100`);
    const now = this.o.now();
    const token = input.ClientRequestToken;
    let print: string | undefined;
    if (token !== undefined) {
      this.pruneTokens(now);
      print = fingerprint(items);
      const seen = this.tokens.get(token);
      if (seen) {
        if (seen.fingerprint !== print) throw idempotentParameterMismatch();
        return { $metadata: {} }; // already applied: DynamoDB answers again and changes nothing
      }
    }
    const ids = new Set<string>();
    const plans = items.map((ti) => {
      const plan = this.planTransactItem(ti);
      const id = `${plan.table.name}\u0000${plan.pk}\u0000${plan.sk}`;
      if (ids.has(id)) throw validationError('Transaction request cannot include multiple operations on one item');
      ids.add(id);
      return plan;
    });
    let failed = false;
    const reasons: CancellationReason[] = plans.map((p) => {
      try {
        const old = p.entry?.item;
        if (p.cond && !evalCondition(p.cond.ast, old ?? EMPTY, p.b)) {
          failed = true;
          return { Code: 'ConditionalCheckFailed', Message: 'The conditional request failed', ...(p.rvOnFail === 'ALL_OLD' && old ? { Item: exportItem(old) } : {}) };
        }
        p.old = old;
        p.next = p.kind === 'Put' ? p.next : p.kind === 'Delete' ? undefined : p.kind === 'Update' ? this.updated(p.table, p.update, old, p.key, p.b) : old;
        return { Code: 'None' };
      } catch (e) {
        if (!(e instanceof Error && e.name === 'ValidationException')) throw e;
        failed = true;
        return { Code: 'ValidationError', Message: e.message };
      }
    });
    if (failed) throw transactionCanceled(reasons);
    for (const p of plans) if (p.kind !== 'ConditionCheck') this.commit(p);
    if (token !== undefined) this.tokens.set(token, { at: now, fingerprint: print! });
    return { $metadata: {} };
  }

  private pruneTokens(now: number): void {
    for (const [t, v] of this.tokens) {
      if (now - v.at < TOKEN_TTL_MS) break; // insertion order is time order
      this.tokens.delete(t);
    }
  }

  private planTransactItem(ti: TransactWriteItem) {
    const kinds = (['ConditionCheck', 'Put', 'Update', 'Delete'] as const).filter((k) => ti[k] !== undefined);
    if (kinds.length !== 1) throw validationError('TransactItems can only contain one of ConditionCheck, Put, Update or Delete');
    const kind = kinds[0]!;
    const x = ti[kind]! as {
      TableName?: string;
      Key?: Record<string, AttributeValue>;
      Item?: Record<string, AttributeValue>;
      UpdateExpression?: string;
      ConditionExpression?: string;
      ExpressionAttributeNames?: Record<string, string>;
      ExpressionAttributeValues?: Record<string, AttributeValue>;
      ReturnValuesOnConditionCheckFailure?: string;
    };
    if (kind === 'ConditionCheck' && x.ConditionExpression === undefined) throw validationError('The ConditionExpression of a ConditionCheck must be given');
    if (kind === 'Update' && x.UpdateExpression === undefined) throw validationError('The UpdateExpression of an Update must be given');
    const upd = kind === 'Update' ? parseUpdate(x.UpdateExpression!) : undefined;
    const cond = x.ConditionExpression !== undefined ? parseCondition(x.ConditionExpression) : undefined;
    checkPlaceholders(x.ExpressionAttributeNames, x.ExpressionAttributeValues, upd, cond);
    const t = this.table(x.TableName);
    const b = bindings(x.ExpressionAttributeNames, x.ExpressionAttributeValues);
    const base: Planned =
      kind === 'Put'
        ? this.planPut(t, x.Item)
        : (() => {
            const { key, pk, sk } = t.keyOf(x.Key);
            const entry = t.entry(pk, sk);
            return { table: t, entry, pk, sk, key, old: entry?.item, next: undefined };
          })();
    return { ...base, kind, cond, b, update: upd ? prepareUpdate(upd, b, t.keyNames) : undefined, rvOnFail: x.ReturnValuesOnConditionCheckFailure };
  }

  // ---- tables ----

  createTable(input: CreateTableCommandInput): CreateTableCommandOutput {
    unsupported(input, LEGACY_CREATE, 'CreateTable');
    const name = input.TableName;
    if (!name || !/^[a-zA-Z0-9_.-]{3,255}$/.test(name)) throw validationError(`TableName must be 3-255 characters of a-z, A-Z, 0-9, '_', '-' and '.'; got ${JSON.stringify(name)}`);
    if (this.tables.has(name)) throw resourceInUse(`Table already exists: ${name}`);
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
    const region = this.o.region;
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
    const now = this.o.now();
    let stream: ModelStream | undefined;
    if (input.StreamSpecification?.StreamEnabled) {
      const label = new Date(now).toISOString().slice(0, -1);
      const viewType = (input.StreamSpecification.StreamViewType ?? 'NEW_AND_OLD_IMAGES') as StreamViewType;
      const keyNames = range ? [hash.name, range.name] : [hash.name];
      stream = new ModelStream(`${arn}/stream/${label}`, label, name, viewType, now, keyNames, region, this.o.streamShards, this.o.streamRetentionMs);
      this.streams.set(stream.arn, stream);
    }
    const keySchema = input.KeySchema!.map((k) => ({ AttributeName: k.AttributeName, KeyType: k.KeyType }));
    const attributeDefinitions = (input.AttributeDefinitions ?? []).map((d) => ({ AttributeName: d.AttributeName, AttributeType: d.AttributeType }));
    const t = new Table(name, arn, hash, range, attributeDefinitions, keySchema, indexes, now, stream);
    this.tables.set(name, t);
    return { TableDescription: this.describe(t, 'ACTIVE'), $metadata: {} };
  }

  private describe(t: Table, status: 'ACTIVE' | 'DELETING'): TableDescription {
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

  describeTable(input: DescribeTableCommandInput): DescribeTableCommandOutput {
    return { Table: this.describe(this.table(input.TableName), 'ACTIVE'), $metadata: {} };
  }

  deleteTable(input: DeleteTableCommandInput): DeleteTableCommandOutput {
    const t = this.table(input.TableName);
    this.tables.delete(t.name);
    if (t.stream) t.stream.enabled = false;
    return { TableDescription: this.describe(t, 'DELETING'), $metadata: {} };
  }

  listTables(input: ListTablesCommandInput): ListTablesCommandOutput {
    const limit = input.Limit ?? 100;
    if (!Number.isInteger(limit) || limit < 1 || limit > 100) throw validationError("1 validation error detected: Value at 'limit' failed to satisfy constraint: Member must have value between 1 and 100");
    const start = input.ExclusiveStartTableName;
    const names = [...this.tables.keys()].sort().filter((n) => start === undefined || n > start);
    const page = names.slice(0, limit);
    return { TableNames: page, ...(names.length > limit ? { LastEvaluatedTableName: page.at(-1) } : {}), $metadata: {} };
  }

  updateTimeToLive(input: UpdateTimeToLiveCommandInput): UpdateTimeToLiveCommandOutput {
    const t = this.table(input.TableName);
    const spec = input.TimeToLiveSpecification;
    if (!spec?.AttributeName || spec.Enabled === undefined) throw validationError('TimeToLiveSpecification needs AttributeName and Enabled');
    if (spec.Enabled && t.ttlAttribute !== undefined) throw validationError('TimeToLive is already enabled');
    if (!spec.Enabled && t.ttlAttribute === undefined) throw validationError('TimeToLive is already disabled');
    t.ttlAttribute = spec.Enabled ? spec.AttributeName : undefined;
    return { TimeToLiveSpecification: { Enabled: spec.Enabled, AttributeName: spec.AttributeName }, $metadata: {} };
  }

  describeTimeToLive(input: DescribeTimeToLiveCommandInput): DescribeTimeToLiveCommandOutput {
    const t = this.table(input.TableName);
    return {
      TimeToLiveDescription: t.ttlAttribute !== undefined ? { TimeToLiveStatus: 'ENABLED', AttributeName: t.ttlAttribute } : { TimeToLiveStatus: 'DISABLED' },
      $metadata: {},
    };
  }

  // ---- TTL ----

  /**
   * Deletes every item whose TTL attribute (a number, epoch seconds) is in the past — but not more
   * than five years in the past, which DynamoDB leaves alone — each with a REMOVE record carrying
   * DynamoDB's service identity. Returns the keys deleted.
   */
  sweepTtl(tables?: readonly string[]): { table: string; key: Record<string, AttributeValue> }[] {
    const now = this.o.now();
    const out: { table: string; key: Record<string, AttributeValue> }[] = [];
    for (const t of this.tables.values()) {
      const attr = t.ttlAttribute;
      if (attr === undefined || (tables && !tables.includes(t.name))) continue;
      for (const e of [...t.allEntries()]) {
        const n = e.item?.[attr]?.N;
        if (n === undefined) continue;
        const at = Number(n) * 1000;
        if (!(at < now) || at < now - TTL_MAX_AGE_MS) continue;
        this.commit({ table: t, entry: e, pk: e.partition.pk, sk: e.sk, key: e.key, old: e.item, next: undefined }, true);
        out.push({ table: t.name, key: exportItem(e.key) });
      }
    }
    return out;
  }
}

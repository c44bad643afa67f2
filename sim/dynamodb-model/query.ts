/** Query: of a table (by partition, in sort-key order) or of a global secondary index (always eventually consistent). */
import type { AttributeValue, QueryCommandInput, QueryCommandOutput } from '@aws-sdk/client-dynamodb';
import { evalCondition } from './conditions.js';
import { bindings, type Engine } from './engine.js';
import { validationError } from './errors.js';
import { parseCondition, parseProjection, type Condition, type Parsed, type Path } from './expressions.js';
import { resolvePath, type Bindings, type Resolved } from './paths.js';
import { checkPlaceholders } from './placeholders.js';
import { LEGACY_QUERY, checkLimit, projectionPaths, unsupported } from './requests.js';
import { page } from './scan.js';
import { Table, compareKeys, encodeKey, type Entry, type IndexDef, type KeyDef, type KeyType } from './table.js';
import { exportItem, importMap, newMap, type AV, type Item } from './values.js';

/** The key attributes of an item, copied out (LastEvaluatedKey). */
function keyAttributes(item: Item, names: readonly string[]): Record<string, AttributeValue> {
  const k = newMap();
  for (const n of names) if (item[n] !== undefined) k[n] = item[n]!;
  return exportItem(k);
}

const hasKeyType = (v: AV, type: KeyType) => (type === 'S' ? v.S !== undefined : type === 'N' ? v.N !== undefined : v.B !== undefined);

/** The conjuncts of a key condition, into `parts` (OR and NOT are refused). */
function flattenAnd(x: Condition, parts: Condition[]): void {
  if (x.kind === 'and') {
    flattenAnd(x.a, parts);
    flattenAnd(x.b, parts);
  } else if (x.kind === 'or' || x.kind === 'not') throw validationError(`Invalid operator used in KeyConditionExpression: ${x.kind.toUpperCase()}`);
  else parts.push(x);
}

/** A key condition's operand: a value placeholder's value. */
function keyValue(o: { kind: string; name?: string }, b: Bindings): AV {
  if (o.kind !== 'value') throw validationError('Query key condition not supported');
  return b.values[o.name!]!;
}

function checkKeyType(v: AV, def: KeyDef): void {
  const type = v.S !== undefined ? 'S' : v.N !== undefined ? 'N' : v.B !== undefined ? 'B' : undefined;
  if (type !== def.type) throw validationError('One or more parameter values were invalid: Condition parameter type does not match schema type');
}

/** The key condition's partition value and the sort-key conjunct, checked against the key schema. */
function keyCondition(c: Condition, hash: KeyDef, range: KeyDef | undefined, b: Bindings): { pk: AV; range: Condition | undefined } {
  // (helpers at module level, not closures: every Query runs this)
  const parts: Condition[] = [];
  flattenAnd(c, parts);
  if (parts.length > 2) throw validationError('Conditions can be of length 1 or 2 only');
  let pk: AV | undefined;
  let rangeCond: Condition | undefined;
  for (const x of parts) {
    const path = x.kind === 'cmp' || x.kind === 'between' || x.kind === 'begins_with' ? (x.a.kind === 'path' ? x.a : undefined) : undefined;
    const name = path && path.els.length === 1 ? (resolvePath(path, b)[0] as string) : undefined;
    if (name !== undefined && name === hash.name && x.kind === 'cmp' && x.op === '=' && pk === undefined) {
      pk = keyValue(x.b, b);
      checkKeyType(pk, hash);
    } else if (name !== undefined && range && name === range.name && rangeCond === undefined && (x.kind === 'between' || x.kind === 'begins_with' || (x.kind === 'cmp' && x.op !== '<>'))) {
      if (x.kind === 'between') {
        checkKeyType(keyValue(x.lo, b), range);
        checkKeyType(keyValue(x.hi, b), range);
      } else {
        const v = keyValue(x.b, b);
        checkKeyType(v, range);
        if (x.kind === 'begins_with' && range.type === 'N')
          throw validationError('Invalid KeyConditionExpression: Incorrect operand type for operator or function; operator or function: begins_with, operand type: N');
      }
      rangeCond = x;
    } else throw validationError('Query key condition not supported');
  }
  if (pk === undefined) throw validationError(`Query condition missed key schema element: ${hash.name}`);
  return { pk, range: rangeCond };
}

export function query(engine: Engine, input: QueryCommandInput): QueryCommandOutput {
  unsupported(input, LEGACY_QUERY, 'Query');
  if (input.KeyConditionExpression === undefined) throw validationError('Either the KeyConditions or KeyConditionExpression parameter must be specified in the request.');
  const kc = parseCondition(input.KeyConditionExpression, 'KeyConditionExpression');
  const filter = input.FilterExpression !== undefined ? parseCondition(input.FilterExpression, 'FilterExpression') : undefined;
  const proj = input.ProjectionExpression !== undefined ? parseProjection(input.ProjectionExpression) : undefined;
  checkPlaceholders(input.ExpressionAttributeNames, input.ExpressionAttributeValues, kc, filter, proj);
  const limit = checkLimit(input.Limit);
  const t = engine.table(input.TableName);
  const index = input.IndexName !== undefined ? t.index(input.IndexName) : undefined;
  if (index && input.ConsistentRead) throw validationError('Consistent reads are not supported on global secondary indexes');
  const b = bindings(input.ExpressionAttributeNames, input.ExpressionAttributeValues);
  const hash = index ? index.hash : t.hash;
  const range = index ? index.range : t.range;
  const { pk, range: rangeCond } = keyCondition(kc.ast, hash, range, b);
  if (filter) {
    const keys = range ? [hash.name, range.name] : [hash.name];
    for (const p of conditionPaths(filter.ast)) {
      const name = resolvePath(p, b)[0] as string;
      if (keys.includes(name)) throw validationError(`Filter Expression can only contain non-primary key attributes: Primary key attribute: ${name}`);
    }
  }
  const projPaths = projectionPaths(proj, b);
  const forward = input.ScanIndexForward !== false;
  const readAt = index ? engine.readAt(false) : engine.readAt(input.ConsistentRead);
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
    return page(candidates(), limit, filter, projPaths, b, input.Select, (e) => exportItem(e.key)) as QueryCommandOutput;
  }
  return indexQuery(engine, t, index, pk, inRange, readAt, forward, limit, filter, projPaths, b, input);
}

/** The paths a condition reads (a Query's filter may name no key attribute). */
function conditionPaths(c: Condition): Path[] {
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
function indexQuery(
  engine: Engine,
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
  return page(candidates, limit, filter, projPaths, b, input.Select, (_e, item) => keyAttributes(item, keyNames)) as QueryCommandOutput;
}

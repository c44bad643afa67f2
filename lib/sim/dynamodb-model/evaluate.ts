/**
 * Expressions evaluated against items, with one request's placeholders bound: conditions
 * (a missing attribute compares false, except `<>`, which is then true — DynamoDB's rule), update
 * actions (every value computed from the item as it was before the update, then applied; list
 * indexes refer to the old list) and projections.
 */
import { validationError } from './errors.js';
import type { Condition, Operand, Parsed, Path, PathElement, UpdateAst } from './expressions.js';
import { addNumbers } from './numbers.js';
import { compareBytes, compareValues, equalValues, newMap, typeOf, type AV, type AVType, type Item } from './values.js';

/** One request's placeholders: `#name` → attribute name, `:value` → imported value. */
export interface Bindings {
  readonly names: Readonly<Record<string, string>> | undefined;
  readonly values: Item;
}

/** A path with its placeholders replaced: attribute names and list indexes. */
export type Resolved = readonly (string | number)[];

const nameOf = (el: string, b: Bindings): string => (el.charCodeAt(0) === 35 ? b.names![el]! : el);

/** The path's elements with `#name` placeholders replaced by the names they stand for. */
export function resolvePath(p: Path, b: Bindings): Resolved {
  return p.els.map((el: PathElement) => (typeof el === 'number' ? el : nameOf(el, b)));
}

/** Defined entries of a placeholder map, counted without allocating. */
function definedCount(m: Record<string, unknown> | undefined): number {
  let n = 0;
  if (m) for (const k in m) if (m[k] !== undefined) n++;
  return n;
}

/** The distinct placeholders of a request's expressions. */
interface Used {
  readonly names: readonly string[];
  readonly values: readonly string[];
}

/** Stands for an absent expression in the cache's keys. */
const NONE: Parsed<unknown> = { ast: undefined, names: [], values: [] };

/** By the expressions' identity (parsed expressions are cached, so a template's requests share them). */
const unions = new WeakMap<Parsed<unknown>, Map<Parsed<unknown>, Map<Parsed<unknown>, Used>>>();

function usedBy(a: Parsed<unknown>, b: Parsed<unknown>, c: Parsed<unknown>): Used {
  let byB = unions.get(a);
  if (!byB) unions.set(a, (byB = new Map()));
  let byC = byB.get(b);
  if (!byC) byB.set(b, (byC = new Map()));
  let u = byC.get(c);
  if (!u) {
    const all = [a, b, c].filter((p) => p !== NONE);
    u = { names: [...new Set(all.flatMap((p) => p.names))], values: [...new Set(all.flatMap((p) => p.values))] };
    byC.set(c, u);
  }
  return u;
}

/**
 * Checks the request's placeholder maps against the expressions that use them (up to three; an
 * absent one is undefined), as DynamoDB does: every placeholder used is defined, and every one
 * defined is used by some expression.
 */
export function checkPlaceholders(
  names: Record<string, string> | undefined,
  values: Record<string, unknown> | undefined,
  a: Parsed<unknown> | undefined,
  b?: Parsed<unknown>,
  c?: Parsed<unknown>,
): void {
  if (a === undefined && b === undefined && c === undefined) {
    if (names !== undefined && definedCount(names)) throw validationError('ExpressionAttributeNames can only be specified when using expressions');
    if (values !== undefined) throw validationError(definedCount(values) ? 'ExpressionAttributeValues can only be specified when using expressions' : 'ExpressionAttributeValues must not be empty');
    return;
  }
  const used = usedBy(a ?? NONE, b ?? NONE, c ?? NONE);
  const nValues = definedCount(values);
  if (values !== undefined && nValues === 0) throw validationError('ExpressionAttributeValues must not be empty');
  // placeholders start with # or :, so nothing inherited can answer for one
  for (const n of used.names) if (names?.[n] === undefined) throw validationError(`An expression attribute name used in the document path is not defined; attribute name: ${n}`);
  for (const v of used.values) if (values?.[v] === undefined) throw validationError(`An expression attribute value used in expression is not defined; attribute value: ${v}`);
  if (used.names.length !== definedCount(names)) {
    const unused = Object.keys(names!).filter((n) => !used.names.includes(n));
    throw validationError(`Value provided in ExpressionAttributeNames unused in expressions: keys: {${unused.join(', ')}}`);
  }
  if (used.values.length !== nValues) {
    const unused = Object.keys(values!).filter((v) => values![v] !== undefined && !used.values.includes(v));
    throw validationError(`Value provided in ExpressionAttributeValues unused in expressions: keys: {${unused.join(', ')}}`);
  }
}

/** The value at `p` in `item`, or undefined. */
export function getPath(item: Item, p: Path, b: Bindings): AV | undefined {
  const els = p.els;
  let cur: AV | undefined = item[nameOf(els[0] as string, b)];
  for (let i = 1; i < els.length && cur !== undefined; i++) {
    const el = els[i]!;
    cur = typeof el === 'number' ? cur.L?.[el] : cur.M?.[nameOf(el, b)];
  }
  return cur;
}

function sizeOf(v: AV): AV | undefined {
  let n: number;
  if (v.S !== undefined) n = v.S.length; // UTF-16 code units, as DynamoDB Local counts
  else if (v.B !== undefined) n = v.B.length;
  else if (v.L !== undefined) n = v.L.length;
  else if (v.M !== undefined) n = Object.keys(v.M).length;
  else if (v.SS !== undefined) n = v.SS.length;
  else if (v.NS !== undefined) n = v.NS.length;
  else if (v.BS !== undefined) n = v.BS.length;
  else return undefined;
  return { N: String(n) };
}

/** A condition operand's value (undefined: the attribute does not exist). */
function operand(o: Operand, item: Item, b: Bindings): AV | undefined {
  switch (o.kind) {
    case 'path':
      return getPath(item, o, b);
    case 'value':
      return b.values[o.name];
    case 'size': {
      const v = getPath(item, o.path, b);
      return v === undefined ? undefined : sizeOf(v);
    }
    default:
      throw validationError(`Invalid ConditionExpression: operand ${o.kind} is not allowed here`);
  }
}

const VALID_TYPES = new Set<AVType>(['S', 'SS', 'N', 'NS', 'B', 'BS', 'BOOL', 'NULL', 'L', 'M']);

function beginsWith(a: AV, p: AV): boolean {
  if (a.S !== undefined && p.S !== undefined) return a.S.startsWith(p.S);
  if (a.B !== undefined && p.B !== undefined) return p.B.length <= a.B.length && compareBytes(a.B.subarray(0, p.B.length), p.B) === 0;
  return false;
}

function contains(a: AV, x: AV): boolean {
  if (a.S !== undefined) return x.S !== undefined && a.S.includes(x.S);
  if (a.SS !== undefined) return x.S !== undefined && a.SS.includes(x.S);
  if (a.NS !== undefined) return x.N !== undefined && a.NS.includes(x.N);
  if (a.BS !== undefined) return x.B !== undefined && a.BS.some((e) => compareBytes(e, x.B!) === 0);
  if (a.L !== undefined) return a.L.some((e) => equalValues(e, x));
  return false;
}

/** Whether `c` holds for `item` (an absent item is an empty one). */
export function evalCondition(c: Condition, item: Item, b: Bindings, kind = 'ConditionExpression'): boolean {
  switch (c.kind) {
    case 'and':
      return evalCondition(c.a, item, b, kind) && evalCondition(c.b, item, b, kind);
    case 'or':
      return evalCondition(c.a, item, b, kind) || evalCondition(c.b, item, b, kind);
    case 'not':
      return !evalCondition(c.a, item, b, kind);
    case 'exists':
      return (getPath(item, c.path, b) !== undefined) !== c.not;
    case 'cmp': {
      const x = operand(c.a, item, b);
      const y = operand(c.b, item, b);
      if (c.op === '=') return x !== undefined && y !== undefined && equalValues(x, y);
      if (c.op === '<>') return x === undefined || y === undefined || !equalValues(x, y);
      if (x === undefined || y === undefined) return false;
      const r = compareValues(x, y);
      if (r === undefined) return false;
      return c.op === '<' ? r < 0 : c.op === '<=' ? r <= 0 : c.op === '>' ? r > 0 : r >= 0;
    }
    case 'between': {
      const lo = operand(c.lo, item, b);
      const hi = operand(c.hi, item, b);
      if (lo !== undefined && hi !== undefined) {
        const order = compareValues(lo, hi);
        if (typeOf(lo) !== typeOf(hi)) throw validationError(`Invalid ${kind}: The BETWEEN operator requires same data type for lower and upper bounds`);
        if (order !== undefined && order > 0) throw validationError(`Invalid ${kind}: The BETWEEN operator requires upper bound to be greater than or equal to lower bound`);
      }
      const x = operand(c.a, item, b);
      if (x === undefined || lo === undefined || hi === undefined) return false;
      const l = compareValues(x, lo);
      const h = compareValues(x, hi);
      return l !== undefined && h !== undefined && l >= 0 && h <= 0;
    }
    case 'in': {
      const x = operand(c.a, item, b);
      if (x === undefined) return false;
      return c.list.some((o) => {
        const y = operand(o, item, b);
        return y !== undefined && equalValues(x, y);
      });
    }
    case 'type': {
      const t = operand(c.type, item, b);
      if (t?.S === undefined || !VALID_TYPES.has(t.S as AVType))
        throw validationError(`Invalid ${kind}: Invalid attribute type name found; type: ${t?.S ?? '?'}, valid types: {N,BS,L,B,NULL,M,S,SS,NS,BOOL}`);
      const v = getPath(item, c.path, b);
      return v !== undefined && typeOf(v) === t.S;
    }
    case 'begins_with': {
      const x = operand(c.a, item, b);
      const p = operand(c.b, item, b);
      return x !== undefined && p !== undefined && beginsWith(x, p);
    }
    case 'contains': {
      const x = operand(c.a, item, b);
      const y = operand(c.b, item, b);
      return x !== undefined && y !== undefined && contains(x, y);
    }
  }
}

const noSuchAttribute = () => validationError('The provided expression refers to an attribute that does not exist in the item');
const wrongType = () => validationError('An operand in the update expression has an incorrect data type');
const invalidPath = () => validationError('The document path provided in the update expression is invalid for update');

/** A SET action's value, computed from the item before the update. */
function setValue(o: Operand, item: Item, b: Bindings): AV {
  switch (o.kind) {
    case 'path': {
      const v = getPath(item, o, b);
      if (v === undefined) throw noSuchAttribute();
      return v;
    }
    case 'value':
      return b.values[o.name]!;
    case 'if_not_exists':
      return getPath(item, o.path, b) ?? setValue(o.fallback, item, b);
    case 'list_append': {
      const x = setValue(o.a, item, b);
      const y = setValue(o.b, item, b);
      if (x.L === undefined || y.L === undefined) throw wrongType();
      return { L: [...x.L, ...y.L] };
    }
    case 'arith': {
      const x = setValue(o.a, item, b);
      const y = setValue(o.b, item, b);
      if (x.N === undefined || y.N === undefined) throw wrongType();
      return { N: addNumbers(x.N, y.N, o.op === '-') };
    }
    case 'size':
      throw validationError('Invalid UpdateExpression: The function is not allowed in an update expression; function: size');
  }
}

/** A shallow copy of a map: values are shared, never mutated. */
export function copyMap(m: Item): Item {
  const out = newMap();
  for (const k in m) out[k] = m[k]!;
  return out;
}

/** `cur` with `value` at els[i..], copying only the containers on the way. */
function setIn(cur: AV | undefined, els: Resolved, i: number, value: AV): AV {
  if (cur === undefined) throw invalidPath();
  const el = els[i]!;
  const last = i === els.length - 1;
  if (typeof el === 'number') {
    if (cur.L === undefined) throw invalidPath();
    const l = cur.L.slice();
    if (last) {
      if (el >= l.length) l.push(value);
      else l[el] = value;
    } else {
      if (el >= l.length) throw invalidPath();
      l[el] = setIn(l[el], els, i + 1, value);
    }
    return { L: l };
  }
  if (cur.M === undefined) throw invalidPath();
  const m = copyMap(cur.M);
  m[el] = last ? value : setIn(m[el], els, i + 1, value);
  return { M: m };
}

/** `cur` without els[i..]; the same object when there is nothing to remove. */
function removeIn(cur: AV | undefined, els: Resolved, i: number): AV | undefined {
  if (cur === undefined) return cur;
  const el = els[i]!;
  const last = i === els.length - 1;
  if (typeof el === 'number') {
    if (cur.L === undefined || el >= cur.L.length) return cur;
    const l = cur.L.slice();
    if (last) l.splice(el, 1);
    else l[el] = removeIn(l[el], els, i + 1)!;
    return { L: l };
  }
  if (cur.M === undefined || cur.M[el] === undefined) return cur;
  const m = copyMap(cur.M);
  if (last) delete m[el];
  else m[el] = removeIn(m[el], els, i + 1)!;
  return { M: m };
}

function getResolved(item: Item, els: Resolved): AV | undefined {
  let cur: AV | undefined = item[els[0] as string];
  for (let i = 1; i < els.length && cur !== undefined; i++) {
    const el = els[i]!;
    cur = typeof el === 'number' ? cur.L?.[el] : cur.M?.[el];
  }
  return cur;
}

function putResolved(item: Item, els: Resolved, value: AV | undefined): void {
  const top = els[0] as string;
  if (els.length === 1) {
    if (value === undefined) delete item[top];
    else item[top] = value;
    return;
  }
  if (value === undefined) {
    const v = removeIn(item[top], els, 1);
    if (v !== undefined) item[top] = v;
  } else item[top] = setIn(item[top], els, 1, value);
}

const pathText = (els: Resolved) => els.map((e) => (typeof e === 'number' ? `[${e}]` : e)).join(', ');

/** Two paths overlap when one is the other's prefix (DynamoDB refuses both in one expression). */
export function checkOverlaps(paths: readonly Resolved[], kind: string): void {
  for (let i = 0; i < paths.length; i++) {
    const a = paths[i]!;
    const a0 = a[0];
    for (let j = i + 1; j < paths.length; j++) {
      const b = paths[j]!;
      if (a0 !== b[0]) continue;
      const n = Math.min(a.length, b.length);
      let k = 1;
      while (k < n && a[k] === b[k]) k++;
      if (k === n)
        throw validationError(`Invalid ${kind}: Two document paths overlap with each other; must remove or rewrite one of these paths; path one: [${pathText(a)}], path two: [${pathText(b)}]`);
      if (typeof a[k] !== typeof b[k])
        throw validationError(`Invalid ${kind}: Two document paths conflict with each other; must remove or rewrite one of these paths; path one: [${pathText(a)}], path two: [${pathText(b)}]`);
    }
  }
}

/** Set types and their element types, for ADD and DELETE. */
function addValues(cur: AV | undefined, v: AV): AV {
  if (v.N !== undefined) {
    if (cur === undefined) return v;
    if (cur.N === undefined) throw wrongType();
    return { N: addNumbers(cur.N, v.N) };
  }
  if (v.SS !== undefined) {
    if (cur === undefined) return v;
    if (cur.SS === undefined) throw wrongType();
    return { SS: [...new Set([...cur.SS, ...v.SS])] };
  }
  if (v.NS !== undefined) {
    if (cur === undefined) return v;
    if (cur.NS === undefined) throw wrongType();
    return { NS: [...new Set([...cur.NS, ...v.NS])] };
  }
  if (v.BS !== undefined) {
    if (cur === undefined) return v;
    if (cur.BS === undefined) throw wrongType();
    const out = [...cur.BS];
    for (const x of v.BS) if (!out.some((y) => compareBytes(x, y) === 0)) out.push(x);
    return { BS: out };
  }
  throw wrongType();
}

function deleteValues(cur: AV | undefined, v: AV): AV | undefined {
  if (v.SS === undefined && v.NS === undefined && v.BS === undefined) throw wrongType();
  if (cur === undefined) return undefined;
  let rest: AV;
  if (v.SS !== undefined && cur.SS !== undefined) rest = { SS: cur.SS.filter((x) => !v.SS!.includes(x)) };
  else if (v.NS !== undefined && cur.NS !== undefined) rest = { NS: cur.NS.filter((x) => !v.NS!.includes(x)) };
  else if (v.BS !== undefined && cur.BS !== undefined) rest = { BS: cur.BS.filter((x) => !v.BS!.some((y) => compareBytes(x, y) === 0)) };
  else throw wrongType();
  return (rest.SS ?? rest.NS ?? rest.BS)!.length ? rest : undefined;
}

/** An update with its placeholders bound and its static checks done (no item needed). */
export interface PreparedUpdate {
  readonly ast: UpdateAst;
  readonly sets: readonly Resolved[];
  /** In the order to apply them: highest list indexes first. */
  readonly removes: readonly Resolved[];
  readonly adds: readonly Resolved[];
  readonly dels: readonly Resolved[];
  /** The top-level attributes the actions name (UPDATED_OLD / UPDATED_NEW return these). */
  readonly touched: readonly string[];
}

/** A prepared update and what it was prepared for. */
interface PreparedFor {
  readonly keyNames: readonly string[];
  /** What each of the expression's `#name` placeholders named. */
  readonly names: readonly string[];
  readonly prepared: PreparedUpdate;
}

/** By expression: the few ways its placeholders are bound (one, for a template's requests). */
const preparedUpdates = new WeakMap<Parsed<UpdateAst>, PreparedFor[]>();

/**
 * Resolves an update's paths and checks what does not depend on the item: no two paths overlap,
 * no action names a key attribute (`keyNames`). Cached: an expression bound to the same names is
 * prepared once (the comparison allocates nothing; the names are usually the same strings).
 */
export function prepareUpdate(u: Parsed<UpdateAst>, b: Bindings, keyNames: readonly string[]): PreparedUpdate {
  let list = preparedUpdates.get(u);
  if (!list) preparedUpdates.set(u, (list = []));
  search: for (const x of list) {
    if (x.keyNames !== keyNames) continue;
    for (let i = 0; i < u.names.length; i++) if (x.names[i] !== b.names![u.names[i]!]) continue search;
    return x.prepared;
  }
  const prepared = prepareUncached(u.ast, b, keyNames);
  if (list.length >= 16) list.shift();
  list.push({ keyNames, names: u.names.map((n) => b.names![n]!), prepared });
  return prepared;
}

function prepareUncached(u: UpdateAst, b: Bindings, keyNames: readonly string[]): PreparedUpdate {
  const all: Resolved[] = [];
  const resolve = (p: Path) => {
    const r = resolvePath(p, b);
    if (keyNames.includes(r[0] as string)) throw validationError(`One or more parameter values were invalid: Cannot update attribute ${r[0]}. This attribute is part of the key`);
    all.push(r);
    return r;
  };
  const sets = u.set.map((a) => resolve(a.path));
  const removes = u.remove.map(resolve);
  const adds = u.add.map((a) => resolve(a.path));
  const dels = u.delete.map((a) => resolve(a.path));
  checkOverlaps(all, 'UpdateExpression');
  const byIndex = removes.length > 1 && removes.some((r) => r.length > 1) ? [...removes].sort(byIndexDesc) : removes;
  return { ast: u, sets, removes: byIndex, adds, dels, touched: [...new Set(all.map((p) => p[0] as string))] };
}

/** Highest list indexes first, so that each index means what it meant in the old item. */
function byIndexDesc(x: Resolved, y: Resolved): number {
  for (let k = 0; k < Math.min(x.length, y.length); k++) {
    if (x[k] === y[k]) continue;
    return typeof x[k] === 'number' && typeof y[k] === 'number' ? (y[k] as number) - (x[k] as number) : 0;
  }
  return 0;
}

/**
 * Applies a prepared update to `old` (undefined: the item does not exist, so it starts as its
 * key) and returns the new item. Every value is computed from the item as it was.
 */
export function runUpdate(p: PreparedUpdate, old: Item | undefined, key: Item, b: Bindings): Item {
  const u = p.ast;
  const base = old ?? key;
  const values: AV[] = [];
  for (const a of u.set) values.push(setValue(a.value, base, b));
  const next = copyMap(base);
  for (let i = 0; i < p.sets.length; i++) putResolved(next, p.sets[i]!, values[i]!);
  for (const path of p.removes) putResolved(next, path, undefined);
  for (let i = 0; i < p.adds.length; i++) {
    const path = p.adds[i]!;
    putResolved(next, path, addValues(getResolved(next, path), b.values[(u.add[i]!.value as { name: string }).name]!));
  }
  for (let i = 0; i < p.dels.length; i++) {
    const path = p.dels[i]!;
    const cur = getResolved(next, path);
    const rest = deleteValues(cur, b.values[(u.delete[i]!.value as { name: string }).name]!);
    if (rest !== cur) putResolved(next, path, rest);
  }
  return next;
}

interface Tree {
  value?: AV;
  m?: Map<string, Tree>;
  l?: Map<number, Tree>;
}

function treeValue(t: Tree): AV {
  if (t.value) return t.value;
  if (t.m) {
    const m = newMap();
    for (const [k, v] of t.m) m[k] = treeValue(v);
    return { M: m };
  }
  return { L: [...t.l!.entries()].sort((a, b) => a[0] - b[0]).map(([, v]) => treeValue(v)) };
}

/** The parts of `item` that `paths` name (list elements keep their order, not the paths'). */
export function project(item: Item, paths: readonly Resolved[]): Item {
  const out = newMap();
  if (paths.every((p) => p.length === 1)) {
    for (const p of paths) {
      const v = item[p[0] as string];
      if (v !== undefined) out[p[0] as string] = v;
    }
    return out;
  }
  const root: Tree = { m: new Map() };
  for (const p of paths) {
    const v = getResolved(item, p);
    if (v === undefined) continue;
    let node = root;
    for (let i = 0; i < p.length; i++) {
      const el = p[i]!;
      const children: Map<string | number, Tree> = (typeof el === 'number' ? (node.l ??= new Map()) : (node.m ??= new Map())) as Map<string | number, Tree>;
      let child = children.get(el);
      if (!child) children.set(el, (child = {}));
      if (i === p.length - 1) child.value = v;
      node = child;
    }
  }
  for (const [k, t] of root.m!) out[k] = treeValue(t);
  return out;
}

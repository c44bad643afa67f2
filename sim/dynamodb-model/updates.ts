/**
 * Update expressions: every value computed from the item as it was before the update, then
 * applied; list indexes refer to the old list. An update is prepared once per expression and
 * binding (paths resolved, static checks done) and run against each item.
 */
import { validationError } from './errors.js';
import type { Operand, Parsed, Path, UpdateAst } from './expressions.js';
import { addNumbers } from './numbers.js';
import { checkOverlaps, copyMap, getPath, getResolved, resolvePath, type Bindings, type Resolved } from './paths.js';
import { compareBytes, type AV, type Item } from './values.js';

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

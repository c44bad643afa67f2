/**
 * Document paths with one request's placeholders bound: resolving `#name` placeholders, reading
 * the value a path names, refusing paths that overlap, and projections (ProjectionExpression).
 */
import { validationError } from './errors.js';
import type { Path, PathElement } from './expressions.js';
import { newMap, type AV, type Item } from './values.js';

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

export function getResolved(item: Item, els: Resolved): AV | undefined {
  let cur: AV | undefined = item[els[0] as string];
  for (let i = 1; i < els.length && cur !== undefined; i++) {
    const el = els[i]!;
    cur = typeof el === 'number' ? cur.L?.[el] : cur.M?.[el];
  }
  return cur;
}

/** A shallow copy of a map: values are shared, never mutated. */
export function copyMap(m: Item): Item {
  const out = newMap();
  for (const k in m) out[k] = m[k]!;
  return out;
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

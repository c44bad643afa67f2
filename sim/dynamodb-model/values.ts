/**
 * Attribute values as the model holds them. Whatever comes in is validated and copied
 * (`importItem`, `importValue`: numbers made canonical, sets checked), whatever goes out is copied
 * (`exportItem`), and what is stored is never mutated afterwards: updates build new objects and
 * share the unchanged parts, so old versions (stale reads, stream images) cost nothing to keep.
 * Maps inherit nothing, so an attribute named `constructor` or `__proto__` is data.
 */
import type { AttributeValue } from '@aws-sdk/client-dynamodb';
import { validationError } from './errors.js';
import { canonicalNumber, compareNumbers, significantDigits } from './numbers.js';

/** One attribute value: exactly one member set. */
export interface AV {
  S?: string;
  N?: string;
  B?: Uint8Array;
  SS?: string[];
  NS?: string[];
  BS?: Uint8Array[];
  M?: Item;
  L?: AV[];
  NULL?: boolean;
  BOOL?: boolean;
}

/** An item, or a map value: attribute name → value (null prototype). */
export type Item = Record<string, AV>;

/** The member an attribute value sets. */
export type AVType = 'S' | 'N' | 'B' | 'SS' | 'NS' | 'BS' | 'M' | 'L' | 'NULL' | 'BOOL';

const TYPES: ReadonlySet<string> = new Set(['S', 'N', 'B', 'SS', 'NS', 'BS', 'M', 'L', 'NULL', 'BOOL']);

/**
 * The prototype of every map: empty and without one of its own, so no attribute name (`constructor`,
 * `__proto__`) finds anything inherited. Not `Object.create(null)` itself: V8 keeps such objects
 * as slow dictionaries, and maps are read and copied on every request.
 */
const NO_INHERITANCE: object = Object.freeze(Object.create(null) as object);

/** A fresh map that inherits nothing. */
export const newMap = (): Item => Object.create(NO_INHERITANCE) as Item;

/** Which member a value sets. */
export function typeOf(v: AV): AVType {
  if (v.S !== undefined) return 'S';
  if (v.N !== undefined) return 'N';
  if (v.M !== undefined) return 'M';
  if (v.L !== undefined) return 'L';
  if (v.BOOL !== undefined) return 'BOOL';
  if (v.NULL !== undefined) return 'NULL';
  if (v.SS !== undefined) return 'SS';
  if (v.NS !== undefined) return 'NS';
  if (v.B !== undefined) return 'B';
  return 'BS';
}

const SET_NAMES = { SS: 'string', NS: 'number', BS: 'binary' } as const;

function toBytes(b: unknown): Uint8Array {
  if (b instanceof Uint8Array) return b.slice();
  if (typeof b === 'string') return new TextEncoder().encode(b); // the SDK sends strings as UTF-8 bytes
  throw validationError('One or more parameter values were invalid: binary values must be bytes');
}

function checkSet<T>(values: T[], type: 'SS' | 'NS' | 'BS', keyOf: (v: T) => string): void {
  if (values.length === 0) throw validationError(`One or more parameter values were invalid: An ${SET_NAMES[type]} set  may not be empty`);
  const seen = new Set<string>();
  for (const v of values) {
    const k = keyOf(v);
    if (seen.has(k)) throw validationError(`One or more parameter values were invalid: Input collection [${values.map(keyOf).join(', ')}] contains duplicates`);
    seen.add(k);
  }
}

const bytesKey = (b: Uint8Array): string => String.fromCharCode(...b);

/** Validates and copies a value from a request. */
export function importValue(raw: unknown): AV {
  if (raw === null || typeof raw !== 'object') throw validationError('Supplied AttributeValue is empty, must contain exactly one of the supported datatypes');
  const v = raw as Record<string, unknown>;
  let type: string | undefined;
  let count = 0;
  for (const k in v) {
    if (v[k] === undefined || k === '$unknown') continue;
    count++;
    type = k;
  }
  if (count === 0 || !type || !TYPES.has(type)) throw validationError('Supplied AttributeValue is empty, must contain exactly one of the supported datatypes');
  if (count > 1) throw validationError('Supplied AttributeValue has more than one datatypes set, must contain exactly one of the supported datatypes');
  const x = v[type];
  switch (type as AVType) {
    case 'S':
      if (typeof x !== 'string') throw validationError('One or more parameter values were invalid: S must be a string');
      return { S: x };
    case 'N':
      return { N: canonicalNumber(x as string) };
    case 'BOOL':
      if (typeof x !== 'boolean') throw validationError('One or more parameter values were invalid: BOOL must be a boolean');
      return { BOOL: x };
    case 'NULL':
      if (x !== true) throw validationError('One or more parameter values were invalid: Null attribute value types must have the value of true');
      return { NULL: true };
    case 'B':
      return { B: toBytes(x) };
    case 'SS': {
      if (!Array.isArray(x) || x.some((s) => typeof s !== 'string')) throw validationError('One or more parameter values were invalid: SS must be a list of strings');
      const ss = [...(x as string[])];
      checkSet(ss, 'SS', (s) => s);
      return { SS: ss };
    }
    case 'NS': {
      if (!Array.isArray(x)) throw validationError('One or more parameter values were invalid: NS must be a list of numbers');
      const ns = (x as string[]).map((n) => canonicalNumber(n));
      checkSet(ns, 'NS', (s) => s);
      return { NS: ns };
    }
    case 'BS': {
      if (!Array.isArray(x)) throw validationError('One or more parameter values were invalid: BS must be a list of binary values');
      const bs = x.map(toBytes);
      checkSet(bs, 'BS', bytesKey);
      return { BS: bs };
    }
    case 'L': {
      if (!Array.isArray(x)) throw validationError('One or more parameter values were invalid: L must be a list');
      return { L: x.map(importValue) };
    }
    case 'M': {
      if (x === null || typeof x !== 'object') throw validationError('One or more parameter values were invalid: M must be a map');
      return { M: importMap(x as Record<string, unknown>) };
    }
  }
}

/** Validates and copies a map of values (an item, an M value, ExpressionAttributeValues). */
export function importMap(raw: Record<string, unknown>): Item {
  const out = newMap();
  for (const k in raw) {
    const v = raw[k];
    if (v === undefined) continue;
    out[k] = importValue(v);
  }
  return out;
}

/** Sets an own property even when its name is `__proto__`. */
function setOwn(o: Record<string, unknown>, k: string, v: unknown): void {
  if (k === '__proto__') Object.defineProperty(o, k, { value: v, enumerable: true, writable: true, configurable: true });
  else o[k] = v;
}

/** A deep copy for the caller. */
export function exportValue(v: AV): AttributeValue {
  if (v.S !== undefined) return { S: v.S };
  if (v.N !== undefined) return { N: v.N };
  if (v.M !== undefined) return { M: exportItem(v.M) };
  if (v.L !== undefined) return { L: v.L.map(exportValue) };
  if (v.BOOL !== undefined) return { BOOL: v.BOOL };
  if (v.NULL !== undefined) return { NULL: true };
  if (v.SS !== undefined) return { SS: [...v.SS] };
  if (v.NS !== undefined) return { NS: [...v.NS] };
  if (v.B !== undefined) return { B: v.B.slice() };
  return { BS: v.BS!.map((b) => b.slice()) };
}

/** A deep copy of an item for the caller (a plain object, as the SDK returns). */
export function exportItem(item: Item): Record<string, AttributeValue> {
  const out: Record<string, AttributeValue> = {};
  for (const k in item) {
    if (k === '__proto__') setOwn(out, k, exportValue(item[k]!));
    else out[k] = exportValue(item[k]!);
  }
  return out;
}

/** Byte order of the UTF-8 encodings, without encoding: UTF-16 order but surrogates above U+E000–U+FFFF. */
export function compareUtf8(a: string, b: string): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    let x = a.charCodeAt(i);
    let y = b.charCodeAt(i);
    if (x === y) continue;
    if (x >= 0xd800 && y >= 0xd800) {
      x = x >= 0xe000 ? x - 0x800 : x + 0x2000;
      y = y >= 0xe000 ? y - 0x800 : y + 0x2000;
    }
    return x - y;
  }
  return a.length - b.length;
}

/** Byte order (binary keys and values). */
export function compareBytes(a: Uint8Array, b: Uint8Array): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) if (a[i] !== b[i]) return a[i]! - b[i]!;
  return a.length - b.length;
}

/** The order of `<`, `BETWEEN` and sort keys: undefined unless both are S, both N or both B. */
export function compareValues(a: AV, b: AV): number | undefined {
  if (a.S !== undefined) return b.S !== undefined ? compareUtf8(a.S, b.S) : undefined;
  if (a.N !== undefined) return b.N !== undefined ? compareNumbers(a.N, b.N) : undefined;
  if (a.B !== undefined) return b.B !== undefined ? compareBytes(a.B, b.B) : undefined;
  return undefined;
}

function sameSet<T>(a: T[], b: T[], key: (v: T) => string): boolean {
  if (a.length !== b.length) return false;
  const s = new Set(a.map(key));
  return b.every((v) => s.has(key(v)));
}

/** DynamoDB's equality: by type and value; sets as sets; numbers by value (canonical form makes that string equality). */
export function equalValues(a: AV, b: AV): boolean {
  if (a === b) return true;
  if (a.S !== undefined) return a.S === b.S;
  if (a.N !== undefined) return a.N === b.N;
  if (a.BOOL !== undefined) return a.BOOL === b.BOOL;
  if (a.NULL !== undefined) return b.NULL !== undefined;
  if (a.M !== undefined) return b.M !== undefined && equalItems(a.M, b.M);
  if (a.L !== undefined) return b.L !== undefined && a.L.length === b.L.length && a.L.every((x, i) => equalValues(x, b.L![i]!));
  if (a.SS !== undefined) return b.SS !== undefined && sameSet(a.SS, b.SS, (s) => s);
  if (a.NS !== undefined) return b.NS !== undefined && sameSet(a.NS, b.NS, (s) => s);
  if (a.B !== undefined) return b.B !== undefined && compareBytes(a.B, b.B) === 0;
  return b.BS !== undefined && sameSet(a.BS!, b.BS, bytesKey);
}

/** Two maps with the same attributes, equal by equalValues. */
export function equalItems(a: Item, b: Item): boolean {
  if (a === b) return true;
  let n = 0;
  for (const k in a) {
    const y = b[k];
    if (y === undefined || !equalValues(a[k]!, y)) return false;
    n++;
  }
  for (const _ in b) n--;
  return n === 0;
}

/** UTF-8 length, without encoding (Node's count is faster than a loop in JavaScript). */
export const utf8Length = (s: string): number => Buffer.byteLength(s, 'utf8');

const numberSize = (n: string) => Math.ceil(significantDigits(n) / 2) + 1;

/** DynamoDB's size of a value, as it counts toward the 400 KB item limit. */
export function valueSize(v: AV): number {
  if (v.S !== undefined) return utf8Length(v.S);
  if (v.N !== undefined) return numberSize(v.N);
  if (v.BOOL !== undefined || v.NULL !== undefined) return 1;
  if (v.B !== undefined) return v.B.length;
  if (v.M !== undefined) {
    let n = 3;
    for (const k in v.M) n += 1 + utf8Length(k) + valueSize(v.M[k]!);
    return n;
  }
  if (v.L !== undefined) return v.L.reduce((n, x) => n + 1 + valueSize(x), 3);
  if (v.SS !== undefined) return v.SS.reduce((n, s) => n + utf8Length(s), 0);
  if (v.NS !== undefined) return v.NS.reduce((n, s) => n + numberSize(s), 0);
  return v.BS!.reduce((n, b) => n + b.length, 0);
}

/** The item's size: names and values. */
export function itemSize(item: Item): number {
  let n = 0;
  for (const k in item) n += utf8Length(k) + valueSize(item[k]!);
  return n;
}

/** DynamoDB's limit on an item. */
export const MAX_ITEM_BYTES = 400 * 1024;

/** At least valueSize(v), without reading strings (3 bytes per UTF-16 unit at most). */
function valueBound(v: AV): number {
  if (v.S !== undefined) return 3 * v.S.length;
  if (v.N !== undefined) return 21;
  if (v.M !== undefined) {
    let n = 3;
    for (const k in v.M) n += 1 + 3 * k.length + valueBound(v.M[k]!);
    return n;
  }
  if (v.L !== undefined) return v.L.reduce((n, x) => n + 1 + valueBound(x), 3);
  return valueSize(v);
}

/** Whether an item is over DynamoDB's limit: exact only when a cheap bound cannot tell. */
export function tooLarge(item: Item): boolean {
  let bound = 0;
  for (const k in item) bound += 3 * k.length + valueBound(item[k]!);
  return bound > MAX_ITEM_BYTES && itemSize(item) > MAX_ITEM_BYTES;
}

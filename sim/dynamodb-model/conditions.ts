/**
 * Conditions (ConditionExpression, FilterExpression, a key condition's sort-key part) evaluated
 * against an item: a missing attribute compares false, except `<>`, which is then true —
 * DynamoDB's rule.
 */
import { validationError } from './errors.js';
import type { Condition, Operand } from './expressions.js';
import { getPath, type Bindings } from './paths.js';
import { compareBytes, compareValues, equalValues, typeOf, type AV, type AVType, type Item } from './values.js';

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

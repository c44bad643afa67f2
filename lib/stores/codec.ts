/**
 * `marshall` and `unmarshall` of @aws-sdk/util-dynamodb with a fast path for what Conclave's rows
 * and requests are made of (strings, numbers within the safe integers, booleans, nulls, plain maps
 * and lists): the same result as the SDK's, without its generic walk (an `Object.entries` and a
 * closure per value, which the simulator's profile showed on every request). Anything else (sets,
 * binary, numbers beyond the safe integers, class instances, options the fast path does not
 * know) goes to the SDK's own functions, which also word the errors. test/stores/codec.test.ts
 * compares both on every kind of value.
 */
import type { AttributeValue } from '@aws-sdk/client-dynamodb';
import { marshall as sdkMarshall, unmarshall as sdkUnmarshall, type marshallOptions } from '@aws-sdk/util-dynamodb';

/** The fast path cannot tell: the SDK's function decides. */
const NO = Symbol('no');

function native(v: AttributeValue): unknown {
  const a = v as unknown as Record<string, unknown>;
  let found: string | undefined;
  for (const k in a) {
    if (a[k] === undefined) continue;
    found = k;
    break;
  }
  switch (found) {
    case 'S':
      return typeof a['S'] === 'string' ? a['S'] : NO;
    case 'N': {
      const n = Number(a['N']);
      // the SDK's: a Number within the safe integers' range (larger ones become BigInt there)
      return Number.isFinite(n) && Math.abs(n) <= Number.MAX_SAFE_INTEGER ? n : NO;
    }
    case 'BOOL':
      return Boolean(a['BOOL']);
    case 'NULL':
      return null;
    case 'M': {
      const m = a['M'];
      if (typeof m !== 'object' || m === null || Object.getPrototypeOf(m) !== Object.prototype) return NO;
      const out: Record<string, unknown> = {};
      for (const k in m) {
        if (k === '__proto__') return NO;
        const x = native((m as Record<string, AttributeValue>)[k]!);
        if (x === NO) return NO;
        out[k] = x;
      }
      return out;
    }
    case 'L': {
      const l = a['L'];
      if (!Array.isArray(l)) return NO;
      const out = new Array<unknown>(l.length);
      for (let i = 0; i < l.length; i++) {
        const x = native(l[i] as AttributeValue);
        if (x === NO) return NO;
        out[i] = x;
      }
      return out;
    }
    default:
      return NO;
  }
}

/** A DynamoDB item as a plain object: `unmarshall` of @aws-sdk/util-dynamodb (no options), faster on plain rows. */
export function unmarshall(item: Record<string, AttributeValue>): Record<string, unknown> {
  if (Object.getPrototypeOf(item) !== Object.prototype) return sdkUnmarshall(item);
  const out: Record<string, unknown> = {};
  for (const k in item) {
    if (k === '__proto__') return sdkUnmarshall(item);
    const x = native(item[k]!);
    if (x === NO) return sdkUnmarshall(item);
    out[k] = x;
  }
  return out;
}

/** An attribute value for `v`, or NO: strings, safe numbers, booleans, null, plain objects and arrays of those. */
function attr(v: unknown, dropUndefined: boolean): AttributeValue | typeof NO {
  switch (typeof v) {
    case 'string':
      return { S: v };
    case 'number':
      return Number.isFinite(v) && Math.abs(v) <= Number.MAX_SAFE_INTEGER ? { N: String(v) } : NO;
    case 'boolean':
      return { BOOL: v };
    case 'object': {
      if (v === null) return { NULL: true };
      if (Array.isArray(v)) {
        const L: AttributeValue[] = [];
        for (const x of v) {
          if (x === undefined) {
            if (dropUndefined) continue;
            return NO;
          }
          const a = attr(x, dropUndefined);
          if (a === NO) return NO;
          L.push(a);
        }
        return { L };
      }
      const M = map(v, dropUndefined);
      return M === NO ? NO : { M };
    }
    default:
      return NO;
  }
}

function map(v: object, dropUndefined: boolean): Record<string, AttributeValue> | typeof NO {
  if (Object.getPrototypeOf(v) !== Object.prototype) return NO;
  const out: Record<string, AttributeValue> = {};
  for (const k in v) {
    if (k === '__proto__') return NO;
    const x = (v as Record<string, unknown>)[k];
    if (x === undefined) {
      if (dropUndefined) continue;
      return NO;
    }
    const a = attr(x, dropUndefined);
    if (a === NO) return NO;
    out[k] = a;
  }
  return out;
}

/**
 * A plain object as a DynamoDB item: `marshall` of @aws-sdk/util-dynamodb, faster on plain rows.
 * Of the options only `removeUndefinedValues` takes the fast path.
 */
export function marshall(data: Record<string, unknown>, options?: Pick<marshallOptions, 'removeUndefinedValues'>): Record<string, AttributeValue> {
  const known = options === undefined || Object.keys(options).every((k) => k === 'removeUndefinedValues');
  const out = known && typeof data === 'object' && data !== null && !Array.isArray(data) ? map(data, options?.removeUndefinedValues === true) : NO;
  return out === NO ? sdkMarshall(data, options) : out;
}

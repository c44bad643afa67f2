/**
 * A request's placeholder maps checked against its expressions, as DynamoDB checks them: every
 * placeholder used is defined, and every one defined is used.
 */
import { validationError } from './errors.js';
import type { Parsed } from './expressions.js';

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

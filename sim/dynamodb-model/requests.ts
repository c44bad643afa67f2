/**
 * What the operations check of a request before they touch a table: the parameters the model
 * refuses (legacy ones, and what it does not model), ReturnValues, Limit, and projections.
 */
import { UnsupportedByModelError, validationError } from './errors.js';
import type { Parsed, Path } from './expressions.js';
import { checkOverlaps, resolvePath, type Bindings, type Resolved } from './paths.js';

export type ReturnValue = 'NONE' | 'ALL_OLD' | 'UPDATED_OLD' | 'ALL_NEW' | 'UPDATED_NEW';

/** Legacy (pre-expression) parameters, per operation: the model refuses them. */
export const LEGACY_GET = ['AttributesToGet'] as const;
export const LEGACY_WRITE = ['Expected', 'ConditionalOperator'] as const;
export const LEGACY_UPDATE = ['AttributeUpdates', 'Expected', 'ConditionalOperator'] as const;
export const LEGACY_QUERY = ['KeyConditions', 'QueryFilter', 'AttributesToGet', 'ConditionalOperator'] as const;
export const LEGACY_SCAN = ['ScanFilter', 'AttributesToGet', 'ConditionalOperator'] as const;
export const LEGACY_CREATE = ['LocalSecondaryIndexes'] as const; // not legacy: not modeled
export const RV_OLD: readonly ReturnValue[] = ['NONE', 'ALL_OLD'];
export const RV_ALL: readonly ReturnValue[] = ['NONE', 'ALL_OLD', 'UPDATED_OLD', 'ALL_NEW', 'UPDATED_NEW'];

export function returnValues(rv: string | undefined, allowed: readonly ReturnValue[]): ReturnValue {
  const v = (rv ?? 'NONE') as ReturnValue;
  if (!allowed.includes(v)) throw validationError('Return values set to invalid value');
  return v;
}

export const unsupported = (input: object, params: readonly string[], op: string) => {
  for (const p of params) if ((input as Record<string, unknown>)[p] !== undefined) throw new UnsupportedByModelError(`${op}'s legacy parameter ${p} (use expressions)`);
};

/** A Query's or Scan's Limit: Infinity when absent. */
export function checkLimit(limit: number | undefined): number {
  if (limit === undefined) return Infinity;
  if (!Number.isInteger(limit) || limit < 1) throw validationError("1 validation error detected: Value at 'limit' failed to satisfy constraint: Member must have value greater than or equal to 1");
  return limit;
}

/** A projection's paths, resolved; overlapping ones are refused. */
export function projectionPaths(proj: Parsed<Path[]> | undefined, b: Bindings): Resolved[] | undefined {
  if (!proj) return undefined;
  const paths = proj.ast.map((p) => resolvePath(p, b));
  checkOverlaps(paths, 'ProjectionExpression');
  return paths;
}

/**
 * Shared pieces of the bad-input property tests: junk values, mutations of a valid input, and the
 * one assertion they all make — the input is accepted, or refused with a typed error that names
 * the bad field; never a TypeError or any other crash.
 */
import fc from 'fast-check';
import { expect } from 'vitest';
import type * as z from 'zod';
import { ValidationError } from '../../lib/schemas/validation.js';

/** Moderate: each property runs against real parsers (and some against DynamoDB Local). */
export const RUNS = { numRuns: 150 } as const;

/** Values a careless caller, a hand-edited file or a broken producer sends. */
export const junk: fc.Arbitrary<unknown> = fc.oneof(
  fc.constantFrom(undefined, null, true, false, 0, -1, 1.5, Number.NaN, Number.POSITIVE_INFINITY, 2 ** 53, '', ' ', 'v1.2', '1.30', '1.2.3', '01.2.3', 'x'.repeat(300), '💥', '__proto__', 'constructor', '-', '1h', '*'),
  fc.integer(),
  fc.double(),
  fc.string({ maxLength: 12 }),
  fc.array(fc.anything({ maxDepth: 1 }), { maxLength: 3 }),
  fc.dictionary(fc.string({ maxLength: 6 }), fc.anything({ maxDepth: 1 }), { maxKeys: 3 }),
);

/** A DynamoDB JSON attribute value gone wrong (or, by chance, right). */
export const attributeJunk: fc.Arbitrary<unknown> = fc.oneof(
  junk,
  fc.constantFrom({}, { Q: 1 }, { S: 'x', N: '1' }, { N: 'abc' }, { N: '123456789012345678901234' }, { L: 5 }, { SS: 'x' }, { M: null }, { NULL: true }, { BOOL: 'yes' }),
  ...(['S', 'N', 'L', 'M', 'SS', 'NS', 'BOOL', 'NULL', 'B'] as const).map((t) => fc.record({ [t]: junk })),
);

export interface Mutation {
  key: string;
  drop: boolean;
  value: unknown;
}

/** 1–3 changes to a valid object: a key dropped or set to junk, possibly a key nobody knows. */
export const mutations = (keys: readonly string[], value: fc.Arbitrary<unknown> = junk): fc.Arbitrary<Mutation[]> =>
  fc.array(fc.record({ key: fc.constantFrom(...keys, 'unknownOption'), drop: fc.boolean(), value }), { minLength: 1, maxLength: 3 });

export function mutate<T extends Record<string, unknown>>(base: T, ms: readonly Mutation[]): Record<string, unknown> {
  const o: Record<string, unknown> = { ...base };
  for (const m of ms) {
    if (m.drop) delete o[m.key];
    else o[m.key] = m.value;
  }
  return o;
}

/** The field's root: `election.deadline` → `election`, `controllerLeaders[0].name` → `controllerLeaders`. */
export const rootOf = (field: string): string => field.split(/[.[]/)[0]!;

export interface Expectation {
  /** Error classes that count as typed (ValidationError always does). */
  types?: readonly (new (...a: never[]) => Error)[];
  /** The schema's own fields: a mutated field its own schema refuses must be named. */
  shape?: Record<string, z.ZodType>;
  mutations?: readonly Mutation[];
  /** Field roots a ValidationError may name (default: the shape's keys). */
  known?: readonly string[];
  /** The schema refuses unknown keys (configurations); table items keep them. @default true */
  strict?: boolean;
}

/**
 * Runs `fn` (sync or async). It either returns, or throws a typed error; a ValidationError names
 * fields the schema knows (or an unknown key, as one), and among them every mutated field whose value its own schema refuses.
 */
export async function expectTypedOutcome(fn: () => unknown, x: Expectation = {}): Promise<'ok' | Error> {
  let error: unknown;
  try {
    await fn();
    return 'ok';
  } catch (e) {
    error = e;
  }
  const types = [ValidationError, ...(x.types ?? [])];
  if (!types.some((t) => error instanceof t)) {
    throw new Error(`expected a typed error (${types.map((t) => t.name).join(' | ')}), got ${(error as Error)?.name}: ${(error as Error)?.message}`, { cause: error });
  }
  if (error instanceof ValidationError) {
    expect(error.fields.length).toBeGreaterThan(0);
    const known = new Set([...(x.known ?? Object.keys(x.shape ?? {})), '(root)']);
    // an unknown key is named under its own name, with "unknown option" (or "unknown field") saying so
    if (x.known || x.shape) for (const { field: f, message } of error.issues) expect(known.has(f) || known.has(rootOf(f)) || /^unknown (option|field)/.test(message), `field "${f}" of ${error.message}`).toBe(true);
    const last = new Map((x.mutations ?? []).map((m) => [m.key, m])); // a later change to a key wins
    for (const m of last.values()) {
      const field = x.shape?.[m.key];
      const value = m.drop ? undefined : m.value;
      if (field && !field.safeParse(value).success) expect(error.fields.map(rootOf), `${error.message} should name ${m.key}`).toContain(m.key);
      if (!field && !m.drop && m.value !== undefined && x.shape && x.strict !== false) expect(error.message).toContain(m.key); // an undefined value is no key at all (JSON drops it)
    }
  }
  return error as Error;
}

/**
 * The leaves of the compiled accepting path (compiled.ts): the zod internals it reads, the tests of
 * values kept as they are (strings, numbers, booleans, literals, enums), zod's own run of a part the
 * compiler does not know, and a node's refinements run as zod runs them.
 */
import * as z from 'zod';

/** What a compiled path returns for a value it does not vouch for: zod decides. */
export const REFUSED: unique symbol = Symbol('refused');

/** A compiled path: the parsed value, or REFUSED. */
export type Path = (v: unknown) => unknown;

/** The parts of zod's internals a compiled path reads. */
export interface Payload {
  value: unknown;
  issues: unknown[];
}
export interface Internals {
  readonly def: Def;
  readonly traits: ReadonlySet<string>;
  readonly optin?: string;
  readonly optout?: string;
  readonly values?: ReadonlySet<unknown>;
  readonly propValues?: Record<string, ReadonlySet<unknown>>;
  run(payload: Payload, ctx: { async: false }): Payload | Promise<Payload>;
}
interface Def {
  readonly type: string;
  readonly checks?: readonly { _zod: { def: CheckDef } }[];
  readonly coerce?: boolean;
  readonly shape?: Record<string, { _zod: Internals }>;
  readonly catchall?: { _zod: Internals };
  readonly innerType?: { _zod: Internals };
  readonly options?: readonly { _zod: Internals }[];
  readonly discriminator?: string;
  readonly unionFallback?: boolean;
  readonly in?: { _zod: Internals };
  readonly element?: { _zod: Internals };
  readonly keyType?: { _zod: Internals };
  readonly valueType?: { _zod: Internals };
  readonly mode?: string;
  /** A default's value (zod's getter: a fresh copy, or the function's result, each time). */
  readonly defaultValue?: unknown;
  readonly out?: { _zod: Internals };
  /** z.custom's own check. */
  readonly fn?: (v: unknown) => unknown;
  readonly when?: unknown;
}
export interface CheckDef {
  readonly check: string;
  readonly format?: string;
  readonly pattern?: RegExp;
  readonly minimum?: number;
  readonly maximum?: number;
  readonly value?: unknown;
  readonly inclusive?: boolean;
  readonly when?: unknown;
  readonly prefix?: string;
  readonly suffix?: string;
}

export const internals = (s: z.ZodType): Internals => (s as unknown as { _zod: Internals })._zod;

/** The `when` zod gives every length check (run on anything with a length: every string). */
export const LENGTH_WHEN = (internals(z.string().min(1)).def.checks![0]!._zod.def as CheckDef).when;

/** The part as zod runs it inside its parent (the context safeParse gives it): its value, or REFUSED. */
export function viaZod(s: Internals): Path {
  return (v) => {
    const r = s.run({ value: v, issues: [] }, { async: false });
    return r instanceof Promise || r.issues.length ? REFUSED : r.value;
  };
}

const SURROGATE = /[\uD800-\uDFFF]/;

/** A check of a value the node keeps as it is (a string, a number, a literal…). */
export type Test = (v: unknown) => boolean;

export const all = (tests: Test[]): Test => (v) => {
  for (const t of tests) if (!t(v)) return false;
  return true;
};

/**
 * A check of a kept value, as a function and as JavaScript over a variable (for an object's
 * generated code): written side by side, so the two always say the same. `bind` makes a constant
 * (a pattern, a set) available to the code and returns its name.
 */
export interface Cond {
  readonly test: Test;
  readonly src: (x: string, bind: (value: unknown) => string) => string;
}
const cond = (test: Test, src: Cond['src']): Cond => ({ test, src });

const IS_STRING = cond((v) => typeof v === 'string', (x) => `typeof ${x} === "string"`);
const IS_NUMBER = cond((v) => typeof v === 'number' && Number.isFinite(v), (x) => `typeof ${x} === "number" && Number.isFinite(${x})`);
const IS_BOOLEAN = cond((v) => typeof v === 'boolean', (x) => `typeof ${x} === "boolean"`);
export const TYPE_STRING: Test = IS_STRING.test;

/** A string's checks as conditions (after its type's), or undefined when one is of a kind not compiled here. */
export function stringConds(checks: readonly CheckDef[]): Cond[] | undefined {
  const conds: Cond[] = [];
  for (const c of checks) {
    if ((c.check === 'min_length' || c.check === 'max_length') && c.when === LENGTH_WHEN && typeof (c.minimum ?? c.maximum) === 'number') {
      // zod counts code points: at most as many as UTF-16 units, at least half as many
      if (c.check === 'max_length') {
        const max = c.maximum!;
        conds.push(cond((v) => (v as string).length <= max, (x, bind) => `${x}.length <= ${bind(max)}`));
      } else {
        // at least `min` code points: twice as many units, or as many without a surrogate (else zod counts)
        const min = c.minimum!;
        conds.push(
          cond(
            (v) => (v as string).length >= 2 * min || ((v as string).length >= min && !SURROGATE.test(v as string)),
            (x, bind) => `${x}.length >= ${bind(2 * min)} || (${x}.length >= ${bind(min)} && !${bind(SURROGATE)}.test(${x}))`,
          ),
        );
      }
    } else if (c.check === 'string_format' && c.format === 'starts_with' && typeof c.prefix === 'string' && c.when === undefined) {
      const prefix = c.prefix;
      conds.push(cond((v) => (v as string).startsWith(prefix), (x, bind) => `${x}.startsWith(${bind(prefix)})`));
    } else if (c.check === 'string_format' && c.format === 'ends_with' && typeof c.suffix === 'string' && c.when === undefined) {
      const suffix = c.suffix;
      conds.push(cond((v) => (v as string).endsWith(suffix), (x, bind) => `${x}.endsWith(${bind(suffix)})`));
    } else if (c.check === 'string_format' && c.format === 'regex' && c.pattern instanceof RegExp && c.when === undefined) {
      const p = c.pattern;
      // lastIndex reset first, as zod does
      conds.push(cond((v) => ((p.lastIndex = 0), p.test(v as string)), (x, bind) => `(${bind(p)}.lastIndex = 0, ${bind(p)}.test(${x}))`));
    } else return undefined;
  }
  return conds;
}

/** A number's checks as conditions (after its type's), or undefined when one is of a kind not compiled here. */
function numberConds(checks: readonly CheckDef[]): Cond[] | undefined {
  const conds: Cond[] = [];
  for (const c of checks) {
    if (c.when !== undefined) return undefined;
    if (c.check === 'number_format' && c.format === 'safeint') conds.push(cond((v) => Number.isSafeInteger(v), (x) => `Number.isSafeInteger(${x})`));
    else if ((c.check === 'greater_than' || c.check === 'less_than') && typeof c.value === 'number') {
      const bound = c.value;
      const op = c.check === 'greater_than' ? (c.inclusive ? '>=' : '>') : c.inclusive ? '<=' : '<';
      const test: Test = op === '>=' ? (v) => (v as number) >= bound : op === '>' ? (v) => (v as number) > bound : op === '<=' ? (v) => (v as number) <= bound : (v) => (v as number) < bound;
      conds.push(cond(test, (x, bind) => `${x} ${op} ${bind(bound)}`));
    } else return undefined;
  }
  return conds;
}

export const checksOf = (s: Internals): CheckDef[] => (s.def.checks ?? []).map((c) => c._zod.def);

/** Whether every option of a union is decided exactly by its compiled path (a REFUSED means zod refuses it too). */
export const exact = (s: Internals): boolean => (s.def.type === 'literal' || s.def.type === 'enum') && !s.def.checks?.length && s.values !== undefined;

const ALWAYS: Test = () => true;
const notAnObject: Test = (v) => typeof v !== 'object' || v === null || Array.isArray(v);

/**
 * When zod refuses a value for sure, whatever else it holds — as a test of the value, or undefined
 * when the node has no such tell. An exact node: whenever its compiled path refuses. An object: a
 * value zod takes for no object (its isObject); a strict object, also one with an own enumerable key
 * its shape lacks (zod's unrecognized_keys: for…in sees every own enumerable string key, and no
 * refinement takes an issue back). An inclusive union: when each of its options surely refuses.
 * What lets a union skip asking zod (a refusal zod works out with issues and messages) for the
 * option a value plainly is not.
 */
export function surelyRefused(s: Internals): Test | undefined {
  const d = s.def;
  if (exact(s)) return ALWAYS;
  if (d.type === 'object') {
    const strict = d.catchall !== undefined && d.catchall._zod.def.type === 'never';
    if (!strict || !d.shape) return notAnObject;
    const known = new Set(Object.keys(d.shape));
    return (v) => {
      if (notAnObject(v)) return true;
      for (const k of Object.keys(v as object)) if (!known.has(k)) return true;
      return false;
    };
  }
  if (d.type === 'union' && d.discriminator === undefined && !s.traits.has('$ZodXor') && d.options?.length) {
    const tests: Test[] = [];
    for (const o of d.options) {
      const t = surelyRefused(o._zod);
      if (!t) return undefined;
      tests.push(t);
    }
    return (v) => tests.every((t) => t(v));
  }
  return undefined;
}

/**
 * A node that keeps its value as it is — a string, number, boolean, literal, enum, unknown or any,
 * or an optional one of these (absent stays undefined) — as the conditions it must meet
 * (`optional`: undefined passes too); undefined for any other node.
 */
function leafOf(s: Internals): { conds: Cond[]; optional: boolean } | undefined {
  const d = s.def;
  if (s.traits.has('$ZodCheck') || d.coerce) return undefined;
  switch (d.type) {
    case 'string': {
      const conds = stringConds(checksOf(s));
      return conds && { conds: [IS_STRING, ...conds], optional: false };
    }
    case 'number': {
      const conds = numberConds(checksOf(s));
      return conds && { conds: [IS_NUMBER, ...conds], optional: false };
    }
    case 'boolean':
      return d.checks?.length ? undefined : { conds: [IS_BOOLEAN], optional: false };
    case 'unknown':
    case 'any':
      return d.checks?.length ? undefined : { conds: [], optional: false };
    case 'literal':
    case 'enum': {
      const values = s.values;
      if (!values || d.checks?.length) return undefined;
      return { conds: [cond((v) => values.has(v), (x, bind) => `${bind(values)}.has(${x})`)], optional: false };
    }
    case 'optional': {
      const inner = d.innerType?._zod;
      // an exact optional, or one around a default, substitutes for absence: not a kept value
      if (!inner || d.checks?.length || s.traits.has('$ZodExactOptional') || inner.optin === 'defaulted') return undefined;
      const leaf = leafOf(inner);
      return leaf && { conds: leaf.conds, optional: true };
    }
    default:
      return undefined;
  }
}

/** The test of a node that keeps its value as it is (leafOf), or undefined for any other node. */
export function testOf(s: Internals): Test | undefined {
  const leaf = leafOf(s);
  if (!leaf) return undefined;
  const t = all(leaf.conds.map((c) => c.test));
  return leaf.optional ? (v) => v === undefined || t(v) : t;
}

/** testOf as a JavaScript expression over `x` (for generated code), or undefined for any other node. */
export function testSource(s: Internals, x: string, bind: (value: unknown) => string): string | undefined {
  const leaf = leafOf(s);
  if (!leaf) return undefined;
  const body = leaf.conds.map((c) => `(${c.src(x, bind)})`).join(' && ') || 'true';
  return leaf.optional ? `(${x} === undefined || ${body})` : `(${body})`;
}

/**
 * A node's refinements (`refine`, `superRefine`: checks of kind `custom`), run as zod runs them on
 * the parsed value; undefined when it has a check of another kind.
 */
export function refinements(s: Internals): ((payload: Payload) => unknown)[] | undefined {
  const checks = (s.def.checks ?? []) as readonly { _zod: { def: CheckDef; check(payload: Payload): unknown } }[];
  if (!checks.every((c) => c._zod.def.check === 'custom' && c._zod.def.when === undefined)) return undefined;
  return checks.map((c) => (payload: Payload) => c._zod.check(payload));
}

/** `path`, then the node's refinements on what it made: REFUSED if one adds an issue (or is async: zod's to throw). */
export function refined(path: Path, checks: ((payload: Payload) => unknown)[]): Path {
  if (checks.length === 0) return path;
  return (v) => {
    const value = path(v);
    if (value === REFUSED) return REFUSED;
    const payload: Payload = { value, issues: [] };
    for (const check of checks) if (check(payload) instanceof Promise || payload.issues.length) return REFUSED;
    return payload.value;
  };
}

/**
 * A zod schema's accepting path, compiled (`parse` in validation.ts runs it first): the plain
 * checks the items and options read on every poll are made of — types, lengths, patterns, bounds,
 * literals, enums, required, optional and defaulted keys, arrays, records, unions, custom checks and
 * refinements — run as straight JavaScript (an object's as generated code) and return exactly what
 * zod's own parse returns for a value it accepts. For anything else it returns REFUSED and `parse`
 * asks zod, which also words the issues: the compiled path only ever says yes where zod says yes,
 * with zod's output (the same keys in the same order), and says nothing about the rest. What it
 * does not know (a transform's body, a codec, a string format such as an email, a record over an
 * enumeration of keys) it hands to zod's own run of that part (compiled-leaves.ts' viaZod), as
 * zod's object parser itself does. zod stays the one source of
 * shapes; this reads zod's definitions of them (its `_zod` internals, pinned by the version in
 * package-lock.json and by test/schemas-compiled.test.ts, which compares the two paths).
 */
import * as z from 'zod';
import {
  LENGTH_WHEN,
  REFUSED,
  all,
  checksOf,
  surelyRefused,
  internals,
  refined,
  refinements,
  stringConds,
  testOf,
  testSource,
  viaZod,
  TYPE_STRING,
  type CheckDef,
  type Internals,
  type Path,
  type Payload,
  type Test,
} from './compiled-leaves.js';

export { REFUSED };

function compileNode(s: Internals): Path {
  const test = testOf(s);
  if (test) return (v) => (test(v) ? v : REFUSED);
  const d = s.def;
  if (d.type === 'custom') return compileCustom(s);
  if (d.type === 'string' && !d.coerce && !s.traits.has('$ZodCheck')) {
    // a string with refinements: its other checks compiled, then the refinements on it
    const checks = (d.checks ?? []) as readonly { _zod: { def: CheckDef; check(payload: Payload): unknown } }[];
    const plain = stringConds(checks.filter((c) => c._zod.def.check !== 'custom').map((c) => c._zod.def))?.map((c) => c.test);
    const custom = checks.filter((c) => c._zod.def.check === 'custom');
    if (plain && custom.every((c) => c._zod.def.when === undefined)) {
      const test = all([TYPE_STRING, ...plain]);
      return refined((v) => (test(v) ? v : REFUSED), custom.map((c) => (payload: Payload) => c._zod.check(payload)));
    }
  }
  // a schema that is itself a check (a string format such as z.iso.datetime()) is zod's to run
  if (s.traits.has('$ZodCheck') || d.coerce) return viaZod(s);
  switch (d.type) {
    case 'optional': {
      const inner = d.innerType?._zod;
      // an exact optional, or one around a default, substitutes for absence: zod's
      if (!inner || d.checks?.length || s.traits.has('$ZodExactOptional') || inner.optin === 'defaulted') return viaZod(s);
      const path = compileNode(inner);
      return (v) => (v === undefined ? undefined : path(v));
    }
    case 'object':
      return compileObject(s);
    case 'union':
      return compileUnion(s);
    case 'default': {
      // undefined is the default (zod does not validate it), anything else the inner's, its undefined the default
      const inner = d.innerType?._zod;
      if (!inner || d.checks?.length) return viaZod(s);
      const path = compileNode(inner);
      return (v) => {
        if (v === undefined) return d.defaultValue;
        const r = path(v);
        return r === REFUSED ? REFUSED : r === undefined ? d.defaultValue : r;
      };
    }
    case 'array':
      return compileArray(s);
    case 'record':
      return compileRecord(s);
    case 'pipe': {
      // `in`, then `out` on what it made (a transform runs as zod runs it): a codec is zod's
      const from = d.in?._zod;
      const to = d.out?._zod;
      if (!from || !to || d.checks?.length || s.traits.has('$ZodCodec')) return viaZod(s);
      const first = compileNode(from);
      const then = to.def.type === 'transform' ? viaZod(to) : compileNode(to);
      return (v) => {
        const r = first(v);
        return r === REFUSED ? REFUSED : then(r);
      };
    }
    default:
      return viaZod(s);
  }
}

/**
 * `z.custom(fn)` and the refinements on it: the value as it is when `fn` says yes (truthy, as zod
 * takes it) and every refinement adds no issue; REFUSED otherwise (a promise is zod's to throw).
 */
function compileCustom(s: Internals): Path {
  const d = s.def;
  const fn = d.fn;
  const checks = refinements(s);
  if (typeof fn !== 'function' || d.when !== undefined || !checks) return viaZod(s);
  return refined((v) => {
    const r = fn(v);
    return r instanceof Promise || !r ? REFUSED : v;
  }, checks);
}

/**
 * A record whose keys a constraint checks (not an enumeration of them): each own enumerable string
 * key and its value through their paths, in the order zod reads them (Reflect.ownKeys). Symbol
 * keys, a key the key path refuses (zod retries a numeric one as a number), and objects that are
 * not plain are zod's.
 */
function compileRecord(s: Internals): Path {
  const d = s.def;
  const keyType = d.keyType?._zod;
  const valueType = d.valueType?._zod;
  const checks = refinements(s);
  if (!keyType || !valueType || !checks || keyType.values !== undefined || d.mode === 'loose') return viaZod(s);
  const key = compileNode(keyType);
  const value = compileNode(valueType);
  return refined((v) => {
    if (typeof v !== 'object' || v === null || Array.isArray(v)) return REFUSED;
    const proto = Object.getPrototypeOf(v) as unknown;
    if (proto !== Object.prototype && proto !== null) return REFUSED;
    const out: Record<string, unknown> = {};
    for (const k of Reflect.ownKeys(v)) {
      if (typeof k !== 'string') return REFUSED;
      if (k === '__proto__' || !Object.prototype.propertyIsEnumerable.call(v, k)) continue;
      const outKey = key(k);
      if (typeof outKey !== 'string') return REFUSED; // refused, or made into a non-string
      if (outKey === '__proto__') continue;
      const r = value((v as Record<string, unknown>)[k]);
      if (r === REFUSED) return REFUSED;
      out[outKey] = r;
    }
    return out;
  }, checks);
}

/** An array: each element's path into a new array, then its length checks (zod's own when-has-length checks only). */
function compileArray(s: Internals): Path {
  const d = s.def;
  const el = d.element?._zod;
  const lengths: Test[] = [];
  for (const c of checksOf(s)) {
    if (c.when !== LENGTH_WHEN) return viaZod(s);
    if (c.check === 'min_length' && typeof c.minimum === 'number') {
      const min = c.minimum;
      lengths.push((v) => (v as unknown[]).length >= min);
    } else if (c.check === 'max_length' && typeof c.maximum === 'number') {
      const max = c.maximum;
      lengths.push((v) => (v as unknown[]).length <= max);
    } else return viaZod(s);
  }
  if (!el) return viaZod(s);
  const path = compileNode(el);
  return (v) => {
    if (!Array.isArray(v)) return REFUSED;
    const out = new Array<unknown>(v.length);
    for (let i = 0; i < v.length; i++) {
      const r = path(v[i]);
      if (r === REFUSED) return REFUSED;
      out[i] = r;
    }
    for (const t of lengths) if (!t(out)) return REFUSED;
    return out;
  };
}

/** One key of an object: how zod's object parser treats it (by its optin and optout), and its compiled path. */
interface Key {
  readonly key: string;
  readonly path: Path;
  /** `optional`: optional in and out; `required`: neither; `optionalIn`: only in (a default). */
  readonly kind: 'optional' | 'required' | 'optionalIn';
  readonly optin: string | undefined;
  /** The node itself (its test is written into the generated code when it keeps its value as it is). */
  readonly node: Internals;
}

function compileObject(s: Internals): Path {
  const d = s.def;
  const shape = d.shape;
  const strict = d.catchall !== undefined && d.catchall._zod.def.type === 'never';
  const checks = refinements(s);
  if (!shape || !checks || (d.catchall !== undefined && !strict) || Object.getOwnPropertySymbols(shape).length) return viaZod(s);
  const names = Object.keys(shape);
  if (names.includes('__proto__')) return viaZod(s);
  const keys: Key[] = names.map((key) => {
    const el = shape[key]!._zod;
    const optin = el.optin;
    const kind = optin !== undefined && el.optout === 'optional' ? 'optional' : optin === undefined ? 'required' : 'optionalIn';
    return { key, path: compileNode(el), kind, optin, node: el };
  });
  const known = new Set(names);
  return refined((generating ? generatedObject(keys, strict, known) : undefined) ?? closureObject(keys, strict, known), checks);
}

/**
 * The object's path as JavaScript of its own (`new Function`): a call site per key, so each key's
 * path is called from a site that only ever calls it (V8 inlines it) rather than from one loop
 * that calls them all; about twice as fast on the items every poll reads. Undefined where code
 * cannot be generated (a runtime that forbids it): closureObject then, which does the same.
 */
function generatedObject(keys: readonly Key[], strict: boolean, known: ReadonlySet<string>): Path | undefined {
  const constants: unknown[] = [];
  const bind = (value: unknown): string => {
    let i = constants.indexOf(value);
    if (i < 0) i = constants.push(value) - 1;
    return `c${i}`;
  };
  const lines = ['if (typeof v !== "object" || v === null || Array.isArray(v)) return R;'];
  if (strict) lines.push('for (const k in v) if (!known.has(k)) return R;');
  lines.push('const out = {}; let r; let x;');
  keys.forEach((k, i) => {
    const key = JSON.stringify(k.key);
    // a key whose value is kept as it is: its test written here (no call), else its path called
    const test = k.kind === 'required' || (k.kind === 'optional' && k.optin === 'optional') ? testSource(k.node, 'x', bind) : undefined;
    if (test !== undefined) {
      const check = `x = v[${key}]; if (!${test}) return R; out[${key}] = x;`;
      lines.push(k.kind === 'required' ? `if (!(${key} in v)) return R; ${check}` : `if (${key} in v) { ${check} }`);
      return;
    }
    const run = `r = p${i}(v[${key}]); if (r === R) return R;`;
    if (k.kind === 'required') lines.push(`if (!(${key} in v)) return R; ${run} out[${key}] = r;`);
    else if (k.kind === 'optional' && k.optin === 'optional') lines.push(`if (${key} in v) { ${run} out[${key}] = r; }`);
    else if (k.kind === 'optional') lines.push(`{ const present = ${key} in v; ${run} if (present || r !== undefined) out[${key}] = r; }`);
    else if (k.optin === 'defaulted') lines.push(`{ ${run} out[${key}] = r; }`);
    else lines.push(`{ const present = ${key} in v; ${run} if (r !== undefined || present) out[${key}] = r; }`);
  });
  lines.push('return out;');
  const params = [...keys.map((_, i) => `p${i}`), ...constants.map((_, i) => `c${i}`)];
  try {
    // the code is made above from the schema's own key names, each written as a JSON string
    // literal, and from the tests' sources (compiled-leaves.ts), their constants passed in
    const make = new Function('R', 'known', ...params, `return function compiledObject(v) {\n${lines.join('\n')}\n};`) as (...a: unknown[]) => Path;
    return make(REFUSED, known, ...keys.map((k) => k.path), ...constants);
  } catch {
    return undefined;
  }
}

function closureObject(keys: readonly Key[], strict: boolean, known: ReadonlySet<string>): Path {
  return (v) => {
    if (typeof v !== 'object' || v === null || Array.isArray(v)) return REFUSED;
    const input = v as Record<string, unknown>;
    if (strict) for (const k in input) if (!known.has(k)) return REFUSED;
    const out: Record<string, unknown> = {};
    // as zod's object parser (its compiled fast path) keeps a key, in the shape's order
    for (const k of keys) {
      const present = k.key in input;
      if (k.kind === 'required') {
        if (!present) return REFUSED;
        const r = k.path(input[k.key]);
        if (r === REFUSED) return REFUSED;
        out[k.key] = r;
      } else if (k.kind === 'optional') {
        if (!present && k.optin === 'optional') continue; // absent: nothing, whatever zod made of undefined
        const r = k.path(input[k.key]);
        if (r === REFUSED) return REFUSED;
        if (present || r !== undefined) out[k.key] = r;
      } else {
        const r = k.path(input[k.key]);
        if (r === REFUSED) return REFUSED;
        if (k.optin === 'defaulted' || r !== undefined || present) out[k.key] = r;
      }
    }
    return out;
  };
}

function compileUnion(s: Internals): Path {
  const d = s.def;
  const options = d.options ?? [];
  if (d.checks?.length || options.length === 0) return viaZod(s);
  if (d.discriminator === undefined) {
    // the first option zod accepts (an inclusive union): an option the compiled path refuses is
    // asked of zod, unless its refusal is zod's for sure (surelyRefused: a literal or enum; an
    // object, of a value that is no object or has a key a strict one lacks), so no later option
    // answers for one zod would have taken
    if (s.traits.has('$ZodXor')) return viaZod(s);
    const paths = options.map((o) => ({ path: compileNode(o._zod), zod: viaZod(o._zod), sure: surelyRefused(o._zod) }));
    return (v) => {
      for (const o of paths) {
        const r = o.path(v);
        if (r !== REFUSED) return r;
        if (o.sure?.(v)) continue;
        const z = o.zod(v);
        if (z !== REFUSED) return z;
      }
      return REFUSED;
    };
  }
  // a discriminated union: the option its discriminator's value names, as zod picks it
  if (d.unionFallback) return viaZod(s);
  const disc = d.discriminator;
  const byValue = new Map<unknown, Path | null>();
  for (const o of options) {
    const values = o._zod.propValues?.[disc];
    if (!values || values.size === 0) return viaZod(s);
    const path = compileNode(o._zod);
    for (const value of values) byValue.set(value, byValue.has(value) ? null : path);
  }
  return (v) => {
    if (typeof v !== 'object' || v === null || Array.isArray(v)) return REFUSED;
    const path = byValue.get((v as Record<string, unknown>)[disc]);
    return path ? path(v) : REFUSED;
  };
}

const compiled = new WeakMap<z.ZodType, Path>();
/** Whether objects are compiled to generated code (off only for acceptedWithoutCodegen). */
let generating = true;
const withoutCodegen = new WeakMap<z.ZodType, Path>();

/**
 * `accepted` as it is where code cannot be generated (a runtime that forbids it): objects by
 * closures. For the test that holds both ways to zod. @internal
 */
export function acceptedWithoutCodegen(schema: z.ZodType, raw: unknown): unknown {
  let path = withoutCodegen.get(schema);
  if (!path) {
    generating = false;
    try {
      path = compileNode(internals(schema));
    } finally {
      generating = true;
    }
    withoutCodegen.set(schema, path);
  }
  return path(raw);
}

/**
 * What zod's parse of `raw` with `schema` returns if zod accepts it and the compiled path can tell;
 * REFUSED otherwise (zod may still accept it: ask zod).
 */
export function accepted(schema: z.ZodType, raw: unknown): unknown {
  let path = compiled.get(schema);
  if (!path) {
    path = compileNode(internals(schema));
    compiled.set(schema, path);
  }
  return path(raw);
}

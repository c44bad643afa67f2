/**
 * The compiled accepting path (lib/schemas/compiled.ts) against zod itself: wherever it answers,
 * zod accepts the value and returns the same output (the same keys, in the same order, undefined
 * ones included); `parse` answers exactly as zod does everywhere (the same output, or a
 * ValidationError with the same issues). Values: the schemas' own items and thousands of
 * deterministic mutations of them (keys dropped, set undefined, of the wrong type, at and past their
 * bounds, strings with surrogates, unknown keys), and small schemas for each path of the compiler.
 */
import { describe, expect, it } from 'vitest';
import * as z from 'zod';
import { seededRandom } from '../lib/clock.js';
import { LedgerEntry } from '../lib/history/schema.js';
import { CandidateItem } from '../lib/schemas/candidate.js';
import { REFUSED, accepted, acceptedWithoutCodegen } from '../lib/schemas/compiled.js';
import { IdentityLeaseItem } from '../lib/schemas/identity.js';
import { LeaseItem } from '../lib/schemas/lease.js';
import { ValidationError, issuesOf, parse } from '../lib/schemas/validation.js';

/** Equal, with own keys in the same order (undefined-valued ones included) all the way down. */
function same(a: unknown, b: unknown): boolean {
  if (Object.is(a, b)) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false;
  if (Array.isArray(a) !== Array.isArray(b) || Object.getPrototypeOf(a) !== Object.getPrototypeOf(b)) return false;
  const ka = Reflect.ownKeys(a);
  const kb = Reflect.ownKeys(b);
  return ka.length === kb.length && ka.every((k, i) => k === kb[i] && same((a as Record<PropertyKey, unknown>)[k], (b as Record<PropertyKey, unknown>)[k]));
}

/** What `parse` made of `v`: its output, or its error's message and issues. */
function outcome(schema: z.ZodType, v: unknown): { ok: true; value: unknown } | { ok: false; message: string; issues: unknown } {
  try {
    return { ok: true, value: parse(schema, v, 'it') };
  } catch (e) {
    if (!(e instanceof ValidationError)) throw e;
    return { ok: false, message: e.message, issues: e.issues };
  }
}

/** zod's own answer, worded as `parse` words it. */
function zodOutcome(schema: z.ZodType, v: unknown): ReturnType<typeof outcome> {
  const r = schema.safeParse(v);
  if (r.success) return { ok: true, value: r.data };
  const e = new ValidationError('it', issuesOf(r.error));
  return { ok: false, message: e.message, issues: e.issues };
}

/** Checks one value both ways; returns whether the compiled path answered. */
function agree(schema: z.ZodType, v: unknown): boolean {
  const fast = accepted(schema, v);
  // the closures (where code cannot be generated) answer exactly as the generated code does
  const closures = acceptedWithoutCodegen(schema, v);
  expect(closures === REFUSED, `generated code and closures differ on ${JSON.stringify(v)}`).toBe(fast === REFUSED);
  if (fast !== REFUSED) expect(same(closures, fast)).toBe(true);
  const z1 = schema.safeParse(v);
  if (fast !== REFUSED) {
    expect(z1.success, `compiled path accepted what zod refuses: ${JSON.stringify(v)}`).toBe(true);
    expect(same(fast, z1.data), `outputs differ for ${JSON.stringify(v)}: ${JSON.stringify(fast)} vs ${JSON.stringify(z1.data)}`).toBe(true);
  }
  const p = outcome(schema, v);
  const want = zodOutcome(schema, v);
  expect(p.ok).toBe(want.ok);
  if (p.ok && want.ok) expect(same(p.value, want.value)).toBe(true);
  else expect(p).toEqual(want);
  return fast !== REFUSED;
}

const lease = {
  name: 'job-0',
  holderIdentity: 'w1',
  holderInstance: 'w1_0123456789abcdef',
  holderPlatform: { kind: 'ecs', id: 'arn:aws:ecs:us-east-1:000000000000:task/sim/w1-1', cluster: 'arn:aws:ecs:us-east-1:000000000000:cluster/sim' },
  holderPlatformId: 'arn:aws:ecs:us-east-1:000000000000:task/sim/w1-1',
  leaseDurationSeconds: 15,
  acquireTime: 1_800_000_000_000,
  renewTime: 1_800_000_005_000,
  leaseTransitions: 3,
  fencingToken: 1_800_000_000_001_000,
  electedBy: 'self',
  election: { id: 'e-1', startedAt: 1_800_000_000_000, deadline: 1_800_000_002_000, strategy: 'OldestEmulationVersion', holder: 'w2' },
  vacancyReport: { by: 'w3', at: 1_800_000_000_000, observedRevision: 16 },
  termToken: 4,
  renewalMark: 1,
  preferredLocations: ['us-east-1a'],
  runs: [{ window: 'w', fencingToken: 3, holder: 'w1', at: 5 }],
  revision: 17,
};
const identity = {
  component: 'conclave-session',
  name: 'w1-s',
  holderIdentity: 'w1_abc',
  hostname: 'host',
  leaseDurationSeconds: 15,
  acquireTime: 1_800_000_000_000,
  renewTime: 1_800_000_005_000,
  labels: { a: 'b' },
  endedTerms: { 'job-0': 3 },
  revision: 2,
  expiresAt: 1_800_000_100,
};
const ledger = { lease: 'job-0', id: 'w1_x#1', identity: 'w1', instance: 'w1_x', fencingToken: 7, sentMono: '123', zombie: false, window: 'period-3' };

/** Replacement values for a field, from the boundaries of every kind of check the schemas use. */
const ODD: unknown[] = [
  undefined,
  null,
  '',
  'x',
  'w1',
  '\uD83D\uDE00',
  '\uD83D',
  'a'.repeat(253),
  'a'.repeat(254),
  ' bad name',
  0,
  -1,
  1,
  1.5,
  -0,
  Number.NaN,
  Number.POSITIVE_INFINITY,
  Number.MAX_SAFE_INTEGER,
  Number.MAX_SAFE_INTEGER + 2,
  253_402_300_799_999,
  253_402_300_800_000,
  86_400,
  86_401,
  2,
  3,
  true,
  false,
  [],
  ['us-east-1a', 'us-east-1a'],
  {},
  { kind: 'ec2', id: 'i-51a00001' },
  { kind: 'ec2', id: 'i-51a00001', extra: 1 },
  { kind: 'lambda' },
  'self',
  'coordinator',
  'OldestEmulationVersion',
];

/** Deterministic mutations of `base`: each field dropped, set to each odd value, nested fields too, unknown keys added. */
function* mutations(base: Record<string, unknown>, seed: number): Generator<unknown> {
  yield base;
  yield { ...base };
  const random = seededRandom(seed);
  for (const k of Object.keys(base)) {
    const { [k]: _, ...without } = base;
    yield without;
    for (const v of ODD) yield { ...base, [k]: v };
    const inner = base[k];
    if (inner && typeof inner === 'object' && !Array.isArray(inner))
      for (const ik of Object.keys(inner)) for (const v of ODD) yield { ...base, [k]: { ...(inner as Record<string, unknown>), [ik]: v } };
  }
  yield { ...base, unknownKey: 1 };
  yield Object.assign(Object.create({ inherited: 1 }) as object, base);
  // a few hundred random combinations of several changes at once
  const keys = Object.keys(base);
  for (let i = 0; i < 400; i++) {
    const v: Record<string, unknown> = { ...base };
    for (let j = 0; j < 1 + Math.floor(random() * 3); j++) {
      const k = keys[Math.floor(random() * keys.length)]!;
      if (random() < 0.3) delete v[k];
      else v[k] = ODD[Math.floor(random() * ODD.length)];
    }
    yield v;
  }
  yield null;
  yield [];
  yield 'a string';
}

describe('the compiled accepting path', () => {
  it.each([
    { name: 'LeaseItem', schema: LeaseItem, base: lease },
    { name: 'IdentityLeaseItem', schema: IdentityLeaseItem, base: identity },
    { name: 'LedgerEntry', schema: LedgerEntry, base: ledger },
  ])('$name: wherever it answers, zod accepts and returns the same; parse answers as zod does', ({ schema, base }) => {
    let answered = 0;
    let n = 0;
    for (const v of mutations(base as Record<string, unknown>, 7)) {
      n++;
      if (agree(schema, v)) answered++;
    }
    expect(accepted(schema, base)).not.toBe(REFUSED); // the items themselves take the compiled path
    expect(answered).toBeGreaterThan(n / 10);
  });

  it('CandidateItem, as its rows are read', () => {
    const row = { leaseName: 'job-0', name: 'w1', binaryVersion: '1.30.0', emulationVersion: '1.30.0', renewTime: 1_800_000_000_000, pingTime: 1_800_000_000_000, revision: 3 };
    for (const v of mutations(row, 11)) agree(CandidateItem, v);
  });

  // each path of the compiler, on a schema of its own
  const cases: { name: string; schema: z.ZodType; values: unknown[] }[] = [
    { name: 'min length counts code points', schema: z.string().min(2), values: ['ab', 'a', '\uD83D\uDE00', '\uD83D\uDE00\uD83D\uDE00', 'a\uD83D', '\uDE00\uD83D', 'abc'] },
    { name: 'max length counts code points', schema: z.string().max(2), values: ['ab', 'abc', '\uD83D\uDE00\uD83D\uDE00', '\uD83D\uDE00a'] },
    { name: 'a global pattern', schema: z.string().regex(/a/g), values: ['a', 'a', 'b', 'ba'] },
    { name: 'a string format', schema: z.iso.datetime({ offset: true }), values: ['2026-11-24T00:00:00Z', 'x'] },
    { name: 'a coerced number', schema: z.coerce.number().int(), values: ['3', 3, 'x'] },
    { name: 'exclusive bounds', schema: z.number().gt(0).lt(10), values: [0, 0.1, 9.9, 10, -0] },
    { name: 'a literal union', schema: z.union([z.literal(1), z.literal(2)]), values: [1, 2, 3, '1'] },
    { name: 'a union of objects, first wins', schema: z.union([z.object({ a: z.string() }), z.object({ a: z.string(), b: z.number() })]), values: [{ a: 'x', b: 1 }, { a: 1 }] },
    {
      name: 'a union of objects and enums, zod asked of what the compiled path cannot tell',
      schema: z.union([z.object({ a: z.string().min(2) }), z.object({ a: z.string() }).transform((o) => ({ ...o, second: true })), z.enum(['x', 'y'])]),
      values: [{ a: 'ab' }, { a: 'a' }, { a: '\uD83D\uDE00' }, 'x', 'z', { a: 1 }, null, ['x']],
    },
    {
      name: 'records',
      schema: z.object({ r: z.record(z.string().min(1).max(3), z.number().int()), u: z.record(z.string(), z.unknown()).optional() }),
      values: [{ r: {} }, { r: { a: 1, b: 2 } }, { r: { abcd: 1 } }, { r: { '': 1 } }, { r: { a: 1.5 } }, { r: { 1: 1, a: 2 } }, { r: [] }, { r: null }, { r: { a: 1 }, u: { x: undefined, y: { z: 1 } } }, { r: Object.create(null) as object }, { r: new Map() }],
    },
    { name: 'a record with an enum of keys', schema: z.record(z.enum(['a', 'b']), z.number()), values: [{ a: 1, b: 2 }, { a: 1 }, { a: 1, b: 2, c: 3 }] },
    { name: 'a record refined', schema: z.record(z.string(), z.number()).refine((r) => Object.keys(r).length < 2, 'at most one'), values: [{ a: 1 }, { a: 1, b: 2 }] },
    { name: 'a record with symbol keys', schema: z.record(z.string(), z.number()), values: [{ [Symbol('s')]: 1, a: 2 }] },
    { name: 'strings that start and end with', schema: z.object({ s: z.string().startsWith('ab').endsWith('yz') }), values: [{ s: 'abyz' }, { s: 'ab' }, { s: 'xyz' }, { s: 'abcyz' }] },
    { name: 'a refined string', schema: z.object({ s: z.string().min(1).refine((v) => v !== 'no', 'not no') }), values: [{ s: 'yes' }, { s: 'no' }, { s: '' }, { s: 1 }] },
    {
      name: 'a union of strict objects, unions and enums (a key a strict option lacks, or a string, is its refusal)',
      schema: z.union([
        z.strictObject({ every: z.enum(['day', 'hour']), at: z.string().optional() }),
        z.union([z.strictObject({ kind: z.literal('a') }), z.strictObject({ kind: z.literal('b'), x: z.number() })]),
        z.object({ window: z.string().min(1) }),
        z.enum(['none', 'detect']),
      ]),
      values: [{ every: 'day' }, { window: 'w' }, { window: 'w', extra: 1 }, { window: '' }, { every: 'day', window: 'w' }, { every: 'week' }, 'none', 'x', { kind: 'a' }, { kind: 'b', x: 1 }, { kind: 'b' }, { kind: 'a', window: 'w' }, Object.create({ every: 'day' }) as object, Object.assign(Object.create({ extra: 1 }) as object, { every: 'day' }), JSON.parse('{"__proto__": 1, "every": "day"}') as object, [], null],
    },
    { name: 'an exclusive union', schema: z.xor([z.literal(1), z.number()]), values: [1, 2] },
    {
      name: 'a discriminated union',
      schema: z.discriminatedUnion('kind', [z.strictObject({ kind: z.literal('a'), x: z.number() }), z.object({ kind: z.literal('b'), y: z.string().optional() })]),
      values: [{ kind: 'a', x: 1 }, { kind: 'a', x: 1, z: 2 }, { kind: 'b' }, { kind: 'b', y: undefined }, { kind: 'c' }, {}],
    },
    { name: 'defaults', schema: z.object({ a: z.boolean().default(false), b: z.string().default('x').optional(), c: z.number().optional().default(3) }), values: [{}, { a: true }, { b: undefined }, { c: undefined }, { a: undefined, b: 'y', c: 1 }] },
    { name: 'an exact optional', schema: z.object({ a: z.string().exactOptional() }), values: [{}, { a: 'x' }, { a: undefined }] },
    { name: 'nullable', schema: z.object({ a: z.string().nullable() }), values: [{ a: null }, { a: 'x' }, {}] },
    { name: 'refined object', schema: z.strictObject({ a: z.number(), b: z.number() }).refine((o) => o.a < o.b, 'a < b'), values: [{ a: 1, b: 2 }, { a: 2, b: 1 }, { a: 1, b: 2, c: 3 }] },
    { name: 'superRefined object', schema: z.object({ a: z.number() }).superRefine((o, ctx) => void (o.a > 5 && ctx.addIssue({ code: 'custom', path: ['a'], message: 'too big' }))), values: [{ a: 1 }, { a: 6 }] },
    { name: 'a transform inside', schema: z.object({ a: z.string().transform((s) => s.length) }), values: [{ a: 'abc' }, { a: 1 }] },
    { name: 'a record inside', schema: z.object({ r: z.record(z.string(), z.number()).optional() }), values: [{ r: { a: 1 } }, { r: { a: 'x' } }, {}] },
    { name: 'passthrough', schema: z.looseObject({ a: z.number() }), values: [{ a: 1, b: 2 }] },
    { name: 'a required unknown', schema: z.object({ a: z.unknown() }), values: [{}, { a: undefined }, { a: 1 }] },
    { name: 'an array', schema: z.object({ l: z.array(z.number()).max(2) }), values: [{ l: [1] }, { l: [1, 2, 3] }, { l: 'x' }] },
    { name: 'defaults of every kind', schema: z.object({ b: z.boolean().default(false), n: z.number().int().default(3), e: z.enum(['a', 'b']).default('a'), u: z.union([z.literal(1), z.literal(2)]).default(2), l: z.array(z.string()).default(() => ['x']), o: z.object({ x: z.number() }).default({ x: 1 }) }), values: [{}, { b: true, n: 4, e: 'b', u: 1, l: [], o: { x: 2 } }, { b: 'no' }, { n: 1.5 }, { e: 'c' }, { l: [1] }, { o: {} }, { b: undefined, o: undefined }] },
    { name: 'a default around an optional', schema: z.object({ d: z.string().optional().default('x') }), values: [{}, { d: undefined }, { d: 'y' }, { d: 1 }] },
    { name: 'arrays with bounds', schema: z.object({ a: z.array(z.object({ k: z.string().min(1) })).min(1).max(2) }), values: [{ a: [] }, { a: [{ k: 'x' }] }, { a: [{ k: 'x' }, { k: 'y' }] }, { a: [{ k: 'x' }, { k: 'y' }, { k: 'z' }] }, { a: [{ k: '' }] }, { a: [{}] }, { a: 'x' }, { a: [{ k: 'x', extra: 1 }] }] },
    { name: 'an array of exact length', schema: z.array(z.number()).length(2), values: [[1, 2], [1], [1, 2, 3]] },
    { name: 'an array with holes', schema: z.array(z.number().optional()), values: [[1, undefined, 3], [, 2], []] },
    { name: 'a pipe into a transform', schema: z.string().min(1).optional().transform((v) => (v ?? 'none').toUpperCase()), values: ['a', '', undefined, 1] },
    { name: 'a pipe into a schema', schema: z.object({ p: z.string().pipe(z.string().max(2)) }), values: [{ p: 'ab' }, { p: 'abc' }, { p: 1 }] },
    {
      name: 'a transform that adds an issue',
      schema: z.number().transform((n, ctx) => {
        if (n > 5) ctx.addIssue({ code: 'custom', message: 'too big' });
        return n * 2;
      }),
      values: [1, 6, 'x'],
    },
    { name: 'a codec', schema: z.codec(z.string(), z.number(), { decode: (s) => Number(s), encode: (n) => String(n) }), values: ['3', 'x', 3] },
    { name: 'a custom check (truthy passes)', schema: z.custom<unknown>((v) => (typeof v === 'number' ? v : typeof v === 'string')), values: [1, 0, 'x', null, undefined, {}] },
    {
      name: 'a custom check refined',
      schema: z.object({ t: z.custom<string>((v) => typeof v === 'string').superRefine((v, ctx) => void (v === 'bad' && ctx.addIssue({ code: 'custom', message: 'bad' }))).optional() }),
      values: [{ t: 'ok' }, { t: 'bad' }, { t: 1 }, {}, { t: undefined }],
    },
  ];
  it.each(cases)('$name', ({ schema, values }) => {
    for (const v of values) agree(schema, v);
  });

  it('a union asks zod nothing of an option a value plainly is not (a strict one’s unknown key, a string for objects)', () => {
    const first = z.strictObject({ every: z.enum(['day']), at: z.string().optional() });
    const objects = z.union([z.strictObject({ kind: z.literal('a') }), z.strictObject({ kind: z.literal('b') })]);
    const schema = z.union([first, objects, z.strictObject({ window: z.string() }), z.enum(['none'])]);
    const asked: unknown[] = [];
    for (const s of [first, objects]) {
      const zod = (s as unknown as { _zod: { run: (p: { value: unknown }, ctx: unknown) => unknown } })._zod;
      const run = zod.run.bind(zod);
      zod.run = (p, ctx) => (asked.push(p.value), run(p, ctx));
    }
    expect(accepted(schema, { window: 'w' })).toEqual({ window: 'w' });
    expect(accepted(schema, 'none')).toBe('none');
    expect(asked).toEqual([]);
    // an object a strict option's shape covers but whose values the compiled path cannot take: asked
    expect(accepted(schema, { every: 'week' })).toBe(REFUSED);
    expect(asked.length).toBeGreaterThan(0);
  });

  it('an object of every kind the compiler knows answers on the accepting path, with zod’s output', () => {
    const schema = z.object({
      b: z.boolean().default(false),
      l: z.array(z.object({ k: z.string().min(1) })).min(1).max(2),
      c: z.custom<string>((v) => typeof v === 'string'),
      t: z.string().transform((v) => v.length),
      r: z.record(z.string(), z.unknown()),
      s: z.string().startsWith('a').refine((v) => v.length < 5),
      u: z.union([z.object({ p: z.number() }), z.enum(['none'])]),
    });
    const v = { l: [{ k: 'x' }], c: 'y', t: 'abc', r: { a: 1 }, s: 'ab', u: 'none' };
    expect(accepted(schema, v)).toEqual({ b: false, l: [{ k: 'x' }], c: 'y', t: 3, r: { a: 1 }, s: 'ab', u: 'none' });
  });

  it('a custom check with an async function is zod’s to refuse (it throws)', () => {
    const schema = z.custom<unknown>(async () => true);
    expect(accepted(schema, 1)).toBe(REFUSED);
    expect(() => schema.parse(1)).toThrow(/Promise/);
    expect(() => parse(schema, 1, 'it')).toThrow(/Promise/);
  });
});

import * as z from 'zod';

/** One bad field of a ValidationError, and what it should be. */
export interface FieldIssue {
  /** Dotted path of the field, e.g. `election.deadline`; `(root)` for the whole value. */
  readonly field: string;
  /** What is wrong with it and what it should be, e.g. `must be >= 1000 ms`. */
  readonly message: string;
}

/** Issues a ValidationError's message lists; the rest it counts ("and 15 more issues"). */
export const LISTED_ISSUES = 10;
/** Issues a ValidationError keeps: a row of thousands of bad entries is not kept, nor logged, whole. */
export const KEPT_ISSUES = 100;
/** Characters of a key in a field's path or a message (a label name, an unknown attribute) shown: the rest is counted. */
export const MAX_KEY = 64;
/** Characters of an issue's field, and of its message, a ValidationError keeps. */
export const MAX_ISSUE_TEXT = 1_000;

/**
 * `s` cut to `max` characters, the cut told with how many went (`...(+300 chars)`): what a message
 * shows of a string written by someone else, so that its size is not theirs to choose.
 */
export function cut(s: string, max: number): string {
  if (s.length <= max) return s;
  const n = /[\uD800-\uDBFF]/.test(s[max - 1]!) ? max - 1 : max; // not half a character
  return `${s.slice(0, n)}...(+${s.length - n} chars)`;
}

/** The total count of each kept list of issues, so that an error rethrown with another's `issues` counts as it did. */
const counts = new WeakMap<readonly FieldIssue[], number>();

/**
 * Of `issues`, the ones a ValidationError keeps, in their order: the first of each top-level field
 * before any second, so that `fields` names every top-level field at fault (what callers compare:
 * `renewTime`, `session`), however many issues one of them (a map of labels) has.
 */
function kept(issues: readonly FieldIssue[]): FieldIssue[] {
  if (issues.length <= KEPT_ISSUES) return issues.map(clipped);
  const chosen = new Set<number>();
  const tops = new Set<string>();
  issues.forEach((i, n) => {
    const top = i.field.split(/[.[]/)[0]!;
    if (chosen.size < KEPT_ISSUES && !tops.has(top)) (tops.add(top), chosen.add(n));
  });
  for (let n = 0; n < issues.length && chosen.size < KEPT_ISSUES; n++) chosen.add(n);
  return [...chosen].sort((a, b) => a - b).map((n) => clipped(issues[n]!));
}

const clipped = (i: FieldIssue): FieldIssue =>
  i.field.length <= MAX_ISSUE_TEXT && i.message.length <= MAX_ISSUE_TEXT ? i : { field: cut(i.field, MAX_ISSUE_TEXT), message: cut(i.message, MAX_ISSUE_TEXT) };

/**
 * Input that does not match its schema: an item read from a table, an event, a configuration or a
 * CLI argument. The message names each offending field and what it should be: the first
 * LISTED_ISSUES of them, then how many more, so that a row of many bad entries makes no message as
 * large as itself (logged by every tick that reads it).
 */
export class ValidationError extends Error {
  /** Always `ValidationError`. */
  override readonly name = 'ValidationError';
  /** Each bad field and what it should be: the first KEPT_ISSUES, with every top-level field at fault among them. */
  readonly issues: readonly FieldIssue[];
  /** How many issues the input has: more than `issues` holds when there were over KEPT_ISSUES. */
  readonly count: number;
  constructor(
    /** What was being read, e.g. `lease "jobs"` or `LeaderElector options`. */
    readonly subject: string,
    /** Each bad field and what it should be. */
    issues: readonly FieldIssue[],
  ) {
    const count = Math.max(counts.get(issues) ?? 0, issues.length);
    const keep = kept(issues);
    const more = count - Math.min(keep.length, LISTED_ISSUES);
    const listed = keep.slice(0, LISTED_ISSUES).map((i) => `${i.field}: ${i.message}`);
    super(`invalid ${subject}: ${[...listed, ...(more > 0 ? [`and ${more} more issue${more === 1 ? '' : 's'}`] : [])].join('; ')}`);
    this.issues = keep;
    this.count = count;
    counts.set(keep, count);
  }

  /** The offending field names, e.g. ['renewTime', 'priority']. */
  get fields(): string[] {
    return this.issues.map((i) => i.field);
  }
}

/** A field's dotted path, each key in it cut to MAX_KEY characters (a label name may be 64 KB). */
const fieldOf = (path: readonly PropertyKey[]): string =>
  path.length === 0 ? '(root)' : path.map((p) => (typeof p === 'number' ? `[${p}]` : cut(String(p), MAX_KEY))).join('.').replace(/\.\[/g, '[');

/** Between the parts of an unknown-keys message, one part a key (FIXES and optionErrors join them so). */
export const KEY_PARTS = '; ';

export function issuesOf(error: z.ZodError): FieldIssue[] {
  return error.issues.flatMap((i) => {
    if (i.code !== 'unrecognized_keys') return [{ field: fieldOf(i.path), message: i.message }];
    // each unknown key under its own name inside the object it belongs to (`(root)` named no field,
    // and two typos shared one label), with its own part of the message
    const parts = i.message.split(KEY_PARTS);
    // (an empty key has no name to show: the object it belongs to)
    return i.keys.map((k, n) => ({ field: fieldOf(k === '' ? i.path : [...i.path, k]), message: parts.length === i.keys.length ? parts[n]! : i.message }));
  });
}

/** What a user writes for each of zod's expected types. */
const WANTED: Record<string, string> = { string: 'a string', number: 'a number', int: 'a whole number', boolean: 'true or false', array: 'a list', object: 'an object', function: 'a function', bigint: 'a bigint', date: 'a Date', symbol: 'a symbol' };

/** A value as a message shows it: its kind, and a short one itself. */
export function shown(v: unknown): string {
  if (v === null) return 'null';
  if (typeof v === 'string') return `the string ${JSON.stringify(v.length > 40 ? `${v.slice(0, 37)}...` : v)}`;
  if (typeof v === 'number' || typeof v === 'boolean' || typeof v === 'bigint') return `the ${typeof v} ${String(v)}`;
  if (Array.isArray(v)) return 'a list';
  return typeof v === 'object' ? 'an object' : `a ${typeof v}`;
}

/**
 * Levenshtein distance: how many single letters to insert, delete or change to make `a` into `b`,
 * one row of the table at a time. For "did you mean …?" hints (a misspelt option, flag or prefix).
 */
export function editDistance(a: string, b: string): number {
  let row = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const next = [i];
    for (let j = 1; j <= b.length; j++) next.push(Math.min(row[j]! + 1, next[j - 1]! + 1, row[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1)));
    row = next;
  }
  return row[b.length]!;
}

/** What to say of an unknown key: the known key it was likely meant as, else the known keys (none known: nothing). */
export function unknownKeyHint(key: string, known: readonly string[]): string {
  const near = (k: string) => Math.max(2, Math.floor(k.length / 4));
  const close = known
    // (the distance is at least the difference in length: a 64 KB key is measured against none)
    .map((k) => ({ k, d: k.toLowerCase() === key.toLowerCase() ? 0 : Math.abs(key.length - k.length) > near(k) ? Infinity : editDistance(key, k) }))
    .filter(({ k, d }) => d <= near(k))
    .sort((a, b) => a.d - b.d)[0];
  return close ? ` (did you mean "${close.k}"?)` : known.length ? ` (the options: ${known.join(', ')})` : '';
}

/** The keys a zod object schema knows (an issue's `inst`), or none. */
export function knownKeys(inst: unknown): string[] {
  const shape = (inst as { _zod?: { def?: { shape?: Record<string, unknown> } } } | undefined)?._zod?.def?.shape;
  return shape ? Object.keys(shape) : [];
}

/** `a`, `a or b`, `a, b or c`: the values a field may take. */
const either = (xs: readonly string[]): string => (xs.length <= 1 ? xs.join('') : `${xs.slice(0, -1).join(', ')} or ${xs.at(-1)!}`);

/**
 * Messages for the issues whose zod message names no fix: a wrong type ("expected number,
 * received string"), a number out of its bounds ("Too small: expected number to be >0"), a value
 * outside an enum ("Invalid option: expected one of ...", which names no value given; and a union
 * holding an enum, "Invalid input") and an unknown key. Given to `parse`, and to a parse inside a schema (the `tables` option's). A schema's own message comes first (zod asks this map
 * only for issues the schema left to the default).
 */
export const FIXES: z.core.$ZodErrorMap = (issue) => {
  if (issue.code === 'invalid_type') {
    const want = WANTED[issue.expected] ?? issue.expected;
    const v = issue.input;
    if (v === undefined) return `is required: give ${want}`;
    const numeric = typeof v === 'string' && v.trim() !== '' && Number.isFinite(Number(v));
    const fix =
      issue.expected === 'number' && numeric
        ? `: give ${Number(v)} (a number, not text: Number(...) of an environment variable)`
        : issue.expected === 'boolean' && (v === 'true' || v === 'false')
          ? `: give ${v}, without quotes`
          : issue.expected === 'array' && !Array.isArray(v) && (typeof v === 'string' || typeof v === 'number')
            ? `: give [${JSON.stringify(v)}]`
            : issue.expected === 'string' && typeof v === 'number'
              ? `: give "${v}"`
              : '';
    return `must be ${want}, not ${shown(v)}${fix}`;
  }
  if ((issue.code === 'too_small' || issue.code === 'too_big') && (issue.origin === 'number' || issue.origin === 'bigint')) {
    const small = issue.code === 'too_small';
    const bound = small ? issue.minimum : issue.maximum;
    const op = small ? (issue.inclusive ? '>=' : '>') : issue.inclusive ? '<=' : '<';
    return `must be ${op} ${String(bound)}, not ${shown(issue.input)}`;
  }
  if (issue.code === 'invalid_value') return `must be ${either(issue.values.map((v) => JSON.stringify(v)))}, not ${shown(issue.input)}`;
  if (issue.code === 'invalid_union' && (issue.input === null || typeof issue.input !== 'object')) {
    // a value no alternative takes (platform: 'detect', 'none' or an object): what each takes, when
    // each says so in one issue about the value itself; else zod's own
    const alternatives = issue.errors.map((es) => (es.length === 1 && es[0]!.path.length === 0 ? es[0]! : undefined));
    if (alternatives.every((i) => i?.code === 'invalid_value' || i?.code === 'invalid_type')) {
      const takes = alternatives.flatMap((i) => (i!.code === 'invalid_value' ? i!.values.map((v) => JSON.stringify(v)) : [WANTED[i!.expected] ?? i!.expected]));
      return `must be ${either([...new Set(takes)])}, not ${shown(issue.input)}`;
    }
  }
  if (issue.code === 'unrecognized_keys') {
    const known = knownKeys(issue.inst);
    return issue.keys.map((k) => `unknown option ${JSON.stringify(cut(k, MAX_KEY))}${unknownKeyHint(k, known)}`).join(KEY_PARTS);
  }
  return undefined;
};

/** Parses `raw` with `schema`; throws a ValidationError naming `subject` and each bad field, and what to give. */
export function parse<S extends z.ZodType>(schema: S, raw: unknown, subject: string | (() => string)): z.output<S> {
  const r = schema.safeParse(raw, { error: FIXES });
  if (r.success) return r.data;
  throw new ValidationError(typeof subject === 'string' ? subject : subject(), issuesOf(r.error));
}

/**
 * The issues of an argument beside the options (a lease name), each under `field`: reported with
 * the options' own in one ValidationError, so that a bad name hides no bad option.
 */
export function argumentIssues(schema: z.ZodType, raw: unknown, field: string): FieldIssue[] {
  const r = schema.safeParse(raw, { error: FIXES });
  return r.success ? [] : issuesOf(r.error).map((i) => ({ field, message: i.message }));
}

/**
 * `when` of a field's refinement that judges only what passed the field's checks before it
 * (`.refine(isAdvertisable, { message, when: ownChecksPassed })`): it runs while the field has no
 * issue yet, so one bad value gets one message (an empty address is not also "must be a URL"). Not
 * `abort: true` on the check before: zod then skips even the checks everyProblem runs on any object,
 * so an empty identity hid renewDeadlineMs ≥ leaseDurationMs.
 */
export const ownChecksPassed = (payload: { readonly issues: readonly unknown[] }): boolean => payload.issues.length === 0;

/**
 * For an options object's cross-field checks, which zod skips while any field is not even of its
 * type (a missing identity hid renewDeadlineMs ≥ leaseDurationMs until it was fixed): `when` runs
 * them on any object, and each one asks `parsed` whether the fields it reads are of their type, or
 * `valid` whether the fields it compares passed their own checks, so one error lists every problem
 * and no check reads a value that is not what its schema says. (A comparison asks `valid`: a value
 * that fails its own bound is reported as itself, not again through a comparison it cannot take
 * part in, "retryPeriodMs: must be < renewDeadlineMs (-1)" beside "renewDeadlineMs: must be > 0".
 * An option of a kind (the SDK's client, a CDK prop misspelt) refuses with `abort: false`
 * so that it does not stop these checks, and a check that reads into one (the SDK's session)
 * asks `instanceof` first. No field's check aborts either: a check that a failed one would make
 * say a second thing of the same value runs `when: ownChecksPassed`.)
 */
export const everyProblem = {
  when: (payload: { value: unknown }): boolean => typeof payload.value === 'object' && payload.value !== null && !Array.isArray(payload.value),
  /** Whether each of `keys` is of its type: no issue there stopped its checks (zod's own test). Taken before the checks add theirs. */
  parsed(ctx: { readonly issues: readonly { readonly path?: readonly PropertyKey[] | undefined; readonly continue?: boolean | undefined }[] }): (...keys: string[]) => boolean {
    const notOfType = new Set(ctx.issues.filter((i) => i.continue !== true).map((i) => i.path?.[0]));
    return (...keys) => keys.every((k) => !notOfType.has(k));
  },
  /** Whether each of `keys` passed its own checks (no issue at all there): what a comparison between fields reads. Taken before the checks add theirs. */
  valid(ctx: { readonly issues: readonly { readonly path?: readonly PropertyKey[] | undefined }[] }): (...keys: string[]) => boolean {
    const failed = new Set(ctx.issues.map((i) => i.path?.[0]));
    return (...keys) => keys.every((k) => !failed.has(k));
  },
};

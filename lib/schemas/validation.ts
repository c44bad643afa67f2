import * as z from 'zod';

/** One bad field of a ValidationError, and what it should be. */
export interface FieldIssue {
  /** Dotted path of the field, e.g. `election.deadline`; `(root)` for the whole value. */
  readonly field: string;
  /** What is wrong with it and what it should be, e.g. `must be ≥ 1000 ms`. */
  readonly message: string;
}

/**
 * Input that does not match its schema: an item read from a table, an event, a configuration or a
 * CLI argument. The message names every offending field and what it should be.
 */
export class ValidationError extends Error {
  /** Always `ValidationError`. */
  override readonly name = 'ValidationError';
  constructor(
    /** What was being read, e.g. `lease "jobs"` or `LeaderElector options`. */
    readonly subject: string,
    /** Each bad field and what it should be. */
    readonly issues: readonly FieldIssue[],
  ) {
    super(`invalid ${subject}: ${issues.map((i) => `${i.field}: ${i.message}`).join('; ')}`);
  }

  /** The offending field names, e.g. ['renewTime', 'priority']. */
  get fields(): string[] {
    return this.issues.map((i) => i.field);
  }
}

const fieldOf = (path: readonly PropertyKey[]): string =>
  path.length === 0 ? '(root)' : path.map((p) => (typeof p === 'number' ? `[${p}]` : String(p))).join('.').replace(/\.\[/g, '[');

export function issuesOf(error: z.ZodError): FieldIssue[] {
  return error.issues.map((i) => ({ field: fieldOf(i.path), message: i.message }));
}

/** Parses `raw` with `schema`; throws a ValidationError naming `subject` and each bad field. */
export function parse<S extends z.ZodType>(schema: S, raw: unknown, subject: string | (() => string)): z.output<S> {
  const r = schema.safeParse(raw);
  if (r.success) return r.data;
  throw new ValidationError(typeof subject === 'string' ? subject : subject(), issuesOf(r.error));
}

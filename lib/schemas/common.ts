import * as z from 'zod';

/**
 * The latest time a row may carry: 9999-12-31T23:59:59.999Z. A four-digit year, as ISO 8601 and
 * the events' `time` fields print it; beyond the year 275760 a JavaScript Date cannot even hold it.
 */
export const MAX_MILLIS = 253_402_300_799_999;

/**
 * The longest a Node timer waits: 2^31 - 1 ms, about 24.8 days. One set longer fires after 1 ms
 * (Node's TimeoutOverflowWarning), so a wait or timeout option that becomes a timer is bounded by it.
 */
export const MAX_TIMER_MS = 2_147_483_647;

/** A wait or timeout option's upper bound ({@link MAX_TIMER_MS}), its message naming the value given. */
export const timerBound = { error: (issue: { input?: unknown }) => `must be at most ${MAX_TIMER_MS} ms (about 24.8 days: a Node timer set longer fires at once), not the number ${String(issue.input)}` };

/** Epoch milliseconds: comparable inside DynamoDB condition expressions. */
export const Millis = z
  .number()
  .int('must be a whole number of epoch milliseconds')
  .nonnegative('must be epoch milliseconds (>= 0)')
  .max(MAX_MILLIS, 'must be a time before the year 10000 (epoch milliseconds)');

/**
 * A stamp a row the schema refuses is collected by: epoch milliseconds from 2001-09-09 on. A stamp in
 * epoch seconds (a writer of another unit) reads as January 1970 in milliseconds, stale however
 * lately renewed: below this it does not parse, and its row is never collected.
 */
export const StampMillis = Millis.min(1e12, 'must be epoch milliseconds (a time in seconds reads as 1970)');

/**
 * The format of the rows this Conclave reads (a row's `minReader`, MinReader). Raised by a version
 * whose writers add a field a reader must understand to judge the row.
 */
export const READER_FORMAT = 1;

/**
 * The oldest reader format that may judge the row (absent: 1), on the rows that are judged: leases,
 * identity and session rows, candidates. A reader drops the fields it does not know, which is safe
 * only while each is advisory; a field that changes what the row means (as `session` did: a
 * follower that dropped it judged the term by the lease's own renewTime, and took a lease still
 * held) comes with this raised, and a reader of an older format refuses the row as one the schema
 * refuses, leaving it alone. Today's writers do not write it.
 */
export const MinReader = z
  .number()
  .int('must be a whole number (a reader format)')
  .min(1, 'must be >= 1 (a reader format)')
  .max(READER_FORMAT, {
    error: (issue) => `is ${String(issue.input)}: the row needs a newer Conclave, one that reads rows of format ${String(issue.input)} (this one reads format ${READER_FORMAT}): upgrade this reader`,
  });

/** Every write raises the revision by one; every mutation is conditioned on the revision it read. */
export const Revision = z.number().int('must be a whole number').min(1, 'must be >= 1 (the first write sets 1)');

/** Names of leases, candidates and components: what a user types, kept printable and bounded. */
export const Name = z
  .string()
  .min(1, 'must not be empty')
  .max(253, 'must be at most 253 characters')
  // "" passes: min(1) says it, and not aborting, so that an empty name hides no other field's problem
  .regex(/^(?:[A-Za-z0-9][A-Za-z0-9._:\/-]*)?$/, 'may use letters, digits and . _ : / - and must start with a letter or digit');

/** At most this many labels on a row: 64 × (128 + 256) characters stays far below DynamoDB's 400 KB item. */
export const MAX_LABELS = 64;

export const Labels = z
  .record(z.string().min(1).max(128, 'label names must be at most 128 characters'), z.string().max(256, 'label values must be at most 256 characters'))
  .refine((r) => Object.keys(r).length <= MAX_LABELS, `must have at most ${MAX_LABELS} labels`);

/** DynamoDB's TTL attribute: epoch *seconds*. A backstop behind active garbage collection. */
export const TtlSeconds = z.number().int().positive().max(Math.floor(MAX_MILLIS / 1000), 'must be epoch seconds before the year 10000');

/** Who holds, held or should hold a lease: a candidate's or worker's name, as long as a Name at most. */
export const HolderName = z.string().min(1).max(253, 'must be at most 253 characters (a name)');

/** A process, unique per start-up (`<name>_<uuid>` and the like). */
export const Instance = z.string().min(1, 'must not be empty').max(512, 'must be at most 512 characters');

/** An ARN or a platform id: AWS's own limit for an ARN is 2048 characters. */
export const Arn = z.string().min(1).max(2048, 'must be at most 2048 characters (an ARN)');

/**
 * A change to a row: attributes to set (undefined: left as they are) and attributes to remove. What
 * a decision asks a store to write (lib/election/plan.ts), and what the stores write.
 */
export interface RowPatch<T> {
  set?: { [K in keyof T]?: T[K] | undefined };
  remove?: readonly (keyof T & string)[];
}

/**
 * What is wrong with `name` as a DNS name (undefined: nothing): host-name labels (letters, digits,
 * `-`, `_`), 1–63 characters each, 253 in all. A leader's record name, and an advertised host
 * that is a name. Lease names may hold `:` and `/`, which no host name can.
 */
export function dnsNameIssue(name: string): string | undefined {
  if (name.length > 253) return `is ${name.length} characters; a DNS name has at most 253`;
  const bad = name.split('.').find((l) => !/^[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?$/i.test(l));
  return bad === undefined ? undefined : `has the label "${bad}", not a host-name label (1-63 of letters, digits, - and _, not starting or ending with -)`;
}

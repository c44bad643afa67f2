import * as z from 'zod';

/** Epoch milliseconds: comparable inside DynamoDB condition expressions. */
export const Millis = z.number().int('must be a whole number of epoch milliseconds').nonnegative('must be epoch milliseconds (≥ 0)');

/** Every write raises the revision by one; every mutation is conditioned on the revision it read. */
export const Revision = z.number().int('must be a whole number').min(1, 'must be ≥ 1 (the first write sets 1)');

/** Names of leases, candidates and components: what a user types, kept printable and bounded. */
export const Name = z
  .string()
  .min(1, { message: 'must not be empty', abort: true })
  .max(253, 'must be at most 253 characters')
  .regex(/^[A-Za-z0-9][A-Za-z0-9._:\/-]*$/, 'may use letters, digits and . _ : / - and must start with a letter or digit');

export const Labels = z.record(z.string().min(1).max(128), z.string().max(256));

/** DynamoDB's TTL attribute: epoch *seconds*. A backstop behind active garbage collection. */
export const TtlSeconds = z.number().int().positive();

import * as z from 'zod';
import { ValidationError } from './validation.js';

/**
 * Fencing tokens: what every acquisition of a lease writes, and why they never go back for a lease
 * name — not when its row is deleted, not when the table is restored from point-in-time recovery.
 *
 * Each acquisition writes `max(previous + 1, floor(now))`, `floor(now)` being the writer's clock
 * in epoch milliseconds × 1000. Within one row, `previous + 1` makes tokens strictly increase
 * whatever the clocks say. Across a deletion or a restore, where `previous` is gone or old, the
 * floor carries the order. The guarantee (docs/architecture.md, "Fencing tokens"):
 *
 *   A token issued after a deletion or a restore exceeds every token issued for that lease name
 *   before it, provided (1) every writer's clock is within ε of true time, so any two are within
 *   S = 2ε of each other; (2) the new acquisition comes at least S + 1 ms (true time) after the
 *   last acquisition before it; (3) acquisitions of one lease are at least 1 µs apart, i.e. at
 *   most 1000 in a millisecond.
 *
 * Why: by (1) a token issued at true time τ is at least 1000·⌊τ − ε⌋ (its floor). By (1) and (3),
 * it is at most 1000·(τ + ε): it is either its floor, or some earlier token (issued at τᵢ, at most
 * 1000·(τᵢ + ε)) plus one per acquisition since, of which (3) allows 1000·(τ − τᵢ). With (2) the
 * new token's floor, above 1000·(τₙ − ε − 1), is at least 1000·(τ_last + ε), every old token's bound.
 *
 * A row written without a term (the coordinator's before an election, an operator's) takes its
 * first token the same way, `fencingTokenFloor(now)` at its creation, and the proof counts that
 * write as an acquisition: so no two rows of one lease name carry the same token, and a write
 * conditioned on a read's revision and token (LeaseStore's `incarnation`) never lands on a row
 * deleted and written again since, even one that has had no term. Rows created before this rule
 * carry 0 until their first term.
 *
 * (3) holds by construction: an acquisition is a conditional write on what a read returned, a
 * round trip to DynamoDB after the previous one. (2) always holds for a restore, which takes
 * minutes; for a deleted row it can fail only if the row is deleted and re-acquired within S of
 * the last acquisition — then the lease row still fences the old term (its holder and token are
 * gone). (1) is clockSkewMs's assumption (S, 1 s by default).
 *
 * The floor stays below Number.MAX_SAFE_INTEGER until 2255-06-05 (epoch ms 9 007 199 254 740); a
 * token past it is refused rather than written where no reader could parse it. The largest token
 * (MAX_FENCING_TOKEN) is one below Number.MAX_SAFE_INTEGER: a row above it reads as broken, and a
 * row at it (only a hand-written one could be) has no next term, which is the row's fault too
 * (FencingTokensExhaustedError: the tick counts the lease broken), never an election retried for ever.
 */

/** Tokens per millisecond of the writer's clock: room for 1000 acquisitions of one lease in a millisecond. */
export const TOKENS_PER_MS = 1000;

/** The largest fencing token: its next term's (+1) is Number.MAX_SAFE_INTEGER, the largest whole number every reader parses exactly. */
export const MAX_FENCING_TOKEN = Number.MAX_SAFE_INTEGER - 1;

/**
 * A fencing token: a whole number (0 only on a row created before rows took their creation's
 * floor), at most MAX_FENCING_TOKEN.
 */
export const FencingToken = z
  .number()
  .int()
  .min(0)
  .max(MAX_FENCING_TOKEN, {
    error: (issue) => `${String(issue.input)} is above the largest fencing token, ${MAX_FENCING_TOKEN} (a next term's, +1, must be a safe integer): set it to the clock's (epoch ms * 1000), or delete the row`,
  });

/** The least token an acquisition at `now` (epoch ms, the writer's clock) may write. */
export function fencingTokenFloor(now: number): number {
  return Math.floor(now) * TOKENS_PER_MS;
}

/**
 * A lease row at the largest token (MAX_FENCING_TOKEN, only a hand-written row can be): no term
 * can follow it. The row's fault, a ValidationError of its `fencingToken` as the schema's own
 * refusals are (a stream record of it is poison, dead-lettered at once; the tick counts the lease
 * broken), not a fault to retry.
 */
export class FencingTokensExhaustedError extends ValidationError {
  constructor(lease: string | undefined, message: string) {
    super(lease === undefined ? 'lease row' : `lease "${lease}"`, [{ field: 'fencingToken', message }]);
  }
}

/**
 * The token of a new term: above the lease's latest (`previous`, undefined when the row does not
 * exist) and at least the floor of the writer's clock. The one place tokens are raised: the
 * coordinator's elections, the successor's takeover, the fallback and NoCoordination. `lease`
 * names the lease in the error of a row with no next token (FencingTokensExhaustedError).
 */
export function nextFencingToken(previous: number | undefined, now: number, lease?: string): number {
  const floor = fencingTokenFloor(now);
  const next = Math.max((previous ?? 0) + 1, floor);
  // (also NaN) the cause named: the clock's floor (a clock past 2255), or the previous token's +1 (a
  // token written by hand at the largest): the row's fault (FencingTokensExhaustedError)
  if (!(next <= MAX_FENCING_TOKEN)) {
    const why = `fencing token ${next} (previous ${previous}, clock ${now}) is past ${MAX_FENCING_TOKEN}`;
    if (next === floor) throw new RangeError(`${why}: is the clock right?`);
    throw new FencingTokensExhaustedError(lease, `${why}: the previous token leaves no room: set the row's fencingToken to the clock's (epoch ms * 1000), or delete it`);
  }
  return next;
}

import * as z from 'zod';
import { everyProblem } from './validation.js';
import { LeaseName } from './lease.js';
import { Millis, Revision } from './common.js';
import { COORDINATOR_COMPONENT } from './session-partition.js';

export { COORDINATOR_COMPONENT };

/** The row (in COORDINATOR_COMPONENT) where one tick leaves off and the next begins. */
export const TICK_CURSOR_NAME = 'tick';
/** DynamoDB's most segments of a parallel scan (TotalSegments). */
export const MAX_SEGMENTS = 1_000_000;

const Int = z.number().int();

/**
 * Where the coordinator's round over every lease stands (lib/coordinator/tick.ts). A round
 * reconciles the tables' `segments` parts in order; each invocation goes on from `segment`, after
 * lease `after` (a segment's leases are taken in name order), until its deadline. Between rounds
 * the row holds only the next round's `segments` (from the leases the last round reconciled), that
 * round's gauges and any collection owed, so a deployment whose round fits one invocation writes it
 * only when those change.
 */
export const TickCursorItem = z
  .object({
    component: z.literal(COORDINATOR_COMPONENT),
    name: z.literal(TICK_CURSOR_NAME),
    /** When this round's first invocation began (the coordinator's clock); absent before a round's first invocation. */
    roundStartedAt: Millis.optional(),
    /** Parts of the tables this round divides them into (DynamoDB's TotalSegments). */
    segments: Int.min(1).max(MAX_SEGMENTS),
    /** The part to go on with. */
    segment: Int.min(0),
    /** The last lease of `segment` reconciled; absent: the segment starts at its first. */
    after: LeaseName.optional(),
    /** Leases reconciled so far this round. */
    leases: Int.min(0),
    /** Invocations this round has taken so far (the one that ends it included). */
    invocations: Int.min(0),
    /** Leaderless leases this round has found so far, and the last whole round's: the gauges a tick publishes (lib/coordinator/tick.ts roundGauges). */
    leaderless: Int.min(0).optional(),
    lastLeaderless: Int.min(0).optional(),
    /** Leases whose reconcile failed this round so far, and in the last whole round. */
    failures: Int.min(0).optional(),
    lastFailures: Int.min(0).optional(),
    /**
     * Garbage collection owed, which the next invocation does first, with the whole time it has
     * (lib/coordinator/tick.ts): a pass reached its end as the invocation's time ran out, its
     * collection cut short: of part `owedPart` of `owedParts` (its stale candidates; of a one-part
     * round, the identities too; the parts may be the last round's), or at a round's end (the
     * expired identities). Once: cut short again, given up until that part's next pass.
     */
    owedPart: Int.min(0).optional(),
    owedParts: Int.min(1).max(MAX_SEGMENTS).optional(),
    owesIdentities: z.literal(true).optional(),
    /**
     * Attempts in a row at part `segment` that did not finish (absent: none): its scans outlasting
     * an invocation whose first pass it was, its pass throwing, or (a round of parts marks the
     * attempt before its pass) its invocation ending inside it. At the second the part is skipped
     * for the round (lib/coordinator/tick.ts).
     */
    unscanned: Int.min(1).optional(),
    /** Parts this round skipped so far: its counts leave their leases out (absent: none). */
    skipped: Int.min(1).optional(),
    revision: Revision,
  })
  // compared only where both passed their own checks: a bad one is reported as itself
  .superRefine((c, ctx) => {
    const valid = everyProblem.valid(ctx);
    if (valid('segment', 'segments') && c.segment > c.segments) ctx.addIssue({ code: 'custom', message: 'must be at most segments (segments: the round is done)', path: ['segment'] });
    if (valid('owedPart', 'owedParts') && (c.owedPart ?? 0) >= (c.owedParts ?? MAX_SEGMENTS)) ctx.addIssue({ code: 'custom', message: 'must be < owedParts', path: ['owedPart'] });
  });

export type TickCursor = z.infer<typeof TickCursorItem>;

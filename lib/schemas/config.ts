import * as z from 'zod';
import { PreferredLocations } from './location.js';
import { everyProblem, KEY_PARTS, parse } from './validation.js';

/**
 * Whole milliseconds above 0, `fallback` when left out: one issue a field (the path names it, the
 * message gives the fix), whichever check fails first.
 */
const ms = (fallback: number) => {
  const fix = `must be whole milliseconds above 0, e.g. ${fallback} (the default)`;
  return z.number().int({ error: fix, abort: true }).positive(fix);
};
const TableName = z.string().regex(/^[A-Za-z0-9_.-]{3,255}$/, 'must be a DynamoDB table name: 3 to 255 of A-Z a-z 0-9 _ . -');

/** The three tables' names (zod schema of {@link TableNames}). */
export const TableNamesSchema = z
  .object({ leases: TableName, candidates: TableName, identities: TableName })
  .strict();
/** The names of the leases, candidates and identities tables. */
export type TableNames = z.infer<typeof TableNamesSchema>;

/** Tuning of the coordinator; every value has the default Kubernetes uses, or one docs/architecture.md gives the reason for. */
export const ElectionConfigSchema = z
  .strictObject({
    /** How long a vacant lease's election waits for acks before finishing with whoever answered (KEP: up to 5 s); a held lease's re-election waits a lease duration, never less than this (reelectionWindowMs). */
    ackWindowMs: ms(5_000).max(60_000).default(5_000),
    /** The electee's first term; its first renewal sets its own duration (Kubernetes: 5 s). */
    electedLeaseDurationSeconds: z.number().int().min(1).max(3_600).default(5),
    /** Duration written on a lease the coordinator creates before anyone renewed it. */
    defaultLeaseDurationSeconds: z.number().int().min(1).max(86_400).default(15),
    /** Added before judging another machine's timestamp expired (server-side judgements only). */
    clockSkewMs: z.number().int().min(0).max(60_000).default(1_000),
    /**
     * A candidate not renewed for this long no longer counts and is collected (Kubernetes: 30 min).
     * Keep it at least twice the workers' candidacy `renewIntervalMs` (10 minutes by default, 15 at
     * most): shorter, a live worker's row is collected between its renewals. The coordinator cannot
     * check this (it does not know the workers' settings); a deployment with shorter candidacy
     * renewals may set it shorter. The CDK construct warns at synth below twice the default
     * renewal, 20 minutes (`@conclave/cdk:candidateStaleAfterMs`).
     */
    candidateStaleAfterMs: ms(30 * 60_000).default(30 * 60_000),
    /**
     * KEP-4355's re-ping of a candidate this stale (15 min). Accepted and validated (below
     * candidateStaleAfterMs), not acted on: Conclave's candidates renew their rows every 10
     * minutes on their own, and one that let a ping pass is asked again after askAgainAfterMs.
     */
    candidateRepingAfterMs: ms(15 * 60_000).default(15 * 60_000),
    /**
     * A candidate that let its last ping pass is passed over (not named successor, not preferred)
     * until it renews on its own or this long after that ping, when a liveness check or a
     * re-election asks it again: a live one that read late answers then, a dead one costs one
     * more ping. Never a vacancy's wait: an election for a vacant lease does not wait for it. At
     * least the ack window. @default 60 s
     */
    askAgainAfterMs: ms(60_000).default(60_000),
    /** Identity leases are collected this long after they expired, on top of clockSkewMs (their stamps are their writers' clocks): late rather than early. */
    identityGcGraceMs: z.number().int().min(0).default(0),
    /**
     * Designate a successor on every held lease: the candidate the coordinator would elect next,
     * which takes the lease itself when it falls vacant (no election round). Off: every vacancy
     * goes through an election, as in Kubernetes, and designated successors are cleared.
     */
    succession: z.boolean().default(true),
    /**
     * Zones and regions to elect in, best first (`us-east-1a`, `us-east-1`, …): among candidates of
     * the same priority and emulation version, one whose zone or region is listed earlier wins, and
     * a better-placed candidate that joins preempts the holder. Candidates in no listed location
     * (or of unknown location) rank after the listed ones and stay eligible. A lease's own
     * `preferredLocations` (`conclave set-locations`) replaces this. @default [] (no preference)
     */
    preferredLocations: PreferredLocations.default([]),
    /** Leases reconciled at once by reconcileAll. */
    concurrency: z.number().int().min(1).max(256).default(16),
    /** Races lost in a row before a reconcile gives up (it is retried by the next trigger). */
    maxConflictRetries: z.number().int().min(1).max(50).default(5),
  }, { error: (issue) => (issue.code === 'unrecognized_keys' ? unknownFields(issue.keys) : undefined) })
  .superRefine((c, ctx) => {
    // compared only where each passed its own checks: a bad one is reported as itself
    const valid = everyProblem.valid(ctx);
    if (valid('candidateRepingAfterMs', 'candidateStaleAfterMs') && c.candidateRepingAfterMs >= c.candidateStaleAfterMs) {
      const stale = c.candidateStaleAfterMs;
      // the default (left out, most likely) is said to be what conflicts: the field was never written
      const message =
        c.candidateRepingAfterMs === 15 * 60_000
          ? `is 900000 (15 min), its default when not given, and must be < candidateStaleAfterMs (${stale}) so a live candidate is asked before it is dropped: give candidateRepingAfterMs below ${stale} too (e.g. ${Math.floor(stale / 2)}, half of it, as the defaults are)`
          : `must be < candidateStaleAfterMs (${stale}) so a live candidate is asked before it is dropped`;
      ctx.addIssue({ code: 'custom', path: ['candidateRepingAfterMs'], message });
    }
    if (valid('askAgainAfterMs', 'ackWindowMs') && c.askAgainAfterMs < c.ackWindowMs) {
      ctx.addIssue({ code: 'custom', path: ['askAgainAfterMs'], message: `must be >= ackWindowMs (${c.ackWindowMs}): a candidate is asked again only once its last ping's window closed` });
    }
  });
/** A misspelt or foreign field of an election config, named with the fields there are. */
function unknownFields(keys: readonly string[]): string {
  // one part a key: issuesOf reports each under the key's own name
  return keys.map((k) => `unknown field "${k}": the fields are ${Object.keys(ElectionConfigSchema.shape).join(', ')}`).join(KEY_PARTS);
}
/** The election's tuning as the functions run with it: every field set, defaults filled in. */
export type ElectionConfig = z.output<typeof ElectionConfigSchema>;
/** The election's tuning as it is written: every field optional (each has its default). */
export type ElectionConfigInput = z.input<typeof ElectionConfigSchema>;

export const electionConfig = (input: ElectionConfigInput = {}): ElectionConfig => parse(ElectionConfigSchema, input, 'election configuration');

/**
 * A session row the schema refuses, with held terms on it: nobody can judge those terms by the row
 * (lib/stores/errors.ts BrokenSessionError), so the coordinator times the row instead, as client-go's
 * followers time a lease they watch: by when they first saw its record as it is now (`observedTime`),
 * not by any stamp in it. The tick leaves on the row when it first saw it so (`refusedSeen`: that
 * time, and a digest of everything else in the row), and deletes it once it has stayed so for the
 * longest lease held on it and the skew margin (docs/safety.md, "A session row the schema refuses").
 *
 * Sound because every renewal that keeps a term alive on the row changes it (a Session's renewal
 * moves `renewTime` and `revision`; a write of the lease moves the lease's own stamp, which is judged
 * apart), and a holder acts only until its renew deadline, shorter than its lease duration, after
 * the send of its last renewal answered in time: that renewal landed before the tick first saw the
 * row as it is, so the holder has stopped a lease duration after that sighting. The deletion is then
 * the operator's repair (the row gone, the term is judged by the lease's own stamp and its holder's
 * other sessions), made only once nobody can be acting on the row.
 *
 * No I/O here: the tick reads and writes (lib/coordinator/reconcile.ts, IdentityStore).
 */
import { NumberValueImpl } from '@aws-sdk/util-dynamodb';
import { createHash } from 'node:crypto';
import * as z from 'zod';
import { Millis } from '../schemas/common.js';
import { mayBeProcessSession, processOf } from '../schemas/identity.js';
import { MAX_LEASE_DURATION_SECONDS } from '../schemas/lease.js';

/** The attribute the tick writes on such a row: when it first saw the row as it is. */
export const REFUSED_SEEN = 'refusedSeen';

/** `refusedSeen`: when the coordinator first saw the row with everything else as `digest` says. */
export const RefusedSeen = z.object({
  /** The coordinator's clock (epoch ms), after the read that showed the row so. */
  at: Millis,
  /** rowDigest of the row, `refusedSeen` left out. */
  digest: z.string().regex(/^[0-9a-f]{64}$/, 'must be a SHA-256 digest in hex'),
});
export type RefusedSeen = z.infer<typeof RefusedSeen>;

/**
 * Past this many attributes the row is left alone (reported, never deleted): the tick's writes are
 * conditioned on each attribute as scanned, and the condition must stay within DynamoDB's 4 KB.
 */
export const MAX_REFUSED_ATTRIBUTES = 64;

/** Values as rowOf gives them, in one canonical text: keys sorted, sets sorted, bytes in base64, a number JavaScript cannot hold by its digits. */
function canonical(v: unknown): unknown {
  if (v instanceof NumberValueImpl || typeof v === 'bigint') return { $number: v.toString() };
  if (v instanceof Set) return { $set: [...v].map((x) => JSON.stringify(canonical(x))).sort() };
  if (v instanceof Uint8Array) return { $bytes: Buffer.from(v).toString('base64') };
  if (Array.isArray(v)) return v.map(canonical);
  if (v !== null && typeof v === 'object') return Object.fromEntries(Object.keys(v).sort().map((k) => [k, canonical((v as Record<string, unknown>)[k])]));
  return v;
}

/** A digest of the row as stored (unmarshalled), `refusedSeen` left out: any change to anything else changes it. */
export function rowDigest(row: Readonly<Record<string, unknown>>): string {
  const { [REFUSED_SEEN]: _, ...rest } = row;
  return createHash('sha256').update(JSON.stringify(canonical(rest))).digest('hex');
}

/** What the tick does with a refused session row that held terms name. */
export type RefusedSessionStep =
  /** Seen so for the first time (no stamp, or the row changed since it): the wait starts now. */
  | { readonly kind: 'stamp'; readonly seen: RefusedSeen; readonly deleteAfter: number }
  /** Unchanged since `seen.at`, not yet long enough. */
  | { readonly kind: 'wait'; readonly seen: RefusedSeen; readonly deleteAfter: number }
  /** Unchanged since `seen.at` for longer than `holdMs` and the skew margin: every holder on it has stopped. */
  | { readonly kind: 'delete'; readonly seen: RefusedSeen; readonly deleteAfter: number }
  /** Too many attributes to condition a write on: left alone, as before. */
  | { readonly kind: 'tooLarge' };

/**
 * When the tick will delete `row` (as stored) as it stands, by the sighting the row carries:
 * `timed` when its `refusedSeen` is of the row as it is (deleted once past `deleteAfter`, if still
 * unchanged); `unseen` when the row carries none, or one of an earlier content (the wait starts at
 * the tick's next sighting); `tooLarge` when it is never timed. What the CLI shows (`describe`).
 */
export type RefusedDeletion =
  | { readonly kind: 'timed'; readonly seen: RefusedSeen; readonly deleteAfter: number }
  | { readonly kind: 'unseen'; readonly digest: string }
  | { readonly kind: 'tooLarge' };

export function refusedDeletion(row: Readonly<Record<string, unknown>> | RefusedSummary, holdMs: number, skewMs: number): RefusedDeletion {
  const s = row instanceof RefusedSummary ? row : new RefusedSummary(row);
  if (s.attributes > MAX_REFUSED_ATTRIBUTES) return { kind: 'tooLarge' };
  if (s.seen?.digest !== s.digest) return { kind: 'unseen', digest: s.digest };
  return { kind: 'timed', seen: s.seen, deleteAfter: s.seen.at + holdMs + skewMs };
}

/**
 * What refusedDeletion reads of a row as stored: how many attributes it has, its digest, the
 * sighting it carries. The tick keeps this of a row it times, not the row (a worker's row may be
 * 400 KB: lib/coordinator/identity-scan.ts), and reads the row again to write against it.
 */
export class RefusedSummary {
  readonly attributes: number;
  readonly digest: string;
  readonly seen: RefusedSeen | undefined;
  constructor(row: Readonly<Record<string, unknown>>) {
    this.attributes = Object.keys(row).length;
    this.digest = rowDigest(row);
    this.seen = RefusedSeen.safeParse(row[REFUSED_SEEN]).data;
  }
}

/**
 * The step for `row` (as scanned) at `now` (the coordinator's clock, after that scan). `holdMs`: the
 * longest lease duration among the held terms naming it (heldOnRefusedMs). The row may be deleted
 * once `now` is past `seen.at + holdMs + skewMs`: `seen.at` may be another invocation's clock, the
 * skew margin covering the two (as it covers a writer's stamp).
 */
export function refusedSessionStep(row: Readonly<Record<string, unknown>> | RefusedSummary, holdMs: number, now: number, skewMs: number): RefusedSessionStep {
  const d = refusedDeletion(row, holdMs, skewMs);
  if (d.kind === 'tooLarge') return d;
  // a sighting in the future (another invocation's clock far ahead) is replaced by the present: never earlier
  if (d.kind === 'unseen' || d.seen.at > now) return { kind: 'stamp', seen: { at: now, digest: d.kind === 'unseen' ? d.digest : d.seen.digest }, deleteAfter: now + holdMs + skewMs };
  return { kind: now > d.deleteAfter ? 'delete' : 'wait', seen: d.seen, deleteAfter: d.deleteAfter };
}

/**
 * What a row no held term names may yet carry: a term taken on it since the scans, as long as any
 * lease may be (MAX_LEASE_DURATION_SECONDS). The tick times such a row by it where the row's own
 * stamp does not read (reconcile.ts timeRefusedSessions); where it reads, the row is collected once
 * expired by it instead, never timed.
 */
export const ANY_TERM = [{ leaseDurationSeconds: undefined }] as const;

/** A held term as the tick's scan of the leases gives it: whose, on which session, how long (undefined: it does not read). */
export interface HeldTerm {
  readonly holderIdentity?: string | undefined;
  readonly holderInstance?: string | undefined;
  readonly session?: string | undefined;
  readonly leaseDurationSeconds?: number | undefined;
}

/** Which terms set a refused row's wait: those naming it, those it may vouch for as their process's own session, or any a lease may state. */
export type RefusedWaitOn = 'named' | 'process' | 'any';

/**
 * The terms whose holders may act by refused identity row `row` (as stored), of `named` (the held
 * terms naming it) and `held` (every held term the scans found), and so whose longest lease its wait
 * is (heldOnRefusedMs): those naming it; else, a row whose stamp does not read, those of a process
 * whose own session it may be (mayBeProcessSession): a term judged off its named row is judged by
 * nobody while the row stands, and its holder's elector counts that session's renewals whatever its
 * lease names, so it acts by the row only within its renew deadline (shorter than its lease) of a
 * renewal that changed it; else any term a lease may state (ANY_TERM: a day, kept where it holds
 * nobody's lease up). A term taken since the scans is judged by its own stamp too, written at its
 * take, after every renewal of the row before the tick's sighting (docs/safety.md).
 */
export function termsOnRefused(row: Readonly<Record<string, unknown>>, named: readonly HeldTerm[], held: readonly HeldTerm[]): { readonly on: RefusedWaitOn; readonly terms: readonly HeldTerm[] } {
  if (named.length) return { on: 'named', terms: named };
  const own = held.filter((t) => {
    const process = processOf(t.holderInstance);
    return t.holderIdentity !== undefined && t.session !== undefined && process !== undefined && mayBeProcessSession(row, t.session, process);
  });
  return own.length ? { on: 'process', terms: own } : { on: 'any', terms: ANY_TERM };
}

/**
 * How long the terms on a refused row may outlive the last change to it: the longest lease duration
 * among them (a term whose duration cannot be read: the longest a row may state), and the row's own
 * `leaseDurationSeconds` where it reads (a Session's longest lease; only ever lengthens the wait).
 */
export function heldOnRefusedMs(terms: readonly { readonly leaseDurationSeconds?: number | undefined }[], row: Readonly<Record<string, unknown>>): number {
  const own = z.number().int().min(1).max(MAX_LEASE_DURATION_SECONDS).safeParse(row['leaseDurationSeconds']);
  const seconds = Math.max(own.success ? own.data : 0, ...terms.map((t) => t.leaseDurationSeconds ?? MAX_LEASE_DURATION_SECONDS));
  return seconds * 1000;
}

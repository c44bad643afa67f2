import * as z from 'zod';
import { Instance, Labels, Millis, MinReader, Name, Revision, StampMillis, TtlSeconds } from './common.js';
import { Address } from './lease.js';
import { Location } from './location.js';
import { Platform, StoredPlatform } from './platform.js';
import { StrategyName } from './strategy.js';
import { everyProblem } from './validation.js';
import { StrictVersion, emulationWithinBinary, isStrictVersion } from './version.js';

/** The highest priority a row may carry (int32, as Kubernetes' priorities). */
export const MAX_PRIORITY = 2_147_483_647;
/**
 * The highest priority an operator may pin with `set-priority`: far below MAX_PRIORITY, so that
 * `preempt` (one above every other candidate in force) always has room.
 */
export const MAX_PINNED_PRIORITY = 1_000_000;
/** Versions are at most 256 characters (semver's own limit). */
const MAX_VERSION_LENGTH = 256;
/** A candidate lists at most this many strategies. */
export const MAX_STRATEGIES = 16;
/** The longest candidacy renewIntervalMs (lib/sdk/candidate.ts): half the coordinator's default stale age (30 minutes), and the longest stand-down (`standsDownUntil`). */
export const MAX_RENEW_INTERVAL_MS = 15 * 60_000;

const Priority = z.number().int('must be a whole number').positive('must be > 0 (leave it unset for no priority)').max(MAX_PRIORITY, `must be at most ${MAX_PRIORITY}`);
/** What an operator may pin (the CLI's `set-priority`). */
export const PinnedPriority = Priority.max(MAX_PINNED_PRIORITY, `must be at most ${MAX_PINNED_PRIORITY} (preempt pins one above the highest, and needs room)`);
const Version = z.string().max(MAX_VERSION_LENGTH, `must be at most ${MAX_VERSION_LENGTH} characters`);
const Strategies = z
  .array(StrategyName)
  .min(1, 'must list at least one strategy, e.g. ["OldestEmulationVersion"]')
  .max(MAX_STRATEGIES, `must list at most ${MAX_STRATEGIES} strategies`);

/**
 * A row of the candidates table (key `leaseName` + `name`) as read. Versions are plain strings
 * here: a candidate whose version does not parse is kept out of elections, not out of the listing.
 */
export const CandidateItem = z.object({
  leaseName: Name,
  name: Name,
  /**
   * The oldest reader format that may judge the row (MinReader; absent: 1): above this Conclave's,
   * the row is refused, as one that does not parse (never elected, collected once stale). A field
   * can change what a candidacy means to an election (`standsDownUntil` did).
   */
  minReader: MinReader.optional(),
  binaryVersion: Version,
  emulationVersion: Version,
  /** Higher wins; unset is lowest. An operator's pin, optionally with an expiry. */
  priority: Priority.optional(),
  priorityExpiresAt: Millis.optional(),
  /** Ordered; the first supersedes the rest (KEP-4355 consensus rules). */
  preferredStrategies: Strategies,
  renewTime: Millis,
  /** Stamped by the reconciler to ask for an ack (the coordinator's clock). */
  pingTime: Millis.optional(),
  /**
   * The `pingTime` the row carried when its candidate last renewed (0: none), copied by DynamoDB in
   * the renewal itself: the ack, judged by the coordinator's own stamp, never by the worker's
   * clock. Rows without it (written by a KEP-style client) are acked when renewTime ≥ pingTime.
   */
  ackedPingTime: Millis.optional(),
  /** First registration: the tie-break after versions (Kubernetes orders by creation time). */
  createdAt: Millis,
  /** The worker process behind the candidate (its identity lease holder), informational. */
  identity: Instance.optional(),
  /** Where the worker runs (ECS task or EC2 instance), when it could tell. */
  platform: StoredPlatform.optional(),
  /**
   * Where clients reach the worker (its LeaderElector's `advertise`): what the coordinator's election
   * and the holder's hand-off write as the lease's `holderAddress` when they give it the term.
   */
  address: Address.optional(),
  /**
   * Its zone and region, as the worker stated or detected them (a location-aware election ranks by
   * them: lib/election/location.ts). Plain strings here, as the versions: an odd value (written by
   * hand) matches no preference, and the row still takes part.
   */
  location: z.object({ zone: z.string().min(1).max(64).optional(), region: z.string().min(1).max(64).optional() }).optional(),
  labels: Labels.optional(),
  revision: Revision,
  expiresAt: TtlSeconds.optional(),
  /**
   * The session row its worker's process renews (lib/sdk/session.ts), when it stands on one: while
   * that row is its own process's (`identity` names the process: processOf), the candidate shows
   * life by the session's renewals (vouchedCandidate), and renews its own row only rarely.
   */
  session: Name.optional(),
  /**
   * Stamped by the coordinator's collection, or the platform function's for a stopped task or
   * instance, in the write before its delete (that function's clock): the removal of a row that
   * carries it is Candidate Expired, whatever the row's own renewTime.
   */
  collectedAt: Millis.optional(),
  /**
   * Flipped by each renewal (1 ↔ 2), removed by a ping: the candidate stream's filter drops a
   * record whose mark flipped — a renewal right after a renewal (lib/wiring.ts).
   */
  renewalMark: z.union([z.literal(1), z.literal(2)]).optional(),
  /**
   * Until when its worker stands down (its stamp, as renewTime's): its leader work failed at two
   * starts in a row, and it answers no election until its candidacy's own renewal, which removes this
   * (lib/sdk/step.ts standsDown). Written on a session only, whose renewals show it alive meanwhile:
   * the coordinator neither elects it, nor names it successor, nor preempts for it (decide.ts standingDown).
   */
  standsDownUntil: Millis.optional(),
});
/** A row of the candidates table as read: one worker's candidacy for one lease. */
export type Candidate = z.infer<typeof CandidateItem>;

/**
 * The most bytes a candidate row may take as stored (ItemStore's rowBytes): one larger is refused,
 * as one whose fields do not parse (collected once stale by its stamp). Every field at its limit,
 * each character 3 bytes in UTF-8, is 98,971 bytes (test/stores/row-bounds.test.ts); the rest is
 * room for a later version's fields, which `location`'s and `platform`'s unknown keys are (dropped: a
 * size bound, not `.strict()`, so that an older reader reads a newer writer's row; see MAX_LEASE_ROW_BYTES).
 */
export const MAX_CANDIDATE_ROW_BYTES = 160 * 1024;

/**
 * What the coordinator's collection reads of a row CandidateItem refuses: its `renewTime`, and the
 * `session` it may live by. A row whose stamp does not parse is never collected.
 */
export const CandidateStamp = CandidateItem.pick({ renewTime: true, session: true }).extend({ renewTime: StampMillis });
export type CandidateStamp = z.infer<typeof CandidateStamp>;

/** CandidateSpec's fields, each judged on its own; CandidateSpec adds the rules between them. */
export const CandidateSpecFields = z
  .object({
    leaseName: Name,
    name: Name,
    binaryVersion: StrictVersion,
    emulationVersion: StrictVersion,
    preferredStrategies: Strategies,
    identity: Instance.optional(),
    platform: Platform.optional(),
    address: Address.optional(),
    location: Location.optional(),
    labels: Labels.optional(),
  })
  .strict();

/**
 * CandidateSpec's rules between fields (emulation ≤ binary, no strategy twice), over a spec of
 * any shape: each reads only values that passed their own checks (`failed` says which did not, by
 * their path in the spec), so a bad value is reported as itself and hides no rule over the others:
 * a bad strategy is not counted among the duplicates, and does not stop the count of the rest.
 */
export function candidateSpecRules(
  c: { readonly binaryVersion?: unknown; readonly emulationVersion?: unknown; readonly preferredStrategies?: unknown },
  failed: (path: readonly PropertyKey[]) => boolean,
  add: (path: PropertyKey[], message: string) => void,
): void {
  const { binaryVersion: binary, emulationVersion: emulation } = c;
  if (!failed(['binaryVersion']) && !failed(['emulationVersion']) && typeof binary === 'string' && typeof emulation === 'string' && isStrictVersion(binary) && isStrictVersion(emulation) && !emulationWithinBinary(emulation, binary)) {
    add(['emulationVersion'], `must be <= binaryVersion ${binary} (a binary can only emulate its own or an older version)`);
  }
  if (!Array.isArray(c.preferredStrategies)) return;
  const first = new Map<unknown, number>();
  c.preferredStrategies.forEach((s: unknown, i) => {
    if (failed(['preferredStrategies', i])) return; // refused at its index
    const at = first.get(s);
    if (at === undefined) first.set(s, i);
    else add(['preferredStrategies'], `must not list a strategy twice: ${JSON.stringify(s)} is at [${at}] and [${i}]; drop one`);
  });
}

/** Whether `issues` hold one at `path` or inside it. */
const issueAt = (issues: readonly { readonly path?: readonly PropertyKey[] | undefined }[], path: readonly PropertyKey[]): boolean =>
  issues.some((i) => path.every((p, n) => i.path?.[n] === p));

/**
 * What a worker writes for its candidacy: strict versions, emulation ≤ binary. No priority: that
 * is an operator's pin (the CLI's `set-priority` and `preempt`), which a worker may not write.
 */
export const CandidateSpec = CandidateSpecFields
  // judged on any object, each rule over fields of their type, so a bad name does not hide them
  .superRefine((c, ctx) => {
    const before = [...ctx.issues]; // the fields' own, not the rules'
    candidateSpecRules(c, (path) => issueAt(before, path), (path, message) => ctx.addIssue({ code: 'custom', path, message }));
  }, { when: everyProblem.when });
export type CandidateSpec = z.infer<typeof CandidateSpec>;

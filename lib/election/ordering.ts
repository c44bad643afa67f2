import type { SemVer } from 'semver';
import type { Candidate } from '../schemas/candidate.js';
import { parseVersionTolerant } from '../schemas/version.js';
import { locationRank } from './location.js';

/** A candidate whose versions parse (tolerantly): the only kind that may win an election. */
export interface Ranked {
  readonly candidate: Candidate;
  readonly emulation: SemVer;
  readonly binary: SemVer;
  /** Priority in force at the time of the decision; 0 when unset or expired. */
  readonly priority: number;
  /**
   * Its place in the lease's preferred locations (./location.ts): 0 for the first listed, the
   * list's length for none of them or an unknown location; 0 for everyone without a preference.
   */
  readonly locationRank: number;
}

/** An operator's priority counts until its expiry (a forgotten pin must not last for ever). */
export function effectivePriority(c: Candidate, now: number): number {
  if (c.priority === undefined) return 0;
  if (c.priorityExpiresAt !== undefined && c.priorityExpiresAt <= now) return 0;
  return c.priority;
}

/**
 * Undefined when the emulation or the binary version does not parse: such a candidate never wins.
 * `preferred`: the lease's preferred zones and regions, best first (./location.ts preferredLocationsOf).
 */
export function rank(c: Candidate, now: number, preferred: readonly string[] = []): Ranked | undefined {
  const emulation = parseVersionTolerant(c.emulationVersion);
  const binary = parseVersionTolerant(c.binaryVersion);
  if (!emulation || !binary) return undefined;
  return { candidate: c, emulation, binary, priority: effectivePriority(c, now), locationRank: locationRank(c, preferred) };
}

/**
 * Negative when `a` is the better leader. Priority first (higher wins, unset lowest); then
 * OldestEmulationVersion: lower emulation version; then the better place in the preferred
 * locations (none configured: all equal); then lower binary version, earlier creation (what
 * Kubernetes' code does), and finally the name, so the order is total and independent of the
 * order rows came back in (Kubernetes keeps the first of two equals; we never tie). Location comes
 * after the emulation version: that is the compatibility the strategy exists for (a leader never
 * behaves as a version some candidate cannot follow), and no placement outweighs it.
 */
export function compareRanked(a: Ranked, b: Ranked): number {
  return (
    b.priority - a.priority ||
    a.emulation.compare(b.emulation) ||
    a.locationRank - b.locationRank ||
    a.binary.compare(b.binary) ||
    a.candidate.createdAt - b.candidate.createdAt ||
    (a.candidate.name < b.candidate.name ? -1 : a.candidate.name > b.candidate.name ? 1 : 0)
  );
}

/** The candidates that can win, best first; `preferred` as for rank(). */
export function orderCandidates(candidates: readonly Candidate[], now: number, preferred: readonly string[] = []): Ranked[] {
  return candidates.map((c) => rank(c, now, preferred)).filter((r): r is Ranked => r !== undefined).sort(compareRanked);
}

export function pickBest(candidates: readonly Candidate[], now: number, preferred: readonly string[] = []): Ranked | undefined {
  return orderCandidates(candidates, now, preferred)[0];
}

/**
 * Negative when `a` is the better leader by what an election is about: priority, the emulation
 * version, the preferred locations and the binary version, as compareRanked, without its last
 * tie-breaks (creation time and name). Zero: the two are equals, either may lead.
 */
export function compareMerit(a: Ranked, b: Ranked): number {
  return b.priority - a.priority || a.emulation.compare(b.emulation) || a.locationRank - b.locationRank || a.binary.compare(b.binary);
}

/**
 * Whether `best` should replace the current holder: the holder has no valid candidate row among
 * `candidates` (it cannot be ranked), or `best` is better on merit (compareMerit). An equal that
 * merely sorts first (an earlier creation, a smaller name) does not preempt: a leader is never
 * moved for nothing. (Kubernetes' re-election compares with its whole ordering, creation time
 * included, so there an older equal candidate preempts; docs/architecture.md's departures.)
 */
export function isBetterThanHolder(best: Ranked, holder: string, candidates: readonly Candidate[], now: number, preferred: readonly string[] = []): boolean {
  if (best.candidate.name === holder) return false;
  const row = candidates.find((c) => c.name === holder);
  const held = row && rank(row, now, preferred);
  return !held || compareMerit(best, held) < 0;
}

/** KEP-4355's skew prevention: an electee was chosen over a candidate with a newer binary. */
export function skewPrevented(winner: Ranked, field: readonly Ranked[]): boolean {
  return field.some((r) => r.binary.compare(winner.binary) > 0);
}

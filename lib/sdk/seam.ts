/**
 * What the SDK's own code needs of a LeaderElector beyond its public API, in one module that
 * @conclave/sdk does not export: the decisions the elector calls through (the one place the
 * simulator plants a wrong decision to show its checker catches it, sim/bugs.ts, instead of
 * patching the exported class; nothing else replaces them), and withLease's prompt hand-off.
 * @internal
 */
import type { LeaderElector } from './elector.js';
import { retryDelayMs } from './faults.js';
import { decideFollower } from './follower.js';
import { decideLeader } from './leader.js';

export const decisions = {
  decideFollower,
  decideLeader,
  /** How long a failed step waits before the next try. */
  retryDelayMs,
};

/**
 * Electors whose cancelled leader hands over (or releases) at once instead of leading on to its next
 * renewal slot: short-lived code (withLease), whose caller waits for the release.
 */
export const promptly = new WeakSet<LeaderElector>();

/** Makes `e`, when cancelled while leading, hand its term over at once (withLease). */
export function handOffPromptly(e: LeaderElector): void {
  promptly.add(e);
}

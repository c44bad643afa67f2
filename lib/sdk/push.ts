/**
 * The push path (docs/architecture.md, "Wake-ups"), as a LeaderElector sees it: wakes for the
 * leases it follows. A wake is a hint, never a command: what an elector does still rests on what it
 * reads and on conditioned writes, so a lost, late, repeated or forged wake costs at most a read.
 * The MQTT side, PushChannel, is lib/sdk/push-channel.ts, the entry `@conclave/sdk/push`: a worker
 * without the push path loads (and installs) no MQTT client.
 */
import type { Wake } from '../schemas/push.js';

export type { Wake } from '../schemas/push.js';

/**
 * What a LeaderElector needs of a push path: wakes for the leases it follows, whether they reach
 * this process now, and a way to wake the others (after a hand-off or a release it wrote).
 * PushChannel (`@conclave/sdk/push`) is the one that talks MQTT; the simulator has its own.
 */
export interface Push {
  /**
   * Calls `onWake` for every wake of `lease`, and with `undefined` whenever `healthy()` changes (a
   * wake may have been missed while the connection was down: look now, and time the next read by
   * the new state). Returns a function that stops it. `instance`: the watching elector's (on a
   * session, `…@<process>`): wakes addressed to its process reach it (PushChannel's `session`).
   */
  watch(lease: string, onWake: (wake: Wake | undefined) => void, instance?: string): () => void;
  /** Whether wakes reach this process now (connected and subscribed). */
  healthy(): boolean;
  /**
   * Tells the other followers of `lease` that it changed (best effort: never throws, never waits);
   * `to`: an instance that must hear it (a hand-off's heir, a vacated lease's successor), whose process is woken too where wakes
   * are addressed to processes.
   */
  wake(lease: string, revision?: number, to?: string): void;
}

/**
 * One worker process of a simulated world, as the workloads see it: the workers that start and
 * stop it (sim/workers.ts), the scheduled jobs it invokes (sim/jobs.ts), the faults that end it
 * (sim/faults.ts).
 */
import type { Platform } from '../lib/schemas/platform.js';
import type { LeaderElector } from '../lib/sdk/elector.js';
import type { Session } from '../lib/sdk/session.js';
import type { Host } from './network.js';

/** One worker process. */
export interface Proc {
  readonly identity: string;
  readonly platform: Platform;
  readonly machine: Host;
  readonly runs: Promise<void>[];
  /** After a SIGTERM: starts the next process once this one has exited. */
  restart: () => void;
  readonly electors: LeaderElector[];
  /** The leases it leads, with their tokens. */
  readonly leading: Map<string, number>;
  readonly stop: AbortController;
  /** Scheduled-job runs (withLease) under way in this process, by run instance: their tokens once they lead. */
  readonly cronRuns: Map<string, number | undefined>;
  /** The scheduled-job invocations under way: a stopping process exits once they have ended. */
  readonly jobs: Set<Promise<void>>;
  /** Its leaders' fenced writes so far (each names the next). */
  writes: number;
  /** Per lease it leads: makes its work (onStartedLeading) fail now, as a job that dies does. */
  readonly failWork: Map<string, (e: Error) => void>;
  /** Its Session (session worlds). */
  session?: Session;
  /**
   * `--kept` worlds: each lease's elector's own stop (aborted with the process's, or alone by an
   * elector stop: sim/faults.ts) and its run(), to stop one elector while the process runs on.
   */
  readonly own?: Map<string, { readonly stop: AbortController; readonly run: Promise<void> }>;
}

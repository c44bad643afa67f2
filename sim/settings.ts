/**
 * A simulated world's settings (the SDK's timings and the system's size), and what every part of
 * the world is given: the world, its schedule and settings, the schedule's random stream, the
 * checker's feed and the network.
 */
import type { SessionOptions } from '../lib/sdk/session.js';
import type { PlantedBug } from './bugs.js';
import type { Feed } from './feed.js';
import type { Network, SimWorld } from './machines.js';
import type { Host } from './network.js';
import type { SlowPublish } from './push.js';
import type { Schedule, SessionConfig } from './schedule.js';

/** Settings of a simulated world: the SDK's timings and the system's size. */
export interface WorldSettings {
  readonly workers: number;
  readonly leases: number;
  readonly durationMs: number;
  readonly leaseDurationMs: number;
  readonly renewDeadlineMs: number;
  readonly retryPeriodMs: number;
  /** A leader's fenced write to the ledger, this often. */
  readonly writeEveryMs: number;
  readonly tickEveryMs: number;
  /**
   * Each worker process also invokes a scheduled job this often (0: never): withLease on the
   * lease `cron-0`, first come first served, run once per window of this length.
   */
  readonly cronEveryMs: number;
  /** How long a scheduled job's run works (fenced ledger writes) before it completes its window. */
  readonly cronWorkMs: number;
}

export const DEFAULT_SETTINGS: WorldSettings = {
  workers: 3,
  leases: 2,
  durationMs: 10 * 60_000,
  leaseDurationMs: 15_000,
  renewDeadlineMs: 10_000,
  retryPeriodMs: 2_000,
  writeEveryMs: 5_000,
  tickEveryMs: 60_000,
  cronEveryMs: 45_000,
  cronWorkMs: 20_000,
};

/**
 * A world's Session timings, scaled to its electors': ended 1.25 retry periods before their renew
 * deadline (room for an elector to renew its leases itself once the session ends: a try and a
 * retry, as the elector's validation demands), renewed every `renewShare` of the room that leaves
 * (a renewal and a retry fit in it), and its row living as long as their leases.
 */
export function sessionTimings(settings: WorldSettings, c: SessionConfig): Pick<SessionOptions, 'renewIntervalMs' | 'retryPeriodMs' | 'renewDeadlineMs' | 'maxLeaseDurationMs'> {
  const deadline = settings.renewDeadlineMs - Math.round(1.25 * settings.retryPeriodMs);
  const room = deadline - settings.retryPeriodMs;
  return {
    renewIntervalMs: Math.min(room - 1, Math.max(1, Math.round(c.renewShare * room))),
    retryPeriodMs: settings.retryPeriodMs,
    renewDeadlineMs: deadline,
    maxLeaseDurationMs: settings.leaseDurationMs,
  };
}

/** The lease the scheduled jobs run under (withLease): held only while a run runs. */
export const CRON_LEASE = 'cron-0';

/** What every part of one world is given. */
export interface WorldContext {
  readonly world: SimWorld;
  readonly schedule: Schedule;
  readonly settings: WorldSettings;
  /** The schedule's own stream of numbers, apart from the system's, so that a fault's draws do not shift the system's. */
  readonly random: () => number;
  readonly feed: Feed;
  /** Between each process and DynamoDB (sim/network.ts). */
  readonly network: Network<Host>;
  readonly plant: PlantedBug | undefined;
  /** The tables are multi-Region strongly consistent (sim/regions.ts): workers and jobs run with `multiRegion`, the ledger is appended to with fencedItemWrite. */
  readonly multiRegion?: boolean;
  /** The Region a machine runs in (multi-Region worlds): its workers state it as their candidacy's location. */
  readonly regionOf?: (machine: string) => string;
  /** Whether a machine's Region is gone (a process started there is dead at once). */
  readonly gone?: (m: { name: string }) => boolean;
  /** Every `onError` of the world's workers and jobs throws once it has counted the fault (a broken alarm): the world must run as it would without. */
  readonly brokenAlarms?: boolean;
  /** Where the functions' errors and warnings go, each a line naming the function's machine (RunOptions.rows); undefined: nowhere. */
  readonly functionsLog?: (line: string) => void;
  /** A slow IoT Core (Schedule.slowBroker): for a publish made now, how late and whether it lands given up (sim/push.ts slowPublishes); undefined: never slow. */
  readonly slowPublish?: () => SlowPublish | undefined;
}

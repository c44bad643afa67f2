import * as z from 'zod';
import { Labels, Millis, Name, Revision, TtlSeconds } from './common.js';
import { Platform } from './platform.js';
import { StrategyName } from './strategy.js';
import { StrictVersion, emulationWithinBinary } from './version.js';

const Priority = z.number().int('must be a whole number').positive('must be > 0 (leave it unset for no priority)').max(2_147_483_647);

/**
 * A row of the candidates table (key `leaseName` + `name`) as read. Versions are plain strings
 * here: a candidate whose version does not parse is kept out of elections, not out of the listing.
 */
export const CandidateItem = z.object({
  leaseName: Name,
  name: Name,
  binaryVersion: z.string(),
  emulationVersion: z.string(),
  /** Higher wins; unset is lowest. An operator's pin, optionally with an expiry. */
  priority: Priority.optional(),
  priorityExpiresAt: Millis.optional(),
  /** Ordered; the first supersedes the rest (KEP-4355 consensus rules). */
  preferredStrategies: z.array(StrategyName).min(1, 'must list at least one strategy, e.g. ["OldestEmulationVersion"]'),
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
  identity: z.string().min(1).optional(),
  /** Where the worker runs (ECS task or EC2 instance), when it could tell. */
  platform: Platform.optional(),
  labels: Labels.optional(),
  revision: Revision,
  expiresAt: TtlSeconds.optional(),
});
/** A row of the candidates table as read: one worker's candidacy for one lease. */
export type Candidate = z.infer<typeof CandidateItem>;

/** What a worker (or the CLI) may write for a candidate: strict versions, emulation ≤ binary. */
export const CandidateSpec = z
  .object({
    leaseName: Name,
    name: Name,
    binaryVersion: StrictVersion,
    emulationVersion: StrictVersion,
    priority: Priority.optional(),
    priorityExpiresAt: Millis.optional(),
    preferredStrategies: z.array(StrategyName).min(1, 'must list at least one strategy, e.g. ["OldestEmulationVersion"]'),
    identity: z.string().min(1).optional(),
    platform: Platform.optional(),
    labels: Labels.optional(),
  })
  .strict()
  .superRefine((c, ctx) => {
    if (StrictVersion.safeParse(c.binaryVersion).success && StrictVersion.safeParse(c.emulationVersion).success && !emulationWithinBinary(c.emulationVersion, c.binaryVersion)) {
      ctx.addIssue({ code: 'custom', path: ['emulationVersion'], message: `must be ≤ binaryVersion ${c.binaryVersion} (a binary can only emulate its own or an older version)` });
    }
    if (new Set(c.preferredStrategies).size !== c.preferredStrategies.length) {
      ctx.addIssue({ code: 'custom', path: ['preferredStrategies'], message: 'must not list a strategy twice' });
    }
    if (c.priorityExpiresAt !== undefined && c.priority === undefined) {
      ctx.addIssue({ code: 'custom', path: ['priorityExpiresAt'], message: 'is only meaningful with a priority; set priority too or drop it' });
    }
  });
export type CandidateSpec = z.infer<typeof CandidateSpec>;

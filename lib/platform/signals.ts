/**
 * The platform's own word that a worker is gone, as EventBridge delivers it: ECS "Task State
 * Change" with lastStatus STOPPED (the task's containers have exited), EC2 "Instance State-change
 * Notification" with state stopped or terminated. In-between states (DEACTIVATING, STOPPING,
 * stopping, shutting-down) are not a signal: the processes may still run.
 */
import * as z from 'zod';
import { MAX_LOSS_REASON } from '../schemas/platform.js';
import { parse } from '../schemas/validation.js';

const envelope = {
  version: z.string().optional(),
  id: z.string().min(1),
  account: z.string().optional(),
  time: z.iso.datetime({ offset: true }),
  region: z.string().optional(),
  resources: z.array(z.string()).optional(),
};

/** ECS Task State Change: only the fields Conclave reads are checked; the rest pass through. */
export const EcsTaskStateChange = z.looseObject({
  ...envelope,
  source: z.literal('aws.ecs'),
  'detail-type': z.literal('ECS Task State Change'),
  detail: z.looseObject({
    clusterArn: z.string().min(1),
    taskArn: z.string().regex(/^arn:[a-z-]+:ecs:/, 'must be an ECS task ARN'),
    lastStatus: z.string().min(1),
    desiredStatus: z.string().optional(),
    stoppedReason: z.string().optional(),
    stopCode: z.string().optional(),
    stoppedAt: z.string().optional(),
  }),
});

/** EC2 Instance State-change Notification. */
export const Ec2InstanceStateChange = z.looseObject({
  ...envelope,
  source: z.literal('aws.ec2'),
  'detail-type': z.literal('EC2 Instance State-change Notification'),
  detail: z.looseObject({
    'instance-id': z.string().regex(/^i-[0-9a-f]{8,17}$/, 'must be an EC2 instance id'),
    state: z.string().min(1),
  }),
});

export const PlatformEvent = z.discriminatedUnion('source', [EcsTaskStateChange, Ec2InstanceStateChange]);
export type PlatformEvent = z.infer<typeof PlatformEvent>;

/** A worker's task or instance has stopped for good. */
export interface PlatformStop {
  source: 'aws.ecs' | 'aws.ec2';
  /** Task ARN or instance id: what `holderPlatformId` holds. */
  platformId: string;
  /** ECS only: the task's cluster (a lease whose holder ran in another cluster is never touched). */
  cluster?: string;
  /** The platform's words: `stoppedReason (stopCode)` or `instance stopped|terminated`. */
  reason: string;
  /**
   * The event's `time`, epoch ms: when the platform says the task or instance stopped (EventBridge
   * gives whole seconds). A late, retried or replayed event keeps it, so it tells which run stopped.
   */
  at: number;
  eventId: string;
  /** The account and region the event says it comes from (EventBridge always sets both). */
  account?: string;
  region?: string;
}

export type ReadSignal = { stop: PlatformStop } | { ignored: string };

/** Reads an EventBridge event; a malformed one is a ValidationError naming the field. */
export function readPlatformEvent(raw: unknown): ReadSignal {
  const e = parse(PlatformEvent, raw, 'platform event');
  const at = Date.parse(e.time);
  const where = { ...(e.account ? { account: e.account } : {}), ...(e.region ? { region: e.region } : {}) };
  if (e.source === 'aws.ecs') {
    const d = e.detail;
    if (d.lastStatus !== 'STOPPED') return { ignored: `task ${d.taskArn} is ${d.lastStatus}, not STOPPED: its containers may still run` };
    // cut to what the lease keeps: a longer one failed the vacate's write as a row the schema refuses, the term left to run out
    const reason = [d.stoppedReason ?? 'task stopped', d.stopCode ? `(${d.stopCode})` : ''].filter(Boolean).join(' ').slice(0, MAX_LOSS_REASON);
    return { stop: { source: 'aws.ecs', platformId: d.taskArn, cluster: d.clusterArn, reason, at, eventId: e.id, ...where } };
  }
  const d = e.detail;
  if (d.state !== 'stopped' && d.state !== 'terminated') return { ignored: `instance ${d['instance-id']} is ${d.state}, not stopped or terminated: its processes may still run` };
  return { stop: { source: 'aws.ec2', platformId: d['instance-id'], reason: `instance ${d.state}`, at, eventId: e.id, ...where } };
}

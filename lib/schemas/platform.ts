import * as z from 'zod';
import { Arn, HolderName } from './common.js';
import { FencingToken } from './fencing-token.js';

const AvailabilityZone = z.string().min(1).max(64);

/** An ECS task: its ARN is the platform id (unique per start: a restarted task has a new ARN). */
const ecsFields = {
  kind: z.literal('ecs'),
  /** The task ARN. */
  id: Arn.regex(/^arn:[a-z-]+:ecs:[a-z0-9-]+:\d{12}:task\/.+/, 'must be an ECS task ARN (arn:aws:ecs:<region>:<account>:task/<cluster>/<id>)'),
  /** The cluster ARN or name, as the task metadata gives it. */
  cluster: Arn,
  availabilityZone: AvailabilityZone.optional(),
};

/** An EC2 instance: its id is the platform id. */
const ec2Fields = {
  kind: z.literal('ec2'),
  id: z.string().regex(/^i-[0-9a-f]{8,17}$/, 'must be an EC2 instance id (i- and 8 or 17 hex digits)'),
  availabilityZone: AvailabilityZone.optional(),
};

/**
 * Where a worker runs, as the platform knows it: recorded on its candidate row and, while it
 * holds a lease, on the lease (`holderPlatform`, and `holderPlatformId` for the index the
 * platform handler queries), so that the platform's own "stopped" event can end its term at once.
 */
// as a worker gives it (its options, its detection): a key it does not know is refused, a typo
// named; the rows keep it as StoredPlatform
export const Platform = z.discriminatedUnion('kind', [z.strictObject(ecsFields), z.strictObject(ec2Fields)]);
/**
 * A platform as the rows keep it (a candidate's `platform`, a lease's `holderPlatform`): a key it
 * does not know is dropped, so that an older reader reads a newer writer's row (MAX_LEASE_ROW_BYTES
 * bounds them). A kind it does not know is refused: a new kind is a minor version's change.
 */
export const StoredPlatform = z.discriminatedUnion('kind', [z.object(ecsFields), z.object(ec2Fields)]);
/** Where a worker runs: an ECS task or an EC2 instance, by the id its platform's stop events carry. */
export type Platform = z.infer<typeof Platform>;

/** The longest `reason` a lease keeps of a stop (HolderLoss): a longer one (only a hand-made or forwarded event; ECS's own are 255 at most) is cut to it. */
export const MAX_LOSS_REASON = 4096;

/**
 * Why a holder's term was ended by the platform handler: the platform said its task or
 * instance stopped. Kept on the lease (the lease stream tells it as "Leader Lost"). A key it does
 * not know is dropped, as StoredPlatform's.
 */
export const HolderLoss = z.object({
  holder: HolderName,
  fencingToken: FencingToken,
  source: z.enum(['aws.ecs', 'aws.ec2']),
  platformId: Arn,
  /** The platform's words: ECS stoppedReason (and stopCode), or the EC2 state. */
  reason: z.string().max(MAX_LOSS_REASON),
  at: z.number().int().nonnegative(),
});
export type HolderLoss = z.infer<typeof HolderLoss>;

/** The lease fields that name the holder; all go together when a term ends (its address too: a stale one must never outlive its holder). */
export const HOLDER_FIELDS = ['holderIdentity', 'holderInstance', 'holderPlatform', 'holderPlatformId', 'holderAddress', 'session'] as const;

/** The same platform, whether an ECS cluster is written as an ARN or a name. */
export const sameCluster = (a: string, b: string): boolean => a === b || a.replace(/^arn:.*:cluster\//, '') === b.replace(/^arn:.*:cluster\//, '');

import * as z from 'zod';
import { Name } from '../schemas/common.js';
import { FencingToken } from '../schemas/fencing-token.js';
import { Address, ElectedBy, ElectionFailure } from '../schemas/lease.js';
import { StrategyName } from '../schemas/strategy.js';
import { ValidationError, parse } from '../schemas/validation.js';
import type { VacancyReason } from '../election/vacancy.js';

/** The `source` of every Conclave event on EventBridge. */
export const EVENT_SOURCE = 'conclave';

/** Times leave Conclave as ISO strings (the tables hold epoch milliseconds). */
const IsoTime = z.iso.datetime();
const Holder = z.string().min(1);
const Priority = z.number().int().positive();
const HolderAddress = Address.optional().describe('Where clients reach the new holder (holderAddress: its `advertise` option, a URL or host:port); absent when it advertised none');
const VACANCY_REASONS = ['noLease', 'noHolder', 'expired', 'reported'] as const;
// Fails to compile if lib/election/vacancy.ts gains or loses a reason.
const sameReasons: [VacancyReason] extends [(typeof VACANCY_REASONS)[number]] ? ([(typeof VACANCY_REASONS)[number]] extends [VacancyReason] ? true : never) : never = true;
void sameReasons;
const Vacancy = z.enum(VACANCY_REASONS);

/** Fields every detail carries. */
const base = {
  id: z
    .string()
    .min(1)
    .describe('Derived from the stream record (`<eventID>:<kind>`): a redelivered record yields the same id, so consumers can drop duplicates'),
  lease: Name.describe('The lease name'),
  time: IsoTime.describe('When the change happened (the stream record), ISO 8601 UTC'),
};

/** The `detail` of a **Leader Elected** event: a lease got a holder (a new term, with its fencing token). */
export const LeaderElectedSchema = z
  .object({
    ...base,
    holder: Holder.describe('The new holder (holderIdentity)'),
    holderInstance: z.string().min(1).optional().describe('The holder process, unique per start-up'),
    previousHolder: Holder.optional().describe('The holder of the previous term, when there was one (may equal holder: re-elected after a gap)'),
    fencingToken: FencingToken.describe('The new term’s fencing token'),
    leaseTransitions: z.number().int().min(0),
    electedBy: ElectedBy.optional().describe('coordinator: elected; successor: the designated successor, handed the term by the leader stepping down or taking the lease as it fell vacant; self: acquired directly (fallback or NoCoordination)'),
    strategy: StrategyName.optional().describe('The strategy the term began under: a coordinator’s election, the one it elected by (electedStrategy); a term a worker took itself (electedBy self), the lease’s strategy an operator set, absent where none is; a successor’s, the lease’s, else the one the coordinator last elected by'),
    electionId: z.string().min(1).optional().describe('The coordinator’s election whose choice this term is; absent for a worker’s take (electedBy self or successor), even one that ended an open election'),
    address: HolderAddress,
  })
  .meta({ title: 'Leader Elected', description: 'A new term began: a holder was elected or acquired the lease, with a higher fencing token.' });

/** The `detail` of a **Leader Changed** event: the holder of a lease is now someone else. */
export const LeaderChangedSchema = z
  .object({
    ...base,
    previousHolder: Holder,
    holder: Holder,
    fencingToken: FencingToken.describe('The new term’s fencing token'),
    electedBy: ElectedBy.optional(),
    strategy: StrategyName.optional(),
    address: HolderAddress,
  })
  .meta({ title: 'Leader Changed', description: 'A new term began with a different holder than the previous term’s.' });

/** The `detail` of a **Leader Preemption Requested** event: the coordinator named a better candidate in `preferredHolder`. */
export const LeaderPreemptionRequestedSchema = z
  .object({
    ...base,
    holder: Holder.describe('The holder asked to yield'),
    preferredHolder: Holder.describe('The candidate it should yield to'),
    fencingToken: FencingToken.describe('The holder’s term'),
    strategy: StrategyName.optional(),
    electionId: z.string().min(1).optional().describe('The re-election that found the better candidate, if any'),
  })
  .meta({ title: 'Leader Preemption Requested', description: 'preferredHolder was set: the holder should stop and release the lease at its next renewal.' });

/** The `detail` of a **Lease Released** event: the holder gave the lease up. */
export const LeaseReleasedSchema = z
  .object({
    ...base,
    previousHolder: Holder,
    fencingToken: FencingToken.describe('The fencing token of the term that ended'),
    acquireTime: IsoTime.optional().describe('When the term that ended began'),
    preferredHolder: Holder.optional().describe('Set when a preemption was pending: the release most likely answered it'),
    rowDeleted: z.literal(true).optional().describe('The held lease row was deleted (an operator’s `aws dynamodb delete-item`): the term ended with it. An election on the row made again names this holder as previousHolder where the lease stream made the row; a worker that makes it itself (a direct acquisition) names none'),
  })
  .meta({ title: 'Lease Released', description: 'The holder was removed without a new election: released by the holder or an operator, or its row deleted while held (rowDeleted); a platform stop is Leader Lost.' });

/** The `detail` of a **Leader Lost** event: the platform (ECS, EC2) reported the holder's task or instance stopped, and its term was ended. */
export const LeaderLostSchema = z
  .object({
    ...base,
    previousHolder: Holder.describe('The holder whose term the platform ended'),
    fencingToken: FencingToken.describe('The fencing token of the term that ended: any write still in flight with it is rejected'),
    source: z.enum(['aws.ecs', 'aws.ec2']).describe('Which platform said so'),
    platformId: z.string().min(1).describe('The ECS task ARN or EC2 instance id that stopped'),
    reason: z.string().describe('The platform’s words: ECS stoppedReason (stopCode), or the EC2 state'),
  })
  .meta({ title: 'Leader Lost', description: 'The platform reported the holder’s ECS task stopped or EC2 instance stopped/terminated; its term was ended at once and the next election starts.' });

/** The `detail` of an **Election Started** event: the coordinator opened an election and pinged the candidates. */
export const ElectionStartedSchema = z
  .object({
    ...base,
    electionId: z.string().min(1),
    startedAt: IsoTime,
    deadline: IsoTime.describe('End of the ack window'),
    strategy: StrategyName,
    reelection: z.boolean().describe('The lease is held and its holder keeps leading while candidates answer'),
    holder: Holder.optional().describe('The holder during a re-election'),
    previousHolder: Holder.optional().describe('The holder whose expired or reported term this change ended, or whose held lease row an operator deleted (a row made again by the lease stream: vacancy noLease; absent on a row the tick made again before the lease stream saw the delete, whose Lease Released, rowDeleted, names that holder)'),
    vacancy: Vacancy.optional().describe('Why the lease was vacant (absent for a re-election)'),
    fencingToken: FencingToken.describe('The lease’s latest fencing token; the winner gets a higher one'),
  })
  .meta({ title: 'Election Started', description: 'An election was opened on the lease and its candidates pinged.' });

/** The `detail` of an **Election Failed** event: no candidate answered; the reason is on the lease. */
export const ElectionFailedSchema = z
  .object({
    ...base,
    electionId: z.string().min(1).optional(),
    reason: ElectionFailure.shape.reason,
    message: z.string(),
    strategy: StrategyName.optional(),
    fencingToken: FencingToken.optional().describe('The lease’s token at the failure: orders it (none from functions before 0.2.0)'),
  })
  .meta({ title: 'Election Failed', description: 'An election ended without a leader (recorded as lastElectionFailure); the next trigger tries again.' });

const candidateFields = {
  candidate: Name.describe('The candidate name'),
  binaryVersion: z.string(),
  emulationVersion: z.string(),
  priority: Priority.optional(),
  identity: z.string().min(1).optional().describe('The worker process behind the candidate'),
};

/** The `detail` of a **Candidate Joined** event: a worker declared its candidacy for a lease. */
export const CandidateJoinedSchema = z
  .object({
    ...base,
    ...candidateFields,
    preferredStrategies: z.array(StrategyName),
  })
  .meta({ title: 'Candidate Joined', description: 'A candidate row was created for the lease.' });

/** The `detail` of a **Candidate Expired** event: a stale candidate row was deleted. */
export const CandidateExpiredSchema = z
  .object({
    ...base,
    ...candidateFields,
    lastRenewTime: IsoTime.describe('The candidate’s last renewal'),
  })
  .meta({ title: 'Candidate Expired', description: 'A candidate row that had gone stale was deleted (garbage collection or TTL).' });

/** One zod schema per detail-type; the EventBridge `DetailType` is exactly the key. */
export const DETAIL_SCHEMAS = {
  'Leader Elected': LeaderElectedSchema,
  'Leader Changed': LeaderChangedSchema,
  'Leader Preemption Requested': LeaderPreemptionRequestedSchema,
  'Lease Released': LeaseReleasedSchema,
  'Leader Lost': LeaderLostSchema,
  'Election Started': ElectionStartedSchema,
  'Election Failed': ElectionFailedSchema,
  'Candidate Joined': CandidateJoinedSchema,
  'Candidate Expired': CandidateExpiredSchema,
} as const;

/** An EventBridge `detail-type` Conclave publishes. */
export type DetailType = keyof typeof DETAIL_SCHEMAS;
/** Every detail-type Conclave publishes. */
export const DETAIL_TYPES = Object.keys(DETAIL_SCHEMAS) as DetailType[];
/** The parsed `detail` of one detail-type. */
export type DetailOf<T extends DetailType> = z.output<(typeof DETAIL_SCHEMAS)[T]>;

/** A Conclave event before it goes on the bus: discriminated by `detailType`. */
export type ConclaveEvent = { [T in DetailType]: { detailType: T; detail: DetailOf<T> } }[DetailType];

/** Whether `s` is a detail-type Conclave publishes. */
export const isDetailType = (s: string): s is DetailType => Object.hasOwn(DETAIL_SCHEMAS, s);

/**
 * Reads an event as a consumer receives it (EventBridge `detail-type` and `detail`); throws a
 * ValidationError naming each bad field, or the unknown detail-type.
 */
export function parseEvent(detailType: string, detail: unknown): ConclaveEvent {
  if (typeof detailType !== 'string') {
    // the whole EventBridge event, handed over from JavaScript
    throw new ValidationError('Conclave event', [{ field: 'detail-type', message: `must be the event's detail-type, a string such as "Leader Elected", not ${typeof detailType === 'object' && detailType !== null ? 'an object' : String(detailType)}: call parseEvent(event['detail-type'], event.detail)` }]);
  }
  if (!isDetailType(detailType)) {
    throw new ValidationError('Conclave event', [{ field: 'detail-type', message: `"${detailType}" is not a Conclave detail-type; expected one of: ${DETAIL_TYPES.join(', ')}` }]);
  }
  const schema: z.ZodType = DETAIL_SCHEMAS[detailType];
  return { detailType, detail: parse(schema, detail, `"${detailType}" event detail`) } as ConclaveEvent;
}

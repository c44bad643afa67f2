import type { AttributeValue } from '@aws-sdk/client-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import * as z from 'zod';
import { CandidateItem, type Candidate } from '../schemas/candidate.js';
import { LeaseItem, type Lease } from '../schemas/lease.js';
import { parse } from '../schemas/validation.js';

const Image = z.record(z.string(), z.unknown());

/** The part of a DynamoDB stream record (Lambda's event shape) that the handlers read. */
export const StreamRecord = z.object({
  eventID: z.string().min(1),
  eventName: z.enum(['INSERT', 'MODIFY', 'REMOVE']),
  dynamodb: z.object({
    /** Epoch seconds (Lambda's shape). */
    ApproximateCreationDateTime: z.number().optional(),
    Keys: Image,
    NewImage: Image.optional(),
    OldImage: Image.optional(),
    SequenceNumber: z.string().min(1),
  }),
});
export type StreamRecord = z.infer<typeof StreamRecord>;

export interface Change<T> {
  eventID: string;
  eventName: StreamRecord['eventName'];
  /** Epoch ms of the change (from ApproximateCreationDateTime), or undefined when absent. */
  at: number | undefined;
  old: T | undefined;
  new: T | undefined;
}

function change<S extends z.ZodType>(schema: S, raw: unknown, what: string): Change<z.output<S>> {
  const r = parse(StreamRecord, raw, `${what} stream record`);
  const image = (img: Record<string, unknown> | undefined, side: string) =>
    img ? parse(schema, unmarshall(img as Record<string, AttributeValue>), `${side} image of ${what} stream record ${r.eventID}`) : undefined;
  const at = r.dynamodb.ApproximateCreationDateTime;
  return { eventID: r.eventID, eventName: r.eventName, at: at === undefined ? undefined : Math.round(at * 1000), old: image(r.dynamodb.OldImage, 'old'), new: image(r.dynamodb.NewImage, 'new') };
}

/** A leases-table stream record, both images parsed; a malformed one is a ValidationError naming the field. */
export const leaseChange = (raw: unknown): Change<Lease> => change(LeaseItem, raw, 'lease');
export const candidateChange = (raw: unknown): Change<Candidate> => change(CandidateItem, raw, 'candidate');

/** The schedule's event (EventBridge Scheduler / rule): only its shape is checked, nothing in it is used. */
export const ScheduledTick = z.looseObject({
  source: z.literal('aws.events'),
  'detail-type': z.literal('Scheduled Event'),
  time: z.iso.datetime(),
});
export const parseTick = (raw: unknown) => parse(ScheduledTick, raw, 'scheduled event');

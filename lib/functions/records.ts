import type { AttributeValue } from '@aws-sdk/client-dynamodb';
import * as z from 'zod';
import { REFUSED_SEEN, RefusedSeen, rowDigest } from '../coordinator/refused-session.js';
import { CandidateItem, type Candidate } from '../schemas/candidate.js';
import { LeaseItem, type Lease } from '../schemas/lease.js';
import { ValidationError, parse, type FieldIssue } from '../schemas/validation.js';
import { rowOf } from '../stores/item-store.js';

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
}).superRefine((r, ctx) => {
  // The streams carry new and old images (lib/tables.ts): a record without the image its event
  // implies cannot be told apart from a half-read one (the candidate handler took row = new ?? old).
  const needs = { INSERT: ['NewImage'], MODIFY: ['NewImage', 'OldImage'], REMOVE: ['OldImage'] } as const;
  for (const image of needs[r.eventName]) {
    if (!r.dynamodb[image]) ctx.addIssue({ code: 'custom', path: ['dynamodb', image], message: `is required on a ${r.eventName} record (the stream's view type is NEW_AND_OLD_IMAGES)` });
  }
});
export type StreamRecord = z.infer<typeof StreamRecord>;

/** How much later than a record's `at` its change may have happened: DynamoDB rounds ApproximateCreationDateTime down to the second. */
export const CHANGE_TIME_PRECISION_MS = 1000;

export interface Change<T> {
  eventID: string;
  eventName: StreamRecord['eventName'];
  /** Epoch ms of the change (from ApproximateCreationDateTime), or undefined when absent. */
  at: number | undefined;
  old: T | undefined;
  new: T | undefined;
  /**
   * The old image did not match the schema (and `old` is undefined): the row was broken before this
   * change, which repaired it, deleted it, or wrote over it. A broken new image is no Change: the
   * record is refused (poison).
   */
  oldInvalid?: ValidationError;
  /** With `oldInvalid`: the old image's attributes as they were (unmarshalled), for what can still be read from them. */
  oldAttributes?: Record<string, unknown>;
  /**
   * Held behind a failed record of its row (lib/functions/lambda.ts streamBatchHandler): the
   * handler publishes its events and nothing else (publishHeldBack); its work waits for its redelivery.
   */
  held?: true;
}

/**
 * An image's attributes from DynamoDB JSON. unmarshall throws a plain Error or TypeError on a
 * value that is not an AttributeValue ({"Q":1}, {"L":5}, null); here that is a ValidationError
 * naming each such attribute.
 */
function unmarshallImage(img: Record<string, unknown>, subject: string): Record<string, unknown> {
  // the whole image at once; attribute by attribute only to name the ones that are not attribute values
  if (!Object.prototype.hasOwnProperty.call(img, '__proto__')) {
    try {
      return rowOf(img as Record<string, AttributeValue>);
    } catch {
      // named below
    }
  }
  const out: Record<string, unknown> = {};
  const issues: FieldIssue[] = [];
  for (const [k, v] of Object.entries(img)) {
    try {
      Object.assign(out, rowOf({ [k]: v } as Record<string, AttributeValue>));
    } catch (e) {
      issues.push({ field: k, message: `must be a DynamoDB attribute value such as {"S":"..."} or {"N":"1"} (${(e as Error).message})` });
    }
  }
  if (issues.length) throw new ValidationError(subject, issues);
  return out;
}

/** A record's image as a row of `schema` (undefined when the record has none). */
function parseImage<S extends z.ZodType>(schema: S, img: Record<string, unknown> | undefined, side: 'new' | 'old', what: string, eventID: string): z.output<S> | undefined {
  if (!img) return undefined;
  const subject = `${side} image of ${what} stream record ${eventID}`;
  return parse(schema, unmarshallImage(img, subject), subject);
}

function change<S extends z.ZodType>(schema: S, raw: unknown, what: string): Change<z.output<S>> {
  const r = parse(StreamRecord, raw, `${what} stream record`);
  let old: z.output<S> | undefined;
  let oldInvalid: ValidationError | undefined;
  let oldAttributes: Record<string, unknown> | undefined;
  try {
    old = parseImage(schema, r.dynamodb.OldImage, 'old', what, r.eventID);
  } catch (e) {
    if (!(e instanceof ValidationError)) throw e;
    oldInvalid = e; // an operator's repair (or delete) of a broken row is no poison record
    try {
      oldAttributes = unmarshallImage(r.dynamodb.OldImage!, `old image of ${what} stream record ${r.eventID}`);
    } catch {
      // not even attribute values: nothing to read from it
    }
  }
  const neu = parseImage(schema, r.dynamodb.NewImage, 'new', what, r.eventID);
  const at = r.dynamodb.ApproximateCreationDateTime;
  return { eventID: r.eventID, eventName: r.eventName, at: at === undefined ? undefined : Math.round(at * 1000), old, new: neu, ...(oldInvalid ? { oldInvalid } : {}), ...(oldAttributes ? { oldAttributes } : {}) };
}

/** A leases-table stream record, both images parsed; a malformed one is a ValidationError naming the field. */
export const leaseChange = (raw: unknown): Change<Lease> => change(LeaseItem, raw, 'lease');
export const candidateChange = (raw: unknown): Change<Candidate> => change(CandidateItem, raw, 'candidate');

/**
 * A candidates-table record of the coordinator's own bookkeeping: its `refusedSeen` (when it first
 * saw the row as it is, lib/coordinator/refused-session.ts) left on a row the schema already
 * refused, and nothing else changed. The row's own writes are poison (their dead-lettering is the
 * operator's signal); this one is not: its images differ in `refusedSeen` alone, so it tells nothing
 * the record that made the row so did not.
 */
export interface RefusedSeenStamp {
  readonly refusedSeenStamp: true;
  readonly eventID: string;
  /** The row's key (`leaseName`, `name`). */
  readonly key: Record<string, unknown>;
  readonly seen: RefusedSeen;
}

/**
 * `raw` as a RefusedSeenStamp, or undefined for any other record: a MODIFY whose old image the
 * schema refuses, whose new image is the old one exactly but for `refusedSeen` (rowDigest: every
 * other attribute, sets in any order), and whose new `refusedSeen` is the coordinator's sighting of
 * that row (its digest). A writer that changes anything else beside a `refusedSeen` is not hidden
 * by it; nor is one that writes a `refusedSeen` of another row.
 */
export function refusedSeenStamp(raw: unknown): RefusedSeenStamp | undefined {
  const r = StreamRecord.safeParse(raw);
  if (!r.success || r.data.eventName !== 'MODIFY') return undefined;
  const images = (['OldImage', 'NewImage'] as const).map((side) => {
    try {
      return unmarshallImage(r.data.dynamodb[side]!, `${side} of candidate stream record ${r.data.eventID}`);
    } catch (e) {
      if (e instanceof ValidationError) return undefined; // not even attribute values: the record is poison (candidateChange)
      throw e;
    }
  });
  const [old, neu] = images;
  if (!old || !neu || CandidateItem.safeParse(old).success) return undefined;
  const seen = RefusedSeen.safeParse(neu[REFUSED_SEEN]);
  const digest = rowDigest(neu);
  if (!seen.success || seen.data.digest !== digest || rowDigest(old) !== digest) return undefined;
  return { refusedSeenStamp: true, eventID: r.data.eventID, key: unmarshallImage(r.data.dynamodb.Keys, `keys of candidate stream record ${r.data.eventID}`), seen: seen.data };
}

/** What the candidate stream reads of a record: the coordinator's `refusedSeen` alone (RefusedSeenStamp), or a change (candidateChange). */
export const candidateRecord = (raw: unknown): RefusedSeenStamp | Change<Candidate> => refusedSeenStamp(raw) ?? candidateChange(raw);

/** The schedule's event (EventBridge Scheduler / rule): only its shape is checked, nothing in it is used. */
export const ScheduledTick = z.looseObject({
  source: z.literal('aws.events'),
  'detail-type': z.literal('Scheduled Event'),
  time: z.iso.datetime(),
});
export const parseTick = (raw: unknown) => parse(ScheduledTick, raw, 'scheduled event');

/**
 * Poison records: stream records that fail validation, or whose handling meets a row that does (a
 * lease's session row the schema refuses). No retry can read them, so a stream handler
 * sends each straight to its dead-letter destination with the record itself (Lambda's on-failure
 * destination would get only its shard position, useless once the stream trims it at 24 h) and
 * reports it processed, so it does not hold up the records behind it. In AWS the destination is
 * the function's SQS dead-letter queue; locally, the dead-letter file.
 */
import { SendMessageCommand, type SQSClient } from '@aws-sdk/client-sqs';
import type { DynamoDBRecord } from 'aws-lambda';
import { cut, type FieldIssue, type ValidationError } from '../schemas/validation.js';

/**
 * How long after its change a record failing on a fault is retried (the lease stream's source
 * retries without bound): half the stream's retention (24 h), so the records behind it (its
 * lease's, and the shard's past its batch: the batch's records of other leases run meanwhile,
 * lib/functions/lambda.ts) still have the other half before DynamoDB trims them. By then its work
 * is done by others — the tick reconciles its lease every minute, its holder's backstop read
 * (minutes) has ended a term its mark would have ended — and its events went out at its first
 * failure.
 */
export const STUCK_RECORD_MS = 12 * 3_600_000;

/** One record dead-lettered by its function with its content (the SQS message body is its JSON). */
export interface PoisonRecord {
  /**
   * `poisonRecord`: no retry can read it; `stuckRecord`: it failed on a fault until STUCK_RECORD_MS
   * after its change. Tells these messages from Lambda's on-failure records in the same queue.
   */
  kind: 'poisonRecord' | 'stuckRecord';
  /** The function that could not read it (lib/wiring.ts name). */
  function: string;
  /** The ValidationError's message, or the fault's. */
  reason: string;
  issues: readonly FieldIssue[];
  eventID: string | undefined;
  sequenceNumber: string | undefined;
  /** When it was dead-lettered (ISO 8601). */
  at: string;
  /** The record as delivered (parts named in `omitted` left out to fit a message). */
  record: unknown;
  /** Parts of the record left out so the message fits SQS's 256 KB, e.g. `dynamodb.OldImage`. */
  omitted?: string[];
}

/** Where poison records go. Throws when it could not take one: the record is then retried. */
export type DeadLetterSink = (p: PoisonRecord) => Promise<void>;

export function poisonRecord(fn: string, r: DynamoDBRecord, error: Pick<ValidationError, 'message' | 'issues'>, at: number): PoisonRecord {
  const raw = r as { eventID?: unknown; dynamodb?: { SequenceNumber?: unknown } };
  const str = (v: unknown) => (typeof v === 'string' ? v : undefined);
  return { kind: 'poisonRecord', function: fn, reason: error.message, issues: error.issues, eventID: str(raw.eventID), sequenceNumber: str(raw.dynamodb?.SequenceNumber), at: new Date(at).toISOString(), record: r };
}

/** `r`, failing on `error` since its change STUCK_RECORD_MS ago, as it is dead-lettered. */
export function stuckRecord(fn: string, r: DynamoDBRecord, error: Error, at: number): PoisonRecord {
  return { ...poisonRecord(fn, r, { message: `${error.name}: ${error.message}`, issues: [] }, at), kind: 'stuckRecord' };
}

/** Milliseconds since `r`'s change at `now`, or undefined where the record has no creation time. */
export function recordAgeMs(r: DynamoDBRecord, now: number): number | undefined {
  const created = (r as { dynamodb?: { ApproximateCreationDateTime?: unknown } }).dynamodb?.ApproximateCreationDateTime;
  return typeof created === 'number' ? now - created * 1000 : undefined;
}

/** SQS's largest message body. */
export const MAX_MESSAGE_BYTES = 256 * 1024;

/**
 * `value` as JSON that SQS takes in a body: JSON.stringify escapes control characters and lone
 * surrogates, but leaves U+FFFE and U+FFFF as they are, which DynamoDB stores and SQS refuses
 * (InvalidMessageContents): the poison record holding one was never dead-lettered, only retried.
 * They can stand only inside strings, where their escapes read back the same.
 */
export const sqsJson = (value: unknown): string => JSON.stringify(value).replace(/[\uFFFE\uFFFF]/g, (c) => `\\u${c.charCodeAt(0).toString(16)}`);

/** What a message cut to fit keeps of the reason, of the issues, and of each issue's field and message (characters). */
const FITTED = { reason: 4096, issues: 20, issueText: 512 } as const;

/**
 * The message body of `p`, at most `max` bytes: a record with two 400 KB images does not fit, so
 * the old image goes first, then the new one, then the whole record but its keys and position
 * (named in `omitted`); the issues say what was wrong either way. Cut, the reason and the issues
 * are bounded whatever the row (a field's path holds its keys: 25 label names of 15 KB made a
 * message of 300 KB, refused every time): escaped, a character is 6 bytes at most, so
 * (4096 + 20 × 2 × 512) × 6 bytes < 150 KB.
 */
export function poisonMessage(p: PoisonRecord, max = MAX_MESSAGE_BYTES): string {
  const body = sqsJson(p);
  if (Buffer.byteLength(body, 'utf8') <= max) return body;
  const r = (p.record ?? {}) as { dynamodb?: Record<string, unknown> } & Record<string, unknown>;
  const reason = cut(p.reason, FITTED.reason);
  const issues = p.issues.slice(0, FITTED.issues).map((i) => ({ field: cut(i.field, FITTED.issueText), message: cut(i.message, FITTED.issueText) }));
  const attempts: [string[], unknown][] = [
    [['dynamodb.OldImage'], { ...r, dynamodb: { ...r.dynamodb, OldImage: undefined } }],
    [['dynamodb.OldImage', 'dynamodb.NewImage'], { ...r, dynamodb: { ...r.dynamodb, OldImage: undefined, NewImage: undefined } }],
    [['(all but the keys)'], { eventID: p.eventID, eventName: r['eventName'], dynamodb: { Keys: r.dynamodb?.['Keys'], SequenceNumber: p.sequenceNumber } }],
  ];
  for (const [omitted, record] of attempts) {
    const fitted = sqsJson({ ...p, issues, reason, record, omitted });
    if (Buffer.byteLength(fitted, 'utf8') <= max) return fitted;
  }
  return sqsJson({ ...p, reason, issues, record: undefined, omitted: ['record'] });
}

/** Poison records to an SQS queue: one SendMessage each, the record's JSON as the body. */
export function sqsDeadLetter(client: SQSClient, queueUrl: string): DeadLetterSink {
  return async (p) => {
    await client.send(new SendMessageCommand({ QueueUrl: queueUrl, MessageBody: poisonMessage(p) }));
  };
}

/** A function with no dead-letter queue configured: the record fails, so Lambda's retries and on-failure destination take it. */
export const noDeadLetter: DeadLetterSink = async (p) => {
  throw new Error(`no dead-letter queue configured for the ${p.function} function; the poison record ${p.eventID} is retried instead (${p.reason})`);
};

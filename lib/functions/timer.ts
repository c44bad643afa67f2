import { SendMessageCommand, type SQSClient } from '@aws-sdk/client-sqs';
import * as z from 'zod';
import { unmarkedHoldMs } from '../election/decide.js';
import { Millis, Name } from '../schemas/common.js';
import { parseEvent, type ConclaveEvent } from '../events/schemas.js';
import { LeaseItem } from '../schemas/lease.js';
import { ValidationError, parse } from '../schemas/validation.js';
import { sqsJson } from './dead-letter.js';

/** "Reconcile this lease when its election's ack window ends." */
export const TimerMessage = z.object({ lease: Name, electionId: z.string().min(1), deadline: Millis }).strict();
export type TimerMessage = z.infer<typeof TimerMessage>;

/** "Reconcile this lease when its term runs out": a held lease whose holder looked silent (ReconcileOutcome.recheckAt). */
export const TermEndMessage = z.object({ lease: Name, termEnd: Millis }).strict();
export type TermEndMessage = z.infer<typeof TermEndMessage>;

/**
 * "Mark this ended term on its holder's session, then reconcile": a mark the lease stream's function
 * could not write (the session row's map full of marks its owner may not have read, or too many lost
 * races). The lease's next election is held meanwhile, long enough without the mark (unmarkedHoldMs).
 */
export const MarkEndedMessage = z
  .object({
    lease: Name,
    markEnded: z
      .object({
        /** Absent: the ended term's row was broken, its holder's name unreadable (its session and token still were). */
        holderIdentity: z.string().min(1).optional(),
        session: z.string().min(1),
        fencingToken: z.number().int().min(0),
        leaseDurationSeconds: z.number().int().min(1),
        /** The row was deleted (the held election is the delete's, reconcileAfterDelete), else released or taken. */
        deleted: z.boolean(),
        /**
         * A deleted row's term as its old image showed it, which reconcileAfterDelete judges the
         * re-applied hold by (deleteHoldMs): its last stamp, its holder's instance and the token it
         * was led with. Absent (a message queued before they were carried, or a release): the
         * whole hold, a lease duration from the mark.
         */
        renewTime: LeaseItem.shape.renewTime,
        holderInstance: LeaseItem.shape.holderInstance,
        termToken: LeaseItem.shape.termToken,
      })
      .strict(),
    /** When the mark was first refused: it is tried again for markAgainForMs from then. */
    since: Millis,
    /** Tries refused so far. */
    attempt: z.number().int().min(1),
  })
  .strict();
export type MarkEndedMessage = z.infer<typeof MarkEndedMessage>;

/** The wait before marking again after `attempt` refusals: 1 s, doubling, at most the held term's lease duration. */
export const markAgainDelayMs = (attempt: number, leaseDurationSeconds: number): number => Math.min(leaseDurationSeconds * 1000, republishDelayMs(attempt));

/**
 * How long a refused mark is tried again, from its first refusal (`since`): the unmarked hold
 * (unmarkedHoldMs) the lease's next election was given before the mark was deferred, which ends
 * no later. By then the ended term's holder has read the lease itself and stopped (the hold's
 * premise), and a mark landing later cuts no hold: it has nothing left to do. Refused past it, the
 * mark is given up, logged (onMarkEnded): not dead-lettered, as nothing is left for an operator
 * to do, the map clearing by itself as its owner renews or its session ends.
 */
export const markAgainForMs = (leaseDurationSeconds: number): number => unmarkedHoldMs(leaseDurationSeconds);

/**
 * "Publish these events again": events a stream record derived while EventBridge failed. The
 * record's election went on regardless; its events wait here, with the ids they were derived with.
 */
export const RepublishMessage = z
  .object({
    republish: z.array(z.object({ detailType: z.string(), detail: z.record(z.string(), z.unknown()) }).strict()).min(1),
    /** When publishing them first failed: they are retried for REPUBLISH_FOR_MS from then. */
    since: Millis,
    /** Publishing attempts that failed so far (the stream handler's included). */
    attempt: z.number().int().min(1),
  })
  .strict()
  .transform((m, ctx) => {
    const events: ConclaveEvent[] = [];
    m.republish.forEach((e, i) => {
      try {
        // checked, and republished as it was derived: a field a newer release added (a deploy or a
        // rollback between the deferral and this) is kept, not stripped under the same event id
        const parsed = parseEvent(e.detailType, e.detail);
        events.push({ ...parsed, detail: { ...e.detail, ...parsed.detail } } as ConclaveEvent);
      } catch (err) {
        if (!(err instanceof ValidationError)) throw err;
        for (const issue of err.issues) {
          const at = issue.field === 'detail-type' ? ['detailType'] : ['detail', ...(issue.field === '(root)' ? [] : issue.field.split('.'))];
          ctx.addIssue({ code: 'custom', path: ['republish', i, ...at], message: issue.message });
        }
      }
    });
    return { events, since: m.since, attempt: m.attempt };
  });
export type RepublishMessage = z.output<typeof RepublishMessage>;

/** How long deferred events are retried before their message is left to the queue's redrive (and so its dead-letter queue). */
export const REPUBLISH_FOR_MS = 24 * 60 * 60 * 1000;
/** The wait before publishing again after `attempt` failures: 1 s, doubling, at most SQS's 15 minutes. */
export const republishDelayMs = (attempt: number): number => Math.min(900_000, 1000 * 2 ** Math.max(0, attempt - 1));

/** What goes on the timer queue, as sent (events unparsed). */
export type TimerQueueMessage = TimerMessage | TermEndMessage | MarkEndedMessage | { republish: ConclaveEvent[]; since: number; attempt: number };

function json(body: string): unknown {
  try {
    return JSON.parse(body);
  } catch {
    return body; // not JSON: the schema reports it as the wrong type at (root)
  }
}

export const parseTimerMessage = (body: string, subject: string): TimerMessage => parse(TimerMessage, json(body), subject);

/** A message of the timer queue: an election deadline, a term's end, a mark to write again, or events to publish again. */
export function parseTimerQueueMessage(
  body: string,
  subject: string,
): { kind: 'deadline'; message: TimerMessage } | { kind: 'termEnd'; message: TermEndMessage } | { kind: 'markEnded'; message: MarkEndedMessage } | { kind: 'republish'; message: RepublishMessage } {
  const raw = json(body);
  if (typeof raw === 'object' && raw !== null && 'markEnded' in raw) return { kind: 'markEnded', message: parse(MarkEndedMessage, raw, subject) };
  if (typeof raw === 'object' && raw !== null && 'republish' in raw) return { kind: 'republish', message: parse(RepublishMessage, raw, subject) };
  if (typeof raw === 'object' && raw !== null && 'termEnd' in raw) return { kind: 'termEnd', message: parse(TermEndMessage, raw, subject) };
  return { kind: 'deadline', message: parse(TimerMessage, raw, subject) };
}

/**
 * Where election deadlines (and events deferred by an EventBridge outage) are scheduled: SQS with
 * a per-message delay in AWS, memory locally.
 */
export interface TimerQueue {
  schedule(message: TimerQueueMessage, delayMs: number): Promise<void>;
}

/** The longest delay SQS gives a message (900 s): a timer further off fires early and is put back. */
export const MAX_TIMER_DELAY_MS = 900_000;

/** SQS allows 0–900 s of delay, in whole seconds; rounding up means never firing early. */
export const sqsDelaySeconds = (delayMs: number): number => Math.min(MAX_TIMER_DELAY_MS / 1000, Math.max(0, Math.ceil(delayMs / 1000)));

/** A timer queue message as an SQS body: events to publish again may carry characters SQS refuses (U+FFFE, U+FFFF), escaped. */
export const timerQueueBody = (message: TimerQueueMessage): string => sqsJson(message);

export function sqsTimerQueue(client: SQSClient, queueUrl: string): TimerQueue {
  return {
    async schedule(message, delayMs) {
      await client.send(new SendMessageCommand({ QueueUrl: queueUrl, MessageBody: timerQueueBody(message), DelaySeconds: sqsDelaySeconds(delayMs) }));
    },
  };
}

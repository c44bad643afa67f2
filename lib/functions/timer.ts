import { SendMessageCommand, type SQSClient } from '@aws-sdk/client-sqs';
import * as z from 'zod';
import { Millis, Name } from '../schemas/common.js';
import { parse } from '../schemas/validation.js';

/** "Reconcile this lease when its election's ack window ends." */
export const TimerMessage = z.object({ lease: Name, electionId: z.string().min(1), deadline: Millis }).strict();
export type TimerMessage = z.infer<typeof TimerMessage>;

export const parseTimerMessage = (body: string, subject: string): TimerMessage => {
  let raw: unknown;
  try {
    raw = JSON.parse(body);
  } catch {
    raw = body; // not JSON: the schema reports it as the wrong type at (root)
  }
  return parse(TimerMessage, raw, subject);
};

/** Where election deadlines are scheduled: SQS with a per-message delay in AWS, memory locally. */
export interface TimerQueue {
  schedule(message: TimerMessage, delayMs: number): Promise<void>;
}

/** SQS allows 0–900 s of delay, in whole seconds; rounding up means never firing early. */
export const sqsDelaySeconds = (delayMs: number): number => Math.min(900, Math.max(0, Math.ceil(delayMs / 1000)));

export function sqsTimerQueue(client: SQSClient, queueUrl: string): TimerQueue {
  return {
    async schedule(message, delayMs) {
      await client.send(new SendMessageCommand({ QueueUrl: queueUrl, MessageBody: JSON.stringify(message), DelaySeconds: sqsDelaySeconds(delayMs) }));
    },
  };
}

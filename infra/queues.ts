/**
 * The construct's queues: one shape for every dead-letter queue, and the encryption all its queues
 * share.
 */
import { Duration, Validations } from 'aws-cdk-lib';
import type * as kms from 'aws-cdk-lib/aws-kms';
import * as sqs from 'aws-cdk-lib/aws-sqs';
import type { Construct } from 'constructs';

/** A customer-managed key for a queue, or SQS-managed SSE (the default) without one. */
export const queueEncryption = (key: kms.IKey | undefined): Pick<sqs.QueueProps, 'encryption' | 'encryptionMasterKey'> =>
  key ? { encryption: sqs.QueueEncryption.KMS, encryptionMasterKey: key } : {};

export interface DeadLetterQueueOptions {
  /** @default SQS-managed SSE */
  readonly encryptionKey?: kms.IKey | undefined;
  /**
   * What sends failures here when that is not a queue's redrive policy (a stream source's or an
   * asynchronous invocation's on-failure destination, a rule target's dead-letter queue), to
   * acknowledge cdk-nag's AwsSolutions-SQS3 ("the queue has no DLQ") with: this queue is the DLQ.
   * @default none: a redrive target, which cdk-nag recognises by itself
   */
  readonly deadLetterQueueOf?: string;
}

/**
 * A dead-letter queue: HTTPS only, messages kept 14 days (SQS's longest) to be read and replayed,
 * encrypted like every queue of the construct.
 */
export function deadLetterQueue(scope: Construct, id: string, options: DeadLetterQueueOptions = {}): sqs.Queue {
  const queue = new sqs.Queue(scope, id, { enforceSSL: true, retentionPeriod: Duration.days(14), ...queueEncryption(options.encryptionKey) });
  if (options.deadLetterQueueOf) {
    Validations.of(queue).acknowledge({
      id: 'AwsSolutions::AwsSolutions-SQS3',
      reason: `This queue is ${options.deadLetterQueueOf}: it is itself the dead-letter queue (cdk-nag recognises only redrive policies as DLQs).`,
    });
  }
  return queue;
}

import { InternalServerError, ProvisionedThroughputExceededException, ThrottlingException, type DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { systemClock } from '../lib/clock.js';

/** What a worker's DynamoDB client suffers while a `dynamodb` fault is in force. */
export type DynamoDBFaultMode = 'error' | 'throttle' | 'latency' | 'lostResponse';
export interface DynamoDBFault {
  mode: DynamoDBFaultMode;
  /** Share of requests hit, 0–1. */
  rate: number;
  /** For `latency`: how long a hit request waits before it is sent. */
  latencyMs?: number;
}

/** The request a fault is chosen for: its table and command (`UpdateItemCommand`, …). */
export interface DynamoDBRequest {
  table: string | undefined;
  command: string;
}

/**
 * An SDK middleware that injects the fault `current` names for a request (by its table and
 * command: a fault may hit only some requests) into each attempt of it. It sits
 * inside the SDK's retry middleware (finalizeRequest, low priority), so throttling and server
 * errors are retried with the SDK's own backoff, as in AWS:
 * - `throttle`: ProvisionedThroughputExceededException or ThrottlingException, nothing sent;
 * - `error`: InternalServerError (500), nothing sent;
 * - `latency`: the request waits, then goes out (the database applies it late);
 * - `lostResponse`: the request is applied, then its answer is lost (a reset connection) — the
 *   SDK retries a write that already happened.
 */
export function injectDynamoDBFaults(
  client: DynamoDBClient,
  current: (request: DynamoDBRequest) => DynamoDBFault | undefined,
  random: () => number,
  onInjected: (fault: DynamoDBFault) => void,
): void {
  client.middlewareStack.add(
    (next, context) => async (args) => {
      const f = current({ table: (args.input as { TableName?: string }).TableName, command: context.commandName ?? '' });
      if (!f || random() >= f.rate) return next(args);
      onInjected(f);
      switch (f.mode) {
        case 'latency':
          await systemClock.sleep(f.latencyMs ?? 1_000);
          return next(args);
        case 'throttle':
          throw random() < 0.5
            ? new ProvisionedThroughputExceededException({ message: 'chaos: provisioned throughput exceeded', $metadata: { httpStatusCode: 400 } })
            : new ThrottlingException({ message: 'chaos: rate exceeded', $metadata: { httpStatusCode: 400 } });
        case 'error':
          throw new InternalServerError({ message: 'chaos: internal server error', $metadata: { httpStatusCode: 500 } });
        case 'lostResponse': {
          await next(args);
          throw Object.assign(new Error('chaos: connection reset after the request was sent'), { name: 'TimeoutError', code: 'ECONNRESET', $metadata: {} });
        }
      }
    },
    { step: 'finalizeRequest', priority: 'low', name: 'chaosFaults' },
  );
}

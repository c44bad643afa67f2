/**
 * The errors the model throws: the AWS SDK's own classes, shaped as the SDK shapes what it
 * deserializes from DynamoDB, so code that branches on `e.name`, `instanceof` or
 * `CancellationReasons` (lib/stores/errors.ts, lib/sdk/fencing.ts) cannot tell the model from the
 * service. DynamoDB's ValidationException is not a modeled class in the SDK: it arrives as a
 * DynamoDBServiceException named `ValidationException`, and so it does here.
 */
import {
  ConditionalCheckFailedException,
  DynamoDBServiceException,
  IdempotentParameterMismatchException,
  InternalServerError,
  ProvisionedThroughputExceededException,
  RequestLimitExceeded,
  ResourceInUseException,
  ResourceNotFoundException,
  ThrottlingException,
  TransactionCanceledException,
  TransactionConflictException,
  type AttributeValue,
  type CancellationReason,
} from '@aws-sdk/client-dynamodb';

/** What the SDK puts in `$metadata` of an error response (attempts are set by the client). */
const errorMetadata = () => ({ httpStatusCode: 400, attempts: 1, totalRetryDelay: 0 });

/** DynamoDB refused the request's shape or an expression: `ValidationException`, a client fault. */
export function validationError(message: string): DynamoDBServiceException {
  return new DynamoDBServiceException({ name: 'ValidationException', $fault: 'client', message, $metadata: errorMetadata() });
}

/**
 * Builds an error without a stack trace: a lost condition is a normal answer, frequent in a
 * simulation, and capturing a stack costs more than the rest of the request (the SDK's stack
 * would only show its deserializer anyway; an injected fault's, the simulator's network).
 */
function withoutStack<E>(make: () => E): E {
  const limit = Error.stackTraceLimit;
  Error.stackTraceLimit = 0;
  try {
    return make();
  } finally {
    Error.stackTraceLimit = limit;
  }
}

/** A condition did not hold; `item` only when ReturnValuesOnConditionCheckFailure=ALL_OLD and the item exists. */
export function conditionalCheckFailed(item: Record<string, AttributeValue> | undefined): ConditionalCheckFailedException {
  return withoutStack(() => new ConditionalCheckFailedException({ message: 'The conditional request failed', $metadata: errorMetadata(), ...(item ? { Item: item } : {}) }));
}

/** DynamoDB's wording, which lib/stores/errors.ts' isConditionFailed reads the codes from. */
export function transactionCanceled(reasons: CancellationReason[]): TransactionCanceledException {
  const message = `Transaction cancelled, please refer cancellation reasons for specific reasons [${reasons.map((r) => r.Code).join(', ')}]`;
  return withoutStack(() => new TransactionCanceledException({ message, Message: message, CancellationReasons: reasons, $metadata: errorMetadata() }));
}

/** The table does not exist (or is being deleted). */
export function tableNotFound(table: string): ResourceNotFoundException {
  return new ResourceNotFoundException({ message: `Requested resource not found: Table: ${table} not found`, $metadata: errorMetadata() });
}

/** CreateTable of a table that exists. */
export function resourceInUse(message: string): ResourceInUseException {
  return new ResourceInUseException({ message, $metadata: errorMetadata() });
}

/** A transaction's client token came again with another request within ten minutes. */
export function idempotentParameterMismatch(): IdempotentParameterMismatchException {
  return new IdempotentParameterMismatchException({ message: 'The request uses the same client token as a previous, but non-identical request.', $metadata: errorMetadata() });
}

/**
 * A feature of DynamoDB the model does not implement (a legacy parameter, a parallel scan): a
 * plain Error, never an AWS one, so it cannot pass for an answer DynamoDB would give.
 */
export class UnsupportedByModelError extends Error {
  /** Always `UnsupportedByModelError`. */
  override readonly name = 'UnsupportedByModelError';
  constructor(what: string) {
    super(`the DynamoDB model does not support ${what}; add it to sim/dynamodb-model with a contract case (test/sim/contract.test.ts)`);
  }
}

/**
 * Errors a simulator injects (through a client's `intercept`), as the SDK would surface them.
 * Throttling, internal errors and timeouts are what the SDK retries on its own.
 */
export const faults = {
  /** Provisioned or on-demand table throughput exceeded (HTTP 400, retried by the SDK). */
  provisionedThroughputExceeded: () =>
    withoutStack(
      () =>
        new ProvisionedThroughputExceededException({ message: 'The level of configured provisioned throughput for the table was exceeded. Consider increasing your provisioning level with the UpdateTable API.', $metadata: errorMetadata() }),
    ),
  /** Control-plane or account throttling (HTTP 400, retried by the SDK). */
  throttling: () => new ThrottlingException({ message: 'Rate of requests exceeds the allowed throughput.', $metadata: errorMetadata() }),
  /** The account's request rate limit (HTTP 400, retried by the SDK). */
  requestLimitExceeded: () => new RequestLimitExceeded({ message: 'Throughput exceeds the current throughput limit for your account.', $metadata: errorMetadata() }),
  /** A 500 from DynamoDB: the write may or may not have been applied (retried by the SDK). */
  internalServerError: () =>
    new InternalServerError({ message: 'Internal server error', $metadata: { ...errorMetadata(), httpStatusCode: 500 } }),
  /** Another transaction holds the item (HTTP 400; not retried by the SDK's standard mode). */
  transactionConflict: () => new TransactionConflictException({ message: 'Transaction is ongoing for the item', $metadata: errorMetadata() }),
  /**
   * The answer never came (a socket timeout): no response, so no `$metadata`, as the SDK's
   * NodeHttpHandler reports it. The request may have been applied. Retried by the SDK.
   */
  timeout: () => withoutStack(() => Object.assign(new Error('Connection timed out after 1000 ms'), { name: 'TimeoutError' })),
  /**
   * IAM refused the request (HTTP 400, not retried): not a modeled class in the SDK, so a
   * DynamoDBServiceException named `AccessDeniedException`, as the SDK deserializes it.
   */
  accessDenied: (action: string, table: string) =>
    withoutStack(
      () =>
        new DynamoDBServiceException({
          name: 'AccessDeniedException',
          $fault: 'client',
          message: `User: arn:aws:sts::000000000000:assumed-role/worker/sim is not authorized to perform: dynamodb:${action} on resource: arn:aws:dynamodb:us-east-1:000000000000:table/${table} because no identity-based policy allows the dynamodb:${action} action`,
          $metadata: errorMetadata(),
        }),
    ),
};

/** The SDK's standard retry strategy: throttling and transient errors are retried; the rest are not. */
const RETRYABLE = new Set([
  'BandwidthLimitExceeded',
  'EC2ThrottledException',
  'LimitExceededException',
  'PriorRequestNotComplete',
  'ProvisionedThroughputExceededException',
  'RequestLimitExceeded',
  'RequestThrottled',
  'RequestThrottledException',
  'SlowDown',
  'ThrottledException',
  'Throttling',
  'ThrottlingException',
  'TooManyRequestsException',
  'TransactionInProgressException',
  'TimeoutError',
  'RequestTimeout',
  'RequestTimeoutException',
]);

/** Whether the real client would retry `e` (standard retry mode). */
export function isRetryable(e: unknown): boolean {
  if (!(e instanceof Error)) return false;
  // errors the service model marks retryable (ReplicatedWriteConflictException): the SDK retries them by that trait
  if (RETRYABLE.has(e.name) || (e as { $retryable?: unknown }).$retryable !== undefined) return true;
  const status = (e as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode;
  return status === 500 || status === 502 || status === 503 || status === 504 || (e as { $fault?: string }).$fault === 'server';
}

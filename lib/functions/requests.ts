/**
 * How long each try of a function's AWS request waits for its answer (and for its connection,
 * FUNCTION_CONNECT_TIMEOUT_MS): the AWS SDK sets no timeout, so a request on a connection that
 * never answers (a half-open socket) held its record, or the tick, until the function's deadline.
 *
 * 5 s, the least a worker gives a whole request (MIN_REQUEST_BOUND_MS, lib/sdk/bounded-client.ts):
 * a DynamoDB the workers ride out must not fail the functions. At 2 s a try, answers in 2.5 s
 * failed every tick, timer and stream invocation (elections left to the workers' fallbacks), and
 * the lease stream, retried without limit, stopped at its first record.
 *
 * The SDK tries DynamoDB 4 times (its default; a timed-out try is tried again after tens of
 * milliseconds), so a request on a connection that never answers gives up after about 20 s
 * (test/functions/request-timeout.test.ts). Each invocation keeps that from its deadline: a batch
 * starts no record with less than 25 s of its 60 s left (lib/functions/lambda.ts
 * BATCH_DEADLINE_MARGIN_MS), the tick no reconcile with less than 30 s of its 300 s
 * (lib/coordinator/tick.ts TICK_DEFAULTS.marginMs). The events' publish makes several such
 * requests (its attempts, a call per 10 events), so it carries a bound of its own besides:
 * PUBLISH_WITHIN_MS (lib/events/publisher.ts).
 */
export const FUNCTION_REQUEST_TIMEOUT_MS = 5_000;
export const FUNCTION_CONNECT_TIMEOUT_MS = 1_000;

/** The client configuration every function's AWS client is made with: each try bounded, as above. */
export const bounded = { requestHandler: { requestTimeout: FUNCTION_REQUEST_TIMEOUT_MS, connectionTimeout: FUNCTION_CONNECT_TIMEOUT_MS, throwOnRequestTimeout: true } } as const;

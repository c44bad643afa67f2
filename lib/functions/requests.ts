/**
 * How long each try of a function's AWS request waits for its answer (and for its connection,
 * FUNCTION_CONNECT_TIMEOUT_MS): the AWS SDK sets no timeout, so a request on a connection that
 * never answers (a half-open socket) held its record, or the tick, until the function's deadline,
 * and a batch's margin before it (lib/functions/lambda.ts BATCH_DEADLINE_MARGIN_MS, 10 s) could
 * not count on a bound. A healthy answer takes milliseconds; the SDK tries a timed-out request
 * again: a read on a connection that never answers gives up after about 8 s (4 tries,
 * test/functions/request-timeout.test.ts), within that margin. The events' publish makes several
 * such requests (its attempts, a call per 10 events), so it carries a bound of its own besides:
 * PUBLISH_WITHIN_MS (lib/events/publisher.ts).
 */
export const FUNCTION_REQUEST_TIMEOUT_MS = 2_000;
export const FUNCTION_CONNECT_TIMEOUT_MS = 1_000;

/** The client configuration every function's AWS client is made with: each try bounded, as above. */
export const bounded = { requestHandler: { requestTimeout: FUNCTION_REQUEST_TIMEOUT_MS, connectionTimeout: FUNCTION_CONNECT_TIMEOUT_MS, throwOnRequestTimeout: true } } as const;

/**
 * An in-memory model of DynamoDB for deterministic simulation (issue 16): the operations
 * Conclave uses, with DynamoDB's semantics, checked against DynamoDB Local by
 * test/sim/contract.test.ts. Time and randomness are injected; nothing here reads a clock.
 */
export { DynamoDBModel, type DynamoDBModelOptions, type TtlDeletion } from './model.js';
export type { Apply, Intercept, ModelClientOptions, ModelRequest } from './client.js';
export { UnsupportedByModelError, faults, isRetryable } from './errors.js';
export { ModelStream, TTL_IDENTITY, type ReadOptions, type StreamViewType } from './streams.js';

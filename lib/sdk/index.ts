/**
 * The worker SDK (`@conclave/sdk`): everything a worker process imports to take part in
 * Conclave's elections.
 *
 * Its five long-lived objects (LeaderElector, LeaseCandidate, IdentityLeaseHeartbeat, Session and,
 * from `@conclave/sdk/push`, PushChannel) are built and run the same way: one options object (data options,
 * `tables`, `client`, callbacks, `onError`, test hooks such as `clock`) given to the constructor,
 * validated at once (a ValidationError names each bad field and what to do) and exposed frozen as
 * `options`; then `run(signal)`, once, which takes part until the signal aborts and resolves after
 * cleaning up. `ready` settles with the first write.
 *
 * Schemas (zod) are exported as `…Schema`; the option types are the input users write.
 *
 * @packageDocumentation
 */
export { LeaderElector } from './elector.js';
export type { StopReason } from './step.js';
export {
  LeaderElectorOptionsSchema,
  type LeaderElectorOptions,
  type ResolvedLeaderElectorOptions,
  type LeaderCallbacks,
  type LeadingTerm,
  type ElectorRunPhase,
  type ElectorStats,
} from './elector-options.js';
export {
  healthCheck,
  serveHealth,
  leaseHealth,
  HealthResponseSchema,
  LeaseHealthSchema,
  ServeHealthOptionsSchema,
  HEALTH_CHECKS,
  HEALTH_HEADERS,
  type HealthHandler,
  type HealthNext,
  type HealthResponse,
  type HealthServer,
  type LeaseHealth,
  type ServeHealthOptions,
} from './health.js';
export { getLeader, GetLeaderOptionsSchema, type GetLeaderOptions } from './get-leader.js';
export { LeaderInfoSchema, type LeaderInfo } from '../election/leader.js';
export { ClockSkewError, type ClockDoubt } from './server-clock.js';
export { TableKeyError, TableNotFoundError } from './options.js';
export { DynamoDBUnreachableError, DynamoDBRefusedError, LeaderStalledError, NoCoordinatorError } from './faults.js';
export { NotDynamoDBError } from '../dynamodb-answers.js';
export { RequestBoundError } from './bounded-client.js';
export { LeaderWorkError } from './elector.js';
// PushChannel, the push path's MQTT side, is the entry @conclave/sdk/push (lib/sdk/push-entry.ts)
export type { Push } from './push.js';
export { WakeSchema, PUSH_CLIENT_ID_PREFIX, pushClientIdPrefix, type Wake } from '../schemas/push.js';
export { Session, SessionOptionsSchema, type ResolvedSessionOptions, type SessionOptions, type SessionStats } from './session.js';
export { SESSION_COMPONENT, sessionComponent } from '../schemas/session-partition.js';
export { withLease, tryWithLease } from './with-lease.js';
export {
  WithLeaseOptionsSchema,
  RunOnceSchema,
  type WithLeaseOptions,
  type RunOnce,
  type LeaseTerm,
  type LeaseFn,
  type LeaseRunResult,
} from './with-lease-options.js';
export type { CompletedRun } from '../schemas/lease.js';
export { DuplicateIdentityError, LeaseCandidate, LeaseCandidateOptionsSchema, ON_SESSION_RENEW_MS, type LeaseCandidateOptions, type ResolvedLeaseCandidateOptions } from './candidate.js';
export {
  IdentityLeaseHeartbeat,
  IdentityLeaseHeartbeatOptionsSchema,
  identityLeaseName,
  isIdentityLive,
  listIdentities,
  listLiveIdentities,
  ListIdentitiesOptionsSchema,
  type IdentityLeaseHeartbeatOptions,
  type ResolvedIdentityLeaseHeartbeatOptions,
  type IdentityLost,
  type IdentityListing,
  type ListIdentitiesOptions,
  type RenewOutcome,
} from './identity.js';
export type { InvalidItem } from '../stores/item-store.js';
export { defaultTableNames, DEFAULT_TABLE_PREFIX, type TablesOption, type DeepReadonly } from './options.js';
export { TableNamesSchema, type TableNames } from '../schemas/config.js';
export { DEFAULT_FENCE_ATTRIBUTE, fencedItemWrite, fencedTransactWrite, FencingError, LeaseLostError } from './fencing.js';
export type { FencedItemInput } from './fencing.js';
export type { Term } from '../stores/lease-store.js';
export { ValidationError, type FieldIssue } from '../schemas/validation.js';
export { BrokenSessionError, ConflictError } from '../stores/errors.js';
export { OLDEST_EMULATION_VERSION, NO_COORDINATION } from '../schemas/strategy.js';
export { LeaseItem as LeaseSchema, type Lease } from '../schemas/lease.js';
export { CandidateItem as CandidateSchema, type Candidate } from '../schemas/candidate.js';
export { systemClock, type Clock, type Timer, type TimerOptions } from '../clock.js';
export type { Platform } from '../schemas/platform.js';
export {
  LeaderMigrationConfigurationSchema,
  ControllerLeaderConfigurationSchema,
  MigrationConfigError,
  assignControllers,
  defaultLeaderMigrationConfiguration,
  electorStarter,
  loadLeaderMigrationConfiguration,
  resolveLeaderMigration,
  runWithLeaderMigration,
  DEFAULT_MIGRATION_LEADER_NAME,
  type LeaderMigrationConfiguration,
  type ControllerLeaderConfiguration,
  type LeaderMigrationOptions,
  type ControllerAssignment,
  type Controller,
  type ControllerTerm,
  type StartElector,
  type CampaignOptions,
  type LeaderMigrationRun,
  migrationIdentity,
  type MigrationParty,
  type MigrationSupport,
} from './migration.js';
export { IdentityLeaseItem as IdentityLeaseSchema, type IdentityLease } from '../schemas/identity.js';
export {
  EVENT_SOURCE,
  DETAIL_SCHEMAS,
  DETAIL_TYPES,
  isDetailType,
  parseEvent,
  LeaderElectedSchema,
  LeaderChangedSchema,
  LeaderPreemptionRequestedSchema,
  LeaseReleasedSchema,
  LeaderLostSchema,
  ElectionStartedSchema,
  ElectionFailedSchema,
  CandidateJoinedSchema,
  CandidateExpiredSchema,
  type ConclaveEvent,
  type DetailType,
  type DetailOf,
} from '../events/schemas.js';
export { eventJsonSchemas, type JsonSchemaTarget } from '../events/json-schema.js';

// on a Node older than the package's engines (npm only warns at install): a process warning, once
import { warnOnOldNode } from '../util/node-support.js';
warnOnOldNode();

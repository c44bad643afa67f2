/**
 * The worker SDK: everything a worker process imports to take part in Conclave's elections.
 */
export { LeaderElector, ElectorOptions, type ElectorOptionsInput, type LeaderCallbacks, type LeaderElectorDeps, type StopReason } from './elector.js';
export { LeaseCandidate, CandidateOptions, type CandidateOptionsInput, type LeaseCandidateDeps } from './candidate.js';
export { fencedTransactWrite, FencingError } from './fencing.js';
export { defaultTableNames } from '../tables.js';
export { ValidationError } from '../schemas/validation.js';
export { ConflictError } from '../stores/errors.js';
export { OLDEST_EMULATION_VERSION, NO_COORDINATION } from '../schemas/strategy.js';
export type { Lease } from '../schemas/lease.js';
export type { Candidate } from '../schemas/candidate.js';
export type { Clock } from '../clock.js';
export {
  LeaderMigrationConfiguration,
  MigrationConfigError,
  assignControllers,
  defaultLeaderMigrationConfiguration,
  electorStarter,
  loadLeaderMigrationConfiguration,
  resolveLeaderMigration,
  runWithLeaderMigration,
  DEFAULT_MIGRATION_LEADER_NAME,
} from './migration.js';
export {
  IdentityLeaseHeartbeat,
  IdentityHeartbeatOptions,
  identityLeaseName,
  isIdentityLive,
  listIdentities,
  listLiveIdentities,
  type IdentityHeartbeatOptionsInput,
  type IdentityLost,
} from './identity.js';
export { IdentityStore } from '../stores/identity-store.js';
export type { IdentityLease } from '../schemas/identity.js';

/**
 * The Conclave CDK construct (`@conclave/cdk`): coordinated leader election (KEP-4355) on
 * DynamoDB for your own stack.
 *
 * `Conclave` creates the leases, candidates and identities tables, the coordinator and the
 * functions that react to lease, candidate and platform changes (their code ships pre-built: synth
 * runs no bundler and no Docker), the event bus, the election timer's queue, dead-letter queues,
 * alarms and a dashboard (`ConclaveMonitoring`); `grantWorker` gives a worker's role exactly what
 * the worker SDK (`@conclave/sdk`) calls. `ConclaveStack` is the same construct in a stack of its
 * own, with the table names as outputs. With `regions`, the tables are DynamoDB global tables with
 * multi-Region strong consistency, and `ConclaveReplica` (`ConclaveReplicaStack`) runs the same
 * functions in each other replica Region.
 *
 * Props are validated when the construct is created: a bad value throws a ValidationError naming
 * the field.
 *
 * @packageDocumentation
 */
export { Conclave, type ConclaveProps } from './conclave.js';
export type { GrantGetLeaderOptions, GrantWorkerOptions } from './deployment.js';
export { ConclaveMonitoring, type ConclaveMonitoringProps, type ConclaveAlarms } from './monitoring.js';
export { ConclaveStack, type ConclaveStackProps } from './stack.js';
export type { ConclaveRegions } from './regions.js';
export { ConclaveReplica, ConclaveReplicaStack, type ConclaveReplicaOptions, type ConclaveReplicaProps, type ConclaveReplicaStackProps, type ConclaveReplicaTableSet } from './replica.js';
export type { ConclaveTableSet } from './tables.js';
export type { CloudMapLeaderDiscoveryProps, ConclaveLeaderDiscovery, LeaderDiscoveryProps, Route53LeaderDiscoveryProps } from './discovery.js';
// The schemas as types only (what TableNames and ElectionConfig are inferred from): the construct's
// entry exports no zod schema at run time, only the constructs and ValidationError.
export type { TableNamesSchema, ElectionConfigSchema, TableNames, ElectionConfig, ElectionConfigInput } from '../lib/schemas/config.js';
export type { FunctionName } from '../lib/wiring.js';
export { ValidationError, type FieldIssue } from '../lib/schemas/validation.js';

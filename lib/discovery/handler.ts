/**
 * The leader-discovery function's work (functions/leader-discovery.ts is its Lambda shell): an event
 * from the Conclave bus, read as a LeaderChange, applied to the lease's name in fencing-token order
 * (lib/discovery/apply.ts); and its dependencies from the environment the construct sets.
 */
import type { Logger } from '@aws-lambda-powertools/logger';
import { MetricUnit, type Metrics } from '@aws-lambda-powertools/metrics';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { Route53Client } from '@aws-sdk/client-route-53';
import { ServiceDiscoveryClient } from '@aws-sdk/client-servicediscovery';
import * as z from 'zod';
import { systemClock } from '../clock.js';
import type { Leadership } from '../election/leader.js';
import { leadershipOf } from '../sdk/get-leader.js';
import { Name } from '../schemas/common.js';
import { ElectionConfigSchema, electionConfig } from '../schemas/config.js';
import { parse, ValidationError } from '../schemas/validation.js';
import { observability } from '../functions/observability.js';
import { bounded } from '../functions/requests.js';
import { applyLeaderChange, type ApplyOutcome, type DiscoveryDeps } from './apply.js';
import { changeOfEvent, type LeaderChange } from './change.js';
import { nameStateOf } from './naming.js';
import { sweepNames, sweptLeases, type SweepResult } from './sweep.js';
import { cloudMapNaming } from './cloud-map.js';
import { route53Naming } from './route53.js';
import { DiscoveryStateStore } from './state-store.js';
import { DISCOVERY_ENV, DISCOVERY_FUNCTION, DISCOVERY_SWEEP_LEFT_METRIC } from './wiring.js';

/** Writes to leaders' names, by outcome (a dimension): what the function did. */
export const DISCOVERY_METRIC = 'conclave_leader_name_writes';

export interface DiscoveryFunctionDeps {
  readonly discovery: DiscoveryDeps;
  /** A named lease's leadership as getLeader judges it, for the sweep (its reads ended by `signal`). */
  readonly leadershipOf: (lease: string, signal: AbortSignal) => Promise<Leadership>;
  /** The leases the deployment names (the rule matches only these; checked again here). Undefined: every lease. */
  readonly leases: ReadonlySet<string> | undefined;
  /** The deployment's leases table ARN, which its events carry as their resource (the rule matches only these; checked again here). Undefined: any. */
  readonly leasesTableArn?: string | undefined;
  readonly logger: Logger;
  readonly metrics: Metrics;
}

/**
 * One event. `remainingMs`: what is left of the invocation (its writer entry lasts that long, plus
 * a grace). A malformed event throws a ValidationError: Lambda retries it, then it goes to the
 * dead-letter queue with its content.
 */
export async function onDiscoveryEvent(deps: DiscoveryFunctionDeps, event: unknown, remainingMs: number): Promise<ApplyOutcome | { ignored: string } | SweepResult> {
  if (isSchedule(event)) return sweep(deps, remainingMs);
  const change = changeOfEvent(event, deps.leasesTableArn);
  if ('ignored' in change) {
    if ('foreign' in change) deps.logger.warn('event of another deployment ignored', { why: change.ignored });
    else deps.logger.debug('event ignored', { why: change.ignored });
    return change;
  }
  if (deps.leases && !deps.leases.has(change.lease)) {
    const ignored = `lease "${change.lease}" is not one of leaderDiscovery.leaseNames`;
    deps.logger.warn('event for a lease this deployment does not name', { lease: change.lease, event: change.eventId });
    return { ignored };
  }
  // before its claim: a lease with no name of its own has no row, and nothing is written for it
  const unnamed = deps.discovery.naming.leaseIssue?.(change.lease);
  if (unnamed !== undefined) {
    deps.logger.error(`lease "${change.lease}" has no name: ${unnamed}`, { lease: change.lease, event: change.eventId, why: unnamed });
    return { ignored: `lease "${change.lease}" has no name in ${deps.discovery.naming.describe}: ${unnamed}` };
  }
  const outcome = await applyLeaderChange(deps.discovery, change, deps.discovery.clock.now() + remainingMs);
  deps.logger.info(`leader name: ${outcome.outcome}`, { lease: change.lease, event: change.eventId, change: `${change.kind} ${change.fencingToken}`, ...outcome });
  if (outcome.refused !== undefined && !outcome.state.startsWith('end ')) refusedName(deps.logger, change.lease, outcome.refused);
  unnamedLeader(deps.logger, change, outcome);
  if (outcome.writes) {
    deps.metrics.addDimension('outcome', outcome.outcome);
    deps.metrics.addMetric(DISCOVERY_METRIC, MetricUnit.Count, outcome.writes);
  }
  return outcome;
}

/**
 * A lease led while another lease holds the name they share (apply.ts, holdName): its leader is not
 * named, and the fix is the deployment's (the leases' names, or leaseNames). An end refused so has
 * nothing to write, and is no error.
 */
const refusedName = (logger: Logger, lease: string, why: string): void => logger.error(`lease "${lease}" is not named: ${why}`, { lease, why });

/** Why a held lease's name shows nothing that is no fault: its leader advertised no address (its elector has no `advertise`). */
const NO_ADDRESS = nameStateOf({ ended: false, holder: undefined, address: undefined, fencingToken: 0 });

/**
 * A lease held by a leader its name cannot show (an address no name can point at, or one the naming
 * service refuses: Cloud Map's 1024 characters, where the SDK's `advertise` takes 2048) is logged as
 * an error, not only as the outcome's reason: the name shows no leader while one leads, until a
 * leader the service can name takes the lease, and the fix is the workers' configuration.
 */
function unnamedLeader(logger: Logger, change: LeaderChange, outcome: ApplyOutcome): void {
  const name = outcome.name;
  if (name?.kind !== 'clear' || outcome.state.startsWith('end ') || (NO_ADDRESS.kind === 'clear' && name.why === NO_ADDRESS.why)) return;
  // the state written may be a newer term than this event's, claimed meanwhile: its holder is then not this event's
  const holder = change.kind === 'began' && outcome.state === `term ${change.fencingToken}` ? change.holder : undefined;
  logger.error(`lease "${change.lease}": its leader${holder !== undefined ? ` ${holder}` : ''} (${outcome.state}) cannot be named, so the name shows no leader: ${name.why}`, {
    lease: change.lease,
    ...(holder !== undefined ? { holder, fencingToken: change.fencingToken } : {}),
    why: name.why,
  });
}

/** The schedule's invocation (EventBridge Scheduler's, or a scheduled rule's): `aws.events` and `Scheduled Event`, or `aws.scheduler`. */
const isSchedule = (event: unknown): boolean => {
  const source = (event as { source?: unknown } | null)?.source;
  return source === 'aws.scheduler' || (source === 'aws.events' && (event as { 'detail-type'?: unknown })['detail-type'] === 'Scheduled Event');
};


/**
 * The sweep (lib/discovery/sweep.ts): each name judged by its lease (a named lease with no row
 * too: its name never set), from where the last sweep
 * stopped (saved in the discovery table); what it changed logged. Never throws: a failed sweep is
 * told (the log, DISCOVERY_SWEEP_LEFT_METRIC); leases it had no time for are the next sweep's first,
 * and one it could not judge is judged again when the sweeps come round to it; thrown, Lambda would
 * run it twice more and then dead-letter it as a lost event.
 */
async function sweep(deps: DiscoveryFunctionDeps, remainingMs: number): Promise<SweepResult> {
  const deadline = deps.discovery.clock.now() + remainingMs;
  let result: SweepResult;
  let from: string | undefined;
  try {
    const listed = await deps.discovery.state.list();
    if (listed.refused.length) deps.logger.warn('discovery rows that do not match the schema: not swept', { leases: listed.refused });
    from = listed.sweepFrom;
    result = await sweepNames(deps, sweptLeases(listed.rows, listed.refused, deps.leases), deadline, from);
  } catch (e) {
    deps.logger.error('sweep failed: the names are judged again at the next one', { error: e as Error });
    result = { judged: 0, changed: {}, refused: {}, left: ['*'], errors: [{ lease: '*', error: e as Error }], next: from ?? '' };
  }
  for (const { lease, error } of result.errors) if (lease !== '*') deps.logger.warn('sweep: lease left for the next sweep', { lease, error });
  for (const [lease, state] of Object.entries(result.changed)) deps.logger.info(`leader name: swept to ${state}`, { lease, state });
  for (const [lease, why] of Object.entries(result.refused)) refusedName(deps.logger, lease, why);
  if (result.left.length) deps.metrics.addMetric(DISCOVERY_SWEEP_LEFT_METRIC, MetricUnit.Count, result.left.length);
  if (from !== undefined && result.next !== from) {
    await deps.discovery.state.saveSweepFrom(result.next).catch((e: unknown) => deps.logger.warn('sweep: where the next sweep starts was not saved: it starts where this one did', { error: e as Error }));
  }
  return result;
}

const Env = z
  .object({
    [DISCOVERY_ENV.table]: z.string().min(3),
    [DISCOVERY_ENV.cloudMapServiceId]: z.string().min(1).optional(),
    [DISCOVERY_ENV.hostedZoneId]: z.string().min(1).optional(),
    [DISCOVERY_ENV.recordName]: z.string().min(1).optional(),
    [DISCOVERY_ENV.ttlSeconds]: z.coerce.number().int().min(0).optional(),
    [DISCOVERY_ENV.leases]: z.string().optional(),
    [DISCOVERY_ENV.leasesTable]: z.string().min(3),
    [DISCOVERY_ENV.identitiesTable]: z.string().min(3),
    [DISCOVERY_ENV.leasesTableArn]: z.string().startsWith('arn:', 'must be the leases table\'s ARN (arn:aws:dynamodb:<region>:<account>:table/<name>)').optional(),
    [DISCOVERY_ENV.electionConfig]: z.string().optional(),
  })
  .superRefine((e, ctx) => {
    const cloudMap = e[DISCOVERY_ENV.cloudMapServiceId] !== undefined;
    const route53 = [DISCOVERY_ENV.hostedZoneId, DISCOVERY_ENV.recordName, DISCOVERY_ENV.ttlSeconds].filter((k) => e[k] === undefined);
    if (cloudMap === (route53.length < 3)) ctx.addIssue({ code: 'custom', path: [DISCOVERY_ENV.cloudMapServiceId], message: `give it, or ${DISCOVERY_ENV.hostedZoneId}, ${DISCOVERY_ENV.recordName} and ${DISCOVERY_ENV.ttlSeconds}: one naming service` });
    else if (!cloudMap && route53.length) ctx.addIssue({ code: 'custom', path: [route53[0]!], message: 'is required for Route 53' });
  });

function leasesOf(json: string | undefined): ReadonlySet<string> | undefined {
  if (json === undefined) return undefined;
  let raw: unknown;
  try {
    raw = JSON.parse(json);
  } catch (e) {
    throw new ValidationError(`environment of the ${DISCOVERY_FUNCTION.name} function`, [{ field: DISCOVERY_ENV.leases, message: `must be a JSON list of lease names (${(e as Error).message})` }]);
  }
  return new Set(parse(z.array(Name).min(1), raw, DISCOVERY_ENV.leases));
}

/** The deployment's clockSkewMs, from its ElectionConfig as JSON (unset: the default, as the coordinator's functions take it). */
function clockSkewOf(json: string | undefined): number {
  if (json === undefined) return electionConfig().clockSkewMs;
  let raw: unknown;
  try {
    raw = JSON.parse(json);
  } catch (e) {
    throw new ValidationError(`environment of the ${DISCOVERY_FUNCTION.name} function`, [{ field: DISCOVERY_ENV.electionConfig, message: `must be JSON such as {"clockSkewMs":2000} (${(e as Error).message})` }]);
  }
  return parse(ElectionConfigSchema, raw, DISCOVERY_ENV.electionConfig).clockSkewMs;
}

/** The function's dependencies from its environment (set by infra/discovery.ts). */
export function discoveryDepsFromEnv(env: NodeJS.ProcessEnv = process.env): DiscoveryFunctionDeps {
  const e = parse(Env, env, `environment of the ${DISCOVERY_FUNCTION.name} function`);
  const serviceId = e[DISCOVERY_ENV.cloudMapServiceId];
  const leases = leasesOf(e[DISCOVERY_ENV.leases]);
  const naming = serviceId
    ? cloudMapNaming(new ServiceDiscoveryClient(bounded), serviceId)
    : route53Naming(new Route53Client(bounded), { hostedZoneId: e[DISCOVERY_ENV.hostedZoneId]!, recordName: e[DISCOVERY_ENV.recordName]!, ttlSeconds: e[DISCOVERY_ENV.ttlSeconds]!, leases });
  const client = new DynamoDBClient(bounded);
  const tables = { leases: e[DISCOVERY_ENV.leasesTable], identities: e[DISCOVERY_ENV.identitiesTable] };
  // judged as the coordinator judges a term over: a name is never cleared before it calls the term over
  const clockSkewMs = clockSkewOf(e[DISCOVERY_ENV.electionConfig]);
  return {
    discovery: { state: new DiscoveryStateStore(client, e[DISCOVERY_ENV.table]), naming, clock: systemClock },
    leadershipOf: (lease, signal) => leadershipOf(lease, { client, tables, signal, clockSkewMs }),
    leases,
    leasesTableArn: e[DISCOVERY_ENV.leasesTableArn],
    ...observability(DISCOVERY_FUNCTION.name),
  };
}

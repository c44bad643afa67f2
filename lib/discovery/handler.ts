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
import { Name } from '../schemas/common.js';
import { parse, ValidationError } from '../schemas/validation.js';
import { observability } from '../functions/observability.js';
import { applyLeaderChange, type ApplyOutcome, type DiscoveryDeps } from './apply.js';
import { changeOfEvent } from './change.js';
import { cloudMapNaming } from './cloud-map.js';
import { route53Naming } from './route53.js';
import { DiscoveryStateStore } from './state-store.js';
import { DISCOVERY_ENV, DISCOVERY_FUNCTION } from './wiring.js';

/** Writes to leaders' names, by outcome (a dimension): what the function did. */
export const DISCOVERY_METRIC = 'conclave_leader_name_writes';

export interface DiscoveryFunctionDeps {
  readonly discovery: DiscoveryDeps;
  /** The leases the deployment names (the rule matches only these; checked again here). Undefined: every lease. */
  readonly leases: ReadonlySet<string> | undefined;
  readonly logger: Logger;
  readonly metrics: Metrics;
}

/**
 * One event. `remainingMs`: what is left of the invocation (its writer entry lasts that long, plus
 * a grace). A malformed event throws a ValidationError: Lambda retries it, then it goes to the
 * dead-letter queue with its content.
 */
export async function onDiscoveryEvent(deps: DiscoveryFunctionDeps, event: unknown, remainingMs: number): Promise<ApplyOutcome | { ignored: string }> {
  const change = changeOfEvent(event);
  if ('ignored' in change) {
    deps.logger.debug('event ignored', { why: change.ignored });
    return change;
  }
  if (deps.leases && !deps.leases.has(change.lease)) {
    const ignored = `lease "${change.lease}" is not one of leaderDiscovery.leaseNames`;
    deps.logger.warn('event for a lease this deployment does not name', { lease: change.lease, event: change.eventId });
    return { ignored };
  }
  const outcome = await applyLeaderChange(deps.discovery, change, deps.discovery.clock.now() + remainingMs);
  deps.logger.info(`leader name: ${outcome.outcome}`, { lease: change.lease, event: change.eventId, change: `${change.kind} ${change.fencingToken}`, ...outcome });
  if (outcome.writes) {
    deps.metrics.addDimension('outcome', outcome.outcome);
    deps.metrics.addMetric(DISCOVERY_METRIC, MetricUnit.Count, outcome.writes);
  }
  return outcome;
}

const Env = z
  .object({
    [DISCOVERY_ENV.table]: z.string().min(3),
    [DISCOVERY_ENV.cloudMapServiceId]: z.string().min(1).optional(),
    [DISCOVERY_ENV.hostedZoneId]: z.string().min(1).optional(),
    [DISCOVERY_ENV.recordName]: z.string().min(1).optional(),
    [DISCOVERY_ENV.ttlSeconds]: z.coerce.number().int().min(0).optional(),
    [DISCOVERY_ENV.leases]: z.string().optional(),
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

/** The function's dependencies from its environment (set by infra/discovery.ts). */
export function discoveryDepsFromEnv(env: NodeJS.ProcessEnv = process.env): DiscoveryFunctionDeps {
  const e = parse(Env, env, `environment of the ${DISCOVERY_FUNCTION.name} function`);
  const serviceId = e[DISCOVERY_ENV.cloudMapServiceId];
  const naming = serviceId
    ? cloudMapNaming(new ServiceDiscoveryClient({}), serviceId)
    : route53Naming(new Route53Client({}), { hostedZoneId: e[DISCOVERY_ENV.hostedZoneId]!, recordName: e[DISCOVERY_ENV.recordName]!, ttlSeconds: e[DISCOVERY_ENV.ttlSeconds]! });
  return {
    discovery: { state: new DiscoveryStateStore(new DynamoDBClient({}), e[DISCOVERY_ENV.table]), naming, clock: systemClock },
    leases: leasesOf(e[DISCOVERY_ENV.leases]),
    ...observability(DISCOVERY_FUNCTION.name),
  };
}

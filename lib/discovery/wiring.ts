/**
 * Leader discovery (ConclaveProps `leaderDiscovery`, issue 39): a function on the Conclave bus's
 * leader-change events keeps a name pointing at each lease's leader, an AWS Cloud Map service
 * instance or a Route 53 record. Declared once here, pure data and plain functions, for the
 * construct (infra/discovery.ts, which loads nothing else of lib/discovery/) and for the function
 * (functions/leader-discovery.ts). AWS only: Cloud Map and Route 53 have no local mode.
 */
import { ENV } from '../function-env.js';
import type { TableSpec } from '../tables.js';

export { dnsNameIssue } from '../schemas/common.js';

/** The function, as the construct deploys it and the build bundles it. */
export const DISCOVERY_FUNCTION = {
  name: 'leaderDiscovery',
  entry: 'functions/leader-discovery.ts',
  timeoutSeconds: 30,
  memoryMb: 256,
  /** Lambda's retries of a failed asynchronous invocation (0–2) before the event goes to the dead-letter queue. */
  retryAttempts: 2,
  /** An event older than this goes to the dead-letter queue unprocessed: the name has moved on by then, or will at the next change. */
  maxEventAgeSeconds: 3600,
} as const;

/** A function built only when a prop asks for it (no local mode, not in lib/wiring.ts). */
export type OptionalFunctionName = typeof DISCOVERY_FUNCTION.name;

/**
 * The table of what each lease's name was last set to (lib/discovery/state-store.ts), a row per
 * lease. A table of its own: the three Conclave tables are each scanned and parsed by the
 * coordinator's tick, or streamed to a function, so a row of another shape there would be reported
 * as a broken row at every tick (leases, identities) or reconciled as a candidate (candidates).
 */
export const DISCOVERY_TABLE = { partitionKey: 'lease', stream: false, indexes: [] } as const satisfies TableSpec;

/** Environment variables of the function (set by the construct). */
export const DISCOVERY_ENV = {
  table: 'CONCLAVE_DISCOVERY_TABLE',
  /** The Cloud Map service's id (`srv-…`): its instances are the leases' names. */
  cloudMapServiceId: 'CONCLAVE_DISCOVERY_CLOUD_MAP_SERVICE_ID',
  /** The Route 53 hosted zone's id; with RECORD_NAME and TTL_SECONDS. */
  hostedZoneId: 'CONCLAVE_DISCOVERY_HOSTED_ZONE_ID',
  /** The record's fully qualified name, `{lease}` standing for the lease's name where it is per lease. */
  recordName: 'CONCLAVE_DISCOVERY_RECORD_NAME',
  ttlSeconds: 'CONCLAVE_DISCOVERY_TTL_SECONDS',
  /** The leases given names, as a JSON list; unset: every lease. */
  leases: 'CONCLAVE_DISCOVERY_LEASES',
  /** The leases table and the identities table, which the sweep reads a named lease's leader from (getLeader). */
  leasesTable: ENV.leasesTable,
  identitiesTable: ENV.identitiesTable,
  /** The leases table's ARN, which the deployment's events carry as their `resources`: an event without it is another deployment's. */
  leasesTableArn: ENV.leasesTableArn,
  /**
   * The deployment's ElectionConfig as JSON (the coordinator functions' own variable): the sweep
   * judges a term over with its clockSkewMs, as the coordinator does, never earlier. Unset: the
   * ElectionConfig defaults.
   */
  electionConfig: ENV.electionConfig,
} as const;

/**
 * The sweep (lib/discovery/sweep.ts): the function also runs on this schedule, and judges every name
 * still pointing at a holder by the lease, clearing one whose term ran out with no event (nobody
 * took the lease after a crash), and names the holder of a lease in leaseNames whose name was never set.
 */
export const DISCOVERY_SWEEP = { everyMinutes: 1 } as const;

/**
 * Leases a sweep left for the next (a read or a write failed, the time ran short; every lease when
 * the table's scan failed): a metric, by the function (the construct's `namesUnswept` alarm).
 */
export const DISCOVERY_SWEEP_LEFT_METRIC = 'conclave_leader_names_unswept';

/**
 * The events the function is invoked on (the rule's detail-types): a new term (Leader Elected:
 * every new term has one; Leader Changed comes with it, from the same change, with the same token
 * and address, so it is not subscribed) and the ends of a term with no new leader yet (Lease
 * Released, Leader Lost, and Election Started when it removed an expired or reported holder).
 */
export const DISCOVERY_DETAIL_TYPES = ['Leader Elected', 'Lease Released', 'Leader Lost', 'Election Started'] as const;

/** The `source` of Conclave's events (lib/events/schemas.ts EVENT_SOURCE, which the construct does not load). */
export const DISCOVERY_EVENT_SOURCE = 'conclave';

/** In a Route 53 record name, stands for the lease's name: one record per lease. */
export const LEASE_PLACEHOLDER = '{lease}';

/** Route 53's default record TTL for leader discovery, in seconds. */
export const DEFAULT_RECORD_TTL_SECONDS = 5;

/** The Cloud Map service the construct creates when no name is given. */
export const DEFAULT_SERVICE_NAME = 'conclave-leader';

/** A DNS name as Route 53 normalizes it in IAM conditions and answers: lower case, no trailing dot. */
export const normalizeDnsName = (name: string): string => name.toLowerCase().replace(/\.$/, '');

/**
 * A record name in the zone: `recordName` as given if it already ends with the zone's name (fully
 * qualified), else relative to the zone (CDK's rule for record names), normalized.
 */
export function qualifiedRecordName(recordName: string, zoneName: string): string {
  const name = normalizeDnsName(recordName);
  const zone = normalizeDnsName(zoneName);
  return name === zone || name.endsWith(`.${zone}`) ? name : `${name}.${zone}`;
}

/** The record name of `lease`: the template with `{lease}` replaced (lower case: DNS names are). */
export const recordNameOf = (template: string, lease: string): string => normalizeDnsName(template.split(LEASE_PLACEHOLDER).join(lease));


/**
 * Leader discovery (ConclaveProps `leaderDiscovery`, issue 39): a name that points at each lease's
 * leader, kept by a function on the Conclave bus's leader-change events (lib/discovery/). An AWS
 * Cloud Map service the construct creates (an instance per lease), or a Route 53 record in a zone
 * of yours (one per lease). The function, its table (the last state written per lease, which
 * orders the writes by fencing token), the rule, the sweep's schedule, a dead-letter queue and two
 * alarms; its grants are DISCOVERY_ACCESS on these resources, and the sweep's getLeader reads of the
 * named leases (the Conclave's grantGetLeader).
 */
import { Annotations, Aws, Duration, RemovalPolicy, Stack, Token } from 'aws-cdk-lib';
import * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import * as events from 'aws-cdk-lib/aws-events';
import * as targets from 'aws-cdk-lib/aws-events-targets';
import * as iam from 'aws-cdk-lib/aws-iam';
import type * as kms from 'aws-cdk-lib/aws-kms';
import type * as lambda from 'aws-cdk-lib/aws-lambda';
import * as destinations from 'aws-cdk-lib/aws-lambda-destinations';
import type * as logs from 'aws-cdk-lib/aws-logs';
import type * as route53 from 'aws-cdk-lib/aws-route53';
import * as servicediscovery from 'aws-cdk-lib/aws-servicediscovery';
import type * as sns from 'aws-cdk-lib/aws-sns';
import type * as sqs from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';
import type { ElectionConfig } from '../lib/schemas/config.js';
import type * as z from 'zod';
import {
  DEFAULT_RECORD_TTL_SECONDS,
  DEFAULT_SERVICE_NAME,
  DISCOVERY_DETAIL_TYPES,
  DISCOVERY_ENV,
  DISCOVERY_EVENT_SOURCE,
  DISCOVERY_FUNCTION,
  DISCOVERY_SWEEP,
  DISCOVERY_SWEEP_LEFT_METRIC,
  DISCOVERY_TABLE,
  LEASE_PLACEHOLDER,
  qualifiedRecordName,
  recordNameOf,
} from '../lib/discovery/wiring.js';
import { DISCOVERY_ACCESS, KEY_READ, KEY_WRITE } from './access.js';
import { builtFunction } from './functions.js';
import { deletionProtectionFor } from './tables.js';
import { acknowledgeKeyWildcards, allowEventBridgeToUse } from './grants.js';
import { conclaveAlarm } from './monitoring.js';
import { DIMENSION, NAMESPACE, SERVICE } from '../lib/functions/metrics.js';
import { acknowledgeFinding } from './nag.js';
import { deadLetterQueue } from './queues.js';
import { deployedJsonBytes, EVENT_PATTERN_QUOTA, MAX_ENVIRONMENT_BYTES } from './sizes.js';
import { ValidationError } from '../lib/schemas/validation.js';
import type { LeaderDiscoverySettingsSchema } from './settings.js';

/**
 * ConclaveProps `leaderDiscovery`: keep a name pointing at each lease's leader. Give `cloudMap` or
 * `route53`. The leader's address is what its elector advertises (the SDK's `advertise` option); a
 * leader that advertises none, and a lease between terms, have no name.
 */
export interface LeaderDiscoveryProps {
  /**
   * The leases whose leader gets a name (the rule matches only their events).
   * @default every lease
   */
  readonly leaseNames?: readonly string[];
  /** An AWS Cloud Map service, created by the construct, with an instance per lease. */
  readonly cloudMap?: CloudMapLeaderDiscoveryProps;
  /** A Route 53 record per lease in a hosted zone of yours (a private zone: the addresses are your VPC's). */
  readonly route53?: Route53LeaderDiscoveryProps;
}

/**
 * Leader names in AWS Cloud Map. The construct creates an API-only service in `namespace` (clients
 * call DiscoverInstances; no DNS records, so the function needs no Route 53 access), and the
 * function registers an instance per lease: id the lease's name, attributes AWS_INSTANCE_IPV4 or
 * AWS_INSTANCE_IPV6 and AWS_INSTANCE_PORT when the address has them, and `lease`, `holder`,
 * `fencingToken`, `address` (as advertised) and `host`. Find a lease's leader with
 * `DiscoverInstances({ NamespaceName, ServiceName, QueryParameters: { lease } })`.
 */
export interface CloudMapLeaderDiscoveryProps {
  /** The namespace the service is created in: an HttpNamespace, PrivateDnsNamespace or PublicDnsNamespace, yours or imported. */
  readonly namespace: servicediscovery.INamespace;
  /** The service's name. @default 'conclave-leader' */
  readonly serviceName?: string;
}

/**
 * Leader names in Route 53: a simple record per lease, A for an IPv4 address, AAAA for IPv6, CNAME
 * for a host name (DNS carries no port), deleted when the term ends with no new leader. The
 * record names are the function's alone: it replaces and deletes what it finds there.
 */
export interface Route53LeaderDiscoveryProps {
  /** The zone, with its name known at synth (a PrivateHostedZone, or HostedZone.fromHostedZoneAttributes). */
  readonly hostedZone: route53.IHostedZone;
  /**
   * The record's name, relative to the zone (`leader`) or fully qualified. With more than one lease
   * (or every lease) it must hold `{lease}`, which stands for the lease's name (`{lease}.leader`):
   * those lease names must then be host-name labels.
   */
  readonly recordName: string;
  /** How long resolvers may keep an answer: a new leader is seen at most this much later. @default Duration.seconds(5) */
  readonly ttl?: Duration;
}

/** What `leaderDiscovery` made (`Conclave.leaderDiscovery`). */
export interface ConclaveLeaderDiscovery {
  /** The function on the leader-change events. */
  readonly fn: lambda.Function;
  /** The last state written to each lease's name: what orders the writes by fencing token. */
  readonly table: dynamodb.TableV2;
  /** The rule on the Conclave bus that invokes the function (this deployment's events only: their `resources` is its leases table's ARN). */
  readonly rule: events.Rule;
  /** Events the function gave up on (after the rule's and Lambda's retries), with their content. */
  readonly deadLetterQueue: sqs.Queue;
  /** The Cloud Map service (with `cloudMap`). */
  readonly service: servicediscovery.Service | undefined;
  /** The record name, fully qualified, `{lease}` standing for the lease (with `route53`). */
  readonly recordName: string | undefined;
  /**
   * A message in the dead-letter queue; the function failing in two 5-minute periods in a row; the
   * sweep leaving names unjudged in five of the last six minutes (a name may point at a leader whose
   * term is over).
   */
  readonly alarms: { readonly deadLetters: cloudwatch.Alarm; readonly functionErrors: cloudwatch.Alarm; readonly namesUnswept: cloudwatch.Alarm };
}

/**
 * Minutes whose sweeps left names unjudged before the `namesUnswept` alarm (a passing fault heals by
 * then), of the last UNSWEPT_OF: a sweep runs up to its 30 s timeout, and its datapoint, stamped as it
 * ends, may land in the next minute, leaving a minute with none (not breaching). Five in a row, a
 * fault that lasted was told only once no sweep slipped for five minutes.
 */
const UNSWEPT_MINUTES = 5;
const UNSWEPT_OF = 6;

/** The props as LeaderDiscoverySettingsSchema reads them: constructs given are `true`, the zone is its name (`null` when it has none at synth), the TTL in seconds. */
export function leaderDiscoveryData(p: LeaderDiscoveryProps): Record<string, unknown> {
  const zoneName = (zone: route53.IHostedZone): string | null => {
    try {
      return Token.isUnresolved(zone.zoneName) ? null : zone.zoneName;
    } catch {
      return null; // HostedZone.fromHostedZoneId: the name is not known, and asking throws
    }
  };
  // a key not among the props (misspelt, or from JavaScript) is carried through, so the strict schema names it
  const unknown = (o: object, known: readonly string[]) => Object.fromEntries(Object.entries(o).filter(([k]) => !known.includes(k)));
  return {
    ...unknown(p, ['leaseNames', 'cloudMap', 'route53']),
    ...(p.leaseNames !== undefined ? { leaseNames: [...p.leaseNames] } : {}),
    ...(p.cloudMap ? { cloudMap: { ...unknown(p.cloudMap, ['namespace', 'serviceName']), ...(p.cloudMap.namespace !== undefined ? { namespace: true } : {}), ...(p.cloudMap.serviceName !== undefined ? { serviceName: p.cloudMap.serviceName } : {}) } } : {}),
    ...(p.route53
      ? {
          route53: {
            ...unknown(p.route53, ['hostedZone', 'recordName', 'ttl']),
            ...(p.route53.hostedZone !== undefined ? { hostedZone: zoneName(p.route53.hostedZone) } : {}),
            recordName: p.route53.recordName,
            ttl: (p.route53.ttl ?? Duration.seconds(DEFAULT_RECORD_TTL_SECONDS)).toSeconds(),
          },
        }
      : {}),
  };
}

/** What the discovery part is built on: the Conclave's resources and settings. */
export interface LeaderDiscoveryTargets {
  readonly eventBus: events.IEventBus;
  /** The table's name: `<tablePrefix>-discovery` with a prefix. @default CloudFormation's */
  readonly tableName: string | undefined;
  readonly removalPolicy: RemovalPolicy;
  readonly logRetention: logs.RetentionDays;
  readonly encryptionKey: kms.IKey | undefined;
  readonly alarmTopic: sns.ITopic | undefined;
  /** The leases and identities tables' names, which the sweep reads a named lease's leader from; the leases table's ARN, which the deployment's events carry. */
  readonly leaderTables: { readonly leases: string; readonly identities: string; readonly leasesArn: string };
  /** The deployment's election configuration: the sweep judges a term over with its clockSkewMs, as the coordinator does (only that is passed: Lambda's environment holds 4 KB, the lease names' list too). */
  readonly config: ElectionConfig;
  /** Grants `grantee` getLeader's reads of `leaseNames` (undefined: every lease): the Conclave's grantGetLeader. */
  readonly grantLeaderReads: (grantee: iam.IGrantable, leaseNames: readonly string[] | undefined) => void;
}

/**
 * The conditions of the Route 53 grant: every record a change batch names is one of `names`
 * (patterns with `*` when `like`), of a type a leader's name has, by UPSERT or DELETE
 * (ForAllValues: each value of the request must match). One object per operator: two keys of one
 * operator are one block, where both must hold.
 */
export function recordConditions(names: readonly string[], like: boolean): Record<string, Record<string, unknown>> {
  const kinds = { 'route53:ChangeResourceRecordSetsRecordTypes': ['A', 'AAAA', 'CNAME'], 'route53:ChangeResourceRecordSetsActions': ['UPSERT', 'DELETE'] };
  const named = { 'route53:ChangeResourceRecordSetsNormalizedRecordNames': [...names] };
  return like ? { 'ForAllValues:StringLike': named, 'ForAllValues:StringEquals': kinds } : { 'ForAllValues:StringEquals': { ...named, ...kinds } };
}

/** Builds leader discovery under `scope` from the props and their validated data. */
export class LeaderDiscovery extends Construct implements ConclaveLeaderDiscovery {
  readonly fn: lambda.Function;
  readonly table: dynamodb.TableV2;
  readonly rule: events.Rule;
  readonly deadLetterQueue: sqs.Queue;
  readonly service: servicediscovery.Service | undefined;
  readonly recordName: string | undefined;
  readonly alarms: ConclaveLeaderDiscovery['alarms'];

  constructor(scope: Construct, id: string, props: LeaderDiscoveryProps, s: z.output<typeof LeaderDiscoverySettingsSchema>, on: LeaderDiscoveryTargets) {
    super(scope, id);
    const key = on.encryptionKey;
    this.table = new dynamodb.TableV2(this, 'Table', {
      ...(on.tableName ? { tableName: on.tableName } : {}),
      partitionKey: { name: DISCOVERY_TABLE.partitionKey, type: dynamodb.AttributeType.STRING },
      billing: dynamodb.Billing.onDemand(),
      pointInTimeRecoverySpecification: { pointInTimeRecoveryEnabled: true },
      ...(key ? { encryption: dynamodb.TableEncryptionV2.customerManagedKey(key) } : {}),
      deletionProtection: deletionProtectionFor(on.removalPolicy),
      removalPolicy: on.removalPolicy,
    });

    const environment: Record<string, string> = { [DISCOVERY_ENV.table]: this.table.tableName, [DISCOVERY_ENV.leasesTable]: on.leaderTables.leases, [DISCOVERY_ENV.identitiesTable]: on.leaderTables.identities, [DISCOVERY_ENV.leasesTableArn]: on.leaderTables.leasesArn, [DISCOVERY_ENV.electionConfig]: JSON.stringify({ clockSkewMs: on.config.clockSkewMs }) };
    if (s.leaseNames) environment[DISCOVERY_ENV.leases] = JSON.stringify(s.leaseNames);
    if (props.cloudMap && s.cloudMap) {
      this.service = new servicediscovery.Service(this, 'Service', {
        namespace: props.cloudMap.namespace,
        name: s.cloudMap.serviceName ?? DEFAULT_SERVICE_NAME,
        description: 'Conclave: the leader of each lease, an instance per lease (DiscoverInstances with QueryParameters { lease })',
        // API only: DNS records would need the function to change Route 53 records too
        discoveryType: servicediscovery.DiscoveryType.API,
      });
      // a service that still has instances cannot be deleted (DeleteService fails, and so would the
      // stack's delete), and the function that registers them is gone by then: kept as the tables
      // are (RETAIN by default), its instances deregistered by hand before it is deleted
      this.service.applyRemovalPolicy(on.removalPolicy);
      environment[DISCOVERY_ENV.cloudMapServiceId] = this.service.serviceId;
    }
    if (props.route53 && s.route53) {
      this.recordName = qualifiedRecordName(s.route53.recordName, s.route53.hostedZone);
      environment[DISCOVERY_ENV.hostedZoneId] = props.route53.hostedZone.hostedZoneId;
      environment[DISCOVERY_ENV.recordName] = this.recordName;
      environment[DISCOVERY_ENV.ttlSeconds] = String(s.route53.ttl);
      // every lease named: leases named alike but for case have one record, one lease's at a time (lib/discovery/apply.ts)
      if (!s.leaseNames && this.recordName.includes(LEASE_PLACEHOLDER))
        // an info, not a warning: the function keeps such leases apart, and `cdk synth --strict` must not fail on a default
        Annotations.of(this).addInfoV2(
          '@conclave/cdk:discoveryLeaseNameCase',
          `leaderDiscovery.route53 names every lease (no leaseNames): DNS names ignore case, so leases whose names differ only in case (Orders, orders) have one record, written for one of them at a time (the other's leader is not named, an error in the ${DISCOVERY_FUNCTION.name} function's log). Keep lease names unique ignoring case, or give leaseNames.`,
        );
    }

    this.fn = builtFunction(this, DISCOVERY_FUNCTION.name, DISCOVERY_FUNCTION, { environment, removalPolicy: on.removalPolicy, logRetention: on.logRetention, encryptionKey: key });
    this.deadLetterQueue = deadLetterQueue(this, 'DeadLetters', { encryptionKey: key, deadLetterQueueOf: `the on-failure destination of the ${DISCOVERY_FUNCTION.name} function's rule and asynchronous invocations` });
    const maxEventAge = Duration.seconds(DISCOVERY_FUNCTION.maxEventAgeSeconds);
    this.fn.configureAsyncInvoke({ retryAttempts: DISCOVERY_FUNCTION.retryAttempts, maxEventAge, onFailure: new destinations.SqsDestination(this.deadLetterQueue) });
    this.rule = new events.Rule(this, 'Rule', {
      description: `Conclave: ${DISCOVERY_DETAIL_TYPES.join(', ')} → the ${DISCOVERY_FUNCTION.name} function`,
      eventBus: on.eventBus,
      eventPattern: {
        source: [DISCOVERY_EVENT_SOURCE],
        detailType: [...DISCOVERY_DETAIL_TYPES],
        // Conclave's functions publish from this account; an event another account put on the bus names no leader here
        account: [Aws.ACCOUNT_ID],
        // and with this deployment's leases table as the event's resource: another Conclave publishing to a shared bus names its own leaders
        resources: [on.leaderTables.leasesArn],
        ...(s.leaseNames ? { detail: { lease: [...s.leaseNames] } } : {}),
      },
      targets: [new targets.LambdaFunction(this.fn, { deadLetterQueue: this.deadLetterQueue, retryAttempts: 8, maxEventAge })],
    });
    if (s.leaseNames) this.checkSizes(s.leaseNames);
    // the sweep (lib/discovery/sweep.ts): a name whose holder's term ran out with no write, so no event, is cleared
    new events.Rule(this, 'Sweep', {
      description: `Conclave: every ${DISCOVERY_SWEEP.everyMinutes} minute(s), the ${DISCOVERY_FUNCTION.name} function checks each name still pointing at a leader against its lease`,
      schedule: events.Schedule.rate(Duration.minutes(DISCOVERY_SWEEP.everyMinutes)),
      // EventBridge does not retry its delivery; the sweep never fails its invocation (lib/discovery/handler.ts sweep),
      // so the function's own retries and dead-letter queue are left to the events: a missed sweep is made up by the next
      targets: [new targets.LambdaFunction(this.fn, { retryAttempts: 0 })],
    });
    // EventBridge writes the rule's dead letters to the key-encrypted queue as itself
    if (key) allowEventBridgeToUse(this, key);

    this.grant(props, key);
    on.grantLeaderReads(this.fn, s.leaseNames);
    this.alarms = this.makeAlarms(on.alarmTopic, on.leaderTables.leases);
  }

  /**
   * The lease names go into the rule's event pattern and the function's environment, whose sizes
   * AWS checks only at deploy time (a failed deploy): measured here, as they deploy. Over Lambda's
   * 4 KB, or EventBridge's most (4,096), refused naming `leaderDiscovery.leaseNames`; over
   * EventBridge's default quota (2,048), a warning.
   */
  private checkSizes(leaseNames: readonly string[]): void {
    const fix = 'leave leaseNames out to follow every lease (the function then names the leader of each), or name fewer leases';
    const variables = (Stack.of(this).resolve((this.fn.node.defaultChild as lambda.CfnFunction).environment) as { variables: Record<string, unknown> }).variables;
    const env = deployedJsonBytes(this, variables);
    const names = deployedJsonBytes(this, { [DISCOVERY_ENV.leases]: variables[DISCOVERY_ENV.leases] }) - 2;
    const pattern = deployedJsonBytes(this, (this.rule.node.defaultChild as events.CfnRule).eventPattern);
    const issues: { field: string; message: string }[] = [];
    if (env > MAX_ENVIRONMENT_BYTES)
      issues.push({ field: 'leaderDiscovery.leaseNames', message: `gives the ${DISCOVERY_FUNCTION.name} function an environment of up to ${env} bytes (${names} of them the ${leaseNames.length} lease names), over Lambda's limit of ${MAX_ENVIRONMENT_BYTES} bytes (4 KB, every variable): the deploy would fail. ${fix}` });
    else if (pattern > EVENT_PATTERN_QUOTA.max)
      issues.push({ field: 'leaderDiscovery.leaseNames', message: `gives the ${DISCOVERY_FUNCTION.name} function's rule an event pattern of up to ${pattern} characters, over EventBridge's limit of ${EVENT_PATTERN_QUOTA.max}: the deploy would fail. ${fix}` });
    if (issues.length > 0) throw new ValidationError('Conclave props', issues);
    if (pattern > EVENT_PATTERN_QUOTA.default)
      Annotations.of(this).addWarningV2(
        '@conclave/cdk:discoveryEventPatternSize',
        `leaderDiscovery.leaseNames gives the ${DISCOVERY_FUNCTION.name} function's rule an event pattern of up to ${pattern} characters, over EventBridge's default quota of ${EVENT_PATTERN_QUOTA.default} ("Event pattern size", raisable to ${EVENT_PATTERN_QUOTA.max}): the deploy fails unless the quota is raised in this account and Region. Raise it, or ${fix}`,
      );
  }

  /** DISCOVERY_ACCESS, on this table and the one service or zone. */
  private grant(props: LeaderDiscoveryProps, key: kms.IKey | undefined): void {
    const grantee = this.fn;
    iam.Grant.addToPrincipal({ grantee, actions: [...DISCOVERY_ACCESS.table], resourceArns: [this.table.tableArn] });
    if (key) {
      key.grant(grantee, ...KEY_READ, ...KEY_WRITE);
      acknowledgeKeyWildcards(this.fn.role as iam.Role, 'the KMS actions aws-cdk-lib grants for a key-encrypted table and queue.');
    }
    if (this.service) {
      iam.Grant.addToPrincipal({ grantee, actions: [...DISCOVERY_ACCESS.cloudMap], resourceArns: [this.service.serviceArn] });
      iam.Grant.addToPrincipal({ grantee, actions: [...DISCOVERY_ACCESS.cloudMapOperations], resourceArns: ['*'] });
      acknowledgeFinding(this.fn.role as iam.Role, 'AwsSolutions-IAM5[Resource::*]', 'servicediscovery:GetOperation only, which IAM scopes to no resource: the function waits for each of its registrations to be applied (Cloud Map applies them after answering).');
    }
    if (props.route53 && this.recordName !== undefined) {
      const zoneArn = props.route53.hostedZone.hostedZoneArn;
      // the record names this function writes: exactly, or (every lease, `{lease}`) the template with `*` for the lease
      const perLease = this.recordName.includes(LEASE_PLACEHOLDER);
      const leases = props.leaseNames;
      // (a name without `{lease}` names one lease: the settings refuse it for more)
      const names = perLease && !leases ? [this.recordName.split(LEASE_PLACEHOLDER).join('*')] : (leases ?? []).map((l) => recordNameOf(this.recordName!, l));
      iam.Grant.addToPrincipal({
        grantee,
        actions: [...DISCOVERY_ACCESS.route53Change],
        resourceArns: [zoneArn],
        conditions: recordConditions(names, perLease && !leases),
      });
      iam.Grant.addToPrincipal({ grantee, actions: [...DISCOVERY_ACCESS.route53List], resourceArns: [zoneArn] });
    }
  }

  /** `deployment`: the leases table's name, the `deployment` dimension the function publishes its metrics with (its CONCLAVE_LEASES_TABLE). */
  private makeAlarms(topic: sns.ITopic | undefined, deployment: string): ConclaveLeaderDiscovery['alarms'] {
    const fiveMinutes = Duration.minutes(5);
    const alarm = (id: string, props: cloudwatch.AlarmProps) => conclaveAlarm(this, id, props, topic);
    const where = this.recordName ?? `the Cloud Map service ${this.service?.serviceName ?? ''}`;
    return {
      deadLetters: alarm('DeadLettersAlarm', {
        alarmDescription: `The ${DISCOVERY_FUNCTION.name} function gave up on leader-change events (they are in its dead-letter queue, with their content): a lease's name (${where}) may show a previous leader or none until its next change. Read the messages for the cause.`,
        metric: this.deadLetterQueue.metricApproximateNumberOfMessagesVisible({ period: fiveMinutes, statistic: 'Maximum' }),
        threshold: 1,
        evaluationPeriods: 1,
      }),
      functionErrors: alarm('ErrorsAlarm', {
        alarmDescription: `The ${DISCOVERY_FUNCTION.name} function failed invocations in two 5-minute periods in a row (Lambda retries each twice). See its log group.`,
        metric: this.fn.metricErrors({ period: fiveMinutes, statistic: 'Sum' }),
        threshold: 1,
        evaluationPeriods: 2,
      }),
      namesUnswept: alarm('UnsweptAlarm', {
        alarmDescription: `The ${DISCOVERY_FUNCTION.name} function's sweep left leaders' names unjudged in ${UNSWEPT_MINUTES} of the last ${UNSWEPT_OF} minutes (its reads of the leases, or its writes to ${where}, failed, or it ran short of time): a name may point at a leader whose term is over until a sweep judges it. See its log group ("sweep: lease left for the next sweep", "sweep failed").`,
        metric: new cloudwatch.Metric({ namespace: NAMESPACE, metricName: DISCOVERY_SWEEP_LEFT_METRIC, dimensionsMap: { service: SERVICE, [DIMENSION.function]: DISCOVERY_FUNCTION.name, [DIMENSION.deployment]: deployment }, statistic: 'Sum', period: Duration.minutes(DISCOVERY_SWEEP.everyMinutes) }),
        threshold: 1,
        // a minute whose sweep left nothing, or whose sweep's datapoint slipped into the next, has no
        // datapoint: not breaching (conclaveAlarm's default)
        evaluationPeriods: UNSWEPT_OF / DISCOVERY_SWEEP.everyMinutes,
        datapointsToAlarm: UNSWEPT_MINUTES / DISCOVERY_SWEEP.everyMinutes,
      }),
    };
  }
}

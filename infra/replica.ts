/**
 * The other Regions of a multi-Region Conclave (ConclaveProps `regions`): the same functions, an
 * event bus, alarms and a dashboard, on the replicas of the global tables in a Region of their
 * own. The `Conclave` in the stack of the first Region creates the tables (DynamoDB creates the
 * replicas); a ConclaveReplica in each other replica Region runs there what `Conclave` runs in its
 * own, reading that Region's replica of each stream.
 */
import { CfnOutput, Stack, Token, type StackProps } from 'aws-cdk-lib';
import type * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import type * as events from 'aws-cdk-lib/aws-events';
import * as iam from 'aws-cdk-lib/aws-iam';
import type * as lambda from 'aws-cdk-lib/aws-lambda';
import * as sns from 'aws-cdk-lib/aws-sns';
import * as subscriptions from 'aws-cdk-lib/aws-sns-subscriptions';
import type * as sqs from 'aws-cdk-lib/aws-sqs';
import * as cr from 'aws-cdk-lib/custom-resources';
import { Construct } from 'constructs';
import type { ElectionConfig, TableNames } from '../lib/schemas/config.js';
import { parse, ValidationError, type FieldIssue } from '../lib/schemas/validation.js';
import { TABLES } from '../lib/tables.js';
import type { FunctionName } from '../lib/wiring.js';
import type { TableRole } from './access.js';
import type { Conclave } from './conclave.js';
import { deployRegion, grantGetLeaderIn, grantWorkerIn, PRIMARIES, type GrantGetLeaderOptions, type GrantWorkerOptions, type PrimaryRecord } from './deployment.js';
import { pascal } from './functions.js';
import { grantOperatorIn } from './operator.js';
import { deployTimeLookup } from './lookup.js';
import type { ConclaveAlarms, ConclaveMonitoring } from './monitoring.js';
import { AlarmEmailPropsSchema } from './settings.js';
import type { ConclaveTableRefs } from './tables.js';

/** A Region's replicas of the leases, candidates and identities tables, by their role. */
export type ConclaveReplicaTableSet = Record<keyof TableNames, dynamodb.ITableV2>;

/** What a ConclaveReplica may have of its own; everything else is its primary's. */
export interface ConclaveReplicaOptions {
  /** Where this Region's functions publish lease and candidate events (a bus in this Region). @default a new EventBus */
  readonly eventBus?: events.IEventBus;
  /** Alarm and OK notifications of this Region's alarms go to this topic (in this Region). @default the alarms have no actions */
  readonly alarmTopic?: sns.ITopic;
}

/** The props of `ConclaveReplica`. */
export interface ConclaveReplicaProps extends ConclaveReplicaOptions {
  /**
   * The `Conclave` that creates the global tables: its `regions` name this construct's stack's
   * Region among the replicas, and it is in another Region's stack of the same account. This
   * Region runs with its settings: the tick, the election's tuning, the push path, platform
   * signals, the removal policy and the log retention.
   */
  readonly primary: Conclave;
}

/**
 * Conclave in another replica Region of a multi-Region deployment (ConclaveProps `regions`): on
 * this Region's replicas of the primary's global tables, the coordinator and the functions that
 * react to changes (the stream functions read this Region's replica of each stream; every replica
 * of an MRSC stream carries every change), the election timer's queue, an event bus, alarms and a
 * dashboard, and the push path's IoT Core endpoint of this Region; `grantWorker` for the workers
 * that run here. Its stack must name its Region (`env: { region }`), and deploys after the
 * primary's (it depends on it: the replicas must exist). Each replica's stream ARN is read when
 * the stack deploys (DynamoDB DescribeTable, by a custom resource): CloudFormation gives the
 * primary's stack only its own Region's.
 */
export class ConclaveReplica extends Construct {
  /** This construct's Region: one of the primary's replicas. */
  readonly region: string;
  /** The tables, as this Region's replicas (same names as the primary's; their streams are this Region's). */
  readonly tables: ConclaveReplicaTableSet;
  /** The functions, by their name in lib/wiring.ts. */
  readonly functions: Record<FunctionName, lambda.Function>;
  /** This Region's election timer queue. */
  readonly timerQueue: sqs.Queue;
  /** Dead-letter queues, as `Conclave.deadLetterQueues`. */
  readonly deadLetterQueues: Partial<Record<FunctionName, sqs.Queue>>;
  /** Where this Region's functions publish lease and candidate events: `eventBus`, or the bus created here. */
  readonly eventBus: events.IEventBus;
  /** The coordinator's schedule in this Region. */
  readonly schedule: events.Rule;
  /** The configuration the functions run with: the primary's. */
  readonly config: ElectionConfig;
  /** This Region's alarms and dashboard. */
  readonly monitoring: ConclaveMonitoring;
  /** The alarms (`monitoring.alarms`). */
  readonly alarms: ConclaveAlarms;
  /** The dashboard (`monitoring.dashboard`). */
  readonly dashboard: cloudwatch.Dashboard;
  /** The push path's endpoint for workers in this Region (IoT Core is regional). Undefined when the primary has `push: false`. */
  readonly pushEndpoint: string | undefined;
  private readonly push: { readonly leasesTable: string } | undefined;

  constructor(scope: Construct, id: string, props: ConclaveReplicaProps) {
    super(scope, id);
    const record = replicaIssues(this, props.primary);
    const primary = props.primary;
    this.region = Stack.of(this).region;
    record.replicas.set(this.region, this);
    // the global tables, and so their replicas here, are the primary stack's: deploy it first
    const stack: Stack & { addStackDependency?: Stack['addDependency'] } = Stack.of(this);
    const reason = `the global tables of ${primary.node.path} have their ${this.region} replicas in this stack's Region`;
    // addStackDependency from aws-cdk-lib 2.2xx on (addDependency, deprecated there, is all 2.258, the peer range's floor, has)
    if (typeof stack.addStackDependency === 'function') stack.addStackDependency(Stack.of(primary), reason);
    else stack.addDependency(Stack.of(primary), reason);

    this.tables = replicaTables(new Construct(this, 'Tables'), record);
    this.config = primary.config;
    this.push = record.push;
    const region = deployRegion(this, {
      tables: this.tables,
      config: this.config,
      tick: record.tick,
      removalPolicy: record.removalPolicy,
      logRetention: record.logRetention,
      encryptionKey: undefined,
      eventBus: props.eventBus,
      alarmTopic: props.alarmTopic,
      platformSignals: record.platformSignals,
      push: record.push,
    });
    this.eventBus = region.eventBus;
    this.timerQueue = region.timerQueue;
    this.deadLetterQueues = region.deadLetterQueues;
    this.functions = region.functions;
    this.schedule = region.schedule;
    this.pushEndpoint = region.pushEndpoint;
    this.monitoring = region.monitoring;
    this.alarms = this.monitoring.alarms;
    this.dashboard = this.monitoring.dashboard;
  }

  /**
   * `Conclave.grantGetLeader` for a reader in this Region (the SDK's `getLeader`), on this
   * Region's replicas: GetItem of the leases' rows (`leaseNames`, kept to them by
   * `dynamodb:LeadingKeys`, or `allLeases: true`), and GetItem of every process's session row on
   * the identities table, which judges a term held on a session, with the Query of those session
   * partitions (a term its named row does not vouch for is judged by its holder's own process's
   * sessions), and DescribeTable of those two tables (getLeader waits for a table still being
   * created). No write.
   * @throws ValidationError naming the option, when the scope is missing or both forms are given
   */
  grantGetLeader(grantee: iam.IGrantable, options: GrantGetLeaderOptions): iam.Grant {
    return grantGetLeaderIn(grantee, options, { tables: this.tables, encryptionKey: undefined });
  }

  /**
   * `Conclave.grantWorker` for a worker in this Region: the same access, on this Region's replicas
   * and IoT Core endpoint (without `dynamodb:ConditionCheckItem`: MRSC tables take no
   * transactions).
   * @throws ValidationError naming the option, when a scope is missing or both forms are given
   */
  grantWorker(grantee: iam.IGrantable, options: GrantWorkerOptions): iam.Grant {
    return grantWorkerIn(grantee, options, { scope: this, tables: this.tables, encryptionKey: undefined, push: this.push, multiRegion: true });
  }

  /** `Conclave.grantOperator` for the CLI run against this Region: the same access, on this Region's replicas. */
  grantOperator(grantee: iam.IGrantable): iam.Grant {
    return grantOperatorIn(grantee, { tables: this.tables, encryptionKey: undefined });
  }
}

/** What the primary hands a replica, or a ValidationError saying why this replica cannot be. */
function replicaIssues(replica: Construct, primary: Conclave): PrimaryRecord {
  const subject = 'ConclaveReplica props';
  const record = PRIMARIES.get(primary);
  if (!record) {
    throw new ValidationError(subject, [{ field: 'primary', message: `is a Conclave in one Region (${primary.node.path}): give it \`regions\` (ConclaveProps) to replicate its tables to this Region` }]);
  }
  const here = Stack.of(replica);
  const home = Stack.of(primary);
  const others = primary.otherReplicaRegions;
  const issues: FieldIssue[] = [];
  if (Token.isUnresolved(here.region)) {
    issues.push({ field: 'env.region', message: `of the replica's stack must be explicit, one of the primary's other replica Regions (${others.join(', ')}): e.g. env: { region: '${others[0]}' }` });
  } else if (here.region === home.region) {
    issues.push({ field: 'env.region', message: `is ${here.region}, the primary's own Region (its Conclave runs there already): use one of ${others.join(', ')}` });
  } else if (record.regions.witness === here.region) {
    issues.push({ field: 'env.region', message: `is ${here.region}, the witness Region, which holds no table to run on: use one of ${others.join(', ')}` });
  } else if (!others.includes(here.region)) {
    issues.push({ field: 'env.region', message: `is ${here.region}, which holds no replica of the primary's tables (regions.replicas: ${record.regions.replicas.join(', ')}): use one of ${others.join(', ')}` });
  } else if (record.replicas.has(here.region)) {
    issues.push({ field: 'env.region', message: `is ${here.region}, which has a ConclaveReplica of this primary already (${record.replicas.get(here.region)!.node.path}): one per Region` });
  }
  if (!Token.isUnresolved(here.account) && !Token.isUnresolved(home.account) && here.account !== home.account) {
    issues.push({ field: 'env.account', message: `is ${here.account}, the primary's is ${home.account}: an MRSC global table's replicas are in one account` });
  }
  if (issues.length) throw new ValidationError(subject, issues);
  return record;
}

/**
 * The primary's tables as this Region's replicas: by name, in this stack's Region and account,
 * each stream's ARN read at deploy time (`table.replica(region)` gives a stream ARN ending in
 * `/stream/*`, which a Lambda event source mapping cannot take).
 */
function replicaTables(scope: Construct, record: PrimaryRecord): ConclaveReplicaTableSet {
  const stack = Stack.of(scope);
  const make = (role: TableRole): dynamodb.ITableV2 => {
    const t: { stream: boolean; indexes?: readonly unknown[] } = TABLES[role];
    const name = record.names[role];
    const id = pascal(role);
    let tableStreamArn: string | undefined;
    if (t.stream) {
      const lookup = deployTimeLookup(scope, `${id}Stream`, {
        resourceType: 'Custom::ConclaveReplicaStream',
        call: {
          service: 'DynamoDB',
          action: 'DescribeTable',
          parameters: { TableName: name },
          physicalResourceId: cr.PhysicalResourceId.fromResponse('Table.LatestStreamArn'),
          outputPaths: ['Table.LatestStreamArn'],
        },
        statements: [new iam.PolicyStatement({ actions: ['dynamodb:DescribeTable'], resources: [stack.formatArn({ service: 'dynamodb', resource: 'table', resourceName: name })] })],
        what: "the lookups of this Region's table streams and IoT Core endpoint",
        roleDescription: "Conclave: looks up this Region's table streams (and IoT Core endpoint) at deploy time",
        removalPolicy: record.removalPolicy,
        logRetention: record.logRetention,
        encryptionKey: undefined,
      });
      tableStreamArn = lookup.getResponseField('Table.LatestStreamArn');
    }
    return dynamodb.TableV2.fromTableAttributes(scope, id, { tableName: name, ...(tableStreamArn ? { tableStreamArn } : {}), grantIndexPermissions: (t.indexes?.length ?? 0) > 0 });
  };
  const tables: ConclaveTableRefs = { leases: make('leases'), candidates: make('candidates'), identities: make('identities') };
  return { ...tables };
}

/** Props of ConclaveReplicaStack: a stack's props (`env.region` required), and the replica's. */
export interface ConclaveReplicaStackProps extends StackProps {
  /** The `Conclave` that creates the global tables (see `ConclaveReplicaProps.primary`). */
  readonly primary: Conclave;
  /** The replica's own props. Its `alarmTopic`, when given, is used instead of the stack's own topic. @default ConclaveReplica's defaults */
  readonly replica?: ConclaveReplicaOptions;
  /**
   * Subscribe this e-mail address to the alarm topic (AWS sends a confirmation message first).
   * One that is no e-mail address is a ValidationError naming `alarmEmail` when the stack is created
   * (a token, such as a CfnParameter's value, is left to CloudFormation).
   * @default no subscription
   */
  readonly alarmEmail?: string;
}

/**
 * A stack with a ConclaveReplica (id `Conclave`) for one other replica Region of a multi-Region
 * Conclave, a topic its alarms go to, and the same outputs as ConclaveStack for workers there:
 * the three table names, the event bus, the dashboard, the alarm topic and, with the push path,
 * this Region's endpoint.
 * @example
 * ```ts
 * const primary = new ConclaveStack(app, 'Conclave', {
 *   env: { region: 'us-east-1' },
 *   conclave: { tablePrefix: 'conclave', regions: { replicas: ['us-east-1', 'us-east-2'], witness: 'us-west-2' } },
 * });
 * for (const region of primary.conclave.otherReplicaRegions) {
 *   new ConclaveReplicaStack(app, `Conclave-${region}`, { env: { region }, primary: primary.conclave });
 * }
 * ```
 */
export class ConclaveReplicaStack extends Stack {
  /** The construct. */
  readonly conclave: ConclaveReplica;
  /** Where the alarms notify: the replica's `alarmTopic` if given, else a topic of this stack (SSL only). */
  readonly alarmTopic: sns.ITopic;

  constructor(scope: Construct, id: string, props: ConclaveReplicaStackProps) {
    const { primary, replica, alarmEmail, ...stackProps } = props;
    super(scope, id, { description: 'Conclave: coordinated leader election (KEP-4355) on DynamoDB, in a replica Region of a multi-Region deployment', ...stackProps });
    parse(AlarmEmailPropsSchema, { alarmEmail }, 'ConclaveReplicaStack props');
    this.alarmTopic = replica?.alarmTopic ?? new sns.Topic(this, 'Alarms', { displayName: 'Conclave alarms', enforceSSL: true });
    if (alarmEmail !== undefined) this.alarmTopic.addSubscription(new subscriptions.EmailSubscription(alarmEmail));
    this.conclave = new ConclaveReplica(this, 'Conclave', { ...replica, alarmTopic: this.alarmTopic, primary });
    const out = (id: string, value: string, description: string) => new CfnOutput(this, id, { value, description });
    out('LeasesTable', this.conclave.tables.leases.tableName, 'LeaderElector `table` (CONCLAVE_LEASES_TABLE)');
    out('CandidatesTable', this.conclave.tables.candidates.tableName, 'LeaseCandidate `table` (CONCLAVE_CANDIDATES_TABLE)');
    out('IdentitiesTable', this.conclave.tables.identities.tableName, 'IdentityLeaseHeartbeat `table` (CONCLAVE_IDENTITIES_TABLE)');
    out('EventBusName', this.conclave.eventBus.eventBusName, "Where this Region's lease and candidate events are published");
    out('DashboardName', this.conclave.dashboard.dashboardName, "CloudWatch dashboard of this Region's functions");
    out('AlarmTopicArn', this.alarmTopic.topicArn, "This Region's alarm and OK notifications");
    if (this.conclave.pushEndpoint) out('PushEndpoint', this.conclave.pushEndpoint, "PushChannel `endpoint` (CONCLAVE_PUSH_URL) of this Region's workers: IoT Core, MQTT over WebSocket");
  }
}

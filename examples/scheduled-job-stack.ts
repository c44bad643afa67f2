/**
 * A scheduled job through `withLease` as CDK deploys it: a function run on an
 * EventBridge schedule, a table for its reports, and a role granted exactly what `withLease` needs
 * for the job's lease (Conclave's `grantWorker`) plus the reports table's GetItem and PutItem.
 *
 * The repository's app adds it with `-c exampleJob=true` (infra/app/app.ts), with the local demo's
 * job (lib/local/demo/scheduled-job.ts) as its code; in your own app, bundle your handler (any
 * bundler; the AWS SDK clients can stay external) and pass the code. The environment below is
 * what that handler reads.
 */
import { Duration, RemovalPolicy } from 'aws-cdk-lib';
import * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import * as events from 'aws-cdk-lib/aws-events';
import * as targets from 'aws-cdk-lib/aws-events-targets';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import * as logs from 'aws-cdk-lib/aws-logs';
import { Construct } from 'constructs';
import type { Conclave } from '@conclave/cdk';

export interface ScheduledLeaseJobProps {
  /** The Conclave whose tables hold the job's lease. */
  readonly conclave: Conclave;
  /** The bundled handler (an ESM bundle exporting `handler`), such as lib/local/demo/scheduled-job.ts. */
  readonly code: lambda.Code;
  /** When the job runs. @default every 5 minutes */
  readonly schedule?: events.Schedule;
  /** The job's lease. @default 'scheduled-report' */
  readonly leaseName?: string;
  /** At most one successful run per: `day`, `hour`, or a number of milliseconds. @default 'hour' */
  readonly window?: 'day' | 'hour' | number;
  /** What happens to the reports table when the stack is deleted. @default RemovalPolicy.RETAIN */
  readonly removalPolicy?: RemovalPolicy;
}

/** A Lambda function on a schedule doing a fenced, run-once-per-window job through withLease. */
export class ScheduledLeaseJob extends Construct {
  readonly reports: dynamodb.TableV2;
  readonly function: lambda.Function;
  readonly rule: events.Rule;

  constructor(scope: Construct, id: string, props: ScheduledLeaseJobProps) {
    super(scope, id);
    const removalPolicy = props.removalPolicy ?? RemovalPolicy.RETAIN;
    const leaseName = props.leaseName ?? 'scheduled-report';
    this.reports = new dynamodb.TableV2(this, 'Reports', {
      partitionKey: { name: 'id', type: dynamodb.AttributeType.STRING },
      pointInTimeRecoverySpecification: { pointInTimeRecoveryEnabled: true },
      removalPolicy,
      deletionProtection: removalPolicy === RemovalPolicy.RETAIN,
    });
    const role = new iam.Role(this, 'Role', { assumedBy: new iam.ServicePrincipal('lambda.amazonaws.com'), description: `Conclave example: the scheduled job of lease ${leaseName}` });
    const logGroup = new logs.LogGroup(this, 'Logs', { retention: logs.RetentionDays.ONE_MONTH, removalPolicy });
    logGroup.grantWrite(role);
    // withLease on this lease only; no identity lease
    props.conclave.grantWorker(role, { leaseNames: [leaseName], components: [] });
    this.reports.grant(role, 'dynamodb:GetItem', 'dynamodb:PutItem');
    const t = props.conclave.tables;
    this.function = new lambda.Function(this, 'Function', {
      description: `Conclave example: a scheduled job, exactly one run per ${props.window ?? 'hour'} (withLease on ${leaseName})`,
      code: props.code,
      handler: 'index.handler',
      runtime: lambda.Runtime.NODEJS_24_X,
      architecture: lambda.Architecture.ARM_64,
      memorySize: 256,
      timeout: Duration.minutes(1),
      role,
      logGroup,
      environment: {
        CONCLAVE_LEASES_TABLE: t.leases.tableName,
        CONCLAVE_CANDIDATES_TABLE: t.candidates.tableName,
        CONCLAVE_IDENTITIES_TABLE: t.identities.tableName,
        JOB_RESULTS_TABLE: this.reports.tableName,
        JOB_LEASE: leaseName,
        JOB_WINDOW: String(props.window ?? 'hour'),
      },
    });
    this.rule = new events.Rule(this, 'Schedule', {
      description: `Runs the scheduled job of lease ${leaseName}`,
      schedule: props.schedule ?? events.Schedule.rate(Duration.minutes(5)),
      targets: [new targets.LambdaFunction(this.function, { retryAttempts: 2 })],
    });
  }
}

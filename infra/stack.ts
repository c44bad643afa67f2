/**
 * A stack holding one Conclave construct, with the outputs workers and the CLI are configured
 * with: for a Conclave deployed on its own (the repository's app deploys this).
 */
import { CfnOutput, Stack, type StackProps } from 'aws-cdk-lib';
import type { Construct } from 'constructs';
import { Conclave, type ConclaveProps } from './conclave.js';

/** Props of ConclaveStack: a stack's props, and the Conclave construct's. */
export interface ConclaveStackProps extends StackProps {
  /** The construct's props. @default Conclave's defaults */
  readonly conclave?: ConclaveProps;
}

/**
 * A stack with a Conclave construct (id `Conclave`) and outputs for what workers and the CLI are
 * configured with: the three table names, the event bus and the dashboard.
 */
export class ConclaveStack extends Stack {
  /** The construct. */
  readonly conclave: Conclave;

  constructor(scope: Construct, id: string, props: ConclaveStackProps = {}) {
    super(scope, id, { description: 'Conclave: coordinated leader election (KEP-4355) on DynamoDB', ...props });
    this.conclave = new Conclave(this, 'Conclave', props.conclave);
    const out = (id: string, value: string, description: string) => new CfnOutput(this, id, { value, description });
    out('LeasesTable', this.conclave.tables.leases.tableName, 'LeaderElector `table` (CONCLAVE_LEASES_TABLE)');
    out('CandidatesTable', this.conclave.tables.candidates.tableName, 'LeaseCandidate `table` (CONCLAVE_CANDIDATES_TABLE)');
    out('IdentitiesTable', this.conclave.tables.identities.tableName, 'IdentityLeaseHeartbeat `table` (CONCLAVE_IDENTITIES_TABLE)');
    out('EventBusName', this.conclave.eventBus.eventBusName, 'Where lease and candidate events are published');
    out('DashboardName', this.conclave.dashboard.dashboardName, 'CloudWatch dashboard');
  }
}

/**
 * A stack holding one Conclave construct, with the outputs workers and the CLI are configured
 * with, and a topic its alarms go to: for a Conclave deployed on its own (the repository's app
 * deploys this).
 */
import { CfnOutput, Stack, type StackProps } from 'aws-cdk-lib';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as sns from 'aws-cdk-lib/aws-sns';
import * as subscriptions from 'aws-cdk-lib/aws-sns-subscriptions';
import type { Construct } from 'constructs';
import { parse } from '../lib/schemas/validation.js';
import { Conclave, type ConclaveProps } from './conclave.js';
import { addKeyStatement } from './grants.js';
import { AlarmEmailPropsSchema } from './settings.js';

/** Props of ConclaveStack: a stack's props, and the Conclave construct's. */
export interface ConclaveStackProps extends StackProps {
  /**
   * The construct's props. Its `alarmTopic`, when given, is used instead of the stack's own topic.
   * @default Conclave's defaults
   */
  readonly conclave?: ConclaveProps;
  /**
   * Subscribe this e-mail address to the alarm topic (AWS sends a confirmation message first).
   * One that is no e-mail address is a ValidationError naming `alarmEmail` when the stack is created
   * (a token, such as a CfnParameter's value, is left to CloudFormation).
   * @default no subscription: subscribe to the topic (output AlarmTopicArn) yourself
   */
  readonly alarmEmail?: string;
}

/**
 * A stack with a Conclave construct (id `Conclave`), a topic every alarm and its recovery go to,
 * and outputs for what workers and the CLI are configured with: the three table names, the event
 * bus, the dashboard, the alarm topic and, with the push path, its endpoint.
 */
export class ConclaveStack extends Stack {
  /** The construct. */
  readonly conclave: Conclave;
  /** Where the alarms notify: the construct's `alarmTopic` if given, else a topic of this stack (SSL only). */
  readonly alarmTopic: sns.ITopic;

  constructor(scope: Construct, id: string, props: ConclaveStackProps = {}) {
    const { conclave, alarmEmail, ...stackProps } = props;
    super(scope, id, { description: 'Conclave: coordinated leader election (KEP-4355) on DynamoDB', ...stackProps });
    parse(AlarmEmailPropsSchema, { alarmEmail }, 'ConclaveStack props');
    this.alarmTopic =
      conclave?.alarmTopic ??
      new sns.Topic(this, 'Alarms', {
        displayName: 'Conclave alarms',
        enforceSSL: true,
        // CloudWatch can publish to a key-encrypted topic only if the key lets it; with the
        // construct's own key, it is granted below
        ...(conclave?.encryptionKey ? { masterKey: conclave.encryptionKey } : {}),
      });
    if (conclave?.encryptionKey && !conclave.alarmTopic) {
      // an imported key's policy cannot be changed from here: it must allow CloudWatch itself (the construct warns: warnOfKeyPolicy)
      addKeyStatement(
        conclave.encryptionKey,
        new iam.PolicyStatement({
          sid: 'AllowCloudWatchAlarmsToPublishToTheConclaveTopic',
          principals: [new iam.ServicePrincipal('cloudwatch.amazonaws.com')],
          actions: ['kms:Decrypt', 'kms:GenerateDataKey*'],
          resources: ['*'],
          // this account's alarms only, as the logs and EventBridge statements are conditioned
          conditions: { StringEquals: { 'aws:SourceAccount': this.account } },
        }),
      );
    }
    if (alarmEmail !== undefined) this.alarmTopic.addSubscription(new subscriptions.EmailSubscription(alarmEmail));
    this.conclave = new Conclave(this, 'Conclave', { ...conclave, alarmTopic: this.alarmTopic });
    const out = (id: string, value: string, description: string) => new CfnOutput(this, id, { value, description });
    out('LeasesTable', this.conclave.tables.leases.tableName, 'LeaderElector `table` (CONCLAVE_LEASES_TABLE)');
    out('CandidatesTable', this.conclave.tables.candidates.tableName, 'LeaseCandidate `table` (CONCLAVE_CANDIDATES_TABLE)');
    out('IdentitiesTable', this.conclave.tables.identities.tableName, 'IdentityLeaseHeartbeat `table` (CONCLAVE_IDENTITIES_TABLE)');
    out('EventBusName', this.conclave.eventBus.eventBusName, 'Where lease and candidate events are published');
    out('DashboardName', this.conclave.dashboard.dashboardName, 'CloudWatch dashboard');
    out('AlarmTopicArn', this.alarmTopic.topicArn, 'Alarm and OK notifications (subscribe to it, or deploy with -c alarmEmail=...)');
    if (this.conclave.pushEndpoint) out('PushEndpoint', this.conclave.pushEndpoint, 'PushChannel `endpoint` (CONCLAVE_PUSH_URL): IoT Core, MQTT over WebSocket');
  }
}

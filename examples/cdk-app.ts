/**
 * Conclave in your own CDK app: the construct in your stack, a worker role granted exactly what
 * the worker SDK calls for its leases, and cdk-nag's AwsSolutions checks on every synth.
 *
 *   npm i @conclave/cdk aws-cdk-lib constructs && npm i -D aws-cdk@2 cdk-nag
 *   npx cdk synth     (cdk.json: { "app": "node dist/cdk-app.js" } once compiled with tsc)
 *
 * Synth needs no credentials, no network, no bundler and no Docker: the functions ship pre-built.
 */
import { App, CfnOutput, Stack, Validations } from 'aws-cdk-lib';
import * as iam from 'aws-cdk-lib/aws-iam';
import { AwsSolutionsChecks } from 'cdk-nag';
import { Conclave } from '@conclave/cdk';

const app = new App();
// cdk-nag 3 is a validation plugin: a finding fails the synth
Validations.of(app).addPlugins(new AwsSolutionsChecks(app));

const stack = new Stack(app, 'Reports');
const conclave = new Conclave(stack, 'Conclave', { tablePrefix: 'reports' });

// The role your ECS tasks (or EC2 instances) run as: it may take part in these leases only, and
// keeps no identity lease (components: []; list the components its IdentityLeaseHeartbeat uses).
const workerRole = new iam.Role(stack, 'WorkerRole', { assumedBy: new iam.ServicePrincipal('ecs-tasks.amazonaws.com') });
conclave.grantWorker(workerRole, { leaseNames: ['nightly-report'], components: [] });

// What the workers are configured with: `tables: 'reports'` names all three.
new CfnOutput(stack, 'LeasesTable', { value: conclave.tables.leases.tableName });
new CfnOutput(stack, 'EventBusName', { value: conclave.eventBus.eventBusName });

app.synth();

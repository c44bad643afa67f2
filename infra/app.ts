/**
 * `npx cdk synth` / `npx cdk deploy`: one stack holding the Conclave construct, checked by
 * cdk-nag's AwsSolutions pack at every synth (a finding fails it). Synth needs no credentials and
 * no network: the stack is environment-agnostic and the functions are bundled by the local esbuild.
 *
 * The tables are named `<prefix>-leases`, `<prefix>-candidates`, `<prefix>-identities`, prefix
 * `conclave` unless `-c tablePrefix=...` says otherwise: the names the CLI and the examples use
 * by default (CONCLAVE_TABLE_PREFIX).
 */
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { App, CfnOutput, Stack, Validations, type AppProps, type StackProps } from 'aws-cdk-lib';
import { AwsSolutionsChecks } from 'cdk-nag';
import type { Construct } from 'constructs';
import * as z from 'zod';
import { parse } from '../lib/schemas/validation.js';
import { defaultTableNames } from '../lib/tables.js';
import { Conclave, TablePrefix, type ConclaveProps } from './conclave.js';

/** The prefix `defaultTableNames()` (and so the CLI and the worker example) assumes. */
const DEFAULT_PREFIX = defaultTableNames().leases.replace(/-leases$/, '');

/** The stack `cdk deploy` creates; its outputs are what workers and the CLI are configured with. */
export class ConclaveStack extends Stack {
  readonly conclave: Conclave;

  constructor(scope: Construct, id: string, props: StackProps & { conclave?: ConclaveProps } = {}) {
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

/** An App with cdk-nag's AwsSolutions checks registered (cdk-nag 3: a validation plugin, not an Aspect). */
export function checkedApp(props: AppProps = {}): App {
  const app = new App(props);
  Validations.of(app).addPlugins(new AwsSolutionsChecks(app));
  return app;
}

/** The stack `cdk deploy` deploys: `Conclave`, or `Conclave-<prefix>` for another table prefix. */
export function addConclaveStack(app: App): ConclaveStack {
  const { tablePrefix } = parse(z.object({ tablePrefix: TablePrefix }), { tablePrefix: app.node.tryGetContext('tablePrefix') ?? DEFAULT_PREFIX }, 'CDK context (-c tablePrefix=...)');
  const id = tablePrefix === DEFAULT_PREFIX ? 'Conclave' : `Conclave-${tablePrefix.replace(/[^A-Za-z0-9-]/g, '-')}`;
  return new ConclaveStack(app, id, { conclave: { tablePrefix } });
}

// Run as the CDK app (cdk.json: `npx tsx infra/app.ts`), not when imported by tests.
if (process.argv[1] && import.meta.url === pathToFileURL(resolve(process.argv[1])).href) {
  const app = checkedApp();
  addConclaveStack(app);
  app.synth();
}

/**
 * `npx cdk synth` / `npx cdk deploy`: one ConclaveStack, checked by cdk-nag's AwsSolutions pack
 * at every synth (a finding fails it). Synth needs no credentials and no network: the stack is
 * environment-agnostic, and the functions' code is built first (scripts/build-functions.ts, the
 * local esbuild), so what is deployed is what the sources say.
 *
 * The tables are named `<prefix>-leases`, `<prefix>-candidates`, `<prefix>-identities`, prefix
 * `conclave` unless `-c tablePrefix=...` says otherwise: the names the CLI and the examples use
 * by default (CONCLAVE_TABLE_PREFIX). The alarms notify the stack's topic; `-c alarmEmail=...`
 * subscribes an address to it. The push path (IoT Core wakes) is on; `-c push=false` leaves it out.
 *
 * This folder is the repository's ready app, apart from @conclave/cdk (the rest of infra/, entry
 * infra/index.ts): it needs cdk-nag, builds the functions from the sources, and adds the example
 * job. It stands on the construct and the build script; neither imports it
 * (test/packaging/import-graph.test.ts).
 */
import { createHash } from 'node:crypto';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { App, Validations, type AppProps } from 'aws-cdk-lib';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import { AwsSolutionsChecks } from 'cdk-nag';
import * as z from 'zod';
import { ScheduledLeaseJob } from '../../examples/scheduled-job-stack.js';
import { parse } from '../../lib/schemas/validation.js';
import { defaultTableNames } from '../../lib/tables.js';
import { TablePrefixSchema } from '../settings.js';
import { ConclaveStack } from '../stack.js';
import { buildFunctions } from '../../scripts/build-functions.js';
import { EXAMPLE_JOB_DIR, buildExampleJob } from './example-job.js';

/** The prefix `defaultTableNames()` (and so the CLI and the demo's worker) assumes. */
const DEFAULT_PREFIX = defaultTableNames().leases.replace(/-leases$/, '');

/** An App with cdk-nag's AwsSolutions checks registered (cdk-nag 3: a validation plugin, not an Aspect). */
export function checkedApp(props: AppProps = {}): App {
  const app = new App(props);
  Validations.of(app).addPlugins(new AwsSolutionsChecks(app));
  return app;
}

/** The stack `cdk deploy` deploys: `Conclave`, or `Conclave-<prefix>` for another table prefix (stackIdFor), or `-c stackName=...`. */
export function addConclaveStack(app: App): ConclaveStack {
  const { tablePrefix, stackName, alarmEmail, exampleJob, push } = parse(
    z.object({
      tablePrefix: TablePrefixSchema,
      stackName: z
        .string()
        .regex(/^[A-Za-z][A-Za-z0-9-]{0,127}$/, 'must be a CloudFormation stack name (a letter, then letters, digits and -, at most 128): -c stackName=Conclave-team-a')
        .optional(),
      alarmEmail: z.email('must be an e-mail address: -c alarmEmail=oncall@example.com').optional(),
      exampleJob: z.enum(['true', 'false'], 'must be true or false: -c exampleJob=true adds the example scheduled job').optional(),
      push: z.enum(['true', 'false'], 'must be true or false: -c push=false leaves out the push path (IoT Core)').optional(),
    }),
    {
      tablePrefix: app.node.tryGetContext('tablePrefix') ?? DEFAULT_PREFIX,
      stackName: app.node.tryGetContext('stackName'),
      alarmEmail: app.node.tryGetContext('alarmEmail'),
      exampleJob: optionalString(app.node.tryGetContext('exampleJob')),
      push: optionalString(app.node.tryGetContext('push')),
    },
    'CDK context (-c tablePrefix=... -c stackName=... -c alarmEmail=... -c exampleJob=true -c push=false)',
  );
  const id = stackName ?? stackIdFor(tablePrefix);
  const stack = new ConclaveStack(app, id, { conclave: { tablePrefix, push: push !== 'false' }, ...(alarmEmail ? { alarmEmail } : {}) });
  // the example scheduled job (the demo's, lib/local/demo/scheduled-job.ts), bundled by buildExampleJob before synth
  if (exampleJob === 'true') new ScheduledLeaseJob(stack, 'ExampleJob', { conclave: stack.conclave, code: lambda.Code.fromAsset(EXAMPLE_JOB_DIR) });
  return stack;
}

/**
 * The stack of a table prefix, one to one: `Conclave-<prefix>`. A stack's name takes letters, digits
 * and `-` only; a prefix with `.` or `_` has them as `-` and a hash of the prefix after it, so
 * `team.a`, `team_a` and `team-a` are three stacks (they were one, and a deploy of one renamed the
 * other's tables: CloudFormation made new empty ones, and the old ones, kept, were left behind).
 */
export function stackIdFor(tablePrefix: string): string {
  if (tablePrefix === DEFAULT_PREFIX) return 'Conclave';
  const plain = tablePrefix.replace(/[^A-Za-z0-9-]/g, '-');
  if (plain === tablePrefix) return `Conclave-${tablePrefix}`;
  return `Conclave-${plain}-${createHash('sha256').update(tablePrefix).digest('hex').slice(0, 8)}`;
}

/** A context value given on the command line is a string; in cdk.json it may be a boolean. */
const optionalString = (v: unknown): unknown => (typeof v === 'boolean' ? String(v) : v);

// Run as the CDK app (cdk.json: `npx tsx infra/app/app.ts`), not when imported by tests.
if (process.argv[1] && import.meta.url === pathToFileURL(resolve(process.argv[1])).href) {
  // the sources' functions, bundled now: a deploy from this repository never ships stale code
  await buildFunctions();
  await buildExampleJob(); // small; built always, so `-c exampleJob=true` finds it
  const app = checkedApp();
  addConclaveStack(app);
  app.synth();
}

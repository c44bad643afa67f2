/**
 * The example scheduled job (the local demo's, lib/local/demo/scheduled-job.ts): the ready app deploys it with
 * `-c exampleJob=true` (a schedule, a reports table, a least-privilege role, cdk-nag clean), and
 * its bundle — the code Lambda would run — does exactly one run per window on DynamoDB Local when
 * the schedule delivers twice at once.
 */
import { randomUUID } from 'node:crypto';
import { CreateTableCommand, DeleteTableCommand, GetItemCommand } from '@aws-sdk/client-dynamodb';
import { marshall, unmarshall } from '@aws-sdk/util-dynamodb';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { pathToFileURL } from 'node:url';
import { join } from 'node:path';
import { addConclaveStack } from '../../infra/app/app.js';
import type { ConclaveStack } from '../../infra/stack.js';
import { ValidationError } from '../../lib/schemas/validation.js';
import { PERIODIC_WINDOWS } from '../../lib/schemas/run-once.js';
import { LeaseStore } from '../../lib/stores/lease-store.js';
import { RunOnceStore } from '../../lib/stores/run-once-store.js';
import { buildExampleJob } from '../../infra/app/example-job.js';
import type { JobOutcome } from '../../lib/local/demo/scheduled-job.js';
import { testTables, type TestTables } from '../support.js';
import { buildAssets, statementsOf, synth, unacknowledged, type Synthesized } from './support.js';

let dir = '';
beforeAll(async () => {
  await buildAssets();
  dir = await buildExampleJob();
});

describe('the ready app with -c exampleJob=true', () => {
  let s: Synthesized<ConclaveStack>;
  beforeAll(() => {
    s = synth((app) => {
      app.node.setContext('exampleJob', 'true');
      return addConclaveStack(app);
    });
  });
  afterAll(() => s?.cleanup());

  it('adds a function on a 5-minute schedule with the tables and lease in its environment, cdk-nag clean', () => {
    expect(unacknowledged(s.report)).toEqual([]);
    const job = Object.entries(s.template.findResources('AWS::Lambda::Function')).find(([, r]) => String((r as { Properties: { Description?: string } }).Properties.Description).includes('scheduled job'));
    expect(job).toBeDefined();
    const env = (job![1] as { Properties: { Environment: { Variables: Record<string, unknown> } } }).Properties.Environment.Variables;
    expect(Object.keys(env).sort()).toEqual(['CONCLAVE_CANDIDATES_TABLE', 'CONCLAVE_IDENTITIES_TABLE', 'CONCLAVE_LEASES_TABLE', 'JOB_LEASE', 'JOB_RESULTS_TABLE', 'JOB_WINDOW']);
    expect(env).toMatchObject({ JOB_LEASE: 'scheduled-report', JOB_WINDOW: 'hour' });
    const rules = Object.values(s.template.findResources('AWS::Events::Rule')).filter((r) => (r as { Properties: { ScheduleExpression?: string } }).Properties.ScheduleExpression === 'rate(5 minutes)');
    expect(rules).toHaveLength(1);
    expect(JSON.stringify(rules[0])).toContain(job![0]);
  });

  it('its role may write only the job’s lease (withLease’s writes) and get and put the reports', () => {
    const roleId = Object.keys(s.template.findResources('AWS::IAM::Role')).find((id) => id.startsWith('ExampleJobRole'))!;
    const statements = statementsOf(s.template, roleId);
    const leaseWrite = statements.find((st) => st.Action.includes('dynamodb:UpdateItem') && JSON.stringify(st.Condition ?? {}).includes('"fencingToken"'));
    expect(leaseWrite?.Condition?.['ForAllValues:StringEquals']?.['dynamodb:LeadingKeys']).toEqual(['scheduled-report']);
    // the run-once rows: in the job's lease's partition of the candidates table only
    const windowWrite = statements.find((st) => st.Action.includes('dynamodb:UpdateItem') && JSON.stringify(st.Condition ?? {}).includes('"runs"'));
    expect(windowWrite?.Condition?.['ForAllValues:StringEquals']?.['dynamodb:LeadingKeys']).toEqual(['scheduled-report']);
    const reports = statements.filter((st) => JSON.stringify(st.Resource).includes('ExampleJobReports'));
    expect(reports.flatMap((st) => st.Action).sort()).toEqual(['dynamodb:GetItem', 'dynamodb:PutItem']);
  });

  it('refuses a context value that is not true or false, naming it', () => {
    expect(() =>
      synth((app) => {
        app.node.setContext('exampleJob', 'yes');
        return addConclaveStack(app);
      }),
    ).toThrow(ValidationError);
  });
});

describe('the bundled handler on DynamoDB Local', () => {
  let t: TestTables;
  const reports = `t-job-reports-${randomUUID().slice(0, 8)}`;
  const saved = { ...process.env };
  beforeAll(async () => {
    t = await testTables('example-job');
    await t.client.send(new CreateTableCommand({ TableName: reports, BillingMode: 'PAY_PER_REQUEST', AttributeDefinitions: [{ AttributeName: 'id', AttributeType: 'S' }], KeySchema: [{ AttributeName: 'id', KeyType: 'HASH' }] }));
    Object.assign(process.env, { CONCLAVE_ENDPOINT: inject('ddbEndpoint'), CONCLAVE_TABLE_PREFIX: t.names.leases.replace(/-leases$/, ''), JOB_RESULTS_TABLE: reports, JOB_WINDOW: 'hour' });
  });
  afterAll(async () => {
    for (const k of ['CONCLAVE_ENDPOINT', 'CONCLAVE_TABLE_PREFIX', 'JOB_RESULTS_TABLE', 'JOB_WINDOW']) if (saved[k] === undefined) delete process.env[k];
    await t?.client.send(new DeleteTableCommand({ TableName: reports }));
    await t?.drop();
  });

  it('two deliveries of one schedule at once: one runs and writes report 1 with its token, the other does not; a later one in the window skips', async () => {
    const { handler } = (await import(pathToFileURL(join(dir, 'index.mjs')).href)) as { handler: (e: unknown, c: { awsRequestId: string; getRemainingTimeInMillis(): number }) => Promise<JobOutcome> };
    const context = (id: string) => ({ awsRequestId: id, getRemainingTimeInMillis: () => 60_000 });
    const both = await Promise.all([handler({}, context('inv-a')), handler({}, context('inv-b'))]);
    const ran = both.filter((o) => o.result === 'ran');
    expect(ran).toHaveLength(1);
    expect(both.filter((o) => o.result !== 'ran').map((o) => o.result)).toEqual([expect.stringMatching(/^(busy|skipped)$/)]);
    const later = await handler({}, context('inv-c'));
    expect(later).toMatchObject({ result: 'skipped', window: ran[0]!.window, fencingToken: ran[0]!.fencingToken });
    const get = async (id: string) => unmarshall((await t.client.send(new GetItemCommand({ TableName: reports, Key: marshall({ id }), ConsistentRead: true }))).Item!);
    expect(await get(`report#${ran[0]!.window}`)).toEqual({ id: `report#${ran[0]!.window}`, window: ran[0]!.window, sequence: 1, by: ran[0]!.invocation, fencingToken: ran[0]!.fencingToken });
    expect(await get('summary')).toEqual({ id: 'summary', reports: 1, last: ran[0]!.window });
    const lease = (await new LeaseStore(t.client, t.names.leases).read('scheduled-report')).item!;
    expect(lease.holderIdentity).toBeUndefined();
    expect((await new RunOnceStore(t.client, t.names.candidates).read('scheduled-report', PERIODIC_WINDOWS)).runs).toEqual([expect.objectContaining({ window: ran[0]!.window, holder: ran[0]!.invocation })]);
  });
});

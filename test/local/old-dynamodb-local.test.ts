/**
 * Local mode on a DynamoDB Local older than 2.2.0, which ignores ReturnValuesOnConditionCheckFailure
 * (a write its condition refuses comes back without the item Conclave's stores read), is refused
 * before a table is touched, naming the version needed and the ways on. Played by a proxy in front
 * of DynamoDB Local that drops the item from such answers, as those versions send them (tried
 * against DynamoDB Local 2023-01-26 itself: the same refusal).
 */
import { randomUUID } from 'node:crypto';
import { DescribeTableCommand } from '@aws-sdk/client-dynamodb';
import { afterEach, describe, expect, inject, it } from 'vitest';
import { localClient } from '../../lib/stores/client.js';
import { defaultTableNames } from '../../lib/tables.js';
import { startLocalConclave } from '../../lib/testing/index.js';
import { itemlessConflictsProxy } from '../proxy.js';

const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

describe('local mode on a DynamoDB Local older than 2.2.0', () => {
  it('is refused before a table is made, naming the version needed and the ways on; nothing is left holding its lock', async () => {
    const old = await itemlessConflictsProxy(inject('ddbEndpoint'));
    cleanups.push(() => old.close());
    const tablePrefix = `old-${randomUUID().slice(0, 8)}`;
    const started = startLocalConclave({ endpoint: old.endpoint, tablePrefix, push: false, logLevel: 'SILENT' });
    const refused = await started.then(
      (c) => (cleanups.push(() => c.stop()), undefined),
      (e: unknown) => e as Error,
    );
    // before: started, its stores taking every refused write for a conflict with a row "that no longer exists"
    expect(refused?.message).toBe(
      `the DynamoDB Local at ${old.endpoint}, the endpoint given (conclave-local: --endpoint), is older than 2.2.0 (December 2023): a write its condition refuses comes back without the item (it ignores ReturnValuesOnConditionCheckFailure), which Conclave relies on to tell whose write a row holds - ` +
        'run DynamoDB Local 2.2.0 or later there (the Docker image amazon/dynamodb-local:latest, or DynamoDBLocal.jar from AWS), or leave the endpoint out and one of its own is started (Java 17 or later)',
    );
    const client = localClient(inject('ddbEndpoint'));
    cleanups.push(() => client.destroy());
    // no table of the prefix was made
    await expect(client.send(new DescribeTableCommand({ TableName: defaultTableNames(tablePrefix).leases }))).rejects.toThrow(/not found|non-existent|ResourceNotFound/i);
    // the lock was released: a start on DynamoDB Local itself (2.2.0 or later) takes it and runs
    const conclave = await startLocalConclave({ endpoint: inject('ddbEndpoint'), tablePrefix, push: false, logLevel: 'SILENT' });
    cleanups.push(() => conclave.stop());
  });
});

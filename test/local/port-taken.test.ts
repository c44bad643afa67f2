/**
 * A fixed `port` already served by another DynamoDB Local (another user's, another project's):
 * startDynamoDBLocal refuses, naming the port and the ways out, and never adopts the one there
 * (its tables would be written by this run, and stop() would not stop what answered). The other
 * one here is the run's shared DynamoDB Local.
 */
import { ListTablesCommand } from '@aws-sdk/client-dynamodb';
import { describe, expect, inject, it } from 'vitest';
import { localClient, startDynamoDBLocal, type DynamoDBLocal } from '../../lib/local/dynamodb-local.js';
import { namespaceSupport } from '../../lib/local/network-namespace.js';

const other = inject('ddbEndpoint');
const port = Number(new URL(other).port);
const REFUSED = new RegExp(`port ${port} on 127\\.0\\.0\\.1 is already in use.*another DynamoDB Local.*leave out \`port\`.*endpoint: 'http://127\\.0\\.0\\.1:${port}'`, 'si');

/** What startDynamoDBLocal gave, stopped if it started anything (it must not). */
async function attempt(start: () => Promise<DynamoDBLocal>): Promise<unknown> {
  try {
    const ddb = await start();
    await ddb.stop();
    return new Error(`adopted ${ddb.endpoint} (Java pid ${ddb.pid}) instead of refusing`);
  } catch (e) {
    return e;
  }
}

async function stillAnswers(): Promise<void> {
  const c = localClient(other);
  try {
    await c.send(new ListTablesCommand({ Limit: 1 }));
  } finally {
    c.destroy();
  }
}

describe('startDynamoDBLocal({ port }) where another DynamoDB Local serves that port', () => {
  it('without a network namespace (Java would bind it on every interface): refuses before starting Java, instead of adopting the one there', async () => {
    const none = () => ({ ok: false, why: 'test: no namespace' }) as const;
    const e = await attempt(() => startDynamoDBLocal({ port, namespace: none, loopbackOnly: 'prefer', log: () => undefined }));
    expect(String((e as Error).message)).toMatch(REFUSED);
    await stillAnswers();
  });

  it.runIf(namespaceSupport().ok)('with one (the loopback front takes the port): refuses with the same message, not a bare EADDRINUSE', async () => {
    const e = await attempt(() => startDynamoDBLocal({ port }));
    expect(String((e as Error).message)).toMatch(REFUSED);
    await stillAnswers();
  });
});

/**
 * A worker whose `tables` name no table on DynamoDB Local on this machine says which Conclave table
 * prefixes are there, and the two fixes (a new user's trial: a bare `npx conclave-local` makes
 * conclave-local's tables, the quick start's worker names `conclave`, and its TableNotFoundError,
 * unlike the CLI's, did not say what was there). Off this machine nothing is listed: a worker's role
 * in AWS may not list tables.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { localClient } from '../../lib/local/dynamodb-local.js';
import { createTables, deleteTables } from '../../lib/local/tables.js';
import { defaultTableNames } from '../../lib/tables.js';
import { LeaderElector, TableNotFoundError, getLeader } from '../../lib/sdk/index.js';

const BASE = `tnf-${randomUUID().slice(0, 8)}`;
/** The tables there: local mode's default prefix beside the one the worker names. */
const THERE = defaultTableNames(`${BASE}-local`);
const ddb = localClient(inject('ddbEndpoint'));
beforeAll(() => createTables(ddb, THERE, { ttl: false }));
afterAll(async () => {
  await deleteTables(ddb, THERE);
  ddb.destroy();
});

const candidacy = { emulationVersion: '1.0.0', binaryVersion: '1.0.0' };
const HINT = `The Conclave table prefixes there (DynamoDB Local on this machine): ${BASE}-local`;
const FIX = `; use one (tables: '${BASE}-local'), or start local mode with this prefix, npx conclave-local --table-prefix ${BASE} (without --table-prefix it makes conclave-local's tables). `;

describe('a `tables` option naming no table on DynamoDB Local', () => {
  it("LeaderElector (the quick start's worker): run() rejects with a TableNotFoundError that names the prefixes there, the one meant first, and the fixes", async () => {
    const o = new LeaderElector({ client: localClient(inject('ddbEndpoint')), tables: BASE, leaseName: 'job', identity: 'w1', candidacy, platform: 'none', callbacks: { onStartedLeading: () => undefined } });
    const stop = new AbortController();
    const error = await o.run(stop.signal).then(() => undefined, (e: unknown) => e);
    stop.abort();
    expect(error).toBeInstanceOf(TableNotFoundError);
    const { message } = error as TableNotFoundError;
    // before: the tables, the option and the fix, but nothing of what is there
    expect(message).toContain(HINT);
    expect(message).toContain(FIX);
  });

  it('getLeader: the same', async () => {
    const error = await getLeader('job', { client: localClient(inject('ddbEndpoint')), tables: BASE }).then(() => undefined, (e: unknown) => e);
    expect(error).toBeInstanceOf(TableNotFoundError);
    expect((error as TableNotFoundError).message).toContain(HINT);
  });

  it('a client sending to the Region\'s endpoint (here redirected to DynamoDB Local): no ListTables is sent, and the message is as before', async () => {
    const saved = { a: process.env.AWS_ENDPOINT_URL, b: process.env.AWS_ENDPOINT_URL_DYNAMODB };
    delete process.env.AWS_ENDPOINT_URL;
    delete process.env.AWS_ENDPOINT_URL_DYNAMODB;
    const url = new URL(inject('ddbEndpoint'));
    const client = new DynamoDBClient({ region: 'eu-west-1', credentials: { accessKeyId: 'local', secretAccessKey: 'local' }, maxAttempts: 1 });
    const sent: string[] = [];
    client.middlewareStack.add(
      (next, context) => (args) => {
        sent.push(String(context.commandName));
        // the request goes to DynamoDB Local all the same: the client's own endpoint is AWS's
        Object.assign(args.request as object, { protocol: url.protocol, hostname: url.hostname, port: Number(url.port), path: '/' });
        return next(args);
      },
      { step: 'build', name: 'toDynamoDBLocal' },
    );
    try {
      const error = await getLeader('job', { client, tables: BASE }).then(() => undefined, (e: unknown) => e);
      expect(error).toBeInstanceOf(TableNotFoundError);
      expect((error as TableNotFoundError).message).not.toContain('Conclave table prefixes');
      expect(sent).not.toContain('ListTablesCommand');
      expect(sent).toContain('GetItemCommand');
    } finally {
      client.destroy();
      if (saved.a !== undefined) process.env.AWS_ENDPOINT_URL = saved.a;
      if (saved.b !== undefined) process.env.AWS_ENDPOINT_URL_DYNAMODB = saved.b;
    }
  });
});

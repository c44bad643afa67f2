/**
 * A worker given local mode's push broker endpoint (CONCLAVE_PUSH_URL's port, http://127.0.0.1:<port>)
 * as DynamoDB's: an easy slip, the two ports printed side by side. The broker answered every route
 * but its own as a ResourceNotFoundException, without x-amzn-RequestId, and the SDK took that for
 * DynamoDB's: run() rejected with a TableNotFoundError ("check the tables option"). An answer
 * without a request id is not DynamoDB's whatever error type it names: a NotDynamoDBError, told to
 * onError and tried again, as any answer not DynamoDB's is (lib/dynamodb-answers.ts).
 */
import { createServer } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPushBroker, type PushBroker } from '../../lib/local/push-broker.js';
import { getLeader, NotDynamoDBError, TableNotFoundError } from '../../lib/sdk/index.js';
import { localClient } from '../../lib/stores/client.js';
import { drivenClock, inFlight } from '../proxy.js';
import { listenOnLoopback } from '../support.js';
import { drivenElector, type Terms } from './driven-elector.js';

let broker: PushBroker;
beforeAll(async () => void (broker = await startPushBroker()));
afterAll(() => broker.stop());

const TABLES = { leases: 'conclave-leases', candidates: 'conclave-candidates', identities: 'conclave-identities' };

describe("a worker given the push broker's port as DynamoDB's", () => {
  it('is told each try as a NotDynamoDBError naming the endpoint, not a TableNotFoundError; run() goes on trying', async () => {
    const client = localClient(broker.httpEndpoint);
    const c = drivenClock(inFlight(client));
    const terms: Terms = [];
    const errors: Error[] = [];
    const a = drivenElector(TABLES, 'a', 'nightly-report', client, c, terms, errors);
    try {
      await c.drive(() => c.waited() >= 30_000);
      // before: run() rejected with a TableNotFoundError naming the tables option
      expect(a.settled()).toBeUndefined();
      expect(terms).toEqual([]);
      expect(errors.length).toBeGreaterThanOrEqual(2);
      for (const e of errors) {
        expect(e).toBeInstanceOf(NotDynamoDBError);
        expect(e).toMatchObject({ endpoint: broker.httpEndpoint, httpStatusCode: 404 });
      }
      await a.stop();
      expect(a.settled()).toBe('resolved');
    } finally {
      client.destroy();
    }
  });

  it('getLeader rejects with a NotDynamoDBError naming the call, not a TableNotFoundError', async () => {
    const client = localClient(broker.httpEndpoint);
    try {
      const e = await getLeader('nightly-report', { client, tables: TABLES }).catch((x: unknown) => x);
      expect(e).not.toBeInstanceOf(TableNotFoundError);
      expect(e).toBeInstanceOf(NotDynamoDBError);
      expect((e as Error).message).toMatch(new RegExp(`^getLeader of lease "nightly-report": the answer from ${broker.httpEndpoint.replace(/\./g, '\\.')} is not DynamoDB's \\(HTTP 404, `));
    } finally {
      client.destroy();
    }
  });
});

describe('an answer naming a DynamoDB error type, without x-amzn-RequestId (a stand-in of another kind)', () => {
  it.each(['ResourceNotFoundException', 'ProvisionedThroughputExceededException'])('%s: getLeader rejects with a NotDynamoDBError saying so', async (type) => {
    const stub = createServer((req, res) => {
      req.resume();
      req.on('end', () => void res.writeHead(400, { 'content-type': 'application/x-amz-json-1.0' }).end(JSON.stringify({ __type: `com.amazonaws.dynamodb.v20120810#${type}`, message: 'no' })));
    });
    const endpoint = `http://127.0.0.1:${await listenOnLoopback(stub)}`;
    const client = localClient(endpoint, undefined, { maxAttempts: 1 });
    try {
      const e = await getLeader('nightly-report', { client, tables: TABLES }).catch((x: unknown) => x);
      expect(e).toBeInstanceOf(NotDynamoDBError);
      expect(e).toMatchObject({ endpoint, httpStatusCode: 400, sign: `no x-amzn-RequestId header, which DynamoDB sends with every answer, though it names the error type ${type}` });
      expect((e as NotDynamoDBError).cause).toMatchObject({ name: type });
    } finally {
      client.destroy();
      await new Promise<void>((r) => stub.close(() => r()));
    }
  });
});

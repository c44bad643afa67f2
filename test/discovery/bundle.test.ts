/**
 * The leader-discovery function as Lambda runs it: the built bundle (build/assets/leaderDiscovery,
 * what the construct deploys), configured by the environment the construct sets, against DynamoDB
 * Local and the fake Cloud Map (each reached through the SDK's AWS_ENDPOINT_URL_<SERVICE>).
 */
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { afterAll, beforeAll, expect, inject, it } from 'vitest';
import { DISCOVERY_ENV, DISCOVERY_FUNCTION, DISCOVERY_TABLE } from '../../lib/discovery/wiring.js';
import { LOCAL_CREDENTIALS, LOCAL_REGION, localClient } from '../../lib/local/dynamodb-local.js';
import { createTable, deleteTable } from '../../lib/stores/table-admin.js';
import { buildFunctions, DEFAULT_OUT_DIR } from '../../scripts/build-functions.js';
import { fakeAws, type FakeAws } from './fake-aws.js';

let aws: FakeAws;
let client: DynamoDBClient;
let table: string;
const saved = { ...process.env };
beforeAll(async () => {
  await buildFunctions();
  aws = await fakeAws();
  client = localClient(inject('ddbEndpoint'));
  table = `t-discovery-b-${randomUUID().slice(0, 8)}`;
  await createTable(client, table, DISCOVERY_TABLE);
});
afterAll(async () => {
  process.env = saved;
  await deleteTable(client, table);
  client.destroy();
  await aws?.close();
});

it('the bundle registers the leader of a Leader Elected event, and deregisters it on Lease Released', async () => {
  Object.assign(process.env, {
    [DISCOVERY_ENV.table]: table,
    [DISCOVERY_ENV.cloudMapServiceId]: aws.serviceId,
    [DISCOVERY_ENV.leases]: '["orders"]',
    [DISCOVERY_ENV.leasesTable]: 't-discovery-b-leases',
    [DISCOVERY_ENV.identitiesTable]: 't-discovery-b-identities',
    AWS_REGION: LOCAL_REGION, // DynamoDB Local keeps tables per region and key
    AWS_ACCESS_KEY_ID: LOCAL_CREDENTIALS.accessKeyId,
    AWS_SECRET_ACCESS_KEY: LOCAL_CREDENTIALS.secretAccessKey,
    AWS_ENDPOINT_URL_DYNAMODB: inject('ddbEndpoint'),
    AWS_ENDPOINT_URL_SERVICEDISCOVERY: aws.endpoint,
    POWERTOOLS_LOG_LEVEL: 'SILENT',
    POWERTOOLS_METRICS_DISABLED: 'true',
  });
  const bundle = pathToFileURL(join(DEFAULT_OUT_DIR, DISCOVERY_FUNCTION.name, 'index.mjs')).href;
  const { handler } = (await import(/* @vite-ignore */ bundle)) as { handler: (e: unknown, c: unknown) => Promise<unknown> };
  const context = { getRemainingTimeInMillis: () => 30_000, functionName: 'leaderDiscovery', awsRequestId: 'r1' };
  const envelope = (detailType: string, detail: Record<string, unknown>) => ({ version: '0', id: randomUUID(), source: 'conclave', 'detail-type': detailType, account: '123456789012', region: 'us-east-1', time: '2026-01-01T12:00:00.000Z', resources: [], detail });
  const base = { lease: 'orders', time: '2026-01-01T12:00:00.000Z' };
  expect(await handler(envelope('Leader Elected', { ...base, id: 'r1:leader-elected', holder: 'w1', fencingToken: 5, leaseTransitions: 1, address: 'http://10.0.0.5:8080' }), context)).toMatchObject({ outcome: 'applied', state: 'term 5' });
  expect(aws.instances.get('orders')).toMatchObject({ holder: 'w1', fencingToken: '5', AWS_INSTANCE_IPV4: '10.0.0.5', AWS_INSTANCE_PORT: '8080' });
  expect(await handler(envelope('Lease Released', { ...base, id: 'r2:lease-released', previousHolder: 'w1', fencingToken: 5 }), context)).toMatchObject({ outcome: 'applied', state: 'end 5' });
  expect(aws.instances.has('orders')).toBe(false);
});

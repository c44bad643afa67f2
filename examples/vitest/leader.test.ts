/**
 * A test of your own worker against the local Conclave that global-setup.ts started: the
 * coordinator elects it, its fenced write lands, and it steps down when told to.
 */
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { LeaderElector } from '@conclave/sdk';
import { afterAll, expect, inject, it } from 'vitest';

const { endpoint, tablePrefix } = inject('conclave');
// DynamoDB Local takes any credentials; region 'local' keeps the SDK from looking for real ones.
const client = new DynamoDBClient({ endpoint, region: 'local', credentials: { accessKeyId: 'local', secretAccessKey: 'local' } });
afterAll(() => client.destroy());

it('leads, with a fencing token', async () => {
  const stop = new AbortController();
  let token = 0;
  const elector = new LeaderElector({
    client,
    tables: tablePrefix,
    leaseName: `report-${Date.now()}`,
    identity: 'worker-1',
    candidacy: { emulationVersion: '1.30.0', binaryVersion: '1.31.0' },
    leaseDurationMs: 4_000,
    renewDeadlineMs: 3_000,
    retryPeriodMs: 500,
    platform: 'none',
    callbacks: {
      onStartedLeading(_signal, term) {
        token = term.fencingToken;
        stop.abort(); // done: step down and release the lease
      },
    },
  });
  await elector.run(stop.signal);
  expect(token).toBeGreaterThan(0);
});

/**
 * Every metric a function publishes names its deployment: the dimension `deployment`, the leases
 * table's name (unique in an account and Region), beside `service` and `function`. Without it two
 * deployments in one account and Region published one metric, and each one's alarms judged the
 * other's data points (a review, 2026-12-06): the construct's alarms and dashboard select it
 * (test/infra/two-conclaves.test.ts).
 */
import { MetricUnit } from '@aws-lambda-powertools/metrics';
import { afterAll, beforeAll, describe, expect, inject, it, vi } from 'vitest';
import { handler as coordinator } from '../../functions/coordinator.js';
import { observability } from '../../lib/functions/observability.js';
import { METRIC } from '../../lib/functions/metrics.js';
import { ENV } from '../../lib/function-env.js';
import { LOCAL_CREDENTIALS, LOCAL_REGION } from '../../lib/local/dynamodb-local.js';
import { lambdaContext } from '../../lib/local/runtime.js';
import { testTables, type TestTables } from '../support.js';

let t: TestTables;
beforeAll(async () => {
  t = await testTables('metric-dims');
});
afterAll(async () => {
  vi.unstubAllEnvs();
  await t.drop();
});

/** The embedded-metric-format documents `run` wrote to stdout, each with the dimension sets it declares. */
async function published(run: () => Promise<unknown>): Promise<{ dimensions: string[][]; doc: Record<string, unknown> }[]> {
  const lines: string[] = [];
  const out = process.stdout.write.bind(process.stdout);
  process.stdout.write = ((chunk: string | Uint8Array) => (lines.push(String(chunk)), true)) as typeof process.stdout.write;
  try {
    await run();
  } finally {
    process.stdout.write = out;
  }
  return lines
    .flatMap((l) => l.split('\n'))
    .filter((l) => l.includes('"CloudWatchMetrics"'))
    .map((l) => JSON.parse(l) as Record<string, unknown>)
    .map((doc) => ({ doc, dimensions: (doc['_aws'] as { CloudWatchMetrics: { Dimensions: string[][] }[] }).CloudWatchMetrics.flatMap((m) => m.Dimensions) }));
}

describe("a function's metrics name its deployment", () => {
  it("the coordinator as Lambda runs it (its deps from the environment the construct sets): its gauges carry deployment = the leases table's name", async () => {
    const env: Record<string, string> = {
      [ENV.leasesTable]: t.names.leases,
      [ENV.candidatesTable]: t.names.candidates,
      [ENV.identitiesTable]: t.names.identities,
      [ENV.eventBus]: 'arn:aws:events:local:000000000000:event-bus/conclave',
      [ENV.timerQueueUrl]: 'http://127.0.0.1:9/queue/timer',
      AWS_ENDPOINT_URL_DYNAMODB: inject('ddbEndpoint'),
      AWS_REGION: LOCAL_REGION,
      AWS_ACCESS_KEY_ID: LOCAL_CREDENTIALS.accessKeyId,
      AWS_SECRET_ACCESS_KEY: LOCAL_CREDENTIALS.secretAccessKey,
    };
    for (const [k, v] of Object.entries(env)) vi.stubEnv(k, v);
    const docs = await published(() => coordinator({ source: 'aws.events', 'detail-type': 'Scheduled Event', time: new Date(0).toISOString() } as never, lambdaContext('coordinator')));
    const gauges = docs.filter((d) => METRIC.leaderless in d.doc);
    expect(gauges).toHaveLength(1);
    expect(gauges[0]!.dimensions).toEqual([expect.arrayContaining(['service', 'function', 'deployment'])]);
    expect(gauges[0]!.doc).toMatchObject({ service: 'conclave', function: 'coordinator', deployment: t.names.leases, [METRIC.leaderless]: 0 });
  });

  it('a per-lease metric (a single metric with the lease as a dimension, as the functions publish them) carries it too', async () => {
    const { metrics } = observability('leaseStream', 'SILENT', 'orders-leases');
    const docs = await published(async () => {
      const single = metrics.singleMetric();
      single.addDimension('lease', 'nightly-report');
      single.addMetric(METRIC.leaderChanges, MetricUnit.Count, 1);
    });
    expect(docs).toHaveLength(1);
    expect(docs[0]!.dimensions).toEqual([expect.arrayContaining(['service', 'function', 'deployment', 'lease'])]);
    expect(docs[0]!.doc).toMatchObject({ function: 'leaseStream', deployment: 'orders-leases', lease: 'nightly-report' });
  });
});

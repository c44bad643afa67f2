/**
 * A worker on the baseline lock (bench/baseline/lock.ts), configured and speaking exactly like
 * lib/local/demo/worker.ts so lib/local/worker-process.ts can run it: the same environment variables
 * (CONCLAVE_ENDPOINT, CONCLAVE_TABLE_PREFIX, LEASE, IDENTITY, LEASE_DURATION_MS, RENEW_DEADLINE_MS,
 * RETRY_PERIOD_MS, COUNT_REQUESTS_EVERY_MS) and the same JSON lines on stdout. The lock lives in
 * `<prefix>-baseline-locks`; `fencingToken` on `started` is the record's leaseTransitions.
 */
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { reportRequests } from '../requests.js';
import { BaselineElector } from './lock.js';
import { baselineTableName } from './table.js';

const env = (name: string, fallback?: string): string => {
  const v = process.env[name] ?? fallback;
  if (v === undefined) {
    console.error(`bench/baseline/worker: set ${name}`);
    process.exit(2);
  }
  return v;
};
const num = (name: string, fallback: number) => Number(process.env[name] ?? fallback);

const endpoint = env('CONCLAVE_ENDPOINT');
const client = new DynamoDBClient({ endpoint, region: 'local', credentials: { accessKeyId: 'local', secretAccessKey: 'local' } });
const identity = env('IDENTITY');
const say = (event: string, extra: Record<string, unknown> = {}) => process.stdout.write(`${JSON.stringify({ event, identity, at: Date.now(), ...extra })}\n`);

const elector = new BaselineElector(
  {
    table: baselineTableName(env('CONCLAVE_TABLE_PREFIX')),
    name: env('LEASE'),
    identity,
    leaseDurationMs: num('LEASE_DURATION_MS', 15_000),
    renewDeadlineMs: num('RENEW_DEADLINE_MS', 10_000),
    retryPeriodMs: num('RETRY_PERIOD_MS', 2_000),
  },
  {
    client,
    callbacks: {
      onStartedLeading: (_signal, { leaseTransitions }) => say('started', { fencingToken: leaseTransitions }),
      onStoppedLeading: ({ reason, leaseTransitions }) => say('stopped', { reason, fencingToken: leaseTransitions }),
      onNewLeader: (leader) => say('newLeader', { leader }),
    },
    onError: (e) => say('error', { message: e.message }),
  },
);

const counting = process.env['COUNT_REQUESTS_EVERY_MS']
  ? reportRequests(client, () => (elector.isLeader() ? 'leader' : 'follower'), Number(process.env['COUNT_REQUESTS_EVERY_MS']), say)
  : undefined;

const controller = new AbortController();
for (const sig of ['SIGTERM', 'SIGINT'] as const) process.on(sig, () => controller.abort());
say('ready');
await elector.run(controller.signal);
counting?.flush();
say('exited');
client.destroy();

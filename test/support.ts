import { randomUUID } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { createServer, type RequestListener, type Server } from 'node:http';
import type { AddressInfo, Server as NetServer } from 'node:net';
import { DescribeTableCommand, type DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DescribeStreamCommand, DynamoDBStreamsClient, GetRecordsCommand, GetShardIteratorCommand } from '@aws-sdk/client-dynamodb-streams';
import type { Metrics } from '@aws-lambda-powertools/metrics';
import type { DynamoDBRecord } from 'aws-lambda';
import { expect, inject } from 'vitest';
import { systemClock, type Clock } from '../lib/clock.js';
import { LOCAL_CREDENTIALS, LOCAL_REGION, localClient } from '../lib/local/dynamodb-local.js';
import { toLambdaRecord } from '../lib/local/stream-poller.js';
import type { TableNames } from '../lib/schemas/config.js';
import { createTables, deleteTables } from '../lib/local/tables.js';
import { defaultTableNames } from '../lib/tables.js';
import type { Tables } from '../sim/harness.js';

/** Tables on DynamoDB Local, as sim/harness.ts' modelTables makes them on the model. */
export type TestTables = Tables;

/**
 * Fresh, uniquely named tables on the run's DynamoDB Local, without TTL: many tests run the product
 * on a manual clock at a fixed date, and the rows it stamps from that clock (a candidate's or an
 * identity's `expiresAt`) would be deleted under the test by DynamoDB Local's sweeper, which goes
 * by the machine's clock, once that date has passed. TTL's own behaviour is tested on the model
 * (test/sim/contract.test.ts) and the tables' settings on the construct (test/infra/tables.test.ts).
 */
export async function testTables(label: string): Promise<TestTables> {
  const client = localClient(inject('ddbEndpoint'));
  const names = defaultTableNames(`t-${label}-${randomUUID().slice(0, 8)}`);
  await createTables(client, names, { ttl: false });
  return {
    client,
    names,
    async drop() {
      await deleteTables(client, names);
      client.destroy();
    },
  };
}

export { manualClock } from '../lib/clock.js';

/**
 * A clock whose sleeps wait until `release()` lets them go (all, or those `which` picks by their
 * length), every sleep asked for recorded in `asked`: a test lets a loop's waits go at each look at
 * the outcome, so nothing spins and nothing waits on the machine's clock.
 */
export function heldClock() {
  const asked: number[] = [];
  let held: { ms: number; resolve: () => void }[] = [];
  let free = false;
  const clock: Clock = {
    ...systemClock,
    sleep: (ms, signal) => {
      asked.push(ms);
      if (free || signal?.aborted) return Promise.resolve();
      return new Promise<void>((resolve) => {
        held.push({ ms, resolve });
        signal?.addEventListener('abort', () => resolve(), { once: true });
      });
    },
  };
  const release = (which: (ms: number) => boolean = () => true) => {
    const go = held.filter((h) => which(h.ms));
    held = held.filter((h) => !which(h.ms));
    for (const h of go) h.resolve();
  };
  /** From now on no sleep is held (stopping: every loop runs to its check of `running`). */
  const unhold = () => {
    free = true;
    release();
  };
  /** Whether a sleep of `ms` is held now. */
  const holding = (ms: number) => held.some((h) => h.ms === ms);
  return { clock, asked, release, unhold, holding };
}

/** The names of the per-lease metrics `metrics` publishes from now on (its single-metric instances), in order. */
export function singleMetricNames(metrics: Metrics): string[] {
  const names: string[] = [];
  const single = metrics.singleMetric.bind(metrics);
  metrics.singleMetric = () => {
    const m = single();
    const add = m.addMetric.bind(m);
    m.addMetric = (name, unit, value) => (names.push(name), add(name, unit, value));
    return m;
  };
  return names;
}

/** Every record on a table's stream so far, in order, as Lambda would deliver them. */
export async function streamRecords(client: DynamoDBClient, table: string): Promise<DynamoDBRecord[]> {
  const streams = new DynamoDBStreamsClient({ endpoint: inject('ddbEndpoint'), region: LOCAL_REGION, credentials: LOCAL_CREDENTIALS });
  try {
    const arn = (await client.send(new DescribeTableCommand({ TableName: table }))).Table!.LatestStreamArn!;
    const out: DynamoDBRecord[] = [];
    for (const s of (await streams.send(new DescribeStreamCommand({ StreamArn: arn }))).StreamDescription!.Shards!) {
      let iterator = (await streams.send(new GetShardIteratorCommand({ StreamArn: arn, ShardId: s.ShardId, ShardIteratorType: 'TRIM_HORIZON' }))).ShardIterator;
      for (let i = 0; iterator && i < 5; i++) {
        const r = await streams.send(new GetRecordsCommand({ ShardIterator: iterator }));
        out.push(...(r.Records ?? []).map((x) => toLambdaRecord(x, arn)));
        iterator = r.Records?.length ? r.NextShardIterator : undefined;
      }
    }
    return out;
  } finally {
    streams.destroy();
  }
}

/** Starts `server` (HTTP or plain TCP) on a free port of 127.0.0.1; its port, once it listens. */
export async function listenOnLoopback(server: NetServer): Promise<number> {
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  return (server.address() as AddressInfo).port;
}

/**
 * A test's HTTP stand-ins (an application, a health check, a metadata endpoint), each on a free
 * loopback port: `listen(handler)` starts one and gives its port; `close()` closes every one
 * started so far, its open connections too.
 */
export function loopbackServers() {
  const servers: Server[] = [];
  return {
    listen(handler: RequestListener): Promise<number> {
      const s = createServer(handler);
      servers.push(s);
      return listenOnLoopback(s);
    },
    async close(): Promise<void> {
      await Promise.all(
        servers.splice(0).map(
          (s) =>
            new Promise<void>((r) => {
              s.close(() => r());
              s.closeAllConnections();
            }),
        ),
      );
    },
  };
}

/**
 * The machine an `ensure…` of a tool asked for, not taken (HAProxy, etcd), sees: its probe finds
 * `found` until an install, `installed` after one; `root`, whether it runs as root; `installs:
 * false`, an install that fails (exit 100). `calls` records each install and each line logged.
 */
export function installWorld<T>(o: { found: T; installed: T; root: boolean; installs?: boolean }) {
  let found = o.found;
  const calls: string[] = [];
  const opts = {
    probe: () => found,
    isRoot: () => o.root,
    runInstall: () => {
      calls.push('install');
      if (o.installs !== false) found = o.installed;
      return o.installs === false ? 100 : 0;
    },
    log: (l: string) => calls.push(l),
  };
  return { calls, opts };
}

/** The message of the error `f` throws, which must be a `type`. */
export function messageOf(f: () => unknown, type: abstract new (...args: never[]) => Error): string {
  try {
    f();
  } catch (e) {
    expect(e).toBeInstanceOf(type);
    return (e as Error).message;
  }
  throw new Error(`expected a ${type.name}`);
}

/** Whether process `pid` has exited (gone, or a zombie nobody reaped yet). */
export function exited(pid: number): boolean {
  if (!existsSync(`/proc/${pid}`)) return true;
  try {
    return readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.startsWith('Z') ?? true;
  } catch {
    return true;
  }
}

/** The embedded-metric-format documents `run` wrote to stdout (a function's metrics), and what it returned. */
export async function metricDocs<T>(run: () => Promise<T>): Promise<{ docs: Record<string, unknown>[]; out: T }> {
  const lines: string[] = [];
  const write = process.stdout.write.bind(process.stdout);
  process.stdout.write = ((chunk: string | Uint8Array) => (lines.push(String(chunk)), true)) as typeof process.stdout.write;
  let out: T;
  try {
    out = await run();
  } finally {
    process.stdout.write = write;
  }
  const docs = lines
    .flatMap((l) => l.split('\n'))
    .filter((l) => l.includes('"CloudWatchMetrics"'))
    .map((l) => JSON.parse(l) as Record<string, unknown>);
  return { docs, out };
}

/**
 * `npx tsx bench/outage-recovery.ts [--runs 5] [--down 30] [--spread 10] [--workers 3] [--session] [--push] [--tick 10] [--default-lease] [--hang]`:
 * how long workers are without a leader once DynamoDB comes back after an outage, and what they
 * send while it is gone. A real DynamoDB Local and local runtime (conclave-local's, tick 10 s) behind
 * one loopback proxy (outageProxy, below): the runtime's functions and each worker (a
 * LeaderElector with its candidacy, and with --session a Session, on a DynamoDB client of its own
 * with the AWS SDK's defaults, as lib/local/demo/worker.ts builds it) reach DynamoDB only through
 * it. A run: a leader elected and settled, the proxy down (connections reset, new ones refused:
 * DynamoDB gone; with --hang it takes every request and never answers: frozen, black-holed) for
 * `--down` seconds (each run `--spread` / runs longer than the last, so DynamoDB comes back at
 * another point of the workers' backoff), then up again. Prints per run the time from the reopening
 * to the first onStartedLeading, and the requests (attempts, the SDK's own retries included) the
 * workers sent per second while it was down. Timing: local mode's short leases (DEMO_TIMING, lease
 * 4 s, retry 0.5 s), or client-go's defaults (15/10/2 s) with --default-lease. BENCH_TRACE=1 prints
 * each attempt after DynamoDB is back. Asserts nothing.
 */
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { connect, createServer, type Socket } from 'node:net';
import { parseArgs } from 'node:util';
import { startDynamoDBLocal } from '../lib/local/dynamodb-local.js';
import { DEMO_ELECTION, DEMO_TIMING } from '../lib/local/demo/stories.js';
import { startLocalRuntime } from '../lib/local/runtime.js';
import { LeaderElector, Session } from '../lib/sdk/index.js';
import { PushChannel } from '../lib/sdk/push-channel.js';

process.env['POWERTOOLS_METRICS_DISABLED'] ??= 'true';

const { values: v } = parseArgs({
  options: {
    runs: { type: 'string', default: '5' },
    down: { type: 'string', default: '30' },
    spread: { type: 'string', default: '10' },
    workers: { type: 'string', default: '3' },
    tick: { type: 'string', default: '10' },
    session: { type: 'boolean', default: false },
    push: { type: 'boolean', default: false },
    'default-lease': { type: 'boolean', default: false },
    hang: { type: 'boolean', default: false },
  },
});
const RUNS = Number(v.runs);
const DOWN_MS = Number(v.down) * 1000;
/** Run i's outage lasts DOWN_MS + SPREAD_MS × (i − 1) / runs: DynamoDB comes back at another point of the workers' backoff each run. */
const SPREAD_MS = Number(v.spread) * 1000;
const WORKERS = Number(v.workers);
/** Local mode's short leases, or client-go's defaults (15/10/2 s) with --default-lease. */
const TIMING = v['default-lease'] ? { leaseDurationMs: 15_000, renewDeadlineMs: 10_000, retryPeriodMs: 2_000 } : DEMO_TIMING;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const waitUntil = async (what: string, ok: () => boolean, guardMs = 120_000) => {
  const from = performance.now();
  while (!ok()) {
    if (performance.now() - from > guardMs) throw new Error(`bench: ${what} not within ${guardMs / 1000} s`);
    await sleep(5);
  }
};
const quantile = (xs: number[], q: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(q * s.length))]!;
};

/** Counts each attempt the client sends (the deserialize step runs once per try, inside the SDK's retries). */
function counted(client: DynamoDBClient, who: string): () => number {
  let n = 0;
  client.middlewareStack.add(
    ((next: (a: unknown) => Promise<unknown>, context: { commandName?: string }) => async (a: unknown) => {
      n++;
      const sent = performance.now();
      try {
        const out = await next(a);
        trace(`${who} ${context.commandName} ok (${(performance.now() - sent).toFixed(0)} ms)`);
        return out;
      } catch (e) {
        trace(`${who} ${context.commandName} failed ${(e as Error).name} (${(performance.now() - sent).toFixed(0)} ms)`);
        throw e;
      }
    }) as never,
    { step: 'deserialize', name: 'benchCount' },
  );
  return () => n;
}
/** BENCH_TRACE=1: each attempt after DynamoDB is back, timed from its return, on stderr. */
let upAt: number | undefined;
const trace = (line: string) => {
  if (process.env['BENCH_TRACE'] && upAt !== undefined) console.error(`  +${((performance.now() - upAt) / 1000).toFixed(2)} s ${line}`);
};
// an unhandled rejection is printed, not fatal: the runs go on and it is seen
process.on('unhandledRejection', (e) => console.error('bench: unhandled rejection:', e instanceof Error ? e.stack : e));

const ddb = await startDynamoDBLocal({ startTimeoutMs: 120_000 });
/**
 * A loopback proxy in front of DynamoDB Local, its own (bench/ imports no test harness): `close()`
 * resets every connection and refuses new ones (DynamoDB stopped), or with --hang takes every
 * connection and request and never answers (frozen, black-holed); `open()` passes on again.
 */
async function outageProxy(target: string, hang: boolean) {
  const to = new URL(target);
  let down = false;
  const sockets = new Set<Socket>();
  const server = createServer((s) => {
    s.on('error', () => undefined);
    if (down && !hang) return void s.resetAndDestroy();
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
    const upstream = connect(Number(to.port), to.hostname);
    upstream.on('error', () => undefined);
    s.on('data', (d) => void (down ? undefined : upstream.write(d)));
    upstream.on('data', (d) => void (down ? undefined : s.write(d)));
    s.on('close', () => upstream.destroy());
    upstream.on('close', () => s.destroy());
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  return {
    endpoint: `http://127.0.0.1:${(server.address() as { port: number }).port}`,
    close: async () => {
      down = true;
      if (!hang) for (const s of sockets) s.resetAndDestroy();
    },
    open: async () => void (down = false),
    end: async () => {
      for (const s of sockets) s.destroy();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}
const proxy = await outageProxy(ddb.endpoint, v.hang);
const results: { recoveryMs: number; perSecondDown: number; first: string }[] = [];
try {
  for (let run = 1; run <= RUNS; run++) {
    const prefix = `outage-${process.pid}-${run}`;
    const rt = await startLocalRuntime({ endpoint: proxy.endpoint, prefix, tickEveryMs: Number(v.tick) * 1000, config: DEMO_ELECTION, logLevel: 'SILENT', push: v.push, dir: `/tmp/outage-bench-${process.pid}`, onLost: () => undefined });
    const stop = new AbortController();
    let startedAt: { at: number; who: string } | undefined;
    const counts: (() => number)[] = [];
    const runs: Promise<unknown>[] = [];
    const electors: LeaderElector[] = [];
    for (let i = 0; i < WORKERS; i++) {
      const identity = `w${i + 1}`;
      const client = new DynamoDBClient({ endpoint: proxy.endpoint, region: 'local', credentials: { accessKeyId: 'local', secretAccessKey: 'local' } });
      counts.push(counted(client, identity));
      const push = v.push ? new PushChannel({ endpoint: rt.pushEndpoint!, client, tables: prefix, onError: () => undefined }) : undefined;
      if (push) runs.push(push.run(stop.signal));
      const session = v.session ? new Session({ client, tables: prefix, ...(v['default-lease'] ? { maxLeaseDurationMs: 15_000 } : { renewIntervalMs: 1_000, retryPeriodMs: 500, renewDeadlineMs: 2_000, maxLeaseDurationMs: 4_000 }), onError: () => undefined }) : undefined;
      const electorStop = new AbortController();
      const e = new LeaderElector({
        client,
        tables: prefix,
        leaseName: 'job',
        identity,
        candidacy: { emulationVersion: '1.30.0', binaryVersion: '1.30.0' },
        ...TIMING,
        platform: 'none',
        ...(push ? { push } : {}),
        ...(session ? { session } : {}),
        callbacks: {
          onStartedLeading: () => {
            trace(`${identity} started leading`);
            startedAt ??= { at: performance.now(), who: identity };
          },
        },
        onError: () => undefined,
      });
      electors.push(e);
      if (session) runs.push(session.run(stop.signal));
      runs.push(e.run(electorStop.signal));
      stop.signal.addEventListener('abort', () => electorStop.abort());
    }
    await waitUntil('a first leader', () => startedAt !== undefined);
    await sleep(3_000); // settled: a successor named, renewals running
    await proxy.close();
    const downAt = performance.now();
    const sentBefore = counts.map((c) => c());
    await waitUntil('every leader stopped', () => electors.every((e) => !e.isLeader()));
    await sleep(Math.max(0, DOWN_MS + (SPREAD_MS * (run - 1)) / RUNS - (performance.now() - downAt)));
    const sentDown = counts.reduce((s, c, i) => s + c() - sentBefore[i]!, 0);
    const downS = (performance.now() - downAt) / 1000;
    startedAt = undefined;
    await proxy.open();
    upAt = performance.now();
    await waitUntil('a leader after the outage', () => startedAt !== undefined);
    const r = { recoveryMs: startedAt!.at - upAt!, perSecondDown: sentDown / downS, first: startedAt!.who };
    results.push(r);
    console.log(`run ${run}: down ${downS.toFixed(1)} s, ${sentDown} requests while down (${r.perSecondDown.toFixed(2)}/s for ${WORKERS} workers), back up → leader ${r.first} in ${(r.recoveryMs / 1000).toFixed(2)} s`);
    upAt = undefined;
    stop.abort();
    await Promise.all(runs);
    await rt.stop();
  }
  const rec = results.map((r) => r.recoveryMs / 1000);
  const rps = results.map((r) => r.perSecondDown);
  console.log(
    `\n${RUNS} runs, ${WORKERS} workers${v.session ? ' with sessions' : ''}${v.push ? ', push' : ''}${v.hang ? ', DynamoDB hung (no answers)' : ', DynamoDB stopped (port closed)'}, tick ${v.tick} s, lease ${TIMING.leaseDurationMs / 1000} s / retry ${TIMING.retryPeriodMs / 1000} s, down ${DOWN_MS / 1000}-${(DOWN_MS + SPREAD_MS * (1 - 1 / RUNS)) / 1000} s:` +
      `\n  back up → leader: median ${quantile(rec, 0.5).toFixed(2)} s, min ${Math.min(...rec).toFixed(2)} s, max ${Math.max(...rec).toFixed(2)} s` +
      `\n  requests while down, all workers: median ${quantile(rps, 0.5).toFixed(2)}/s, max ${Math.max(...rps).toFixed(2)}/s`,
  );
} finally {
  await proxy.end();
  await ddb.stop();
}

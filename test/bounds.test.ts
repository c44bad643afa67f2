/**
 * Every value a row carries is bounded at the write edge, and a reader never refuses what a writer
 * was allowed to write. The largest values each write edge accepts — found by asking the edge's
 * own schema, not copied from it — go through the real writers (LeaderElector, LeaseCandidate,
 * IdentityLeaseHeartbeat, the CLI's set-priority and preempt) and every reader: the coordinator
 * (one lease and the tick), the stream functions with their events, and the CLI's views.
 */
import type { Context } from 'aws-lambda';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { PriorityArg } from '../lib/cli/args.js';
import { coordinatorDeps, reconcileAll } from '../lib/coordinator/reconcile.js';
import { entrySize, MAX_CALL_BYTES, toEntry } from '../lib/events/publisher.js';
import { parseEvent, type ConclaveEvent } from '../lib/events/schemas.js';
import { noDeadLetter } from '../lib/functions/dead-letter.js';
import type { FunctionDeps } from '../lib/functions/core.js';
import { observability } from '../lib/functions/env.js';
import { lambdaContext } from '../lib/local/runtime.js';
import { Name } from '../lib/schemas/common.js';
import { Platform } from '../lib/schemas/platform.js';
import { OLDEST_EMULATION_VERSION, StrategyName } from '../lib/schemas/strategy.js';
import { StrictVersion } from '../lib/schemas/version.js';
import { IdentityLeaseHeartbeat, IdentityLeaseHeartbeatOptionsSchema, LeaderElector, LeaderElectorOptionsSchema, LeaseCandidateOptionsSchema } from '../lib/sdk/index.js';
import { LeaseStore } from '../lib/stores/lease-store.js';
import { wiring, type FunctionName } from '../lib/wiring.js';
import { runMain } from './cli/harness.js';
import { coordinatorLoop, waitFor } from './sdk/harness.js';
import { streamRecords, testTables, type TestTables } from './support.js';

/** The largest n in [lo, hi] that `accepts`, for a monotone edge (it accepts lo). */
function largest(accepts: (n: number) => boolean, lo: number, hi: number): number {
  expect(accepts(lo), `the edge refuses even ${lo}`).toBe(true);
  while (lo < hi) {
    const mid = lo + Math.ceil((hi - lo) / 2); // exact below 2^53, unlike (lo + hi + 1) / 2
    if (accepts(mid)) lo = mid;
    else hi = mid - 1;
  }
  return lo;
}
const ok = (schema: { safeParse(v: unknown): { success: boolean } }) => (v: unknown) => schema.safeParse(v).success;
const pad = (prefix: string, length: number, fill = 'x') => prefix + fill.repeat(Math.max(0, length - prefix.length));

let t: TestTables;
beforeAll(async () => {
  t = await testTables('bounds');
  process.env['POWERTOOLS_METRICS_DISABLED'] = 'true';
});
afterAll(() => t.drop());

describe('the largest values the writers accept', () => {
  it('round-trip through every writer and every reader', async () => {
    const candidacy = LeaseCandidateOptionsSchema.shape;
    // names, versions, strategies, labels, a platform id: each as long (or as many) as its edge allows
    const nameLength = largest((n) => ok(Name)(pad('n', n)), 1, 10_000);
    const lease = pad('lease-', nameLength);
    const [a, b] = [pad('a-', nameLength), pad('b-', nameLength)];
    const suffix = largest((n) => ok(StrictVersion)(`2.0.0-${'a'.repeat(n)}`), 1, 10_000);
    const versions = (who: string) => ({ binaryVersion: `2.0.0-${who.repeat(suffix)}`, emulationVersion: `1.0.0-${'a'.repeat(suffix)}` });
    const strategyLength = largest((n) => ok(StrategyName)(pad('S', n)), 1, 10_000);
    const strategyCount = largest((n) => ok(candidacy.preferredStrategies)([OLDEST_EMULATION_VERSION, ...Array.from({ length: n - 1 }, (_, i) => pad(`S${i}-`, strategyLength))]), 1, 1_000);
    const preferredStrategies = [OLDEST_EMULATION_VERSION, ...Array.from({ length: strategyCount - 1 }, (_, i) => pad(`S${i}-`, strategyLength))];
    const labelsOf = (n: number, k: number, v: number) => Object.fromEntries(Array.from({ length: n }, (_, i) => [pad(`k${i}-`, k), 'v'.repeat(v)]));
    const keyLength = largest((k) => ok(candidacy.labels)(labelsOf(1, k, 1)), 4, 10_000);
    const valueLength = largest((v) => ok(candidacy.labels)(labelsOf(1, keyLength, v)), 0, 10_000);
    const labelCount = largest((n) => ok(candidacy.labels)(labelsOf(n, keyLength, valueLength)), 1, 2_000);
    const labels = labelsOf(labelCount, keyLength, valueLength);
    const taskPrefix = 'arn:aws:ecs:us-east-1:123456789012:task/c/';
    const clusterPrefix = 'arn:aws:ecs:us-east-1:123456789012:cluster/';
    const taskLength = largest((n) => ok(Platform)({ kind: 'ecs', id: pad(taskPrefix, n), cluster: 'c' }), taskPrefix.length + 1, 30_000);
    const clusterLength = largest((n) => ok(Platform)({ kind: 'ecs', id: pad(taskPrefix, taskLength), cluster: pad(clusterPrefix, n) }), clusterPrefix.length + 1, 30_000);
    const platform = (who: string) => ({ kind: 'ecs' as const, id: pad(`${taskPrefix}${who}`, taskLength), cluster: pad(clusterPrefix, clusterLength) });
    const leaseDurationMs = largest(ok(LeaderElectorOptionsSchema.shape.leaseDurationMs), 1_000, Number.MAX_SAFE_INTEGER);
    const pin = largest((n) => ok(PriorityArg)(String(n)), 1, Number.MAX_SAFE_INTEGER);

    const deps = coordinatorDeps(t.client, t.names);
    const loop = coordinatorLoop(deps, lease, 50);
    const leading = new Map<string, boolean>();
    const start = (identity: string, who: string) => {
      const elector = new LeaderElector({
        leaseName: lease, identity, tables: t.names, client: t.client,
        leaseDurationMs, renewDeadlineMs: 10_000, retryPeriodMs: 100, platform: platform(who),
        candidacy: { ...versions(who), preferredStrategies, labels },
        callbacks: { onStartedLeading: () => void leading.set(identity, true), onStoppedLeading: () => void leading.set(identity, false) },
        onError: () => undefined,
      });
      const stop = new AbortController();
      return { elector, stop, run: elector.run(stop.signal) };
    };
    const workers = [start(a, 'a'), start(b, 'b')];
    const heartbeatShape = IdentityLeaseHeartbeatOptionsSchema.shape;
    const component = pad('c', largest((n) => ok(heartbeatShape.component)(pad('c', n)), 1, 10_000));
    const hostname = pad('h', largest((n) => ok(heartbeatShape.hostname)(pad('h', n)), 1, 10_000));
    const heartbeatLabels = labelsOf(largest((n) => ok(heartbeatShape.labels)(labelsOf(n, keyLength, valueLength)), 1, 2_000), keyLength, valueLength);
    const heartbeat = new IdentityLeaseHeartbeat({
      client: t.client, tables: t.names, component, hostname, labels: heartbeatLabels,
      leaseDurationSeconds: largest(ok(heartbeatShape.leaseDurationSeconds), 1, Number.MAX_SAFE_INTEGER),
    });
    const beating = new AbortController();
    const beat = heartbeat.run(beating.signal);
    const target = ['--table-prefix', t.names.leases.replace(/-leases$/, ''), '--endpoint', inject('ddbEndpoint')];
    const conclave = (...argv: string[]) => runMain([...target, ...argv]);

    try {
      await heartbeat.ready;
      await waitFor('a leads (the older binary)', () => leading.get(a));

      // the operator pins b as high as set-priority allows: b takes over
      const set = await conclave('set-priority', lease, b, String(pin), '--for', '1h', '--yes');
      expect(set.code, set.err).toBe(0);
      await waitFor('b leads', () => leading.get(b));
      // and preempt pins a one above it: a takes the lease back
      const preempt = await conclave('preempt', lease, '--to', a, '--for', '1h', '--yes');
      expect(preempt.code, preempt.err).toBe(0);
      await waitFor('a leads again', () => leading.get(a));
      // a handed term is led from its read and confirmed after (its first term is a third of the
      // lease): the row carries the whole duration once a has confirmed it
      const confirmed = await waitFor('a’s term confirmed on the row', async () => {
        const row = (await new LeaseStore(t.client, t.names.leases).read(lease)).item;
        return row?.holderIdentity === a && row.renewTime! > row.acquireTime! ? row : undefined;
      });
      expect(confirmed.leaseDurationSeconds).toBe(Math.ceil(leaseDurationMs / 1000));
    } finally {
      for (const w of workers) w.stop.abort();
      await Promise.all(workers.map((w) => w.run));
      await loop.stop();
    }
    expect(loop.errors).toEqual([]);

    // readers: the CLI's views …
    for (const argv of [['describe', 'lease', lease], ['get', 'leases'], ['get', 'candidates', lease], ['describe', 'lease', lease, '-o', 'json']]) {
      const r = await conclave(...argv);
      expect(r.code, `${argv.join(' ')}: ${r.err}`).toBe(0);
      expect(r.err, argv.join(' ')).not.toMatch(/skipped a row|does not match/);
    }
    // … the tick …
    const tick = await reconcileAll(deps);
    expect(tick.errors).toEqual([]);
    expect(tick.broken).toEqual([]);
    expect(tick.invalid).toEqual([]);
    beating.abort();
    await beat;

    // … and the stream functions, with the events they publish
    const published: ConclaveEvent[] = [];
    const invoke = async (name: FunctionName, table: 'leases' | 'candidates') => {
      const fnDeps: FunctionDeps = { coordinator: deps, timer: { schedule: async () => undefined }, publish: async (e) => void published.push(...e), deadLetter: noDeadLetter, ...observability(name, 'SILENT') };
      const mod = (await import(/* @vite-ignore */ `../${wiring[name].entry.replace(/\.ts$/, '.js')}`)) as { makeHandler(d: FunctionDeps): (e: unknown, c: Context) => Promise<{ batchItemFailures: unknown[] }> };
      const records = await streamRecords(t.client, t.names[table]);
      expect(records.length).toBeGreaterThan(0);
      const r = await mod.makeHandler(fnDeps)({ Records: records }, lambdaContext(name));
      expect(r.batchItemFailures, name).toEqual([]);
    };
    await invoke('leaseStream', 'leases');
    await invoke('candidateStream', 'candidates');
    expect(published.map((e) => e.detailType)).toEqual(expect.arrayContaining(['Leader Elected', 'Leader Changed', 'Candidate Joined']));
    for (const e of published) {
      expect(() => parseEvent(e.detailType, JSON.parse(JSON.stringify(e.detail)))).not.toThrow();
      expect(entrySize(toEntry('bus', e))).toBeLessThanOrEqual(MAX_CALL_BYTES);
    }
  });
});

/**
 * Coordinator scale: reconcileAll() (the tick's work) over N leases × 3 candidates, seeded with
 * BatchWriteItem. Every lease held by its best candidate and healthy: a first, settling tick
 * writes whatever the coordinator keeps on a healthy lease and the seeded rows lack (a designated
 * successor, for one), then the tick measured as "nothing to change". Then every lease vacant
 * (released) with candidates that renewed a minute ago, so each needs an election: pings and the
 * election written. Wall time, requests per lease by kind, capacity units.
 */
import { performance } from 'node:perf_hooks';
import { coordinatorDeps, reconcileAll } from '../../lib/coordinator/reconcile.js';
import { localClient } from '../../lib/local/dynamodb-local.js';
import { createTables, deleteTables } from '../../lib/local/tables.js';
import { defaultTableNames } from '../../lib/tables.js';
import type { BenchContext, BenchOptions } from '../fleet.js';
import { dollarsPerMonth } from '../prices.js';
import { Collector, type ScenarioResult } from '../report.js';
import { diffTallies, READ_COMMANDS, RequestCounter } from '../requests.js';
import { seedLeases } from '../seed.js';

export async function coordinatorScale(ctx: BenchContext, opts: BenchOptions): Promise<ScenarioResult> {
  const c = new Collector('coordinator-scale');
  const n = opts.leases ?? (opts.quick ? 500 : 10_000);
  const candidatesPerLease = 3;
  const tables = defaultTableNames(ctx.unique('bench-scale'));
  ctx.log(`\n▸ coordinator scale: reconcileAll() over ${n.toLocaleString('en-US')} leases × ${candidatesPerLease} candidates`);
  await createTables(ctx.observer, tables);
  const client = localClient(ctx.endpoint);
  const counter = new RequestCounter().attach(client, () => 'coordinator');
  const deps = coordinatorDeps(client, tables);

  async function tick(label: string, what: string, target?: (reads: number, writes: number) => { text: string; met: boolean }, brief = false) {
    const before = counter.snapshot();
    const start = performance.now();
    const r = await reconcileAll(deps);
    const wallMs = performance.now() - start;
    const t = diffTallies(counter.snapshot(), before)['coordinator']!;
    const reads = Object.entries(t.commands).reduce((a, [cmd, k]) => a + (READ_COMMANDS.has(cmd) ? k : 0), 0);
    const writes = t.requests - reads;
    const decisions: Record<string, number> = {};
    for (const o of r.outcomes) decisions[o.decision.kind] = (decisions[o.decision.kind] ?? 0) + 1;
    const rssMb = Math.round(process.memoryUsage().rss / 2 ** 20);
    c.record('tick', { label, leases: n, candidates: n * candidatesPerLease, wallMs: Math.round(wallMs), requests: t.requests, reads, writes, rru: t.rru, wru: t.wru, failed: t.failed, commands: t.commands, decisions, errors: r.errors.length, invalid: r.invalid.length, benchRssMb: rssMb });
    const decided = Object.entries(decisions).map(([k, v]) => `${k} ${v}`).join(', ');
    ctx.log(`  ${label}: ${(wallMs / 1000).toFixed(2)} s, ${t.requests} requests (${Object.entries(t.commands).map(([k, v]) => `${k} ${v}`).join(', ')}), ${t.rru} RRU, ${t.wru} WRU; decisions: ${decided}; errors ${r.errors.length}`);
    const full = `${what} · ${n.toLocaleString('en-US')} leases × ${candidatesPerLease}`;
    c.value(full, 'wall time', wallMs / 1000, 's', undefined, `${decided}${r.errors.length ? `; ${r.errors.length} errors` : ''}`);
    if (brief) {
      c.value(full, 'write requests per lease', writes / n, 'req', undefined, writes ? Object.entries(t.commands).filter(([k]) => !READ_COMMANDS.has(k)).map(([k, v]) => `${k} ${v}`).join(', ') : 'nothing to settle');
      return;
    }
    c.value(full, 'read requests per lease', reads / n, 'req', target?.(reads, writes), `${reads} reads: ${Object.entries(t.commands).filter(([k]) => READ_COMMANDS.has(k)).map(([k, v]) => `${k} ${v}`).join(', ')}`);
    c.value(full, 'write requests per lease', writes / n, 'req', undefined, writes ? Object.entries(t.commands).filter(([k]) => !READ_COMMANDS.has(k)).map(([k, v]) => `${k} ${v}`).join(', ') : undefined);
    c.value(full, 'capacity per lease', (t.rru + t.wru) / n, 'RU', undefined, `${(t.rru / n).toFixed(3)} RRU + ${(t.wru / n).toFixed(3)} WRU; this tick every minute would cost ≈ $${dollarsPerMonth(t.wru, t.rru).toFixed(2)} a month`);
  }

  try {
    const seedStart = performance.now();
    await seedLeases(ctx.observer, tables, { stem: 'lease', count: n, candidatesPerLease, state: 'held' });
    ctx.log(`  seeded ${n} held leases and ${n * candidatesPerLease} candidates in ${((performance.now() - seedStart) / 1000).toFixed(1)} s`);
    await tick('settling', 'tick, first over freshly seeded held leases (settling)', undefined, true);
    await tick('unchanged', 'tick, nothing to change', (reads, writes) => ({ text: '0 writes, ≤ 1 read request per 25 leases (0.04)', met: writes === 0 && reads / n <= 1 / 25 }));
    await seedLeases(ctx.observer, tables, { stem: 'lease', count: n, candidatesPerLease, state: 'vacant', leasesOnly: true });
    await tick('all vacant', 'tick, all vacant (candidates not fresh: ping, open an election)');
  } finally {
    client.destroy();
    await deleteTables(ctx.observer, tables);
  }
  return c;
}

/**
 * Calibrates the scale model (bench/scale-model.ts) on this machine: the real reconcileAll() — the
 * coordinator's tick, lib/coordinator/reconcile.ts — on DynamoDB Local over N leases × 3 candidates
 * seeded directly into the tables (bench/seed.ts). For each N: the settling tick (scan, then one
 * conditional write per lease: each lease's successor named), the tick with nothing to change
 * (scans only), and for the smallest N the all-vacant tick (scan, then 3 pings and the election
 * per lease). Wall time, the CPU time of this process (the coordinator's own share: parsing,
 * deciding; DynamoDB Local's is apart), requests, the peak heap growth during the tick, and the
 * tables' bytes per row. Prints one JSON line per tick (copy them into bench/scale-model.ts' CALIBRATION)
 * and a least-squares fit of wall time against leases.
 *
 *   npx tsx bench/scale-calibrate.ts [--leases 1000,10000] [--vacant-at 1000]
 */
import { performance } from 'node:perf_hooks';
import { ScanCommand, type DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { coordinatorDeps, reconcileAll } from '../lib/coordinator/reconcile.js';
import { localClient, startDynamoDBLocal } from '../lib/local/dynamodb-local.js';
import { createTables, deleteTables } from '../lib/local/tables.js';
import type { TableNames } from '../lib/schemas/config.js';
import { defaultTableNames } from '../lib/tables.js';
import { diffTallies, READ_COMMANDS, RequestCounter } from './requests.js';
import { itemBytes } from './scale-model.js';
import { seedLeases } from './seed.js';

const arg = (name: string, fallback: string): string => {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 && process.argv[i + 1] !== undefined ? process.argv[i + 1]! : fallback;
};
const SIZES = arg('leases', '1000,10000').split(',').map((s) => {
  const n = Number(s);
  if (!Number.isInteger(n) || n < 1) throw new Error(`--leases takes whole numbers ≥ 1 separated by commas, got "${s}"`);
  return n;
});
const VACANT_AT = Number(arg('vacant-at', String(SIZES[0])));
const CANDIDATES = 3;

/** Mean DynamoDB item size (bench/scale-model.ts' itemBytes) of a table's rows, from a scan of its first page. */
async function bytesPerRow(client: DynamoDBClient, table: string): Promise<number> {
  const r = await client.send(new ScanCommand({ TableName: table, Limit: 200 }));
  const items = r.Items ?? [];
  return items.length ? items.reduce((a, it) => a + itemBytes(it), 0) / items.length : 0;
}

async function tick(client: DynamoDBClient, tables: TableNames, counter: RequestCounter, n: number, label: string) {
  const deps = coordinatorDeps(client, tables);
  const before = counter.snapshot();
  const heap0 = process.memoryUsage().heapUsed;
  let peak = heap0;
  const sampler = setInterval(() => (peak = Math.max(peak, process.memoryUsage().heapUsed)), 20);
  const cpu0 = process.cpuUsage();
  const start = performance.now();
  const r = await reconcileAll(deps);
  const wallMs = performance.now() - start;
  const cpu = process.cpuUsage(cpu0);
  clearInterval(sampler);
  peak = Math.max(peak, process.memoryUsage().heapUsed);
  const t = diffTallies(counter.snapshot(), before)['coordinator']!;
  const reads = Object.entries(t.commands).reduce((a, [c, k]) => a + (READ_COMMANDS.has(c) ? k : 0), 0);
  const decisions: Record<string, number> = {};
  for (const o of r.outcomes) decisions[o.decision.kind] = (decisions[o.decision.kind] ?? 0) + 1;
  const line = { type: 'tick', label, leases: n, candidates: n * CANDIDATES, wallMs: Math.round(wallMs), cpuMs: Math.round((cpu.user + cpu.system) / 1000), reads, writes: t.requests - reads, rru: t.rru, wru: t.wru, commands: t.commands, decisions, errors: r.errors.length, heapGrowthMb: Math.round(((peak - heap0) / 2 ** 20) * 10) / 10 };
  process.stdout.write(`${JSON.stringify(line)}\n`);
  return line;
}

/** Least squares y = a + b·x. */
function fit(points: { x: number; y: number }[]): { a: number; b: number } {
  const n = points.length;
  const mx = points.reduce((s, p) => s + p.x, 0) / n;
  const my = points.reduce((s, p) => s + p.y, 0) / n;
  const sxx = points.reduce((s, p) => s + (p.x - mx) ** 2, 0);
  const b = sxx === 0 ? 0 : points.reduce((s, p) => s + (p.x - mx) * (p.y - my), 0) / sxx;
  return { a: my - b * mx, b };
}

const ddb = await startDynamoDBLocal({ quickStart: false });
const client = localClient(ddb.endpoint);
const counter = new RequestCounter().attach(client, () => 'coordinator');
const unchanged: { x: number; y: number }[] = [];
const settling: { x: number; y: number }[] = [];
try {
  process.stdout.write(`${JSON.stringify({ type: 'meta', at: new Date().toISOString(), sizes: SIZES, vacantAt: VACANT_AT, load: (await import('node:os')).loadavg() })}\n`);
  for (const [i, n] of SIZES.entries()) {
    const tables = defaultTableNames(`scale-cal-${i}`);
    await createTables(client, tables);
    try {
      const s0 = performance.now();
      await seedLeases(client, tables, { stem: 'lease', count: n, candidatesPerLease: CANDIDATES, state: 'held' });
      const seedMs = performance.now() - s0;
      const rows = { type: 'rows', leases: n, seedMs: Math.round(seedMs), leaseBytes: Math.round(await bytesPerRow(client, tables.leases)), candidateBytes: Math.round(await bytesPerRow(client, tables.candidates)) };
      process.stdout.write(`${JSON.stringify(rows)}\n`);
      settling.push({ x: n, y: (await tick(client, tables, counter, n, 'settling')).wallMs });
      unchanged.push({ x: n, y: (await tick(client, tables, counter, n, 'unchanged')).wallMs });
      if (n === VACANT_AT) {
        await seedLeases(client, tables, { stem: 'lease', count: n, candidatesPerLease: CANDIDATES, state: 'vacant', leasesOnly: true });
        await tick(client, tables, counter, n, 'all vacant');
      }
    } finally {
      await deleteTables(client, tables);
    }
  }
  if (unchanged.length >= 2) {
    const u = fit(unchanged);
    const s = fit(settling);
    process.stdout.write(`${JSON.stringify({ type: 'fit', unchanged: { interceptMs: Math.round(u.a), msPerLease: u.b }, settling: { interceptMs: Math.round(s.a), msPerLease: s.b } })}\n`);
  }
} finally {
  client.destroy();
  await ddb.stop();
}

/**
 * The CPU one tick spends keeping its timer chains (lib/functions/chains.ts) when a whole fleet's
 * holders go silent at once (a partition, a zone lost): n reconciles, each starting a term-end
 * chain, then a tick later n more (each chain reused). Prints numbers; nothing asserts them. Before
 * the heap, every send walked every chain kept: n = 50,000 took 28 s.
 *
 *   npx tsx bench/timer-chains.ts [--leases 5000,20000,50000]
 */
import { afterReconcile, type FunctionDeps } from '../lib/functions/core.js';
import { observability } from '../lib/functions/env.js';
import type { ReconcileOutcome } from '../lib/coordinator/reconcile.js';

process.env['POWERTOOLS_METRICS_DISABLED'] ??= 'true';
const i = process.argv.indexOf('--leases');
const sizes = (i >= 0 ? process.argv[i + 1]! : '5000,20000,50000').split(',').map(Number);

const T0 = Date.UTC(2026, 11, 7);
for (const n of sizes) {
  let sent = 0;
  const d = {
    coordinator: { config: { ackWindowMs: 5_000, clockSkewMs: 1_000 } },
    timer: { schedule: async () => void sent++ },
    publish: async () => undefined,
    deadLetter: async () => undefined,
    ...observability('bench', 'SILENT'),
  } as unknown as FunctionDeps;
  const silent = (lease: string, at: number) =>
    ({ lease, decision: { kind: 'leaveAlone', reason: 'leaderHealthy' }, before: undefined, after: undefined, pinged: [], invalidCandidates: [], attempts: 1, at, recheckAt: T0 + 600_000 }) as unknown as ReconcileOutcome;
  const t0 = performance.now();
  for (let l = 0; l < n; l++) await afterReconcile(d, silent(`lease-${l}`, T0), 'tick');
  const first = performance.now() - t0;
  for (let l = 0; l < n; l++) await afterReconcile(d, silent(`lease-${l}`, T0 + 60_000), 'tick');
  const second = performance.now() - t0 - first;
  console.log(`n=${n}: ${sent} sent; first tick ${(first / 1000).toFixed(2)} s, next tick (chains reused) ${(second / 1000).toFixed(2)} s`);
}

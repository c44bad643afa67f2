/**
 * Hand-off against etcd's (issue 38, item 3: "hand-off faster than etcd's"), in one sitting: run by
 * run, Conclave's settled hand-off (handoffRun: 3 workers on DynamoDB Local with the push path, the
 * leader SIGTERMed → another's onStartedLeading) and etcd's election API handing over (3 `etcdctl
 * elect` campaigners on a single-member etcd on loopback, the leader SIGTERMed: it resigns, deleting
 * its key → the next campaigner prints that it is elected). Both from the SIGTERM, on this machine's
 * clock; medians, p90, p99 and the ratio of the two.
 *
 * etcd (Debian's etcd-server and etcd-client) is asked for as HAProxy is: CONCLAVE_INSTALL_ETCD=1
 * installs it (as root), otherwise a missing etcd is an error naming the install line. The etcd
 * server runs for the scenario only, its data in a fresh temp directory, stopped and removed at the
 * end, on error too.
 */
import { EtcdCampaigner, ensureEtcd, startEtcd, versusEtcd, withP99, type Etcd, type VersusEtcd } from '../etcd.js';
import { describeMode, waitFor, type BenchContext, type BenchOptions, type System } from '../fleet.js';
import { describeParts } from '../handoff-trace.js';
import { Collector, type ScenarioResult } from '../report.js';
import { systemClock, type Clock } from '../../lib/clock.js';
import { describeSample, handoffRun, type RunSample } from './runs.js';

/** How long etcd's campaigners sit in place (every waiter's watch set up) before the SIGTERM. */
export const ETCD_SETTLE_MS = 1_000;
/** How long any one step of an etcd run may take: etcd answers in milliseconds; this is only a guard. */
const ETCD_STEP_TIMEOUT_MS = 30_000;

/** One etcd hand-off. */
export interface EtcdHandoffSample {
  /** SIGTERM of the leading campaigner → the next one's "elected" line read here. */
  ms: number;
  from: string;
  to: string;
  /** SIGTERM → the old leader's process exited, its resignation (the delete of its key) answered. */
  resignedMs: number;
  /** The store's revision the new leader read its key at (its predecessor's delete came just before). */
  revision: number;
}

/**
 * Three campaigners c1, c2, c3 in `election` (fresh per run), started in that order, each once the
 * one before waits (etcd's watcher count), so c1 leads and c2 is next; settled for `settleMs`; then
 * c1 is SIGTERMed and the run ends when another prints that it is elected. Every campaigner is
 * stopped before it returns, on error too.
 */
export async function etcdHandoffRun(etcd: Pick<Etcd, 'url' | 'binaries' | 'watchers'>, election: string, o: { settleMs: number; clock?: Clock; timeoutMs?: number }): Promise<EtcdHandoffSample> {
  const clock = o.clock ?? systemClock;
  const timeout = o.timeoutMs ?? ETCD_STEP_TIMEOUT_MS;
  const campaigners: EtcdCampaigner[] = [];
  const add = (proposal: string) => {
    const c = new EtcdCampaigner(proposal, election, { etcd, clock });
    campaigners.push(c);
    return c;
  };
  try {
    // the run before stopped its campaigners: their watches are gone once etcd has seen them go
    await waitFor('etcd to serve no watchers (the run before ended)', async () => (await etcd.watchers()) === 0, timeout, 10);
    const leader = add('c1');
    await leader.waitElected(timeout, clock);
    for (const [i, proposal] of ['c2', 'c3'].entries()) {
      add(proposal);
      await waitFor(`campaigner ${proposal} waiting on the one before it`, async () => (await etcd.watchers()) >= i + 1, timeout, 10);
    }
    await clock.sleep(o.settleMs);
    const t0 = clock.now();
    const resigned = leader.stop(timeout, clock);
    const next = await Promise.race(campaigners.slice(1).map((c) => c.waitElected(timeout, clock)));
    const exitedAt = await resigned;
    return { ms: next.at - t0, from: leader.proposal, to: next.proposal, resignedMs: exitedAt - t0, revision: next.revision };
  } finally {
    await Promise.all(campaigners.map((c) => c.stop(timeout, clock)));
  }
}

export const ETCD_SYSTEM = 'etcd (etcdctl elect)';

export function describeEtcdSample(s: EtcdHandoffSample): string {
  return `${s.from} resigned (its process exited at ${s.resignedMs} ms) → ${s.to} elected after ${s.ms} ms (revision ${s.revision})`;
}

export async function etcdHandoff(ctx: BenchContext, opts: BenchOptions): Promise<ScenarioResult> {
  const c = new Collector('etcd-handoff');
  const etcd = await startEtcd({ binaries: ensureEtcd() });
  try {
    ctx.log(`\netcd: ${etcd.version}, one member on ${etcd.url} (data in a fresh ${etcd.dataDir}, fsync on, as etcd runs); 3 campaigners, each \`etcdctl -w json elect <election> <proposal>\` (session TTL 60 s, etcdctl's), settled ${ETCD_SETTLE_MS} ms once every waiter watches; elected = its line read here`);
    for (const mode of opts.modes) {
      const runs = opts.runs ?? (opts.quick ? 2 : 10);
      const what = `hand-off vs etcd · ${describeMode(mode)} (Conclave's) · settled`;
      ctx.log(`\n▸ ${what}: ${runs} run(s) of each, interleaved (Conclave first in odd runs, etcd in even ones)`);
      const conclave: RunSample[] = [];
      const etcdRuns: EtcdHandoffSample[] = [];
      for (let i = 0; i < runs; i++) {
        const order: ('conclave' | 'etcd')[] = i % 2 === 0 ? ['conclave', 'etcd'] : ['etcd', 'conclave'];
        for (const system of order) {
          const label = { system, mode, start: 'settled', run: i + 1 };
          try {
            if (system === 'conclave') {
              const s = await handoffRun(ctx, 'conclave' satisfies System, mode, { start: 'settled' });
              conclave.push(s);
              c.record('sample', { ...label, ...s });
              ctx.log(`  conclave run ${i + 1}/${runs}: ${describeSample(s)}`);
            } else {
              const s = await etcdHandoffRun(etcd, ctx.unique(`handoff-${mode}`), { settleMs: ETCD_SETTLE_MS });
              etcdRuns.push(s);
              c.record('sample', { ...label, ...s });
              ctx.log(`  etcd     run ${i + 1}/${runs}: ${describeEtcdSample(s)}`);
            }
          } catch (e) {
            c.record('failure', { ...label, error: (e as Error).message });
            ctx.log(`  ${system.padEnd(8)} run ${i + 1}/${runs}: ✗ ${(e as Error).message}`);
          }
        }
      }
      const v = versusEtcd(
        conclave.map((s) => s.ms),
        etcdRuns.map((s) => s.ms),
      );
      // in ms as well: etcd's hand-off is a few ms, below the summary's hundredths of a second
      const inMs = (s: VersusEtcd['etcd']) => (s ? `median ${s.median} ms, p90 ${s.p90} ms, p99 ${s.p99} ms (nearest rank)` : undefined);
      c.latency(`${what}: SIGTERM → new leader`, 'conclave', conclave.map((s) => s.ms), v.etcd ? { text: `median < etcd's (${v.etcd.median} ms)`, met: (s) => s.median < v.etcd!.median } : undefined, inMs(v.conclave));
      c.latency(`${what}: SIGTERM → new leader`, ETCD_SYSTEM, etcdRuns.map((s) => s.ms), undefined, inMs(v.etcd));
      if (v.medianRatio !== undefined) c.value(`${what}: SIGTERM → new leader`, 'ratio conclave ÷ etcd', v.medianRatio, '× (medians)');
      if (v.p99Ratio !== undefined) c.value(`${what}: SIGTERM → new leader`, 'ratio conclave ÷ etcd', v.p99Ratio, '× (p99s)');
      const resigned = etcdRuns.map((s) => s.resignedMs);
      c.latency(`${what}: SIGTERM → the old leader resigned and exited`, ETCD_SYSTEM, resigned, undefined, inMs(withP99(resigned)));
      const traced = conclave.flatMap((s) => (s.handoff ? [s.handoff] : []));
      if (traced.length) {
        ctx.log(`  where Conclave's time went (${traced.length} traced runs):`);
        for (const l of describeParts(traced)) ctx.log(`    ${l}`);
      }
    }
  } finally {
    await etcd.stop();
  }
  return c;
}

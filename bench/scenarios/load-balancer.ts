/**
 * A real load balancer (issue 39, item 4): HAProxy (lib/local/haproxy.ts, LEADER_CHECK's settings)
 * in front of three Conclave workers, each serving the SDK's health check and an application only
 * the leader answers (lib/local/behind-haproxy.ts). A client sends a request every 20 ms through
 * HAProxy and retries a failed one once, after the 503's Retry-After (1 s). Measured per run:
 * requests sent, failed at the first try, failed after the one retry, and the time from the
 * SIGTERM (hand-off) or kill -9 (crash) of the leader to the first answer by the new leader behind
 * the same address. Crashes are swept across the leader's renew cycle (bench/sweep.ts). The
 * issue's goals: a hand-off loses no request that the client retries once; a crash is routed to
 * the new leader within the lease duration plus one health-check interval.
 */
import { checkHistory, formatVerdict } from '../../lib/history/checker.js';
import { historyFromWorkerEvents } from '../../lib/history/worker-events.js';
import { BehindHaproxy } from '../../lib/local/behind-haproxy.js';
import { ensureHaproxy, LEADER_CHECK } from '../../lib/local/haproxy.js';
import { failoverFigures, SteadyClient, type FailoverFigures } from '../../lib/local/steady-client.js';
import { describeMode, MODES, sleep, waitFor, type BenchContext, type BenchOptions } from '../fleet.js';
import { Collector, type ScenarioResult } from '../report.js';
import { killPhases, renewCycleMs } from '../sweep.js';

/** One request every this many ms: 50 per second. */
const EVERY_MS = 20;
/** Steady traffic before the failure, and after the new leader's first answer. */
const BEFORE_MS = 1_000;
const AFTER_MS = 1_500;

export const HAPROXY_SETTINGS = `every server down at the start (server-state-file, max-spread-checks 1ms), inter ${LEADER_CHECK.intervalMs}ms rise ${LEADER_CHECK.rise} fall ${LEADER_CHECK.fall} fastinter ${LEADER_CHECK.fastIntervalMs}ms downinter ${LEADER_CHECK.downIntervalMs}ms, observe layer7 error-limit 1 on-error fastinter, retry-on conn-failure empty-response 503, retries ${LEADER_CHECK.retries}, option redispatch 1, HAProxy's own 502 answered as a 503, Retry-After ${LEADER_CHECK.retryAfterSeconds} on every 503`;

interface Sample extends FailoverFigures {
  kind: 'handoff' | 'crash';
  mode: string;
  from: string;
  /** Crash: how long after a renewal the leader was killed. */
  phaseMs?: number;
}

export async function loadBalancer(ctx: BenchContext, opts: BenchOptions): Promise<ScenarioResult> {
  const c = new Collector('load-balancer');
  // as DynamoDB Local's Java: installed only when CONCLAVE_INSTALL_HAPROXY=1 asks; else the error names the install line
  const binary = ensureHaproxy();
  const runs = opts.runs ?? (opts.quick ? 2 : 5);
  ctx.log(`\nHAProxy: option httpchk GET /leader, http-check expect status 200, ${HAPROXY_SETTINGS}; a client request every ${EVERY_MS} ms, a failed one retried once after its Retry-After`);
  for (const mode of opts.modes) {
    const timing = MODES[mode].timing;
    const rt = await ctx.runtime(mode);
    const lease = ctx.unique(`lb-${mode}`);
    const g = await BehindHaproxy.start(rt, { lease, timing, binary });
    const samples: Sample[] = [];
    try {
      const phases = killPhases(runs, renewCycleMs('conclave', timing));
      for (const kind of ['handoff', 'crash'] as const) {
        ctx.log(`\n▸ HAProxy · ${kind === 'handoff' ? 'hand-off (SIGTERM)' : 'crash (kill -9)'} · ${describeMode(mode)}: ${runs} run(s)${kind === 'crash' ? `, killed ${phases.join(', ')} ms after a renewal` : ''}`);
        for (let i = 0; i < runs; i++) {
          const old = await g.settled();
          const client = new SteadyClient({ url: `${g.url}/work`, everyMs: EVERY_MS, retry: { after: 'retry-after' } }).start();
          await sleep(BEFORE_MS);
          let at: number;
          let phaseMs: number | undefined;
          if (kind === 'handoff') {
            at = Date.now();
            await old.stop();
          } else {
            const renewTime = async () => (await rt.deps.coordinator.leases.read(lease)).item?.renewTime;
            const before = await renewTime();
            const renewed = await waitFor(`a renewal by ${old.identity}`, async () => {
              const t = await renewTime();
              return t !== undefined && t !== before && t;
            }, 3 * timing.retryPeriodMs + 10_000, 5);
            await sleep(renewed + phases[i]! - Date.now());
            at = Date.now();
            phaseMs = at - renewed;
            await old.kill();
          }
          const answered = () => client.records.some((r) => [r.first, r.retry].some((a) => a?.status === 200 && a.identity !== old.identity));
          await waitFor('an answer by the new leader', answered, timing.leaseDurationMs * 3 + 30_000);
          await sleep(AFTER_MS);
          const f = failoverFigures(await client.stop(), at, old.identity);
          const s: Sample = { kind, mode, from: old.identity, ...f, ...(phaseMs !== undefined ? { phaseMs } : {}) };
          samples.push(s);
          c.record('sample', { ...s });
          ctx.log(`  run ${i + 1}: ${old.identity} → ${f.newLeader} answers after ${((f.msToNewLeader ?? NaN) / 1000).toFixed(2)} s; ${f.sent} requests, ${f.failedFirst} failed at first, ${f.failedAfterRetry} after one retry${phaseMs !== undefined ? ` (killed ${phaseMs} ms after a renewal)` : ''}`);
          await g.startWorker(old.identity);
        }
      }
    } finally {
      await g.stop();
    }
    const v = checkHistory({ history: historyFromWorkerEvents(lease, g.all), end: { mono: (BigInt(Date.now()) * 1_000_000n).toString() } });
    ctx.checked.conclave.groups++;
    ctx.checked.conclave.terms += v.terms.length;
    ctx.checked.conclave.violations += v.violations.length;
    if (v.violations.length) c.record('failure', { error: `history checker: ${formatVerdict(v).join('; ')}` });

    const m = describeMode(mode);
    const of = (kind: Sample['kind']) => samples.filter((s) => s.kind === kind);
    const list = (xs: Sample[], f: (s: Sample) => number) => xs.map(f).join(', ');
    const handoffs = of('handoff');
    const crashes = of('crash');
    const bound = timing.leaseDurationMs + LEADER_CHECK.intervalMs;
    c.latency(`HAProxy · hand-off (SIGTERM) · ${m}: SIGTERM → first answer by the new leader`, 'conclave', handoffs.flatMap((s) => (s.msToNewLeader === undefined ? [] : [s.msToNewLeader])));
    c.value(`HAProxy · hand-off (SIGTERM) · ${m}: requests failed at the first try`, 'conclave', handoffs.reduce((n, s) => n + s.failedFirst, 0), 'requests', undefined, `per run ${list(handoffs, (s) => s.failedFirst)} of ${list(handoffs, (s) => s.sent)} sent`);
    c.value(`HAProxy · hand-off (SIGTERM) · ${m}: requests lost with one retry`, 'conclave', handoffs.reduce((n, s) => n + s.failedAfterRetry, 0), 'requests', { text: '0', met: handoffs.every((s) => s.failedAfterRetry === 0) }, `per run ${list(handoffs, (s) => s.failedAfterRetry)}`);
    const crashMs = crashes.flatMap((s) => (s.msToNewLeader === undefined ? [] : [s.msToNewLeader]));
    c.latency(`HAProxy · crash (kill -9) · ${m}: kill → first answer by the new leader`, 'conclave', crashMs, { text: `max ≤ lease + one check interval (${bound / 1000} s)`, met: (st) => st.max <= bound && crashMs.length === crashes.length });
    // the whole wait: the term ran out a lease after the leader's last renewal, not after the kill
    const pastTerm = crashes.flatMap((s) => (s.msToNewLeader === undefined || s.phaseMs === undefined ? [] : [s.phaseMs + s.msToNewLeader - timing.leaseDurationMs]));
    c.latency(`HAProxy · crash (kill -9) · ${m}: first answer by the new leader past the term's end (last renewal + lease)`, 'conclave', pastTerm, undefined, `the successor's take past expiry, then HAProxy's next check of it (a follower's: every ${LEADER_CHECK.downIntervalMs} ms)`);
    c.value(`HAProxy · crash (kill -9) · ${m}: requests failed at the first try`, 'conclave', crashes.reduce((n, s) => n + s.failedFirst, 0), 'requests', undefined, `per run ${list(crashes, (s) => s.failedFirst)} of ${list(crashes, (s) => s.sent)} sent`);
    c.value(`HAProxy · crash (kill -9) · ${m}: requests lost with one retry`, 'conclave', crashes.reduce((n, s) => n + s.failedAfterRetry, 0), 'requests', undefined, `per run ${list(crashes, (s) => s.failedAfterRetry)}`);
  }
  return c;
}

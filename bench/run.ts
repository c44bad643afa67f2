/**
 * `npm run bench`: Conclave's benchmarks on this machine, on a real DynamoDB Local with the local
 * runtime and real worker processes, beside a client-go-style baseline. Prints numbers and writes
 * them to bench/results/; asserts nothing (the issue's targets are shown beside each figure).
 *
 *   npm run bench                                   every scenario (roughly half an hour on 2 cores)
 *   npm run bench -- --quick                        a smoke run of every scenario (about 3 minutes)
 *   npm run bench -- --only crash-failover --runs 10 --short-lease
 *   npm run bench -- --only crash-failover-signal --signal-delay 2
 *   npm run bench -- --only repeated-crash --default-lease   five crashes in a row, a new process after each (issue 38)
 *   npm run bench -- --only crash-failover,handoff --burst --default-lease
 *   npm run bench -- --only steady-state --no-push  Conclave without the push path (workers only poll)
 *   npm run bench -- --only handoff --broker-process   each runtime's push broker in a process of its own
 *   npm run bench -- --only multi-lease --no-session  many leases per process without sessions (each leader renews its own leases)
 *   npm run bench -- --only load-balancer           HAProxy in front of three workers: requests lost and time to the new leader, hand-off and crash (issue 39)
 *   npm run bench -- --only etcd-handoff --short-lease   Conclave's hand-off and etcd's election API handing over, run by run (issue 38; etcd asked for with CONCLAVE_INSTALL_ETCD=1)
 */
import { copyFileSync, mkdirSync, writeFileSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { Command, InvalidArgumentError } from 'commander';
import { DEFAULT_BURST_SEED } from './burst.js';
import { BenchContext, type BenchOptions, type Mode } from './fleet.js';
import { describePrices } from './prices.js';
import { machine, markdown, summaryLines, targetLines, type Figure, type ScenarioResult } from './report.js';
import { coordinatorScale } from './scenarios/coordinator-scale.js';
import { crashFailover, crashFailoverSignal } from './scenarios/crash-failover.js';
import { electionLatency } from './scenarios/election-latency.js';
import { etcdHandoff } from './scenarios/etcd-handoff.js';
import { handoff } from './scenarios/handoff.js';
import { loadBalancer } from './scenarios/load-balancer.js';
import { multiLease } from './scenarios/multi-lease.js';
import { preemption } from './scenarios/preemption.js';
import { repeatedCrash } from './scenarios/repeated-crash.js';
import { steadyState } from './scenarios/steady-state.js';

/** In the order they run. */
const SCENARIOS = {
  'crash-failover': crashFailover,
  'crash-failover-signal': crashFailoverSignal,
  'repeated-crash': repeatedCrash,
  handoff,
  'etcd-handoff': etcdHandoff,
  'load-balancer': loadBalancer,
  'election-latency': electionLatency,
  preemption,
  'steady-state': steadyState,
  'multi-lease': multiLease,
  'coordinator-scale': coordinatorScale,
} as const satisfies Record<string, (ctx: BenchContext, o: BenchOptions) => Promise<ScenarioResult>>;
type ScenarioName = keyof typeof SCENARIOS;
const NAMES = Object.keys(SCENARIOS) as ScenarioName[];

const positiveInt = (what: string) => (v: string) => {
  const n = Number(v);
  if (!Number.isInteger(n) || n < 1) throw new InvalidArgumentError(`${what} must be a whole number ≥ 1, got "${v}"`);
  return n;
};

const program = new Command()
  .name('npm run bench --')
  .description('Benchmarks: crash failover (plain and with the platform signal), hand-off (and beside etcd\'s election API), HAProxy in front of the workers, preemption, election latency, steady-state cost (one lease per process, and many), coordinator scale; Conclave beside a client-go-style baseline.')
  .option('--only <scenarios>', `comma-separated, of: ${NAMES.join(', ')}`, (v) => {
    const names = v.split(',').map((s) => s.trim()).filter(Boolean);
    const bad = names.filter((n) => !(n in SCENARIOS));
    if (bad.length || names.length === 0) throw new InvalidArgumentError(`unknown scenario "${bad.join(', ') || v}"; choose from ${NAMES.join(', ')}`);
    return names as ScenarioName[];
  })
  .option('--runs <n>', 'runs per latency scenario (default: crash failover 10, the others 5; --quick: 2)', positiveInt('--runs'))
  .option('--short-lease', 'only the short-lease mode (lease 4 s / renew deadline 3 s / retry 0.5 s) for the latency scenarios')
  .option('--default-lease', 'only the client-go default mode (15 s / 10 s / 2 s) for the latency scenarios')
  .option('--quick', 'a smoke run: short-lease mode, 2 runs each, a 30 s steady-state window, 10 leases per process in the many-leases steady state, 500 leases for coordinator scale')
  .option('--leases <n>', 'leases for coordinator scale (default 10000; --quick: 500)', positiveInt('--leases'))
  .option('--multi-leases <n>', 'leases per process in the many-leases steady state (default 100; --quick: 10)', positiveInt('--multi-leases'))
  .option('--window <seconds>', 'steady-state measurement window (default 120; --quick: 30)', positiveInt('--window'))
  .option('--signal-delay <seconds>', 'crash failover with the platform signal: seconds from the process exit to ECS\'s STOPPED event (default 0)', (v) => {
    const n = Number(v);
    if (!Number.isFinite(n) || n < 0) throw new InvalidArgumentError(`--signal-delay must be a number of seconds ≥ 0, got "${v}"`);
    return n;
  })
  .option('--burst', 'failure scenarios in burst mode only: the measured failure 1–3 s into the term a first failure began (crash failover, with and without the signal, and hand-off; every timing mode selected)')
  .option('--settled', 'failure scenarios settled only (the group settles before each failure)')
  .option('--seed <n>', `seed of the burst delays (default ${DEFAULT_BURST_SEED})`, (v) => {
    const n = Number(v);
    if (!Number.isInteger(n) || n < 0) throw new InvalidArgumentError(`--seed must be a whole number ≥ 0, got "${v}"`);
    return n;
  })
  .option('--no-push', "Conclave without the push path: no push broker, the workers only poll (a before/after within one run; recorded in the meta line)")
  .option('--broker-process', "each runtime's push broker in a process of its own, as IoT Core is a service of its own (default: in the runtime's process; measured slower on a loaded machine, issue 38: docs/benchmarks.md#hand-off; recorded in the meta line)")
  .option('--no-session', 'the many-leases steady state without sessions: no Session per worker process, each leader renews its own leases (a before/after on the same commit; recorded in the meta line). The single-lease scenarios run no sessions either way')
  .option('--out <dir>', 'where results are written', 'bench/results')
  .parse(process.argv);

const o = program.opts<{ only?: ScenarioName[]; runs?: number; shortLease?: boolean; defaultLease?: boolean; quick?: boolean; leases?: number; multiLeases?: number; window?: number; signalDelay?: number; burst?: boolean; settled?: boolean; seed?: number; push: boolean; brokerProcess?: boolean; session: boolean; out: string }>();
if (o.shortLease && o.defaultLease) program.error('--short-lease and --default-lease exclude each other; give neither for both modes');
const modes: Mode[] = o.shortLease ? ['short'] : o.defaultLease ? ['default'] : o.quick ? ['short'] : ['default', 'short'];
// Neither flag: every mode settled, and burst in default timing (crash failover and hand-off).
// --burst: burst in every mode, the platform-signal crash too; both flags: both everywhere.
const starts: BenchOptions['starts'] =
  o.burst || o.settled
    ? { settled: o.settled ? modes : [], burst: o.burst ? modes : [], signalBurst: o.burst ? modes : [] }
    : { settled: modes, burst: modes.filter((m) => m === 'default'), signalBurst: [] };
const opts: BenchOptions = {
  quick: Boolean(o.quick),
  modes,
  starts,
  seed: o.seed ?? DEFAULT_BURST_SEED,
  push: o.push,
  pushBroker: o.brokerProcess ? 'own-process' : 'in-process',
  session: o.session,
  ...(o.runs ? { runs: o.runs } : {}),
  ...(o.leases ? { leases: o.leases } : {}),
  ...(o.multiLeases ? { multiLeases: o.multiLeases } : {}),
  ...(o.window ? { windowMs: o.window * 1000 } : {}),
  ...(o.signalDelay !== undefined ? { signalDelayMs: Math.round(o.signalDelay * 1000) } : {}),
};
const selected = NAMES.filter((n) => !o.only || o.only.includes(n));

async function main(): Promise<number> {
  const started = new Date();
  const m = machine();
  const outDir = resolve(o.out);
  mkdirSync(outDir, { recursive: true });
  const stamp = started.toISOString().replace(/[:.]/g, '-');
  const jsonl = join(outDir, `${stamp}.jsonl`);
  const lines: string[] = [];
  const emit = (r: Record<string, unknown>) => lines.push(JSON.stringify(r));
  const log = (l: string) => process.stdout.write(`${l}\n`);

  log(`Conclave benchmarks: ${selected.join(', ')}${opts.quick ? ' (quick)' : ''}; Conclave ${opts.push ? `with the push path (a push broker per runtime${opts.pushBroker === 'own-process' ? ', each a process of its own (--broker-process)' : ''}, one connection per worker process)` : 'without the push path (--no-push: workers only poll)'}${selected.includes('multi-lease') ? `; many leases per process ${opts.session ? 'with one session per process' : 'without sessions (--no-session)'}` : ''}`);
  log(`Machine: ${m.nproc} × ${m.cpu}, ${m.memoryGb} GB, Node ${m.node}, load ${m.loadAtStart}; commit ${m.commit}${m.dirty ? ' + uncommitted changes' : ''}`);
  emit({ type: 'meta', startedAt: started.toISOString(), machine: m, options: opts, scenarios: selected, prices: describePrices() });

  const ctx = await BenchContext.start(log, { push: opts.push, ...(opts.pushBroker ? { pushBroker: opts.pushBroker } : {}) });
  const figures: Figure[] = [];
  let failures = 0;
  try {
    for (const name of selected) {
      const t0 = Date.now();
      try {
        const r = await SCENARIOS[name](ctx, opts);
        r.records.forEach(emit);
        figures.push(...r.figures);
        failures += r.records.filter((x) => x['type'] === 'failure').length;
      } catch (e) {
        failures++;
        emit({ type: 'failure', scenario: name, error: (e as Error).stack ?? String(e) });
        log(`✗ ${name} failed: ${(e as Error).stack ?? String(e)}`);
      } finally {
        await ctx.endScenario();
      }
      log(`  (${name}: ${((Date.now() - t0) / 1000).toFixed(0)} s)`);
    }
  } finally {
    await ctx.stop();
  }
  for (const f of figures) emit({ type: 'figure', ...f });
  const durationMs = Date.now() - started.getTime();
  emit({ type: 'history', checked: ctx.checked });
  emit({ type: 'end', durationMs, failures });

  writeFileSync(jsonl, `${lines.join('\n')}\n`);
  const md = `${markdown(figures, m, `Conclave benchmarks, ${started.toISOString()}${opts.quick ? ' (quick)' : ''}${opts.push ? '' : ', without the push path (--no-push)'}${opts.session ? '' : ', without sessions (--no-session)'}`)}\n## Targets\n\n${targetLines(figures).map((l) => `- ${l.trim()}`).join('\n')}\n\nPrices: ${describePrices()}.\n\nRuns that failed: ${failures}. Wall time: ${(durationMs / 60_000).toFixed(1)} min.\n`;
  writeFileSync(jsonl.replace(/\.jsonl$/, '.md'), md);
  copyFileSync(jsonl, join(outDir, 'latest.jsonl'));
  writeFileSync(join(outDir, 'latest.md'), md);

  log('\nSummary (targets are the issue’s; reported, not asserted)');
  for (const l of summaryLines(figures)) log(l);
  const targets = targetLines(figures);
  if (targets.length) log(`\nTargets (the issues’), ✓ met / ✗ not met:\n${targets.join('\n')}`);
  log(`\n${describePrices()}`);
  for (const [system, c] of Object.entries(ctx.checked)) if (c.groups) log(`history checker, ${system}: ${c.groups} runs, ${c.terms} terms, ${c.violations} violation(s)`);
  log(`${failures ? `${failures} run(s) failed — see the failure lines in the JSON` : 'every run completed'}; ${(durationMs / 60_000).toFixed(1)} min`);
  log(`Results: ${relative(process.cwd(), jsonl)} and ${relative(process.cwd(), jsonl.replace(/\.jsonl$/, '.md'))} (also latest.jsonl, latest.md)`);
  return failures ? 1 : 0;
}

process.exitCode = await main();

/**
 * Steady-state cost with many leases per process: 3 worker processes
 * (bench/multi-lease-worker.ts), each a candidate on all N leases (N LeaderElectors on one
 * DynamoDBClient), client-go timing, the coordinator ticking once a minute. Measured over a window
 * while nothing happens: DynamoDB requests per lease per minute by role (each process counts its
 * own, per lease, as bench/counting-worker.ts does), Lambda invocations and GB-seconds per function
 * (the runtime's intercept hook), and dollars per lease-month by kind (issue 17: ≤ $0.05). Each
 * process takes the push path (unless `--no-push`) with one connection shared by its N electors,
 * so IoT Core's connectivity is 3 connections spread over the N leases.
 */
import { fileURLToPath } from 'node:url';
import { join } from 'node:path';
import { startLocalRuntime } from '../../lib/local/runtime.js';
import { WorkerProcess } from '../../lib/local/worker-process.js';
import { describeMode, dropRuntime, MODES, sleep, waitFor, type BenchContext, type BenchOptions } from '../fleet.js';
import { addUse, LambdaMeter, lambdaUse, scaleUse } from '../lambda.js';
import { Collector, type ScenarioResult } from '../report.js';
import { addTallies, diffTallies, RequestCounter } from '../requests.js';
import { byRoleOrder, candidateRenewalCost, tickWindow, commandsText, costFigures, eventsPerLease, iotPerLease, iotText, lambdaPerLease, perMinute, scaleRates, sumRates, withScheduledRenewals, workerRates, ZERO, type Rate } from './rates.js';
import { CANDIDATE_RENEW_MS, roleLabel } from './steady-state.js';

const PROCESSES = 3;
const REPORT_EVERY_MS = 1_000;
const TICK_EVERY_MS = 60_000;
const WORKER = fileURLToPath(new URL('../multi-lease-worker.ts', import.meta.url));

/** Per lease, which processes lead it now, by their own started/stopped lines. */
export function leadersByLease(lines: readonly { identity: string; event: string; lease?: string }[]): Map<string, Set<string>> {
  const out = new Map<string, Set<string>>();
  for (const e of lines) {
    if (e.lease === undefined || (e.event !== 'started' && e.event !== 'stopped')) continue;
    const s = out.get(e.lease) ?? new Set<string>();
    if (e.event === 'started') s.add(e.identity);
    else s.delete(e.identity);
    out.set(e.lease, s);
  }
  return out;
}

export async function multiLease(ctx: BenchContext, opts: BenchOptions): Promise<ScenarioResult> {
  const c = new Collector('multi-lease');
  const n = opts.multiLeases ?? (opts.quick ? 10 : 100);
  const windowMs = opts.windowMs ?? (opts.quick ? 30_000 : 120_000);
  const timing = MODES.default.timing;
  const what = `steady state, many leases per process · ${PROCESSES} processes, each a candidate on all ${n} leases, ${describeMode('default')}, per lease`;
  ctx.log(`\n▸ ${what}: a ${windowMs / 1000} s window`);

  const meter = new LambdaMeter();
  const rt = await startLocalRuntime({ endpoint: ctx.endpoint, prefix: ctx.unique('bench-multi'), dir: join(ctx.dir, 'multi'), tickEveryMs: 2 ** 31 - 1, logLevel: 'SILENT', push: ctx.push, intercept: meter.intercept() });
  const prefix = rt.tables.leases.replace(/-leases$/, '');
  const coordinator = new RequestCounter().attach(rt.client, () => 'coordinator');
  const stem = ctx.unique('multi');
  const workers: WorkerProcess[] = [];
  try {
    for (let p = 1; p <= PROCESSES; p++) {
      workers.push(
        new WorkerProcess(
          { identity: `p${p}`, lease: stem, emulationVersion: '1.30.0', binaryVersion: '1.30.0', timing, script: WORKER },
          { endpoint: ctx.endpoint, tablePrefix: prefix, pushUrl: rt.pushEndpoint, extra: { LEASE_COUNT: String(n), COUNT_REQUESTS_EVERY_MS: String(REPORT_EVERY_MS) } },
        ),
      );
    }
    const lines = () => workers.flatMap((w) => w.events as unknown as { identity: string; event: string; lease?: string; at: number }[]);
    // Settled: every lease led by exactly one process for a few retry periods, then quiet for the
    // ack window (no candidate fresh), then one tick writes what the coordinator keeps on healthy leases.
    await waitFor(
      `one leader on each of ${n} leases`,
      () => {
        const leaders = leadersByLease(lines());
        if (leaders.size < n || [...leaders.values()].some((s) => s.size !== 1)) return false;
        // with the push path, every process is connected (one connection each)
        if (rt.pushBroker && rt.pushBroker.stats().connections < PROCESSES) return false;
        const lastStart = Math.max(...lines().filter((e) => e.event === 'started').map((e) => e.at));
        return Date.now() - lastStart > Math.max(2.5 * timing.retryPeriodMs, 5_500);
      },
      180_000,
      200,
    );
    const beforeSettling = coordinator.snapshot();
    await rt.tick();
    const settling = diffTallies(coordinator.snapshot(), beforeSettling)['coordinator'];
    await sleep(REPORT_EVERY_MS + 2_000); // its writes' stream hops done; every worker has printed its counts since

    const pushBefore = rt.pushBroker?.stats();
    const { t0, t1, ticks, tickDeltas, windowTotal } = await tickWindow(rt, coordinator, windowMs, TICK_EVERY_MS);
    const pushAfter = rt.pushBroker?.stats();

    const moved = lines().filter((e) => (e.event === 'started' || e.event === 'stopped') && e.at >= t0 && e.at <= t1);
    if (moved.length) c.record('warning', { message: `leadership changed ${moved.length} time(s) inside the window`, events: moved });
    const leaders = leadersByLease(lines());
    const perProcess = workers.map((w) => [...leaders.values()].filter((s) => s.has(w.identity)).length);

    // Workers: the sum over the processes, per lease.
    const measured = workers.map((w) => workerRates(w, t0, t1));
    const workerPerLease = scaleRates(sumRates(measured.map((m) => m.rates)), 1 / n);
    const tickMean = perMinute(addTallies(...tickDeltas), ticks)['coordinator'] ?? ZERO;
    const others = diffTallies(windowTotal, addTallies(...tickDeltas))['coordinator'] ?? ZERO;
    const windowMinutes = (t1 - t0) / 60_000;
    const coordinatorPerLease: Rate = {
      requests: (tickMean.requests + others.requests / windowMinutes) / n,
      rru: (tickMean.rru + others.rru / windowMinutes) / n,
      wru: (tickMean.wru + others.wru / windowMinutes) / n,
      commands: Object.fromEntries(Object.entries(tickMean.commands).map(([k, v]) => [k, v / n])),
    };
    const { oneRenewal, invocationMs } = await candidateRenewalCost(ctx.endpoint, rt, meter, `${stem}-0`, 'p1');
    const renewalsPerMinute = (PROCESSES * 60_000) / CANDIDATE_RENEW_MS;
    const candidate = withScheduledRenewals(workerPerLease['candidate'] ?? ZERO, renewalsPerMinute, oneRenewal);
    const roles = Object.fromEntries(Object.entries({ ...workerPerLease, candidate, coordinator: coordinatorPerLease }).sort(byRoleOrder));
    const total = Object.values(roles).reduce((a, r) => ({ requests: a.requests + r.requests, rru: a.rru + r.rru, wru: a.wru + r.wru, commands: {} }), { ...ZERO });
    for (const [role, r] of Object.entries(roles)) c.value(what, `conclave · ${roleLabel(role, PROCESSES)}`, r.requests, 'req/min', undefined, `${commandsText(r) || '—'}; ${r.rru.toFixed(3)} RRU + ${r.wru.toFixed(3)} WRU /min`);
    c.value(what, 'conclave · total', total.requests, 'req/min', undefined, `${total.rru.toFixed(2)} RRU + ${total.wru.toFixed(2)} WRU /min; leases led per process: ${perProcess.join(', ')}`);

    const inWindow = meter.between(t0, t1);
    const lambda = addUse(lambdaPerLease(inWindow, { windowMinutes, ticks, leasesTicked: n, leasesLive: n }), scaleUse(lambdaUse([{ fn: 'candidateStream', at: 0, ms: invocationMs }]), renewalsPerMinute));
    const published = eventsPerLease(rt.events, inWindow, t0, t1, n);
    // IoT Core: one connection per process, shared by its n electors: 3 connections spread over the n leases
    const iot = pushBefore && pushAfter ? iotPerLease(pushBefore, pushAfter, { windowMinutes, leases: n }) : undefined;
    if (iot && Math.abs(iot.connections * n - PROCESSES) > 0.05)
      c.record('warning', { message: `the push broker held ${(iot.connections * n).toFixed(2)} connections on average in the window, not one per process (${PROCESSES})` });
    const dollars = costFigures(c, what, 'conclave', { dynamo: roles, lambda, ...published, leasesInDeployment: n, ...(iot ? { iot } : {}) }, { text: `≤ $0.05 per lease-month (${n} leases × ${PROCESSES} processes)`, max: 0.05 });

    c.record('rates', { system: 'conclave', scenario: 'multi-lease', leases: n, processes: PROCESSES, windowMs, settlingTick: settling, perLease: roles, total, ticks, tickMean, coordinatorOthers: others, oneCandidateRenewal: oneRenewal, candidateInvocationMs: invocationMs, lambdaPerLease: lambda, ...published, leasesLedPerProcess: perProcess, push: ctx.push, ...(iot ? { iotPerLease: iot, pushBroker: { before: pushBefore, after: pushAfter } } : {}), dollarsPerLeaseMonth: dollars });
    ctx.log(`  settling tick (${n} leases): ${settling ? `${settling.requests} requests (${Object.entries(settling.commands).map(([k, v]) => `${k} ${v}`).join(', ')})` : 'no requests'}; leases led per process: ${perProcess.join(', ')}`);
    ctx.log(`  ${total.requests.toFixed(2)} req/min per lease (${Object.entries(roles).map(([role, r]) => `${role} ${r.requests.toFixed(3)}`).join(', ')}); $${dollars.toFixed(4)} per lease-month`);
    ctx.log(`  ${iot ? `IoT Core per lease: ${iotText(iot)}` : 'no push path (--no-push): no IoT Core'}`);
  } finally {
    await Promise.all(workers.map((w) => w.stop()));
    await dropRuntime(ctx.observer, rt);
  }
  return c;
}

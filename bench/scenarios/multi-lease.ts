/**
 * Steady-state cost with many leases per process: 3 worker processes
 * (bench/multi-lease-worker.ts), each a candidate on all N leases (N LeaderElectors on one
 * DynamoDBClient), client-go timing, the coordinator ticking once a minute. Measured over a window
 * while nothing happens: DynamoDB requests per lease per minute by role (each process counts its
 * own, per lease, as bench/counting-worker.ts does), Lambda invocations and GB-seconds per function
 * (the runtime's intercept hook), and dollars per lease-month by kind (issue 17: ≤ $0.05). Each
 * process takes the push path (unless `--no-push`) with one connection shared by its N electors,
 * so IoT Core's connectivity is 3 connections spread over the N leases. Each process runs one
 * Session (lib/sdk/session.ts) shared by its N electors (unless `--no-session`): the leases it
 * holds are kept alive by the session's renewals, counted as `session-renewal`, and the electors'
 * reads of a holder's session row as `session-read` (bench/roles.ts). The window's end reports
 * which process's session holds how many leases, who is successor of how many, and the sessions'
 * own counts over the window (a renewal failed or a session ended: a warning).
 */
import { fileURLToPath } from 'node:url';
import { join } from 'node:path';
import { startLocalRuntime } from '../../lib/local/runtime.js';
import { WorkerProcess, type WorkerEvent } from '../../lib/local/worker-process.js';
import type { SessionStats } from '../../lib/sdk/session.js';
import { LeaseStore } from '../../lib/stores/lease-store.js';
import { describeMode, dropRuntime, MODES, sleep, waitFor, type BenchContext, type BenchOptions } from '../fleet.js';
import { addUse, LambdaMeter, lambdaUse, scaleUse } from '../lambda.js';
import { Collector, type ScenarioResult } from '../report.js';
import { addTallies, diffTallies, RequestCounter } from '../requests.js';
import { byRoleOrder, candidateRenewalCost, functionsQuiet, QUIET_MS, tickWindow, commandsText, costFigures, eventsPerLease, iotPerLease, iotText, lambdaPerLease, perMinute, scaleRates, sumRates, withScheduledChecks, withScheduledRenewals, workerRates, ZERO, type Rate } from './rates.js';
import { CANDIDATE_RENEW_MS, roleLabel } from './steady-state.js';
import { ON_SESSION_RENEW_MS } from '../../lib/sdk/candidate.js';

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

/** What the leases table says at a moment: per process, the leases held on its session, and those naming it successor. */
export interface Landing {
  /** Leases whose `session` is the process's (its session rows are named `session-<identity>-…`). */
  onSession: Record<string, number>;
  /** Leases held with no session named. */
  withoutSession: number;
  /** Leases naming the process successor. */
  successorOf: Record<string, number>;
}

/** Where the leases landed, from the leases as scanned. */
export function landing(leases: readonly { holderIdentity?: string | undefined; session?: string | undefined; successor?: string | undefined }[], identities: readonly string[]): Landing {
  const zero = () => Object.fromEntries(identities.map((id) => [id, 0]));
  const out: Landing = { onSession: zero(), withoutSession: 0, successorOf: zero() };
  for (const l of leases) {
    if (l.holderIdentity !== undefined && l.session === undefined) out.withoutSession++;
    const on = l.session === undefined ? undefined : identities.find((id) => l.session!.startsWith(`session-${id}-`));
    if (on !== undefined) out.onSession[on]!++;
    if (l.successor !== undefined && l.successor in out.successorOf) out.successorOf[l.successor]!++;
  }
  return out;
}

/** A process's session counts between its first and last `requests` line inside [from, to] (undefined: it runs no session). */
export function sessionCounts(lines: readonly Pick<WorkerEvent, 'event' | 'at'>[], from: number, to: number): SessionStats | undefined {
  const counted = lines.filter((e) => e.event === 'requests' && e.at >= from && e.at <= to).map((e) => (e as { session?: SessionStats }).session);
  const first = counted[0];
  const last = counted.at(-1);
  if (!first || !last) return undefined;
  return { started: last.started - first.started, renewals: last.renewals - first.renewals, failedRenewals: last.failedRenewals - first.failedRenewals, foreignWrites: (last.foreignWrites ?? 0) - (first.foreignWrites ?? 0), lostAnswers: (last.lostAnswers ?? 0) - (first.lostAnswers ?? 0), ended: last.ended - first.ended };
}

export async function multiLease(ctx: BenchContext, opts: BenchOptions): Promise<ScenarioResult> {
  const c = new Collector('multi-lease');
  const n = opts.multiLeases ?? (opts.quick ? 10 : 100);
  const windowMs = opts.windowMs ?? (opts.quick ? 30_000 : 120_000);
  const timing = MODES.default.timing;
  const sessions = opts.session;
  const what = `steady state, many leases per process · ${PROCESSES} processes, each a candidate on all ${n} leases, ${sessions ? 'one session each' : 'no sessions (--no-session)'}, ${describeMode('default')}, per lease`;
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
          { endpoint: ctx.endpoint, tablePrefix: prefix, pushUrl: rt.pushEndpoint, extra: { LEASE_COUNT: String(n), COUNT_REQUESTS_EVERY_MS: String(REPORT_EVERY_MS), SESSION: sessions ? 'on' : 'off' } },
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
    if (!(await functionsQuiet(meter, QUIET_MS, 180_000))) c.record('warning', { message: `the functions were never quiet for ${QUIET_MS / 1000} s before the window: what they did is in it` });

    const pushBefore = rt.pushBroker?.stats();
    const { t0, t1, ticks, tickDeltas, windowTotal } = await tickWindow(rt, coordinator, windowMs, TICK_EVERY_MS);
    const pushAfter = rt.pushBroker?.stats();

    const moved = lines().filter((e) => (e.event === 'started' || e.event === 'stopped') && e.at >= t0 && e.at <= t1);
    if (moved.length) c.record('warning', { message: `leadership changed ${moved.length} time(s) inside the window`, events: moved });
    const leaders = leadersByLease(lines());
    const perProcess = workers.map((w) => [...leaders.values()].filter((s) => s.has(w.identity)).length);
    const ids = workers.map((w) => w.identity);
    const scanned: { holderIdentity?: string | undefined; session?: string | undefined; successor?: string | undefined }[] = [];
    for await (const page of new LeaseStore(ctx.observer, rt.tables.leases).scan()) for (const x of page) if (x.ok) scanned.push(x.item);
    const landed = landing(scanned, ids);
    const sessionsInWindow = Object.fromEntries(workers.map((w) => [w.identity, sessionCounts(w.events, t0, t1)]));
    if (sessions) {
      if (landed.withoutSession > 0) c.record('warning', { message: `${landed.withoutSession} of ${n} leases held without a session at the window's end` });
      const troubled = Object.entries(sessionsInWindow).filter(([, s]) => !s || s.failedRenewals > 0 || s.ended > 0 || s.started > 0);
      if (troubled.length) c.record('warning', { message: `sessions not steady inside the window: ${troubled.map(([id, s]) => `${id} ${JSON.stringify(s)}`).join('; ')}` });
    }
    const errors = lines().filter((e) => e.event === 'error' && e.at >= t0 && e.at <= t1);
    if (errors.length) c.record('warning', { message: `${errors.length} error line(s) from the workers inside the window`, events: errors.slice(0, 20) });
    // Before the window (start-up, settling): a session that ended then shows only as a row the coordinator collects.
    const earlyErrors = lines().filter((e) => e.event === 'error' && e.at < t0);

    // Workers: the sum over the processes, per lease.
    const measured = workers.map((w) => workerRates(w, t0, t1));
    const workerPerLease = scaleRates(sumRates(measured.map((m) => m.rates)), 1 / n);
    // Each process's own share, per lease of the deployment: who sends what.
    const perProcessRates = Object.fromEntries(workers.map((w, i) => [w.identity, Object.fromEntries(Object.entries(scaleRates(measured[i]!.rates, 1 / n)).sort(byRoleOrder))]));
    const tickMean = perMinute(addTallies(...tickDeltas), ticks)['coordinator'] ?? ZERO;
    const others = diffTallies(windowTotal, addTallies(...tickDeltas))['coordinator'] ?? ZERO;
    const windowMinutes = (t1 - t0) / 60_000;
    const coordinatorPerLease: Rate = {
      requests: (tickMean.requests + others.requests / windowMinutes) / n,
      rru: (tickMean.rru + others.rru / windowMinutes) / n,
      wru: (tickMean.wru + others.wru / windowMinutes) / n,
      commands: Object.fromEntries(Object.entries(tickMean.commands).map(([k, v]) => [k, v / n])),
    };
    const { oneRenewal, invocationMs, invokes: candidateInvokes } = await candidateRenewalCost(ctx.endpoint, rt, meter, `${stem}-0`, 'p1');
    // a candidate on a live session renews its own row every ON_SESSION_RENEW_MS (its session's renewals show it alive)
    const renewalsPerMinute = (PROCESSES * 60_000) / (sessions ? ON_SESSION_RENEW_MS : CANDIDATE_RENEW_MS);
    const renewed = withScheduledRenewals(workerPerLease['candidate'] ?? ZERO, renewalsPerMinute, oneRenewal);
    // … and on a session, the reads of their rows every renewIntervalMs (the first is 10 minutes after registration: after the window)
    const candidate = sessions ? withScheduledChecks(renewed, (PROCESSES * 60_000) / CANDIDATE_RENEW_MS) : renewed;
    const roles = Object.fromEntries(Object.entries({ ...workerPerLease, candidate, coordinator: coordinatorPerLease }).sort(byRoleOrder));
    const total = Object.values(roles).reduce((a, r) => ({ requests: a.requests + r.requests, rru: a.rru + r.rru, wru: a.wru + r.wru, commands: {} }), { ...ZERO });
    for (const [role, r] of Object.entries(roles)) c.value(what, `conclave · ${roleLabel(role, PROCESSES)}`, r.requests, 'req/min', undefined, `${commandsText(r) || '—'}; ${r.rru.toFixed(3)} RRU + ${r.wru.toFixed(3)} WRU /min`);
    c.value(what, 'conclave · total', total.requests, 'req/min', undefined, `${total.rru.toFixed(2)} RRU + ${total.wru.toFixed(2)} WRU /min; leases led per process: ${perProcess.join(', ')}${sessions ? `; on each process's session: ${ids.map((id) => landed.onSession[id]).join(', ')}` : ''}; successor of: ${ids.map((id) => landed.successorOf[id]).join(', ')}`);

    const inWindow = meter.between(t0, t1);
    const lambda = addUse(lambdaPerLease(inWindow, { windowMinutes, ticks, leasesTicked: n, leasesLive: n }), scaleUse(lambdaUse([{ fn: 'candidateStream', at: 0, ms: invocationMs }]), renewalsPerMinute * candidateInvokes));
    const published = eventsPerLease(rt.events, inWindow, t0, t1, n);
    // IoT Core: one connection per process, shared by its n electors: 3 connections spread over the n leases
    const iot = pushBefore && pushAfter ? iotPerLease(pushBefore, pushAfter, { windowMinutes, leases: n }) : undefined;
    if (iot && Math.abs(iot.connections * n - PROCESSES) > 0.05)
      c.record('warning', { message: `the push broker held ${(iot.connections * n).toFixed(2)} connections on average in the window, not one per process (${PROCESSES})` });
    const dollars = costFigures(c, what, 'conclave', { dynamo: roles, lambda, ...published, leasesInDeployment: n, ...(iot ? { iot } : {}) }, { text: `≤ $0.05 per lease-month (${n} leases × ${PROCESSES} processes)`, max: 0.05 });

    c.record('rates', { system: 'conclave', scenario: 'multi-lease', leases: n, processes: PROCESSES, windowMs, settlingTick: settling, perLease: roles, total, ticks, tickMean, coordinatorOthers: others, oneCandidateRenewal: oneRenewal, candidateInvocationMs: invocationMs, candidateRenewalInvokes: candidateInvokes, lambdaPerLease: lambda, ...published, leasesLedPerProcess: perProcess, perProcessPerLease: perProcessRates, landing: landed, session: sessions, sessionsInWindow, errorsBeforeWindow: { count: earlyErrors.length, first: earlyErrors.slice(0, 10) }, push: ctx.push, ...(iot ? { iotPerLease: iot, pushBroker: { before: pushBefore, after: pushAfter } } : {}), dollarsPerLeaseMonth: dollars });
    ctx.log(`  settling tick (${n} leases): ${settling ? `${settling.requests} requests (${Object.entries(settling.commands).map(([k, v]) => `${k} ${v}`).join(', ')})` : 'no requests'}; leases led per process (${ids.join(', ')}): ${perProcess.join(', ')}; successor of: ${ids.map((id) => landed.successorOf[id]).join(', ')}`);
    ctx.log(
      sessions
        ? `  sessions: leases held on each process's session ${ids.map((id) => landed.onSession[id]).join(', ')} (${landed.withoutSession} held without one); in the window ${ids.map((id) => `${id} ${sessionsInWindow[id] ? `${sessionsInWindow[id].renewals} renewals, ${sessionsInWindow[id].failedRenewals} failed, ${sessionsInWindow[id].ended} ended` : 'no counts'}`).join('; ')}`
        : '  no sessions (--no-session): every leader renews its own lease',
    );
    ctx.log(`  ${total.requests.toFixed(2)} req/min per lease (${Object.entries(roles).map(([role, r]) => `${role} ${r.requests.toFixed(3)}`).join(', ')}); $${dollars.toFixed(4)} per lease-month`);
    if (earlyErrors.length) ctx.log(`  ${earlyErrors.length} error line(s) from the workers before the window, the first: ${(earlyErrors[0] as { message?: string }).message ?? '?'}`);
    for (const [id, rs] of Object.entries(perProcessRates)) ctx.log(`  ${id}'s requests per lease per minute: ${Object.entries(rs).map(([role, r]) => `${role} ${r.requests.toFixed(3)} (${commandsText(r)})`).join(', ') || 'none'}`);
    ctx.log(`  ${iot ? `IoT Core per lease: ${iotText(iot)}` : 'no push path (--no-push): no IoT Core'}`);
  } finally {
    await Promise.all(workers.map((w) => w.stop()));
    await dropRuntime(ctx.observer, rt);
  }
  return c;
}

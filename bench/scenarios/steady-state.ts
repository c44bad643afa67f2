/**
 * Steady-state cost: DynamoDB requests per minute per lease, by kind, and dollars per lease-month
 * by kind on one price sheet (DynamoDB, Lambda, EventBridge, SQS, IoT Core), while nothing happens. Real
 * worker processes (client-go timing, 15 s / 10 s / 2 s; one lease per process) stand for a few
 * leases, each counting its own requests by role with SDK middleware (COUNT_REQUESTS_EVERY_MS;
 * Conclave's workers through bench/counting-worker.ts, which tells the designated successor's
 * reads from the other followers'); the other leases of a 100-lease table are seeded (held,
 * healthy, 3 candidates each) so the coordinator's tick scans a table of the size priced. The
 * coordinator's requests are counted on the runtime's own client; its tick runs once a minute as
 * scheduled in AWS. Every Lambda invocation goes through the runtime's intercept hook
 * (bench/lambda.ts). Conclave's workers take the push path (unless `--no-push`): each process
 * holds one connection to the runtime's push broker, whose counts over the window (connection
 * time, wakes published, deliveries) are IoT Core's bill, spread over the leases with live
 * workers. The baseline's workers run in the same window.
 */
import { join } from 'node:path';
import { startLocalRuntime } from '../../lib/local/runtime.js';
import { LeaseCandidateOptionsSchema } from '../../lib/sdk/candidate.js';
import { baselineTableName, createBaselineTable } from '../baseline/table.js';
import { describeMode, dropRuntime, Group, sleep, type BenchContext, type BenchOptions, type System } from '../fleet.js';
import { addUse, LambdaMeter, lambdaUse, scaleUse } from '../lambda.js';
import { dollarsPerMonth } from '../prices.js';
import { Collector, type ScenarioResult } from '../report.js';
import { addTallies, diffTallies, RequestCounter } from '../requests.js';
import { seedLeases } from '../seed.js';
import { byRoleOrder, candidateRenewalCost, functionsQuiet, QUIET_MS, tickWindow, commandsText, costFigures, eventsPerLease, iotPerLease, iotText, lambdaPerLease, perMinute, scaleRate, sumRates, withScheduledRenewals, workerRates, writesOf, ZERO, type Rate, type Rates } from './rates.js';

const LEASES = 100;
const CANDIDATES = 3;
/** Workers print their running counts this often: the window's ends fall at most this far from a count. */
const REPORT_EVERY_MS = 1_000;
const TICK_EVERY_MS = 60_000;
/** The SDK's own candidate renewal interval (KEP-4355: 5 minutes). */
export const CANDIDATE_RENEW_MS = LeaseCandidateOptionsSchema.shape.renewIntervalMs.parse(undefined);

/** What a role is called in the figures. */
export const roleLabel = (role: string, candidates: number): string =>
  ({ leader: 'leader', successor: 'successor (the designated one)', follower: 'followers (others)', candidate: `candidates (${candidates})`, identity: 'identity heartbeats', 'session-renewal': 'session renewals (one row per process)', 'session-read': 'session reads', coordinator: 'coordinator' })[role] ?? role;

export async function steadyState(ctx: BenchContext, opts: BenchOptions): Promise<ScenarioResult> {
  const c = new Collector('steady-state');
  const windowMs = opts.windowMs ?? (opts.quick ? 30_000 : 120_000);
  const realLeases = opts.quick ? 1 : 2;
  const what = `steady state · ${LEASES} leases × ${CANDIDATES} candidates, ${describeMode('default')}, per lease`;
  ctx.log(`\n▸ ${what}: ${realLeases} lease(s) with real workers per system, a ${windowMs / 1000} s window`);

  // Its own tables (a table of exactly 100 leases) and no scheduled tick: the window runs its ticks at a known rate.
  const meter = new LambdaMeter();
  const rt = await startLocalRuntime({ endpoint: ctx.endpoint, prefix: ctx.unique('bench-steady'), dir: join(ctx.dir, 'steady'), tickEveryMs: 2 ** 31 - 1, logLevel: 'SILENT', push: ctx.push, intercept: meter.intercept() });
  const prefix = rt.tables.leases.replace(/-leases$/, '');
  const coordinator = new RequestCounter().attach(rt.client, () => 'coordinator');
  const groups: Group[] = [];
  try {
    await createBaselineTable(ctx.observer, baselineTableName(prefix));
    await seedLeases(ctx.observer, rt.tables, { stem: 'seeded', count: LEASES - realLeases, candidatesPerLease: CANDIDATES, state: 'held' });
    const env = { COUNT_REQUESTS_EVERY_MS: String(REPORT_EVERY_MS) };
    for (const system of ['conclave', 'baseline'] as const) {
      for (let i = 0; i < realLeases; i++) groups.push(await new Group(ctx, system, 'default', ctx.unique(`steady-${system}`), rt, { env }).addMany(CANDIDATES));
    }
    await Promise.all(groups.map((g) => g.settle()));
    // One settling tick before the window: whatever the coordinator keeps on a healthy lease and
    // the seeded rows lack (a designated successor, say) is written once here, not counted as
    // steady state. Reported beside the window's ticks.
    const beforeSettling = coordinator.snapshot();
    await rt.tick();
    const settling = diffTallies(coordinator.snapshot(), beforeSettling)['coordinator'];
    await sleep(REPORT_EVERY_MS + 1_000); // every worker has printed its counts at least once since
    if (!(await functionsQuiet(meter, QUIET_MS, 180_000))) c.record('warning', { message: `the functions were never quiet for ${QUIET_MS / 1000} s before the window: what they did is in it` });

    const pushBefore = rt.pushBroker?.stats();
    const { t0, t1, ticks, tickDeltas, windowTotal } = await tickWindow(rt, coordinator, windowMs, TICK_EVERY_MS);
    const pushAfter = rt.pushBroker?.stats();

    // Leadership must not have moved inside the window, or the roles would be mixed.
    for (const g of groups) {
      const moved = g.workers.flatMap((w) => w.events).filter((e) => (e.event === 'started' || e.event === 'stopped') && e.at >= t0 && e.at <= t1);
      if (moved.length) c.record('warning', { lease: g.lease, message: 'leadership changed inside the window', events: moved });
    }

    // Workers: per lease, the sum over its workers; then the mean over the leases of a system.
    const perLease = (system: System): { rates: Rates; minutes: number } => {
      const gs = groups.filter((g) => g.system === system);
      const each = gs.map((g) => g.workers.map((w) => workerRates(w, t0, t1)));
      const minutes = Math.min(...each.flat().map((x) => x.minutes));
      const leases = each.map((ws) => sumRates(ws.map((x) => x.rates)));
      const mean = sumRates(leases);
      return { rates: Object.fromEntries(Object.entries(mean).map(([role, r]) => [role, scaleRate(r, 1 / gs.length)])), minutes };
    };

    // Coordinator: the tick's cost once a minute (as scheduled in AWS) plus whatever the streams
    // and the timer did in the window, spread over the 100 leases.
    const tickMean = perMinute(addTallies(...tickDeltas), ticks)['coordinator'] ?? ZERO;
    const others = diffTallies(windowTotal, addTallies(...tickDeltas))['coordinator'] ?? ZERO;
    const coordinatorPerLease = scaleRate(
      { requests: tickMean.requests + others.requests / (windowMs / 60_000), rru: tickMean.rru + others.rru / (windowMs / 60_000), wru: tickMean.wru + others.wru / (windowMs / 60_000), commands: tickMean.commands },
      1 / LEASES,
    );

    const conclave = perLease('conclave');
    const sample = groups.find((g) => g.system === 'conclave')!;
    const { oneRenewal, invocationMs: candidateInvocationMs, invokes: candidateInvokes } = await candidateRenewalCost(ctx.endpoint, rt, meter, sample.lease, 'w1');
    const renewalsPerMinute = (CANDIDATES * 60_000) / CANDIDATE_RENEW_MS;
    const measuredCandidate = conclave.rates['candidate'] ?? ZERO;
    const candidate = withScheduledRenewals(measuredCandidate, renewalsPerMinute, oneRenewal);

    const roles: Rates = { ...conclave.rates, candidate, coordinator: coordinatorPerLease };
    const notes: Record<string, string> = {
      candidate: `scheduled renewals: 1 per ${CANDIDATE_RENEW_MS / 60_000} min each, ${oneRenewal.wru} WRU measured per renewal; in the window: ${measuredCandidate.requests.toFixed(2)}/min`,
      coordinator: `one tick a minute: ${Object.entries(tickMean.commands).map(([k, v]) => `${k} ${v}`).join(', ')} for the ${LEASES} leases; streams and timer in the window: ${others.requests} requests`,
    };
    const kinds = (Object.entries(roles) as [string, Rate][]).sort(byRoleOrder);
    const total = kinds.reduce((a, [, r]) => ({ requests: a.requests + r.requests, rru: a.rru + r.rru, wru: a.wru + r.wru, commands: {} }), { ...ZERO });
    const writes = kinds.reduce((a, [, r]) => a + writesOf(r), 0);
    for (const [role, r] of kinds) c.value(what, `conclave · ${roleLabel(role, CANDIDATES)}`, r.requests, 'req/min', undefined, `${commandsText(r) || '—'}; ${r.rru.toFixed(2)} RRU + ${r.wru.toFixed(2)} WRU /min${notes[role] ? `; ${notes[role]}` : ''}`);
    c.value(what, 'conclave · total', total.requests, 'req/min', { text: '≤ 31 req/min per lease', met: total.requests <= 31 }, `of which writes ${writes.toFixed(2)}/min; ${total.rru.toFixed(2)} RRU + ${total.wru.toFixed(2)} WRU /min`);

    // Lambda in the window, per lease, plus the candidate stream's invocations the scheduled renewals set off.
    const windowMinutes = (t1 - t0) / 60_000;
    const inWindow = meter.between(t0, t1);
    const lambda = addUse(
      lambdaPerLease(inWindow, { windowMinutes, ticks, leasesTicked: LEASES, leasesLive: realLeases }),
      scaleUse(lambdaUse([{ fn: 'candidateStream', at: 0, ms: candidateInvocationMs }]), renewalsPerMinute * candidateInvokes),
    );
    const published = eventsPerLease(rt.events, inWindow, t0, t1, realLeases);
    // IoT Core: each Conclave worker process holds one connection; the window's counts, spread over the leases with live workers
    const iot = pushBefore && pushAfter ? iotPerLease(pushBefore, pushAfter, { windowMinutes, leases: realLeases }) : undefined;
    const processes = groups.filter((g) => g.system === 'conclave').reduce((a, g) => a + g.workers.length, 0);
    if (iot && Math.abs(iot.connections * realLeases - processes) > 0.05)
      c.record('warning', { message: `the push broker held ${(iot.connections * realLeases).toFixed(2)} connections on average in the window, not one per Conclave worker process (${processes})` });
    const dollarsPerLease = costFigures(c, what, 'conclave', { dynamo: Object.fromEntries(kinds), lambda, ...published, leasesInDeployment: LEASES, ...(iot ? { iot } : {}) }, { text: '≤ $0.40 per lease-month (1 lease per process)', max: 0.4 });
    const conclaveDollars = dollarsPerMonth(total.wru * LEASES, total.rru * LEASES);
    c.value(what, `conclave · DynamoDB $ a month for ${LEASES} leases × ${CANDIDATES}`, conclaveDollars, '$');

    const baseline = perLease('baseline');
    const bLeader = baseline.rates['leader'] ?? ZERO;
    const bFollower = baseline.rates['follower'] ?? ZERO;
    c.value(what, 'baseline · leader', bLeader.requests, 'req/min', undefined, `${commandsText(bLeader)}; ${bLeader.rru.toFixed(2)} RRU + ${bLeader.wru.toFixed(2)} WRU /min`);
    c.value(what, `baseline · followers (${CANDIDATES - 1})`, bFollower.requests, 'req/min', undefined, `${commandsText(bFollower)}; ${bFollower.rru.toFixed(2)} RRU + ${bFollower.wru.toFixed(2)} WRU /min`);
    c.value(what, 'baseline · total', bLeader.requests + bFollower.requests, 'req/min');
    c.value(what, 'baseline · $/lease-month (DynamoDB; nothing else)', dollarsPerMonth(bLeader.wru + bFollower.wru, bLeader.rru + bFollower.rru), '$/lease-month');
    c.value(what, `baseline · DynamoDB $ a month for ${LEASES} leases × ${CANDIDATES}`, dollarsPerMonth((bLeader.wru + bFollower.wru) * LEASES, (bLeader.rru + bFollower.rru) * LEASES), '$');

    c.record('rates', { system: 'conclave', windowMs, settlingTick: settling, measuredMinutes: conclave.minutes, leases: realLeases, perLease: roles, total, ticks, tickMean, coordinatorOthers: others, oneCandidateRenewal: oneRenewal, candidateInvocationMs, candidateRenewalInvokes: candidateInvokes, lambdaPerLease: lambda, ...published, push: ctx.push, ...(iot ? { iotPerLease: iot, pushBroker: { before: pushBefore, after: pushAfter } } : {}), dollarsPerLeaseMonth: dollarsPerLease, dollarsPerMonth: conclaveDollars });
    c.record('rates', { system: 'baseline', windowMs, measuredMinutes: baseline.minutes, leases: realLeases, perLease: baseline.rates });
    ctx.log(`  settling tick before the window (${LEASES} leases): ${settling ? `${settling.requests} requests (${Object.entries(settling.commands).map(([k, v]) => `${k} ${v}`).join(', ')})` : 'no requests'}`);
    ctx.log(`  conclave: ${total.requests.toFixed(1)} req/min per lease (${kinds.map(([role, r]) => `${role} ${r.requests.toFixed(role === 'coordinator' ? 3 : 2)}`).join(', ')}); $${dollarsPerLease.toFixed(3)} per lease-month; baseline: ${(bLeader.requests + bFollower.requests).toFixed(1)} req/min`);
    ctx.log(`  lambda per lease per minute: ${Object.entries(lambda).map(([fn, u]) => `${fn} ${u.invocations.toFixed(3)} inv, ${u.gbSeconds.toFixed(4)} GB-s`).join('; ') || 'none'}`);
    ctx.log(`  ${iot ? `IoT Core per lease: ${iotText(iot)}` : 'no push path (--no-push): no IoT Core'}`);
  } finally {
    await Promise.all(groups.map((g) => g.close()));
    await dropRuntime(ctx.observer, rt);
  }
  return c;
}

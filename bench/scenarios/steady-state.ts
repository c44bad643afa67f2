/**
 * Steady-state cost: DynamoDB requests per minute per lease, by kind, while nothing happens.
 * Real worker processes (client-go timing, 15 s / 10 s / 2 s) stand for a few leases, each
 * counting its own requests by role with SDK middleware (COUNT_REQUESTS_EVERY_MS; Conclave's
 * workers through bench/counting-worker.ts); the other leases of a 100-lease table are seeded
 * (held, healthy, 3 candidates each) so the coordinator's tick scans a table of the size priced. The coordinator's requests are counted on the runtime's
 * own client; its tick runs once a minute as scheduled in AWS. The baseline's workers run in the
 * same window.
 */
import { join } from 'node:path';
import { localClient } from '../../lib/local/dynamodb-local.js';
import { startLocalRuntime } from '../../lib/local/runtime.js';
import type { WorkerEvent, WorkerProcess } from '../../lib/local/worker-process.js';
import { LeaseCandidateOptionsSchema } from '../../lib/sdk/candidate.js';
import { CandidateStore } from '../../lib/stores/candidate-store.js';
import { baselineTableName, createBaselineTable } from '../baseline/table.js';
import { describeMode, dropRuntime, Group, sleep, type BenchContext, type BenchOptions, type System } from '../fleet.js';
import { describePrices, dollarsPerMonth } from '../prices.js';
import { Collector, type ScenarioResult } from '../report.js';
import { addTallies, diffTallies, READ_COMMANDS, RequestCounter, type Tallies } from '../requests.js';
import { seedLeases } from '../seed.js';

const LEASES = 100;
const CANDIDATES = 3;
/** Workers print their running counts this often: the window's ends fall at most this far from a count. */
const REPORT_EVERY_MS = 1_000;
const TICK_EVERY_MS = 60_000;
/** The SDK's own candidate renewal interval (KEP-4355: 5 minutes). */
const CANDIDATE_RENEW_MS = LeaseCandidateOptionsSchema.shape.renewIntervalMs.parse(undefined);

interface Rate {
  requests: number;
  rru: number;
  wru: number;
  commands: Record<string, number>;
}
type Rates = Record<string, Rate>;

const perMinute = (t: Tallies, minutes: number): Rates =>
  Object.fromEntries(Object.entries(t).map(([role, x]) => [role, { requests: x.requests / minutes, rru: x.rru / minutes, wru: x.wru / minutes, commands: Object.fromEntries(Object.entries(x.commands).map(([c, n]) => [c, n / minutes])) }]));

/** A worker's requests between its first and last `requests` line inside the window, per minute. */
function workerRates(w: WorkerProcess, from: number, to: number): { rates: Rates; minutes: number } {
  const lines = w.events.filter((e): e is WorkerEvent & { requests: Tallies } => e.event === 'requests' && e.requests !== undefined && e.at >= from && e.at <= to);
  const first = lines[0];
  const last = lines.at(-1);
  if (!first || !last || last === first) throw new Error(`${w.identity}: fewer than two request counts inside the window`);
  const minutes = (last.at - first.at) / 60_000;
  return { rates: perMinute(diffTallies(last.requests, first.requests), minutes), minutes };
}

const sum = (rs: Rates[]): Rates => {
  const out: Rates = {};
  for (const r of rs) {
    for (const [role, x] of Object.entries(r)) {
      const o = (out[role] ??= { requests: 0, rru: 0, wru: 0, commands: {} });
      o.requests += x.requests;
      o.rru += x.rru;
      o.wru += x.wru;
      for (const [c, n] of Object.entries(x.commands)) o.commands[c] = (o.commands[c] ?? 0) + n;
    }
  }
  return out;
};
const scale = (r: Rate, k: number): Rate => ({ requests: r.requests * k, rru: r.rru * k, wru: r.wru * k, commands: Object.fromEntries(Object.entries(r.commands).map(([c, n]) => [c, n * k])) });
const ZERO: Rate = { requests: 0, rru: 0, wru: 0, commands: {} };
const writesOf = (r: Rate) => Object.entries(r.commands).reduce((a, [c, n]) => a + (READ_COMMANDS.has(c) ? 0 : n), 0);
const commandsText = (r: Rate) => Object.entries(r.commands).map(([c, n]) => `${c} ${n.toFixed(2)}`).join(', ');

export async function steadyState(ctx: BenchContext, opts: BenchOptions): Promise<ScenarioResult> {
  const c = new Collector('steady-state');
  const windowMs = opts.windowMs ?? (opts.quick ? 30_000 : 120_000);
  const realLeases = opts.quick ? 1 : 2;
  const what = `steady state · ${LEASES} leases × ${CANDIDATES} candidates, ${describeMode('default')}, per lease`;
  ctx.log(`\n▸ ${what}: ${realLeases} lease(s) with real workers per system, a ${windowMs / 1000} s window`);

  // Its own tables (a table of exactly 100 leases) and no scheduled tick: the window runs its ticks at a known rate.
  const rt = await startLocalRuntime({ endpoint: ctx.endpoint, prefix: ctx.unique('bench-steady'), dir: join(ctx.dir, 'steady'), tickEveryMs: 2 ** 31 - 1, logLevel: 'SILENT' });
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

    const t0 = Date.now();
    const atStart = coordinator.snapshot();
    const ticks = Math.max(1, Math.round(windowMs / TICK_EVERY_MS));
    const tickDeltas: Tallies[] = [];
    for (let k = 0; k < ticks; k++) {
      await sleep(t0 + ((k + 0.5) * windowMs) / ticks - Date.now());
      const before = coordinator.snapshot();
      await rt.tick();
      tickDeltas.push(diffTallies(coordinator.snapshot(), before));
    }
    await sleep(t0 + windowMs - Date.now());
    const t1 = Date.now();
    const windowTotal = diffTallies(coordinator.snapshot(), atStart);

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
      const leases = each.map((ws) => sum(ws.map((x) => x.rates)));
      const mean = sum(leases);
      return { rates: Object.fromEntries(Object.entries(mean).map(([role, r]) => [role, scale(r, 1 / gs.length)])), minutes };
    };

    // Coordinator: the tick's cost once a minute (as scheduled in AWS) plus whatever the streams
    // and the timer did in the window, spread over the 100 leases.
    const tickMean = perMinute(addTallies(...tickDeltas), ticks)['coordinator'] ?? ZERO;
    const others = diffTallies(windowTotal, addTallies(...tickDeltas))['coordinator'] ?? ZERO;
    const coordinatorPerLease = scale(
      { requests: tickMean.requests + others.requests / (windowMs / 60_000), rru: tickMean.rru + others.rru / (windowMs / 60_000), wru: tickMean.wru + others.wru / (windowMs / 60_000), commands: tickMean.commands },
      1 / LEASES,
    );

    // Candidates renew on a timer (5 minutes): none falls in a 2-minute window started fresh. The
    // rate is the SDK's schedule; the cost of one renewal is measured on a live candidate row.
    const conclave = perLease('conclave');
    const probe = new RequestCounter();
    const probeClient = localClient(ctx.endpoint);
    probe.attach(probeClient, () => 'candidate');
    const sample = groups.find((g) => g.system === 'conclave')!;
    await new CandidateStore(probeClient, rt.tables.candidates).renew(sample.lease, 'w1', Date.now(), Math.ceil((Date.now() + 3_600_000) / 1000));
    probeClient.destroy();
    const oneRenewal = probe.snapshot()['candidate']!;
    const renewalsPerMinute = (CANDIDATES * 60_000) / CANDIDATE_RENEW_MS;
    const measuredCandidate = conclave.rates['candidate'] ?? ZERO;
    const candidate: Rate = {
      requests: measuredCandidate.requests + renewalsPerMinute,
      rru: measuredCandidate.rru,
      wru: measuredCandidate.wru + renewalsPerMinute * oneRenewal.wru,
      commands: { ...measuredCandidate.commands, UpdateItem: (measuredCandidate.commands['UpdateItem'] ?? 0) + renewalsPerMinute },
    };

    const kinds: [string, Rate, string][] = [
      ['leader', conclave.rates['leader'] ?? ZERO, ''],
      [`followers (${CANDIDATES - 1})`, conclave.rates['follower'] ?? ZERO, ''],
      [`candidates (${CANDIDATES})`, candidate, `scheduled renewals: 1 per ${CANDIDATE_RENEW_MS / 60_000} min each, ${oneRenewal.wru} WRU measured per renewal; in the window: ${measuredCandidate.requests.toFixed(2)}/min`],
      ['coordinator', coordinatorPerLease, `one tick a minute: ${Object.entries(tickMean.commands).map(([k, v]) => `${k} ${v}`).join(', ')} for the ${LEASES} leases; streams and timer in the window: ${others.requests} requests`],
    ];
    const total = kinds.reduce((a, [, r]) => ({ requests: a.requests + r.requests, rru: a.rru + r.rru, wru: a.wru + r.wru, commands: {} }), { ...ZERO });
    const writes = kinds.reduce((a, [, r]) => a + writesOf(r), 0);
    for (const [kind, r, note] of kinds) c.value(what, `conclave · ${kind}`, r.requests, 'req/min', undefined, `${commandsText(r) || '—'}; ${r.rru.toFixed(2)} RRU + ${r.wru.toFixed(2)} WRU /min${note ? `; ${note}` : ''}`);
    c.value(what, 'conclave · total', total.requests, 'req/min', { text: '≤ 31 req/min per lease', met: total.requests <= 31 }, `of which writes ${writes.toFixed(2)}/min; ${total.rru.toFixed(2)} RRU + ${total.wru.toFixed(2)} WRU /min`);
    const conclaveDollars = dollarsPerMonth(total.wru * LEASES, total.rru * LEASES);
    c.value(what, `conclave · $ a month for ${LEASES} leases × ${CANDIDATES}`, conclaveDollars, '$', undefined, describePrices());

    const baseline = perLease('baseline');
    const bLeader = baseline.rates['leader'] ?? ZERO;
    const bFollower = baseline.rates['follower'] ?? ZERO;
    c.value(what, 'baseline · leader', bLeader.requests, 'req/min', undefined, `${commandsText(bLeader)}; ${bLeader.rru.toFixed(2)} RRU + ${bLeader.wru.toFixed(2)} WRU /min`);
    c.value(what, `baseline · followers (${CANDIDATES - 1})`, bFollower.requests, 'req/min', undefined, `${commandsText(bFollower)}; ${bFollower.rru.toFixed(2)} RRU + ${bFollower.wru.toFixed(2)} WRU /min`);
    c.value(what, 'baseline · total', bLeader.requests + bFollower.requests, 'req/min');
    c.value(what, `baseline · $ a month for ${LEASES} leases × ${CANDIDATES}`, dollarsPerMonth((bLeader.wru + bFollower.wru) * LEASES, (bLeader.rru + bFollower.rru) * LEASES), '$', undefined, describePrices());

    c.record('rates', { system: 'conclave', windowMs, settlingTick: settling, measuredMinutes: conclave.minutes, leases: realLeases, perLease: { ...conclave.rates, candidate, coordinator: coordinatorPerLease }, total, ticks, tickMean, coordinatorOthers: others, oneCandidateRenewal: oneRenewal, dollarsPerMonth: conclaveDollars });
    c.record('rates', { system: 'baseline', windowMs, measuredMinutes: baseline.minutes, leases: realLeases, perLease: baseline.rates });
    ctx.log(`  settling tick before the window (${LEASES} leases): ${settling ? `${settling.requests} requests (${Object.entries(settling.commands).map(([k, v]) => `${k} ${v}`).join(', ')})` : 'no requests'}`);
    ctx.log(`  conclave: ${total.requests.toFixed(1)} req/min per lease (leader ${(conclave.rates['leader']?.requests ?? 0).toFixed(1)}, followers ${(conclave.rates['follower']?.requests ?? 0).toFixed(1)}, candidates ${candidate.requests.toFixed(2)}, coordinator ${coordinatorPerLease.requests.toFixed(3)}); baseline: ${(bLeader.requests + bFollower.requests).toFixed(1)}`);
  } finally {
    await Promise.all(groups.map((g) => g.close()));
    await dropRuntime(ctx.observer, rt);
  }
  return c;
}

/**
 * The cost of scale (issue 38, item 5): a model calibrated from real runs, not a simulation — the
 * simulator sends every worker's requests one at a time through its DynamoDB model (about 51,000
 * operations a CPU-second), and 100,000 leases × 1,000 processes are millions of requests per
 * simulated minute for figures that are rates times counts. What it scales: the bench's measured
 * request rates by kind (bench/scale-model.ts' MEASURED), the coordinator's tick timed on DynamoDB
 * Local (bench/scale-calibrate.ts), and who watches whose session, counted by placing every lease.
 * Prints docs/benchmarks.md's "Cost of scale" table, each AWS limit with ✓ or ✗, then each
 * deployment's bill by kind and a busy lease's election.
 *
 *   npx tsx bench/scale.ts                          1, 100, 10,000 and 100,000 leases; random placement
 *   npx tsx bench/scale.ts --placement cells        each lease's candidates one cell of 3 processes
 *   npx tsx bench/scale.ts --placement cells --grants leases   and a role per cell naming its leases
 *   npx tsx bench/scale.ts --parallelization 1      the stream triggers' ParallelizationFactor (default: lib/wiring.ts's)
 *   npx tsx bench/scale.ts --calibration /tmp/cal.jsonl   a calibration run's output instead of CALIBRATION
 *   npx tsx bench/scale.ts --json                   the figures as JSON
 */
import { readFileSync } from 'node:fs';
import { Command, InvalidArgumentError } from 'commander';
import { wiring } from '../lib/wiring.js';
import { busyLease, LIMITS, REGION, scaleFigures, type Calibration, type Deployment, type Placement, type ScaleFigures, type WakeRouting } from './scale-model.js';

/**
 * `calibrationFrom` of two runs of `npx tsx bench/scale-calibrate.ts` on 2026-11-28 on this 2-core
 * machine shared with six other sessions (load average 8–30): `--leases 1000,10000 --vacant-at 1000`
 * from 14:49 UTC (its 10,000-lease half stopped at 15:48, still seeding) and `--leases 3000
 * --vacant-at 1` from 15:48 (docs/benchmarks.md, "Cost of scale", quotes the lines). The unchanged
 * tick: 3.20 s and 0.568 s of CPU at 1,000 leases, 6.45 s and 1.231 s at 3,000.
 */
export const CALIBRATION: Calibration = {
  unchanged: { interceptMs: 1579, msPerLease: 1.623 },
  cpuMsPerLease: 0.3315,
  writeCpuMs: (8990 - 568) / 4000,
  heapMbPerLease: 2.1 / 3000,
  scanRruPerLease: 628 / 3000,
  leaseBytes: 207,
  candidateBytes: 184,
};

/** Least squares y = intercept + slope·x over two or more points. */
function lineFit(points: { x: number; y: number }[]): { intercept: number; slope: number } {
  const n = points.length;
  const mx = points.reduce((a, p) => a + p.x, 0) / n;
  const my = points.reduce((a, p) => a + p.y, 0) / n;
  const sxx = points.reduce((a, p) => a + (p.x - mx) ** 2, 0);
  const slope = sxx === 0 ? 0 : points.reduce((a, p) => a + (p.x - mx) * (p.y - my), 0) / sxx;
  return { intercept: my - slope * mx, slope };
}

/**
 * Reads calibration runs' JSON lines (bench/scale-calibrate.ts; several runs' lines may be
 * concatenated) into a Calibration: with unchanged ticks at two sizes or more, the wall time and
 * the CPU are least-squares lines in the leases (the CPU's slope is what a lease adds); with one,
 * its ratios. The CPU per write is the all-vacant tick less the unchanged one of the same size.
 */
export function calibrationFrom(lines: string[]): Calibration {
  const rows = lines.filter((l) => l.trim()).map((l) => JSON.parse(l) as Record<string, unknown>);
  type Tick = { leases: number; wallMs: number; cpuMs: number; rru: number; wru: number; heapGrowthMb: number };
  const ticks = rows.filter((r) => r['type'] === 'tick' && r['label'] === 'unchanged') as Tick[];
  const vacant = rows.find((r) => r['type'] === 'tick' && r['label'] === 'all vacant') as Tick | undefined;
  const size = rows.find((r) => r['type'] === 'rows') as { leaseBytes: number; candidateBytes: number } | undefined;
  if (!ticks.length || !size) throw new Error('the calibration has no "unchanged" tick or no "rows" line: run npx tsx bench/scale-calibrate.ts and pass its output');
  const largest = ticks.reduce((a, b) => (b.leases > a.leases ? b : a));
  const sameSize = vacant && ticks.find((t) => t.leases === vacant.leases);
  if (!vacant || !sameSize || vacant.wru === 0) throw new Error('the calibration has no "all vacant" tick beside an "unchanged" one of the same size: run npx tsx bench/scale-calibrate.ts with --vacant-at');
  const sizes = new Set(ticks.map((t) => t.leases)).size;
  const wall = sizes >= 2 ? lineFit(ticks.map((t) => ({ x: t.leases, y: t.wallMs }))) : { intercept: 0, slope: largest.wallMs / largest.leases };
  const cpu = sizes >= 2 ? lineFit(ticks.map((t) => ({ x: t.leases, y: t.cpuMs }))).slope : largest.cpuMs / largest.leases;
  return {
    unchanged: { interceptMs: wall.intercept, msPerLease: wall.slope },
    cpuMsPerLease: cpu,
    writeCpuMs: (vacant.cpuMs - sameSize.cpuMs) / vacant.wru,
    heapMbPerLease: largest.heapGrowthMb / largest.leases,
    scanRruPerLease: largest.rru / largest.leases,
    leaseBytes: size.leaseBytes,
    candidateBytes: size.candidateBytes,
  };
}

/** The four deployments of the table: processes grow with leases, 3 candidates a lease. */
export function deployments(placement: Placement, grants?: Deployment['grants']): Deployment[] {
  return [
    { leases: 1, processes: 3, candidatesPerLease: 3, sessions: false, placement, grants: 'leases' },
    { leases: 100, processes: 3, candidatesPerLease: 3, sessions: true, placement, grants: 'leases' },
    // one task role for a whole fleet cannot name 10,000 leases (a role names about 60 with the push
    // path today: bench/scale-iam.ts): workers are granted every lease, unless --grants leases
    { leases: 10_000, processes: 100, candidatesPerLease: 3, sessions: true, placement, grants: grants ?? 'all' },
    { leases: 100_000, processes: 1_000, candidatesPerLease: 3, sessions: true, placement, grants: grants ?? 'all' },
  ];
}

const n = (x: number, digits = 0) => x.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits });
const usd = (x: number) => (x >= 0.1 ? `$${x.toFixed(3)}` : `$${x.toPrecision(2)}`);
const mark = (ok: boolean) => (ok ? '✓' : '✗');

export function table(rows: ScaleFigures[]): string {
  const head = ['', ...rows.map((r) => `${n(r.deployment.leases)} × ${n(r.deployment.processes)}`)];
  const line = (label: string, f: (r: ScaleFigures) => string) => `| ${label} | ${rows.map(f).join(' | ')} |`;
  const timeout = LIMITS.coordinatorTimeoutSeconds.value;
  return [
    `| ${head.join(' | ')} |`,
    `|${head.map(() => '---').join('|')}|`,
    line('**$ per lease-month**', (r) => `**${usd(r.dollarsPerLeaseMonth)}**`),
    line('DynamoDB requests per lease-minute', (r) => n(r.dynamoRequestsPerLeaseMinute, 2)),
    line('of which session reads', (r) => n(r.bill.find((b) => b.kind.startsWith('session reads'))?.perMinute ?? 0, 2)),
    line('tick, nothing to change: DynamoDB Local (fit)', (r) => `${n(r.tick.localSeconds, 1)} s`),
    line('tick round, parts (scan segments)', (r) => n(r.tick.segments)),
    line(`tick round on the 512 MB Lambda, nothing to change (model): work; invocations of ≤ ${n(rows[0]?.tick.budgetSeconds ?? 0)} s (timeout ${timeout} s); every lease within`, (r) => `${n(r.tick.regionSeconds, 1)} s; ${r.tick.invocations}; ${n(r.tick.reachSeconds, 0)} s ✓`),
    line('tick round, every lease vacant (model): work; invocations; every lease within', (r) => `${n(r.tick.regionAllVacantSeconds, 0)} s; ${r.tick.allVacantInvocations}; ${n(r.tick.allVacantReachSeconds, 0)} s ✓`),
    line('tick heap, one part (model) vs 512 MB', (r) => `${n(r.tick.heapMb, 0)} MB ${mark(r.tick.heapMb < 400)}`),
    line('candidate stream: records/s, concurrency', (r) => `${n(r.candidateStream.recordsPerSecond, 2)}/s, ${r.candidateStream.concurrency}`),
    line('candidate stream iterator age: steady / a process restarts', (r) => `${n(r.candidateStream.steadyAgeSeconds, 2)} s / ${n(r.candidateStream.burstAgeSeconds, 1)} s`),
    line('lease stream: records/s, concurrency', (r) => `${n(r.leaseStream.recordsPerSecond, 4)}/s, ${r.leaseStream.concurrency}`),
    line('lease stream iterator age: steady / one process lost', (r) => `${n(r.leaseStream.steadyAgeSeconds, 2)} s / ${n(r.leaseStream.burstAgeSeconds, 1)} s`),
    line(`lease stream iterator age: a third of the processes lost vs ${LIMITS.streamRetentionHours.value * 3600} s (the stream keeps records 24 h)`, (r) => `${n(r.leaseStreamZoneLost.burstAgeSeconds, 0)} s ${mark(r.leaseStreamZoneLost.burstAgeSeconds < LIMITS.streamRetentionHours.value * 3600)}`),
    line('hottest partition writes/s vs 1,000 WCU', (r) => `${n(Math.max(r.partitions.sessionPartitionWritesPerSecond, r.partitions.leaseRowWritesPerSecond), 1)} ${mark(Math.max(r.partitions.sessionPartitionWritesPerSecond, r.partitions.leaseRowWritesPerSecond) < LIMITS.partitionWcu.value)}`),
    line('session partition reads/s vs 3,000 RCU', (r) => `${n(r.partitions.sessionPartitionReadsPerSecond, 0)} ${mark(r.partitions.sessionPartitionReadsPerSecond < LIMITS.partitionRcu.value)}`),
    line('identities table reads/s vs 40,000 (on-demand quota)', (r) => `${n(r.partitions.identitiesTableRcuPerSecond, 0)} ${mark(r.partitions.identitiesTableRcuPerSecond < LIMITS.onDemandTableUnits.value)}`),
    line('IoT subscriptions per connection vs 50', (r) => `${r.iot.subscriptionsPerConnection} ✓`),
    line('IoT deliveries per wake', (r) => n(r.iot.deliveriesPerWake)),
    line('IoT deliveries/s per connection in a burst vs 100', (r) => `${n(r.iot.burstDeliveriesPerConnectionPerSecond, 0)} ${mark(r.iot.burstDeliveriesPerConnectionPerSecond <= LIMITS.iotPublishPerConnection.value)}`),
    line('IoT outbound/s for the account in a burst vs 20,000', (r) => `${n(r.iot.burstOutboundPerSecond, 0)} ${mark(r.iot.burstOutboundPerSecond <= LIMITS.iotOutboundPerAccount.value)}`),
  ].join('\n');
}

export function bill(r: ScaleFigures): string {
  return r.bill
    .filter((b) => b.dollars > 0 || b.perMinute > 0)
    .map((b) => `  ${b.service.padEnd(11)} ${usd(b.dollars).padStart(9)}  ${n(b.perMinute, 3).padStart(9)}/min  ${b.kind}`)
    .join('\n');
}

const program = new Command()
  .name('npx tsx bench/scale.ts')
  .description('The cost of scale: the scale model over 1, 100, 10,000 and 100,000 leases')
  .option('--placement <p>', 'random | cells', (v) => {
    if (v !== 'random' && v !== 'cells') throw new InvalidArgumentError(`--placement is random or cells, got "${v}"`);
    return v as Placement;
  }, 'random' as Placement)
  .option('--parallelization <n>', "the stream triggers' ParallelizationFactor (1–10)", (v) => {
    const k = Number(v);
    if (!Number.isInteger(k) || k < 1 || k > 10) throw new InvalidArgumentError(`--parallelization is a whole number from 1 to 10 (Lambda's range), got "${v}"`);
    return k;
  }, wiring.leaseStream.trigger.parallelizationFactor)
  .option('--grants <g>', 'from 10,000 leases: all (one role grants every lease: the default) | leases (a role per cell naming its leases; with --placement cells)', (v) => {
    if (v !== 'all' && v !== 'leases') throw new InvalidArgumentError(`--grants is all or leases, got "${v}"`);
    return v as Deployment['grants'];
  })
  .option('--wakes <w>', 'lease (channels on every wake: PushChannel without session) | process (channels given their Session: wakes to each candidate\'s process) | coalesced (the same, a stream invocation\'s wakes to one process in one message: designed, not built)', (v) => {
    if (v !== 'lease' && v !== 'process' && v !== 'coalesced') throw new InvalidArgumentError(`--wakes is lease, process or coalesced, got "${v}"`);
    return v as WakeRouting;
  }, 'lease' as WakeRouting)
  .option('--calibration <file>', "a calibration run's JSON lines (bench/scale-calibrate.ts)")
  .option('--json', 'print the figures as JSON');

if (import.meta.url === `file://${process.argv[1]}`) {
  program.parse(process.argv);
  const o = program.opts<{ placement: Placement; parallelization: number; grants?: Deployment['grants']; wakes: WakeRouting; calibration?: string; json?: boolean }>();
  const cal = o.calibration ? calibrationFrom(readFileSync(o.calibration, 'utf8').split('\n')) : CALIBRATION;
  const rows = deployments(o.placement, o.grants).map((d) => scaleFigures(d, cal, REGION, { parallelization: o.parallelization, wakes: o.wakes }));
  if (o.json) process.stdout.write(`${JSON.stringify(rows, null, 2)}\n`);
  else {
    process.stdout.write(`The cost of scale: ${o.placement} placement, 3 candidates a lease, stream parallelization ${o.parallelization}; wakes ${o.wakes === 'process' ? 'to processes (PushChannel with session)' : o.wakes === 'coalesced' ? 'to processes, coalesced (designed, not built)' : 'to every channel (PushChannel without session)'}; sessions from 100 leases; ${o.grants === 'leases' ? 'each worker granted its own leases' : 'workers granted every lease from 10,000'}\n\n${table(rows)}\n`);
    for (const r of rows) process.stdout.write(`\n${n(r.deployment.leases)} leases × ${n(r.deployment.processes)} processes: ${usd(r.dollarsPerLeaseMonth)} a lease-month\n${bill(r)}\n`);
    const b = busyLease(1_000, cal);
    process.stdout.write(`\nA busy lease, 1,000 candidates (one partition key of the candidates table): an election pings ${n(b.pingBurstWcu)} WCU at once (vs ${n(LIMITS.partitionWcu.value)} WCU/s); the answers reconcile one after another on one shard, ${n(b.rruPerReconcile)} RRU each: ${n(b.answersDrainSeconds, 0)} s, ${n(b.answersRcuPerSecond, 0)} RCU/s (vs ${n(LIMITS.partitionRcu.value)})\n`);
    process.stdout.write(`\nAssumed for a Region (not measured here): ${JSON.stringify(REGION)}\nCalibration: ${JSON.stringify(cal)}\n`);
  }
}

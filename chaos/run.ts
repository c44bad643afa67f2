/**
 * `npm run chaos -- --schedules N --seed S`: N seeded fault schedules on the local runtime, each
 * checked by the history checker; prints the seed, every schedule, and the figures at the end.
 * Exits 1 on any violation. Replay one schedule: `npm run chaos -- --seed S --only I`.
 */
import { Command, InvalidArgumentError } from 'commander';
import { formatVerdict } from '../lib/history/checker.js';
import { startDynamoDBLocal } from '../lib/local/dynamodb-local.js';
import { runSchedule, type ScheduleResult } from './harness.js';
import { FAULT_KINDS, describeSchedule, generateSchedule, type FaultKind } from './schedule.js';
import { formatSummary, summarize } from './summary.js';

const whole = (min: number) => (v: string) => {
  const n = Number(v);
  if (!Number.isInteger(n) || n < min) throw new InvalidArgumentError(`must be a whole number ≥ ${min}, got "${v}"`);
  return n;
};
const kindList = (v: string): FaultKind[] => {
  const kinds = v.split(',').map((k) => k.trim());
  const bad = kinds.filter((k) => !(FAULT_KINDS as readonly string[]).includes(k));
  if (bad.length) throw new InvalidArgumentError(`unknown fault kind(s) ${bad.join(', ')}; known: ${FAULT_KINDS.join(', ')}`);
  return kinds as FaultKind[];
};

const program = new Command()
  .name('npm run chaos --')
  .option('--schedules <n>', 'how many schedules', whole(1), 5)
  .option('--seed <s>', 'the run’s seed (default: random, printed)', whole(0))
  .option('--only <i>', 'run only schedule i of this seed (replay)', whole(0))
  .option('--fault-phase <ms>', 'faults start within this many ms of warm-up', whole(1_000), 20_000)
  .option('--kinds <list>', `only these fault kinds (${FAULT_KINDS.join(',')})`, kindList)
  .option('--heal <ms>', 'longest a lease may stay leaderless after the last fault healed', whole(1_000), 15_000)
  .option('--endpoint <url>', 'an already running DynamoDB Local (default: start one)')
  .option('--dir <path>', 'where each schedule’s history, ledger and verdict go', '.local/chaos')
  .parse(process.argv);
const o = program.opts<{ schedules: number; seed?: number; only?: number; faultPhase: number; kinds?: FaultKind[]; heal: number; endpoint?: string; dir: string }>();

const seed = o.seed ?? Math.floor(Math.random() * 2 ** 31);
const indexes = o.only !== undefined ? [o.only] : Array.from({ length: o.schedules }, (_, i) => i);
console.log(`chaos: seed ${seed}, ${indexes.length} schedule(s); replay one with: npm run chaos -- --seed ${seed} --only <i>${o.faultPhase !== 20_000 ? ` --fault-phase ${o.faultPhase}` : ''}${o.kinds ? ` --kinds ${o.kinds.join(',')}` : ''}`);

const ddb = o.endpoint ? undefined : await startDynamoDBLocal();
const endpoint = o.endpoint ?? ddb!.endpoint;
const results: ScheduleResult[] = [];
try {
  for (const i of indexes) {
    const s = generateSchedule(seed, i, { faultPhaseMs: o.faultPhase, ...(o.kinds ? { kinds: o.kinds } : {}) });
    console.log('');
    for (const l of describeSchedule(s)) console.log(l);
    const r = await runSchedule(s, { endpoint, dir: o.dir, healMs: o.heal, print: (l) => console.log(l) });
    results.push(r);
    for (const l of formatVerdict(r.verdict)) console.log(`  ${l}`);
    console.log(`  files: ${r.dir}`);
  }
} finally {
  await ddb?.stop();
}
const summary = summarize(results);
for (const l of formatSummary(summary, seed)) console.log(l);
process.exitCode = summary.violations.length === 0 ? 0 : 1;

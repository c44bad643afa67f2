/**
 * How far the simulator (sim/world.ts) is from a million schedules an hour, and what bounds it:
 * the time one schedule takes on one thread, its DynamoDB requests, and what those requests
 * cost at the two cheapest layers every one of them passes through — the model alone (a raw
 * command, no SDK object) and the stores' path (LeaseStore: command built, marshalled, answered,
 * unmarshalled, zod-parsed), both on the model with no network, no clock and no fault. The
 * schedules per second these layers alone would allow, on `--cores` cores with perfect scaling,
 * is an upper bound no optimisation of the rest can pass. Prints numbers; nothing asserts them.
 *
 *   npx tsx bench/sim-floor.ts [--schedules 60] [--first 1000] [--ops 100000] [--cores 2]
 */
import { readFileSync } from 'node:fs';
import { GetItemCommand, UpdateItemCommand } from '@aws-sdk/client-dynamodb';
import { createTables } from '../lib/local/tables.js';
import { DynamoDBModel } from '../sim/dynamodb-model/index.js';
import { LeaseStore } from '../lib/stores/lease-store.js';
import { defaultTableNames } from '../lib/tables.js';
import { generateSchedule } from '../sim/schedule.js';
import { DEFAULT_SETTINGS, runWorld } from '../sim/world.js';

process.env['POWERTOOLS_METRICS_DISABLED'] ??= 'true';
const arg = (name: string, fallback: number) => {
  const i = process.argv.indexOf(`--${name}`);
  const v = i >= 0 ? Number(process.argv[i + 1]) : fallback;
  if (!Number.isFinite(v) || v <= 0) throw new Error(`--${name}: must be a positive number, got "${process.argv[i + 1]}"`);
  return v;
};
const SCHEDULES = arg('schedules', 60);
const FIRST = arg('first', 1000);
const OPS = arg('ops', 100_000);
const CORES = arg('cores', 2);
const TARGET_PER_HOUR = 1_000_000;

/**
 * Microseconds of wall-clock time `fn` takes on this thread. Wall time, not the process's CPU time:
 * that counts V8's garbage-collector helper threads as well, which use the other core here but
 * compete with the other simulator thread in a real run. Run it on an otherwise idle machine.
 */
async function micros(fn: () => Promise<void>): Promise<number> {
  const before = performance.now();
  await fn();
  return (performance.now() - before) * 1000;
}

/**
 * CPU ms so far: this thread's (Linux: /proc's utime + stime of this task, in 10 ms ticks;
 * undefined elsewhere) and the whole process's (V8's compiler and collector threads too). Steadier
 * than wall time on a machine other work shares: compare builds by these when it is not idle.
 */
function cpuMs(): { thread: number | undefined; process: number } {
  const u = process.cpuUsage();
  let thread: number | undefined;
  try {
    const f = readFileSync(`/proc/self/task/${process.pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    thread = (Number(f[11]) + Number(f[12])) * 10;
  } catch {
    thread = undefined;
  }
  return { thread, process: (u.user + u.system) / 1000 };
}

// ---- whole schedules, one after another on this thread (a warm-up schedule first)
const schedule = (seed: number) => generateSchedule(seed, { workers: DEFAULT_SETTINGS.workers, durationMs: DEFAULT_SETTINGS.durationMs });
await runWorld(schedule(FIRST - 1), DEFAULT_SETTINGS);
let requests = 0;
const cpuBefore = cpuMs();
const scheduleMicros = await micros(async () => {
  for (let s = FIRST; s < FIRST + SCHEDULES; s++) requests += (await runWorld(schedule(s), DEFAULT_SETTINGS)).counts['requests'] ?? 0;
});
const cpuAfter = cpuMs();
const perSchedule = {
  wallMs: scheduleMicros / SCHEDULES / 1000,
  threadCpuMs: cpuAfter.thread === undefined || cpuBefore.thread === undefined ? undefined : (cpuAfter.thread - cpuBefore.thread) / SCHEDULES,
  processCpuMs: (cpuAfter.process - cpuBefore.process) / SCHEDULES,
  requests: requests / SCHEDULES,
};

// ---- the two layers, on a model of their own: half consistent reads, half renewals (the sim's mix is mostly these)
let now = 1_800_000_000_000;
const model = new DynamoDBModel({ now: () => now });
const client = model.client();
const names = defaultTableNames('floor');
await createTables(client, names);
const leases = new LeaseStore(client, names.leases);
const LEASES = 100;
for (let i = 0; i < LEASES; i++) await leases.write(LeaseStore.readOf(`lease-${i}`, undefined), { set: { leaseDurationSeconds: 15, leaseTransitions: 0, fencingToken: 1, termToken: 1, holderIdentity: `w${i}` } });
const term = { holderIdentity: '', fencingToken: 1 };

const rawOp = (i: number) => {
  now += 1;
  const name = `lease-${i % LEASES}`;
  return i % 2
    ? client.send(new GetItemCommand({ TableName: names.leases, Key: { name: { S: name } }, ConsistentRead: true }))
    : client.send(
        new UpdateItemCommand({
          TableName: names.leases,
          Key: { name: { S: name } },
          UpdateExpression: 'SET #renew = :renew, #duration = :duration ADD #rev :one',
          ConditionExpression: '#term = :token',
          ExpressionAttributeNames: { '#renew': 'renewTime', '#duration': 'leaseDurationSeconds', '#rev': 'revision', '#term': 'termToken' },
          ExpressionAttributeValues: { ':renew': { N: String(now) }, ':duration': { N: '15' }, ':one': { N: '1' }, ':token': { N: '1' } },
          ReturnValues: 'ALL_NEW',
        }),
      );
};
const storeOp = (i: number) => {
  now += 1;
  const name = `lease-${i % LEASES}`;
  return i % 2 ? leases.read(name) : leases.renewTerm(name, { ...term, holderIdentity: `w${i % LEASES}` }, now, 15);
};
const perOp = async (op: (i: number) => Promise<unknown>) => {
  for (let i = 0; i < OPS / 10; i++) await op(i); // warm-up
  return (await micros(async () => {
    for (let i = 0; i < OPS; i++) await op(i);
  })) / OPS;
};
const rawMicros = await perOp(rawOp);
const storeMicros = await perOp(storeOp);

// ---- what they mean for a million schedules an hour
const budgetMs = (CORES * 3_600_000) / TARGET_PER_HOUR; // ms of one core one schedule may take
const ceiling = (ms: number) => (CORES * 1000) / ms; // schedules per second on CORES cores, perfectly scaled
const row = (what: string, ms: number) => console.log(`  ${what.padEnd(58)} ${ms.toFixed(2).padStart(8)} ms  → at most ${ceiling(ms).toFixed(0).padStart(5)} schedules/s on ${CORES} cores`);
console.log(`sim floor: ${SCHEDULES} schedules from seed ${FIRST} (${DEFAULT_SETTINGS.durationMs / 60_000} simulated min, ${DEFAULT_SETTINGS.workers} workers, ${DEFAULT_SETTINGS.leases} leases), ${OPS} operations per layer`);
console.log(`  a million schedules an hour on ${CORES} cores: ${(TARGET_PER_HOUR / 3600).toFixed(0)} schedules/s, ${budgetMs.toFixed(2)} ms of one core per schedule`);
console.log(`  requests per schedule: ${perSchedule.requests.toFixed(0)}; the model alone ${rawMicros.toFixed(2)} µs each, through the stores ${storeMicros.toFixed(2)} µs each`);
row('one schedule on one thread, measured (everything)', perSchedule.wallMs);
if (perSchedule.threadCpuMs !== undefined) row("the same, in this thread's CPU time", perSchedule.threadCpuMs);
row("the same, the process's CPU time (V8's helper threads too)", perSchedule.processCpuMs);
row("the model alone, for the schedule's requests", (perSchedule.requests * rawMicros) / 1000);
row("the stores' path alone (model, marshalling, zod), same", (perSchedule.requests * storeMicros) / 1000);
console.log(`  measured is ${(perSchedule.wallMs / budgetMs).toFixed(1)}× the budget; the stores' path alone is ${((perSchedule.requests * storeMicros) / 1000 / budgetMs).toFixed(1)}×`);
process.exit(0);

/**
 * `npm run soak`: many leases, a few candidates each, for minutes, with no fault at all — so every
 * leader change after the first elections settled is spurious. Prints the figures and the RSS of
 * every process at the start and the end of the quiet window; exits 1 on any violation.
 *
 *   npm run soak                           300 leases × 3 candidates, 10 minutes
 *   npm run soak -- --minutes 1            a smoke run
 *   npm run soak -- --leases 50 --candidates 2 --retry-ms 1000
 */
import { readFileSync } from 'node:fs';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { Command, InvalidArgumentError } from 'commander';
import { systemClock } from '../lib/clock.js';
import { checkHistory, formatVerdict } from '../lib/history/checker.js';
import { createLedgerTable, ledgerTableName, readLedger } from '../lib/history/ledger.js';
import { monoNow, type HistoryRecord } from '../lib/history/schema.js';
import { startDynamoDBLocal } from '../lib/local/dynamodb-local.js';
import { startLocalRuntime } from '../lib/local/runtime.js';
import { CandidateStore } from '../lib/stores/candidate-store.js';
import { mapLimit } from '../lib/util/pool.js';
import { ChaosProcess } from './process.js';
import { leaseNames, type WorkerEnvInput } from './protocol.js';
import { instanceIdOf } from './schedule.js';
import { waitFor } from './wait.js';

const whole = (min: number) => (v: string) => {
  const n = Number(v);
  if (!Number.isInteger(n) || n < min) throw new InvalidArgumentError(`must be a whole number ≥ ${min}, got "${v}"`);
  return n;
};
const o = new Command()
  .name('npm run soak --')
  .option('--leases <n>', 'leases', whole(1), 300)
  .option('--candidates <n>', 'candidates per lease (one worker process each, standing for every lease)', whole(1), 3)
  .option('--minutes <n>', 'length of the quiet window, after the first elections settled', whole(1), 10)
  .option('--lease-ms <ms>', 'lease duration', whole(1_000), 15_000)
  .option('--renew-deadline-ms <ms>', 'renew deadline', whole(1), 10_000)
  .option('--retry-ms <ms>', 'retry period (renewal and poll)', whole(1), 2_000)
  .option('--tick <s>', 'coordinator tick, seconds', whole(1), 60)
  .option('--write-every-ms <ms>', 'each leader’s fenced writes to the ledger (0: none)', whole(0), 10_000)
  .option('--settle <s>', 'seconds allowed for the first elections after every lease has a leader', whole(0), 30)
  .option('--endpoint <url>', 'an already running DynamoDB Local (default: start one)')
  .option('--dir <path>', 'where the history, ledger and verdict go', '.local/soak')
  .parse(process.argv)
  .opts<{ leases: number; candidates: number; minutes: number; leaseMs: number; renewDeadlineMs: number; retryMs: number; tick: number; writeEveryMs: number; settle: number; endpoint?: string; dir: string }>();

const mb = (bytes: number) => `${(bytes / 2 ** 20).toFixed(0)} MB`;
/** Resident set size of a process, from /proc (Linux). */
function rssOf(pid: number | undefined): number | undefined {
  if (pid === undefined) return undefined;
  try {
    const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) * 1024 : undefined;
  } catch {
    return undefined;
  }
}

const dir = resolve(o.dir);
mkdirSync(dir, { recursive: true });
console.log(`soak: ${o.leases} leases × ${o.candidates} candidates for ${o.minutes} min (lease ${o.leaseMs} ms, renew deadline ${o.renewDeadlineMs} ms, retry ${o.retryMs} ms, tick ${o.tick} s)`);
const ddb = o.endpoint ? undefined : await startDynamoDBLocal({ quickStart: false });
const endpoint = o.endpoint ?? ddb!.endpoint;
const prefix = `soak-${Date.now().toString(36)}`;
const rt = await startLocalRuntime({ endpoint, prefix, dir, tickEveryMs: o.tick * 1000, logLevel: 'SILENT' });
const ledgerTable = ledgerTableName(prefix);
if (o.writeEveryMs > 0) await createLedgerTable(rt.client, ledgerTable);
const leases = leaseNames({ CHAOS_LEASES: 'soak-', CHAOS_LEASE_COUNT: o.leases });

const history: HistoryRecord[] = [];
const counts = { fenced: 0, refused: 0, errors: 0 };
const errorsLog = join(dir, 'worker-errors.log');
writeFileSync(errorsLog, '');
const workers = Array.from({ length: o.candidates }, (_, i) => {
  const env: WorkerEnvInput = {
    CONCLAVE_ENDPOINT: rt.endpoint,
    CONCLAVE_TABLE_PREFIX: prefix,
    IDENTITY: `c${i + 1}`,
    CHAOS_LEASES: 'soak-',
    CHAOS_LEASE_COUNT: String(o.leases),
    LEASE_DURATION_MS: String(o.leaseMs),
    RENEW_DEADLINE_MS: String(o.renewDeadlineMs),
    RETRY_PERIOD_MS: String(o.retryMs),
    CANDIDATE_RENEW_MS: String(5 * 60_000),
    CHAOS_WRITE_EVERY_MS: String(o.writeEveryMs),
    ...(o.writeEveryMs > 0 ? { CHAOS_LEDGER_TABLE: ledgerTable } : {}),
  };
  return new ChaosProcess(
    { identity: `c${i + 1}`, emulationVersion: '1.30.0', binaryVersion: '1.31.0', skewMs: 0, instanceId: instanceIdOf(i) },
    env,
    (_p, l) => {
      if (l.type === 'history') history.push(l.record);
      else if (l.type === 'fenced') counts[l.accepted ? 'fenced' : 'refused']++;
      else if (l.type === 'error') {
        counts.errors++;
        writeFileSync(errorsLog, `${l.lease ?? ''} ${l.message}\n`, { flag: 'a' });
      }
    },
    (text) => writeFileSync(errorsLog, `(stderr) ${text}`, { flag: 'a' }),
  );
});

const began = performance.now();
const led = () => new Set(workers.flatMap((w) => [...w.open.keys()])).size;
if (!(await waitFor(() => led() >= o.leases, { timeoutMs: 10 * 60_000, everyMs: 1_000 }))) throw new Error(`only ${led()} of ${o.leases} leases have a leader after 10 minutes`);
console.log(`  every lease has a leader after ${((performance.now() - began) / 1000).toFixed(1)} s; settling ${o.settle} s`);
await systemClock.sleep(o.settle * 1000);

const rss = () => ({ runtime: process.memoryUsage().rss, dynamodbLocal: rssOf(ddb?.pid), workers: workers.map((w) => rssOf(w.child.pid)) });
const fmt = (r: ReturnType<typeof rss>) => `runtime ${mb(r.runtime)}, DynamoDB Local ${r.dynamodbLocal ? mb(r.dynamodbLocal) : '-'}, workers ${r.workers.map((x) => (x ? mb(x) : '-')).join(' / ')}`;
const quietFrom = monoNow();
const termsBefore = history.filter((h) => h.event === 'started').length;
const startRss = rss();
console.log(`  quiet window starts: ${termsBefore} terms so far; RSS ${fmt(startRss)}`);
const quietStart = performance.now();
for (let m = 1; m <= o.minutes; m++) {
  await systemClock.sleep(60_000);
  const stops = history.filter((h) => h.event === 'stopped' && BigInt(h.mono) > BigInt(quietFrom)).length;
  const starts = history.filter((h) => h.event === 'started' && BigInt(h.mono) > BigInt(quietFrom)).length;
  console.log(`  ${m} min: leases led ${led()}/${o.leases}; since the window began ${starts} start(s), ${stops} stop(s); fenced writes ${counts.fenced}; worker errors ${counts.errors}; RSS ${fmt(rss())}`);
}
const endRss = rss();
const candidates = new CandidateStore(rt.client, rt.tables.candidates);
const rows = (await mapLimit(leases, 16, (l) => candidates.list(l))).flatMap((r) => r.candidates);
const end = {
  mono: monoNow(),
  live: workers.flatMap((w) => leases.map((lease) => ({ lease, identity: w.plan.identity, instance: w.instances[lease]! }))),
  candidateRows: rows.map((r) => ({ lease: r.leaseName, name: r.name, ...(r.identity ? { identity: r.identity } : {}) })),
};
for (const w of workers) w.child.kill('SIGTERM');
await Promise.all(workers.map((w) => w.closed));
const ledger = o.writeEveryMs > 0 ? await readLedger(rt.client, ledgerTable) : [];
await rt.stop();
await ddb?.stop();

// No fault at all: every term that began in the window is spurious, and no lease may go leaderless.
const verdict = checkHistory({ history, ledger, end }, { quietFrom, healedAt: quietFrom, healMs: 1 });
writeFileSync(join(dir, 'history.jsonl'), history.map((h) => `${JSON.stringify(h)}\n`).join(''));
writeFileSync(join(dir, 'verdict.json'), `${JSON.stringify({ ok: verdict.ok, violations: verdict.violations, figures: verdict.figures }, null, 2)}\n`);
const spurious = verdict.violations.filter((v) => v.kind === 'spuriousChange').length;
const interruptions = history.filter((h) => h.event === 'stopped' && BigInt(h.mono) > BigInt(quietFrom) && BigInt(h.mono) < BigInt(end.mono)).length;
console.log('');
console.log(`Soak summary: ${o.leases} leases × ${o.candidates} candidates, quiet window ${((performance.now() - quietStart) / 60_000).toFixed(1)} min`);
console.log(`  spurious leader changes      ${spurious}`);
console.log(`  leaderships interrupted      ${interruptions}  (a leader stopping in the window)`);
console.log(`  fenced writes accepted       ${counts.fenced} (refused ${counts.refused}); worker errors ${counts.errors}`);
console.log(`  RSS at the start             ${fmt(startRss)}`);
console.log(`  RSS at the end               ${fmt(endRss)}`);
for (const l of formatVerdict(verdict)) console.log(`  ${l}`);
console.log(`  files: ${dir}`);
process.exitCode = verdict.ok ? 0 : 1;

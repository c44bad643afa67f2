/**
 * `npm run test:load`: `npm test` with CPU-bound busy processes running beside it, as on a shared
 * 2-core CI machine; prints whether it passed, its counts and how long it took. The suite waits on
 * conditions and simulated time, so it must pass however slow the machine is; this shows it does.
 *   npm run test:load                          npm test, beside two busy processes
 *   npm run test:load -- test/start.test.ts    vitest run on those files only
 *   npm run test:load -- --busy 3 …            three busy processes
 * Exits with the test run's code. The busy processes end with the run (and on their own should
 * this script be killed: each checks that its parent is still alive).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { loadavg } from 'node:os';

const args = process.argv.slice(2);
let busyCount = 2;
const at = args.indexOf('--busy');
if (at >= 0) {
  busyCount = Number(args[at + 1]);
  if (!Number.isInteger(busyCount) || busyCount < 0) throw new Error(`--busy must be a whole number ≥ 0, got "${args[at + 1]}"`);
  args.splice(at, 2);
}

// A loop that never yields, so it keeps a core busy; every few million turns it checks that this
// script still runs, so a killed script leaves no busy process behind.
const BUSY = `const p = ${process.pid}; for (let i = 1; ; i++) if (i % 50_000_000 === 0) { try { process.kill(p, 0); } catch { process.exit(0); } }`;
const busy: ChildProcess[] = Array.from({ length: busyCount }, () => spawn(process.execPath, ['-e', BUSY], { stdio: 'ignore' }));
const stopBusy = () => {
  for (const b of busy) if (b.exitCode === null && b.signalCode === null) b.kill('SIGKILL');
};

const [cmd, cmdArgs] = args.length ? ['npx', ['vitest', 'run', ...args]] : ['npm', ['test']];
const label = `${cmd} ${cmdArgs.join(' ')}`;
const load = () => loadavg().map((l) => l.toFixed(2)).join(' ');
console.log(`test:load: ${label}, beside ${busyCount} busy process(es); load average ${load()}`);

const started = performance.now();
// Its own process group, so that a signal reaches the whole run (npx, vitest, its workers), not
// npx alone with vitest left orphaned; the busy processes go with this script.
const run = spawn(cmd, cmdArgs, { stdio: ['inherit', 'pipe', 'inherit'], detached: true });
for (const s of ['SIGINT', 'SIGTERM'] as const) process.on(s, () => process.kill(-run.pid!, s));
// The closing line test/summary-reporter.ts prints, "N passed, N failed[, N skipped]": every one
// kept as it passes (the output itself is long).
let all = '';
let partial = '';
run.stdout!.on('data', (d: Buffer) => {
  process.stdout.write(d);
  const text = partial + d.toString();
  const cut = text.lastIndexOf('\n');
  partial = text.slice(cut + 1);
  all += text.slice(0, cut + 1).split('\n').filter((l) => /^\d+ passed, \d+ failed/.test(l)).map((l) => `${l}\n`).join('');
});
const code = await new Promise<number>((resolve) => run.on('close', (c, signal) => resolve(c ?? (signal ? 1 : 0))));
stopBusy();

const seconds = ((performance.now() - started) / 1000).toFixed(1);
// npm test runs vitest twice (the chaos set alone, after the rest): both runs' lines, added up
const lines = [...all.matchAll(/^(\d+) passed, (\d+) failed(?:, (\d+) skipped)?$/gm)];
const sum = (i: number) => lines.reduce((n, m) => n + Number(m[i] ?? 0), 0);
const summary = lines.length ? `${sum(1)} passed, ${sum(2)} failed, ${sum(3)} skipped (${lines.length} vitest run${lines.length > 1 ? 's' : ''})` : 'no summary line (the run ended before the tests did)';
console.log(`\ntest:load: ${code === 0 ? 'PASSED' : `FAILED (exit ${code})`}: ${summary}; ${seconds} s beside ${busyCount} busy process(es); load average ${load()}`);
process.exitCode = code;

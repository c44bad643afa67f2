#!/usr/bin/env node
/**
 * `npx conclave-local`: the whole local system from the packages alone — DynamoDB Local, the
 * coordinator, the stream and timer functions, the push broker — until Ctrl-C. It prints what a
 * worker needs (the DynamoDB endpoint, the table prefix, the push URL) as `NAME=value` lines a shell
 * can source, then `ready`. Options: --table-prefix P (default conclave-local), --endpoint URL (a
 * DynamoDB Local already running: the prefix's tables already there, from an earlier run, are
 * reused), --port N (its own DynamoDB Local's port, default a free one), --tick DURATION (default 10s), --no-push, --events-dir DIR (default .local: events.jsonl
 * there is what `conclave events` reads by default, as for `npm start`). Exits 0 at Ctrl-C, SIGTERM, SIGHUP (its terminal closed), or the exit of the process that started it (npx's `sh -c`, which a `kill` of npx ends without passing the signal on); 1 if
 * another local mode took its lock over (it was paused or cut off from DynamoDB Local for 10 s):
 * its functions are stopped then, and the other runs them; 1 too if its own DynamoDB Local exits
 * (killed, crashed: its in-memory tables are gone).
 */
import '../util/node-version.js'; // first: stops on a Node older than 22 with a message
import { existsSync, readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { resolve } from 'node:path';
import { TickDuration } from '../schemas/duration.js';
import { editDistance, ValidationError } from '../schemas/validation.js';
import { systemClock } from '../clock.js';
import { LOCAL_CREDENTIALS, LOCAL_REGION } from '../stores/client.js';
import { startLocalConclave, type LocalConclaveOptions, type RuntimeLockLoss } from './index.js';
import { outputUnread, watchParent } from '../local/parent-watch.js';

const USAGE = 'usage: conclave-local [--table-prefix PREFIX] [--endpoint URL | --port N] [--tick DURATION] [--no-push] [--events-dir DIR] [--version]';

const HELP = `${USAGE}

Conclave on this machine until Ctrl-C (or SIGTERM, SIGHUP, or the exit of the process that started it): DynamoDB Local (Java 17+) with the tables, the functions wired
as in AWS, the push broker. Prints CONCLAVE_ENDPOINT, CONCLAVE_TABLE_PREFIX, CONCLAVE_PUSH_URL and
CONCLAVE_EVENTS_FILE as lines a shell can read, then "ready".

  --table-prefix PREFIX   the tables PREFIX-leases, PREFIX-candidates, PREFIX-identities (default conclave-local)
  --endpoint URL          a DynamoDB Local already running, left running at the end (default: one of its own, in memory);
                          the prefix's tables already there (an earlier run's) are reused with their rows,
                          one of another shape is refused: choose another --table-prefix, or delete it;
                          the streams are resumed where the last run left them (stream-checkpoints.json in --events-dir);
                          one conclave-local per endpoint and prefix: a second is refused, naming the first's pid;
                          one whose lock another took over (paused or cut off for 10 s), or whose lock item was deleted,
                          stops and exits 1, saying which
                          (without --endpoint: one whose own DynamoDB Local exits stops and exits 1 too, naming Java's pid)
  --port N                the 127.0.0.1 port of its own DynamoDB Local, the same endpoint at every start
                          (default: a free port); one in use is refused, never used in its place; not with --endpoint
  --tick DURATION         how often the coordinator's scheduled reconcile runs, such as 10s or 500ms (default 10s; 1m in AWS)
  --no-push               no push broker: workers poll their leases
  --events-dir DIR        where events.jsonl goes, which \`conclave events\` reads (default .local)
  -V, --version           the version of @conclave/testing
  -h, --help              this text`;

/** Where the events go unless --events-dir says: the folder `conclave events` looks in by default (.local/events.jsonl). */
const EVENTS_DIR = '.local';

const OPTIONS = { 'table-prefix': { type: 'string' }, endpoint: { type: 'string' }, port: { type: 'string' }, tick: { type: 'string' }, 'no-push': { type: 'boolean' }, 'events-dir': { type: 'string' }, help: { type: 'boolean', short: 'h' }, version: { type: 'boolean', short: 'V' } } as const;

/**
 * The option a mistyped one most likely meant: the one it begins, the one that has it as a whole word (`--prefix`:
 * --table-prefix), or one within 3 letters (as commander suggests for `conclave`).
 */
function meant(typed: string): string | undefined {
  const flags = Object.keys(OPTIONS).map((o) => `--${o}`);
  const begun = flags.filter((f) => typed.length >= 4 && f.startsWith(typed));
  if (begun.length === 1) return begun[0];
  const word = typed.replace(/^-+/, '');
  const worded = flags.filter((f) => word.length >= 3 && f.slice(2).split('-').includes(word));
  if (worded.length === 1) return worded[0];
  const [best] = flags.map((f) => ({ f, d: editDistance(typed, f) })).sort((x, y) => x.d - y.d);
  return best && best.d <= 3 ? best.f : undefined;
}

function options(argv: string[]): LocalConclaveOptions {
  let v;
  try {
    v = parseArgs({ args: argv, options: OPTIONS, strict: true }).values;
  } catch (e) {
    const unknown = (e as { code?: string }).code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION' ? /'([^']+)'/.exec((e as Error).message)?.[1] : undefined;
    if (unknown !== undefined) {
      const suggestion = meant(unknown);
      console.error(`conclave-local: unknown option '${unknown}'${suggestion ? ` (did you mean ${suggestion}?)` : ''}\n${USAGE}`);
    } else console.error(`conclave-local: ${(e as Error).message}\n${USAGE}`);
    process.exit(2);
  }
  if (v.help) {
    console.log(HELP);
    process.exit(0);
  }
  // as `conclave --version`: the version of the package it came with
  if (v.version) {
    console.log(testingVersion());
    process.exit(0);
  }
  // a duration, parsed as the CLI's duration flags are (--for, --timeout, watch --interval): `10` alone is refused
  const tick = TickDuration.safeParse(v.tick ?? '10s');
  if (!tick.success) {
    // a bare number's hint ("0 seconds is 0s") only where --tick takes the value it suggests
    const told = tick.error.issues[0]?.message ?? '';
    const hint = /(; a number alone has no unit): (\S+) seconds is \S+s$/.exec(told);
    console.error(`conclave-local: --tick: ${hint && !TickDuration.safeParse(`${hint[2]}s`).success ? told.replace(hint[0], hint[1]!) : told}\n${USAGE}`);
    process.exit(2);
  }
  // a port in digits only: `8000`, not `8000x` or `0x1f40` (Number would take those)
  const port = v.port === undefined ? undefined : /^\d{1,5}$/.test(v.port) ? Number(v.port) : Number.NaN;
  if (Number.isNaN(port)) {
    console.error(`conclave-local: --port: must be a port, 1-65535, such as 8000\n${USAGE}`);
    process.exit(2);
  }
  return { tablePrefix: v['table-prefix'] ?? 'conclave-local', tickEveryMs: tick.data, ...(v.endpoint ? { endpoint: v.endpoint } : {}), ...(port === undefined ? {} : { port }), ...(v['no-push'] ? { push: false } : {}), eventsDir: v['events-dir'] ?? EVENTS_DIR, logLevel: 'WARN' };
}

/** @conclave/testing's version: its package.json, beside dist/ once packed, or the repository's packages/testing. */
function testingVersion(): string {
  for (const path of ['../../../package.json', '../../packages/testing/package.json']) {
    const file = new URL(path, import.meta.url);
    if (!existsSync(file)) continue;
    const manifest = JSON.parse(readFileSync(file, 'utf8')) as { name?: unknown; version?: unknown };
    if (manifest.name === '@conclave/testing' && typeof manifest.version === 'string') return manifest.version;
  }
  return 'unknown';
}

/** The flag each startLocalConclave() option comes from, so a bad value is named as it was typed. */
const FLAGS: Readonly<Record<string, string>> = { tablePrefix: '--table-prefix', endpoint: '--endpoint', port: '--port', tickEveryMs: '--tick', eventsDir: '--events-dir' };

const asked = options(process.argv.slice(2));
/**
 * What its parent's exit does (told before the start has finished: once it has). `npx` runs this
 * under `sh -c`, and a `kill` of npx reaches the shell, which exits without passing the signal on.
 */
let onParentGone = (was: number) => void (parentGoneEarly = was);
let parentGoneEarly: number | undefined;
watchParent(systemClock, (was) => onParentGone(was));
/** What a loss of the lock does (told before the start has finished: once it has). */
let onLockLost = (message: string, loss: RuntimeLockLoss) => void (lostEarly = { message, loss });
let lostEarly: { message: string; loss: RuntimeLockLoss } | undefined;
const local = await startLocalConclave({ ...asked, onLockLost: (message, loss) => onLockLost(message, loss) }).catch((e: unknown) => {
  if (e instanceof ValidationError && e.issues.every((i) => FLAGS[i.field])) {
    console.error(`${e.issues.map((i) => `conclave-local: ${FLAGS[i.field]}: ${i.message}`).join('\n')}\n${USAGE}`);
    process.exit(2);
  }
  console.error(`conclave-local: ${(e as Error).message}`);
  process.exit(1);
});
console.log(`CONCLAVE_ENDPOINT=${local.endpoint}`);
console.log(`CONCLAVE_TABLE_PREFIX=${local.tablePrefix}`);
if (local.pushEndpoint) console.log(`CONCLAVE_PUSH_URL=${local.pushEndpoint}`);
console.log(`CONCLAVE_EVENTS_FILE=${local.eventsFile}`);
console.log(`# a worker: new DynamoDBClient({ endpoint: '${local.endpoint}', region: '${LOCAL_REGION}', credentials: { accessKeyId: '${LOCAL_CREDENTIALS.accessKeyId}', secretAccessKey: '${LOCAL_CREDENTIALS.secretAccessKey}' } }), tables: '${local.tablePrefix}'${local.pushEndpoint ? `, PushChannel endpoint '${local.pushEndpoint}'` : ''}`);
console.log(`# the CLI (@conclave/cli): npx conclave --endpoint ${local.endpoint} --table-prefix ${local.tablePrefix} get leases (or export the lines above)`);
// in this folder `conclave events` reads the default folder's file, which --events-dir left: named, not "in this folder"
console.log(
  resolve(asked.eventsDir ?? EVENTS_DIR) === resolve(EVENTS_DIR)
    ? `# the events, as they are published: npx conclave events --follow (in this folder; elsewhere --events-file ${local.eventsFile}, or CONCLAVE_EVENTS_FILE)`
    : `# the events, as they are published: npx conclave events --follow --events-file ${local.eventsFile} (or CONCLAVE_EVENTS_FILE)`,
);
console.log(
  asked.endpoint
    ? `# Ctrl-C stops it; the tables stay in the DynamoDB Local at ${local.endpoint} (started again with --table-prefix ${local.tablePrefix}, it reuses them and their rows)`
    : '# Ctrl-C stops it (the tables are in memory: they go with it)',
);
console.log('ready');

/** What became of the lock: taken over by whom, deleted, taken over or deleted (who holds it now unread), or gone with its DynamoDB Local. */
function whatBecame(loss: RuntimeLockLoss): string {
  switch (loss.kind) {
    case 'takenOver':
      return `taken over by process ${loss.pid} on ${loss.host}`;
    case 'deleted':
      return 'deleted';
    case 'unread':
      return 'taken over or deleted';
    case 'storeExited':
      return 'lost with its DynamoDB Local';
  }
}

let stopping = false;
/**
 * How soon after a signal the same one again is its echo, not a person's second Ctrl-C (which ends
 * it at once): a launcher that passes the terminal's Ctrl-C on (npm, tsx's CLI, which sends it again
 * when it has not heard within 30 ms that its child got it) while the terminal's own reaches it too.
 * A person presses Ctrl-C again later than this.
 */
const SIGNAL_ECHO_MS = 1_000;
/** The signal that began the stop, and when (systemClock.monotonic()). */
let stoppedBy: { signal: string; at: number } | undefined;
/** Stops, then exits with `code`: 0 at Ctrl-C, 1 once the lock is another's (this one must not run on: the other handles every record and tick now). */
const stop = (why: string, code: number) => {
  if (stopping) {
    // the first signal's echo: the stop under way goes on (before: one Ctrl-C often ended it at once, unstopped, its lock left)
    if (stoppedBy?.signal === why && systemClock.monotonic() - stoppedBy.at < SIGNAL_ECHO_MS) return;
    process.exit(130); // a second Ctrl-C: at once
  }
  stopping = true;
  if (why === 'SIGINT' || why === 'SIGTERM') stoppedBy = { signal: why, at: systemClock.monotonic() };
  void local.stop().then(
    () => {
      console.log(`stopped (${why})`);
      process.exit(code);
    },
    (e: unknown) => {
      console.error(`conclave-local: stopping failed: ${(e as Error).message}`);
      process.exit(1);
    },
  );
};
process.on('SIGINT', () => stop('SIGINT', 0));
process.on('SIGTERM', () => stop('SIGTERM', 0));
// its terminal closed: stopped as at SIGTERM (it ended at once before: no stop, a lock item left in an --endpoint's DynamoDB Local)
process.on('SIGHUP', () => {
  outputUnread(); // the terminal is gone: a write to it fails
  // the shell and the kernel may each send one as the terminal closes: a second is no second Ctrl-C
  if (!stopping) stop('SIGHUP', 0);
});
// its lock taken over or deleted: its functions are stopped already; exit non-zero rather than stand idle as if ready
onLockLost = (message, loss) => {
  if (stopping) return;
  // the message tells a library's caller to stop the runtime: this command stops itself, and says so next
  console.error(`conclave-local: ${message.replace(/: stop it$/, '')}`);
  stop(`its lock ${whatBecame(loss)}`, 1);
};
if (lostEarly !== undefined) onLockLost(lostEarly.message, lostEarly.loss);
// its parent gone (`kill` of npx, whose `sh -c` passed nothing on): stopped as at SIGTERM, not left running under init holding the port
onParentGone = (was) => {
  if (stopping) return;
  outputUnread(); // nobody may read its output any more: a write to a closed pipe fails
  stop(`its parent process ${was} exited`, 0);
};
if (parentGoneEarly !== undefined) onParentGone(parentGoneEarly);

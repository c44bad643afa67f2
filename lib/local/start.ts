/**
 * `npm start`: the whole system on this machine, then KEP-4355's stories played by three worker
 * processes, with a live leader timeline and a summary. Exits 0 when every expectation held; 1 when
 * one did not, or when another local mode took this one's lock over (this process paused or cut off
 * from its DynamoDB Local for 10 s): its functions are stopped then and it says so; with --serve it
 * stops at once, else once the stories end. It does not wait for the lock again: a start is refused
 * while the other runs (the refusal names it), as at any start. Ctrl-C, SIGTERM, SIGHUP (its
 * terminal closed) or the exit of the process that started it (a kill of npm ends npm's `sh -c`,
 * which passes no signal on) stops it in order: the stories' workers (they step down), then the
 * system; it exits 0 with --serve, else 128 + the signal's number (1 for its starter's exit).
 *   npm start -- --short   a shorter play (CI)
 *   npm start -- --serve   keep the system up for the CLI and your own workers
 */
import { constants } from 'node:os';
import { Command, InvalidArgumentError } from 'commander';
import { systemClock } from '../clock.js';
import { TickDuration } from '../schemas/duration.js';
import { DEMO_ELECTION, playStories } from './demo/stories.js';
import { playScheduledJob } from './demo/scheduled-job-story.js';
import { playLoadBalancer } from './demo/load-balancer-story.js';
import { PortInUseError } from './dynamodb-local.js';
import { outputUnread, watchParent } from './parent-watch.js';
import { startLocalRuntime, type LocalEvent } from './runtime.js';
import { stopEveryWorker } from './worker-process.js';

const program = new Command()
  .name('npm start --')
  .option('--serve', 'keep the local system running for the CLI and your own workers')
  .option('--short', 'play a shorter set of stories')
  .option('--dir <path>', 'where events.jsonl and dead-letters.jsonl are written', '.local')
  // a duration, parsed as the CLI's and conclave-local's are: `5` alone is refused (5s)
  .option('--tick <duration>', "the coordinator's scheduled reconcile, such as 10s or 500ms (default 5s; 10s with --serve)", (v) => {
    const tick = TickDuration.safeParse(v);
    if (!tick.success) throw new InvalidArgumentError(`--tick: ${tick.error.issues[0]?.message}`);
    return tick.data;
  })
  // as conclave-local's --port: the same endpoint at every start, so workers and the CLI outlive a restart
  .option('--port <n>', "its DynamoDB Local's 127.0.0.1 port, the same endpoint at every start (default: a free port); one in use is refused", (v) => {
    if (!/^\d{1,5}$/.test(v) || Number(v) < 1 || Number(v) > 65_535) throw new InvalidArgumentError('--port: must be a port, 1-65535, such as 8000');
    return Number(v);
  })
  .parse(process.argv);
const opts = program.opts<{ serve?: boolean; short?: boolean; tick?: number; dir: string; port?: number }>();

/**
 * How soon after a signal the same one again is its echo, not a person's second Ctrl-C (which stops
 * it at once): tsx's CLI, this process's parent, sends a signal again when it has not heard within
 * 30 ms that this process got it (a busy moment), and npm passes the terminal's Ctrl-C on to its
 * script as well. A person presses Ctrl-C again later than this.
 */
const SIGNAL_ECHO_MS = 1_000;

/** What told this run to end: a signal, or its starter's exit (`signal` undefined). */
interface Ending {
  readonly why: string;
  readonly signal?: 'SIGINT' | 'SIGTERM' | 'SIGHUP';
}
let ended: Ending | undefined;
let endRun: (e: Ending) => void = () => undefined;
const ending = new Promise<Ending>((resolve) => (endRun = resolve));
const end = (e: Ending) => {
  if (ended !== undefined) return;
  ended = e;
  endRun(e);
};
// watched from the start (an exit during the start-up is acted on once it is up): npm's `sh -c` exits
// at a kill of npm without passing the signal on, and tsx's CLI, this process's parent, stays
watchParent(systemClock, (was) => {
  outputUnread();
  end({ why: `the process that started it, ${was}, exited` });
});

/** An event's line: its lease (your own workers' beside the demo's), and who it is about. */
const describe = (e: LocalEvent): string => {
  const d = e.detail as Record<string, unknown>;
  const parts = [d['holder'] && `holder ${d['holder']}`, d['candidate'] && `candidate ${d['candidate']}`, d['previousHolder'] && `previous ${d['previousHolder']}`, d['preferredHolder'] && `preferred ${d['preferredHolder']}`, d['fencingToken'] !== undefined && `token ${d['fencingToken']}`, d['reason'] && `${d['reason']}`];
  return `${e.detailType}  ${d['lease']}: ${parts.filter(Boolean).join(', ')}`;
};

async function main(): Promise<number> {
  console.log('Conclave, local: starting DynamoDB Local, the tables, the functions and the event bus...');
  // the lock taken over: the functions are stopped (the other local mode runs them), said at once
  let lostLine: string | undefined;
  let lockLost: () => void = () => undefined;
  const lost = new Promise<number>((resolve) => (lockLost = () => resolve(1)));
  const rt = await startLocalRuntime({
    onLost: (line) => {
      lostLine = line;
      console.error(`npm start: ${line.replace(/: stop it$/, '')}`); // it stops itself
      lockLost();
    },
    // the repository's own `npm start` asks for Java on the user's behalf (and says so) if it is missing
    installJava: { askedBy: 'npm start' },
    tickEveryMs: opts.tick ?? (opts.serve ? 10_000 : 5_000),
    config: opts.serve ? {} : DEMO_ELECTION,
    dir: opts.dir,
    dirNamed: '--dir', // a folder it cannot use is named with this command's flag, not conclave-local's
    ...(opts.port === undefined ? {} : { port: opts.port }),
    ...(opts.serve ? { onEvent: (e: LocalEvent) => console.log(`event  ${e.time}  ${describe(e)}`) } : {}),
    onDeadLetter: (d) => console.log(`dead letter  ${d.function}: ${d.reason}`),
  });
  // from now on a signal stops it in order (before, with --serve only, and SIGHUP not at all); a second stops it at once
  let first: { signal: string; at: number } | undefined;
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const)
    process.on(signal, () => {
      if (signal === 'SIGHUP') outputUnread(); // its terminal closed: a write to it fails
      // the same signal again at once is the first one's echo, not a second Ctrl-C (before: one Ctrl-C
      // often ended it at once, unstopped): SIGNAL_ECHO_MS. The shell and the kernel may each send a
      // SIGHUP as the terminal closes: a second is no second Ctrl-C either
      const echo = first?.signal === signal && systemClock.monotonic() - first.at < SIGNAL_ECHO_MS;
      if (ended === undefined) {
        first = { signal, at: systemClock.monotonic() };
        end({ why: signal, signal });
      } else if (signal !== 'SIGHUP' && !echo) process.exit(128 + constants.signals[signal]);
    });
  console.log(`DynamoDB Local  ${rt.endpoint}`);
  console.log(`tables          ${Object.values(rt.tables).join(', ')}`);
  console.log(`events          ${rt.eventsFile}`);
  console.log(`push (MQTT)     ${rt.pushEndpoint}`);
  try {
    if (opts.serve) {
      const prefix = rt.tables.leases.replace(/-leases$/, '');
      console.log(`
The local system is up. In another terminal:
  run a worker   CONCLAVE_ENDPOINT=${rt.endpoint} CONCLAVE_TABLE_PREFIX=${prefix} CONCLAVE_PUSH_URL=${rt.pushEndpoint} LEASE=my-job IDENTITY=w1 EMULATION_VERSION=1.30.0 npx tsx lib/local/demo/worker.ts
  use the CLI    npx conclave --endpoint ${rt.endpoint} --table-prefix ${prefix} get leases
  watch events   npx conclave events --follow --events-file ${rt.eventsFile}
Ctrl-C stops it.`);
      return await Promise.race([ending.then(() => 0), lost]);
    }
    // the stories end on their own (their workers stopped) even with the functions stopped under them
    const play = (async () => {
      const result = await playStories(rt, { short: Boolean(opts.short) });
      const job = await playScheduledJob(rt, { windows: opts.short ? 2 : 3 });
      const lb = await playLoadBalancer(rt, { short: Boolean(opts.short) });
      return result.ok && job.ok && lb.ok && lostLine === undefined ? 0 : 1;
    })();
    const by = await Promise.race([play, ending]);
    if (typeof by === 'number') return by;
    // told to end mid-play: its workers step down while DynamoDB Local still answers them, then the system stops
    console.log(`\nnpm start: ${by.why}: stopping the stories' workers, then the local system`);
    play.catch(() => undefined); // the play fails as its workers go (or refuses a new one): no verdict of its counts now
    await stopEveryWorker(by.why);
    return by.signal === undefined ? 1 : 128 + constants.signals[by.signal];
  } finally {
    await rt.stop();
  }
}

/** What a start-up that cannot go on says: a port taken with the ways out npm start has (it takes no endpoint), else the error's own line. */
function cannotStart(e: unknown): string {
  if (e instanceof PortInUseError && e.port === opts.port)
    return `${e.refusal} Leave out --port to start one on a free port, or choose another (npm start -- --port N); npm start always starts a DynamoDB Local of its own.`;
  return e instanceof Error ? e.message : String(e);
}

// a start-up that cannot go on (Java, a folder it cannot write, a port taken) says why in a line, not a stack
const code = await main().catch((e: unknown) => {
  console.error(`npm start: ${cannotStart(e)}`);
  return 1;
});
if (ended === undefined) process.exitCode = code;
else {
  console.log(`stopped (${ended.why})`);
  // the play's waits and timers, cut short, would keep it up
  process.exit(code);
}

/**
 * A chaos worker: one OS process standing for one or more leases with the SDK's LeaderElector,
 * as a user's worker would, plus what the chaos harness needs —
 * - a wall clock skewed by CHAOS_SKEW_MS and stepped by commands on stdin (the monotonic clock stays
 *   true, as on a real machine): the SDK must write DynamoDB's time whatever it says;
 * - an EC2 instance id (CHAOS_PLATFORM_ID) as its platform, the same across restarts;
 * - DynamoDB faults (errors, throttling, latency, lost responses) injected by an SDK middleware,
 *   switched on and off by commands on stdin, decided by a generator seeded with CHAOS_SEED — on
 *   every request, or (a `sessionLoss`) on the session row's writes alone;
 * - with CHAOS_SESSION, one Session for the process, shared by its electors (a `session` line each
 *   time it starts a row, ends one or fails a renewal);
 * - while leading, fenced writes to the ledger table every CHAOS_WRITE_EVERY_MS, and for
 *   CHAOS_ZOMBIE_MS after a term stopped, writes with the old term (a job that ignores its signal:
 *   the fence must refuse them once another term has begun);
 * - a history line (lib/history/schema.ts) at every start and stop of leadership.
 * Every line on stdout is JSON (chaos/protocol.ts). SIGTERM: step down, release, exit.
 */
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { createInterface } from 'node:readline';
import { monoNow, type HistoryRecord } from '../lib/history/schema.js';
import { ledgerWrite } from '../lib/history/ledger.js';
import { skewedClock, systemClock } from '../lib/clock.js';
import { FencingError, LeaderElector, LeaseLostError, Session, defaultTableNames, withLease } from '../lib/sdk/index.js';
import { PushChannel } from '../lib/sdk/push-entry.js';
import { fencedTransactWrite } from '../lib/sdk/fencing.js';
import { parse } from '../lib/schemas/validation.js';
import { injectDynamoDBFaults, type DynamoDBFault } from './ddb-faults.js';
import { WorkerCommand, WorkerEnv, WorkerStart, leaseNames, type WorkerLine } from './protocol.js';
import { rng } from './rng.js';
import { settlesWithin } from './wait.js';

const out = (line: WorkerLine) => process.stdout.write(`${JSON.stringify(line)}\n`);

// stdin's lines, kept until the worker takes commands (below). A held process (CHAOS_HELD: loaded
// ahead of a restart) says it is loaded and waits for its environment, its first line, to start.
const early: string[] = [];
let take = (line: string): void => void early.push(line);
createInterface({ input: process.stdin }).on('line', (line) => take(line));
if (process.env.CHAOS_HELD === 'true') {
  out({ type: 'loaded' });
  const start = await new Promise<string>((r) => {
    take = (line) => {
      take = (l) => void early.push(l);
      r(line);
    };
  });
  Object.assign(process.env, parse(WorkerStart, JSON.parse(start), 'chaos worker start').start);
}

const env = parse(WorkerEnv, process.env, 'chaos worker environment');

const identity = env.IDENTITY;
const tables = defaultTableNames(env.CONCLAVE_TABLE_PREFIX);
const random = rng(env.CHAOS_SEED);
let fault: DynamoDBFault | undefined;
/** A sessionLoss in force: it hits the session row's writes (identities-table UpdateItem: nothing else of this process writes there). */
let sessionFault: DynamoDBFault | undefined;
const client = new DynamoDBClient({ endpoint: env.CONCLAVE_ENDPOINT, region: 'local', credentials: { accessKeyId: 'local', secretAccessKey: 'local' } });
injectDynamoDBFaults(
  client,
  (req) => (sessionFault && req.table === tables.identities && req.command === 'UpdateItemCommand' ? sessionFault : fault),
  random,
  (f) => out({ type: 'injected', mode: f.mode, ...(f === sessionFault ? { session: true } : {}) }),
);

// A machine's clocks: the monotonic one true, the wall clock off by `skew` (and stepped by commands).
let skew = env.CHAOS_SKEW_MS;
const clock = skewedClock(() => skew);
let stopping = false;

// One connection per process for the push path, shared by its electors; it outlives them (a
// stopping leader announces its hand-off over it).
const pushStop = new AbortController();
const push = env.CONCLAVE_PUSH_URL ? new PushChannel({ endpoint: env.CONCLAVE_PUSH_URL, tables, reconnectFirstMs: 200, onError: (e) => out({ type: 'error', message: `push: ${e.message}` }) }) : undefined;
const pushRun = push?.run(pushStop.signal);
if (push) await settlesWithin(push.ready, 2_000); // polls meanwhile if the broker is down

// One Session per process, shared by its electors, started before them and run until they have all
// finished (run() waits for every elector on it to detach, so their releases and hand-offs go first).
const sessionStop = new AbortController();
const session = env.CHAOS_SESSION
  ? new Session({
      client,
      clock,
      tables,
      prefix: identity,
      renewIntervalMs: env.SESSION_RENEW_INTERVAL_MS,
      retryPeriodMs: env.SESSION_RETRY_PERIOD_MS,
      renewDeadlineMs: env.SESSION_RENEW_DEADLINE_MS,
      maxLeaseDurationMs: env.SESSION_MAX_LEASE_DURATION_MS,
      onError: (e) => out({ type: 'error', message: `session: ${e.message}` }),
    })
  : undefined;
const sessionRun = session?.run(sessionStop.signal).catch((e: unknown) => out({ type: 'error', message: `session run() rejected: ${(e as Error).name}: ${(e as Error).message}` }));
/** A `session` line whenever a row starts or ends or a renewal fails (not at every renewal), at exit, and for a marked command. */
let told = '';
function tellSession(o: { final?: true; mark?: number } = {}): void {
  if (!session) return;
  const stats = session.stats;
  const key = `${stats.started}|${stats.ended}|${stats.failedRenewals}`;
  if (!o.final && o.mark === undefined && key === told) return;
  told = key;
  out({ type: 'session', ...(session.name ? { name: session.name } : {}), ...o, stats });
}
const sessionWatch = session ? setInterval(() => tellSession(), 50) : undefined;
// commands from here on (kept until then): a marked one is answered with the session's stats
take = (line) => {
  const cmd = parse(WorkerCommand, JSON.parse(line), 'chaos worker command');
  if (cmd.dynamodb !== undefined) fault = cmd.dynamodb ?? undefined;
  if (cmd.session !== undefined) sessionFault = cmd.session ?? undefined;
  if (cmd.clockStepMs !== undefined) skew += cmd.clockStepMs;
  // in the same turn: every line before this one tells of what came before the command
  if (cmd.mark !== undefined) tellSession({ mark: cmd.mark });
};
for (const line of early.splice(0)) take(line);

// the electors renew their leases themselves until it has started (a worker restarted inside a sessionLoss may wait long)
if (session) await settlesWithin(session.ready, 2_000);

const electors = leaseNames(env).map((leaseName) => {
  let writes = 0;
  const record = (event: HistoryRecord['event'], fencingToken: number, reason?: string) =>
    out({ type: 'history', record: { event, lease: leaseName, identity, instance: elector.instance, fencingToken, mono: monoNow(), wall: clock.now(), ...(reason ? { reason } : {}) } });
  const append = async (zombie: boolean, fencingToken: number, send: (input: ReturnType<typeof ledgerWrite>) => Promise<unknown>) => {
    const table = env.CHAOS_LEDGER_TABLE!;
    const entry = { lease: leaseName, id: `${elector.instance}#${++writes}`, identity, instance: elector.instance, fencingToken, sentMono: monoNow(), zombie };
    try {
      await send(ledgerWrite(table, entry));
      out({ type: 'fenced', lease: leaseName, accepted: true, zombie, mono: monoNow() });
    } catch (e) {
      if (e instanceof FencingError) out({ type: 'fenced', lease: leaseName, accepted: false, zombie, mono: monoNow() });
      else out({ type: 'error', lease: leaseName, message: `fenced write: ${(e as Error).name}: ${(e as Error).message}` });
    }
  };
  const elector: LeaderElector = new LeaderElector({
    leaseName,
    identity,
    tables,
    leaseDurationMs: env.LEASE_DURATION_MS,
    renewDeadlineMs: env.RENEW_DEADLINE_MS,
    retryPeriodMs: env.RETRY_PERIOD_MS,
    candidacy: { emulationVersion: env.EMULATION_VERSION, binaryVersion: env.BINARY_VERSION, renewIntervalMs: env.CANDIDATE_RENEW_MS },
    client,
    clock,
    ...(push ? { push } : {}),
    ...(session ? { session } : {}),
    ...(env.CHAOS_PLATFORM_ID ? { platform: { kind: 'ec2' as const, id: env.CHAOS_PLATFORM_ID, availabilityZone: 'local-1a' } } : {}),
    callbacks: {
      async onStartedLeading(signal, { fencingToken }) {
        record('started', fencingToken);
        if (!env.CHAOS_LEDGER_TABLE || env.CHAOS_WRITE_EVERY_MS === 0) return;
        // Not woken by the signal: after a pause this timer may fire before the renew deadline's,
        // and that write must be refused by the fence, not by the SDK's bookkeeping.
        while (!signal.aborted) {
          await append(false, fencingToken, (input) => elector.fencedWrite(input));
          await systemClock.sleep(env.CHAOS_WRITE_EVERY_MS);
        }
        if (env.CHAOS_ZOMBIE_MS === 0 || signal.reason === 'cancelled') return;
        const term = { holderIdentity: identity, fencingToken };
        const until = performance.now() + env.CHAOS_ZOMBIE_MS;
        while (performance.now() < until && !stopping) {
          await append(true, fencingToken, (input) => fencedTransactWrite(client, { table: tables.leases, leaseName, term }, input));
          await systemClock.sleep(env.CHAOS_WRITE_EVERY_MS);
        }
      },
      onStoppedLeading: ({ reason, fencingToken }) => record('stopped', fencingToken, reason),
    },
    onError: (e) => out({ type: 'error', lease: leaseName, message: `${e.name}: ${e.message}` }),
  });
  return elector;
});

const controller = new AbortController();

/**
 * The scheduled job (CHAOS_JOB_LEASE): an invocation every CHAOS_JOB_EVERY_MS, each withLease with
 * a run-once window of that length; history lines for the run's term (its own identity and
 * instance, as a Lambda invocation has), fenced ledger writes while it works, and the window's
 * completion in the marker's transaction.
 */
const jobs = new Set<Promise<unknown>>();
if (env.CHAOS_JOB_LEASE) {
  const lease = env.CHAOS_JOB_LEASE;
  let n = 0;
  const invoke = () => {
    if (controller.signal.aborted) return;
    const runIdentity = `${identity}-r${++n}`;
    const instance = `${runIdentity}_${process.pid}`;
    let writes = 0;
    const job = withLease(
      lease,
      async (signal, term) => {
        const token = term.fencingToken;
        const record = (event: HistoryRecord['event'], reason?: string) =>
          out({ type: 'history', record: { event, lease, identity: runIdentity, instance, fencingToken: token, mono: monoNow(), wall: clock.now(), ...(reason ? { reason } : {}) } });
        record('started');
        const entry = (id: string, window?: string) => ({ lease, id: `${instance}#${id}`, identity: runIdentity, instance, fencingToken: token, sentMono: monoNow(), zombie: false, ...(window ? { window } : {}) });
        try {
          const until = performance.now() + env.CHAOS_JOB_WORK_MS;
          while (!signal.aborted && performance.now() < until) {
            if (env.CHAOS_LEDGER_TABLE) {
              try {
                await term.fencedWrite(ledgerWrite(env.CHAOS_LEDGER_TABLE, entry(String(++writes))));
                out({ type: 'fenced', lease, accepted: true, zombie: false, mono: monoNow() });
              } catch (e) {
                if (e instanceof FencingError) out({ type: 'fenced', lease, accepted: false, zombie: false, mono: monoNow() });
                else out({ type: 'error', lease, message: `job fenced write: ${(e as Error).name}: ${(e as Error).message}` });
              }
            }
            await systemClock.sleep(env.CHAOS_WRITE_EVERY_MS || 250);
          }
          signal.throwIfAborted();
          if (env.CHAOS_LEDGER_TABLE) await term.complete(ledgerWrite(env.CHAOS_LEDGER_TABLE, entry('done', term.window)).TransactItems!);
        } finally {
          record('stopped', signal.aborted ? (signal.reason instanceof LeaseLostError ? signal.reason.reason : 'cancelled') : 'returned');
        }
      },
      {
        client,
        clock,
        tables,
        identity: runIdentity,
        mode: 'NoCoordination',
        runOnce: { every: env.CHAOS_JOB_EVERY_MS },
        signal: controller.signal,
        waitMs: env.LEASE_DURATION_MS,
        leaseDurationMs: env.LEASE_DURATION_MS,
        renewDeadlineMs: env.RENEW_DEADLINE_MS,
        retryPeriodMs: env.RETRY_PERIOD_MS,
        platform: 'none',
        onError: (e) => out({ type: 'error', lease, message: `job: ${e.name}: ${e.message}` }),
      },
    ).catch((e: unknown) => {
      if (!(e instanceof LeaseLostError) && !controller.signal.aborted) out({ type: 'error', lease, message: `job run: ${(e as Error).name}: ${(e as Error).message}` });
    });
    jobs.add(job);
    void job.finally(() => jobs.delete(job));
  };
  // each process at its own phase of the period
  const first = setTimeout(() => {
    invoke();
    const every = setInterval(invoke, env.CHAOS_JOB_EVERY_MS);
    controller.signal.addEventListener('abort', () => clearInterval(every), { once: true });
  }, random() * env.CHAOS_JOB_EVERY_MS);
  controller.signal.addEventListener('abort', () => clearTimeout(first), { once: true });
}

for (const sig of ['SIGTERM', 'SIGINT'] as const)
  process.on(sig, () => {
    stopping = true;
    controller.abort();
  });
out({ type: 'ready', identity, pid: process.pid, instances: Object.fromEntries(electors.map((e) => [e.options.leaseName, e.instance])) });
await Promise.all(
  electors.map((e) =>
    e.run(controller.signal).catch((err: unknown) => {
      // Not retried here: a worker whose run() gives up no longer stands, and the checker says so.
      out({ type: 'error', lease: e.options.leaseName, message: `run() rejected: ${(err as Error).name}: ${(err as Error).message}` });
    }),
  ),
);
await Promise.all(jobs);
sessionStop.abort();
await sessionRun;
clearInterval(sessionWatch);
tellSession({ final: true });
pushStop.abort();
await pushRun;
out({ type: 'exited' });
client.destroy();
process.exit(0);

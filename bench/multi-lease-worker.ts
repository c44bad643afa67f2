/**
 * A worker process that is a candidate on many leases at once, for the many-leases steady-state
 * scenario (bench/scenarios/multi-lease.ts): LEASE_COUNT LeaderElectors in one process, leases
 * `<LEASE>-0` … `<LEASE>-<n-1>`, all on one shared DynamoDBClient, as a service with many
 * controllers would run them. Configured like lib/local/demo/worker.ts (CONCLAVE_ENDPOINT,
 * CONCLAVE_TABLE_PREFIX, LEASE as the stem, IDENTITY, EMULATION_VERSION, BINARY_VERSION,
 * LEASE_DURATION_MS, RENEW_DEADLINE_MS, RETRY_PERIOD_MS; RENEW_INTERVAL_MS is passed on when set and
 * the SDK knows it) and speaking the same JSON lines, each `started`/`stopped` naming its lease.
 * Its requests are counted by role as bench/counting-worker.ts counts them (bench/roles.ts), per
 * lease, and printed every COUNT_REQUESTS_EVERY_MS (default 1000) and once more before `exited`.
 * CONCLAVE_PUSH_URL turns on the push path as in lib/local/demo/worker.ts: ONE PushChannel for the
 * process, shared by all its electors (one connection per process, whatever it stands for).
 * SESSION (default `on`; `off` for the bench's `--no-session`) runs ONE Session for the process,
 * shared by all its electors (lib/sdk/session.ts; timings from the electors' by
 * bench/session-timing.ts, which for the default 15/10/2 s are the Session's defaults: renewed
 * every 6 s; the SDK refuses timings that do not fit the electors): its renewals keep
 * every lease the process holds alive. It starts before the electors (they start once its first
 * row is written, so their first terms are won on it) and ends after them (run() waits for them,
 * then deletes the row). Each `requests` line then carries the session's counts (`session`).
 */
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { LeaderElector, Session, type LeaderElectorOptions } from '../lib/sdk/index.js';
import { PushChannel } from '../lib/sdk/push-entry.js';
import { defaultTableNames } from '../lib/tables.js';
import { RequestCounter, reportCounts } from './requests.js';
import { RoleTracker } from './roles.js';
import { sessionTimingFor } from './session-timing.js';

const env = (name: string, fallback?: string): string => {
  const v = process.env[name] ?? fallback;
  if (v === undefined) {
    console.error(`bench/multi-lease-worker: set ${name}`);
    process.exit(2);
  }
  return v;
};
const num = (name: string, fallback: number) => Number(process.env[name] ?? fallback);

const endpoint = env('CONCLAVE_ENDPOINT');
const prefix = env('CONCLAVE_TABLE_PREFIX');
const identity = env('IDENTITY');
const stem = env('LEASE');
const count = num('LEASE_COUNT', 100);
const timing = { leaseDurationMs: num('LEASE_DURATION_MS', 15_000), renewDeadlineMs: num('RENEW_DEADLINE_MS', 10_000), retryPeriodMs: num('RETRY_PERIOD_MS', 2_000) };
const client = new DynamoDBClient({ endpoint, region: 'local', credentials: { accessKeyId: 'local', secretAccessKey: 'local' } });
const say = (event: string, extra: Record<string, unknown> = {}) => process.stdout.write(`${JSON.stringify({ event, identity, at: Date.now(), ...extra })}\n`);

const useSession = env('SESSION', 'on');
if (useSession !== 'on' && useSession !== 'off') {
  console.error(`bench/multi-lease-worker: SESSION must be on or off, got "${useSession}"`);
  process.exit(2);
}
// One session for the whole process, given to every elector (its timings from theirs).
const session = useSession === 'on' ? new Session({ client, tables: prefix, prefix: `session-${identity}`, ...sessionTimingFor(timing), onError: (e) => say('error', { name: e.name, message: `session: ${e.message}` }) }) : undefined;

const roles = new RoleTracker(defaultTableNames(prefix), identity);
const counter = new RequestCounter().attach(client, (input, command) => roles.roleOf(input, command), { observe: (_c, input, output) => roles.observe(input, output) });
const reporter = reportCounts(counter, num('COUNT_REQUESTS_EVERY_MS', 1_000), (event, extra) => say(event, { ...extra, ...(session ? { session: session.stats } : {}) }));

// One MQTT connection for the whole process, given to every elector.
const pushUrl = process.env['CONCLAVE_PUSH_URL'];
const push = pushUrl ? new PushChannel({ endpoint: pushUrl, client, tables: prefix, onError: (e) => say('error', { name: e.name, message: `push: ${e.message}` }) }) : undefined;

// Passed on only when set: an SDK without the option refuses unknown options (strict schema).
const renewInterval = process.env['RENEW_INTERVAL_MS'] ? { renewIntervalMs: num('RENEW_INTERVAL_MS', 0) } : {};

const electors = Array.from({ length: count }, (_, i) => {
  const lease = `${stem}-${i}`;
  return new LeaderElector({
    leaseName: lease,
    identity,
    tables: prefix,
    ...timing,
    ...renewInterval,
    candidacy: { emulationVersion: env('EMULATION_VERSION', '1.0.0'), binaryVersion: env('BINARY_VERSION', env('EMULATION_VERSION', '1.0.0')) },
    client,
    ...(push ? { push } : {}),
    ...(session ? { session } : {}),
    callbacks: {
      onStartedLeading: async (signal, { fencingToken }) => {
        roles.leading(lease, true);
        say('started', { lease, fencingToken });
        if (!signal.aborted) await new Promise((r) => signal.addEventListener('abort', r, { once: true }));
      },
      onStoppedLeading: ({ reason, fencingToken }) => {
        roles.leading(lease, false);
        say('stopped', { lease, reason, fencingToken });
      },
    },
    onError: (e) => say('error', { lease, name: e.name, message: e.message }),
  } as LeaderElectorOptions);
});

const controller = new AbortController();
for (const sig of ['SIGTERM', 'SIGINT'] as const) process.on(sig, () => controller.abort());
// The channel connects in the background (the electors poll until it is live) and outlives them:
// stepping down, each hands its lease over and wakes the heir through it.
const pushStop = new AbortController();
const pushing = push?.run(pushStop.signal);
// The session's first row is written before the electors start; it runs until they have all
// finished (their releases first), then deletes its row.
const sessionRunning = session?.run(controller.signal);
await session?.ready;
say('ready', { leases: count, session: session?.name ?? null });
await Promise.all(electors.map((e) => e.run(controller.signal)));
await sessionRunning;
pushStop.abort();
await pushing;
reporter.flush();
say('exited');
client.destroy();

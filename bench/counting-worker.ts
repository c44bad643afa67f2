/**
 * lib/local/demo/worker.ts with its DynamoDB requests counted, for the steady-state scenario: run in the
 * example's place (WorkerSpec.script), it installs the counting and then imports the example
 * unchanged, so the example stays a plain consumer of the SDK and knows nothing of bench/.
 *
 * Requests are counted by role at send time, as bench/baseline/worker.ts counts its own (see
 * roleOf in bench/roles.ts): the candidates table's requests are `candidate`, the identities
 * table's `identity` (a session row's `session-renewal` and `session-read`); the leases table's are `leader` between the worker's `started` and
 * `stopped` lines (the example prints those lines from the elector's callbacks, synchronously, as
 * client-go's isLeader() changes), otherwise `successor` while the lease it last read or wrote
 * names this worker its successor, and `follower` else. The running totals are
 * printed as `requests` lines every COUNT_REQUESTS_EVERY_MS (default 1000), and once more just
 * before the worker's `exited` line, so the last count includes the release.
 */
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { defaultTableNames } from '../lib/tables.js';
import { RequestCounter, reportCounts } from './requests.js';
import { RoleTracker } from './roles.js';

const everyMs = Number(process.env['COUNT_REQUESTS_EVERY_MS'] ?? 1_000);
const identity = process.env['IDENTITY'] ?? '';
const roles = new RoleTracker(defaultTableNames(process.env['CONCLAVE_TABLE_PREFIX'] ?? 'conclave'), identity);

const counter = new RequestCounter();

// Every DynamoDBClient the worker makes is counted from its first request on: the middleware is
// added before that request resolves its handler.
type Send = (this: DynamoDBClient, ...args: unknown[]) => unknown;
const proto = DynamoDBClient.prototype as unknown as { send: Send };
const send = proto.send;
const counted = new WeakSet<DynamoDBClient>();
proto.send = function (this: DynamoDBClient, ...args: unknown[]) {
  if (!counted.has(this)) {
    counted.add(this);
    counter.attach(this, (input, command) => roles.roleOf(input, command), { observe: (_c, input, output) => roles.observe(input, output) });
  }
  return send.apply(this, args);
};

// The worker's own JSON lines say when it leads and when it exits.
const write = process.stdout.write.bind(process.stdout) as (...args: unknown[]) => boolean;
const say = (event: string, extra: Record<string, unknown>) => write(`${JSON.stringify({ event, identity, at: Date.now(), ...extra })}\n`);
const reporter = reportCounts(counter, everyMs, say);
const watch = (chunk: string) => {
  for (const line of chunk.split('\n')) {
    if (!line.startsWith('{')) continue;
    const { event } = JSON.parse(line) as { event?: string };
    if (event === 'started') roles.leading(undefined, true);
    else if (event === 'stopped') roles.leading(undefined, false);
    else if (event === 'exited') reporter.flush(); // the last count, printed before the exit line
  }
};
process.stdout.write = ((chunk: unknown, ...rest: unknown[]) => {
  if (typeof chunk === 'string') watch(chunk);
  return write(chunk, ...rest);
}) as typeof process.stdout.write;

await import('../lib/local/demo/worker.js');

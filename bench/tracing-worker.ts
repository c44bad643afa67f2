/**
 * lib/local/demo/worker.ts with the hand-off's path traced, for the hand-off scenario (issue 38,
 * item 3): run in the example's place (WorkerSpec.script), it installs the tracing and then imports
 * the example unchanged, as bench/counting-worker.ts does with its counts.
 *
 * Each step is printed as a `trace` JSON line stamped on this machine's clock (every worker
 * process reads the same one):
 * - `sigterm`: the signal reached the process (this listener is installed before the example's);
 * - `ddb`: a DynamoDB request — its command, the table's kind (`leases`, `candidates`, …), when it
 *   was sent and answered, and whether it failed (the error's name);
 * - `wakeSent`: the push channel published a wake (after a hand-off or a release this worker wrote);
 * - `wakeReceived`: a wake reached an elector of this process, with who sent it (`worker` or `stream`).
 * bench/handoff-trace.ts reads the lines of the stopping leader and of its successor and splits
 * SIGTERM → new leader into its parts.
 */
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { PushChannel } from '../lib/sdk/push-channel.js';
import type { Wake } from '../lib/schemas/push.js';
import { defaultTableNames } from '../lib/tables.js';

const identity = process.env['IDENTITY'] ?? '';
const tables = defaultTableNames(process.env['CONCLAVE_TABLE_PREFIX'] ?? 'conclave');
const kindOf = new Map<string, string>(Object.entries(tables).map(([kind, name]) => [name, kind]));
const write = process.stdout.write.bind(process.stdout);
const trace = (step: string, extra: Record<string, unknown> = {}) => write(`${JSON.stringify({ event: 'trace', identity, at: Date.now(), step, ...extra })}\n`);

process.on('SIGTERM', () => trace('sigterm'));

// Every DynamoDBClient the worker makes is traced from its first request on.
type Send = (this: DynamoDBClient, ...args: unknown[]) => unknown;
const proto = DynamoDBClient.prototype as unknown as { send: Send };
const send = proto.send;
const traced = new WeakSet<DynamoDBClient>();
proto.send = function (this: DynamoDBClient, ...args: unknown[]) {
  if (!traced.has(this)) {
    traced.add(this);
    this.middlewareStack.add(
      (next, context) => async (a) => {
        const command = String(context.commandName ?? 'Unknown').replace(/Command$/, '');
        const table = (a.input as { TableName?: string }).TableName;
        const sent = Date.now();
        const line = { command, table: (table && kindOf.get(table)) ?? table ?? '-', sent };
        try {
          const out = await next(a);
          trace('ddb', { ...line, done: Date.now() });
          return out;
        } catch (e) {
          trace('ddb', { ...line, done: Date.now(), failed: (e as Error).name });
          throw e;
        }
      },
      { step: 'initialize', name: 'benchHandoffTrace', override: true },
    );
  }
  return send.apply(this, args);
};

// The push channel's two ends: what it publishes, and every wake it passes to an elector.
const channel = PushChannel.prototype;
const wake = channel.wake;
channel.wake = function (this: PushChannel, lease: string, revision?: number) {
  trace('wakeSent', { lease, ...(revision !== undefined ? { revision } : {}), healthy: this.healthy() });
  return wake.call(this, lease, revision);
};
const watch = channel.watch;
channel.watch = function (this: PushChannel, lease: string, onWake: (w: Wake | undefined) => void) {
  return watch.call(this, lease, (w) => {
    if (w) trace('wakeReceived', { lease, by: w.by, ...(w.revision !== undefined ? { revision: w.revision } : {}) });
    onWake(w);
  });
};

await import('../lib/local/demo/worker.js');

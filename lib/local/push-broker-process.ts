/**
 * The local push broker (lib/local/push-broker.ts) in a process of its own, as IoT Core is a service
 * of its own: a wake from one worker to another then crosses a broker whose event loop does nothing
 * else, not the local runtime's, where the functions run the stream batches the very same lease
 * write set off (and, in `npm run bench`, the harness's own polling). The same PushBroker, driven
 * over Node's IPC channel: the child reports its counts whenever they change, and answers
 * `outage`, `restore` and `stop`.
 *
 * This file is both ends: imported, it starts the child (itself, run with `CONCLAVE_PUSH_BROKER=child`).
 */
import { fork, type ChildProcess } from 'node:child_process';
import * as z from 'zod';
import { systemClock } from '../clock.js';
import { parse } from '../schemas/validation.js';
import { startPushBroker, type PushBroker, type PushBrokerStats } from './push-broker.js';

const ROLE_VARIABLE = 'CONCLAVE_PUSH_BROKER';

const StatsSchema = z.strictObject({
  published: z.number().int().nonnegative(),
  workerPublished: z.number().int().nonnegative(),
  delivered: z.number().int().nonnegative(),
  connectionMs: z.number().nonnegative(),
  connections: z.number().int().nonnegative(),
  subscriptions: z.number().int().nonnegative(),
});

/** What the child says: its endpoints once listening, its counts as they change, the answer to a request. */
const FromChild = z.discriminatedUnion('type', [
  z.strictObject({ type: z.literal('ready'), wsEndpoint: z.string().startsWith('ws://'), httpEndpoint: z.string().startsWith('http://'), stats: StatsSchema }),
  z.strictObject({ type: z.literal('stats'), stats: StatsSchema }),
  z.strictObject({ type: z.literal('reply'), id: z.number().int(), error: z.string().optional() }),
]);
type FromChild = z.infer<typeof FromChild>;

/** What the parent asks of the child. */
const ToChild = z.discriminatedUnion('op', [
  z.strictObject({ op: z.literal('outage'), id: z.number().int(), publishes: z.boolean() }),
  z.strictObject({ op: z.literal('restore'), id: z.number().int() }),
  z.strictObject({ op: z.literal('stop'), id: z.number().int() }),
]);
type ToChild = z.infer<typeof ToChild>;
type Request = ToChild extends infer R ? (R extends ToChild ? Omit<R, 'id'> : never) : never;

/** The process's own file, run again as the child: a `.ts` source under tsx, compiled `.js` in a package. */
const SELF = import.meta.filename;

/**
 * Starts the broker in a child process on 127.0.0.1 (any free port); `stop()` ends it. `stats()`
 * answers from the counts the child last reported (a change reaches this process within an IPC
 * message), with open connections' time counted up to now.
 */
export async function startPushBrokerProcess(): Promise<PushBroker> {
  const child: ChildProcess = fork(SELF, [], {
    env: { ...process.env, [ROLE_VARIABLE]: 'child' },
    execArgv: SELF.endsWith('.ts') ? ['--import', 'tsx'] : [],
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  let stats: PushBrokerStats | undefined;
  let statsAt = systemClock.monotonic();
  let nextId = 0;
  const pending = new Map<number, { resolve: () => void; reject: (e: Error) => void }>();
  let exited = false;
  const gone = new Promise<void>((resolve) =>
    child.once('exit', (code, signal) => {
      exited = true;
      for (const p of pending.values()) p.reject(new Error(`the push broker's process exited (${signal ?? code})`));
      pending.clear();
      resolve();
    }),
  );
  const ready = new Promise<{ wsEndpoint: string; httpEndpoint: string }>((resolve, reject) => {
    child.once('exit', (code, signal) => reject(new Error(`the push broker's process exited before it listened (${signal ?? code})`)));
    child.on('message', (raw) => {
      const m: FromChild = parse(FromChild, raw, "push broker process's message");
      if (m.type === 'reply') {
        const p = pending.get(m.id);
        pending.delete(m.id);
        if (m.error === undefined) p?.resolve();
        else p?.reject(new Error(m.error));
        return;
      }
      stats = m.stats;
      statsAt = systemClock.monotonic();
      if (m.type === 'ready') resolve({ wsEndpoint: m.wsEndpoint, httpEndpoint: m.httpEndpoint });
    });
  });
  const ask = (req: Request): Promise<void> => {
    if (exited) return Promise.reject(new Error("the push broker's process has exited"));
    const id = ++nextId;
    return new Promise<void>((resolve, reject) => {
      pending.set(id, { resolve, reject });
      child.send({ ...req, id });
    });
  };
  const { wsEndpoint, httpEndpoint } = await ready;
  return {
    wsEndpoint,
    httpEndpoint,
    stats() {
      const s = stats!;
      return { ...s, connectionMs: s.connectionMs + s.connections * (systemClock.monotonic() - statsAt) };
    },
    async outage(o = {}) {
      await ask({ op: 'outage', publishes: o.publishes ?? false });
      return () => ask({ op: 'restore' });
    },
    async stop() {
      if (!exited) await ask({ op: 'stop' }).catch(() => undefined); // it may exit before the reply arrives
      await gone;
    },
  };
}

/** The child: the broker, its counts sent whenever they change (once for the changes of one task, ahead of any reply it sends), and the parent's requests. */
async function child(): Promise<void> {
  const send = (m: FromChild) => process.send!(m);
  let queued = false;
  const broker: PushBroker = await startPushBroker({
    onChange() {
      if (queued) return;
      queued = true;
      queueMicrotask(() => {
        queued = false;
        send({ type: 'stats', stats: broker.stats() });
      });
    },
  });
  let restore: (() => Promise<void>) | undefined;
  let stopping: Promise<void> | undefined;
  const stop = () => (stopping ??= broker.stop());
  process.on('message', (raw) => {
    const req = parse(ToChild, raw, 'push broker request');
    const answer = async () => {
      if (req.op === 'outage') restore = await broker.outage({ publishes: req.publishes });
      else if (req.op === 'restore') await restore?.();
      else await stop();
    };
    answer().then(
      () => {
        // the counts as they are now, ahead of the reply: the parent's stats() then agree with what it asked
        if (req.op !== 'stop') send({ type: 'stats', stats: broker.stats() });
        send({ type: 'reply', id: req.id });
        if (req.op === 'stop') process.disconnect();
      },
      (e: unknown) => send({ type: 'reply', id: req.id, error: (e as Error).message }),
    );
  });
  // the parent went away without stopping it: nothing is left to serve
  process.once('disconnect', () => void stop().finally(() => process.exit(0)));
  send({ type: 'ready', wsEndpoint: broker.wsEndpoint, httpEndpoint: broker.httpEndpoint, stats: broker.stats() });
}

if (process.env[ROLE_VARIABLE] === 'child' && process.send) await child();

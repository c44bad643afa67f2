/**
 * How long a PushChannel's run() takes to resolve once its signal aborts, on the paths a shutdown
 * meets: connected, connecting to a broker that never answers, and connected over a path gone
 * half-open (a proxy on loopback that stops forwarding); and how long a process that exits on its
 * own takes to exit after run() resolved while connecting (a connection left to mqtt's 10 s
 * connect timeout held it 10 s: 10,447 ms before the fix of 2026-12-06). Local mode's broker;
 * prints; asserts nothing (test/sdk/push-channel-faults.test.ts holds the behaviour).
 *
 *   npx tsx bench/push-stop.ts [--runs 3]
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { connect, createServer, type Socket } from 'node:net';
import { systemClock } from '../lib/clock.js';
import { startPushBroker } from '../lib/local/push-broker.js';
import { PushChannel } from '../lib/sdk/push-channel.js';

// the child of the exit scenario: stops its channel once connecting to the black hole given, then exits on its own
const child = process.argv.indexOf('--child');
if (child >= 0) {
  const channel = new PushChannel({ endpoint: process.argv[child + 1]!, tables: 'bench', onError: () => undefined });
  const stop = new AbortController();
  const run = channel.run(stop.signal);
  void channel.ready.catch(() => undefined);
  await systemClock.sleep(300);
  stop.abort();
  await run;
  console.log('resolved');
} else {
  await main();
}

async function main() {
  const i = process.argv.indexOf('--runs');
  const runs = i >= 0 ? Number(process.argv[i + 1]) : 3;
  const broker = await startPushBroker();

  async function proxy(blackHole: boolean) {
    const target = new URL(broker.wsEndpoint);
    let frozen = false;
    const socks = new Set<Socket>();
    const server = createServer((a) => {
      socks.add(a.on('error', () => undefined));
      if (blackHole) return;
      const b = connect(Number(target.port), target.hostname).on('error', () => undefined);
      socks.add(b);
      a.on('data', (d) => void (frozen || b.write(d))).on('close', () => b.destroy());
      b.on('data', (d) => void (frozen || a.write(d))).on('close', () => a.destroy());
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    return { endpoint: `ws://127.0.0.1:${(server.address() as { port: number }).port}/mqtt`, count: () => socks.size, freeze: () => void (frozen = true), close: () => (socks.forEach((s) => s.destroy()), server.close()) };
  }

  async function stopMs(how: 'connected' | 'connecting, never answered' | 'half-open'): Promise<number> {
    const p = how === 'connected' ? undefined : await proxy(how !== 'half-open');
    const channel = new PushChannel({ endpoint: p?.endpoint ?? broker.wsEndpoint, tables: 'bench', onError: () => undefined });
    const stop = new AbortController();
    const run = channel.run(stop.signal);
    if (how === 'connecting, never answered') while (p!.count() === 0) await systemClock.sleep(10);
    else await channel.ready;
    if (how === 'half-open') p!.freeze();
    const from = systemClock.monotonic();
    stop.abort();
    await run;
    const ms = systemClock.monotonic() - from;
    p?.close();
    return ms;
  }

  for (const how of ['connected', 'connecting, never answered', 'half-open'] as const) {
    const ms: number[] = [];
    for (let r = 0; r < runs; r++) ms.push(await stopMs(how));
    console.log(`stopped while ${how}: run() resolved after ${ms.map((x) => Math.round(x)).join(', ')} ms`);
  }
  const hole = await proxy(true);
  const exits: number[] = [];
  for (let r = 0; r < runs; r++) {
    const c = spawn(process.execPath, ['--import', 'tsx', new URL(import.meta.url).pathname, '--child', hole.endpoint], { stdio: ['ignore', 'pipe', 'inherit'] });
    await once(c.stdout!, 'data');
    const from = systemClock.monotonic();
    await once(c, 'exit');
    exits.push(systemClock.monotonic() - from);
  }
  console.log(`a process that exits on its own, stopped while connecting: exited ${exits.map((x) => Math.round(x)).join(', ')} ms after run() resolved`);
  hole.close();
  await broker.stop();
  process.exit(0);
}

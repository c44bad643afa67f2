/**
 * Loopback servers and proxies in front of DynamoDB Local that bring the network's faults: a server
 * that accepts and never answers, a flow that goes dead (black-holed), a connection reset as
 * DynamoDB answers (the request landed, its answer never arrives, and the AWS SDK sends it again).
 */
import { createServer, connect, type Server, type Socket } from 'node:net';

export interface Listening {
  server: Server;
  endpoint: string;
  sockets: Set<Socket>;
}

/** Listens on loopback (on `port`, any free one by default); `onSocket` gets each connection. */
export async function listen(onSocket: (s: Socket) => void, port = 0): Promise<Listening> {
  const sockets = new Set<Socket>();
  const server = createServer((s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
    s.on('error', () => undefined);
    onSocket(s);
  });
  await new Promise<void>((r) => server.listen(port, '127.0.0.1', () => r()));
  return { server, endpoint: `http://127.0.0.1:${(server.address() as { port: number }).port}`, sockets };
}

export async function close(l: Pick<Listening, 'server' | 'sockets'>): Promise<void> {
  for (const s of l.sockets) s.destroy();
  await new Promise<void>((r) => l.server.close(() => r()));
}

/**
 * A proxy in front of `target` (DynamoDB Local): once armed (`times`, once by default), each of
 * the next connections that carry a request `matches` picks (by its text) passes it on, then is
 * reset as DynamoDB answers: the request landed, its answer never arrives, and the AWS SDK sends it
 * again on a new connection. `resets()` counts them.
 */
export async function resettingProxy(target: string, matches: (request: string) => boolean): Promise<{ proxy: Listening; arm: (times?: number) => void; resets: () => number }> {
  const to = new URL(target);
  let armed = 0;
  let resets = 0;
  const proxy = await listen((s) => {
    let resetting = false;
    const up = connect(Number(to.port), to.hostname);
    up.on('error', () => undefined);
    s.on('data', (d) => {
      if (armed > 0 && !resetting && matches(d.toString('latin1'))) {
        armed--;
        resetting = true;
      }
      up.write(d);
    });
    up.on('data', (d) => {
      if (!resetting) return void s.write(d);
      resets++;
      s.resetAndDestroy();
      up.destroy();
    });
    s.on('close', () => up.destroy());
    up.on('close', () => s.destroy());
  });
  return { proxy, arm: (times = 1) => void (armed = times), resets: () => resets };
}

/**
 * A proxy in front of `target` (DynamoDB Local) that passes everything on while open; `close()`
 * closes its port (connections reset, new ones refused: DynamoDB Local gone), `open()` listens on
 * the same port again (DynamoDB Local back).
 */
export async function closableProxy(target: string): Promise<{ endpoint: string; close: () => Promise<void>; open: () => Promise<void> }> {
  const to = new URL(target);
  const forward = (s: Socket) => {
    const up = connect(Number(to.port), to.hostname);
    up.on('error', () => undefined);
    s.pipe(up).pipe(s);
    s.on('close', () => up.destroy());
    up.on('close', () => s.destroy());
  };
  let l: Listening | undefined = await listen(forward);
  const { endpoint } = l;
  return {
    endpoint,
    close: async () => {
      if (l) await close(l);
      l = undefined;
    },
    open: async () => {
      l ??= await listen(forward, Number(new URL(endpoint).port));
    },
  };
}

/**
 * A proxy in front of `target` (DynamoDB Local) that passes each chunk a client sends through
 * `rewrite` first (which must keep its length: the request's Content-Length stands; DynamoDB Local
 * checks no signature), and the answers back as they are.
 */
export async function rewritingProxy(target: string, rewrite: (chunk: string) => string): Promise<Listening> {
  const to = new URL(target);
  return listen((s) => {
    const up = connect(Number(to.port), to.hostname);
    up.on('error', () => undefined);
    s.on('data', (d) => up.write(Buffer.from(rewrite(d.toString('latin1')), 'latin1')));
    up.pipe(s);
    s.on('close', () => up.destroy());
    up.on('close', () => s.destroy());
  });
}

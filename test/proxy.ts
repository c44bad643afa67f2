/**
 * Loopback servers and proxies in front of DynamoDB Local that bring the network's faults: a server
 * that accepts and never answers, a flow that goes dead (black-holed), a connection reset as
 * DynamoDB answers (the request landed, its answer never arrives, and the AWS SDK sends it again),
 * a table still being created (AWS's CREATING).
 */
import { spawn } from 'node:child_process';
import { createServer as createHttpServer, request, type IncomingHttpHeaders, type ServerResponse } from 'node:http';
import { createServer, connect, type Server, type Socket } from 'node:net';
import { sleepOn, type Clock } from '../lib/clock.js';
import { listenOnLoopback } from './support.js';

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
 * A proxy in front of `target` (DynamoDB Local) that passes everything on until `hang()`: from then
 * on it accepts connections and takes every request, on new connections and on those kept alive,
 * and never answers (a DynamoDB Local wedged, a flow black-holed past the proxy); `pass()` passes on
 * again. `hung()` counts the requests taken and left unanswered. With `matches`, only the requests
 * whose head (request line and headers, e.g. `x-amz-target`) it picks are taken so: one request
 * stalled while the others are answered. A request taken stays unanswered after `pass()`, and its
 * connection open until the client closes it (DynamoDB Local closing the idle connection behind
 * it, after 30 s, is not passed on: a stall never ends by itself); `abandoned()` counts the requests
 * taken whose connection the client closed (gave up on them).
 */
export async function hangingProxy(target: string, matches: (head: string) => boolean = () => true): Promise<{ endpoint: string; hang: () => void; pass: () => void; hung: () => number; abandoned: () => number; close: () => Promise<void> }> {
  const to = new URL(target);
  let hanging = false;
  let hung = 0;
  let abandoned = 0;
  const l = await listen((s) => {
    const up = connect(Number(to.port), to.hostname);
    up.on('error', () => undefined);
    let taking = false; // the request the connection carries now is taken and left unanswered
    s.on('data', (d) => {
      const text = d.toString('latin1');
      if (text.startsWith('POST ')) {
        taking = hanging && matches(text);
        if (taking) hung++;
      }
      if (!taking) up.write(d);
    });
    up.pipe(s, { end: false });
    s.on('close', () => {
      if (taking) abandoned++;
      up.destroy();
    });
    up.on('close', () => void (taking || s.destroy()));
  });
  return { endpoint: l.endpoint, hang: () => void (hanging = true), pass: () => void (hanging = false), hung: () => hung, abandoned: () => abandoned, close: () => close(l) };
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

/**
 * An HTTP proxy in front of `target` (DynamoDB Local) on loopback: each request, its body read whole,
 * goes to `handle` with its operation (`GetItem`, …) and `passOn`, which sends it to `target` and
 * hands DynamoDB's answer to `back` (its status, headers but length and checksum, and body, which
 * `back` may rewrite). `inFlight()` counts the requests not answered yet.
 */
async function answeringProxy(
  target: string,
  handle: (x: { res: ServerResponse; body: Buffer; operation: string; passOn: (back: (status: number, headers: IncomingHttpHeaders, body: Buffer) => void) => void }) => void,
): Promise<{ endpoint: string; inFlight: () => number; close: () => Promise<void> }> {
  const to = new URL(target);
  let inFlight = 0;
  const server = createHttpServer((req, res) => {
    inFlight++;
    res.on('close', () => void inFlight--);
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      const passOn = (back: (status: number, headers: IncomingHttpHeaders, body: Buffer) => void) => {
        const up = request({ host: to.hostname, port: Number(to.port), method: req.method, path: req.url, headers: req.headers }, (r) => {
          const answer: Buffer[] = [];
          r.on('data', (c: Buffer) => answer.push(c));
          r.on('end', () => {
            const { 'content-length': _, 'x-amz-crc32': __, ...headers } = r.headers; // the body may be rewritten: its length and checksum are the new one's
            back(r.statusCode ?? 500, headers, Buffer.concat(answer));
          });
        });
        up.on('error', () => res.destroy());
        up.end(body);
      };
      handle({ res, body, operation: String(req.headers['x-amz-target'] ?? '').split('.')[1] ?? '', passOn });
    });
  });
  const port = await listenOnLoopback(server);
  return {
    endpoint: `http://127.0.0.1:${port}`,
    inFlight: () => inFlight,
    close: () => new Promise<void>((r) => { server.closeAllConnections(); server.close(() => r()); }),
  };
}

/**
 * A proxy in front of `target` (DynamoDB Local) under which `table` is being created, as AWS shows
 * a table still CREATING (DynamoDB Local never does: its CreateTable answers with the table ACTIVE).
 * `creating(n)`: the next `n` requests on the table other than DescribeTable are answered
 * ResourceNotFoundException, as DynamoDB answers data-plane requests on a CREATING table; meanwhile
 * DescribeTable on it says TableStatus CREATING (`describe: 'creating'`), or is refused with
 * AccessDeniedException (`'denied'`: a role granted no DescribeTable, as by grantWorker before 0.2.0 or a policy of the user's own),
 * or says ACTIVE as DynamoDB Local does (`'active'`: a request that finds no table DescribeTable shows).
 * DescribeTable on each of `creatingToo` says CREATING whatever (an unrelated table being made).
 * Every other request, and every one after those `n`, is passed on as it is. `notFound()` counts
 * the requests answered so, `described()` the DescribeTable requests on the table, `inFlight()`
 * the requests not answered yet.
 */
export async function creatingTableProxy(
  target: string,
  table: string,
  o: { describe: 'creating' | 'denied' | 'active'; creatingToo?: readonly string[] },
): Promise<{ endpoint: string; creating: (n: number) => void; notFound: () => number; described: () => number; inFlight: () => number; close: () => Promise<void> }> {
  let left = 0;
  let notFound = 0;
  let described = 0;
  /** An answer as DynamoDB's: its headers (a Date, which a server clock reads; a request id, without which it is not DynamoDB's), the length of the body as sent. */
  const answer = (res: ServerResponse, status: number, body: string, headers: IncomingHttpHeaders = { date: new Date().toUTCString(), 'x-amzn-requestid': `creating-proxy-${notFound + described}` }) => {
    res.writeHead(status, { ...headers, 'content-type': 'application/x-amz-json-1.0', 'content-length': Buffer.byteLength(body) });
    res.end(body);
  };
  const error = (type: string, message: string) => JSON.stringify({ __type: `com.amazonaws.dynamodb.v20120810#${type}`, message });
  const proxy = await answeringProxy(target, ({ res, body, operation, passOn }) => {
    let name: unknown;
    try {
      name = (JSON.parse(body.toString('utf8')) as { TableName?: unknown }).TableName;
    } catch {
      name = undefined;
    }
    const named = name === table;
    const describing = named && operation === 'DescribeTable';
    const otherCreating = operation === 'DescribeTable' && typeof name === 'string' && (o.creatingToo ?? []).includes(name);
    if (describing) described++;
    if (named && left > 0 && !describing) {
      left--;
      notFound++;
      return answer(res, 400, error('ResourceNotFoundException', 'Requested resource not found'));
    }
    if (describing && left > 0 && o.describe === 'denied') return answer(res, 400, error('AccessDeniedException', `not authorized to perform: dynamodb:DescribeTable on resource ${table}`));
    passOn((status, headers, back) => {
      let text = back.toString('utf8');
      if ((describing && left > 0 && o.describe === 'creating') || otherCreating) text = text.replace('"TableStatus":"ACTIVE"', '"TableStatus":"CREATING"');
      answer(res, status, text, headers);
    });
  });
  return { ...proxy, creating: (n) => void (left = n), notFound: () => notFound, described: () => described };
}

/** What foreignAnswersProxy answers instead of DynamoDB: see there. */
export type ForeignAnswer = 'empty200' | 'html502' | 'forbidden403' | 'cut200' | 'throttled';

/**
 * A proxy in front of `target` (DynamoDB Local) that passes each request on and DynamoDB's answer
 * back as it is (its headers, x-amzn-RequestId among them), except the requests `matches` picks
 * (by operation: `GetItem`, `UpdateItem`…) while `answer(kind)` is set, which are answered as
 * something other than DynamoDB would: `empty200`, "200 OK" with no body and no x-amzn-RequestId,
 * not passed on (a stand-in that says yes to anything); `html502`, a load balancer's HTML error
 * page, not passed on; `forbidden403`, an API gateway's refusal (JSON, `{"message":"Forbidden"}`, no
 * request id), not passed on; `cut200`, passed on (so a write lands) and DynamoDB's answer cut to half its
 * length; `throttled`, DynamoDB's own answer to a throttled request (HTTP 400 ThrottlingException,
 * with a request id), not passed on. `answer(undefined)` passes everything again. `foreign()` counts the requests so
 * answered, `inFlight()` the requests not answered yet.
 */
export async function foreignAnswersProxy(target: string, matches: (operation: string) => boolean = () => true) {
  let kind: ForeignAnswer | undefined;
  let foreign = 0;
  const send = (res: ServerResponse, status: number, type: string, body: string, headers: IncomingHttpHeaders = {}) =>
    void res.writeHead(status, { ...headers, 'content-type': type, 'content-length': Buffer.byteLength(body) }).end(body);
  const proxy = await answeringProxy(target, ({ res, operation, passOn }) => {
    const now = kind !== undefined && matches(operation) ? kind : undefined;
    if (now !== undefined) foreign++;
    if (now === 'empty200') return send(res, 200, 'application/x-amz-json-1.0', '');
    if (now === 'throttled')
      return send(res, 400, 'application/x-amz-json-1.0', JSON.stringify({ __type: 'com.amazonaws.dynamodb.v20120810#ThrottlingException', message: 'Rate of requests exceeds the allowed throughput.' }), { 'x-amzn-requestid': `throttled-${foreign}` });
    if (now === 'forbidden403') return send(res, 403, 'application/json', JSON.stringify({ message: 'Forbidden' }));
    // (led by a terminal escape, which a message printing the page must not pass on)
    if (now === 'html502') return send(res, 502, 'text/html', '\u001b[2J<html><head><title>502 Bad Gateway</title></head><body>502 Bad Gateway</body></html>');
    passOn((status, headers, body) => {
      const cut = now === 'cut200' && status === 200 ? body.subarray(0, Math.ceil(body.length / 2)) : body;
      res.writeHead(status, { ...headers, 'content-length': cut.length }).end(cut);
    });
  });
  return { ...proxy, answer: (k: ForeignAnswer | undefined) => void (kind = k), foreign: () => foreign };
}

/**
 * A proxy in front of `target` (DynamoDB Local) that passes every request on, except that while
 * `holding(true)` it holds the requests `matches` picks (by operation and body) unanswered until
 * `release()` passes them on. `held()` counts the requests held, `inFlight()` every request not
 * answered yet, held ones included.
 */
export async function holdingProxy(target: string, matches: (operation: string, body: string) => boolean) {
  let holding = false;
  const held: (() => void)[] = [];
  const proxy = await answeringProxy(target, ({ res, body, operation, passOn }) => {
    const answer = () => passOn((status, headers, back) => void res.writeHead(status, { ...headers, 'content-length': back.length }).end(back));
    if (holding && matches(operation, body.toString('utf8'))) held.push(answer);
    else answer();
  });
  return {
    ...proxy,
    holding: (on: boolean) => void (holding = on),
    held: () => held.length,
    release: () => {
      holding = false;
      for (const answer of held.splice(0)) answer();
    },
  };
}

/** A proxy in front of `target` (DynamoDB Local) whose answers' Date header is `aheadMs` later: DynamoDB's clock ahead of this machine's (this machine's slow). */
export async function aheadProxy(target: string, aheadMs: number) {
  return answeringProxy(target, ({ res, passOn }) =>
    passOn((status, headers, back) => void res.writeHead(status, { ...headers, date: new Date(Date.parse(String(headers.date)) + aheadMs).toUTCString(), 'content-length': back.length }).end(back)),
  );
}

/**
 * A proxy in front of `target` (DynamoDB Local) that answers as DynamoDB Local before 2.2.0 does: a
 * write its condition refuses (ConditionalCheckFailedException) comes back without the item that
 * ReturnValuesOnConditionCheckFailure asks for. Everything else is passed on as it is.
 */
export async function itemlessConflictsProxy(target: string) {
  return answeringProxy(target, ({ res, passOn }) =>
    passOn((status, headers, back) => {
      const text = back.toString('utf8');
      const answer = status === 400 && text.includes('ConditionalCheckFailedException') ? Buffer.from(JSON.stringify({ ...(JSON.parse(text) as Record<string, unknown>), Item: undefined })) : back;
      res.writeHead(status, { ...headers, 'content-length': answer.length }).end(answer);
    }),
  );
}

/**
 * A clock the test moves: its timers fire in the order they are due, the next one only once no
 * request is in flight at the proxy and the process has turned its event loop IDLE_TURNS times
 * since (the SDK is waiting on a timer, not on DynamoDB). `waited()` is the time gone by on it;
 * `stall(ms)` moves it without firing any timer.
 */
const IDLE_TURNS = 20;
export function drivenClock(busy: () => boolean) {
  const start = 1_800_000_000_000;
  let at = start;
  let seq = 0;
  const timers: { at: number; seq: number; fn: () => void; live: boolean }[] = [];
  const clock: Clock = {
    now: () => Math.floor(at),
    monotonic: () => at,
    setTimer(ms, fn) {
      const x = { at: at + Math.max(0, ms), seq: seq++, fn, live: true };
      timers.push(x);
      return { cancel: () => void (x.live = false) };
    },
    sleep: (ms, signal) => sleepOn(clock, ms, signal),
    random: () => 0.5,
  };
  /**
   * Moves the clock, a timer at a time, until `done()`. The guard against a condition never met
   * counts only the turns with no request in flight: the turns spent waiting on DynamoDB Local grow
   * with the machine's load (a busy CI machine spent a million of them in one simulated minute).
   */
  const drive = async (done: () => boolean) => {
    for (let idle = 0, quiet = 0; !done(); ) {
      if (quiet > 1_000_000) throw new Error('the clock was driven a million quiet turns without the condition being met');
      await new Promise<void>((resolve) => setImmediate(resolve));
      if (busy()) idle = 0;
      else if ((quiet++, ++idle >= IDLE_TURNS)) {
        idle = 0;
        const next = timers.filter((x) => x.live).sort((a, b) => a.at - b.at || a.seq - b.seq)[0];
        if (!next) continue;
        next.live = false;
        at = Math.max(at, next.at);
        next.fn();
      }
    }
  };
  /** The clock moves `ms` and no timer fires (the event loop blocked: a busy machine); the next drive fires the overdue ones in the order they were due. */
  const stall = (ms: number) => void (at += ms);
  return { clock, drive, stall, waited: () => at - start };
}

/**
 * Whether `client` has a request under way: sent and not yet answered (or failed), retries
 * included. A drivenClock's `busy` for a client that talks to DynamoDB Local directly.
 */
export function inFlight(client: { middlewareStack: { add: (mw: never, opts: { step: 'initialize'; name: string; priority: 'high' }) => void } }): () => boolean {
  let n = 0;
  const count = (next: (args: unknown) => Promise<unknown>) => async (args: unknown) => {
    n++;
    try {
      return await next(args);
    } finally {
      n--;
    }
  };
  client.middlewareStack.add(count as never, { step: 'initialize', name: 'inFlight', priority: 'high' });
  return () => n > 0;
}

/**
 * A loopback port whose TCP handshakes are never answered, as a route that drops packets: a
 * listener (in a process of its own, blocked for good once it prints its port; a pipe's write is
 * synchronous on Linux) that never accepts, its queue of one filled, so the kernel drops further SYNs.
 */
export async function synDroppingPort(): Promise<{ port: number; close: () => void }> {
  const blocked = spawn(
    process.execPath,
    ['-e', "const s = require('net').createServer().listen({ port: 0, host: '127.0.0.1', backlog: 1 }, () => { console.log(s.address().port); Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0); });"],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  const port = await new Promise<number>((resolve) => blocked.stdout.once('data', (d) => resolve(Number(String(d)))));
  const queued = await Promise.all(
    [0, 1].map(async () => {
      const s = connect({ port, host: '127.0.0.1' });
      await new Promise((resolve) => s.once('connect', resolve));
      return s;
    }),
  );
  return {
    port,
    close: () => {
      for (const s of queued) s.destroy();
      blocked.kill('SIGKILL');
    },
  };
}

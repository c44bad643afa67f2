/**
 * Local mode's stand-in for AWS IoT Core, the push path's broker (lib/sdk/push-channel.ts,
 * lib/functions/wake.ts): a real MQTT broker (aedes) on one loopback port, reachable as IoT Core
 * is, so the very same PushChannel and IoTDataPlaneClient run against it unchanged:
 * - MQTT over WebSocket at `/mqtt` (IoT Core's SigV4 query string is accepted and ignored);
 * - the data plane's Publish (`POST /topics/{topic}?qos=1`, the payload as the body), as the lease
 *   stream's function calls it.
 * It keeps IoT Core's limits that our code could trip over (topic length and depth, no wildcards
 * in a publish, QoS 0 or 1, 128 KB payloads, 128-character client ids) and counts what IoT Core
 * bills: messages and connection time. No authorization: every client may publish and subscribe
 * (unless `subscribable` says otherwise), within IoT Core's 50 subscriptions a connection. A
 * SUBSCRIBE refused is answered as IoT Core (MQTT 3.1.1) answers it: by closing the connection, no
 * SUBACK 0x80 (AWS, aws-iot-device-sdk-js#191: "IoT will drop the connection in the event of an
 * unauthorized subscription"). Nor from a web page: a request from a browser page of another origin,
 * or addressed to a name other than loopback's, is refused (foreignRequest).
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { Aedes, type AedesPublishPacket, type Client } from 'aedes';
import { createWebSocketStream, WebSocketServer, type WebSocket } from 'ws';
import { systemClock, type Clock } from '../clock.js';
import { MAX_SUBSCRIPTIONS, MAX_TOPIC_BYTES } from '../schemas/push.js';

export interface PushBrokerOptions {
  /** The loopback port for both WebSocket and HTTP. @default 0 (any free one) */
  port?: number;
  /** What connection durations are measured on. @default systemClock */
  clock?: Clock;
  /** Called whenever a count changes or a connection opens or closes (a broker in its own process reports its stats so). */
  onChange?: () => void;
  /**
   * Whether a client may subscribe to a topic filter (IoT Core's iot:Subscribe, as a role's policy
   * answers it: a role granted named leases may not subscribe to a process topic); a refused one
   * closes the connection. @default every filter
   */
  subscribable?: (topicFilter: string) => boolean;
}

/** What the broker has carried so far: IoT Core bills messages and connection-minutes. */
export interface PushBrokerStats {
  /** Messages published through the HTTP Publish API (the lease stream's wakes). */
  published: number;
  /** Messages published by MQTT clients (workers' wakes after a hand-off or release). */
  workerPublished: number;
  /** Messages delivered to subscribers (one per subscribing connection a message reached). */
  delivered: number;
  /** The summed duration of every connection so far, the open ones up to now (ms). */
  connectionMs: number;
  /** Connections open now. */
  connections: number;
  /** Topic filters subscribed to now, over every open connection (IoT Core allows 50 a connection). */
  subscriptions: number;
}

export interface PushBroker {
  /** `ws://127.0.0.1:<port>/mqtt`: a PushChannel's `endpoint` (the worker's CONCLAVE_PUSH_URL). */
  wsEndpoint: string;
  /** `http://127.0.0.1:<port>`: an IoTDataPlaneClient's `endpoint`. */
  httpEndpoint: string;
  stats(): PushBrokerStats;
  /**
   * IoT Core goes away: every connection is dropped (resolves once all are closed), new ones are
   * refused (HTTP 503 on the upgrade) and, unless `publishes` is true, so are HTTP publishes
   * (503 ServiceUnavailableException, which the SDK retries). Resolves to the function that
   * restores the service.
   */
  outage(opts?: { publishes?: boolean }): Promise<() => Promise<void>>;
  /** Drops every connection and closes the port. */
  stop(): Promise<void>;
}

/** IoT Core's limits on a message and a client id; topic length: MAX_TOPIC_BYTES. */
const MAX_PAYLOAD_BYTES = 128 * 1024;
const MAX_CLIENT_ID_LENGTH = 128;
/** IoT Core allows 7 forward slashes in a topic: 8 levels. */
const MAX_TOPIC_LEVELS = 8;
const SYS_PREFIX = '$SYS';

/** A rest-json error, as IoT Core's data plane answers one (the SDK reads the type from the header). */
function awsError(res: ServerResponse, status: number, type: string, message: string): void {
  res.writeHead(status, { 'content-type': 'application/json', 'x-amzn-errortype': type });
  res.end(JSON.stringify({ message }));
}

function readBody(req: IncomingMessage, limit: number): Promise<Buffer | undefined> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (c: Buffer) => {
      size += c.length;
      if (size <= limit) chunks.push(c);
    });
    req.on('end', () => resolve(size <= limit ? Buffer.concat(chunks) : undefined));
    req.on('error', reject);
  });
}

/** Why IoT Core would refuse a publish to `topic`, if it would. */
function invalidTopic(topic: string): string | undefined {
  if (topic === '') return 'the topic is empty';
  if (/[+#]/.test(topic)) return `the topic ${topic} has a wildcard (+ or #): a publish names one topic`;
  if (topic.startsWith('$')) return `the topic ${topic} is reserved ($)`;
  if (Buffer.byteLength(topic) > MAX_TOPIC_BYTES) return `the topic is longer than ${MAX_TOPIC_BYTES} bytes`;
  if (topic.split('/').length > MAX_TOPIC_LEVELS) return `the topic ${topic} has more than ${MAX_TOPIC_LEVELS - 1} forward slashes`;
  return undefined;
}

/** A Host header naming loopback (the broker listens on 127.0.0.1 alone), with any port. */
const LOOPBACK_HOST = /^(127\.0\.0\.1|localhost|\[::1\])(:\d{1,5})?$/i;

/**
 * Why a request is refused for where it comes from, if it is. The broker has no authorization (it
 * stands in for IoT Core's), so any web page the developer opens could otherwise publish to it (a
 * cross-site `text/plain` POST needs no preflight), retained wakes too, and open the WebSocket and
 * read every wake: a browser names the page's origin in `Origin` on every cross-site POST and
 * WebSocket, so one that is not the broker's own (`http://<its Host>`) is refused; and a Host
 * that is not loopback's is a page whose name was made to resolve here (DNS rebinding). The local
 * runtime's clients (the IoT data plane's, PushChannel's, in Node) send no Origin.
 */
function foreignRequest(req: IncomingMessage): string | undefined {
  const host = req.headers.host;
  if (host === undefined || !LOOPBACK_HOST.test(host)) return `addressed to ${host === undefined ? 'no host' : JSON.stringify(host)}: the local push broker answers requests to 127.0.0.1 or localhost only`;
  const origin = req.headers.origin;
  if (origin !== undefined && origin.toLowerCase() !== `http://${host.toLowerCase()}`) return `sent by a web page of ${JSON.stringify(origin)}: the local push broker answers no other origin's pages`;
  return undefined;
}

/** Answers an upgrade it will not take and closes the socket. */
function refuseUpgrade(socket: Socket, status: number, reason: string): void {
  socket.on('error', () => undefined); // the client may already have gone: nothing to tell it
  socket.end(`HTTP/1.1 ${status} ${reason}\r\nConnection: close\r\nContent-Length: 0\r\n\r\n`);
}

/** Starts the broker on 127.0.0.1; `stop()` closes it. */
export async function startPushBroker(opts: PushBrokerOptions = {}): Promise<PushBroker> {
  const clock = opts.clock ?? systemClock;
  const counts = { published: 0, workerPublished: 0, delivered: 0 };
  const changed = opts.onChange ?? (() => undefined);
  let closedMs = 0;
  const open = new Map<WebSocket, number>(); // socket → when it opened (monotonic)
  let down = false;
  let publishesDown = false;

  // each connection's topic filters authorized so far (its SUBSCRIBE's filters are authorized one by one before 'subscribe')
  const authorized = new Map<string, Set<string>>();
  const broker = await Aedes.createBroker({
    maxClientsIdLength: MAX_CLIENT_ID_LENGTH,
    // IoT Core's policy and its quota (50 subscriptions a connection): a filter refused by either
    // closes the connection (aedes does on an error), as IoT Core does; it sends no SUBACK 0x80
    authorizeSubscribe(client: Client, sub, callback) {
      let set = authorized.get(client.id);
      if (!set) authorized.set(client.id, (set = new Set()));
      if (opts.subscribable && !opts.subscribable(sub.topic)) return callback(new Error(`not authorized to subscribe to ${sub.topic}`));
      if (!set.has(sub.topic) && set.size >= MAX_SUBSCRIPTIONS) return callback(new Error(`more than ${MAX_SUBSCRIPTIONS} subscriptions`));
      set.add(sub.topic);
      callback(null, sub);
    },
    maxTopicLevels: MAX_TOPIC_LEVELS,
    // called once for each subscriber a message is about to reach: that is a delivery
    authorizeForward(_client: Client, packet: AedesPublishPacket) {
      if (!packet.topic.startsWith(SYS_PREFIX)) {
        counts.delivered++;
        changed();
      }
      return packet;
    },
  });
  // each connection's topic filters now: a clean session's go with its connection
  const filters = new Map<string, Set<string>>();
  broker.on('subscribe', (subs, client) => {
    let set = filters.get(client.id);
    if (!set) filters.set(client.id, (set = new Set()));
    for (const s of subs) set.add(s.topic);
    changed();
  });
  broker.on('unsubscribe', (topics, client) => {
    for (const t of topics) {
      filters.get(client.id)?.delete(t);
      authorized.get(client.id)?.delete(t);
    }
    changed();
  });
  broker.on('clientDisconnect', (client) => {
    filters.delete(client.id);
    authorized.delete(client.id);
    changed();
  });
  broker.on('publish', (packet, client) => {
    if (client && !packet.topic.startsWith(SYS_PREFIX)) {
      counts.workerPublished++;
      changed();
    }
  });

  const wss = new WebSocketServer({ noServer: true });
  const server = createServer((req, res) => {
    handle(req, res).catch((e: unknown) => awsError(res, 500, 'InternalFailureException', (e as Error).message));
  });

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const foreign = foreignRequest(req);
    if (foreign) {
      req.resume();
      return awsError(res, 403, 'ForbiddenException', foreign);
    }
    const url = new URL(req.url ?? '/', 'http://127.0.0.1');
    const m = /^\/topics\/([^/]+)$/.exec(url.pathname);
    if (!m) {
      req.resume();
      // a plain 404, no AWS error type: this port given as DynamoDB's (printed beside it) was told
      // "the tables do not exist", the AWS SDK reading a ResourceNotFoundException
      res.writeHead(404, { 'content-type': 'text/plain; charset=utf-8' });
      return void res.end(
        `Not Found: the local push broker (IoT Core's stand-in) serves POST /topics/{topic} (IoT Core's Publish) and WebSocket /mqtt, not ${req.method} ${url.pathname}; DynamoDB Local is at the other endpoint conclave-local prints (CONCLAVE_ENDPOINT)\n`,
      );
    }
    if (req.method !== 'POST') {
      req.resume();
      return awsError(res, 405, 'MethodNotAllowedException', `${req.method} /topics/{topic}: Publish is a POST`);
    }
    const body = await readBody(req, MAX_PAYLOAD_BYTES);
    if (!body) return awsError(res, 413, 'RequestEntityTooLargeException', `the payload is larger than ${MAX_PAYLOAD_BYTES} bytes`);
    let topic: string;
    try {
      topic = decodeURIComponent(m[1]!);
    } catch {
      return awsError(res, 400, 'InvalidRequestException', `the topic ${m[1]} is not URI-encoded`);
    }
    const bad = invalidTopic(topic);
    if (bad) return awsError(res, 400, 'InvalidRequestException', bad);
    const qos = url.searchParams.get('qos') ?? '0';
    if (qos !== '0' && qos !== '1') return awsError(res, 400, 'InvalidRequestException', `qos ${qos}: IoT Core publishes at QoS 0 or 1`);
    if (publishesDown) return awsError(res, 503, 'ServiceUnavailableException', 'the local push broker is in an outage');
    await new Promise<void>((resolve, reject) =>
      broker.publish({ cmd: 'publish', topic, payload: body, qos: qos === '1' ? 1 : 0, retain: url.searchParams.get('retain') === 'true', dup: false }, (e) => (e ? reject(e) : resolve())),
    );
    counts.published++;
    changed();
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end('{}');
  }

  server.on('upgrade', (req: IncomingMessage, socket: Socket, head: Buffer) => {
    // any query string: IoT Core's signed URL carries SigV4 parameters, ignored here
    const path = new URL(req.url ?? '/', 'http://127.0.0.1').pathname;
    if (foreignRequest(req)) return refuseUpgrade(socket, 403, 'Forbidden');
    if (path !== '/mqtt') return refuseUpgrade(socket, 404, 'Not Found');
    if (down) return refuseUpgrade(socket, 503, 'Service Unavailable');
    wss.handleUpgrade(req, socket, head, (ws) => {
      if (down) return ws.terminate(); // the outage began during the handshake
      open.set(ws, clock.monotonic());
      ws.once('close', () => {
        const since = open.get(ws);
        if (since !== undefined) closedMs += clock.monotonic() - since;
        open.delete(ws);
        changed();
      });
      changed();
      const stream = createWebSocketStream(ws);
      stream.on('error', () => undefined); // a dropped connection: aedes sees the stream close
      broker.handle(stream, req);
    });
  });

  /** Drops every open connection at once (no close handshake, as a lost network); resolves when all are closed. */
  const dropAll = () =>
    Promise.all(
      [...open.keys()].map(
        (ws) =>
          new Promise<void>((resolve) => {
            ws.once('close', () => resolve());
            ws.terminate();
          }),
      ),
    );

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port ?? 0, '127.0.0.1', () => resolve());
  }).catch(async (e: unknown) => {
    // the port taken (EADDRINUSE): nothing left running (the broker's timers would hold the process)
    wss.close();
    await new Promise<void>((resolve) => broker.close(() => resolve()));
    throw e;
  });
  const { port } = server.address() as AddressInfo;

  return {
    wsEndpoint: `ws://127.0.0.1:${port}/mqtt`,
    httpEndpoint: `http://127.0.0.1:${port}`,
    stats() {
      const now = clock.monotonic();
      let openMs = 0;
      for (const since of open.values()) openMs += now - since;
      let subscriptions = 0;
      for (const set of filters.values()) subscriptions += set.size;
      return { ...counts, connectionMs: closedMs + openMs, connections: open.size, subscriptions };
    },
    async outage(o = {}) {
      down = true;
      publishesDown = !o.publishes;
      await dropAll();
      return async () => {
        down = false;
        publishesDown = false;
      };
    },
    async stop() {
      down = true;
      publishesDown = true;
      await dropAll();
      wss.close();
      await new Promise<void>((resolve) => broker.close(() => resolve()));
      await new Promise<void>((resolve, reject) => {
        server.close((e) => (e ? reject(e) : resolve()));
        server.closeAllConnections(); // the SDK keeps connections alive
      });
    },
  };
}

/**
 * A complete worker: stands for one lease, does its job only while it leads, fences its writes,
 * and steps down cleanly on SIGTERM. The demo's worker: `npm start` runs several as separate
 * processes (lib/local/worker-process.ts), configured from the environment, and so do the tests
 * and the benchmarks. It imports the packages by name, as your own worker would:
 *
 *   CONCLAVE_ENDPOINT=http://127.0.0.1:8000 CONCLAVE_TABLE_PREFIX=conclave-local \
 *   LEASE=nightly-report IDENTITY=worker-1 EMULATION_VERSION=1.30.0 BINARY_VERSION=1.31.0 \
 *   npx tsx lib/local/demo/worker.ts
 *
 * Without CONCLAVE_ENDPOINT it uses the default AWS credential chain and region. ZONE states the
 * worker's availability zone for a location preference (otherwise ECS or EC2 metadata tells it).
 * CONCLAVE_PUSH_URL turns on the push path: the stack output PushEndpoint in AWS, local mode's
 * `ws://127.0.0.1:<port>/mqtt` (`npm start -- --serve` prints it); the worker then reads the lease
 * as soon as it changes instead of at its next poll (coordinated mode only). The push path is the
 * entry `@conclave/sdk/push`, loaded only then: it needs the `mqtt` package (`npm i mqtt@5`), which
 * a worker without it does not install.
 * Every leadership change is printed as one JSON line on stdout.
 *
 * Clients behind a load balancer (issue 39): HTTP_PORT serves the worker's own application, whose
 * `GET /work` only the leader answers (200 with its identity and fencing token; 503 from any other,
 * judged by isLeader() at that moment), and HEALTH_PORT the SDK's health check (`serveHealth`:
 * `/leader` 200 only on the leader, `/ready`, `/healthz`), both on HTTP_HOST (default 127.0.0.1).
 * The elector advertises ADVERTISE, by default `http://<HTTP_HOST>:<HTTP_PORT>` (an IPv6 HTTP_HOST
 * in brackets: `http://[::1]:8080`). A load balancer health-checks `/leader` on HEALTH_PORT and
 * routes to HTTP_PORT (lib/local/haproxy.ts).
 */
import { createServer, type Server } from 'node:http';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { LeaderElector, serveHealth, systemClock } from '@conclave/sdk';

const env = (name: string, fallback?: string): string => {
  const v = process.env[name] ?? fallback;
  if (v === undefined) {
    console.error(`lib/local/demo/worker: set ${name} (see the comment at the top of lib/local/demo/worker.ts)`);
    process.exit(2);
  }
  return v;
};
const num = (name: string, fallback: number) => Number(process.env[name] ?? fallback);

const endpoint = process.env['CONCLAVE_ENDPOINT'];
const client = endpoint
  ? new DynamoDBClient({ endpoint, region: 'local', credentials: { accessKeyId: 'local', secretAccessKey: 'local' } })
  : new DynamoDBClient({});
const identity = env('IDENTITY');
const say = (event: string, extra: Record<string, unknown> = {}) => process.stdout.write(`${JSON.stringify({ event, identity, at: systemClock.now(), ...extra })}\n`);
const tables = env('CONCLAVE_TABLE_PREFIX', 'conclave'); // <prefix>-leases, <prefix>-candidates
const coordinated = process.env['MODE'] !== 'NoCoordination';

// One MQTT connection per process, shared by all its electors; NoCoordination polls as client-go does.
const pushUrl = process.env['CONCLAVE_PUSH_URL'];
const push =
  pushUrl && coordinated
    ? new (await import('@conclave/sdk/push')).PushChannel({ endpoint: pushUrl, client, tables, onError: (e) => say('error', { message: `push: ${e.message}` }) })
    : undefined;

const httpHost = process.env['HTTP_HOST'] ?? '127.0.0.1';
const httpPort = process.env['HTTP_PORT'];
// in a URL an IPv6 literal is bracketed (http://[::1]:8080); here, not in a helper module: this file imports only packages
const urlHost = httpHost.includes(':') && !httpHost.startsWith('[') ? `[${httpHost}]` : httpHost;

const elector = new LeaderElector({
  leaseName: env('LEASE'),
  identity,
  tables,
  // where clients reach this worker's application, written on the lease with each term it takes
  ...(process.env['ADVERTISE'] || httpPort ? { advertise: process.env['ADVERTISE'] ?? `http://${urlHost}:${httpPort}` } : {}),
  leaseDurationMs: num('LEASE_DURATION_MS', 15_000),
  renewDeadlineMs: num('RENEW_DEADLINE_MS', 10_000),
  retryPeriodMs: num('RETRY_PERIOD_MS', 2_000),
  // how often the leader renews (default in coordinated mode: the renew deadline less two retry periods)
  ...(process.env['RENEW_INTERVAL_MS'] ? { renewIntervalMs: num('RENEW_INTERVAL_MS', 5_000) } : {}),
  // 'none': stamp with this machine's clock (it must then keep within 1 s of DynamoDB's); default 'server'
  ...(process.env['CLOCK_SYNC'] === 'none' ? { clockSync: 'none' as const } : {}),
  ...(!coordinated
    ? { mode: 'NoCoordination' as const }
    : {
        // what the coordinator elects by (KEP-4355: the oldest emulation version)
        candidacy: {
          emulationVersion: env('EMULATION_VERSION', '1.0.0'),
          binaryVersion: env('BINARY_VERSION', env('EMULATION_VERSION', '1.0.0')),
          ...(process.env['PRIORITY'] ? { priority: Number(process.env['PRIORITY']) } : {}),
          // where it runs, for a location preference (default: the zone ECS or EC2 metadata reports)
          ...(process.env['ZONE'] ? { location: { zone: process.env['ZONE'] } } : {}),
        },
        ...(push ? { push } : {}),
      }),
  client,
  callbacks: {
    onStartedLeading: async (signal, term) => {
      say('started', { fencingToken: term.fencingToken });
      // The job: runs until the signal aborts. Writes that must not come from a deposed leader go
      // through this term's term.fencedWrite({ TransactItems: [...] }), refused once it has ended
      // (not elector.fencedWrite, which would write in a later term of this worker).
      while (!signal.aborted) await systemClock.sleep(200);
    },
    onStoppedLeading: ({ reason, fencingToken }) => say('stopped', { reason, fencingToken }),
    onNewLeader: (leader) => say('newLeader', { leader }),
  },
  onError: (e) => say('error', { message: e.message }),
});

// The application: only the leader does the work; any other answers 503 (and names the leader it
// last saw), so a request routed to a worker that is no longer the leader is never served.
const listen = (server: Server, port: number) => new Promise<void>((resolve, reject) => server.once('error', reject).listen(port, httpHost, resolve));
// Bounded as serveHealth's server is: on node:http's defaults a client that connects and says
// nothing holds a connection for a minute or more (headersTimeout 60 s, requestTimeout 300 s,
// checked every 30 s; no idle timeout), and any number of them may be open. `/work` is answered at once.
const APP_TIMEOUT_MS = 5_000;
/** Exiting: requests still coming on open connections are refused, each connection closed after its answer. */
let closing = false;
const app = httpPort
  ? createServer({ headersTimeout: APP_TIMEOUT_MS, requestTimeout: APP_TIMEOUT_MS, keepAliveTimeout: APP_TIMEOUT_MS, connectionsCheckingInterval: 1_000 }, (req, res) => {
      const leading = req.url === '/work' && elector.isLeader();
      const token = elector.fencingToken;
      res.statusCode = req.url !== '/work' ? 404 : leading ? 200 : 503;
      res.setHeader('Content-Type', 'application/json');
      // a refusal says when to try again (a load balancer's own 503 does too)
      if (res.statusCode === 503) res.setHeader('Retry-After', '1');
      if (closing) res.setHeader('Connection', 'close');
      res.end(JSON.stringify(leading ? { identity, fencingToken: token } : { identity, leader: elector.leader ?? null }));
    })
  : undefined;
if (app) {
  app.timeout = APP_TIMEOUT_MS; // a connection idle this long is closed, whatever it was doing
  app.maxConnections = 256; // one past it is closed unanswered: a load balancer and its clients hold far fewer
  await listen(app, Number(httpPort));
}
const health = process.env['HEALTH_PORT'] ? await serveHealth(elector, { port: Number(process.env['HEALTH_PORT']), host: httpHost }) : undefined;

const controller = new AbortController();
for (const sig of ['SIGTERM', 'SIGINT'] as const) process.on(sig, () => controller.abort());
say('ready', { instance: elector.instance });
// The channel connects in the background (the elector polls until it is live) and outlives the
// elector: stepping down, it hands the lease over and wakes the successor through the channel.
const pushStop = new AbortController();
const pushing = push?.run(pushStop.signal);
await elector.run(controller.signal);
pushStop.abort();
await pushing;
await health?.close();
// A graceful exit: no new connections; idle ones closed; a request under way answered (503, the
// elector has stopped) and its connection closed after it. closeAllConnections() here dropped such
// requests unanswered: behind HAProxy each became a retry back to this worker, or a 502. Bounded:
// a request has APP_TIMEOUT_MS in all, and past it whatever is open is closed.
if (app) {
  closing = true;
  const closed = new Promise<void>((resolve) => app.close(() => resolve()));
  app.closeIdleConnections();
  const force = systemClock.setTimer(APP_TIMEOUT_MS, () => app.closeAllConnections());
  await closed;
  force.cancel();
}
say('exited');
client.destroy();

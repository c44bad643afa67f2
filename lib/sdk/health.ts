/**
 * Health checks for load balancers and orchestrators, on `node:http`'s request and response: a
 * handler for a bare server, Express (`app.use(handler)`, mounted anywhere) or Fastify (`reply.hijack()`
 * and the raw request and response), and `serveHealth` for a process that has no server.
 *
 * - `/leader` answers 200 only while this process leads a live term: LeaderElector.isLeader(),
 *   which judges the renew deadline on the elector's own (injected) monotonic clock at the moment it
 *   is asked. Otherwise 503. Patroni's `/leader`: what a load balancer routes writes by.
 * - `/ready` answers 200 while every elector takes part as it should (run() running and healthy,
 *   its candidacy not displaced), leader or not: what an orchestrator's readiness probe asks, so a
 *   standby is ready too and a rolling update is never blocked by one that can never lead.
 * - `/healthz` answers 503 only for an elector that failed (run() rejected) or is stuck (a leader
 *   whose term ran out without it stepping down: client-go's healthz; a client held on a credential
 *   provider that does not answer, for over a minute), and again at every check until its own loop
 *   steps again: a liveness probe, which restarts only after several failures in a row.
 *
 * A process running several electors serves each lease under its name: `/leader/<lease>`,
 * `/ready/<lease>`, `/healthz/<lease>`; `/ready` and `/healthz` answer for all of them, and `/leader`
 * alone only when there is one lease (with several, it is ambiguous: 404 naming the paths).
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { domainToASCII } from 'node:url';
import * as z from 'zod';
import { HolderName, MAX_TIMER_MS, Name, timerBound } from '../schemas/common.js';
import { FencingToken } from '../schemas/fencing-token.js';
import { Address } from '../schemas/lease.js';
import { FIXES, issuesOf, parse, shown, ValidationError } from '../schemas/validation.js';
import { holderLastKnown, LeaderElector, loopSteps } from './elector.js';
import { optionErrors } from './options.js';

/** The response headers that describe a lease (on every answer about one lease). */
export const HEALTH_HEADERS = {
  /** The lease. */
  lease: 'Conclave-Lease',
  /** Its holder as this process knows it: itself while it leads, else the holder the lease showed when this process last read it, or the one that moved first where a take of its own was refused since (none once run() has settled, nor when that read showed the lease unheld or that refusal named nobody, nor while the last holder it saw is itself: its own term, over). */
  holder: 'Conclave-Holder',
  /** The fencing token of this process's term, while it leads. */
  fencingToken: 'Conclave-Fencing-Token',
  /** Where to reach the holder: this process's `advertise` address while it leads, else the one the holder advertised, as this process last read the lease (a follower's 503 says where to go; none when Conclave-Holder is left out, nor for a holder a refused take named, until a read shows its row); a non-ASCII host in punycode (`http://xn--bcher-kva.example:8080/`), as a client dials it (the body keeps it as written). */
  address: 'Conclave-Address',
} as const;

/** The checks: `leader` (`/leader`), `ready` (`/ready`), `live` (`/healthz`). */
export const HEALTH_CHECKS = ['leader', 'ready', 'live'] as const;
const PATHS = { leader: 'leader', ready: 'ready', live: 'healthz' } as const satisfies Record<(typeof HEALTH_CHECKS)[number], string>;

/** What a health check says of one elector. */
export const LeaseHealthSchema = z.object({
  /** The lease. */
  lease: Name,
  /** This worker's identity (the lease's holderIdentity while it leads). */
  identity: Name,
  /** Where its run() is (LeaderElector `runPhase`). */
  state: z.enum(['idle', 'starting', 'running', 'stopping', 'stopped', 'failed']),
  /** It leads a live term now, renewed within its renew deadline (`/leader`). */
  leading: z.boolean(),
  /** It takes part as it should, leader or not (`/ready`). */
  ready: z.boolean(),
  /** It has not failed and is not stuck (`/healthz`). */
  live: z.boolean(),
  /** The holder as this process knows it: itself while it leads, else the one the lease row showed when this process last read it, the address beside it agreeing (a read that shows another holder names that one), or, where a take of its own was refused since, the one the refusal's row named (whoever moved first; nobody when it named none); none once run() has settled (`stopped`, `failed`: it watches the lease no more), nor when that read showed the lease unheld (released, ended), nor while the last holder it saw is itself and it does not lead (its own term, over: no read has shown who leads now). */
  holder: HolderName.optional(),
  /** The fencing token of its term, while it leads. */
  fencingToken: FencingToken.optional(),
  /** Where to reach the holder: its own `advertise` address while it leads, else the one `holder` advertised on the lease row as this process last read it; none once run() has settled, nor when `holder` is left out or advertised none, nor for a holder a refused take named, until a read shows its row. */
  address: Address.optional(),
  /** Why run() rejected, while `state` is `failed`: the error's name and message (no stack, no cause). */
  error: z.object({ name: z.string(), message: z.string() }).optional(),
});
/** What a health check says of one elector. */
export type LeaseHealth = z.infer<typeof LeaseHealthSchema>;

/** The JSON body of every health check answer (a HEAD's status and headers are the same, with no body). */
export const HealthResponseSchema = z.object({
  /** Which check: `leader`, `ready` or `live` (`/healthz`). */
  check: z.enum(HEALTH_CHECKS),
  /** The answer: 200 when true, 503 when false. */
  ok: z.boolean(),
  /** The leases it judged: one for `/<check>/<lease>`, every one for `/ready` and `/healthz`. */
  leases: z.array(LeaseHealthSchema).min(1),
});
/** The JSON body of a health check answer. */
export type HealthResponse = z.infer<typeof HealthResponseSchema>;

/**
 * The electors a health check found unhealthy (healthy(): a leader stuck past its term, a client
 * held on its credentials), each with its loop's steps then (loopSteps).
 */
const unhealthy = new WeakMap<LeaderElector, number>();

/**
 * Whether `e` is healthy, and stays so judged: once found not, not until its own loop steps again
 * (or run() has resolved). The check that finds a leader stuck ends its term (isLeader(), after):
 * healthy() asked again would pass it, and a liveness probe restarts only after failures in a row
 * (Kubernetes' failureThreshold, 3 by default). A stall its own timers end first is never seen.
 */
function judgedHealthy(e: LeaderElector): boolean {
  const steps = loopSteps(e);
  if (!e.healthy()) {
    unhealthy.set(e, steps);
    return false;
  }
  const was = unhealthy.get(e);
  if (was === undefined) return true;
  if (was === steps && e.runPhase !== 'stopped') return false;
  unhealthy.delete(e);
  return true;
}

/** What a health check judges one elector by, now. */
export function leaseHealth(e: LeaderElector): LeaseHealth {
  // healthy() before isLeader(), which stops a term past its renew deadline: asked after, a leader stuck past its term passed as a follower
  const healthy = judgedHealthy(e);
  // isLeader() before the rest: it judges the renew deadline now, and stops a term past it
  const leading = e.isLeader();
  const token = leading ? e.fencingToken : undefined;
  const state = e.runPhase;
  // once run() has settled (stopped, failed) it watches the lease no more: the holder it last saw is no news
  const watching = state === 'starting' || state === 'running' || state === 'stopping';
  // itself while not leading: its own term is over (its renew deadline, a step-down) and no read has shown another holder since, so
  // the name and address it last saw are its own and stale: a client sent there comes back to this 503 (a review, 2026-12-07:
  // a leader cut off from DynamoDB pointed at itself for the whole partition while another led)
  const seen = watching && !leading ? e.leader : undefined;
  const stale = seen === e.options.identity;
  // else the holder the lease row showed when last read, with the address it advertised there: none once a read shows
  // it unheld (released, ended), the new one once a read shows another (a review, 2026-12-07, ninth: a follower kept
  // naming a holder that had released, its own last read showing nobody, for as long as it could not take the lease)
  // (a take of its own refused since that read: the holder the refusal named, whoever moved first; a review, 2026-12-07, tenth:
  // a follower that lost the race for an expired term named the expired holder until its next read)
  const row = watching && !leading && !stale ? holderLastKnown(e) : undefined;
  const held = row?.holderIdentity !== undefined && row.holderIdentity !== e.options.identity ? row : undefined;
  const holder = leading ? e.options.identity : held?.holderIdentity;
  const address = leading ? e.options.advertise : held?.holderAddress;
  return {
    lease: e.options.leaseName,
    identity: e.options.identity,
    state,
    leading,
    ready: state === 'running' && healthy && (e.candidate?.healthy() ?? true),
    live: state !== 'failed' && healthy,
    ...(holder !== undefined ? { holder } : {}),
    ...(token !== undefined ? { fencingToken: token } : {}),
    ...(address !== undefined ? { address } : {}),
    ...(state === 'failed' ? { error: described(e.runError) } : {}),
  };
}

/** The longest error message a health body carries (a user's own error may carry a whole payload). */
const MESSAGE_MAX = 1000;

/** An error as a health body shows it: its name and message, no stack. */
function described(e: unknown): { name: string; message: string } {
  const name = e instanceof Error ? e.name : typeof e;
  const message = e instanceof Error ? e.message : String(e);
  return { name, message: message.length > MESSAGE_MAX ? `${message.slice(0, MESSAGE_MAX - 3)}...` : message };
}

/** One elector of a list: refused without stopping the list's other checks (z.instanceof aborts), so a wrong element does not hide a lease listed twice. */
const ListedElector = z.custom<LeaderElector>((v) => v instanceof LeaderElector, {
  error: (issue) => `must be a LeaderElector, not ${shown(issue.input)}: give the elector itself (new LeaderElector({ ... })), one per lease`,
  abort: false,
});

const Electors = z
  .union([
    z.instanceof(LeaderElector),
    z
      .array(ListedElector)
      .min(1, 'must list at least one LeaderElector')
      .superRefine((list, ctx) => {
        const first = new Map<string, number>();
        list.forEach((e, i) => {
          if (!(e instanceof LeaderElector)) return; // refused above, at its index
          const lease = e.options.leaseName;
          const at = first.get(lease);
          if (at === undefined) first.set(lease, i);
          else ctx.addIssue({ code: 'custom', path: [i], message: `lists lease "${lease}" twice, at [${at}] and [${i}]: each lease is served once, at /leader/${lease}; drop one (one elector per lease)` });
        });
      }),
  ], { error: 'must be a LeaderElector or an array of them' })
  .transform((v) => (Array.isArray(v) ? v : [v]));

/** Express's `next` (called for a path that is not a health check's, so the app's own routes answer it). */
export type HealthNext = (error?: unknown) => void;
/** A health check on `node:http`'s request and response; with `next` (Express), other paths go to it, else they get 404. */
export type HealthHandler = (req: IncomingMessage, res: ServerResponse, next?: HealthNext) => void;

/** The methods a health check answers. */
const ALLOW = 'GET, HEAD, OPTIONS';

/** Whether `s` is printable ASCII, as a header value is written. */
const printable = (s: string): boolean => /^[\x20-\x7e]*$/.test(s);

/** A header value as HTTP carries it: printable ASCII, else percent-encoded. */
const headerValue = (s: string): string => (printable(s) ? s : encodeURIComponent(s));

/**
 * An address as the Conclave-Address header carries it, one a client can dial: as written when it
 * is printable ASCII; else a URL as its `href` (its host in punycode, its path percent-encoded) and
 * host:port with its host in punycode. Percent-encoding it whole (as headerValue does a name) sent
 * `http%3A%2F%2Fb%C3%BCcher.example%3A8080`, which no client parses. Only an address that is
 * neither (a lease row written by hand) is percent-encoded whole.
 */
function addressValue(address: string): string {
  if (printable(address)) return address;
  if (address.includes('://') && URL.canParse(address)) {
    const url = new URL(address);
    // http(s) already gives the host in punycode; a scheme of its own (grpc://) percent-encodes it, which domainToASCII reads
    const host = domainToASCII(url.hostname);
    if (host !== '' && host !== url.hostname) url.hostname = host;
    return url.href;
  }
  const colon = address.lastIndexOf(':');
  const host = colon > 0 ? domainToASCII(address.slice(0, colon)) : '';
  const port = address.slice(colon + 1);
  return host !== '' && printable(host) && /^\d+$/.test(port) ? `${host}:${port}` : encodeURIComponent(address);
}

/**
 * The health check handler over `electors` (one LeaderElector, or one per lease of this process):
 * GET or HEAD `/leader`, `/ready`, `/healthz`, each also as `/<check>/<lease>` (see the module's
 * comment); 200 or 503 with a JSON body (HealthResponseSchema) and, for one lease, the
 * Conclave-Lease, -Holder, -Fencing-Token and -Address headers (HEALTH_HEADERS). OPTIONS (HAProxy's
 * `option httpchk <path>`): the same status and headers, no body. Other methods: 405. A lease it does not serve: 404. Other paths: `next()` when given (Express), else 404.
 *
 * The server it runs in keeps its own limits: on node:http's defaults a client that connects and
 * says nothing holds a connection for 60 to 90 s, an idle one is never closed, and any number may be
 * open. serveHealth bounds its server; create a server of your own with `requestTimeout`,
 * `headersTimeout` and `connectionsCheckingInterval` (and `requireHostHeader: false` for HAProxy's
 * `option httpchk`, which sends no Host header), then set its `timeout` and `maxConnections`. With
 * Express: `http.createServer(options, app)` rather than `app.listen()`, which takes no options.
 * @throws ValidationError when `electors` is not a LeaderElector or a non-empty array of them, one per lease: every wrong element and every lease listed twice at once, each by its index
 */
export function healthCheck(electors: LeaderElector | readonly LeaderElector[]): HealthHandler {
  return handlerOf(parse(Electors, electors, 'healthCheck electors'));
}

/** The health check over electors already judged (healthCheck's, serveHealth's). */
function handlerOf(list: readonly LeaderElector[]): HealthHandler {
  const byLease = new Map(list.map((e) => [e.options.leaseName, e]));
  const served = () => [...HEALTH_CHECKS.flatMap((c) => (c === 'leader' && list.length > 1 ? [] : [`/${PATHS[c]}`])), ...HEALTH_CHECKS.map((c) => `/${PATHS[c]}/<lease>`)].join(', ');
  return (req, res, next) => {
    // the path alone, whether the target is in origin form (/healthz) or absolute (http://host/healthz: RFC 9112 §3.2.2)
    const url = req.url ?? '/';
    const target = url.startsWith('/') ? url : URL.canParse(url) ? new URL(url).pathname : url;
    const sent = target.split('?', 1)[0]!;
    const path = sent.replace(/\/+$/, '') || '/';
    const [, first, ...rest] = path.split('/');
    const check = HEALTH_CHECKS.find((c) => PATHS[c] === first);
    let lease: string | undefined = rest.length ? rest.join('/') : undefined;
    if (lease !== undefined) {
      // a lease name may end with `/` (`reports/`): the name as sent, trailing slashes kept, when a lease has it; else without them, as ever
      const whole = decoded(sent.slice(`/${first}/`.length));
      lease = byLease.has(whole) ? whole : decoded(lease);
    }
    const judged = check === undefined ? undefined : lease !== undefined ? byLease.get(lease) && [byLease.get(lease)!] : check === 'leader' && list.length > 1 ? undefined : list;
    if (!check && next) return next(); // not a health check's path: the app's own routes answer it
    if (!check || !judged) {
      const why = check && lease === undefined ? `/${PATHS[check]} is ambiguous with ${list.length} leases: ask /${PATHS[check]}/<lease>` : check ? `no lease "${lease}" here` : `no health check at ${path}`;
      return plain(res, 404, `${why}; this process serves ${served()} (leases: ${[...byLease.keys()].join(', ')})`);
    }
    if (req.method !== 'GET' && req.method !== 'HEAD' && req.method !== 'OPTIONS') {
      res.setHeader('Allow', ALLOW);
      return plain(res, 405, `${req.method ?? '?'} is not allowed: a health check answers GET, HEAD and OPTIONS`);
    }
    const leases = judged.map(leaseHealth);
    const ok = leases.every((l) => (check === 'leader' ? l.leading : check === 'ready' ? l.ready : l.live));
    const body: HealthResponse = { check, ok, leases };
    if (leases.length === 1) {
      const l = leases[0]!;
      res.setHeader(HEALTH_HEADERS.lease, headerValue(l.lease));
      if (l.holder !== undefined) res.setHeader(HEALTH_HEADERS.holder, headerValue(l.holder));
      if (l.fencingToken !== undefined) res.setHeader(HEALTH_HEADERS.fencingToken, String(l.fencingToken));
      if (l.address !== undefined) res.setHeader(HEALTH_HEADERS.address, addressValue(l.address));
    }
    res.statusCode = ok ? 200 : 503;
    res.setHeader('Cache-Control', 'no-store');
    // OPTIONS: HAProxy's `option httpchk <path>` asks with it; the status and headers, no body (as Patroni answers it)
    if (req.method === 'OPTIONS') {
      res.setHeader('Allow', ALLOW);
      res.setHeader('Content-Length', 0);
      return void res.end();
    }
    const text = `${JSON.stringify(body)}\n`;
    res.setHeader('Content-Type', 'application/json; charset=utf-8');
    res.setHeader('Content-Length', Buffer.byteLength(text));
    res.end(req.method === 'HEAD' ? undefined : text);
  };
}

/** A lease path's name, its escapes decoded; one with a malformed escape kept as sent, a name no lease has (no lease name takes %). */
function decoded(name: string): string {
  try {
    return decodeURIComponent(name);
  } catch {
    return name;
  }
}

function plain(res: ServerResponse, status: number, text: string): void {
  res.statusCode = status;
  res.setHeader('Content-Type', 'text/plain; charset=utf-8');
  res.setHeader('Cache-Control', 'no-store');
  res.end(`${text}\n`);
}

/** The options of serveHealth; a bad one is a ValidationError naming the field. */
export const ServeHealthOptionsSchema = z.strictObject(
  {
    /** The port to listen on; 0 picks a free one (see HealthServer `port`). */
    port: z.number().int('must be a whole number').min(0, 'must be a port from 0 to 65535 (0: any free port)').max(65_535, 'must be a port from 0 to 65535 (0: any free port)'),
    /**
     * The address to listen on. @default every interface (a load balancer on another host must
     * reach it); '127.0.0.1' for this host only
     */
    host: z.string().min(1, 'must not be empty (leave it out to listen on every interface)').optional(),
    /**
     * How long a client has to send its whole request, and how long a connection may sit idle (one
     * that sends nothing, or a kept-alive one between checks) before it is closed. A health check
     * is one small request answered at once: a client slower than this is stuck or hostile.
     * @default 5000
     */
    timeoutMs: z.number().int('must be a whole number of milliseconds').min(1, 'must be at least 1 ms').max(MAX_TIMER_MS, timerBound).default(5_000),
    /**
     * The most connections open at once. Load balancers and probes hold a few; the cap keeps a
     * flood of idle clients from taking the process's sockets. One past it closes a connection of
     * the source address that holds the most: its oldest idle one (answered, waiting for its next
     * request), else its oldest, even mid-request; never the new one. So a client holding the cap
     * from one source address cannot shut out a load balancer checking from another; clients from
     * many addresses, opening connections faster than a check is answered, can still get one
     * closed: let only the load balancer and probes reach this port (a security group, a
     * Kubernetes NetworkPolicy).
     * @default 64
     */
    maxConnections: z.number().int('must be a whole number').min(1, 'must be at least 1').default(64),
    /**
     * Closes the server when it aborts, as close() does; already aborted, serveHealth rejects with
     * its reason. For an app that stops its parts with one signal once it is done: not the signal
     * that stops the elector's run(), which would close the check while a leader stepping down
     * still leads (a load balancer would then see a refused connection, not its 503).
     */
    signal: z.custom<AbortSignal>((v) => v instanceof AbortSignal, 'must be an AbortSignal').optional(),
  },
  { error: optionErrors('serveHealth', 'port') },
);
/** The options of serveHealth as written. */
export type ServeHealthOptions = z.input<typeof ServeHealthOptionsSchema>;

/** A listening health check server (serveHealth). */
export interface HealthServer {
  /** The port it listens on (the one picked, for port 0). */
  readonly port: number;
  /** Where to reach it from this host, e.g. `http://127.0.0.1:8080` (the IPv4 loopback when it listens on every interface, the default; else the address it listens on, an IPv6 one in brackets). */
  readonly url: string;
  /** Stops listening and drops open connections (a load balancer's keep-alives); resolves once closed. The `signal` option's abort calls it. */
  close(): Promise<void>;
}

/** What to do about the listen errors a user meets, by code, each naming the option to change. */
const LISTEN_ERRORS: Record<string, string> = {
  EADDRINUSE: 'the port is in use; give another `port` (0: one the system picks)',
  EACCES: 'this process may not listen on that port (one below 1024 needs privileges); give another `port`',
  EADDRNOTAVAIL: 'no interface of this host has that address; give one of its own as `host` (leave it out: every interface)',
  ENOTFOUND: 'that name does not resolve; give an address of this host as `host` (leave it out: every interface)',
};

/**
 * At most `max` connections open at once: one past it closes a connection of the remote address
 * that holds the most (the new one counted), its oldest idle one (answered at least once, nothing
 * of a request read since its last answer, none being answered: a keep-alive between checks),
 * else its oldest, even one whose request is still arriving or not yet read (a check sends its
 * request at once: the oldest unfinished is the likeliest stuck). Never the new one. A connection
 * that has sent nothing yet is not idle: a review (2026-12-06) found a load balancer's check,
 * accepted a moment before an attacker's connection from another address, closed first as "idle"
 * (10% of checks reset at 500 connections a second from many addresses). node:http's `maxConnections` closes the new one: a client that held the cap,
 * opening another as each closed, had every check refused, and a load balancer marked the leader
 * down. Closing only idle ones, else the new one, was not enough: a client holding the cap with
 * requests it never finished had every check closed the same way.
 */
function capConnections(server: Server, max: number): void {
  /** Open connections, oldest first: the requests of each being answered, how many it has had answered, and its bytes read when it was last answered. */
  const open = new Map<Socket, Connection>();
  server.on('connection', (socket: Socket) => {
    open.set(socket, { address: socket.remoteAddress ?? '', answering: 0, answered: 0, readWhenAnswered: 0 });
    socket.once('close', () => open.delete(socket));
    if (open.size > max) evicted(open, socket).destroy();
  });
  server.on('request', (req: IncomingMessage, res: ServerResponse) => {
    const socket = req.socket as Socket;
    const c = open.get(socket);
    if (c === undefined) return;
    c.answering++;
    res.once('close', () => {
      c.answering--;
      c.answered++;
      c.readWhenAnswered = socket.bytesRead;
    });
  });
}

interface Connection {
  readonly address: string;
  answering: number;
  answered: number;
  readWhenAnswered: number;
}

/** The connection capConnections closes, one past the cap: `added` is the one just opened (the newest of `open`). */
function evicted(open: ReadonlyMap<Socket, Connection>, added: Socket): Socket {
  const held = new Map<string, number>();
  for (const c of open.values()) held.set(c.address, (held.get(c.address) ?? 0) + 1);
  const most = Math.max(...held.values());
  let oldest: Socket | undefined;
  for (const [socket, c] of open) {
    if (socket === added || held.get(c.address) !== most) continue;
    // idle: answered, and waiting between keep-alive requests: nothing lost (one that has sent nothing yet may be a check whose request is on its way)
    if (c.answered > 0 && c.answering === 0 && socket.bytesRead === c.readWhenAnswered) return socket;
    oldest ??= socket;
  }
  // (past the cap, with max >= 1, some other connection's address holds the most: `added` is never chosen)
  return oldest ?? added;
}

/**
 * The health check (healthCheck) on a server of its own: `await serveHealth(elector, { port: 8080, signal })`.
 * Resolves once it listens; rejects if it cannot (the port in use, say), or with the reason of a
 * `signal` already aborted. No client holds it open: a request must arrive within `timeoutMs`, an
 * idle connection is closed after it, and at most `maxConnections` are open at once.
 * @throws ValidationError naming each bad option and each bad elector (as `electors`, `electors[<index>]`) at once
 */
export async function serveHealth(electors: LeaderElector | readonly LeaderElector[], options: ServeHealthOptions): Promise<HealthServer> {
  // both judged before either is refused: bad electors and a bad option in one error
  const list = Electors.safeParse(electors, { error: FIXES });
  const opts = ServeHealthOptionsSchema.safeParse(options, { error: FIXES });
  if (!list.success || !opts.success) {
    const electorIssues = list.success ? [] : issuesOf(list.error).map((i) => ({ ...i, field: i.field === '(root)' ? 'electors' : `electors${i.field}` }));
    const bad = [...(list.success ? [] : ['electors']), ...(opts.success ? [] : ['options'])].join(' and ');
    throw new ValidationError(`serveHealth ${bad}`, [...electorIssues, ...(opts.success ? [] : issuesOf(opts.error))]);
  }
  const o = opts.data;
  const handler = handlerOf(list.data);
  o.signal?.throwIfAborted();
  const server = createServer(
    {
      // a health check reads no Host: HAProxy's `option httpchk GET /leader HTTP/1.1` sends none, and node:http would answer 400
      requireHostHeader: false,
      // node:http's defaults (60 s for the headers, 300 s for the request) let a client that says nothing hold a connection for a minute
      headersTimeout: o.timeoutMs,
      requestTimeout: o.timeoutMs,
      keepAliveTimeout: o.timeoutMs,
      // how often those two are checked (node's default: every 30 s, so a 5 s bound would be up to 35 s)
      connectionsCheckingInterval: Math.min(1_000, o.timeoutMs),
    },
    handler,
  );
  server.timeout = o.timeoutMs; // a connection idle this long is closed, whatever it was doing
  capConnections(server, o.maxConnections);
  await new Promise<void>((resolve, reject) => {
    const refused = (e: Error & { code?: string }) =>
      reject(new Error(`serveHealth cannot listen on ${o.host ?? '(every address)'}:${o.port}: ${LISTEN_ERRORS[e.code ?? ''] ?? e.message}`, { cause: e }));
    server.once('error', refused);
    server.listen(o.port, o.host, () => {
      server.off('error', refused);
      resolve();
    });
  });
  const a = server.address() as { address: string; family: string; port: number }; // net.AddressInfo: listening on a port
  // on every interface ('::' is dual-stack as node binds it): the IPv4 loopback, which either answers; `localhost` may resolve to ::1 first, which a 0.0.0.0 listener does not
  const host = a.address === '::' || a.address === '0.0.0.0' ? '127.0.0.1' : a.family === 'IPv6' ? `[${a.address}]` : a.address;
  // once: a second close() (a shutdown hook, a finally, the signal) resolves with the first
  let closing: Promise<void> | undefined;
  const close = (): Promise<void> =>
    (closing ??= new Promise<void>((resolve, reject) => {
      o.signal?.removeEventListener('abort', onAbort); // an app-wide signal outlives the server: no listener left on it
      server.close((e) => (e ? reject(e) : resolve()));
      server.closeAllConnections();
    }));
  const onAbort = () => void close().catch(() => undefined); // its error, if any, is close()'s to report to whoever awaits it
  if (o.signal?.aborted) {
    // aborted while it began to listen: closed at once, and refused as an aborted signal at the start is
    await close();
    o.signal.throwIfAborted();
  }
  o.signal?.addEventListener('abort', onAbort, { once: true });
  return { port: a.port, url: `http://${host}:${a.port}`, close };
}

/**
 * PushChannel, the push path over MQTT (docs/architecture.md, "Wake-ups"): a process keeps one
 * MQTT connection — to IoT Core in AWS, to local mode's broker on this machine — over which it
 * learns at once that a lease it follows changed: an election pinged its candidates, a term was
 * handed over or released, a preemption asks its holder to yield. Its electors then read the lease
 * at once instead of at their next poll, and, while wakes reach them, followers that are not the
 * designated successor read rarely. Published as `@conclave/sdk/push` (lib/sdk/push-entry.ts), with
 * `mqtt` an optional peer dependency, loaded when a channel runs: without it, run() rejects saying
 * what to install.
 */
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { Hash } from '@smithy/hash-node';
import { SignatureV4 } from '@smithy/signature-v4';
import type { IClientOptions, MqttClient } from 'mqtt';
import * as z from 'zod';
import { Nap, systemClock, uniqueId, type Clock, type Timer } from '../clock.js';
import { tryFollowed, unsentTold, unsentWhenFailed, urlTryKey } from '../connection-phase.js';
import { processOf } from '../schemas/instance.js';
import { isIotEndpoint, isProcessTopic, MAX_CLIENT_ID_LENGTH, processTopic, pushClientIdPrefix, pushLeasesTableIssue, pushSubscription, PushEndpointSchema, WakeSchema, wakeTopicNames, wakeTopics, type Wake } from '../schemas/push.js';
import { parse } from '../schemas/validation.js';
import { callBack, errorSink } from './faults.js';
import { ClientSchema, ClockSchema, StartUp, TablesSchema, deepFreeze, everyProblem, fn, optionErrors, type DeepReadonly } from './options.js';
import type { Push } from './push.js';

/** The options of a PushChannel; a bad one is a ValidationError naming the field and what to do. */
export const PushChannelOptionsSchema = z.strictObject(
  {
    /** The MQTT-over-WebSocket endpoint: the stack output `PushEndpoint`, or local mode's `ws://127.0.0.1:<port>/mqtt`. */
    endpoint: PushEndpointSchema,
    /** The deployment's tables (wakes are published under its leases table's name). @default 'conclave' */
    tables: TablesSchema,
    /** IoT Core: the connection is signed with this client's credentials and region (the workers' DynamoDBClient). */
    client: ClientSchema.optional(),
    /**
     * Whether the endpoint is IoT Core's, its connection signed (SigV4, with `client`'s credentials
     * and region): `true` for a custom domain (an IoT Core domain configuration authenticating with
     * SigV4), whose name cannot tell. @default true for IoT Core's own names
     * (`<prefix>-ats.iot.<region>.amazonaws.com`, its FIPS `data.iot-fips.<region>.amazonaws.com`,
     * its dual-stack `<prefix>-ats.iot.<region>.api.aws`, an interface VPC endpoint's
     * `vpce-….data.iot.<region>.vpce.amazonaws.com`), false for any other (local mode's broker)
     */
    iotCore: z.boolean().optional(),
    /**
     * The process's Session, the one its electors share (their `session` option): the channel then
     * subscribes to its process's own topic, `conclave/<leases table>/process/<session.process>`,
     * one subscription whatever the number of leases, and receives the wakes of the leases its
     * electors stand for and no others (the lease stream's function addresses each wake to the
     * processes of the lease's candidates). While an elector on no session, or on another one,
     * watches, the channel holds the deployment's subscription (`conclave/<leases table>/#`) in its
     * place, as it does without a session, whatever the number of such electors: it then takes in
     * every wake of the deployment (put the electors on the session to keep to the process's own).
     * Needs the grant of a worker with `allLeases`; a role granted named leases leaves this out (a
     * Session with `leaseNames` is refused). Should IoT Core refuse the process topic all the same
     * (it closes the connection: two connections in a row closed so, which dropped connections look
     * like too), the channel subscribes to the deployment's in its place, says so to onError, and
     * asks for the process topic again 5 minutes later, then twice as late at each refusal (at most
     * 6 hours apart).
     * @default none: one subscription to every wake of the deployment (`conclave/<leases table>/#`),
     * the cheaper for a few processes
     */
    session: z
      .custom<{ readonly process: string }>((v) => typeof (v as { process?: unknown } | null)?.process === 'string' && (v as { process: string }).process.length > 0, { error: 'must be the process\'s Session (new Session({ client })), the one its electors are given', abort: false })
      .optional(),
    /**
     * The MQTT client id: unique per connection (IoT Core drops the older of two with one id), and
     * starting with the deployment's `pushClientIdPrefix(leases table)`, `conclave-<leases table>:`
     * (what grantWorker allows to connect with). @default `<that prefix><random uuid>`
     */
    clientId: z
      .string()
      .regex(new RegExp(`^[A-Za-z0-9:_.-]{1,${MAX_CLIENT_ID_LENGTH}}$`), `must be 1-${MAX_CLIENT_ID_LENGTH} of A-Z a-z 0-9 : _ . - (IoT Core's client ids)`)
      .optional(),
    /** How often the connection is checked when idle (MQTT keep-alive; IoT Core allows 30–1200 s). @default 240 (under a NAT gateway's 350 s idle timeout) */
    keepaliveSeconds: z.number().int().min(30).max(1200).default(240),
    /**
     * After a dropped connection, the first try again comes after this, doubling to 30 s. To IoT
     * Core (`iotCore`), two connection attempts are at least 1 s apart whatever this is: it takes
     * one CONNECT a second per client id. @default 1000
     */
    reconnectFirstMs: z.number().int().min(10).max(30_000).default(1_000),
    /**
     * Faults: a failed connection or subscription (retried), a message that is not a wake (dropped).
     * IoT Core's close of a connection at the end of its 24 hours is no fault: not told. @default a
     * process warning
     */
    onError: fn<(error: Error) => void>().optional(),
    /** Test hook: the clock reconnects are timed by and connections are signed with. @default systemClock */
    clock: ClockSchema.optional(),
  },
  { error: optionErrors('PushChannel', 'endpoint (and, for IoT Core, client)') },
).superRefine((o, ctx) => {
  const ok = everyProblem.parsed(ctx);
  const valid = everyProblem.valid(ctx);
  if (ok('iotCore', 'endpoint') && (o.iotCore ?? (URL.canParse(o.endpoint) && isIotEndpoint(o.endpoint))) && !o.client)
    ctx.addIssue({ code: 'custom', path: ['client'], message: 'is required for an IoT Core endpoint: the connection is signed with its credentials and region (pass the DynamoDBClient the electors use)' });
  // `tables` refused already (zod goes on to this refinement without its transform): nothing to judge clientId by
  if (valid('tables') && typeof o.tables?.leases === 'string') {
    const long = pushLeasesTableIssue(o.tables.leases);
    if (long) ctx.addIssue({ code: 'custom', path: ['tables'], message: `names the leases table ${o.tables.leases.slice(0, 40)}..., which ${long}` });
  }
  const named = valid('session') ? leaseNamesOf(o.session) : undefined;
  if (named)
    ctx.addIssue({
      code: 'custom',
      path: ['session'],
      message: `is a Session of named leases (its leaseNames: ${named.slice(0, 3).join(', ')}${named.length > 3 ? ', ...' : ''}): its process topic needs the grant of a worker with allLeases (grantWorker without leaseNames), and IoT Core closes the connection of a role granted named leases that subscribes to it. Leave session out (the channel then subscribes to every wake of the deployment and receives those of the role's leases), or give the Session of a role granted allLeases (a Session without leaseNames)`,
    });
  if (!valid('tables', 'clientId') || typeof o.tables?.leases !== 'string') return;
  const prefix = pushClientIdPrefix(o.tables.leases);
  if (o.clientId !== undefined && !(o.clientId.startsWith(prefix) && o.clientId.length > prefix.length))
    ctx.addIssue({
      code: 'custom',
      path: ['clientId'],
      message: `must start with "${prefix}" and go on after it (pushClientIdPrefix of the leases table ${o.tables.leases}): grantWorker allows iot:Connect with this deployment's ids only. Leave it out to get "${prefix}<random uuid>"`,
    });
}, { when: everyProblem.when });

/** The `leaseNames` of a Session (its resolved options'), when it has them. */
function leaseNamesOf(session: unknown): readonly string[] | undefined {
  const names = (session as { options?: { leaseNames?: unknown } } | undefined)?.options?.leaseNames;
  return Array.isArray(names) && names.length > 0 ? names.map(String) : undefined;
}

/** The options of a PushChannel as written. */
export type PushChannelOptions = z.input<typeof PushChannelOptionsSchema>;
/** A PushChannel's options as resolved (defaults applied, the client id chosen, whether the endpoint is IoT Core's), read-only. */
export type ResolvedPushChannelOptions = DeepReadonly<Omit<z.output<typeof PushChannelOptionsSchema>, 'client' | 'onError' | 'clock' | 'clientId' | 'session' | 'iotCore'> & { clientId: string; iotCore: boolean }>;

/** A dropped connection is tried again after reconnectFirstMs, doubling up to this. */
const RECONNECT_MAX_MS = 30_000;
/** A connection attempt that has not been answered in this long is given up (and tried again). */
const CONNECT_TIMEOUT_MS = 10_000;
/** A connection closed within this of opening was likely taken over (another process connecting with the same client id): said so to onError. */
const TAKEN_OVER_HINT_MS = 5_000;
/** A connection that stayed up this many first backoffs (reconnectFirstMs) was up: the backoff starts afresh after it. One closed sooner (a flapping one) backs off on. */
const STABLE_BACKOFFS = 10;
/** A clean close (DISCONNECT, then the socket's close handshake) is waited for this long at most; then the connection is dropped. */
const END_GRACE_MS = 1_000;
/** How long a signed connection URL is valid: it is only checked when the connection opens. */
const PRESIGN_EXPIRES_SECONDS = 300;
/**
 * IoT Core closes a WebSocket connection after 24 hours: one that closes after this long met that
 * limit (not a fault, not told to onError); the channel connects again as after any close.
 */
const EXPECTED_CLOSE_AFTER_MS = 23 * 3_600_000;
/** IoT Core takes one CONNECT a second per client id: two attempts of a channel to IoT Core are this far apart at least. */
const IOT_CONNECT_INTERVAL_MS = 1_000;
/**
 * IoT Core may deliver messages only a while after its SUBACK ("there might be a delay between the
 * time the message broker sends a SUBACK and the time the client starts receiving"): the watchers,
 * woken when the connection came up, are woken again this long after it, to read what a wake
 * published in that while did not bring them.
 */
const SUBSCRIBED_SETTLE_MS = 1_500;

type MqttPackage = typeof import('mqtt');

/** mqtt.js's words for a connection closed before the broker's CONNACK, with no error of the WebSocket's. */
const CLOSED_BEFORE_CONNACK = "Couldn't connect to server";
/** mqtt.js's words for a CONNACK not come within its connectTimeout (CONNECT_TIMEOUT_MS). */
const CONNACK_TIMEOUT = 'connack timeout';

/**
 * What to check when the broker refused the WebSocket itself (`message`: the WebSocket's own error,
 * connectTelling): a refusal (401, 403) of IoT Core's is the signed URL's (the worker's
 * credentials, expired or refused, or this machine's clock), a 404 the path's; a connection closed
 * before its CONNACK, IoT Core's answer to a CONNECT its policy refuses; no CONNACK at all, no
 * broker there; else nothing.
 */
/** A connection refused: nothing listens at the endpoint's host and port. */
const REFUSED_HINT = ": nothing listens there: check the endpoint (the stack output PushEndpoint; locally, the CONCLAVE_PUSH_URL local mode printed when it started: the same at each start in one folder while its port is free)";

function upgradeRefused(message: string, signed: boolean): string {
  if (message === CLOSED_BEFORE_CONNACK)
    return ": the endpoint took the WebSocket and closed it before accepting the connection; for IoT Core, the role needs iot:Connect for this clientId (grantWorker allows the deployment's own, which PushChannel uses unless given a clientId)";
  if (message === CONNACK_TIMEOUT)
    return `: nothing accepted the connection within ${CONNECT_TIMEOUT_MS / 1000} s (the endpoint took the TCP connection but answered neither the WebSocket upgrade nor the MQTT CONNECT): something other than an MQTT broker listens there, or a proxy or firewall holds the connection; check the endpoint (the stack output PushEndpoint, or local mode's CONCLAVE_PUSH_URL)`;
  const status = /Unexpected server response: (\d{3})/.exec(message)?.[1];
  if ((status === '401' || status === '403') && !signed)
    return ": the broker refused the WebSocket, and the URL was not signed (the endpoint's name is none of IoT Core's): for IoT Core behind another name (a custom domain), give the option iotCore: true (and client), which signs it with SigV4";
  if (status === '401' || status === '403')
    return ": the broker refused the WebSocket; for IoT Core, the URL's signature: the worker's credentials (expired, or not valid), or this machine's clock more than 5 minutes off";
  if (status === '404') return ': nothing answers at that path: give the stack output PushEndpoint as it is (wss://<id>-ats.iot.<region>.amazonaws.com/mqtt)';
  return '';
}

/**
 * mqtt's connectAsync without retries, except that a connection closed before the broker's
 * CONNACK fails with what closed it: mqtt.js says only "Couldn't connect to server" and drops the
 * WebSocket's own error (an upgrade refused with HTTP 403, say), which its stream still carries.
 */
function connectTelling(connect: MqttPackage['connect'], url: string, options: IClientOptions, signal: AbortSignal): Promise<MqttClient> {
  return new Promise((resolve, reject) => {
    const m = connect(url, options);
    let streamError: Error | undefined;
    m.stream?.on('error', (e: Error) => void (streamError ??= e));
    const settle = (then: () => void) => {
      m.off('connect', connected);
      m.off('error', failed);
      m.off('close', closed);
      then();
    };
    const connected = () => settle(() => resolve(m));
    const fail = (e: Error) => {
      m.end(true);
      reject(e);
    };
    const failed = (e: Error) => settle(() => fail(e));
    const closed = () => settle(() => fail(streamError ?? new Error(CLOSED_BEFORE_CONNACK)));
    // stopped before the broker answered: the connection ends now (its socket and connect timer held the process up to the timeout)
    const stopped = () => settle(() => fail(new Error('stopped while connecting')));
    m.on('connect', connected);
    m.on('error', failed);
    m.on('close', closed);
    if (signal.aborted) return stopped();
    signal.addEventListener('abort', stopped, { once: true });
    const unlisten = () => signal.removeEventListener('abort', stopped);
    m.once('connect', unlisten);
    m.once('close', unlisten);
  });
}

/** `p`, or undefined once `signal` aborts first (its listener removed either way). */
function orAborted<T>(p: Promise<T>, signal: AbortSignal): Promise<T | undefined> {
  return new Promise((resolve, reject) => {
    const onAbort = () => resolve(undefined);
    if (signal.aborted) return onAbort();
    signal.addEventListener('abort', onAbort, { once: true });
    p.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
  });
}

/**
 * The mqtt package, an optional peer dependency of @conclave/sdk: loaded when a channel first runs,
 * so that a worker without it is told what to install rather than failing at its import.
 */
async function mqttPackage(): Promise<MqttPackage> {
  try {
    return await import('mqtt');
  } catch (e) {
    const missing = (e as { code?: unknown }).code === 'ERR_MODULE_NOT_FOUND' && /['"]mqtt['"]/.test((e as Error).message);
    if (!missing) throw e;
    throw new Error('PushChannel needs the mqtt package (an optional peer dependency of @conclave/sdk, for @conclave/sdk/push): install it (npm i mqtt@5), or leave `push` out of the electors\' options (they poll)', { cause: e });
  }
}

/** Whether mqtt's error is a SUBACK that refused a topic (its return code has 0x80 set; mqtt names no topic). */
const isRefusal = (e: unknown): boolean => {
  const granted = (e as { packet?: { granted?: unknown } } | null)?.packet?.granted;
  return Array.isArray(granted) && granted.some((g) => typeof g === 'number' && (g & 0x80) !== 0);
};
/** mqtt.js's words for a request (a SUBSCRIBE) whose connection closed before its answer. */
const CONNECTION_CLOSED = 'Connection closed';
/**
 * Whether mqtt's error is a request's connection closed under it: how IoT Core (MQTT 3.1.1) refuses
 * a SUBSCRIBE its policy does not allow, or one past its 50 a connection. It sends no SUBACK 0x80.
 */
const isClosedUnder = (e: unknown): boolean => (e as Error | null)?.message === CONNECTION_CLOSED;
/**
 * Connections in a row closed while subscribing to one filter before it is taken as refused: IoT
 * Core refuses by closing each (no SUBACK refusal); one close is as likely a network drop, after
 * which the filter is asked for again.
 */
const CLOSES_TO_DENY = 2;
/**
 * A filter taken as refused by closes is asked for again this long after (connections that dropped
 * while subscribing look the same as IoT Core's refusal: a process topic wrongly taken as refused
 * would cost its process every wake of the deployment), then twice as late after each refusal, up
 * to DENIAL_RECHECK_MAX_MS. One refused by a SUBACK is refused for good.
 */
const DENIAL_RECHECK_FIRST_MS = 5 * 60_000;
const DENIAL_RECHECK_MAX_MS = 6 * 3_600_000;
/** Why IoT Core refuses a subscription. */
const REFUSED_WHY = 'the role needs iot:Subscribe on it (grantWorker gives it)';

/** A watcher of a lease, and the topic its wakes come on. */
interface Watcher {
  readonly onWake: (wake: Wake | undefined) => void;
  /** Its wakes come on its lease's topic: the channel has no session, or the watcher is not of the session's process. */
  readonly onLeaseTopic: boolean;
}
/**
 * The push path over MQTT, imported from `@conclave/sdk/push` (with the `mqtt` package installed).
 * One MQTT connection per process, shared by all its LeaderElectors (`push` option): subscribed to
 * every wake of the deployment, or, given the process's `session`, to the wakes addressed to its
 * process, passing each to the electors of its lease. Built from its options,
 * then `run(signal)` once: connects, reconnects after a drop (and wakes every elector then), and
 * disconnects when the signal aborts. `ready` resolves at the first connection. Electors work
 * without it too: while it is not healthy, they poll as they would without push.
 */
export class PushChannel implements Push {
  /** The options as resolved (defaults applied, the client id chosen, whether the endpoint is IoT Core's). Frozen. */
  readonly options: ResolvedPushChannelOptions;
  /** Resolves at the first connection; rejects if run()'s signal aborted before one was made. Pending until run() is called. */
  readonly ready: Promise<void>;
  private readonly client: DynamoDBClient | undefined;
  private readonly clock: Clock;
  private readonly onError: (e: Error) => void;
  private readonly startUp: StartUp<void>;
  private readonly watchers = new Map<string, Set<Watcher>>();
  /** The process whose topic this channel subscribes to (the `session` option's), if any. */
  private readonly process: string | undefined;
  /** With a process: how many watchers are not of it (their wakes are not addressed to it). */
  private strangers = 0;
  private mqtt: MqttClient | undefined;
  private isLive = false;
  /** The topic filters the live connection holds, and those it asked for and has no answer to yet. */
  private readonly held = new Set<string>();
  private readonly asking = new Set<string>();
  /**
   * Topic filters refused (a SUBACK 0x80, or IoT Core's way: the connection closed while it
   * subscribed), remembered across reconnects: its process topic refused, the deployment's
   * subscription stands in; the deployment's refused, the process topic stands in while there is
   * one (not healthy while the deployment's is needed), else it is asked for again at each
   * connection (and forgotten once granted). One refused by closes is forgotten at its `recheck`.
   */
  private readonly denied = new Set<string>();
  /**
   * Connections that closed while subscribing to a filter with no grant of it between, by filter:
   * IoT Core's refusal closes every one (CLOSES_TO_DENY of them deny it, and one more once it is
   * asked for again), a network drop the one it met (a subscription granted since forgets them).
   */
  private readonly closedUnder = new Map<string, number>();
  /** Filters refused by closes: when each is asked for again (its timer), and how long after its refusal that was. */
  private readonly recheck = new Map<string, { timer: Timer; afterMs: number }>();
  /** The second wake after a subscription was granted, as the connection came up or switching on it (SUBSCRIBED_SETTLE_MS); cancelled when it closes. */
  private settle: Timer | undefined;
  /** When (monotonic) the last connection attempt began: IoT Core's get IOT_CONNECT_INTERVAL_MS between them. */
  private lastConnectAt: number | undefined;
  private counts = { received: 0, sent: 0, connections: 0, dropped: 0 };

  /** Validates and resolves `options`; nothing connects until run(). @throws ValidationError naming each bad option */
  constructor(options: PushChannelOptions) {
    const o = parse(PushChannelOptionsSchema, options, 'PushChannel options');
    const { client, onError, clock, session, ...data } = o;
    this.client = client;
    this.process = session?.process;
    this.clock = clock ?? systemClock;
    this.onError = errorSink(onError, 'PushChannel', this.clock);
    this.options = deepFreeze({ ...data, clientId: data.clientId ?? `${pushClientIdPrefix(data.tables.leases)}${uniqueId(this.clock)}`, iotCore: data.iotCore ?? isIotEndpoint(data.endpoint) });
    this.startUp = new StartUp(`PushChannel to ${data.endpoint}`);
    this.ready = this.startUp.ready;
  }

  /**
   * Whether wakes reach this process now: connected and subscribed. False before the first
   * connection, while it reconnects after a drop, and after run() ends; its electors then poll as
   * they would without push (false means slower wakes, not lost leases).
   */
  healthy(): boolean {
    // subscribed: to the deployment's subscription, which brings every watcher's wakes, or to the
    // process topic while only its own electors watch; so not while a switch to the deployment's
    // (an elector not on its session came) waits for its grant (the one held meanwhile is kept)
    return this.isLive && (this.held.has(this.needed()) || this.held.has(pushSubscription(this.options.tables.leases)));
  }

  /**
   * Wakes received (passed on) and sent, connections made, and messages dropped (not a wake, or a
   * wake naming another lease than the topic it came on), so far.
   */
  get stats(): { received: number; sent: number; connections: number; dropped: number } {
    return { ...this.counts };
  }

  /**
   * Calls `onWake` for every wake of `lease`, and with `undefined` whenever `healthy()` changes;
   * returns the function that stops it. With a `session`, a watcher whose `instance` is not of its
   * process (an elector on no session or on another one) hears its lease's topic: while one
   * watches, the channel holds the deployment's subscription in place of the process's.
   */
  watch(lease: string, onWake: (wake: Wake | undefined) => void, instance?: string): () => void {
    let set = this.watchers.get(lease);
    if (!set) this.watchers.set(lease, (set = new Set()));
    const w: Watcher = { onWake, onLeaseTopic: this.process === undefined || processOf(instance) !== this.process };
    set.add(w);
    const stranger = this.process !== undefined && w.onLeaseTopic;
    if (stranger) this.countStrangers(+1);
    let stopped = false;
    return () => {
      if (stopped) return;
      stopped = true;
      set.delete(w);
      if (set.size === 0 && this.watchers.get(lease) === set) this.watchers.delete(lease);
      if (stranger) this.countStrangers(-1);
    };
  }

  /**
   * The one topic filter that brings every watcher its wakes: every wake of the deployment, or, with
   * a session, its process's topic while every watcher is of the process and it was not refused.
   * One whatever the number of leases: IoT Core holds 50 a connection, and grants a worker no lease
   * topic's filter (only `…/#`, and the process topics to one with `allLeases`; `#` is literal in a
   * policy).
   */
  private needed(): string {
    const own = this.ownTopic();
    return own === undefined || this.strangers > 0 ? pushSubscription(this.options.tables.leases) : own;
  }

  /**
   * The topic filter a connection subscribes to: the one needed, but the process topic in place of
   * the deployment's once that was refused (the electors of the session keep their wakes; the others poll).
   */
  private wanted(): string {
    const need = this.needed();
    const own = this.ownTopic();
    return own !== undefined && this.denied.has(need) ? own : need;
  }

  /** The session's process topic, unless there is no session or the topic was refused (the role was granted named leases). */
  private ownTopic(): string | undefined {
    if (this.process === undefined) return undefined;
    const own = processTopic(this.options.tables.leases, this.process);
    return this.denied.has(own) ? undefined : own;
  }

  /**
   * A connection closed while subscribing to `filter` (not by the stop): the refusal (deny) once
   * CLOSES_TO_DENY connections in a row did so, else undefined (asked for again on the next one).
   */
  private closedWhileSubscribing(filter: string): Error | undefined {
    const closes = (this.closedUnder.get(filter) ?? 0) + 1;
    this.closedUnder.set(filter, closes);
    return closes >= CLOSES_TO_DENY ? this.deny(filter, 'closed') : undefined;
  }

  /**
   * Remembers `filter` as refused (`how`: by a SUBACK 0x80, for good; or by closing the connection,
   * IoT Core's way, until its recheck), tells the watchers if healthy() changed with it, and says why.
   */
  private deny(filter: string, how: 'suback' | 'closed'): Error {
    const leases = this.options.tables.leases;
    const own = this.ownTopic() === filter;
    this.changeHealth(() => this.denied.add(filter));
    let what = `subscription to ${filter} refused`;
    let minutes: number | undefined;
    if (how === 'closed') {
      const afterMs = Math.min(2 * (this.recheck.get(filter)?.afterMs ?? DENIAL_RECHECK_FIRST_MS / 2), DENIAL_RECHECK_MAX_MS);
      this.recheck.get(filter)?.timer.cancel();
      this.recheck.set(filter, { timer: this.clock.setTimer(afterMs, () => this.askAgain(filter), { background: true }), afterMs });
      minutes = Math.round(afterMs / 60_000);
      what = `the connection closed while subscribing to ${filter}, ${this.closedUnder.get(filter)} times with no grant of it between: IoT Core's refusal of a subscription the role may not make, or a connection that dropped (the two look alike)`;
    }
    // without a session nothing stands in: the deployment's subscription is asked for at each connection anyway
    if (!own) return new Error(`${what}: ${REFUSED_WHY}${minutes !== undefined && this.process !== undefined ? `; asked for again in ${minutes} min` : ''}`);
    return new Error(
      `${what}: a process topic (the session option) needs iot:Subscribe from grantWorker without leaseNames (allLeases); the channel subscribes to every wake of the deployment (${pushSubscription(leases)}) in its place${minutes === undefined ? ' from now on' : `, and asks for ${filter} again in ${minutes} min`} (leave session out for a role granted named leases)`,
    );
  }

  /** A filter refused by closes, at its recheck: asked for again where it is wanted (on the live connection, or the next). */
  private askAgain(filter: string): void {
    this.changeHealth(() => this.denied.delete(filter));
    if (this.mqtt) this.resubscribe(this.mqtt);
  }

  /**
   * `filter` granted on `m` (as it connected, or switching on it): no longer refused, and the
   * watchers woken again SUBSCRIBED_SETTLE_MS after, IoT Core delivering only a while after its
   * SUBACK (they are woken at once by the health edge, if it was one).
   */
  private granted(m: MqttClient, filter: string): void {
    this.changeHealth(() => {
      this.held.add(filter);
      this.closedUnder.delete(filter);
      // refused before and granted now (a filter with nothing to stand in for it is asked for at each connection): the grant changed
      this.denied.delete(filter);
    });
    this.recheck.get(filter)?.timer.cancel();
    this.recheck.delete(filter);
    this.settle?.cancel();
    // a wake published meanwhile is lost, so the watchers read again then
    this.settle = this.clock.setTimer(SUBSCRIBED_SETTLE_MS, () => void (this.mqtt === m && this.healthy() && this.wakeAll()), { background: true });
  }

  /** Counts a watcher not of the session's process in or out: the filter needed may switch (not healthy until the one that brings every watcher's wakes is held). */
  private countStrangers(by: number): void {
    this.changeHealth(() => (this.strangers += by));
    if (this.mqtt) this.resubscribe(this.mqtt);
  }

  /**
   * Brings the live connection `m` to the wanted topic filter: subscribes to it, and lets go of the
   * other once it is held (no gap between the two; a wake heard on both meanwhile costs a read).
   */
  private resubscribe(m: MqttClient): void {
    if (this.mqtt !== m || !this.isLive) return;
    const want = this.wanted();
    if (!this.held.has(want) && !this.asking.has(want) && !this.denied.has(want)) {
      this.asking.add(want);
      m.subscribe(want, { qos: 0 }, (e) => {
        if (this.mqtt !== m) return; // the connection closed: the next one subscribes afresh
        // the connection closed under it: its close handler tells (IoT Core's refusal, unless by the stop), and the next one subscribes afresh
        if (e && isClosedUnder(e)) return;
        this.asking.delete(want);
        if (e && !isRefusal(e)) return this.onError(e);
        if (e) {
          // no wake can come on it: what stands in is subscribed to
          this.onError(new Error(`PushChannel: ${this.deny(want, 'suback').message}`));
          return this.resubscribe(m);
        }
        this.granted(m, want);
        this.resubscribe(m);
      });
    }
    if (!this.held.has(want)) return;
    for (const t of [...this.held]) {
      if (t === want) continue;
      this.held.delete(t);
      m.unsubscribe(t, (e) => e && this.onError(e));
    }
  }

  /**
   * Tells the other processes following `lease` that it changed (QoS 0, best effort; nothing while
   * not healthy): on the lease's topic and, with a `session`, on the process topic of `to` (a
   * hand-off's heir, a vacated lease's successor) if its instance names one. (Without a session, or
   * with its process topic refused, the role may have no grant on process topics, and IoT Core drops
   * a connection that publishes where it may not.)
   */
  wake(lease: string, revision?: number, to?: string): void {
    const m = this.mqtt;
    if (!m || !this.isLive) return;
    const wake: Wake = { lease, by: 'worker', ...(revision !== undefined ? { revision } : {}) };
    // its process topic refused, the role has no grant on process topics either: IoT Core drops a connection that publishes where it may not
    const heir = this.ownTopic() !== undefined ? processOf(to) : undefined;
    const topics = [...wakeTopics(this.options.tables.leases, lease), ...(heir !== undefined ? wakeTopics(this.options.tables.leases, lease, [heir]) : [])];
    for (const topic of topics) {
      this.counts.sent++;
      m.publish(topic, JSON.stringify(wake), { qos: 0 }, (e) => {
        if (e) this.onError(e);
      });
    }
  }

  /** Connects and stays connected until `signal` aborts; resolves once disconnected. */
  async run(signal: AbortSignal): Promise<void> {
    this.startUp.claim('PushChannel');
    const { connect } = await mqttPackage().catch((e: unknown) => {
      throw this.startUp.fail(e);
    });
    let backoff = this.options.reconnectFirstMs;
    try {
      while (!signal.aborted) {
        const up = await this.connectOnce(connect, signal).catch((e: unknown) => {
          const why = (e as Error).message;
          // not connected yet when mqtt.js gave up: where the connection stopped (the TCP handshake, say), not what the broker did
          const unsent = unsentWhenFailed(e);
          // refused at once (nothing listens there): no timeout to tell of, however early it stopped
          const refused = (e as { code?: string }).code === 'ECONNREFUSED';
          const told = unsent && !refused ? unsentTold(unsent, CONNECT_TIMEOUT_MS, 'iot') : undefined;
          const hint = refused ? REFUSED_HINT : told ? `: timed out ${told.how}: ${told.fix}` : upgradeRefused(why, this.options.iotCore);
          if (!signal.aborted) this.onError(new Error(`PushChannel: could not connect to ${this.options.endpoint} (trying again in ${backoff} ms): ${why}${hint}`, { cause: e }));
          return undefined;
        });
        if (up) {
          const since = this.clock.monotonic();
          const told = await up.closed;
          if (signal.aborted) break;
          const lasted = Math.round(this.clock.monotonic() - since);
          // it was up a while: start the backoff afresh (a connection closed at once, over and over, backs off on)
          if (lasted >= STABLE_BACKOFFS * this.options.reconnectFirstMs) backoff = this.options.reconnectFirstMs;
          const hint = lasted < TAKEN_OVER_HINT_MS ? '; closed this soon, it may have been taken over: does another process connect with the same clientId?' : '';
          // IoT Core's 24-hour limit on a connection: expected, not told (the watchers were, by the health edge); a refusal: told already
          if (!told && lasted < EXPECTED_CLOSE_AFTER_MS) this.onError(new Error(`PushChannel: the connection to ${this.options.endpoint} closed after ${lasted} ms (its electors poll until it is back; trying again in about ${backoff} ms)${hint}`));
        }
        if (signal.aborted) break;
        await this.clock.sleep(backoff * (0.8 + 0.4 * this.clock.random()), signal);
        backoff = Math.min(backoff * 2, RECONNECT_MAX_MS);
      }
    } finally {
      this.settle?.cancel();
      for (const { timer } of this.recheck.values()) timer.cancel();
      this.setLive(false);
      const m = this.mqtt;
      this.mqtt = undefined;
      if (m) await this.endGently(m);
      this.startUp.failed(signal.reason); // only if never connected: ready already resolved otherwise
    }
  }

  /**
   * Closes `m` cleanly (not forced: a wake this process just published, a hand-off's, goes out
   * first), but waits END_GRACE_MS at most: a half-open path or a SUBSCRIBE left unanswered would
   * hold a clean close for the socket's or the keep-alive's timeout (30 s to minutes), and with it
   * the process's shutdown. Then the connection is dropped.
   */
  private async endGently(m: MqttClient): Promise<void> {
    const grace = new Nap(this.clock, END_GRACE_MS);
    const clean = await Promise.race([m.endAsync(false).then(() => true, () => true), grace.done.then(() => false)]);
    grace.end();
    // (a second end() is a no-op once the first began: the connection's stream itself is dropped, its socket terminated)
    if (!clean) m.stream.destroy();
  }

  /**
   * Opens one connection and subscribes; resolves to `closed`, which settles when it closes: to
   * true if that close was told already (IoT Core's refusal of a subscription asked for on it).
   */
  private async connectOnce(connect: MqttPackage['connect'], signal: AbortSignal): Promise<{ closed: Promise<boolean> }> {
    // stopped while the URL is signed: a credentials provider that hangs (STS unreachable) held run() after the stop
    const url = await orAborted(this.connectionUrl(), signal);
    if (url === undefined) return { closed: Promise.resolve(false) };
    if (this.options.iotCore && this.lastConnectAt !== undefined) {
      // IoT Core takes one CONNECT a second per client id (a small reconnectFirstMs, or a connection closed at once)
      const wait = this.lastConnectAt + IOT_CONNECT_INTERVAL_MS - this.clock.monotonic();
      if (wait > 0) await this.clock.sleep(wait, signal);
      if (signal.aborted) return { closed: Promise.resolve(false) };
    }
    this.lastConnectAt = this.clock.monotonic();
    const connecting = tryFollowed(urlTryKey(url), () => connectTelling(connect, url, { clientId: this.options.clientId, protocolVersion: 4, clean: true, keepalive: this.options.keepaliveSeconds, reconnectPeriod: 0, connectTimeout: CONNECT_TIMEOUT_MS }, signal));
    // stopped while connecting: run() does not wait out the connect timeout (a broker that never answers); the connection is ended (connectTelling)
    const m = await orAborted(connecting, signal);
    if (!m) {
      void connecting.catch(() => undefined);
      return { closed: Promise.resolve(false) };
    }
    let refused = false;
    const closed = new Promise<void>((resolve) => {
      m.once('close', () => resolve());
      const onAbort = () => void this.endGently(m);
      signal.addEventListener('abort', onAbort, { once: true });
      m.once('close', () => signal.removeEventListener('abort', onAbort));
    });
    if (signal.aborted) {
      // aborted while connecting: the listener above came too late to hear it
      await m.endAsync(true).catch(() => undefined);
      return { closed: closed.then(() => false) };
    }
    m.on('error', (e) => this.onError(e));
    m.on('message', (topic, payload) => this.deliver(topic, payload));
    m.once('close', () => {
      if (this.mqtt === m) {
        // closed while it asked for a filter (not by the stop): IoT Core's refusal of it once closed so in a row, told here (the SUBSCRIBE's own callback may come before or after)
        for (const filter of signal.aborted ? [] : this.asking) {
          const denial = this.closedWhileSubscribing(filter);
          if (denial) this.onError(new Error(`PushChannel: ${denial.message}`));
          refused ||= denial !== undefined;
        }
        this.mqtt = undefined;
      }
      this.settle?.cancel();
      this.setLive(false);
    });
    // QoS 0: a wake is a hint (a lost one costs a poll's wait), and IoT Core bills a QoS 1 delivery's acknowledgement as a message of its own
    const topic = this.wanted();
    const subscribing = m.subscribeAsync(topic, { qos: 0 });
    // a broker that answers the keep-alive but never the SUBSCRIBE held this connection, and the channel, for ever
    const unanswered = new Nap(this.clock, CONNECT_TIMEOUT_MS);
    try {
      const answered = await Promise.race([subscribing.then(() => true), unanswered.done.then(() => false)]);
      if (!answered) {
        void subscribing.catch(() => undefined);
        throw new Error(`no answer to the subscription to ${topic} within ${CONNECT_TIMEOUT_MS / 1000} s (the broker took the connection but did not acknowledge its SUBSCRIBE): the connection is closed and tried again`);
      }
    } catch (e) {
      await m.endAsync(true).catch(() => undefined);
      // refused (a SUBACK 0x80, or closed under it CLOSES_TO_DENY times in a row, IoT Core's way; not by the stop): remembered, so the next connection subscribes to what stands in
      if (isRefusal(e)) throw this.deny(topic, 'suback');
      if (!isClosedUnder(e) || signal.aborted) throw e;
      throw this.closedWhileSubscribing(topic) ?? new Error(`the connection closed while subscribing to ${topic} (IoT Core's refusal of it, or a connection that dropped: asked for again on the next connection; closed so ${CLOSES_TO_DENY} times in a row, it is taken as refused for a while)`);
    } finally {
      unanswered.end();
    }
    if (!m.connected || signal.aborted) {
      await m.endAsync(true).catch(() => undefined);
      if (signal.aborted) return { closed: closed.then(() => false) };
      throw new Error('the connection closed while subscribing');
    }
    this.mqtt = m;
    this.counts.connections++;
    this.granted(m, topic);
    this.setLive(true);
    this.resubscribe(m); // watchers that came or went while it subscribed may want the other
    this.startUp.started();
    return { closed: closed.then(() => refused) };
  }

  private deliver(topic: string, payload: Buffer): void {
    const leases = this.options.tables.leases;
    const ownTopic = this.ownTopic();
    const own = ownTopic !== undefined && topic === ownTopic;
    // the subscription to every wake takes in every process's topic too (its own too, once that was refused): each such wake also came on its lease's topic
    if (!own && isProcessTopic(leases, topic)) return;
    let wake: Wake;
    try {
      wake = WakeSchema.parse(JSON.parse(payload.toString('utf8')));
    } catch (e) {
      this.counts.dropped++;
      this.onError(new Error(`PushChannel: dropped a message that is not a wake: ${(e as Error).message}`));
      return;
    }
    // publish rights are per topic: the topic, not the payload, says whose wake it is. A process
    // topic carries any lease's wakes: whoever may publish there may already wake every lease (allLeases)
    if (!own && !wakeTopicNames(leases, topic, wake.lease)) {
      this.counts.dropped++;
      this.onError(new Error(`PushChannel: dropped a wake naming lease ${JSON.stringify(wake.lease)} that came on another lease's topic (${topic})`));
      return;
    }
    this.counts.received++;
    // each watcher hears one copy of a change: its process's, or its lease topic's (every watcher's, its process topic refused)
    for (const w of [...(this.watchers.get(wake.lease) ?? [])]) if ((!w.onLeaseTopic && ownTopic !== undefined) === own) this.tell(w.onWake, wake);
  }

  /** A change of liveness wakes everyone: a wake may have been missed, and read cadences depend on it. */
  private setLive(live: boolean): void {
    this.changeHealth(() => {
      this.isLive = live;
      if (live) return;
      // the next connection subscribes afresh
      this.held.clear();
      this.asking.clear();
    });
  }

  /** Makes `change`, then tells every watcher if `healthy()` changed with it. */
  private changeHealth(change: () => void): void {
    const was = this.healthy();
    change();
    if (this.healthy() === was) return;
    this.wakeAll();
  }

  /** Tells every watcher to read now (`undefined`: a wake may have been missed). */
  private wakeAll(): void {
    for (const set of [...this.watchers.values()]) for (const w of [...set]) this.tell(w.onWake, undefined);
  }

  /** A watcher, called from the connection's handlers: what it throws goes to onError, never into the connection. */
  private tell(w: (wake: Wake | undefined) => void, wake: Wake | undefined): void {
    callBack(() => w(wake), (e) => this.onError(e instanceof Error ? e : new Error(String(e))));
  }

  /** The URL to open: as given (local mode), or signed with SigV4 for IoT Core. */
  private async connectionUrl(): Promise<string> {
    const endpoint = this.options.endpoint;
    if (!this.options.iotCore) return endpoint;
    const client = this.client!;
    return presignIotUrl(endpoint, await client.config.region(), await client.config.credentials(), awsTime(this.clock.now(), client));
  }
}

/**
 * `now` (this machine's clock) as AWS's time, as the DynamoDB `client` last saw it: the AWS SDK
 * keeps AWS's clock less this machine's (`systemClockOffset`) from its answers' Date headers, and
 * signs its own requests with it. IoT Core's URL is signed the same way, so a machine whose clock
 * is minutes off, which DynamoDB's requests survive, is not refused by IoT Core either (it refuses
 * a signature more than 5 minutes from its time).
 */
export function awsTime(now: number, client: Pick<DynamoDBClient, 'config'>): number {
  const offset = (client.config as { systemClockOffset?: unknown }).systemClockOffset;
  return now + (typeof offset === 'number' && Number.isFinite(offset) ? offset : 0);
}

/**
 * IoT Core's signed WebSocket URL (SigV4, service `iotdevicegateway`). The session token is added
 * after signing, as IoT Core expects of temporary credentials.
 */
export async function presignIotUrl(endpoint: string, region: string, credentials: { accessKeyId: string; secretAccessKey: string; sessionToken?: string }, now: number): Promise<string> {
  const url = new URL(endpoint);
  const path = url.pathname === '/' || url.pathname === '' ? '/mqtt' : url.pathname;
  const signer = new SignatureV4({ service: 'iotdevicegateway', region, credentials: { accessKeyId: credentials.accessKeyId, secretAccessKey: credentials.secretAccessKey }, sha256: Hash.bind(null, 'sha256') });
  const signed = await signer.presign(
    // the host with its port, if not 443 (a custom domain's): what the WebSocket's Host header carries, and so what IoT Core checks the signature against
    { method: 'GET', protocol: 'wss:', hostname: url.hostname, ...(url.port ? { port: Number(url.port) } : {}), path, headers: { host: url.host }, query: {} },
    { expiresIn: PRESIGN_EXPIRES_SECONDS, signingDate: new Date(now) },
  );
  const query = new URLSearchParams(signed.query as Record<string, string>);
  if (credentials.sessionToken) query.set('X-Amz-Security-Token', credentials.sessionToken);
  return `wss://${url.host}${path}?${query.toString()}`;
}

/**
 * Where this worker runs, asked of the platform itself at start-up: the ECS task metadata
 * endpoint (v4) or the EC2 instance metadata service (IMDSv2 tokens only). Each answer is
 * awaited for a short time; no answer means no platform, never a failure. A process asks once
 * for all its electors (detectPlatform): the ECS agent throttles the endpoint per task.
 */
import { systemClock, type Clock } from '../clock.js';
import { Location, LocationName, regionOfZone } from '../schemas/location.js';
import { Platform } from '../schemas/platform.js';

export interface DetectOptions {
  /** Where ECS_CONTAINER_METADATA_URI_V4 and the IMDS settings are read. @default process.env */
  env?: NodeJS.ProcessEnv;
  /** Per request (each try of the ECS endpoint twice the last). @default 1000 */
  timeoutMs?: number;
  /** Try the EC2 instance metadata service when not on ECS. @default true unless AWS_EC2_METADATA_DISABLED=true */
  ec2?: boolean;
  /**
   * Told, once, when ECS_CONTAINER_METADATA_URI_V4 is set but its `/task` gave no usable answer:
   * the worker then runs without a platform signal (IMDS is not asked: on an EC2 host it would name
   * the host, whose id no task stop carries).
   */
  onUnanswered?: (e: Error) => void;
  /** What requests time out and pauses wait on. @default systemClock */
  clock?: Clock;
  /**
   * This caller stops waiting when it aborts (a SIGTERM during start-up): undefined at once, nothing
   * told. The ask it shared goes on for the other callers, and is given up once none waits.
   */
  signal?: AbortSignal;
}

/** The IMDS address: AWS_EC2_METADATA_SERVICE_ENDPOINT (as the AWS SDKs read it), else the link-local one. */
const imdsEndpoint = (env: NodeJS.ProcessEnv) => (env['AWS_EC2_METADATA_SERVICE_ENDPOINT'] ?? 'http://169.254.169.254').replace(/\/$/, '');

/** How one request ended: its body (a 2xx), the status of another answer, or no answer (timed out, refused, stopped). */
type Answer = { body: string } | { status: number; retryAfterMs: number | undefined } | { none: string };

/** Retry-After, in seconds or as an HTTP date, in ms from `now`; undefined when absent or not either. */
function retryAfterMs(header: string | null, now: number): number | undefined {
  if (header === null || header.trim() === '') return undefined;
  if (/^\s*\d+\s*$/.test(header)) return Number(header) * 1000;
  const at = Date.parse(header);
  return Number.isNaN(at) ? undefined : Math.max(0, at - now);
}

/** One request, given up after `timeoutMs` on `clock` or when `signal` aborts. */
async function request(url: string, init: RequestInit, timeoutMs: number, clock: Clock, signal: AbortSignal | undefined): Promise<Answer> {
  if (signal?.aborted) return { none: 'stopped' };
  const ended = new AbortController();
  const timer = clock.setTimer(timeoutMs, () => ended.abort());
  const stop = () => ended.abort();
  signal?.addEventListener('abort', stop, { once: true });
  try {
    const r = await fetch(url, { ...init, signal: ended.signal });
    if (r.ok) return { body: await r.text() };
    await r.body?.cancel();
    return { status: r.status, retryAfterMs: retryAfterMs(r.headers.get('retry-after'), clock.now()) };
  } catch (e) {
    // not there, refused, or too slow: not this platform
    if (signal?.aborted) return { none: 'stopped' };
    if (ended.signal.aborted) return { none: `no answer within ${timeoutMs} ms` };
    const code = (e as { cause?: { code?: unknown } }).cause?.code;
    return { none: `no answer (${typeof code === 'string' ? code : e instanceof Error ? e.message : String(e)})` };
  } finally {
    timer.cancel();
    signal?.removeEventListener('abort', stop);
  }
}

const bodyOf = (a: Answer): string | undefined => ('body' in a ? a.body : undefined);

/** Tries of the ECS task metadata endpoint, the timeout doubling each time: it is there (its variable is set), only slow. */
const ECS_TRIES = 3;

/**
 * ECS: `${ECS_CONTAINER_METADATA_URI_V4}/task` → cluster, task ARN, availability zone. The variable
 * says the endpoint is there, so a slow answer (a starved host) is asked again, with twice the
 * timeout each time, rather than taken for "not ECS".
 */
export async function detectEcs(env: NodeJS.ProcessEnv, timeoutMs: number, clock: Clock = systemClock, signal?: AbortSignal): Promise<Platform | undefined> {
  const found = await askEcs(env, timeoutMs, clock, signal);
  return found && 'platform' in found ? found.platform : undefined;
}

/** What asking ECS gave: the platform, why not (`throttled`: the agent answered 429), or nothing (stopped). */
type EcsFound = { platform: Platform } | { url: string; why: string; throttled: boolean } | { stopped: true };

/** detectEcs, saying why not: undefined when the variable is not set (not ECS). */
async function askEcs(env: NodeJS.ProcessEnv, timeoutMs: number, clock: Clock, signal: AbortSignal | undefined): Promise<EcsFound | undefined> {
  const base = env['ECS_CONTAINER_METADATA_URI_V4'];
  if (!base) return undefined;
  const url = `${base.replace(/\/$/, '')}/task`;
  const tries: string[] = [];
  let throttled = false;
  let body: string | undefined;
  for (let i = 0; i < ECS_TRIES && body === undefined; i++) {
    const a = await request(url, {}, timeoutMs * 2 ** i, clock, signal);
    if (signal?.aborted) return { stopped: true };
    body = bodyOf(a);
    if ('none' in a) tries.push(a.none);
    if (!('status' in a)) continue;
    tries.push(`HTTP ${a.status}`);
    throttled ||= a.status === 429;
    // an answer, but not the task: asked again after a pause (the agent answers 429 at once past its
    // rate; asked again at once, every try lands in the same burst), as long as it asks, up to the longest timeout
    if (i + 1 < ECS_TRIES) await clock.sleep(Math.min(a.retryAfterMs ?? timeoutMs * 2 ** i, timeoutMs * 2 ** (ECS_TRIES - 1)), signal);
    if (signal?.aborted) return { stopped: true };
  }
  if (body === undefined) return { url, throttled, why: `gave no usable answer in ${ECS_TRIES} tries (${tries.join('; ')})` };
  try {
    const t = JSON.parse(body) as { Cluster?: unknown; TaskARN?: unknown; AvailabilityZone?: unknown };
    const r = Platform.safeParse({ kind: 'ecs', id: t.TaskARN, cluster: t.Cluster, ...(typeof t.AvailabilityZone === 'string' && t.AvailabilityZone ? { availabilityZone: t.AvailabilityZone } : {}) });
    if (r.success) return { platform: r.data };
  } catch {
    // not JSON: told below
  }
  return { url, throttled: false, why: 'answered without a task ARN and cluster' };
}

/** EC2: an IMDSv2 session token, then instance id and availability zone. IMDSv1 is never used. */
export async function detectEc2(env: NodeJS.ProcessEnv, timeoutMs: number, clock: Clock = systemClock, signal?: AbortSignal): Promise<Platform | undefined> {
  const base = imdsEndpoint(env);
  const token = bodyOf(await request(`${base}/latest/api/token`, { method: 'PUT', headers: { 'X-aws-ec2-metadata-token-ttl-seconds': '60' } }, timeoutMs, clock, signal));
  if (!token) return undefined;
  const headers = { 'X-aws-ec2-metadata-token': token };
  const [id, az] = (
    await Promise.all([
      request(`${base}/latest/meta-data/instance-id`, { headers }, timeoutMs, clock, signal),
      request(`${base}/latest/meta-data/placement/availability-zone`, { headers }, timeoutMs, clock, signal),
    ])
  ).map(bodyOf);
  const r = Platform.safeParse({ kind: 'ec2', id: id?.trim(), ...(az?.trim() ? { availabilityZone: az.trim() } : {}) });
  return r.success ? r.data : undefined;
}

/** ECS first, then EC2 (where `ec2`): once, for whoever waits on it (detectPlatform). */
async function detectOnce(env: NodeJS.ProcessEnv, ec2: boolean, timeoutMs: number, clock: Clock, signal: AbortSignal): Promise<EcsFound | undefined> {
  const ecs = await askEcs(env, timeoutMs, clock, signal);
  if (ecs) return ecs;
  const platform = ec2 ? await detectEc2(env, timeoutMs, clock, signal) : undefined;
  return platform && !signal.aborted ? { platform } : undefined;
}

/** A detection under way or done, and how many callers wait on it (the last to stop waiting gives it up). */
interface Detection {
  readonly found: Promise<EcsFound | undefined>;
  waiting: number;
  /** Stops it and forgets it: the next caller starts another. */
  giveUp(): void;
}

/**
 * The process's detections, by clock, then by what they ask (the ECS endpoint, IMDS's or none,
 * the timeout): one that found the platform stays for the process's life; any other is forgotten
 * once done, so the next caller asks again (a throttled or starved endpoint may answer then).
 */
const detections = new WeakMap<Clock, Map<string, Detection>>();

/** The detection for `key`, joined, or started if none is under way or kept. */
function detectionFor(clock: Clock, key: string, start: (signal: AbortSignal) => Promise<EcsFound | undefined>): Detection {
  let byKey = detections.get(clock);
  if (!byKey) detections.set(clock, (byKey = new Map()));
  const had = byKey.get(key);
  if (had) return had;
  const stop = new AbortController();
  const forget = () => void (byKey.get(key) === d && byKey.delete(key));
  const d: Detection = { found: start(stop.signal), waiting: 0, giveUp: () => (forget(), stop.abort()) };
  byKey.set(key, d);
  d.found.then((f) => {
    if (!f || !('platform' in f)) forget();
  }, forget);
  return d;
}

/** `d`'s answer, or `stopped` as soon as `signal` aborts; the last caller to stop waiting gives `d` up (a caller with no signal never stops). */
function waitOn(d: Detection, signal: AbortSignal | undefined): Promise<EcsFound | undefined> {
  if (signal?.aborted) return Promise.resolve({ stopped: true });
  d.waiting++;
  if (!signal) return d.found;
  return new Promise((resolve, reject) => {
    const leave = () => {
      if (--d.waiting === 0) d.giveUp();
      resolve({ stopped: true });
    };
    signal.addEventListener('abort', leave, { once: true });
    const done = () => signal.removeEventListener('abort', leave);
    d.found.then(
      (f) => (done(), resolve(f)),
      (e: unknown) => (done(), reject(e)),
    );
  });
}

/**
 * ECS first (a task on an EC2 host is the task that stops), then EC2; undefined when neither
 * answers. Where ECS_CONTAINER_METADATA_URI_V4 is set, ECS alone: an endpoint that does not answer
 * (or answers nothing usable) is told to `onUnanswered` and gives no platform, never the EC2
 * host's instance id from IMDS (no task stop would ever carry it).
 *
 * Once per process for the same endpoints and clock: callers at once share one ask (the ECS agent
 * throttles its endpoint per task, about 40 requests a second: a hundred electors each asking got
 * 429s), and a platform found is kept; no platform found is asked again by the next caller. Each
 * caller is told on its own `onUnanswered`.
 */
export async function detectPlatform(opts: DetectOptions = {}): Promise<Platform | undefined> {
  const env = opts.env ?? process.env;
  const timeoutMs = opts.timeoutMs ?? 1_000;
  const clock = opts.clock ?? systemClock;
  const ecs = env['ECS_CONTAINER_METADATA_URI_V4'] || undefined;
  const ec2 = !ecs && (opts.ec2 ?? env['AWS_EC2_METADATA_DISABLED']?.toLowerCase() !== 'true');
  const key = JSON.stringify([ecs ?? null, ec2 ? imdsEndpoint(env) : null, timeoutMs]);
  // (the key holds all of env that detection reads)
  const found = await waitOn(
    detectionFor(clock, key, (signal) => detectOnce(env, ec2, timeoutMs, clock, signal)),
    opts.signal,
  );
  if (!found || 'stopped' in found) return undefined;
  if ('platform' in found) return found.platform;
  opts.onUnanswered?.(
    new Error(
      `The ECS task metadata endpoint ${found.url} (ECS_CONTAINER_METADATA_URI_V4) ${found.why}: the platform signal is off for this worker (a task stop will not end its terms; they run out). ` +
        `EC2 instance metadata is not asked instead (it would name the host, not the task). ` +
        (found.throttled
          ? 'HTTP 429 is the ECS agent throttling the task\'s requests to it (about 40 a second, for all its containers): fewer processes in the task asking at start-up, or give `platform` yourself.'
          : "Check that the ECS agent runs and answers on the host, and that the task's network mode lets the container reach the endpoint; or give `platform` yourself."),
    ),
  );
  return undefined;
}

const named = (v: string | undefined): string | undefined => (v !== undefined && LocationName.safeParse(v).success ? v : undefined);

/**
 * Where a worker's candidacy says it runs: the zone it was given, else the one its platform
 * reported; the region it was given, else the zone's, else AWS_REGION (AWS_DEFAULT_REGION), as
 * ECS, Lambda and the AWS SDKs set it. A detected zone outside a region the worker was given is
 * left out (what it was told wins). Undefined when nothing is known.
 */
export function resolveLocation(stated: Location | undefined, platform: Platform | undefined, env: NodeJS.ProcessEnv = process.env): Location | undefined {
  const detected = named(platform?.availabilityZone);
  const zone = stated?.zone ?? (stated?.region !== undefined && regionOfZone(detected) !== undefined && regionOfZone(detected) !== stated.region ? undefined : detected);
  const region = stated?.region ?? regionOfZone(zone) ?? named(env['AWS_REGION']) ?? named(env['AWS_DEFAULT_REGION']);
  if (zone === undefined && region === undefined) return undefined;
  return { ...(zone !== undefined ? { zone } : {}), ...(region !== undefined ? { region } : {}) };
}

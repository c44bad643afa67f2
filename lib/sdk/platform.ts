/**
 * Where this worker runs, asked of the platform itself at start-up: the ECS task metadata
 * endpoint (v4) or the EC2 instance metadata service (IMDSv2 tokens only). Each answer is
 * awaited for a short time; no answer means no platform, never a failure.
 */
import { Location, LocationName, regionOfZone } from '../schemas/location.js';
import { Platform } from '../schemas/platform.js';

export interface DetectOptions {
  /** Where ECS_CONTAINER_METADATA_URI_V4 and the IMDS settings are read. @default process.env */
  env?: NodeJS.ProcessEnv;
  /** Per request. @default 1000 */
  timeoutMs?: number;
  /** Try the EC2 instance metadata service when not on ECS. @default true unless AWS_EC2_METADATA_DISABLED=true */
  ec2?: boolean;
  /**
   * Told, once, when ECS_CONTAINER_METADATA_URI_V4 is set but its `/task` gave no usable answer:
   * the worker then runs without a platform signal (IMDS is not asked: on an EC2 host it would name
   * the host, whose id no task stop carries).
   */
  onUnanswered?: (e: Error) => void;
}

/** The IMDS address: AWS_EC2_METADATA_SERVICE_ENDPOINT (as the AWS SDKs read it), else the link-local one. */
const imdsEndpoint = (env: NodeJS.ProcessEnv) => (env['AWS_EC2_METADATA_SERVICE_ENDPOINT'] ?? 'http://169.254.169.254').replace(/\/$/, '');

async function request(url: string, init: RequestInit, timeoutMs: number): Promise<string | undefined> {
  try {
    const r = await fetch(url, { ...init, signal: AbortSignal.timeout(timeoutMs) });
    return r.ok ? await r.text() : undefined;
  } catch {
    return undefined; // not there, refused, or too slow: not this platform
  }
}

/** Tries of the ECS task metadata endpoint, the timeout doubling each time: it is there (its variable is set), only slow. */
const ECS_TRIES = 3;

/**
 * ECS: `${ECS_CONTAINER_METADATA_URI_V4}/task` → cluster, task ARN, availability zone. The variable
 * says the endpoint is there, so a slow answer (a starved host) is asked again, with twice the
 * timeout each time, rather than taken for "not ECS".
 */
export async function detectEcs(env: NodeJS.ProcessEnv, timeoutMs: number): Promise<Platform | undefined> {
  const found = await askEcs(env, timeoutMs);
  return found && 'platform' in found ? found.platform : undefined;
}

/** detectEcs, saying why not: undefined when the variable is not set (not ECS). */
async function askEcs(env: NodeJS.ProcessEnv, timeoutMs: number): Promise<{ platform: Platform } | { url: string; why: string } | undefined> {
  const base = env['ECS_CONTAINER_METADATA_URI_V4'];
  if (!base) return undefined;
  const url = `${base.replace(/\/$/, '')}/task`;
  let body: string | undefined;
  for (let i = 0; i < ECS_TRIES && body === undefined; i++) body = await request(url, {}, timeoutMs * 2 ** i);
  if (!body) return { url, why: `gave no answer in ${ECS_TRIES} tries (${Array.from({ length: ECS_TRIES }, (_, i) => timeoutMs * 2 ** i).join(', ')} ms)` };
  try {
    const t = JSON.parse(body) as { Cluster?: unknown; TaskARN?: unknown; AvailabilityZone?: unknown };
    const r = Platform.safeParse({ kind: 'ecs', id: t.TaskARN, cluster: t.Cluster, ...(typeof t.AvailabilityZone === 'string' && t.AvailabilityZone ? { availabilityZone: t.AvailabilityZone } : {}) });
    if (r.success) return { platform: r.data };
  } catch {
    // not JSON: told below
  }
  return { url, why: 'answered without a task ARN and cluster' };
}

/** EC2: an IMDSv2 session token, then instance id and availability zone. IMDSv1 is never used. */
export async function detectEc2(env: NodeJS.ProcessEnv, timeoutMs: number): Promise<Platform | undefined> {
  const base = imdsEndpoint(env);
  const token = await request(`${base}/latest/api/token`, { method: 'PUT', headers: { 'X-aws-ec2-metadata-token-ttl-seconds': '60' } }, timeoutMs);
  if (!token) return undefined;
  const headers = { 'X-aws-ec2-metadata-token': token };
  const [id, az] = await Promise.all([
    request(`${base}/latest/meta-data/instance-id`, { headers }, timeoutMs),
    request(`${base}/latest/meta-data/placement/availability-zone`, { headers }, timeoutMs),
  ]);
  const r = Platform.safeParse({ kind: 'ec2', id: id?.trim(), ...(az?.trim() ? { availabilityZone: az.trim() } : {}) });
  return r.success ? r.data : undefined;
}

/**
 * ECS first (a task on an EC2 host is the task that stops), then EC2; undefined when neither
 * answers. Where ECS_CONTAINER_METADATA_URI_V4 is set, ECS alone: an endpoint that does not answer
 * (or answers nothing usable) is told to `onUnanswered` and gives no platform, never the EC2
 * host's instance id from IMDS (no task stop would ever carry it).
 */
export async function detectPlatform(opts: DetectOptions = {}): Promise<Platform | undefined> {
  const env = opts.env ?? process.env;
  const timeoutMs = opts.timeoutMs ?? 1_000;
  const ecs = await askEcs(env, timeoutMs);
  if (ecs && 'platform' in ecs) return ecs.platform;
  if (ecs) {
    opts.onUnanswered?.(
      new Error(
        `The ECS task metadata endpoint ${ecs.url} (ECS_CONTAINER_METADATA_URI_V4) ${ecs.why}: the platform signal is off for this worker (a task stop will not end its terms; they run out). ` +
          `EC2 instance metadata is not asked instead (it would name the host, not the task). Check that the ECS agent runs and answers on the host, and that the task's network mode lets the container reach the endpoint; or give \`platform\` yourself.`,
      ),
    );
    return undefined;
  }
  const ec2 = opts.ec2 ?? env['AWS_EC2_METADATA_DISABLED']?.toLowerCase() !== 'true';
  return ec2 ? detectEc2(env, timeoutMs) : undefined;
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

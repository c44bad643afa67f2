/**
 * Leader names in AWS Cloud Map: one instance per lease in the service the construct creates (an
 * API-only service: clients call DiscoverInstances, no DNS records), registered with the leader's
 * address and the term's token, deregistered when the term ends.
 */
import { createHash } from 'node:crypto';
import { DeregisterInstanceCommand, GetOperationCommand, RegisterInstanceCommand, type ServiceDiscoveryClient } from '@aws-sdk/client-servicediscovery';
import { systemClock, type Clock } from '../clock.js';
import { ValidationError } from '../schemas/validation.js';
import { base32 } from '../util/base32.js';
import type { LeaderNaming, LeaderTarget } from './naming.js';

/** Cloud Map's instance ids: at most 64 of these characters. */
const INSTANCE_ID = /^[0-9a-zA-Z_/:.@-]{1,64}$/;

/** How a hashed instance id starts: a lease whose own name does so is hashed too, so no lease's id is another's. */
const HASHED = 'conclave-h:';

/**
 * The instance id of a lease: the lease's name as written, no case folded (the service is
 * API-only: an id is no DNS label), when Cloud Map takes it as an id (most do: lease names use the
 * same characters), else `conclave-h:` and 26 characters of a hash of it. A lease named `conclave-h:…`
 * is hashed as well: as its own id it could be a long lease's. The `lease` attribute always holds
 * the name itself.
 */
export function instanceIdOf(lease: string): string {
  return INSTANCE_ID.test(lease) && !lease.startsWith(HASHED) ? lease : `${HASHED}${base32(createHash('sha256').update(lease).digest().subarray(0, 16))}`;
}

/**
 * The custom attributes of a leader's instance (besides AWS_INSTANCE_IPV4/IPV6/PORT): what
 * DiscoverInstances returns, and its QueryParameters filter on (`{ lease: 'nightly-report' }`).
 */
export const CLOUD_MAP_ATTRIBUTES = {
  lease: 'lease',
  holder: 'holder',
  fencingToken: 'fencingToken',
  /** The address as advertised: a URL keeps its scheme and path here. */
  address: 'address',
  /** The host alone (a name, or an IP address). */
  host: 'host',
} as const;

/** Cloud Map's attribute values: printable ASCII, not starting or ending with a space, at most 1024. */
const PRINTABLE = /^[\x21-\x7e](?:[\x20-\x7e]*[\x21-\x7e])?$/;
const MAX_VALUE = 1024;

/** A value as sent to Cloud Map: as it is when printable ASCII, else percent-encoded (a holder name may be any text). */
const encoded = (value: string): string => (PRINTABLE.test(value) ? value : encodeURIComponent(value));

/**
 * Why Cloud Map would refuse the value of `field` (too long once encoded), or undefined: the fix, and
 * what the name shows meanwhile. The SDK's `advertise` takes up to 2048 characters (a Route 53 record
 * holds only the host): a longer address than Cloud Map's limit reaches the function, which clears the name.
 */
function valueIssue(field: 'holder' | 'address', value: string): string | undefined {
  const v = encoded(value);
  if (v.length <= MAX_VALUE) return undefined;
  const fix = field === 'address' ? `advertise an address of at most ${MAX_VALUE} characters (the elector's \`advertise\` option, which takes up to 2048)` : `give the elector an identity of at most ${MAX_VALUE} characters${v === value ? '' : ' percent-encoded'}`;
  return `its ${field} is ${v.length} characters${v === value ? '' : ' percent-encoded'}; Cloud Map takes attribute values of at most ${MAX_VALUE}: ${fix}. Until a leader Cloud Map can register holds the lease, the service has no instance for it (DiscoverInstances finds none)`;
}

/** Why Cloud Map cannot register `target` (LeaderNaming.issue), or undefined. */
export const cloudMapIssue = (target: LeaderTarget): string | undefined => valueIssue('holder', target.holder) ?? valueIssue('address', target.address.raw);

/** A value Cloud Map takes; one it would refuse is a ValidationError (cloudMapIssue says so first). */
function attributeValue(field: 'holder' | 'address', value: string): string {
  const issue = valueIssue(field, value);
  if (issue) throw new ValidationError('Cloud Map instance', [{ field, message: issue }]);
  return encoded(value);
}

/** The attributes that register `target` as the leader of `lease`. */
export function instanceAttributes(lease: string, target: LeaderTarget): Record<string, string> {
  const a = target.address;
  return {
    ...(a.kind === 'ipv4' ? { AWS_INSTANCE_IPV4: a.host } : {}),
    ...(a.kind === 'ipv6' ? { AWS_INSTANCE_IPV6: a.host } : {}),
    ...(a.port !== undefined ? { AWS_INSTANCE_PORT: String(a.port) } : {}),
    [CLOUD_MAP_ATTRIBUTES.lease]: lease,
    [CLOUD_MAP_ATTRIBUTES.holder]: attributeValue('holder', target.holder),
    [CLOUD_MAP_ATTRIBUTES.fencingToken]: String(target.fencingToken),
    [CLOUD_MAP_ATTRIBUTES.address]: attributeValue('address', a.raw),
    [CLOUD_MAP_ATTRIBUTES.host]: a.host,
  };
}

/** How long a registration or deregistration is waited for once Cloud Map took it (it answers with an operation id, and applies it after). */
export const OPERATION_WAIT_MS = 20_000;
const POLL_FIRST_MS = 100;
const POLL_MAX_MS = 2_000;

/**
 * Waits until Cloud Map's operation `id` (a RegisterInstance's or DeregisterInstance's) is over:
 * returns on SUCCESS; throws on FAIL, or when it is still going after OPERATION_WAIT_MS, or the
 * invocation's `withinMs` if less (the
 * invocation fails, and Lambda's retry writes the name again). The ordering of apply.ts checks the
 * name's state after each write: only after the write has landed does that check mean anything.
 */
async function operationOver(client: ServiceDiscoveryClient, clock: Clock, id: string | undefined, what: string, withinMs: number | undefined): Promise<void> {
  if (id === undefined) throw new Error(`Cloud Map ${what}: no operation id in its answer`);
  const waitMs = Math.max(0, Math.min(OPERATION_WAIT_MS, withinMs ?? OPERATION_WAIT_MS));
  const until = clock.monotonic() + waitMs;
  for (let delay = POLL_FIRST_MS; ; delay = Math.min(delay * 2, POLL_MAX_MS)) {
    const op = (await client.send(new GetOperationCommand({ OperationId: id }))).Operation;
    if (op?.Status === 'SUCCESS') return;
    if (op?.Status === 'FAIL') throw new Error(`Cloud Map ${what} failed (operation ${id}): ${op.ErrorCode ?? 'no code'}: ${op.ErrorMessage ?? 'no message'}`);
    if (clock.monotonic() + delay > until) throw new Error(`Cloud Map ${what} was not over ${waitMs} ms after it was taken (operation ${id}, ${op?.Status ?? 'no status'}): the retry writes the name again`);
    await clock.sleep(delay);
  }
}

/**
 * Cloud Map as a LeaderNaming: RegisterInstance (which replaces an instance's attributes whole) to
 * point, DeregisterInstance to clear (an instance already gone is cleared). Each returns once its
 * operation is over (GetOperation): Cloud Map applies them after answering, and takes one
 * operation at a time on an instance.
 */
export function cloudMapNaming(client: ServiceDiscoveryClient, serviceId: string, clock: Clock = systemClock): LeaderNaming {
  return {
    describe: `Cloud Map service ${serviceId}`,
    issue: cloudMapIssue,
    async point(lease, target, withinMs) {
      const out = await client.send(new RegisterInstanceCommand({ ServiceId: serviceId, InstanceId: instanceIdOf(lease), Attributes: instanceAttributes(lease, target) }));
      await operationOver(client, clock, out.OperationId, `registration of lease "${lease}"`, withinMs);
    },
    async clear(lease, withinMs) {
      let id: string | undefined;
      try {
        id = (await client.send(new DeregisterInstanceCommand({ ServiceId: serviceId, InstanceId: instanceIdOf(lease) }))).OperationId;
      } catch (e) {
        if (e instanceof Error && e.name === 'InstanceNotFound') return; // none registered: cleared already
        throw e;
      }
      await operationOver(client, clock, id, `deregistration of lease "${lease}"`, withinMs);
    },
  };
}

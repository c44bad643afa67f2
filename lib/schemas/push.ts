/**
 * Wake-ups (the push path): the message that tells the workers following a lease that it changed,
 * and where it is published. A wake is a hint, never a command: a worker that gets one reads the
 * lease, and what it then does rests on that read and on conditioned writes, as after any poll.
 */
import { createHash } from 'node:crypto';
import * as z from 'zod';
import { Name, Revision } from './common.js';

/** A wake: lease `lease` changed (to `revision`, when the sender knows it). */
export const WakeSchema = z.strictObject({
  /** The lease that changed. */
  lease: Name,
  /** The lease's revision after the change, when known: a worker that has read it (or later) need not read again. */
  revision: Revision.optional(),
  /** Who sent it: the lease stream's function, or a worker (a hand-off or a release it just wrote). */
  by: z.enum(['stream', 'worker']),
});
/** A wake as received: which lease changed, to which revision (when known), and who sent it. */
export type Wake = z.output<typeof WakeSchema>;

/**
 * Every MQTT client id a worker connects with starts with this; a deployment's ids start with
 * the longer pushClientIdPrefix of its leases table, which is what grantWorker allows.
 */
export const PUSH_CLIENT_ID_PREFIX = 'conclave-';

/** IoT Core's limit on an MQTT client id (ours are ASCII: characters are bytes). */
export const MAX_CLIENT_ID_LENGTH = 128;
/** A UUID's length: what PushChannel puts after the prefix by default. */
const UUID_LENGTH = 36;
/**
 * What ends a deployment's client id prefix: a character no DynamoDB table name has (they are
 * [a-zA-Z0-9_.-]), so one table's prefix never starts another table's ids. With `-`, the grant's
 * `conclave-prod-*` also matched every id of a deployment whose leases table is `prod-eu`.
 */
const CLIENT_ID_DELIMITER = ':';
/** The longest leases table name whose prefix leaves room for a UUID: 128 − `conclave-` − `:` − 36. */
export const MAX_PLAIN_CLIENT_ID_TABLE = MAX_CLIENT_ID_LENGTH - PUSH_CLIENT_ID_PREFIX.length - CLIENT_ID_DELIMITER.length - UUID_LENGTH;

/**
 * What every MQTT client id of one deployment (its leases table) starts with, and all grantWorker
 * allows iot:Connect with: `conclave-<leases table>:`, or, for a table name longer than 82
 * characters (no room left for a UUID within IoT Core's 128), `conclave-:sha256:<hex>:`, the first
 * 32 hex digits of the name's SHA-256. A table name has no `:`, so no deployment's prefix starts
 * another's ids: not a table whose name extends this one's, not the hashed form (which no name can
 * start). IoT Core drops the older of two connections with one id: scoped so, a worker of one
 * deployment cannot take over another deployment's connections. PushChannel's default id is this
 * plus a random UUID.
 */
export function pushClientIdPrefix(leasesTable: string): string {
  if (leasesTable.length <= MAX_PLAIN_CLIENT_ID_TABLE) return plainPushClientIdPrefix(leasesTable);
  return `${PUSH_CLIENT_ID_PREFIX}${CLIENT_ID_DELIMITER}sha256${CLIENT_ID_DELIMITER}${createHash('sha256').update(leasesTable).digest('hex').slice(0, 32)}${CLIENT_ID_DELIMITER}`;
}

/**
 * `conclave-<leases table>:`: pushClientIdPrefix's choice for a name of at most 82 characters, and
 * what a grant names where the table's name is a token, known only at deploy time (infra/grants.ts).
 */
export function plainPushClientIdPrefix(leasesTable: string): string {
  return `${PUSH_CLIENT_ID_PREFIX}${leasesTable}${CLIENT_ID_DELIMITER}`;
}

/** IoT Core's limit on a topic name, in UTF-8 bytes. */
export const MAX_TOPIC_BYTES = 256;
/** IoT Core's subscriptions a connection may hold (a quota AWS does not raise). */
export const MAX_SUBSCRIPTIONS = 50;

/** Every wake of one deployment (its leases table) is published under this root. */
export function pushRoot(leasesTable: string): string {
  return `conclave/${leasesTable}`;
}

/** What a process subscribes to: every wake of the deployment (MQTT's multi-level wildcard). */
export function pushSubscription(leasesTable: string): string {
  return `${pushRoot(leasesTable)}/#`;
}

/**
 * The topic wakes of `lease` are published on: `conclave/<leases table>/lease/<lease, URI-encoded>`
 * (a `/` in a lease name would otherwise make topic levels, and IoT Core allows 7 slashes), or, when
 * that is longer than IoT Core allows, `conclave/<leases table>/lease-hash/<sha-256 of the name>`.
 * Receivers check the two agree (wakeTopicNames): a wake on one lease's topic naming another is dropped.
 */
export function pushTopic(leasesTable: string, lease: string): string {
  const plain = plainPushTopic(leasesTable, lease);
  return Buffer.byteLength(plain) <= MAX_TOPIC_BYTES ? plain : hashedPushTopic(leasesTable, lease);
}

/** `conclave/<leases table>/lease/<lease, URI-encoded>`: pushTopic's choice when it fits. */
export function plainPushTopic(leasesTable: string, lease: string): string {
  return `${pushRoot(leasesTable)}/lease/${encodeURIComponent(lease)}`;
}

/**
 * `conclave/<leases table>/lease-hash/<sha-256 of the name>`: pushTopic's choice when the plain
 * topic is too long. A worker's grant names both forms of its leases where the table's name is not
 * known at synth time (infra/push.ts).
 */
export function hashedPushTopic(leasesTable: string, lease: string): string {
  return `${pushRoot(leasesTable)}/lease-hash/${createHash('sha256').update(lease).digest('hex')}`;
}

/**
 * The longest leases table name the push path takes: a lease's hashed topic,
 * `conclave/<leases table>/lease-hash/<sha-256>`, must fit IoT Core's 256 bytes (171 characters;
 * DynamoDB allows 255, and every wake of a longer one was refused).
 */
export const MAX_PUSH_LEASES_TABLE = MAX_TOPIC_BYTES - hashedPushTopic('', '').length;

/** Why the push path cannot take leases table `name`, or undefined when it can. */
export function pushLeasesTableIssue(name: string): string | undefined {
  if (name.length <= MAX_PUSH_LEASES_TABLE) return undefined;
  return `is ${name.length} characters: with the push path, the leases table's name may have at most ${MAX_PUSH_LEASES_TABLE} (its wakes' topics, conclave/<leases table>/lease-hash/<sha-256 of the lease>, must fit IoT Core's ${MAX_TOPIC_BYTES} bytes); name it shorter, or leave the push path out`;
}

/**
 * Where wakes are exchanged: IoT Core's MQTT-over-WebSocket endpoint (`wss://<prefix>-ats.iot.<region>.amazonaws.com/mqtt`,
 * signed with the worker's AWS credentials), or local mode's broker (`ws://127.0.0.1:<port>/mqtt`).
 * The CDK construct prints it as the stack output `PushEndpoint`.
 */
export const PushEndpointSchema = z
  .string()
  .refine((s) => URL.canParse(s) && ['ws:', 'wss:'].includes(new URL(s).protocol), {
    message: 'must be a ws:// or wss:// URL, such as the stack output PushEndpoint (wss://<id>-ats.iot.<region>.amazonaws.com/mqtt) or local mode\'s ws://127.0.0.1:<port>/mqtt',
  });

/**
 * Whether an endpoint's host is one of IoT Core's data endpoint names (its WebSocket connection is
 * signed with SigV4): the account's, `<prefix>-ats.iot.<region>.amazonaws.com` (which a private
 * hosted zone in front of an interface VPC endpoint keeps, as AWS's setup does), its FIPS one,
 * `data.iot-fips.<region>.amazonaws.com`, its dual-stack (IPv6) one, `<prefix>-ats.iot.<region>.api.aws`,
 * or a VPC endpoint's own, `vpce-<id>[-<zone>].data.iot.<region>.vpce.amazonaws.com` (`.com.cn` in
 * China). A custom domain (an IoT Core domain configuration) has no such name: PushChannel's
 * `iotCore` option says so.
 */
export function isIotEndpoint(endpoint: string): boolean {
  const host = new URL(endpoint).hostname;
  return /\.iot(-fips)?\.[a-z0-9-]+\.(amazonaws\.com(\.cn)?|api\.aws)$/.test(host) || /^vpce-[a-z0-9-]+\.data\.iot(-fips)?\.[a-z0-9-]+\.vpce\.amazonaws\.com(\.cn)?$/.test(host);
}

/**
 * Whether `topic` is one of `lease`'s wake topics (either form): what a receiver checks before it
 * believes a wake's `lease`. Publish rights are granted per topic, so a wake naming another lease
 * than its topic could be sent by a worker with no grant on the lease it names.
 */
export function wakeTopicNames(leasesTable: string, topic: string, lease: string): boolean {
  return topic === plainPushTopic(leasesTable, lease) || topic === hashedPushTopic(leasesTable, lease);
}

/**
 * The topic of one process's wakes: `conclave/<leases table>/process/<process, URI-encoded>`, the
 * process being a Session's id (IdentityLeaseItem.process; the instance of each of its electors
 * ends with `@<process>`). A PushChannel given its process's Session subscribes to this one topic
 * whatever the number of leases its electors follow (IoT Core allows 50 subscriptions a connection),
 * and the lease stream's function publishes each wake to the processes of the lease's candidates
 * (wakeTopics), so a process receives the wakes of its own leases and no others.
 */
export function processTopic(leasesTable: string, process: string): string {
  return `${pushRoot(leasesTable)}/process/${encodeURIComponent(process)}`;
}

/** Every process topic of the deployment, as a grant names them (IAM's `*`, not MQTT's `+`). */
export function processTopicPattern(leasesTable: string): string {
  return `${pushRoot(leasesTable)}/process/*`;
}

/** Whether `topic` is a process topic of the deployment (any process). */
export function isProcessTopic(leasesTable: string, topic: string): boolean {
  return topic.startsWith(`${pushRoot(leasesTable)}/process/`);
}

/**
 * Where a wake of `lease` is published: with no `processes`, its lease topic (observers, electors on
 * no session, and channels that subscribe to the whole deployment); with them, the topic of each
 * distinct process (the processes of the lease's candidates, or a hand-off's heir). The lease
 * stream's function publishes both, the lease topic first. IoT Core bills a publish with no
 * subscriber as one message and delivers nothing.
 */
export function wakeTopics(leasesTable: string, lease: string, processes?: readonly string[]): string[] {
  return processes ? [...new Set(processes)].map((p) => processTopic(leasesTable, p)) : [pushTopic(leasesTable, lease)];
}

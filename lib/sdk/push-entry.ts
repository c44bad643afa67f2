/**
 * The push path (`@conclave/sdk/push`): PushChannel, one MQTT connection per worker process over
 * which its LeaderElectors (their `push` option) and withLease runs learn at once that a lease they
 * follow changed. An entry of its own so that a worker without it installs no MQTT client: `mqtt`
 * is an optional peer dependency of `@conclave/sdk`, to install beside it (`npm i mqtt@5`) when this
 * entry is imported.
 *
 * The types its options name are those of `@conclave/sdk`, exported here again.
 *
 * @packageDocumentation
 */
export { PushChannel, PushChannelOptionsSchema, type PushChannelOptions, type ResolvedPushChannelOptions } from './push-channel.js';
export type { Push, Wake } from './push.js';
export { WakeSchema } from '../schemas/push.js';
export type { Clock, Timer, TimerOptions } from '../clock.js';
export type { DeepReadonly, TablesOption } from './options.js';
export { TableNamesSchema, type TableNames } from '../schemas/config.js';

// on a Node older than the package's engines (npm only warns at install): a process warning, once
import { warnOnOldNode } from '../util/node-support.js';
warnOnOldNode();

import * as z from 'zod';
import { Instance, Labels, Millis, Name, Revision, TtlSeconds } from './common.js';

/** The identities table's partition that holds process sessions (declared with the tables, lib/tables.ts). */
export { SESSION_COMPONENT } from '../tables.js';

/** The longest identity lease (a day): the heartbeat's `leaseDurationSeconds` at most. */
export const MAX_IDENTITY_LEASE_SECONDS = 86_400;

/**
 * A process heartbeat (KEP-1965), a row of the identities table (key `component` + `name`).
 * `name` comes from a hash of host name and component, so a restart takes its old row back;
 * `holderIdentity` is unique per start-up.
 */
export const IdentityLeaseItem = z.object({
  component: Name,
  name: Name,
  holderIdentity: Instance,
  hostname: z.string().min(1).max(253),
  leaseDurationSeconds: z.number().int().min(1).max(MAX_IDENTITY_LEASE_SECONDS),
  acquireTime: Millis,
  renewTime: Millis,
  labels: Labels.optional(),
  revision: Revision,
  expiresAt: TtlSeconds.optional(),
});
/** A row of the identities table as read: one process's heartbeat (KEP-1965). */
export type IdentityLease = z.infer<typeof IdentityLeaseItem>;

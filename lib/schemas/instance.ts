/**
 * An elector's instance and the process it names: on a Session, `<identity>_<unique>@<process>`,
 * the process being the Session's id (IdentityLeaseItem.process). A module of its own, with no
 * imports: the push path addresses wakes by it (lib/sdk/push-channel.ts) without the identities'
 * schemas.
 */

/** The instance of an elector of `identity` that holds its terms on a session of process `process` (IdentityLeaseItem.process). */
export const instanceOnSession = (identity: string, unique: string, process: string): string => `${identity}_${unique}@${process}`;

/** The process an elector's instance names (instanceOnSession), if any. */
export const processOf = (instance: string | undefined): string | undefined => {
  const at = instance?.lastIndexOf('@') ?? -1;
  return at < 0 ? undefined : instance!.slice(at + 1);
};

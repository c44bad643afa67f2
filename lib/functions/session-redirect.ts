/**
 * A term whose lease row was redirected to another session under its holder (issue 36, item 6). A
 * worker of the same lease may write `session` (its grant lets a holder put its term on its
 * session), so it can name another session than the one the holder renews: observers then judge the
 * term by that one, and a term end is marked there, while the holder goes on renewing its own. The
 * lease stream's function marks the term ended on the session it was moved off (endedSessionTerm in
 * lib/functions/core.ts), so the holder stops at its next session renewal. Reading its lease, the
 * holder still finds its term there and confirms it again, onto its own session: the one that
 * carries the mark, so it would stop again at the next renewal, and again, for as long as the term
 * stands. That write is what this module finds: the term is ended on the row, and elected again.
 *
 * No holder's own write looks like that: a session's name is never used again once it ended
 * (lib/sdk/session.ts, a new row per session), and a holder moves its term off its session only
 * when that session has ended. So a term put back on a session that carries its mark was redirected.
 */
import type { Logger } from '@aws-lambda-powertools/logger';
import type { Clock } from '../clock.js';
import type { Lease } from '../schemas/lease.js';
import { ValidationError } from '../schemas/validation.js';
import { sessionKey } from '../schemas/identity.js';
import type { IdentityStore } from '../stores/identity-store.js';
import type { LeaseStore, Term } from '../stores/lease-store.js';
import type { Change } from './records.js';

/** The term `c` put on another session without changing it (same holder, instance and token), and that session. */
export function termMovedOntoSession(c: Pick<Change<Lease>, 'old' | 'new'>): { session: string; lease: string; term: Term } | undefined {
  const o = c.old;
  const n = c.new;
  if (o === undefined || n?.holderIdentity === undefined || n.session === undefined || n.session === o.session) return undefined;
  if (o.holderIdentity !== n.holderIdentity || o.holderInstance !== n.holderInstance || o.fencingToken !== n.fencingToken) return undefined;
  return { session: n.session, lease: n.name, term: { holderIdentity: n.holderIdentity, fencingToken: n.fencingToken } };
}

/**
 * Ends the term `c` put back on a session on which that very term is marked ended (see above), as
 * a release would: conditioned on the term and on the lease still naming that session, so a record
 * delivered late or twice, after the holder moved its term on (a session of its own that ended,
 * marked as it left it), changes nothing. The lease stream sees the release, and the coordinator
 * elects again; the holder stops at its next session renewal, at the mark. Undefined when `c` is
 * not such a change, or the lease is not in that term on that session any more.
 */
export async function endTermPutBackOnItsSession(
  stores: { readonly leases: LeaseStore; readonly identities: IdentityStore; readonly clock: Clock },
  c: Pick<Change<Lease>, 'old' | 'new'>,
  logger?: Pick<Logger, 'warn'>,
): Promise<Lease | undefined> {
  const moved = termMovedOntoSession(c);
  if (!moved) return undefined;
  const key = sessionKey(moved.session);
  let mark: number | undefined;
  try {
    mark = (await stores.identities.read(key.component, key.name)).item?.endedTerms?.[moved.lease];
  } catch (e) {
    if (!(e instanceof ValidationError)) throw e; // a fault: the record is retried
    logger?.warn('session row does not match the schema: whether the term was marked ended on it is unknown, so it is left alone', { ...moved, issues: e.issues });
    return undefined;
  }
  if (mark === undefined || mark < moved.term.fencingToken) return undefined;
  const ended = await stores.leases.endTermOnSession(moved.lease, moved.term, moved.session, stores.clock.now());
  if (ended) logger?.warn('a term put back on a session on which it was marked ended (its session was redirected under its holder): the term is ended, and elected again', moved);
  return ended;
}

/**
 * Who leads a lease, as a client asks it (the SDK's getLeader, `conclave leader`): the holder of a
 * live term, judged as the coordinator judges vacancy (vacancy(), with its clock skew margin), with
 * the address it advertised. Pure.
 */
import * as z from 'zod';
import { HolderName, Millis, Name } from '../schemas/common.js';
import { FencingToken } from '../schemas/fencing-token.js';
import { Address, type Lease } from '../schemas/lease.js';
import { vacancy, type VacancyReason } from './vacancy.js';

/** The leader of a lease: who, where clients reach it, its term's fencing token, since when. */
export const LeaderInfoSchema = z.object({
  /** The lease. */
  lease: Name,
  /** The holder (holderIdentity). */
  holder: HolderName,
  /** Where clients reach it (holderAddress: its LeaderElector's `advertise`); absent when it advertised none. */
  address: Address.optional(),
  /** Its term's fencing token. */
  fencingToken: FencingToken,
  /** When its term began (acquireTime), epoch ms. */
  since: Millis,
});
/** The leader of a lease (getLeader). */
export type LeaderInfo = z.infer<typeof LeaderInfoSchema>;

/** A lease's leader, or none and why (vacancy()'s reason). */
export type Leadership = { leader: LeaderInfo } | { leader: null; vacancy: VacancyReason };

/**
 * Who leads `lease` at `now`: its holder while vacancy() says the term stands (with `skewMs` of
 * clock skew allowed, as the coordinator allows), else none. `lease` is the lease as judged: one
 * held on a session with its session's renewals counted (effectiveLease).
 */
export function leaderOf(lease: Lease | undefined, now: number, skewMs: number): Leadership {
  const v = vacancy(lease, now, skewMs);
  if (v.vacant) return { leader: null, vacancy: v.reason };
  const l = lease!;
  return {
    leader: {
      lease: l.name,
      holder: l.holderIdentity!,
      ...(l.holderAddress !== undefined ? { address: l.holderAddress } : {}),
      fencingToken: l.fencingToken,
      since: l.acquireTime ?? l.renewTime!,
    },
  };
}

/**
 * The strategy a held lease's term began under. `electedStrategy` is the coordinator's record of
 * its own election, and only the coordinator writes it (a worker's write may not name it:
 * infra/access.ts OPERATOR_OWNED), so a term a worker took itself (`self`: NoCoordination, the
 * fallback) finds the record of an earlier term there: its strategy is the lease's, an operator's
 * (absent where none is set). A successor's was named under the lease's strategy where an operator
 * set one, else under the one the coordinator last elected by.
 */
export function termStrategy(l: Pick<Lease, 'electedBy' | 'electedStrategy' | 'strategy'>): Lease['strategy'] {
  if (l.electedBy === 'self') return l.strategy;
  if (l.electedBy === 'successor') return l.strategy ?? l.electedStrategy;
  return l.electedStrategy ?? l.strategy;
}

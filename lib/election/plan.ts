import type { ElectionConfig } from '../schemas/config.js';
import { fencingTokenFloor, nextFencingToken } from '../schemas/fencing-token.js';
import type { Lease } from '../schemas/lease.js';
import { HOLDER_FIELDS } from '../schemas/platform.js';
import type { RowPatch } from '../schemas/common.js';
import type { Decision } from './decide.js';

/** The writes a decision needs: pings first (so a crash before the lease write loses nothing), then the lease. */
export interface WritePlan {
  ping: string[];
  /** Stamped on pinged candidates and used as the election's start. */
  pingTime?: number;
  lease?: RowPatch<Lease>;
}

/**
 * Fields of a lease that does not exist yet, for decisions that create it. Its first token is the
 * floor of the clock at its creation, not 0, so no two rows of one lease name ever carry the same
 * token: a write read from a row deleted since cannot land on the row written again (fencing-token.ts).
 */
const fresh = (config: ElectionConfig, now: number) => ({ leaseDurationSeconds: config.defaultLeaseDurationSeconds, leaseTransitions: 0, fencingToken: fencingTokenFloor(now) });

type Named = { name: string; instance?: string } | undefined;

/**
 * The successor fields of a write that names `successor` and `second` (./successor.ts): each set,
 * or removed when absent (a process is removed with its name).
 */
function succession(successor: Named, second: Named): { set: Partial<Lease>; remove: ('successor' | 'successorInstance' | 'secondSuccessor' | 'secondSuccessorInstance')[] } {
  return {
    set: {
      ...(successor ? { successor: successor.name, successorInstance: successor.instance } : {}),
      ...(second ? { secondSuccessor: second.name, secondSuccessorInstance: second.instance } : {}),
    },
    remove: [
      ...(successor ? [] : (['successor'] as const)),
      ...(successor?.instance ? [] : (['successorInstance'] as const)),
      ...(second ? [] : (['secondSuccessor'] as const)),
      ...(second?.instance ? [] : (['secondSuccessorInstance'] as const)),
    ],
  };
}

/** Turns a decision into the writes that carry it out. Pure. */
export function plan(d: Decision, lease: Lease | undefined, now: number, config: ElectionConfig): WritePlan {
  const base = lease ? {} : fresh(config, now);
  switch (d.kind) {
    case 'leaveAlone':
    case 'awaitAcks':
      return { ping: [] };
    case 'openElection':
      return {
        ping: d.ping,
        pingTime: d.election.startedAt,
        lease: d.vacancy
          ? // An expired or reported term ends here, so its holder can no longer renew into the new election.
            { set: { ...base, election: d.election, lastHolderIdentity: lease?.holderIdentity }, remove: [...HOLDER_FIELDS, 'preferredHolder', 'vacancyReport'] }
          : d.successor || d.secondSuccessor
            ? // A liveness check: a re-election that names the best known to be alive meanwhile.
              { set: { election: d.election, ...succession(d.successor, d.secondSuccessor).set }, remove: succession(d.successor, d.secondSuccessor).remove }
            : // A re-election: the holder keeps leading while the candidates answer (and yields to
              // nobody meanwhile: a preference pending for another is taken back). The successor a
              // preemption named stays: alive and better than the holder, it still takes a vacancy.
              { set: { election: d.election }, ...(d.withdrawsPreferredHolder !== undefined ? { remove: ['preferredHolder' as const] } : {}) },
      };
    case 'elect':
      return {
        ping: [],
        lease: {
          set: {
            ...base,
            holderIdentity: d.winner,
            holderInstance: d.winnerInstance,
            holderPlatform: d.winnerPlatform,
            holderPlatformId: d.winnerPlatform?.id,
            // the winner's own (its candidate row), or none: never the address of the holder it replaces
            holderAddress: d.winnerAddress,
            acquireTime: now,
            renewTime: now,
            // A short first term: an electee that died right after acknowledging is replaced quickly.
            leaseDurationSeconds: config.electedLeaseDurationSeconds,
            leaseTransitions: lease ? lease.leaseTransitions + 1 : 0,
            fencingToken: nextFencingToken(lease?.fencingToken, now, lease?.name),
            electedBy: 'coordinator',
            electedStrategy: d.strategy,
            successor: d.successor?.name,
            successorInstance: d.successor?.instance,
            secondSuccessor: d.secondSuccessor?.name,
            secondSuccessorInstance: d.secondSuccessor?.instance,
          },
          remove: [
            ...(['election', 'preferredHolder', 'vacancyReport', 'lastElectionFailure', 'session'] as const),
            ...succession(d.successor, d.secondSuccessor).remove,
            ...(d.winnerInstance ? [] : (['holderInstance'] as const)),
            ...(d.winnerPlatform ? [] : (['holderPlatform', 'holderPlatformId'] as const)),
            ...(d.winnerAddress ? [] : (['holderAddress'] as const)),
          ],
        },
      };
    case 'failElection':
      return { ping: [], lease: { set: { ...base, lastElectionFailure: d.failure }, remove: ['election'] } };
    case 'cancelElection':
      if (d.successor || d.secondSuccessor) {
        const n = succession(d.successor, d.secondSuccessor);
        return { ping: [], lease: { set: n.set, remove: ['election', ...n.remove] } };
      }
      return { ping: [], lease: { remove: ['election'] } };
    case 'preempt':
      return {
        ping: [],
        lease: d.successor
          ? { set: { preferredHolder: d.preferredHolder, successor: d.successor.name, successorInstance: d.successor.instance }, remove: ['election', ...(d.successor.instance ? [] : (['successorInstance'] as const))] }
          : { set: { preferredHolder: d.preferredHolder }, remove: ['election'] },
      };
    case 'clearPreferredHolder':
      return { ping: [], lease: { remove: ['preferredHolder'] } };
    case 'setSuccessor': {
      const n = succession(d.successor, d.secondSuccessor);
      return { ping: [], lease: { ...(Object.keys(n.set).length ? { set: n.set } : {}), ...(n.remove.length ? { remove: n.remove } : {}) } };
    }
  }
}

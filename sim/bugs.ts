/**
 * Known protocol bugs, planted one at a time into the real code the simulator runs, to show that
 * its checker catches each (issue 16, item 7; the table is in docs/safety.md). Each is planted from
 * outside, in what the simulator builds: an elector's lock wrapped or its decisions replaced
 * (`electorInternals`, given to lib/sdk/elector.ts electorWith), or the functions' dependencies
 * wrapped (`plantedDeps`). Nothing shared is patched, so nothing needs putting back.
 */
import { UpdateItemCommand, type DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { marshall } from '@aws-sdk/util-dynamodb';
import type { CoordinatorDeps } from '../lib/coordinator/reconcile.js';
import { nextFencingToken } from '../lib/schemas/fencing-token.js';
import type { Lease } from '../lib/schemas/lease.js';
import { HOLDER_FIELDS } from '../lib/schemas/platform.js';
import type { ElectorInternals } from '../lib/sdk/elector.js';
import type { FollowerView } from '../lib/sdk/step.js';
import { DECISIONS } from '../lib/sdk/elector.js';
import type { LeaseLock, LeasePatch, LeaseRead } from '../lib/sdk/lock.js';
import { LeaseStore } from '../lib/stores/lease-store.js';

export const PLANTED_BUGS = {
  renewalWithoutTokenCondition: 'a renewal without the term-token condition: a deposed leader renews on',
  successorWithoutRevision: "the successor's takeover not conditioned on the revision it read",
  electionKeepsToken: 'a new term that does not raise the fencing token',
  leaderIgnoresRenewDeadline: 'a leader that does not stop at its renew deadline',
  expiryByHolderTimestamp: "a follower that judges expiry by the holder's renewTime against its own wall clock",
  releaseWithoutTermCondition: 'a release or hand-off not conditioned on the releasing term: a deposed leader ends, or gives away, its successor’s term',
  platformEventByArrival: "the platform handler judges a stop by when its event arrived, not by the platform's own time: a late event ends a live term",
  coordinatorIgnoresSession: "the coordinator judges a lease held on a session by the lease's own stamp, not the session's: it ends a live term the session keeps alive",
  followerIgnoresSession: "a follower judges a lease held on a session by the lease row alone: the successor takes a term the session keeps alive",
  hotRetryLoop: 'a failed follower step tried again at once, without backoff: a denied or throttled request sent once per round trip',
  zombieLeader: 'a leader whose work failed (onStartedLeading rejected) keeps the lease, doing nothing',
  renewalIgnoresAnswer: 'a renewal that does not check the row it renewed: a leader whose fencing token was moved leads on, every fenced write refused',
  sessionDeleteUnheld: "a term whose live session row was deleted (no row of its holder's process left) judged by the lease's own stamp and elected on at once, not held a lease duration (before 0cc465a's vanishedHold): the successor leads while the holder, its renewals gone with the row, leads on until its session's next renewal fails",
  deleteCreatesRowUnawaited: "a held row's delete that finds the row missing creates it with an election not waiting for the lease stream (before 966c0c7): an old REMOVE delivered again while a later delete the stream has not reached left the row missing elects over that later term's holder",
} as const;
export type PlantedBug = keyof typeof PLANTED_BUGS;

/** What an elector's plant needs of its machine: its client, the leases table, its wall clock. */
export interface ElectorPlantContext {
  readonly client: DynamoDBClient;
  readonly leasesTable: string;
  readonly wallNow: () => number;
}

/** A new term's record that keeps the token of the row it replaces (`electionKeepsToken`). */
function keepingToken(read: LeaseRead, p: LeasePatch): LeasePatch {
  const set = p.set;
  return set?.holderIdentity !== undefined && set.fencingToken !== undefined && read.item ? { ...p, set: { ...set, fencingToken: read.item.fencingToken } } : p;
}

/** The lock `inner` with `bug`'s wrong writes or reads in place of its own. */
function plantedLock(bug: PlantedBug, inner: LeaseLock, c: ElectorPlantContext): LeaseLock {
  const store = new LeaseStore(c.client, c.leasesTable);
  const name = inner.name;
  switch (bug) {
    case 'renewalWithoutTokenCondition':
      return {
        ...inner,
        async renew(_term, r) {
          await c.client.send(
            new UpdateItemCommand({
              TableName: c.leasesTable,
              Key: marshall({ name }),
              UpdateExpression: 'SET #renew = :renew, #duration = :duration ADD #rev :one',
              ExpressionAttributeNames: { '#renew': 'renewTime', '#duration': 'leaseDurationSeconds', '#rev': 'revision' },
              ExpressionAttributeValues: marshall({ ':renew': r.now, ':duration': r.leaseDurationSeconds, ':one': 1 }),
            }),
          );
          return (await inner.get()).item;
        },
      };
    case 'successorWithoutRevision':
      return {
        ...inner,
        async acquire(read, record) {
          if (record.set?.electedBy !== 'successor') return inner.acquire(read, record);
          // conditioned on the term it read (same holder, same token), not on the revision: a
          // renewal since the read that judged the term expired goes unnoticed
          const fresh = await inner.get();
          const sameTerm = fresh.item?.holderIdentity === read.item?.holderIdentity && fresh.item?.fencingToken === read.item?.fencingToken;
          return inner.acquire(sameTerm ? fresh : read, record);
        },
      };
    case 'electionKeepsToken':
      return { ...inner, acquire: (read, record) => inner.acquire(read, keepingToken(read, record)) };
    case 'releaseWithoutTermCondition':
      return {
        ...inner,
        // whoever holds it: a release that lands late ends the next term
        release: (term, now) =>
          store.updateIf(
            { name },
            { set: { renewTime: now, lastHolderIdentity: term.holderIdentity }, remove: [...HOLDER_FIELDS, 'termToken', 'preferredHolder', 'vacancyReport'] },
            { expression: 'attribute_exists(#holder)', names: { '#holder': 'holderIdentity' }, values: {} },
          ),
        // whoever holds it, so long as the heir is still named: a hand-off that lands late gives the next term away
        handOver(term, h) {
          const token = nextFencingToken(term.fencingToken, h.now);
          return store.updateIf(
            { name },
            {
              set: { holderIdentity: h.heir.name, holderInstance: h.heir.instance, acquireTime: h.now, renewTime: h.now, leaseDurationSeconds: h.firstTermSeconds, leaseTransitions: h.leaseTransitions + 1, fencingToken: token, termToken: token, electedBy: 'successor', lastHolderIdentity: term.holderIdentity },
              remove: ['successor', 'successorInstance', 'secondSuccessor', 'secondSuccessorInstance', 'preferredHolder', 'election', 'vacancyReport', 'holderPlatform', 'holderPlatformId'],
            },
            { expression: 'attribute_exists(#holder) AND #heir = :heir', names: { '#holder': 'holderIdentity', '#heir': 'successor' }, values: { ':heir': h.heir.name } },
          );
        },
      };
    case 'followerIgnoresSession':
      // read, then the row dropped: effectiveLease leaves the lease as its own row has it, unchanged while the session renews
      // (and no row of the holder's own process found either: lib/sdk/step.ts ownSessionRead)
      return { ...inner, session: (s, shareMs) => inner.session(s, shareMs, shareMs).then((r) => ({ ...r, row: undefined })), processSession: (s, p, t) => inner.processSession(s, p, t).then((r) => ({ ...r, row: undefined })) };
    default:
      return inner;
  }
}

/** What `bug` changes in an elector the simulator builds (undefined: nothing; the bug is planted elsewhere, or none is). */
export function electorInternals(bug: PlantedBug | undefined, c: ElectorPlantContext): ElectorInternals | undefined {
  switch (bug) {
    case undefined:
    case 'platformEventByArrival': // planted where the event enters (sim/functions.ts stamps it with its arrival time)
    case 'coordinatorIgnoresSession': // planted in the functions' dependencies (plantedDeps)
    case 'deleteCreatesRowUnawaited': // likewise
    case 'sessionDeleteUnheld': // likewise
      return undefined;
    case 'leaderIgnoresRenewDeadline':
      // the renew deadline changes nothing, at its timer or at the leader's step (a leader asked isLeader() still judges it)
      return { decisions: { decideLeader: (s, t, o) => (o.kind === 'deadline' || o.kind === 'step' ? { kind: 'none' } : DECISIONS.decideLeader(s, t, o)) } };
    case 'renewalIgnoresAnswer':
      // renewed is renewed: the row it answered with is not looked at
      return { decisions: { decideLeader: (s, t, o) => (o.kind === 'renewed' && o.lease ? { kind: 'renewed', renewedAt: Math.max(t.renewedAt, o.sentAt), lease: o.lease } : DECISIONS.decideLeader(s, t, o)) } };
    case 'hotRetryLoop':
      return { decisions: { retryDelayMs: () => 0 } };
    case 'zombieLeader':
      // reported, and the term kept, whatever onLeaderWorkFailure says
      return { decisions: { workFailure: () => 'keep' } };
    case 'expiryByHolderTimestamp':
      return {
        decisions: {
          decideFollower: (v: FollowerView) => {
            // the holder's stamp against this machine's wall clock, instead of a term watched unchanged
            const l = v.lease;
            const expired = l?.renewTime !== undefined && c.wallNow() - l.renewTime > l.leaseDurationSeconds * 1000;
            return DECISIONS.decideFollower(expired ? { ...v, observedAt: v.now - l!.leaseDurationSeconds * 1000 - 1 } : v);
          },
        },
      };
    default:
      return { lock: (inner) => plantedLock(bug, inner, c) };
  }
}

/** The functions' dependencies with `bug` planted in them (the coordinator's, for the bugs that are its). */
export function plantedDeps(bug: PlantedBug | undefined, deps: CoordinatorDeps): CoordinatorDeps {
  if (bug === 'coordinatorIgnoresSession') return blindToSessions(deps);
  if (bug === 'electionKeepsToken') {
    // an election writes the new term as the elector's acquisition does: the row's token kept
    const store = deps.leases;
    const keeping = Object.create(store) as LeaseStore;
    keeping.write = (read, p) => store.write(read, keepingToken(read, p));
    return { ...deps, leases: keeping };
  }
  if (bug === 'deleteCreatesRowUnawaited') {
    // the row a held row's delete creates (heldAfterDelete: an election for the deleted term, naming
    // its holder as departed) written without awaitsStream, as before 966c0c7, when that delete
    // vouched for every record of the row: true only of the latest delete
    const store = deps.leases;
    const unawaited = Object.create(store) as LeaseStore;
    unawaited.write = (read, p) => store.write(read, read.item === undefined ? withoutAwaitsStream(p) : p);
    return { ...deps, leases: unawaited };
  }
  if (bug === 'sessionDeleteUnheld') {
    // vanishedHold's election (the only one written with notBefore over a row that still has a
    // holder: a delete's hold is written on a missing or vacant row) made the election
    // decide() opens for an expired term: no notBefore, closing an ack window after it opened
    const store = deps.leases;
    const unheld = Object.create(store) as LeaseStore;
    unheld.write = (read, p) => store.write(read, read.item?.holderIdentity !== undefined ? withoutVanishedHold(p, read.item.holderIdentity, deps.config.ackWindowMs) : p);
    return { ...deps, leases: unheld };
  }
  return deps;
}

/**
 * The write of an election held for a vanished session row (lib/coordinator/reconcile.ts
 * vanishedHold: heldAfterDelete's election, `departed` the row's own holder) as before it
 * (`sessionDeleteUnheld`): decide()'s election for an expired term, the same but for `notBefore`
 * and a deadline an ack window after it opened. Where decide() elected at once (every live
 * candidate fresh: nobody pinged), the election so written has nobody to wait for and closes at
 * the next trigger (the lease stream's record of this write): a moment later than before.
 */
function withoutVanishedHold(p: LeasePatch, holder: string, ackWindowMs: number): LeasePatch {
  const e = p.set?.election;
  if (e?.notBefore === undefined || e.departed !== holder || !p.remove?.includes('holderIdentity')) return p;
  const { notBefore: _, ...election } = e;
  return { ...p, set: { ...p.set, election: { ...election, deadline: e.startedAt + ackWindowMs } } };
}

/** A created row's held election (`departed` named: a held row's delete wrote it) without awaitsStream (`deleteCreatesRowUnawaited`). */
function withoutAwaitsStream(p: LeasePatch): LeasePatch {
  const e = p.set?.election;
  if (!e?.awaitsStream || e.departed === undefined) return p;
  const { awaitsStream: _, ...election } = e;
  return { ...p, set: { ...p.set, election } };
}

/**
 * The coordinator's dependencies blind to sessions (`coordinatorIgnoresSession`): every lease it
 * reads or scans comes without its `session`, so it judges a lease held on a session by the lease's
 * own stamp, which stands still while the session renews: the term looks expired a lease duration
 * after it began, and the coordinator elects over a live leader. (Until 2026-11-28 the plant hid the
 * session rows instead; since a term whose session row is missing counts as unvouched, and the
 * coordinator judges an unvouched term alive (lib/election/vacancy.ts effectiveLease), that no
 * longer planted the bug, and only a rare interleaving still showed anything.) The lease stream's
 * marks and the SDK's own reads see everything as it is.
 */
export function blindToSessions(deps: CoordinatorDeps): CoordinatorDeps {
  const store = deps.leases;
  const blind = Object.create(store) as LeaseStore;
  const strip = (l: Lease | undefined): Lease | undefined => {
    if (l?.session === undefined) return l;
    const { session: _, ...rest } = l;
    return rest;
  };
  blind.read = async (name, consistent) => {
    const r = await store.read(name, consistent);
    return { ...r, item: strip(r.item) };
  };
  blind.scan = async function* () {
    for await (const page of store.scan()) yield page.map((s) => (s.ok ? { ...s, item: strip(s.item)! } : s));
  };
  return { ...deps, leases: blind };
}

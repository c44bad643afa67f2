/**
 * Known protocol bugs, planted one at a time into the real code the simulator runs, to show that
 * its checker catches each (issue 16, item 7; the table is in docs/safety.md). Each plant patches
 * one method for the length of a run and puts it back after.
 */
import { UpdateItemCommand } from '@aws-sdk/client-dynamodb';
import { marshall } from '@aws-sdk/util-dynamodb';
import type { CoordinatorDeps } from '../lib/coordinator/reconcile.js';
import { nextFencingToken } from '../lib/schemas/fencing-token.js';
import type { Lease } from '../lib/schemas/lease.js';
import { HOLDER_FIELDS } from '../lib/schemas/platform.js';
import { decisions } from '../lib/sdk/seam.js';
import type { FollowerView } from '../lib/sdk/follower.js';
import { SessionReader, type SessionRead } from '../lib/sdk/session.js';
import type { Patch, Read } from '../lib/stores/item-store.js';
import { LeaseStore, type Heir, type Term } from '../lib/stores/lease-store.js';
import { Leadership } from '../lib/sdk/leadership.js';

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
} as const;
export type PlantedBug = keyof typeof PLANTED_BUGS;

type Internals = { client: { send(c: unknown): Promise<unknown> }; table: string };

/** Plants `bug`; returns what puts the code back. */
export function plant(bug: PlantedBug, wallNow: (identity: string) => number): () => void {
  const restore: (() => void)[] = [];
  const patch = <O extends object, K extends keyof O>(o: O, k: K, v: O[K]) => {
    const was = o[k];
    o[k] = v;
    restore.push(() => (o[k] = was));
  };
  const leaseProto = LeaseStore.prototype as unknown as Record<string, unknown>;
  switch (bug) {
    case 'renewalWithoutTokenCondition':
      patch(leaseProto, 'renewTerm', async function (this: Internals, name: string, _term: Term, renewTime: number, leaseDurationSeconds: number) {
        await this.client.send(
          new UpdateItemCommand({
            TableName: this.table,
            Key: marshall({ name }),
            UpdateExpression: 'SET #renew = :renew, #duration = :duration ADD #rev :one',
            ExpressionAttributeNames: { '#renew': 'renewTime', '#duration': 'leaseDurationSeconds', '#rev': 'revision' },
            ExpressionAttributeValues: marshall({ ':renew': renewTime, ':duration': leaseDurationSeconds, ':one': 1 }),
          }),
        );
        return (await (this as unknown as LeaseStore).read(name)).item;
      });
      break;
    case 'successorWithoutRevision':
    case 'electionKeepsToken': {
      const write = LeaseStore.prototype.write;
      patch(leaseProto, 'write', async function (this: LeaseStore, read: Read<Lease>, p: Patch<Lease>) {
        const set = p.set as Partial<Lease> | undefined;
        if (bug === 'successorWithoutRevision' && set?.electedBy === 'successor') {
          // conditioned on the term it read (same holder, same token), not on the revision: a
          // renewal since the read that judged the term expired goes unnoticed
          const fresh = await this.read(read.key['name']!);
          const sameTerm = fresh.item?.holderIdentity === read.item?.holderIdentity && fresh.item?.fencingToken === read.item?.fencingToken;
          return write.call(this, sameTerm ? fresh : read, p);
        }
        if (bug === 'electionKeepsToken' && set?.holderIdentity !== undefined && set.fencingToken !== undefined && read.item) {
          return write.call(this, read, { ...p, set: { ...set, fencingToken: read.item.fencingToken } as Patch<Lease>['set'] });
        }
        return write.call(this, read, p);
      });
      break;
    }
    case 'releaseWithoutTermCondition':
      patch(leaseProto, 'releaseTerm', function (this: LeaseStore, name: string, term: Term, now: number) {
        // whoever holds it: a release that lands late ends the next term
        return this.updateIf(
          { name },
          { set: { renewTime: now, lastHolderIdentity: term.holderIdentity }, remove: [...HOLDER_FIELDS, 'termToken', 'preferredHolder', 'vacancyReport'] },
          { expression: 'attribute_exists(#holder)', names: { '#holder': 'holderIdentity' }, values: {} },
        );
      });
      patch(leaseProto, 'handOver', function (this: LeaseStore, name: string, term: Term, heir: Heir, now: number, firstTermSeconds: number, leaseTransitions: number) {
        // whoever holds it, so long as the heir is still named: a hand-off that lands late gives the next term away
        const token = nextFencingToken(term.fencingToken, now);
        return this.updateIf(
          { name },
          {
            set: { holderIdentity: heir.name, holderInstance: heir.instance, acquireTime: now, renewTime: now, leaseDurationSeconds: firstTermSeconds, leaseTransitions: leaseTransitions + 1, fencingToken: token, termToken: token, electedBy: 'successor', lastHolderIdentity: term.holderIdentity },
            remove: ['successor', 'successorInstance', 'secondSuccessor', 'secondSuccessorInstance', 'preferredHolder', 'election', 'vacancyReport', 'holderPlatform', 'holderPlatformId'],
          },
          { expression: 'attribute_exists(#holder) AND #heir = :heir', names: { '#holder': 'holderIdentity', '#heir': 'successor' }, values: { ':heir': heir.name } },
        );
      });
      break;
    case 'platformEventByArrival':
      // planted where the event enters (sim/world.ts stamps it with its arrival time): nothing to patch here
      break;
    case 'coordinatorIgnoresSession':
      // planted where the coordinator's dependencies are built (sim/functions.ts, with blindToSessions below)
      break;
    case 'followerIgnoresSession': {
      // read, then the row dropped: effectiveLease leaves the lease as its own row has it, unchanged while the session renews
      const read = SessionReader.prototype.read;
      patch(SessionReader.prototype, 'read', function (this: SessionReader, name: string, shareMs?: number): Promise<SessionRead> {
        return read.call(this, name, shareMs).then((r) => ({ ...r, row: undefined }));
      });
      break;
    }
    case 'leaderIgnoresRenewDeadline': {
      // the renew deadline's timer changes nothing (a leader asked isLeader() still judges it)
      const decide = decisions.decideLeader;
      patch(decisions, 'decideLeader', (s, t, o) => (o.kind === 'deadline' ? { kind: 'none' } : decide(s, t, o)));
      break;
    }
    case 'hotRetryLoop':
      patch(decisions, 'retryDelayMs', () => 0);
      break;
    case 'zombieLeader':
      // reported, and the term kept, whatever onLeaderWorkFailure says
      patch(Leadership.prototype as unknown as Record<string, unknown>, 'workFailed', function (this: { c: { onError(e: Error): void } }, _leading: unknown, e: unknown) {
        this.c.onError(e instanceof Error ? e : new Error(String(e)));
      });
      break;
    case 'renewalIgnoresAnswer': {
      // renewed is renewed: the row it answered with is not looked at
      const decide = decisions.decideLeader;
      patch(decisions, 'decideLeader', (s, t, o) => (o.kind === 'renewed' && o.lease ? { kind: 'renewed', renewedAt: Math.max(t.renewedAt, o.sentAt), lease: o.lease } : decide(s, t, o)));
      break;
    }
    case 'expiryByHolderTimestamp': {
      const decide = decisions.decideFollower;
      patch(decisions, 'decideFollower', (v: FollowerView) => {
        // the holder's stamp against this machine's wall clock, instead of a term watched unchanged
        const l = v.lease;
        const expired = l?.renewTime !== undefined && wallNow(v.identity) - l.renewTime > l.leaseDurationSeconds * 1000;
        return decide(expired ? { ...v, observedAt: v.now - l!.leaseDurationSeconds * 1000 - 1 } : v);
      });
      break;
    }
  }
  return () => restore.reverse().forEach((r) => r());
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

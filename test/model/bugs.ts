/**
 * The planted bugs of sim/bugs.ts that concern the election step or the lease lock, as wrapped
 * protocols for the model checker: each takes the real one and returns it with one decision or one
 * write changed. Nothing is patched: the explorer is handed the wrapped protocol.
 */
import type { FollowerView, LeaderStep, LeavingWrite, decide } from '../../lib/sdk/step.js';
import type { PlantedBug } from '../../sim/bugs.js';
import { HOLDER_FIELDS } from '../../lib/schemas/platform.js';
import type { Protocol } from './election-model.js';
import { writeRow, type Landed, type Row } from './lease-rows.js';

export type ModelBug =
  | Extract<
      PlantedBug,
      'leaderIgnoresRenewDeadline' | 'renewalIgnoresAnswer' | 'expiryByHolderTimestamp' | 'electionKeepsToken' | 'releaseWithoutTermCondition' | 'successorWithoutRevision' | 'renewalWithoutTokenCondition' | 'coordinatorIgnoresSession' | 'followerIgnoresSession'
    >
  /** The heir of a hand-over anchors the term it leads from its read at the read's end, not at the hand-over's stamp (lib/sdk/step.ts leadFromRead). */
  | 'heirAnchorsAtRead'
  /** A write conditioned on a read requires its revision alone, not its fencing token too (LeaseStore.write before the model check found a row written again after a delete taking it). */
  | 'writeByRevisionAlone'
  /** The step ignores 'slept': a leader whose machine slept leads on by its monotonic clock (lib/sdk/step.ts decide before d3df61b). */
  | 'sleepIgnored'
  /** The step takes 'slept' but moves the term's renewedAt back by nothing (the sleep recorded, not counted against the renew deadline). */
  | 'sleepNotCounted'
  /** The Session drops a left term's name once a read shows the row's fencing token moved off it, the term still on the row (step.ts showsLeftTerm before 3d2f615). */
  | 'leftTermDroppedByFencingToken'
  /** The Session drops a left term's name at its first look, whatever the lease shows. */
  | 'leftTermDroppedUnread'
  /** A stopping elector's take-off of its kept term (step.ts leavingKept) stamped as a renewal is, with DynamoDB's time now, not from the session's stamp. */
  | 'takeOffStampedNow'
  /** The Session renews past MAX_LEFT_TERMS (step.ts holdsForLeft never holds), its rows naming the first MAX_LEFT_TERMS terms left: the newest unnamed. */
  | 'leftPastMaxRenewed'
  /** A stopping elector's leaving (step.ts leave, its `lease` part) releases the term its read shows whoever holds it, not only one of this start-up's (departure's holder check dropped). */
  | 'leavingReleasesAnyTerm';

export function planted(bug: ModelBug, p: Protocol): Protocol {
  switch (bug) {
    case 'leaderIgnoresRenewDeadline':
      // the renew deadline changes nothing, at its timer or at the leader's step
      return { ...p, decideLeader: (s, t, o): LeaderStep => (o.kind === 'deadline' || o.kind === 'step' ? { kind: 'none' } : p.decideLeader(s, t, o)) };
    case 'renewalIgnoresAnswer':
      // renewed is renewed: the row it answered with is not looked at
      return { ...p, decideLeader: (s, t, o): LeaderStep => (o.kind === 'renewed' && o.lease ? { kind: 'renewed', renewedAt: Math.max(t.renewedAt, o.sentAt), lease: o.lease } : p.decideLeader(s, t, o)) };
    case 'expiryByHolderTimestamp':
      // the holder's stamp against this machine's wall clock, instead of a term watched unchanged
      return {
        ...p,
        decideFollower: (v: FollowerView, env) => {
          const l = v.lease;
          const expired = l?.renewTime !== undefined && env.wallNow - l.renewTime > l.leaseDurationSeconds * 1000;
          return p.decideFollower(expired ? { ...v, observedAt: v.now - l!.leaseDurationSeconds * 1000 - 1 } : v, env);
        },
      };
    case 'electionKeepsToken':
      // a write that begins a term keeps the token it read
      return {
        ...p,
        rows: {
          ...p.rows,
          write: (row, read, patch, name) =>
            patch.set?.holderIdentity !== undefined && patch.set.fencingToken !== undefined && read.item
              ? p.rows.write(row, read, { ...patch, set: { ...patch.set, fencingToken: read.item.fencingToken } }, name)
              : p.rows.write(row, read, patch, name),
        },
      };
    case 'successorWithoutRevision':
      // the successor's takeover conditioned on the term it read (same holder, same token), not on its revision
      return {
        ...p,
        rows: {
          ...p.rows,
          write: (row, read, patch, name) => {
            const sameTerm = row?.holderIdentity === read.item?.holderIdentity && row?.fencingToken === read.item?.fencingToken;
            return patch.set?.electedBy === 'successor' && sameTerm && row ? p.rows.write(row, { item: row, revision: row.revision }, patch, name) : p.rows.write(row, read, patch, name);
          },
        },
      };
    case 'releaseWithoutTermCondition':
      // whoever holds it: a release that lands late ends the next term; a hand-off gives it away
      return {
        ...p,
        rows: {
          ...p.rows,
          releaseTerm: (row, term, now): Landed => {
            if (row?.holderIdentity === undefined) return { row, answer: undefined };
            const rest = { ...row } as Record<string, unknown>;
            for (const f of [...HOLDER_FIELDS, 'termToken', 'preferredHolder', 'vacancyReport']) delete rest[f];
            const written = { ...rest, renewTime: now, lastHolderIdentity: term.holderIdentity, revision: row.revision + 1 } as NonNullable<Row>;
            return { row: written, answer: written };
          },
          handOver: (row, term, heir, now, firstTermSeconds, leaseTransitions, second) =>
            row?.holderIdentity !== undefined && row.successor === heir.name
              ? p.rows.handOver({ ...row, holderIdentity: term.holderIdentity, fencingToken: term.fencingToken, successorInstance: heir.instance }, term, heir, now, firstTermSeconds, leaseTransitions, second)
              : { row, answer: undefined },
        },
      };
    case 'heirAnchorsAtRead':
      // the term dated from when the heir read it: as if the hand-over were stamped just then
      return {
        ...p,
        leadFromRead: (r) => {
          const l = r.lease;
          if (!r.clock || l.renewTime === undefined || l.renewTime !== l.acquireTime) return p.leadFromRead(r);
          const at = r.now + r.clock.offset + r.clock.errorMs + r.stampErrorMs;
          return p.leadFromRead({ ...r, lease: { ...l, renewTime: at, acquireTime: at } });
        },
      };
    case 'sleepIgnored':
      return { ...p, decide: (s, st, e, at) => (e.kind === 'slept' ? { state: st, effects: [] } : p.decide(s, st, e, at)) };
    case 'sleepNotCounted':
      return { ...p, decide: (s, st, e, at) => p.decide(s, st, e.kind === 'slept' ? { ...e, ms: 0 } : e, at) };
    case 'writeByRevisionAlone':
      // a write from a read of a deleted row lands on the row written again since, at the same revision
      return { ...p, rows: { ...p.rows, write: (row, read, patch, name) => writeRow(row, read, patch, name, true) } };
    case 'coordinatorIgnoresSession':
      // the coordinator judges a session-held lease by the lease's own stamp (it reads no session row)
      return { ...p, coordinatorView: (lease) => lease };
    case 'followerIgnoresSession':
      // the lock's session reads, and its query for the holder's own process's row, find no row
      return { ...p, sessionRows: (rows, by) => (by === 'elector' ? [] : p.sessionRows(rows, by)) };
    case 'leftTermDroppedByFencingToken':
      return { ...p, showsLeftTerm: (l, term) => l?.holderInstance === term.instance && l.fencingToken === term.token };
    case 'leftTermDroppedUnread':
      return { ...p, showsLeftTerm: () => false };
    case 'takeOffStampedNow':
      // (DynamoDB's time as the elector measures it now: the moment's monotonic now plus its offset)
      return { ...p, decide: (s, st, e, at) => mapWrites(p.decide(s, st, e, at), (m) => (m.kind === 'offSession' ? { ...m, stamp: at.now + at.offset } : m)) };
    case 'leavingReleasesAnyTerm':
      return {
        ...p,
        decide: (s, st, e, at) => {
          const l = e.kind === 'leavingRead' && e.read !== 'unread' ? e.read.item : undefined;
          const lv = st.leaving;
          if (lv?.part !== 'lease' || l?.holderIdentity === undefined || l.holderInstance === s.instance) return p.decide(s, st, e, at);
          // the term as read, released by its holder and token: the lock's condition holds, so it lands on a live term
          return { state: { ...st, leaving: { ...lv, reads: lv.reads + 1 } }, effects: [{ kind: 'leavingWrite', write: { kind: 'release', term: { holderIdentity: l.holderIdentity, fencingToken: l.fencingToken } } }] };
        },
      };
    case 'leftPastMaxRenewed':
      return { ...p, holdsForLeft: () => false };
    case 'renewalWithoutTokenCondition':
      // a renewal of whatever the row holds, answered with the row as it is then
      return {
        ...p,
        rows: {
          ...p.rows,
          renewTerm: (row, _term, renewTime, leaseDurationSeconds): Landed => {
            const written = { ...(row ?? { name: 'model', leaseTransitions: 0, fencingToken: 0 }), renewTime, leaseDurationSeconds, revision: (row?.revision ?? 0) + 1 } as NonNullable<Row>;
            return { row: written, answer: written };
          },
        },
      };
  }
}


/** A step's result with each leaving write (the 'leavingWrite' effect) changed by `f`. */
function mapWrites(step: ReturnType<typeof decide>, f: (m: LeavingWrite) => LeavingWrite): ReturnType<typeof decide> {
  return { state: step.state, effects: step.effects.map((x) => (x.kind === 'leavingWrite' ? { ...x, write: f(x.write) } : x)) };
}

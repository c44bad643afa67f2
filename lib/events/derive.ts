import { termStrategy } from '../election/leader.js';
import { isCandidateStale } from '../election/vacancy.js';
import type { Candidate } from '../schemas/candidate.js';
import type { Lease } from '../schemas/lease.js';
import type { VacancyReason } from '../election/vacancy.js';
import type { ConclaveEvent, DetailOf, DetailType } from './schemas.js';

/** One change of the leases table, as a stream record carries it (images already parsed). */
export interface LeaseChange {
  /** The stream record's eventID: event ids are derived from it. */
  eventID: string;
  /** When the change happened, epoch ms (the record's ApproximateCreationDateTime). */
  at: number;
  oldLease?: Lease | undefined;
  newLease?: Lease | undefined;
}

/** One change of the candidates table. */
export interface CandidateChange {
  eventID: string;
  at: number;
  oldCandidate?: Candidate | undefined;
  newCandidate?: Candidate | undefined;
  /** A candidate not renewed for this long is stale (ElectionConfig.candidateStaleAfterMs). */
  staleAfterMs: number;
  /**
   * How much later than `at` the change may really have happened. DynamoDB streams round
   * ApproximateCreationDateTime down to the second: pass 1000 when `at` comes from it, so a row
   * collected within a second of turning stale still counts as expired. @default 0
   */
  atPrecisionMs?: number;
}

const iso = (ms: number): string => new Date(ms).toISOString();

/** `Leader Elected` → `leader-elected`: one event of each kind per record at most, so ids are distinct. */
const slug = (t: DetailType): string => t.toLowerCase().replace(/ /g, '-');

/**
 * The id of an event derived from stream record `eventID`: the same record always yields the
 * same ids (consumers drop duplicates on redelivery), and the kinds within one record differ.
 */
export const eventIdFor = (eventID: string, detailType: DetailType): string => `${eventID}:${slug(detailType)}`;

/** Drops undefined fields so details compare and serialize cleanly. */
function defined<T extends Record<string, unknown>>(o: T): T {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as T;
}

function event<T extends DetailType>(change: { eventID: string; at: number; name: string }, detailType: T, fields: Omit<DetailOf<T>, 'id' | 'lease' | 'time'>): ConclaveEvent {
  const detail = defined({ id: eventIdFor(change.eventID, detailType), lease: change.name, time: iso(change.at), ...fields });
  return { detailType, detail } as unknown as ConclaveEvent;
}

/**
 * Why an election opened in this change found the lease vacant, read off the image before it
 * (the same order as `vacancy()`): no lease, no holder, a worker's report, else expiry.
 */
function vacancyOf(old: Lease | undefined): VacancyReason {
  if (!old) return 'noLease';
  if (old.holderIdentity === undefined) return 'noHolder';
  if (old.vacancyReport) return 'reported';
  return 'expired';
}

/**
 * The term the change `old` → `neu` ended, when its holder was rewritten by hand at a token no
 * higher than its copy (`termToken`): a change the events never told (no new term), so the term is
 * still its holder's, whom only the write that ends it names: its elector's `endChangedTerm` removes the copy and
 * records its own name as `lastHolderIdentity` (every other end of a term records the row's holder).
 * Undefined for any other end: a rewrite at a raised token was told as the new holder's term.
 */
function rewrittenTerm(old: Lease, neu: Lease | undefined): { holder: string; fencingToken: number } | undefined {
  const own = neu?.lastHolderIdentity;
  if (own === undefined || own === old.holderIdentity || old.termToken === undefined || neu!.termToken !== undefined || old.fencingToken > old.termToken) return undefined;
  return { holder: own, fencingToken: old.termToken };
}

/**
 * The holder change `old` → `neu` removed from the row without the row recording it as its last
 * holder (a holder removed by hand: an operator's `update-item`, a third party's own write; every
 * Conclave end of a term records its holder, a rewritten term's its own: rewrittenTerm), else
 * undefined. The lease stream records it (functions/lease-stream.ts): the next term's Leader
 * Elected and Leader Changed compare with the row's last holder.
 */
export function unrecordedHolder(old: Lease | undefined, neu: Lease | undefined): string | undefined {
  const holder = old?.holderIdentity;
  return holder === undefined || !neu || neu.holderIdentity !== undefined || neu.lastHolderIdentity === holder || rewrittenTerm(old!, neu) ? undefined : holder;
}

/** Lease Released for the term of `old` (held), ended by this change (`neu`; none: by the row's delete, `rowDeleted`). */
function released(c: { eventID: string; at: number; name: string }, old: Lease, neu: Lease | undefined): ConclaveEvent {
  const rewritten = rewrittenTerm(old, neu);
  return event(c, 'Lease Released', {
    previousHolder: rewritten?.holder ?? old.holderIdentity!,
    fencingToken: rewritten?.fencingToken ?? old.fencingToken,
    acquireTime: old.acquireTime === undefined ? undefined : iso(old.acquireTime),
    preferredHolder: old.preferredHolder,
    rowDeleted: neu === undefined ? true : undefined,
  });
}

/**
 * The events of one change of a lease. Pure.
 *
 * - a new term (`fencingToken` raised and a holder set) → Leader Elected; and Leader Changed when
 *   the previous term's holder (`holderIdentity` of the old image, else `lastHolderIdentity`)
 *   differs from the new one. A first-ever term, or the same holder again after a gap: no Changed.
 *   Both carry the new holder's `address` when the new image has one (`holderAddress`: every write
 *   that begins a term writes the new holder's own, so it is never the previous holder's). Elected
 *   names the election it closed only when the term is that election's choice (not a worker's take).
 *   A holder rewritten by hand at an unchanged or lower token is no new term: nothing; the release
 *   that ends its term later names that term's own holder (rewrittenTerm).
 * - `preferredHolder` set, or changed to someone else, on a held lease → Leader Preemption Requested.
 * - holder removed without opening an election → Lease Released (a worker's release, an
 *   operator's), or Leader Lost when the platform handler ended the term (`holderLoss` newly set). A holder removed by an election opening on an expired or reported
 *   lease is told by Election Started's `previousHolder` instead.
 * - a new election id → Election Started.
 * - `lastElectionFailure` newly present or with a new `at` → Election Failed, with the row's
 *   `fencingToken` (the term it follows: a failure raises none).
 * - a held row deleted (an operator's `aws dynamodb delete-item`: no Conclave component deletes a
 *   lease row) → Lease Released with `rowDeleted`: the term ended with the row, and no later change
 *   need tell it (a worker that creates the row again itself names no previous holder). A vacant
 *   row deleted → nothing.
 * - anything else (renewals, vacancy reports, a closed or cancelled election, a cleared
 *   preferredHolder, a strategy change) → nothing.
 *
 * Several events can come of one change (Elected + Changed; Started + Failed cannot, but the code
 * does not assume it); ordered: endings first, then beginnings.
 */
export function eventsFromLeaseChange(change: LeaseChange): ConclaveEvent[] {
  const { oldLease: old, newLease: neu } = change;
  if (!neu) return old?.holderIdentity === undefined ? [] : [released({ eventID: change.eventID, at: change.at, name: old.name }, old, undefined)];
  const c = { eventID: change.eventID, at: change.at, name: neu.name };
  const events: ConclaveEvent[] = [];

  const newTerm = neu.holderIdentity !== undefined && neu.fencingToken > (old?.fencingToken ?? 0);
  const opened = neu.election !== undefined && neu.election.id !== old?.election?.id ? neu.election : undefined;
  const removedHolder = old?.holderIdentity !== undefined && neu.holderIdentity === undefined ? old.holderIdentity : undefined;
  // An election that was open before and is gone now: finished by this change (elect or preempt).
  const closed = old?.election && !neu.election ? old.election : undefined;

  const loss = neu.holderLoss;
  const lostNow = removedHolder !== undefined && loss !== undefined && (loss.at !== old?.holderLoss?.at || loss.fencingToken !== old?.holderLoss?.fencingToken);
  if (removedHolder !== undefined && !opened && lostNow) {
    events.push(event(c, 'Leader Lost', { previousHolder: removedHolder, fencingToken: loss.fencingToken, source: loss.source, platformId: loss.platformId, reason: loss.reason }));
  } else if (removedHolder !== undefined && !opened) {
    events.push(released(c, old!, neu));
  }

  const failure = neu.lastElectionFailure;
  if (failure && failure.at !== old?.lastElectionFailure?.at) {
    events.push(
      event(c, 'Election Failed', {
        electionId: failure.electionId,
        reason: failure.reason,
        message: failure.message,
        strategy: old?.election?.strategy, // the election this failure closed, if one was open
        fencingToken: neu.fencingToken, // as the failure found it: a failure raises none, so it orders with the term it follows
      }),
    );
  }

  if (opened) {
    events.push(
      event(c, 'Election Started', {
        electionId: opened.id,
        startedAt: iso(opened.startedAt),
        deadline: iso(opened.deadline),
        strategy: opened.strategy,
        reelection: opened.holder !== undefined,
        holder: opened.holder,
        // a row made again after an operator's delete of a held one: the deleted term's holder
        // (`departed`), whose term the delete ended (leader discovery clears its name on it)
        previousHolder: removedHolder ?? (old === undefined ? opened.departed : undefined),
        vacancy: opened.holder !== undefined ? undefined : vacancyOf(old),
        fencingToken: neu.fencingToken,
      }),
    );
  }

  if (newTerm) {
    const holder = neu.holderIdentity!;
    const previousHolder = old?.holderIdentity ?? old?.lastHolderIdentity;
    const strategy = termStrategy(neu);
    events.push(
      event(c, 'Leader Elected', {
        holder,
        holderInstance: neu.holderInstance,
        previousHolder,
        fencingToken: neu.fencingToken,
        leaseTransitions: neu.leaseTransitions,
        electedBy: neu.electedBy,
        strategy,
        // a worker's take (electedBy self or successor: a hand-off, a successor's take) removes any
        // open election without its choice: the term finished none
        electionId: neu.electedBy === 'self' || neu.electedBy === 'successor' ? undefined : closed?.id,
        address: neu.holderAddress,
      }),
    );
    if (previousHolder !== undefined && previousHolder !== holder) {
      events.push(event(c, 'Leader Changed', { previousHolder, holder, fencingToken: neu.fencingToken, electedBy: neu.electedBy, strategy, address: neu.holderAddress }));
    }
  }

  const preferred = neu.preferredHolder;
  if (preferred !== undefined && preferred !== old?.preferredHolder && neu.holderIdentity !== undefined && preferred !== neu.holderIdentity) {
    events.push(
      event(c, 'Leader Preemption Requested', {
        holder: neu.holderIdentity,
        preferredHolder: preferred,
        fencingToken: neu.fencingToken,
        strategy: closed?.strategy ?? neu.strategy,
        electionId: closed?.id,
      }),
    );
  }

  return events;
}

/** What Candidate Joined and Candidate Expired both say of the row. */
const candidateFields = (c: Candidate) => ({ candidate: c.name, binaryVersion: c.binaryVersion, emulationVersion: c.emulationVersion, priority: c.priority, identity: c.identity });

/**
 * The events of one change of a candidate row. Pure.
 *
 * - created (no old image) → Candidate Joined.
 * - deleted by the coordinator's collection, or with its stopped task or instance by the platform
 *   function (lib/platform/vacate.ts; either way the row carries its `collectedAt`), by the TTL
 *   (`expiresAt` passed), or, on no session, while stale at `at` (renewTime + staleAfterMs < at,
 *   `at` widened by `atPrecisionMs`: a collection by a coordinator that did not mark) →
 *   Candidate Expired. A live row deleted (a worker withdrawing) → nothing.
 * - any other change (renewal, ack, ping, priority, versions) → nothing.
 */
export function eventsFromCandidateChange(change: CandidateChange): ConclaveEvent[] {
  const { oldCandidate: old, newCandidate: neu } = change;
  if (!old && neu) {
    const c = { eventID: change.eventID, at: change.at, name: neu.leaseName };
    return [
      event(c, 'Candidate Joined', { ...candidateFields(neu), preferredStrategies: neu.preferredStrategies }),
    ];
  }
  // The latest the deletion can have happened: a row that may have been stale by then counts as
  // expired (a worker withdrawing its own row renewed it minutes ago, never a second ago) — unless
  // it stood on a session, which renews its own row rarely and lives by the session's renewals:
  // then only the coordinator's collection (its mark) or the row's TTL says it expired.
  const latest = change.at + Math.max(0, (change.atPrecisionMs ?? 0) - 1);
  const ttlDue = old?.expiresAt !== undefined && latest >= old.expiresAt * 1000;
  if (old && !neu && (old.collectedAt !== undefined || ttlDue || (old.session === undefined && isCandidateStale(old, latest, change.staleAfterMs)))) {
    const c = { eventID: change.eventID, at: change.at, name: old.leaseName };
    return [
      event(c, 'Candidate Expired', { ...candidateFields(old), lastRenewTime: iso(old.renewTime) }),
    ];
  }
  return [];
}

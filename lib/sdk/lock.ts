/**
 * The lease lock: everything a LeaderElector reads and writes, one lock per lease, in client-go's
 * shape (tools/leaderelection/resourcelock; here bench/baseline/lock.ts). Each write is conditioned
 * on the revision read or on the term, so a lost race is an answer (`undefined`, `refusedBy`), never
 * a thrown error; faults are thrown. It decides nothing and reads no clock. `dynamoLeaseLock` is what
 * the SDK runs; `MemoryLeaseTable` keeps the same conditions in memory (tests, the model check).
 */
import { nextFencingToken } from '../schemas/fencing-token.js';
import type { Candidate } from '../schemas/candidate.js';
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { Clock } from '../clock.js';
import { processSessionComponents, sessionKey, type IdentityLease } from '../schemas/identity.js';
import { IdentityStore } from '../stores/identity-store.js';
import { LeaseItem, type Lease } from '../schemas/lease.js';
import { HOLDER_FIELDS } from '../schemas/platform.js';
import type { CandidateStore } from '../stores/candidate-store.js';
import { BrokenSessionError, ConflictError } from '../stores/errors.js';
import { ValidationError } from '../schemas/validation.js';
import { declinePatch, handOverPatch, keepTermToken, successionAfterTake, type Heir, type LeasePatch, type LeaseRead, type LeaseStore, type SecondSuccessor, type Term } from '../stores/lease-store.js';
import { SHARED_READ_MS, type Acquired, type RenewalPhase, type SessionRead } from './step.js';

export type { Heir, LeasePatch, LeaseRead, Term } from '../stores/lease-store.js';
export type { Acquired, SessionRead } from './step.js';
export { SHARED_READ_MS };

/** A renewal of a term: its stamp, its length, the session it goes on (a name), off (null), or as it is (undefined), and what abandons it unanswered. */
export interface Renewal {
  readonly now: number;
  readonly leaseDurationSeconds: number;
  readonly session?: string | null | undefined;
  readonly signal?: AbortSignal | undefined;
}

/** A hand-off of a term to the successor the coordinator named (the heir's platform and address from its candidate row). */
export interface HandOff {
  readonly heir: Heir;
  readonly now: number;
  /** The heir's first term: short, it confirms by renewing as an electee does. */
  readonly firstTermSeconds: number;
  /** The lease's leaseTransitions as the giver last saw them. */
  readonly leaseTransitions: number;
  /** The second successor as the giver last saw it: it becomes the successor (successionAfterTake). */
  readonly second: SecondSuccessor;
}

export interface LeaseLock {
  /** The lease's name. */
  readonly name: string;
  /** The lease row: strongly consistent unless `consistent` is false (a follower's poll; every write it leads to is conditioned on it). `signal` abandons it. */
  get(consistent?: boolean, signal?: AbortSignal): Promise<LeaseRead>;
  /** Writes `record` (a new term: NoCoordination, the fallback, the designated successor) if the row is still at the revision read. */
  acquire(read: LeaseRead, record: LeasePatch): Promise<Acquired>;
  /** Confirms or renews `term`, conditioned on the row's copy of its token; never moves renewTime back. Undefined: no longer this term. */
  renew(term: Term, r: Renewal): Promise<Lease | undefined>;
  /** Gives `term` to the named heir in one write (the token raised). Undefined: no longer this term, or the heir no longer named. */
  handOver(term: Term, h: HandOff): Promise<Lease | undefined>;
  /** Ends `term` so the next election starts at once. Undefined: no longer this term. */
  release(term: Term, now: number): Promise<Lease | undefined>;
  /** Ends a term whose row was rewritten under its holder, conditioned on the row's copy of `term`'s token alone. */
  endChanged(term: Term, now: number): Promise<Lease | undefined>;
  /** Tells the coordinator the holder has not renewed for a whole term as `by` watched it, if the row is still at the revision read. Undefined: it moved on. */
  reportVacancy(read: LeaseRead, by: string, at: number): Promise<Lease | undefined>;
  /** Takes this stopping start-up's name off the lease as successor or second successor (declinePatch), if the row is still at the revision read. Undefined: it moved on. */
  decline(read: LeaseRead, role: 'successor' | 'second'): Promise<Lease | undefined>;
  /** The candidate row `name` of this lease (the heir's, before a hand-off): `item` undefined when there is none. */
  candidate(name: string): Promise<{ readonly item: Candidate | undefined }>;
  /** The lease's candidate rows, by a consistent Query of its partition. */
  candidates(): Promise<readonly Candidate[]>;
  /**
   * The session row `name`: from a read the process sent at most `shareMs` ago, or one still
   * unanswered sent at most `pendingMs` ago, or a new read. `sentAt` is when it was sent. Strongly
   * consistent unless `consistent` is false; a consistent request never takes a copy's answer.
   * `term`: the term held on this lease that the row judges, if any.
   * @throws BrokenSessionError naming the row, for `term`, when the schema refuses it: the term is
   * judged by nobody (the poll fails on it, as on such a row processSession finds)
   */
  session(name: string, shareMs: number, pendingMs: number, consistent?: boolean, term?: Term): Promise<SessionRead>;
  /**
   * The freshest session row of process `process` in its sessions' partition (processSessionComponents:
   * `named`'s scope, or the process's own shard; for a name without a partition, conclave-session and
   * its shard), by a consistent Query of each, never shared: for `term`, held on this lease, whose
   * row names session `named`, which does not vouch for it.
   * @throws BrokenSessionError naming a row there the schema refuses that may be that process's own
   * session (mayBeProcessSession): the term is judged by nobody, as on a refused named row (the
   * coordinator's tick, the CLI and getLeader judge it so too)
   */
  processSession(named: string, process: string, term: Term): Promise<SessionRead>;
}

/** What a direct acquisition writes: a new term for `holder`, the token raised (the record client-go's elector builds before Lock.Update). */
export interface Claim {
  readonly identity: string;
  readonly instance: string;
  readonly now: number;
  readonly leaseDurationSeconds: number;
  readonly electedBy: 'self' | 'successor';
  /** Where clients reach this worker, if given. */
  readonly address?: string | undefined;
  readonly platform?: Lease['holderPlatform'];
  /** The session the term goes on, if any. */
  readonly session?: string | null | undefined;
}

/** The record of a direct acquisition of the lease `lease` as read (lost to no one: the lock conditions it on the revision). */
export function acquisition(lease: Lease | undefined, c: Claim): LeasePatch {
  const next = successionAfterTake(lease?.successor, { name: lease?.secondSuccessor, instance: lease?.secondSuccessorInstance }, c.identity, lease?.holderIdentity);
  return {
    set: {
      ...(c.session ? { session: c.session } : {}),
      holderIdentity: c.identity,
      holderInstance: c.instance,
      holderPlatform: c.platform,
      holderPlatformId: c.platform?.id,
      holderAddress: c.address,
      acquireTime: c.now,
      renewTime: c.now,
      leaseDurationSeconds: c.leaseDurationSeconds,
      leaseTransitions: lease ? lease.leaseTransitions + 1 : 0,
      fencingToken: nextFencingToken(lease?.fencingToken, c.now, lease?.name),
      electedBy: c.electedBy,
      // the holder whose term ran out: the coordinator passes over its candidate row until it shows life
      ...(lease?.holderIdentity !== undefined ? { lastHolderIdentity: lease.holderIdentity } : {}),
      ...next.set,
    },
    remove: [
      ...(['election', 'preferredHolder', 'vacancyReport'] as const),
      ...next.remove,
      ...(c.platform ? [] : HOLDER_FIELDS.filter((f) => f.startsWith('holderPlatform'))),
      // its own address or none: the previous holder's never outlives its term
      ...(c.address ? [] : (['holderAddress'] as const)),
      ...(c.session ? [] : (['session'] as const)),
    ],
  };
}

/**
 * The record of a term this start-up stopped leading (its renew deadline passed, or its clock
 * jumped) and finds still its own: taken again as a new term, the fencing token raised, so a late
 * write of the stopped term is refused by any fence on the token. The lock conditions it on the
 * revision read, as every acquisition. Nothing else moves: an operator's `preferredHolder`, an open
 * election and the successors stay for the leader to act on, as after any confirmation.
 */
export function takenAgain(lease: Lease, c: Pick<Claim, 'now' | 'leaseDurationSeconds' | 'session'>): LeasePatch {
  return {
    set: { ...(c.session ? { session: c.session } : {}), acquireTime: c.now, renewTime: c.now, leaseDurationSeconds: c.leaseDurationSeconds, fencingToken: nextFencingToken(lease.fencingToken, c.now, lease.name) },
    remove: ['vacancyReport'],
  };
}

/** The lock on DynamoDB: the lease, candidate and session stores the SDK has always written through (LeaseStore's conditions). */
export function dynamoLeaseLock(name: string, leases: LeaseStore, candidates: CandidateStore, sessions: SessionReader): LeaseLock {
  return {
    name,
    get: (consistent = true, signal) => leases.read(name, consistent, signal),
    async acquire(read, record) {
      try {
        return { written: await leases.write(read, record) };
      } catch (e) {
        if (!(e instanceof ConflictError)) throw e; // somebody else moved first
        // refused by its own take, landed with its answer lost (the AWS SDK sent it again, and the
        // copy was refused by it): the term this very write made, led as if answered (else its
        // elector would read the lease again first, and, that read failing, leave the term to its
        // session alone: nobody leading it)
        const row = e.current;
        if (row !== undefined && ownTake(row, read, record)) return { written: leases.parseItem(row) };
        return { refusedBy: row?.['holderIdentity'], refusedByInstance: row?.['holderInstance'] };
      }
    },
    renew: (term, r) => leases.renewTerm(name, term, r.now, r.leaseDurationSeconds, r.session, r.signal),
    handOver: (term, h) => leases.handOver(name, term, h.heir, h.now, h.firstTermSeconds, h.leaseTransitions, h.second),
    release: (term, now) => leases.releaseTerm(name, term, now),
    endChanged: (term, now) => leases.endChangedTerm(name, term.fencingToken, term.holderIdentity, now),
    async reportVacancy(read, by, at) {
      try {
        return await leases.write(read, { set: { vacancyReport: { by, at, observedRevision: read.revision } } });
      } catch (e) {
        if (!(e instanceof ConflictError)) throw e; // the lease moved on: nothing to report
        return undefined;
      }
    },
    async decline(read, role) {
      try {
        return await leases.write(read, declinePatch(read.item!, role));
      } catch (e) {
        if (!(e instanceof ConflictError)) throw e; // the lease moved on: decide again
        return undefined;
      }
    },
    candidate: (c) => candidates.read(name, c),
    candidates: async () => (await candidates.list(name)).candidates,
    session: (s, shareMs, pendingMs, consistent, term) => sessions.read(s, shareMs, pendingMs, consistent, term && { lease: name, ...term }),
    processSession: (named, process, term) => sessions.freshestOf(named, process, { lease: name, ...term }),
  };
}

/** What a take's own landed copy shows as that take set it (ownTake). */
const TAKE_FIELDS = ['holderIdentity', 'holderInstance', 'fencingToken', 'acquireTime', 'renewTime', 'session', 'leaseDurationSeconds', 'leaseTransitions', 'electedBy'] as const;

/**
 * Whether `row` is the one take `record`, written against `read`, made: the next revision, and its
 * term as that write set it (the instance, unique per start-up; the token and stamps, of its `now`;
 * its duration and who elected it). The coordinator's election of this very start-up on the same
 * read, in the same millisecond, shows the same holder, token and stamps: its short first term and
 * `electedBy` tell it apart, a term to confirm, never one led from the take's send for a renew
 * deadline past the row's own duration (seed 14600170).
 */
function ownTake(row: Record<string, unknown>, read: LeaseRead, record: LeasePatch): boolean {
  const wrote = (k: (typeof TAKE_FIELDS)[number]) => (record.remove?.includes(k) ? undefined : (record.set?.[k] ?? read.item?.[k]));
  return row['revision'] === read.revision + 1 && TAKE_FIELDS.every((k) => row[k] === wrote(k));
}

/** Whether `cur` is the row `read` read, as LeaseStore.write's condition has it: its revision, and its fencing token (a row deleted and written again starts its revisions anew). */
function sameRow(cur: Lease | undefined, read: LeaseRead): boolean {
  if (read.revision === 0) return cur === undefined;
  return cur !== undefined && cur.revision === read.revision && (read.item === undefined || cur.fencingToken === read.item.fencingToken);
}

/** The fields that end a term (a release, an end of a changed term). */
const TERM_ENDS = [...HOLDER_FIELDS, 'termToken', 'preferredHolder', 'vacancyReport'] as const;

/**
 * Leases, candidate rows and session rows in memory, with the conditions DynamoDB enforces for the
 * DynamoDB lock (revision, term, the token copy, the heir named) and one more it cannot: a new
 * term's fencing token above the row's (a write that would not raise it throws a RangeError, a
 * fault, never taken silently). For tests and the model checker; `set*` stand in for the
 * coordinator and the sessions.
 */
export class MemoryLeaseTable {
  private readonly leases = new Map<string, Lease>();
  private readonly candidates = new Map<string, Candidate>();
  private readonly sessions = new Map<string, IdentityLease>();
  /** Every write that landed, in order: lease name and the row as written. */
  readonly writes: { name: string; lease: Lease | undefined }[] = [];

  /** The lock on lease `name`; `monotonic` stamps each session read's `sentAt`. */
  lock(name: string, monotonic: () => number = () => 0): LeaseLock {
    return {
      name,
      get: async () => this.read(name),
      acquire: async (read, record) => {
        const cur = this.leases.get(name);
        if (!sameRow(cur, read)) return { refusedBy: cur?.holderIdentity, refusedByInstance: cur?.holderInstance };
        return { written: this.put(name, cur, keepTermToken(cur, record)) };
      },
      renew: async (term, r) => {
        const cur = this.leases.get(name);
        if (cur?.termToken !== term.fencingToken) return undefined;
        // a renewal never leaves the stamp where it was, nor moves it back: just after the row's stamp if need be
        const now = cur.renewTime === undefined ? r.now : Math.max(r.now, cur.renewTime + 1);
        const mark = r.session === undefined ? { renewalMark: cur.renewalMark === 1 ? (2 as const) : (1 as const) } : {};
        return this.put(name, cur, { set: { renewTime: now, leaseDurationSeconds: r.leaseDurationSeconds, ...mark, ...(r.session ? { session: r.session } : {}) }, remove: ['vacancyReport', ...(r.session === null ? (['session'] as const) : [])] });
      },
      handOver: async (term, h) => {
        const cur = this.leases.get(name);
        if (!inTerm(cur, term) || cur.successor !== h.heir.name || cur.successorInstance !== h.heir.instance) return undefined;
        // the second successor as the row names it now (LeaseStore.handOver's writes again with it); read as none, none is named
        const read = h.second.name !== undefined || h.second.instance !== undefined;
        return this.put(name, cur, handOverPatch(term, h.heir, h.now, h.firstTermSeconds, h.leaseTransitions, read ? { name: cur.secondSuccessor, instance: cur.secondSuccessorInstance } : {}));
      },
      release: async (term, now) => {
        const cur = this.leases.get(name);
        return inTerm(cur, term) ? this.put(name, cur, { set: { renewTime: now, lastHolderIdentity: term.holderIdentity }, remove: [...TERM_ENDS] }) : undefined;
      },
      endChanged: async (term, now) => {
        const cur = this.leases.get(name);
        return cur?.termToken === term.fencingToken ? this.put(name, cur, { set: { renewTime: now, lastHolderIdentity: term.holderIdentity }, remove: [...TERM_ENDS] }) : undefined;
      },
      reportVacancy: async (read, by, at) => {
        const cur = this.leases.get(name);
        return cur && sameRow(cur, read) ? this.put(name, cur, { set: { vacancyReport: { by, at, observedRevision: read.revision } } }) : undefined;
      },
      decline: async (read, role) => {
        const cur = this.leases.get(name);
        return cur && sameRow(cur, read) ? this.put(name, cur, declinePatch(cur, role)) : undefined;
      },
      candidate: async (c) => ({ item: this.candidates.get(`${name}/${c}`) }),
      candidates: async () => [...this.candidates.values()].filter((c) => c.leaseName === name),
      session: async (s) => ({ row: this.sessions.get(s), sentAt: monotonic() }),
      processSession: async (named, process) => ({ row: freshestOf(this.sessions.values(), processSessionComponents(named, process), process), sentAt: monotonic() }),
    };
  }

  /** The lease row `name` as it is now. */
  read(name: string): LeaseRead {
    const item = this.leases.get(name);
    return { key: { name }, item, revision: item?.revision ?? 0 };
  }

  /** Writes `patch` on `name` as read (the coordinator's writes, a test's setup): conditioned on the revision like any write. */
  write(read: LeaseRead, patch: LeasePatch): Lease {
    const cur = this.leases.get(read.key['name']!);
    if (!sameRow(cur, read)) throw new ConflictError(`lease "${read.key['name']}"`, read.revision, cur);
    return this.put(read.key['name']!, cur, keepTermToken(cur, patch));
  }

  /** Puts `lease` as it is, unconditioned and unchecked: an operator's restore or raw write (the token may even move back). */
  overwrite(lease: Lease): void {
    this.leases.set(lease.name, Object.freeze({ ...lease }));
    this.writes.push({ name: lease.name, lease });
  }

  setCandidate(c: Candidate): void {
    this.candidates.set(`${c.leaseName}/${c.name}`, c);
  }

  setSession(row: IdentityLease | undefined, name: string): void {
    if (row) this.sessions.set(name, row);
    else this.sessions.delete(name);
  }

  private put(name: string, cur: Lease | undefined, p: LeasePatch): Lease {
    const next: Record<string, unknown> = { ...cur, ...Object.fromEntries(Object.entries(p.set ?? {}).filter(([, v]) => v !== undefined)), name, revision: (cur?.revision ?? 0) + 1 };
    for (const k of p.remove ?? []) delete next[k];
    const lease = Object.freeze(LeaseItem.parse(next));
    if (cur && p.set?.fencingToken !== undefined && lease.fencingToken <= cur.fencingToken) throw new RangeError(`lease "${name}": a new term's fencing token ${lease.fencingToken} is not above the row's ${cur.fencingToken}`);
    this.leases.set(name, lease);
    this.writes.push({ name, lease });
    return lease;
  }
}

/** The row of `process` in partitions `components` renewed last, if any (the tick's choice too: lib/coordinator/reconcile.ts byProcess). */
function freshestOf(rows: Iterable<IdentityLease>, components: readonly string[], process: string): IdentityLease | undefined {
  let best: IdentityLease | undefined;
  for (const r of rows) if (components.includes(r.component) && r.process === process && (best === undefined || r.renewTime > best.renewTime)) best = r;
  return best;
}

/** Whether `l` is in `term` (holder and fencing token). */
const inTerm = (l: Lease | undefined, term: Term): l is Lease => l !== undefined && l.holderIdentity === term.holderIdentity && l.fencingToken === term.fencingToken;


// ---- session rows, read for a process's electors (lib/sdk/session.ts): shared among them, with each session's renewal cadence ----

/**
 * Reads session rows for a process's electors, sharing a read sent within SHARED_READ_MS among
 * them. A follower judges a session over only on a consistent read (step.ts judgedView), so a
 * consistent request shares only a consistent read; a request for a copy shares either.
 */
export class SessionReader {
  private readonly store: IdentityStore;
  /** The latest read of each row by name, one per kind: consistent, and copies. */
  private readonly recent = { consistent: new Map<string, SharedRead>(), copy: new Map<string, SharedRead>() };
  /** The renewal cadence of each session this process's electors follow leases on (the step's `sessionCadence` effects set them). */
  private readonly phases = new Map<string, RenewalPhase>();

  constructor(
    client: DynamoDBClient,
    identitiesTable: string,
    private readonly clock: Pick<Clock, 'monotonic'>,
  ) {
    this.store = new IdentityStore(client, identitiesTable);
  }

  /** The sessions' renewal cadences, shared by the process's electors that follow leases held on them: they aim at one moment and share the read. */
  get cadences(): ReadonlyMap<string, RenewalPhase> {
    return this.phases;
  }

  /** Session `name`'s renewal cadence is now `phase` (a step learnt it). */
  setCadence(name: string, phase: RenewalPhase): void {
    if (!this.phases.has(name) && this.phases.size >= 64) this.phases.delete(this.phases.keys().next().value!); // the oldest: sessions come and go
    this.phases.set(name, phase);
  }

  /**
   * LeaseLock.processSession, for `term` (held on lease `term.lease`): never shared, since a
   * follower judges by it only if it was sent after its lease read was answered. A row there the
   * schema refuses that may be the process's own session (IdentityStore.processSessions' `refused`,
   * mayBeProcessSession) may be the one the holder renews on: the term is judged by nobody, and the
   * follower's poll fails on it (reported, read again every retry period), as on a refused named
   * row. Judged without it, by a stale row of that process, a term its holder still led was taken a
   * lease duration on (test/sdk/follower-refused.test.ts).
   */
  async freshestOf(named: string, process: string, term: Term & { readonly lease: string }): Promise<SessionRead> {
    const sentAt = this.clock.monotonic();
    const read = await this.store.processSessions(named, process);
    const mine = read.refused[0];
    if (mine) throw this.broken(term, String(mine.row['name']), mine.invalid.error);
    return { row: freshestOf(read.rows, processSessionComponents(named, process), process), sentAt };
  }

  /**
   * LeaseLock.session: both bounds stay well inside the margin a follower's judgement allows (step.ts
   * sessionMargin). A row the schema refuses is, for `term` (held on lease `term.lease`), a
   * BrokenSessionError naming it, as freshestOf's; the read itself is shared as it is, each caller
   * told of its own term.
   */
  read(name: string, shareMs = SHARED_READ_MS, pendingMs = shareMs, consistent = true, term?: Term & { readonly lease: string }): Promise<SessionRead> {
    const read = this.shared(name, shareMs, pendingMs, consistent);
    if (term === undefined) return read;
    return read.catch((e: unknown) => {
      throw e instanceof ValidationError ? this.broken(term, name, e) : e;
    });
  }

  /** `term`'s session row `session` refused by the schema (`refused`): judged by nobody, a follower's poll fails on it. */
  private broken(term: Term & { readonly lease: string }, session: string, refused: ValidationError): BrokenSessionError {
    return new BrokenSessionError(`a follower of lease "${term.lease}"`, { lease: term.lease, holderIdentity: term.holderIdentity, fencingToken: term.fencingToken, session }, this.store.table, refused);
  }

  /** Session row `name`, read now or from a read sent recently enough (read). */
  private shared(name: string, shareMs: number, pendingMs: number, consistent: boolean): Promise<SessionRead> {
    const now = this.clock.monotonic();
    const usable = (r: SharedRead | undefined) => r !== undefined && (now - r.sentAt <= shareMs || (r.pending && now - r.sentAt <= pendingMs));
    const c = this.recent.consistent.get(name);
    if (usable(c)) return c!.read;
    const copy = this.recent.copy.get(name);
    if (!consistent && usable(copy)) return copy!.read;
    const shared = consistent ? this.recent.consistent : this.recent.copy;
    const entry: SharedRead = { sentAt: now, pending: true, read: undefined as unknown as Promise<SessionRead> };
    const key = sessionKey(name);
    entry.read = this.store.read(key.component, key.name, consistent).then(
      (x) => {
        entry.pending = false;
        return { row: x.item, sentAt: now, consistent };
      },
      (e: unknown) => {
        if (shared.get(name) === entry) shared.delete(name);
        throw e;
      },
    );
    shared.set(name, entry);
    if (shared.size > 64) for (const [k, v] of shared) if (now - v.sentAt > 60_000) shared.delete(k);
    return entry.read;
  }
}

/** A session read the process sent, shared by its electors while it is recent. */
interface SharedRead {
  readonly sentAt: number;
  pending: boolean;
  read: Promise<SessionRead>;
}

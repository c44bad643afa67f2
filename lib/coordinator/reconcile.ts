import { OLDEST_EMULATION_VERSION } from '../schemas/strategy.js';
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { systemClock, type Clock } from '../clock.js';
import { heldAfterDelete, isNoop, pingsToWithdraw, type Decision, type DecideTrigger } from '../election/decide.js';
import { plan } from '../election/plan.js';
import { decideWithSuccession } from '../election/successor.js';
import { effectiveLease, isCandidateStale, isIdentityExpired, judgedOffNamed, judgingRow, leftStamp, recheckAt, sessionStampAt, vacancy, type SessionRowStamp, type SessionStamp } from '../election/vacancy.js';
import { IdentityStamp, isSessionComponent, mayBeProcessSession, processOf, sessionKey } from '../schemas/identity.js';
import { CandidateStamp, type Candidate } from '../schemas/candidate.js';
import type { IdentityLease } from '../schemas/identity.js';
import { electionConfig, type ElectionConfig, type ElectionConfigInput, type TableNames } from '../schemas/config.js';
import type { Lease } from '../schemas/lease.js';
import { CandidateStore, MAX_CANDIDATES_PER_LEASE, PER_LEASE_IN_FLIGHT, TooManyCandidatesError } from '../stores/candidate-store.js';
import { ValidationError } from '../schemas/validation.js';
import { FencingTokensExhaustedError } from '../schemas/fencing-token.js';
import { BrokenSessionError, ConflictError, isReplicatedWriteConflict, retryOnConflict } from '../stores/errors.js';
import { IdentityStore } from '../stores/identity-store.js';
import type { InvalidItem, ScanSegment } from '../stores/item-store.js';
import { LeaseStore, type HeldSession, type LeaseRead } from '../stores/lease-store.js';
import { TickStore } from '../stores/tick-store.js';
import { mapLimit } from '../util/pool.js';
import { candidateSessions, listVouched, readSessions, vouchAll } from './vouched.js';
import { REFUSED_SEEN, RefusedSummary, heldOnRefusedMs, refusedSessionStep, termsOnRefused, type RefusedSessionStep } from './refused-session.js';
import { identityGraceMs, scanIdentities, stampOf, type RefusedIdentity, type RefusedRead, type RefusedRow } from './identity-scan.js';

export interface CoordinatorDeps {
  leases: LeaseStore;
  candidates: CandidateStore;
  identities: IdentityStore;
  /** Where the tick's round over every lease stands (lib/coordinator/tick.ts). */
  ticks: TickStore;
  clock: Clock;
  config: ElectionConfig;
}

export function coordinatorDeps(client: DynamoDBClient, tables: TableNames, opts: { clock?: Clock; config?: ElectionConfigInput } = {}): CoordinatorDeps {
  return {
    leases: new LeaseStore(client, tables.leases),
    candidates: new CandidateStore(client, tables.candidates, false, MAX_CANDIDATES_PER_LEASE),
    identities: new IdentityStore(client, tables.identities),
    ticks: new TickStore(client, tables.identities),
    clock: opts.clock ?? systemClock,
    config: electionConfig(opts.config),
  };
}

/** What one reconcile did, for events and metrics. */
export interface ReconcileOutcome {
  lease: string;
  decision: Decision;
  /** The lease before the decision (absent: there was none). */
  before: Lease | undefined;
  /** The lease as written; absent when nothing was written. */
  after: Lease | undefined;
  /** Candidates actually pinged (a gone or already pinged one is skipped). */
  pinged: string[];
  /** Candidate rows that do not match the schema: they took no part. */
  invalidCandidates: InvalidItem[];
  /** Reads and decisions made: more than 1 means races were lost and decided again. */
  attempts: number;
  /** When the decision was made. */
  at: number;
  /** When to reconcile this lease again: a held lease whose holder looks silent, at the moment its term runs out (recheckAt). */
  recheckAt?: number;
}

/** Lost more races in a row than the configuration allows; the next trigger will try again. */
export class TooManyConflictsError extends Error {
  override readonly name = 'TooManyConflictsError';
  constructor(readonly lease: string, readonly attempts: number, readonly last: ConflictError) {
    super(`lease "${lease}": gave up after losing ${attempts} write races in a row (${last.message})`);
  }
}

/**
 * The lease's row does not match the schema (written by hand, or by another version): no decision
 * is taken on it, and retrying cannot help until an operator repairs or deletes the row
 * (`conclave describe lease NAME` says how). The tick counts it (the broken-leases gauge).
 */
export class BrokenLeaseError extends Error {
  override readonly name = 'BrokenLeaseError';
  constructor(
    readonly lease: string,
    /** What the schema refused: each field and why. */
    readonly error: ValidationError,
  ) {
    super(`lease "${lease}" is broken, left alone until repaired (conclave describe lease ${lease}): ${error.message}`);
  }
}

interface Snapshot {
  read: LeaseRead;
  candidates: Candidate[];
  invalid: InvalidItem[];
  /** The lease's session (if it is held on one), read after the lease: its row, and when (this clock) the read was sent. */
  session?: SessionSeen;
  /**
   * From a segment's scans, which may hold a lease's candidates in part: a decision to write is
   * taken again from the lease's own reads before anything is written.
   */
  partial?: boolean;
  /**
   * From a whole pass's scans, made before this lease's turn (seconds before, at scale minutes): a
   * candidate may have answered its ping or withdrawn since, which the lease's revision, the write's
   * condition, does not show. A decision to write is taken again on the lease and its candidates
   * read again (readAgain).
   */
  scanned?: boolean;
}

/** A session row as the coordinator read it (undefined row: gone), and when the read was sent. */
interface SessionSeen {
  row: SessionRowStamp | undefined;
  readAt: number;
  /**
   * The term's named row is gone (a pass over every session row saw it so), and no row of its
   * holder's process names the term as left: its holder, a Session's elector, may have renewed that
   * row until just before someone deleted it, so its renewals are hidden, and neither the lease's
   * own stamp nor a row of its process left (an earlier session of it, ended and not yet
   * collected), which it judges the term by, proves anything of when the holder stops (vanishedHold).
   */
  vanished?: true;
}

/**
 * A decision to elect on a term judged off its named row because that row vanished
 * (SessionSeen.vanished: judged by the lease's own stamp, or by a row of its holder's process left,
 * an earlier session's whose stamp is over), made an election that elects nobody before `now` plus the term's lease
 * duration (heldAfterDelete's notBefore; the successor and every fallback wait for it too, as
 * after an operator's delete of the lease row). Why that bound: the holder counts only answers, in
 * time, to renewals of its session, and each renewal of the row is conditioned on the row as it
 * left it, so the last that succeeded landed before the row was deleted, before the pass's scan
 * that found it gone, before `now`; it stops at its renew deadline after that renewal's send,
 * shorter than the lease duration. Its lease renewals, once its session ends, find the term
 * ended (or keep it, if they land first: the write here is conditioned on the revision read).
 */
function vanishedHold(d: Decision, name: string, lease: Lease, candidates: readonly Candidate[], now: number, config: CoordinatorDeps['config']): Decision {
  // (not a re-election, which ends no term: the holder leads on while the candidates answer)
  if (d.kind !== 'elect' && !(d.kind === 'openElection' && d.vacancy !== undefined)) return d;
  const held = heldAfterDelete(name, lease, candidates, now, config, lease.leaseDurationSeconds * 1000, lease);
  return held.kind === 'openElection' ? { ...held, ...(d.vacancy === undefined ? {} : { vacancy: d.vacancy }) } : held;
}

/**
 * The session stamp to judge a lease by at `now`: the row's renewTime moved forward by the read's age,
 * so judging at `now` is judging at the moment the read was sent (a renewal may have landed since).
 */
function stampAt(seen: SessionSeen | undefined, now: number): SessionStamp | undefined {
  return seen && sessionStampAt(seen.row, seen.readAt, now);
}

async function readLease(deps: CoordinatorDeps, name: string): Promise<LeaseRead> {
  try {
    return await deps.leases.read(name);
  } catch (e) {
    if (e instanceof ValidationError) throw new BrokenLeaseError(name, e);
    throw e;
  }
}

/**
 * The lease, then its candidates: never side by side. An election's pings land before the lease
 * write that opens it, so candidates read after the lease show every ping of any election the lease
 * shows. Read together, the candidates could predate the pings of an election the lease already
 * carries — nobody pending, nobody answered — and the election would be failed the instant it
 * opened (the tick's scans keep the same order).
 */
async function snapshot(deps: CoordinatorDeps, name: string): Promise<Snapshot> {
  const read = await readLease(deps, name);
  const list = await deps.candidates.list(name);
  const s = read.item?.holderIdentity !== undefined ? read.item.session : undefined;
  const named = candidateSessions(list.candidates);
  if (s === undefined && named.length === 0) return { read, candidates: list.candidates, invalid: list.invalid };
  // after the lease: a session the lease names existed before the lease read (its holder wrote it
  // first); the sessions the candidates name vouch for them (one read for each name)
  const readAt = deps.clock.now();
  const key = s === undefined ? undefined : sessionKey(s);
  // the lease's own session read as before (a row that does not parse fails the reconcile: no term
  // is judged without it); a candidate's that does not parse vouches for nothing
  const lease = read.item;
  const own = key && deps.identities.read(key.component, key.name).then(
    (r) => r.item,
    (e: unknown) => {
      if (e instanceof ValidationError && lease?.holderIdentity !== undefined && s !== undefined)
        throw new BrokenSessionError(`the coordinator's reconcile of lease "${name}"`, { lease: name, holderIdentity: lease.holderIdentity, fencingToken: lease.fencingToken, session: s }, deps.identities.table, e);
      throw e;
    },
  );
  const [row, rows] = await Promise.all([own, readSessions(deps.identities, named.filter((n) => n !== s))]);
  if (s !== undefined) rows.set(s, row);
  const candidates = vouchAll(list.candidates, rows);
  return { read, candidates, invalid: list.invalid, ...(s === undefined ? {} : { session: { row, readAt } }) };
}

/**
 * A whole pass's snapshot of lease `name` read again before a write is decided on it (and a part's,
 * before anything is decided, of a term it judges off its named row: reconcileAll): the lease,
 * then its candidates, vouched for by their sessions read now; the term judged by the sessions the
 * pass scanned (every row of its holder's process, which the lease's own reads do not look for)
 * while the lease row is the one scanned. Changed since, undefined: decided on the lease's own
 * reads, as after a lost race (the write, conditioned on the revision scanned, would have been one).
 */
async function readAgain(deps: CoordinatorDeps, name: string, scanned: Snapshot): Promise<Snapshot | undefined> {
  const read = await readLease(deps, name);
  if (read.revision !== scanned.read.revision) return undefined;
  const list = await listVouched(deps, name);
  return { read, candidates: list.candidates, invalid: list.invalid, ...(scanned.session ? { session: scanned.session } : {}) };
}

/**
 * Reconciles one lease: consistent reads, the pure decision, its conditional writes. A lost race
 * (ConflictError) means reading and deciding again. A malformed lease item is a BrokenLeaseError:
 * no decision is taken on data that does not parse.
 */
export async function reconcileLease(deps: CoordinatorDeps, name: string, seed?: Snapshot, trigger: DecideTrigger = {}): Promise<ReconcileOutcome> {
  try {
    return await retryOnConflict((attempt) => reconcileOnce(deps, name, attempt, attempt === 1 ? seed : undefined, trigger), deps.config.maxConflictRetries);
  } catch (e) {
    if (e instanceof ConflictError) throw new TooManyConflictsError(name, deps.config.maxConflictRetries, e);
    throw e;
  }
}

/**
 * The lease stream has reached `l`, a row created with its election waiting for it (Election
 * `awaitsStream`, lib/election/decide.ts): every earlier record of the lease is handled — an
 * operator's delete of a held row ended that term and held the election — so the election may now
 * close. Clears the flag, conditioned on that election still being open on the row; returns
 * whether it did. Only the lease stream's function may call it (or a stand-in for it that reads the
 * stream in order).
 */
export async function streamSawRow(deps: Pick<CoordinatorDeps, 'leases'>, l: Lease): Promise<boolean> {
  return l.election?.awaitsStream === true && (await deps.leases.clearAwaitsStream(l.name, l.election));
}

/** One read-decide-write of reconcileLease; a lost race is a ConflictError. */
async function reconcileOnce(deps: CoordinatorDeps, name: string, attempt: number, seed: Snapshot | undefined, trigger: DecideTrigger): Promise<ReconcileOutcome> {
  const snap = seed ?? (await snapshot(deps, name));
  const now = deps.clock.now();
  const before = snap.read.item;
  // A lease held on a session is judged by the later of its own stamp and the session's.
  const effective = effectiveLease(before, stampAt(snap.session, now), now);
  const decided = decideWithSuccession(name, effective, snap.candidates, now, deps.config, trigger);
  const decision = snap.session?.vanished && effective?.holderIdentity !== undefined ? vanishedHold(decided, name, effective, snap.candidates, now, deps.config) : decided;
  const outcome: ReconcileOutcome = { lease: name, decision, before, after: undefined, pinged: [], invalidCandidates: snap.invalid, attempts: attempt, at: now };
  // a holder silent for half its term: judged again the moment the term runs out, not at the next tick
  const recheck = recheckAt(effective, now, deps.config.clockSkewMs);
  if (recheck !== undefined) outcome.recheckAt = recheck;
  if (isNoop(decision)) return outcome;
  if (snap.partial) return reconcileOnce(deps, name, attempt, undefined, trigger); // decide again on whole reads before writing
  if (snap.scanned) return reconcileOnce(deps, name, attempt, await readAgain(deps, name, snap), trigger);
  const writes = plan(decision, before, now, deps.config);
  const { ping, pingTime = 0 } = writes;
  try {
    // every ping settled first: one that failed fails the reconcile once the others have landed
    const done = await mapLimit(ping, PER_LEASE_IN_FLIGHT, (c) => deps.candidates.ping(name, c, pingTime).catch((e: unknown) => e));
    outcome.pinged = ping.filter((_, i) => done[i] === true);
    const failed = done.find((d) => typeof d !== 'boolean');
    if (failed) throw failed;
    if (writes.lease) outcome.after = await deps.leases.write(snap.read, writes.lease);
  } catch (e) {
    if (ping.length) await takeBackPings(deps, name, ping, pingTime);
    throw e;
  }
  // An election closed early: its unanswered pings are taken back (they had no window to be answered in).
  await mapLimit(pingsToWithdraw(decision, before, snap.candidates, now), PER_LEASE_IN_FLIGHT, (p) => deps.candidates.withdrawPing(name, p.name, p.pingTime));
  return outcome;
}

/**
 * The pings of an election whose lease write failed (refused, lost to another writer, unanswered)
 * or never came (a ping failed): left standing, each counted an ack window later as ignored by a
 * candidate that never saw an election, and a vacancy set it aside for a worse fresh one. Taken
 * back as pingsToWithdraw's are, unless the lease now carries an open election they count for
 * (this one, landed unanswered; another writer's, opened at or before them); left too while the
 * lease cannot be read.
 */
async function takeBackPings(deps: CoordinatorDeps, name: string, ping: readonly string[], pingTime: number): Promise<void> {
  const e = await deps.leases.read(name).then((r) => r.item?.election, () => ({ startedAt: 0 }));
  if (!e || e.startedAt > pingTime) await mapLimit(ping, PER_LEASE_IN_FLIGHT, (c) => deps.candidates.withdrawPing(name, c, pingTime).catch(() => false));
}

export interface ReconcileAllResult {
  /** Leases looked at (every lease with candidates or an election in flight; of the segment, past `after`, when given). */
  leases: number;
  /**
   * Where a pass stopped at its deadline: the last lease it reconciled (undefined: none), to go on
   * after; absent when the pass reconciled every lease it looked at.
   */
  stopped?: { after: string | undefined };
  /**
   * The pass's scans did not finish by its deadline: nothing reconciled, nothing collected
   * (`stopped` says where it was to start); told among `errors` as `(the scans)`, the last of them.
   */
  unscanned?: true;
  /**
   * Leases reconciled from their own reads (the lease, then its candidates) rather than the scans:
   * in a segment, those whose lease row or candidates the segment's scans may not both hold.
   */
  unseeded: number;
  /** Leases whose reconcile started (all `leases` unless the pass `stopped`). */
  reached: number;
  /** Every outcome, no-ops included. */
  outcomes: ReconcileOutcome[];
  /** Leases whose reconcile failed (retried at the next trigger); the others went on. */
  errors: { lease: string; error: Error }[];
  /** Leases whose row does not match the schema: never decided on until repaired (also in `invalid`). */
  broken: BrokenLeaseError[];
  /**
   * Leases held on a session whose row does not match the schema: no term is judged by it, so each
   * is left alone until the row is repaired or deleted (the row is in `invalid`, reported once).
   */
  unjudged: BrokenSessionError[];
  /**
   * Session rows the schema refuses that held terms name (`leases`), and identity rows the schema
   * refuses whose stamp does not parse that none names (`leases` empty: timed as if a term of a
   * day, the longest a lease may state, were on it), as the tick times them
   * (lib/coordinator/refused-session.ts): unchanged since `unchangedSince`, deleted once past
   * `deleteAfter` (`deleted`: by this pass; also in `collectedIdentities`). Without the two times,
   * too large to be timed: left alone until repaired.
   */
  refusedSessions: RefusedSessionSeen[];
  /**
   * Candidate rows the schema refuses whose `renewTime` or `session` does not parse (so no stamp
   * collects them), as the tick times them: by when it first saw each as it is, deleted once unchanged
   * for `candidateStaleAfterMs` and `clockSkewMs` (`deleted`: by this pass; also in
   * `collectedCandidates`). Without the two times, too large to be timed: left alone.
   */
  refusedCandidates: RefusedCandidateSeen[];
  /** Rows that do not match their schema, in any table. */
  invalid: InvalidItem[];
  collectedCandidates: { leaseName: string; name: string }[];
  collectedIdentities: { component: string; name: string }[];
  /**
   * Coordinated leases (OldestEmulationVersion, with live candidates) that have no live holder after
   * this pass; and leases whose reconcile failed (in `errors`) that had no live holder in the row the
   * pass scanned (leaderlessUnreconciled).
   */
  leaderless: string[];
}

/** A session row the schema refuses, with held terms on it (or a refused row none names whose stamp does not parse), as the tick times it (ReconcileAllResult.refusedSessions). */
export interface RefusedSessionSeen {
  key: { component: string; name: string };
  /** The held leases that name it, in name order (none: a row whose stamp does not parse, timed by a day). */
  leases: string[];
  /** When the coordinator first saw the row as it is (its clock). */
  unchangedSince?: number;
  /** Past this (the coordinator's clock), the row is deleted if still unchanged. */
  deleteAfter?: number;
  /** Deleted by this pass. */
  deleted: boolean;
}

/** A candidate row the schema refuses whose stamp does not parse, as the tick times it (ReconcileAllResult.refusedCandidates). */
export interface RefusedCandidateSeen {
  key: { leaseName: string; name: string };
  /** When the coordinator first saw the row as it is (its clock). */
  unchangedSince?: number;
  /** Past this (the coordinator's clock), the row is deleted if still unchanged. */
  deleteAfter?: number;
  /** Deleted by this pass. */
  deleted: boolean;
}

/** Which part of the tables a pass reconciles, and until when (reconcileAll). */
export interface PassOptions {
  /**
   * One of the tables' parts (DynamoDB's parallel scan segment: the leases and the candidates
   * tables scanned with the same Segment and TotalSegments). @default the whole tables
   */
  segment?: ScanSegment;
  /** Leases of the segment up to this name (name order) were reconciled already: the pass goes on after it. */
  after?: string;
  /**
   * `clock.monotonic()` past which no reconcile or delete starts (those under way finish): the
   * pass then stops, saying where (`stopped`). @default none: every lease
   */
  deadline?: number;
  /** Called with each outcome as its reconcile ends, inside the pass (a failure is counted among `errors`, the outcome kept). */
  afterEach?: (o: ReconcileOutcome) => Promise<void>;
  /**
   * Reconcile nothing: the pass's scans, then its collection (one an earlier pass reached its part's
   * end too late for: lib/coordinator/tick.ts). A lease over the cap is not told of again.
   */
  collectOnly?: boolean;
}

const asError = (e: unknown): Error => (e instanceof Error ? e : new Error(String(e)));

/** What a pass whose scans did not finish by its deadline tells among its errors (ReconcileAllResult.unscanned). */
export const UNSCANNED = '(the scans)';

/** A pass's result before it looks at anything (tick.ts merges passes into one). */
export const emptyResult = (): ReconcileAllResult => ({ leases: 0, unseeded: 0, reached: 0, outcomes: [], errors: [], broken: [], unjudged: [], refusedSessions: [], refusedCandidates: [], invalid: [], collectedCandidates: [], collectedIdentities: [], leaderless: [] });

/**
 * The coordinator's tick: every lease that has candidates or an election in flight is reconciled,
 * at most `config.concurrency` at a time, from two consistent scans (one per table) rather than
 * two reads per lease; only leases whose decision writes are read again, by their own reconcile.
 * Then stale candidates (a broken lease's too: no election counts them) and expired identity
 * leases are collected (a row the schema refuses, by the stamp it still carries), each delete
 * conditioned on the revision scanned, so a row renewed meanwhile stays.
 *
 * With `opts` (lib/coordinator/tick.ts), a pass over one segment, after a name, until a deadline:
 * the segment's leases are taken in name order, and at the deadline the pass stops starting
 * reconciles and says after which lease it stopped. A segment's scans are of its part of each table;
 * a lease whose row the leases scan did not return, or whose election the candidates scan shows
 * no candidate for, is reconciled from its own reads (DynamoDB documents no promise that one key
 * falls in the same segment of two tables: each lease's reconcile stays exact whichever part holds
 * it). Expired identity leases are collected only by a pass over the whole tables (a segment does
 * not know every lease that still names a session): tick.ts collects them at a round's end.
 */
/** The tick is never the lease stream: a missing row's election waits for the stream (DecideTrigger). */
const TICK: DecideTrigger = { streamBehind: true };

export async function reconcileAll(deps: CoordinatorDeps, opts: PassOptions = {}): Promise<ReconcileAllResult> {
  const result = emptyResult();
  const segment = opts.segment && opts.segment.total > 1 ? opts.segment : undefined;
  const scan = segment ? { segment } : {};
  const past = () => opts.deadline !== undefined && deps.clock.monotonic() >= opts.deadline;
  // the scans stop at the deadline too (a table's rows may take longer to read than an invocation has): the part is taken again from its start
  const scansPast = (): boolean => {
    if (!past()) return false;
    result.stopped = { after };
    result.unscanned = true;
    result.errors.push({ lease: UNSCANNED, error: new Error('scans unfinished at the deadline') });
    return true;
  };
  const after = opts.after;
  const leases = new Map<string, Lease>();
  const badLeases = new Set<string>();
  for await (const page of deps.leases.scan(scan)) {
    if (scansPast()) return result;
    for (const s of page) {
      if (s.ok) leases.set(s.item.name, s.item);
      else {
        result.invalid.push(s.invalid);
        const name = String(s.invalid.key['name']);
        badLeases.add(name);
        result.broken.push(new BrokenLeaseError(name, s.invalid.error));
      }
    }
  }
  const groups = new Map<string, { candidates: Candidate[]; invalid: InvalidItem[] }>();
  const group = (n: string) => groups.get(n) ?? groups.set(n, { candidates: [], invalid: [] }).get(n)!;
  // Of the first MAX_REFUSED_CANDIDATES candidate rows the schema refuses (all are told), those whose
  // stamp still reads: collected once stale by it; those whose stamp does not parse: timed by first
  // sighting (timeRefusedCandidates). Neither whole: a worker may write a thousand rows of 400 KB a lease
  const refused: RefusedCandidate[] = [];
  const unstamped: RefusedCandidateRow[] = [];
  let refusedRows = 0;
  // rows scanned per lease: past MAX_CANDIDATES_PER_LEASE only counted, neither parsed nor kept
  const rows = new Map<string, number>();
  const count = (raw: Record<string, unknown>) => {
    const n = String(raw['leaseName']);
    const k = (rows.get(n) ?? 0) + 1;
    rows.set(n, k);
    return k > MAX_CANDIDATES_PER_LEASE;
  };
  for await (const page of deps.candidates.scan({ ...scan, skip: count })) {
    if (scansPast()) return result;
    for (const s of page) {
      if (s.ok) group(s.item.leaseName).candidates.push(unlabelled(s.item));
      else {
        result.invalid.push(s.invalid);
        group(String(s.invalid.key['leaseName'])).invalid.push(s.invalid);
        if (refusedRows++ >= MAX_REFUSED_CANDIDATES) continue;
        const stamp = CandidateStamp.safeParse(s.row);
        const key = { leaseName: String(s.invalid.key['leaseName']), name: String(s.invalid.key['name']) };
        if (stamp.success) refused.push({ key, stamp: stamp.data });
        else unstamped.push({ key, summary: new RefusedSummary(s.row) });
      }
    }
  }
  // Identities after leases: every session a scanned lease names existed before the lease was
  // scanned (its holder writes the session row first), so it is in this scan unless it ended. Kept:
  // what this pass judges by, and in a whole pass what it may collect or time (identity-scan.ts)
  const sessionsNamed = [...[...groups.values()].flatMap((g) => g.candidates.map((c) => c.session)), ...refused.map((c) => c.stamp.session)];
  const scanned = await scanIdentities(deps, { leases, sessions: sessionsNamed, collect: !segment }, past);
  if (!scanned) {
    scansPast(); // (past the deadline)
    return result;
  }
  // session rows the schema refuses that this pass's leases or candidates name: a term on one is judged by nobody (a lease's own reconcile refuses it), never as if the row were gone
  const { readAt: identitiesReadAt, identities, badSessions, refusedRows: refusedSessionRows, refusedIdentities } = scanned;
  result.invalid.push(...scanned.invalid);
  // A whole pass times the refused session rows held terms name, and deletes those seen unchanged
  // long enough (refused-session.ts): gone, their terms are judged below as on a row gone.
  let brokenHeld: Map<string, HeldSession> | undefined;
  let refusedGone = new Set<string>();
  if (!segment && refusedSessionRows.length) {
    if (badLeases.size) {
      brokenHeld = await heldSessions(deps, (n) => badLeases.has(n), past);
      if (!brokenHeld && scansPast()) return result;
    }
    const terms = [...leases.values(), ...(brokenHeld?.values() ?? [])];
    refusedGone = await timeRefusedSessions(deps, refusedSessionRows, terms, result, past);
    for (const name of refusedGone) badSessions.delete(name);
  }
  // each term judged by every session row scanned, its holder's other sessions too (sessionJudge); a refused row deleted above is gone
  const { sessions, sessionOf, unvouched, refusedOwn } = sessionJudge(identities, identitiesReadAt, scanned.refusedReads.filter((r) => r.more || !refusedGone.has(String(r.row['name']))));
  // a refused row on a session may live by it, whichever process's it is (late rather than early); on a session row that does not parse, by nobody: kept
  const refusedRenewed = refused.flatMap((c) => {
    const session = c.stamp.session;
    if (session !== undefined && badSessions.has(session)) return [];
    return [{ ...c, renewTime: Math.max(c.stamp.renewTime, session === undefined ? 0 : (sessions.get(session)?.renewTime ?? 0)) }];
  });
  // a candidate on a session lives by it (vouchedCandidate): judged, named and collected so
  for (const g of groups.values()) g.candidates = vouchAll(g.candidates, sessions);
  for (const [n, l] of leases) if (l.election && !groups.has(n)) group(n);

  // a lease with more candidate rows than the coordinator holds is left alone, told among the
  // errors; the rows it holds of it (the first MAX_CANDIDATES_PER_LEASE) are collected once stale,
  // so a flood that stops drains over passes (the sessions only its rows past the cap name are not kept)
  const over = new Set([...rows].filter(([, k]) => k > MAX_CANDIDATES_PER_LEASE).map(([n]) => n));
  if (!opts.collectOnly) for (const n of over) if (!badLeases.has(n) && (after === undefined || n > after)) result.errors.push({ lease: n, error: new TooManyCandidatesError(n, rows.get(n)!) });
  // a broken lease is reported above and never decided on; its candidates stay in the groups: the
  // stale ones are collected, the sessions the live ones name kept, as any lease's
  const names = opts.collectOnly ? [] : [...groups.keys()].filter((n) => !badLeases.has(n) && !over.has(n) && (after === undefined || n > after)).sort();
  result.leases = names.length;
  let started = -1;
  // in a segment, the whole candidates a term judged off its named row was decided with (readAgain), for the leaderless count
  const wholeCandidates = new Map<string, Candidate[]>();
  // leases whose reconcile failed (in result.errors): judged leaderless by the row scanned (leaderlessUnreconciled)
  const failed: string[] = [];
  // in a segment, the session a lease with no row scanned was reconciled on, as its own reads saw it
  const ownSessions = new Map<string, SessionSeen | undefined>();
  const outcomes = await mapLimit(names, deps.config.concurrency, async (name, i) => {
    if (past()) return undefined; // (mapLimit starts them in order: those started are the first ones)
    started = Math.max(started, i);
    const g = groups.get(name)!;
    let o: ReconcileOutcome;
    try {
      const l = leases.get(name);
      // judged off its named row, while a row the schema refuses may be its holder's own session: judged by nobody, as on a refused named row
      const mine = l !== undefined && !(l.session !== undefined && badSessions.has(l.session)) ? refusedOwn(l) : undefined;
      if (mine) {
        result.unjudged.push(unjudgedOn(deps, l!, mine));
        return undefined;
      }
      // A segment's decision to write is taken again from the lease's own reads, which read only the
      // session named and leave an unvouched term alone: such a term is decided on the lease read
      // again, unchanged since the scan, then its whole candidates, the term judged by this pass's
      // scan of every session row (readAgain), as a whole pass decides a write; changed since, on its
      // own reads, as after a lost race. (A term on a session row that does not parse is not: it is
      // told as unjudged, below.) Within the pass's time, as any reconcile.
      if (segment && l !== undefined && unvouched(l) && !badSessions.has(l.session!)) {
        const session = sessionOf(l);
        const again = await readAgain(deps, name, { read: LeaseStore.readOf(name, l), candidates: [], invalid: [], ...(session ? { session } : {}) });
        if (again) wholeCandidates.set(name, again.candidates);
        o = await reconcileLease(deps, name, again, TICK);
      } else if ((segment && (l === undefined || g.candidates.length + g.invalid.length === 0)) || (l?.holderIdentity !== undefined && l.session !== undefined && badSessions.has(l.session))) {
        // From its own reads: in a segment, no lease row scanned (it may be in another part), or an
        // election with none of its candidates here; or held on a session whose row does not parse
        // (those reads fail, as the lease's reconcile does, rather than judge the term without it).
        // (A segment's candidates of a lease may also be only some of them, if DynamoDB split its item
        // collection across parts: such a snapshot is `partial`, and any write is decided again on whole reads.)
        result.unseeded++;
        // (the session its reads judged it by, where the pass scanned no lease row to keep its session for: leaderlessAfter)
        const seen = await snapshot(deps, name);
        if (l === undefined) ownSessions.set(name, seen.session);
        o = await reconcileLease(deps, name, seen, TICK);
      } else {
        const session = sessionOf(l);
        o = await reconcileLease(deps, name, { read: LeaseStore.readOf(name, l), candidates: g.candidates, invalid: g.invalid, ...(session ? { session } : {}), ...(segment ? { partial: true } : { scanned: true }) }, TICK);
      }
    } catch (e) {
      if (e instanceof BrokenLeaseError) result.broken.push(e); // broken since the scan (read again after a lost race)
      // a row at the largest fencing token: no term can follow it, a row to repair as one the schema refuses
      else if (e instanceof FencingTokensExhaustedError) result.broken.push(new BrokenLeaseError(name, e));
      // the session row the scan refused, refused again: told once, with that row (a row broken since the scan is a fault here; one the scan kept nothing of, named by no lease it scanned, told as refused)
      else if (e instanceof BrokenSessionError && (badSessions.has(e.term.session) || !leases.has(name))) result.unjudged.push(e);
      else {
        result.errors.push({ lease: name, error: asError(e) });
        failed.push(name);
      }
      return undefined;
    }
    // what follows a reconcile (its election's timer) within the pass's time, not after the deadline
    if (opts.afterEach) await opts.afterEach(o).catch((e: unknown) => result.errors.push({ lease: name, error: asError(e) }));
    return o;
  });
  const now = deps.clock.now();
  for (const o of outcomes) {
    if (!o) continue;
    result.outcomes.push(o);
    const judgedBy = ownSessions.has(o.lease) ? () => ownSessions.get(o.lease) : sessionOf;
    if (leaderlessAfter(deps, o, wholeCandidates.get(o.lease) ?? groups.get(o.lease)!.candidates, judgedBy, now)) result.leaderless.push(o.lease);
  }
  // in a segment, a lease with no row scanned may have it in another part: not judged here (unknown)
  for (const name of failed) if ((leases.has(name) || !segment) && leaderlessUnreconciled(deps, leases.get(name), badSessions, sessionOf, now)) result.leaderless.push(name);

  result.broken.sort((a, b) => (a.lease < b.lease ? -1 : a.lease > b.lease ? 1 : 0));
  result.reached = started + 1;
  if (started < names.length - 1) {
    result.stopped = { after: started >= 0 ? names[started] : after };
    return result; // garbage waits for a pass that reaches the end of its segment
  }
  if (past()) return result; // (the collection would start nothing: the scan below is spared)
  const stale = [...groups.values()].flatMap((g) => g.candidates);
  if (refusedRows > MAX_REFUSED_CANDIDATES) result.errors.push({ lease: '(refused candidate rows)', error: new Error(`${refusedRows}: past the first ${MAX_REFUSED_CANDIDATES}, timed and collected by later passes`) });
  // each candidate row is in one part: every pass that reaches its part's end times those it scanned
  await timeRefusedCandidates(deps, unstamped, result, past);
  if (segment) {
    await collectGarbage(deps, { candidates: stale, refusedCandidates: refusedRenewed }, result, past);
    return result;
  }
  // a session row a held lease still names is kept: gone, it would no longer vouch for that term
  // (sessionStanding); but not by a term over on a lease with no live candidate (releaseOver)
  const held = new Map<string, Lease | HeldSession | undefined>(leases);
  for (const o of result.outcomes) held.set(o.lease, o.after ?? o.before);
  // a broken row's too, read again for the fields that name it: once repaired, its term is judged by
  // that session (collected, the term would wait for its followers' fallback, as on one that does not vouch for it)
  if (badLeases.size) {
    const broken = brokenHeld ?? (await heldSessions(deps, (n) => badLeases.has(n), past));
    if (!broken) return result; // (scanned past the deadline: the collection would start nothing)
    for (const l of broken.values()) held.set(l.name, l);
  }
  const named = namedSessions(held.values(), (l) => !badLeases.has(l.name) && !anyLive(deps, groups.get(l.name)?.candidates ?? [], now) && leaderlessUnreconciled(deps, l as Lease, badSessions, sessionOf, now));
  // and a session row a live candidate names: gone, it would no longer vouch for it (vouchedCandidate)
  for (const c of stale) if (c.session !== undefined && !isCandidateStale(c, now, deps.config.candidateStaleAfterMs)) named.add(c.session);
  // a refused one's too, by its own stamp where its session row does not parse either
  for (const c of refused) if (c.stamp.session !== undefined && Math.max(c.stamp.renewTime, sessions.get(c.stamp.session)?.renewTime ?? 0) + deps.config.candidateStaleAfterMs >= now) named.add(c.stamp.session);
  await collectGarbage(deps, { candidates: stale, refusedCandidates: refusedRenewed, identities: identities.filter((i) => !named.has(i.name)), refusedIdentities: refusedIdentities.filter((i) => !named.has(i.key.name) && !refusedGone.has(i.key.name)) }, result, past);
  return result;
}

/**
 * How a pass that scanned every session row (`identities`, read at `readAt`, after the leases it
 * judges) judges a lease's term: by the session the lease names where that row vouches for its
 * holder; else (a peer rewrote `session`, or the row is gone) by its holder's own process's
 * freshest session (sessionStanding, IdentityLeaseItem.process), looked for in the partitions its
 * followers query (processSessionComponents), or, with none of that process left, by the lease's
 * own stamp: a dead holder's lease is elected again by the tick, not only after its followers'
 * fallback; where the named row is gone, an election it would open or close at once is held a
 * lease duration (`vanished`: vanishedHold), whatever row of that process is left, unless that row
 * names the term as left. (One lease's reconcile reads only the session named, and leaves such a term alone.)
 */
function sessionJudge(identities: readonly IdentityLease[], readAt: number, refused: readonly RefusedRead[] = []): { sessions: Map<string, IdentityLease>; sessionOf: (l: Lease | undefined) => SessionSeen | undefined; unvouched: (l: Lease) => boolean; refusedOwn: (l: Lease) => RefusedRead | undefined } {
  const sessions = new Map(identities.filter((i) => isSessionComponent(i.component) && sessionKey(i.name).component === i.component).map((i) => [i.name, i]));
  const byProcess = new Map<string, IdentityLease[]>();
  for (const r of sessions.values()) if (r.process !== undefined) (byProcess.get(r.process) ?? byProcess.set(r.process, []).get(r.process)!).push(r);
  // judged by a row other than the one named (its holder's own, or none): what one lease's reads cannot do
  const unvouched = (l: Lease): boolean => judgedOffNamed(l, l.session === undefined ? undefined : sessions.get(l.session));
  // the rule the CLI shows too (vacancy.ts judgingRow)
  const sessionOf = (l: Lease | undefined): SessionSeen | undefined => {
    const named = l?.session === undefined ? undefined : sessions.get(l.session);
    const judging = judgingRow(l, named, (process) => byProcess.get(process) ?? []);
    // the named row gone: its holder's renewals may have been on it, unless the row of its process
    // left names the term as left (its elector stopped, renewing nothing); an earlier session of the
    // process, ended and not yet collected, stamps nothing of the row deleted. A holder on no session
    // (its instance names no process: judgingRow gives no `own`) renews the lease itself, so its
    // lease's own stamp hides nothing
    const onProcess = judging?.own !== undefined;
    const left = judging?.own != null && leftStamp(l!, judging.own) !== undefined;
    return judging && { row: judging.row, readAt, ...(named === undefined && onProcess && !left ? { vanished: true as const } : {}) };
  };
  // a term judged off its named row, and a row the schema refuses that may be its holder's own session
  // (mayBeProcessSession): it may live by that row, so nobody judges it (as the CLI, getLeader and the lease stream's hold after a delete)
  const refusedOwn = (l: Lease): RefusedRead | undefined => (l.holderIdentity !== undefined && unvouched(l) ? refused.find((r) => mayBeProcessSession(r.row, l.session!, processOf(l.holderInstance)!)) : undefined);
  return { sessions, sessionOf, unvouched, refusedOwn };
}

/** A term the tick leaves alone: judged off its named row, a row the schema refuses (`refused`) may be its holder's own session. */
const unjudgedOn = (deps: CoordinatorDeps, l: Lease, refused: RefusedRead): BrokenSessionError =>
  new BrokenSessionError(`the coordinator's reconcile of lease "${l.name}"`, { lease: l.name, holderIdentity: l.holderIdentity!, fencingToken: l.fencingToken, session: String(refused.row['name']) }, deps.identities.table, refused.invalid.error);

/** Leaderless after a pass: a lease Conclave elects for, with live candidates, and no live holder as `o` left it. */
function leaderlessAfter(deps: CoordinatorDeps, o: ReconcileOutcome, candidates: readonly Candidate[], sessionOf: (l: Lease | undefined) => SessionSeen | undefined, now: number): boolean {
  // (a strategy Conclave does not run: left alone, or its stale successors cleared)
  const notOurs = (o.decision.kind === 'leaveAlone' && (o.decision.reason === 'noCoordination' || o.decision.reason === 'unknownStrategy')) || (o.decision.kind === 'setSuccessor' && o.decision.strategy !== OLDEST_EMULATION_VERSION);
  const hasLive = candidates.some((c) => !isCandidateStale(c, now, deps.config.candidateStaleAfterMs));
  const l = o.after ?? o.before;
  return !notOurs && hasLive && vacancy(effectiveLease(l, stampAt(sessionOf(l), now), now), now, deps.config.clockSkewMs).vacant;
}

/**
 * Leaderless after a pass, for a lease whose reconcile failed: judged by the row the pass read
 * (`l`; undefined: no row), with no live holder by the rule leaderlessAfter uses (vacant, or its
 * term expired). Its candidates and what its reconcile would have decided (an election, or
 * `noCoordination`: not ours) are not asked: a failed reconcile tells neither for sure, and a lease
 * the coordinator could not reconcile that has no holder is what the leaderless alarm is for (an
 * IAM mistake refusing every write must not read as 0 leaderless). A term on a session row the
 * schema refuses is judged by nobody: not counted (it is unjudged, or will be).
 */
function leaderlessUnreconciled(deps: CoordinatorDeps, l: Lease | undefined, badSessions: ReadonlySet<string>, sessionOf: (l: Lease | undefined) => SessionSeen | undefined, now: number): boolean {
  if (l?.holderIdentity !== undefined && l.session !== undefined && badSessions.has(l.session)) return false;
  return vacancy(effectiveLease(l, stampAt(sessionOf(l), now), now), now, deps.config.clockSkewMs).vacant;
}

/** The held leases' session fields of every lease `which` picks (a whole-table scan of four fields); undefined: `past()` before the scan's end. */
async function heldSessions(deps: CoordinatorDeps, which: (name: string) => boolean, past: () => boolean): Promise<Map<string, HeldSession> | undefined> {
  const out = new Map<string, HeldSession>();
  for await (const page of deps.leases.scanSessions()) {
    if (past()) return undefined;
    for (const l of page) if (which(l.name)) out.set(l.name, l);
  }
  return out;
}

/**
 * Times each refused session row that held terms (`terms`: the held leases, whatever session they
 * name) name, and each refused row whose stamp does not parse that none names (by the longest lease
 * of the held terms it may vouch for as their process's own session, else as if a term of the
 * longest duration a lease may state were on it: termsOnRefused), as refused-session.ts says: stamps
 * the row first seen as it is, deletes one unchanged past its wait (each decided again on the row
 * read whole, the scan having kept its summary, and conditioned on every attribute as read), and
 * notes each in `result.refusedSessions` (a deleted one in `collectedIdentities` too). Returns the names deleted. A fault is noted for that row alone; none
 * starts once `past()`. (A row none names whose stamp parses is collected once expired by it.)
 */
async function timeRefusedSessions(deps: CoordinatorDeps, rows: readonly RefusedRow[], terms: Iterable<Pick<HeldSession, 'name' | 'holderIdentity' | 'holderInstance' | 'session' | 'leaseDurationSeconds'>>, result: Pick<ReconcileAllResult, 'refusedSessions' | 'collectedIdentities' | 'errors'>, past: () => boolean): Promise<Set<string>> {
  const on = new Map<string, Pick<HeldSession, 'name' | 'leaseDurationSeconds'>[]>();
  const held = [...terms].filter((t) => t.holderIdentity !== undefined && t.session !== undefined);
  for (const t of held) (on.get(t.session!) ?? on.set(t.session!, []).get(t.session!)!).push(t);
  const deleted = new Set<string>();
  for (const r of rows) {
    // (a row of that name in another partition is not the one the leases name: sessionKey)
    const named = sessionKey(r.key.name).component === r.key.component ? on.get(r.key.name) : undefined;
    if ((!named && !r.unstamped) || past()) continue;
    const leases = (named ?? []).map((t) => t.name).sort();
    try {
      // the coordinator's clock after the scans that showed the row so: later than any write that made it so
      const { step, gone } = await timeRefused(deps, deps.identities, r, heldOnRefusedMs(termsOnRefused(r.facts, named ?? [], held).terms, r.facts));
      if (step.kind === 'tooLarge') {
        result.refusedSessions.push({ key: r.key, leases, deleted: false });
        continue;
      }
      if (gone) {
        deleted.add(r.key.name);
        result.collectedIdentities.push(r.key);
      }
      result.refusedSessions.push({ key: r.key, leases, unchangedSince: step.seen.at, deleteAfter: step.deleteAfter, deleted: gone });
    } catch (e) {
      result.errors.push({ lease: `(identity lease ${r.key.component}/${r.key.name})`, error: asError(e) });
    }
  }
  return deleted;
}

/**
 * Times refused row `r` of `store` (refused-session.ts) by its summary as scanned, the row held
 * `holdMs`: a write (the stamp, the delete) is decided again on the row read whole, on the
 * coordinator's clock after that read, and conditioned on every attribute as read. (A row changed
 * since that read, or gone, is neither stamped nor deleted: the next pass times it afresh.)
 */
async function timeRefused(deps: CoordinatorDeps, store: IdentityStore | CandidateStore, r: { key: Record<string, string>; summary: RefusedSummary }, holdMs: number): Promise<{ step: RefusedSessionStep; gone: boolean }> {
  const stepOf = (row: RefusedSummary | Record<string, unknown>) => refusedSessionStep(row, holdMs, deps.clock.now(), deps.config.clockSkewMs);
  let step = stepOf(r.summary);
  const row = step.kind === 'stamp' || step.kind === 'delete' ? await store.rowAt(r.key) : undefined;
  if (row) step = stepOf(row);
  if (row && step.kind === 'stamp') await store.markRefused(r.key, row, REFUSED_SEEN, step.seen);
  return { step, gone: row !== undefined && step.kind === 'delete' && (await store.deleteRefused(r.key, row)) };
}

/** A candidate row the schema refuses whose `renewTime` or `session` does not parse: its key, and its summary (read again whole to write against it). */
interface RefusedCandidateRow {
  key: { leaseName: string; name: string };
  summary: RefusedSummary;
}

/**
 * Times each candidate row the schema refuses whose stamp does not parse, as refused-session.ts
 * times a refused session row: stamps the row first seen as it is (`refusedSeen`), and deletes one
 * unchanged for `candidateStaleAfterMs` and `clockSkewMs` since (each write on the row read again
 * whole, conditioned on every attribute as read: timeRefused). Safe at that bound (docs/safety.md): a refused candidate row takes part in
 * no election, vouches for nothing and guards no term, so its deletion changes no decision; the
 * bound only spares a row its writer still renews (each renewal changes it and restarts the wait).
 * Notes each in `result.refusedCandidates` (a deleted one in `collectedCandidates` too). A fault
 * is noted for that row alone; none starts once `past()`.
 */
async function timeRefusedCandidates(deps: CoordinatorDeps, rows: readonly RefusedCandidateRow[], result: Pick<ReconcileAllResult, 'refusedCandidates' | 'collectedCandidates' | 'errors'>, past: () => boolean): Promise<void> {
  for (const r of rows) {
    if (past()) return;
    try {
      const { step, gone } = await timeRefused(deps, deps.candidates, r, deps.config.candidateStaleAfterMs);
      if (step.kind === 'tooLarge') {
        result.refusedCandidates.push({ key: r.key, deleted: false });
        continue;
      }
      if (gone) result.collectedCandidates.push(r.key);
      result.refusedCandidates.push({ key: r.key, unchangedSince: step.seen.at, deleteAfter: step.deleteAfter, deleted: gone });
    } catch (e) {
      result.errors.push({ lease: r.key.leaseName, error: asError(e) });
    }
  }
}

/** The sessions that held leases name, but those `over` leaves out: their rows are kept (collectIdentities). */
const namedSessions = <L extends Pick<Lease, 'holderIdentity' | 'session'>>(leases: Iterable<L | undefined>, over: (l: L) => boolean = () => false): Set<string> =>
  new Set([...leases].flatMap((l) => (l?.holderIdentity !== undefined && l.session !== undefined && !over(l) ? [l.session] : [])));

const anyLive = (deps: CoordinatorDeps, candidates: readonly Candidate[], now: number): boolean => candidates.some((c) => !isCandidateStale(c, now, deps.config.candidateStaleAfterMs));

/**
 * Collects expired identity leases (session rows included) with every lease's row at hand: the
 * identities, then the leases (only the fields that say which session a held lease names) and the
 * candidates (only the session each names), then the deletes, each conditioned on the revision scanned. For a pass over one segment, which does
 * not see every lease (lib/coordinator/tick.ts, at a round's end, or at the next invocation where
 * that ran out of time). Stops scanning, reading and starting deletes at `deadline`. A session row
 * named only by terms over on leases with no live candidate is not kept (releaseOver, its reads
 * in the first half of the time left).
 * With no identity expired, the leases and candidates are not read: their scans cost as many read
 * units as the whole rows, a round's parts' worth again. Times the refused session rows held terms
 * name, as a whole pass does, and reconciles the leases on each it deletes (reconcileUnvouched).
 */
export async function collectIdentities(deps: CoordinatorDeps, opts: Pick<PassOptions, 'deadline' | 'afterEach'> = {}): Promise<Pick<ReconcileAllResult, 'collectedIdentities' | 'invalid' | 'errors' | 'refusedSessions' | 'outcomes' | 'unjudged' | 'leaderless'>> {
  const result: Awaited<ReturnType<typeof collectIdentities>> = { collectedIdentities: [], invalid: [], errors: [], refusedSessions: [], outcomes: [], unjudged: [], leaderless: [] };
  const past = () => opts.deadline !== undefined && deps.clock.monotonic() >= opts.deadline;
  // the rows expired by their stamps; of those the schema refuses, those whose stamp reads (as
  // reconcileAll collects them: each part's pass reports them), and the session rows and those whose
  // stamp does not read, timed here as a whole pass times them (identity-scan.ts)
  const scanned = await scanIdentities(deps, { collect: true }, past);
  if (!scanned) return result;
  const { identities, refusedIdentities: refused, refusedRows: refusedSessions } = scanned;
  // (collectGarbage judges expiry again after the scans below, at a later time: none of these is younger then)
  const isExpired = (i: IdentityStamp) => isIdentityExpired(i, deps.clock.now(), identityGraceMs(deps.config));
  const expired = identities.filter(isExpired);
  const expiredRefused = refused.filter((i) => isExpired(i.stamp));
  if (!expired.length && !expiredRefused.length && !refusedSessions.length) return result;
  const held: HeldSession[] = [];
  for await (const page of deps.leases.scanSessions()) {
    if (past()) return result;
    held.push(...page);
  }
  const gone = await timeRefusedSessions(deps, refusedSessions, held, result, past);
  // the terms on a row deleted: judged now, as a whole pass judges them after its deletions (a
  // part's pass cannot: one lease's reads see the named row gone and leave the term alone)
  const off = held.filter((l) => l.holderIdentity !== undefined && l.session !== undefined && gone.has(l.session)).map((l) => l.name);
  if (off.length) await reconcileUnvouched(deps, off, result, past, opts.afterEach);
  if (!expired.length && !expiredRefused.length) return result;
  const named = namedSessions(held);
  // its reads take at most half the time left: the deletes of the rows it releases have the rest
  const from = deps.clock.monotonic();
  const until = opts.deadline === undefined ? undefined : from + (opts.deadline - from) / 2;
  await releaseOver(deps, named, expired, held, result, () => until !== undefined && deps.clock.monotonic() >= until);
  // a session row a candidate names is kept too (reconcileAll: it vouches for the candidate); its
  // candidates, once stale by it, are collected by their segment's pass, and the row at a later round's end
  for await (const page of deps.candidates.scanSessions()) {
    if (past()) return result;
    for (const s of page) named.add(s);
  }
  await collectGarbage(deps, { identities: expired.filter((i) => !named.has(i.name)), refusedIdentities: expiredRefused.filter((i) => !named.has(i.key.name) && !gone.has(i.key.name)) }, result, past);
  return result;
}

/**
 * Takes out of `named` each expired session row that only terms over on leases with no live
 * candidate name: such a lease with no election is never reconciled, so nothing ends its term, and
 * a dead holder's session row would be kept for ever. (Live candidates keep it: an election or a
 * follower's takeover ends the term, and the row gone would only make followers wait out their
 * fallback.) Each such lease is read with its candidates and its session (snapshot: an expired
 * row is named by few), its term judged as a whole pass judges a lease it could not reconcile
 * (leaderlessUnreconciled: vacant by the coordinator's judgement, its holder stopped, as when it
 * elects another); one judged off its named row counts as renewed now (effectiveLease), so it
 * keeps the row. The row goes only once expired itself, its delete conditioned on the row as
 * scanned: a session renewing is never collected. Nothing is written to the lease: its term is
 * then judged as on a row gone, over as before. A lease unread (a fault, noted; a row that does
 * not parse; none starts once `past()`) keeps its row: a crashed fleet's many leases are read over
 * as many rounds' ends as they take, the rows released at each collected then, and none read again.
 */
async function releaseOver(deps: CoordinatorDeps, named: Set<string>, expired: readonly IdentityLease[], held: readonly HeldSession[], result: Pick<ReconcileAllResult, 'errors'>, past: () => boolean): Promise<void> {
  const rows = new Set(expired.filter((i) => named.has(i.name)).map((i) => i.name));
  const on = held.filter((h) => h.holderIdentity !== undefined && rows.has(h.session!));
  const kept = new Set<string>();
  await mapLimit(on, deps.config.concurrency, async (h) => {
    if (past()) {
      kept.add(h.session!);
      return;
    }
    try {
      const snap = await snapshot(deps, h.name);
      const l = snap.read.item;
      const now = deps.clock.now();
      if (l?.session === h.session && (anyLive(deps, snap.candidates, now) || !leaderlessUnreconciled(deps, l, new Set(), () => snap.session, now))) kept.add(h.session!);
    } catch (e) {
      kept.add(h.session!);
      if (!(e instanceof BrokenLeaseError || e instanceof BrokenSessionError)) result.errors.push({ lease: h.name, error: asError(e) }); // (a row that does not parse: told by the passes)
    }
  });
  for (const s of rows) if (!kept.has(s)) named.delete(s);
}

/**
 * Reconciles `names`, leases held on a refused session row a round's end just deleted
 * (collectIdentities): their term is judged off the row it names, which one lease's reads, finding
 * the row gone, leave alone. Judged as a whole pass judges them: each lease read, then its
 * candidates, then every session row (one scan, after all those reads: every session a lease read
 * names existed before it, as in reconcileAll), so a term is judged by its holder's other sessions,
 * or by the lease's own stamp with none of its process left (sessionJudge). No read, scan page or
 * reconcile starts once `past()`: a lease not reached is judged by its part's pass in the next
 * round, which finds its term unvouched (reconcileAll). A lost race decides again on the lease's
 * own reads, which leave the term alone; a lease held meanwhile on another refused row is
 * unjudged, as in any pass.
 */
async function reconcileUnvouched(deps: CoordinatorDeps, names: readonly string[], result: Pick<ReconcileAllResult, 'outcomes' | 'errors' | 'unjudged' | 'leaderless'>, past: () => boolean, afterEach?: PassOptions['afterEach']): Promise<void> {
  const reads = await mapLimit(names, deps.config.concurrency, async (name) => {
    if (past()) return undefined;
    try {
      const read = await readLease(deps, name);
      return { name, read, list: await deps.candidates.list(name) };
    } catch (e) {
      result.errors.push({ lease: name, error: asError(e) });
      return undefined;
    }
  });
  if (!reads.some((r) => r)) return;
  // what these leases are judged by (identity-scan.ts)
  const scanned = await scanIdentities(deps, { leases: new Map(reads.flatMap((r) => (r ? [[r.name, r.read.item] as const] : []))), sessions: reads.flatMap((r) => r?.list.candidates.map((c) => c.session) ?? []) }, past);
  if (!scanned) return; // (judged on no part of the scan)
  const { badSessions } = scanned;
  const { sessions, sessionOf, refusedOwn } = sessionJudge(scanned.identities, scanned.readAt, scanned.refusedReads);
  await mapLimit(reads, deps.config.concurrency, async (r) => {
    if (!r || past()) return;
    const l = r.read.item;
    const candidates = vouchAll(r.list.candidates, sessions);
    let o: ReconcileOutcome;
    try {
      if (l?.holderIdentity !== undefined && l.session !== undefined && badSessions.has(l.session)) o = await reconcileLease(deps, r.name, undefined, TICK); // refused: told as unjudged
      else if (l !== undefined && refusedOwn(l)) {
        // a refused row that may be its holder's own session: told as unjudged too
        result.unjudged.push(unjudgedOn(deps, l, refusedOwn(l)!));
        return;
      } else {
        const session = sessionOf(l);
        o = await reconcileLease(deps, r.name, { read: r.read, candidates, invalid: r.list.invalid, ...(session ? { session } : {}) }, TICK);
      }
    } catch (e) {
      if (e instanceof BrokenSessionError && badSessions.has(e.term.session)) result.unjudged.push(e);
      else {
        result.errors.push({ lease: r.name, error: asError(e) });
        if (leaderlessUnreconciled(deps, l, badSessions, sessionOf, deps.clock.now())) result.leaderless.push(r.name);
      }
      return;
    }
    if (afterEach) await afterEach(o).catch((e: unknown) => result.errors.push({ lease: r.name, error: asError(e) }));
    result.outcomes.push(o);
    if (leaderlessAfter(deps, o, candidates, sessionOf, deps.clock.now())) result.leaderless.push(o.lease);
  });
}

/**
 * A candidate row the schema refuses (a foreign or older writer's), whose `renewTime` (and
 * `session`, if it names one) still parse: its key, and the stamp it is judged by (read again whole to delete it).
 */
interface RefusedCandidate {
  key: { leaseName: string; name: string };
  stamp: CandidateStamp;
}

/** A candidate as a pass keeps it: without its labels (up to 25 KB), which no decision reads (one that writes reads its candidates again). */
const unlabelled = ({ labels: _, ...c }: Candidate): Candidate => c;

/** Candidate rows the schema refuses a pass times and collects: the first this many it scans (the rest wait for a later pass; all are told). */
export const MAX_REFUSED_CANDIDATES = 1_000;

/** What a pass may collect: rows it judges by their stamps at collection time, none of them named by a held lease or a live candidate. */
interface Garbage {
  candidates?: Candidate[];
  refusedCandidates?: (RefusedCandidate & Pick<Candidate, 'renewTime'>)[];
  identities?: IdentityLease[];
  refusedIdentities?: RefusedIdentity[];
}

async function collectGarbage(deps: CoordinatorDeps, garbage: Garbage, result: Partial<Pick<ReconcileAllResult, 'collectedCandidates' | 'collectedIdentities' | 'errors'>>, past: () => boolean): Promise<void> {
  const now = deps.clock.now();
  const stale = (garbage.candidates ?? []).filter((c) => isCandidateStale(c, now, deps.config.candidateStaleAfterMs));
  const failed = (what: string) => (e: unknown) => result.errors?.push({ lease: what, error: asError(e) });
  await collect(deps, stale, past, (c) => deps.candidates.collect(CandidateStore.readOf(c), now), (c) => result.collectedCandidates?.push({ leaseName: c.leaseName, name: c.name }), (c) => failed(c.leaseName));
  // a refused row stale by its stamp: read again whole (the scan kept its key and stamp), and deleted if it still carries that stamp, as read
  const staleRefused = (garbage.refusedCandidates ?? []).filter((c) => isCandidateStale(c, now, deps.config.candidateStaleAfterMs));
  const collectStale = async (c: RefusedCandidate): Promise<boolean> => {
    const row = await deps.candidates.rowAt(c.key);
    const stamp = row && CandidateStamp.safeParse(row).data;
    return stamp?.renewTime === c.stamp.renewTime && stamp.session === c.stamp.session && deps.candidates.collectInvalid(c.key, row!);
  };
  await collect(deps, staleRefused, past, collectStale, (c) => result.collectedCandidates?.push(c.key), (c) => failed(c.key.leaseName));
  // A session row is collected like any identity lease (its leaseDurationSeconds covers the longest
  // lease held on it, so no lease can still be alive on it by then), once no held lease names it.
  // The stamp is its writer's clock, off by up to its own error or clockSkewMs: late rather than early (KEP-1965).
  const graceMs = identityGraceMs(deps.config);
  const expired = (garbage.identities ?? []).filter((i) => isIdentityExpired(i, now, graceMs));
  await collect(deps, expired, past, (i) => deps.identities.delete(IdentityStore.readOf(i)), (i) => result.collectedIdentities?.push({ component: i.component, name: i.name }), (i) => failed(`(identity lease ${i.component}/${i.name})`));
  // a refused row, by the stamp it still carries: read again whole (the scan kept its key and stamp), and deleted if still expired by it and as read
  const expiredRefused = (garbage.refusedIdentities ?? []).filter((i) => isIdentityExpired(i.stamp, now, graceMs));
  const collectRefused = async (i: RefusedIdentity): Promise<boolean> => {
    const row = await deps.identities.readRow(i.key.component, i.key.name);
    const stamp = row && stampOf(row, now, deps.config.clockSkewMs);
    return stamp !== undefined && isIdentityExpired(stamp, now, graceMs) && deps.identities.collectInvalid(i.key, row!);
  };
  await collect(deps, expiredRefused, past, collectRefused, (i) => result.collectedIdentities?.push(i.key), (i) => failed(`(identity lease ${i.key.component}/${i.key.name})`));
}

/**
 * Deletes each of `rows` (conditioned on the revision scanned), `concurrency` at a time, and notes
 * those deleted. A row renewed (or already gone) since the scan is a ConflictError (or `remove`
 * says false), or, on a multi-Region table, a ReplicatedWriteConflictException (another Region
 * wrote it at that moment): it is kept, a lost race and no failure; the next pass judges it again.
 * Any other failure (throttled, say) is noted for that row alone and the rest go on: the next pass
 * finds it again, and the tick still reports its gauges and moves its round on. None starts once
 * `past()`: the next pass finds the rest.
 */
async function collect<T>(deps: CoordinatorDeps, rows: T[], past: () => boolean, remove: (row: T) => Promise<boolean | void>, collected: (row: T) => void, failed: (row: T) => (e: unknown) => void): Promise<void> {
  await mapLimit(rows, deps.config.concurrency, async (row) => {
    if (past()) return;
    try {
      if ((await remove(row)) !== false) collected(row); // (false: changed since the scan, it lives on)
    } catch (e) {
      if (!(e instanceof ConflictError || isReplicatedWriteConflict(e))) failed(row)(e); // (a lost race: renewed since the scan, it lives on)
    }
  });
}

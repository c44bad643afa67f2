/**
 * What the functions do, apart from Lambda: each handler in functions/ parses its event and makes
 * one call in here. Local mode calls the very same handlers.
 */
import type { Logger } from '@aws-lambda-powertools/logger';
import { MetricUnit, type Metrics } from '@aws-lambda-powertools/metrics';
import { identityGraceMs } from '../coordinator/identity-scan.js';
import { BrokenLeaseError, reconcileLease, streamSawRow, type CoordinatorDeps, type ReconcileOutcome, type RefusedCandidateSeen, type RefusedSessionSeen } from '../coordinator/reconcile.js';
import { tick, type TickResult } from '../coordinator/tick.js';
import { answeredLastPing, deleteHoldMs, heldAfterDelete, unmarkedHoldMs, type DeletedTermSessions } from '../election/decide.js';
import { judgedOffNamed, judgingRow, leaseExpiresAt, marksTermEnded, type SessionStamp } from '../election/vacancy.js';
import { plan } from '../election/plan.js';
import { eventsFromCandidateChange, eventsFromLeaseChange } from '../events/derive.js';
import { PublishError } from '../events/publisher.js';
import { BrokenSessionError, ConflictError, EndedTermsFullError } from '../stores/errors.js';
import { LeaseStore, type LeaseRead } from '../stores/lease-store.js';
import { PER_LEASE_IN_FLIGHT, TooManyCandidatesError } from '../stores/candidate-store.js';
import { mapLimit } from '../util/pool.js';
import type { InvalidItem } from '../stores/item-store.js';
import type { ConclaveEvent } from '../events/schemas.js';
import type { Candidate } from '../schemas/candidate.js';
import * as z from 'zod';
import { LeaseItem, MAX_LEASE_DURATION_SECONDS, type Lease } from '../schemas/lease.js';
import type { DeadLetterSink } from './dead-letter.js';
import { MAX_WAKE_PROCESSES, WAKE_TIMEOUT_MS, WAKES_IN_FLIGHT, wakeBatch, type WakeBatch, type Waker } from './wake.js';
import { processOf, sessionKey, type IdentityLease } from '../schemas/identity.js';
import { ValidationError } from '../schemas/validation.js';
import { CHANGE_TIME_PRECISION_MS, type Change } from './records.js';
import { EVENTS_UNPUBLISHED, LEADERLESS_BOUND_MS, LEADERLESS_PAST_BOUND, METRIC, WAKES_NOT_SENT } from './metrics.js';
import { Chains } from './chains.js';

export { METRIC };
import { markAgainDelayMs, markAgainForMs, REPUBLISH_FOR_MS, republishDelayMs, type MarkEndedMessage, type RepublishMessage, type TermEndMessage, type TimerMessage, type TimerQueue } from './timer.js';
import { listVouched } from '../coordinator/vouched.js';

export interface FunctionDeps {
  coordinator: CoordinatorDeps;
  timer: TimerQueue;
  /** Publishes events; throws when some could not be published (they are then deferred to the timer queue). */
  publish(events: ConclaveEvent[]): Promise<void>;
  /** Takes a stream record no retry can read, with its content (an SQS queue in AWS, a file locally); throws when it could not. */
  deadLetter: DeadLetterSink;
  /**
   * The push path (lib/functions/wake.ts): tells the workers following a lease that it changed.
   * Absent when the deployment has none; a failure is logged, never thrown (a wake is a hint).
   */
  wake?: Waker;
  /**
   * This invocation's wakes, where its handler opened them (withWakes): a reconcile that wrote the
   * lease wakes its followers at once (afterReconcile), one stream hop before the lease stream's own
   * wake of that write. Absent without a push path.
   */
  wakes?: WakeBatch;
  /**
   * This invocation's publishing, where its handler opened it (withWakes): `outage` is set once a
   * publish meets an EventBridge outage (PublishError.outage), and the invocation's later events
   * are deferred to the timer queue without a call (tryPublish); `unsent` once a record's events
   * could be neither published nor deferred (publishEvents: held records publish none then,
   * publishHeldBack). Absent: every publish calls.
   */
  publishing?: { outage?: Error; unsent?: true };
  logger: Logger;
  metrics: Metrics;
}



/** Per-lease metrics carry the lease as a dimension (KEP: name="<component>"). */
type Unit = (typeof MetricUnit)[keyof typeof MetricUnit];
function leaseMetric(metrics: Metrics, lease: string, name: string, unit: Unit, value: number) {
  // One single-metric instance per Metrics, reused: it publishes at each addMetric and then clears
  // the dimension it was given (a new one per record read the environment and built a logger again)
  let single = singleMetrics.get(metrics);
  if (!single) {
    single = metrics.singleMetric();
    singleMetrics.set(metrics, single);
  }
  single.addDimension('lease', lease);
  single.addMetric(name, unit, value);
}
const singleMetrics = new WeakMap<Metrics, Metrics>();

/**
 * Refused rows a log line names, of a reconcile's, or of a tick's of each kind (candidate, identity,
 * other); the rest only counted. Each named whole, 999 refused candidate rows of one lease (a
 * worker may write them) made a 13.9 MB line of every reconcile of it, and 999 lines a tick.
 */
export const ROWS_LOGGED = 10;

/**
 * Logs, measures and follows up one reconcile: an opened election gets its deadline timer (so it
 * finishes even if the last ack never comes), and an early timer is put back.
 */
export async function afterReconcile(deps: FunctionDeps, o: ReconcileOutcome, trigger: string): Promise<void> {
  // the lease written: its followers read it now (an election's pings, its winner, a preemption), not a stream hop later
  if (o.after) deps.wakes?.send(o.lease, o.after.revision);
  const d = o.decision;
  const log = { lease: o.lease, trigger, decision: d.kind, attempts: o.attempts };
  // (the tick reports such rows itself: reportTick); how many, and the first ROWS_LOGGED
  if (o.invalidCandidates.length && trigger !== 'tick')
    deps.logger.warn('candidate rows that do not match the schema took no part', { ...log, refused: o.invalidCandidates.length, invalid: o.invalidCandidates.slice(0, ROWS_LOGGED).map((i) => ({ key: i.key, error: i.error.message })) });
  if (o.attempts > 1) deps.metrics.addMetric(METRIC.conflicts, MetricUnit.Count, o.attempts - 1);
  switch (d.kind) {
    case 'openElection':
    case 'awaitAcks': {
      // Past its deadline, an election waits only for the lease stream to see its created row
      // (awaitsStream): that record clears the wait and reconciles, and nothing a timer reads can
      // close it before, so no timer is set (one at the past deadline was redelivered at once, a
      // reconcile loop while the stream was behind; one per ack window still added a chain a tick).
      const dueMs = d.election.deadline - o.at;
      if (dueMs <= 0 && d.election.awaitsStream) break;
      // The election's chain is started once in this process, whatever the deadline (scheduleChain),
      // and no other: a landed timer sends its next link. Before, each tick's started a chain of its
      // own (an election held a day: one a tick); the first fix sent one only within 15 minutes of
      // the deadline, and a tick of 30 minutes closed an election whose deadline was 20 minutes off
      // at a tick 10 minutes late. The streams sent one at each reconcile: every candidate's ack or
      // renewal in an open election one more timer, all landing at the deadline.
      const e = d.election;
      const message = { lease: o.lease, electionId: e.id, deadline: e.deadline };
      await scheduleChain(deps, deadlineChains, o.lease, `${e.id}@${e.deadline}`, e.deadline, o.at, !trigger.startsWith(TIMER_TRIGGER), () => deps.timer.schedule(message, dueMs > 0 ? dueMs : deps.coordinator.config.ackWindowMs));
      break;
    }
    case 'elect':
      if (d.election) leaseMetric(deps.metrics, o.lease, METRIC.electionDuration, MetricUnit.Milliseconds, o.at - d.election.startedAt);
      if (d.skewPrevented) deps.metrics.addMetric(METRIC.skewPreventions, MetricUnit.Count, 1);
      break;
    case 'failElection':
      deps.metrics.addMetric(METRIC.failures, MetricUnit.Count, 1);
      break;
    case 'preempt':
      leaseMetric(deps.metrics, o.lease, METRIC.preemptions, MetricUnit.Count, 1);
      break;
    default:
      break;
  }
  // a holder silent for half its term: the lease is judged again when the term runs out (while an election is open, its timer does)
  if (o.recheckAt !== undefined && d.kind !== 'openElection' && d.kind !== 'awaitAcks') await scheduleTermEnd(deps, o.lease, o.recheckAt, o.at, trigger);
  if (d.kind === 'leaveAlone' || d.kind === 'awaitAcks') deps.logger.debug('reconciled', { ...log, ...('reason' in d ? { reason: d.reason } : {}) });
  else deps.logger.info('reconciled', { ...log, decision: d });
}

/**
 * The term-end timer of a lease whose holder looks silent (ReconcileOutcome.recheckAt): one chain
 * of messages a process, not one a trigger. SQS holds a message 15 minutes at most, so a term end
 * further off is reached by a chain (each message, landed, reconciles and sends the next: the
 * `term end` trigger). Before, every tick from half the term on started a chain of its own, and all
 * of them landed in the same second (a one-hour lease: 30 in flight; a four-hour one: 120). Now a
 * process that started a chain for a term end starts no other for it: its chain goes on by itself,
 * and the message sent is SQS's to deliver (a tick missed after it changes nothing; with a tick
 * longer than 15 minutes the first tick past half the term starts it). A landed message always
 * sends its next link. At most one chain per process that saw the silent holder (the tick's, a
 * stream function's), however long the lease; a process that starts afresh (a cold start) has
 * started none: at worst one more chain, never none.
 */
async function scheduleTermEnd(deps: FunctionDeps, lease: string, termEnd: number, at: number, trigger: string): Promise<void> {
  await scheduleChain(deps, termEndChains, lease, String(termEnd), termEnd, at, trigger !== TERM_END_TRIGGER, () => deps.timer.schedule({ lease, termEnd }, termEnd - at));
}

/**
 * Sends the first message of a chain to `due` (a term end, an election's deadline; `key` names
 * which), or its next link, unless `reuse` and this process already started a chain for `key` and
 * `due` is still ahead: that chain goes on by itself (each message, landed, reconciles and sends
 * the next), and the message sent is SQS's to deliver. Past `due`, it always sends.
 */
async function scheduleChain(deps: FunctionDeps, chains: WeakMap<TimerQueue, Chains>, lease: string, key: string, due: number, at: number, reuse: boolean, send: () => Promise<void>): Promise<void> {
  let started = chains.get(deps.timer);
  if (!started) chains.set(deps.timer, (started = new Chains()));
  if (reuse && started.get(lease)?.key === key && at < due) return;
  await send();
  // only chains whose time is still ahead are kept (a whole fleet's, when every holder goes silent:
  // the soonest first, so this looks at those due by now, not every one)
  started.dropDue(at);
  started.set(lease, key, due);
}
/**
 * The chains each timer queue was given by this process, by lease: term ends, and elections' deadlines
 * (apart: a re-election opened and cancelled does not make the tick start the term end's again).
 */
const termEndChains = new WeakMap<TimerQueue, Chains>();
const deadlineChains = new WeakMap<TimerQueue, Chains>();
/** The trigger of a reconcile a landed term-end message made (onTimer). */
const TERM_END_TRIGGER = 'term end';
/** The trigger of a reconcile a landed election timer made (onTimer), before the election's id. */
const TIMER_TRIGGER = 'timer ';

/** How a broken lease is logged: what the schema refused, and where the repair is explained. */
const brokenLog = (b: BrokenLeaseError) => ({ lease: b.lease, issues: b.error.issues, repair: `conclave describe lease ${b.lease}` });

/**
 * One reconcile for a trigger. A broken lease is logged and left alone, not thrown: no retry can
 * mend the row, and the tick counts and alarms on it until an operator repairs it. Every trigger
 * may come before the stream reaches a delete (DecideTrigger), so a row it creates waits for the
 * stream: the tick, a candidate, a timer, the lease stream handling a record with a new image
 * (seed 5704226), and the lease stream handling a REMOVE too, since the delete it handles may not
 * be the latest: the row may be missing by a later delete the stream has not reached yet (a record
 * delivered again, or a stream running behind).
 */
async function reconcile(deps: FunctionDeps, lease: string, trigger: string): Promise<ReconcileOutcome | undefined> {
  let o: ReconcileOutcome;
  try {
    o = await reconcileLease(deps.coordinator, lease, undefined, { streamBehind: true });
  } catch (e) {
    // (over the cap: not thrown either, or the record would be retried for hours, holding its shard's other leases behind it)
    // (its message names the lease, the rows seen and the fix)
    if (e instanceof TooManyCandidatesError) return void deps.logger.error(e.message, { trigger });
    if (!(e instanceof BrokenLeaseError)) throw e;
    deps.logger.error('lease row does not match the schema; left alone until repaired', { ...brokenLog(e), trigger });
    return undefined;
  }
  await afterReconcile(deps, o, trigger);
  return o;
}

/**
 * The reconcile after an operator deleted the row while it was held (`deleted`, the old image):
 * the row is created with an election that closes no earlier than the deleted term could still be
 * acted on (heldAfterDelete), instead of electing at once — the holder hears of the end only at
 * its next renewal, up to its renew deadline away; a term no session can hold, only until its own
 * stamp runs out (deleteHoldMs, on the named session row read now). The write is conditioned on the row still
 * being absent: if it came back meanwhile (the tick, a worker's own take, this record retried), the
 * lease is reconciled as it is. `read`: a vacant row, held as well (holdUnmarked), in place of none.
 */
async function reconcileAfterDelete(deps: FunctionDeps, deleted: HeldTerm, trigger: string, marked = true, read = LeaseStore.readOf(deleted.name, undefined)): Promise<ReconcileOutcome | undefined> {
  const co = deps.coordinator;
  const named = await namedSessionAfterDelete(deps, deleted);
  let list;
  try {
    list = await listVouched(co, deleted.name);
  } catch (e) {
    // over the cap: left alone as reconcile() leaves it (thrown, the record would hold its shard for hours)
    if (!(e instanceof TooManyCandidatesError)) throw e;
    return void deps.logger.error(e.message, { trigger });
  }
  const now = co.clock.now();
  // a term no session can hold: held only until its own stamp runs out; one whose holder names a
  // process, until its process's session rows show it over (deleteHoldMs); unread, the whole hold
  const holdMs = named === UNREAD ? (marked ? deleted.leaseDurationSeconds * 1000 : unmarkedHoldMs(deleted.leaseDurationSeconds)) : 'judged' in named ? deleteHoldMs(deleted, undefined, now, co.config, marked, named) : deleteHoldMs(deleted, named.stamp, now, co.config, marked);
  const decision = heldAfterDelete(deleted.name, deleted, list.candidates, now, co.config, holdMs, read.item);
  if (decision.kind !== 'openElection') return marked ? reconcile(deps, deleted.name, trigger) : undefined; // nobody to elect: as any missing row (before the mark: nothing yet)
  const writes = plan(decision, undefined, now, co.config);
  // the row made again remembers the deleted term's holder, as a release leaves it: the next
  // leader's Leader Changed names it (lib/events/derive.ts), as after any other end of a term
  const created = { ...writes.lease!, set: { ...writes.lease!.set, lastHolderIdentity: deleted.holderIdentity } };
  const outcome: ReconcileOutcome = { lease: deleted.name, decision, before: read.item, after: undefined, pinged: [], invalidCandidates: list.invalid, attempts: 1, at: now };
  if (writes.ping.length) {
    const done = await mapLimit(writes.ping, PER_LEASE_IN_FLIGHT, (c) => co.candidates.ping(deleted.name, c, writes.pingTime!));
    outcome.pinged = writes.ping.filter((_, i) => done[i]);
  }
  try {
    // a vacant row (holdUnmarked): the election alone, its successors unnamed (a successor takes a vacant row at once)
    outcome.after = await co.leases.write(read, read.item ? { set: { election: decision.election }, remove: SUCCESSOR_FIELDS } : created);
  } catch (e) {
    if (!(e instanceof ConflictError)) throw e;
    // the row as it is now: only an election this delete may still precede is held for it (heldForDelete)
    const held = await holdOpenElection(deps, deleted.name, decision.election.notBefore!, trigger, false, read.item ? undefined : heldForDelete(deleted), read.item ? undefined : deleted.holderIdentity);
    return held ?? (marked ? reconcile(deps, deleted.name, trigger) : undefined);
  }
  await afterReconcile(deps, outcome, trigger);
  return outcome;
}

/**
 * Whether the delete of held term `deleted` may hold the election open on the lease's row as it is
 * now, or cut its hold: one that awaits the lease stream (the row came back before the stream saw
 * the delete, and the stream has not yet reached its creation, which comes after the delete), or
 * the hold this delete's own handling wrote (the row it created: no term on it yet, the deleted
 * term's holder as departed; holdOpenElection only cuts it). Any other election was opened after the
 * stream had passed the delete: its record delivered again, long after (a stream re-read from an
 * older point: local mode without its checkpoints, an event source mapping recreated at
 * TRIM_HORIZON), it held an ordinary election for a term long over, or cut the hold of a later term
 * whose holder may not have heard yet.
 */
const heldForDelete =
  (deleted: HeldTerm) =>
  (row: Lease): boolean =>
    row.election?.awaitsStream === true || (row.election?.notBefore !== undefined && row.leaseTransitions === 0 && row.election.departed === deleted.holderIdentity);

/**
 * Whether the end of the term with fencing token `token` may cut the hold of the election open on
 * the lease's row as it is now: only while the row is still at that token. An ended term leaves its
 * token on the row until the next one is elected (an election raises it; a row created again takes
 * a higher one), so a hold on a row at another token is for another term (a later one whose end is
 * not yet marked, a deleted row's): the record of an older end, delivered again long after, cut it.
 */
const heldForTerm =
  (token: number) =>
  (row: Lease): boolean =>
    row.fencingToken === token;

/** The named session row was not read, or could not be judged by: the deleted term's whole hold. */
const UNREAD = Symbol('unread');

/**
 * The session rows a deleted term is judged by (deleteHoldMs): read consistently, after the lease
 * stream saw the delete (so after the delete; for the pass after the mark, after the mark), and only
 * where they decide anything: a term with a stamp that names a session. Its holder on no session
 * (its instance names no process): the row named (`stamp`; undefined: none there, or none named).
 * Its holder on a process: the row named and, where that is not the process's own (judgedOffNamed),
 * the process's session rows (IdentityStore.processSessions' partitions), as judgingRow picks among
 * them (DeletedTermSessions). A lease that named no session: no row (`stamp` undefined), its own
 * stamp decides, whoever holds it. UNREAD: not judged by a row (no stamp, a row the schema refuses
 * — the named one, or one in the process's partitions that may be its own (mayBeProcessSession):
 * no term is judged by what does not parse — or a read that failed: the whole hold is sound without it, so a fault of the identities table
 * neither fails the record before the hold is written nor shortens it).
 */
async function namedSessionAfterDelete(deps: FunctionDeps, deleted: HeldTerm): Promise<{ readonly stamp: SessionStamp | undefined } | DeletedTermSessions | typeof UNREAD> {
  if (deleted.renewTime === undefined) return UNREAD;
  const process = processOf(deleted.holderInstance);
  // no session named, whoever holds it: by its own stamp, as the tick judges the standing row (deletedTermOverAt)
  if (deleted.session === undefined) return { stamp: undefined };
  const key = sessionKey(deleted.session);
  const identities = deps.coordinator.identities;
  // the reads go out from here on: a renewal that lands later is judged by deletedSessionTermOverAt
  const readAt = deps.coordinator.clock.now();
  try {
    const row = (await identities.read(key.component, key.name)).item;
    if (process === undefined) return { stamp: row && { name: row.name, renewTime: row.renewTime, process: row.process } };
    let own: IdentityLease[] = [];
    if (judgedOffNamed(deleted, row)) {
      const read = await identities.processSessions(deleted.session, process);
      // a row the schema refuses that may be the process's own, renewed: not judged without it (the tick, the CLI and getLeader judge it by nobody)
      if (read.refused.length > 0) return UNREAD;
      own = read.rows;
    }
    const judged = judgingRow(deleted, row, () => own);
    return { judged, endMarked: marksTermEnded(row?.endedTerms, deleted), readAt };
  } catch (e) {
    deps.logger.warn('the session rows a deleted term is judged by could not be read: the next election held a whole lease duration', { lease: deleted.name, session: deleted.session, error: e as Error });
    return UNREAD;
  }
}

/** A held row's successors, unnamed: a successor takes a vacant row at once, hold or not (decideFollower). */
const SUCCESSOR_FIELDS = ['successor', 'successorInstance', 'secondSuccessor', 'secondSuccessorInstance'] as const;

/**
 * The row came back before the lease stream saw the delete (after an outage, the tick or the
 * candidate stream reconciled the missing row first), or this function held it before marking the
 * term ended, and carries an election that no leader has come of yet: it is held until `notBefore`
 * (its deadline then, or the ack window's end if later), so it elects nobody while the deleted term
 * may still be acted on. A hold that ends earlier already is kept (a retry never pushes it later);
 * a longer one, the unmarked hold, is cut to `notBefore` once the mark is written. Its successors
 * are unnamed (an election opened on a released row still names them). Undefined when
 * there is no such election (a leader already elected cannot be taken back: CHANGELOG.md, "Seeds
 * 1448349301 and 1368225001: an operator's delete of a held row"), when it is held no longer
 * already, when `may` (the record's judge of the row as it is now) refuses it, when the row
 * changed meanwhile, or when the schema refuses the row (readToHold).
 *
 * `departed`: the holder of the deleted term this hold is for, from a delete's handling. A row that
 * awaits the lease stream was created after every record the stream reaches before that row's own,
 * this delete's included, so a hold on it for another term (its `departed` another holder, or none: an earlier
 * delete's, handled late or delivered again, which created the row or held it) may end before this
 * later term's: it is pushed out to this one's. The held election on such a row names this holder
 * as departed, so this delete's own passes and retries then only cut it.
 */
async function holdOpenElection(deps: FunctionDeps, lease: string, notBefore: number, trigger: string, cutOnly = false, may?: (row: Lease) => boolean, departed?: string): Promise<ReconcileOutcome | undefined> {
  const co = deps.coordinator;
  const read = await readToHold(deps, lease, trigger);
  if (!read) return undefined;
  const e = read.item?.election;
  const awaiting = departed !== undefined && e?.awaitsStream === true;
  const later = awaiting && e.notBefore !== undefined && e.departed !== departed;
  // one already held as briefly (this record delivered again) keeps its bound: a retry does not push it later
  if (!e || read.item!.holderIdentity !== undefined || (!later && e.notBefore !== undefined && e.notBefore <= notBefore) || (cutOnly && e.notBefore === undefined) || (may && !may(read.item!))) return undefined;
  const until = later ? Math.max(e.notBefore!, notBefore) : notBefore;
  const held = { notBefore: until, deadline: Math.max(e.notBefore === undefined ? e.deadline : e.startedAt + co.config.ackWindowMs, until), ...(awaiting ? { departed } : {}) };
  const election = { ...e, ...held };
  let after;
  try {
    // its successors unnamed too: an election opened on a released row (the tick first) still names them;
    // the deleted term's holder kept as the last holder, as the row made by the stream's own reconcile
    // keeps it: the next leader's Leader Elected names it as previousHolder, with a Leader Changed
    const last = awaiting && read.item!.lastHolderIdentity === undefined ? { lastHolderIdentity: departed } : {};
    // only the election's keys the hold changes, each by its path: a key a newer coordinator put in
    // the election, which this reader's schema dropped (as `notBefore` and `awaitsStream` were once:
    // waits safety rests on), stays as stored
    after = await co.leases.write(read, { set: last, remove: [...SUCCESSOR_FIELDS], within: { election: held } });
  } catch (x) {
    if (x instanceof ConflictError) return undefined;
    throw x;
  }
  const now = co.clock.now();
  const outcome: ReconcileOutcome = { lease, decision: { kind: 'awaitAcks', strategy: e.strategy, election, pending: [] }, before: read.item, after, pinged: [], invalidCandidates: [], attempts: 1, at: now };
  deps.logger.info('an election opened before the delete was seen is held for the deleted term', { lease, electionId: e.id, notBefore: until });
  await afterReconcile(deps, outcome, trigger);
  return outcome;
}

/**
 * The lease's row, for a hold; undefined where the schema refuses it: logged and left alone, as
 * reconcile() leaves a broken row (no retry mends it). Thrown, a valid record whose row was
 * overwritten broken after it was dead-lettered as poison, its mark and events done already.
 */
async function readToHold(deps: FunctionDeps, lease: string, trigger: string): Promise<LeaseRead | undefined> {
  try {
    return await deps.coordinator.leases.read(lease);
  } catch (e) {
    if (!(e instanceof ValidationError)) throw e;
    deps.logger.error('lease row does not match the schema: no election held on it; left alone until repaired', { ...brokenLog(new BrokenLeaseError(lease, e)), trigger });
    return undefined;
  }
}

/** Whether a lease record is an operator's delete of a held row. */
const deletedWhileHeld = (c: Change<Lease>): boolean => c.new === undefined && c.old?.holderIdentity !== undefined;

/**
 * How much later than a record's `at` its change may have happened where DynamoDB Local made it: it
 * rounds a record's time down to the minute, and local mode corrects that only for a record it
 * reads within that minute (lib/local/stream-poller.ts creationSeconds).
 */
const LOCAL_CHANGE_TIME_PRECISION_MS = 60_000;

/**
 * Whether a held row's delete (`c`) happened so long ago that its term is over whatever became of
 * its mark and its hold: its holder has stopped at its own read of the lease, which finds the row
 * gone or in another term within unmarkedHoldMs of the delete, mark or not. Such a record is one
 * delivered again long after it was handled (a stream re-read from an older point: local mode
 * without its checkpoints, an event source mapping recreated at TRIM_HORIZON), or very late: it
 * justifies no hold and no mark, and a row it finds missing may be missing by a later delete the
 * stream has not reached yet, whose term may still be led. The record's time is DynamoDB's, rounded
 * down (LOCAL_CHANGE_TIME_PRECISION_MS); the function's clock is within clockSkewMs. A record
 * without a time is never judged so.
 */
function deleteLongOver(deps: FunctionDeps, c: Change<Lease>): boolean {
  if (c.at === undefined || !deletedWhileHeld(c)) return false;
  const co = deps.coordinator;
  return co.clock.now() > c.at + LOCAL_CHANGE_TIME_PRECISION_MS + unmarkedHoldMs(c.old!.leaseDurationSeconds) + co.config.clockSkewMs;
}

const changed = (a: unknown, b: unknown) => JSON.stringify(a) !== JSON.stringify(b);

/**
 * Whether a candidate change matters to an election: it joined, left, changed what ranks it
 * (versions, priority, strategies), acknowledged a ping, or stood down or stood again (its
 * standsDownUntil marked, moved or taken off: decide.ts standingDown). A plain periodic renewal does not.
 */
export function candidateChangeMatters(c: Change<Candidate>): boolean {
  if (!c.old || !c.new) return true;
  const o = c.old;
  const n = c.new;
  if (o.identity !== n.identity) return true; // a new start-up registered: it may be the best again
  // marked: passed over from now (a successor named anew, an election's wait for it over); taken off (its renewal's turn): it stands again now, not at the next tick
  if (o.standsDownUntil !== n.standsDownUntil) return true;
  if (changed([o.emulationVersion, o.binaryVersion, o.priority, o.priorityExpiresAt, o.preferredStrategies], [n.emulationVersion, n.binaryVersion, n.priority, n.priorityExpiresAt, n.preferredStrategies])) return true;
  // answered the ping now, not before (decide.ts: the copy of the ping DynamoDB made, not the worker's clock)
  return n.pingTime !== undefined && answeredLastPing(n) && !answeredLastPing({ ...o, pingTime: n.pingTime });
}

/**
 * Whether a lease change calls for a reconcile: released, reported vacant, its strategy or preferred
 * locations changed (an operator's `set-strategy`, `set-locations`), or a term a worker took itself (as successor, or by the fallback): that term needs its own
 * successor named, and a better candidate may be waiting.
 */
export function leaseChangeMatters(c: Change<Lease>): boolean {
  const o = c.old;
  const n = c.new;
  if (!n) return o?.holderIdentity !== undefined; // deleted while held (an operator's delete): an election now (held until the deleted term is over: reconcileAfterDelete), not at the next tick (a minute away); deleted vacant: the tick creates it again
  if (!o) return n.holderIdentity === undefined || takenDirectly(n); // created without a holder (an operator's strategy), or by a worker
  if (o.holderIdentity !== undefined && n.holderIdentity === undefined && !n.election) return true; // released
  if (!o.vacancyReport && n.vacancyReport) return true;
  if (n.fencingToken !== o.fencingToken && takenDirectly(n)) return true;
  return o.strategy !== n.strategy || changed(o.preferredLocations, n.preferredLocations);
}

const takenDirectly = (l: Lease): boolean => l.holderIdentity !== undefined && l.electedBy !== undefined && l.electedBy !== 'coordinator';

/**
 * What a held lease's delete must still act on: its name, holder, term and lease duration (and its
 * last stamp, `renewTime`, where known: deleteHoldMs). `holderUnreadable`: a broken row's term whose
 * holder's name does not parse (holderIdentity then absent), held as its session and token show.
 */
type HeldTerm = Pick<Lease, 'name' | 'holderIdentity' | 'leaseDurationSeconds'> & Partial<Pick<Lease, 'holderInstance' | 'session' | 'fencingToken' | 'termToken' | 'renewTime'>> & { readonly holderUnreadable?: true; readonly instanceUnreadable?: true };

/**
 * A broken row's held term, read attribute by attribute: a row an operator wrote malformed can
 * still be held, and its repair or delete must end that term as any held row's end does. A lease
 * duration that cannot be read counts as the longest the schema allows (the held election then
 * waits that long: slow, never early); a session or token that cannot be read leaves the term
 * unmarked (its holder then hears at its own read, within its renew deadline of the row being gone
 * or another's). The holder's name itself may be what is broken (`holderUnreadable`): the row is
 * held all the same (a holder is there, whoever it is), and the term's session and token
 * (fencingToken, else its copy termToken) are all its mark needs. Before, such a row's repair or
 * delete left the term unmarked and the next election unheld: a holder on a session led on until
 * its backstop read of the lease.
 */
const BrokenHeldRow = z.object({
  name: LeaseItem.shape.name,
  holderIdentity: LeaseItem.shape.holderIdentity.catch(undefined),
  leaseDurationSeconds: LeaseItem.shape.leaseDurationSeconds.catch(MAX_LEASE_DURATION_SECONDS),
  holderInstance: LeaseItem.shape.holderInstance.catch(undefined),
  session: LeaseItem.shape.session.catch(undefined),
  fencingToken: LeaseItem.shape.fencingToken.optional().catch(undefined),
  termToken: LeaseItem.shape.termToken.catch(undefined),
});
function heldTermOfBrokenRow(attributes: Record<string, unknown> | undefined): HeldTerm | undefined {
  const r = BrokenHeldRow.safeParse(attributes);
  if (!r.success) return undefined;
  const { holderIdentity, holderInstance, session, fencingToken, termToken, ...term } = r.data;
  // (a holder attribute there but not a name: held by someone; none there, the row was vacant)
  if (holderIdentity === undefined && attributes?.['holderIdentity'] === undefined) return undefined;
  const token = fencingToken ?? termToken;
  return {
    ...term,
    ...(holderIdentity !== undefined ? { holderIdentity } : { holderUnreadable: true as const }),
    // one there but unreadable is no evidence of another start-up: left out of the same-term judgement (endedSessionTerm)
    ...(holderInstance !== undefined ? { holderInstance } : attributes?.['holderInstance'] !== undefined ? { instanceUnreadable: true as const } : {}),
    ...(session !== undefined ? { session } : {}),
    ...(token !== undefined ? { fencingToken: token } : {}),
  };
}

/** A held row deleted while it was broken: its term is ended on its session and the next election held, as for any held row's delete. */
async function afterBrokenHeldRowDeleted(deps: FunctionDeps, held: HeldTerm): Promise<ReconcileOutcome | undefined> {
  deps.logger.warn("a broken row deleted while held: its term ended as any held row's", { lease: held.name, holder: held.holderIdentity ?? '(unreadable)', session: held.session });
  await reconcileAfterDelete(deps, held, 'lease REMOVE (was broken, held; before the mark)', false);
  const unmarked = await markOrDefer(deps, { old: held, new: undefined }, true);
  if (unmarked === 'deferred') return undefined;
  const o = await reconcileAfterDelete(deps, held, 'lease REMOVE (was broken, held)');
  if (unmarked) throw unmarked;
  return o;
}

/**
 * A held row rewritten valid while it was broken (an operator's repair, `conclave describe lease`'s
 * in-place fix) in another term or none (the holder's name removed): its term is ended on its
 * session as a valid row's end is (markOrDefer: the next election held while the mark cannot be
 * written), then the lease reconciled. No events: what changed is unknown. Before, the repair was
 * reconciled as any broken row's change: an election at once, the successor free to take the
 * vacant row, and the old holder, never told, leading on until its backstop read.
 */
async function afterBrokenHeldRowRepaired(deps: FunctionDeps, held: HeldTerm, repaired: Lease): Promise<ReconcileOutcome | undefined> {
  deps.logger.warn("a broken row repaired in another term: its term ended as any held row's", { lease: held.name, holder: held.holderIdentity ?? '(unreadable)', session: held.session, fencingToken: held.fencingToken });
  const unmarked = await markOrDefer(deps, { old: held, new: repaired }, false);
  if (unmarked === 'deferred') return undefined;
  const o = await reconcile(deps, held.name, 'lease MODIFY (was broken, held)');
  if (unmarked) throw unmarked;
  return o;
}

/**
 * A change to a row whose old image was broken: what changed is unknown, so no events; a row
 * rewritten valid (an operator's repair) is reconciled, a deleted one needs nothing.
 */
async function afterBrokenRow(deps: FunctionDeps, c: Change<Lease> | Change<Candidate>, lease: string | undefined, trigger: string): Promise<ReconcileOutcome | undefined> {
  deps.logger.warn('change to a row that did not match the schema: no events', { eventName: c.eventName, old: c.oldInvalid?.issues, repaired: c.new !== undefined });
  return c.new && lease ? reconcile(deps, lease, trigger) : undefined;
}

/**
 * Publishes `events`, unless this invocation met an EventBridge outage already (FunctionDeps
 * `publishing`): then none is sent. What was not published is returned, with why; undefined when
 * all were. A publish waits at most PUBLISH_WITHIN_MS (lib/events/publisher.ts), and an invocation
 * waits so for one publish only: before, each record of a batch waited its own 18.6 s on an
 * EventBridge that never answered, about 3 records a minute, and every session mark, wake and
 * reconcile behind them waited too.
 */
async function tryPublish(deps: FunctionDeps, events: ConclaveEvent[]): Promise<{ left: ConclaveEvent[]; error: Error; called: boolean } | undefined> {
  const scope = deps.publishing;
  if (scope?.outage) return { left: events, error: scope.outage, called: false };
  try {
    await deps.publish(events);
    return undefined;
  } catch (e) {
    // (unknown: counted as an outage, as all its events are counted unpublished)
    if (scope && !(e instanceof PublishError && !e.outage)) scope.outage = e as Error;
    return { left: e instanceof PublishError ? e.failed.map((f) => f.event) : events, error: e as Error, called: true }; // unknown: all, again (consumers drop repeats by id)
  }
}

/**
 * Publishes a record's events; when EventBridge fails, the events that did not get through are put
 * on the timer queue to be published again later (same ids), and the record counts as handled: an
 * outage neither holds up its shard (one bounded publish an invocation: tryPublish) nor runs out
 * the stream's retries. Only if that send fails too does this throw, and the record is retried.
 */
async function publishOrDefer(deps: FunctionDeps, events: ConclaveEvent[]): Promise<void> {
  const unpublished = await tryPublish(deps, events);
  if (!unpublished) return;
  const { left, error, called } = unpublished;
  await deps.timer.schedule({ republish: left, since: deps.coordinator.clock.now(), attempt: 1 }, republishDelayMs(1));
  // deferred now: unpublished for 0 ms (a refusal that lasts shows in the republishes' ages: onRepublish)
  deps.metrics.addMetric(EVENTS_UNPUBLISHED, MetricUnit.Milliseconds, 0);
  // (`called` false: not sent, an outage met earlier in this invocation)
  deps.logger.warn('events not published; deferred to the timer queue', { error, ids: left.map((x) => x.detail.id), called });
}

/** How many event ids an instance remembers having published (publishedIds): about 150 KB at most. */
const PUBLISHED_IDS_KEPT = 1_024;

const publishedIdsOf = new WeakMap<object, Set<string>>();

/**
 * The ids of the events this Lambda instance published or deferred (publishOrDefer), the latest
 * PUBLISHED_IDS_KEPT, oldest first; one set per publisher (`of`), which an instance builds once with its
 * deps (depsFromEnv). A record retried on the instance that published its events publishes none of
 * them again. Memory, not a durable mark: a retry on another instance (a cold start, the shard's
 * work moved to another) publishes them again, with the same ids. A durable mark could not do
 * better: a conditional write beside PutEvents is never atomic with it (marked first, an event
 * lost where the publish then fails; published first, published again where the mark fails), and
 * the faults that fail a record's work (DynamoDB throttled, unreachable) are the ones that fail the
 * mark. Given the instance's metrics as `of`: the ids of the events of the deliveries that ended
 * their records, whose Leader Changed it counted (METRIC.leaderChanges), kept alike.
 */
function publishedIds(of: FunctionDeps['publish'] | FunctionDeps['metrics']): Set<string> {
  let ids = publishedIdsOf.get(of);
  if (!ids) publishedIdsOf.set(of, (ids = new Set()));
  return ids;
}

/** Events not yet published by this instance (publishedIds); each one asked about is remembered as the newest again. */
function unpublished(ids: Set<string>, events: ConclaveEvent[]): ConclaveEvent[] {
  return events.filter((e) => {
    const seen = ids.delete(e.detail.id);
    if (seen) ids.add(e.detail.id); // a record failing for long stays remembered while other records come and go
    return !seen;
  });
}

function rememberPublished(ids: Set<string>, events: ConclaveEvent[]): void {
  for (const e of events) ids.add(e.detail.id);
  for (const id of ids) {
    if (ids.size <= PUBLISHED_IDS_KEPT) break;
    ids.delete(id);
  }
}

/**
 * A record's events, published or deferred (publishOrDefer) unless this instance did already
 * (publishedIds); `last`: by the delivery that ends the record, which counts its Leader Changed. One
 * that can be neither published nor deferred throws, and marks the invocation `unsent`
 * (FunctionDeps `publishing`).
 */
async function publishEvents(deps: FunctionDeps, events: ConclaveEvent[], last: boolean): Promise<void> {
  // counted by the delivery that ends the record (done, or poison), not by one it is retried after
  // (a record with no events: two lookups of nothing, left without an early return for the lease stream's bundle budget)
  const ids = publishedIds(deps.publish);
  const fresh = unpublished(ids, events);
  if (fresh.length) {
    try {
      await publishOrDefer(deps, fresh);
    } catch (e) {
      if (deps.publishing) deps.publishing.unsent = true;
      throw e;
    }
    rememberPublished(ids, fresh);
  }
  if (!last) return;
  const counted = publishedIds(deps.metrics);
  const once = unpublished(counted, events);
  rememberPublished(counted, once);
  for (const e of once) if (e.detailType === 'Leader Changed') leaseMetric(deps.metrics, e.detail.lease, METRIC.leaderChanges, MetricUnit.Count, 1);
}

/**
 * A stream record held behind a failed record of its row (streamBatchHandler): its events are
 * published now, with the ids its own run derives (publishedIds: that run publishes none of them
 * again on this instance; on another, the same ids), while its work waits for the redelivery. Before,
 * they waited with it: the candidate stream's source gives a batch up after 3 retries, and a row's
 * changes behind a record failing through them (a second Candidate Joined, a Candidate Expired) were
 * never published. A row's events so go out in its records' order: the failed record published its
 * own before it failed (reconcileThenPublish), and its held records follow in order. Not once this
 * invocation met a publish it could neither publish nor defer (`unsent`: a failed record's events,
 * maybe): its held records' events then wait for their redelivery too, not to go out before the
 * earlier ones. Never counts a Leader Changed (the delivery that ends the record does). Throws when
 * they could be neither published nor deferred: the stream handler logs it, and the record's run
 * publishes them.
 */
async function publishHeldBack(deps: FunctionDeps, events: ConclaveEvent[]): Promise<undefined> {
  if (!deps.publishing?.unsent) await publishEvents(deps, events, false);
  return undefined;
}

/**
 * Stream records: the record's work (its reconcile) first, then its events: an election must not
 * wait for EventBridge. The events are facts of the change the record carries, whatever becomes of
 * its work, so a record whose work fails publishes them (or defers them) before it rethrows: a
 * ValidationError (poison: the record is dead-lettered and never comes again), and any fault too,
 * since a record that fails through the event source's retries is given up with only its shard
 * position sent on (infra/triggers.ts): its events, published only once the work succeeded, were
 * lost with it. Its retries (the lease stream's come without bound, for up to 12 h) publish none of
 * them again on the instance that published them (publishedIds); on another, they do, with the
 * same ids. A failing record's retry waits for EventBridge only after its first failure on an
 * instance, and only as long as publishOrDefer does. A Leader Changed is counted (METRIC.leaderChanges) once per
 * change: by the delivery that succeeds or dead-letters the record, not by each one before it that
 * failed, and once by an instance however often the record succeeds there (publishedIds): a record
 * behind another row's failing one runs again on each of the batch's retries (streamBatchHandler).
 * A record given up after its retries is not counted; one retried on another instance is counted there again.
 */
async function reconcileThenPublish(deps: FunctionDeps, events: ConclaveEvent[], run: () => Promise<ReconcileOutcome | undefined>): Promise<ReconcileOutcome | undefined> {
  const publish = (last: boolean) => publishEvents(deps, events, last);
  let o: ReconcileOutcome | undefined;
  try {
    o = await run();
  } catch (e) {
    try {
      await publish(e instanceof ValidationError);
    } catch (p) {
      // neither published nor deferred: the record is retried for both (the publish error is what it reports)
      deps.logger.error('record failed, and its events could not be published or deferred either', { error: e as Error });
      throw p;
    }
    throw e;
  }
  await publish(true);
  return o;
}

/** A candidate record's events (none for a change to a row the schema refused: afterBrokenRow). */
function candidateChangeEvents(deps: FunctionDeps, c: Change<Candidate>): ConclaveEvent[] {
  if (c.oldInvalid) return [];
  // the record's time is rounded down to the second: a row deleted within the second it turned stale still expired
  const at = c.at === undefined ? { at: deps.coordinator.clock.now() } : { at: c.at, atPrecisionMs: CHANGE_TIME_PRECISION_MS };
  return eventsFromCandidateChange({ eventID: c.eventID, ...at, oldCandidate: c.old, newCandidate: c.new, staleAfterMs: deps.coordinator.config.candidateStaleAfterMs });
}

export async function onCandidateChange(deps: FunctionDeps, c: Change<Candidate>): Promise<ReconcileOutcome | undefined> {
  if (c.held) return publishHeldBack(deps, candidateChangeEvents(deps, c));
  if (c.oldInvalid) return afterBrokenRow(deps, c, c.new?.leaseName, `candidate ${c.eventName} (was broken)`);
  const row = c.new ?? c.old!;
  return reconcileThenPublish(deps, candidateChangeEvents(deps, c), async () => (candidateChangeMatters(c) ? reconcile(deps, row.leaseName, `candidate ${c.eventName}`) : undefined));
}

/** What an invocation keeps of the Lambda's remaining time when it waits for its wakes: returning in time matters more. */
export const WAKES_SETTLE_MARGIN_MS = 1_000;

/**
 * One invocation's deps with its own wakes (WakeBatch), and the end that waits for them: each
 * record sends its lease's wake, and each reconcile that writes a lease sends one (afterReconcile),
 * none waited for by the record. A wake that fails is logged, never thrown: a wake is a hint, which
 * a worker's poll (and, for a term held on a session, the session mark) makes up for, while failing
 * the record would run its reconcile again and hold up the shard for a hint. No wakes without a
 * push path. Every handler opens its invocation here, so its publishing too (FunctionDeps `publishing`).
 */
export function withWakes(deps: FunctionDeps): { deps: FunctionDeps; end: (remainingMs: number | undefined) => Promise<void> } {
  const publishing = {};
  if (!deps.wake) return { deps: { ...deps, publishing }, end: async () => {} };
  // the wakes not sent, counted (WAKES_NOT_SENT) once the invocation's wakes settle; one failing after
  // that was counted among those left unanswered
  const notSent = { failed: 0, settled: false };
  const failed = (lease: string, error: Error) => {
    if (!notSent.settled) notSent.failed++;
    deps.logger.warn('wake not published; the workers see the change at their next poll', { lease, error });
  };
  const wakes = wakeBatch(deps.wake, deps.coordinator.clock, failed, WAKES_IN_FLIGHT, (lease) => wakeProcesses(deps.coordinator, lease));
  return { deps: { ...deps, wakes, publishing }, end: (remainingMs) => settleWakes(deps, wakes, remainingMs, notSent) };
}

/**
 * The processes a wake of `lease` goes to besides its lease topic: those of its candidates on a
 * session (a candidate row's `identity` is its elector's instance, `…@<process>` on a session:
 * processOf), each once, at most MAX_WAKE_PROCESSES of them: the most recently renewed first, so
 * a lease's live candidates are woken before rows no one renews (candidate rows naming made-up
 * processes cost no more than that many publishes; the rest hear the change at their next poll).
 * One consistent Query of the lease's candidates: the one successor naming makes, about 0.5 RRU
 * for 3 candidates. Candidates on no session have no process topic; they hear the wake on the
 * lease's topic.
 */
export async function wakeProcesses(deps: Pick<CoordinatorDeps, 'candidates'>, lease: string): Promise<string[]> {
  const { candidates } = await deps.candidates.list(lease);
  const freshest = [...candidates].sort((a, b) => b.renewTime - a.renewTime);
  return [...new Set(freshest.map((c) => processOf(c.identity)).filter((p): p is string => p !== undefined))].slice(0, MAX_WAKE_PROCESSES);
}

/**
 * Waits, once the invocation's records are done, for the wakes they sent: up to WAKE_TIMEOUT_MS
 * (every wake sent by then has had its own timeout), and never into the last
 * WAKES_SETTLE_MARGIN_MS of the Lambda's `remainingMs`. Lambda runs one invocation at a time per
 * shard and partition key group (parallelization factor 10: a lease's records stay in order), so
 * this is all a slow IoT Core adds before the next batch of the same leases. Wakes given up are
 * logged, and with those that failed counted (WAKES_NOT_SENT). Never rejects.
 */
async function settleWakes(deps: FunctionDeps, wakes: WakeBatch, remainingMs: number | undefined, notSent: { failed: number; settled: boolean }): Promise<void> {
  const withinMs = Math.max(0, Math.min(WAKE_TIMEOUT_MS, (remainingMs ?? Infinity) - WAKES_SETTLE_MARGIN_MS));
  const given = await wakes.settle(withinMs);
  notSent.settled = true;
  if (given.dropped.length || given.unanswered) deps.logger.warn('wakes given up at the end of the invocation', { ...given });
  // failed, dropped or left unanswered: their workers see the change at their next read (0 is not published, as RECORDS_FAILED)
  const n = notSent.failed + given.dropped.length + given.unanswered;
  if (n) deps.metrics.addMetric(WAKES_NOT_SENT, MetricUnit.Count, n);
}

/**
 * The term a lease change ended, when it was held on a session: the holder renews its session, not
 * the lease, so it would hear of a term end it did not write only from a wake (a hint, QoS 0) or its
 * rare backstop read. The lease stream sees every change of a lease row, whoever wrote it (the
 * coordinator, the platform function, the CLI, an operator's delete in the console), so it marks the
 * ended term on the holder's session row; the holder reads the mark in the answer to its next session
 * renewal and stops. A change in the same term (a renewal, a note) ends nothing, unless it moves the
 * term off its session: the holder's own write once that session ended (its mark is read by nobody),
 * or a worker of the same lease naming another session (issue 36), by which observers would judge
 * the term and on which its end would be marked, while the holder renews its own. IAM keeps such a
 * write from the renewal's statement, whose records the stream's filter drops (infra/access.ts).
 *
 * A term put back on a session that carries its mark is left to its holder: it stops at that mark,
 * at its next renewal of the session, and ends the term on the row itself (lib/sdk/step.ts
 * decideLeader), never leading it again (termToConfirm's endedToken). Ending it here, as a release,
 * ended a term its holder still led: a holder whose renewal onto its new session had lost its answer
 * put the term back there with its next renewal, not knowing of the mark, and the successor took
 * the vacant lease before the holder heard (simulator seed 962116: 25.9 ms of two leaders).
 */
export function endedSessionTerm(c: { old: HeldTerm | undefined; new: Lease | undefined }): { session: string; lease: string; fencingToken: number } | undefined {
  const o = c.old;
  if ((o?.holderIdentity === undefined && !o?.holderUnreadable) || o.session === undefined || o.fencingToken === undefined) return undefined;
  const n = c.new;
  // a broken row's holder whose name did not parse: the same term where the repair put a holder back on the same start-up, token and session
  // (an unreadable start-up likewise: a repair of that field alone, in place, continues the term)
  const same = n?.holderIdentity !== undefined && (o.holderUnreadable || n.holderIdentity === o.holderIdentity) && (o.instanceUnreadable || n.holderInstance === o.holderInstance) && n.fencingToken === o.fencingToken && n.session === o.session;
  return same ? undefined : { session: o.session, lease: o.name, fencingToken: o.fencingToken };
}

/**
 * Marks the term `c` ended on its holder's session row (endedSessionTerm). A fault throws: the
 * record is retried, as a term end must reach its holder. A session row the schema refuses is
 * returned, not thrown: no retry can write the mark until an operator repairs the row, as none can
 * where the row is gone.
 */
async function markEndedTerm(deps: FunctionDeps, c: { old: HeldTerm | undefined; new: Lease | undefined }): Promise<ValidationError | undefined> {
  const ended = endedSessionTerm(c);
  if (!ended) return undefined;
  let marked: boolean;
  try {
    marked = await deps.coordinator.identities.markTermEnded(ended.session, ended.lease, ended.fencingToken, { now: deps.coordinator.clock.now(), skewMs: deps.coordinator.config.clockSkewMs });
  } catch (e) {
    if (!(e instanceof ValidationError)) throw e;
    return new ValidationError(`session row ${ended.session} of lease ${ended.lease} (term ${ended.fencingToken} not marked ended)`, e.issues);
  }
  deps.logger.info('ended term marked on its session', { ...ended, marked });
  return undefined;
}

/**
 * markEndedTerm, and where the session row refuses the mark for now (EndedTermsFullError: its map
 * full of marks the owner may not have read; ConflictError: too many lost races), the mark deferred
 * instead of the record retried: Lambda's few retries come within seconds, while the map clears
 * only a lease duration and the skew margin after the owner's stamps move on, and a record given up
 * left the term unmarked while the next holder was elected, its old holder leading on until its
 * backstop read. The next election is held first, long enough without the mark (unmarkedHoldMs: a
 * deleted row's is already, reconcileAfterDelete), then the mark goes on the timer queue (onMarkEnded),
 * which marks and then reconciles. `deleted`: the row was deleted while held.
 *
 * A fault (the identities table throttled or unreachable) holds the next election the same way,
 * then throws: the record is retried until the mark lands, and meanwhile the tick or a timer elect
 * nobody while the holder has not read it (before: they elected at once, two leaders until the mark
 * landed or the holder's backstop read). The retry that marks cuts the hold to a lease duration
 * from then, as onMarkEnded does.
 */
async function markOrDefer(deps: FunctionDeps, c: { old: HeldTerm | undefined; new: Lease | undefined }, deleted: boolean): Promise<ValidationError | 'deferred' | undefined> {
  let unmarked: ValidationError | undefined;
  try {
    unmarked = await markEndedTerm(deps, c);
  } catch (e) {
    const ended = endedSessionTerm(c)!;
    const o = c.old!;
    const markEnded: MarkEndedMessage['markEnded'] = {
      ...(o.holderIdentity !== undefined ? { holderIdentity: o.holderIdentity } : {}),
      session: ended.session,
      fencingToken: ended.fencingToken,
      leaseDurationSeconds: o.leaseDurationSeconds,
      deleted,
      // a deleted term's stamp and names: the hold re-applied with the mark ends where this record's would (deleteHoldMs)
      ...(deleted ? deletedTermStamp(o) : {}),
    };
    // a deleted row's hold is in place already (reconcileAfterDelete, before the mark)
    if (!deleted) await holdUnmarked(deps, termOf(ended.lease, markEnded));
    if (!refused(e)) throw e;
    await deps.timer.schedule({ lease: ended.lease, markEnded, since: deps.coordinator.clock.now(), attempt: 1 }, markAgainDelayMs(1, o.leaseDurationSeconds));
    deps.logger.warn('ended term not marked yet: election held, mark deferred', { ...ended, error: e as Error });
    return 'deferred';
  }
  const ended = endedSessionTerm(c);
  // marked: a hold left by a try that failed on a fault is cut to a lease duration (a deleted row's, by reconcileAfterDelete)
  if (ended && !unmarked && !deleted) await holdOpenElection(deps, ended.lease, deps.coordinator.clock.now() + c.old!.leaseDurationSeconds * 1000, 'ended term marked', true, heldForTerm(ended.fencingToken));
  return unmarked;
}

/** A mark the session row refuses for now: full, or too many lost races. */
const refused = (e: unknown): boolean => e instanceof EndedTermsFullError || e instanceof ConflictError;

/** What a deleted term's hold is judged by besides what the mark names (deleteHoldMs): carried on the timer queue with a deferred mark. */
const deletedTermStamp = (o: HeldTerm): Pick<MarkEndedMessage['markEnded'], 'renewTime' | 'holderInstance' | 'termToken'> => ({
  ...(o.renewTime !== undefined ? { renewTime: o.renewTime } : {}),
  ...(o.holderInstance !== undefined ? { holderInstance: o.holderInstance } : {}),
  ...(o.termToken !== undefined ? { termToken: o.termToken } : {}),
});

const termOf = (lease: string, m: MarkEndedMessage['markEnded']): HeldTerm => {
  const { deleted: _, ...term } = m;
  return { name: lease, ...term, ...(term.holderIdentity === undefined ? { holderUnreadable: true as const } : {}) };
};

/**
 * Holds the next election of a lease whose session-held term someone else ended, its mark not yet
 * written: no one is elected before unmarkedHoldMs from now (the holder's backstop read finds the
 * term gone by then). A vacant row gets a held election, its successors unnamed (a successor takes a
 * vacant row at once: decideFollower); an election open without a holder is held as long; a row held
 * again already cannot be taken back. Only while the row is still at the term's fencing token
 * (heldForTerm): a row at another token carries another term's election; a row the schema refuses
 * is left alone (readToHold).
 */
async function holdUnmarked(deps: FunctionDeps, term: HeldTerm): Promise<void> {
  const trigger = 'ended term not marked yet';
  const read = await readToHold(deps, term.name, trigger);
  if (!read) return;
  // only a row still at the ended term's token (heldForTerm): a record of an older end, delivered again long after, held a later term's election
  const may = term.fencingToken === undefined ? undefined : heldForTerm(term.fencingToken);
  if (read.item && may && !may(read.item)) return;
  if (read.item?.election) await holdOpenElection(deps, term.name, deps.coordinator.clock.now() + unmarkedHoldMs(term.leaseDurationSeconds), trigger, false, may);
  else if (read.item && read.item.holderIdentity === undefined) await reconcileAfterDelete(deps, term, trigger, false, read);
}

/**
 * A mark deferred by markOrDefer: written now, then the lease reconciled as its record would have
 * been, the held election cut to a lease duration from the mark (reconcileAfterDelete,
 * holdOpenElection), a deleted row's no later than its term is over by the stamp and names the
 * message carries from the old image (deleteHoldMs, as the record's own marked pass). Refused
 * again, it goes back on the queue: the map clears once the owner's stamps show its marks read, or
 * its session over, so it lands within about a lease duration and the skew margin. A session row the schema refuses leaves the hold as it is (long enough without it).
 * Refused still markAgainForMs after its first refusal (the map's marks kept by a session of a
 * longer lease duration than this term's, or new ones landing as fast as they clear), it is given
 * up, logged: the unmarked hold is over and its holder has read the lease itself (before, it went
 * back on the queue for as long as the map refused it).
 */
export async function onMarkEnded(deps: FunctionDeps, m: MarkEndedMessage): Promise<ReconcileOutcome | undefined> {
  const term = termOf(m.lease, m.markEnded);
  const trigger = 'ended term marked (deferred)';
  let unmarked: ValidationError | undefined;
  try {
    unmarked = await markEndedTerm(deps, { old: term, new: undefined });
  } catch (e) {
    if (!refused(e)) throw e;
    if (deps.coordinator.clock.now() - m.since >= markAgainForMs(term.leaseDurationSeconds)) {
      return void deps.logger.warn('ended term not marked through the unmarked hold: given up (its holder has read the lease itself)', { lease: m.lease, session: term.session, fencingToken: term.fencingToken, since: m.since, attempts: m.attempt, error: e as Error });
    }
    await deps.timer.schedule({ ...m, attempt: m.attempt + 1 }, markAgainDelayMs(m.attempt + 1, term.leaseDurationSeconds));
    deps.logger.warn('ended term still not marked: deferred again', { lease: m.lease, session: term.session, fencingToken: term.fencingToken, attempts: m.attempt + 1, error: e as Error });
    return undefined;
  }
  if (unmarked) {
    deps.logger.error('ended term cannot be marked (session row broken): election stays held', { lease: m.lease, error: unmarked });
    return undefined;
  }
  if (m.markEnded.deleted) return reconcileAfterDelete(deps, term, trigger);
  const held = await holdOpenElection(deps, m.lease, deps.coordinator.clock.now() + term.leaseDurationSeconds * 1000, trigger, false, term.fencingToken === undefined ? undefined : heldForTerm(term.fencingToken));
  return held ?? reconcile(deps, m.lease, trigger).catch(leftUnjudged(deps, m.lease, trigger));
}

/**
 * A queued message's reconcile of a lease held on a session row the schema refuses: handled, the
 * lease left alone, as the tick leaves it (unjudged: reported each tick, the row's delete timed).
 * Failed, the message would come back five times, each after the queue's visibility timeout, and
 * end in its dead-letter queue for a row no retry mends. (A stream record's goes to the
 * dead-letter queue once, with its content.)
 */
const leftUnjudged = (deps: FunctionDeps, lease: string, trigger: string) => (e: unknown): undefined => {
  if (!(e instanceof BrokenSessionError)) throw e;
  deps.logger.warn('lease held on a session row that does not match the schema: left alone (unjudged)', { lease, session: e.term.session, error: e.message, trigger });
  return undefined;
};

/** A lease record's events (none for a change to a row the schema refused: onLeaseChange's broken-row paths). */
const leaseChangeEvents = (deps: FunctionDeps, c: Change<Lease>): ConclaveEvent[] =>
  c.oldInvalid ? [] : eventsFromLeaseChange({ eventID: c.eventID, at: c.at ?? deps.coordinator.clock.now(), oldLease: c.old, newLease: c.new });

/**
 * A lease record. Its wake is sent first (the workers hear of the change at once) and never waited
 * for here: the batch's wakes go out alongside its records, and the invocation waits for them only
 * once every record is done (withWakes), so a slow or hung IoT Core delays no
 * election and no session mark. Records of one lease still run in the shard's order.
 *
 * A session row the schema refuses cannot take the ended term's mark: the record is reconciled and
 * its events published as any other (as where the session row is gone; the tick would reconcile
 * the lease within a minute anyway), and then it throws that ValidationError, so the stream handler
 * sends the record to the dead-letter destination once, with its content, instead of retrying it
 * until Lambda's retries run out.
 */
export async function onLeaseChange(deps: FunctionDeps, c: Change<Lease>): Promise<ReconcileOutcome | undefined> {
  if (c.held) return publishHeldBack(deps, leaseChangeEvents(deps, c)); // no wake: the failed record sent its lease's
  if (c.oldInvalid) {
    const held = heldTermOfBrokenRow(c.oldAttributes);
    if (held && c.eventName === 'REMOVE') return afterBrokenHeldRowDeleted(deps, held);
    if (held && c.new && endedSessionTerm({ old: held, new: c.new })) return afterBrokenHeldRowRepaired(deps, held, c.new);
    return afterBrokenRow(deps, c, c.new?.name, `lease ${c.eventName} (was broken)`);
  }
  const row = (c.new ?? c.old)!;
  deps.wakes?.send(row.name, c.new?.revision);
  const events = leaseChangeEvents(deps, c);
  const trigger = `lease ${c.eventName}`;
  if (deleteLongOver(deps, c)) {
    // reconciled as the tick would: a row created now waits for the stream (awaitsStream), which reaches any later delete first
    deps.logger.info("a held row's delete from long ago (a stream re-read from an older point): its term is over, nothing held or marked for it", { lease: row.name, eventID: c.eventID, at: new Date(c.at!).toISOString() });
    return reconcileThenPublish(deps, events, () => reconcile(deps, row.name, `${trigger} (long over)`));
  }
  let unmarked: ValidationError | undefined;
  // the mark's faults too publish the record's events before it is retried (reconcileThenPublish)
  const o = await reconcileThenPublish(deps, events, async () => {
    // a held row deleted: the next election is held before the mark is tried, long enough without it,
    // so a mark that fails (this record retried) leaves no missing row for the tick to elect on at once
    if (deletedWhileHeld(c)) await reconcileAfterDelete(deps, c.old!, 'lease REMOVE (held, before the mark)', false);
    // before the reconcile, which may elect the next leader: the old one hears at its next session renewal
    const m = await markOrDefer(deps, c, deletedWhileHeld(c));
    if (m === 'deferred') return undefined;
    unmarked = m;
    // a row created with its election waiting for the stream: seen now, after every record before it (a delete's included)
    const seen = c.new?.election?.awaitsStream ? await sawCreatedRow(deps, c.new) : false;
    if (deletedWhileHeld(c)) return reconcileAfterDelete(deps, c.old!, trigger);
    return leaseChangeMatters(c) || seen || (await namesDepartedHeir(deps, c)) ? reconcile(deps, row.name, trigger) : undefined;
  });
  if (unmarked) throw unmarked;
  return o;
}

/**
 * The successors a lease write names that the row before did not (by name or start-up): the ones
 * the lease stream checks are still candidates (namesDepartedHeir).
 */
export function heirsNamed(c: Pick<Change<Lease>, 'old' | 'new'>): { name: string; instance?: string }[] {
  const n = c.new;
  if (!n) return [];
  const o = c.old;
  return [
    [n.successor, n.successorInstance, o?.successor, o?.successorInstance],
    [n.secondSuccessor, n.secondSuccessorInstance, o?.secondSuccessor, o?.secondSuccessorInstance],
  ].flatMap(([name, instance, was, wasInstance]) => (name !== undefined && (name !== was || instance !== wasInstance) ? [{ name, ...(instance !== undefined ? { instance } : {}) }] : []));
}

/**
 * Whether a write named a successor or second successor whose candidate row is gone, or is another
 * start-up's: the write was decided on a read from before that candidate withdrew (a departing
 * heir's row deleted between the coordinator's reads and its write), and the candidate stream's
 * reconcile of the REMOVE record may have run before the write landed, seeing nothing to take off.
 * The reconcile this calls for names a live successor at once, where the lease would otherwise wait
 * for the tick (up to a minute on AWS). The row is read after the write landed, so a withdrawal it
 * misses lands later, and its REMOVE record's reconcile reads this write. A row the schema refuses
 * counts as there: the coordinator never names one, and reconciling would not change that.
 */
async function namesDepartedHeir(deps: FunctionDeps, c: Change<Lease>): Promise<boolean> {
  const heirs = heirsNamed(c);
  const gone = await Promise.all(
    heirs.map(async ({ name, instance }) => {
      try {
        const row = (await deps.coordinator.candidates.read(c.new!.name, name)).item;
        return row === undefined || (instance !== undefined && row.identity !== instance);
      } catch (e) {
        if (e instanceof ValidationError) return false;
        throw e;
      }
    }),
  );
  const departed = heirs.filter((_, i) => gone[i]).map((h) => h.name);
  if (departed.length) deps.logger.info("a write named a successor whose candidate row is gone or another start-up's: named again", { lease: c.new!.name, departed });
  return departed.length > 0;
}

/** The lease stream has reached a row created with its election waiting for it (streamSawRow). */
async function sawCreatedRow(deps: FunctionDeps, l: Lease): Promise<boolean> {
  const seen = await streamSawRow(deps.coordinator, l);
  if (seen) deps.logger.info('the lease stream saw a created row: its election may close', { lease: l.name, electionId: l.election!.id });
  return seen;
}

/** Whether the lease's row exists; a row the schema refuses exists (reconcile logs it as broken). */
async function rowExists(deps: FunctionDeps, lease: string): Promise<boolean> {
  try {
    return (await deps.coordinator.leases.read(lease)).item !== undefined;
  } catch (e) {
    if (e instanceof ValidationError) return true;
    throw e;
  }
}

/**
 * An election's deadline, or a silent holder's term end (ReconcileOutcome.recheckAt): the lease is
 * reconciled, which finishes the election or opens one for the vacancy. A lease whose row is
 * gone has no election left to finish: the timer leaves it to the lease stream (an operator's
 * delete of a held row: reconcileAfterDelete holds the next election) and the tick, rather than
 * create the row and elect at once while the deleted term's holder may still act (seed 1368225001:
 * the timer of a re-election that was open when the row was deleted fired before the stream saw
 * the delete).
 */
export async function onTimer(deps: FunctionDeps, m: TimerMessage | TermEndMessage): Promise<ReconcileOutcome | undefined> {
  const why = 'termEnd' in m ? { termEnd: m.termEnd } : { electionId: m.electionId };
  if (!(await rowExists(deps, m.lease))) {
    deps.logger.info('timer for a lease whose row is gone: nothing to finish', { lease: m.lease, ...why });
    return undefined;
  }
  const trigger = 'termEnd' in m ? TERM_END_TRIGGER : `${TIMER_TRIGGER}${m.electionId}`;
  return reconcile(deps, m.lease, trigger).catch(leftUnjudged(deps, m.lease, trigger));
}

/**
 * Events deferred by an EventBridge outage: published again with the ids they were derived with.
 * Failing again, they go back on the queue with a longer delay, for REPUBLISH_FOR_MS in all; after
 * that this throws, and the queue's redrive takes the message (its dead-letter queue keeps it).
 * Each failure publishes how long they have gone unpublished (EVENTS_UNPUBLISHED): a refusal that
 * lasts (the role without events:PutEvents, the bus deleted) fails nothing else until then.
 */
export async function onRepublish(deps: FunctionDeps, m: RepublishMessage): Promise<void> {
  // (an outage met earlier in this invocation: deferred again without a call, as a failed attempt: the delay still grows)
  const unpublished = await tryPublish(deps, m.events);
  if (!unpublished) return void deps.logger.info('deferred events published', { ids: m.events.map((e) => e.detail.id), attempts: m.attempt + 1 });
  const { left, error } = unpublished;
  const now = deps.coordinator.clock.now();
  // how long they have gone unpublished: the construct alarms on it (a lasting refusal raises no error and fails no record for a day)
  deps.metrics.addMetric(EVENTS_UNPUBLISHED, MetricUnit.Milliseconds, now - m.since);
  if (now - m.since >= REPUBLISH_FOR_MS) throw error;
  await deps.timer.schedule({ republish: left, since: m.since, attempt: m.attempt + 1 }, republishDelayMs(m.attempt + 1));
  deps.logger.warn('deferred events still not published; deferred again', { error, ids: left.map((x) => x.detail.id), attempts: m.attempt + 1 });
}

/** The scheduled tick: every lease, garbage collection, and the leaderless, broken-lease, unjudged and reconcile-failure gauges. */
export async function onTick(deps: FunctionDeps, remainingMs?: number): Promise<TickResult> {
  // Lambda's remaining time, read through the coordinator's clock: the tick stops before it (lib/coordinator/tick.ts)
  if (remainingMs === undefined) {
    // no deadline (the simulator's context): one pass, then each outcome's follow-up, as before rounds existed
    const r = await tick(deps.coordinator);
    for (const o of r.outcomes) await afterReconcile(deps, o, 'tick');
    return reportTick(deps, r);
  }
  const deadline = deps.coordinator.clock.monotonic() + remainingMs;
  return reportTick(deps, await tick(deps.coordinator, { deadline, afterEach: (o) => afterReconcile(deps, o, 'tick') }));
}

/**
 * What to do about a candidate row the schema refuses, and what the tick does with it: collected
 * once stale by its stamp (lib/coordinator/reconcile.ts), or, where that stamp is what does not
 * parse, deleted once unchanged for candidateStaleAfterMs and clockSkewMs since the tick first saw
 * it so (`timed`: timeRefusedCandidates).
 */
function refusedCandidateFix(deps: FunctionDeps, i: InvalidItem, timed?: RefusedCandidateSeen): string {
  const key = JSON.stringify({ leaseName: { S: i.key['leaseName'] }, name: { S: i.key['name'] } });
  const remedy = `rewrite it valid, or delete it (aws dynamodb delete-item --table-name ${deps.coordinator.candidates.table} --key '${key}')`;
  const unstamped = i.error.fields.some((f) => f === 'renewTime' || f === 'session');
  const staleAfter = `${Math.round(deps.coordinator.config.candidateStaleAfterMs / 60_000)} min`;
  const wait = `${Math.round((deps.coordinator.config.candidateStaleAfterMs + deps.coordinator.config.clockSkewMs) / 1000)} s`;
  if (unstamped && timed && (timed.deleteAfter === undefined || timed.unchangedSince === undefined)) return `${remedy}: its renewTime or session does not parse, so it is not collected by them, and it has too many attributes for the tick to time and delete it`;
  return unstamped
    ? `${remedy}: its renewTime or session does not parse, so it is not collected by them; left unchanged, the tick deletes it itself ${timed?.deleteAfter !== undefined ? `after ${new Date(timed.deleteAfter).toISOString()} (${wait} after it first saw it so: ` : `once it has seen it unchanged for ${wait} (`}candidateStaleAfterMs and clockSkewMs; it guards no term and takes no part in elections)`
    : `${remedy}; left as it is, it is collected once its renewTime, and its session's if it names one, is older than candidateStaleAfterMs (${staleAfter}), read as epoch milliseconds (one in seconds never is)`;
}

/**
 * What to do about an identity row (identity lease or session) the schema refuses, and what the
 * tick does with it: collected once expired by its stamp, while no held lease or live candidate
 * names it (lib/coordinator/reconcile.ts), unless that stamp is what does not parse. `leases`: those
 * held on it (a session's), left alone until then.
 */
function refusedIdentityFix(deps: FunctionDeps, i: InvalidItem, leases: readonly string[], timed?: RefusedSessionSeen): string {
  const key = JSON.stringify({ component: { S: i.key['component'] }, name: { S: i.key['name'] } });
  const remedy = `rewrite it valid, or delete it (aws dynamodb delete-item --table-name ${deps.coordinator.identities.table} --key '${key}')`;
  const unstamped = i.error.fields.some((f) => f === 'renewTime' || f === 'leaseDurationSeconds');
  const graceMs = identityGraceMs(deps.coordinator.config);
  if (leases.length) {
    const alone = `${remedy}: the coordinator leaves lease${leases.length > 1 ? 's' : ''} ${leases.join(', ')} alone until then, judging no term by it`;
    // timed by the tick (lib/coordinator/refused-session.ts): deleted once unchanged long enough
    if (timed?.deleteAfter !== undefined && timed.unchangedSince !== undefined)
      return `${alone}; left unchanged, the tick deletes it itself after ${new Date(timed.deleteAfter).toISOString()} (${Math.round((timed.deleteAfter - timed.unchangedSince) / 1000)} s after it first saw it so: the longest lease on it and clockSkewMs, by when every holder on it has stopped), and judges the terms without it`;
    return `${alone}; ${timed ? 'it has too many attributes for the tick to time and delete it' : unstamped ? 'its renewTime or leaseDurationSeconds does not parse, so it is never collected' : 'it is not collected while a held lease names it'}`;
  }
  // no held lease names it: timed as if a term of a day were on it, or by the held terms whose process's session it may be (refused-session.ts termsOnRefused)
  const until = timed?.deleteAfter !== undefined ? `after ${new Date(timed.deleteAfter).toISOString()}` : 'once it has seen it unchanged for a day (the longest lease) and clockSkewMs';
  return unstamped
    ? `${remedy}: its renewTime or leaseDurationSeconds does not parse, so it is not collected by them; no held lease names it, so left unchanged, the tick deletes it itself ${until} (by when anyone who renewed it has stopped)`
    : `${remedy}; left as it is, it is collected once expired by its renewTime and leaseDurationSeconds, plus identityGcGraceMs and the larger of clockSkewMs and a row stamp's own error (${graceMs / 1000} s), while no held lease or live candidate names it (a renewTime in epoch seconds never is)`;
}

/**
 * The latest moment row `l`, which the tick judged vacant, shows the lease already vacant; undefined
 * where it shows none (counted then by no bound). No holder: the latest stamp a write that ends a
 * term leaves, or one made while vacant: `renewTime` (a release's, a lost holder's), the last
 * failure's `at`. A holder still on it (its term run out, or reported, and the tick elected no one:
 * none it could elect, or an election under way): the vacancy report's `at`, or the term's end by
 * the lease's own stamp, the earlier (a term on a session ends later than that, by its session's
 * stamp, which is not kept here: such a lease is counted from its own). Either way an election open
 * counts from its start (held: its `notBefore`): a write that ends a term without a stamp (an
 * expired term's election) opens one, and a lease mid-election is not past its bound.
 */
function vacantSince(l: Lease): number | undefined {
  const defined = (xs: (number | undefined)[]) => xs.filter((x): x is number => x !== undefined);
  const ends = l.holderIdentity !== undefined ? defined([l.vacancyReport?.at, leaseExpiresAt(l)]) : defined([l.renewTime, l.lastElectionFailure?.at]);
  const since = !ends.length ? undefined : l.holderIdentity !== undefined ? Math.min(...ends) : Math.max(...ends);
  const e = l.election;
  return e ? Math.max(since ?? 0, e.startedAt, e.notBefore ?? 0) : since;
}

/**
 * The leases leaderless past their bound (LEADERLESS_PAST_BOUND): of those the tick counts leaderless
 * (`r.leaderless`: live candidates, no live holder after it), the ones it reconciled (their row in
 * `r.outcomes`) whose row shows them vacant (vacantSince) for longer than the larger of
 * LEADERLESS_BOUND_MS and the workers' fallback (three lease durations), and `clockSkewMs` (the
 * stamps are other machines'). A lease whose reconcile failed is left to ReconcileFailures: no row
 * of it is kept.
 */
export function leaderlessPastBound(r: Pick<TickResult, 'leaderless' | 'outcomes'>, now: number, skewMs: number): string[] {
  const rows = new Map(r.outcomes.map((o) => [o.lease, o.after ?? o.before]));
  return r.leaderless.filter((name) => {
    const l = rows.get(name);
    const since = l && vacantSince(l);
    return since !== undefined && now - since > Math.max(LEADERLESS_BOUND_MS, 3 * l!.leaseDurationSeconds * 1000) + skewMs;
  });
}

function reportTick(deps: FunctionDeps, r: TickResult): TickResult {
  for (const e of r.errors) deps.logger.error(e.error instanceof TooManyCandidatesError ? e.error.message : 'reconcile failed; the next trigger retries', { lease: e.lease, error: e.error });
  for (const b of r.broken) deps.logger.error('lease row does not match the schema; left alone until repaired', { ...brokenLog(b), trigger: 'tick' });
  const told = new Set<Error>(r.broken.map((b) => b.error));
  const collected = new Set(r.collectedCandidates.map((c) => JSON.stringify([c.leaseName, c.name])));
  const collectedIdentities = new Set(r.collectedIdentities.map((c) => JSON.stringify([c.component, c.name])));
  // the first ROWS_LOGGED of each kind named, the others counted (first the identity rows held leases name: their terms are judged by no one)
  const unjudged = new Set(r.unjudged.map((u) => JSON.stringify([u.key.component, u.key.name])));
  const heldOn = (i: InvalidItem) => 'component' in i.key && unjudged.has(JSON.stringify([i.key['component'], i.key['name']]));
  const refused = { candidate: 0, identity: 0, other: 0 };
  const named = (kind: keyof typeof refused) => ++refused[kind] <= ROWS_LOGGED;
  for (const i of [...r.invalid].sort((a, b) => Number(heldOn(b)) - Number(heldOn(a)))) {
    if (told.has(i.error)) continue;
    if ('leaseName' in i.key) {
      if (!collected.has(JSON.stringify([i.key['leaseName'], i.key['name']])) && named('candidate')) {
        const timed = r.refusedCandidates.find((x) => x.key.leaseName === i.key['leaseName'] && x.key.name === i.key['name']);
        deps.logger.warn('candidate row does not match its schema: it takes no part in elections', { key: i.key, error: i.error.message, fix: refusedCandidateFix(deps, i, timed), ...(timed?.deleteAfter !== undefined ? { deleteAfter: new Date(timed.deleteAfter).toISOString() } : {}) });
      }
    } else if ('component' in i.key) {
      // the leases held on it: left alone, told here rather than as failed reconciles
      const leases = r.unjudged.filter((u) => u.key.component === i.key['component'] && u.key.name === i.key['name']).map((u) => u.term.lease).sort();
      const timed = r.refusedSessions.find((x) => x.key.component === i.key['component'] && x.key.name === i.key['name']);
      if (!collectedIdentities.has(JSON.stringify([i.key['component'], i.key['name']])) && named('identity'))
        deps.logger.warn('identity row does not match its schema: a term held on it is judged by no one, and it vouches for no candidate', {
          key: i.key,
          error: i.error.message,
          ...(leases.length ? { leases } : {}),
          fix: refusedIdentityFix(deps, i, leases, timed),
          ...(timed?.deleteAfter !== undefined ? { deleteAfter: new Date(timed.deleteAfter).toISOString() } : {}),
        });
    } else if (named('other')) deps.logger.warn('row does not match its schema; left alone', { key: i.key, error: i.error.message });
  }
  for (const [kind, n] of Object.entries(refused)) if (n > ROWS_LOGGED) deps.logger.warn(`${kind} rows that do not match their schema: ${n}, the first ${ROWS_LOGGED} named above`, { refused: n });
  for (const x of r.refusedSessions) {
    if (!x.deleted) continue;
    if (x.leases.length) deps.logger.warn('a session row the schema refuses, unchanged for longer than the longest lease on it and clockSkewMs, was deleted: the terms on it are judged without it', { key: x.key, leases: x.leases, unchangedSince: new Date(x.unchangedSince!).toISOString() });
    else deps.logger.warn('an identity row the schema refuses, whose stamp does not parse and that no held lease names, unchanged for longer than a day (the longest lease) and clockSkewMs, was deleted', { key: x.key, unchangedSince: new Date(x.unchangedSince!).toISOString() });
  }
  for (const x of r.refusedCandidates) if (x.deleted) deps.logger.warn('a candidate row the schema refuses, whose renewTime or session does not parse, unchanged for longer than candidateStaleAfterMs and clockSkewMs, was deleted', { key: x.key, unchangedSince: new Date(x.unchangedSince!).toISOString() });
  // a round over several invocations: the round's counts, not this invocation's slice (lib/coordinator/tick.ts RoundGauges)
  deps.metrics.addMetric(METRIC.leaderless, MetricUnit.Count, r.round?.gauges.leaderless ?? r.leaderless.length);
  // this invocation's leases alone (a round of several counts each part at the ticks that reach it): LeaderlessLeases watches it
  const pastBound = leaderlessPastBound(r, deps.coordinator.clock.now(), deps.coordinator.config.clockSkewMs);
  deps.metrics.addMetric(LEADERLESS_PAST_BOUND, MetricUnit.Count, pastBound.length);
  deps.metrics.addMetric(METRIC.brokenLeases, MetricUnit.Count, r.broken.length);
  deps.metrics.addMetric(METRIC.unjudgedLeases, MetricUnit.Count, r.unjudged.length);
  // every tick, 0 included: a tick whose reconciles all fail (writes denied after a deploy) still returns normally
  deps.metrics.addMetric(METRIC.reconcileFailures, MetricUnit.Count, r.round?.gauges.failures ?? r.errors.length);
  if (r.round?.lostRace) deps.logger.warn('another tick moved the round on meanwhile; this one left the cursor to it', { round: r.round });
  deps.logger.info('tick', { leases: r.leases, leaderless: r.leaderless, leaderlessPastBound: pastBound, broken: r.broken.map((b) => b.lease), unjudged: r.unjudged.map((u) => u.term.lease), collectedCandidates: r.collectedCandidates.length, collectedIdentities: r.collectedIdentities.length, errors: r.errors.length, ...(r.round ? { round: r.round, unseeded: r.unseeded } : {}) });
  return r;
}

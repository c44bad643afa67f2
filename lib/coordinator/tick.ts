/**
 * The coordinator's tick within its Lambda's time (issue 38, item 5): a round over every lease,
 * divided into parts, carried over as many invocations as it takes.
 *
 * A round divides the leases and candidates tables into `segments` parts (DynamoDB's parallel scan
 * segments) and reconciles them in order, each part's leases in name order. An invocation goes on
 * from where the last one stopped (the cursor row, lib/schemas/tick-cursor.ts), starts no
 * reconcile once its deadline less a margin has passed, and leaves the cursor at the last lease it
 * reconciled. A round that ends starts the next one at the next invocation, with as many parts as
 * the leases it reconciled call for (`segmentLeases` a part), so one part's scans and decisions
 * stay well inside one invocation's time at any lease count.
 *
 * The bound: every lease that had candidates or an election when its part was scanned is
 * reconciled within the round (but a skipped part's, below), and a round takes ⌈(work of a round)
 * / (time of an invocation less the margin)⌉ invocations, at most one invocation per schedule tick
 * (reserved concurrency 1); its work counts a part's scans again in each invocation the part goes on
 * in, and the collection the last round's end left owed (below). A deployment whose round fits one
 * invocation (every deployment up to `segmentLeases` leases with a round under the timeout) is one
 * part, one invocation a round: the tick of before, plus one consistent GetItem of the cursor
 * (written only when it changes). Nothing starts past the stop (a collection's reads of leases on
 * expired sessions, releaseOver, only in the first half of the time it has left), so what is under
 * way then and the cursor's write finish within the margin.
 *
 * Garbage collection cut short: a pass that reaches its part's end as the time runs out starts no
 * delete, and a round's end past the stop collects no identity; with every round starting at a fresh
 * invocation, a fleet whose last reconcile ends just past the stop would collect nothing, round after
 * round. So the cursor says what is owed (TickCursor's `owedPart`: that part's stale candidates, of a
 * one-part round the expired identities too; `owesIdentities`: the round's end's), the cursor moving
 * on (a round whose last part it was is done), and the next invocation does it first, with the whole
 * time it has: a pass over that part that reconciles nothing; then it goes on with the round in the
 * same invocation (15 leases of 1 s in 15 s: 15 every invocation, each round's collection done at the
 * next one's start). Once: cut short again, it is given up until that part's next pass. Only a pass
 * that reaches its end at the stop leaves a debt, so no pass is starved: one begun after an owed
 * collection whose scans run out is taken again at the next invocation, first, nothing owed ahead of
 * it. At worst (each owed collection leaving too little for the next pass's scans) every other
 * invocation does only that: a round takes at most twice the invocations above.
 *
 * A part whose scans (its leases and candidates, and every identity row) do not finish in a whole
 * invocation (its pass the invocation's first) is taken again at the next invocation (told, counted
 * in the cursor's `unscanned`); at the second in a row it is skipped for the round, told among the
 * failures as `(part i of n)`: its leases are left to their streams and timers, and the round goes
 * on to the others. So a throttle that slows one scan costs its part one invocation; a part whose
 * scans never fit adds two invocations to each round (and the rest of the one its pass was begun
 * late in), its leases reconciled by their streams and timers only. An attempt at a part that does
 * not finish otherwise counts the same (review, 2026-12-07, fourteenth), begun late or not: its pass
 * throws (a scan refused past the SDK's retries: told as `(the scans of part i of n)` with its
 * error, and counted; the invocation ends its work there, or, the part skipped, goes on to the next
 * where its time allows), or its invocation ends inside it (out of memory, its timeout), which no
 * end of the invocation can record. So a round of parts marks each part in its cursor before its
 * pass: the part and its attempt (`unscanned`: 1, 2), cleared as its scans finish; an invocation
 * that finds a part marked twice skips it at once. Debts owed are likewise cleared before they are
 * paid, and a round's end is written before its identities are collected: a collection that ends
 * its invocation is given up (until that part's next pass, or the next round's end). Before, a
 * part that ended its invocation (a throw from its scans, or its memory) ended every one after it
 * there too: the parts after it were never reconciled again. A round that skipped a part counted
 * none of its leases: it keeps its parts for the next (any other failure counts its lease: parts
 * follow the leases counted), and its gauges are published as a round not yet done (roundGauges:
 * the larger of its counts and the last round's, kept as the last round's), so a lease leaderless in
 * the skipped part is not dropped from LeaderlessLeases at once (a round on, the skip itself is what
 * the failures tell).
 */
import { ValidationError } from '../schemas/validation.js';
import { MAX_SEGMENTS, type TickCursor } from '../schemas/tick-cursor.js';
import { ConflictError, isReplicatedWriteConflict } from '../stores/errors.js';
import type { TickCursorRead } from '../stores/tick-store.js';
import { collectIdentities, emptyResult, reconcileAll, UNSCANNED, type CoordinatorDeps, type PassOptions, type ReconcileAllResult } from './reconcile.js';

export const TICK_DEFAULTS = {
  /**
   * Time kept back from the invocation's deadline: reconciles under way (16 at once, each a few
   * requests, with the SDK's retries on throttling) and the cursor's write finish within it.
   */
  marginMs: 30_000,
  /**
   * Leases a part of a round: at the model's 1.2 ms of CPU a lease with nothing to change on the
   * coordinator's 512 MB Lambda, about 12 s for its scans and decisions (docs/benchmarks.md, "Cost of scale").
   */
  segmentLeases: 10_000,
} as const;

export interface TickOptions {
  /**
   * `clock.monotonic()` by which the invocation must be done (Lambda's remaining time from its
   * context). Absent (a context with no remaining time: the simulator's): one pass over the whole
   * tables, no cursor read or written — the tick of before.
   */
  deadline?: number;
  /** @default TICK_DEFAULTS.marginMs */
  marginMs?: number;
  /** @default TICK_DEFAULTS.segmentLeases */
  segmentLeases?: number;
  /** With a deadline: called with each outcome as its reconcile ends, within the invocation's time (reconcileAll's `afterEach`). */
  afterEach?: PassOptions['afterEach'];
}

/** Where a round stands after an invocation. */
export interface RoundProgress {
  /** The round's parts. */
  segments: number;
  /** Invocations the round took so far (this one included). */
  invocations: number;
  /** Leases the round reconciled so far. */
  leases: number;
  /** The round ended in this invocation: every lease of every part reached (a part skipped: its leases none); a collection cut short at its end is owed (`owes`). */
  done: boolean;
  /** Not done: the part and the last lease of it reconciled, where the next invocation goes on. */
  next?: { segment: number; after: string | undefined };
  /** Milliseconds since the round began (the coordinator's clock), at this invocation's end. */
  ageMs: number;
  /** Another invocation moved the cursor meanwhile (one coordinator at a time is the wiring's; locally a tick can be asked for by hand): this one's position was not kept (on a multi-Region table, refused by another Region's write, it may have landed all the same). */
  lostRace: boolean;
  /** What the tick's gauges publish: roundGauges. */
  gauges: RoundGauges;
  /** Garbage collection owed after this invocation (cut short at its deadline), which the next one does first: the cursor's fields (TickCursorItem). */
  owes?: Pick<TickCursor, 'owedPart' | 'owedParts' | 'owesIdentities'>;
}

/**
 * The leaderless and reconcile-failure gauges of a round that may span invocations: the round's
 * counts where it ends in this invocation; before that, the larger of the last whole round's and
 * this round's so far. Each invocation's own slice would not do: the alarms take the Minimum of
 * every tick over two periods, and a slice without the leaderless lease published 0 (one such
 * lease in a round of two invocations gave 1, 0, 1, 0: no alarm ever). So a lease mended early in
 * a round is still counted until that round ends, and one found leaderless counts from the tick
 * that finds it: a single sighting (an election under way, one throttled reconcile) is published
 * for up to two rounds' time. The alarms want it at every tick for two 5-minute periods, so a
 * single sighting fires one only where a round takes some 5 minutes or more (100,000 leases with
 * nothing to change take about 2; docs/benchmarks.md, "Cost of scale"), and a deployment that has
 * mended its leases sees the gauge fall to 0 within two rounds.
 */
export interface RoundGauges {
  leaderless: number;
  failures: number;
}

export interface TickResult extends ReconcileAllResult {
  /** Absent without a deadline (one pass over the whole tables). */
  round?: RoundProgress;
}

type Cursor = Omit<TickCursor, 'revision' | 'component' | 'name'>;

const FIRST: Cursor = { segments: 1, segment: 0, leases: 0, invocations: 0 };

/** Parts for a round that reconciles `leases`: `segmentLeases` each, 1 at least, DynamoDB's most at most. */
export const segmentsFor = (leases: number, segmentLeases: number): number => Math.min(MAX_SEGMENTS, Math.max(1, Math.ceil(leases / segmentLeases)));

/** One invocation of the coordinator's tick: see the module's comment. */
export async function tick(deps: CoordinatorDeps, opts: TickOptions = {}): Promise<TickResult> {
  if (opts.deadline === undefined) return reconcileAll(deps);
  const stop = opts.deadline - (opts.marginMs ?? TICK_DEFAULTS.marginMs);
  const past = () => deps.clock.monotonic() >= stop;
  const startedAt = deps.clock.now();
  let read = await readCursor(deps);
  // the cursor as last read or written: each write is conditioned on its revision
  let saved: Cursor = read.item ? strip(read.item) : FIRST;
  const c = { ...FIRST, ...saved };
  if (c.invocations === 0) c.roundStartedAt = startedAt;
  c.invocations++;

  const merged: TickResult = emptyResult();
  const afterEach = opts.afterEach ? { afterEach: opts.afterEach } : {};
  let lostRace = false;
  let owesPart: { index: number; total: number } | undefined;
  let owesIdentities = false;
  /** A pass that throws (a scan refused past the SDK's retries): told among the failures as `lease` (an identities collection's: UNSCANNED), the invocation going on. */
  const guard = async <T>(lease: string, pass: Promise<T>): Promise<T | undefined> => {
    try {
      return await pass;
    } catch (e) {
      merged.errors.push({ lease, error: asError(e) });
    }
  };
  /** This round's counts so far: the gauges a tick publishes (roundGauges). */
  const counts = () => ({ leaderless: (c.leaderless ?? 0) + merged.leaderless.length, failures: (c.failures ?? 0) + merged.errors.length });
  /** The garbage collection this invocation leaves owed (cut short at its deadline): the cursor's fields. */
  const owes = () => ({ ...(owesPart ? { owedPart: owesPart.index, owedParts: owesPart.total } : {}), ...(owesIdentities ? { owesIdentities: true as const } : {}) });
  /** The cursor were the invocation to end here: where the round goes on, or (`done`) the next round's. */
  const cursor = (done: boolean): Cursor => {
    const n = counts();
    // a round that skipped a part counted short: its parts are kept (any other failure counts its lease)
    const sized = segmentsFor(c.leases, opts.segmentLeases ?? TICK_DEFAULTS.segmentLeases);
    return done
      ? { ...FIRST, segments: c.skipped ? Math.max(sized, c.segments) : sized, ...given({ lastLeaderless: n.leaderless, lastFailures: n.failures }), ...owes() }
      : // the round's own fields (segments and invocations at least 1), its counts and debts this invocation's
        ({ ...given({ ...c, ...n, owedPart: 0, owedParts: 0, owesIdentities: undefined, ...owes() }), segment: c.segment, leases: c.leases } as Cursor);
  };
  /** Writes the cursor where it changed; false once another invocation moved it (`lostRace`): this one then does and writes nothing more. */
  const save = async (next: Cursor): Promise<boolean> => {
    if (!lostRace && !sameCursor(saved, next))
      try {
        const item = await deps.ticks.write(read, { set: next, remove: (Object.keys(saved) as (keyof Cursor)[]).filter((k) => !(k in next)) });
        read = { ...read, item, revision: item.revision };
        saved = next;
      } catch (e) {
        // another invocation moved the cursor first, or (a multi-Region table) another Region's tick
        // was writing it at that moment (the last try not applied; an earlier try of the AWS SDK's may
        // have landed, its answer lost: either position may stand); at worst a part is reconciled twice
        if (e instanceof ConflictError || isReplicatedWriteConflict(e)) lostRace = true;
        // refused (writes denied after a deploy, throttling past the SDK's retries): a failure like a
        // reconcile's, told and counted; the next invocation goes on from the cursor as it was (at
        // worst a slice reconciled twice)
        else merged.errors.push({ lease: '(the tick cursor)', error: asError(e) });
      }
    return !lostRace;
  };
  // A round of parts writes its cursor as it goes: before each part's pass (the part and its
  // attempt), before a debt is paid, and at its end before its identities are collected, so an
  // invocation that ends inside any of them (out of memory, its timeout) leaves its attempt counted.
  // Each is one conditional write of the one cursor row (under 1 KB: one write unit; on a
  // multi-Region table, one replicated to each Region), by the part, not by the lease: a round of N
  // parts in one invocation writes N + 1 (a settled one wrote none), and a part is some 12 s of
  // scans and decisions, so at most a few a minute at any lease count, against its scans' hundreds
  // of read units. A round of one part writes none of them (as before: at its end, where its cursor
  // changes): skipping its only part would reach no other lease, and an invocation that ends
  // inside it is the coordinator's Errors alarm's.
  const marks = c.segments > 1;
  // What the last invocation's pass reached its part's end too late to collect: first, with the
  // whole time (once: cut short again, or its invocation ended, given up until that part's next
  // pass); then the round goes on in the same invocation
  const owedPart = c.owedParts === undefined ? undefined : { index: c.owedPart ?? 0, total: c.owedParts };
  let first = !owedPart && !c.owesIdentities; // no pass yet: the next has the whole invocation
  if (!first && marks) await save(cursor(false)); // the debts cleared before they are paid
  if (owedPart && !lostRace) {
    const lease = `(the collection owed, part ${owedPart.index} of ${owedPart.total})`;
    const r = await guard(lease, reconcileAll(deps, { segment: owedPart, collectOnly: true, deadline: stop, ...afterEach }));
    // its scans unfinished: told as what that cost (its last error, UNSCANNED, replaced)
    if (r?.unscanned) r.errors[r.errors.length - 1] = { lease, error: new Error(`${OUTLAST}: its owed collection given up until its next pass`) };
    if (r) merge(merged, r);
  }
  if (c.owesIdentities && !past() && !lostRace) mergeCollected(merged, await guard(UNSCANNED, collectIdentities(deps, { deadline: stop, ...afterEach })));
  while (c.segment < c.segments && !past() && !lostRace) {
    const part = { index: c.segment, total: c.segments };
    const of = `part ${part.index} of ${part.total})`;
    const scans = `(the scans of ${of}`;
    const whole = first;
    const tries = c.unscanned ?? 0; // this part's attempts in a row that did not finish
    let r: ReconcileAllResult | undefined;
    if (tries < 2) {
      first = false;
      c.unscanned = tries + 1; // entered: cleared as its scans finish
      if (marks && !(await save(cursor(false)))) break;
      r = await guard(scans, reconcileAll(deps, { segment: part, ...(c.after === undefined ? {} : { after: c.after }), deadline: stop, ...afterEach }));
      if (r && !r.unscanned) {
        delete c.unscanned;
        merge(merged, r);
        c.leases += r.reached;
        if (r.stopped) {
          if (r.stopped.after === undefined) delete c.after;
          else c.after = r.stopped.after;
          break;
        }
        // reached its part's end as the time ran out: its collection (a one-part round's: identities too)
        // may have been cut short, owed to the next invocation's start
        if (past()) owesPart = part;
        c.segment++;
        delete c.after;
        continue;
      }
    }
    if (r) {
      r.errors.pop(); // the scans' own (UNSCANNED): told below as what it cost
      merge(merged, r);
      if (!whole) {
        // its scans begun late: no fault, the time ran out
        c.unscanned = tries;
        break;
      }
    }
    // unfinished: its scans outlast a whole invocation, it threw (told as itself), or an invocation
    // ended inside it; the first time, taken again at the next invocation, first; the second in a
    // row, skipped for the round, told
    const skip = c.unscanned! > 1;
    if (r || skip) merged.errors.push({ lease: skip ? `(${of}` : scans, error: new Error(`${r ? OUTLAST : 'its pass unfinished'}: ${skip ? SKIPPED : 'taken again at the next (skipped if again)'}`) });
    if (!skip) break;
    c.skipped = (c.skipped ?? 0) + 1;
    delete c.unscanned;
    c.segment++;
    delete c.after;
  }
  const done = c.segment >= c.segments;
  if (done && marks) {
    // a part does not see every lease that names a session: expired identities are collected once a
    // round, over all of them; the round's end written first (a collection that ends its invocation
    // is given up until the next round's end)
    if (!past() && (await save(cursor(true)))) mergeCollected(merged, await guard(UNSCANNED, collectIdentities(deps, { deadline: stop, ...afterEach })));
    owesIdentities = past(); // (none, or cut short)
  }
  await save(cursor(done));
  // after the cursor's write: one refused is counted
  const { leaderless, failures } = counts();
  // a round that skipped a part counted none of its leases: as a round not yet done, the last round's
  // counts stand where larger; its own counts are kept as the last round's (not the larger: a part
  // skipped round after round would hold the fleet's highest count for ever), so the skipped part's
  // leases leave LeaderlessLeases a round on, its skip told in the failures each round
  const counted = done && !c.skipped;
  const gauges: RoundGauges = counted ? { leaderless, failures } : { leaderless: Math.max(leaderless, c.lastLeaderless ?? 0), failures: Math.max(failures, c.lastFailures ?? 0) };
  const progress: RoundProgress = { segments: c.segments, invocations: c.invocations, leases: c.leases, done, ageMs: deps.clock.now() - (c.roundStartedAt ?? startedAt), lostRace, gauges };
  if (!done) progress.next = { segment: c.segment, after: c.after };
  if (owesPart || owesIdentities) progress.owes = owes();
  merged.round = progress;
  return merged;
}

/** The cursor; one that does not parse (written by hand, or by another version) is removed and the round starts afresh. */
async function readCursor(deps: CoordinatorDeps): Promise<TickCursorRead> {
  try {
    return await deps.ticks.read();
  } catch (e) {
    if (!(e instanceof ValidationError)) throw e;
    return deps.ticks.reset();
  }
}

/** `o` without its absent or 0 fields: the cursor holds none. */
const given = <T extends object>(o: T): { [K in keyof T]?: Exclude<T[K], undefined> } => Object.fromEntries(Object.entries(o).filter(([, v]) => v)) as { [K in keyof T]?: Exclude<T[K], undefined> };

const strip = ({ revision: _r, component: _c, name: _n, ...rest }: TickCursor): Cursor => rest;

function sameCursor(a: Cursor, b: Cursor): boolean {
  const keys = new Set([...Object.keys(a), ...Object.keys(b)]) as Set<keyof typeof a>;
  return [...keys].every((k) => a[k] === b[k]);
}

/** What collectIdentities did (at a round's end, or owed), into the invocation's result (none: it threw, told). */
function mergeCollected(into: TickResult, g: Awaited<ReturnType<typeof collectIdentities>> | undefined): void {
  if (!g) return;
  into.collectedIdentities.push(...g.collectedIdentities);
  into.invalid.push(...g.invalid);
  into.errors.push(...g.errors);
  into.refusedSessions.push(...g.refusedSessions);
  // the leases on a refused session row it deleted, judged in this round: no longer unjudged
  into.outcomes.push(...g.outcomes);
  into.unjudged = into.unjudged.filter((u) => !g.outcomes.some((o) => o.lease === u.term.lease));
  for (const u of g.unjudged) if (!into.unjudged.some((x) => x.term.lease === u.term.lease)) into.unjudged.push(u);
  for (const n of g.leaderless) if (!into.leaderless.includes(n)) into.leaderless.push(n);
}

/** (A part's scans: its leases and candidates, and every identity row.) */
const OUTLAST = 'its scans outlast an invocation';
const SKIPPED = 'skipped this round (twice in a row), its leases left to their streams and timers';

const asError = (e: unknown): Error => (e instanceof Error ? e : new Error(String(e)));

function merge(into: TickResult, r: ReconcileAllResult): void {
  into.leases += r.leases;
  into.unseeded += r.unseeded;
  into.reached += r.reached;
  into.outcomes.push(...r.outcomes);
  into.errors.push(...r.errors);
  // a lease once: its row refused in its own part, and again by its own read where another part holds its candidates
  for (const b of r.broken) if (!into.broken.some((x) => x.lease === b.lease)) into.broken.push(b);
  into.broken.sort((a, b) => (a.lease < b.lease ? -1 : a.lease > b.lease ? 1 : 0));
  for (const u of r.unjudged) if (!into.unjudged.some((x) => x.term.lease === u.term.lease)) into.unjudged.push(u);
  // a row once: each part's pass scans every identity row (a session it judges by may be anywhere)
  const seen = new Set(into.invalid.map((i) => JSON.stringify(i.key)));
  for (const i of r.invalid) if (!seen.has(JSON.stringify(i.key))) into.invalid.push(i);
  into.refusedSessions.push(...r.refusedSessions);
  into.refusedCandidates.push(...r.refusedCandidates);
  into.collectedCandidates.push(...r.collectedCandidates);
  into.collectedIdentities.push(...r.collectedIdentities);
  into.leaderless.push(...r.leaderless);
  if (r.stopped) into.stopped = r.stopped;
}

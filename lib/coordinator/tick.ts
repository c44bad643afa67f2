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
 * late in), its leases reconciled by their streams and timers only. A round that skipped a part counted none of its leases:
 * it keeps its parts for the next (any other failure counts its lease: parts follow the leases
 * counted), and its gauges are published as a round not yet done (roundGauges: the larger of its
 * counts and the last round's, kept as the last round's), so a lease leaderless in the skipped part
 * is not dropped from LeaderlessLeases at once (a round on, the skip itself is what the failures tell).
 */
import { ValidationError } from '../schemas/validation.js';
import { MAX_SEGMENTS, type TickCursor } from '../schemas/tick-cursor.js';
import { ConflictError, isReplicatedWriteConflict } from '../stores/errors.js';
import type { TickCursorRead } from '../stores/tick-store.js';
import { collectIdentities, emptyResult, reconcileAll, type CoordinatorDeps, type PassOptions, type ReconcileAllResult } from './reconcile.js';

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

const FIRST: Omit<TickCursor, 'revision' | 'component' | 'name'> = { segments: 1, segment: 0, leases: 0, invocations: 0 };

/** Parts for a round that reconciles `leases`: `segmentLeases` each, 1 at least, DynamoDB's most at most. */
export const segmentsFor = (leases: number, segmentLeases: number): number => Math.min(MAX_SEGMENTS, Math.max(1, Math.ceil(leases / segmentLeases)));

/** One invocation of the coordinator's tick: see the module's comment. */
export async function tick(deps: CoordinatorDeps, opts: TickOptions = {}): Promise<TickResult> {
  if (opts.deadline === undefined) return reconcileAll(deps);
  const stop = opts.deadline - (opts.marginMs ?? TICK_DEFAULTS.marginMs);
  const past = () => deps.clock.monotonic() >= stop;
  const startedAt = deps.clock.now();
  const read = await readCursor(deps);
  const was = read.item;
  const c = { ...FIRST, ...(was ? strip(was) : {}) };
  if (c.invocations === 0) c.roundStartedAt = startedAt;
  c.invocations++;

  const merged: TickResult = emptyResult();
  const afterEach = opts.afterEach ? { afterEach: opts.afterEach } : {};
  // What the last invocation's pass reached its part's end too late to collect: first, with the
  // whole time (once: cut short again, given up until that part's next pass); then the round goes on
  // in the same invocation
  const owedPart = c.owedParts === undefined ? undefined : { index: c.owedPart ?? 0, total: c.owedParts };
  let owesPart: typeof owedPart;
  let owesIdentities = false;
  let first = true; // no pass yet: the next has the whole invocation
  if (owedPart) {
    first = false;
    const r = await reconcileAll(deps, { segment: owedPart, collectOnly: true, deadline: stop, ...afterEach });
    if (r.unscanned) retell(r, `(the collection owed, part ${owedPart.index} of ${owedPart.total})`, `${OUTLAST}: its owed collection given up until its next pass`);
    merge(merged, r);
  }
  if (c.owesIdentities && !past()) {
    first = false;
    mergeCollected(merged, await collectIdentities(deps, { deadline: stop, ...afterEach }));
  }
  while (c.segment < c.segments && !past()) {
    const part = { index: c.segment, total: c.segments };
    const r = await reconcileAll(deps, { segment: part, ...(c.after === undefined ? {} : { after: c.after }), deadline: stop, ...afterEach });
    const whole = first;
    first = false;
    if (r.unscanned) {
      // its scans did not finish: the part is taken again at the next invocation, its first pass;
      // a part whose scans outlast that twice in a row (`unscanned` once already) is skipped for the round, told
      if (whole && c.unscanned) {
        retell(r, `(part ${part.index} of ${part.total})`, `${OUTLAST}: skipped this round (twice in a row), its leases left to their streams and timers`);
        merge(merged, r);
        c.skipped = (c.skipped ?? 0) + 1;
        delete c.unscanned;
        c.segment++;
        delete c.after;
        continue;
      }
      if (whole) {
        c.unscanned = 1;
        retell(r, `(the scans of part ${part.index} of ${part.total})`, `${OUTLAST}: taken again at the next (skipped if again)`);
      } else r.errors.pop(); // (begun late: no fault, the time ran out; the last error, the scans' own)
      merge(merged, r);
      break;
    }
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
  }
  const done = c.segment >= c.segments;
  const ageMs = deps.clock.now() - (c.roundStartedAt ?? startedAt);
  if (done && c.segments > 1) {
    // a part does not see every lease that names a session: expired identities are collected once a round, over all of them
    if (!past()) mergeCollected(merged, await collectIdentities(deps, { deadline: stop, ...afterEach }));
    if (past()) owesIdentities = true; // (none, or cut short)
  }
  const leaderless = (c.leaderless ?? 0) + merged.leaderless.length;
  const failures = (c.failures ?? 0) + merged.errors.length;
  // a round that skipped a part counted none of its leases: as a round not yet done, the last round's
  // counts stand where larger; its own counts are kept as the last round's (not the larger: a part
  // skipped round after round would hold the fleet's highest count for ever), so the skipped part's
  // leases leave LeaderlessLeases a round on, its skip told in the failures each round
  const counted = done && !c.skipped;
  const gauges: RoundGauges = counted ? { leaderless, failures } : { leaderless: Math.max(leaderless, c.lastLeaderless ?? 0), failures: Math.max(failures, c.lastFailures ?? 0) };
  const progress: RoundProgress = { segments: c.segments, invocations: c.invocations, leases: c.leases, done, ageMs, lostRace: false, gauges };
  if (!done) progress.next = { segment: c.segment, after: c.after };
  const owed = { ...(owesPart ? { owedPart: owesPart.index, owedParts: owesPart.total } : {}), ...(owesIdentities ? { owesIdentities: true as const } : {}) };
  if (owesPart || owesIdentities) progress.owes = owed;
  // a round that skipped a part counted short: its parts are kept (any other failure counts its lease)
  const sized = segmentsFor(c.leases, opts.segmentLeases ?? TICK_DEFAULTS.segmentLeases);
  const next: Omit<TickCursor, 'revision' | 'component' | 'name'> = done
    ? { ...FIRST, segments: c.skipped ? Math.max(sized, c.segments) : sized, ...given({ lastLeaderless: leaderless, lastFailures: failures }), ...owed }
    : {
        segments: c.segments,
        segment: c.segment,
        leases: c.leases,
        invocations: c.invocations,
        ...given({ after: c.after, roundStartedAt: c.roundStartedAt, leaderless, failures, lastLeaderless: c.lastLeaderless, lastFailures: c.lastFailures, unscanned: c.unscanned, skipped: c.skipped }),
        ...owed,
      };
  if (!sameCursor(was ? strip(was) : FIRST, next)) {
    try {
      await deps.ticks.write(read, { set: next, remove: (['after', 'roundStartedAt', 'leaderless', 'failures', 'lastLeaderless', 'lastFailures', 'owedPart', 'owedParts', 'owesIdentities', 'unscanned', 'skipped'] as const).filter((k) => !(k in next)) });
    } catch (e) {
      // another invocation moved the cursor first, or (a multi-Region table) another Region's tick
      // was writing it at that moment (the last try not applied; an earlier try of the AWS SDK's may
      // have landed, its answer lost: either position may stand)
      if (e instanceof ConflictError || isReplicatedWriteConflict(e)) progress.lostRace = true; // whichever position stands, at worst a part is reconciled twice
      else {
        // refused (writes denied after a deploy, throttling past the SDK's retries): a failure like
        // a reconcile's, told and counted, and the gauges still published; the next invocation goes
        // on from the cursor as it was (at worst a slice reconciled twice)
        merged.errors.push({ lease: '(the tick cursor)', error: e instanceof Error ? e : new Error(String(e)) });
        gauges.failures++;
      }
    }
  }
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

const strip = ({ revision: _r, component: _c, name: _n, ...rest }: TickCursor): Omit<TickCursor, 'revision' | 'component' | 'name'> => rest;

function sameCursor(a: Omit<TickCursor, 'revision' | 'component' | 'name'>, b: Omit<TickCursor, 'revision' | 'component' | 'name'>): boolean {
  const keys = new Set([...Object.keys(a), ...Object.keys(b)]) as Set<keyof typeof a>;
  return [...keys].every((k) => a[k] === b[k]);
}

/** What collectIdentities did (at a round's end, or owed), into the invocation's result. */
function mergeCollected(into: TickResult, g: Awaited<ReturnType<typeof collectIdentities>>): void {
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

/** A pass whose scans were unfinished at its deadline, told as what that cost (`lease`: what it was a pass of): its last error, UNSCANNED, replaced. */
function retell(r: ReconcileAllResult, lease: string, message: string): void {
  r.errors[r.errors.length - 1] = { lease, error: new Error(message) };
}

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

/**
 * Judges a run's history: the leadership starts and stops every worker recorded, the fenced
 * writes the database accepted, what the harness saw on the leases table, the faults it injected
 * and the state at the end. Pure: no I/O, no clock; every time is a CLOCK_MONOTONIC stamp.
 *
 * What counts as a violation, precisely:
 * - overlap: two start-ups of one lease both inside a term for longer than `allowedSkewMs`.
 *   Tolerated (and counted apart): the older leader was frozen (SIGSTOP) when the overlap began
 *   (its pause still on) and stopped within `wakeGraceMs` of waking — a pause breaks every time-based lease; fencing
 *   is what must hold then, and the ledger check below is where it is judged.
 * - token: per lease, in the order terms started, fencing tokens strictly increase, with no
 *   exception: a start-up that stopped leading a term never leads it again (a row it finds still in
 *   that term it takes again as a new term, with a higher token).
 * - fencing: a write the database accepted with token T although a term with a token above T is
 *   known to have begun before the write was sent (a holder's `started` line or an observation of
 *   the lease, both of which come after the database switched to the newer token). Writes in
 *   flight across a change are not judged: the database may have taken them first.
 * - strayWrite: an accepted write under a (start-up, token) that never started leading.
 * - outsideTerm: an accepted write (not a zombie write) of a term sent before that term began or
 *   after its stop line: the work wrote when it was not leading.
 * - lostCandidate: a worker still running at the end whose candidate row is gone or taken.
 * - leaderless: after the last fault healed, a lease with live candidates spent more than
 *   `healMs` without any leader (summed over the rest of the run).
 * - leaderlessSpell: a spell without a leader (a lease judged by the leaderless rule) whose part
 *   outside every excused window — [fault start, its heal + `healMs`] for each fault that heals (a
 *   Region lost for good: healed when its survivors served again, never if they did not), and the
 *   start-up [startedAt, startedAt + `healMs`] — is longer than `healMs`. The leaderless rule counts
 *   only after the last heal, so a late, unrelated fault left every spell before it unjudged.
 * - leaderlessAfterLoss: a Region lost for good (a `regionLoss` window; it never heals) and its
 *   survivors serving again (`servingAgainAt`): a lease judged by the leaderless rule had no leader
 *   within `healMs` of the later of that and the end of every other fault under way then, or begun
 *   before the bound is due (each such fault's end moving the start on, as for stuck leases). The
 *   leaderless rule alone counts only after the run's last heal, so a loss followed by a quiet spell
 *   and later unrelated faults left the spell unjudged.
 * - spuriousChange: with `quietFrom`, a new term that began after it with no fault to explain it.
 * - record: a history that contradicts itself (started twice, stopped a term it never started).
 * - runOnce: two accepted completions of one run-once window on one lease (withLease `runOnce`).
 * - requests (with `requestBound`): a worker process sent more than `max` DynamoDB requests for
 *   one lease within some window of `windowMs` (lib/history/request-bound.ts derives both from
 *   the protocol's cadences).
 * - stuckLease: a lease whose holder's work failed, or whose fencing token was moved under it, had
 *   no new term within `stuckMs` of that (later, if other faults were still under way: from when
 *   they healed). Neither heals anything: the leaderless rule's clock is not moved by them.
 */
import * as z from 'zod';
import { parse } from '../schemas/validation.js';
import { Mono, type EndState, type FaultWindow, type HistoryRecord, type LedgerEntry, type Observation } from './schema.js';

export const CheckOptions = z
  .object({
    /** Overlap of two terms tolerated, in ms (recording latency; 0 on one machine's monotonic clock). */
    allowedSkewMs: z.number().min(0).default(0),
    /** The longest a lease may go without a leader after the last fault healed. */
    healMs: z.number().int().positive().default(15_000),
    /** A leader frozen by SIGSTOP must stop this soon after it wakes. */
    wakeGraceMs: z.number().min(0).default(1_000),
    /**
     * A leader whose lease row an operator deleted must stop this soon after the delete: it learns
     * at its next renewal (a renew interval, 5 s by default), and stops at its renew deadline at the
     * latest when that renewal cannot be made (the default: client-go's 10 s).
     */
    revokedGraceMs: z.number().min(0).default(10_000),
    /** Count from here when judging leaderless time; default: the end of the last fault. */
    healedAt: Mono.optional(),
    /**
     * The run's start: the leaderless-spell rule counts from here, its start-up excused for
     * `healMs` as a fault's heal is. Unset: from `healedAt` when set, else each lease's first term.
     */
    startedAt: Mono.optional(),
    /** From here on every new term must be explained by a fault (the soak: none at all). */
    quietFrom: Mono.optional(),
    /**
     * Leases held only while a short-lived run runs (withLease): between runs nobody leads them by
     * design, so the leaderless check passes them over. Every other check applies.
     */
    episodicLeases: z.array(z.string().min(1)).default([]),
    /**
     * The most requests a worker process may send for one lease within any window of `windowMs`
     * (lib/history/request-bound.ts: derived from the protocol's cadences). Unset: not judged.
     */
    requestBound: z.object({ windowMs: z.number().positive(), max: z.number().int().positive() }).strict().optional(),
    /** A lease whose holder's work failed or whose token was moved has a new term within this; default: `healMs`. */
    stuckMs: z.number().int().positive().optional(),
  })
  .strict();
export type RequestBound = NonNullable<z.infer<typeof CheckOptions>['requestBound']>;

/**
 * Faults that strike a term and heal nothing: the holder's work failed (`workFailed`), its lease's
 * fencing token was moved under it (`tokenMoved`). The leader must give the term up, or learn of
 * it at its next renewal, so the stuck-lease rule judges from the moment they struck; they excuse
 * no other rule's time.
 */
export const STRIKES: readonly string[] = ['workFailed', 'tokenMoved'];
/** The fault windows that heal: every one but the strikes. */
export const healingFaults = (faults: readonly FaultWindow[]): FaultWindow[] => faults.filter((f) => !STRIKES.includes(f.kind));
/**
 * Losses that never heal: a Region lost for good (`regionLoss`, recorded at the moment of the
 * loss). Its window still counts as healed at that moment for the leaderless rule (unchanged); the
 * leaderless-after-loss rule judges it from when the survivors served again (`servingAgainAt`).
 */
export const PERMANENT_LOSSES: readonly string[] = ['regionLoss'];

/** One worker process's DynamoDB requests for one lease: when each attempt was sent (monotonic ms, as Mono / 1e6), in order. */
export interface ProcessRequests {
  process: string;
  lease: string;
  sentMs: readonly number[];
}
export type CheckOptionsInput = z.input<typeof CheckOptions>;

export interface CheckInput {
  history: readonly HistoryRecord[];
  ledger?: readonly LedgerEntry[];
  observations?: readonly Observation[];
  faults?: readonly FaultWindow[];
  /** Requests per worker process and lease, judged with `requestBound`. */
  requests?: readonly ProcessRequests[];
  /**
   * The leases the run's workers stood for (the simulator: every lease a worker process asked
   * DynamoDB about): each is judged by the leaderless rules, whether or not it ever had a term.
   */
  leases?: readonly string[];
  /** At least the moment observation ended; with `live` and `candidateRows` the lost-row check runs. */
  end: Pick<EndState, 'mono'> & Partial<Omit<EndState, 'mono'>>;
}

/** One term as lived by one start-up: from its `started` line to its `stopped` line. */
export interface Term {
  lease: string;
  identity: string;
  instance: string;
  fencingToken: number;
  start: bigint;
  stop: bigint;
  /** No stop line: still leading when observation ended. */
  open: boolean;
  reason?: string;
}

type TermRef = Pick<Term, 'identity' | 'instance' | 'fencingToken'>;

export type Violation =
  | { kind: 'overlap'; lease: string; a: TermRef; b: TermRef; overlapMs: number; message: string }
  | { kind: 'token'; lease: string; previous: TermRef; next: TermRef; message: string }
  | { kind: 'fencing'; lease: string; write: string; writer: TermRef; newerToken: number; sentAfterMs: number; zombie: boolean; message: string }
  | { kind: 'strayWrite'; lease: string; write: string; writer: TermRef; message: string }
  | { kind: 'outsideTerm'; lease: string; write: string; writer: TermRef; message: string }
  | { kind: 'lostCandidate'; lease: string; identity: string; instance: string; found?: string; message: string }
  | { kind: 'leaderless'; lease: string; leaderlessMs: number; message: string }
  | { kind: 'leaderlessSpell'; lease: string; from: number; to: number; unexcusedMs: number; message: string }
  | { kind: 'leaderlessAfterLoss'; lease: string; lost: string; leaderlessMs: number; message: string }
  | { kind: 'spuriousChange'; lease: string; from?: TermRef; to: TermRef; message: string }
  | { kind: 'record'; lease: string; instance: string; message: string }
  | { kind: 'runOnce'; lease: string; window: string; writes: string[]; message: string }
  | { kind: 'requests'; lease: string; process: string; requests: number; windowMs: number; max: number; message: string }
  | { kind: 'stuckLease'; lease: string; strike: string; message: string };

export interface Figures {
  leases: number;
  terms: number;
  /** New holders per lease (a start by another start-up than the previous start). */
  holderChanges: number;
  /** Overlaps forgiven because the older leader was frozen (fencing had to hold there). */
  pausedOverlaps: number;
  /** Overlaps forgiven because an operator deleted the older term's lease row under it (fencing had to hold there). */
  revokedOverlaps: number;
  /** The longest of those overlaps (ms): how long a leader led on after a term end it did not write; undefined: none. */
  worstRevokedOverlapMs: number | undefined;
  /** Accepted fenced writes, and how many of them were zombie writes with an old term's token. */
  ledgerWrites: number;
  zombieWritesAccepted: number;
  /** Per lease: ms without a leader after the last fault healed. */
  leaderlessAfterHealMs: Record<string, number>;
  worstLeaderlessAfterHealMs: number | undefined;
  /** The longest part of a leaderless spell no fault (nor the start-up) excused (ms); undefined: none judged. */
  worstUnexcusedLeaderlessMs: number | undefined;
  /**
   * Region losses judged by the leaderless-after-loss rule (the survivors served again, and the run
   * went on `healMs` past the faults then under way), and the longest any lease then went without a
   * leader, from the rule's start (ms).
   */
  lossesJudged: number;
  worstLeaderlessAfterLossMs: number | undefined;
  /** The most requests one process sent for one lease within one `requestBound` window; undefined: not judged. */
  worstRequestsPerWindow: number | undefined;
  /** Strikes judged by the stuck-lease rule, and the longest from one to the next term (ms). */
  strikesJudged: number;
  worstStrikeToTermMs: number | undefined;
}

export interface Verdict {
  ok: boolean;
  violations: Violation[];
  figures: Figures;
  terms: Term[];
}

const ms = (ns: bigint): number => Number(ns) / 1e6;
const nsOf = (millis: number): bigint => BigInt(Math.round(millis * 1e6));
const ref = (t: Pick<Term, 'identity' | 'instance' | 'fencingToken'>): TermRef => ({ identity: t.identity, instance: t.instance, fencingToken: t.fencingToken });
const byMono = <T>(mono: (x: T) => bigint) => (a: T, b: T) => (mono(a) < mono(b) ? -1 : mono(a) > mono(b) ? 1 : 0);
const groupBy = <T>(xs: readonly T[], key: (x: T) => string): Map<string, T[]> => {
  const m = new Map<string, T[]>();
  for (const x of xs) (m.get(key(x)) ?? m.set(key(x), []).get(key(x))!).push(x);
  return m;
};
const describeTerm = (t: TermRef) => `${t.identity} (${t.instance}, token ${t.fencingToken})`;

/** Pairs each start-up's started/stopped lines into terms; contradictions are `record` violations. */
export function termsOf(history: readonly HistoryRecord[], end: bigint, violations: Violation[] = []): Term[] {
  const terms: Term[] = [];
  for (const records of groupBy(history, (r) => `${r.lease}\u0000${r.instance}`).values()) {
    let open: Term | undefined;
    for (const r of [...records].sort(byMono((x) => BigInt(x.mono)))) {
      const at = BigInt(r.mono);
      if (r.event === 'started') {
        if (open) {
          violations.push({ kind: 'record', lease: r.lease, instance: r.instance, message: `${r.lease}: ${r.instance} started token ${r.fencingToken} while its term with token ${open.fencingToken} had not stopped` });
          terms.push({ ...open, stop: at });
        }
        open = { lease: r.lease, identity: r.identity, instance: r.instance, fencingToken: r.fencingToken, start: at, stop: at, open: true };
      } else {
        if (!open) {
          violations.push({ kind: 'record', lease: r.lease, instance: r.instance, message: `${r.lease}: ${r.instance} stopped token ${r.fencingToken} without having started it` });
          continue;
        }
        if (open.fencingToken !== r.fencingToken)
          violations.push({ kind: 'record', lease: r.lease, instance: r.instance, message: `${r.lease}: ${r.instance} stopped token ${r.fencingToken} but its term had token ${open.fencingToken}` });
        terms.push({ ...open, stop: at, open: false, ...(r.reason ? { reason: r.reason } : {}) });
        open = undefined;
      }
    }
    if (open) terms.push({ ...open, stop: open.start > end ? open.start : end });
  }
  return terms.sort(byMono((t) => t.start));
}

/** The total length of `intervals` inside [from, to], overlaps counted once. */
function covered(intervals: readonly [bigint, bigint][], from: bigint, to: bigint): bigint {
  const clipped = intervals
    .map(([a, b]): [bigint, bigint] => [a < from ? from : a, b > to ? to : b])
    .filter(([a, b]) => b > a)
    .sort((x, y) => (x[0] < y[0] ? -1 : x[0] > y[0] ? 1 : 0));
  let total = 0n;
  let curA: bigint | undefined;
  let curB = 0n;
  for (const [a, b] of clipped) {
    if (curA === undefined || a > curB) {
      if (curA !== undefined) total += curB - curA;
      curA = a;
      curB = b;
    } else if (b > curB) curB = b;
  }
  if (curA !== undefined) total += curB - curA;
  return total;
}

export function checkHistory(input: CheckInput, options: CheckOptionsInput = {}): Verdict {
  const o = parse(CheckOptions, options, 'history checker options');
  const end = BigInt(input.end.mono);
  const violations: Violation[] = [];
  const terms = termsOf(input.history, end, violations);
  const faults = input.faults ?? [];
  const pauses = faults.filter((f) => f.kind === 'pause' && f.instances?.length);
  const grace = nsOf(o.wakeGraceMs);
  const skew = nsOf(o.allowedSkewMs);
  const byLease = groupBy(terms, (t) => t.lease);
  const leases = new Set([...byLease.keys(), ...(input.leases ?? []), ...(input.end.live ?? []).map((l) => l.lease)]);
  let pausedOverlaps = 0;
  let revokedOverlaps = 0;
  let worstRevokedOverlapMs: number | undefined;
  const deletes = faults.filter((f) => f.kind === 'leaseDelete' && f.lease !== undefined);
  const revokeGrace = nsOf(o.revokedGraceMs);
  /**
   * The older term's lease row was deleted by an operator while it ran, before the overlap, and it
   * stopped within a renewal of the delete: the holder cannot know before then (the term ended
   * without a write it could see), so this is the overlap fencing covers, as a frozen leader's.
   */
  const revoked = (older: Term, overlapStart: bigint) =>
    deletes.some((d) => d.lease === older.lease && older.start < BigInt(d.from) && BigInt(d.from) <= overlapStart && older.stop <= BigInt(d.from) + revokeGrace);
  let holderChanges = 0;

  /**
   * The older term's holder was frozen at the moment the overlap began (its pause on then, not
   * over) and stopped within the grace of waking: the one that failed to step down while frozen. A
   * holder that woke and then began a term over a live one, or led on over one begun after it
   * woke, is not forgiven.
   */
  const frozen = (older: Term, overlapStart: bigint) =>
    pauses.some((p) => p.instances!.includes(older.instance) && BigInt(p.from) <= overlapStart && overlapStart <= BigInt(p.to) && older.stop <= BigInt(p.to) + grace);

  for (const [lease, ts] of byLease) {
    // Overlaps: every pair of terms of different start-ups that share time.
    for (let i = 0; i < ts.length; i++) {
      for (let j = i + 1; j < ts.length && ts[j]!.start < ts[i]!.stop; j++) {
        const [a, b] = [ts[i]!, ts[j]!];
        if (a.instance === b.instance) continue;
        const from = b.start;
        const to = a.stop < b.stop ? a.stop : b.stop;
        if (to - from <= skew) continue;
        if (frozen(a, from)) {
          pausedOverlaps++;
          continue;
        }
        if (revoked(a, from)) {
          revokedOverlaps++;
          worstRevokedOverlapMs = Math.max(worstRevokedOverlapMs ?? 0, ms(to - from));
          continue;
        }
        violations.push({
          kind: 'overlap',
          lease,
          a: ref(a),
          b: ref(b),
          overlapMs: ms(to - from),
          message: `${lease}: ${describeTerm(a)} and ${describeTerm(b)} both led for ${ms(to - from).toFixed(1)} ms`,
        });
      }
    }
    // Tokens, in the order terms started.
    for (let i = 1; i < ts.length; i++) {
      const [p, n] = [ts[i - 1]!, ts[i]!];
      if (n.instance !== p.instance) holderChanges++;
      if (n.fencingToken <= p.fencingToken)
        violations.push({ kind: 'token', lease, previous: ref(p), next: ref(n), message: `${lease}: ${describeTerm(n)} started after ${describeTerm(p)}: fencing tokens must strictly increase` });
    }
  }

  // Fenced writes: evidence that a newer term had begun, from starts and observations.
  const ledger = input.ledger ?? [];
  const evidence = groupBy(
    [...terms.map((t) => ({ lease: t.lease, token: t.fencingToken, at: t.start })), ...(input.observations ?? []).map((x) => ({ lease: x.lease, token: x.fencingToken, at: BigInt(x.mono) }))],
    (e) => e.lease,
  );
  const sorted = new Map([...evidence].map(([lease, es]) => [lease, es.sort(byMono((e) => e.at))]));
  const held = new Set(terms.map((t) => `${t.lease}\u0000${t.instance}\u0000${t.fencingToken}`));
  for (const w of ledger) {
    const writer = { identity: w.identity, instance: w.instance, fencingToken: w.fencingToken };
    if (!held.has(`${w.lease}\u0000${w.instance}\u0000${w.fencingToken}`)) {
      violations.push({ kind: 'strayWrite', lease: w.lease, write: w.id, writer, message: `${w.lease}: write ${w.id} was accepted under ${describeTerm(writer)}, a term that start-up never began` });
    }
    const sent = BigInt(w.sentMono);
    // a write the work sent (not the harness's deliberate zombie write) outside its own term: before
    // the term began, or after its holder was told to stop (the stop line); the ledger records a
    // write as it is sent, so the SDK let work write that was not leading then
    const own = terms.filter((t) => t.lease === w.lease && t.instance === w.instance && t.fencingToken === w.fencingToken);
    if (!w.zombie && own.length && !own.some((t) => t.start <= sent && (t.open || sent <= t.stop))) {
      const t = own[0]!;
      violations.push({
        kind: 'outsideTerm',
        lease: w.lease,
        write: w.id,
        writer,
        message: `${w.lease}: write ${w.id} under ${describeTerm(writer)} was accepted though sent ${sent < t.start ? `${ms(t.start - sent).toFixed(1)} ms before its term began` : `${ms(sent - t.stop).toFixed(1)} ms after its term stopped`}`,
      });
    }
    const newer = (sorted.get(w.lease) ?? []).find((e) => e.at < sent && e.token > w.fencingToken);
    if (newer) {
      violations.push({
        kind: 'fencing',
        lease: w.lease,
        write: w.id,
        writer,
        newerToken: newer.token,
        sentAfterMs: ms(sent - newer.at),
        zombie: w.zombie,
        message: `${w.lease}: write ${w.id} with token ${w.fencingToken} was accepted although the term with token ${newer.token} had begun ${ms(sent - newer.at).toFixed(1)} ms before it was sent`,
      });
    }
  }
  const zombieWritesAccepted = ledger.filter((w) => w.zombie).length;

  // Run-once windows: one accepted completion each.
  for (const [key, done] of groupBy(ledger.filter((w) => w.window !== undefined), (w) => `${w.lease}\u0000${w.window}`)) {
    if (done.length < 2) continue;
    const [lease, window] = key.split('\u0000') as [string, string];
    violations.push({ kind: 'runOnce', lease, window, writes: done.map((w) => w.id), message: `${lease}: window ${window} was completed ${done.length} times (${done.map((w) => `${w.id} with token ${w.fencingToken}`).join(', ')}); at most once is allowed` });
  }

  // Candidate rows of the workers still running.
  if (input.end.live && input.end.candidateRows) {
    const rows = new Map(input.end.candidateRows.map((r) => [`${r.lease}\u0000${r.name}`, r]));
    for (const l of input.end.live) {
      const row = rows.get(`${l.lease}\u0000${l.identity}`);
      if (row?.identity === l.instance) continue;
      violations.push({
        kind: 'lostCandidate',
        lease: l.lease,
        identity: l.identity,
        instance: l.instance,
        ...(row?.identity ? { found: row.identity } : {}),
        message: `${l.lease}: ${l.identity} (${l.instance}) is running but its candidate row is ${row ? `owned by ${row.identity ?? 'nobody'}` : 'gone'}`,
      });
    }
  }

  // Leaderless time after the last fault healed, for leases that still have live candidates.
  const lastHeal = healingFaults(faults).reduce<bigint | undefined>((m, f) => (m === undefined || BigInt(f.to) > m ? BigInt(f.to) : m), undefined);
  const healedAt = o.healedAt !== undefined ? BigInt(o.healedAt) : lastHeal;
  const leaderlessAfterHealMs: Record<string, number> = {};
  if (healedAt !== undefined && end > healedAt) {
    const liveLeases = input.end.live ? new Set(input.end.live.map((l) => l.lease)) : leases;
    for (const lease of [...leases].filter((l) => liveLeases.has(l) && !o.episodicLeases.includes(l)).sort()) {
      const gap = end - healedAt - covered((byLease.get(lease) ?? []).map((t) => [t.start, t.stop]), healedAt, end);
      leaderlessAfterHealMs[lease] = ms(gap);
      if (ms(gap) > o.healMs)
        violations.push({ kind: 'leaderless', lease, leaderlessMs: ms(gap), message: `${lease}: ${(ms(gap) / 1000).toFixed(1)} s without a leader after the faults healed (at most ${o.healMs / 1000} s allowed)` });
    }
  }

  // Leaderless spells: the part of each that no fault (nor the start-up) excuses.
  const excused: [bigint, bigint][] = healingFaults(faults).map((f) => {
    const lost = PERMANENT_LOSSES.includes(f.kind);
    const healed = lost ? (f.servingAgainAt === undefined ? end : BigInt(f.servingAgainAt) > BigInt(f.to) ? BigInt(f.servingAgainAt) : BigInt(f.to)) : BigInt(f.to);
    return [BigInt(f.from), healed + nsOf(o.healMs)];
  });
  const startedAt = o.startedAt !== undefined ? BigInt(o.startedAt) : undefined;
  if (startedAt !== undefined) excused.push([startedAt, startedAt + nsOf(o.healMs)]);
  // judged from the run's start; without it, from where the caller counts (`healedAt`: the soak's
  // quiet start), else from each lease's first term
  const spellsFrom = startedAt ?? (o.healedAt !== undefined ? BigInt(o.healedAt) : undefined);
  let worstUnexcusedLeaderlessMs: number | undefined;
  const judgedLeases = input.end.live ? new Set(input.end.live.map((l) => l.lease)) : leases;
  for (const lease of [...leases].filter((l) => judgedLeases.has(l) && !o.episodicLeases.includes(l)).sort()) {
    const ts = (byLease.get(lease) ?? []).filter((t) => t.stop > t.start);
    const from = spellsFrom ?? ts[0]?.start;
    if (from === undefined || end <= from) continue;
    // the spells: [from, end] less the terms
    const spells: [bigint, bigint][] = [];
    let cur = from;
    for (const t of [...ts].sort(byMono((x) => x.start))) {
      if (t.start > cur) spells.push([cur, t.start < end ? t.start : end]);
      if (t.stop > cur) cur = t.stop;
      if (cur >= end) break;
    }
    if (cur < end) spells.push([cur, end]);
    for (const [a, b] of spells) {
      if (b <= a) continue;
      const unexcused = b - a - covered(excused, a, b);
      worstUnexcusedLeaderlessMs = Math.max(worstUnexcusedLeaderlessMs ?? 0, ms(unexcused));
      if (unexcused > nsOf(o.healMs))
        violations.push({
          kind: 'leaderlessSpell',
          lease,
          from: ms(a),
          to: ms(b),
          unexcusedMs: ms(unexcused),
          message: `${lease}: without a leader from ${(ms(a) / 1000).toFixed(3)} s to ${(ms(b) / 1000).toFixed(3)} s, ${(ms(unexcused) / 1000).toFixed(1)} s of it with no fault under way or healing within ${o.healMs / 1000} s before (at most ${o.healMs / 1000} s allowed)`,
        });
    }
  }

  // Leaderless time after a Region lost for good: judged from when its survivors served again, once
  // every other fault under way (or begun before the bound is due) has healed.
  const bound = nsOf(o.healMs);
  let lossesJudged = 0;
  let worstLeaderlessAfterLossMs: number | undefined;
  const liveForLoss = input.end.live ? new Set(input.end.live.map((l) => l.lease)) : leases;
  for (const loss of faults.filter((f) => PERMANENT_LOSSES.includes(f.kind))) {
    if (loss.servingAgainAt === undefined) continue; // no survivor served again: nobody could be elected
    const serving = BigInt(loss.servingAgainAt);
    let from = serving > BigInt(loss.from) ? serving : BigInt(loss.from);
    for (let moved = true; moved; ) {
      moved = false;
      for (const w of healingFaults(faults)) {
        if (w !== loss && BigInt(w.from) <= from + bound && BigInt(w.to) > from) {
          from = BigInt(w.to);
          moved = true;
        }
      }
    }
    if (from + bound > end) continue; // the run ended first
    lossesJudged++;
    const lost = loss.detail ?? 'a Region';
    for (const lease of [...leases].filter((l) => liveForLoss.has(l) && !o.episodicLeases.includes(l)).sort()) {
      // the first moment from `from` on that a term runs (a term running at `from`: no wait at all)
      let led: bigint | undefined;
      for (const t of byLease.get(lease) ?? []) {
        if (t.stop <= from || (t.stop <= t.start && !t.open)) continue;
        const at = t.start > from ? t.start : from;
        if (led === undefined || at < led) led = at;
      }
      const gap = (led ?? end) - from;
      worstLeaderlessAfterLossMs = Math.max(worstLeaderlessAfterLossMs ?? 0, ms(gap));
      if (gap > bound)
        violations.push({
          kind: 'leaderlessAfterLoss',
          lease,
          lost,
          leaderlessMs: ms(gap),
          message: `${lease}: ${(ms(gap) / 1000).toFixed(1)} s without a leader after ${lost} was lost at ${(ms(BigInt(loss.from)) / 1000).toFixed(3)} s, counted from ${(ms(from) / 1000).toFixed(3)} s (its survivors served again${from > serving ? ' and the faults then under way healed' : ''}; at most ${o.healMs / 1000} s allowed)${led === undefined ? ': no leader by the end' : ''}`,
        });
    }
  }

  // Requests: per process and lease, the most sent within any window of requestBound.windowMs.
  let worstRequestsPerWindow: number | undefined;
  if (o.requestBound) {
    const { windowMs, max } = o.requestBound;
    for (const r of input.requests ?? []) {
      let worst = 0;
      let worstAt = 0;
      for (let i = 0, j = 0; j < r.sentMs.length; j++) {
        while (r.sentMs[j]! - r.sentMs[i]! >= windowMs) i++;
        if (j - i + 1 > worst) [worst, worstAt] = [j - i + 1, r.sentMs[i]!];
      }
      worstRequestsPerWindow = Math.max(worstRequestsPerWindow ?? 0, worst);
      if (worst > max)
        violations.push({ kind: 'requests', lease: r.lease, process: r.process, requests: worst, windowMs, max, message: `${r.lease}: ${r.process} sent ${worst} DynamoDB requests within ${(windowMs / 1000).toFixed(1)} s from ${(worstAt / 1000).toFixed(3)} s (at most ${max} allowed)` });
    }
  }

  // Stuck leases: after a strike (the holder's work failed, the token moved), a new term within stuckMs.
  const stuck = nsOf(o.stuckMs ?? o.healMs);
  const healing = healingFaults(faults);
  let strikesJudged = 0;
  let worstStrikeToTermMs: number | undefined;
  for (const f of faults.filter((x) => STRIKES.includes(x.kind) && x.lease !== undefined && !o.episodicLeases.includes(x.lease))) {
    const at = BigInt(f.from);
    // other faults under way (or coming) before it is due: judged from when they healed
    let from = at;
    for (let moved = true; moved; ) {
      moved = false;
      for (const w of healing) {
        if (BigInt(w.from) <= from + stuck && BigInt(w.to) > from) {
          from = BigInt(w.to);
          moved = true;
        }
      }
    }
    if (from + stuck > end) continue; // the run ended first
    const ts = byLease.get(f.lease!) ?? [];
    // the terms it struck: for a failed work, the failing start-up's term (when the fault names it)
    const struck = ts.filter((t) => t.start <= at && at < t.stop && (f.kind !== 'workFailed' || f.instances === undefined || f.instances.includes(t.instance)));
    // the work that failed was no holder's (a frozen start-up past its term, whose term had ended
    // already): no term of the lease was struck, so none has to follow
    if (f.kind === 'workFailed' && struck.length === 0) continue;
    strikesJudged++;
    const next = ts.find((t) => t.start > at && !struck.some((s) => s.instance === t.instance && s.fencingToken === t.fencingToken));
    if (next && next.start <= from + stuck) {
      worstStrikeToTermMs = Math.max(worstStrikeToTermMs ?? 0, ms(next.start - at));
      continue;
    }
    const what = f.kind === 'workFailed' ? `its holder's work failed` : `its fencing token was moved`;
    violations.push({
      kind: 'stuckLease',
      lease: f.lease!,
      strike: f.kind,
      message: `${f.lease}: ${what} at ${(ms(at) / 1000).toFixed(3)} s${struck.length ? ` (under ${struck.map(describeTerm).join(', ')})` : ''} and no new term began ${from > at ? `within ${(ms(stuck) / 1000).toFixed(0)} s of the faults after it healing (${(ms(from) / 1000).toFixed(3)} s)` : `within ${(ms(stuck) / 1000).toFixed(0)} s`}${next ? `: the next began ${(ms(next.start - at) / 1000).toFixed(1)} s after it` : ''}`,
    });
  }

  // Holder changes nobody caused.
  if (o.quietFrom !== undefined) {
    const quiet = BigInt(o.quietFrom);
    const explained = (at: bigint) => faults.some((f) => BigInt(f.from) <= at && at <= BigInt(f.to) + nsOf(o.healMs));
    for (const [lease, ts] of byLease) {
      ts.forEach((t, i) => {
        const prev = ts[i - 1];
        if (t.start <= quiet || explained(t.start)) return;
        violations.push({ kind: 'spuriousChange', lease, ...(prev ? { from: ref(prev) } : {}), to: ref(t), message: `${lease}: ${describeTerm(t)} began leading with no fault to explain it` });
      });
    }
  }

  const worst = Object.values(leaderlessAfterHealMs);
  return {
    ok: violations.length === 0,
    violations,
    terms,
    figures: {
      leases: leases.size,
      terms: terms.length,
      holderChanges,
      pausedOverlaps,
      revokedOverlaps,
      worstRevokedOverlapMs,
      ledgerWrites: ledger.length,
      zombieWritesAccepted,
      leaderlessAfterHealMs,
      worstLeaderlessAfterHealMs: worst.length ? Math.max(...worst) : undefined,
      worstUnexcusedLeaderlessMs,
      lossesJudged,
      worstLeaderlessAfterLossMs,
      worstRequestsPerWindow,
      strikesJudged,
      worstStrikeToTermMs,
    },
  };
}

/** One line per violation, and the figures, for a terminal. */
export function formatVerdict(v: Verdict): string[] {
  const f = v.figures;
  const lines = [
    `${v.ok ? 'ok' : `${v.violations.length} violation(s)`}: ${f.terms} terms on ${f.leases} lease(s), ${f.holderChanges} holder change(s), ${f.ledgerWrites} fenced writes accepted (${f.zombieWritesAccepted} zombie), ${f.pausedOverlaps} overlap(s) of a frozen leader forgiven${f.revokedOverlaps ? `, ${f.revokedOverlaps} of a leader whose row an operator deleted (the longest ${((f.worstRevokedOverlapMs ?? 0) / 1000).toFixed(2)} s)` : ''}` +
      (f.worstLeaderlessAfterHealMs === undefined ? '' : `, worst leaderless after heal ${(f.worstLeaderlessAfterHealMs / 1000).toFixed(2)} s`) +
      (f.lossesJudged ? `, ${f.lossesJudged} Region loss(es) judged, a leader after at most ${((f.worstLeaderlessAfterLossMs ?? 0) / 1000).toFixed(2)} s` : '') +
      (f.worstRequestsPerWindow === undefined ? '' : `, at most ${f.worstRequestsPerWindow} requests per process and lease in a window`) +
      (f.strikesJudged ? `, ${f.strikesJudged} failed work or moved token(s), the next term after at most ${((f.worstStrikeToTermMs ?? 0) / 1000).toFixed(2)} s` : ''),
  ];
  for (const x of v.violations) lines.push(`  ✗ ${x.kind}: ${x.message}`);
  return lines;
}

/**
 * Where a hand-off's time goes (issue 38, item 3): SIGTERM → new leader split into its parts, from
 * the `trace` lines of the stopping leader and of its successor (bench/tracing-worker.ts), all on
 * this machine's clock. The parts follow one another, so they add up to the whole:
 *
 *   signal   SIGTERM sent → the leader's process handled it
 *   prepare  → its hand-over write sent (what it reads first: the lease, the heir's candidate row)
 *   write    the hand-over write (DynamoDB's round trip)
 *   wake     → the successor had a wake (the leader's publish and the broker's hop; or the stream's);
 *              0 when the wake it read on came before the write's answer (the leader publishes it
 *              beside the write: cut 3)
 *   read     → the successor's read of the lease answered (from the write's answer, or the wake if later)
 *   take     → its write taking the term answered (its confirmation)
 *   started  → its onStartedLeading
 *
 * A part whose step is not in the lines (no wake: the successor found it by polling; a release, not
 * a hand-over) is left out, and the next part runs from the last step found. A step that came before
 * the one listed ahead of it (an early wake) is a part of 0 ms: the parts are the critical path.
 */
import { median, percentile } from './stats.js';

/** One `trace` line of bench/tracing-worker.ts. */
export interface TraceLine {
  event: 'trace';
  identity: string;
  at: number;
  step: 'sigterm' | 'ddb' | 'wakeSent' | 'wakeReceived';
  command?: string;
  table?: string;
  sent?: number;
  done?: number;
  failed?: string;
  by?: 'worker' | 'stream';
}

export const PARTS = ['signal', 'prepare', 'write', 'wake', 'read', 'take', 'started'] as const;
export type Part = (typeof PARTS)[number];

export interface HandoffParts {
  /** Milliseconds per part (only the parts whose steps were found). */
  parts: Partial<Record<Part, number>>;
  /** Who woke the successor: the stopping leader's own publish, the lease stream's, or nobody (it polled). */
  wokenBy: 'worker' | 'stream' | 'none';
  /** The wake the successor read on came before the hand-over write was answered (published beside it). */
  wokenEarly: boolean;
  /** DynamoDB requests the stopping leader made between the signal and its hand-over write. */
  leaderReads: number;
  /** The lease names the successor as holder from the hand-over write on: whether it wrote again before leading. */
  successorWrote: boolean;
  /** Every traced step of both workers, ms after SIGTERM: `L` the leader, `S` the successor (a request as sent→answered). */
  timeline: string[];
}

const isTrace = (e: unknown): e is TraceLine => (e as { event?: unknown }).event === 'trace';
const leaseWrite = (t: TraceLine) => t.step === 'ddb' && t.table === 'leases' && t.command === 'UpdateItem' && !t.failed;

/**
 * The parts of one hand-off: `stopAt` (SIGTERM sent), `startedAt` (the successor's onStartedLeading),
 * the leader's and the successor's lines. Undefined when the leader's lines show no signal.
 */
export function handoffParts(stopAt: number, startedAt: number, leaderLines: readonly unknown[], successorLines: readonly unknown[]): HandoffParts | undefined {
  const leader = leaderLines.filter(isTrace).filter((t) => t.at >= stopAt);
  const successor = successorLines.filter(isTrace).filter((t) => t.at >= stopAt && t.at <= startedAt + 1);
  const signal = leader.find((t) => t.step === 'sigterm');
  if (!signal) return undefined;
  const steps: [Part, number | undefined][] = [];
  // the leader's last lease write before the successor led: the hand-over (or the release)
  const write = leader.filter((t) => leaseWrite(t) && t.sent! >= signal.at && t.done! <= startedAt).at(-1);
  const since = write?.done ?? signal.at;
  // the successor's write taking the term, and the read it acted on: its last before that write
  // (or before leading) answered after the hand-over was sent (a poll in flight may have seen it)
  const take = successor.find((t) => leaseWrite(t) && t.sent! >= since);
  const read = successor.filter((t) => t.step === 'ddb' && t.table === 'leases' && t.command === 'GetItem' && !t.failed && t.done! >= (write?.sent ?? signal.at) && t.done! <= (take?.sent ?? startedAt)).at(-1);
  // the wake that sent it to read, if one did (else it read by its own poll): the last before that
  // read, from the hand-over's sending on (the leader publishes it beside the write)
  const woken = successor.filter((t) => t.step === 'wakeReceived' && t.at >= (write?.sent ?? signal.at) && (read === undefined || t.at <= read.sent!)).at(-1);
  steps.push(['signal', signal.at], ['prepare', write?.sent], ['write', write?.done], ['wake', woken?.at], ['read', read?.done], ['take', take?.done], ['started', startedAt]);
  const parts: Partial<Record<Part, number>> = {};
  let from = stopAt;
  for (const [part, at] of steps) {
    if (at === undefined) continue;
    parts[part] = Math.max(0, at - from);
    from = Math.max(from, at);
  }
  return {
    parts,
    wokenBy: woken?.by ?? 'none',
    wokenEarly: woken !== undefined && write?.done !== undefined && woken.at < write.done,
    leaderReads: write ? leader.filter((t) => t.step === 'ddb' && t.sent! >= signal.at && t.done! <= write.sent!).length : 0,
    successorWrote: take !== undefined,
    timeline: [...leader.map((t) => ['L', t] as const), ...successor.map((t) => ['S', t] as const)]
      .sort((a, b) => (a[1].sent ?? a[1].at) - (b[1].sent ?? b[1].at))
      .map(([who, t]) => `${who} ${t.step === 'ddb' ? `${t.command} ${t.table} ${t.sent! - stopAt}→${t.done! - stopAt}${t.failed ? ` ${t.failed}` : ''}` : `${t.step}${t.by ? ` by ${t.by}` : ''} ${t.at - stopAt}`}`),
  };
}

/** One line per part: median and p99 (nearest rank) over the runs that have it, in ms. */
export function describeParts(all: readonly HandoffParts[]): string[] {
  const ms = (x: number) => `${Math.round(x)} ms`;
  const lines = PARTS.flatMap((p) => {
    const xs = all.flatMap((h) => (h.parts[p] === undefined ? [] : [h.parts[p]!]));
    return xs.length ? [`${p.padEnd(8)} median ${ms(median(xs))}, p99 ${ms(percentile(xs, 99))}${xs.length < all.length ? ` (${xs.length} of ${all.length} runs)` : ''}`] : [];
  });
  const by = (w: HandoffParts['wokenBy']) => all.filter((h) => h.wokenBy === w).length;
  const early = all.filter((h) => h.wokenEarly).length;
  lines.push(`woken by the leader's wake in ${by('worker')}${early ? ` (before its write was answered in ${early})` : ''}, the stream's in ${by('stream')}, by a poll in ${by('none')} of ${all.length} runs`);
  return lines;
}

import type { Lease } from '../schemas/lease.js';
import type { CliContext, Pace } from './context.js';
import { describeJson, describeLines } from './describe.js';
import { faultText, isPassingFault } from './errors.js';
import { CLEAR_SCREEN, clean, jsonText, style, table } from './format.js';
import { seenIn, withJudged } from './judged.js';
import { scanLeasesJudged, snapshot } from './read.js';
import { leaseColumns, refusedLeaseLine } from './views.js';
import { refusedJson } from './get.js';

interface Term {
  holder: string | undefined;
  fencingToken: number;
  /** `watch LEASE`: the row drawn in an earlier frame is gone (deleted while watching). */
  deleted?: true;
}

/** Each lease's term as last drawn: a different holder on the next frame is highlighted, and so is a new term of the same holder. */
type Seen = ReadonlyMap<string, Term>;

const termOf = (l: Lease): Term => ({ holder: l.holderIdentity, fencingToken: l.fencingToken });

/**
 * The leases whose term changed since the frame before: another holder, or the same holder with
 * another fencing token - it lost its term and took the lease again between frames (w2 -> w3 ->
 * w2), which comparing holders alone showed as no change.
 */
function changes(before: Seen | undefined, leases: readonly Lease[]): Map<string, Term> {
  const changed = new Map<string, Term>();
  if (!before) return changed;
  for (const l of leases) {
    const drawn = before.get(l.name);
    // a row written again after it was deleted: compared with no holder (its deletion was told)
    const was = drawn?.deleted ? { holder: undefined, fencingToken: drawn.fencingToken } : drawn;
    if (was && (was.holder !== l.holderIdentity || (l.holderIdentity !== undefined && was.fencingToken !== l.fencingToken))) changed.set(l.name, was);
  }
  return changed;
}

/** The rows drawn in the frame before that are gone now (`present`: the names read now, refused rows included): deleted between frames. */
const deletions = (before: Seen | undefined, present: ReadonlySet<string>): [string, Term][] => [...(before ?? [])].filter(([name, was]) => !was.deleted && !present.has(name));

const changeLine = (name: string, was: Term, now: Term) =>
  clean(
    was.holder === now.holder
      ? `new term of ${now.holder} on ${name} (fencing token ${was.fencingToken} -> ${now.fencingToken})`
      : `holder changed on ${name}: ${was.holder ?? '(none)'} -> ${now.holder ?? '(none)'} (fencing token ${was.fencingToken} -> ${now.fencingToken})`,
  );

/** A row drawn in the frame before and gone now: a held one's term ended with it. */
const deletedLine = (name: string, was: Term) =>
  clean(was.holder !== undefined ? `holder changed on ${name}: ${was.holder} -> (none): row deleted (fencing token ${was.fencingToken})` : `row of lease ${name} deleted (it had no holder)`);

async function frame(ctx: CliContext, lease: string | undefined, seen: Seen | undefined): Promise<{ lines: string[]; seen: Seen }> {
  if (lease) {
    const snap = await snapshot(ctx, lease, { deletion: true });
    const now = ctx.clock.now(); // after the reads: a session's stamp is judged as of its read (judged.ts stampAt)
    const l = snap.read.item;
    if (ctx.output === 'json') return { lines: [jsonText(describeJson(snap, now, ctx.config))], seen: new Map() };
    // a row drawn before and gone now was deleted while watching: not "no lease row yet"
    const was = l ? undefined : seen?.get(lease);
    const changed = l ? changes(seen, [l]) : new Map<string, Term>();
    const lines = describeLines(lease, snap, now, ctx.config, ctx.settings, { deleted: was !== undefined });
    for (const [name, was] of changed) lines.unshift(style(ctx.sink.color, 'bold', changeLine(name, was, termOf(l!))), '');
    if (was && !was.deleted) lines.unshift(style(ctx.sink.color, 'bold', deletedLine(lease, was)), '');
    return { lines, seen: new Map(l ? [[l.name, termOf(l)]] : was ? [[lease, { ...was, deleted: true as const }]] : []) };
  }
  // the rows the schema refuses are lines of the frame, not warnings: a terminal's frame clears the screen
  const { leases, sessions, refused } = await scanLeasesJudged(ctx, { quiet: true });
  const now = ctx.clock.now();
  if (ctx.output === 'json') return { lines: [jsonText([...leases.map((l) => withJudged(l, seenIn(sessions, l), now, ctx.config)), ...refused.map(refusedJson)])], seen: new Map() };
  const changed = changes(seen, leases);
  const gone = deletions(seen, new Set([...leases, ...refused].map((l) => l.name)));
  const columns = leaseColumns(now, sessions, ctx.config).map((c) =>
    c.header === 'HOLDER' ? { ...c, decorate: (text: string, l: Lease) => (changed.has(l.name) ? `${style(ctx.sink.color, 'inverse', text)} (new)` : text) } : c,
  );
  const lines = leases.length ? table(columns, leases) : refused.length ? [] : [`no leases in ${ctx.target.tables.leases}${gone.length ? '' : ' yet'}`];
  for (const r of refused) lines.push(clean(refusedLeaseLine(r)));
  for (const l of leases) {
    const was = changed.get(l.name);
    if (was) lines.push(style(ctx.sink.color, 'bold', changeLine(l.name, was, termOf(l))));
  }
  for (const [name, was] of gone) lines.push(style(ctx.sink.color, 'bold', deletedLine(name, was)));
  // a row refused now keeps the term drawn before it: a change across it is told once it reads again
  const kept = refused.flatMap((r): [string, Term][] => (seen?.has(r.name) ? [[r.name, seen.get(r.name)!]] : []));
  return { lines, seen: new Map([...kept, ...leases.map((l): [string, Term] => [l.name, termOf(l)])]) };
}

/** After a read fails for a passing fault, the next try waits the interval (at least a second), doubled per failure in a row up to this many intervals, */
const BACKOFF_CAP = 4;
/** … and up to this share of it longer: watches started together do not retry together. */
const BACKOFF_JITTER = 0.2;

/** The wait before the next try after `failures` failed reads in a row. */
const backoffMs = (intervalMs: number, failures: number, random: number): number =>
  Math.max(intervalMs, 1000) * Math.min(2 ** (failures - 1), BACKOFF_CAP) * (1 + BACKOFF_JITTER * random);

const secondsText = (ms: number): string => `${Math.round(ms / 100) / 10}s`;

/**
 * `conclave watch [LEASE]`: redraws the leases table (or one lease with its candidates) every
 * interval until stopped, or `count` times. A terminal is cleared between frames; elsewhere
 * (a pipe, a file) frames follow each other under a time line. JSON: one document per line.
 * A read that fails for a passing fault (throttled, unreachable for a moment) is told on stderr and
 * tried again after a backoff; any other failure ends the watch.
 */
export async function watch(ctx: CliContext, args: { lease?: string | undefined; interval: number /* ms */; count?: number | undefined }, pace: Pace): Promise<void> {
  // kept in the command's progress: run again after a wait for a table being created (withDb), the
  // watch goes on counting its frames and comparing with the terms it drew, not from nothing
  const watched = (ctx.progress.watched ??= { frames: 0 });
  let failures = 0;
  for (let n = watched.frames; !pace.signal.aborted; ) {
    let f: Awaited<ReturnType<typeof frame>>;
    try {
      f = await frame(ctx, args.lease, watched.seen);
    } catch (e) {
      if (!isPassingFault(e)) throw e;
      const wait = backoffMs(args.interval, ++failures, ctx.clock.random());
      ctx.sink.err(clean(`watch: a read failed (${faultText(e)}); trying again in ${secondsText(wait)} (Ctrl-C stops)`));
      await pace.sleep(wait);
      continue;
    }
    failures = 0;
    watched.frames = ++n;
    watched.seen = f.seen;
    if (ctx.output === 'json') ctx.sink.out(f.lines.join('\n'));
    else {
      const title = `conclave watch${args.lease ? ` ${args.lease}` : ''} - every ${args.interval / 1000}s - ${new Date(ctx.clock.now()).toISOString()}`;
      ctx.sink.out([ctx.sink.color ? `${CLEAR_SCREEN}${title}` : `${n > 1 ? '\n' : ''}${title}`, '', ...f.lines].join('\n'));
    }
    if (args.count !== undefined && n >= args.count) return;
    await pace.sleep(args.interval);
  }
}

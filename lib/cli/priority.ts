/**
 * Operator priority pins (candidate `priority`, `priorityExpiresAt`). The coordinator alone
 * decides elections: `preempt` is a pin the coordinator's own rules then act on.
 */
import { passedOver, reelectionWindowMs, standingDown, strategyOf } from '../election/decide.js';
import { preferredLocationsOf } from '../election/location.js';
import { compareRanked, effectivePriority, rank } from '../election/ordering.js';
import { listVouched } from '../coordinator/vouched.js';
import { isCandidateStale, leaseExpiresAt, vacancy } from '../election/vacancy.js';
import { MAX_PRIORITY, type Candidate } from '../schemas/candidate.js';
import type { Lease } from '../schemas/lease.js';
import { OLDEST_EMULATION_VERSION } from '../schemas/strategy.js';
import { ValidationError } from '../schemas/validation.js';
import { CandidateStore, type CandidatePatch } from '../stores/candidate-store.js';
import { SHORT_PIN } from './args.js';
import { changedFields, changesOf, confirmChange, writeAsShown } from './confirm.js';
import { landed, note, printJson, say, sending, type CliContext } from './context.js';
import { CliError } from './errors.js';
import { nextStepOn, type Words } from './explain.js';
import { joined, namesIn, relative, span, twinOf, type Named } from './format.js';
import { UNJUDGED_STEP, judgedLease } from './judged.js';
import { snapshot, unknownCandidate, type Snapshot } from './read.js';
import { leaseNames, namerOf } from './views.js';

async function candidateOf(ctx: CliContext, lease: string, name: string): Promise<{ snap: Snapshot; candidate: Candidate }> {
  const snap = await snapshot(ctx, lease);
  const candidate = snap.candidates.find((c) => c.name === name);
  if (!candidate) throw unknownCandidate(lease, name, snap.candidates, snap.read.item);
  return { snap, candidate };
}

/**
 * What the coordinator will do once `written` is in place, in words (on the lease as judged, with
 * its session): decided as its reconcile decides (decideWithSuccession, reconcile.ts), the
 * successors it names included, so the line says what describe's Next step says.
 */
function foreseen(ctx: CliContext, snap: Snapshot, written: Candidate, now: number): Words {
  const candidates = snap.candidates.map((c) => (c.name === written.name ? written : c));
  if (snap.session?.refused) return [UNJUDGED_STEP];
  return nextStepOn(written.leaseName, snap.read.item, judgedLease(snap.read.item, snap.session, now), candidates, now, ctx.config);
}

/** "the coordinator's next step: …", its names escaped where they pass for one another or for the lease's, as describe shows them. */
const stepLine = (snap: Snapshot, step: Words): Named => namerOf(snap.read.item, snap.candidates)("the coordinator's next step: ", ...step);

/** A line naming the lease's candidates (`{ name }`): escaped where they pass for one another or for the lease's names, as the next step and describe show them. */
const lineOf = (snap: Snapshot) => namerOf(snap.read.item, snap.candidates);

/**
 * Why the coordinator does not elect on the lease (the strategy decide() runs, strategyOf, is not
 * OldestEmulationVersion), or undefined; the candidates it names escaped where they pass for one another.
 */
export function notElected(lease: Lease | undefined, candidates: readonly Candidate[], now: number, ctx: Pick<CliContext, 'config'>): string | Named | undefined {
  if (lease?.strategy) return lease.strategy === OLDEST_EMULATION_VERSION ? undefined : `its strategy is ${lease.strategy} (set by an operator)`;
  const consensus = strategyOf(lease, candidates, now, ctx.config);
  if (!consensus.ok) return namesIn([...candidates.map((c) => c.name), ...leaseNames(lease)], consensus.message);
  return consensus.strategy === OLDEST_EMULATION_VERSION ? undefined : `its candidates agree on ${consensus.strategy}`;
}

/** What a confirmed candidate write did: the row as it stands, and the time its relative fields (`--for`) ran from. */
interface Confirmed {
  written: Candidate;
  /** When the operator answered (or, with `--yes`, when the change was shown): an expiry given as `--for` runs from it. */
  at: number;
  /** Nothing to change: the row already showed it, so nothing was asked or written. */
  unchanged: boolean;
}

/**
 * Shows the candidate's change, asks, and writes it (again after a lost race, if the change still
 * holds). `patchAt` makes the change at a time: shown at `now`, written at the time of the answer,
 * so an expiry given as `--for 10m` lasts 10 minutes from the answer, not from the read.
 * `stillHolds` is asked before each try, on the rows as they are then: a preempt's pin computed
 * from the other candidates is not written once another pin has landed among them. A change the
 * row already shows is told, not asked. A name another candidate of the lease passes for
 * (worker-m, worker-rn), or its holder (a worker with no candidate row), is said so: both are real
 * names, so it is a warning, and the operator confirms the one named.
 */
async function confirmedWrite(ctx: CliContext, candidate: Candidate, snap: Snapshot, patchAt: (at: number) => CandidatePatch, now: number, stillHolds?: () => Promise<void>, notes: readonly Named[] = []): Promise<Confirmed> {
  const read = CandidateStore.readOf(candidate);
  // the header, the warning and a refusal name the candidate as the result lines do: the warning is there to show the two apart
  const as = lineOf(snap);
  const it = { name: candidate.name };
  const what = as('candidate ', it, ` of lease ${candidate.leaseName}`);
  const holder = snap.read.item?.holderIdentity;
  const twin = twinOf(candidate.name, snap.candidates.map((c) => c.name));
  // the holder, where it is no candidate (a holder that is one is compared above, as a candidate)
  const holderTwin = twin === undefined && holder !== undefined ? twinOf(candidate.name, [holder]) : undefined;
  const alike = twin ?? holderTwin;
  const warnings =
    alike === undefined
      ? []
      : [as('warning: candidate ', it, ` of lease ${candidate.leaseName} looks like `, { name: alike }, `, ${twin !== undefined ? 'another of its candidates' : 'its holder'}: check that `, it, ` is the one you mean (\`conclave describe lease ${candidate.leaseName}\` shows them apart)`)];
  const changes = changesOf(candidate, patchAt(now), now);
  if (changes.length === 0) return { written: candidate, at: now, unchanged: true };
  await confirmChange(ctx, candidate.leaseName, joined('change ', what), changes, [...warnings, ...notes]);
  const at = ctx.clock.now();
  const patch = patchAt(at);
  const written = await writeAsShown(what, read, patch, at, {
    reread: () => ctx.candidates.read(candidate.leaseName, candidate.name),
    write: async (r, p) => {
      await stillHolds?.();
      sending(ctx);
      return ctx.candidates.write(r, p);
    },
  });
  landed(ctx, candidate.leaseName, joined(what, `: ${changedFields(changesOf(candidate, patch, at))}`));
  return { written, at, unchanged: false };
}

const until = (at: number, now: number) => `until ${relative(at, now)} (${new Date(at).toISOString()})`;

/** `conclave set-priority LEASE CANDIDATE N [--for D]` and `… --clear`: conditioned on the revision read. */
export async function setPriority(ctx: CliContext, args: { lease: string; candidate: string; priority?: number | undefined; for?: number | undefined; clear: boolean }): Promise<void> {
  const { snap, candidate } = await candidateOf(ctx, args.lease, args.candidate);
  const now = ctx.clock.now();
  const as = lineOf(snap);
  if (args.clear && candidate.priority === undefined) {
    note(ctx, as({ name: candidate.name }, ` on lease ${candidate.leaseName} has no priority; nothing to clear`));
    return ctx.output === 'json' ? printJson(ctx, candidate) : undefined;
  }
  const patchAt = (at: number): CandidatePatch =>
    args.clear
      ? { remove: ['priority', 'priorityExpiresAt'] }
      : { set: { priority: args.priority, priorityExpiresAt: args.for === undefined ? undefined : at + args.for }, remove: args.for === undefined ? ['priorityExpiresAt'] : [] };
  const { written, at, unchanged } = await confirmedWrite(ctx, candidate, snap, patchAt, now);
  if (unchanged) note(ctx, as({ name: candidate.name }, ` on lease ${candidate.leaseName} already has priority ${candidate.priority} with no expiry; nothing to change`));
  if (ctx.output === 'json') return printJson(ctx, written);
  if (unchanged) return;
  if (args.clear) say(ctx, as('cleared the priority of ', { name: written.name }, ` on lease ${written.leaseName} (was ${candidate.priority})`));
  else {
    const expiry = written.priorityExpiresAt === undefined ? 'with no expiry (it lasts until `--clear` or the worker restarts; `--for 1h` sets an expiry)' : until(written.priorityExpiresAt, at);
    say(ctx, as('set the priority of ', { name: written.name }, ` on lease ${written.leaseName} to ${written.priority}, ${expiry}`));
  }
  say(ctx, stepLine(snap, foreseen(ctx, snap, written, at)));
}

/** The priority one above every candidate's in force at `now`. */
const pinAbove = (candidates: readonly Candidate[], now: number): number => Math.max(0, ...candidates.map((c) => effectivePriority(c, now))) + 1;

/** Candidates and their pins, for a line: "w2 at priority 6, w4 at priority 7". */
const pinsOf = (cs: readonly Candidate[]): (string | { name: string })[] => cs.flatMap((c, i) => [...(i ? [', '] : []), { name: c.name }, ` at priority ${c.priority}`]);

/**
 * `conclave preempt LEASE --to CANDIDATE [--for D]`: pins CANDIDATE one above every other
 * candidate's priority in force, with an expiry; the coordinator then preempts the holder.
 */
export async function preempt(ctx: CliContext, args: { lease: string; to: string; for: number }): Promise<void> {
  const { snap, candidate } = await candidateOf(ctx, args.lease, args.to);
  const lease = snap.read.item;
  const now = ctx.clock.now();
  // refusals name the candidate as the result lines do: escaped where it passes for another of the lease's names
  const as = lineOf(snap);
  const it = { name: candidate.name };
  // judged as `leader` and the coordinator judge it: a term over (expired, reported vacant) is held by nobody, though its row still names it
  const judged = judgedLease(lease, snap.session, now);
  const v = vacancy(judged, now, ctx.config.clockSkewMs);
  const over = lease?.holderIdentity === candidate.name && v.vacant ? v.reason : undefined;
  if (lease?.holderIdentity === candidate.name && !over) throw new CliError(as(it, ` already holds lease ${args.lease}; nothing to preempt (\`conclave describe lease ${args.lease}\` shows the candidates)`));
  if (!rank(candidate, now)) throw new CliError(as(it, ` cannot be elected: its versions do not parse (emulation "${candidate.emulationVersion}", binary "${candidate.binaryVersion}"); its worker must register valid versions`));
  if (isCandidateStale(candidate, now, ctx.config.candidateStaleAfterMs)) {
    throw new CliError(as(it, ` has not renewed for ${span(now - candidate.renewTime)}, so the coordinator does not count it; is its worker running?`));
  }
  const others = snap.candidates.filter((c) => c.name !== candidate.name);
  const priority = pinAbove(others, now);
  // Pins are at most MAX_PINNED_PRIORITY, so only a long chain of preempts can get here: refused, not overflowed
  if (priority > MAX_PRIORITY) throw new CliError(`another candidate of lease ${args.lease} is pinned at ${priority - 1}, the highest priority there is; clear it first (\`conclave set-priority ${args.lease} NAME --clear\`)`);
  const pinned: Candidate = { ...candidate, priority, priorityExpiresAt: now + args.for };
  const unelected = notElected(lease, snap.candidates, now, ctx);
  if (unelected) throw new CliError(joined(`the coordinator does not elect on lease ${args.lease}: `, unelected, ` - first run \`conclave set-strategy ${args.lease} OldestEmulationVersion\``));
  // the edge refused a pin under twice the default settings' longest re-election window; a lease
  // whose own window is longer (its duration, under a longer askAgainAfterMs) needs twice its own
  const window = reelectionWindowMs(lease ?? { leaseDurationSeconds: ctx.config.defaultLeaseDurationSeconds }, ctx.config);
  const floor = Math.ceil((2 * window) / 1000) * 1000;
  if (args.for < floor) {
    throw new ValidationError('preempt arguments', [{ field: '--for', message: `must be at least ${span(floor)} on lease ${args.lease} (twice its re-election window, ${span(window)} with ${ctx.settings}: ${SHORT_PIN}; give --for ${span(floor)} or longer)` }]);
  }
  // Another operator's pin may land among the others while this one is asked (two preempts at
  // once): read again before each try, and written only while the pin shown still stands above them
  const outranking = async (than: number): Promise<Candidate[]> => {
    const { candidates } = await listVouched(ctx, args.lease);
    const at = ctx.clock.now();
    return candidates.filter((c) => c.name !== candidate.name && effectivePriority(c, at) >= than);
  };
  const stillHolds = async () => {
    const above = await outranking(priority);
    if (above.length) throw new CliError(as(`another pin landed on lease ${args.lease} while this one was asked: `, ...pinsOf(above), `; the pin shown (${priority}) no longer puts `, it, ' above every other candidate - nothing was written; run the command again'));
  };
  // what keeps the coordinator from electing it at once, told with the change, before the question (before: after the write)
  const notes = [
    // its own term over: nothing to preempt, but the coordinator's next election picks by the pin too
    ...(over !== undefined
      ? [as('note: the term of ', it, ` on lease ${args.lease} is over (${over === 'expired' ? `it ran out ${relative(leaseExpiresAt(judged!), now)}` : 'a follower reported it vacant'}), so there is no holder to preempt: the coordinator elects at its next step, and the pin puts `, it, ' first among the candidates it counts while it lasts')]
      : []),
    // its worker's mark (its work failed at two starts in a row): decide() passes it over until then
    ...(standingDown(candidate, now, ctx.config.clockSkewMs)
      ? [as('note: ', it, ` stands down until ${new Date(candidate.standsDownUntil!).toISOString()} (${relative(candidate.standsDownUntil, now)}; its work failed at two starts in a row): the coordinator elects it only after that, while the pin lasts; \`conclave describe lease ${args.lease}\` shows where it stands`)]
      : []),
    ...(passedOver(candidate, now, ctx.config) ? [as('note: ', it, ` ignored its last ping; the coordinator prefers it only once it renews on its own or answers when asked again, ${relative(candidate.pingTime! + ctx.config.askAgainAfterMs, now)}`)] : []),
  ];
  const { written, at } = await confirmedWrite(ctx, candidate, snap, (t) => ({ set: { priority, priorityExpiresAt: t + args.for } }), now, stillHolds, notes);
  // …and read once more after the write: a pin that landed between that read and this write, and
  // that the coordinator ranks above this one (a higher pin, or an equal one with better versions)
  const preferred = preferredLocationsOf(lease, ctx.config);
  const mine = rank(written, at, preferred);
  const above = (await outranking(priority)).filter((c) => {
    const theirs = rank(c, at, preferred);
    return theirs !== undefined && mine !== undefined && compareRanked(theirs, mine) < 0;
  });
  if (above.length) {
    throw new CliError(
      as('pinned ', it, ` on lease ${args.lease} at priority ${priority}, but another pin landed at the same time: `, ...pinsOf(above), ' - so ', it, ` is not elected; run \`conclave preempt ${args.lease} --to `, { arg: candidate.name }, `\` again to pin it above, or \`conclave set-priority ${args.lease} `, { arg: candidate.name }, ' --clear` to drop this pin'),
    );
  }
  if (ctx.output === 'json') return printJson(ctx, written);
  // every line names the candidate as the next step does: escaped where it passes for another of the lease's names
  say(ctx, as('pinned ', { name: written.name }, ` on lease ${args.lease} at priority ${written.priority} (one above every other candidate), ${until(written.priorityExpiresAt!, at)}`));
  // as the coordinator's reconcile decides (successors included) on the lease as judged, as foreseen does
  say(ctx, stepLine(snap, nextStepOn(args.lease, lease, judgedLease(lease, snap.session, now), [...others, pinned], now, ctx.config)));
  // a command to paste: the name a shell word (worker-$'\x6d' beside worker-rn), not escaped as the lines' names are
  say(ctx, as(`when the pin expires the usual order applies again and may move leadership back; \`conclave set-priority ${args.lease} `, { arg: written.name }, ' --clear` ends it sooner'));
}

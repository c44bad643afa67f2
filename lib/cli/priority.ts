/**
 * Operator priority pins (candidate `priority`, `priorityExpiresAt`). The coordinator alone
 * decides elections: `preempt` is a pin the coordinator's own rules then act on.
 */
import { passedOver } from '../election/decide.js';
import { effectivePriority, rank } from '../election/ordering.js';
import { strategyConsensus } from '../election/strategy.js';
import { decideWithSuccession } from '../election/successor.js';
import { isCandidateStale, liveCandidates } from '../election/vacancy.js';
import { MAX_PRIORITY, type Candidate } from '../schemas/candidate.js';
import type { Lease } from '../schemas/lease.js';
import { OLDEST_EMULATION_VERSION } from '../schemas/strategy.js';
import { CandidateStore, type CandidatePatch } from '../stores/candidate-store.js';
import { changedFields, changesOf, confirmChange, writeAsShown } from './confirm.js';
import { landed, note, printJson, say, type CliContext } from './context.js';
import { CliError } from './errors.js';
import { nextStep, standings, type Words } from './explain.js';
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
  return nextStep(decideWithSuccession(written.leaseName, judgedLease(snap.read.item, snap.session, now), candidates, now, ctx.config), snap.read.item, bestOf(snap.read.item, candidates, now, ctx));
}

/** The best candidate's name, as describe shows it (standings), for the next step's words. */
const bestOf = (lease: Lease | undefined, candidates: readonly Candidate[], now: number, ctx: CliContext) => standings(lease, candidates, now, ctx.config).best?.candidate.name;

/** "the coordinator's next step: …", its names escaped where they pass for one another or for the lease's, as describe shows them. */
const stepLine = (snap: Snapshot, step: Words): Named => namerOf(snap.read.item, snap.candidates)("the coordinator's next step: ", ...step);

/** A line naming the lease's candidates (`{ name }`): escaped where they pass for one another or for the lease's names, as the next step and describe show them. */
const lineOf = (snap: Snapshot) => namerOf(snap.read.item, snap.candidates);

/** Why the coordinator does not elect on the lease (its strategy is not OldestEmulationVersion), or undefined; the candidates it names escaped where they pass for one another. */
function notElected(lease: Lease | undefined, candidates: readonly Candidate[], now: number, ctx: CliContext): string | Named | undefined {
  if (lease?.strategy) return lease.strategy === OLDEST_EMULATION_VERSION ? undefined : `its strategy is ${lease.strategy} (set by an operator)`;
  const consensus = strategyConsensus(liveCandidates(candidates, now, ctx.config.candidateStaleAfterMs));
  if (!consensus.ok) return namesIn([...candidates.map((c) => c.name), ...leaseNames(lease)], consensus.message);
  return consensus.strategy === OLDEST_EMULATION_VERSION ? undefined : `its candidates agree on ${consensus.strategy}`;
}

/**
 * Shows the candidate's change, asks, and writes it (again after a lost race, if the change still
 * holds). A name another candidate of the lease passes for (worker-m, worker-rn), or its holder
 * (a worker with no candidate row), is said so: both are real names, so it is a warning, and the
 * operator confirms the one named.
 */
async function confirmedWrite(ctx: CliContext, candidate: Candidate, snap: Snapshot, patch: CandidatePatch, now: number): Promise<Candidate> {
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
  const changes = changesOf(candidate, patch, now);
  await confirmChange(ctx, joined('change ', what), changes, warnings);
  const written = await writeAsShown(what, read, patch, now, { reread: () => ctx.candidates.read(candidate.leaseName, candidate.name), write: (r, p) => ctx.candidates.write(r, p) });
  landed(ctx, candidate.leaseName, joined(what, `: ${changedFields(changes)}`));
  return written;
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
  const patch: CandidatePatch = args.clear
    ? { remove: ['priority', 'priorityExpiresAt'] }
    : { set: { priority: args.priority, priorityExpiresAt: args.for === undefined ? undefined : now + args.for }, remove: args.for === undefined ? ['priorityExpiresAt'] : [] };
  const written = await confirmedWrite(ctx, candidate, snap, patch, now);
  if (ctx.output === 'json') return printJson(ctx, written);
  if (args.clear) say(ctx, as('cleared the priority of ', { name: written.name }, ` on lease ${written.leaseName} (was ${candidate.priority})`));
  else {
    const expiry = written.priorityExpiresAt === undefined ? 'with no expiry (it lasts until `--clear` or the worker restarts; `--for 1h` sets an expiry)' : until(written.priorityExpiresAt, now);
    say(ctx, as('set the priority of ', { name: written.name }, ` on lease ${written.leaseName} to ${written.priority}, ${expiry}`));
  }
  say(ctx, stepLine(snap, foreseen(ctx, snap, written, now)));
}

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
  if (lease?.holderIdentity === candidate.name) throw new CliError(as(it, ` already holds lease ${args.lease}; nothing to preempt (\`conclave describe lease ${args.lease}\` shows the candidates)`));
  if (!rank(candidate, now)) throw new CliError(as(it, ` cannot be elected: its versions do not parse (emulation "${candidate.emulationVersion}", binary "${candidate.binaryVersion}"); its worker must register valid versions`));
  if (isCandidateStale(candidate, now, ctx.config.candidateStaleAfterMs)) {
    throw new CliError(as(it, ` has not renewed for ${span(now - candidate.renewTime)}, so the coordinator does not count it; is its worker running?`));
  }
  const others = snap.candidates.filter((c) => c.name !== candidate.name);
  const priority = Math.max(0, ...others.map((c) => effectivePriority(c, now))) + 1;
  // Pins are at most MAX_PINNED_PRIORITY, so only a long chain of preempts can get here: refused, not overflowed
  if (priority > MAX_PRIORITY) throw new CliError(`another candidate of lease ${args.lease} is pinned at ${priority - 1}, the highest priority there is; clear it first (\`conclave set-priority ${args.lease} NAME --clear\`)`);
  const pinned: Candidate = { ...candidate, priority, priorityExpiresAt: now + args.for };
  const unelected = notElected(lease, snap.candidates, now, ctx);
  if (unelected) throw new CliError(joined(`the coordinator does not elect on lease ${args.lease}: `, unelected, ` - first run \`conclave set-strategy ${args.lease} OldestEmulationVersion\``));
  // as the coordinator's reconcile decides (successors included), as foreseen does
  const decision = decideWithSuccession(args.lease, judgedLease(lease, snap.session, now), [...others, pinned], now, ctx.config);
  const written = await confirmedWrite(ctx, candidate, snap, { set: { priority: pinned.priority, priorityExpiresAt: pinned.priorityExpiresAt } }, now);
  if (ctx.output === 'json') return printJson(ctx, written);
  // every line names the candidate as the next step does: escaped where it passes for another of the lease's names
  say(ctx, as('pinned ', { name: written.name }, ` on lease ${args.lease} at priority ${written.priority} (one above every other candidate), ${until(written.priorityExpiresAt!, now)}`));
  say(ctx, stepLine(snap, nextStep(decision, lease, bestOf(lease, [...others, pinned], now, ctx))));
  if (passedOver(candidate, now, ctx.config)) say(ctx, as('note: ', { name: candidate.name }, ` ignored its last ping; the coordinator prefers it only once it renews on its own or answers when asked again, ${relative(candidate.pingTime! + ctx.config.askAgainAfterMs, now)}`));
  // a command to paste: the name a shell word (worker-$'\x6d' beside worker-rn), not escaped as the lines' names are
  say(ctx, as(`when the pin expires the usual order applies again and may move leadership back; \`conclave set-priority ${args.lease} `, { arg: written.name }, ' --clear` ends it sooner'));
}

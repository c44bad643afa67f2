import { termStrategy } from '../election/leader.js';
import { decideWithSuccession } from '../election/successor.js';
import { reelectionWindowMs, standingDown, strategyOf } from '../election/decide.js';
import { NO_COORDINATION, OLDEST_EMULATION_VERSION } from '../schemas/strategy.js';
import { leaseExpiresAt, vacancy } from '../election/vacancy.js';
import type { Candidate } from '../schemas/candidate.js';
import type { ElectionConfig } from '../schemas/config.js';
import type { ElectedBy, Lease } from '../schemas/lease.js';
import { MAX_FENCING_TOKEN } from '../schemas/fencing-token.js';
import type { ValidationError } from '../schemas/validation.js';
import { brokenLeaseLines, brokenLeaseReport } from './broken.js';
import { DEFAULT_SETTINGS, printJson, type CliContext } from './context.js';
import { nextStep, notTaking, standings, whyBetter, type Standing, type Words } from './explain.js';
import { ago, dash, fields, named, platformOf, relative, shown, span, stamp, table, type Named } from './format.js';
import { UNJUDGED_STEP, judgedLease, refusedState, renewedLine, sessionLine, withJudged, type RefusedRowDeletion, type SessionSeen } from './judged.js';
import { MAX_REFUSED_ATTRIBUTES } from '../coordinator/refused-session.js';
import { BrokenLeaseError, reportInvalid, snapshot, type Snapshot } from './read.js';
import { byName, leaseNames, pastNames, pingOf, placeOf, preferenceOf, priorityOf } from './views.js';
import { listVouched } from '../coordinator/vouched.js';
import { identityGraceMs } from '../coordinator/identity-scan.js';

const ELECTED_BY: Record<ElectedBy, string> = {
  coordinator: 'the coordinator',
  successor: 'succession (the designated successor: handed the term by the leader stepping down, or taking the lease as it fell vacant)',
  self: 'itself (direct acquisition)',
};

/** `lease`: as judged (a lease held on a session, by its session's renewals too); the name that reported it vacant escaped as `as` escapes names. */
function stateOf(lease: Lease | undefined, now: number, config: ElectionConfig, as: Namer): string | Named {
  const v = vacancy(lease, now, config.clockSkewMs);
  if (!v.vacant) return `held, term ends ${relative(v.expiresAt, now)}`;
  switch (v.reason) {
    case 'noLease':
      return 'vacant: no lease row yet (the coordinator writes it at the first election)';
    case 'noHolder':
      return 'vacant: no holder';
    case 'expired':
      return `vacant: expired (the term ended ${relative(lease && leaseExpiresAt(lease), now)}; the coordinator allows ${span(config.clockSkewMs)} of clock skew)`;
    case 'reported':
      return as('vacant: reported by ', { name: lease!.vacancyReport!.by }, ', who watched it unchanged for a whole term');
  }
}

/**
 * The strategy in force, as decide() takes it (strategyOf: those standing down agree too); the
 * candidates a disagreement names escaped where they pass for one another or for the lease's names
 * (`as`), as the table shows them.
 */
function strategyLine(lease: Lease | undefined, candidates: readonly Candidate[], now: number, config: ElectionConfig, as: Namer): string | Named {
  if (lease?.strategy) return `${lease.strategy} (set by an operator; sticky until \`conclave set-strategy ${lease.name} --clear\`)`;
  const consensus = strategyOf(lease, candidates, now, config);
  if (consensus.ok) return `not set: the candidates agree on ${consensus.strategy}`;
  return as('not set: ', { listing: consensus.message });
}

type Namer = ReturnType<typeof named>;

/**
 * How long a coordinated worker's vacancy report stands unanswered before it takes the lease
 * itself: lib/sdk/step.ts's REPORT_ANSWER_MS, which the CLI's package does not ship (SDK modules
 * stay out of it); test/cli/describe-standings.test.ts holds the two equal.
 */
export const REPORT_ANSWER_MS = 10_000;

/**
 * Who takes a lease the coordinator leaves to NoCoordination (`it`: the lease, as the sentence
 * names it). Only workers run with `mode: 'NoCoordination'` race for it; coordinated ones (its
 * candidates) wait for an election that never comes, then take it by the SDK's fallback: a
 * vacancy report unanswered for REPORT_ANSWER_MS, or fallbackAfterMs, and a NoCoordinatorError
 * told to onError at each take (lib/sdk/step.ts, elector.ts).
 */
export const NO_COORDINATION_TAKERS = (it: string): string =>
  `workers run with mode 'NoCoordination' race for ${it}; coordinated workers (candidates) take it only once it stands vacant and a vacancy report goes unanswered for ${span(REPORT_ANSWER_MS)} (or their fallbackAfterMs passes), each take reported to onError as a NoCoordinatorError: run them with mode 'NoCoordination'`;

/**
 * The Best candidate line of a lease the coordinator does not elect (undefined: it elects), by the
 * strategy decide() runs (strategyOf: the lease's, else the live candidates' consensus, those
 * standing down included). No candidate is best then: who elects is said instead (a third party;
 * under NoCoordination the workers' own race, or a coordinated worker's fallback; nobody while the
 * candidates' strategies contradict).
 */
function bestLine(lease: Lease | undefined, candidates: readonly Candidate[], now: number, config: ElectionConfig): string | undefined {
  const consensus = strategyOf(lease, candidates, now, config);
  if (!consensus.ok) {
    if (consensus.reason === 'noCandidates') return undefined;
    return "none: the coordinator elects nobody while the candidates' strategies contradict each other (Strategy above); a worker may take the lease vacant by its fallback";
  }
  if (consensus.strategy === OLDEST_EMULATION_VERSION) return undefined;
  if (consensus.strategy === NO_COORDINATION) return `none: under NoCoordination the coordinator elects nobody; ${NO_COORDINATION_TAKERS('the lease')}`;
  return `none: a third party elects under "${consensus.strategy}"; the coordinator leaves the lease alone (with no third party running, a worker takes the vacant lease by its fallback)`;
}

/**
 * The successors a lease names and, while it is held (`held`: its term lives, as judged), whether
 * each takes it should it fall vacant, as their SDKs judge it (takersOf: a live row of the start-up named, not standing down, nobody else
 * preferred; before: "takes the lease at once" whatever the rows and the lease showed).
 */
function successorLine(lease: Lease, held: boolean, candidates: readonly Candidate[], now: number, config: ElectionConfig, as: Namer): string | Named {
  if (!lease.successor) return '-';
  const first = held ? notTaking(lease, 'successor', candidates, now, config) : undefined;
  const second = held && lease.secondSuccessor ? notTaking(lease, 'second', candidates, now, config) : undefined;
  const not = (why: Words) => [' (does not take the lease if it falls vacant now: ', ...why, ')'];
  const then = first ? ' (takes the lease a moment after it falls vacant)' : ' (if the successor has not, a moment later)';
  return as(
    { name: lease.successor },
    ...(!held ? [] : first ? not(first) : [' (takes the lease at once if it falls vacant)']),
    ...(lease.secondSuccessor ? [', then ', { name: lease.secondSuccessor }, ...(!held ? [] : second ? not(second) : [then])] : []),
  );
}

/** `deleted`: `watch LEASE` drew the row in an earlier frame, and it is gone now. */
function leaseLines(name: string, lease: Lease | undefined, session: SessionSeen | undefined, candidates: readonly Candidate[], now: number, config: ElectionConfig, as: Namer, deleted = false): string[] {
  const judged = judgedLease(lease, session, now);
  const state = refusedState(lease, session) ?? (deleted && !lease ? DELETED_STATE : stateOf(judged, now, config, as));
  // as the coordinator judges the term (a refused session row: held, judged by no one); a term over is no one's to release
  const held = lease?.holderIdentity !== undefined && !vacancy(judged, now, config.clockSkewMs).vacant;
  if (!lease) return fields([['Lease', name], ['State', state], ['Strategy', strategyLine(lease, candidates, now, config, as)], ['Preferred locations', preferenceOf(undefined, config, name)]]);
  const e = lease.election;
  const f = lease.lastElectionFailure;
  const r = lease.vacancyReport;
  return fields([
    ['Lease', lease.name],
    ['Holder', lease.holderIdentity ? as({ name: lease.holderIdentity }, lease.holderInstance ? ` (instance ${lease.holderInstance})` : '') : '-'],
    ['Platform', platformOf(lease.holderPlatform)],
    ['Last lost', lease.holderLoss ? as({ name: lease.holderLoss.holder }, ` (token ${lease.holderLoss.fencingToken}) ${relative(lease.holderLoss.at, now)}: ${lease.holderLoss.source} said ${lease.holderLoss.reason}`) : 'never'],
    ['State', state],
    // the largest token: no term can follow it (the coordinator counts the lease broken)
    ['Fencing token', `${lease.fencingToken} (transitions: ${lease.leaseTransitions})${lease.fencingToken >= MAX_FENCING_TOKEN ? `: the largest a row may hold, so no term can follow it; put the clock's token in its place (epoch ms * 1000) or delete the row` : ''}`],
    ['Acquired', stamp(lease.acquireTime, now)],
    ['Renewed', renewedLine(lease, session, now)],
    ['Session', sessionLine(lease, session, now, as)],
    ...(session?.refused ? [['Repair', `rewrite the session row valid, or delete it: ${session.refused.repair}`] as [string, string]] : []),
    ...(session?.deletion ? [['Row deleted', deletionLine(session.deletion, now, config)] as [string, string]] : []),
    ['Duration', `${lease.leaseDurationSeconds}s`],
    ['Strategy', strategyLine(lease, candidates, now, config, as)],
    ['Preferred locations', preferenceOf(lease, config)],
    ['Elected', lease.electedBy ? `by ${ELECTED_BY[lease.electedBy]}${termStrategy(lease) ? ` under ${termStrategy(lease)}` : ''}` : '-'],
    ['Successor', successorLine(lease, held, candidates, now, config, as)],
    ['Preferred holder', lease.preferredHolder ? as({ name: lease.preferredHolder }, ...preferredWhy(lease, held)) : '-'],
    ['Last holder', lease.lastHolderIdentity ? as({ name: lease.lastHolderIdentity }) : dash(undefined)],
    ['Election', e ? as(`${e.id}: started ${relative(e.startedAt, now)}, acks ${now < e.deadline ? 'until' : 'closed'} ${relative(e.deadline, now)}, strategy ${e.strategy}`, ...(e.holder ? [', re-election while ', { name: e.holder }, ' keeps leading'] : [])) : 'none open'],
    // the coordinator's message names candidates (strategyConsensus's, noValidCandidates'): escaped as `as` escapes them
    ['Last failure', f ? as(`${relative(f.at, now)}${f.electionId ? ` in ${f.electionId}` : ''} (${f.reason}): `, { listing: f.message }) : 'none'],
    ['Vacancy report', r ? as('by ', { name: r.by }, ` ${relative(r.at, now)}, revision ${r.observedRevision} unchanged for a whole term`) : 'none'],
    ['Run-once windows', runsLine(lease, as)],
    ['Revision', String(lease.revision)],
  ]);
}

/**
 * When the coordinator's tick deletes the refused session row a term is held on, or that may be its
 * holder's process's own session (lib/coordinator/refused-session.ts, reconcile.ts).
 */
function deletionLine(d: RefusedRowDeletion, now: number, config: ElectionConfig): string {
  if (d.kind === 'expires') {
    const after = new Date(d.deleteAfter).toISOString();
    if (now > d.deleteAfter) return `due since ${after} (${relative(d.deleteAfter, now)}), expired by its own stamp: the coordinator's tick deletes it at its next pass over every lease (a round's end, or the next invocation's start where the round ran out of time), if no held lease or live candidate names it and its stamp is unchanged`;
    return `by the coordinator's tick after ${after} (${relative(d.deleteAfter, now)}), once expired by its own stamp, if no held lease or live candidate names it then: its renewTime (${relative(d.renewTime, now)}, ${new Date(d.renewTime).toISOString()}) + its leaseDurationSeconds (${span(d.leaseDurationSeconds * 1000)}) + identityGcGraceMs (${span(config.identityGcGraceMs)}) + the larger of clockSkewMs and a row stamp's own error (${span(identityGraceMs(config) - config.identityGcGraceMs)}); no held lease names the row, so the tick does not time it by a sighting`;
  }
  const longest =
    d.on === 'named'
      ? `the longest lease on it (${span(d.holdMs)})`
      : d.on === 'process'
        ? `the longest lease of the held terms whose holder's process it may be the session of, or its own where that reads and is longer (${span(d.holdMs)}: no held lease names the row, and its stamp does not read)`
        : `the longest lease a row may state (${span(d.holdMs)}: no held lease names the row, and its stamp does not read)`;
  const wait = `${longest} and clockSkewMs (${span(config.clockSkewMs)})`;
  switch (d.kind) {
    case 'tooLarge':
      return `never by the coordinator's tick: the row has more than ${MAX_REFUSED_ATTRIBUTES} attributes, too many to condition a delete on (DynamoDB's 4 KB): delete it yourself once its holder is known to be gone`;
    case 'unseen':
      return `not timed yet: the coordinator's tick has not seen the row as it is now; it deletes it ${span(d.holdMs + config.clockSkewMs)} after it first does, if it stays unchanged: ${wait}`;
    case 'timed': {
      const after = new Date(d.deleteAfter).toISOString();
      if (now > d.deleteAfter) return `due since ${after} (${relative(d.deleteAfter, now)}): the coordinator's tick deletes it at its next pass over every lease (a round's end, or the next invocation's start where the round ran out of time), if it is still unchanged`;
      return `by the coordinator's tick after ${after} (${relative(d.deleteAfter, now)}), if the row stays unchanged: first seen so ${stamp(d.seen.at, now)}, then ${wait}`;
    }
  }
}

/** withLease's completed run-once windows: the newest (its holder escaped as `as` escapes names), and how many the lease remembers. */
function runsLine(lease: Lease, as: Namer): string | Named {
  const runs = lease.runs ?? [];
  if (runs.length === 0) return 'none completed';
  const [last] = runs;
  return as(`${last!.window} by `, { name: last!.holder }, ` (token ${last!.fencingToken})${runs.length > 1 ? `; ${runs.length - 1} earlier: ${runs.slice(1, 4).map((x) => x.window).join(', ')}${runs.length > 4 ? ', ...' : ''}` : ''}`);
}

function candidateLines(ordered: readonly Standing[], now: number, config: ElectionConfig, preferred: readonly string[], alike: readonly string[] = []): string[] {
  return table<Standing>(
    [
      { header: '#', cell: (s) => (s.place === undefined ? '-' : String(s.place)) },
      { header: 'NAME', cell: (s) => s.candidate.name, alike },
      { header: 'PRIORITY', cell: (s) => priorityOf(s.candidate, now) },
      { header: 'EMULATION', cell: (s) => s.candidate.emulationVersion },
      { header: 'LOCATION', cell: (s) => placeOf(s.candidate, preferred) },
      { header: 'BINARY', cell: (s) => s.candidate.binaryVersion },
      { header: 'CREATED', cell: (s) => ago(s.candidate.createdAt, now) },
      { header: 'RENEWED', cell: (s) => ago(s.candidate.renewTime, now) },
      { header: 'PING/ACK', cell: (s) => pingOf(s.candidate, now, config) },
      { header: 'STATE', cell: (s) => s.state },
    ],
    ordered,
  );
}

/** The State of a lease whose row `watch LEASE` drew in an earlier frame and finds gone (not "no lease row yet"). */
const DELETED_STATE = 'vacant: the lease row was deleted while watching (the coordinator writes a new one at its next election)';

/** After the Preferred holder's name: who should release to it, or, the term over as judged, that nobody holds it to release. */
function preferredWhy(lease: Lease, held: boolean): Words {
  if (held) return [' (', { name: lease.holderIdentity! }, ' should release at its next renewal)'];
  if (lease.holderIdentity !== undefined) return [" (the term of ", { name: lease.holderIdentity }, " is over, so nobody releases: the Next step below says whom the coordinator elects)"];
  return [' (the lease has no holder: the Next step below says whom the coordinator elects)'];
}

/**
 * Everything about one lease, for `describe lease` and `watch LEASE`: a lease held on a session is
 * judged with its session's row. `deleted`: `watch LEASE` drew its row in an earlier frame.
 */
export function describeLines(name: string, snap: Snapshot, now: number, config: ElectionConfig, settings = DEFAULT_SETTINGS, opts: { deleted?: boolean } = {}): string[] {
  const { read: { item: lease }, candidates, session } = snap;
  // judged as the coordinator judges it (reconcile.ts): a term on a session by its session's renewals
  const judged = judgedLease(lease, session, now);
  const { ordered, best, runnerUp, preferred, reasons } = standings(lease, candidates, now, config, judged);
  // the lease's names and the candidates' are shown apart: each compared with all (worker-rn holds, worker-m stands),
  // with the names only describe shows too (who lost the lease, reported it vacant, ran its last window: pastNames)
  const others = [...leaseNames(lease), ...pastNames(lease)];
  const as = named([...candidates.map((c) => c.name), ...others]);
  const lines = leaseLines(name, lease, session, candidates, now, config, as, opts.deleted);
  lines.push('', `Candidates, in the coordinator's order (priority, oldest emulation, ${preferred.length ? 'preferred location, ' : ''}oldest binary, earliest registration, name):`);
  if (ordered.length === 0) lines.push('  none');
  else lines.push(...candidateLines(ordered, now, config, preferred, others).map((l) => `  ${l}`));
  // the sentences name candidates and the lease's names: escaped where they pass for one another, as above
  if (reasons.length) lines.push('', 'Why in this order:', ...reasons.map((r) => `  ${shown(as(...r))}`));
  lines.push('');
  lines.push(...fields([
    ['Best candidate', bestLine(lease, candidates, now, config) ?? (best ? as({ name: best.candidate.name }, ': ', ...(runnerUp ? whyBetter(best, runnerUp, preferred) : ['the only candidate that counts'])) : `none (no live candidate with valid versions that answers pings${candidates.some((c) => standingDown(c, now, config.clockSkewMs)) ? ' and does not stand down' : ''})`)],
    // decided on the lease as judged, as the coordinator decides (reconcile.ts)
    ['Next step', session?.refused ? UNJUDGED_STEP : as(...nextStep(decideWithSuccession(name, judged, candidates, now, config), lease, best?.candidate.name))],
  ]));
  // a held lease's re-election (a preemption asked first, a liveness check) waits longer than a vacancy's election: said, as its events show it
  const reelection = judged && !session?.refused && !vacancy(judged, now, config.clockSkewMs).vacant ? reelectionWindowMs(judged, config) : config.ackWindowMs;
  const window = reelection === config.ackWindowMs ? '' : ` (a re-election of this held lease: ${span(reelection)})`;
  lines.push(`(judged now with ${settings}: ack window ${span(config.ackWindowMs)}${window}, clock skew ${span(config.clockSkewMs)}, candidates stale after ${span(config.candidateStaleAfterMs)})`);
  return lines;
}

/**
 * One lease as JSON: the lease row (null when there is none) with what the CLI judged of it
 * (`judged`), and its candidate rows, in the coordinator's order on the lease as judged (as the
 * text shows them: a holder standing down is ranked while its term lives on its session).
 */
export function describeJson(snap: Snapshot, now: number, config: ElectionConfig) {
  const { read: { item: lease }, candidates, session } = snap;
  return { lease: lease ? withJudged(lease, session, now, config) : null, candidates: standings(lease, candidates, now, config, judgedLease(lease, session, now)).ordered.map((s) => s.candidate) };
}

/** A lease row the schema refuses: what is wrong, how to repair it, and its candidates. */
async function describeBroken(ctx: CliContext, name: string, error: ValidationError): Promise<void> {
  const [report, list] = await Promise.all([brokenLeaseReport(ctx, name, error), listVouched(ctx, name)]);
  reportInvalid(ctx, list.invalid);
  const { ordered, preferred } = standings(undefined, list.candidates.sort(byName), ctx.clock.now(), ctx.config);
  if (ctx.output === 'json') return printJson(ctx, { lease: null, broken: report, candidates: ordered.map((s) => s.candidate) });
  const lines = brokenLeaseLines(report);
  lines.push('', 'Candidates (none is elected while the row is broken):');
  if (ordered.length === 0) lines.push('  none');
  else lines.push(...candidateLines(ordered, ctx.clock.now(), ctx.config, preferred).map((l) => `  ${l}`));
  for (const line of lines) ctx.sink.out(line);
}

/** `conclave describe lease NAME`. */
export async function describeLease(ctx: CliContext, args: { lease: string }): Promise<void> {
  let snap: Snapshot;
  try {
    snap = await snapshot(ctx, args.lease, { deletion: true });
  } catch (e) {
    if (e instanceof BrokenLeaseError) return describeBroken(ctx, args.lease, e.invalid); // only the lease row is parsed strictly: candidates come back apart
    throw e;
  }
  const now = ctx.clock.now();
  if (ctx.output === 'json') return printJson(ctx, describeJson(snap, now, ctx.config));
  for (const line of describeLines(args.lease, snap, now, ctx.config, ctx.settings)) ctx.sink.out(line);
}

/**
 * The coordinator's reasoning in words, from the same pure functions it decides with
 * (lib/election): the CLI never re-implements a rule, it only describes the outcome.
 */
import { OLDEST_EMULATION_VERSION } from '../schemas/strategy.js';
import { counted, ignoredLastPing, isFresh, isPending, setAside, standingDown, type Decision } from '../election/decide.js';
import { locationOf, locationText, preferredLocationsOf } from '../election/location.js';
import { orderCandidates, pickBest, rank, type Ranked } from '../election/ordering.js';
import { decideWithSuccession, knownAliveSince, showedLifeSince } from '../election/successor.js';
import { isCandidateStale, isDeparted, isSecondSuccessor, isSuccessor, successionStands, vacancy } from '../election/vacancy.js';
import type { Candidate } from '../schemas/candidate.js';
import type { ElectionConfig } from '../schemas/config.js';
import type { Lease } from '../schemas/lease.js';
import { ago, relative, span } from './format.js';

/** A name in a sentence, kept apart from its words so that describe escapes it where it passes for another name shown (format.ts named). */
export interface NameIn {
  readonly name: string;
}
/** A message built elsewhere that lists names (strategyConsensus's, an election's failure): each whole one escaped where it passes for another (format.ts named). */
export interface ListingIn {
  readonly listing: string;
}
/** A sentence with names in it: shown through format.ts named (describe; set-priority, preempt and set-locations' next step). */
export type Words = readonly (string | NameIn | ListingIn)[];

/** `words\`ask ${name(a)} to yield\``: the text, the names (and nested sentences) in their places. */
function words(strings: TemplateStringsArray, ...values: readonly (string | number | undefined | NameIn | ListingIn | Words)[]): Words {
  const out: (string | NameIn | ListingIn)[] = [strings[0]!];
  values.forEach((v, i) => {
    if (Array.isArray(v)) out.push(...(v as Words));
    else out.push(typeof v === 'object' ? (v as NameIn | ListingIn) : String(v));
    out.push(strings[i + 1]!);
  });
  return out;
}

/** A name as a part of a sentence (undefined as the template literal showed it before). */
const name = (n: string | undefined): NameIn | string => (n === undefined ? String(n) : { name: n });

/** A message of the coordinator's that lists candidates (a decision's detail, a failure's message): its names marked where shown. */
const listing = (text: string): ListingIn => ({ listing: text });

/** Names listed, comma-separated; `empty` when there are none. */
const names = (list: readonly string[], empty = ''): Words => (list.length ? list.flatMap((n, i) => (i ? [', ', { name: n }] : [{ name: n }])) : [empty]);

/**
 * Why `a` ranks above `b`: the first of the coordinator's criteria that tells them apart (the names kept apart: Words).
 * `preferred`: the lease's preferred locations, as both were ranked with.
 */
export function whyBetter(a: Ranked, b: Ranked, preferred: readonly string[] = []): Words {
  const [ca, cb] = [a.candidate, b.candidate];
  const other = name(cb.name);
  if (a.priority !== b.priority) return words`higher priority than ${other} (${a.priority || 'none'} > ${b.priority || 'none'})`;
  if (a.emulation.compare(b.emulation)) return words`older emulation version than ${other} (${ca.emulationVersion} < ${cb.emulationVersion})`;
  if (a.locationRank !== b.locationRank) return words`same emulation version as ${other}, better placed (${placed(a, preferred)}; ${other} ${placed(b, preferred)})`;
  if (a.binary.compare(b.binary)) return words`same emulation version as ${other}, older binary (${ca.binaryVersion} < ${cb.binaryVersion})`;
  // equal as semver compares them, written apart: build metadata (1.31.0+git.abc123) is not compared
  const apart = ca.emulationVersion !== cb.emulationVersion || ca.binaryVersion !== cb.binaryVersion ? ' (equal as semver orders them: build metadata is ignored)' : '';
  if (ca.createdAt !== cb.createdAt) return words`same versions as ${other}${apart}, registered earlier (${new Date(ca.createdAt).toISOString()})`;
  return words`same versions${apart} and registration time as ${other}; the name sorts first`;
}

/** `in us-east-1a, preferred #1`, `in eu-west-1a, in no preferred location`, `of unknown location, in no preferred location`. */
function placed(r: Ranked, preferred: readonly string[]): string {
  const where = locationText(locationOf(r.candidate));
  return `${where === '-' ? 'of unknown location' : `in ${where}`}, ${r.locationRank < preferred.length ? `preferred #${r.locationRank + 1}` : 'in no preferred location'}`;
}

/** One candidate's standing on the lease, in the coordinator's order. */
export interface Standing {
  candidate: Candidate;
  /** 1-based place among the candidates that count; undefined when it does not count. */
  place: number | undefined;
  state: string;
}

/** `stands down until …`: its row's mark (standsDownUntil), which decide() reads (standingDown). */
const standsDown = (c: Candidate, now: number): string => `stands down until ${new Date(c.standsDownUntil!).toISOString()} (${relative(c.standsDownUntil, now)}; its work failed at two starts in a row)`;
const NOT_MEANWHILE = "not elected, named successor nor preferred until its candidacy's next renewal";

/**
 * Whether decide() passes `c` over on the lease held as judged (`vacant` false) as its last holder
 * not seen since the term began (isDeparted), as it does when it looks for whom to prefer: never the
 * holder itself.
 */
const departedFrom = (c: Candidate, lease: Lease | undefined, vacant: boolean): boolean => !vacant && c.name !== lease?.holderIdentity && isDeparted(c, lease);

/**
 * `vacant`: the lease as judged is vacant; `othersCount`: some candidate decide() does not set
 * aside could win (standings' best), so one set aside on a vacant lease is not asked again.
 */
function stateOf(c: Candidate, lease: Lease | undefined, judged: Lease | undefined, vacant: boolean, othersCount: boolean, now: number, config: ElectionConfig): string {
  // the holder of a term over (as judged: expired, reported vacant) holds nothing: its row still names it
  const tags = [c.name === lease?.holderIdentity ? (vacant ? 'holder of a term over' : 'holder') : '', c.name === lease?.preferredHolder ? 'preferred holder' : ''].filter(Boolean);
  let state: string;
  if (!rank(c, now)) state = 'versions do not parse: never elected';
  else if (isCandidateStale(c, now, config.candidateStaleAfterMs)) state = `stale (not renewed for ${span(config.candidateStaleAfterMs)}): not counted`;
  // decide()'s rule: passed over meanwhile, but as the holder of a term that lives
  else if (standingDown(c, now, config.clockSkewMs)) state = `${standsDown(c, now)}: ${counted(c, vacant ? undefined : lease?.holderIdentity, now, config.clockSkewMs) ? 'counted only as the holder while its term lasts; ' : ''}${NOT_MEANWHILE}`;
  else if (setAside(c, vacant, now, config)) {
    // decide()'s rule: a vacancy's election neither asks nor waits for it while a candidate that answers could win
    if (!vacant) state = `missed its ping at ${new Date(c.pingTime!).toISOString()} (${relative(c.pingTime, now)}): passed over (may be dead) until it renews or answers when asked again, ${relative(c.pingTime! + config.askAgainAfterMs, now)}`;
    else state = othersCount ? 'ignored its last ping: not asked nor elected while the lease is vacant until it renews (a candidate that answers is elected instead)' : 'ignored its last ping: to be asked again at the next check (no candidate that answers could win)';
  } else if (departedFrom(c, judged, vacant)) {
    // decide()'s and successorsOf's rule: the last holder whose row showed no life since this term
    // began most likely died with its term; neither preferred nor named successor, nor asked (before:
    // "live" and the Best candidate for the 30 minutes its row stays live, after a kill -9)
    state = `last holder, not seen alive since this term began (renewed ${ago(c.renewTime, now)}): passed over (may be dead) until it renews or answers a ping`;
  } else if (ignoredLastPing(c, now, config.ackWindowMs)) state = 'ignored its last ping: to be asked again at the next check';
  else if (lease?.election && isPending(c, lease.election, config.ackWindowMs)) state = 'pinged, not answered yet';
  else if (isFresh(c, now, config.ackWindowMs)) state = 'fresh';
  // a row not stale proves nothing: one that showed no life since about a lease duration before the
  // term began (a process killed before it, say) is asked before the coordinator names it successor
  // (with succession on, and not the departed last holder, whom succession leaves out: successor.ts)
  else if (config.succession && lease?.holderIdentity !== undefined && c.name !== lease.holderIdentity && !isDeparted(c, lease) && !showedLifeSince(c, knownAliveSince(lease, now, config), now + config.clockSkewMs))
    state = `live (renewed ${ago(c.renewTime, now)}), not seen alive this term: pinged before it is named successor`;
  else state = `live (renewed ${ago(c.renewTime, now)})`;
  return [...tags, state].join(', ');
}

/**
 * Every candidate in the coordinator's order (live, valid ones decide() counts ranked: not standing
 * down, but as the holder of a term that lives; the rest after them), the
 * one it would prefer now (counted and not set aside by decide(): on a vacant lease, not ignoring its
 * last ping; on a held one, not passed over, nor its last holder not seen since the term began:
 * isDeparted), and the runner-up to explain why. `judged`: the lease
 * as the coordinator judges its vacancy (judgedLease: a term on a session by its session's
 * renewals); the lease as given by default.
 */
export function standings(lease: Lease | undefined, candidates: readonly Candidate[], now: number, config: ElectionConfig, judged: Lease | undefined = lease) {
  const preferred = preferredLocationsOf(lease, config);
  const { vacant } = vacancy(judged, now, config.clockSkewMs);
  // decide()'s own rule (counted): one standing down only as the holder of a term that lives
  const live = candidates.filter((c) => !isCandidateStale(c, now, config.candidateStaleAfterMs) && counted(c, vacant ? undefined : judged?.holderIdentity, now, config.clockSkewMs));
  const ranked = orderCandidates(live, now, preferred);
  const rest = candidates.filter((c) => !ranked.some((r) => r.candidate === c));
  // those decide() looks among for whom to elect or prefer: not set aside, nor, on a held lease, its departed last holder
  const kept = live.filter((c) => !setAside(c, vacant, now, config) && !departedFrom(c, judged, vacant));
  const best = pickBest(kept, now, preferred);
  const runnerUp = best && orderCandidates(kept.filter((c) => c !== best.candidate), now, preferred)[0];
  const stateIn = (c: Candidate) => stateOf(c, lease, judged, vacant, best !== undefined, now, config);
  const ordered: Standing[] = [...ranked.map((r, i) => ({ candidate: r.candidate, place: i + 1, state: stateIn(r.candidate) })), ...rest.map((c) => ({ candidate: c, place: undefined, state: stateIn(c) }))];
  // each ranked candidate against the next: why the order is what it is
  const reasons = ranked.slice(0, -1).map((r, i) => words`${name(r.candidate.name)} before ${name(ranked[i + 1]!.candidate.name)}: ${whyBetter(r, ranked[i + 1]!, preferred)}`);
  return { ordered, best, runnerUp, preferred, reasons };
}

/**
 * Who takes lease `lease`, once vacant, before any election: its designated successor at once, its
 * second successor a moment later if the first has not, as their SDKs do with a released lease or a
 * term run out (lib/sdk/step.ts decideFollower: `take: 'successor'`; isSuccessor: not while another
 * is preferred, nor under a strategy Conclave does not run). Each only while its candidate row is
 * live, names the start-up the lease names, and does not stand down (its work failed at two starts
 * in a row: the SDK's acquire refuses a successor's take then): a designation is not a grant, a dead
 * one never takes the lease.
 */
export function takersOf(lease: Lease | undefined, candidates: readonly Candidate[], now: number, config: ElectionConfig): { successor?: string; second?: string } {
  return {
    ...(lease?.successor !== undefined && notTaking(lease, 'successor', candidates, now, config) === undefined ? { successor: lease.successor } : {}),
    ...(lease?.secondSuccessor !== undefined && notTaking(lease, 'second', candidates, now, config) === undefined ? { second: lease.secondSuccessor } : {}),
  };
}

/**
 * Why the successor `lease` names (`role`: its first or second) does not take it once vacant, as
 * takersOf judges it, in words; undefined when it does. The designation's own conditions are
 * isSuccessor's (isSecondSuccessor's); its row is judged as decide() judges a candidate's.
 */
export function notTaking(lease: Lease, role: 'successor' | 'second', candidates: readonly Candidate[], now: number, config: ElectionConfig): Words | undefined {
  const n = role === 'successor' ? lease.successor : lease.secondSuccessor;
  if (n === undefined) return ['none is named'];
  const c = candidates.find((x) => x.name === n);
  if (!c || isCandidateStale(c, now, config.candidateStaleAfterMs)) return [c ? 'its candidate row is stale' : 'it has no candidate row'];
  if ((role === 'successor' ? isSuccessor : isSecondSuccessor)(lease, c.name, c.identity ?? '')) {
    return standingDown(c, now, config.clockSkewMs) ? [`it stands down until ${new Date(c.standsDownUntil!).toISOString()} (its work failed at two starts in a row)`] : undefined;
  }
  const instance = role === 'successor' ? lease.successorInstance : lease.secondSuccessorInstance;
  if (lease.preferredHolder !== undefined && lease.preferredHolder !== n) return words`${name(lease.preferredHolder)} is preferred`;
  if (!successionStands(lease)) return [`the lease is left to ${lease.strategy}, whose choice it is not`];
  if (instance !== undefined && instance !== c.identity) return ['its worker started again since it was named'];
  return ['it is the successor too'];
}

/**
 * The coordinator's next step on lease `name`, in words: decided on the lease as judged (`judged`:
 * judgedLease, a term on a session by its session's renewals), as its reconcile decides
 * (decideWithSuccession), the best candidate it names judged on that lease too (standings).
 */
export function nextStepOn(name: string, lease: Lease | undefined, judged: Lease | undefined, candidates: readonly Candidate[], now: number, config: ElectionConfig): Words {
  return nextStep(decideWithSuccession(name, judged, candidates, now, config), lease, standings(lease, candidates, now, config, judged).best?.candidate.name);
}

/**
 * A decision of `decide()` as a sentence: what the coordinator does at its next reconcile. `best`:
 * the best candidate (standings), so that a holder kept over a better-ranked one (an equal that
 * registered earlier, or a last holder not renewed since the term began) is not called the best.
 */
export function nextStep(d: Decision, lease: Lease | undefined, best?: string): Words {
  switch (d.kind) {
    case 'leaveAlone':
      return leftAlone(d, lease, best);
    case 'awaitAcks':
      return words`wait for ${names(d.pending)} to answer election ${d.election.id} (until ${new Date(d.election.deadline).toISOString()})`;
    case 'openElection':
      if (d.vacancy) return words`open election ${d.election.id} (vacant: ${d.vacancy})${d.ping.length ? words` and ping ${names(d.ping)}` : ''}`;
      if (d.successor || d.secondSuccessor) return words`ask ${names(d.ping)} whether they are alive (re-election ${d.election.id}) before naming successors${d.successor ? words`; meanwhile ${namedLine(d.successor, d.secondSuccessor)}` : ''}`;
      return words`open re-election ${d.election.id}: ping ${names(d.ping, 'nobody')} while ${name(lease?.holderIdentity)} keeps leading, then preempt it for a better candidate that answers${d.withdrawsPreferredHolder !== undefined ? words`; the preference for ${name(d.withdrawsPreferredHolder)} is withdrawn meanwhile (a better candidate appeared)` : ''}`;
    case 'elect':
      return words`elect ${name(d.winner)} with a fencing token above ${lease?.fencingToken ?? 0}${d.skewPrevented ? ' (over a candidate with a newer binary: skew prevention)' : ''}`;
    case 'failElection':
      return words`record an election failure (${d.failure.reason}): ${listing(d.failure.message)}`;
    case 'cancelElection':
      return words`cancel election ${d.election.id} (${d.why})${d.successor ? words`; ${namedLine(d.successor, d.secondSuccessor)}` : ''}`;
    case 'preempt':
      return words`ask ${name(d.holder)} to yield to ${name(d.preferredHolder)} (preferredHolder); ${name(d.holder)} releases at its next renewal and the next election elects ${name(d.preferredHolder)}`;
    case 'setSuccessor':
      return d.successor
        ? words`designate ${name(d.successor.name)} successor: it takes the lease at once if ${lease?.holderIdentity ? name(lease.holderIdentity) : 'the holder'} stops renewing or releases${d.secondSuccessor ? words`; ${name(d.secondSuccessor.name)} second successor: it takes it a moment later if ${name(d.successor.name)} has not` : ''}`
        : d.strategy === OLDEST_EMULATION_VERSION
          ? ['clear the successor: no other candidate could win']
          : [`clear the successors named before: the lease is left to ${d.strategy}, whose choice they are not`];
    case 'clearPreferredHolder':
      return words`clear preferredHolder ${name(d.preferredHolder)} (${d.why === 'holderIsBest' ? 'the holder is the best candidate again' : 'no valid candidate to prefer'})`;
  }
}

/** The successors a decision names, as a phrase. */
function namedLine(successor: { name: string } | undefined, second: { name: string } | undefined): Words {
  return successor ? words`name ${name(successor.name)} successor${second ? words` and ${name(second.name)} second successor` : ''}` : ['name no successor'];
}

function leftAlone(d: Extract<Decision, { kind: 'leaveAlone' }>, lease: Lease | undefined, best: string | undefined): Words {
  switch (d.reason) {
    case 'noCandidates':
      return ['nothing: the lease has no candidates'];
    case 'noLiveCandidates':
      return ['nothing: no candidate renewed recently enough to count, or each that did stands down (its work failed at two starts in a row)'];
    case 'noResponsiveCandidates':
      return ['nothing: every live candidate let the last election pass unanswered; one that renews, or a new one, is elected at once'];
    case 'noValidCandidates':
      return words`nothing: ${d.detail === undefined ? 'no live candidate has versions that parse' : listing(d.detail)}; a candidate that registers valid versions is elected at once`;
    case 'noCoordination':
      return ['nothing: under NoCoordination the workers acquire the lease directly'];
    case 'unknownStrategy':
      return words`nothing: ${d.detail === undefined ? words`strategy "${d.strategy}" is elected by a third party` : listing(d.detail)}`;
    case 'contradictoryStrategies':
      return words`nothing: ${d.detail === undefined ? "the candidates' strategies contradict each other" : listing(d.detail)}`;
    case 'leaderHealthy':
      // decide keeps a holder unless one is better on merit (isBetterThanHolder) and not departed (isDeparted)
      if (best !== undefined && lease?.holderIdentity !== undefined && best !== lease.holderIdentity) {
        return words`nothing: ${name(lease.holderIdentity)} keeps its term: a holder is preempted only for a candidate of higher priority, older versions or a better location that answers and has renewed since the term began, and ${name(best)} is none now`;
      }
      return words`nothing: ${lease?.holderIdentity ? name(lease.holderIdentity) : 'the holder'} is the best candidate and its term is current`;
    case 'preemptionPending':
      return words`nothing new: ${name(lease?.preferredHolder)} is preferred; ${name(lease?.holderIdentity)} should release at its next renewal`;
  }
}

import * as z from 'zod';
import { Arn, dnsNameIssue, HolderName, Instance, Millis, MinReader, Name, Revision } from './common.js';
import { FencingToken } from './fencing-token.js';
import { PreferredLocations } from './location.js';
import { HolderLoss, StoredPlatform } from './platform.js';
import { StrategyName } from './strategy.js';
import { ownChecksPassed } from './validation.js';

export const LeaseName = Name;

/** The election in flight on a lease: opened by a reconciler, finished by the last ack or the timer. */
export const Election = z.object({
  /** Unique per election; the ack window timer and events refer to it. */
  id: z.string().min(1).max(512),
  /** When the candidates were pinged; a candidate has acknowledged when its renewTime ≥ startedAt. */
  startedAt: Millis,
  /** End of the ack window: then the election finishes with whoever answered. */
  deadline: Millis,
  /** The strategy the election runs under (the lease's, or the candidates' consensus). */
  strategy: StrategyName,
  /**
   * Set when the lease was held as the election opened: a re-election, to find out whether a
   * better candidate is alive before preempting the holder (who keeps leading meanwhile).
   */
  holder: HolderName.optional(),
  /**
   * Set when the election opened because the holder's term ran out (expired or reported): that
   * holder. It is pinged like everyone else but not waited for — it has just failed to renew, so
   * waiting for it would usually cost the whole ack window — unless nobody else can answer.
   */
  departed: HolderName.optional(),
  /**
   * Set when the election opened because an operator deleted the row while it was held: the
   * election closes no earlier than this (the coordinator's clock), however soon everyone answers,
   * so the deleted term's holder has had its renew deadline to hear of the end before the next
   * leader is elected (lib/functions/core.ts `heldAfterDelete`). The deadline is never before it.
   */
  notBefore: Millis.optional(),
  /**
   * Set when the election created the lease's row (there was none): it closes only once the lease
   * stream's function has seen that row (it clears this). The stream gives one row's records in
   * order, so by then it has handled any delete of an earlier row of the lease — a held row's
   * delete ends that term on its holder's session and holds the election (`notBefore`) — before
   * anyone is elected on the new one, whichever trigger created it.
   */
  awaitsStream: z.literal(true).optional(),
});
export type Election = z.infer<typeof Election>;

/**
 * A worker that judged the lease expired by its own clock (the record did not change for a whole
 * lease duration while it watched) says so here; the write is conditioned on the revision it kept
 * seeing, so the report proves the holder did not renew in that time.
 */
export const VacancyReport = z.object({
  by: HolderName,
  at: Millis,
  observedRevision: Revision,
});

/**
 * A start-up's claim to a candidate name another start-up's row holds (LeaseCandidate): the live
 * holder of the name answers by renewing its candidate row, and the newcomer is refused.
 */
export const IdentityClaim = z.object({
  /** The candidate name claimed. */
  name: HolderName,
  /** The start-up that claims it. */
  instance: Instance,
  /** The start-up whose row it found (the one asked to answer). */
  of: Instance,
  /** When (the claimer's clock, epoch ms): informational. */
  at: Millis,
});
export type IdentityClaim = z.infer<typeof IdentityClaim>;

/** An election failure's message is cut to this many characters where it is made (decide). */
export const MAX_FAILURE_MESSAGE = 2048;

/** A failure message as the lease keeps it: one naming many candidates is cut, not refused. */
export const failureMessage = (m: string): string => (m.length <= MAX_FAILURE_MESSAGE ? m : `${m.slice(0, MAX_FAILURE_MESSAGE - 3)}...`);

export const ElectionFailure = z.object({
  at: Millis,
  electionId: z.string().min(1).max(512).optional(),
  reason: z.enum(['noLiveCandidates', 'noValidCandidates', 'contradictoryStrategies']),
  message: z.string().max(MAX_FAILURE_MESSAGE),
});
export type ElectionFailure = z.infer<typeof ElectionFailure>;

/**
 * A successful run of a run-once window (the SDK's `withLease` with `runOnce`): written in the
 * run's own term (its fenced transaction: the lease's holder and fencing token checked beside it),
 * so a deposed straggler cannot mark a window, and a failed run leaves it open. Recorded in the
 * run-once rows of lib/schemas/run-once.ts.
 */
export const CompletedRun = z.object({
  /** The window the run was for, e.g. `2026-11-24` (a day), `2026-11-24T22` (an hour), or a key the caller chose. */
  window: z.string().min(1).max(256),
  /** The fencing token of the term the run held. */
  fencingToken: FencingToken,
  /** Who ran it (the holder during the run). */
  holder: HolderName,
  /** When it completed (the writer's stamp clock: DynamoDB's time by default). */
  at: Millis,
});
/** A successful run of a run-once window, as the lease keeps it (withLease `runOnce`). */
export type CompletedRun = z.infer<typeof CompletedRun>;

/**
 * How many periodic run-once windows of each period (`every`) a lease remembers, the newest
 * windows first: a run for one of them is skipped, and so is a run for a window older than all of
 * its period's once that many are remembered (it may have run and been forgotten). Windows of
 * another period never judge it. Keyed windows are never forgotten.
 */
export const MAX_COMPLETED_RUNS = 32;

/** The most characters an advertised address may have (the lease's `holderAddress`, a candidate's `address`). */
export const MAX_ADDRESS = 2048;

/**
 * Where clients reach a worker, as it advertised it (its LeaderElector's `advertise` option: a URL
 * or host:port). Rows keep it as a plain string: a reader never refuses a lease over an address.
 */
export const Address = z
  .string()
  .min(1, 'must not be empty (a URL or host:port)')
  .max(MAX_ADDRESS, `must be at most ${MAX_ADDRESS} characters (a URL or host:port)`);

/** host:port: a DNS name, an IPv4 address or a bracketed IPv6 address, then a port. */
const HOST_PORT = /^(?:\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9_](?:[A-Za-z0-9_.-]*[A-Za-z0-9_])?):(\d{1,5})$/;


/**
 * What is wrong with the host of advertisable `s` (undefined: nothing), as clients and leader
 * discovery read it. The host as an http URL reads it is what Node dials (10.1 is 10.0.0.1,
 * 012.0.0.5 is 10.0.0.5, 999.999.999.999 is nothing): an IPv4 address must be written as read, in
 * host:port and in a URL of any scheme (a grpc:// URL's host is not read so by the URL itself); a
 * name must be host-name labels, its non-ASCII letters as punycode (leader discovery cleared the
 * name of a leader it could not write).
 */
export function advertisedHostIssue(s: string): string | undefined {
  const bracketed = s.includes('://') ? /^[^:]+:\/\/(?:[^/?#@]*@)?\[/.test(s) : s.startsWith('[');
  let host = advertisedHost(s);
  if (bracketed) return URL.canParse(`http://[${host}]`) ? undefined : `names the host ${host}, which is no IPv6 address`;
  try {
    host = decodeURIComponent(host); // a non-special scheme's host comes percent-encoded
  } catch {
    return `names the host ${host}, which is no IPv4 address and no DNS name`;
  }
  const asHttp = `http://${host}`;
  if (!URL.canParse(asHttp)) return `names the host ${host}, which is no IPv4 address and no DNS name`;
  const read = new URL(asHttp).hostname;
  if (/^\d+\.\d+\.\d+\.\d+$/.test(read)) {
    const port = s.slice(s.lastIndexOf(':'));
    return read === host ? undefined : `names the host ${host}, which clients read as ${read}: write ${read}${s.includes('://') ? '' : ` (${read}${port})`}`;
  }
  const issue = read === '' ? 'is empty' : dnsNameIssue(read.replace(/\.$/, ''));
  return issue && `names the host ${host}, which ${issue}`;
}

/** Whether `s` is a URL with a host (any scheme: http, https, grpc, …) or host:port with a port from 1 to 65535. */
export function isAdvertisable(s: string): boolean {
  if (/\s/.test(s)) return false;
  if (s.includes('://')) return URL.canParse(s) && new URL(s).host !== '';
  const port = HOST_PORT.exec(s)?.[1];
  return port !== undefined && Number(port) >= 1 && Number(port) <= 65_535;
}

/**
 * The port `s` names in digits, as a URL's (after its scheme and any user@) or host:port's, however
 * large; undefined when it names none (a URL on its scheme's default port).
 */
export function advertisedPort(s: string): number | undefined {
  const m = /^(?:[A-Za-z][A-Za-z0-9+.-]*:\/\/(?:[^/?#@\s]*@)?)?(?:\[[^\]\s]*\]|[^/?#:@[\]\s]*):(\d+)(?:[/?#]|$)/.exec(s);
  return m ? Number(m[1]) : undefined;
}

/** Whether the port `s` names, if any, is one a client can dial: 1 to 65535. */
export const isPortInRange = (s: string): boolean => {
  const port = advertisedPort(s);
  return port === undefined || (port >= 1 && port <= 65_535);
};

/** The host of advertisable `s`, as a client dials it (brackets off an IPv6 literal). */
function advertisedHost(s: string): string {
  const host = s.includes('://') ? new URL(s).hostname : s.slice(0, s.lastIndexOf(':'));
  return host.replace(/^\[(.*)\]$/, '$1');
}

/**
 * Whether `host` (no brackets) is the unspecified address (0.0.0.0 or ::, in any of their
 * spellings): what a server listens on to take every interface, which a client dials as its own host.
 */
export function isWildcardHost(host: string): boolean {
  // read as an http URL's host: IPv4's short and hex forms (0, 0x0) and IPv6's (::0) made plain
  const asHttp = `http://${host.includes(':') ? `[${host}]` : host}`;
  const plain = URL.canParse(asHttp) ? new URL(asHttp).hostname : host;
  return plain === '0.0.0.0' || plain === '[::]' || plain === '[::ffff:0:0]'; // (the last: 0.0.0.0 mapped into IPv6)
}

/** Whether `host` is what a template writes for an unset variable (`${process.env.POD_IP}`: undefined). */
export const isUnsetVariableHost = (host: string): boolean => /^(?:undefined|null|nan)\.?$/i.test(host);

/**
 * Whether URL `s` carries credentials: anything before an `@` in its authority (user:password@,
 * user@, even an empty one). An address is published as written (the lease, events, the
 * Conclave-Address header, leader discovery's names and attributes), so no secret may be in it.
 */
export const hasCredentials = (s: string): boolean => /^[A-Za-z][A-Za-z0-9+.-]*:\/\/[^/?#]*@/.test(s);

/** Whether advertisable `s` names the wildcard address (isWildcardHost). */
export const isWildcard = (s: string): boolean => isWildcardHost(advertisedHost(s));

/** Whether advertisable `s`'s host is a template's unset variable (isUnsetVariableHost). */
export const isUnsetVariable = (s: string): boolean => isUnsetVariableHost(advertisedHost(s));

/** An address as a worker gives it (LeaderElector `advertise`): a URL or host:port, checked. */
// each judged only of what passed the checks before it (ownChecksPassed): one message per address, and no host read of what is no address
export const AdvertisedAddress = Address.refine(isPortInRange, {
  error: (issue) => `has port ${String(advertisedPort(String(issue.input)))}, out of range: a port is 1-65535 (where clients reach this worker, such as http://10.0.0.5:8080)`,
  when: ownChecksPassed,
})
  .refine(isAdvertisable, {
    message: 'must be a URL such as http://10.0.0.5:8080 or host:port such as 10.0.0.5:8080 (where clients reach this worker; no spaces)',
    when: ownChecksPassed,
  })
  .refine((s) => !hasCredentials(s), {
    when: ownChecksPassed,
    message:
      "carries credentials (user:password@ before the host), which would be published with it (on the lease, in events, the Conclave-Address header and leader discovery's names): leave them out (http://10.0.0.5:8080) and give clients their credentials another way",
  })
  .refine((s) => !isWildcard(s), {
    when: ownChecksPassed,
    message:
      "is the wildcard address (0.0.0.0 or ::): a server bound there listens on every interface, and no client reaches it there: advertise this worker's own address, such as its task's or pod's IP (http://10.0.0.5:8080) or a name that resolves to it",
  })
  .refine((s) => !isUnsetVariable(s), {
    when: ownChecksPassed,
    message: "names the host undefined, null or NaN: an unset variable written into a template: set it (its task's or pod's IP, such as http://10.0.0.5:8080), or leave `advertise` out",
  })
  .refine((s) => advertisedHostIssue(s) === undefined, {
    when: ownChecksPassed,
    error: (issue) => `${advertisedHostIssue(String(issue.input))} (where clients reach this worker, such as http://10.0.0.5:8080)`,
  });

export const ElectedBy = z.enum(['coordinator', 'successor', 'self']);
export type ElectedBy = z.infer<typeof ElectedBy>;

/** The longest lease a row may state (a day): a term whose duration cannot be read counts as this. */
export const MAX_LEASE_DURATION_SECONDS = 86_400;

/** One row of the leases table (key `name`), named as in Kubernetes' Lease where one exists. */
export const LeaseItem = z.object({
  name: LeaseName,
  /** The oldest reader format that may judge the row (MinReader; absent: 1): above this Conclave's, the row is refused. */
  minReader: MinReader.optional(),
  holderIdentity: HolderName.optional(),
  /**
   * The holder's process, unique per start-up (the candidate's `identity`): a restarted worker
   * with the same name is a new holder and never adopts its previous incarnation's term.
   */
  holderInstance: Instance.optional(),
  /**
   * Where clients reach the holder (its LeaderElector's `advertise`: a URL or host:port): written with
   * the term by every write that begins one (a direct acquisition, an election, a hand-off: each the
   * new holder's own, from its options or its candidate row) and removed with the holder by every
   * write that ends one, so a previous holder's address never outlives its term. Absent: none given.
   */
  holderAddress: Address.optional(),
  /** Where the holder runs (from its candidate row, or its own detection when it acquired directly). */
  holderPlatform: StoredPlatform.optional(),
  /** `holderPlatform.id` at the top level: the key of the index the platform handler queries. */
  holderPlatformId: Arn.optional(),
  /** The last term the platform handler ended because the holder's task or instance stopped. */
  holderLoss: HolderLoss.optional(),
  /** The holder whose term ended last (released, expired, deposed): what "Leader Changed" compares with. */
  lastHolderIdentity: HolderName.optional(),
  leaseDurationSeconds: z.number().int().min(1).max(MAX_LEASE_DURATION_SECONDS),
  acquireTime: Millis.optional(),
  renewTime: Millis.optional(),
  leaseTransitions: z.number().int().min(0),
  /** Set by an operator or a third party; absent = the candidates' consensus decides. */
  strategy: StrategyName.optional(),
  /**
   * Set by an operator (`conclave set-locations`): this lease's ordered preference of zones and
   * regions, in place of the coordinator's `preferredLocations`; `[]` prefers none. Absent = the
   * coordinator's default.
   */
  preferredLocations: PreferredLocations.optional(),
  /** Set by the coordinator: the holder should stop and release so this candidate can lead. */
  preferredHolder: HolderName.optional(),
  /**
   * Raised by every acquisition, never reused, never lower for a lease name even across a deleted
   * row or a restored table (`nextFencingToken`): guards the leader's writes (fencing).
   */
  fencingToken: FencingToken,
  /**
   * How the holder got the lease: elected by the coordinator; as the designated successor, handed
   * the term by the leader stepping down or taking the lease as it fell vacant (the row does not
   * tell which); or acquired directly (the fallback, or NoCoordination).
   */
  electedBy: ElectedBy.optional(),
  /**
   * No longer written: run-once windows a pre-release `withLease` recorded on the lease itself.
   * `withLease` now records them in rows of their own (lib/schemas/run-once.ts), which a delete of
   * the lease row leaves, and does not read this; it is kept only for what still shows it
   * (`conclave describe lease`).
   */
  runs: z.array(CompletedRun).max(MAX_COMPLETED_RUNS).optional(),
  /** The strategy the current holder was elected under (informational). */
  electedStrategy: StrategyName.optional(),
  election: Election.optional(),
  /**
   * Set by the coordinator while the lease is held: the candidate it would elect if the holder left
   * now (the best responsive candidate but the holder, one known to be alive when it was named:
   * lib/election/successor.ts). When the lease falls vacant — expired as that worker watched,
   * reported, released, vacated — the successor takes it directly with a write conditioned on the
   * revision it read, without waiting for an election. If it is dead, the second successor takes
   * it a moment later; if that one is dead too, the others report the vacancy and the coordinator
   * elects as usual.
   */
  successor: HolderName.optional(),
  /** The successor's process (its candidate's `identity`): a restarted worker is not the one designated. */
  successorInstance: Instance.optional(),
  /**
   * Set by the coordinator beside `successor`: the next candidate in line. It watches the term as
   * the successor does and takes a lease whose term ran out as it watched it when the successor has
   * not taken it within SECOND_SUCCESSOR_GRACE_MS (lib/sdk/step.ts), conditioned on the revision
   * it read: a dead successor costs that grace, not an election.
   */
  secondSuccessor: HolderName.optional(),
  /** The second successor's process (its candidate's `identity`). */
  secondSuccessorInstance: Instance.optional(),
  vacancyReport: VacancyReport.optional(),
  /**
   * The last claim a new start-up made to a candidate name another start-up's row holds: that
   * start-up, if it lives, answers by renewing its candidate row (its electors read the lease), and
   * the newcomer is refused (one identity, one process). Written by workers; never read by the
   * coordinator.
   */
  identityClaim: IdentityClaim.optional(),
  /**
   * The holder's session (lib/sdk/session.ts): the name of a row of the identities table (in the
   * `conclave-session…` partition its name gives: sessionKey) that the holder's process renews for
   * every lease it holds. While it is set,
   * the term lives until the later of the lease's own `renewTime` and the session's, plus
   * `leaseDurationSeconds` (`effectiveLease`); the holder renews the session, not the lease. Every
   * write that ends or changes a term removes it, and only the holder sets it.
   */
  session: Name.optional(),
  lastElectionFailure: ElectionFailure.optional(),
  /**
   * The fencing token of the holder's term, copied: the one thing a renewal is conditioned on, so
   * that a renewal names no holder attribute (IAM lets a write that flips `renewalMark` name only
   * what a renewal writes: infra/access.ts). Every write that sets or ends a term sets or removes it
   * (LeaseStore.write, releaseTerm, vacateLostHolder).
   */
  termToken: z.number().int().min(0).optional(),
  /**
   * Flipped by each renewal (absent → 1 → 2 → 1 …) and by no other write: the lease stream's event
   * filter drops the records in which it changed to 1 or 2 (lib/wiring.ts). A write that leaves it as
   * it was always reaches the function, whatever it changed.
   */
  renewalMark: z.union([z.literal(1), z.literal(2)]).optional(),
  revision: Revision,
});
/** A row of the leases table as read: the holder, its term and fencing token, and the coordinator's notes on it. */
export type Lease = z.infer<typeof LeaseItem>;

/**
 * The most bytes a lease row may take as stored (ItemStore's rowBytes): one larger is refused, as
 * one whose fields do not parse. Every field at its limit, each character 3 bytes in UTF-8, is
 * 122,034 bytes (test/stores/row-bounds.test.ts); the rest is room for a later version's fields. Its
 * nested objects (election, vacancyReport, identityClaim, holderPlatform, holderLoss) take keys they
 * do not know, dropped, so that an older reader reads a newer writer's row (one it must not judge
 * without them carries `minReader`); but not without end: a worker's identityClaim
 * carrying 385 KB of them (IAM judges only a write's top-level names) was a valid row, read whole by
 * every follower at every poll. A bound on size keeps what `.strict()` would break.
 */
export const MAX_LEASE_ROW_BYTES = 192 * 1024;

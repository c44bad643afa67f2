import { describe, expect, it } from 'vitest';
import { decide, deleteHoldMs, heldAfterDelete, reelectionWindowMs, unmarkedHoldMs, type Decision } from '../../lib/election/decide.js';
import { plan } from '../../lib/election/plan.js';
import { effectiveLease, isCandidateStale, isIdentityExpired, judgingRow, leaseExpiresAt, marksTermEnded, recheckAt, sessionStampAt, vacancy, type SessionRowRead } from '../../lib/election/vacancy.js';
import type { Candidate } from '../../lib/schemas/candidate.js';
import { electionConfig } from '../../lib/schemas/config.js';
import { SESSION_COMPONENT, allLeasesSessionComponent, sessionKey, type IdentityLease } from '../../lib/schemas/identity.js';
import type { Lease } from '../../lib/schemas/lease.js';
import { MIN, NOW, SEC, cand, lease } from '../fixtures.js';

const config = electionConfig();
const E = config.ackWindowMs; // Kubernetes' electionDuration: 5 s
const OEV = 'OldestEmulationVersion';
const run = (l: Lease | undefined, cs: Candidate[], now = NOW) => decide('component-A', l, cs, now, config);

interface Row {
  name: string;
  lease?: Lease;
  candidates: Candidate[];
  now?: number;
  want: Partial<Decision> & { kind: Decision['kind'] };
}

// Rows carried over from TestReconcileElectionStep (kubernetes leaderelection_controller_test.go).
// Kubernetes answers with (requeue, error) and the resulting lease; we answer with the decision
// whose writes (plan) give that lease. Where Conclave differs on purpose, the row says so.
const kubernetesRows: Row[] = [
  { name: 'no candidates, no lease, noop', candidates: [], want: { kind: 'leaveAlone', reason: 'noCandidates' } },
  { name: 'no candidates, lease exists. noop, not managed by CLE', lease: lease('someone'), candidates: [], want: { kind: 'leaveAlone', reason: 'noCandidates' } },
  {
    name: 'candidates exist, no existing lease should create lease',
    candidates: [cand('component-identity-1', '1.19.0', '1.19.0')],
    want: { kind: 'elect', winner: 'component-identity-1', strategy: OEV, vacancy: 'noLease' },
  },
  {
    name: 'candidates exist, lease exists, unoptimal should set preferredHolder',
    lease: lease('component-identity-1'),
    candidates: [cand('component-identity-1', '1.19.0', '1.19.0'), cand('component-identity-2', '1.18.0', '1.18.0')],
    want: { kind: 'preempt', holder: 'component-identity-1', preferredHolder: 'component-identity-2' },
  },
  {
    name: 'candidates exist, should only elect leader from acked candidates',
    candidates: [
      cand('component-identity-1', '1.19.0', '1.19.0', { pingTime: NOW - 2 * E, renewTime: NOW - 4 * E }),
      cand('component-identity-2', '1.20.0', '1.20.0', { pingTime: NOW, renewTime: NOW }),
    ],
    want: { kind: 'elect', winner: 'component-identity-2', acked: ['component-identity-2'] },
  },
  {
    name: 'candidates exist, lease exists, lease expired',
    lease: lease('component-identity-expired', { renewTime: NOW - MIN }),
    candidates: [cand('component-identity-1', '1.19.0', '1.19.0')],
    want: { kind: 'elect', winner: 'component-identity-1', vacancy: 'expired' },
  },
  {
    // Kubernetes returns an error at once. Conclave pings again: a candidate that "ignored" a ping
    // was often pinged for an election that closed before its next poll. A dead one never answers,
    // and the election fails when its window closes (recorded on the lease: loud, and retried).
    name: 'candidates exist, no acked candidates should return error (Conclave: ping again; it fails at the deadline)',
    candidates: [cand('component-identity-1', '1.19.0', '1.19.0', { pingTime: NOW - MIN, renewTime: NOW - 2 * MIN })],
    want: { kind: 'openElection', ping: ['component-identity-1'] },
  },
  {
    name: 'candidates exist, should ping on election',
    candidates: [cand('component-identity-1', '1.19.0', '1.19.0', { renewTime: NOW - 2 * E })],
    want: { kind: 'openElection', ping: ['component-identity-1'], vacancy: 'noLease' },
  },
  {
    // From the parallel-ping variant: renewed exactly one window ago is not fresh, so both are pinged at once.
    name: 'candidates exist, update lease candidates error (both pinged at once)',
    candidates: [cand('component-identity-1', '1.19.0', '1.19.0', { renewTime: NOW - 2 * E }), cand('component-identity-2', '1.20.0', '1.20.0', { renewTime: NOW - E })],
    want: { kind: 'openElection', ping: ['component-identity-1', 'component-identity-2'] },
  },
  {
    // Kubernetes waits without a lease; Conclave opens the election (its ping is already there) and waits for the ack.
    name: 'candidate exist, pinged candidate should have until electionDuration until election decision is made',
    candidates: [cand('component-identity-1', '1.19.0', '1.19.0', { pingTime: NOW, renewTime: NOW - MIN })],
    want: { kind: 'openElection', ping: ['component-identity-1'] },
  },
  {
    // Kubernetes writes the strategy onto the lease and no holder; Conclave writes nothing at all.
    name: 'candidates exist, lease exists, lease expired, 3rdparty strategy',
    lease: lease('component-identity-expired', { renewTime: NOW - MIN }),
    candidates: [cand('component-identity-1', '1.19.0', '1.19.0', { preferredStrategies: ['foo.com/bar'] })],
    want: { kind: 'leaveAlone', reason: 'unknownStrategy', strategy: 'foo.com/bar' },
  },
];

const opened = { id: 'component-A#13', startedAt: NOW - 2 * SEC, deadline: NOW - 2 * SEC + E, strategy: OEV };
const inElection = (extra: Partial<Lease> = {}) => lease(undefined, { election: opened, renewTime: NOW - MIN, ...extra });

const conclaveRows: Row[] = [
  // vacancy
  { name: 'released lease (no holder) is vacant', lease: lease(undefined), candidates: [cand('a', '1.0.0', '1.0.0')], want: { kind: 'elect', winner: 'a', vacancy: 'noHolder' } },
  { name: 'a reported vacancy needs no expiry', lease: lease('a', { vacancyReport: { by: 'b', at: NOW, observedRevision: 12 } }), candidates: [cand('b', '1.0.0', '1.0.0')], want: { kind: 'elect', winner: 'b', vacancy: 'reported' } },
  { name: 'expired, but inside the clock-skew margin: not yet', lease: lease('x', { renewTime: NOW - 10 * SEC - config.clockSkewMs }), candidates: [cand('a', '1.0.0', '1.0.0')], want: { kind: 'preempt', preferredHolder: 'a' } },
  { name: 'expired past the clock-skew margin', lease: lease('x', { renewTime: NOW - 10 * SEC - config.clockSkewMs - 1 }), candidates: [cand('a', '1.0.0', '1.0.0')], want: { kind: 'elect', vacancy: 'expired' } },
  // elections in flight
  { name: 'waits while a pinged candidate has not answered', lease: inElection(), candidates: [cand('a', '1.0.0', '1.0.0', { renewTime: NOW - MIN, pingTime: opened.startedAt }), cand('b', '1.1.0', '1.1.0', { renewTime: NOW - SEC })], want: { kind: 'awaitAcks', pending: ['a'] } },
  { name: 'finishes at once when the last pinged candidate acknowledges', lease: inElection(), candidates: [cand('a', '1.0.0', '1.0.0', { renewTime: NOW - SEC, pingTime: opened.startedAt }), cand('b', '1.1.0', '1.1.0', { renewTime: NOW - SEC, pingTime: opened.startedAt })], want: { kind: 'elect', winner: 'a', acked: ['a', 'b'] } },
  // a pinged candidate that ranks below the best that answered cannot change the outcome (before 2026-12-05: waited for until the deadline, a crashed one an ack window)
  { name: 'a pinged candidate ranked below the one that answered is not waited for: elect at once', lease: inElection(), candidates: [cand('a', '1.0.0', '1.0.0', { renewTime: NOW - SEC, pingTime: opened.startedAt }), cand('b', '1.1.0', '1.1.0', { renewTime: NOW - MIN, pingTime: opened.startedAt })], want: { kind: 'elect', winner: 'a', acked: ['a'] } },
  { name: 'a re-election for a pinned candidate that answered: preempt at once, a crashed one ranked below it not waited for', lease: lease('h', { election: { ...opened, holder: 'h' } }), candidates: [cand('h', '1.2.0', '1.2.0'), cand('p', '1.3.0', '1.3.0', { priority: 1, renewTime: NOW - SEC, pingTime: opened.startedAt }), cand('d', '1.1.0', '1.1.0', { renewTime: NOW - MIN, pingTime: opened.startedAt })], want: { kind: 'preempt', holder: 'h', preferredHolder: 'p' } },
  // a re-election the holder wins (a liveness check) waits for every answer: who answered is its outcome (the successors it names); closed at
  // once (d2623a1a, found in review) it took its pings back and opened again at every reconcile, a write loop naming the dead as successors
  { name: 'a re-election whose holder outranks the one still pending (a liveness check): waits for it until the deadline', lease: lease('h', { election: { ...opened, holder: 'h' } }), candidates: [cand('h', '1.0.0', '1.0.0'), cand('d', '1.1.0', '1.1.0', { renewTime: NOW - MIN, pingTime: opened.startedAt })], want: { kind: 'awaitAcks', pending: ['d'] } },
  { name: 'a liveness check at its deadline: closed, the holder best', lease: lease('h', { election: { ...opened, holder: 'h' } }), now: opened.deadline, candidates: [cand('h', '1.0.0', '1.0.0'), cand('d', '1.1.0', '1.1.0', { renewTime: NOW - MIN, pingTime: opened.startedAt })], want: { kind: 'cancelElection', why: 'holderIsBest' } },
  { name: 'at the deadline: elects among those who answered', lease: inElection(), now: opened.deadline, candidates: [cand('a', '1.0.0', '1.0.0', { renewTime: NOW - MIN, pingTime: opened.startedAt }), cand('b', '1.1.0', '1.1.0', { renewTime: NOW - SEC, pingTime: opened.startedAt })], want: { kind: 'elect', winner: 'b', acked: ['b'] } },
  { name: 'at the deadline with no answer: fails loudly', lease: inElection(), now: opened.deadline, candidates: [cand('a', '1.0.0', '1.0.0', { renewTime: NOW - MIN, pingTime: opened.startedAt })], want: { kind: 'failElection' } },
  { name: 'answers only from malformed versions: fails, never elects them', lease: inElection(), candidates: [cand('a', 'bad', '1.0.0', { renewTime: NOW, pingTime: opened.startedAt })], want: { kind: 'failElection' } },
  { name: 'every candidate gone during the election: fails', lease: inElection(), candidates: [], want: { kind: 'failElection' } },
  { name: 'someone took the lease directly during the election: cancel it', lease: inElection({ holderIdentity: 'fallback', renewTime: NOW }), candidates: [cand('a', '1.0.0', '1.0.0')], want: { kind: 'cancelElection', why: 'holderChanged' } },
  { name: 'strategy switched to NoCoordination during the election: cancel it', lease: inElection({ strategy: 'NoCoordination' }), candidates: [cand('a', '1.0.0', '1.0.0')], want: { kind: 'cancelElection', why: 'strategyChanged' } },
  // a holder whose term ran out: pinged, but not waited for while others can answer
  { name: 'an expired term: the election records its holder as departed', lease: lease('x', { renewTime: NOW - MIN }), candidates: [cand('x', '1.0.0', '1.0.0', { renewTime: NOW - MIN }), cand('b', '1.1.0', '1.1.0', { renewTime: NOW - MIN })], want: { kind: 'openElection', vacancy: 'expired', ping: ['x', 'b'], election: { id: 'component-A#13', startedAt: NOW, deadline: NOW + E, strategy: OEV, departed: 'x' } } },
  { name: 'a released term has no departed holder (it withdrew its candidacy first)', lease: lease(undefined), candidates: [cand('b', '1.1.0', '1.1.0', { renewTime: NOW - MIN })], want: { kind: 'openElection', vacancy: 'noHolder', election: { id: 'component-A#13', startedAt: NOW, deadline: NOW + E, strategy: OEV } } },
  { name: 'the departed holder silent, everyone else answered: elect without waiting for it', lease: inElection({ election: { ...opened, departed: 'x' } }), candidates: [cand('x', '1.0.0', '1.0.0', { renewTime: NOW - MIN, pingTime: opened.startedAt }), cand('b', '1.1.0', '1.1.0', { renewTime: NOW - SEC, pingTime: opened.startedAt })], want: { kind: 'elect', winner: 'b', acked: ['b'] } },
  { name: 'the departed holder silent, another still pending: wait', lease: inElection({ election: { ...opened, departed: 'x' } }), candidates: [cand('x', '1.0.0', '1.0.0', { renewTime: NOW - MIN, pingTime: opened.startedAt }), cand('b', '1.1.0', '1.1.0', { renewTime: NOW - MIN, pingTime: opened.startedAt }), cand('c', '1.2.0', '1.2.0', { renewTime: NOW - SEC, pingTime: opened.startedAt })], want: { kind: 'awaitAcks', pending: ['x', 'b'] } },
  { name: 'the departed holder is the only candidate: wait for it', lease: inElection({ election: { ...opened, departed: 'x' } }), candidates: [cand('x', '1.0.0', '1.0.0', { renewTime: NOW - MIN, pingTime: opened.startedAt })], want: { kind: 'awaitAcks', pending: ['x'] } },
  { name: 'the departed holder answered after all: it may win', lease: inElection({ election: { ...opened, departed: 'x' } }), candidates: [cand('x', '1.0.0', '1.0.0', { renewTime: NOW - SEC, pingTime: opened.startedAt }), cand('b', '1.1.0', '1.1.0', { renewTime: NOW - SEC, pingTime: opened.startedAt })], want: { kind: 'elect', winner: 'x', acked: ['b', 'x'] } },
  // strategies
  { name: 'NoCoordination on the lease: leave alone', lease: lease('x', { strategy: 'NoCoordination', renewTime: NOW - MIN }), candidates: [cand('a', '1.0.0', '1.0.0')], want: { kind: 'leaveAlone', reason: 'noCoordination' } },
  { name: "the lease's strategy overrides the candidates'", lease: lease(undefined, { strategy: OEV }), candidates: [cand('a', '1.0.0', '1.0.0', { preferredStrategies: ['NoCoordination'] })], want: { kind: 'elect', winner: 'a' } },
  { name: 'contradictory preferences on a vacant lease: fail with the reason', lease: lease(undefined), candidates: [cand('a', '1.0.0', '1.0.0', { preferredStrategies: [OEV, 'NoCoordination'] }), cand('b', '1.0.0', '1.0.0', { preferredStrategies: ['NoCoordination', OEV] })], want: { kind: 'failElection' } },
  { name: 'contradictory preferences on a held lease: no preemption', lease: lease('a'), candidates: [cand('a', '2.0.0', '2.0.0', { preferredStrategies: [OEV, 'NoCoordination'] }), cand('b', '1.0.0', '1.0.0', { preferredStrategies: ['NoCoordination', OEV] })], want: { kind: 'leaveAlone', reason: 'contradictoryStrategies' } },
  // preemption
  { name: 'best candidate already leads', lease: lease('a'), candidates: [cand('a', '1.0.0', '1.0.0'), cand('b', '2.0.0', '2.0.0')], want: { kind: 'leaveAlone', reason: 'leaderHealthy' } },
  { name: 'preemption already requested', lease: lease('b', { preferredHolder: 'a' }), candidates: [cand('a', '1.0.0', '1.0.0'), cand('b', '2.0.0', '2.0.0')], want: { kind: 'leaveAlone', reason: 'preemptionPending' } },
  { name: 'preferred holder has gone: point at the next best', lease: lease('c', { preferredHolder: 'gone' }), candidates: [cand('a', '1.0.0', '1.0.0'), cand('c', '2.0.0', '2.0.0')], want: { kind: 'preempt', preferredHolder: 'a' } },
  { name: 'preferred holder has gone and the holder is best: clear it', lease: lease('a', { preferredHolder: 'gone' }), candidates: [cand('a', '1.0.0', '1.0.0')], want: { kind: 'clearPreferredHolder', why: 'holderIsBest' } },
  { name: 'preferred holder went stale (30 min): clear it', lease: lease('a', { preferredHolder: 'b' }), candidates: [cand('a', '1.0.0', '1.0.0'), cand('b', '0.9.0', '0.9.0', { renewTime: NOW - 31 * MIN })], want: { kind: 'clearPreferredHolder' } },
  { name: 'a priority pins the holder against older versions', lease: lease('C1'), candidates: [cand('C1', '2.0.0', '2.0.0', { priority: 100 }), cand('C2', '1.0.0', '2.0.0')], want: { kind: 'leaveAlone', reason: 'leaderHealthy' } },
  { name: 'an expired priority lets the older version preempt', lease: lease('C1'), candidates: [cand('C1', '2.0.0', '2.0.0', { priority: 100, priorityExpiresAt: NOW - 1 }), cand('C2', '1.0.0', '2.0.0')], want: { kind: 'preempt', preferredHolder: 'C2' } },
  // re-elections: a better candidate must answer before the holder is asked to yield
  { name: 'a better candidate that is not fresh: re-election, the holder keeps leading', lease: lease('b'), candidates: [cand('a', '1.0.0', '1.0.0', { renewTime: NOW - MIN }), cand('b', '2.0.0', '2.0.0')], want: { kind: 'openElection', ping: ['a'], election: { id: 'component-A#13', startedAt: NOW, deadline: NOW + reelectionWindowMs(lease('b'), config), strategy: OEV, holder: 'b' } } },
  { name: 're-election: the better candidate answered → preempt', lease: lease('b', { election: { ...opened, holder: 'b' } }), candidates: [cand('a', '1.0.0', '1.0.0', { renewTime: NOW - SEC, pingTime: opened.startedAt }), cand('b', '2.0.0', '2.0.0', { renewTime: NOW - MIN })], want: { kind: 'preempt', preferredHolder: 'a', holder: 'b' } },
  { name: 're-election: the better candidate stayed silent → the holder stays', lease: lease('b', { election: { ...opened, holder: 'b' } }), now: opened.deadline, candidates: [cand('a', '1.0.0', '1.0.0', { renewTime: NOW - MIN, pingTime: opened.startedAt }), cand('b', '2.0.0', '2.0.0', { renewTime: NOW - MIN })], want: { kind: 'cancelElection', why: 'holderIsBest' } },
  { name: 'a candidate that ignored its last ping is not preferred meanwhile (no hand-back loop after a crash)', lease: lease('b'), candidates: [cand('a', '1.0.0', '1.0.0', { renewTime: NOW - 2 * MIN, pingTime: NOW - config.askAgainAfterMs + SEC }), cand('b', '2.0.0', '2.0.0')], want: { kind: 'leaveAlone', reason: 'leaderHealthy' } },
  // …and once that ping is askAgainAfterMs old, a re-election asks it again (never a preemption
  // unasked: the row above's re-election closes with the holder staying when it stays silent)
  { name: 'a candidate that ignored its last ping askAgainAfterMs ago is asked again by a re-election', lease: lease('b'), candidates: [cand('a', '1.0.0', '1.0.0', { renewTime: NOW - 2 * MIN, pingTime: NOW - config.askAgainAfterMs }), cand('b', '2.0.0', '2.0.0')], want: { kind: 'openElection', ping: ['a'] } },
  { name: 're-election: the lease changed hands meanwhile → cancel', lease: lease('c', { election: { ...opened, holder: 'b' } }), candidates: [cand('a', '1.0.0', '1.0.0')], want: { kind: 'cancelElection', why: 'holderChanged' } },
  { name: 're-election: the holder died meanwhile → it becomes an election', lease: lease('b', { election: { ...opened, holder: 'b' }, renewTime: NOW - MIN }), candidates: [cand('a', '1.0.0', '1.0.0', { renewTime: NOW - SEC, pingTime: opened.startedAt }), cand('b', '2.0.0', '2.0.0', { renewTime: NOW - MIN, pingTime: opened.startedAt })], now: opened.deadline, want: { kind: 'elect', winner: 'a', acked: ['a'] } },
  // candidates
  { name: 'stale candidates do not count', candidates: [cand('a', '1.0.0', '1.0.0', { renewTime: NOW - 31 * MIN })], want: { kind: 'leaveAlone', reason: 'noLiveCandidates' } },
  { name: 'vacant, and every live candidate ignored its last ping: all are pinged again, not failed (regression: npm start’s signalled failover waited for the fallback)', candidates: [cand('a', '1.0.0', '1.0.0', { renewTime: NOW - 2 * MIN, pingTime: NOW - MIN }), cand('b', '1.1.0', '1.1.0', { renewTime: NOW - 2 * MIN, pingTime: NOW - MIN })], want: { kind: 'openElection', ping: ['a', 'b'] } },
  { name: 'candidates that ignored their last ping are not pinged again', candidates: [cand('dead', '1.0.0', '1.0.0', { renewTime: NOW - 2 * MIN, pingTime: NOW - MIN }), cand('b', '1.1.0', '1.1.0', { renewTime: NOW - MIN })], want: { kind: 'openElection', ping: ['b'] } },
  // issue 36 item 5: asked again once, not at every tick for the 30 minutes a dead candidate's row stays live
  ...((): Row[] => {
    const pinged = NOW - MIN;
    const failedAt = (at: number, reason: 'noLiveCandidates' | 'noValidCandidates' = 'noLiveCandidates') => ({ lastElectionFailure: { at, reason, message: 'x', electionId: 'component-A#12' } });
    const dead = (name: string, extra: Partial<Candidate> = {}) => cand(name, '1.0.0', '1.0.0', { renewTime: NOW - 10 * MIN, pingTime: pinged, ...extra });
    return [
      { name: 'no holder, its election failed a whole ack window after every live candidate’s last ping, none answered since: left alone, not asked again', lease: lease(undefined, failedAt(pinged + E)), candidates: [dead('a'), dead('b')], want: { kind: 'leaveAlone', reason: 'noResponsiveCandidates', strategy: OEV } },
      { name: '… and one answered its ping since (renewed): elected at once', lease: lease(undefined, failedAt(pinged + E)), candidates: [dead('a'), dead('b', { renewTime: NOW - SEC, ackedPingTime: pinged })], want: { kind: 'elect', winner: 'b', acked: ['b'] } },
      { name: '… and a new candidate stood: elected at once', lease: lease(undefined, failedAt(pinged + E)), candidates: [dead('a'), cand('c', '2.0.0', '2.0.0')], want: { kind: 'elect', winner: 'c' } },
      { name: '… and one answered late, not fresh any more: pinged (it is responsive again)', lease: lease(undefined, failedAt(pinged + E)), candidates: [dead('a'), dead('b', { renewTime: pinged + 2 * E, ackedPingTime: pinged })], want: { kind: 'openElection', ping: ['b'] } },
      { name: 'the failure came less than an ack window after a candidate’s last ping: all asked again', lease: lease(undefined, failedAt(pinged + E - 1)), candidates: [dead('a'), dead('b')], want: { kind: 'openElection', ping: ['a', 'b'] } },
      { name: 'a candidate pinged after the failure: all asked again', lease: lease(undefined, failedAt(pinged + E)), candidates: [dead('a'), dead('b', { pingTime: pinged + 2 * E })], now: pinged + 4 * E, want: { kind: 'openElection', ping: ['a', 'b'] } },
      { name: 'the election failed for another reason (invalid versions): all asked again', lease: lease(undefined, failedAt(pinged + E, 'noValidCandidates')), candidates: [dead('a'), dead('b')], want: { kind: 'openElection', ping: ['a', 'b'] } },
      { name: '… a live candidate that cannot win (versions that do not parse) beside them, never pinged: left alone all the same', lease: lease(undefined, failedAt(pinged + E)), candidates: [dead('a'), dead('b'), cand('dev', 'dev', '1.0.0', { renewTime: NOW - MIN })], want: { kind: 'leaveAlone', reason: 'noResponsiveCandidates', strategy: OEV } },
      { name: 'a holder’s term ran out since (a new vacancy): all asked again, whatever failed before', lease: lease('x', { renewTime: NOW - MIN, ...failedAt(pinged + E) }), candidates: [dead('a'), dead('b')], want: { kind: 'openElection', vacancy: 'expired', ping: ['a', 'b'] } },
    ];
  })(),
  { name: 'malformed versions never win', candidates: [cand('a', 'garbage', '1.0.0'), cand('b', '9.0.0', '9.0.0')], want: { kind: 'elect', winner: 'b' } },
  // a candidate that cannot win (its versions do not parse: a hand-written row) is no answer: the
  // ones that could, silent since their last ping, are asked again, as when nobody else stands
  { name: 'vacant: every candidate that could win ignored its last ping, one that cannot win answers pings: the others asked again', lease: lease(undefined), candidates: [cand('a', '1.0.0', '1.0.0', { renewTime: NOW - 2 * MIN, pingTime: NOW - MIN }), cand('dev', 'dev', '1.0.0', { renewTime: NOW - MIN })], want: { kind: 'openElection', vacancy: 'noHolder', ping: ['a'] } },
  { name: '… and the one that cannot win is fresh: the others are asked, not an election failed on it', lease: lease(undefined), candidates: [cand('a', '1.0.0', '1.0.0', { renewTime: NOW - 2 * MIN, pingTime: NOW - MIN }), cand('dev', 'dev', '1.0.0')], want: { kind: 'openElection', vacancy: 'noHolder', ping: ['a'] } },
  // nor is one asked, or waited for: its answer could change nothing
  { name: 'vacant, a fresh candidate that could win, one that cannot not fresh: elected at once, nobody asked', lease: lease(undefined), candidates: [cand('ok', '1.0.0', '1.0.0'), cand('dev', 'dev', '1.0.0', { renewTime: NOW - MIN })], want: { kind: 'elect', winner: 'ok', vacancy: 'noHolder' } },
  { name: 'an election everyone who could win answered, one that cannot still pending: elected without waiting for it', lease: inElection(), candidates: [cand('ok', '1.0.0', '1.0.0', { renewTime: NOW - SEC, pingTime: opened.startedAt }), cand('dev', 'dev', '1.0.0', { renewTime: NOW - MIN, pingTime: opened.startedAt })], want: { kind: 'elect', winner: 'ok', acked: ['ok'] } },
  { name: 'a re-election asks the better candidate, not one that cannot win', lease: lease('b'), candidates: [cand('a', '1.0.0', '1.0.0', { renewTime: NOW - MIN }), cand('b', '2.0.0', '2.0.0'), cand('dev', 'dev', '1.0.0', { renewTime: NOW - MIN })], want: { kind: 'openElection', ping: ['a'] } },
  { name: 'the departed holder silent, only a candidate that cannot win answered: wait for it', lease: inElection({ election: { ...opened, departed: 'x' } }), candidates: [cand('x', '1.0.0', '1.0.0', { renewTime: NOW - MIN, pingTime: opened.startedAt }), cand('dev', 'dev', '1.0.0', { renewTime: NOW - SEC, pingTime: opened.startedAt })], want: { kind: 'awaitAcks', pending: ['x'] } },
  { name: 'skew prevention reported', candidates: [cand('old', '1.29.0', '1.29.0'), cand('new', '1.29.0', '1.30.0')], want: { kind: 'elect', winner: 'old', skewPrevented: true } },
];

describe('decide', () => {
  it.each(kubernetesRows)('kubernetes: $name', ({ lease: l, candidates, now, want }) => {
    expect(run(l, candidates, now)).toMatchObject(want);
  });
  it.each(conclaveRows)('conclave: $name', ({ lease: l, candidates, now, want }) => {
    expect(run(l, candidates, now)).toMatchObject(want);
  });

  it('records a contradiction once, not on every tick', () => {
    const cs = [cand('a', '1.0.0', '1.0.0', { preferredStrategies: [OEV, 'X'] }), cand('b', '1.0.0', '1.0.0', { preferredStrategies: ['X', OEV] })];
    const first = run(lease(undefined), cs);
    expect(first.kind).toBe('failElection');
    const failure = first.kind === 'failElection' ? first.failure : undefined;
    expect(run(lease(undefined, { lastElectionFailure: failure }), cs)).toMatchObject({ kind: 'leaveAlone', reason: 'contradictoryStrategies' });
  });

  it('records once that no live candidate could win (versions that do not parse), not an election failed at every tick; a candidate that could win, or a row fixed, is acted on at once', () => {
    const cs = [cand('dev', 'dev', '1.0.0', { renewTime: NOW - 2 * MIN }), cand('main', '1.0.0', 'main', { renewTime: NOW - MIN })];
    const first = run(lease(undefined), cs);
    expect(first).toMatchObject({ kind: 'failElection', failure: { reason: 'noValidCandidates' } });
    const failed = lease(undefined, { lastElectionFailure: first.kind === 'failElection' ? first.failure : undefined });
    // a minute later, both renewed meanwhile: nothing to ask them that could change the outcome
    const later = cs.map((c) => ({ ...c, renewTime: c.renewTime + MIN }));
    expect(run(failed, later, NOW + MIN)).toMatchObject({ kind: 'leaveAlone', reason: 'noValidCandidates' });
    expect(run(failed, [...later, cand('ok', '1.0.0', '1.0.0', { renewTime: NOW + MIN })], NOW + MIN).kind).not.toBe('leaveAlone');
    expect(run(failed, [later[0]!, { ...later[1]!, binaryVersion: '1.0.0' }], NOW + MIN).kind).not.toBe('leaveAlone');
  });
});

describe('plan: the writes of each decision', () => {
  it('elect: holder, fresh renew time, short first term, transitions+1, fencing token raised to the clock’s floor, election, preferredHolder and successors cleared', () => {
    const before = inElection({ preferredHolder: 'x', leaseTransitions: 3, fencingToken: 7 });
    const d = run(before, [cand('a', '1.0.0', '1.0.0', { renewTime: NOW, pingTime: opened.startedAt, identity: 'a_1234' })]);
    expect(plan(d, before, NOW, config)).toEqual({
      ping: [],
      lease: {
        set: { holderIdentity: 'a', holderInstance: 'a_1234', acquireTime: NOW, renewTime: NOW, leaseDurationSeconds: config.electedLeaseDurationSeconds, leaseTransitions: 4, fencingToken: NOW * 1000, electedBy: 'coordinator', electedStrategy: OEV },
        remove: ['election', 'preferredHolder', 'vacancyReport', 'lastElectionFailure', 'session', 'successor', 'successorInstance', 'secondSuccessor', 'secondSuccessorInstance', 'holderPlatform', 'holderPlatformId', 'holderAddress'],
      },
    });
  });
  it('elect: the winner’s address (its candidate row’s) goes on the lease; a winner without one leaves none, never the previous holder’s', () => {
    // x held the lease and advertised an address; its term ran out and the election elects another
    const before = inElection({ holderIdentity: 'x', holderAddress: 'http://10.0.0.9:8080' });
    const withAddress = run(before, [cand('a', '1.0.0', '1.0.0', { renewTime: NOW, pingTime: opened.startedAt, identity: 'a_1234', address: '10.0.0.1:8080' })]);
    expect(withAddress).toMatchObject({ kind: 'elect', winner: 'a', winnerAddress: '10.0.0.1:8080' });
    const p = plan(withAddress, before, NOW, config).lease!;
    expect(p.set).toMatchObject({ holderIdentity: 'a', holderAddress: '10.0.0.1:8080' });
    expect(p.remove).not.toContain('holderAddress');
    const without = run(before, [cand('a', '1.0.0', '1.0.0', { renewTime: NOW, pingTime: opened.startedAt, identity: 'a_1234' })]);
    const q = plan(without, before, NOW, config).lease!;
    expect(q.set?.holderAddress).toBeUndefined();
    expect(q.remove).toContain('holderAddress');
  });
  it('elect: the winner’s platform goes on the lease with it (the platform handler’s index key)', () => {
    const before = inElection();
    const platform = { kind: 'ec2' as const, id: 'i-0123456789abcdef0' };
    const d = run(before, [cand('a', '1.0.0', '1.0.0', { renewTime: NOW, pingTime: opened.startedAt, identity: 'a_1234', platform })]);
    const p = plan(d, before, NOW, config).lease!;
    expect(p.set).toMatchObject({ holderIdentity: 'a', holderPlatform: platform, holderPlatformId: platform.id });
    expect(p.remove).not.toContain('holderPlatformId');
  });
  it('elect: a token already at or above the floor (a burst, a writer whose clock ran ahead) is raised by one', () => {
    const before = inElection({ fencingToken: NOW * 1000 + 5 });
    const d = run(before, [cand('a', '1.0.0', '1.0.0', { renewTime: NOW, pingTime: opened.startedAt })]);
    expect(plan(d, before, NOW, config).lease?.set).toMatchObject({ fencingToken: NOW * 1000 + 6 });
  });
  it('first election on a new lease: transitions 0, fencing token the clock’s floor (ms × 1000)', () => {
    const d = run(undefined, [cand('a', '1.0.0', '1.0.0')]);
    expect(plan(d, undefined, NOW, config).lease?.set).toMatchObject({ leaseTransitions: 0, fencingToken: NOW * 1000, holderIdentity: 'a' });
  });
  it('open: pings first, then the election; an expired term ends (its holder is the departed one); the successor stays', () => {
    const before = lease('x', { renewTime: NOW - MIN, successor: 'a' });
    const d = run(before, [cand('a', '1.0.0', '1.0.0', { renewTime: NOW - MIN })]);
    expect(plan(d, before, NOW, config)).toEqual({
      ping: ['a'],
      pingTime: NOW,
      lease: { set: { election: { id: 'component-A#13', startedAt: NOW, deadline: NOW + E, strategy: OEV, departed: 'x' }, lastHolderIdentity: 'x' }, remove: ['holderIdentity', 'holderInstance', 'holderPlatform', 'holderPlatformId', 'holderAddress', 'session', 'preferredHolder', 'vacancyReport'] },
    });
  });
  it('fail: the election goes, the failure stays', () => {
    const before = inElection();
    const d = run(before, [], NOW);
    expect(plan(d, before, NOW, config).lease).toMatchObject({ set: { lastElectionFailure: { reason: 'noLiveCandidates', electionId: opened.id } }, remove: ['election'] });
  });
});

describe('staleness (TestLeaseCandidateGCController and identity leases)', () => {
  it.each([
    { name: 'delete expired lease candidates (renewed 30 min ago, seen just after)', renewTime: NOW - 30 * MIN - 1, stale: true },
    { name: 'no expired lease candidates (renewed now)', renewTime: NOW, stale: false },
    { name: 'exactly 30 min is not yet stale', renewTime: NOW - 30 * MIN, stale: false },
  ])('$name', ({ renewTime, stale }) => {
    expect(isCandidateStale(cand('c', '1.0.0', '1.0.0', { renewTime }), NOW, config.candidateStaleAfterMs)).toBe(stale);
  });

  const identity = (renewTime: number): IdentityLease => ({ component: 'api', name: 'api-x', holderIdentity: 'api-x_1', hostname: 'h', leaseDurationSeconds: 3600, acquireTime: renewTime, renewTime, revision: 1 });
  it.each([
    { name: 'renewed within its hour', renewTime: NOW - 59 * MIN, grace: 0, expired: false },
    { name: 'not renewed for over an hour', renewTime: NOW - 61 * MIN, grace: 0, expired: true },
    { name: 'expired but inside the grace', renewTime: NOW - 61 * MIN, grace: 5 * MIN, expired: false },
  ])('identity: $name', ({ renewTime, grace, expired }) => {
    expect(isIdentityExpired(identity(renewTime), NOW, grace)).toBe(expired);
  });

  it('vacancy reasons', () => {
    expect(vacancy(undefined, NOW, 0)).toEqual({ vacant: true, reason: 'noLease' });
    expect(vacancy(lease('a', { renewTime: undefined }), NOW, 0)).toEqual({ vacant: true, reason: 'expired' });
    expect(vacancy(lease('a'), NOW, 0)).toEqual({ vacant: false, expiresAt: NOW + 10 * SEC });
    // Like Kubernetes, not expired at the very end of the term.
    expect(vacancy(lease('a'), NOW + 10 * SEC, 0).vacant).toBe(false);
    expect(vacancy(lease('a'), NOW + 10 * SEC + 1, 0).vacant).toBe(true);
  });

  it.each([
    { name: 'renewed within half its term: no recheck', at: NOW + 5 * SEC, want: undefined },
    { name: 'silent for more than half its term: at the first moment vacancy() calls it expired', at: NOW + 5 * SEC + 1, want: NOW + 10 * SEC + 500 + 1 },
    { name: 'already vacant: the decision takes it, no recheck', at: NOW + 10 * SEC + 501, want: undefined },
  ])('recheckAt: $name', ({ at, want }) => {
    expect(recheckAt(lease('a'), at, 500)).toBe(want);
    if (want !== undefined) expect([vacancy(lease('a'), want - 1, 500).vacant, vacancy(lease('a'), want, 500).vacant]).toEqual([false, true]);
  });
});

describe('an operator deleted the row while held: the election after it waits for the deleted term (heldAfterDelete, Election.notBefore)', () => {
  const deleted = lease('a', { leaseDurationSeconds: 15, session: 's1' });
  const H = 15 * SEC;
  it.each([
    { name: 'every candidate fresh: nobody pinged, no leader before the deleted term’s lease duration', candidates: [cand('a', '1.19.0', '1.19.0'), cand('b', '1.19.0', '1.19.0')], ping: [] },
    { name: 'a candidate not renewed lately is pinged, the deleted holder too (never waited for)', candidates: [cand('a', '1.19.0', '1.19.0', { renewTime: NOW - MIN }), cand('b', '1.19.0', '1.19.0')], ping: ['a'] },
  ])('$name', ({ candidates, ping }) => {
    expect(heldAfterDelete('component-A', deleted, candidates, NOW, config)).toEqual({
      kind: 'openElection',
      strategy: OEV,
      vacancy: 'noLease',
      // the row it creates waits for the lease stream: the delete handled may not be the latest
      election: { id: 'component-A#1', startedAt: NOW, deadline: NOW + H, notBefore: NOW + H, strategy: OEV, departed: 'a', awaitsStream: true },
      ping,
    });
  });

  it('on a vacant row as it stands (a term ended by someone else, its mark not yet written): the same hold, no wait for the stream (nothing is created)', () => {
    const vacant = lease(undefined, { leaseDurationSeconds: 15, fencingToken: 3, leaseTransitions: 2 });
    const d = heldAfterDelete('component-A', deleted, [cand('b', '1.19.0', '1.19.0')], NOW, config, H, vacant);
    expect(d).toMatchObject({ kind: 'openElection', vacancy: 'noHolder', election: { notBefore: NOW + H, departed: 'a' } });
    expect(d.kind === 'openElection' ? d.election.awaitsStream : 'not open').toBeUndefined();
  });

  it('a lease duration shorter than the ack window: the deadline is the ack window, the hold the lease duration', () => {
    const d = heldAfterDelete('component-A', lease('a', { leaseDurationSeconds: 2 }), [cand('b', '1.19.0', '1.19.0', { renewTime: NOW - MIN })], NOW, config);
    expect(d).toMatchObject({ kind: 'openElection', election: { deadline: NOW + E, notBefore: NOW + 2 * SEC } });
  });

  it('nobody to elect: the decision for a missing row, as it is', () => {
    expect(heldAfterDelete('component-A', deleted, [], NOW, config)).toEqual({ kind: 'leaveAlone', reason: 'noCandidates' });
  });

  // deleteHoldMs: a term no session can hold (sessionStanding 'none' by the named row read after the
  // delete) is held only until its own stamp runs out (renewTime + lease duration + clockSkewMs, 1 s: 4 s ago + 15 s + 1 s)
  const stamped = (o: Partial<Lease>) => lease('a', { leaseDurationSeconds: 15, holderInstance: 'a-1', renewTime: NOW - 4 * SEC, ...o });
  const row = (name: string, process?: string) => ({ name, renewTime: NOW, process });
  it.each([
    { name: 'no session: by its stamp', l: stamped({}), session: undefined, marked: true, want: 12 * SEC + 1 },
    { name: 'no session, before the mark: by its stamp too (no mark is read)', l: stamped({}), session: undefined, marked: false, want: 12 * SEC + 1 },
    { name: 'a named row that does not exist, its holder on none: by its stamp', l: stamped({ session: 's1' }), session: undefined, marked: true, want: 12 * SEC + 1 },
    { name: "another process's named row, its holder on none: by its stamp", l: stamped({ session: 's1' }), session: row('s1', 'pz'), marked: true, want: 12 * SEC + 1 },
    { name: 'its stamp long run out: nothing', l: stamped({ renewTime: NOW - MIN }), session: undefined, marked: true, want: 0 },
    { name: "an older SDK's named row (no process): a lease duration", l: stamped({ session: 's1' }), session: row('s1'), marked: true, want: H },
    { name: "an older SDK's named row, before the mark: unmarkedHoldMs", l: stamped({ session: 's1' }), session: row('s1'), marked: false, want: unmarkedHoldMs(15) },
    { name: 'a holder naming a process, the named row missing: a lease duration', l: stamped({ session: 's1', holderInstance: 'a-1@pa' }), session: undefined, marked: true, want: H },
    { name: 'a holder naming a process on no session: by its stamp, as the tick judges the standing row (its session renews only a term its row names)', l: stamped({ holderInstance: 'a-1@pa' }), session: undefined, marked: true, want: 12 * SEC + 1 },
    { name: 'a holder naming a process on no session, before the mark: by its stamp too', l: stamped({ holderInstance: 'a-1@pa' }), session: undefined, marked: false, want: 12 * SEC + 1 },
    { name: 'no stamp: a lease duration', l: stamped({ renewTime: undefined }), session: undefined, marked: true, want: H },
  ])('deleteHoldMs, $name', ({ l, session, marked, want }) => {
    expect(deleteHoldMs(l, session, NOW, config, marked)).toBe(want);
  });

  // deleteHoldMs with `sessions` (deletedSessionTermOverAt): a holder naming a process, judged by its
  // process's session rows read from READ_AT on (judgingRow): over at the later of the row's own stamp
  // (4 s ago) and the session's, + 15 s + 1 s + 1 ms, only where nothing its process writes can renew it
  const onProcess = (o: Partial<Lease> = {}) => stamped({ session: 'pa-s1', holderInstance: 'a-1@pa', fencingToken: 3, termToken: 3, ...o });
  const srow = (renewTime: number, o: Partial<IdentityLease> = {}): IdentityLease => ({ component: SESSION_COMPONENT, name: 'pa-s1', holderIdentity: 'pa-s1', hostname: 'h', leaseDurationSeconds: 15, acquireTime: 0, renewTime, revision: 1, process: 'pa', ...o });
  const READ_AT = NOW - 100; // the reads went out 100 ms before the judgement
  const byRows = (l: Lease, named: IdentityLease | undefined, own: IdentityLease[] = [], ended?: number) => ({ judged: judgingRow(l, named, () => own), endMarked: marksTermEnded(ended === undefined ? undefined : { [l.name]: ended }, l), readAt: READ_AT });
  it.each([
    { name: 'its own named row, the end marked on it, last renewed 2 s ago: by the session stamp', l: onProcess(), by: byRows(onProcess(), srow(NOW - 2 * SEC), [], 3), marked: true, want: 14 * SEC + 1 },
    { name: 'the same, before the mark (none on the row): the whole unmarked hold', l: onProcess(), by: byRows(onProcess(), srow(NOW - 2 * SEC)), marked: false, want: unmarkedHoldMs(15) },
    { name: "its own named row, marked, fresher than its term: never past a lease duration", l: onProcess(), by: byRows(onProcess(), srow(NOW), [], 3), marked: true, want: H },
    { name: 'a mark of an earlier term only: the whole hold', l: onProcess(), by: byRows(onProcess(), srow(NOW - 2 * SEC), [], 2), marked: true, want: H },
    { name: 'its fencing token moved down under the term (termToken 5 kept), the mark reaching only the moved token: the whole hold (its elector leads with 5)', l: onProcess({ termToken: 5 }), by: byRows(onProcess({ termToken: 5 }), srow(NOW - 2 * SEC), [], 3), marked: true, want: H },
    { name: 'its own named row over already when read (its stamp + 16 s before READ_AT), its own stamp a minute old: nothing', l: onProcess({ renewTime: NOW - MIN }), by: byRows(onProcess(), srow(READ_AT - 16 * SEC - 1)), marked: false, want: 0 },
    { name: 'one millisecond short of that: the whole hold (a renewal may land after the read)', l: onProcess(), by: byRows(onProcess(), srow(READ_AT - 16 * SEC)), marked: true, want: H },
    { name: 'over when read by the session, its own stamp later: by its own stamp', l: onProcess(), by: byRows(onProcess(), srow(NOW - MIN)), marked: true, want: 12 * SEC + 1 },
    { name: 'its own row naming the term as left 3 s ago, fresh itself: by the left stamp', l: onProcess(), by: byRows(onProcess(), srow(NOW, { leftTerms: { [onProcess().name]: { token: 3, instance: 'a-1@pa', stamp: NOW - 3 * SEC } } })), marked: true, want: 13 * SEC + 1 },
    { name: 'a left term of another instance: not this term, the whole hold', l: onProcess(), by: byRows(onProcess(), srow(NOW, { leftTerms: { [onProcess().name]: { token: 3, instance: 'a-2@pa', stamp: NOW - 3 * SEC } } })), marked: true, want: H },
    { name: "another process's named row, marked, its own row fresh: the whole hold (its mark never reaches the holder)", l: onProcess(), by: byRows(onProcess(), srow(NOW - 2 * SEC, { process: 'pz' }), [srow(NOW, { name: 'pa-s2' })], 3), marked: true, want: H },
    { name: "another process's named row, its own row stale past its term when read, its own stamp a minute old: nothing", l: onProcess({ renewTime: NOW - MIN }), by: byRows(onProcess(), srow(NOW, { process: 'pz' }), [srow(NOW - MIN, { name: 'pa-s2' })]), marked: true, want: 0 },
    { name: 'the named row gone, no row of its process: by its own stamp (judgingRow)', l: onProcess(), by: byRows(onProcess(), undefined), marked: true, want: 12 * SEC + 1 },
    { name: 'not read (sessions undefined): the whole hold', l: onProcess(), by: undefined, marked: true, want: H },
    { name: 'a holder naming a process, its row naming no session: by its own stamp (deletedTermOverAt), as the tick judges the standing row', l: onProcess({ session: undefined }), by: byRows(onProcess({ session: undefined }), undefined), marked: true, want: 12 * SEC + 1 },
    { name: 'no stamp: the whole hold', l: onProcess({ renewTime: undefined }), by: byRows(onProcess(), srow(NOW - MIN)), marked: true, want: H },
  ])('deleteHoldMs on a process, $name', ({ l, by, marked, want }) => {
    expect(deleteHoldMs(l, undefined, NOW, config, marked, by)).toBe(want);
  });

  const held = (extra: Partial<Lease> = {}) => lease(undefined, { election: { id: 'component-A#1', startedAt: NOW, deadline: NOW + H, notBefore: NOW + H, strategy: OEV, departed: 'a' }, ...extra });
  const answered = [cand('a', '1.19.0', '1.19.0', { pingTime: NOW, ackedPingTime: NOW, renewTime: NOW + SEC }), cand('b', '1.19.0', '1.19.0', { pingTime: NOW, ackedPingTime: NOW, renewTime: NOW + SEC })];
  it.each([
    { name: 'everyone answered at once: nobody is elected before notBefore (the ack-driven finish)', now: NOW + 2 * SEC, want: 'awaitAcks' },
    { name: 'past the ack window, still before notBefore (the tick, an early timer)', now: NOW + H - 1, want: 'awaitAcks' },
    { name: 'at notBefore: elected', now: NOW + H, want: 'elect' },
  ])('$name', ({ now, want }) => {
    expect(decide('component-A', held(), answered, now, config).kind).toBe(want);
  });

  it('taken meanwhile by a worker (its fallback): the held election is cancelled, the holder left alone', () => {
    expect(decide('component-A', held({ holderIdentity: 'b', renewTime: NOW + SEC, acquireTime: NOW + SEC }), answered, NOW + 2 * SEC, config)).toMatchObject({ kind: 'cancelElection', why: 'holderChanged' });
  });
});

describe("a held lease's re-election window", () => {
  // a successor without the push path reads once a renewal interval (6 s at client-go's timings):
  // the 5 s ack window alone closed before it saw the election
  it.each([
    { leaseS: 15, want: 15_000 },
    { leaseS: 2, want: config.ackWindowMs },
    { leaseS: 600, want: config.askAgainAfterMs / 2 },
  ])('a $leaseS s lease: $want ms', ({ leaseS, want }) => {
    expect(reelectionWindowMs({ leaseDurationSeconds: leaseS }, config)).toBe(want);
  });
});

describe("judgingRow: the session row a held term is judged by, as the coordinator's tick judges it and the CLI shows it", () => {
  // a1 of process p7 holds `l` (its own stamp a minute old, 15 s long) on session s-named
  const held = lease('a1', { name: 'l', holderInstance: 'a1_1@p7', session: 's-named', leaseDurationSeconds: 15, renewTime: NOW - MIN });
  const row = (name: string, process: string | undefined, renewTime: number, extra: Partial<SessionRowRead> = {}): SessionRowRead => ({ component: sessionKey(name).component, name, renewTime, process, ...extra });
  const shard = allLeasesSessionComponent('p7');
  const own = row(`${shard.slice(SESSION_COMPONENT.length + 1)}:s-own`, 'p7', NOW - 2 * SEC);
  const rows = [
    own,
    row('s-own-old', 'p7', NOW - 5 * MIN),
    row('s-peer', 'p2', NOW), // another process's, fresher
    { ...row('s-elsewhere', 'p7', NOW), component: 'conclave-session:other-scope' }, // the process, in another grant's partition
  ];
  const expiry = (l: Lease, named: SessionRowRead | undefined, all: SessionRowRead[]) => leaseExpiresAt(effectiveLease(l, sessionStampAt(judgingRow(l, named, () => all)?.row, NOW, NOW), NOW));

  it('the row named where it stands for the holder; no row for a lease not held on a session', () => {
    const named = row('s-named', 'p7', NOW - SEC);
    expect(judgingRow(held, named, () => rows)).toEqual({ row: named });
    expect(judgingRow({ ...held, holderIdentity: undefined }, named, () => rows)).toBeUndefined();
    expect(judgingRow({ ...held, session: undefined }, named, () => rows)).toBeUndefined();
    // a holder on no session (its instance names no process) renews the lease itself: the row named, gone or not
    expect(judgingRow({ ...held, holderInstance: 'a1_1' }, undefined, () => rows)).toEqual({ row: undefined });
  });

  it("the row named gone, another process's, or an older SDK's (no process): its holder's own process's freshest session in its partitions, under the name the lease gives it", () => {
    for (const named of [undefined, row('s-named', 'p2', NOW), row('s-named', undefined, NOW)]) {
      expect(judgingRow(held, named, () => rows)).toEqual({ row: { name: 's-named', renewTime: NOW - 2 * SEC, process: 'p7' }, own });
      expect(expiry(held, named, rows)).toBe(NOW + 13 * SEC);
    }
  });

  it('a term its own process names as left (leftTerms): by the stamp it was left at, the renewals not counted', () => {
    const leftTerms = { l: { token: 7, instance: 'a1_1@p7', stamp: NOW - 10 * SEC } };
    const leaving = { ...own, renewTime: NOW - SEC, leftTerms };
    expect(judgingRow(held, undefined, () => [leaving])).toEqual({ row: { name: 's-named', renewTime: NOW - SEC, process: 'p7', leftTerms }, own: leaving });
    expect(expiry(held, undefined, [leaving])).toBe(NOW + 5 * SEC);
    expect(expiry(held, undefined, [{ ...leaving, leftTerms: { l: { ...leftTerms.l, token: 6 } } }])).toBe(NOW + 14 * SEC); // another term of the lease: not this one
  });

  it("none of the holder's process left: a stamp of 0, so the lease's own stamp decides", () => {
    expect(judgingRow(held, undefined, () => rows.slice(2))).toEqual({ row: { name: 's-named', renewTime: 0, process: 'p7' }, own: null });
    expect(expiry(held, undefined, rows.slice(2))).toBe(NOW - 45 * SEC);
  });
});

describe('a candidate standing down (its row\'s standsDownUntil: its work failed at two starts in a row, on a session)', () => {
  const down = (name: string, version: string, until: number, extra: Partial<Candidate> = {}) => cand(name, version, version, { standsDownUntil: until, ...extra });
  const rows: Row[] = [
    { name: 'vacant, the best fresh but standing down: the next elected', lease: lease(undefined), candidates: [down('a', '1.0.0', NOW + 5 * MIN), cand('b', '2.0.0', '2.0.0')], want: { kind: 'elect', winner: 'b', acked: ['b'] } },
    { name: 'held by a worse one: not preempted for it, nor asked', lease: lease('b'), candidates: [down('a', '1.0.0', NOW + 5 * MIN), cand('b', '2.0.0', '2.0.0')], want: { kind: 'leaveAlone', reason: 'leaderHealthy' } },
    { name: '… a preemption for it asked before it stood down: taken back', lease: lease('b', { preferredHolder: 'a' }), candidates: [down('a', '1.0.0', NOW + 5 * MIN), cand('b', '2.0.0', '2.0.0')], want: { kind: 'clearPreferredHolder', preferredHolder: 'a' } },
    { name: 'its mark run out (a process that died, a clear that did not land): preempted for, as before', lease: lease('b'), candidates: [down('a', '1.0.0', NOW), cand('b', '2.0.0', '2.0.0')], want: { kind: 'preempt', preferredHolder: 'a' } },
    { name: 'a mark further ahead than the longest stand-down and the skew (a clock running ahead) proves nothing', lease: lease('b'), candidates: [down('a', '1.0.0', NOW + 15 * MIN + config.clockSkewMs + 1), cand('b', '2.0.0', '2.0.0')], want: { kind: 'preempt', preferredHolder: 'a' } },
    { name: '… one just within it counts', lease: lease('b'), candidates: [down('a', '1.0.0', NOW + 15 * MIN + config.clockSkewMs), cand('b', '2.0.0', '2.0.0')], want: { kind: 'leaveAlone', reason: 'leaderHealthy' } },
    { name: 'the holder of a live term marked (a term given it before its mark landed): kept over a worse one', lease: lease('a'), candidates: [down('a', '1.0.0', NOW + 5 * MIN), cand('b', '2.0.0', '2.0.0')], want: { kind: 'leaveAlone', reason: 'leaderHealthy' } },
    { name: 'its term run out: not elected back', lease: lease('a', { renewTime: NOW - MIN }), candidates: [down('a', '1.0.0', NOW + 5 * MIN), cand('b', '2.0.0', '2.0.0')], want: { kind: 'elect', winner: 'b', vacancy: 'expired' } },
    { name: 'an election in flight it answered: the next elected', lease: inElection(), candidates: [down('a', '1.0.0', NOW + 5 * MIN, { pingTime: opened.startedAt, ackedPingTime: opened.startedAt }), cand('b', '2.0.0', '2.0.0', { renewTime: NOW - SEC, pingTime: opened.startedAt })], want: { kind: 'elect', winner: 'b', acked: ['b'] } },
    { name: 'the only candidate: nobody elected (as one that lets its pings pass)', lease: lease(undefined), candidates: [down('a', '1.0.0', NOW + 5 * MIN)], want: { kind: 'leaveAlone', reason: 'noLiveCandidates' } },
  ];
  it.each(rows)('$name', ({ lease: l, candidates, now, want }) => {
    expect(run(l, candidates, now)).toMatchObject(want);
  });
});

describe('a candidate standing down still counts in the strategy consensus: its mark passes it over, it does not choose who governs the lease (before: dropped from it, so a mark handed a third party\'s lease to the coordinator)', () => {
  // a prefers OldestEmulationVersion; t, the newest binary, prefers another strategy: t's first choice wins (strategy.ts)
  const a = cand('a', '1.31.0', '1.31.0');
  const t = (strategy: string, extra: Partial<Candidate> = {}) => cand('t', '1.32.0', '1.32.0', { preferredStrategies: [strategy], standsDownUntil: NOW + 5 * MIN, ...extra });
  const vacant = lease(undefined, { lastHolderIdentity: 'h' });
  const rows: Row[] = [
    { name: "a third party's strategy: left alone, as unmarked", lease: vacant, candidates: [a, t('example.com/my-strategy')], want: { kind: 'leaveAlone', reason: 'unknownStrategy', strategy: 'example.com/my-strategy' } },
    { name: 'NoCoordination: left alone, as unmarked', lease: vacant, candidates: [a, t('NoCoordination')], want: { kind: 'leaveAlone', reason: 'noCoordination', strategy: 'NoCoordination' } },
    { name: 'held: left alone too, not a re-election for a', lease: lease('h'), candidates: [a, t('NoCoordination')], want: { kind: 'leaveAlone', reason: 'noCoordination' } },
    { name: "an election open when the lease's strategy turned: cancelled", lease: inElection(), candidates: [cand('a', '1.31.0', '1.31.0', { pingTime: opened.startedAt, ackedPingTime: opened.startedAt }), t('NoCoordination')], want: { kind: 'cancelElection', why: 'strategyChanged', strategy: 'NoCoordination' } },
    { name: 'strategies that contradict: the election fails, as unmarked', lease: vacant, candidates: [a, cand('t', '1.31.0', '1.31.0', { preferredStrategies: ['NoCoordination'], standsDownUntil: NOW + 5 * MIN })], want: { kind: 'failElection', failure: expect.objectContaining({ reason: 'contradictoryStrategies' }) } },
    { name: 'one that agrees: a elected, t passed over', lease: vacant, candidates: [a, cand('t', '1.0.0', '1.0.0', { standsDownUntil: NOW + 5 * MIN })], want: { kind: 'elect', winner: 'a', acked: ['a'] } },
    { name: 'an election open whose only candidate stood down since: failed at once, none left to elect (as with none live)', lease: inElection(), candidates: [cand('a', '1.0.0', '1.0.0', { pingTime: opened.startedAt, standsDownUntil: NOW + 5 * MIN })], want: { kind: 'failElection', failure: { at: NOW, electionId: opened.id, reason: 'noLiveCandidates', message: `no live candidate is left for election ${opened.id}` } } },
    { name: 'held by one that is no candidate, the one preferred stands down, nobody else: the preemption taken back', lease: lease('h', { preferredHolder: 't' }), candidates: [cand('t', '1.0.0', '1.0.0', { standsDownUntil: NOW + 5 * MIN })], want: { kind: 'clearPreferredHolder', preferredHolder: 't', why: 'noValidCandidate' } },
  ];
  it.each(rows)('$name', ({ lease: l, candidates, now, want }) => {
    expect(run(l, candidates, now)).toMatchObject(want);
  });

  it('the same decision with the mark as without, where the strategy is not OldestEmulationVersion', () => {
    for (const s of ['example.com/my-strategy', 'NoCoordination']) {
      expect(run(vacant, [a, t(s)])).toEqual(run(vacant, [a, t(s, { standsDownUntil: undefined })]));
    }
  });
});

describe("a row that let the coordinator's ping pass has no say in the strategy, as Kubernetes takes it from the candidates that acked (pickBestStrategy(ackedCandidates)): before, a crashed row's preference held the lease (a review, 2026-12-07)", () => {
  // a rolling upgrade rolled back: new-1 (the newest binary, a third party's strategy first) crash-looped
  // and let a ping pass 9 minutes ago; its row stays live for 30; old-1 is alive
  const old1 = (extra: Partial<Candidate> = {}) => cand('old-1', '1.31.0', '1.31.0', extra);
  const new1 = (strategies: string[], extra: Partial<Candidate> = {}) => cand('new-1', '1.31.0', '1.32.0', { preferredStrategies: strategies, renewTime: NOW - 10 * MIN, pingTime: NOW - 9 * MIN, ...extra });
  const expired = lease('new-1', { renewTime: NOW - MIN });
  const reelection = { ...opened, holder: 'h' };
  const rows: Row[] = [
    { name: 'a term run out, the dead newer row preferring a third party: old-1 elected (before: left alone as unknownStrategy for up to 30 minutes)', lease: expired, candidates: [old1(), new1(['foo.com/bar'])], want: { kind: 'elect', strategy: OEV, winner: 'old-1', acked: ['old-1'], vacancy: 'expired' } },
    { name: '… no lease row at all: likewise', candidates: [old1(), new1(['foo.com/bar'])], want: { kind: 'elect', strategy: OEV, winner: 'old-1', vacancy: 'noLease' } },
    { name: '… the dead row ordering the strategies against the live one: old-1 elected (before: the election failed as contradictoryStrategies)', lease: expired, candidates: [old1({ preferredStrategies: [OEV, 'NoCoordination'] }), new1(['NoCoordination', OEV])], want: { kind: 'elect', winner: 'old-1' } },
    { name: '… held by old-1: healthy (before: left alone as unknownStrategy)', lease: lease('old-1'), candidates: [old1(), new1(['foo.com/bar'])], want: { kind: 'leaveAlone', reason: 'leaderHealthy', strategy: OEV } },
    { name: 'the row answered since (renewed after its ping): its say is back, the third party governs', lease: expired, candidates: [old1(), new1(['foo.com/bar'], { renewTime: NOW - SEC })], want: { kind: 'leaveAlone', reason: 'unknownStrategy', strategy: 'foo.com/bar' } },
    { name: 'never pinged: it has its say, alive or not (nothing asked it)', lease: expired, candidates: [old1(), new1(['foo.com/bar'], { pingTime: undefined })], want: { kind: 'leaveAlone', reason: 'unknownStrategy' } },
    { name: 'every live row let its last ping pass: the strategy of them all, as before', lease: expired, candidates: [old1({ renewTime: NOW - 10 * MIN, pingTime: NOW - 9 * MIN }), new1(['foo.com/bar'])], want: { kind: 'leaveAlone', reason: 'unknownStrategy', strategy: 'foo.com/bar' } },
    { name: 'the holder of a term that lives keeps its say though its ping stands unanswered (it renews the lease)', lease: lease('new-1'), candidates: [old1(), new1(['NoCoordination'], { renewTime: NOW - 3 * SEC, pingTime: NOW - 2 * SEC })], want: { kind: 'leaveAlone', reason: 'noCoordination' } },
    // asked again (a liveness check, askAgainAfterMs after its last ping), the dead row gets no say from the new ping
    { name: 'a liveness check that asked the dead row again runs on, not cancelled for its strategy', lease: lease('h', { election: reelection }), candidates: [cand('h', '1.31.0', '1.31.0'), old1(), new1(['foo.com/bar'], { pingTime: opened.startedAt })], want: { kind: 'awaitAcks', strategy: OEV, pending: ['new-1'] } },
    { name: '… closed at its deadline with the holder best, the dead row passed over', lease: lease('h', { election: reelection }), now: opened.deadline, candidates: [cand('h', '1.31.0', '1.31.0'), old1(), new1(['foo.com/bar'], { pingTime: opened.startedAt })], want: { kind: 'cancelElection', why: 'holderIsBest', strategy: OEV } },
    // a live row asked for the election open, not yet answering, whose preference the outcome turns on:
    // the election waits for it (not cancelled, its ping taken back, opened again: a loop)
    { name: 'an election waits for a row it asked whose say keeps its strategy', lease: inElection(), candidates: [old1({ preferredStrategies: [OEV, 'NoCoordination'], renewTime: NOW - MIN, pingTime: opened.startedAt }), cand('new-1', '1.31.0', '1.32.0', { preferredStrategies: ['NoCoordination'] })], want: { kind: 'awaitAcks', strategy: OEV, pending: ['old-1'] } },
    { name: '… it answers: elected', lease: inElection(), candidates: [old1({ preferredStrategies: [OEV, 'NoCoordination'], renewTime: NOW - SEC, pingTime: opened.startedAt }), cand('new-1', '1.31.0', '1.32.0', { preferredStrategies: ['NoCoordination'] })], want: { kind: 'elect', winner: 'old-1' } },
    { name: '… silent at the deadline: the strategy of those that answered (NoCoordination), the election cancelled', lease: inElection(), now: opened.deadline, candidates: [old1({ preferredStrategies: [OEV, 'NoCoordination'], renewTime: NOW - MIN, pingTime: opened.startedAt }), cand('new-1', '1.31.0', '1.32.0', { preferredStrategies: ['NoCoordination'], renewTime: opened.deadline })], want: { kind: 'cancelElection', why: 'strategyChanged', strategy: 'NoCoordination' } },
  ];
  it.each(rows)('$name', ({ lease: l, candidates, now, want }) => {
    expect(run(l, candidates, now)).toMatchObject(want);
  });
});

describe("a re-election for a better candidate than the preferredHolder pending takes that preference back: the holder yielded to it meanwhile, and the re-election moved the lease on again (two hand-overs for one; a review, 2026-12-07)", () => {
  // X preferred (older emulation than the holder H); Y pinned since, better than X, not renewed for 5 minutes
  const H = cand('H', '1.30.0', '1.30.0');
  const X = cand('X', '1.29.0', '1.29.0', { identity: 'X_1' });
  const Y = (extra: Partial<Candidate> = {}) => cand('Y', '1.30.0', '1.30.0', { priority: 10, renewTime: NOW - 5 * MIN, ...extra });
  const pending = lease('H', { preferredHolder: 'X', successor: 'X', successorInstance: 'X_1' });

  it('the re-election asks Y and withdraws the preference for X; the successor X stays (alive, better than the holder)', () => {
    const d = run(pending, [H, X, Y()]);
    expect(d).toMatchObject({ kind: 'openElection', ping: ['Y'], withdrawsPreferredHolder: 'X', election: { holder: 'H' } });
    expect(plan(d, pending, NOW, config)).toEqual({ ping: ['Y'], pingTime: NOW, lease: { set: { election: (d as Extract<Decision, { kind: 'openElection' }>).election }, remove: ['preferredHolder'] } });
  });

  it('Y fresh: preempted for at once, as before (the preference overwritten)', () => {
    expect(run(pending, [H, X, Y({ renewTime: NOW })])).toMatchObject({ kind: 'preempt', preferredHolder: 'Y' });
  });

  it('no preference pending: the re-election writes only itself, as before', () => {
    const held = lease('H');
    const d = run(held, [H, Y()]);
    expect(d).toMatchObject({ kind: 'openElection', ping: ['Y'] });
    expect(d).not.toHaveProperty('withdrawsPreferredHolder');
    expect(plan(d, held, NOW, config).lease).toEqual({ set: { election: (d as Extract<Decision, { kind: 'openElection' }>).election } });
  });

  it('the re-election closes: Y answered → preempted for Y; silent → X, still better than the holder, preferred again', () => {
    const e = { ...opened, holder: 'H' };
    const open = lease('H', { election: e, successor: 'X', successorInstance: 'X_1' });
    expect(run(open, [H, X, Y({ renewTime: NOW - SEC, pingTime: e.startedAt })])).toMatchObject({ kind: 'preempt', preferredHolder: 'Y' });
    expect(run(open, [H, X, Y({ pingTime: e.startedAt })], e.deadline)).toMatchObject({ kind: 'preempt', preferredHolder: 'X' });
  });
});

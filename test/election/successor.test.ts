import { describe, expect, it } from 'vitest';
import { pingsToWithdraw, type Decision } from '../../lib/election/decide.js';
import { plan } from '../../lib/election/plan.js';
import { decideWithSuccession, knownAliveSince, successorOf, successorsOf } from '../../lib/election/successor.js';
import type { Candidate } from '../../lib/schemas/candidate.js';
import { electionConfig, type ElectionConfig } from '../../lib/schemas/config.js';
import type { Lease } from '../../lib/schemas/lease.js';
import { MIN, NOW, SEC, cand, lease } from '../fixtures.js';

const config = electionConfig();
const OEV = 'OldestEmulationVersion';
const run = (l: Lease | undefined, cs: Candidate[], now = NOW, c = config) => decideWithSuccession('component-A', l, cs, now, c);

describe('successorOf: who takes the lease at once if the holder leaves', () => {
  it.each([
    { name: 'the best candidate but the holder', holder: 'a', candidates: [cand('a', '1.0.0', '1.0.0'), cand('b', '1.2.0', '1.2.0'), cand('c', '1.1.0', '1.1.0')], want: 'c' },
    { name: 'a priority wins succession as it wins elections', holder: 'a', candidates: [cand('a', '1.0.0', '1.0.0'), cand('b', '1.2.0', '1.2.0', { priority: 5 }), cand('c', '1.1.0', '1.1.0')], want: 'b' },
    { name: 'a stale candidate is never successor', holder: 'a', candidates: [cand('a', '1.0.0', '1.0.0'), cand('b', '0.9.0', '0.9.0', { renewTime: NOW - 31 * MIN }), cand('c', '1.1.0', '1.1.0')], want: 'c' },
    { name: 'nor one that ignored its last ping', holder: 'a', candidates: [cand('a', '1.0.0', '1.0.0'), cand('b', '0.9.0', '0.9.0', { renewTime: NOW - 2 * MIN, pingTime: NOW - 30 * SEC }), cand('c', '1.1.0', '1.1.0')], want: 'c' },
    { name: 'unless every other one did: the best of them all the same (a designation is not a grant)', holder: 'a', candidates: [cand('a', '1.0.0', '1.0.0'), cand('b', '0.9.0', '0.9.0', { renewTime: NOW - 2 * MIN, pingTime: NOW - 30 * SEC })], want: 'b' },
    { name: 'nor one standing down (its work failed at two starts in a row: standsDownUntil ahead)', holder: 'a', candidates: [cand('a', '1.0.0', '1.0.0'), cand('b', '0.9.0', '0.9.0', { standsDownUntil: NOW + 5 * MIN }), cand('c', '1.1.0', '1.1.0')], want: 'c' },
    { name: '… once its mark has run out, it is', holder: 'a', candidates: [cand('a', '1.0.0', '1.0.0'), cand('b', '0.9.0', '0.9.0', { standsDownUntil: NOW }), cand('c', '1.1.0', '1.1.0')], want: 'b' },
    { name: 'nor one whose versions do not parse', holder: 'a', candidates: [cand('a', '1.0.0', '1.0.0'), cand('b', 'garbage', '0.9.0'), cand('c', '1.1.0', '1.1.0')], want: 'c' },
    { name: 'the holder alone: none', holder: 'a', candidates: [cand('a', '1.0.0', '1.0.0')], want: undefined },
    { name: 'a better candidate than the holder is its successor too (the one it yields to)', holder: 'b', candidates: [cand('a', '1.0.0', '1.0.0'), cand('b', '1.2.0', '1.2.0')], want: 'a' },
    // failure domains: a Region (else a zone) that takes the holder down should leave its successor up
    { name: 'of equals on merit, one in another Region than the holder’s, though another sorts first', holder: 'a', candidates: [cand('a', '1.0.0', '1.0.0', { location: { region: 'us-east-1' } }), cand('b', '1.0.0', '1.0.0', { location: { region: 'us-east-1' } }), cand('c', '1.0.0', '1.0.0', { location: { region: 'us-west-2' } })], want: 'c' },
    { name: 'in one Region, one in another zone (a zone implies its Region)', holder: 'a', candidates: [cand('a', '1.0.0', '1.0.0', { location: { zone: 'us-east-1a' } }), cand('b', '1.0.0', '1.0.0', { location: { zone: 'us-east-1a' } }), cand('c', '1.0.0', '1.0.0', { location: { zone: 'us-east-1b' } })], want: 'c' },
    { name: 'never a worse one for its place: the better on merit in the holder’s Region stays successor', holder: 'a', candidates: [cand('a', '1.0.0', '1.0.0', { location: { region: 'us-east-1' } }), cand('b', '1.0.0', '1.0.0', { location: { region: 'us-east-1' } }), cand('c', '1.0.0', '1.1.0', { location: { region: 'us-west-2' } })], want: 'b' },
    { name: 'an unknown place is no other domain: the best stays successor', holder: 'a', candidates: [cand('a', '1.0.0', '1.0.0', { location: { region: 'us-east-1' } }), cand('b', '1.0.0', '1.0.0', { location: { region: 'us-east-1' } }), cand('c', '1.0.0', '1.0.0')], want: 'b' },
  ])('$name', ({ holder, candidates, want }) => {
    expect(successorOf(holder, candidates, NOW, config)?.name).toBe(want);
  });

  it('carries the candidate’s process, so a restarted worker of that name is not the one designated', () => {
    expect(successorOf('a', [cand('a', '1.0.0', '1.0.0'), cand('b', '1.1.0', '1.1.0', { identity: 'b_1' })], NOW, config)).toEqual({ name: 'b', instance: 'b_1' });
  });
});

describe('decideWithSuccession: the reconcile’s decision', () => {
  const b1 = cand('b', '1.1.0', '1.1.0', { identity: 'b_1' });
  const a = cand('a', '1.0.0', '1.0.0');
  it.each<{ name: string; lease?: Lease; candidates: Candidate[]; now?: number; config?: Partial<ElectionConfig>; want: Partial<Decision> & { kind: Decision['kind'] } }>([
    { name: 'a healthy holder without a successor: designate one', lease: lease('a'), candidates: [a, b1], want: { kind: 'setSuccessor', strategy: OEV, successor: { name: 'b', instance: 'b_1' } } },
    { name: 'the successor designated already: nothing to do', lease: lease('a', { successor: 'b', successorInstance: 'b_1' }), candidates: [a, b1], want: { kind: 'leaveAlone', reason: 'leaderHealthy' } },
    { name: 'the successor restarted (a new process): designate the new one', lease: lease('a', { successor: 'b', successorInstance: 'b_0' }), candidates: [a, b1], want: { kind: 'setSuccessor', successor: { name: 'b', instance: 'b_1' } } },
    { name: 'a better successor joined: it replaces the old one', lease: lease('a', { successor: 'b', successorInstance: 'b_1' }), candidates: [a, b1, cand('c', '1.0.5', '1.0.5')], want: { kind: 'setSuccessor', successor: { name: 'c' } } },
    { name: 'the successor left and nobody else can win: clear it', lease: lease('a', { successor: 'b', successorInstance: 'b_1' }), candidates: [a], want: { kind: 'setSuccessor', strategy: OEV } },
    { name: 'a preemption pending: the preferred candidate is the successor', lease: lease('b', { preferredHolder: 'a' }), candidates: [a, cand('b', '2.0.0', '2.0.0')], want: { kind: 'setSuccessor', successor: { name: 'a' } } },
    {
      // found by a review (2026-12-05): c, b's equal in another zone than the holder's, was named
      // successor by the reconcile after the preemption; the holder, finding no heir, released
      name: 'a preemption pending: the preferred candidate stays the successor though an equal of it runs in another zone than the holder; that one is second',
      lease: lease('h', { preferredHolder: 'b', successor: 'b', successorInstance: 'b_1' }),
      candidates: [
        cand('h', '1.31.0', '1.31.0', { identity: 'h_1', location: { zone: 'us-east-1a' } }),
        cand('b', '1.30.0', '1.30.0', { identity: 'b_1', location: { zone: 'us-east-1a' }, createdAt: NOW - 2 * 3_600 * SEC }),
        cand('c', '1.30.0', '1.30.0', { identity: 'c_1', location: { zone: 'us-east-1b' } }),
      ],
      want: { kind: 'setSuccessor', successor: { name: 'b', instance: 'b_1' }, secondSuccessor: { name: 'c', instance: 'c_1' } },
    },
    {
      // (a review of that change: with succession off, it named a successor all the same)
      name: '… with succession off: nobody named',
      lease: lease('h', { preferredHolder: 'b' }),
      candidates: [cand('h', '1.31.0', '1.31.0'), cand('b', '1.30.0', '1.30.0', { identity: 'b_1' })],
      config: { succession: false },
      want: { kind: 'leaveAlone', reason: 'preemptionPending' },
    },
    { name: 'a preemption names the preferred candidate successor in the same write (not the old successor)', lease: lease('b', { successor: 'c' }), candidates: [cand('a', '1.0.0', '1.0.0', { identity: 'a_1' }), cand('b', '2.0.0', '2.0.0'), cand('c', '3.0.0', '3.0.0')], want: { kind: 'preempt', preferredHolder: 'a', successor: { name: 'a', instance: 'a_1' } } },
    { name: 'a vacant lease: the election, not succession (the successor stays on the lease)', lease: lease('x', { renewTime: NOW - MIN, successor: 'b' }), candidates: [cand('b', '1.1.0', '1.1.0', { renewTime: NOW - MIN })], want: { kind: 'openElection', vacancy: 'expired' } },
    { name: 'NoCoordination: no successor', lease: lease('a', { strategy: 'NoCoordination' }), candidates: [a, b1], want: { kind: 'leaveAlone', reason: 'noCoordination' } },
    // found by a review (2026-12-06): the successors named under OldestEmulationVersion stayed on the
    // lease, and took it at the term's end ahead of the third party's choice (twice in a row)
    { name: 'a third-party strategy set where successors were named: they are cleared', lease: lease('a', { strategy: 'example.com/x', successor: 'b', successorInstance: 'b_1', secondSuccessor: 'c' }), candidates: [a, b1], want: { kind: 'setSuccessor', strategy: 'example.com/x' } },
    { name: 'NoCoordination set where a successor was named: cleared', lease: lease('a', { strategy: 'NoCoordination', successor: 'b' }), candidates: [a, b1], want: { kind: 'setSuccessor', strategy: 'NoCoordination' } },
    // found by a review (2026-12-07): a crashed row (the newest binary, preferring a third party) that
    // let its last ping pass still chose the strategy, and the successors were cleared for it
    { name: 'a dead row preferring a third party, its last ping let pass: no say in the strategy, the successors stay', lease: lease('h', { successor: 's', successorInstance: 's_1', secondSuccessor: 'new-1' }), candidates: [cand('h', '1.31.0', '1.31.0'), cand('s', '1.31.0', '1.31.0', { identity: 's_1' }), cand('new-1', '1.31.0', '1.32.0', { preferredStrategies: ['foo.com/bar'], renewTime: NOW - 10 * MIN, pingTime: NOW - 30 * SEC })], want: { kind: 'leaveAlone', reason: 'leaderHealthy', strategy: OEV } },
    { name: '… its ping askAgainAfterMs old: a liveness check asks it again, s named meanwhile', lease: lease('h', { successor: 's', successorInstance: 's_1', secondSuccessor: 'new-1' }), candidates: [cand('h', '1.31.0', '1.31.0'), cand('s', '1.31.0', '1.31.0', { identity: 's_1' }), cand('new-1', '1.31.0', '1.32.0', { preferredStrategies: ['foo.com/bar'], renewTime: NOW - 10 * MIN, pingTime: NOW - 9 * MIN })], want: { kind: 'openElection', strategy: OEV, ping: ['new-1'], successor: { name: 's', instance: 's_1' } } },
    { name: 'an election names the new term’s successor', lease: lease(undefined), candidates: [a, b1], want: { kind: 'elect', winner: 'a', successor: { name: 'b', instance: 'b_1' } } },
    { name: 'an election with a single candidate: no successor', lease: lease(undefined), candidates: [a], want: { kind: 'elect', winner: 'a' } },
    // A departed holder: `a`, the oldest and best, held the lease until its term ran out and `b` took it as successor.
    {
      name: 'after a failover, the holder whose term ran out is passed over while its row shows no life: the next successor is named at once, no re-election',
      lease: lease('b', { lastHolderIdentity: 'a', acquireTime: NOW - 2 * SEC }),
      candidates: [cand('a', '1.0.0', '1.0.0', { renewTime: NOW - 2 * MIN }), cand('b', '1.0.0', '1.0.0'), cand('c', '1.0.0', '1.0.0', { identity: 'c_1', createdAt: NOW })],
      want: { kind: 'setSuccessor', successor: { name: 'c', instance: 'c_1' } },
    },
    {
      name: '… but once its row shows life (renewed since the takeover), it ranks as before: a re-election to preempt for it (it is the better on merit: an older binary)',
      lease: lease('b', { lastHolderIdentity: 'a', acquireTime: NOW - 2 * MIN }),
      candidates: [cand('a', '1.0.0', '0.9.0', { renewTime: NOW - MIN }), cand('b', '1.0.0', '1.0.0'), cand('c', '1.0.0', '1.0.0', { createdAt: NOW })],
      want: { kind: 'openElection' },
    },
    {
      name: '… or answered a ping since',
      lease: lease('b', { lastHolderIdentity: 'a', acquireTime: NOW - 2 * MIN }),
      candidates: [cand('a', '1.0.0', '0.9.0', { renewTime: NOW - 3 * MIN, pingTime: NOW - MIN, ackedPingTime: NOW - MIN }), cand('b', '1.0.0', '1.0.0'), cand('c', '1.0.0', '1.0.0', { createdAt: NOW })],
      want: { kind: 'openElection' },
    },
    {
      name: 'an election after a term ran out, finished early (only the departed holder still pending): the new term’s successor is not that holder',
      lease: lease(undefined, { lastHolderIdentity: 'a', election: { id: 'e', startedAt: NOW - SEC, deadline: NOW + 4 * SEC, strategy: OEV, departed: 'a' } }),
      candidates: [
        cand('a', '1.0.0', '1.0.0', { renewTime: NOW - 2 * MIN, pingTime: NOW - SEC }),
        cand('b', '1.1.0', '1.1.0', { renewTime: NOW - 2 * MIN, pingTime: NOW - SEC, ackedPingTime: NOW - SEC }),
        cand('c', '1.2.0', '1.2.0', { renewTime: NOW - 2 * MIN, pingTime: NOW - SEC, ackedPingTime: NOW - SEC, identity: 'c_1' }),
      ],
      want: { kind: 'elect', winner: 'b', successor: { name: 'c', instance: 'c_1' } },
    },
  ])('$name', ({ lease: l, candidates, now, config: c, want }) => {
    const d = run(l, candidates, now, c ? { ...config, ...c } : config);
    expect(d).toMatchObject(want);
    if (want.kind === 'setSuccessor' && !('successor' in want)) expect(d).not.toHaveProperty('successor');
    if (want.kind === 'setSuccessor' && !('successor' in want) && !('secondSuccessor' in want)) expect(d).not.toHaveProperty('secondSuccessor');
    if (want.kind === 'elect' && !('successor' in want)) expect(d).not.toHaveProperty('successor');
  });

  it('plan: the successors are set (or removed) and nothing else', () => {
    expect(plan(run(lease('a'), [a, b1]), lease('a'), NOW, config)).toEqual({ ping: [], lease: { set: { successor: 'b', successorInstance: 'b_1' }, remove: ['secondSuccessor', 'secondSuccessorInstance'] } });
    expect(plan(run(lease('a'), [a, cand('b', '1.1.0', '1.1.0')]), lease('a'), NOW, config)).toEqual({ ping: [], lease: { set: { successor: 'b', successorInstance: undefined }, remove: ['successorInstance', 'secondSuccessor', 'secondSuccessorInstance'] } });
    const c1 = cand('c', '1.2.0', '1.2.0', { identity: 'c_1' });
    expect(plan(run(lease('a'), [a, b1, c1]), lease('a'), NOW, config)).toEqual({ ping: [], lease: { set: { successor: 'b', successorInstance: 'b_1', secondSuccessor: 'c', secondSuccessorInstance: 'c_1' } } });
    const held = lease('a', { successor: 'b' });
    expect(plan(run(held, [a]), held, NOW, config)).toEqual({ ping: [], lease: { remove: ['successor', 'successorInstance', 'secondSuccessor', 'secondSuccessorInstance'] } });
  });

  it('plan: a preemption writes preferredHolder and successor together', () => {
    const held = lease('b', { successor: 'c' });
    const cs = [cand('a', '1.0.0', '1.0.0', { identity: 'a_1' }), cand('b', '2.0.0', '2.0.0'), cand('c', '3.0.0', '3.0.0')];
    expect(plan(run(held, cs), held, NOW, config)).toEqual({ ping: [], lease: { set: { preferredHolder: 'a', successor: 'a', successorInstance: 'a_1' }, remove: ['election'] } });
  });

  it('plan: an election writes the winner and its successor in one write', () => {
    const vacant = lease(undefined, { successor: 'gone' });
    const p = plan(run(vacant, [a, b1], NOW + SEC), vacant, NOW + SEC, config).lease!;
    expect(p.set).toMatchObject({ holderIdentity: 'a', successor: 'b', successorInstance: 'b_1' });
    expect(p.remove).not.toContain('successor');
    const alone = plan(run(vacant, [a], NOW + SEC), vacant, NOW + SEC, config).lease!;
    expect(alone.remove).toEqual(expect.arrayContaining(['successor', 'successorInstance']));
  });
});

describe('a live successor (issue 38): named only when known to be alive, the others asked first', () => {
  // `b` took the lease 2 s ago (a failover). `a` is the oldest row and so ranks first, but it last
  // showed life 5 minutes ago: a process killed in an earlier crash leaves such a row, live for 30
  // minutes. `c` is as old and as quiet; `d` joined a second ago.
  const term = lease('b', { acquireTime: NOW - 2 * SEC, leaseDurationSeconds: 15 });
  const dead = cand('a', '1.0.0', '1.0.0', { renewTime: NOW - 5 * MIN, createdAt: NOW - 90 * MIN, identity: 'a_1' });
  const quiet = cand('c', '1.0.0', '1.0.0', { renewTime: NOW - 5 * MIN, createdAt: NOW - 80 * MIN, identity: 'c_1' });
  const holder = cand('b', '1.0.0', '1.0.0', { createdAt: NOW - 85 * MIN });
  const joined = cand('d', '1.0.0', '1.0.0', { renewTime: NOW - SEC, createdAt: NOW - SEC, identity: 'd_1' });

  it('after a failover, rows that showed no life since a lease duration before the term are asked (a re-election: the holder leads on); the best known alive is named meanwhile', () => {
    const d = run(term, [dead, holder, quiet, joined]);
    expect(d).toMatchObject({ kind: 'openElection', ping: ['a', 'c'], election: { holder: 'b', startedAt: NOW, deadline: NOW + 15 * SEC }, successor: { name: 'd', instance: 'd_1' }, secondSuccessor: { name: 'a', instance: 'a_1' } });
    expect(d).not.toHaveProperty('vacancy');
    expect(plan(d, term, NOW, config)).toEqual({ ping: ['a', 'c'], pingTime: NOW, lease: { set: { election: (d as Extract<Decision, { kind: 'openElection' }>).election, successor: 'd', successorInstance: 'd_1', secondSuccessor: 'a', secondSuccessorInstance: 'a_1' }, remove: [] } });
  });

  it('the check closes at its deadline: the one that answered is known alive and named, the one that let it pass is passed over', () => {
    const e = { id: 'e', startedAt: NOW - 6 * SEC, deadline: NOW - SEC, strategy: OEV, holder: 'b' };
    const checking = { ...term, acquireTime: NOW - 8 * SEC, election: e, successor: 'd', successorInstance: 'd_1', secondSuccessor: 'a', secondSuccessorInstance: 'a_1' };
    const cs = [{ ...dead, pingTime: e.startedAt }, holder, { ...quiet, renewTime: NOW - 5 * SEC, pingTime: e.startedAt, ackedPingTime: e.startedAt }, joined];
    const d = run(checking, cs);
    expect(d).toMatchObject({ kind: 'cancelElection', why: 'holderIsBest', successor: { name: 'c', instance: 'c_1' }, secondSuccessor: { name: 'd', instance: 'd_1' } });
    expect(plan(d, checking, NOW, config)).toEqual({ ping: [], lease: { set: { successor: 'c', successorInstance: 'c_1', secondSuccessor: 'd', secondSuccessorInstance: 'd_1' }, remove: ['election'] } });
    // and nothing more to do afterwards: no check at every reconcile; the one that let its ping pass
    // is asked again once that ping is askAgainAfterMs old (a dead one: a ping that often)
    const after = { ...checking, election: undefined, renewTime: NOW + MIN, successor: 'c', successorInstance: 'c_1', secondSuccessor: 'd', secondSuccessorInstance: 'd_1' };
    const askAgain = e.startedAt + config.askAgainAfterMs;
    expect(run(after, cs, askAgain - 1)).toMatchObject({ kind: 'leaveAlone', reason: 'leaderHealthy' });
    expect(run(after, cs, askAgain)).toMatchObject({ kind: 'openElection', ping: ['a'] });
  });

  it('the check closes with one answer: the one that let it pass is named second all the same (else nobody watches the term should the successor die too)', () => {
    const e = { id: 'e', startedAt: NOW - 6 * SEC, deadline: NOW - SEC, strategy: OEV, holder: 'b' };
    const checking = { ...term, acquireTime: NOW - 8 * SEC, election: e, successor: 'c', successorInstance: 'c_1', secondSuccessor: 'a', secondSuccessorInstance: 'a_1' };
    const cs = [{ ...dead, pingTime: e.startedAt }, holder, { ...quiet, renewTime: NOW - 5 * SEC, pingTime: e.startedAt, ackedPingTime: e.startedAt }];
    expect(run(checking, cs)).toMatchObject({ kind: 'cancelElection', why: 'holderIsBest', successor: { name: 'c', instance: 'c_1' }, secondSuccessor: { name: 'a', instance: 'a_1' } });
    // the one that answered stays first: one that let its ping pass never displaces it
    expect(successorsOf('b', cs, NOW, config, { since: knownAliveSince(checking, NOW, config) })).toEqual({ successor: { name: 'c', instance: 'c_1' }, second: { name: 'a', instance: 'a_1' }, check: [] });
  });

  it('in a long term, a candidate that renewed its row in it counts as known (at rest nobody is asked)', () => {
    const old = lease('b', { acquireTime: NOW - 3 * 60 * MIN, leaseDurationSeconds: 15, successor: 'a', successorInstance: 'a_1', secondSuccessor: 'c', secondSuccessorInstance: 'c_1' });
    expect(run(old, [dead, holder, quiet], NOW)).toMatchObject({ kind: 'leaveAlone', reason: 'leaderHealthy' });
  });

  it('a row quiet since before the term: asked even when it is named already (a designation carries over no proof)', () => {
    const named = { ...term, successor: 'a', successorInstance: 'a_1', secondSuccessor: 'c', secondSuccessorInstance: 'c_1' };
    expect(run(named, [dead, holder, quiet])).toMatchObject({ kind: 'openElection', ping: ['a', 'c'] });
  });

  it('every other candidate ignored its last ping: the best of them is named all the same, and nobody is asked again meanwhile', () => {
    const ignored = (c: Candidate) => ({ ...c, pingTime: NOW - config.askAgainAfterMs + SEC });
    expect(run(term, [ignored(dead), holder, ignored(quiet)])).toMatchObject({ kind: 'setSuccessor', successor: { name: 'a' }, secondSuccessor: { name: 'c' } });
  });

  it('a candidate that let its ping pass is asked again once that ping is askAgainAfterMs old (a live one whose read came late is named then; before, it waited for its own renewal, 10 minutes)', () => {
    // `a`, the best, missed the check's ping; `d` answered and was named. askAgainAfterMs later the
    // holder still leads: the next reconcile asks `a` again, and names it once it answers.
    const named = { ...term, acquireTime: NOW - 3 * MIN, successor: 'd', successorInstance: 'd_1', secondSuccessor: 'a', secondSuccessorInstance: 'a_1' };
    const missed = { ...dead, renewTime: NOW - 5 * MIN, pingTime: NOW - config.askAgainAfterMs + SEC };
    const answeredD = { ...joined, renewTime: NOW - 2 * MIN, pingTime: NOW - config.askAgainAfterMs + SEC, ackedPingTime: NOW - config.askAgainAfterMs + SEC };
    expect(run(named, [missed, holder, answeredD])).toMatchObject({ kind: 'leaveAlone', reason: 'leaderHealthy' });
    const later = NOW + SEC;
    expect(run(named, [missed, holder, answeredD], later)).toMatchObject({ kind: 'openElection', ping: ['a'], election: { holder: 'b' } });
    // it answers: named successor at the check's close
    const e = { id: 'e2', startedAt: later, deadline: later + config.ackWindowMs, strategy: OEV, holder: 'b' };
    const answered = { ...missed, renewTime: later + SEC, pingTime: later, ackedPingTime: later };
    expect(run({ ...named, election: e }, [answered, holder, answeredD], later + SEC)).toMatchObject({ kind: 'cancelElection', why: 'holderIsBest', successor: { name: 'a', instance: 'a_1' } });
  });

  it('a preemption pending is not held up by a check', () => {
    const yielding = { ...term, preferredHolder: 'a' };
    expect(run(yielding, [dead, holder, quiet]).kind).not.toBe('openElection');
  });

  it('succession off: no check, no successor', () => {
    const off = electionConfig({ succession: false });
    expect(decideWithSuccession('component-A', term, [dead, holder, quiet, joined], NOW, off)).toMatchObject({ kind: 'leaveAlone', reason: 'leaderHealthy' });
  });

  it('an election names the new term’s two successors from those that answered it', () => {
    const e = { id: 'e', startedAt: NOW - SEC, deadline: NOW + 4 * SEC, strategy: OEV };
    const vacant = lease(undefined, { election: e });
    const answered = (c: Candidate) => ({ ...c, pingTime: e.startedAt, ackedPingTime: e.startedAt });
    const d = run(vacant, [answered(holder), answered(quiet), answered(joined)]);
    expect(d).toMatchObject({ kind: 'elect', winner: 'b', successor: { name: 'c' }, secondSuccessor: { name: 'd' } });
  });

  it('successorsOf: the two named and whom to ask', () => {
    expect(successorsOf('b', [dead, holder, quiet, joined], NOW, config, { since: knownAliveSince(term, NOW, config) })).toEqual({ successor: { name: 'd', instance: 'd_1' }, second: { name: 'a', instance: 'a_1' }, check: ['a', 'c'] });
    // all of them known alive: the best two, nobody asked
    expect(successorsOf('b', [dead, holder, quiet, joined], NOW, config, { since: NOW - 10 * MIN })).toEqual({ successor: { name: 'a', instance: 'a_1' }, second: { name: 'c', instance: 'c_1' }, check: [] });
  });

  it('successorsOf: a candidate that cannot win (versions that do not parse) is never asked: its answer names nobody', () => {
    const dev = { ...quiet, name: 'dev', identity: 'dev_1', binaryVersion: 'dev' };
    expect(successorsOf('b', [dead, holder, quiet, joined, dev], NOW, config, { since: knownAliveSince(term, NOW, config) }).check).toEqual(['a', 'c']);
  });
});

describe('a Region lost with the holder leaves a watcher up (issue 38, item 2)', () => {
  // `a` holds in us-east-1, `b` runs there too; `c` and `d` run in us-east-2
  const at = (region: string) => ({ location: { region } });
  const holder = cand('a', '1.0.0', '0.8.0', at('us-east-1')); // the best of all: not preempted
  const near = cand('b', '1.0.0', '0.9.0', at('us-east-1')); // the best on merit: an older binary
  const farIgnored = (name: string, binary = '1.0.0') => cand(name, '1.0.0', binary, { ...at('us-east-2'), renewTime: NOW - 5 * MIN, pingTime: NOW - 30 * SEC });
  it.each([
    {
      name: 'the best on merit runs in the holder’s Region and the others ignored a ping (their Region was cut off when asked): the best of them is named second',
      candidates: [holder, near, farIgnored('c', '1.1.0'), farIgnored('d')],
      want: { successor: { name: 'b' }, second: { name: 'd' }, check: [] },
    },
    {
      name: 'two better ones in the holder’s Region: the second gives way to one apart',
      candidates: [holder, near, cand('e', '1.0.0', '0.9.5', at('us-east-1')), cand('c', '1.0.0', '1.0.0', at('us-east-2'))],
      want: { successor: { name: 'b' }, second: { name: 'c' }, check: [] },
    },
    {
      name: 'apart, one known to be alive before a better one that ignored its ping',
      candidates: [holder, near, cand('e', '1.0.0', '0.9.5', at('us-east-1')), farIgnored('c', '0.9.0'), cand('d', '1.0.0', '1.1.0', at('us-east-2'))],
      want: { successor: { name: 'b' }, second: { name: 'd' }, check: [] },
    },
    {
      name: 'one of the two apart already: unchanged',
      candidates: [holder, near, cand('c', '1.0.0', '0.9.2', at('us-east-2')), cand('e', '1.0.0', '0.9.5', at('us-east-1'))],
      want: { successor: { name: 'b' }, second: { name: 'c' }, check: [] },
    },
    {
      name: 'both apart from the holder but in one Region, and a candidate in a third: the second gives way to it (that Region cut off as the holder’s is lost would leave nobody)',
      candidates: [holder, cand('c', '1.0.0', '0.9.0', at('us-east-2')), cand('d', '1.0.0', '0.9.5', at('us-east-2')), cand('f', '1.0.0', '1.0.0', at('us-west-2'))],
      want: { successor: { name: 'c' }, second: { name: 'f' }, check: [] },
    },
    {
      name: 'the successor in the holder’s Region: a second apart from both, before one merely apart from the holder',
      candidates: [holder, near, cand('c', '1.0.0', '0.9.2', at('us-east-2')), cand('f', '1.0.0', '1.0.0', at('us-west-2'))],
      want: { successor: { name: 'b' }, second: { name: 'c' }, check: [] },
    },
    {
      name: 'nobody apart: the best two as before',
      candidates: [holder, near, cand('e', '1.0.0', '0.9.5', at('us-east-1'))],
      want: { successor: { name: 'b' }, second: { name: 'e' }, check: [] },
    },
  ])('$name', ({ candidates, want }) => {
    expect(successorsOf('a', candidates, NOW, config, { since: NOW - 10 * MIN })).toEqual(want);
  });

  it('the reconcile names it in its write', () => {
    const term = lease('a', { successor: 'b' });
    expect(run(term, [holder, near, farIgnored('c', '1.1.0'), farIgnored('d')])).toMatchObject({ kind: 'setSuccessor', successor: { name: 'b' }, secondSuccessor: { name: 'd' } });
  });
});

describe('pingsToWithdraw: an election closed before its deadline takes back its unanswered pings', () => {
  const e = { id: 'e', startedAt: NOW - SEC, deadline: NOW + 4 * SEC, strategy: OEV };
  const pinged = cand('b', '1.1.0', '1.1.0', { renewTime: NOW - 2 * MIN, pingTime: NOW - SEC });
  const answered = cand('c', '1.2.0', '1.2.0', { renewTime: NOW - 2 * MIN, pingTime: NOW - SEC, ackedPingTime: NOW - SEC });
  const older = cand('d', '1.3.0', '1.3.0', { renewTime: NOW - 2 * MIN, pingTime: NOW - MIN });
  it.each<{ name: string; d: Decision; lease: Lease; now?: number; want: string[] }>([
    { name: 'cancelled early (the holder changed): the unanswered ping of this election', d: { kind: 'cancelElection', strategy: OEV, election: e, why: 'holderChanged' }, lease: lease('b', { election: e }), want: ['b'] },
    { name: 'elected early: likewise', d: { kind: 'elect', strategy: OEV, winner: 'c', acked: ['c'], election: e, skewPrevented: false }, lease: lease(undefined, { election: e }), want: ['b'] },
    // found by a review (2026-12-05): the pinged candidate that had not read the election yet was
    // passed over as the new holder's successor, and for a vacancy's election, for askAgainAfterMs
    { name: 'a re-election closed early by a preemption (a better candidate answered): likewise', d: { kind: 'preempt', strategy: OEV, holder: 'a', preferredHolder: 'c', election: e }, lease: lease('a', { election: e }), want: ['b'] },
    { name: 'closed at or after its deadline: a ping left unanswered was ignored', d: { kind: 'cancelElection', strategy: OEV, election: e, why: 'holderIsBest' }, lease: lease('b', { election: e }), now: NOW + 4 * SEC, want: [] },
    { name: 'a decision that closes nothing', d: { kind: 'leaveAlone', reason: 'leaderHealthy' }, lease: lease('b', { election: e }), want: [] },
  ])('$name', ({ d, lease: l, now, want }) => {
    expect(pingsToWithdraw(d, l, [pinged, answered, older], now ?? NOW).map((p) => p.name)).toEqual(want);
  });
});

import { describe, expect, it } from 'vitest';
import { effectivePriority, isBetterThanHolder, orderCandidates, pickBest, rank, skewPrevented } from '../../lib/election/ordering.js';
import { parseVersionTolerant } from '../../lib/schemas/version.js';
import { MIN, NOW, cand } from '../fixtures.js';

// Rows carried over from kubernetes/kubernetes pkg/controlplane/controller/leaderelection/election_test.go,
// then rows for what KEP-4355 adds (priority) and for where Conclave decides where Kubernetes does not.

describe('pickBest (TestPickBestLeaderOldestEmulationVersion)', () => {
  it.each([
    { name: 'empty', candidates: [], want: undefined },
    { name: 'single candidate', candidates: [cand('candidate1', '0.1.0', '0.1.0', { createdAt: NOW })], want: 'candidate1' },
    {
      name: 'multiple candidates, different emulation versions',
      candidates: [cand('candidate1', '0.1.0', '0.1.0', { createdAt: NOW - 60 * MIN }), cand('candidate2', '0.2.0', '0.2.0', { createdAt: NOW })],
      want: 'candidate1',
    },
    {
      name: 'multiple candidates, same emulation versions, different binary versions',
      candidates: [cand('candidate1', '0.1.0', '0.1.0', { createdAt: NOW - 60 * MIN }), cand('candidate2', '0.1.0', '0.2.0', { createdAt: NOW })],
      want: 'candidate1',
    },
    {
      name: 'multiple candidates, same emulation versions, same binary versions, different creation timestamps',
      candidates: [cand('candidate1', '0.1.0', '0.1.0', { createdAt: NOW - 60 * MIN }), cand('candidate2', '0.1.0', '0.1.0', { createdAt: NOW })],
      want: 'candidate1',
    },
    // Conclave: equal in everything but the name → the name decides, whatever order the rows came in.
    { name: 'full tie broken by name (Kubernetes keeps list order)', candidates: [cand('b', '1.0.0', '1.0.0'), cand('a', '1.0.0', '1.0.0')], want: 'a' },
    { name: 'numeric, not lexical, version order', candidates: [cand('c19', '1.19.0', '1.20.0'), cand('c2', '1.2.0', '1.20.0')], want: 'c2' },
    { name: 'pre-release sorts before its release', candidates: [cand('rel', '1.30.0', '1.30.0'), cand('rc', '1.30.0-rc.1', '1.30.0')], want: 'rc' },
  ])('$name', ({ candidates, want }) => {
    expect(pickBest(candidates, NOW)?.candidate.name).toBe(want);
    expect(pickBest([...candidates].reverse(), NOW)?.candidate.name).toBe(want);
  });
});

describe('validity (TestValidLeaseCandidateForOldestEmulationVersion, TestGetEmulationVersion, TestGetBinaryVersion)', () => {
  it.each([
    { name: 'valid emulation and binary versions', emu: '0.1.0', bin: '0.1.0', valid: true },
    { name: 'invalid emulation version', emu: 'invalid', bin: '0.1.0', valid: false },
    { name: 'invalid binary version', emu: '0.1.0', bin: 'invalid', valid: false },
    { name: 'empty emulation version', emu: '', bin: '0.1.0', valid: false },
    // Tolerant in the picker, as Kubernetes' semver.ParseTolerant: one leading v, short forms, leading zeros (rows below).
    { name: 'leading v', emu: 'v1.30.0', bin: 'v1.30.1', valid: true },
    { name: 'short form', emu: '1.30', bin: '1.31', valid: true },
    { name: 'two leading v', emu: 'vv1.30.0', bin: '1.30.0', valid: false },
    { name: 'garbage around a version', emu: 'abc1.2.3', bin: '1.30.0', valid: false },
  ])('$name', ({ emu, bin, valid }) => {
    expect(rank(cand('c', emu, bin), NOW) !== undefined).toBe(valid);
  });

  it('reads versions (TestGetEmulationVersion / TestGetBinaryVersion)', () => {
    expect(parseVersionTolerant('0.1.0')?.version).toBe('0.1.0');
    expect(parseVersionTolerant('0.3.0')?.version).toBe('0.3.0');
    expect(parseVersionTolerant('1.30')?.version).toBe('1.30.0');
    expect(parseVersionTolerant('v1.30.2')?.version).toBe('1.30.2');
  });
});

describe('parseVersionTolerant (blang/semver ParseTolerant, what election.go reads versions with)', () => {
  // Kubernetes' picker (pkg/controlplane/controller/leaderelection/election.go) reads versions with
  // semver.ParseTolerant: trim spaces, drop one leading "v", strip leading zeros from each of
  // MAJOR, MINOR and PATCH, fill a short form up with ".0"; a short form with a pre-release or build
  // suffix is invalid. What it then hands to the strict parser must be semver. `want` is the
  // version read (node-semver's `version`: the build suffix is not part of it) or undefined.
  it.each([
    { name: 'full version', v: '1.30.2', want: '1.30.2' },
    { name: 'one leading v', v: 'v1.30.2', want: '1.30.2' },
    { name: 'spaces around', v: ' 1.30.2\t', want: '1.30.2' },
    { name: 'MAJOR.MINOR reads as MAJOR.MINOR.0', v: '1.30', want: '1.30.0' },
    { name: 'MAJOR alone reads as MAJOR.0.0', v: '2', want: '2.0.0' },
    { name: 'v and MAJOR alone', v: 'v2', want: '2.0.0' },
    { name: 'leading zeros stripped in every component', v: '01.02.03', want: '1.2.3' },
    { name: 'leading zeros stripped in a short form', v: '1.030', want: '1.30.0' },
    { name: 'leading zeros of MAJOR alone', v: '007', want: '7.0.0' },
    { name: 'all zeros', v: '00.00.00', want: '0.0.0' },
    { name: 'leading zeros before a pre-release', v: '1.2.03-rc.1', want: '1.2.3-rc.1' },
    { name: 'a zero PATCH written twice before a pre-release', v: '1.2.00-rc.1', want: '1.2.0-rc.1' },
    { name: 'pre-release and build', v: '1.2.3-rc.1+build.5', want: '1.2.3-rc.1' },
    { name: 'full form with a pre-release', v: '2.7.0-beta.1', want: '2.7.0-beta.1' },
    { name: 'short form with a pre-release', v: '2.7-beta.1', want: undefined },
    { name: 'short form with a pre-release, no dot in it', v: '2.7-beta', want: undefined },
    { name: 'MAJOR alone with a pre-release', v: '2-beta', want: undefined },
    { name: 'short form with build metadata', v: '2.7+build', want: undefined },
    { name: 'numeric pre-release identifier with a leading zero (only the core is tolerated)', v: '1.2.3-rc.01', want: undefined },
    { name: 'empty pre-release', v: '1.2.3-', want: undefined },
    { name: 'four components', v: '1.2.3.4', want: undefined },
    { name: 'empty component', v: '1..2', want: undefined },
    { name: 'two leading v', v: 'vv1.30.0', want: undefined },
    { name: 'capital V', v: 'V1.30.0', want: undefined },
    { name: 'equals sign (node-semver would take it)', v: '=1.30.0', want: undefined },
    { name: 'space inside', v: 'v 1.30.0', want: undefined },
    { name: 'wildcard', v: '1.2.x', want: undefined },
    { name: 'negative', v: '-1.2.3', want: undefined },
    { name: 'empty', v: '', want: undefined },
    { name: 'only a v', v: 'v', want: undefined },
    { name: 'unset', v: undefined, want: undefined },
  ])('$name: $v', ({ v, want }) => {
    expect(parseVersionTolerant(v)?.version).toBe(want);
  });
});

describe('compare (TestCompare): which of two is the better leader', () => {
  // Kubernetes' compare() reads an empty or invalid version as 0.0.0 (so it "wins" inside
  // compare) and filters such candidates out before picking; Conclave never ranks them at all.
  it.each([
    { name: 'identical versions earlier timestamp', lhs: cand('lhs', '1.20.0', '1.21.0', { createdAt: NOW + 1 }), rhs: cand('rhs', '1.20.0', '1.21.0', { createdAt: NOW }), want: 'rhs' },
    { name: 'no lhs version', lhs: cand('lhs', '', ''), rhs: cand('rhs', '1.20.0', '1.21.0'), want: 'rhs' },
    { name: 'no rhs version', lhs: cand('lhs', '1.20.0', '1.21.0'), rhs: cand('rhs', '', ''), want: 'lhs' },
    { name: 'invalid lhs version', lhs: cand('lhs', 'xyz', 'xyz'), rhs: cand('rhs', '1.20.0', '1.21.0'), want: 'rhs' },
    { name: 'invalid rhs version', lhs: cand('lhs', '1.20.0', '1.21.0'), rhs: cand('rhs', 'xyz', 'xyz'), want: 'lhs' },
    { name: 'lhs less than rhs', lhs: cand('lhs', '1.19.0', '1.20.0'), rhs: cand('rhs', '1.20.0', '1.20.0'), want: 'lhs' },
    { name: 'rhs less than lhs', lhs: cand('lhs', '1.20.0', '1.20.0'), rhs: cand('rhs', '1.19.0', '1.20.0'), want: 'rhs' },
    { name: 'lhs less than rhs, lexographical order check', lhs: cand('lhs', '1.2.0', '1.20.0'), rhs: cand('rhs', '1.19.0', '1.20.0'), want: 'lhs' },
    // Tolerant reading (parseVersionTolerant), as Kubernetes' picker reads versions.
    { name: 'a short form ranks as its .0', lhs: cand('lhs', '1.30', '1.30'), rhs: cand('rhs', '1.30.0', '1.30.0', { createdAt: NOW + 1 }), want: 'lhs' },
    { name: 'MAJOR alone ranks below MAJOR.1', lhs: cand('lhs', '2', '2'), rhs: cand('rhs', '2.1.0', '2.1.0'), want: 'lhs' },
    { name: 'leading zeros do not make a version lexically smaller', lhs: cand('lhs', '1.010.0', '1.010.0'), rhs: cand('rhs', '1.9.0', '1.9.0'), want: 'rhs' },
    { name: 'a short form with a pre-release never wins', lhs: cand('lhs', '2.7-beta.1', '2.7-beta.1'), rhs: cand('rhs', '3.0.0', '3.0.0'), want: 'rhs' },
  ])('$name', ({ lhs, rhs, want }) => {
    expect(pickBest([lhs, rhs], NOW)?.candidate.name).toBe(want);
    expect(pickBest([rhs, lhs], NOW)?.candidate.name).toBe(want);
  });
});

describe('should the holder be replaced (TestShouldReelect)', () => {
  const leader = cand('component-identity-1', '1.19.0', '1.19.0');
  it.each([
    { name: 'candidate with newer binary version', candidates: [leader, cand('component-identity-2', '1.19.0', '1.20.0')], want: false },
    { name: 'no newer candidates', candidates: [leader, cand('component-identity-2', '1.19.0', '1.19.0', { createdAt: leader.createdAt + 1 })], want: false },
    { name: 'no candidates', candidates: [], want: false },
    // Conclave rows
    { name: 'older emulation version joins', candidates: [leader, cand('component-identity-2', '1.18.0', '1.19.0')], want: true },
    { name: 'holder has no candidate row', candidates: [cand('component-identity-2', '1.19.0', '1.19.0')], holder: 'someone-else', want: true },
    { name: 'holder row has a malformed version', candidates: [cand('component-identity-1', 'bad', '1.19.0'), cand('component-identity-2', '1.30.0', '1.30.0')], want: true },
    // equals on merit: one that merely sorts first (earlier created, smaller name) does not preempt, as in TestShouldReelect
    { name: 'an equal created earlier, with a smaller name', candidates: [leader, cand('component-identity-0', '1.19.0', '1.19.0', { createdAt: leader.createdAt - 1 })], want: false },
    { name: 'an older binary version joins', candidates: [leader, cand('component-identity-2', '1.19.0', '1.18.0')], want: true },
  ])('$name', ({ candidates, holder, want }) => {
    const best = pickBest(candidates, NOW);
    expect(best ? isBetterThanHolder(best, holder ?? leader.name, candidates, NOW) : false).toBe(want);
  });
});

describe('priority (KEP-4355 priority-based election)', () => {
  it.each([
    { name: 'highest priority wins over an older version', candidates: [cand('C1', '2.0.0', '2.0.0', { priority: 100 }), cand('C2', '1.0.0', '2.0.0')], want: 'C1' },
    { name: 'unset priority is lowest', candidates: [cand('C2', '1.0.0', '2.0.0'), cand('C3', '1.0.0', '2.0.0', { priority: 1 })], want: 'C3' },
    { name: 'equal priorities fall back to the strategy', candidates: [cand('C1', '2.0.0', '2.0.0', { priority: 5 }), cand('C2', '1.0.0', '2.0.0', { priority: 5 })], want: 'C2' },
    { name: 'higher of two priorities', candidates: [cand('C1', '1.0.0', '1.0.0', { priority: 5 }), cand('C2', '2.0.0', '2.0.0', { priority: 50 })], want: 'C2' },
    { name: 'an expired priority no longer counts', candidates: [cand('C1', '2.0.0', '2.0.0', { priority: 100, priorityExpiresAt: NOW }), cand('C2', '1.0.0', '2.0.0')], want: 'C2' },
    { name: 'a priority before its expiry counts', candidates: [cand('C1', '2.0.0', '2.0.0', { priority: 100, priorityExpiresAt: NOW + 1 }), cand('C2', '1.0.0', '2.0.0')], want: 'C1' },
    { name: 'priority never makes a malformed version win', candidates: [cand('C1', 'x', '2.0.0', { priority: 100 }), cand('C2', '1.0.0', '2.0.0')], want: 'C2' },
  ])('$name', ({ candidates, want }) => {
    expect(pickBest(candidates, NOW)?.candidate.name).toBe(want);
  });

  it('effective priority is 0 when unset or expired', () => {
    expect(effectivePriority(cand('a', '1.0.0', '1.0.0'), NOW)).toBe(0);
    expect(effectivePriority(cand('a', '1.0.0', '1.0.0', { priority: 7, priorityExpiresAt: NOW - 1 }), NOW)).toBe(0);
    expect(effectivePriority(cand('a', '1.0.0', '1.0.0', { priority: 7 }), NOW)).toBe(7);
  });
});

describe('skew prevention (the KEP metric)', () => {
  it('counts an electee chosen over a newer binary', () => {
    const ranked = orderCandidates([cand('old', '1.29.0', '1.29.0'), cand('new', '1.29.0', '1.30.0')], NOW);
    expect(skewPrevented(ranked[0]!, ranked)).toBe(true);
    const same = orderCandidates([cand('a', '1.29.0', '1.29.0'), cand('b', '1.29.0', '1.29.0')], NOW);
    expect(skewPrevented(same[0]!, same)).toBe(false);
  });
});

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
    // Tolerant in the picker, as Kubernetes' semver.ParseTolerant: one leading v, MAJOR.MINOR.
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

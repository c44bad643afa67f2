import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { strategyConsensus } from '../../lib/election/strategy.js';
import { cand } from '../fixtures.js';

const OEV = 'OldestEmulationVersion';
const FOO = 'foo.com/bar';
const NOC = 'NoCoordination';
const c = (name: string, bin: string, prefs: string[]) => cand(name, bin, bin, { preferredStrategies: prefs });

describe('strategyConsensus', () => {
  // TestPickBestStrategy (kubernetes election_test.go, one strategy per candidate = a one-element list),
  // then the KEP's preferredStrategies rules, then Conclave's rows.
  it.each([
    { name: 'single candidate, single preferred strategy', cs: [c('candidate1', '', [OEV])], want: OEV },
    { name: 'multiple candidates, different preferred strategies should fail', cs: [c('candidate1', '', [OEV]), c('candidate2', '', [FOO])], want: 'error' },
    { name: 'multiple candidates, different preferred strategy different binary version should resolve', cs: [c('candidate1', '1.32.0', [OEV]), c('candidate2', '1.31.0', [FOO])], want: OEV },
    { name: 'multiple candidates, different preferred strategy different binary version should resolve, order agnostic', cs: [c('candidate2', '1.31.0', [FOO]), c('candidate1', '1.32.0', [OEV])], want: OEV },
    { name: 'multiple candidates, different preferred strategy different binary version string comparison check', cs: [c('candidate1', '1.1.10', [OEV]), c('candidate2', '1.1.2', [FOO])], want: OEV },
    { name: 'multiple candidates, same preferred strategy', cs: [c('candidate1', '1.31.0', [OEV]), c('candidate2', '1.31.0', [OEV])], want: OEV },
    { name: 'multiple candidates, conflicting preferred strategy', cs: [c('candidate1', '1.31.0', [OEV]), c('candidate2', '1.31.0', [FOO])], want: 'error' },
    // KEP-4355 API comments on preferredStrategies
    { name: 'KEP: all list X first → X', cs: [c('a', '1.0.0', [OEV, NOC]), c('b', '1.0.0', [OEV])], want: OEV },
    { name: 'KEP: [X] and [Y, X] → Y supersedes X', cs: [c('a', '1.0.0', [OEV]), c('b', '1.0.0', [NOC, OEV])], want: NOC },
    { name: 'KEP: [X, Y] and [Y, X] → user error', cs: [c('a', '1.0.0', [OEV, NOC]), c('b', '1.0.0', [NOC, OEV])], want: 'error' },
    // Conclave
    { name: 'a longer cycle is also a contradiction', cs: [c('a', '1.0.0', ['X', 'Y']), c('b', '1.0.0', ['Y', 'Z']), c('c', '1.0.0', ['Z', 'X'])], want: 'error' },
    { name: 'the order Kubernetes got wrong ([A 1.30 X, B 1.30 Y, C 1.31 X]) resolves', cs: [c('A', '1.30.0', [OEV]), c('B', '1.30.0', [FOO]), c('C', '1.31.0', [OEV])], want: OEV },
    { name: 'no candidates', cs: [], want: 'error' },
  ])('$name', ({ cs, want }) => {
    const r = strategyConsensus(cs);
    if (want === 'error') expect(r.ok).toBe(false);
    else expect(r).toEqual({ ok: true, strategy: want });
  });

  it('names the candidates and the fix in a contradiction', () => {
    const r = strategyConsensus([c('a', '1.0.0', [OEV, NOC]), c('b', '1.0.0', [NOC, OEV])]);
    expect(r).toMatchObject({ ok: false, reason: 'contradictoryStrategies' });
    if (!r.ok) expect(r.message).toMatch(/a, b.*make their preferredStrategies agree/);
  });

  it('a chain of thousands of strategies (each row naming 16) is judged, its cycle found: the recursive search overflowed the stack, failing every reconcile of the lease (a review, 2026-12-05)', () => {
    const S = (i: number) => `S${String(i).padStart(6, '0')}`;
    // candidate i prefers S(15i) … S(15i + 15): one chain of 30,001 strategies, S(0) first
    const chain = Array.from({ length: 2_000 }, (_, i) => c(`w${i}`, '1.0.0', Array.from({ length: 16 }, (_, j) => S(15 * i + j))));
    expect(strategyConsensus(chain)).toEqual({ ok: true, strategy: S(0) });
    // the chain closed: its last strategy supersedes its first
    const closed = [...chain, c('loop', '1.0.0', [S(30_000), S(0)])];
    expect(strategyConsensus(closed)).toMatchObject({ ok: false, reason: 'contradictoryStrategies' });
  });

  it('does not depend on the order of the candidates', () => {
    const pool = ['X', 'Y', 'Z'];
    const arbCandidate = fc.record({
      bin: fc.constantFrom('1.0.0', '1.1.0', '2.0.0'),
      prefs: fc.shuffledSubarray(pool, { minLength: 1 }),
    });
    fc.assert(
      fc.property(fc.array(arbCandidate, { minLength: 1, maxLength: 5 }), fc.nat(), (specs, seed) => {
        const cs = specs.map((s, i) => c(`c${i}`, s.bin, s.prefs));
        const shuffled = [...cs].sort((a, b) => ((a.name.charCodeAt(1) * 31 + seed) % 7) - ((b.name.charCodeAt(1) * 31 + seed) % 7));
        const r1 = strategyConsensus(cs);
        const r2 = strategyConsensus(shuffled);
        expect(r2.ok).toBe(r1.ok);
        if (r1.ok && r2.ok) expect(r2.strategy).toBe(r1.strategy);
      }),
    );
  });
});

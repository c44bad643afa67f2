/**
 * "Where the time went" in the summary: medians per path, never mixing a successor's direct take
 * with an election's phases, and saying how many runs each path covers.
 */
import { describe, expect, it } from 'vitest';
import { breakdown, describeSample, type RunSample } from '../../bench/scenarios/runs.js';

const base = { from: 'w1', to: 'w2', fencingToken: 2 };
const elected = (detectMs: number, electMs: number, pickupMs: number): RunSample => ({ ...base, ms: detectMs + electMs + pickupMs, electedBy: 'coordinator', detectMs, electMs, takeMs: detectMs + electMs, pickupMs, vacancy: 'reported' });
const successor = (takeMs: number, pickupMs: number): RunSample => ({ ...base, ms: takeMs + pickupMs, electedBy: 'successor', takeMs, pickupMs });

describe('bench breakdown', () => {
  it('medians per path, with the share of runs each covers', () => {
    const samples = [successor(4_000, 20), successor(4_200, 40), successor(4_400, 30), elected(4_500, 600, 300)];
    expect(breakdown(samples)).toBe('medians: elected in 1/4 runs: vacancy (reported) seen 4.50 s, elected +0.60 s, leads +0.30 s; successor took it in 3/4 runs: at 4.20 s, leads +0.03 s');
  });

  it('no share when one path covers every run; the platform signal first', () => {
    const samples = [{ ...successor(300, 10), signalMs: 70 }, { ...successor(500, 10), signalMs: 90 }];
    expect(breakdown(samples)).toBe('medians: platform ended the term 0.08 s; successor took it: at 0.40 s, leads +0.01 s');
  });

  it('nothing to say for the baseline', () => {
    expect(breakdown([{ ...base, ms: 4_000 }])).toBeUndefined();
  });

  it('one line per run names the path', () => {
    expect(describeSample({ ...successor(4_130, 30), phaseMs: 125 })).toBe('killed 125 ms after a renewal → w2 leads after 4.16 s → (the successor took it at 4.13 s, picked up +0.03 s)');
    expect(describeSample(elected(100, 700, 500))).toBe('w2 leads after 1.30 s → (vacancy reported seen at 0.10 s, elected +0.70 s, picked up +0.50 s)');
  });
});

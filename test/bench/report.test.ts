/**
 * The targets block of the summary lists only figures that have a target, each with the statistic
 * its target judges (the median unless it names another) or its value, and ✓/✗; the past-expiry
 * figure says how far behind the machine clock the stamps were seen.
 */
import { describe, expect, it } from 'vitest';
import { targetLines, type Figure } from '../../bench/report.js';
import { stampNote, type RunSample } from '../../bench/scenarios/runs.js';
import { summarize } from '../../bench/stats.js';

describe('targets block', () => {
  it('one line per figure with a target', () => {
    const figures: Figure[] = [
      { scenario: 'crash-failover', what: 'crash: past expiry', system: 'conclave', stats: summarize([100, 200, 400]), target: 'median ≤ 0.25 s', met: true },
      { scenario: 'crash-failover', what: 'crash: past expiry', system: 'baseline (client-go style)', stats: summarize([500]) },
      { scenario: 'repeated-crash', what: 'five crashes: past expiry', system: 'conclave', stats: summarize([50, 60, 380]), target: 'max ≤ 0.25 s', met: false },
      { scenario: 'steady-state', what: 'steady', system: 'conclave · $/lease-month · total', value: 1.17, unit: '$/lease-month', target: '≤ $0.40', met: false },
    ];
    expect(targetLines(figures)).toEqual([
      '  ✓ crash: past expiry · conclave: median 0.20 s (target median ≤ 0.25 s)',
      '  ✗ five crashes: past expiry · conclave: max 0.38 s (target max ≤ 0.25 s)',
      '  ✗ steady · conclave · $/lease-month · total: $1.17 /lease-month (target ≤ $0.40)',
    ]);
  });
});

describe('stamp note', () => {
  const s = (seenLagMs?: number): RunSample => ({ ms: 1, from: 'w1', to: 'w2', fencingToken: 1, ...(seenLagMs === undefined ? {} : { seenLagMs }) });
  it('the median and range of how late renewals were seen after their stamp; nothing when none was measured', () => {
    expect(stampNote([s(10), s(30), s(20), s()])).toBe('renewals seen 20 ms (median; 10…30) after their renewTime stamp');
    expect(stampNote([s()])).toBeUndefined();
  });
});

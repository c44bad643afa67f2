/**
 * The crash scenarios' goal is the product's (issue 38): every takeover ≤ 0.25 s past the dead
 * term's expiry, the maximum included. crash-failover judged the median (`median ≤ 0.25 s`), so a
 * run 0.3 s past expiry passed beside faster ones; repeated-crash judged the maximum but said only
 * `max ≤ 0.25 s`. Both now print and judge `pastExpiryTarget`; a run whose delay was not measured
 * is a takeover not known to meet it.
 */
import { describe, expect, it } from 'vitest';
import { Collector, targetLines } from '../../bench/report.js';
import { compareField, pastExpiryTarget, type RunSample } from '../../bench/scenarios/runs.js';

const run = (pastExpiryMs?: number): RunSample => ({ ms: 1, from: 'w1', to: 'w2', fencingToken: 1, ...(pastExpiryMs === undefined ? {} : { pastExpiryMs }) });
/** The Conclave figure compareField makes of these runs under the crash goal. */
function judged(conclave: RunSample[]) {
  const c = new Collector('crash-failover');
  compareField(c, 'crash: new leader past the term\'s expiry', { conclave, baseline: [run(1900)] }, 'pastExpiryMs', pastExpiryTarget);
  return c.figures.find((f) => f.system === 'conclave')!;
}

describe('the crash goal: every takeover ≤ 0.25 s past expiry', () => {
  it('says so, and judges every run: one 0.30 s past expiry fails it though the median is 0.12 s', () => {
    const slow = judged([run(100), run(120), run(300)]);
    expect({ target: slow.target, met: slow.met }).toEqual({ target: 'every takeover ≤ 0.25 s past expiry', met: false });
    expect(targetLines([slow])).toEqual(["  ✗ crash: new leader past the term's expiry · conclave: max 0.30 s (target every takeover ≤ 0.25 s past expiry)"]);
  });

  it('met when every run is at most 0.25 s past expiry; not when a run went unmeasured', () => {
    expect(judged([run(40), run(250), run(-10)]).met).toBe(true);
    expect(judged([run(40), run(90), run()]).met).toBe(false);
  });
});

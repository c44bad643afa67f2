/**
 * `conclave release` asks a live holder to yield (preferredHolder, which the SDK's leader honours
 * at its next renewal by stopping, then releasing) and waits until it has: never two workers
 * acting at once. `--force` ends the term without asking, says what that risks, and still asks
 * the operator.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { coordinatorDeps } from '../../lib/coordinator/reconcile.js';
import { decideWithSuccession } from '../../lib/election/successor.js';
import type { Candidate } from '../../lib/schemas/candidate.js';
import { electionConfig } from '../../lib/schemas/config.js';
import { manualClock, type ManualClock } from '../../lib/clock.js';
import type { Lease } from '../../lib/schemas/lease.js';
import { MIN, NOW, SEC, cand, lease } from '../fixtures.js';
import { Log, STEADY, coordinatorLoop, startElector, waitFor } from '../sdk/harness.js';
import { cliContext } from '../../lib/cli/context.js';
import { release } from '../../lib/cli/release.js';
import { holdingProxy } from '../proxy.js';
import { cliHarness, runMain, scripted, type CliHarness } from './harness.js';

let h: CliHarness;
beforeAll(async () => {
  h = await cliHarness('cli-release');
});
afterAll(() => h.t.drop());

/** A held lease with the holder's candidate row and a runner-up's, renewed at NOW. */
async function seed(name: string, extra: Partial<Lease> = {}) {
  await h.seedLease(lease('y1', { name, leaseDurationSeconds: 15, ...extra }));
  await h.seedCandidate(cand('y1', '1.30.0', '1.30.0', { leaseName: name }));
  await h.seedCandidate(cand('y2', '1.31.0', '1.31.0', { leaseName: name }));
}

/** What the SDK's leader does at its next renewal once preferredHolder names someone else. */
const holderYields = (name: string) => async () => {
  const l = (await h.leases.read(name)).item!;
  if (l.preferredHolder && l.preferredHolder !== l.holderIdentity) await h.leases.releaseTerm(name, { holderIdentity: l.holderIdentity!, fencingToken: l.fencingToken }, NOW);
};
/** A holder that keeps renewing and never yields (NoCoordination code, or an old SDK). */
const holderRenews = (name: string, clock: ManualClock) => async () => {
  const l = (await h.leases.read(name)).item!;
  await h.leases.renewTerm(name, { holderIdentity: l.holderIdentity!, fencingToken: l.fencingToken }, clock.now(), 15);
};

describe('release asks the holder to yield', () => {
  it('a real LeaderElector: it stops leading, then releases; the CLI waits for that, and nobody leads twice', async () => {
    const L = 'real';
    const log = new Log();
    const deps = coordinatorDeps(h.t.client, h.t.names, { config: { ackWindowMs: 500, electedLeaseDurationSeconds: 2 } });
    const coord = coordinatorLoop(deps, L);
    // STEADY: e1's term outlives a busy machine's stall (on FAST's 1.5 s renew deadline it could be
    // given back, e2 would take it, and the CLI would ask e2 to yield instead)
    const es = [startElector(h.t, log, 'e1', { leaseName: L, platform: 'none', ...STEADY }, { versions: ['1.30.0', '1.30.0'] }), startElector(h.t, log, 'e2', { leaseName: L, platform: 'none', ...STEADY }, { versions: ['1.31.0', '1.31.0'] })];
    try {
      await waitFor('e1 to lead', () => es[0]!.elector.isLeader());
      await coord.stop(); // the coordinator would only clear the request (e1 is its best candidate); it is not triggered by it in AWS either
      // e1 still leads, the row agreeing, as the CLI runs (a failure here names the lost term, not the CLI)
      const token = es[0]!.elector.fencingToken!;
      expect((await h.leases.read(L)).item, 'e1 still holds the term it leads').toMatchObject({ holderIdentity: 'e1', fencingToken: token });
      expect(es[0]!.elector.isLeader()).toBe(true);
      const r = await h.run(['release', L, '--yes']);
      expect(r.code, r.err).toBe(0);
      expect(r.err).toMatch(/^ask e1 to yield lease real \(fencing token \d+\) to e2: it stops and releases at its next renewal:$/m);
      expect(r.err).toMatch(/^ {2}preferredHolder +- +e2$/m);
      expect(r.err).toMatch(/^waiting for e1 to release lease real/m);
      expect(r.out.split('\n')[0]).toBe(`e1 yielded lease real: its term (fencing token ${token}) is over; writes fenced with it fail from now on`);
      // e1 stopped by itself, for the preemption, before its term ended: never two leaders.
      expect(log.of('stopped', 'e1').at(-1)).toMatchObject({ reason: 'preempted', token });
      expect(log.maxConcurrentLeaders()).toBe(1);
      expect((await h.leases.read(L)).item).not.toMatchObject({ holderIdentity: 'e1', fencingToken: token });
    } finally {
      await coord.stop();
      await Promise.all(es.map((e) => e.stop()));
    }
  });

  it('writes only preferredHolder, waits with progress, and says what follows', async () => {
    await seed('polite');
    const clock = manualClock(NOW + SEC);
    const pace = scripted([async () => undefined, holderYields('polite')], clock);
    const r = await h.run(['release', 'polite', '--yes'], { clock, pace });
    expect(r.code, r.err).toBe(0);
    expect(r.err.split('\n')).toEqual([
      'ask y1 to yield lease polite (fencing token 7) to y2: it stops and releases at its next renewal:',
      '  FIELD             BEFORE   AFTER',
      '  preferredHolder   -        y2',
      // said before the question: it is elected back at once (a term lost for nothing, unless that is the point)
      "warning: y1 is still the coordinator's best candidate, ranked first for its older emulation version than y2 (1.30.0 < 1.31.0): the coordinator elects it back as soon as it has yielded: leadership moves for a moment only (a new term and fencing token, its work stopped and started again). To move leadership for good: `conclave preempt polite --to y2`",
      'waiting for y1 to release lease polite (giving up after 30s)...',
    ]);
    expect(pace.waits).toEqual([500, 500]);
    expect(r.out.split('\n')).toEqual([
      'y1 yielded lease polite: its term (fencing token 7) is over; writes fenced with it fail from now on',
      'the coordinator elects the next holder at its next reconcile, with a new fencing token: the best candidate is still y1 (`conclave preempt polite --to ...` picks another)',
    ]);
    expect((await h.leases.read('polite')).item).toMatchObject({ lastHolderIdentity: 'y1' });
  });

  it('a candidate that stands down (standsDownUntil: its work failed at two starts in a row) is not the one asked for, nor called the best after (before: the holder was asked to yield to it, whom the coordinator passes over)', async () => {
    await h.seedLease(lease('y1', { name: 'downed', leaseDurationSeconds: 15 }));
    await h.seedCandidate(cand('y1', '1.31.0', '1.31.0', { leaseName: 'downed' }));
    await h.seedCandidate(cand('y2', '1.29.0', '1.29.0', { leaseName: 'downed', standsDownUntil: NOW + 5 * MIN }));
    await h.seedCandidate(cand('y3', '1.30.0', '1.30.0', { leaseName: 'downed' }));
    const clock = manualClock(NOW + SEC);
    const r = await h.run(['release', 'downed', '--yes', '--timeout', '10s'], { clock, pace: scripted([holderYields('downed')], clock) });
    expect(r.code, r.err).toBe(0);
    expect(r.err.split('\n')[0]).toBe('ask y1 to yield lease downed (fencing token 7) to y3: it stops and releases at its next renewal:');
    expect(r.out.split('\n').at(-1)).toBe('the coordinator elects the next holder at its next reconcile, with a new fencing token: the best candidate now is y3');
  });

  it("a holder first only by the tie-breaks (the same versions, registered earlier): no warning that it is elected back, which it is not once the candidate asked holds the lease (before: warned, and told to preempt, a pin for nothing)", async () => {
    await h.seedLease(lease('y1', { name: 'equals', leaseDurationSeconds: 15 }));
    await h.seedCandidate(cand('y1', '1.30.0', '1.30.0', { leaseName: 'equals' }));
    await h.seedCandidate(cand('y2', '1.30.0', '1.30.0', { leaseName: 'equals' }));
    const clock = manualClock(NOW + SEC);
    const r = await h.run(['release', 'equals', '--yes', '--timeout', '10s'], { clock, pace: scripted([holderYields('equals')], clock) });
    expect(r.code, r.err).toBe(0);
    expect(r.err).not.toMatch(/warning/);
  });

  it('a holder pinned above the others (preempt, set-priority): the warning before the question names the pin and the command that ends it', async () => {
    // y2 (newer versions) was preempted to: pinned at 1, it holds the lease
    await h.seedLease(lease('y2', { name: 'pinned', leaseDurationSeconds: 15 }));
    await h.seedCandidate(cand('y1', '1.30.0', '1.30.0', { leaseName: 'pinned' }));
    await h.seedCandidate(cand('y2', '1.31.0', '1.31.0', { leaseName: 'pinned', priority: 1, priorityExpiresAt: NOW + SEC + 10 * MIN }));
    const clock = manualClock(NOW + SEC);
    const r = await h.run(['release', 'pinned'], { clock, pace: scripted([], clock), answer: 'n' });
    expect(r.code).toBe(1);
    expect(r.err.split('\n').slice(3, 4)).toEqual([
      `warning: y2 is pinned on lease pinned at priority 1 (until in 10m, ${new Date(NOW + SEC + 10 * MIN).toISOString()}; \`conclave preempt\` or \`conclave set-priority\`), above y1's none: the coordinator elects it back as soon as it has yielded: leadership moves for a moment only (a new term and fencing token, its work stopped and started again). To move leadership for good, end the pin first: \`conclave set-priority pinned y2 --clear\``,
    ]);
    expect((await h.leases.read('pinned')).item?.preferredHolder).toBeUndefined();
    // the pin cleared, y1 ranks first: asked to yield to it, y2 is not warned of
    const cleared = await h.run(['set-priority', 'pinned', 'y2', '--clear', '--yes'], { clock });
    expect(cleared.code, cleared.err).toBe(0);
    const again = await h.run(['release', 'pinned', '--yes', '--timeout', '10s'], { clock, pace: scripted([holderYields('pinned')], clock) });
    expect(again.code, again.err).toBe(0);
    expect(again.err).not.toMatch(/warning/);
  });

  it("the candidate asked takes the lease at once, yet the holder that yielded is still the best: says the coordinator's next step, as describe does", async () => {
    // y1 (older emulation) is the coordinator's best; it yields to y2, which takes a term of its own at once (a successor's hand-off)
    await seed('back');
    const clock = manualClock(NOW + SEC);
    const handedOver = async () => {
      const l = (await h.leases.read('back')).item!;
      await h.leases.releaseTerm('back', { holderIdentity: l.holderIdentity!, fencingToken: l.fencingToken }, clock.now());
      const vacant = await h.leases.read('back');
      await h.leases.write(vacant, { set: { holderIdentity: 'y2', holderInstance: 'y2_1', fencingToken: 8, acquireTime: clock.now(), renewTime: clock.now(), leaseTransitions: 4, electedBy: 'successor' } });
      // y1's worker runs on: its candidate row renews after the hand-over (so the coordinator counts it again: isDeparted)
      await h.candidates.write(await h.candidates.read('back', 'y1'), { set: { renewTime: clock.now() } });
    };
    const r = await h.run(['release', 'back', '--yes'], { clock, pace: scripted([handedOver], clock) });
    expect(r.code, r.err).toBe(0);
    const lines = r.out.split('\n');
    expect(lines.slice(0, 2)).toEqual(['y1 yielded lease back: its term (fencing token 7) is over; writes fenced with it fail from now on', 'y2 now holds it (fencing token 8)']);
    // before: nothing more, though the coordinator moves the lease back to y1 at once (as `conclave release` did live: w3, pinned, led again within a second)
    const step = lines.find((l) => l.startsWith("the coordinator's next step: "))?.replace("the coordinator's next step: ", '');
    expect(step).toBe('ask y2 to yield to y1 (preferredHolder); y2 releases at its next renewal and the next election elects y1');
    const d = await h.run(['describe', 'lease', 'back'], { clock });
    expect(step).toBe(d.out.split('\n').find((l) => /^Next step: +/.test(l))?.replace(/^Next step: +/, ''));
  });

  it("a pinned holder yields, its candidate row not yet renewed when the CLI reads it: the next step is its election back, as the warning says (before: it was judged a last holder not seen since the term began, and another designated successor)", async () => {
    // p1 pinned (preempt, set-priority) above p2 and p3; it yields to p2, which takes the lease at once (a hand-off)
    const L = 'pinned-back';
    await h.seedLease(lease('p1', { name: L, leaseDurationSeconds: 15 }));
    await h.seedCandidate(cand('p1', '1.31.0', '1.31.0', { leaseName: L, priority: 1, priorityExpiresAt: NOW + SEC + 10 * MIN }));
    await h.seedCandidate(cand('p2', '1.30.0', '1.30.0', { leaseName: L }));
    await h.seedCandidate(cand('p3', '1.30.0', '1.30.0', { leaseName: L }));
    const clock = manualClock(NOW + SEC);
    const handedOver = async () => {
      const l = (await h.leases.read(L)).item!;
      await h.leases.releaseTerm(L, { holderIdentity: l.holderIdentity!, fencingToken: l.fencingToken }, clock.now());
      const vacant = await h.leases.read(L);
      await h.leases.write(vacant, { set: { holderIdentity: 'p2', holderInstance: 'p2_1', fencingToken: 8, acquireTime: clock.now(), renewTime: clock.now(), leaseTransitions: 4, electedBy: 'successor' } });
      // p1's SDK renews its candidacy once it has yielded (lib/sdk/step.ts 'rejoin'): a moment after this read
    };
    const r = await h.run(['release', L, '--yes'], { clock, pace: scripted([handedOver], clock) });
    expect(r.code, r.err).toBe(0);
    expect(r.err).toMatch(/^warning: p1 is pinned on lease pinned-back at priority 1 .*the coordinator elects it back as soon as it has yielded/m);
    const step = r.out.split('\n').find((l) => l.startsWith("the coordinator's next step: "))?.replace("the coordinator's next step: ", '');
    expect(step).toBe('ask p2 to yield to p1 (preferredHolder); p2 releases at its next renewal and the next election elects p1');
    // what the coordinator decides once p1's renewal lands, as describe shows it
    await h.candidates.write(await h.candidates.read(L, 'p1'), { set: { renewTime: clock.now() } });
    const d = await h.run(['describe', 'lease', L], { clock });
    expect(d.out.split('\n').find((l) => /^Next step: +/.test(l))?.replace(/^Next step: +/, '')).toBe(step);
  });

  it('gives up after --timeout when the holder renews but does not yield; the request stays', async () => {
    await seed('deaf');
    const clock = manualClock(NOW + SEC);
    const pace = scripted(Array.from({ length: 40 }, () => holderRenews('deaf', clock)), clock);
    const r = await h.run(['release', 'deaf', '--yes', '--timeout', '6s'], { clock, pace });
    expect(r.code).toBe(1);
    expect(r.err).toMatch(/^still waiting for y1: 5s so far \(it renewed 0s ago\)$/m);
    expect(r.err.split('\n').at(-1)).toBe(
      'error: y1 did not release lease deaf within 6s, though it renews (last 0s ago): it may not honour preferredHolder (a worker without coordination, or an older SDK). The request stays on the lease; `conclave release deaf --force` ends the term now',
    );
    expect((await h.leases.read('deaf')).item).toMatchObject({ holderIdentity: 'y1', preferredHolder: 'y2' });
  });

  it('a holder that stops renewing: its term runs out, and that ends the wait too', async () => {
    await seed('mute');
    const clock = manualClock(NOW + SEC);
    const r = await h.run(['release', 'mute', '--yes'], { clock, pace: scripted([], clock) });
    expect(r.code, r.err).toBe(0);
    expect(r.out.split('\n')[0]).toBe(
      "y1's term on lease mute (fencing token 7) ran out: it stopped renewing without releasing, and the coordinator treats the lease as vacant; y1 may not have stopped: a process that is frozen (paused, swapped out) acts when it wakes, before it can look. Fencing refuses its writes with token 7 from now on, but not what it does outside fenced writes",
    );
  });

  it("a holder that never releases, its successor taking the lease as soon as the term is over: said to have run out, not yielded (before the CLI's own expiry check, which waits out the clock skew)", async () => {
    await seed('frozen');
    const clock = manualClock(NOW + SEC);
    // y1 is frozen: it neither renews nor releases; its successor y2 takes the lease at the end of its term (NOW + 15 s), to the millisecond
    const successorTakes = async () => {
      clock.advance(NOW + 15 * SEC - clock.now());
      await h.leases.write(await h.leases.read('frozen'), {
        set: { holderIdentity: 'y2', holderInstance: 'y2_1', fencingToken: 8, acquireTime: clock.now(), renewTime: clock.now(), leaseTransitions: 4, electedBy: 'successor' },
        remove: ['preferredHolder'],
      });
    };
    const r = await h.run(['release', 'frozen', '--yes'], { clock, pace: scripted([async () => undefined, successorTakes], clock) });
    expect(r.code, r.err).toBe(0);
    expect(r.out.split('\n').slice(0, 2)).toEqual([
      "y1's term on lease frozen (fencing token 7) ran out: it stopped renewing without releasing, and y2 took the lease once the term was over; y1 may not have stopped: a process that is frozen (paused, swapped out) acts when it wakes, before it can look. Fencing refuses its writes with token 7 from now on, but not what it does outside fenced writes",
      'y2 now holds it (fencing token 8)',
    ]);
    expect(r.out).not.toMatch(/yielded/);
  });

  it('a holder that never releases, the coordinator ending its term once it ran out: said to have run out; -o json carries the outcome', async () => {
    await seed('frozen-json');
    const clock = manualClock(NOW + SEC);
    // the coordinator's tick, past the term's end and the clock skew it allows, ends y1's term (no holder on the row)
    const coordinatorEnds = async () => {
      clock.advance(NOW + 17 * SEC - clock.now());
      await h.leases.releaseTerm('frozen-json', { holderIdentity: 'y1', fencingToken: 7 }, clock.now());
    };
    const r = await h.run(['release', 'frozen-json', '--yes'], { clock, pace: scripted([coordinatorEnds], clock) });
    expect(r.code, r.err).toBe(0);
    expect(r.out.split('\n')[0]).toMatch(/^y1's term on lease frozen-json \(fencing token 7\) ran out: it stopped renewing without releasing, and the term was ended once it had run out; y1 may not have stopped: /);
    await seed('frozen-json2');
    const clock2 = manualClock(NOW + SEC);
    const again = async () => {
      clock2.advance(NOW + 17 * SEC - clock2.now());
      await h.leases.releaseTerm('frozen-json2', { holderIdentity: 'y1', fencingToken: 7 }, clock2.now());
    };
    const j = await h.run(['-o', 'json', 'release', 'frozen-json2', '--yes'], { clock: clock2, pace: scripted([again], clock2) });
    expect(j.code, j.err).toBe(0);
    expect(JSON.parse(j.out)).toMatchObject({ name: 'frozen-json2', lastHolderIdentity: 'y1', release: { outcome: 'ranOut', holderIdentity: 'y1', fencingToken: 7 } });
  });

  it('a term still on the row but judged run out: nobody holds the lease, whatever the row says (not "y1 now holds it")', async () => {
    await seed('mute-next');
    const clock = manualClock(NOW + SEC);
    const r = await h.run(['release', 'mute-next', '--yes'], { clock, pace: scripted([], clock) });
    expect(r.code, r.err).toBe(0);
    expect(r.out.split('\n')[1]).toBe('the coordinator elects the next holder at its next reconcile, with a new fencing token: the best candidate is still y1 (`conclave preempt mute-next --to ...` picks another)');
  });

  it('a lease the coordinator does not elect on (NoCoordination): no "elected back" warning and no preempt advice; says who takes it: workers in NoCoordination mode race, coordinated ones by their fallback', async () => {
    await seed('racing', { strategy: 'NoCoordination' });
    const clock = manualClock(NOW + SEC);
    const r = await h.run(['release', 'racing', '--yes'], { clock, pace: scripted([holderYields('racing')], clock) });
    expect(r.code, r.err).toBe(0);
    expect(r.err).not.toMatch(/best candidate|elects it back|conclave preempt/);
    expect(r.err.split('\n')[3]).toBe(
      'note: the coordinator does not elect on lease racing (its strategy is NoCoordination (set by an operator)): once y1 has released, its workers take it, with a new fencing token (workers run with mode \'NoCoordination\' race for it; coordinated workers (candidates) take it only once it stands vacant and a vacancy report goes unanswered for 10s (or their fallbackAfterMs passes), each take reported to onError as a NoCoordinatorError: run them with mode \'NoCoordination\') - perhaps y1 again, not necessarily y2',
    );
    expect(r.out.split('\n')).toEqual([
      'y1 yielded lease racing: its term (fencing token 7) is over; writes fenced with it fail from now on',
      'the coordinator does not elect on lease racing (its strategy is NoCoordination (set by an operator)): its workers take it, with a new fencing token (workers run with mode \'NoCoordination\' race for it; coordinated workers (candidates) take it only once it stands vacant and a vacancy report goes unanswered for 10s (or their fallbackAfterMs passes), each take reported to onError as a NoCoordinatorError: run them with mode \'NoCoordination\')',
    ]);
  });

  it('asks again when the coordinator withdrew the request before the holder saw it', async () => {
    await seed('again');
    const clock = manualClock(NOW + SEC);
    const withdraw = async () => void (await h.leases.write(await h.leases.read('again'), { remove: ['preferredHolder'] }));
    const pace = scripted([withdraw, holderYields('again')], clock);
    const r = await h.run(['release', 'again', '--yes'], { clock, pace });
    expect(r.code, r.err).toBe(0);
    expect(r.err).toMatch(/^the coordinator withdrew the request before y1 saw it \(it judges y1 its best candidate\); asking again$/m);
  });

  it('Ctrl-C stops the wait, exit 130 as a shell shows an interrupt (it was 1, as a failure); the request stays', async () => {
    await seed('ctrl-c');
    const clock = manualClock(NOW + SEC);
    const pace = scripted([() => pace.stop.abort()], clock);
    const r = await h.run(['release', 'ctrl-c', '--yes'], { clock, pace });
    expect(r.code).toBe(130);
    expect(r.err.split('\n').at(-1)).toBe('error: stopped waiting: the request stays on lease ctrl-c, and y1 releases when it sees it at its next renewal (`conclave describe lease ctrl-c` shows whether it has)');
  });

  it('SIGTERM stops the wait too, exit 143 (128 + 15)', async () => {
    await seed('sigterm');
    const clock = manualClock(NOW + SEC);
    const pace = scripted([() => pace.stop.abort('SIGTERM')], clock);
    const r = await h.run(['release', 'sigterm', '--yes'], { clock, pace });
    expect(r.code).toBe(143);
    expect(r.err.split('\n').at(-1)).toMatch(/^error: stopped waiting: the request stays on lease sigterm/);
  });

  it('a holder already asked to yield: nothing to write, only the wait', async () => {
    await seed('asked', { preferredHolder: 'y2' });
    const clock = manualClock(NOW + SEC);
    const r = await h.run(['release', 'asked'], { clock, pace: scripted([holderYields('asked')], clock) });
    expect(r.code, r.err).toBe(0);
    expect(r.err.split('\n')[0]).toBe('y1 is already asked to yield lease asked to y2 (preferredHolder); waiting for it to release (giving up after 30s)...');
  });

  it('a holder already asked to yield, the request then withdrawn: asking again is a write, confirmed first (without --yes and a terminal, nothing is written)', async () => {
    await seed('asked-withdrawn', { preferredHolder: 'y2' });
    const clock = manualClock(NOW + SEC);
    const withdraw = async () => void (await h.leases.write(await h.leases.read('asked-withdrawn'), { remove: ['preferredHolder'] }));
    const pace = scripted([withdraw], clock);
    const r = await h.run(['release', 'asked-withdrawn'], { clock, pace });
    expect(r.code, r.err).toBe(1);
    expect(r.err).toMatch(/^ {2}preferredHolder +- +y2$/m);
    expect(r.err.split('\n').at(-1)).toBe('error: not confirmed: stdin is not a terminal, so nobody can answer - pass --yes (-y) to make this change; nothing was written');
    expect((await h.leases.read('asked-withdrawn')).item?.preferredHolder).toBeUndefined();
    // with --yes (or "y" at a terminal) it asks again, and waits for the holder
    await h.leases.write(await h.leases.read('asked-withdrawn'), { set: { preferredHolder: 'y2' } });
    const yes = await h.run(['release', 'asked-withdrawn', '--yes'], { clock, pace: scripted([withdraw, holderYields('asked-withdrawn')], clock) });
    expect(yes.code, yes.err).toBe(0);
    expect(yes.err).toMatch(/asking again$/m);
    expect((await h.leases.read('asked-withdrawn')).item).toMatchObject({ lastHolderIdentity: 'y1' });
  });

  it('-o json: the lease as it is once the holder released, alone on stdout', async () => {
    await seed('json');
    const clock = manualClock(NOW + SEC);
    const r = await h.run(['-o', 'json', 'release', 'json', '--yes'], { clock, pace: scripted([holderYields('json')], clock) });
    expect(r.code, r.err).toBe(0);
    expect(JSON.parse(r.out)).toMatchObject({ name: 'json', lastHolderIdentity: 'y1', release: { outcome: 'yielded', holderIdentity: 'y1', fencingToken: 7 } });
  });

  it.each([
    ['a holder without a candidate row (it does not take part in coordinated election)', 'loner', async () => h.seedLease(lease('z1', { name: 'loner' })), /^error: z1 has no candidate row on lease loner, so it runs without the coordinator \(NoCoordination\) and does not answer a request to yield; `conclave release loner --force` ends its term without asking/],
    [
      'no other candidate that could lead',
      'alone',
      async () => {
        await h.seedLease(lease('a1', { name: 'alone' }));
        await h.seedCandidate(cand('a1', '1.30.0', '1.30.0', { leaseName: 'alone' }));
        await h.seedCandidate(cand('a2', '1.31.0', '1.31.0', { leaseName: 'alone', renewTime: NOW - 40 * MIN }));
      },
      /^error: no other candidate of lease alone can lead now, so there is nobody for a1 to yield to \(the coordinator would elect a1 again\); `conclave release alone --force` ends its term anyway/,
    ],
  ])('refuses %s, naming --force; writes nothing', async (_what, name, setup, message) => {
    await setup();
    const before = (await h.leases.read(name)).item;
    const r = await h.run(['release', name, '--yes'], { clock: manualClock(NOW + SEC) });
    expect(r.code).toBe(1);
    expect(r.err).toMatch(message);
    expect((await h.leases.read(name)).item).toEqual(before);
  });
});

describe('release --force', () => {
  it('says what it risks, still asks, and ends the term on "y"', async () => {
    await seed('forced');
    const clock = manualClock(NOW + SEC);
    const refused = await h.run(['release', 'forced', '--force'], { clock });
    expect(refused.code).toBe(1);
    expect((await h.leases.read('forced')).item?.holderIdentity).toBe('y1');
    const r = await h.run(['release', 'forced', '--force'], { clock, answer: 'y\n' });
    expect(r.code, r.err).toBe(0);
    const err = r.err.split('\n');
    expect(err[0]).toBe('end the term of y1 on lease forced (fencing token 7) without asking it:');
    expect(r.err).toMatch(/^ {2}holderIdentity +y1 +-$/m);
    expect(r.err).toMatch(/^ {2}lastHolderIdentity +- +y1$/m);
    expect(err).toContain(
      'warning: y1 is not asked to stop: it learns that its term is over at its next renewal - within its renew deadline, at most 15s from now (its lease duration), and may go on acting as leader until then, while the next holder may already start; a process that is frozen (paused, swapped out) acts when it wakes, before it can look. Fencing refuses its writes with token 7 from now on, but not what it does outside fenced writes',
    );
    expect(err.at(-1)).toBe('Apply this change? [y/N] ');
    expect(r.out.split('\n').slice(0, 2)).toEqual([
      "released lease forced: y1's term (fencing token 7) is over",
      'y1 was not asked to stop: it may act until its next renewal, at most 15s from now; its writes fenced with token 7 fail from now on',
    ]);
    expect((await h.leases.read('forced')).item).toMatchObject({ lastHolderIdentity: 'y1' });
    expect((await h.leases.read('forced')).item?.holderIdentity).toBeUndefined();
  });

  it.each([
    ['NoCoordination', 'its workers take it, with a new fencing token (workers run with mode \'NoCoordination\' race for it; coordinated workers (candidates) take it only once it stands vacant and a vacancy report goes unanswered for 10s (or their fallbackAfterMs passes), each take reported to onError as a NoCoordinatorError: run them with mode \'NoCoordination\')'],
    ['example.com/Rota', 'whoever elects under example.com/Rota (a third party) names the next holder'],
  ])('a lease the coordinator does not elect on (%s): the last line does not name its best candidate', async (strategy, next) => {
    const name = `forced-${strategy.replace(/\W/g, '-').toLowerCase()}`;
    await seed(name, { strategy });
    const r = await h.run(['release', name, '--force', '--yes'], { clock: manualClock(NOW + SEC) });
    expect(r.code, r.err).toBe(0);
    expect(r.out.split('\n').at(-1)).toBe(`the coordinator does not elect on lease ${name} (its strategy is ${strategy} (set by an operator)): ${next}`);
  });

  it('a term that already ran out is ended directly: nobody acts on it, nothing to wait for', async () => {
    await seed('expired');
    const r = await h.run(['release', 'expired', '--yes'], { clock: manualClock(NOW + 20 * SEC) });
    expect(r.code, r.err).toBe(0);
    expect(r.err).toMatch(/^note: y1's term ran out 5s ago \(it stopped renewing\), so nobody acts on it: ending it directly$/m);
    expect(r.out.split('\n')[1]).toBe('y1 had stopped renewing; its writes fenced with token 7 fail from now on');
    expect((await h.leases.read('expired')).item?.holderIdentity).toBeUndefined();
  });
});

// a new-user review (2026-12-07, eleventh), run against conclave-local with real workers
describe('release: who leads next, and what an interrupt leaves', () => {
  /** A held lease naming y2 its successor (y2_1, the start-up its candidate row names) and y3 its second. */
  async function withHeirs(name: string, y1: string) {
    await h.seedLease(lease('y1', { name, leaseDurationSeconds: 15, successor: 'y2', successorInstance: 'y2_1', secondSuccessor: 'y3' }));
    await h.seedCandidate(cand('y1', y1, y1, { leaseName: name }));
    await h.seedCandidate(cand('y2', '1.30.0', '1.30.0', { leaseName: name, identity: 'y2_1' }));
    await h.seedCandidate(cand('y3', '1.31.0', '1.31.0', { leaseName: name }));
  }
  /** The row once y2 took the released lease as its successor (lib/sdk/step.ts take: 'successor'), and the coordinator's decision on it. */
  async function afterTake(name: string, at: number) {
    const read = await h.leases.read(name);
    await h.leases.write(read, { set: { holderIdentity: 'y2', holderInstance: 'y2_1', fencingToken: 8, acquireTime: at, renewTime: at, electedBy: 'successor' }, remove: ['successor', 'successorInstance'] });
    const row = (await h.leases.read(name)).item!;
    return (candidates: readonly Candidate[]) => decideWithSuccession(name, row, candidates, at, electionConfig());
  }

  it('--force with a successor named: it takes the lease at once (before: "the coordinator elects ... the best candidate is still y1"); y1, no better than it, is not elected back', async () => {
    await withHeirs('heirs', '1.30.0');
    const clock = manualClock(NOW + SEC);
    const r = await h.run(['release', 'heirs', '--force', '--yes'], { clock });
    expect(r.code, r.err).toBe(0);
    expect(r.out.split('\n').at(-1)).toBe(
      "y2, the lease's designated successor, takes it at once, with a new fencing token (y3, its second successor, a moment later if y2 has not); failing that, the coordinator elects a holder; y1 is not elected back: the coordinator preempts a holder only for a candidate better on merit (a higher priority, older versions, a better location), and y1 is not better than y2",
    );
    // as the coordinator decides once y2 holds it: y1 is left alone, now and once its row renews
    const { candidates } = await h.candidates.list('heirs');
    const decide = await afterTake('heirs', clock.now() + 2 * SEC);
    expect(decide(candidates).kind).not.toBe('preempt');
    expect(decide(candidates.map((c) => (c.name === 'y1' ? { ...c, renewTime: clock.now() + 3 * SEC } : c))).kind).not.toMatch(/preempt|openElection/);
  });

  it('--force with a successor named, the released holder better on merit: passed over while its row shows no life since (isDeparted), then preempted for', async () => {
    await withHeirs('heirs-back', '1.29.0');
    const clock = manualClock(NOW + SEC);
    const r = await h.run(['release', 'heirs-back', '--force', '--yes'], { clock });
    expect(r.code, r.err).toBe(0);
    expect(r.out.split('\n').at(-1)).toBe(
      "y2, the lease's designated successor, takes it at once, with a new fencing token (y3, its second successor, a moment later if y2 has not); failing that, the coordinator elects a holder; y1 is elected back later: it ranks above y2 for its older emulation version than y2 (1.29.0 < 1.30.0), so the coordinator preempts for it once its candidate row shows life again (until then it passes over a last holder not seen since the term began)",
    );
    const { candidates } = await h.candidates.list('heirs-back');
    const decide = await afterTake('heirs-back', clock.now() + 2 * SEC);
    expect(decide(candidates).kind).not.toBe('preempt');
    expect(decide(candidates.map((c) => (c.name === 'y1' ? { ...c, renewTime: clock.now() + 2 * SEC } : c)))).toMatchObject({ kind: 'preempt', preferredHolder: 'y1' });
  });

  it('a successor whose candidate row is stale, or names another start-up, is not said to take the lease', async () => {
    await h.seedLease(lease('y1', { name: 'heir-gone', leaseDurationSeconds: 15, successor: 'y2', successorInstance: 'y2_old' }));
    await h.seedCandidate(cand('y1', '1.30.0', '1.30.0', { leaseName: 'heir-gone' }));
    await h.seedCandidate(cand('y2', '1.31.0', '1.31.0', { leaseName: 'heir-gone', identity: 'y2_new' }));
    const r = await h.run(['release', 'heir-gone', '--force', '--yes'], { clock: manualClock(NOW + SEC) });
    expect(r.out.split('\n').at(-1)).toBe('the coordinator elects the next holder at its next reconcile, with a new fencing token: the best candidate is still y1 (`conclave preempt heir-gone --to ...` picks another)');
  });

  it('asks the holder to yield to whom decide() would prefer: never the last holder while its row shows no life since the term began (isDeparted; before: asked for, and the coordinator withdrew the request)', async () => {
    // y0 led before y1 (lastHolderIdentity), and its row was last renewed before y1's term began: decide() passes it over
    await h.seedLease(lease('y1', { name: 'departed', leaseDurationSeconds: 15, lastHolderIdentity: 'y0', acquireTime: NOW - 10 * SEC }));
    await h.seedCandidate(cand('y0', '1.29.0', '1.29.0', { leaseName: 'departed', renewTime: NOW - MIN }));
    await h.seedCandidate(cand('y1', '1.30.0', '1.30.0', { leaseName: 'departed' }));
    await h.seedCandidate(cand('y2', '1.31.0', '1.31.0', { leaseName: 'departed' }));
    const clock = manualClock(NOW + SEC);
    const r = await h.run(['release', 'departed', '--yes', '--timeout', '10s'], { clock, pace: scripted([holderYields('departed')], clock) });
    expect(r.code, r.err).toBe(0);
    expect(r.err.split('\n')[0]).toBe('ask y1 to yield lease departed (fencing token 7) to y2: it stops and releases at its next renewal:');
    // none left but the departed one: refused, saying why
    await h.seedLease(lease('y1', { name: 'departed-only', leaseDurationSeconds: 15, lastHolderIdentity: 'y0', acquireTime: NOW - 10 * SEC }));
    await h.seedCandidate(cand('y0', '1.29.0', '1.29.0', { leaseName: 'departed-only', renewTime: NOW - MIN }));
    await h.seedCandidate(cand('y1', '1.30.0', '1.30.0', { leaseName: 'departed-only' }));
    const only = await h.run(['release', 'departed-only', '--yes'], { clock: manualClock(NOW + SEC) });
    expect(only.code).toBe(1);
    expect(only.err.split('\n').at(-1)).toBe(
      'error: no other candidate of lease departed-only can lead now (y0, its last holder, has shown no life since this term began: the coordinator passes it over), so there is nobody for y1 to yield to (the coordinator would elect y1 again); `conclave release departed-only --force` ends its term anyway',
    );
  });

  it('Ctrl-C after the coordinator withdrew the request and it was asked again: says so, not "the request stays" (before: it said so, the request gone)', async () => {
    await seed('ctrl-c-again');
    const clock = manualClock(NOW + SEC);
    const withdraw = async () => void (await h.leases.write(await h.leases.read('ctrl-c-again'), { remove: ['preferredHolder'] }));
    const pace = scripted([withdraw, () => pace.stop.abort()], clock);
    const r = await h.run(['release', 'ctrl-c-again', '--yes'], { clock, pace });
    expect(r.code).toBe(130);
    expect(r.err.split('\n').at(-1)).toBe(
      'error: stopped waiting: the coordinator withdrew the request once (it judges y1 its best candidate), and this command wrote it again; no read since showed whether it stays - `conclave describe lease ctrl-c-again` shows whether it does, and whether y1 has released',
    );
    // a read since showed it: it stays, and the withdrawal is said
    await seed('ctrl-c-seen');
    const clock2 = manualClock(NOW + SEC);
    const withdraw2 = async () => void (await h.leases.write(await h.leases.read('ctrl-c-seen'), { remove: ['preferredHolder'] }));
    const pace2 = scripted([withdraw2, async () => undefined, () => pace2.stop.abort()], clock2);
    const seen = await h.run(['release', 'ctrl-c-seen', '--yes'], { clock: clock2, pace: pace2 });
    expect(seen.code).toBe(130);
    expect(seen.err.split('\n').at(-1)).toBe(
      'error: stopped waiting: the request stays on lease ctrl-c-seen, and y1 releases when it sees it at its next renewal; the coordinator withdrew it once while this command waited, and may again (`conclave describe lease ctrl-c-seen` shows whether it has)',
    );
  });
});

// a review of the operator CLI (2026-12-07, twelfth), run against a local system
describe('release: interrupts, the forced write, and who takes the lease', () => {
  it.each([
    { how: '--force', argv: ['--force', '--yes'], what: 'end the term of y1 on lease int-pre-force (fencing token 7) without asking it', name: 'int-pre-force' },
    { how: 'asking the holder to yield', argv: ['--yes'], what: 'ask y1 to yield lease int-pre-ask (fencing token 7) to y2: it stops and releases at its next renewal', name: 'int-pre-ask' },
  ])('$how, interrupted while a read before the confirmation was in flight: nothing is written, exit 130 (before: -y wrote all the same)', async ({ argv, what, name }) => {
    await seed(name);
    const before = (await h.leases.read(name)).item;
    const clock = manualClock(NOW + SEC);
    const pace = scripted([], clock);
    pace.stop.abort(); // Ctrl-C, heard while the lease was read
    const r = await h.run(['release', name, ...argv], { clock, pace });
    expect(r.code).toBe(130);
    expect(r.out).toBe('');
    expect(r.err.split('\n').at(-1)).toBe(`error: interrupted before the write was sent: nothing was written (the change confirmed: ${what}) - run the command again to make it`);
    expect((await h.leases.read(name)).item).toEqual(before);
  });

  it('Ctrl-C while the wait reads the lease, the request withdrawn meanwhile: it is not written again (before: written, then "stopped waiting")', async () => {
    await seed('int-reask');
    const clock = manualClock(NOW + SEC);
    const proxy = await holdingProxy(h.endpoint, (operation, body) => operation === 'GetItem' && (JSON.parse(body) as { TableName?: string }).TableName === h.t.names.leases);
    const withdrawn = async () => {
      await h.leases.write(await h.leases.read('int-reask'), { remove: ['preferredHolder'] });
      proxy.holding(true); // the wait's next read of the lease: held until Ctrl-C
    };
    const pace = scripted([withdrawn], clock);
    try {
      const run = runMain(['--endpoint', proxy.endpoint, '--table-prefix', h.prefix, 'release', 'int-reask', '--yes'], { clock, pace });
      await waitFor('the read held', () => proxy.held() === 1);
      pace.stop.abort();
      proxy.release();
      const r = await run;
      expect(r.code).toBe(130);
      expect(r.err.split('\n').at(-1)).toBe(
        'error: stopped waiting: the coordinator withdrew the request (the last read of lease int-reask showed no preferredHolder), so nothing is left on the lease and y1 leads on; run the command again to ask again',
      );
      expect((await h.leases.read('int-reask')).item).toMatchObject({ holderIdentity: 'y1' });
      expect((await h.leases.read('int-reask')).item?.preferredHolder).toBeUndefined();
    } finally {
      proxy.release();
      await proxy.close();
    }
  });

  it('--force on a lease held by a worker without coordination (no candidate row, no strategy): its workers race for it (before: "stays vacant until one registers")', async () => {
    await h.seedLease(lease('o1', { name: 'uncoordinated', leaseDurationSeconds: 15 }));
    const r = await h.run(['release', 'uncoordinated', '--force', '--yes'], { clock: manualClock(NOW + SEC) });
    expect(r.code, r.err).toBe(0);
    expect(r.out.split('\n').at(-1)).toBe(
      "o1 has no candidate row on lease uncoordinated (it ran without the coordinator, NoCoordination, or its row was collected): its workers take it, with a new fencing token (workers run with mode 'NoCoordination' race for it; coordinated workers (candidates) take it only once it stands vacant and a vacancy report goes unanswered for 10s (or their fallbackAfterMs passes), each take reported to onError as a NoCoordinatorError: run them with mode 'NoCoordination')",
    );
    // a lease with no holder's row either, whose candidates are all gone: nobody can take it
    await h.seedLease(lease('g1', { name: 'deserted', leaseDurationSeconds: 15 }));
    await h.seedCandidate(cand('g1', '1.30.0', '1.30.0', { leaseName: 'deserted', renewTime: NOW - 40 * MIN }));
    const gone = await h.run(['release', 'deserted', '--force', '--yes'], { clock: manualClock(NOW + SEC) });
    expect(gone.out.split('\n').at(-1)).toBe('no candidate can be elected now: the lease stays vacant until one registers and renews');
  });

  it("--force shows every field the write removes: the term's token copy (termToken) too", async () => {
    await seed('forced-fields');
    expect((await h.leases.read('forced-fields')).item?.termToken).toBe(7);
    const r = await h.run(['release', 'forced-fields', '--force', '--yes'], { clock: manualClock(NOW + SEC) });
    expect(r.code, r.err).toBe(0);
    expect(r.err).toMatch(/^ {2}termToken +7 +-$/m);
    expect((await h.leases.read('forced-fields')).item?.termToken).toBeUndefined();
  });

  it('refuses --timeout with --force, which waits for nothing (before: taken, and it did nothing); writes nothing', async () => {
    await seed('forced-timeout');
    const before = (await h.leases.read('forced-timeout')).item;
    const r = await h.run(['release', 'forced-timeout', '--force', '--timeout', '5s', '--yes'], { clock: manualClock(NOW + SEC) });
    expect(r).toMatchObject({ code: 1, out: '' });
    expect(r.err).toBe(
      'error: invalid release arguments: --timeout: only goes without --force, which ends the term at once and waits for nothing: drop --timeout, or drop --force to ask the holder to yield and wait that long',
    );
    expect((await h.leases.read('forced-timeout')).item).toEqual(before);
  });

  it("--force stamps renewTime when it writes, not when it read the lease: after a long question, not before the holder's last renewal", async () => {
    await seed('forced-late');
    const clock = manualClock(NOW + SEC);
    // the operator answers a minute later; the holder renewed meanwhile
    const ask = async () => {
      clock.advance(MIN);
      await h.leases.renewTerm('forced-late', { holderIdentity: 'y1', fencingToken: 7 }, clock.now() - SEC, 15);
      return 'y';
    };
    const ctx = cliContext(h.t.client, { tablePrefix: h.prefix, tables: h.t.names }, { clock, sink: { out: () => {}, err: () => {}, color: false }, output: 'table', confirm: { yes: false, interactive: true, ask } });
    await release(ctx, { lease: 'forced-late', force: true }, scripted([], clock));
    expect((await h.leases.read('forced-late')).item).toMatchObject({ lastHolderIdentity: 'y1', renewTime: NOW + SEC + MIN });
    expect((await h.leases.read('forced-late')).item?.holderIdentity).toBeUndefined();
  });

  it('a successor that stands down (its work failed at two starts in a row) is not said to take the lease: its SDK does not take it as successor then', async () => {
    await h.seedLease(lease('y1', { name: 'heir-down', leaseDurationSeconds: 15, successor: 'y2' }));
    await h.seedCandidate(cand('y1', '1.30.0', '1.30.0', { leaseName: 'heir-down' }));
    await h.seedCandidate(cand('y2', '1.29.0', '1.29.0', { leaseName: 'heir-down', standsDownUntil: NOW + 30 * SEC }));
    const r = await h.run(['release', 'heir-down', '--force', '--yes'], { clock: manualClock(NOW + SEC) });
    expect(r.code, r.err).toBe(0);
    expect(r.out.split('\n').at(-1)).toBe('the coordinator elects the next holder at its next reconcile, with a new fencing token: the best candidate is still y1 (`conclave preempt heir-down --to ...` picks another)');
  });
});

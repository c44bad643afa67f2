/**
 * Acknowledgements judged by observed change, on real tables: the coordinator pings with its own
 * stamp, the worker's renewal makes DynamoDB copy that stamp into ackedPingTime, and the election
 * counts the copy — so a worker whose clock is 30 s behind, or stepped back, is heard at once.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { manualClock } from '../../lib/clock.js';
import { coordinatorDeps, reconcileLease, type CoordinatorDeps } from '../../lib/coordinator/reconcile.js';
import { candidateChangeMatters } from '../../lib/functions/core.js';
import type { Candidate } from '../../lib/schemas/candidate.js';
import { testTables, type TestTables } from '../support.js';

// near the real time: DynamoDB Local applies the TTL attribute on reads
const T0 = Math.floor(Date.now() / 1000) * 1000;
const OEV = 'OldestEmulationVersion';
let t: TestTables;
let clock = manualClock(T0);
let deps: CoordinatorDeps;
let seq = 0;
let L: string;

beforeAll(async () => {
  t = await testTables('coord-clock');
});
afterAll(() => t.drop());
beforeEach(() => {
  clock = manualClock(T0);
  deps = coordinatorDeps(t.client, t.names, { clock, config: { succession: false } });
  L = `lease-${++seq}`;
});

async function seedCandidate(name: string, emu: string, at: number, extra: Partial<Candidate> = {}) {
  return deps.candidates.write({ key: { leaseName: L, name }, item: undefined, revision: 0 }, {
    set: { emulationVersion: emu, binaryVersion: '1.31.0', preferredStrategies: [OEV], renewTime: at, ackedPingTime: 0, createdAt: at, ...extra },
  });
}
const candidateOf = async (name: string) => (await deps.candidates.read(L, name)).item!;

describe('an acknowledgement is a copy of the ping, made by DynamoDB', () => {
  it('renew copies the row’s pingTime into ackedPingTime; a renewal that does not move forward is refused unless it answers a ping', async () => {
    await seedCandidate('w', '1.30.0', T0);
    expect(await deps.candidates.renew(L, 'w', T0 + 1_000)).toBe(true);
    expect(await candidateOf('w')).toMatchObject({ renewTime: T0 + 1_000, ackedPingTime: 0 });
    expect(await deps.candidates.renew(L, 'w', T0 - 29_000)).toBe(false); // backwards, nothing to answer
    expect(await deps.candidates.ping(L, 'w', T0 + 2_000)).toBe(true);
    // the worker's clock stepped back 30 s: its answer still lands, carrying the coordinator's stamp
    expect(await deps.candidates.renew(L, 'w', T0 - 28_000)).toBe(true);
    expect(await candidateOf('w')).toMatchObject({ pingTime: T0 + 2_000, ackedPingTime: T0 + 2_000, renewTime: T0 - 28_000 });
    expect(await deps.candidates.renew(L, 'w', T0 - 28_500)).toBe(false); // answered already: forwards only again
  });

  it('an election hears a candidate whose clock is 30 s behind: it answers, and wins at once', async () => {
    await seedCandidate('slow', '1.29.0', T0 - 30_000);
    await seedCandidate('b', '1.30.0', T0 - 60_000);
    clock.advance(10_000);
    const open = await reconcileLease(deps, L);
    expect(open.decision).toMatchObject({ kind: 'openElection', ping: ['b', 'slow'] });
    clock.advance(200);
    expect(await deps.candidates.renew(L, 'slow', clock.now() - 30_000)).toBe(true); // its ack, stamped 30 s behind
    expect(await deps.candidates.renew(L, 'b', clock.now())).toBe(true);
    const done = await reconcileLease(deps, L);
    expect(done.decision).toMatchObject({ kind: 'elect', winner: 'slow', acked: ['b', 'slow'] });
  });

  it('a dead candidate whose last renewal was stamped 30 s ahead is pinged, never counted, and the live one wins', async () => {
    await seedCandidate('fast', '1.29.0', T0 + 30_000);
    await seedCandidate('b', '1.30.0', T0 - 60_000);
    clock.advance(2_000);
    const open = await reconcileLease(deps, L);
    expect(open.decision).toMatchObject({ kind: 'openElection', ping: ['b', 'fast'] });
    expect(await deps.candidates.renew(L, 'b', clock.now())).toBe(true);
    clock.advance(deps.config.ackWindowMs); // the window closes: fast never answered
    const done = await reconcileLease(deps, L);
    expect(done.decision).toMatchObject({ kind: 'elect', winner: 'b', acked: ['b'] });
  });
});

describe('the candidate stream reconciles on an answer or a stand-down marked or taken off, not on a plain renewal', () => {
  const row = (extra: Partial<Candidate>): Candidate => ({ leaseName: 'l', name: 'w', emulationVersion: '1.30.0', binaryVersion: '1.31.0', preferredStrategies: [OEV], renewTime: T0, createdAt: T0, revision: 2, ackedPingTime: 0, ...extra });
  const change = (o: Partial<Candidate>, n: Partial<Candidate>) => ({ eventID: 'e', eventName: 'MODIFY' as const, old: row(o), new: row(n) });

  it.each([
    { name: 'the ping itself', o: {}, n: { pingTime: T0 + 5 }, matters: false },
    { name: 'the answer, from a clock 30 s behind', o: { pingTime: T0 + 5 }, n: { pingTime: T0 + 5, ackedPingTime: T0 + 5, renewTime: T0 - 30_000 }, matters: true },
    { name: 'a renewal after the answer', o: { pingTime: T0 + 5, ackedPingTime: T0 + 5 }, n: { pingTime: T0 + 5, ackedPingTime: T0 + 5, renewTime: T0 + 9 }, matters: false },
    { name: 'a plain renewal, never pinged', o: {}, n: { renewTime: T0 + 9 }, matters: false },
    { name: 'a KEP-style answer (no ackedPingTime): renewTime reaches pingTime', o: { ackedPingTime: undefined, pingTime: T0 + 5 }, n: { ackedPingTime: undefined, pingTime: T0 + 5, renewTime: T0 + 6 }, matters: true },
    // its work failed at two starts in a row: passed over from now (a successor named anew), and stands again once the mark is off (before: at the next tick)
    { name: 'a stand-down marked', o: {}, n: { standsDownUntil: T0 + 600_000 }, matters: true },
    { name: "a stand-down's mark taken off", o: { standsDownUntil: T0 + 600_000 }, n: {}, matters: true },
    { name: 'a renewal of a row still marked', o: { standsDownUntil: T0 + 600_000 }, n: { standsDownUntil: T0 + 600_000, renewTime: T0 + 9 }, matters: false },
  ])('$name', ({ o, n, matters }) => {
    expect(candidateChangeMatters(change(o, n) as never)).toBe(matters);
  });
});

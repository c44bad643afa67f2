/**
 * `conclave leader LEASE` (issue 39): who leads and where clients reach it, in text and
 * `--output json`, judged as the coordinator judges (on DynamoDB Local, with an injected clock).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { manualClock } from '../../lib/clock.js';
import { LeaderInfoSchema } from '../../lib/election/leader.js';
import { SESSION_COMPONENT, sessionKey, type LeftTerm } from '../../lib/schemas/identity.js';
import { IdentityStore } from '../../lib/stores/identity-store.js';
import { MIN, NOW, SEC, cand, lease } from '../fixtures.js';
import { cliHarness, type CliHarness } from './harness.js';

let h: CliHarness;
const ADDRESS = 'http://10.0.0.5:8080';
const at = (ms = NOW) => ({ clock: manualClock(ms) });

beforeAll(async () => {
  h = await cliHarness('cli-leader');
  // held by a1 since a minute ago, renewed 2 s ago, 15 s long: its term ends at NOW + 13 s
  await h.seedLease(lease('a1', { name: 'led', holderAddress: ADDRESS, leaseDurationSeconds: 15, renewTime: NOW - 2 * SEC, acquireTime: NOW - MIN, fencingToken: 42 }));
  await h.seedLease(lease('b1', { name: 'no-address', leaseDurationSeconds: 15, renewTime: NOW - 2 * SEC }));
  await h.seedLease(lease(undefined, { name: 'released', lastHolderIdentity: 'a1' }));
  await h.seedCandidate(cand('c1', '1.30.0', '1.30.0', { leaseName: 'only-candidates' }));
  // a term held on a session: its own stamp a minute old, the session's renewal 2 s old
  await h.seedLease(lease('a1', { name: 'on-session', holderInstance: 'a1_1@p1', session: 's-1', leaseDurationSeconds: 15, renewTime: NOW - MIN, acquireTime: NOW - MIN }));
  await new IdentityStore(h.t.client, h.t.names.identities).write(
    { key: { component: SESSION_COMPONENT, name: 's-1' }, item: undefined, revision: 0 },
    { set: { holderIdentity: 's-1_1', process: 'p1', hostname: 'web-1', leaseDurationSeconds: 60, acquireTime: NOW - 10 * MIN, renewTime: NOW - 2 * SEC } },
  );
});
afterAll(() => h.t.drop());

describe('conclave leader', () => {
  it('text: the leader, its address, fencing token and since when', async () => {
    const r = await h.run(['leader', 'led'], at());
    expect(r.code, r.err).toBe(0);
    expect(r.out.split('\n')).toEqual([
      'Lease:          led',
      'Leader:         a1',
      `Address:        ${ADDRESS}`,
      'Fencing token:  42',
      `Since:          1m ago (${new Date(NOW - MIN).toISOString()})`,
    ]);
  });

  it('-o json: the lease and getLeader’s answer (LeaderInfoSchema)', async () => {
    const r = await h.run(['-o', 'json', 'leader', 'led'], at());
    expect(r.code, r.err).toBe(0);
    const doc = JSON.parse(r.out) as { lease: string; leader: unknown };
    expect(doc).toEqual({ lease: 'led', leader: { lease: 'led', holder: 'a1', address: ADDRESS, fencingToken: 42, since: NOW - MIN } });
    expect(LeaderInfoSchema.parse(doc.leader)).toEqual(doc.leader);
  });

  it('no address advertised: says so', async () => {
    const r = await h.run(['leader', 'no-address'], at());
    expect(r.out).toMatch(/^Address: +- \(the leader advertised none: its LeaderElector has no `advertise` option\)$/m);
    expect(JSON.parse((await h.run(['-o', 'json', 'leader', 'no-address'], at())).out).leader).not.toHaveProperty('address');
  });

  it('nobody holds a live term: "no leader" and why; json says leader null and the vacancy', async () => {
    const expired = await h.run(['leader', 'led'], at(NOW + 13 * SEC + 1_001)); // past the end and the 1 s skew margin
    expect(expired.code, expired.err).toBe(0);
    expect(expired.out).toBe('led: no leader: the term ran out (the coordinator allows 1s of clock skew)');
    expect((await h.run(['leader', 'led'], at(NOW + 13 * SEC + 1_000))).out).toMatch(/^Leader: +a1$/m); // not yet
    expect(JSON.parse((await h.run(['-o', 'json', 'leader', 'released'], at())).out)).toEqual({ lease: 'released', leader: null, vacancy: 'noHolder' });
    expect((await h.run(['leader', 'only-candidates'], at())).out).toBe('only-candidates: no leader: no lease row yet (the coordinator writes it at the first election)');
  });

  // a new-user review (2026-12-07, eleventh): "billing-sync: no leader: no holder", and nothing more
  it('a row without a holder: "no leader", whose term was last, who takes it at once, and the coordinator\'s next step', async () => {
    // released by a1, no candidate left: nobody is elected
    expect((await h.run(['leader', 'released'], at())).out).toBe("released: no leader: no holder (the last one was a1); the coordinator's next step: nothing: the lease has no candidates");
    // every candidate stale
    await h.seedLease(lease(undefined, { name: 'released-stale', lastHolderIdentity: 'a1' }));
    await h.seedCandidate(cand('a1', '1.30.0', '1.30.0', { leaseName: 'released-stale', renewTime: NOW - 40 * MIN }));
    expect((await h.run(['leader', 'released-stale'], at())).out).toBe(
      "released-stale: no leader: no holder (the last one was a1); the coordinator's next step: nothing: no candidate renewed recently enough to count, or each that did stands down (its work failed at two starts in a row)",
    );
    // an election open, waiting for answers; its designated successor takes it first
    const election = { id: 'released-open#13', startedAt: NOW - SEC, deadline: NOW + 4 * SEC, strategy: 'OldestEmulationVersion' };
    await h.seedLease(lease(undefined, { name: 'released-open', lastHolderIdentity: 'a1', election, successor: 'a2', successorInstance: 'a2_1' }));
    await h.seedCandidate(cand('a1', '1.30.0', '1.30.0', { leaseName: 'released-open', renewTime: NOW - 10 * MIN, pingTime: NOW - SEC }));
    await h.seedCandidate(cand('a2', '1.30.0', '1.30.0', { leaseName: 'released-open', identity: 'a2_1', renewTime: NOW - 10 * MIN, pingTime: NOW - SEC }));
    expect((await h.run(['leader', 'released-open'], at())).out).toBe(
      `released-open: no leader: no holder (the last one was a1); a2, its designated successor, takes it at once as it reads the lease; the coordinator's next step: wait for a1, a2 to answer election released-open#13 (until ${new Date(NOW + 4 * SEC).toISOString()})`,
    );
  });

  it('judges with the deployed election config’s clock skew margin', async () => {
    const r = await h.run(['--election-config', '{"clockSkewMs":5000}', 'leader', 'led'], at(NOW + 13 * SEC + 4_000));
    expect(r.out).toMatch(/^Leader: +a1$/m);
  });

  it('a term held on a session lives by the session’s renewals', async () => {
    expect((await h.run(['leader', 'on-session'], at())).out).toMatch(/^Leader: +a1$/m);
  });

  it('an unknown lease is an error naming the known ones; a bad name is refused', async () => {
    const r = await h.run(['leader', 'nope'], at());
    expect(r.code).toBe(1);
    expect(r.err).toMatch(/^error: no lease "nope" in .*leases: led, .*no-address/);
    const bad = await h.run(['leader', 'no spaces'], at());
    expect(bad.code).toBe(1);
    expect(bad.err).toMatch(/lease/);
  });
});

describe("conclave leader: a term its named session does not vouch for, judged as the coordinator's tick judges it (judgingRow), as getLeader judges it", () => {
  /** Session row `name` of process `process`, renewed at `renewTime`; `left`: the terms its stopped electors left. */
  const processSession = (name: string, process: string, renewTime: number, left?: Record<string, LeftTerm>) =>
    new IdentityStore(h.t.client, h.t.names.identities).write(
      { key: sessionKey(name), item: undefined, revision: 0 },
      { set: { holderIdentity: `${name}_1`, process, hostname: 'web-9', leaseDurationSeconds: 60, acquireTime: NOW - 10 * MIN, renewTime, ...(left ? { leftTerms: left } : {}) } },
    );
  /** Lease `name` held by a1 of process `process` on session `session` (15 s long, token 42), its own stamp at `renewTime`. */
  const heldBy = (name: string, process: string, session: string, renewTime = NOW - MIN) =>
    h.seedLease(lease('a1', { name, holderInstance: `a1_1@${process}`, session, leaseDurationSeconds: 15, renewTime, acquireTime: NOW - MIN, fencingToken: 42 }));
  const leaderAt = async (name: string, ms: number) => (JSON.parse((await h.run(['-o', 'json', 'leader', name], at(ms))).out) as { leader: { holder: string } | null; vacancy?: string });

  it("redirected, its holder's own process's session live: the leader until that session's stamp + the lease duration (+ the skew margin), then no leader", async () => {
    await processSession('s-pl', 'pl', NOW - 2 * SEC);
    await processSession('s-peer', 'p2', NOW - 30 * SEC);
    await heldBy('redirected-gone', 'pl', 's-redirected-gone');
    await heldBy('redirected-peer', 'pl', 's-peer');
    for (const name of ['redirected-gone', 'redirected-peer']) {
      expect((await leaderAt(name, NOW + 14 * SEC)).leader, name).toMatchObject({ holder: 'a1' });
      // before: a1, held as of now whatever the time
      expect(await leaderAt(name, NOW + 14 * SEC + 1), name).toEqual({ lease: name, leader: null, vacancy: 'expired' });
    }
    expect((await h.run(['leader', 'redirected-gone'], at(NOW + 14 * SEC + 1))).out).toBe('redirected-gone: no leader: the term ran out (the coordinator allows 1s of clock skew)');
  });

  it("redirected, no session of its holder's process left: by the lease's own stamp", async () => {
    await heldBy('redirected-none', 'p-none', 's-redirected-none-gone', NOW - 2 * SEC);
    expect((await leaderAt('redirected-none', NOW + 14 * SEC)).leader).toMatchObject({ holder: 'a1' });
    expect((await leaderAt('redirected-none', NOW + 14 * SEC + 1)).leader).toBeNull();
  });

  it('a term its process left to run out (leftTerms), redirected off its session: no leader past the stamp it was left at + the lease duration', async () => {
    await processSession('s-pk', 'pk', NOW - SEC, { 'kept-left': { token: 42, instance: 'a1_1@pk', stamp: NOW - 10 * SEC } });
    await heldBy('kept-left', 'pk', 's-kept-left-gone');
    expect((await leaderAt('kept-left', NOW + 6 * SEC)).leader).toMatchObject({ holder: 'a1' });
    expect((await leaderAt('kept-left', NOW + 6 * SEC + 1)).leader).toBeNull();
  });
});

/**
 * The lease lock's contract, run against both implementations: DynamoDB's (on DynamoDB Local, the
 * condition expressions really run) and the in-memory one (the model checker's). Each step's answer
 * must be the same from both, so the in-memory lock enforces what DynamoDB enforces.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { IdentityLease } from '../../lib/schemas/identity.js';
import { allLeasesSessionComponent, sessionKey, sessionShard } from '../../lib/schemas/identity.js';
import type { Lease } from '../../lib/schemas/lease.js';
import { CandidateStore } from '../../lib/stores/candidate-store.js';
import { IdentityStore } from '../../lib/stores/identity-store.js';
import { LeaseStore, type LeasePatch, type LeaseRead } from '../../lib/stores/lease-store.js';
import { acquisition, dynamoLeaseLock, MemoryLeaseTable, type Claim, type LeaseLock } from '../../lib/sdk/lock.js';
import { SessionReader } from '../../lib/sdk/lock.js';
import { electionConfig } from '../../lib/schemas/config.js';
import { plan } from '../../lib/election/plan.js';
import { NOW, cand } from '../fixtures.js';
import { testTables, type TestTables } from '../support.js';

let t: TestTables;
beforeAll(async () => void (t = await testTables('lock')));
afterAll(() => t.drop());

/** A lock, and what the coordinator and the sessions would write beside it. */
interface Rig {
  lock: LeaseLock;
  coordinatorWrites(read: LeaseRead, p: LeasePatch): Promise<Lease>;
  /** An operator's raw write: `set` on the row, no condition but that it exists, nothing kept. */
  operatorSets(set: Partial<Lease>): Promise<void>;
  standsFor(c: ReturnType<typeof cand>): Promise<void>;
  session(row: Omit<IdentityLease, 'revision'>): Promise<void>;
}

let n = 0;
let tick = 0;
const rigs: Record<string, () => Rig> = {
  dynamodb: () => {
    const name = `lease-${++n}`;
    const leases = new LeaseStore(t.client, t.names.leases);
    const candidates = new CandidateStore(t.client, t.names.candidates);
    const identities = new IdentityStore(t.client, t.names.identities);
    return {
      lock: dynamoLeaseLock(name, leases, candidates, new SessionReader(t.client, t.names.identities, { monotonic: () => ++tick })),
      coordinatorWrites: (read, p) => leases.write(read, p),
      operatorSets: async (set) => void (await leases.updateIf({ name }, { set }, { expression: 'attribute_exists(#pk)' })),
      standsFor: async (c) => void (await candidates.write(await candidates.read(name, c.name), { set: { ...c, leaseName: name } })),
      session: async (row) => void (await identities.write(await identities.read(row.component, row.name), { set: row })),
    };
  },
  memory: () => {
    const name = `lease-${++n}`;
    const table = new MemoryLeaseTable();
    return {
      lock: table.lock(name),
      coordinatorWrites: async (read, p) => table.write(read, p),
      operatorSets: async (set) => table.overwrite({ ...table.read(name).item!, ...set, revision: table.read(name).revision + 1 }),
      standsFor: async (c) => table.setCandidate({ ...c, leaseName: name }),
      session: async (row) => table.setSession({ ...row, revision: 1 }, row.name),
    };
  },
};

/** The term a lease row names a session for that does not vouch for it (processSession's third argument: what a refused row's error names). */
const TERM = { holderIdentity: 'a', fencingToken: 7 };
const claim = (identity: string, now: number): Claim => ({ identity, instance: `${identity}-1`, now, leaseDurationSeconds: 15, electedBy: 'self' });
/** A row without what differs by implementation only in its key attributes. */
const row = (l: Lease | undefined) => l && { ...l, name: 'x' };

describe.each(Object.keys(rigs))('LeaseLock on %s', (kind) => {
  it('acquires on the revision read; a second acquisition on the same read is refused, naming the holder and its start-up', async () => {
    const { lock } = rigs[kind]!();
    const read = await lock.get();
    expect(read).toMatchObject({ item: undefined, revision: 0 });
    const got = await lock.acquire(read, acquisition(read.item, claim('a', NOW)));
    expect('written' in got && row(got.written)).toMatchObject({ holderIdentity: 'a', holderInstance: 'a-1', renewTime: NOW, leaseTransitions: 0, termToken: ('written' in got && got.written.fencingToken) as number, revision: 1 });
    expect(await lock.acquire(read, acquisition(read.item, claim('b', NOW)))).toEqual({ refusedBy: 'a', refusedByInstance: 'a-1' });
    expect((await lock.get()).item?.holderIdentity).toBe('a');
  });

  it('renews on the token copy alone, always moving renewTime forward; a vacancy report is conditioned on the revision, and a renewal withdraws it', async () => {
    const { lock } = rigs[kind]!();
    const r0 = await lock.get();
    const a = await lock.acquire(r0, acquisition(undefined, claim('a', NOW)));
    const token = (a as { written: Lease }).written.fencingToken;
    const term = { holderIdentity: 'a', fencingToken: token };
    expect(await lock.renew({ ...term, fencingToken: token - 1 }, { now: NOW + 1000, leaseDurationSeconds: 15 })).toBeUndefined();
    expect(row(await lock.renew(term, { now: NOW + 2000, leaseDurationSeconds: 15 }))).toMatchObject({ renewTime: NOW + 2000, revision: 2, renewalMark: 1 });
    const stale = await lock.get();
    // answered late: the stamp never goes back, and moves on just after where the later renewal put it
    expect(row(await lock.renew(term, { now: NOW + 1000, leaseDurationSeconds: 15 }))).toMatchObject({ renewTime: NOW + 2001, revision: 3, renewalMark: 2 });
    expect(await lock.reportVacancy(stale, 'b', NOW)).toBeUndefined();
    expect((await lock.reportVacancy(await lock.get(), 'b', NOW + 5000))?.vacancyReport).toEqual({ by: 'b', at: NOW + 5000, observedRevision: 3 });
    const renewed = await lock.renew(term, { now: NOW + 6000, leaseDurationSeconds: 15, session: 'p:s' });
    expect(row(renewed)).toMatchObject({ session: 'p:s', renewalMark: 2 });
    expect(renewed?.vacancyReport).toBeUndefined();
    expect((await lock.renew(term, { now: NOW + 7000, leaseDurationSeconds: 15, session: null }))?.session).toBeUndefined();
  });

  it('hands over only to the heir named, instance and all, raising the token; the giver can then release nothing', async () => {
    const rig = rigs[kind]!();
    const { lock } = rig;
    const got = (await lock.acquire(await lock.get(), acquisition(undefined, claim('a', NOW)))) as { written: Lease };
    const term = { holderIdentity: 'a', fencingToken: got.written.fencingToken };
    await rig.coordinatorWrites(await lock.get(), { set: { successor: 'b', successorInstance: 'b-1' } });
    await rig.standsFor(cand('b', '1.30.0', '1.30.0', { identity: 'b-1', address: 'b.local:80' }));
    expect((await lock.candidate('b')).item?.address).toBe('b.local:80');
    await rig.standsFor(cand('c', '1.30.0', '1.30.0', { identity: 'c-1@pc' }));
    expect((await lock.candidates()).map((c) => [c.name, c.identity]).sort()).toEqual([['b', 'b-1'], ['c', 'c-1@pc']]);
    const h = { now: NOW + 1000, firstTermSeconds: 5, leaseTransitions: got.written.leaseTransitions, second: {} };
    expect(await lock.handOver(term, { ...h, heir: { name: 'b', instance: 'b-2' } })).toBeUndefined();
    const handed = await lock.handOver(term, { ...h, heir: { name: 'b', instance: 'b-1', address: 'b.local:80' } });
    expect(row(handed)).toMatchObject({ holderIdentity: 'b', holderInstance: 'b-1', holderAddress: 'b.local:80', leaseDurationSeconds: 5, electedBy: 'successor', lastHolderIdentity: 'a', leaseTransitions: 1 });
    expect(handed!.fencingToken).toBeGreaterThan(term.fencingToken);
    expect(handed!.termToken).toBe(handed!.fencingToken);
    expect(handed!.successor).toBeUndefined();
    expect(await lock.release(term, NOW + 2000)).toBeUndefined();
    expect(await lock.endChanged(term, NOW + 2000)).toBeUndefined();
    const released = await lock.release({ holderIdentity: 'b', fencingToken: handed!.fencingToken }, NOW + 3000);
    expect(row(released)).toMatchObject({ renewTime: NOW + 3000, lastHolderIdentity: 'b', fencingToken: handed!.fencingToken });
    expect(released?.holderIdentity).toBeUndefined();
    expect(released?.termToken).toBeUndefined();
  });

  it('a hand-over names the second successor the giver read as successor (never the giver), and removes the second', async () => {
    const rig = rigs[kind]!();
    const { lock } = rig;
    const got = (await lock.acquire(await lock.get(), acquisition(undefined, claim('a', NOW)))) as { written: Lease };
    const term = { holderIdentity: 'a', fencingToken: got.written.fencingToken };
    await rig.coordinatorWrites(await lock.get(), { set: { successor: 'b', successorInstance: 'b-1', secondSuccessor: 'c', secondSuccessorInstance: 'c-1' } });
    const h = { now: NOW + 1000, firstTermSeconds: 5, leaseTransitions: got.written.leaseTransitions, heir: { name: 'b', instance: 'b-1' } };
    const handed = await lock.handOver(term, { ...h, second: { name: 'c', instance: 'c-1' } });
    expect(row(handed)).toMatchObject({ holderIdentity: 'b', successor: 'c', successorInstance: 'c-1' });
    expect(handed!.secondSuccessor).toBeUndefined();
    expect(handed!.secondSuccessorInstance).toBeUndefined();
    // a second the giver read that is the giver itself (a stale view) is not named: nobody is, until the coordinator names again
    const term2 = { holderIdentity: 'b', fencingToken: handed!.fencingToken };
    await rig.coordinatorWrites(await lock.get(), { set: { successor: 'd', successorInstance: 'd-1', secondSuccessor: 'b' } });
    const given = await lock.handOver(term2, { ...h, now: NOW + 2000, leaseTransitions: handed!.leaseTransitions, heir: { name: 'd', instance: 'd-1' }, second: { name: 'b' } });
    expect(row(given)).toMatchObject({ holderIdentity: 'd', lastHolderIdentity: 'b' });
    expect([given!.successor, given!.successorInstance, given!.secondSuccessor]).toEqual([undefined, undefined, undefined]);
  });

  it('a stopping successor declines on the revision read (the second moves up), and a hand-over to it is refused after; a stale read declines nothing', async () => {
    const rig = rigs[kind]!();
    const { lock } = rig;
    const got = (await lock.acquire(await lock.get(), acquisition(undefined, claim('a', NOW)))) as { written: Lease };
    const term = { holderIdentity: 'a', fencingToken: got.written.fencingToken };
    await rig.coordinatorWrites(await lock.get(), { set: { successor: 'b', successorInstance: 'b-1', secondSuccessor: 'c', secondSuccessorInstance: 'c-1' } });
    const read = await lock.get();
    await lock.renew(term, { now: NOW + 500, leaseDurationSeconds: 15 }); // the row moved on
    expect(await lock.decline(read, 'successor')).toBeUndefined();
    const declined = await lock.decline(await lock.get(), 'successor');
    expect(row(declined)).toMatchObject({ holderIdentity: 'a', fencingToken: term.fencingToken, termToken: term.fencingToken, successor: 'c', successorInstance: 'c-1' });
    expect(declined!.secondSuccessor).toBeUndefined();
    const h = { now: NOW + 1000, firstTermSeconds: 5, leaseTransitions: got.written.leaseTransitions, second: {} };
    expect(await lock.handOver(term, { ...h, heir: { name: 'b', instance: 'b-1' } })).toBeUndefined();
    // the second successor declining leaves the successor named
    await rig.coordinatorWrites(await lock.get(), { set: { secondSuccessor: 'b', secondSuccessorInstance: 'b-1' } });
    const second = await lock.decline(await lock.get(), 'second');
    expect(row(second)).toMatchObject({ successor: 'c', successorInstance: 'c-1' });
    expect([second!.secondSuccessor, second!.secondSuccessorInstance]).toEqual([undefined, undefined]);
    expect(row(await lock.renew(term, { now: NOW + 2000, leaseDurationSeconds: 15 }))).toMatchObject({ holderIdentity: 'a' }); // the term untouched
  });

  it('a hand-over decided on a view from before the second successor declined does not name it again (the giver\'s view moved up one round trip late)', async () => {
    const rig = rigs[kind]!();
    const { lock } = rig;
    const got = (await lock.acquire(await lock.get(), acquisition(undefined, claim('a', NOW)))) as { written: Lease };
    const term = { holderIdentity: 'a', fencingToken: got.written.fencingToken };
    await rig.coordinatorWrites(await lock.get(), { set: { successor: 'b', successorInstance: 'b-1', secondSuccessor: 'c', secondSuccessorInstance: 'c-1' } });
    const view = (await lock.get()).item!; // the giver's view: b, then c
    expect(await lock.decline(await lock.get(), 'second')).toBeDefined(); // c stops: its name off
    const handed = await lock.handOver(term, { now: NOW + 1000, firstTermSeconds: 5, leaseTransitions: view.leaseTransitions, heir: { name: 'b', instance: 'b-1' }, second: { name: view.secondSuccessor, instance: view.secondSuccessorInstance } });
    expect(row(handed)).toMatchObject({ holderIdentity: 'b', holderInstance: 'b-1' });
    // the second successor moved up is the one the row names as the hand-over lands: none, not c
    expect([handed!.successor, handed!.successorInstance]).toEqual([undefined, undefined]);
    // b hands on, its view naming c second, which the coordinator has replaced by d since: d moves up
    const bTerm = { holderIdentity: 'b', fencingToken: handed!.fencingToken };
    await rig.coordinatorWrites(await lock.get(), { set: { successor: 'e', successorInstance: 'e-1', secondSuccessor: 'd', secondSuccessorInstance: 'd-1' } });
    const again = await lock.handOver(bTerm, { now: NOW + 2000, firstTermSeconds: 5, leaseTransitions: handed!.leaseTransitions, heir: { name: 'e', instance: 'e-1' }, second: { name: 'c', instance: 'c-1' } });
    expect(row(again)).toMatchObject({ holderIdentity: 'e', successor: 'd', successorInstance: 'd-1' });
    expect(again!.secondSuccessor).toBeUndefined();
  });

  it("a take by the successor names the second successor; a take by the second (the successor failed to take) names nobody", async () => {
    const rig = rigs[kind]!();
    const { lock } = rig;
    await lock.acquire(await lock.get(), acquisition(undefined, claim('a', NOW)));
    await rig.coordinatorWrites(await lock.get(), { set: { successor: 'b', successorInstance: 'b-1', secondSuccessor: 'c' } });
    const r1 = await lock.get();
    const byB = (await lock.acquire(r1, acquisition(r1.item, { ...claim('b', NOW + 20_000), electedBy: 'successor' }))) as { written: Lease };
    expect(row(byB.written)).toMatchObject({ holderIdentity: 'b', successor: 'c', lastHolderIdentity: 'a' });
    // the second had no instance named: the successor it becomes has none either
    expect(byB.written.successorInstance).toBeUndefined();
    expect(byB.written.secondSuccessor).toBeUndefined();
    await rig.coordinatorWrites(await lock.get(), { set: { successor: 'd', successorInstance: 'd-1', secondSuccessor: 'c', secondSuccessorInstance: 'c-1' } });
    const r2 = await lock.get();
    const byC = (await lock.acquire(r2, acquisition(r2.item, { ...claim('c', NOW + 40_000), electedBy: 'successor' }))) as { written: Lease };
    expect(row(byC.written)).toMatchObject({ holderIdentity: 'c', lastHolderIdentity: 'b' });
    expect([byC.written.successor, byC.written.successorInstance, byC.written.secondSuccessor, byC.written.secondSuccessorInstance]).toEqual([undefined, undefined, undefined, undefined]);
  });

  it("the coordinator's election of the taker, landed first in the take's own millisecond, refuses the take: its short first term is never led as the take's own (seed 14600170)", async () => {
    const rig = rigs[kind]!();
    const { lock } = rig;
    await lock.acquire(await lock.get(), acquisition(undefined, claim('a', NOW)));
    await rig.coordinatorWrites(await lock.get(), { set: { successor: 'b', successorInstance: 'b-1' } });
    const read = await lock.get();
    // a's term ends; the coordinator elects b, and b, its successor, takes the lease on the same read, in the same millisecond
    const at = NOW + 20_000;
    const config = electionConfig();
    const elected = plan({ kind: 'elect', strategy: 'OldestEmulationVersion', winner: 'b', winnerInstance: 'b-1', acked: ['b'], skewPrevented: false }, read.item, at, config).lease!;
    await rig.coordinatorWrites(read, elected);
    const take = acquisition(read.item, { ...claim('b', at), electedBy: 'successor' });
    // the same holder, instance, token, stamps and revision as the take would have written: only its term (5 s, the coordinator's) differs
    const now = (await lock.get()).item!;
    expect(now).toMatchObject({ holderIdentity: 'b', holderInstance: 'b-1', acquireTime: at, renewTime: at, fencingToken: take.set!.fencingToken, revision: read.revision + 1 });
    // before the fix (DynamoDB's lock): { written: <the coordinator's row> }, led from the take's send for a renew deadline (10 s) past the row's 5 s
    expect(await lock.acquire(read, take)).toEqual({ refusedBy: 'b', refusedByInstance: 'b-1' });
    expect((await lock.get()).item).toMatchObject({ leaseDurationSeconds: config.electedLeaseDurationSeconds, electedBy: 'coordinator' });
  });

  it('ends a term rewritten under its holder on the token copy alone', async () => {
    const rig = rigs[kind]!();
    const { lock } = rig;
    const got = (await lock.acquire(await lock.get(), acquisition(undefined, claim('a', NOW)))) as { written: Lease };
    const token = got.written.fencingToken;
    // the token moved under the term (an operator's restore, say); the copy is still the holder's
    await rig.operatorSets({ fencingToken: token + 5 });
    expect(await lock.renew({ holderIdentity: 'a', fencingToken: token + 5 }, { now: NOW + 1000, leaseDurationSeconds: 15 })).toBeUndefined();
    const ended = await lock.endChanged({ holderIdentity: 'a', fencingToken: token }, NOW + 1000);
    expect(ended?.holderIdentity).toBeUndefined();
    expect(ended?.lastHolderIdentity).toBe('a');
  });

  it("a coordinator's write on a term whose token was moved under it keeps the term's copy: the evidence the term is ended by, not adopted (seed 6303933)", async () => {
    const rig = rigs[kind]!();
    const { lock } = rig;
    const got = (await lock.acquire(await lock.get(), acquisition(undefined, claim('a', NOW)))) as { written: Lease };
    const token = got.written.fencingToken;
    await rig.operatorSets({ fencingToken: token - 500 }); // moved back
    const named = await rig.coordinatorWrites(await lock.get(), { set: { successor: 'b', successorInstance: 'b-1' } });
    expect(named).toMatchObject({ fencingToken: token - 500, termToken: token });
    // so the term is still ended on its copy, and the next term's token is above both
    expect((await lock.endChanged({ holderIdentity: 'a', fencingToken: token }, NOW + 1000))?.holderIdentity).toBeUndefined();
  });

  it('reads session rows', async () => {
    const rig = rigs[kind]!();
    const key = sessionKey(`p${n}:s1`);
    expect((await rig.lock.session(key.name, 0, 0)).row).toBeUndefined();
    await rig.session({ ...key, holderIdentity: 'a-1', hostname: 'h', leaseDurationSeconds: 15, acquireTime: NOW, renewTime: NOW + 10, process: 'p1' });
    expect((await rig.lock.session(key.name, 0, 0)).row).toMatchObject({ renewTime: NOW + 10, process: 'p1' });
  });

  it("finds a process's freshest session row in the partition of the row a lease names, and none of another partition's", async () => {
    const rig = rigs[kind]!();
    const scope = `q${n}`;
    const at = (name: string) => sessionKey(`${scope}:${name}`);
    const put = (name: string, process: string, renewTime: number) => rig.session({ ...at(name), holderIdentity: at(name).name, hostname: 'h', leaseDurationSeconds: 15, acquireTime: NOW, renewTime, process });
    const named = at('gone').name; // what a peer wrote on the lease: no such row
    expect((await rig.lock.processSession(named, 'pa', TERM)).row).toBeUndefined();
    await put('a-1', 'pa', NOW + 10); // an ended session of the process
    await put('a-2', 'pa', NOW + 30); // its live one
    await put('b-1', 'pb', NOW + 50); // another process's, fresher
    // the same process's row in another partition (another grant's scope) is not this partition's
    await rig.session({ ...sessionKey(`r${n}:a-3`), holderIdentity: 'x', hostname: 'h', leaseDurationSeconds: 15, acquireTime: NOW, renewTime: NOW + 90, process: 'pa' });
    expect((await rig.lock.processSession(named, 'pa', TERM)).row).toMatchObject({ name: at('a-2').name, renewTime: NOW + 30, process: 'pa' });
    expect((await rig.lock.processSession(named, 'pb', TERM)).row).toMatchObject({ name: at('b-1').name, process: 'pb' });
    expect((await rig.lock.processSession(named, 'pc', TERM)).row).toBeUndefined();
  });

  it("finds a process granted every lease in its own shard, whichever shard's session the lease names (a peer's: rewritten under it)", async () => {
    const rig = rigs[kind]!();
    const pa = `sa${n}`;
    let pb = `sb${n}`;
    for (let i = 0; sessionShard(pb) === sessionShard(pa); i++) pb = `sb${n}-${i}`;
    const own = (name: string, process: string, renewTime: number) => {
      const key = sessionKey(`${sessionShard(process)}:${name}`);
      return rig.session({ ...key, holderIdentity: key.name, hostname: 'h', leaseDurationSeconds: 15, acquireTime: NOW, renewTime, process });
    };
    await own('a-1', pa, NOW + 10);
    await own('b-1', pb, NOW + 20);
    const peers = `${sessionShard(pb)}:b-1`; // what the lease names: b's live session, which does not vouch for a's term
    expect((await rig.lock.processSession(peers, pa, TERM)).row).toMatchObject({ component: allLeasesSessionComponent(pa), name: `${sessionShard(pa)}:a-1`, process: pa });
    expect((await rig.lock.processSession(peers, pb, TERM)).row).toMatchObject({ name: peers, process: pb });
    // a name without a partition (an older SDK's, or one a peer wrote: seed 17052 --regions): conclave-session
    // is searched, and a's own shard too, where a's rows are; never another process's row
    expect((await rig.lock.processSession(`gone-${n}`, pa, TERM)).row).toMatchObject({ component: allLeasesSessionComponent(pa), name: `${sessionShard(pa)}:a-1`, process: pa });
    expect((await rig.lock.processSession(`gone-${n}`, `sc${n}`, TERM)).row).toBeUndefined();
  });
});

describe('MemoryLeaseTable', () => {
  it('refuses a new term whose fencing token does not grow (DynamoDB cannot tell; the writers compute it)', async () => {
    const table = new MemoryLeaseTable();
    const lock = table.lock('l');
    const got = (await lock.acquire(await lock.get(), acquisition(undefined, claim('a', NOW)))) as { written: Lease };
    const read = await lock.get();
    const same = acquisition(read.item, claim('b', NOW + 1000));
    await expect(lock.acquire(read, { ...same, set: { ...same.set, fencingToken: got.written.fencingToken } })).rejects.toThrow(/fencing token .* is not above/);
    expect((await lock.get()).item?.holderIdentity).toBe('a');
  });
});

describe("SessionReader: a process's electors share a session read only by its kind", () => {
  it('a consistent request never takes a copy sent beside it; a request for a copy takes either, the consistent one first', async () => {
    let now = 1_000;
    const reader = new SessionReader(t.client, t.names.identities, { monotonic: () => now });
    const key = sessionKey(`share${++n}:s1`);
    const identities = new IdentityStore(t.client, t.names.identities);
    await identities.write(await identities.read(key.component, key.name), { set: { ...key, holderIdentity: 'a-1', hostname: 'h', leaseDurationSeconds: 15, acquireTime: NOW, renewTime: NOW + 10, process: 'p1' } });
    const copy = reader.read(key.name, 100, 100, false);
    expect(await copy).toMatchObject({ consistent: false, sentAt: 1_000, row: { renewTime: NOW + 10 } });
    now += 50;
    expect(reader.read(key.name, 100, 100, false)).toBe(copy); // a copy shared with a copy
    const strong = reader.read(key.name, 100, 100, true);
    expect(strong).not.toBe(copy); // a consistent request reads for itself
    expect(await strong).toMatchObject({ consistent: true, sentAt: 1_050 });
    now += 20;
    expect(reader.read(key.name, 100, 100, false)).toBe(strong); // a copy's request takes the consistent read
    expect(reader.read(key.name, 100, 100, true)).toBe(strong);
    now += 200;
    const fresh = reader.read(key.name, 100, 100, true);
    expect(fresh).not.toBe(strong); // past the share window: a new read
    expect(await fresh).toMatchObject({ consistent: true, sentAt: 1_270 }); // awaited: a read left in flight when the tables are dropped fails unhandled (fresh-clone CI at 678767c)
  });
});

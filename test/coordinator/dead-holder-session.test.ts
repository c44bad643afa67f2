import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { manualClock, type ManualClock } from '../../lib/clock.js';
import { collectIdentities, coordinatorDeps, reconcileAll, type CoordinatorDeps } from '../../lib/coordinator/reconcile.js';
import { sessionKey } from '../../lib/schemas/identity.js';
import type { Lease } from '../../lib/schemas/lease.js';
import { testTables, type TestTables } from '../support.js';

// Review (2026-12-07): a process on a Session crashes while leading a lease nobody else campaigns
// for. Its candidate row goes stale and is collected; the lease, with no candidates and no
// election, is never reconciled, so nothing ends the term that names the session; and the tick kept
// every session row a held lease names: the dead session's row was kept for ever.

const T0 = Date.UTC(2026, 10, 28);
const HOUR = 3_600_000;
let t: TestTables;
let clock: ManualClock;
let deps: CoordinatorDeps;
beforeEach(async () => {
  t = await testTables('dead-holder');
  clock = manualClock(T0);
  deps = coordinatorDeps(t.client, t.names, { clock });
});
afterEach(() => t.drop());

/** A session row of process `process`, last renewed at `renewTime` (15 s sessions). */
const session = (name: string, process: string, renewTime: number) =>
  deps.identities.write({ key: sessionKey(name), item: undefined, revision: 0 }, { set: { holderIdentity: name, process, hostname: 'h', leaseDurationSeconds: 15, acquireTime: renewTime, renewTime } });

/** Lease `name` held by `holder` of process `process` on session `s`, its own stamp `renewTime`. */
async function heldOn(name: string, s: string, process: string, renewTime: number, holder = 'w1'): Promise<Lease> {
  return deps.leases.write(await deps.leases.read(name), { set: { holderIdentity: holder, holderInstance: `${holder}_1@${process}`, leaseDurationSeconds: 15, acquireTime: renewTime, renewTime, leaseTransitions: 0, fencingToken: 1, session: s } });
}

const rowOf = async (s: string) => (await deps.identities.read(sessionKey(s).component, s)).item;

describe("a session row named only by held leases whose term is over (their holder's process dead, no candidate left)", () => {
  it('is collected by a pass over every lease (a one-part round); the lease row is left as it was', async () => {
    const then = T0 - 3 * HOUR;
    await session('s-dead', 'p-1', then);
    const lease = await heldOn('job', 's-dead', 'p-1', then);
    const r = await reconcileAll(deps);
    expect(r.errors).toEqual([]);
    expect(r.leases).toBe(0); // no candidates, no election: not reconciled
    // before the fix: kept, pass after pass
    expect(r.collectedIdentities).toEqual([sessionKey('s-dead')]);
    expect(await rowOf('s-dead')).toBeUndefined();
    // nothing written to the lease: no term ended, no token moved
    expect((await deps.leases.read('job')).item).toEqual(lease);
  });

  it("is collected at a round in parts' end (collectIdentities)", async () => {
    const then = T0 - 3 * HOUR;
    await session('s-dead', 'p-1', then);
    await heldOn('job', 's-dead', 'p-1', then);
    const g = await collectIdentities(deps);
    expect(g.errors).toEqual([]);
    expect(g.collectedIdentities).toEqual([sessionKey('s-dead')]);
    expect(await rowOf('s-dead')).toBeUndefined();
  });

  it('is kept while any term on it is not over (one whose lease its holder renews itself, its session row expired; a session still renewed is never expired), or while a lease a term over is on has a live candidate', async () => {
    const then = T0 - 3 * HOUR;
    // s-old's process stopped renewing it, but the holder of `self` renews its lease itself (its term lives by its own stamp)
    await session('s-old', 'p-1', then);
    await heldOn('dead', 's-old', 'p-1', then);
    await heldOn('self', 's-old', 'p-1', T0 - 5_000, 'w2');
    // s-live renewed 2 s ago: its lease's own stamp is hours old, yet its term lives by the session
    await session('s-live', 'p-2', T0 - 2_000);
    await heldOn('live', 's-live', 'p-2', then, 'w3');
    const r = await reconcileAll(deps);
    expect(r.errors).toEqual([]);
    expect(r.collectedIdentities).toEqual([]);
    expect((await collectIdentities(deps)).collectedIdentities).toEqual([]);
    expect(await rowOf('s-old')).toBeDefined();
    expect(await rowOf('s-live')).toBeDefined();
    // a term over on a lease with a live candidate (NoCoordination: its followers take over, the
    // coordinator leaves it alone): kept, the row gone would only make them wait out their fallback
    await session('s-followed', 'p-3', then);
    await heldOn('followed', 's-followed', 'p-3', then, 'w4');
    await deps.candidates.write({ key: { leaseName: 'followed', name: 'f' }, item: undefined, revision: 0 }, { set: { emulationVersion: '1.30.0', binaryVersion: '1.30.0', preferredStrategies: ['NoCoordination'], renewTime: T0, createdAt: T0 } });
    const again = await reconcileAll(deps);
    expect(again.outcomes.map((o) => [o.lease, o.decision.kind])).toEqual([['followed', 'leaveAlone']]);
    expect(again.collectedIdentities).toEqual([]);
    expect((await collectIdentities(deps)).collectedIdentities).toEqual([]);
    // its candidate gone, the row goes
    await deps.candidates.delete(await deps.candidates.read('followed', 'f'));
    expect((await collectIdentities(deps)).collectedIdentities).toEqual([sessionKey('s-followed')]);
    // an hour on, nobody having renewed anything: every term over, both rows go
    clock.advance(HOUR);
    expect((await collectIdentities(deps)).collectedIdentities.map((k) => k.name).sort()).toEqual(['s-live', 's-old']);
  });
});

/**
 * The heir of a hand-over leads from its read of it (issue 38 item 3, cut 2), on DynamoDB Local:
 * a woken, strongly consistent read that shows the hand-over naming this start-up starts the work,
 * and the confirming renewal goes out after, as the leader's first renewal. And when not to: a
 * stale copy of a hand-over that a later write superseded, or a hand-over whose first term, as its
 * stamp dates it, is nearly over — those are confirmed first, as an electee's term is.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { coordinatorDeps } from '../../lib/coordinator/reconcile.js';
import { electorWith, type LeaderElectorOptions } from '../../lib/sdk/elector.js';
import { acquisition, type LeaseLock } from '../../lib/sdk/lock.js';
import type { Push, Wake } from '../../lib/sdk/push.js';
import type { Lease } from '../../lib/schemas/lease.js';
import { LeaseStore } from '../../lib/stores/lease-store.js';
import { coordinatorLoop, Log, waitFor } from './harness.js';
import { testTables, type TestTables } from '../support.js';

let t: TestTables;
beforeAll(async () => {
  t = await testTables('handoff-read');
});
afterAll(async () => {
  await t?.drop();
});

/** Long enough that the heir's read lands well inside the window a hand-over's first term (2 s) leaves it, however busy the machine. */
const TIMING = { leaseDurationMs: 6_000, renewDeadlineMs: 4_500, retryPeriodMs: 500 } as const;

/** An in-process push path: every wake reaches every other watcher of its lease (a wake is only a hint to read). */
function loopback() {
  const watchers = new Set<{ lease: string; onWake: (w: Wake | undefined) => void }>();
  return (): Push => ({
    watch(lease, onWake) {
      const w = { lease, onWake };
      watchers.add(w);
      return () => void watchers.delete(w);
    },
    healthy: () => true,
    wake(lease, revision) {
      for (const w of [...watchers]) if (w.lease === lease) setImmediate(() => w.onWake({ lease, revision, by: 'worker' }));
    },
  });
}

/** What one elector's lock was asked, in order: its lease reads (with the row each returned) and its renewals, beside its callbacks. */
type Seen = { what: 'get'; consistent: boolean; item: Lease | undefined } | { what: 'renew'; answered?: Lease | undefined } | { what: 'started' } | { what: 'stopped' };

/**
 * An elector on DynamoDB Local whose lock records what it is asked (`seen`); `stale`: a copy its
 * next eventually consistent read returns instead of the row (a replica behind the leader);
 * `gate`: eventually consistent reads wait for it (`held` says one is waiting).
 */
function recorded(identity: string, log: Log, opts: Partial<LeaderElectorOptions> & { leaseName: string }) {
  const seen: Seen[] = [];
  const replica: { stale: Lease | undefined; gate?: Promise<void> | undefined; held?: boolean } = { stale: undefined };
  const lock = (l: LeaseLock): LeaseLock => ({
    ...l,
    async get(consistent = true) {
      if (!consistent && replica.gate) {
        replica.held = true;
        await replica.gate;
      }
      const stale = consistent ? undefined : replica.stale;
      replica.stale = undefined;
      const read = stale ? LeaseStore.readOf(l.name, stale) : await l.get(consistent);
      seen.push({ what: 'get', consistent, item: read.item });
      return read;
    },
    async renew(term, r) {
      const entry: Seen = { what: 'renew' };
      seen.push(entry);
      const renewed = await l.renew(term, r);
      entry.answered = renewed;
      return renewed;
    },
  });
  const elector = electorWith(
    { lock },
    {
      identity,
      tables: t.names,
      client: t.client,
      platform: 'none',
      candidacy: { emulationVersion: '1.30.0', binaryVersion: '1.30.0' },
      ...TIMING,
      callbacks: {
        onStartedLeading: (_s, { fencingToken }) => {
          seen.push({ what: 'started' });
          log.add({ who: identity, what: 'started', token: fencingToken });
        },
        onStoppedLeading: ({ reason, fencingToken }) => {
          seen.push({ what: 'stopped' });
          log.add({ who: identity, what: 'stopped', reason, token: fencingToken });
        },
        onNewLeader: (leader) => log.add({ who: identity, what: 'newLeader', leader }),
      },
      onError: () => undefined,
      ...opts,
    },
  );
  const controller = new AbortController();
  let done: Promise<void> | undefined;
  return {
    elector,
    seen,
    replica,
    run() {
      done = elector.run(controller.signal);
      return this;
    },
    async stop() {
      controller.abort();
      await done;
    },
  };
}

const leases = () => new LeaseStore(t.client, t.names.leases);
const row = async (name: string) => (await leases().read(name)).item;
const isHandOverTo = (l: Lease | undefined, who: string) => l?.holderIdentity === who && l.electedBy === 'successor' && l.renewTime === l.acquireTime && l.lastHolderIdentity !== undefined;

/** A term of a worker that is not running (`a`), naming `heir` (that start-up) successor: written as an election and the coordinator's designation would leave it. */
async function heldBy(name: string, heir: { name: string; instance: string }, stamp: number): Promise<Lease> {
  return leases().write(LeaseStore.readOf(name, undefined), {
    set: { holderIdentity: 'a', holderInstance: 'a_1', acquireTime: stamp - 1_000, renewTime: stamp, leaseDurationSeconds: 60, leaseTransitions: 0, fencingToken: stamp * 1000, electedBy: 'coordinator', successor: heir.name, successorInstance: heir.instance },
  });
}

describe('the heir of a hand-over on DynamoDB Local', () => {
  it('leads from its strongly consistent read of the hand-over, and confirms after: the confirming renewal is off the path from SIGTERM to the new leader', async () => {
    const L = 'handoff-from-read';
    const log = new Log();
    const push = loopback();
    const coord = coordinatorLoop(coordinatorDeps(t.client, t.names, { config: { ackWindowMs: 500, electedLeaseDurationSeconds: 2 } }), L);
    const a = recorded('a', log, { leaseName: L, push: push() }).run();
    await waitFor('a to lead', () => a.elector.isLeader());
    const b = recorded('b', log, { leaseName: L, push: push() }).run();
    await waitFor('b named successor, a renewed since', async () => {
      const l = await row(L);
      return l?.successor === 'b' && l.renewTime! > l.acquireTime! && b.elector.stats.clockSynced;
    });
    await coord.stop(); // nobody but the two workers writes the lease from here on
    await a.stop(); // cancelled with an heir: hands the term over in one write, and wakes b
    await waitFor('b to lead', () => b.elector.isLeader());
    const started = b.seen.findIndex((s) => s.what === 'started');
    // the read it led from: strongly consistent (woken), the hand-over itself, not yet confirmed
    const readFrom = b.seen.slice(0, started).findLast((s) => s.what === 'get');
    expect(readFrom).toMatchObject({ what: 'get', consistent: true });
    expect(readFrom?.what === 'get' && isHandOverTo(readFrom.item, 'b'), JSON.stringify(readFrom)).toBe(true);
    // no renewal before it led; the confirmation is its first renewal, after, and it landed
    expect(b.seen.slice(0, started).filter((s) => s.what === 'renew')).toEqual([]);
    await waitFor('the confirmation answered', () => b.seen.some((s) => s.what === 'renew' && s.answered !== undefined));
    const confirmed = (await row(L))!;
    expect(confirmed).toMatchObject({ holderIdentity: 'b', holderInstance: b.elector.instance, leaseDurationSeconds: TIMING.leaseDurationMs / 1000 });
    expect(confirmed.renewTime).toBeGreaterThan(confirmed.acquireTime!);
    expect(b.elector.isLeader()).toBe(true);
    expect(log.maxConcurrentLeaders()).toBe(1);
    await b.stop();
  });

  it('does not lead from a stale copy of a hand-over that a later write superseded: it reads the row again, consistently, and follows the new term', async () => {
    const L = 'handoff-superseded';
    const log = new Log();
    const b = recorded('b', log, { leaseName: L, push: loopback()() });
    const now = Date.now();
    const held = await heldBy(L, { name: 'b', instance: b.elector.instance }, now);
    b.run();
    await waitFor('b following a’s term, its clock measured', () => log.of('newLeader', 'b').some((e) => e.leader === 'a') && b.elector.stats.clockSynced);
    // b's next eventually consistent poll waits while the lease moves on, then a replica behind answers it
    let open = () => undefined as void;
    b.replica.gate = new Promise<void>((r) => (open = r));
    await waitFor('b polling', () => b.replica.held);
    const from = b.seen.length;
    const handed = (await leases().handOver(L, { holderIdentity: 'a', fencingToken: held.fencingToken }, { name: 'b', instance: b.elector.instance }, Date.now(), 2, held.leaseTransitions))!;
    expect(isHandOverTo(handed, 'b')).toBe(true);
    // superseded: the term ended (an operator's release --force) and another worker took the lease
    const released = (await leases().releaseTerm(L, { holderIdentity: 'b', fencingToken: handed.fencingToken }, Date.now()))!;
    await leases().write(LeaseStore.readOf(L, released), acquisition(released, { identity: 'c', instance: 'c_1', now: Date.now(), leaseDurationSeconds: 60, electedBy: 'self' }));
    b.replica.stale = handed;
    b.replica.gate = undefined;
    open();
    await waitFor('b to see c', () => log.of('newLeader', 'b').some((e) => e.leader === 'c'));
    const [first, second] = b.seen.slice(from).filter((s) => s.what === 'get');
    expect(first).toMatchObject({ what: 'get', consistent: false, item: handed });
    expect(second).toMatchObject({ what: 'get', consistent: true, item: expect.objectContaining({ holderIdentity: 'c' }) });
    // neither led nor wrote: the consistent read showed the hand-over gone
    expect(b.seen.filter((s) => s.what === 'started' || s.what === 'renew')).toEqual([]);
    expect(await row(L)).toMatchObject({ holderIdentity: 'c' });
    await b.stop();
  });

  it('confirms first when the hand-over’s stamp leaves too little of its first term: a giver paused between stamping and sending, or an heir that read late', async () => {
    const L = 'handoff-late';
    const log = new Log();
    const push = loopback();
    const b = recorded('b', log, { leaseName: L, push: push() });
    const now = Date.now();
    const held = await heldBy(L, { name: 'b', instance: b.elector.instance }, now);
    b.run();
    await waitFor('b following a’s term, its clock measured', () => log.of('newLeader', 'b').some((e) => e.leader === 'a') && b.elector.stats.clockSynced);
    // stamped a first term (2 s) and more ago: it ran out before b's read, as every follower dates it
    const stamp = Date.now() - 2_500;
    await leases().handOver(L, { holderIdentity: 'a', fencingToken: held.fencingToken }, { name: 'b', instance: b.elector.instance }, stamp, 2, held.leaseTransitions);
    push().wake(L); // as the giver does: b reads at once, consistently
    await waitFor('b to lead', () => b.elector.isLeader());
    const started = b.seen.findIndex((s) => s.what === 'started');
    const readFrom = b.seen.slice(0, started).findLast((s) => s.what === 'get');
    expect(readFrom?.what === 'get' && readFrom.consistent && isHandOverTo(readFrom.item, 'b'), JSON.stringify(readFrom)).toBe(true);
    // the confirmation came first, and its answer is what it leads from
    const renewal = b.seen.slice(0, started).filter((s) => s.what === 'renew');
    expect(renewal).toHaveLength(1);
    expect(renewal[0]).toMatchObject({ answered: expect.objectContaining({ holderIdentity: 'b', leaseDurationSeconds: TIMING.leaseDurationMs / 1000 }) });
    await b.stop();
  });
});

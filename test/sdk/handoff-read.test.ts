/**
 * The heir of a hand-over leads from its read of it (issue 38 item 3, cut 2), on DynamoDB Local:
 * a woken, strongly consistent read that shows the hand-over naming this start-up starts the work,
 * and the confirming renewal goes out after, as the leader's first renewal. And when not to: a
 * stale copy of a hand-over that a later write superseded, or a hand-over whose first term, as its
 * stamp dates it, is nearly over — those are confirmed first, as an electee's term is.
 *
 * And the giver's side (cut 3): no lease read after the signal while wakes reach it, the heir's
 * candidate row read then and never earlier (an heir that withdrew a moment before is not handed
 * the term), the wake sent beside the write rather than after its answer — a read that lands
 * before the write shows the giver's term, which the heir only follows; the wake after the answer,
 * or its own poll if that wake is lost, then finds the hand-over as before — and a view gone stale
 * costing one refused write.
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

// toMatchObject's expected values nest plain objects (matched partially all the same), never
// expect.objectContaining: vitest reports a failed match that nests one as "RangeError: Maximum call
// stack size exceeded", with no diff and no stack.

let t: TestTables;
beforeAll(async () => {
  t = await testTables('handoff-read');
});
afterAll(async () => {
  await t?.drop();
});

/**
 * Long enough that the heir's read lands well inside the window a hand-over's first term leaves it,
 * however busy the machine. A giver writes a first term of a third of its lease duration (8 s), and
 * the heir leads from its read only while its renew deadline scaled to that term (6 s after the
 * stamp) is more than half a retry period off: else it confirms first, as it should. (Before: 6 s /
 * 4.5 s, a 2 s first term and 1.5 s of it, which a busy machine's stall or a slow DynamoDB Local
 * between the giver's stamp and the heir's read used up: the heir confirmed first, and the test
 * that it leads from its read failed.)
 */
// renewIntervalMs: a coordinated leader's default (renew deadline − 2 retry periods) leaves a busy
// machine's stall only 1 s between a renewal due and the deadline; a giver that lapsed so would hand
// nothing over (its heir takes the vacancy instead). 1.5 s leaves 16.5 s.
const TIMING = { leaseDurationMs: 24_000, renewDeadlineMs: 18_000, retryPeriodMs: 500, renewIntervalMs: 1_500 } as const;
/** The first term a giver on TIMING writes (LeaderElector: a third of its lease duration, in whole seconds). */
const FIRST_TERM_SECONDS = TIMING.leaseDurationMs / 3_000;

/**
 * An in-process push path: every wake reaches every other watcher of its lease (a wake is only a
 * hint to read). `sent`: each wake published, in order; `drop`: a wake it answers true for is lost.
 */
function loopback(drop: (w: { lease: string; revision: number | undefined }, index: number) => boolean = () => false, sent: { revision: number | undefined; at: number }[] = []) {
  const watchers = new Set<{ lease: string; onWake: (w: Wake | undefined) => void }>();
  return (): Push => ({
    watch(lease, onWake) {
      const w = { lease, onWake };
      watchers.add(w);
      return () => void watchers.delete(w);
    },
    healthy: () => true,
    wake(lease, revision) {
      sent.push({ revision, at: tick() });
      if (drop({ lease, revision }, sent.length - 1)) return;
      for (const w of [...watchers]) if (w.lease === lease) setImmediate(() => w.onWake({ lease, revision, by: 'worker' }));
    },
  });
}


/** The order of what the fakes saw (a count, not a clock): an earlier event has a smaller number. */
let ticks = 0;
const tick = (): number => ++ticks;
/** What one elector's lock was asked, in order: its lease reads (with the row each returned) and its renewals, beside its callbacks. */
type Seen =
  | { what: 'get'; consistent: boolean; item: Lease | undefined; at: number }
  | { what: 'renew'; answered?: Lease | undefined }
  | { what: 'candidate'; name: string }
  | { what: 'handOver'; heir: string; given?: Lease | undefined; sentAt?: number; answeredAt?: number }
  | { what: 'started' }
  | { what: 'stopped' };

/**
 * An elector on DynamoDB Local whose lock records what it is asked (`seen`); `stale`: a copy its
 * next eventually consistent read returns instead of the row (a replica behind the leader);
 * `gate`: eventually consistent reads wait for it (`held` says one is waiting); `handOverGate`: a
 * hand-over write waits for it before it is sent (a slow write); `behind`: a copy every eventually
 * consistent read returns while it is set (a replica that has not caught up).
 */
function recorded(identity: string, log: Log, opts: Partial<LeaderElectorOptions> & { leaseName: string }) {
  const seen: Seen[] = [];
  const replica: { stale: Lease | undefined; behind?: Lease | undefined; gate?: Promise<void> | undefined; held?: boolean; handOverGate?: Promise<void> | undefined; consistentGate?: Promise<void> | undefined; passConsistent?: number } = { stale: undefined };
  const lock = (l: LeaseLock): LeaseLock => ({
    ...l,
    async get(consistent = true) {
      if (!consistent && replica.gate) {
        replica.held = true;
        await replica.gate;
      }
      // strongly consistent reads wait for consistentGate, but for the next passConsistent of them
      if (consistent && replica.consistentGate) {
        if ((replica.passConsistent ?? 0) > 0) replica.passConsistent!--;
        else await replica.consistentGate;
      }
      const stale = consistent ? undefined : (replica.stale ?? replica.behind);
      replica.stale = undefined;
      const read = stale ? LeaseStore.readOf(l.name, stale) : await l.get(consistent);
      seen.push({ what: 'get', consistent, item: read.item, at: tick() });
      return read;
    },
    candidate(name) {
      seen.push({ what: 'candidate', name });
      return l.candidate(name);
    },
    async handOver(term, h) {
      const entry: Seen = { what: 'handOver', heir: h.heir.name };
      seen.push(entry);
      await replica.handOverGate;
      entry.sentAt = tick();
      entry.given = await l.handOver(term, h);
      entry.answeredAt = tick();
      return entry.given;
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
/** A leader's renewal answered with the lease naming `heir` successor: its view names the heir (no wake here tells it of the coordinator's designation). */
const namesHeir = (seen: readonly Seen[], heir: string) => seen.some((s) => s.what === 'renew' && s.answered?.successor === heir);
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
    const { log, a, b } = await handingGroup(L, loopback());
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
    // landed on the hand-over's row: a later revision of the same term, stamped after the hand-over
    // (the heir's measure of DynamoDB's time may equal the giver's to the millisecond, or be behind
    // it: a renewal then lands just after the row's stamp, LeaseStore.renewTerm)
    const handed = readFrom?.what === 'get' ? readFrom.item! : undefined;
    expect(confirmed.fencingToken).toBe(handed?.fencingToken);
    expect(confirmed.revision).toBeGreaterThan(handed!.revision);
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
    // a first term as a giver on TIMING writes: the stale copy leaves b most of it however late b reads it, so b reads again
    // (on a 2 s one a busy machine could leave too little of it: b confirmed first on the copy, a refused renewal)
    const handed = (await leases().handOver(L, { holderIdentity: 'a', fencingToken: held.fencingToken }, { name: 'b', instance: b.elector.instance }, Date.now(), FIRST_TERM_SECONDS, held.leaseTransitions))!;
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
    expect(second).toMatchObject({ what: 'get', consistent: true, item: { holderIdentity: 'c' } });
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
    // b's own polls meanwhile read a replica that has not seen the hand-over: the read on the wake
    // below is the one that finds it (a poll that found it first would confirm first too, from a copy)
    b.replica.behind = held;
    // stamped a first term (2 s) and more ago: it ran out before b's read, as every follower dates it
    const stamp = Date.now() - 2_500;
    await leases().handOver(L, { holderIdentity: 'a', fencingToken: held.fencingToken }, { name: 'b', instance: b.elector.instance }, stamp, 2, held.leaseTransitions);
    push().wake(L); // as the giver does: b reads at once, consistently
    await waitFor('b to lead', () => b.elector.isLeader());
    b.replica.behind = undefined;
    const started = b.seen.findIndex((s) => s.what === 'started');
    const readFrom = b.seen.slice(0, started).findLast((s) => s.what === 'get');
    expect(readFrom?.what === 'get' && readFrom.consistent && isHandOverTo(readFrom.item, 'b'), JSON.stringify(readFrom)).toBe(true);
    // the confirmation came first, and its answer is what it leads from
    const renewal = b.seen.slice(0, started).filter((s) => s.what === 'renew');
    expect(renewal).toHaveLength(1);
    expect(renewal[0]).toMatchObject({ answered: { holderIdentity: 'b', leaseDurationSeconds: TIMING.leaseDurationMs / 1000 } });
    await b.stop();
  });
});

/** `a` leading with `b` named its successor (by the coordinator, stopped after), each with its own end of `push`. */
async function handingGroup(L: string, push: () => Push) {
  const log = new Log();
  const coord = coordinatorLoop(coordinatorDeps(t.client, t.names, { config: { ackWindowMs: 500, electedLeaseDurationSeconds: 2 } }), L);
  const a = recorded('a', log, { leaseName: L, push: push() }).run();
  await waitFor('a to lead', () => a.elector.isLeader());
  const b = recorded('b', log, { leaseName: L, push: push() }).run();
  await waitFor('b named successor, a renewed since', async () => {
    const l = await row(L);
    return l?.successor === 'b' && l.renewTime! > l.acquireTime! && b.elector.stats.clockSynced;
  });
  await coord.stop(); // nobody but the workers writes the lease from here on
  // a leads its one term still, the row agreeing: a failure here names a lost term, not the hand-over
  expect(await row(L), 'a still holds the term it leads').toMatchObject({ holderIdentity: 'a', fencingToken: a.elector.fencingToken, successor: 'b' });
  expect(log.of('stopped', 'a')).toEqual([]);
  return { log, a, b };
}

describe('the giver of a hand-over on DynamoDB Local (cut 3)', () => {
  it('reads the heir’s row when it hands over, not before: after the signal, that read, then the hand-over write (no lease read: its wakes keep its view current)', async () => {
    const L = 'handoff-read-then';
    const { log, a, b } = await handingGroup(L, loopback());
    await waitFor('a’s view of the lease to name b', () => namesHeir(a.seen, 'b'));
    const from = a.seen.length;
    await a.stop();
    await waitFor('b to lead', () => b.elector.isLeader());
    expect(a.seen.slice(0, from).filter((s) => s.what === 'candidate')).toEqual([]);
    const after = a.seen.slice(from).filter((s) => s.what !== 'stopped');
    expect(after.map((s) => s.what), JSON.stringify(after)).toEqual(['candidate', 'handOver']);
    expect(after[1]).toMatchObject({ what: 'handOver', heir: 'b', given: { holderIdentity: 'b', holderInstance: b.elector.instance } });
    expect(log.maxConcurrentLeaders()).toBe(1);
    await b.stop();
  });

  it('wakes the heir beside the write: a read that lands before the write shows the giver’s term, and the heir does not lead on it; the wake after the answer finds the hand-over', async () => {
    const L = 'handoff-early-wake';
    const sent: { revision: number | undefined; at: number }[] = [];
    const { log, a, b } = await handingGroup(L, loopback(() => false, sent));
    let open = () => undefined as void;
    a.replica.handOverGate = new Promise<void>((r) => (open = r));
    const fromA = a.seen.length;
    const fromB = b.seen.length;
    const fromWakes = sent.length;
    const stopping = a.stop();
    // the write is held back; the wake is out already, and b has read
    const early = await waitFor('b’s read on the early wake', () => b.seen.slice(fromB).find((s) => s.what === 'get'));
    // at the giver's last revision, and the wake names the next: taken from this read, not one the test
    // makes before the stop (a busy machine may land one of a's renewals after it; none after the stop)
    expect(early).toMatchObject({ consistent: true, item: { holderIdentity: 'a', successor: 'b' } });
    const last = early.what === 'get' ? early.item!.revision : -1;
    expect(sent.slice(fromWakes)).toEqual([{ revision: last + 1, at: expect.any(Number) }]);
    expect(b.elector.isLeader()).toBe(false);
    open();
    await stopping;
    await waitFor('b to lead', () => b.elector.isLeader());
    const handOver = a.seen.slice(fromA).find((s) => s.what === 'handOver')!;
    expect(handOver).toMatchObject({ given: { holderIdentity: 'b', revision: last + 1 } });
    // the early wake went out before the write was answered; the one after it, for the revision written
    const wakes = sent.slice(fromWakes);
    expect(wakes[0]!.at).toBeLessThan(handOver.what === 'handOver' ? handOver.answeredAt! : 0);
    expect(wakes.map((w) => w.revision)).toEqual([last + 1, last + 1]);
    // it led from a strongly consistent read of the hand-over, after the write was answered
    const seenB = b.seen.slice(fromB);
    const readFrom = seenB.slice(0, seenB.findIndex((s) => s.what === 'started')).findLast((s) => s.what === 'get');
    expect(readFrom?.what === 'get' && readFrom.consistent && isHandOverTo(readFrom.item, 'b'), JSON.stringify(readFrom)).toBe(true);
    // no read of b's showed it holder before the write was sent, and it led only once
    expect(seenB.filter((s) => s.what === 'get' && s.item?.holderIdentity === 'b' && s.at < (handOver.what === 'handOver' ? handOver.sentAt! : 0))).toEqual([]);
    expect(log.of('started', 'b')).toHaveLength(1);
    expect(log.maxConcurrentLeaders()).toBe(1);
    await b.stop();
  });

  it('an early wake read too soon: the heir reads again at once (the revision the wake announced has not landed) and leads from that read, not waiting for the wake after the write (lost here) nor its own poll', async () => {
    const L = 'handoff-early-reread';
    const sent: { revision: number | undefined; at: number }[] = [];
    let dropFrom = Infinity;
    const { log, a, b } = await handingGroup(L, loopback((_w, i) => i >= dropFrom, sent));
    let open = () => undefined as void;
    a.replica.handOverGate = new Promise<void>((r) => (open = r));
    const fromA = a.seen.length;
    const fromB = b.seen.length;
    dropFrom = sent.length + 1; // the early wake reaches b, every wake after it is lost
    // b's read on the early wake passes; its next strongly consistent read waits until the hand-over
    // is answered: it lands after the write, as it would a moment later on a slower write
    let landed = () => undefined as void;
    b.replica.consistentGate = new Promise<void>((r) => (landed = r));
    b.replica.passConsistent = 1;
    const stopping = a.stop();
    await waitFor('b’s read on the early wake', () => b.seen.slice(fromB).some((s) => s.what === 'get' && s.item?.holderIdentity === 'a'));
    open();
    await waitFor('the hand-over answered', () => a.seen.slice(fromA).some((s) => s.what === 'handOver' && s.answeredAt !== undefined));
    landed();
    b.replica.consistentGate = undefined;
    await stopping;
    await waitFor('b to lead', () => b.elector.isLeader());
    const seenB = b.seen.slice(fromB);
    const started = seenB.findIndex((s) => s.what === 'started');
    const reads = seenB.slice(0, started).filter((s) => s.what === 'get');
    // the early read, then its re-read, both strongly consistent: no poll (a poll's first read is eventually consistent) came between.
    // Revisions by the hand-over's: a read of the row before the stop could be older than the giver's
    // last (a busy machine may land one of a's renewals after it)
    const handOver = a.seen.slice(fromA).find((s) => s.what === 'handOver');
    const handed = handOver?.what === 'handOver' ? handOver.given!.revision : -1;
    expect(reads.map((r) => r.what === 'get' && [r.consistent, r.item?.holderIdentity, r.item?.revision]), JSON.stringify(seenB)).toEqual([
      [true, 'a', handed - 1],
      [true, 'b', handed],
    ]);
    expect(sent.length).toBeGreaterThan(dropFrom); // the wake after the write was sent, and lost
    expect(log.of('started', 'b')).toHaveLength(1);
    expect(log.maxConcurrentLeaders()).toBe(1);
    await b.stop();
  });

  it('an early wake read too soon and the wake after the write lost: the heir finds the hand-over by its own poll, as without wakes', async () => {
    const L = 'handoff-early-lost';
    const sent: { revision: number | undefined; at: number }[] = [];
    let dropFrom = Infinity;
    const { log, a, b } = await handingGroup(L, loopback((_w, i) => i >= dropFrom, sent));
    let open = () => undefined as void;
    a.replica.handOverGate = new Promise<void>((r) => (open = r));
    const fromB = b.seen.length;
    dropFrom = sent.length + 1; // the early wake reaches b, every wake after it is lost
    const stopping = a.stop();
    await waitFor('b’s read on the early wake', () => b.seen.slice(fromB).some((s) => s.what === 'get' && s.item?.holderIdentity === 'a'));
    open();
    await stopping;
    await waitFor('b to lead', () => b.elector.isLeader());
    const seenB = b.seen.slice(fromB);
    const started = seenB.findIndex((s) => s.what === 'started');
    // it read the giver's term on the wake, then the hand-over on a later read, and led from a consistent one
    expect(seenB.slice(0, started).filter((s) => s.what === 'get').length).toBeGreaterThanOrEqual(2);
    const readFrom = seenB.slice(0, started).findLast((s) => s.what === 'get');
    expect(readFrom?.what === 'get' && readFrom.consistent && isHandOverTo(readFrom.item, 'b'), JSON.stringify(readFrom)).toBe(true);
    expect(sent.length).toBeGreaterThan(dropFrom); // the wake after the write was sent, and lost
    expect(log.maxConcurrentLeaders()).toBe(1);
    await b.stop();
  });

  it('an heir that withdrew a moment before (a rolling deployment stopping it first) is not handed the term: the giver finds its row gone and releases', async () => {
    const L = 'handoff-heir-gone';
    const { log, a, b } = await handingGroup(L, loopback());
    await waitFor('a’s view of the lease to name b', () => namesHeir(a.seen, 'b'));
    await b.stop(); // its candidacy withdrawn, its name taken off (LeaderElector.leaveLease); the coordinator is stopped
    // …and b named again, as an older SDK's heir (which takes nothing off) or a designation decided on a
    // read of b's row from before its withdrawal would leave it: the giver's read of the heir's row is what guards here
    const named = await leases().read(L);
    await leases().write(named, { set: { successor: 'b', successorInstance: b.elector.instance } });
    expect((await row(L))?.successor).toBe('b');
    const from = a.seen.length;
    await a.stop();
    const after = a.seen.slice(from).filter((s) => s.what !== 'stopped');
    expect(after.filter((s) => s.what === 'handOver'), JSON.stringify(after)).toEqual([]);
    const released = (await row(L))!;
    expect(released.holderIdentity).toBeUndefined();
    expect(log.of('started', 'b')).toEqual([]);
    expect(log.maxConcurrentLeaders()).toBe(1);
  });

  it('a view gone stale (another heir named without waking it): the hand-over is refused, then it reads the lease and hands it to the heir named now', async () => {
    const L = 'handoff-stale-view';
    const push = loopback();
    const { log, a, b } = await handingGroup(L, push);
    await waitFor('a’s view of the lease to name b', () => namesHeir(a.seen, 'b'));
    const c = recorded('c', log, { leaseName: L, push: push() }).run(); // a candidate from now on
    // registered: a coordinator names only a candidate whose row it read (the giver reads that row before it hands over)
    await c.elector.ready;
    await waitFor('c running', () => c.elector.stats.clockSynced);
    // the coordinator's next designation, as it would write it, but with no wake to a
    const cur = await leases().read(L);
    await leases().write(cur, { set: { successor: 'c', successorInstance: c.elector.instance } });
    const from = a.seen.length;
    await a.stop();
    await waitFor('c to lead', () => c.elector.isLeader());
    const after = a.seen.slice(from).filter((s) => s.what !== 'stopped');
    expect(after.map((s) => (s.what === 'handOver' ? `handOver ${s.heir} ${s.given ? 'given' : 'refused'}` : s.what === 'candidate' ? `candidate ${s.name}` : s.what))).toEqual(['candidate b', 'handOver b refused', 'get', 'candidate c', 'handOver c given']);
    expect(b.elector.isLeader()).toBe(false);
    expect(log.of('started', 'b')).toEqual([]);
    expect(log.maxConcurrentLeaders()).toBe(1);
    await b.stop();
    await c.stop();
  });
});

/**
 * What a quiet lease costs, in requests (issue 38, item 4: cheaper at rest), and that the takeover
 * after a crash is unchanged. Requests only, on simulated time (test/sdk/sim-harness.ts) or on a
 * clock stepped by hand: the leader's renewals at client-go's timings, its close watchers' reads per
 * renewal, and the session reads of a process whose many electors watch one session and wake over
 * more than SHARED_READ_MS (a loaded process). docs/benchmarks.md "Cost at rest" has the dollars.
 */
import { PutItemCommand } from '@aws-sdk/client-dynamodb';
import { marshall } from '@aws-sdk/util-dynamodb';
import { describe, expect, it } from 'vitest';
import { LeaseItem } from '../../lib/schemas/lease.js';
import { sessionKey } from '../../lib/schemas/session-partition.js';
import { defaultRenewIntervalMs, PHASE_STEP_MS } from '../../lib/sdk/elector.js';
import { MemoryLeaseTable, SessionReader, SHARED_READ_MS } from '../../lib/sdk/lock.js';
import { CHASE_FIRST_MS, decideFollower, followerDelay, leadFromRead, followerStep, FOLLOWING, READ_AFTER_MS, RenewalPhase, SECOND_SUCCESSOR_GRACE_MS, sessionShareMs, type FollowerSettings, type Moment } from '../../lib/sdk/step.js';
import { LATENCY_MS, modelTables, T0 } from '../../sim/harness.js';
import { CLIENT_GO, quietGroup, reads, writes } from './quiet-group.js';

const RTT_MS = 2 * LATENCY_MS;
/** A watcher takes a lease whose term ran out as it watched it: a read and the write after its wake-up. */
const TAKE_MS = 1 + RTT_MS + LATENCY_MS;

describe('cheaper at rest, one lease per process (issue 38, item 4)', () => {
  it('the default renew interval leaves two more tries before the deadline, the first a whole retry period early (6 s at client-go’s timings)', () => {
    const interval = defaultRenewIntervalMs({ mode: 'coordinated', ...CLIENT_GO });
    expect(interval).toBe(6_000);
    // a failed renewal is tried again a retry period later, and once more, both before the deadline
    expect(interval - PHASE_STEP_MS + 2 * CLIENT_GO.retryPeriodMs).toBeLessThan(CLIENT_GO.renewDeadlineMs);
    expect(defaultRenewIntervalMs({ mode: 'NoCoordination', ...CLIENT_GO })).toBe(CLIENT_GO.retryPeriodMs); // client-go's, unchanged
    expect(defaultRenewIntervalMs({ mode: 'coordinated', renewDeadlineMs: 1_000, retryPeriodMs: 600 })).toBe(600); // never below a retry period
    expect(defaultRenewIntervalMs({ mode: 'coordinated', renewDeadlineMs: 1_500, retryPeriodMs: 250 })).toBe(1_000);
    expect(defaultRenewIntervalMs({ mode: 'coordinated', renewDeadlineMs: 10_000, retryPeriodMs: 1_500 })).toBe(7_000);
  });

  it('at rest the leader writes about 10 times a minute and each close watcher reads about once per renewal; a crashed holder’s lease is still taken within the chase of the term’s end', async () => {
    const { sim, coord, held, holder, successor, second } = await quietGroup();
    const from = sim.clock.monotonic();
    const windowMs = 8 * 60_000;
    await sim.run(windowMs);
    expect(holder.elector.isLeader()).toBe(true);
    const renewals = writes(holder.machine, from, '-leases');
    // a renewal every 5,863 ms (6,000 less the phase step): 10.2 a minute, 81 in this window
    expect(renewals).toBeLessThanOrEqual(Math.ceil(windowMs / (6_000 - PHASE_STEP_MS)) + 1);
    expect(renewals).toBeGreaterThanOrEqual(Math.floor(windowMs / 6_000) - 1); // it renews on
    // a probe every 32 renewals: 1.09 reads per renewal (1.19 with one every 16)
    for (const w of [successor, second]) expect(reads(w.machine, from, '-leases'), w.elector.options.identity).toBeLessThanOrEqual(Math.ceil(renewals * 1.13));
    coord.stop();

    holder.machine.kill();
    await sim.until('the successor leading', () => successor.elector.isLeader(), 30_000);
    const ranOut = sim.lastRenewal('job', holder.elector.options.identity) + held.leaseDurationSeconds * 1000;
    const took = sim.tookOver('job', successor.elector.options.identity);
    expect(took).toBeGreaterThanOrEqual(ranOut);
    expect(took - ranOut).toBeLessThanOrEqual(READ_AFTER_MS + 2 * CHASE_FIRST_MS + TAKE_MS + 4 * RTT_MS);
    expect(second.elector.isLeader()).toBe(false); // the killed holder's process is gone: it can no longer act
  }, 180_000);

  it('the holder and its successor lost together: the second successor takes the lease a grace after the term’s end, as before', async () => {
    const { sim, coord, held, holder, successor, second } = await quietGroup();
    await sim.run(3 * 60_000 + 1_234); // some way into a probe cycle
    coord.stop();
    holder.machine.kill();
    successor.machine.kill();
    await sim.until('the second successor leading', () => second.elector.isLeader(), 30_000);
    const ranOut = sim.lastRenewal('job', holder.elector.options.identity) + held.leaseDurationSeconds * 1000;
    const took = sim.tookOver('job', second.elector.options.identity);
    expect(took).toBeGreaterThanOrEqual(ranOut + SECOND_SUCCESSOR_GRACE_MS);
    expect(took - ranOut).toBeLessThanOrEqual(SECOND_SUCCESSOR_GRACE_MS + READ_AFTER_MS + 2 * CHASE_FIRST_MS + TAKE_MS + 4 * RTT_MS);
  }, 180_000);

  it('RenewalPhase on its own: about 1.09 reads per renewal over 320 renewals, each seen within tens of ms of its landing', () => {
    // a holder renewing every 7,862 ms (renewIntervalMs 7,999 less 137); each renewal lands 7 ms after its stamp;
    // a read is served 1 ms after it is sent and answered 2 ms after; the watcher reads as the
    // elector does: at the aim plus READ_AFTER_MS, and chases a renewal that is not there yet
    const BASE = 1_800_000_000_000;
    const EVERY = 7_862;
    let p = RenewalPhase.NONE;
    let seen = 0;
    let sent = 100;
    let previous: number | undefined;
    let counted = 0;
    const lags: number[] = [];
    while (seen < 330) {
      const k = Math.floor((sent + 1 - 7) / EVERY);
      if (k > seen && k >= 1) {
        p = p.seen('a-1|7', BASE + k * EVERY, sent + 2, previous, 15_000);
        if (k > 10) lags.push(sent + 2 - (k * EVERY + 7));
        seen = k;
      } else p = p.missed(sent);
      if (seen > 10) counted++;
      previous = sent;
      const aim = p.expectedAt();
      const due = aim === undefined ? undefined : aim + READ_AFTER_MS;
      sent = due === undefined ? sent + 2_000 : due > sent ? due : sent + Math.min(Math.max(CHASE_FIRST_MS, sent - due), 2_000);
    }
    // 1.19 with a probe every 16 renewals
    expect(counted / 320).toBeLessThanOrEqual(1.12);
    expect(Math.max(...lags)).toBeLessThanOrEqual(2 * CHASE_FIRST_MS + RTT_MS);
  });
});

describe('a process whose many electors watch one session', () => {
  it.each([
    { name: 'not a close watcher: the margin', p: { watches: false }, want: 1_250 },
    { name: 'first read: SHARED_READ_MS', p: { previousSentAt: undefined, due: undefined }, want: SHARED_READ_MS },
    { name: 'its aim has come: a read sent since', p: { due: 99_700 }, want: 300 },
    { name: 'its aim still ahead (another elector moved the shared phase on): since its own last read', p: { due: 105_000 }, want: 999 },
    { name: 'no further back than the margin', p: { previousSentAt: 90_000, due: undefined }, want: 1_250 },
    { name: 'its own read just missed: only a newer one', p: { previousSentAt: 99_980, due: 99_900 }, want: 19 },
  ])('sessionShareMs: $name', ({ p, want }) => {
    expect(sessionShareMs({ watches: true, now: 100_000, due: undefined, previousSentAt: 99_000, marginMs: 1_250, sharedMs: SHARED_READ_MS, ...p })).toBe(want);
  });

  it('fifty successors woken over 400 ms read the session once per renewal between them, and each still sees every renewal', async () => {
    // The holder's process renews session S every 5 s; the watching process runs 50 electors, one
    // per lease held on S, each its successor, through the follower's step (lib/sdk/step.ts) as the
    // elector's shell runs it. A loaded process wakes them 8 ms apart.
    let now = 1_000;
    const t = await modelTables(() => T0 + now);
    const reader = new SessionReader(t.client, t.names.identities, { monotonic: () => now });
    const S = 'session-h';
    const putSession = (k: number) =>
      t.client.send(new PutItemCommand({ TableName: t.names.identities, Item: marshall({ ...sessionKey(S), holderIdentity: 'h_1', hostname: 'h', leaseDurationSeconds: 15, acquireTime: T0, renewTime: T0 + k * 5_000, revision: k + 1, process: 'p1' }) }));
    await putSession(0);
    const table = new MemoryLeaseTable();
    const sentAts = new Set<number>();
    const at = (): Moment => ({ now, clock: { ok: true, errorMs: 0 }, offset: T0, jumps: 0, sessionCadences: reader.cadences });
    const watches = Array.from({ length: 50 }, (_, i) => {
      const name = `job-${i}`;
      table.overwrite(LeaseItem.parse({ name, holderIdentity: 'h', holderInstance: 'h_1@p1', acquireTime: T0 - 60_000, renewTime: T0 - 30_000, leaseDurationSeconds: 15, leaseTransitions: 1, fencingToken: 3, revision: 5, session: S, successor: 'w', successorInstance: 'w_1@p2' }));
      const lock = table.lock(name, () => now);
      const s: FollowerSettings = { leaseName: name, identity: 'w', instance: 'w_1@p2', mode: 'coordinated', ...CLIENT_GO, fallbackAfterMs: 600_000, sessionFallbackMs: 600_000, candidate: false, decideFollower, leadFromRead, stampErrorMs: 500, clockMeasured: true };
      return { s, lock, state: FOLLOWING, next: now, spread: i * 8 };
    });
    /** One poll, its reads carried out as the shell does. */
    async function poll(x: (typeof watches)[number]): Promise<void> {
      let out = followerStep(x.s, x.state, { kind: 'poll', pushLive: true }, at());
      for (;;) {
        x.state = out.state;
        for (const f of out.effects) if (f.kind === 'sessionCadence') reader.setCadence(f.name, f.phase);
        const fx = out.effects.at(-1);
        if (fx?.kind === 'readLease') out = followerStep(x.s, x.state, { kind: 'leaseRead', raw: await x.lock.get(fx.consistent) }, at());
        else if (fx?.kind === 'readSession') {
          const read = await reader.read(fx.name, fx.shareMs, fx.pendingMs);
          sentAts.add(read.sentAt); // one per read sent: a shared read keeps its sender's
          out = followerStep(x.s, x.state, { kind: 'sessionRead', read }, at());
        } else return;
      }
    }
    const RENEWALS = 40;
    const landings = Array.from({ length: RENEWALS }, (_, k) => (k + 1) * 5_000 + 7);
    let landed = 0;
    let from: number | undefined;
    const end = landings.at(-1)! + 2_000;
    while (now < end) {
      const wake = Math.min(...watches.map((x) => x.next + x.spread));
      const land = landings[landed] ?? Infinity;
      if (land <= wake) {
        now = land;
        await putSession(++landed);
        if (landed === 10) from = sentAts.size; // counted once every watcher has locked on
        continue;
      }
      now = wake;
      for (const x of watches.filter((y) => y.next + y.spread === wake)) {
        await poll(x);
        x.next = now + followerDelay(x.s, x.state, at(), true, 0.5); // the elector plans this; the process wakes it `spread` late
      }
    }
    const sessionReads = sentAts.size - from!;
    // 30 renewals after the first 10: one read each, and a probe with its short search now and then
    // (sharing only a read sent SHARED_READ_MS ago: 125, a read every 100 ms of the 400 the wake-ups spread over)
    expect(sessionReads).toBeLessThanOrEqual(Math.ceil(30 * 1.2));
    // every watcher saw the last renewal (its term runs on): none judged it from an older copy
    for (const x of watches) expect(x.state.lastRead?.renewTime).toBe(T0 + RENEWALS * 5_000);
  });
});

/**
 * The push path on simulated time (sim/harness.ts): real LeaderElectors given a Push
 * (sim/push.ts' broker; lib/sdk/push.ts' PushChannel is the same interface over MQTT), the real
 * coordinator, every lease write but a renewal published as a wake after the stream's hop. A wake
 * only makes an elector read sooner; the bounds below are the protocol's, in simulated ms.
 */
import { PutItemCommand } from '@aws-sdk/client-dynamodb';
import { marshall } from '@aws-sdk/util-dynamodb';
import { describe, expect, it } from 'vitest';
import type { ElectionConfigInput } from '../../lib/schemas/config.js';
import { ValidationError } from '../../lib/schemas/validation.js';
import { LeaderElector } from '../../lib/sdk/elector.js';
import { AWAIT_REREADS, PUSH_QUIET_LEASES } from '../../lib/sdk/step.js';
import { DynamoDBModel } from '../../sim/dynamodb-model/index.js';
import { FAST } from './harness.js';
import { LATENCY_MS, Sim, type Machine, type SimElector } from '../../sim/harness.js';

const L = 'job';
const CONFIG: ElectionConfigInput = { ackWindowMs: 500, electedLeaseDurationSeconds: 2 };
const RTT_MS = 2 * LATENCY_MS;
/** The lease stream's hop (a write landing → its wake published) and the broker's delivery. */
const STREAM_MS = 50;
const DELIVERY_MS = 5;
const WAKE_MS = STREAM_MS + DELIVERY_MS;

const leaders = (es: SimElector[]) => es.filter((e) => e.elector.isLeader());
const reads = (m: Machine, from: number) => m.sent.filter((r) => r.operation === 'GetItem' && r.at >= from && (r.input as { TableName?: string }).TableName?.endsWith('-leases')).length;

/** Three electors (or `ids`) with the push path, elected by the in-process coordinator; the lease names a successor (and, with four, a second successor). */
async function pushedGroup(opts: { coordinator?: boolean; ids?: string[] } = {}) {
  const sim = await Sim.create({ config: CONFIG });
  const push = sim.pushBroker({ delayMs: STREAM_MS, deliveryMs: DELIVERY_MS });
  const coord = sim.coordinator();
  const ids = opts.ids ?? ['a', 'b', 'c'];
  const es = ids.map((id) => {
    const machine = sim.machine();
    return sim.elector(id, { leaseName: L, fallbackAfterMs: 60_000, push: sim.pushFor(machine) }, { machine });
  });
  const leader = await sim.until('a leader', () => leaders(es)[0]);
  const held = await sim.until('a successor on the lease', async () => {
    const l = (await sim.leases.read(L)).item;
    return l?.successor && l.renewTime! > l.acquireTime! && !l.election && (ids.length < 4 || l.secondSuccessor) ? l : undefined;
  });
  if (opts.coordinator === false) coord.stop();
  const successor = es.find((e) => e.elector.options.identity === held.successor)!;
  const second = es.find((e) => e.elector.options.identity === held.secondSuccessor);
  // neither leader nor successor (nor, with four, the second successor)
  const other = es.find((e) => e !== leader && e !== successor && (ids.length < 4 || e !== second))!;
  return { sim, push, coord, es, leader, successor, second, other };
}

describe('LeaderElector with the push path', () => {
  it('is refused with NoCoordination, naming the option', () => {
    const sim = { watch: () => () => undefined, wake: () => undefined, healthy: () => true };
    const client = new DynamoDBModel({ now: () => 0 }).client({ name: 'test' });
    // @ts-expect-error: the option type refuses it too
    expect(() => new LeaderElector({ leaseName: L, identity: 'a', mode: 'NoCoordination', push: sim, client, callbacks: { onStartedLeading: () => undefined } })).toThrow(ValidationError);
    // @ts-expect-error: the option type refuses it too
    expect(() => new LeaderElector({ leaseName: L, identity: 'a', mode: 'NoCoordination', push: sim, client, callbacks: { onStartedLeading: () => undefined } })).toThrow(/push.*NoCoordination/s);
    expect(() => new LeaderElector({ leaseName: L, identity: 'a', push: { watch: 1 } as never, candidacy: { emulationVersion: '1.0.0', binaryVersion: '1.0.0' }, client, callbacks: { onStartedLeading: () => undefined } })).toThrow(/push: must be a PushChannel/);
  });

  it('a follower that is neither successor reads a quiet lease every two lease durations, not every two retry periods; the successor and the second successor still read each renewal', async () => {
    const { sim, leader, successor, second, other } = await pushedGroup({ ids: ['a', 'b', 'c', 'd'] });
    await sim.run(FAST.leaseDurationMs); // settled
    const from = sim.clock.monotonic();
    const windowMs = 10 * FAST.leaseDurationMs;
    await sim.run(windowMs);
    expect(leader.elector.isLeader()).toBe(true);
    const quiet = reads(other.machine, from);
    // every PUSH_QUIET_LEASES lease durations, jittered by a tenth (a read may fall on either edge)
    expect(quiet).toBeLessThanOrEqual(Math.ceil(windowMs / (PUSH_QUIET_LEASES * FAST.leaseDurationMs)) + 1);
    expect(quiet).toBeGreaterThanOrEqual(Math.floor(windowMs / (PUSH_QUIET_LEASES * FAST.leaseDurationMs * 1.1)) - 1);
    // without push it would read every 2–2.2 retry periods: 36 or more in this window
    expect(quiet).toBeLessThan(windowMs / (2.2 * FAST.retryPeriodMs) / 4);
    // the successor reads (about) once per renewal: crash detection is unchanged
    const renewals = Math.floor(windowMs / leader.elector.renewIntervalMs);
    expect(reads(successor.machine, from)).toBeGreaterThanOrEqual(renewals - 1);
    // …and so does the next in line, which takes the lease if the successor is dead too (issue 38)
    expect(reads(second!.machine, from)).toBeGreaterThanOrEqual(renewals - 1);
  });

  it('a cancelled leader hands over at once (no wait for its renewal slot) and the heir leads on the wake', async () => {
    const { sim, leader, successor } = await pushedGroup({ coordinator: false });
    await sim.run(3 * leader.elector.renewIntervalMs + 123);
    const stoppedAt = sim.clock.monotonic();
    await leader.stop();
    await sim.until('the heir leading', () => successor.elector.isLeader(), 5_000);
    const stopped = sim.log.of('stopped', leader.elector.options.identity).at(-1)!.at;
    const started = sim.log.of('started', successor.elector.options.identity).at(-1)!.at;
    // no renewal slot waited for: a read of the lease before stepping down
    expect(stopped - stoppedAt).toBeLessThanOrEqual(RTT_MS);
    // the heir's candidate row read and the hand-off write, the leader's own wake (the broker's delivery), then the heir's read and its confirming renewal
    expect(started - stopped).toBeLessThanOrEqual(DELIVERY_MS + 5 * RTT_MS + 2);
    expect(started - stopped).toBeLessThan(leader.elector.renewIntervalMs / 4); // not what the slot would have cost
    expect((await sim.leases.read(L)).item).toMatchObject({ holderIdentity: successor.elector.options.identity, electedBy: 'successor' });
    expect(sim.pushCounts['push:worker']).toBeGreaterThanOrEqual(1);
    expect(sim.log.maxConcurrentLeaders()).toBe(1);
  });

  it('a hand-off while wakes reach the leader: the heir’s row read at once after the stop, then the hand-over write, its wake beside it (issue 38, item 3)', async () => {
    const { sim, leader, successor } = await pushedGroup({ coordinator: false });
    await sim.run(3 * leader.elector.renewIntervalMs + 123);
    const from = leader.machine.sent.length;
    const stoppedAt = sim.clock.monotonic();
    const wakesBefore = sim.pushCounts['push:worker'] ?? 0;
    await leader.stop();
    await sim.until('the heir leading', () => successor.elector.isLeader(), 5_000);
    const sent = leader.machine.sent.slice(from);
    const table = (r: { input: unknown }) => String((r.input as { TableName?: string }).TableName ?? '');
    // the view of the lease is current while wakes reach the leader: no refresh, only the heir's
    // candidate row, read now (an heir that withdrew a moment before is not handed the term)
    const shown = sent.map((r) => `${r.at} ${r.operation} ${table(r)}`).join('\n');
    expect(sent[0] && sent[0].operation === 'GetItem' && table(sent[0]).endsWith('-candidates'), shown).toBe(true);
    expect(sent[0]!.at).toBe(stoppedAt);
    expect(sent[1] && sent[1].operation === 'UpdateItem' && table(sent[1]).endsWith('-leases'), shown).toBe(true);
    // two wakes: beside the write, and after its answer
    expect((sim.pushCounts['push:worker'] ?? 0) - wakesBefore).toBe(2);
    expect((await sim.leases.read(L)).item).toMatchObject({ holderIdentity: successor.elector.options.identity, electedBy: 'successor' });
    expect(sim.log.maxConcurrentLeaders()).toBe(1);
  });

  it('an election: every candidate answers the ping on the wake, so the coordinator elects without waiting for polls', async () => {
    const { sim, es, leader, coord } = await pushedGroup({ coordinator: false });
    // succession off in effect: the lease is released with nobody named, so the coordinator must elect
    coord.stop();
    await sim.run(FAST.leaseDurationMs);
    const rest = es.filter((e) => e !== leader);
    const l = (await sim.leases.read(L)).item!;
    await sim.client.send(new PutItemCommand({ TableName: sim.names.leases, Item: marshall({ ...l, holderIdentity: undefined, holderInstance: undefined, successor: undefined, successorInstance: undefined, revision: l.revision + 1 }, { removeUndefinedValues: true }) }));
    await leader.stop();
    const c2 = sim.coordinator();
    const from = sim.clock.monotonic();
    const winner = await sim.until('a new leader', () => leaders(rest)[0], 10_000);
    const took = sim.clock.monotonic() - from;
    // the coordinator's reconcile opens the election (its loop runs every 100 ms), each candidate
    // answers on the wake (the stream's hop), the next reconcile elects, the winner confirms on the wake
    expect(took).toBeLessThanOrEqual(2 * (100 + WAKE_MS) + 12 * RTT_MS);
    expect(took).toBeLessThan(CONFIG.ackWindowMs!); // not the timer's path
    expect(winner).toBeDefined();
    expect(c2.errors).toEqual([]);
  });

  it('a preemption is answered on the wake, not at the holder’s next renewal', async () => {
    const sim = await Sim.create({ config: CONFIG });
    sim.pushBroker({ delayMs: STREAM_MS, deliveryMs: DELIVERY_MS });
    sim.coordinator();
    const started = (id: string, versions: [string, string]) => {
      const machine = sim.machine();
      return sim.elector(id, { leaseName: L, push: sim.pushFor(machine) }, { machine, versions });
    };
    const a = started('a', ['1.30.0', '1.31.0']);
    await sim.until('a to lead', () => a.elector.isLeader());
    await sim.run(3 * a.elector.renewIntervalMs);
    const joined = sim.clock.now();
    const b = started('b', ['1.29.0', '1.31.0']); // older emulation version: it must lead
    await sim.until('b to lead', () => b.elector.isLeader(), 10_000);
    const yielded = sim.log.of('stopped', 'a').at(-1)!;
    expect(yielded.reason).toBe('preempted');
    // the coordinator's preemption (its loop every 100 ms, after b's row), then a's yield on the wake:
    // a read, and the hand-off's candidate read — not a's next renewal, up to a renew interval later
    const preempted = sim.leaseWrites.find((w) => w.at >= joined && w.item?.['preferredHolder'] === 'b')!;
    expect(preempted.by).toBe('coordinator');
    expect(yielded.at - preempted.at).toBeLessThanOrEqual(WAKE_MS + 2 * RTT_MS + 2);
    const handed = sim.leaseWrites.find((w) => w.at >= joined && w.item?.['holderIdentity'] === 'b')!;
    expect(handed.by).toBe('machine-1'); // a handed its term to b in one write
    expect(handed.at - preempted.at).toBeLessThanOrEqual(WAKE_MS + 4 * RTT_MS + 2);
    expect(sim.log.maxConcurrentLeaders()).toBe(1);
  });

  it('a leader woken to a term that moved on (an operator gave the lease to someone else) stops at once, not at its next renewal', async () => {
    const { sim, push, leader } = await pushedGroup({ coordinator: false });
    await sim.run(leader.elector.renewIntervalMs / 2);
    const l = (await sim.leases.read(L)).item!;
    const overwrittenAt = sim.clock.monotonic();
    await sim.client.send(new PutItemCommand({ TableName: sim.names.leases, Item: marshall({ ...l, holderIdentity: 'operator-pick', holderInstance: 'x', fencingToken: l.fencingToken + 1, termToken: l.fencingToken + 1, revision: l.revision + 1 }, { removeUndefinedValues: true }) }));
    // the operator's client is outside the simulated network: its write's wake is published here, as the stream's function would
    sim.clock.setTimer(STREAM_MS, () => push.broker.publish({ lease: L, by: 'stream', revision: l.revision + 1 }));
    await sim.until('the leader to stop', () => !leader.elector.isLeader(), 10_000);
    expect(sim.clock.monotonic() - overwrittenAt).toBeLessThanOrEqual(WAKE_MS + RTT_MS);
    expect(sim.log.of('stopped', leader.elector.options.identity).at(-1)!.reason).toBe('deposed');
  });

  it('while the broker is down the followers poll as without push; when it is back everyone reads at once', async () => {
    const { sim, push, other } = await pushedGroup();
    await sim.run(FAST.leaseDurationMs);
    push.down();
    const downAt = sim.clock.monotonic();
    await sim.run(10 * FAST.retryPeriodMs);
    // the change woke it (it reads once), then the quiet poll of two retry periods (or the watch near a term's end)
    expect(reads(other.machine, downAt)).toBeGreaterThanOrEqual(4);
    await sim.run(2 * FAST.leaseDurationMs); // the term-end watch settles
    const upAt = sim.clock.monotonic();
    push.up();
    await sim.run(DELIVERY_MS + RTT_MS + 1);
    expect(reads(other.machine, upAt)).toBe(1); // woken by the broker coming back: a wake may have been missed
  });

  it('a wake for the very revision the worker has read costs nothing; any other (newer, or a re-created row counting from 1 again) is read', async () => {
    const { sim, push, other } = await pushedGroup();
    await sim.run(FAST.leaseDurationMs);
    await sim.run(1);
    const seen = (other.elector as unknown as { known: { observed: { revision: number } } }).known.observed.revision;
    const from = sim.clock.monotonic();
    push.broker.publish({ lease: L, by: 'worker', revision: seen });
    await sim.run(DELIVERY_MS + RTT_MS);
    expect(reads(other.machine, from)).toBe(0);
    // a revision not written yet (a hand-over's wake goes out beside its write): read, then read again
    // at once while the row is older, AWAIT_REREADS times at most
    push.broker.publish({ lease: L, by: 'worker', revision: seen + 1000 });
    await sim.run(DELIVERY_MS + (1 + AWAIT_REREADS) * RTT_MS + 1);
    expect(reads(other.machine, from)).toBe(1 + AWAIT_REREADS);
    await sim.run(FAST.retryPeriodMs / 2);
    expect(reads(other.machine, from)).toBe(1 + AWAIT_REREADS);
    if (seen > 1) {
      push.broker.publish({ lease: L, by: 'worker', revision: 1 });
      await sim.run(DELIVERY_MS + RTT_MS + 1);
      expect(reads(other.machine, from)).toBe(2 + AWAIT_REREADS);
    }
  });
});

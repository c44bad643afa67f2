/**
 * Faults as users bring them (issue 36, items 1, 2, 3 and 8), on simulated time at client-go's
 * timings (15/10/2 s) unless said: a denied or malformed lease read is retried with backoff, never
 * in a hot loop; a worker outlives an unreachable DynamoDB; a leader whose work died gives the term
 * up; a renewal that shows its term rewritten ends it. Each test fails with its fix reverted.
 */
import { GetItemCommand, PutItemCommand, UpdateItemCommand } from '@aws-sdk/client-dynamodb';
import { marshall, unmarshall } from '@aws-sdk/util-dynamodb';
import { describe, expect, it, vi } from 'vitest';
import { ValidationError } from '../../lib/schemas/validation.js';
import { DuplicateIdentityError, DynamoDBRefusedError, FencingError, LeaderWorkError } from '../../lib/sdk/index.js';
import { WOKEN_READS, WOKEN_READS_WINDOW_MS } from '../../lib/sdk/step.js';
import { mayHaveLanded } from '../../lib/sdk/faults.js';
import { FAST } from './harness.js';
import { CLIENT_GO, CONFIG, L, bound, group, leaders, onLeases } from './fault-group.js';
import type { LeaderElectorOptions } from '../../lib/sdk/elector.js';
import { LATENCY_MS, Sim, type Machine, type SimElector } from '../../sim/harness.js';
import { faults as ddbFaults } from '../../sim/dynamodb-model/index.js';

const WINDOW_MS = 30_000;

const leaseReads = (sim: Sim, m: Machine, from: number) => m.sent.filter((r) => r.operation === 'GetItem' && onLeases(sim, r) && r.at >= from).length;
const denied = () => Object.assign(new Error('User is not authorized to perform: dynamodb:GetItem'), { name: 'AccessDeniedException', $fault: 'client', $metadata: { httpStatusCode: 400 } });



describe('no hot loops (item 1): a failed lease read is retried with backoff', () => {
  it('AccessDenied on every lease read: the successor reads at most once per retry period, and onError hears once per try', async () => {
    const { sim, successor, errors } = await group();
    const from = sim.clock.monotonic();
    successor.machine.fault = (r) => (r.operation === 'GetItem' && onLeases(sim, r) ? denied() : undefined);
    const before = errors(successor).length;
    await sim.run(WINDOW_MS);
    const reads = leaseReads(sim, successor.machine, from);
    const reported = errors(successor).slice(before);
    expect(reads).toBeGreaterThanOrEqual(3); // it keeps trying
    expect(reads).toBeLessThanOrEqual(bound(WINDOW_MS)); // before the fix: 7,819 in 30 s
    expect(reported.length).toBeLessThanOrEqual(reads);
    expect(reported.every((e) => e instanceof DynamoDBRefusedError && e.kind === 'denied')).toBe(true);
    expect(reported[0]!.message).toMatch(/LeaderElector "\w" of lease "job": DynamoDB refused the request \(AccessDeniedException.*check the worker's role \(grantWorker\)/);
  });

  it('a lease row the schema refuses: each follower reads it at most once per retry period', async () => {
    const { sim, es, leader, errors } = await group();
    const row = unmarshall((await sim.client.send(new GetItemCommand({ TableName: sim.names.leases, Key: marshall({ name: L }) }))).Item!);
    const from = sim.clock.monotonic();
    await sim.client.send(new PutItemCommand({ TableName: sim.names.leases, Item: marshall({ ...row, leaseTransitions: -1 }) }));
    await sim.run(WINDOW_MS);
    for (const e of es.filter((x) => x !== leader)) {
      // the reads that saw the broken row: those that landed after the write (one sent just before it may have)
      const reads = leaseReads(sim, e.machine, from - LATENCY_MS);
      expect(reads).toBeLessThanOrEqual(bound(WINDOW_MS)); // before the fix: 6,234 in 30 s
      expect(errors(e).filter((x) => x instanceof ValidationError).length).toBeLessThanOrEqual(reads);
    }
  });

  it('DynamoDB down for everyone after start: each process reports at most once per retry period, and they elect again once it is back', async () => {
    const { sim, es, errors } = await group();
    const before = es.map((e) => errors(e).length);
    const outage = Object.assign(new Error('service unavailable'), { name: 'ServiceUnavailable', $fault: 'server', $metadata: { httpStatusCode: 503 } });
    for (const e of es) e.machine.fault = () => outage;
    await sim.run(32_000);
    es.forEach((e, i) => {
      // the elector's polls and renewals, its candidacy's renewal: before the fix, 86 in 32 s
      expect(errors(e).length - before[i]!).toBeLessThanOrEqual(bound(32_000));
    });
    expect(leaders(es)).toEqual([]); // nobody renewed: the leader stopped at its renew deadline
    for (const e of es) e.machine.fault = undefined;
    const healedAt = sim.clock.monotonic();
    await sim.until('a leader again', () => leaders(es)[0], 120_000);
    expect(sim.clock.monotonic() - healedAt).toBeLessThanOrEqual(60_000); // the checker's leaderless bound after a heal
  });
});

describe('a worker never exits on a fault it can outlive (item 2)', () => {
  it('a worker whose every request fails at start keeps trying, reports each try, and leads once DynamoDB answers', async () => {
    const sim = await Sim.create({ config: CONFIG });
    sim.coordinator({ tickEveryMs: 1_000 });
    const m = sim.machine();
    m.fault = () => Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:1'), { code: 'ECONNREFUSED' });
    const errors: Error[] = [];
    const e = sim.elector('lone', { leaseName: L, ...CLIENT_GO }, { machine: m, errors });
    let settled: string | undefined;
    e.done.then(() => (settled = 'resolved'), () => (settled = 'rejected'));
    await sim.run(60_000);
    expect(settled).toBeUndefined(); // before the fix: rejected at once
    expect(errors.length).toBeGreaterThanOrEqual(3);
    // what to check: the model's client shows its own endpoint (model://dynamodb-model)
    expect(errors.length).toBeLessThanOrEqual(60); // backoff: not a hot loop
    expect(errors.every((x) => x.name === 'DynamoDBUnreachableError' && /cannot reach DynamoDB at .* \(ECONNREFUSED\): check the client's endpoint and region/.test(x.message))).toBe(true);
    m.fault = undefined;
    await sim.until('it leads', () => e.elector.isLeader(), 120_000);
    await e.stop();
    expect(settled).toBe('resolved');
  });
});

describe("an onError that throws or rejects changes nothing: what it threw is a process warning", () => {
  it.each(['throws', 'rejects'] as const)('an onError that %s: the worker keeps trying through a DynamoDB outage and leads once it answers', async (how) => {
    const warned: unknown[] = [];
    const spy = vi.spyOn(process, 'emitWarning').mockImplementation((w: unknown) => void warned.push(w));
    try {
      const sim = await Sim.create({ config: CONFIG });
      sim.coordinator({ tickEveryMs: 1_000 });
      const m = sim.machine();
      m.fault = () => Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:1'), { code: 'ECONNREFUSED' });
      const told: Error[] = [];
      const onError = (e: Error) => {
        told.push(e);
        if (how === 'throws') throw new Error('the alarm is down');
        return Promise.reject(new Error('the alarm is down')) as unknown as void;
      };
      const e = sim.elector('lone', { leaseName: L, ...CLIENT_GO, onError }, { machine: m });
      let settled: string | undefined;
      e.done.then(() => (settled = 'resolved'), () => (settled = 'rejected'));
      await sim.run(30_000);
      expect(settled).toBeUndefined(); // before the fix: rejected with 'the alarm is down' (or an unhandled rejection)
      expect(told.length).toBeGreaterThanOrEqual(3);
      m.fault = undefined;
      await sim.until('it leads', () => e.elector.isLeader(), 120_000);
      await e.stop();
      expect(settled).toBe('resolved');
      const fromOnError = warned.filter((w): w is Error => w instanceof Error && /onError threw while told: /.test(w.message));
      expect(fromOnError.length).toBe(told.length);
      expect(fromOnError[0]!.message).toMatch(/^LeaderElector "lone" of lease "job": onError threw while told: cannot reach DynamoDB/);
      expect((fromOnError[0]!.cause as Error).message).toBe('the alarm is down');
    } finally {
      spy.mockRestore();
    }
  });
});

describe('no zombie leaders (item 3)', () => {
  /** Three electors with the push path whose work is `work`; the leader's fails when `fail` is called. */
  async function workers(opts: Partial<LeaderElectorOptions> = {}) {
    const sim = await Sim.create({ config: CONFIG });
    sim.pushBroker({ delayMs: 50, deliveryMs: 5 });
    sim.coordinator({ tickEveryMs: 1_000 });
    const failures: ((e: Error) => void)[] = [];
    const errors: Error[] = [];
    const es = ['a', 'b', 'c'].map((id) => {
      const machine = sim.machine();
      return sim.elector(
        id,
        {
          leaseName: L,
          ...CLIENT_GO,
          push: sim.pushFor(machine),
          callbacks: {
            onStartedLeading: (signal) =>
              new Promise<void>((_, reject) => {
                failures.push(reject);
                sim.log.add({ who: id, what: 'started' });
                signal.addEventListener('abort', () => reject(signal.reason));
              }),
            onStoppedLeading: ({ reason }) => sim.log.add({ who: id, what: 'stopped', reason }),
          },
          ...opts,
        },
        { machine, errors },
      );
    });
    const leader = await sim.until('a leader', () => leaders(es)[0], 120_000);
    await sim.until('a successor named', async () => (await sim.leases.read(L)).item?.successor, 120_000);
    await sim.run(20_000); // a settled term
    return { sim, es, leader, fail: () => failures.at(-1)!(new Error('fencedWrite: table app-jobs not found')), errors };
  }

  it('the work rejects: the term ends (workFailed) and a follower leads within 1 s', async () => {
    const { sim, es, leader, fail, errors } = await workers();
    const failedAt = sim.clock.monotonic();
    fail();
    const next = await sim.until('another leader', () => leaders(es).find((e) => e !== leader), 5_000);
    expect(sim.clock.monotonic() - failedAt).toBeLessThanOrEqual(1_000);
    expect(next).not.toBe(leader);
    expect(sim.log.of('stopped', leader.elector.options.identity).at(-1)).toMatchObject({ reason: 'workFailed' });
    const reported = errors.find((e) => e instanceof LeaderWorkError) as LeaderWorkError;
    expect(reported.outcome).toBe('givenUp');
    expect(reported.message).toMatch(/the leader's work for lease "job" .* failed: fencedWrite: table app-jobs not found; the term is given up/);
    expect(sim.log.maxConcurrentLeaders()).toBe(1);
  });

  it('cancelled while its failed work’s give-up is in flight: run() resolves only once the term is released', async () => {
    // NoCoordination: no candidacy to withdraw, whose round trip would hide the race
    const sim = await Sim.create({});
    let fail: ((e: Error) => void) | undefined;
    const stopped: string[] = [];
    const e = sim.elector('a', {
      leaseName: L,
      mode: 'NoCoordination',
      ...CLIENT_GO,
      callbacks: { onStartedLeading: () => new Promise<void>((_, reject) => void (fail = reject)), onStoppedLeading: ({ reason }) => void stopped.push(reason) },
    });
    await sim.until('it leads', () => e.elector.isLeader(), 30_000);
    await sim.run(3_000);
    fail!(new Error('the work broke'));
    e.controller.abort();
    // the row as run() resolves (read at once: the model answers without latency)
    const row = (await sim.settle(e.done.then(() => sim.leases.read(L)), 'run() to resolve')).item;
    // before the fix: still held, its release landing after run() had resolved (a process exiting then loses it)
    expect(row?.holderIdentity).toBeUndefined();
    expect(stopped).toEqual(['workFailed']);
  });

  it('a work that rejects once its term’s signal aborts is stopping as asked: no LeaderWorkError on a cancel or a hand-over', async () => {
    const { sim, es, leader, errors } = await workers();
    await leader.stop();
    const next = await sim.until('another leader', () => leaders(es).find((e) => e !== leader), 30_000);
    await next.stop();
    // before the fix: each step-down reported "the leader's work … failed: cancelled; the term had already ended"
    expect(errors.filter((e) => e instanceof LeaderWorkError)).toEqual([]);
    expect(sim.log.of('stopped', leader.elector.options.identity).at(-1)).toMatchObject({ reason: 'cancelled' });
  });

  it('an onNewLeader that throws is reported, and the term it told of is led: its work starts and its renew deadline is armed', async () => {
    const sim = await Sim.create({});
    const errors: Error[] = [];
    const started: number[] = [];
    const e = sim.elector(
      'a',
      {
        leaseName: L,
        mode: 'NoCoordination',
        ...CLIENT_GO,
        callbacks: {
          onNewLeader: () => {
            throw new Error('the dashboard is down');
          },
          onStartedLeading: (_signal, { fencingToken }) => void started.push(fencingToken),
        },
      },
      { errors },
    );
    await sim.until('it leads', () => e.elector.isLeader(), 30_000);
    await sim.run(CLIENT_GO.leaseDurationMs);
    // before the fix: isLeader() true and the lease renewed, but onStartedLeading never called
    expect(started).toEqual([e.elector.fencingToken]);
    expect(errors.map((x) => (x.cause as Error | undefined)?.message)).toContain('the dashboard is down');
    expect(e.elector.healthy()).toBe(true);
    await e.stop();
  });

  it('onNewLeader and onStoppedLeading failing are told as the callback failing, naming the elector and the callback, never as a DynamoDB fault', async () => {
    const sim = await Sim.create({});
    const errors: Error[] = [];
    // the user's own HTTP call refused, and an error of the user's that happens to share a DynamoDB error's name
    const refused = Object.assign(new Error('connect ECONNREFUSED 10.0.0.9:8080'), { code: 'ECONNREFUSED', errno: -111, syscall: 'connect' });
    const throttled = Object.assign(new Error('my queue is throttled'), { name: 'ThrottlingException' });
    const e = sim.elector(
      'a',
      {
        leaseName: L,
        mode: 'NoCoordination',
        ...CLIENT_GO,
        callbacks: {
          onNewLeader: async () => {
            throw refused;
          },
          onStartedLeading: () => undefined,
          onStoppedLeading: () => {
            throw throttled;
          },
        },
      },
      { errors },
    );
    await sim.until('it leads', () => e.elector.isLeader(), 30_000);
    await e.stop();
    // before the fix: "DynamoDBUnreachableError: cannot reach DynamoDB at …" and "DynamoDB throttled the request (ThrottlingException)"
    expect(errors.map((x) => x.name)).toEqual(['Error', 'Error']);
    const [newLeader, stopped] = errors as [Error, Error];
    expect(newLeader.message).toBe('LeaderElector "a" of lease "job": onNewLeader("a") threw: Error: connect ECONNREFUSED 10.0.0.9:8080; the elector goes on as if it had returned');
    expect(newLeader.cause).toBe(refused);
    expect(stopped.message).toMatch(/^LeaderElector "a" of lease "job": onStoppedLeading \(reason cancelled, term with fencing token \d+\) threw: ThrottlingException: my queue is throttled; the elector goes on as if it had returned$/);
    expect(stopped.cause).toBe(throttled);
  });

  it("onLeaderWorkFailure: 'keep' keeps today's behaviour: the lease stays with the leader, and the failure is reported", async () => {
    const { sim, es, leader, fail, errors } = await workers({ onLeaderWorkFailure: 'keep' });
    fail();
    await sim.run(30_000);
    expect(leaders(es)).toEqual([leader]);
    expect(errors.find((e) => e instanceof LeaderWorkError)).toMatchObject({ outcome: 'kept' });
  });
});

describe('a renewal checks what it renewed (item 8)', () => {
  it('a fencing token moved under the leader: it stops at its next renewal and the lease is elected again', async () => {
    const { sim, es, leader } = await group();
    const held = (await sim.leases.read(L)).item!;
    // an operator's (or a peer's) write: the token moves, the term's token copy stays
    await sim.client.send(
      new UpdateItemCommand({
        TableName: sim.names.leases,
        Key: marshall({ name: L }),
        UpdateExpression: 'SET fencingToken = :t',
        ExpressionAttributeValues: marshall({ ':t': held.fencingToken + 7 }),
      }),
    );
    const movedAt = sim.clock.monotonic();
    await sim.until('the leader stops', () => !leader.elector.isLeader(), 20_000);
    // its next renewal showed it: within a renew interval and a retry
    expect(sim.clock.monotonic() - movedAt).toBeLessThanOrEqual(CLIENT_GO.renewDeadlineMs);
    expect(sim.log.of('stopped', leader.elector.options.identity).at(-1)).toMatchObject({ reason: 'deposed' });
    const next = await sim.until('a leader again', () => leaders(es)[0], 60_000);
    // before the fix: the leader led on for 60 s with every fenced write refused, and nobody took over
    expect(sim.clock.monotonic() - movedAt).toBeLessThanOrEqual(CLIENT_GO.renewDeadlineMs + CONFIG.ackWindowMs! + 5_000);
    expect((await sim.leases.read(L)).item!.fencingToken).toBeGreaterThan(held.fencingToken + 7);
    expect(next.elector.fencingToken).toBe((await sim.leases.read(L)).item!.fencingToken);
  });
});

describe("a renewal a transaction on the lease row refused (the work's own fenced writes)", () => {
  it('four tries in five refused with TransactionConflictException: the leader keeps its term, trying again within moments, never in a hot loop', async () => {
    const { sim, leader, errors } = await group();
    const token = leader.elector.fencingToken;
    const from = sim.clock.monotonic();
    const before = errors(leader).length;
    let tries = 0;
    // each renewal meets a transaction on the row four times before it lands (fencedWrite in a busy loop)
    leader.machine.fault = (r) => (r.operation === 'UpdateItem' && onLeases(sim, r) && ++tries % 5 !== 0 ? ddbFaults.transactionConflict() : undefined);
    await sim.run(WINDOW_MS);
    // before the fix: tried again a retry period later (2 s), twice, and the term stopped at its renew deadline
    expect(leader.elector.isLeader()).toBe(true);
    expect(leader.elector.fencingToken).toBe(token);
    expect(sim.log.of('stopped', leader.elector.options.identity).filter((x) => x.at >= from)).toEqual([]);
    const writes = leader.machine.sent.filter((r) => r.operation === 'UpdateItem' && onLeases(sim, r) && r.at >= from).length;
    expect(writes).toBeGreaterThanOrEqual(10); // it renewed on and on: five tries a renewal
    expect(writes).toBeLessThanOrEqual(5 * (WINDOW_MS / 5_000 + 1)); // five tries a renew interval, no more
    const told = errors(leader).slice(before);
    expect(told.length).toBeGreaterThan(0);
    expect(told.every((e) => e.name === 'TransactionConflictException')).toBe(true);
  });
});

describe('one identity, one process (item 4)', () => {
  it('a second process started with a live worker’s identity is refused, naming the identity and both start-ups; the first stands on', async () => {
    const { sim, es, errors } = await group();
    const first = es.find((e) => e.elector.options.identity === 'b')!;
    const late: Error[] = [];
    const second = sim.elector('b', { leaseName: L, ...CLIENT_GO }, { errors: late });
    const refusal = await sim.settle(second.done.then(() => undefined, (e: unknown) => e as Error), 'the second start-up refused', 60_000);
    expect(refusal?.name).toBe('DuplicateIdentityError');
    expect(refusal?.message).toContain(`identity "b" of lease "job" is in use by a live process (start-up ${first.elector.instance} answered); this start-up (${second.elector.instance}) is refused`);
    // the first said so too, and still stands: its candidate row is its own
    expect(errors(first).some((e) => e.name === 'DuplicateIdentityError' && e.message.includes(`start-up ${second.elector.instance} tried to stand under identity "b"`))).toBe(true);
    expect((await sim.candidates.read(L, 'b')).item!.identity).toBe(first.elector.instance);
    await sim.run(CLIENT_GO.leaseDurationMs);
    expect((await sim.candidates.read(L, 'b')).item!.identity).toBe(first.elector.instance);
  });

  it('a second LeaderElector of the same process under the same identity and lease is refused with the fix that applies there too: one elector per lease, or an identity each (not only a unique identity per process)', async () => {
    const { sim, es, errors } = await group();
    const first = es.find((e) => e.elector.options.identity === 'b')!;
    // the same machine: the same process
    const second = sim.elector('b', { leaseName: L, ...CLIENT_GO }, { machine: first.machine, errors: [] });
    const refusal = await sim.settle(second.done.then(() => undefined, (e: unknown) => e as Error), 'the second elector refused', 60_000);
    expect(refusal).toBeInstanceOf(DuplicateIdentityError);
    // before the fix: "is in use by a live process …: give each process a unique identity (for example the host name and the pid)";
    // and before that advice was fixed, the host name and pid it gave collided for two containers on one host's network (PID 1 in each)
    expect(refusal?.message).toBe(
      `identity "b" of lease "job" is in use by a live process (start-up ${first.elector.instance} answered); this start-up (${second.elector.instance}) is refused: give each process a unique identity (the pod's name, the ECS task ARN, or the host name and a randomUUID(); not the host name and the pid, which containers on one host's network share, node being PID 1 in each), and each LeaderElector of one process on this lease an identity of its own`,
    );
    await expect(second.elector.ready).rejects.toBe(refusal);
    const held = errors(first).find((e) => e.name === 'DuplicateIdentityError');
    expect(held?.message).toBe(
      `start-up ${second.elector.instance} tried to stand under identity "b" of lease "job", which this start-up (${first.elector.instance}) holds; it was refused: give each process a unique identity (the pod's name, the ECS task ARN, or the host name and a randomUUID(); not the host name and the pid, which containers on one host's network share, node being PID 1 in each), and each LeaderElector of one process on this lease an identity of its own`,
    );
  });

  it('DuplicateIdentityError: two instances naming one process (its Session) are of this process; others, or none named, a live process elsewhere', () => {
    const one = new DuplicateIdentityError('w', 'job', 'w_1@p-1', 'w_2@p-1', 'refused');
    expect(one.message).toContain('is in use by another LeaderElector in this process');
    expect(one.message).not.toContain('unique identity');
    for (const [refused, holder] of [['w_1@p-1', 'w_2@p-2'], ['w_1', 'w_2']] as const) {
      const other = new DuplicateIdentityError('w', 'job', refused, holder, 'held');
      expect(other.message).toMatch(/^start-up \S+ tried to stand .*: give each process a unique identity \(the pod's name, the ECS task ARN, or the host name and a randomUUID\(\); not the host name and the pid, which containers on one host's network share, node being PID 1 in each\), and each LeaderElector of one process on this lease an identity of its own$/);
    }
  });

  it('a worker restarted after kill -9 under the same identity takes its row over once the claim goes unanswered, and can lead', async () => {
    const { sim, es, leader } = await group();
    const id = leader.elector.options.identity;
    leader.machine.kill();
    const errs: Error[] = [];
    const again = sim.elector(id, { leaseName: L, ...CLIENT_GO }, { errors: errs });
    await sim.settle(again.elector.ready, 'the restarted worker to stand', 60_000);
    expect((await sim.candidates.read(L, id)).item!.identity).toBe(again.elector.instance);
    expect(errs.filter((e) => e.name === 'DuplicateIdentityError')).toEqual([]);
    // the others lead meanwhile; and it may lead again: stop them
    await sim.until('a leader among the rest', () => leaders(es.filter((e) => e !== leader))[0], 60_000);
    for (const e of es.filter((x) => x !== leader)) await e.stop();
    await sim.until('the restarted worker leads', () => again.elector.isLeader(), 120_000);
  });
});

describe('a request a leader waits on that is never answered (a black-holed connection)', () => {
  /** Three coordinated electors at client-go's timings with the push path, settled; the leader, and another process's connection to wake it with. */
  async function wokenLeader() {
    const sim = await Sim.create({ config: CONFIG });
    sim.pushBroker({ delayMs: 50, deliveryMs: 5 });
    sim.coordinator({ tickEveryMs: 1_000 });
    const errors = new Map<SimElector, Error[]>();
    const es = ['a', 'b', 'c'].map((id) => {
      const m = sim.machine();
      const list: Error[] = [];
      const e = sim.elector(id, { leaseName: L, ...CLIENT_GO, push: sim.pushFor(m) }, { machine: m, errors: list });
      errors.set(e, list);
      return e;
    });
    const leader = await sim.until('a leader', () => leaders(es)[0], 120_000);
    await sim.run(20_000); // settled: a few renewals
    return { sim, m: leader.machine, leader, errors: errors.get(leader)!, other: sim.pushFor(sim.machine()) };
  }

  // woken 5 s or more after a renewal (the next goes out 5,863 ms after it): the client's own bound (5 s) would hold the loop past the renew deadline
  it.each([5_000, 5_600])('woken %i ms after a renewal, its read of the lease is abandoned in time to renew: it leads on in the same term', async (afterMs) => {
    const { sim, m, leader, errors, other } = await wokenLeader();
    const token = leader.elector.fencingToken;
    // the next renewal, then `afterMs`: the wake
    const renewals = () => m.sent.filter((r) => r.operation === 'UpdateItem' && onLeases(sim, r) && r.ok).length;
    const before = renewals();
    await sim.until('a renewal', () => renewals() > before);
    await sim.run(afterMs);
    let swallowed = 0;
    m.swallow = (r) => r.operation === 'GetItem' && onLeases(sim, r) && swallowed++ === 0;
    other.wake(L, 1_000_000); // a change it has not seen: it reads the lease
    await sim.until('the read sent and swallowed', () => swallowed > 0);
    // before the fix the read waited out the client's bound (5 s), past the renew deadline, and the term stopped
    await sim.during(30_000, 'a leads throughout', () => leader.elector.isLeader());
    expect(leader.elector.fencingToken).toBe(token);
    expect(errors.some((e) => e.name === 'DynamoDBUnreachableError' && /timed out/.test(e.message))).toBe(true); // the abandoned read, told as a timeout
  });
});

describe('a flood of wakes (forged, repeated, or from a push path that keeps reconnecting)', () => {
  it('each follower reads the lease at most WOKEN_READS times a window for it, however many wakes come; and still follows a change', async () => {
    const sim = await Sim.create({ config: { ackWindowMs: 500, electedLeaseDurationSeconds: 2 } });
    const push = sim.pushBroker({ delayMs: 50, deliveryMs: 5 });
    sim.coordinator();
    const es = ['a', 'b', 'c'].map((id) => {
      const machine = sim.machine();
      return sim.elector(id, { leaseName: L, fallbackAfterMs: 60_000, push: sim.pushFor(machine) }, { machine });
    });
    const leader = await sim.until('a leader', () => leaders(es)[0], 60_000);
    await sim.run(FAST.leaseDurationMs);
    const from = sim.clock.monotonic();
    for (let i = 0; i < 1000; i++) sim.clock.setTimer(i, () => push.broker.publish({ lease: L, by: 'worker' }));
    await sim.run(1_000);
    const reads = (m: Machine) => m.sent.filter((r) => r.operation === 'GetItem' && onLeases(sim, r) && r.at >= from).length;
    // before the fix: 249 reads each in that second, one per round trip
    for (const e of es.filter((x) => x !== leader)) expect(reads(e.machine)).toBeLessThanOrEqual(WOKEN_READS * Math.ceil(1_000 / WOKEN_READS_WINDOW_MS) + 2);
    // the flood spent, a hand-over is followed as before
    await leader.stop();
    await sim.until('another leader', () => leaders(es).find((e) => e !== leader), 10_000);
  });
});

describe('mayHaveLanded: whether a failed write may have landed all the same (a take in doubt holds its session)', () => {
  const err = (name: string, extra: Record<string, unknown> = {}) => Object.assign(new Error(name), { name, ...extra });
  it.each([
    ['a timeout', err('TimeoutError'), true],
    ['a connection reset', Object.assign(new Error('socket hang up'), { code: 'ECONNRESET' }), true],
    ['DynamoDB failing on its side', err('InternalServerError', { $fault: 'server' }), true],
    ['throttled, tried once', err('ProvisionedThroughputExceededException', { $metadata: { attempts: 1 } }), false],
    ['throttled after the SDK sent it 3 times (an earlier try may have landed, its answer lost)', err('ProvisionedThroughputExceededException', { $metadata: { attempts: 3 } }), true],
    ['denied', err('AccessDeniedException', { $metadata: { attempts: 1 } }), false],
    ['no credentials (nothing sent)', err('CredentialsProviderError'), false],
    ['a row the schema refuses', new ValidationError('lease "x"', []), false],
  ] as const)('%s: %s', (_, e, want) => {
    expect(mayHaveLanded(e)).toBe(want);
  });
});

describe("README's worker: a FencingError rethrown ends the term (the term is over: stop)", () => {
  it('the lease moved on under the leader before it read it: its work rethrows the refusal and the term ends as deposed, with no LeaderWorkError, no backoff and no release', async () => {
    const sim = await Sim.create({});
    const errors: Error[] = [];
    const stopped: string[] = [];
    const signals: AbortSignal[] = [];
    // renewals far apart: the refusal reaches the work before any renewal or read shows the move
    const e = sim.elector(
      'a',
      {
        leaseName: L,
        mode: 'NoCoordination',
        ...CLIENT_GO,
        renewIntervalMs: 7_000,
        callbacks: {
          // as in README.md "A worker, in full"
          async onStartedLeading(signal, term) {
            signals.push(signal);
            while (!signal.aborted) {
              await term.fencedWrite({ TransactItems: [{ Put: { TableName: sim.names.candidates, Item: marshall({ leaseName: 'reports', name: 'today', by: term.fencingToken }) } }] }).catch((err: unknown) => {
                if (err instanceof FencingError) throw err; // the term is over: stop
              });
              await sim.clock.sleep(1_000);
            }
          },
          onStoppedLeading: ({ reason }) => void stopped.push(reason),
        },
      },
      { errors },
    );
    await sim.until('it leads', () => e.elector.isLeader(), 30_000);
    await sim.run(2_500);
    const held = (await sim.leases.read(L)).item!;
    const from = sim.clock.monotonic();
    // an operator's forced release, or a preemption, this leader has not read yet: the lease is in a later term
    await sim.client.send(new UpdateItemCommand({ TableName: sim.names.leases, Key: marshall({ name: L }), UpdateExpression: 'SET fencingToken = :t', ExpressionAttributeValues: marshall({ ':t': held.fencingToken + 7 }) }));
    await sim.until('it stops', () => stopped.length > 0, 5_000);
    await sim.run(500); // what the step-down sends, sent
    // before the fix: "workFailed", a LeaderWorkError ("the term is given up so that another candidate leads"), and a release tried
    expect(stopped).toEqual(['deposed']);
    expect(signals[0]!.aborted).toBe(true);
    expect(e.elector.isLeader()).toBe(false);
    expect(errors.filter((x) => x instanceof LeaderWorkError)).toEqual([]);
    const writes = e.machine.sent.filter((r) => r.operation === 'UpdateItem' && onLeases(sim, r) && r.at >= from);
    expect(writes).toEqual([]); // no release of a term it no longer holds
    // no backoff: standing again, it takes the lease in its later term once that runs out (nobody renews it)
    await sim.until('it leads again', () => e.elector.isLeader(), 30_000);
    expect(e.elector.fencingToken).toBeGreaterThan(held.fencingToken + 7);
    await e.stop();
  });
});

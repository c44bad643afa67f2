import { PutItemCommand, ReplicatedWriteConflictException } from '@aws-sdk/client-dynamodb';
import { marshall } from '@aws-sdk/util-dynamodb';
import { afterEach, beforeEach, describe, expect, inject, it } from 'vitest';
import { manualClock, type ManualClock } from '../../lib/clock.js';
import { localClient } from '../../lib/local/dynamodb-local.js';
import { coordinatorDeps, type CoordinatorDeps, type ReconcileOutcome } from '../../lib/coordinator/reconcile.js';
import { tick, type TickOptions, type TickResult } from '../../lib/coordinator/tick.js';
import { onTick, type FunctionDeps } from '../../lib/functions/core.js';
import { observability } from '../../lib/functions/env.js';
import { METRIC } from '../../lib/functions/metrics.js';
import { sessionKey } from '../../lib/schemas/identity.js';
import { COORDINATOR_COMPONENT, TICK_CURSOR_NAME, TickCursorItem } from '../../lib/schemas/tick-cursor.js';
import { testTables, type TestTables } from '../support.js';

const T0 = Date.UTC(2026, 10, 28);
const OEV = 'OldestEmulationVersion';
/** Simulated time each reconcile takes (the tick's own clock moves on by it). */
const COST_MS = 1_000;
/** Lambda's remaining time at each invocation, and the margin kept back from it. */
const REMAINING_MS = 20_000;
const MARGIN_MS = 5_000;
const TICK_EVERY_MS = 60_000;

let t: TestTables;
let clock: ManualClock;
let deps: CoordinatorDeps;

beforeEach(async () => {
  t = await testTables('tick');
  clock = manualClock(T0);
  // one reconcile at a time: each costs COST_MS of the clock, so the deadline falls between two
  deps = coordinatorDeps(t.client, t.names, { clock, config: { concurrency: 1 } });
});
afterEach(() => t.drop());

async function seed(n: number): Promise<string[]> {
  const names = Array.from({ length: n }, (_, i) => `lease-${String(i).padStart(3, '0')}`);
  for (const leaseName of names) {
    await deps.candidates.write(
      { key: { leaseName, name: 'a' }, item: undefined, revision: 0 },
      { set: { emulationVersion: '1.30.0', binaryVersion: '1.30.0', preferredStrategies: [OEV], renewTime: T0, createdAt: T0 } },
    );
  }
  return names;
}

interface Invocation {
  result: TickResult;
  deadline: number;
  stop: number;
  /** When each reconcile of the invocation began (its decision's time), and when the invocation ended. */
  began: number[];
  endedAt: number;
}

/** One scheduled invocation: the deadline from Lambda's remaining time, each reconcile costing COST_MS. */
async function invoke(opts: Omit<TickOptions, 'deadline' | 'marginMs' | 'afterEach'> = {}): Promise<Invocation> {
  const deadline = clock.monotonic() + REMAINING_MS;
  const began: number[] = [];
  const afterEach = async (o: ReconcileOutcome) => {
    began.push(o.at);
    clock.advance(COST_MS);
  };
  const result = await tick(deps, { ...opts, deadline, marginMs: MARGIN_MS, afterEach });
  return { result, deadline, stop: deadline - MARGIN_MS, began, endedAt: clock.monotonic() };
}

/** Invocations, a schedule tick apart, until a round ends (at most `most`). */
async function round(most: number, opts: Omit<TickOptions, 'deadline' | 'marginMs' | 'afterEach'> = {}): Promise<Invocation[]> {
  const out: Invocation[] = [];
  for (let i = 0; i < most; i++) {
    const at = clock.now();
    const inv = await invoke(opts);
    out.push(inv);
    if (inv.result.round?.done) break;
    clock.set(at + TICK_EVERY_MS);
  }
  return out;
}

/**
 * Twelve leases, counted by a first round (in one part), so the next rounds are in three parts;
 * then lease-003 held a minute ago on session `s-refused`, whose process died: its row, renewed 2 s
 * ago, has no hostname, so the schema refuses it.
 */
async function heldOnRefusedSession(): Promise<string> {
  await seed(12);
  await round(5, { segmentLeases: 5 });
  clock.advance(TICK_EVERY_MS);
  const session = 's-refused';
  await deps.leases.write(await deps.leases.read('lease-003'), { set: { holderIdentity: 'a', holderInstance: 'a_1@p1', session, acquireTime: clock.now() - 60_000, renewTime: clock.now() - 60_000, leaseDurationSeconds: 15, leaseTransitions: 1, fencingToken: 7 }, remove: ['election'] });
  await t.client.send(new PutItemCommand({ TableName: t.names.identities, Item: marshall({ ...sessionKey(session), holderIdentity: session, process: 'p1', hostname: '', leaseDurationSeconds: 15, acquireTime: clock.now() - 60_000, renewTime: clock.now() - 2_000, revision: 9 }) }));
  return session;
}

const reached = (invs: Invocation[]) => invs.flatMap((i) => i.result.outcomes.map((o) => o.lease));

describe("the coordinator's tick within its invocation's time (issue 38, item 5)", () => {
  it('a tick that would overrun its deadline stops before it; the next invocation goes on where it stopped, and every lease is reached once within ⌈work / budget⌉ invocations', async () => {
    const names = await seed(30); // 30 s of reconciles against 15 s an invocation (20 s remaining less 5 s margin)
    const invs = await round(5, { segmentLeases: 10 });
    for (const inv of invs) {
      expect(inv.endedAt, 'the invocation ended before its deadline').toBeLessThanOrEqual(inv.deadline);
      for (const b of inv.began) expect(b, 'no reconcile began past the deadline less the margin').toBeLessThan(inv.stop);
    }
    expect(invs.length, 'the bound: ⌈30 s / 15 s⌉ invocations').toBe(2);
    expect(invs[0]!.result.round).toMatchObject({ done: false, segments: 1, invocations: 1, leases: 15, next: { segment: 0, after: 'lease-014' } });
    expect(invs[1]!.result.round).toMatchObject({ done: true, invocations: 2, leases: 30 });
    expect(reached(invs).sort(), 'every lease reconciled, each once').toEqual(names);
    // the cursor between rounds holds only the next round's parts (and the collection the last reconcile, at the stop, left owed): 30 leases at 10 a part
    expect((await deps.ticks.read()).item).toMatchObject({ segments: 3, segment: 0, leases: 0, invocations: 0, owedPart: 0, owedParts: 1 });
    expect((await deps.ticks.read()).item?.after).toBeUndefined();
  });

  it('a round in parts (parallel scan segments) reaches every lease once, part after part, within the same bound', async () => {
    const names = await seed(30);
    await round(5, { segmentLeases: 10 }); // the first round is one part; it counts 30 leases
    clock.advance(TICK_EVERY_MS);
    const invs = await round(5, { segmentLeases: 10 });
    expect(invs[0]!.result.round?.segments).toBe(3);
    for (const inv of invs) {
      expect(inv.endedAt).toBeLessThanOrEqual(inv.deadline);
      for (const b of inv.began) expect(b).toBeLessThan(inv.stop);
    }
    expect(invs.length).toBe(2);
    expect(invs.at(-1)!.result.round).toMatchObject({ done: true, leases: 30 });
    expect(reached(invs).sort()).toEqual(names);
  });

  it('a round in parts still collects expired identities at its end, and keeps a session a held lease names', async () => {
    await seed(12);
    await round(5, { segmentLeases: 5 }); // the first round, in one part, counts the leases
    clock.advance(TICK_EVERY_MS);
    const then = T0 - 3 * 3_600_000;
    const identity = (component: string, name: string, extra: Record<string, unknown> = {}) =>
      deps.identities.write({ key: { component, name }, item: undefined, revision: 0 }, { set: { holderIdentity: `${name}_1`, hostname: 'host', leaseDurationSeconds: 60, acquireTime: then, renewTime: then, ...extra } });
    await identity('scheduler', 'gone-host');
    await identity('conclave-session', 'named-session', { process: 'p-1' });
    // a held lease that names the expired session, its term not over (its holder renews the lease
    // itself): the row stays while it does (a term over keeps no row: dead-holder-session.test.ts)
    await deps.leases.write(await deps.leases.read('held'), { set: { holderIdentity: 'h', holderInstance: 'h_1@p-1', leaseDurationSeconds: 15, acquireTime: then, renewTime: clock.now(), leaseTransitions: 0, fencingToken: 1, session: 'named-session' } });
    const invs = await round(5, { segmentLeases: 5 });
    expect(invs[0]!.result.round?.segments).toBe(3);
    const collected = invs.flatMap((i) => i.result.collectedIdentities.map((c) => c.name));
    expect(collected).toContain('gone-host');
    expect(collected).not.toContain('named-session');
  });

  it("a round in parts collects a broken lease's stale candidates, its lease row and candidates in one part", async () => {
    await seed(12);
    await round(5, { segmentLeases: 5 }); // the first round, in one part, counts the leases
    clock.advance(TICK_EVERY_MS);
    const stale = clock.now() - 31 * 60_000;
    for (const name of ['stale', 'live']) {
      await deps.candidates.write(
        { key: { leaseName: 'bricked', name }, item: undefined, revision: 0 },
        { set: { emulationVersion: '1.30.0', binaryVersion: '1.30.0', preferredStrategies: [OEV], renewTime: name === 'stale' ? stale : clock.now(), createdAt: stale } },
      );
    }
    // a term of 0 seconds, which the schema refuses
    await t.client.send(new PutItemCommand({ TableName: t.names.leases, Item: marshall({ name: 'bricked', holderIdentity: 'x', leaseDurationSeconds: 0, leaseTransitions: 0, fencingToken: 7, revision: 3 }) }));
    // the case where one part's scans hold both (a row in another part is read by the lease's own reconcile, which refuses it)
    const leaseParts: number[] = [];
    const candidateParts: number[] = [];
    for (let index = 0; index < 3; index++) {
      for await (const page of deps.leases.scan({ segment: { index, total: 3 } })) if (page.some((s) => (s.ok ? s.item.name : s.invalid.key['name']) === 'bricked')) leaseParts.push(index);
      for await (const page of deps.candidates.scan({ segment: { index, total: 3 } })) if (page.some((s) => s.ok && s.item.leaseName === 'bricked')) candidateParts.push(index);
    }
    expect(leaseParts).toHaveLength(1);
    expect(new Set(candidateParts)).toEqual(new Set(leaseParts));
    const invs = await round(5, { segmentLeases: 5 });
    expect(invs[0]!.result.round?.segments).toBe(3);
    expect(invs.flatMap((i) => i.result.broken.map((b) => b.lease))).toEqual(['bricked']);
    expect(invs.flatMap((i) => i.result.collectedCandidates)).toEqual([{ leaseName: 'bricked', name: 'stale' }]);
    expect((await deps.candidates.read('bricked', 'live')).item).toBeDefined();
  });

  it("a broken lease whose candidates a part other than its row's holds is counted once: the tick's broken leases, its gauge and its log", async () => {
    await seed(12);
    await round(5, { segmentLeases: 5 }); // the first round, in one part, counts the leases
    clock.advance(TICK_EVERY_MS);
    await deps.candidates.write(
      { key: { leaseName: 'bricked', name: 'live' }, item: undefined, revision: 0 },
      { set: { emulationVersion: '1.30.0', binaryVersion: '1.30.0', preferredStrategies: [OEV], renewTime: clock.now(), createdAt: clock.now() } },
    );
    // a term of 0 seconds, which the schema refuses
    await t.client.send(new PutItemCommand({ TableName: t.names.leases, Item: marshall({ name: 'bricked', holderIdentity: 'x', leaseDurationSeconds: 0, leaseTransitions: 0, fencingToken: 7, revision: 3 }) }));
    // DynamoDB promises no key the same part in two tables: here each candidate is in the part after its lease row's
    const candidates = deps.candidates;
    const scan = candidates.scan.bind(candidates);
    candidates.scan = (opts = {}) => scan(opts.segment ? { ...opts, segment: { ...opts.segment, index: (opts.segment.index + 1) % opts.segment.total } } : opts);
    const added: [string, number][] = [];
    const errors: unknown[] = [];
    const o = observability('test', 'SILENT');
    const add = o.metrics.addMetric.bind(o.metrics);
    o.metrics.addMetric = (name, unit, value) => (added.push([name, value]), add(name, unit, value));
    const logError = o.logger.error.bind(o.logger);
    o.logger.error = ((message: string, ...rest: unknown[]) => (errors.push([message, ...rest]), logError(message, ...(rest as [])))) as typeof o.logger.error;
    const d: FunctionDeps = { coordinator: deps, timer: { schedule: async () => undefined }, publish: async () => undefined, deadLetter: async () => undefined, ...o };
    const r = await onTick(d, 600_000); // the whole round in one invocation
    expect(r.round).toMatchObject({ done: true, segments: 3 });
    expect(r.errors).toEqual([]);
    expect(r.broken.map((b) => b.lease)).toEqual(['bricked']); // before the fix: twice, from its row's part and from its candidates' part
    expect(added.filter(([name]) => name === METRIC.brokenLeases)).toEqual([[METRIC.brokenLeases, 1]]);
    expect(errors).toHaveLength(1);
  });

  it('an identity row the schema refuses, which each part scans, is reported once by a round in parts, and collected at its end once expired', async () => {
    await seed(12);
    await round(5, { segmentLeases: 5 }); // the first round, in one part, counts the leases
    clock.advance(TICK_EVERY_MS);
    const put = (name: string, renewTime: number) =>
      t.client.send(new PutItemCommand({ TableName: t.names.identities, Item: marshall({ component: 'scheduler', name, holderIdentity: `${name}_1`, hostname: 'h', acquireTime: 'then', leaseDurationSeconds: 60, renewTime, revision: 1 }) }));
    await put('refused', clock.now());
    await put('refused-expired', clock.now() - 3_600_000);
    const warned: [string, Record<string, unknown>][] = [];
    const o = observability('test', 'SILENT');
    const warn = o.logger.warn.bind(o.logger);
    o.logger.warn = ((message: string, extra: Record<string, unknown>) => (warned.push([message, extra]), warn(message, extra))) as typeof o.logger.warn;
    const d: FunctionDeps = { coordinator: deps, timer: { schedule: async () => undefined }, publish: async () => undefined, deadLetter: async () => undefined, ...o };
    const r = await onTick(d, 600_000); // the whole round in one invocation
    expect(r.round).toMatchObject({ done: true, segments: 3 });
    expect(r.errors).toEqual([]);
    // before the fix: once a part (three times), and never collected
    expect(r.invalid.map((i) => i.key['name']).sort()).toEqual(['refused', 'refused-expired']);
    expect(r.collectedIdentities).toEqual([{ component: 'scheduler', name: 'refused-expired' }]);
    expect(warned.filter(([, extra]) => JSON.stringify(extra).includes('"refused')).map(([, extra]) => extra['key'])).toEqual([{ component: 'scheduler', name: 'refused' }]);
  });

  it('a term on a session row the schema refuses, in a round in parts: the round\'s end times the row and deletes it once unchanged past the wait; the term is then judged as on a row gone', async () => {
    const session = await heldOnRefusedSession();
    const firstSeen = clock.now();
    const [first] = await round(1, { segmentLeases: 5 });
    expect(first!.result.round).toMatchObject({ done: true, segments: 3 });
    expect(first!.result.unjudged.map((u) => u.term.lease)).toEqual(['lease-003']);
    // seen at the round's end, after its parts' reconciles
    const seen = first!.result.refusedSessions;
    expect(seen).toEqual([{ key: sessionKey(session), leases: ['lease-003'], unchangedSince: expect.any(Number), deleteAfter: expect.any(Number), deleted: false }]);
    expect(seen[0]!.unchangedSince).toBeGreaterThan(firstSeen);
    expect(seen[0]!.deleteAfter).toBe(seen[0]!.unchangedSince! + 16_000);
    clock.advance(TICK_EVERY_MS);
    const [second] = await round(1, { segmentLeases: 5 });
    expect(second!.result.refusedSessions).toEqual([{ ...seen[0], deleted: true }]);
    expect(second!.result.collectedIdentities).toEqual([sessionKey(session)]);
    clock.advance(TICK_EVERY_MS);
    // the term judged as on a row gone at the round's end that deleted it (the next test), reported no more
    const [third] = await round(1, { segmentLeases: 5 });
    expect(third!.result.unjudged).toEqual([]);
    expect(third!.result.refusedSessions).toEqual([]);
    expect(third!.result.errors).toEqual([]);
    expect(third!.result.outcomes.map((o) => o.lease)).toContain('lease-003');
  });

  it('a term on a session row the schema refuses, in a round in parts: the round that deletes the row elects the lease again at its end, not its followers after their fallback', async () => {
    const session = await heldOnRefusedSession();
    const [first] = await round(1, { segmentLeases: 5 });
    expect(first!.result.round).toMatchObject({ done: true, segments: 3 });
    clock.advance(TICK_EVERY_MS);
    const [second] = await round(1, { segmentLeases: 5 });
    expect(second!.result.round).toMatchObject({ done: true, segments: 3 });
    expect(second!.result.refusedSessions).toMatchObject([{ key: sessionKey(session), leases: ['lease-003'], deleted: true }]);
    expect(second!.result.errors).toEqual([]);
    // in that round, after the deletion: the term judged by the lease's own stamp (two minutes old), its holder's process having no other session
    const o = second!.result.outcomes.filter((x) => x.lease === 'lease-003').at(-1);
    expect(o?.decision).toMatchObject({ kind: 'openElection', vacancy: 'expired' });
    expect(second!.began, 'its follow-up (the election timer) called within the invocation, as any reconcile of the tick').toContain(o!.at);
    const l = (await deps.leases.read('lease-003')).item!;
    expect(l).toMatchObject({ lastHolderIdentity: 'a', election: expect.objectContaining({ startedAt: o!.at }) });
    expect(l.holderIdentity).toBeUndefined();
    expect(second!.result.leaderless).toContain('lease-003');
  });

  it.each([
    { name: 'its session row deleted by an operator', row: undefined },
    { name: 'its `session` rewritten by a peer to its own live session', row: { process: 'p2', renewTime: -2_000 } },
  ])('a term whose session row does not vouch for its holder ($name), its holder\'s process gone, in a round in parts: the round elects the lease again, not its followers after their fallback', async ({ row }) => {
    await seed(12);
    await round(5, { segmentLeases: 5 }); // the first round, in one part, counts the leases
    clock.advance(TICK_EVERY_MS);
    const session = 's-other';
    await deps.leases.write(await deps.leases.read('lease-003'), { set: { holderIdentity: 'a', holderInstance: 'a_1@p1', session, acquireTime: clock.now() - 60_000, renewTime: clock.now() - 60_000, leaseDurationSeconds: 15, leaseTransitions: 1, fencingToken: 7 }, remove: ['election'] });
    if (row) await t.client.send(new PutItemCommand({ TableName: t.names.identities, Item: marshall({ ...sessionKey(session), holderIdentity: session, process: row.process, hostname: 'h', leaseDurationSeconds: 15, acquireTime: clock.now() - 60_000, renewTime: clock.now() + row.renewTime, revision: 9 }) }));
    const [inv] = await round(1, { segmentLeases: 5 });
    expect(inv!.result.round).toMatchObject({ done: true, segments: 3 });
    expect(inv!.result.errors).toEqual([]);
    // judged by the lease's own stamp (a minute old), its holder's process having no session left
    const o = inv!.result.outcomes.filter((x) => x.lease === 'lease-003').at(-1);
    expect(o?.decision).toMatchObject({ kind: 'openElection', vacancy: 'expired' });
    expect(inv!.began, 'its follow-up (the election timer) called within the invocation').toContain(o!.at);
    const l = (await deps.leases.read('lease-003')).item!;
    expect(l).toMatchObject({ lastHolderIdentity: 'a', election: expect.objectContaining({ startedAt: o!.at }) });
    expect(l.holderIdentity).toBeUndefined();
    expect(inv!.result.leaderless).toContain('lease-003');
    expect(inv!.result.leaderless.filter((n) => n === 'lease-003')).toHaveLength(1);
  });

  it("a term whose `session` a peer rewrote, in a round in parts, its holder's process renewing its own session: judged by that session, kept", async () => {
    await seed(12);
    await round(5, { segmentLeases: 5 });
    clock.advance(TICK_EVERY_MS);
    await deps.leases.write(await deps.leases.read('lease-003'), { set: { holderIdentity: 'a', holderInstance: 'a_1@p1', session: 's-other', acquireTime: clock.now() - 60_000, renewTime: clock.now() - 60_000, leaseDurationSeconds: 15, leaseTransitions: 1, fencingToken: 7 }, remove: ['election'] });
    await t.client.send(new PutItemCommand({ TableName: t.names.identities, Item: marshall({ ...sessionKey('s-p1'), holderIdentity: 's-p1', process: 'p1', hostname: 'h', leaseDurationSeconds: 15, acquireTime: clock.now() - 60_000, renewTime: clock.now() - 2_000, revision: 9 }) }));
    const [inv] = await round(1, { segmentLeases: 5 });
    expect(inv!.result.round).toMatchObject({ done: true, segments: 3 });
    expect(inv!.result.outcomes.filter((x) => x.lease === 'lease-003').map((o) => o.decision.kind)).toEqual(['leaveAlone']);
    expect((await deps.leases.read('lease-003')).item).toMatchObject({ holderIdentity: 'a', fencingToken: 7 });
    expect(inv!.result.leaderless).not.toContain('lease-003');
  });

  it("a cursor write another Region's tick was making at that moment (a multi-Region table: not applied) is a lost race: the invocation answers, its parts reconciled", async () => {
    await seed(30); // 30 s of reconciles against 15 s an invocation: it stops part way, its cursor written
    const here = localClient(inject('ddbEndpoint'));
    let refused = 0;
    here.middlewareStack.add(
      (next, context) => async (args) => {
        const input = args.input as { Key?: Record<string, { S?: string }>; Item?: Record<string, { S?: string }> };
        const write = context.commandName === 'UpdateItemCommand' || context.commandName === 'PutItemCommand';
        if (write && (input.Key ?? input.Item)?.['name']?.S === TICK_CURSOR_NAME && !refused++) throw new ReplicatedWriteConflictException({ message: 'One or more items in this request are being modified by a request in another Region', $metadata: { httpStatusCode: 400 } });
        return next(args);
      },
      { step: 'initialize' },
    );
    try {
      const inRegion = coordinatorDeps(here, t.names, { clock, config: { concurrency: 1 } });
      // before: the invocation threw after reconciling its part, and Lambda ran it again
      const r = await tick(inRegion, { deadline: clock.monotonic() + REMAINING_MS, marginMs: MARGIN_MS, segmentLeases: 10, afterEach: async () => void clock.advance(COST_MS) });
      expect(refused).toBe(1);
      expect(r.round).toMatchObject({ done: false, lostRace: true, leases: 15 });
      expect(r.outcomes).toHaveLength(15);
      expect((await deps.ticks.read()).item).toBeUndefined(); // the other Region's position stands (here: none yet)
    } finally {
      here.destroy();
    }
  });

  it('a cursor row that does not parse is started afresh, and the identities scan never returns the cursor', async () => {
    await seed(3);
    await t.client.send(new PutItemCommand({ TableName: t.names.identities, Item: marshall({ component: COORDINATOR_COMPONENT, name: TICK_CURSOR_NAME, segments: 'many', revision: 7 }) }));
    const [inv] = await round(1);
    expect(inv!.result.round).toMatchObject({ done: true, leases: 3, lostRace: false });
    expect(inv!.result.invalid).toEqual([]);
    // afresh: the round of one part leaves only the next round's parts, and its gauges (3 leases leaderless: elections opened)
    expect(await deps.ticks.read()).toMatchObject({ item: { segments: 1, segment: 0, leases: 0, invocations: 0, lastLeaderless: 3 }, revision: 1 });
  });

  it('without a deadline (a context with no remaining time: the simulator) one pass over every lease, no cursor read or written', async () => {
    const names = await seed(30);
    const r = await tick(deps);
    expect(r.round).toBeUndefined();
    expect(r.outcomes.map((o) => o.lease).sort()).toEqual(names);
    expect((await deps.ticks.read()).item).toBeUndefined();
  });
});

/** An identity lease (not a session) whose holder stopped renewing it three hours ago: expired. */
const expiredIdentity = (name: string) => {
  const then = T0 - 3 * 3_600_000;
  return deps.identities.write({ key: { component: 'scheduler', name }, item: undefined, revision: 0 }, { set: { holderIdentity: `${name}_1`, hostname: 'host', leaseDurationSeconds: 60, acquireTime: then, renewTime: then } });
};

describe('garbage collection a round ran out of time for is owed, and done first at the next invocation, which goes on with the round (reviews, 2026-12-07; eleventh and twelfth)', () => {
  it('a one-part round whose last reconcile ends at the deadline: its stale candidates and expired identities are collected at the next invocation, which then reconciles the next round whole (before: never, at 15 leases, round after round; then every other invocation reconciled nothing)', async () => {
    await seed(15); // 15 reconciles of 1 s: the last ends at the stop exactly
    await expiredIdentity('gone-host');
    const then = T0 - 3 * 3_600_000;
    await deps.candidates.write({ key: { leaseName: 'lease-000', name: 'old' }, item: undefined, revision: 0 }, { set: { emulationVersion: '1.30.0', binaryVersion: '1.30.0', preferredStrategies: [OEV], renewTime: then, createdAt: then } });
    const [first] = await round(1, { segmentLeases: 100 });
    expect(first!.result.round).toMatchObject({ done: true, segments: 1, leases: 15, owes: { owedPart: 0, owedParts: 1 } });
    expect(first!.result.collectedIdentities).toEqual([]);
    expect(first!.result.collectedCandidates).toEqual([]);
    expect((await deps.ticks.read()).item).toMatchObject({ segment: 0, leases: 0, owedPart: 0, owedParts: 1 });
    clock.advance(TICK_EVERY_MS);
    const [second] = await round(1, { segmentLeases: 100 });
    expect(second!.result.collectedIdentities).toEqual([{ component: 'scheduler', name: 'gone-host' }]);
    expect(second!.result.collectedCandidates).toEqual([{ leaseName: 'lease-000', name: 'old' }]);
    // the collection first, then the whole next round (its own collection owed in turn)
    expect(second!.began).toHaveLength(15);
    expect(second!.result.round).toMatchObject({ done: true, invocations: 1, leases: 15, owes: { owedPart: 0, owedParts: 1 } });
    expect((await deps.identities.read('scheduler', 'gone-host')).item).toBeUndefined();
    expect((await deps.candidates.read('lease-000', 'old')).item).toBeUndefined();
  });

  it("a round in parts whose last reconcile ends at the deadline: its last part's collection and its end's (identities) are done at the next invocation (before: never, at 15 leases)", async () => {
    await seed(14); // a first round of 14 s, in one part: collected, nothing owed; it counts 14 leases (three parts at 5)
    const [zero] = await round(1, { segmentLeases: 5 });
    expect(zero!.result.round).toMatchObject({ done: true, segments: 1 });
    expect(zero!.result.round?.owes).toBeUndefined();
    await deps.candidates.write({ key: { leaseName: 'lease-014', name: 'a' }, item: undefined, revision: 0 }, { set: { emulationVersion: '1.30.0', binaryVersion: '1.30.0', preferredStrategies: [OEV], renewTime: clock.now(), createdAt: clock.now() } });
    await expiredIdentity('gone-host');
    // a stale candidate of a lease whose candidates the last of the three parts holds
    let last: string | undefined;
    for await (const page of deps.candidates.scan({ segment: { index: 2, total: 3 } })) for (const r of page) if (r.ok) last = r.item.leaseName;
    const then = T0 - 3 * 3_600_000;
    await deps.candidates.write({ key: { leaseName: last!, name: 'old' }, item: undefined, revision: 0 }, { set: { emulationVersion: '1.30.0', binaryVersion: '1.30.0', preferredStrategies: [OEV], renewTime: then, createdAt: then } });
    clock.advance(TICK_EVERY_MS);
    const [first] = await round(1, { segmentLeases: 5 });
    expect(first!.result.round).toMatchObject({ done: true, segments: 3, leases: 15 });
    // the last part's collection and the round's end's: owed
    expect(first!.result.round?.owes).toEqual({ owedPart: 2, owedParts: 3, owesIdentities: true });
    expect(first!.result.collectedIdentities).toEqual([]);
    expect(first!.result.collectedCandidates).toEqual([]);
    clock.advance(TICK_EVERY_MS);
    const [second] = await round(1, { segmentLeases: 5 });
    // collected first, then the next round's 15 reconciles
    expect(second!.began).toHaveLength(15);
    expect(second!.result.round).toMatchObject({ done: true, invocations: 1, leases: 15 });
    expect(second!.result.collectedIdentities).toEqual([{ component: 'scheduler', name: 'gone-host' }]);
    expect(second!.result.collectedCandidates).toEqual([{ leaseName: last, name: 'old' }]);
    expect((await deps.identities.read('scheduler', 'gone-host')).item).toBeUndefined();
  });

  it('a cursor owing a part that is not one of its parts does not parse (it is started afresh, not scanned with a Segment DynamoDB refuses)', () => {
    const cursor = { component: COORDINATOR_COMPONENT, name: TICK_CURSOR_NAME, segments: 1, segment: 0, leases: 0, invocations: 0, revision: 1 };
    expect(TickCursorItem.safeParse({ ...cursor, owedPart: 2, owedParts: 3, owesIdentities: true }).success).toBe(true);
    expect(TickCursorItem.safeParse({ ...cursor, owedPart: 3, owedParts: 3 }).success).toBe(false);
  });

  it("a cursor counts a part's unfinished scans and the parts skipped (twelfth review); one written before them parses", () => {
    const cursor = { component: COORDINATOR_COMPONENT, name: TICK_CURSOR_NAME, segments: 3, segment: 1, leases: 4, invocations: 2, revision: 1 };
    expect(TickCursorItem.safeParse(cursor).success).toBe(true);
    expect(TickCursorItem.safeParse({ ...cursor, unscanned: 1, skipped: 1 }).success).toBe(true);
    expect(TickCursorItem.safeParse({ ...cursor, unscanned: 0 }).success).toBe(false);
  });

  it("the owed collection has the whole next invocation, once: what it did not reach waits for that part's next pass, and the invocation goes on with the round in the time left (eleventh review: the half an owed pass took livelocked a slow part)", async () => {
    await seed(15);
    for (let i = 0; i < 20; i++) await expiredIdentity(`gone-${String(i).padStart(2, '0')}`);
    const [first] = await round(1, { segmentLeases: 100 });
    expect(first!.result.round?.owes).toEqual({ owedPart: 0, owedParts: 1 });
    // from here each identity delete takes a second
    const remove = deps.identities.delete.bind(deps.identities);
    deps.identities.delete = async (read) => {
      clock.advance(COST_MS);
      return remove(read);
    };
    clock.advance(TICK_EVERY_MS);
    const invs = await round(3, { segmentLeases: 100 });
    for (const inv of invs) expect(inv.endedAt).toBeLessThanOrEqual(inv.deadline);
    // 15 s: 15 deletes started, then given up; nothing reconciled, the next round begun at the next
    expect(invs[0]!.began).toEqual([]);
    expect(invs[0]!.result.collectedIdentities).toHaveLength(15);
    expect(invs[0]!.result.round).toMatchObject({ done: false, invocations: 1, leases: 0 });
    expect(invs[0]!.result.round?.owes).toBeUndefined();
    // its 15 reconciles have the whole invocation, its collection owed again
    expect(invs[1]!.began).toHaveLength(15);
    expect(invs[1]!.result.round).toMatchObject({ done: true, invocations: 2, leases: 15, owes: { owedPart: 0, owedParts: 1 } });
    expect(invs).toHaveLength(2);
    clock.advance(TICK_EVERY_MS);
    const [third] = await round(1, { segmentLeases: 100 });
    // the 5 left in 5 s, then 10 reconciles in the rest
    expect(third!.result.collectedIdentities).toHaveLength(5);
    expect(third!.began).toHaveLength(10);
    expect(third!.result.round).toMatchObject({ done: false, next: { segment: 0, after: 'lease-009' } });
  });
});

/**
 * The tick where a part's scans take much of an invocation (review, 2026-12-07, eleventh): a slow
 * or throttled table, a large identities table (every part scans it whole), a candidate flood.
 * Before: the collection owed after a part's pass ended at the stop took the first half of every
 * later invocation and, its scans not fitting in half, stayed owed for ever, the normal pass in the
 * other half never finishing its scans either: no lease reconciled again. A part whose scans did not
 * fit a whole invocation held the round on itself, the other parts' leases never reconciled again.
 * And the steps that ran whatever the deadline (releaseOver's reads at a round's end) could run the
 * invocation past its timeout, before its cursor write.
 */
import { PutItemCommand } from '@aws-sdk/client-dynamodb';
import { marshall } from '@aws-sdk/util-dynamodb';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { manualClock, type ManualClock } from '../../lib/clock.js';
import { coordinatorDeps, type CoordinatorDeps, type ReconcileOutcome } from '../../lib/coordinator/reconcile.js';
import { tick, type TickResult } from '../../lib/coordinator/tick.js';
import { sessionKey } from '../../lib/schemas/identity.js';
import { testTables, type TestTables } from '../support.js';

const T0 = Date.UTC(2026, 10, 28);
const OEV = 'OldestEmulationVersion';
/** Lambda's remaining time at each invocation, the margin kept back (15 s to work in), each reconcile's cost, the schedule. */
const REMAINING_MS = 20_000;
const MARGIN_MS = 5_000;
const COST_MS = 1_000;
const TICK_EVERY_MS = 60_000;
const THEN = T0 - 3 * 3_600_000;

let t: TestTables;
let clock: ManualClock;
let deps: CoordinatorDeps;

beforeEach(async () => {
  t = await testTables('tick-slow');
  clock = manualClock(T0);
  deps = coordinatorDeps(t.client, t.names, { clock, config: { concurrency: 1 } });
});
afterEach(() => t.drop());

async function seed(n: number): Promise<string[]> {
  const names = Array.from({ length: n }, (_, i) => `lease-${String(i).padStart(3, '0')}`);
  for (const leaseName of names) await deps.candidates.write({ key: { leaseName, name: 'a' }, item: undefined, revision: 0 }, { set: { emulationVersion: '1.30.0', binaryVersion: '1.30.0', preferredStrategies: [OEV], renewTime: T0, createdAt: T0 } });
  return names;
}

interface Invocation {
  result: TickResult;
  deadline: number;
  reconciled: string[];
  endedAt: number;
}

/** Invocations a schedule tick apart, each reconcile costing COST_MS; what follows `failing`'s reconcile fails, every time. */
async function invocations(n: number, segmentLeases: number, failing?: string): Promise<Invocation[]> {
  const out: Invocation[] = [];
  for (let i = 0; i < n; i++) {
    const at = clock.now();
    const deadline = clock.monotonic() + REMAINING_MS;
    const reconciled: string[] = [];
    const afterEach = async (o: ReconcileOutcome) => {
      reconciled.push(o.lease);
      clock.advance(COST_MS);
      if (o.lease === failing) throw new Error('its timer send refused');
    };
    const result = await tick(deps, { deadline, marginMs: MARGIN_MS, segmentLeases, afterEach });
    out.push({ result, deadline, reconciled, endedAt: clock.monotonic() });
    clock.set(at + TICK_EVERY_MS);
  }
  return out;
}

it('a one-part round whose scans take 8 s of the 15 s an invocation has: once its collection is cut short, rounds go on, each collecting (before: no lease reconciled again)', async () => {
  const names = await seed(14);
  await deps.candidates.write({ key: { leaseName: 'lease-000', name: 'old' }, item: undefined, revision: 0 }, { set: { emulationVersion: '1.30.0', binaryVersion: '1.30.0', preferredStrategies: [OEV], renewTime: THEN, createdAt: THEN } });
  await deps.identities.write({ key: { component: 'scheduler', name: 'gone-host' }, item: undefined, revision: 0 }, { set: { holderIdentity: 'gone-host_1', hostname: 'host', leaseDurationSeconds: 60, acquireTime: THEN, renewTime: THEN } });
  // each scan of the leases table takes 8 s (a slow or throttled table)
  const scan = deps.leases.scan.bind(deps.leases);
  deps.leases.scan = async function* (o) {
    clock.advance(8_000);
    yield* scan(o);
  } as typeof deps.leases.scan;
  const invs = await invocations(8, 10_000);
  for (const inv of invs) expect(inv.endedAt, 'ended before its deadline').toBeLessThanOrEqual(inv.deadline);
  // 7 reconciles (8 s to 15 s), 7 more ending at the stop: the round done, its collection cut short;
  // the next invocation's first pass (the whole time) collects, and the next round's pass begun
  // after it (at 8 s) runs out in its scans: taken again, first, at the next invocation
  expect(invs.map((i) => i.reconciled.length)).toEqual([7, 7, 0, 7, 7, 0, 7, 7]);
  expect(invs[1]!.result.round).toMatchObject({ done: true, invocations: 2, leases: 14, owes: { owedPart: 0, owedParts: 1 } });
  expect(invs[2]!.result.round).toMatchObject({ done: false, invocations: 1, leases: 0, next: { segment: 0 } });
  expect(invs[2]!.result.round?.owes).toBeUndefined();
  expect(invs[2]!.result.collectedCandidates).toEqual([{ leaseName: 'lease-000', name: 'old' }]);
  expect(invs[2]!.result.collectedIdentities).toEqual([{ component: 'scheduler', name: 'gone-host' }]);
  expect(invs[4]!.result.round).toMatchObject({ done: true, invocations: 3, leases: 14 });
  expect(invs.flatMap((i) => i.result.errors)).toEqual([]);
  expect([...new Set(invs.slice(3).flatMap((i) => i.reconciled))].sort(), 'every lease reconciled again in the later rounds').toEqual(names);
});

it("a round in three parts, one part's scans taking 16 s of the 15 s an invocation has: the round moves on past it, told, and the other parts' leases are reconciled round after round (before: never again)", async () => {
  await seed(14);
  const [first] = await invocations(1, 5); // one part: 14 leases, three parts from here
  expect(first!.result.round).toMatchObject({ done: true, segments: 1 });
  const inPart = async (index: number) => {
    const out = new Set<string>();
    for await (const page of deps.candidates.scan({ segment: { index, total: 3 } })) for (const r of page) if (r.ok) out.add(r.item.leaseName);
    return out;
  };
  const [p0, p1, p2] = [await inPart(0), await inPart(1), await inPart(2)];
  expect(p1.size, 'the slow part holds leases').toBeGreaterThan(0);
  expect(p0.size + p2.size).toBeGreaterThan(0);
  const scan = deps.candidates.scan.bind(deps.candidates);
  // part 1's candidates scan: four pages of 4 s each (the pass looks at its deadline between pages)
  deps.candidates.scan = async function* (o) {
    if (o?.segment?.index === 1 && o.segment.total === 3)
      for (let i = 0; i < 3; i++) {
        clock.advance(4_000);
        yield [];
      }
    if (o?.segment?.index === 1 && o.segment.total === 3) clock.advance(4_000);
    yield* scan(o);
  } as typeof deps.candidates.scan;
  const invs = await invocations(9, 5);
  for (const inv of invs) expect(inv.endedAt).toBeLessThanOrEqual(inv.deadline);
  const rounds = invs.filter((i) => i.result.round?.done);
  expect(rounds.length, 'rounds end').toBeGreaterThanOrEqual(2);
  for (const r of rounds) expect(r.result.round?.segments, 'the parts kept: a round that skipped one counts fewer leases').toBe(3);
  const reconciled = invs.flatMap((i) => i.reconciled);
  for (const name of [...p0, ...p2]) expect(reconciled.filter((n) => n === name).length, `${name} reconciled in every round`).toBeGreaterThanOrEqual(rounds.length);
  for (const name of p1) expect(reconciled).not.toContain(name); // its leases as before: to their streams and timers
  const skipped = invs.flatMap((i) => i.result.errors).filter((e) => e.lease === '(part 1 of 3)');
  expect(skipped.length).toBe(rounds.length);
  expect(skipped[0]!.error.message).toMatch(/outlast an invocation: skipped this round/);
  // told in the failures gauge
  for (const r of rounds) expect(r.result.round?.gauges.failures).toBeGreaterThanOrEqual(1);
});

it("a round's end with 40 leases on expired sessions of a crashed fleet, each read taking a second: their reads stop at half the time left, the rows they release are collected, the invocation ends before its deadline (before: 40 s of reads past its stop)", async () => {
  await seed(4);
  await invocations(1, 2); // one part: 4 leases, two parts from here
  for (let i = 0; i < 40; i++) {
    const name = `held-${String(i).padStart(2, '0')}`;
    const session = `s-${i}`;
    await deps.leases.write(await deps.leases.read(name), { set: { holderIdentity: `h${i}`, holderInstance: `h${i}_1@p${i}`, session, acquireTime: THEN, renewTime: THEN, leaseDurationSeconds: 15, leaseTransitions: 0, fencingToken: 1 } });
    await t.client.send(new PutItemCommand({ TableName: t.names.identities, Item: marshall({ ...sessionKey(session), holderIdentity: session, process: `p${i}`, hostname: 'h', leaseDurationSeconds: 15, acquireTime: THEN, renewTime: THEN, revision: 1 }) }));
  }
  const read = deps.leases.read.bind(deps.leases);
  deps.leases.read = async (name) => {
    if (name.startsWith('held-')) clock.advance(1_000);
    return read(name);
  };
  const invs = await invocations(2, 2);
  for (const inv of invs) {
    expect(inv.endedAt, 'ended before its deadline').toBeLessThanOrEqual(inv.deadline);
    expect(inv.result.round).toMatchObject({ done: true, segments: 2 });
    const sessions = inv.result.collectedIdentities.filter((k) => k.name.startsWith('s-'));
    expect(sessions.length, 'some released and collected, not all').toBeGreaterThan(0);
    expect(sessions.length).toBeLessThan(40);
  }
  expect(invs.flatMap((i) => i.result.errors)).toEqual([]);
});

/** Leases by the part of `total` that holds their candidates. */
async function inPart(index: number, total: number): Promise<Set<string>> {
  const out = new Set<string>();
  for await (const page of deps.candidates.scan({ segment: { index, total } })) for (const r of page) if (r.ok) out.add(r.item.leaseName);
  return out;
}

/**
 * From here the next `n` candidates scans (of `part`, where given) take 16 s each, more than an
 * invocation has: four pages of 4 s (the pass looks at its deadline between pages).
 */
function slowScans(n: number, part?: { index: number; total: number }): () => number {
  const scan = deps.candidates.scan.bind(deps.candidates);
  let left = n;
  deps.candidates.scan = async function* (o) {
    if (left > 0 && (part === undefined || (o?.segment?.index === part.index && o.segment.total === part.total))) {
      left--;
      for (let i = 0; i < 3; i++) {
        clock.advance(4_000);
        yield [];
      }
      clock.advance(4_000);
    }
    yield* scan(o);
  } as typeof deps.candidates.scan;
  return () => left;
}

describe('twelfth review of 4fc30042: an owed collection goes on into the round; a part skipped only twice unscanned; its gauge; parts shrink', () => {
  it('one part, 15 leases of 1 s in a 15 s invocation (each round ends at the stop, its collection owed): every invocation reconciles all 15 (before: 15, 0, 15, 0: the owed pass ended the invocation)', async () => {
    await seed(15);
    const invs = await invocations(6, 10_000);
    for (const inv of invs) expect(inv.endedAt).toBeLessThanOrEqual(inv.deadline);
    expect(invs.map((i) => i.reconciled.length)).toEqual([15, 15, 15, 15, 15, 15]);
    // each round done in its invocation, its collection owed to the next, which does it first
    for (const inv of invs) expect(inv.result.round).toMatchObject({ done: true, invocations: 1, leases: 15, owes: { owedPart: 0, owedParts: 1 } });
  });

  it("three parts, one invocation's first scan throttled past the invocation (16 s, once): its part is taken again at the next, not skipped; no lease waits an extra round, and the gauge counts all 45 throughout (before: skipped, a lease waited 8 invocations, 44 published)", async () => {
    await seed(45);
    await invocations(4, 15); // counted: three parts from here
    expect((await deps.ticks.read()).item).toMatchObject({ segments: 3, segment: 0 });
    const lastSeen = new Map<string, number>();
    let gap = 0;
    const gauges: number[] = [];
    const errors: string[] = [];
    let left = () => 0;
    for (let i = 0; i < 12; i++) {
      if (i === 5) left = slowScans(1);
      const [inv] = await invocations(1, 15);
      expect(inv!.endedAt).toBeLessThanOrEqual(inv!.deadline);
      for (const n of inv!.reconciled) {
        const was = lastSeen.get(n);
        if (was !== undefined) gap = Math.max(gap, i - was);
        lastSeen.set(n, i);
      }
      gauges.push(inv!.result.round!.gauges.leaderless);
      errors.push(...inv!.result.errors.map((e) => `${e.lease}: ${e.error.message}`));
    }
    expect(left(), 'the throttled scan came').toBe(0);
    expect(gap, 'invocations between two reconciles of one lease').toBeLessThanOrEqual(4);
    expect(Math.min(...gauges), 'every lease leaderless throughout').toBe(45);
    expect(errors.filter((e) => /skipped/.test(e))).toEqual([]);
  });

  it("a part's scans outlasting one invocation, its first pass, once (a throttle): taken again at the next, not skipped; its leases reconciled there, and the round's gauge counts them (before: skipped, its leases left a round, the round's gauge without them)", async () => {
    await seed(14);
    await invocations(1, 5); // one part: 14 leases, three parts from here
    const [whole] = await invocations(1, 5); // a round of three parts fits an invocation (14 s): every lease leaderless (elections open)
    expect(whole!.result.round).toMatchObject({ done: true, segments: 3, invocations: 1, gauges: { leaderless: 14 } });
    const p0 = await inPart(0, 3);
    expect(p0.size).toBeGreaterThan(0);
    const left = slowScans(1, { index: 0, total: 3 });
    const invs = await invocations(3, 5);
    expect(left()).toBe(0);
    for (const inv of invs) expect(inv.endedAt).toBeLessThanOrEqual(inv.deadline);
    expect(invs[0]!.reconciled).toEqual([]);
    expect(invs[0]!.result.round).toMatchObject({ done: false, next: { segment: 0 } });
    expect(invs[0]!.result.errors.map((e) => e.lease)).toEqual(['(the scans of part 0 of 3)']);
    expect(invs[0]!.result.errors[0]!.error.message).toMatch(/taken again at the next/);
    for (const name of p0) expect(invs[1]!.reconciled, `${name} reconciled at the next invocation`).toContain(name);
    expect(invs[1]!.result.round).toMatchObject({ done: true, invocations: 2, leases: 14 });
    expect(invs.map((i) => i.result.round!.gauges.leaderless)).toEqual([14, 14, 14]);
    expect(invs.flatMap((i) => i.result.errors).filter((e) => /skipped this round/.test(e.error.message))).toEqual([]);
  });

  it("a part skipped (its scans outlast two invocations in a row, each its first pass) holding the only leaderless leases: the round's gauge still counts them (before: 0 at the round's end); skipped once a round", async () => {
    await seed(14);
    await invocations(1, 5); // one part: 14 leases, three parts from here
    const [first] = await invocations(1, 5); // a whole round of three parts: every lease leaderless (elections open)
    expect(first!.result.round).toMatchObject({ done: true, segments: 3, gauges: { leaderless: 14 } });
    const p1 = await inPart(1, 3);
    expect(p1.size).toBeGreaterThan(0);
    slowScans(1_000, { index: 1, total: 3 });
    const invs = await invocations(9, 5);
    for (const inv of invs) expect(inv.endedAt).toBeLessThanOrEqual(inv.deadline);
    const rounds = invs.filter((i) => i.result.round?.done);
    // until the first round that skipped part 1 is done, never below the 14 last counted; a round on,
    // the skipped part's leases leave the gauge (their skip is told in the failures, every round)
    const firstDone = invs.indexOf(rounds[0]!);
    expect(invs.slice(0, firstDone + 1).map((i) => i.result.round!.gauges.leaderless)).toEqual(invs.slice(0, firstDone + 1).map(() => 14));
    for (const i of invs) expect(i.result.round!.gauges.leaderless).toBeGreaterThanOrEqual(14 - p1.size);
    for (const r of rounds) expect(r.result.round!.gauges.failures).toBeGreaterThanOrEqual(1);
    expect(rounds.length).toBeGreaterThanOrEqual(2);
    const skips = invs.flatMap((i) => i.result.errors).filter((e) => e.lease === '(part 1 of 3)');
    expect(skips).toHaveLength(rounds.length);
    expect(skips[0]!.error.message).toMatch(/twice in a row/);
    // the parts kept: the round that skipped one counted fewer leases
    for (const r of rounds) expect(r.result.round?.segments).toBe(3);
    expect((await deps.ticks.read()).item?.segments).toBe(3);
  });

  it("a part skipped round after round while the other parts' leases are mended: the leaderless gauge follows them down, never held at the fleet's highest count (before: the larger of each round and the last, kept as the last: 14 for ever)", async () => {
    const names = await seed(14);
    await invocations(1, 5);
    const [first] = await invocations(1, 5);
    expect(first!.result.round).toMatchObject({ done: true, segments: 3, gauges: { leaderless: 14 } });
    const p1 = await inPart(1, 3);
    slowScans(1_000, { index: 1, total: 3 });
    // every lease outside part 1 retired: its rows gone
    for (const n of names.filter((x) => !p1.has(x))) {
      const c = await deps.candidates.read(n, 'a');
      if (c.item) await deps.candidates.delete(c);
      const l = await deps.leases.read(n);
      if (l.item) await deps.leases.delete(l);
    }
    const invs = await invocations(12, 5);
    const rounds = invs.filter((i) => i.result.round?.done);
    expect(rounds.length).toBeGreaterThanOrEqual(3);
    expect(rounds.at(-1)!.result.round!.gauges.leaderless).toBeLessThan(14);
  });

  it("an owed collection whose scans outlast the invocation is given up and told as a collection, not as a part's leases skipped; the round goes on at the next invocation", async () => {
    await seed(15);
    const [first] = await invocations(1, 10_000); // ends at the stop: its collection owed
    expect(first!.result.round?.owes).toEqual({ owedPart: 0, owedParts: 1 });
    slowScans(1);
    const [second, third] = await invocations(2, 10_000);
    expect(second!.endedAt).toBeLessThanOrEqual(second!.deadline);
    expect(second!.reconciled).toEqual([]);
    const told = second!.result.errors.map((e) => `${e.lease}: ${e.error.message}`);
    expect(told).toHaveLength(1);
    expect(told[0]).toMatch(/collection/);
    expect(told[0]).not.toMatch(/skipped|streams and timers/);
    expect(second!.result.round?.owes, 'given up: once').toBeUndefined();
    expect(third!.reconciled).toHaveLength(15);
  });

  it('a round in three parts with one lease failing every round, then 20 of its 25 leases gone: its parts shrink to one (before: any failure kept 3 parts for ever)', async () => {
    const names = await seed(25);
    await invocations(3, 10); // one part of 25: three parts from here
    expect((await deps.ticks.read()).item?.segments).toBe(3);
    for (const leaseName of names.slice(5)) await deps.candidates.delete(await deps.candidates.read(leaseName, 'a'));
    const invs = await invocations(6, 10, 'lease-000');
    expect(invs.flatMap((i) => i.result.errors).filter((e) => e.lease === 'lease-000').length, 'the failure in every round').toBeGreaterThanOrEqual(2);
    expect((await deps.ticks.read()).item?.segments).toBe(1);
  });
});

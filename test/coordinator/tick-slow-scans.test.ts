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
import { afterEach, beforeEach, expect, it } from 'vitest';
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

/** Invocations a schedule tick apart, each reconcile costing COST_MS. */
async function invocations(n: number, segmentLeases: number): Promise<Invocation[]> {
  const out: Invocation[] = [];
  for (let i = 0; i < n; i++) {
    const at = clock.now();
    const deadline = clock.monotonic() + REMAINING_MS;
    const reconciled: string[] = [];
    const afterEach = async (o: ReconcileOutcome) => {
      reconciled.push(o.lease);
      clock.advance(COST_MS);
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
  // 7 reconciles (8 s to 15 s), 7 more ending at the stop: the collection cut short; the next
  // invocation's pass over the part (the whole time) reconciles nothing new and collects
  expect(invs.map((i) => i.reconciled.length)).toEqual([7, 7, 0, 7, 7, 0, 7, 7]);
  expect(invs[1]!.result.round).toMatchObject({ done: false, next: { segment: 0, after: 'lease-013' }, owes: { owedPart: 0, owedParts: 1 } });
  expect(invs[2]!.result.round).toMatchObject({ done: true, invocations: 3, leases: 14 });
  expect(invs[2]!.result.round?.owes).toBeUndefined();
  expect(invs[2]!.result.collectedCandidates).toEqual([{ leaseName: 'lease-000', name: 'old' }]);
  expect(invs[2]!.result.collectedIdentities).toEqual([{ component: 'scheduler', name: 'gone-host' }]);
  expect(invs[5]!.result.round).toMatchObject({ done: true, invocations: 3, leases: 14 });
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

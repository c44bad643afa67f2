/**
 * A part of the tick's round whose attempt does not finish other than by its time (review,
 * 2026-12-07, fourteenth): its scan throws (refused past the SDK's retries), or its invocation
 * ends inside it (out of memory, the Lambda timeout). Before, the cursor was written only at an
 * invocation's end: nothing recorded the attempt, each invocation redid the parts before it and
 * ended there again, the skip after two unfinished attempts never applied, and the parts after it
 * were never reconciled again (12 leases in 3 parts, part 1's scan throwing: over 5 invocations
 * the same 3 leases reconciled each time, the cursor at part 0, the other 9 never reached).
 */
import { afterEach, beforeEach, expect, it } from 'vitest';
import { manualClock, type ManualClock } from '../../lib/clock.js';
import { coordinatorDeps, type CoordinatorDeps, type ReconcileOutcome } from '../../lib/coordinator/reconcile.js';
import { tick, type TickResult } from '../../lib/coordinator/tick.js';
import { testTables, type TestTables } from '../support.js';

const T0 = Date.UTC(2026, 11, 7);
const OEV = 'OldestEmulationVersion';
/** Lambda's remaining time at each invocation, the margin kept back (15 s to work in), each reconcile's cost, the schedule. */
const REMAINING_MS = 20_000;
const MARGIN_MS = 5_000;
const COST_MS = 1_000;
const TICK_EVERY_MS = 60_000;
/** 12 leases at 4 a part: three parts once the first round has counted them. */
const SEGMENT_LEASES = 4;
const PART_1 = { index: 1, total: 3 };

let t: TestTables;
let clock: ManualClock;

beforeEach(async () => {
  t = await testTables('tick-faults');
  clock = manualClock(T0);
});
afterEach(() => t.drop());

/** The coordinator's dependencies as a fresh process (a new invocation environment) builds them. */
const fresh = (): CoordinatorDeps => coordinatorDeps(t.client, t.names, { clock, config: { concurrency: 1 } });

async function seed(n: number): Promise<void> {
  const deps = fresh();
  for (let i = 0; i < n; i++) {
    const leaseName = `lease-${String(i).padStart(3, '0')}`;
    await deps.candidates.write({ key: { leaseName, name: 'a' }, item: undefined, revision: 0 }, { set: { emulationVersion: '1.30.0', binaryVersion: '1.30.0', preferredStrategies: [OEV], renewTime: T0, createdAt: T0 } });
  }
}

/** Leases by the part of `total` that holds their candidates. */
async function inPart(index: number, total: number): Promise<Set<string>> {
  const out = new Set<string>();
  for await (const page of fresh().candidates.scan({ segment: { index, total } })) for (const r of page) if (r.ok) out.add(r.item.leaseName);
  return out;
}

interface Invocation {
  /** Absent: the invocation rejected (`rejected`), or was abandoned inside part 1 (`abandoned`). */
  result?: TickResult;
  rejected?: unknown;
  abandoned?: true;
  reconciled: string[];
}

/**
 * One scheduled invocation, each reconcile costing COST_MS. `fault` wraps the candidates store of
 * the invocation's dependencies (its scan of part 1): it throws, or it never answers (the
 * invocation abandoned there, as one killed out of memory or at its timeout, its state lost).
 */
async function invoke(deps: CoordinatorDeps, fault: 'throw' | 'hang' | undefined, seen: { part1Scans: number }): Promise<Invocation> {
  const at = clock.now();
  const reconciled: string[] = [];
  let hung!: () => void;
  const hanging = new Promise<'abandoned'>((r) => (hung = () => r('abandoned')));
  if (fault) {
    const scan = deps.candidates.scan.bind(deps.candidates);
    deps.candidates.scan = async function* (o) {
      if (o?.segment?.index === PART_1.index && o.segment.total === PART_1.total) {
        seen.part1Scans++;
        if (fault === 'throw') throw new Error('ProvisionedThroughputExceededException: the scan of part 1 refused');
        hung();
        await new Promise(() => {}); // never answers
      }
      yield* scan(o);
    } as typeof deps.candidates.scan;
  }
  const afterEach = async (o: ReconcileOutcome) => {
    reconciled.push(o.lease);
    clock.advance(COST_MS);
  };
  const running = tick(deps, { deadline: clock.monotonic() + REMAINING_MS, marginMs: MARGIN_MS, segmentLeases: SEGMENT_LEASES, afterEach }).then(
    (result) => ({ result }),
    (rejected: unknown) => ({ rejected }),
  );
  const out = await Promise.race([running, hanging]);
  clock.set(at + TICK_EVERY_MS);
  return out === 'abandoned' ? { abandoned: true, reconciled } : { ...out, reconciled };
}

/** 12 leases, counted by a first round of one part: three parts from here; the leases of each. */
async function threeParts(): Promise<Set<string>[]> {
  await seed(12);
  const first = await invoke(fresh(), undefined, { part1Scans: 0 });
  expect(first.result?.round).toMatchObject({ done: true, segments: 1, leases: 12 });
  expect((await fresh().ticks.read()).item).toMatchObject({ segments: 3, segment: 0 });
  const parts = [await inPart(0, 3), await inPart(1, 3), await inPart(2, 3)];
  expect(parts[1]!.size, 'part 1 holds leases').toBeGreaterThan(0);
  expect(parts[0]!.size + parts[2]!.size, 'and the other parts too').toBeGreaterThan(0);
  return parts;
}

it("a part whose scan throws at every attempt: told, taken again once, then skipped; the other parts' leases reconciled every round (before: the tick rejected in part 1 every time, part 2's leases never reached)", async () => {
  const [p0, p1, p2] = await threeParts();
  const deps = fresh();
  const seen = { part1Scans: 0 };
  const invs: Invocation[] = [];
  for (let i = 0; i < 5; i++) invs.push(await invoke(deps, 'throw', seen));
  expect(invs.map((i) => i.rejected)).toEqual(invs.map(() => undefined));
  // a round: part 0, part 1 (throws: taken again), then part 1 again (throws: skipped) and part 2
  expect(invs.map((i) => i.result?.round?.done)).toEqual([false, true, false, true, false]);
  for (const name of p2!) expect(invs[1]!.reconciled, `${name}, of part 2, reconciled at the second invocation`).toContain(name);
  for (const name of [...p0!, ...p2!]) expect(invs.filter((i) => i.reconciled.includes(name)).length, `${name} reconciled in each of the two rounds`).toBeGreaterThanOrEqual(2);
  for (const name of p1!) expect(invs.flatMap((i) => i.reconciled)).not.toContain(name); // left to its streams and timers
  expect(seen.part1Scans, 'part 1 attempted twice a round').toBe(5);
  const errors = invs.flatMap((i) => i.result!.errors.map((e) => ({ lease: e.lease, message: e.error.message })));
  const thrown = errors.filter((e) => e.lease === '(the scans of part 1 of 3)');
  expect(thrown).toHaveLength(5);
  for (const e of thrown) expect(e.message).toMatch(/ProvisionedThroughputExceeded/);
  const skips = errors.filter((e) => e.lease === '(part 1 of 3)');
  expect(skips).toHaveLength(2);
  expect(skips[0]!.message).toMatch(/skipped this round \(twice in a row\)/);
  for (const i of [invs[1]!, invs[3]!]) {
    expect(i.result!.round).toMatchObject({ segments: 3, invocations: 2, lostRace: false });
    expect(i.result!.round!.gauges.failures, 'the failures gauge tells it').toBeGreaterThanOrEqual(2);
  }
  expect((await deps.ticks.read()).item).toMatchObject({ segments: 3, segment: 1, unscanned: 1 });
});

it("a part whose scan throws once (a throttle past the SDK's retries): taken again at the next invocation, not skipped, its leases reconciled there", async () => {
  const [, p1] = await threeParts();
  const seen = { part1Scans: 0 };
  const first = await invoke(fresh(), 'throw', seen);
  expect(first.result?.round).toMatchObject({ done: false, next: { segment: 1 } });
  expect(first.result!.errors.map((e) => e.lease)).toEqual(['(the scans of part 1 of 3)']);
  const second = await invoke(fresh(), undefined, seen);
  for (const name of p1!) expect(second.reconciled).toContain(name);
  expect(second.result?.round).toMatchObject({ done: true, invocations: 2, leases: 12 });
  expect(second.result!.errors).toEqual([]);
  expect((await fresh().ticks.read()).item?.unscanned).toBeUndefined();
});

it("an invocation that ends inside a part (never answering: its state lost, as out of memory or at its timeout), every time: the part is skipped after two such attempts and the round goes on (before: every invocation redid part 0 and ended in part 1, part 2's leases never reached)", async () => {
  const [p0, p1, p2] = await threeParts();
  const seen = { part1Scans: 0 };
  const invs: Invocation[] = [];
  // each invocation a fresh process: nothing of the last one's state but the tables
  for (let i = 0; i < 6; i++) invs.push(await invoke(fresh(), 'hang', seen));
  expect(invs.map((i) => i.abandoned ?? false)).toEqual([true, true, false, true, true, false]);
  expect(seen.part1Scans, 'two attempts a round').toBe(4);
  // part 0 in the first invocation of each round (not again in the second), part 2 in the third
  for (const name of p0!) expect(invs.map((i) => i.reconciled.includes(name))).toEqual([true, false, false, true, false, false]);
  for (const name of p2!) expect(invs.map((i) => i.reconciled.includes(name))).toEqual([false, false, true, false, false, true]);
  for (const name of p1!) expect(invs.flatMap((i) => i.reconciled)).not.toContain(name);
  for (const i of [invs[2]!, invs[5]!]) {
    expect(i.result!.round).toMatchObject({ done: true, segments: 3, invocations: 3, lostRace: false });
    const skips = i.result!.errors.filter((e) => e.lease === '(part 1 of 3)');
    expect(skips).toHaveLength(1);
    expect(skips[0]!.error.message).toMatch(/unfinished: skipped this round \(twice in a row\)/);
    expect(i.result!.round!.gauges.failures).toBeGreaterThanOrEqual(1);
  }
});

import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { diffTallies, READ_COMMANDS, RequestCounter, type Tallies } from '../../bench/requests.js';
import { seedLeases } from '../../bench/seed.js';
import { manualClock, type ManualClock } from '../../lib/clock.js';
import { coordinatorDeps, type CoordinatorDeps } from '../../lib/coordinator/reconcile.js';
import { tick } from '../../lib/coordinator/tick.js';
import { testTables, type TestTables } from '../support.js';

const T0 = Date.UTC(2026, 11, 1);
const LEASES = 30;
const CANDIDATES = 3;
const PROCESSES = 6;
/**
 * The seeded candidates' TTL: one the machine's clock never reaches. DynamoDB Local deletes rows
 * past their TTL on its own, by the machine's clock (about 20 every 10 s, at times of its own),
 * and T0 + 1 h is past: a candidate deleted under a round changes its decisions and its reads.
 */
const NEVER_SWEPT = 4_102_444_800; // 2100-01-01

let t: TestTables;
let clock: ManualClock;
let deps: CoordinatorDeps;
let counter: RequestCounter;

beforeEach(async () => {
  t = await testTables('tick-reads');
  clock = manualClock(T0);
  deps = coordinatorDeps(t.client, t.names, { clock });
  const table = (name: string | undefined) => Object.entries(t.names).find(([, n]) => n === name)?.[0] ?? String(name);
  // real middleware on the client the coordinator sends with: each request by table, command and scan part
  counter = new RequestCounter().attach(t.client, (input, command) => `${table(input.TableName)} ${command}${command === 'Scan' ? ((input as { Segment?: number }).Segment === undefined ? ' whole' : ' part') : ''}`);
  await seedLeases(t.client, t.names, { stem: 'lease', count: LEASES, candidatesPerLease: CANDIDATES, state: 'held', now: T0, expiresAt: NEVER_SWEPT });
  for (let p = 0; p < PROCESSES; p++) {
    await deps.identities.write(
      { key: { component: 'conclave-session', name: `session-${p}` }, item: undefined, revision: 0 },
      { set: { holderIdentity: `session-${p}_1`, hostname: 'host', leaseDurationSeconds: 3_600, acquireTime: T0, renewTime: T0, process: `p-${p}` } },
    );
  }
});
afterEach(() => t.drop());

/** One round in one invocation (its deadline far off), and the reads and writes it sent. */
async function round(segmentLeases: number): Promise<{ segments: number; reads: Tallies; writes: Tallies; collected: string[] }> {
  const before = counter.snapshot();
  const r = await tick(deps, { deadline: clock.monotonic() + 300_000, segmentLeases });
  expect(r.round?.done).toBe(true);
  expect(r.errors).toEqual([]);
  const sent = Object.entries(diffTallies(counter.snapshot(), before)).filter(([, x]) => x.requests > 0);
  const reads = sent.filter(([, x]) => Object.keys(x.commands).every((c) => READ_COMMANDS.has(c)));
  const writes = sent.filter(([, x]) => !Object.keys(x.commands).every((c) => READ_COMMANDS.has(c)));
  return { segments: r.round!.segments, reads: Object.fromEntries(reads), writes: Object.fromEntries(writes), collected: r.collectedIdentities.map((i) => i.name) };
}

/** The candidate rows in the table now. */
async function candidateRows(): Promise<number> {
  let n = 0;
  for await (const page of deps.candidates.scan()) n += page.length;
  return n;
}

const requests = (reads: Tallies, role: string) => reads[role]?.requests ?? 0;
const reportOf = (reads: Tallies) => JSON.stringify(Object.fromEntries(Object.entries(reads).map(([role, x]) => [role, `${x.requests} requests, ${x.rru} RRU`])));

/** Three rounds of 30 leases at 10 a part: the first (one part) settles the seeded leases and counts them, the second is the first in 3 parts; the third's reads. */
async function thirdRound(): ReturnType<typeof round> {
  await round(10);
  clock.advance(60_000);
  await round(10);
  clock.advance(60_000);
  return round(10);
}

describe("what a round of the coordinator's tick reads, by table (issue 38, item 5: the cost of scale)", () => {
  it('a round in N parts reads each part of the leases and candidates tables once, and the identities table N + 1 times; nothing more while no identity has expired', async () => {
    const { segments, reads, writes } = await thirdRound();
    expect(segments).toBe(3);
    const report = reportOf(reads);
    // what the counts stand on: the tables changed by the coordinator alone (not by TTL: NEVER_SWEPT)
    expect(await candidateRows(), 'seeded candidate rows deleted behind the coordinator').toBe(LEASES * CANDIDATES);
    // a settled round decides nothing new: it writes only its cursor, as it enters each part and at
    // its end (so an invocation that ends inside a part leaves its attempt counted: lib/coordinator/tick.ts),
    // one write unit each; it reads no lease again before a write
    expect(writes, reportOf(writes)).toEqual({ 'identities UpdateItem': { commands: { UpdateItem: segments + 1 }, failed: 0, requests: segments + 1, rru: 0, wru: segments + 1 } });
    // each part: its share of the leases, then of the candidates (the pings of an election it shows),
    // then every session row (read after the lease rows it judges: lib/coordinator/reconcile.ts)
    expect(requests(reads, 'leases Scan part'), report).toBe(segments);
    expect(requests(reads, 'candidates Scan part'), report).toBe(segments);
    // and at the round's end the identities once more (collectIdentities), and the cursor
    expect(requests(reads, 'identities Scan whole'), report).toBe(segments + 1);
    expect(requests(reads, 'identities GetItem'), report).toBe(1);
    // no identity expired: the leases and candidates tables are not read again for the sessions they name
    expect(Object.keys(reads).sort(), report).toEqual(['candidates Scan part', 'identities GetItem', 'identities Scan whole', 'leases Scan part']);
  });

  it('a round whose end finds an expired identity reads every lease and candidate once more (the sessions they name) before it collects', async () => {
    const then = T0 - 3 * 3_600_000;
    await round(10); // one part, then the first of 3 parts; the expired row comes before the next
    clock.advance(60_000);
    await round(10);
    clock.advance(60_000);
    await deps.identities.write({ key: { component: 'scheduler', name: 'gone-host' }, item: undefined, revision: 0 }, { set: { holderIdentity: 'gone-host_1', hostname: 'host', leaseDurationSeconds: 60, acquireTime: then, renewTime: then } });
    const { segments, reads, collected } = await round(10);
    expect(segments).toBe(3);
    expect(collected).toEqual(['gone-host']);
    const report = reportOf(reads);
    expect(requests(reads, 'identities Scan whole'), report).toBe(segments + 1);
    expect(requests(reads, 'leases Scan whole'), report).toBe(1);
    expect(requests(reads, 'candidates Scan whole'), report).toBe(1);
    // as many read units as the parts took: a projection does not lower a scan's read units (each part's page rounds up, under one more a part)
    for (const table of ['leases', 'candidates']) {
      const whole = reads[`${table} Scan whole`]!.rru;
      const parts = reads[`${table} Scan part`]!.rru;
      expect(whole, report).toBeGreaterThan(parts - segments);
      expect(whole, report).toBeLessThanOrEqual(parts);
    }
  });

  it('a round of one part scans each table once', async () => {
    await round(1_000);
    clock.advance(60_000);
    const { segments, reads } = await round(1_000);
    expect(segments).toBe(1);
    expect(Object.fromEntries(Object.entries(reads).map(([role, x]) => [role, x.requests]))).toEqual({ 'leases Scan whole': 1, 'candidates Scan whole': 1, 'identities Scan whole': 1, 'identities GetItem': 1 });
  });
});

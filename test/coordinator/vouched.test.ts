/**
 * A candidate on a session lives by its process's session (lib/election/vacancy.ts
 * vouchedCandidate): the reconcile, the tick and its garbage collection judge it so on DynamoDB
 * Local, and a collected row carries the coordinator's mark, which is what makes its removal
 * Candidate Expired (a worker's withdrawal of a row whose own stamp is hours old is not).
 */
import type { AttributeValue } from '@aws-sdk/client-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { manualClock } from '../../lib/clock.js';
import { collectIdentities, coordinatorDeps, reconcileAll, reconcileLease, type CoordinatorDeps } from '../../lib/coordinator/reconcile.js';
import { listVouched } from '../../lib/coordinator/vouched.js';
import { vouchedCandidate } from '../../lib/election/vacancy.js';
import { eventsFromCandidateChange } from '../../lib/events/derive.js';
import { CandidateItem, type Candidate } from '../../lib/schemas/candidate.js';
import { allLeasesSessionComponent, sessionKey, sessionShard } from '../../lib/schemas/identity.js';
import { streamRecords, testTables, type TestTables } from '../support.js';
import { wiring } from '../../lib/wiring.js';
import { matchesFilter } from '../../lib/local/event-filter.js';

const T0 = Date.UTC(2026, 10, 30);
const HOUR = 3_600_000;
const OEV = 'OldestEmulationVersion';
let t: TestTables;
let clock = manualClock(T0);
let deps: CoordinatorDeps;
let seq = 0;
let L: string;

beforeAll(async () => {
  t = await testTables('vouched');
});
afterAll(() => t.drop());
beforeEach(() => {
  clock = manualClock(T0);
  deps = coordinatorDeps(t.client, t.names, { clock });
  L = `lease-${++seq}`;
});

/** A session row of process `process`, renewed at `renewTime`, as a Session writes it (in its shard). */
async function session(process: string, renewTime: number, d = deps): Promise<string> {
  const name = `${sessionShard(process)}:session-${process}-${seq}`;
  await d.identities.write({ key: sessionKey(name), item: undefined, revision: 0 }, {
    set: { holderIdentity: name, process, hostname: 'h', leaseDurationSeconds: 15, acquireTime: renewTime, renewTime },
  });
  expect(sessionKey(name).component).toBe(allLeasesSessionComponent(process));
  return name;
}

/** A candidate row; on a session when `on` names one (its instance then names `process`). */
async function candidate(lease: string, name: string, emu: string, renewTime: number, on?: { session: string; process: string }, d = deps): Promise<Candidate> {
  return d.candidates.write({ key: { leaseName: lease, name }, item: undefined, revision: 0 }, {
    set: {
      emulationVersion: emu,
      binaryVersion: '1.31.0',
      preferredStrategies: [OEV],
      renewTime,
      ackedPingTime: 0,
      createdAt: T0 - 24 * HOUR,
      ...(on ? { identity: `${name}_1@${on.process}`, session: on.session } : { identity: `${name}_1` }),
    },
  });
}

describe('vouchedCandidate', () => {
  const row = { leaseName: 'l', name: 'a', binaryVersion: '1.31.0', emulationVersion: '1.30.0', preferredStrategies: [OEV], renewTime: T0 - HOUR, createdAt: T0 - HOUR, revision: 3, identity: 'a_1@p1', session: 's1' } satisfies Candidate;
  it("takes the later of its own stamp and its own process's session's", () => {
    expect(vouchedCandidate(row, { name: 's1', renewTime: T0, process: 'p1' }).renewTime).toBe(T0);
    expect(vouchedCandidate({ ...row, renewTime: T0 + 1 }, { name: 's1', renewTime: T0, process: 'p1' }).renewTime).toBe(T0 + 1);
  });
  it("vouches for nothing from another process's session, another row, a row without a process, or none", () => {
    for (const s of [{ name: 's1', renewTime: T0, process: 'p2' }, { name: 's2', renewTime: T0, process: 'p1' }, { name: 's1', renewTime: T0, process: undefined }, undefined]) {
      expect(vouchedCandidate(row, s)).toBe(row);
    }
    const { session: _, ...off } = row;
    expect(vouchedCandidate(off, { name: 's1', renewTime: T0, process: 'p1' })).toBe(off);
  });
});

describe('a candidate on a session, on DynamoDB Local', () => {
  it('is elected by its version though its own row is hours old, while its session is renewed: by one lease\'s reconcile and by the tick', async () => {
    const s = await session('p1', T0 - 1_000);
    await candidate(L, 'a', '1.30.0', T0 - 5 * HOUR, { session: s, process: 'p1' });
    await candidate(L, 'b', '1.31.0', T0);
    const listed = await listVouched(deps, L);
    expect(listed.candidates.find((c) => c.name === 'a')?.renewTime).toBe(T0 - 1_000);
    const o = await reconcileLease(deps, L);
    expect(o.decision).toMatchObject({ kind: 'elect', winner: 'a' });

    // the tick: a second lease alike (its row there, vacant: the tick never closes a missing row's
    // election before the stream has seen it), and nothing of either collected
    const L2 = `${L}-tick`;
    await deps.leases.write(await deps.leases.read(L2), { set: { leaseDurationSeconds: 15, leaseTransitions: 0, fencingToken: 0 } });
    await candidate(L2, 'a', '1.30.0', T0 - 5 * HOUR, { session: s, process: 'p1' });
    await candidate(L2, 'b', '1.31.0', T0);
    const r = await reconcileAll(deps);
    expect(r.outcomes.find((x) => x.lease === L2)?.decision).toMatchObject({ kind: 'elect', winner: 'a' });
    expect(r.collectedCandidates.filter((c) => c.leaseName === L || c.leaseName === L2)).toEqual([]);
  });

  it("is stale by its own stamp when the session it names is another process's", async () => {
    const s = await session('p2', T0 - 1_000);
    await candidate(L, 'a', '1.30.0', T0 - 5 * HOUR, { session: s, process: 'p1' });
    await candidate(L, 'b', '1.31.0', T0);
    expect((await reconcileLease(deps, L)).decision).toMatchObject({ kind: 'elect', winner: 'b' });
  });

  it('keeps the session row it names past the row\'s expiry while the candidate lives by it; once both are stale, collects the candidate with its mark, then the row', async () => {
    const tables = await testTables('vouched-gc');
    const d = coordinatorDeps(tables.client, tables.names, { clock });
    try {
      const s = await session('p1', T0, d);
      await candidate('gc', 'a', '1.30.0', T0 - 5 * HOUR, { session: s, process: 'p1' }, d);
      // the process dies: its session is not renewed any more; a minute on, the row has expired (15 s)
      clock.advance(60_000);
      const r1 = await reconcileAll(d);
      expect(r1.collectedIdentities).toEqual([]);
      expect(r1.collectedCandidates).toEqual([]);
      // the segments' collection at a round's end keeps it too
      expect((await collectIdentities(d)).collectedIdentities).toEqual([]);
      // 30 minutes after the session's last renewal the candidate is stale by it: collected, with the
      // mark, and the session row, which no live candidate names any more
      clock.advance(30 * 60_000);
      const r2 = await reconcileAll(d);
      expect(r2.collectedCandidates).toEqual([{ leaseName: 'gc', name: 'a' }]);
      expect(r2.collectedIdentities.map((i) => i.name)).toEqual([s]);

      const records = await streamRecords(tables.client, tables.names.candidates);
      const removed = records.find((x) => x.eventName === 'REMOVE');
      const old = CandidateItem.parse(unmarshall(removed!.dynamodb!.OldImage as Record<string, AttributeValue>));
      expect(old.collectedAt).toBe(clock.now());
      const events = eventsFromCandidateChange({ eventID: 'e', at: clock.now(), oldCandidate: old, newCandidate: undefined, staleAfterMs: d.config.candidateStaleAfterMs });
      expect(events.map((e) => e.detailType)).toEqual(['Candidate Expired']);
    } finally {
      await tables.drop();
    }
  });

  it("the collection's mark flips a renewed row's renewalMark as a renewal does: the candidate stream's filter drops it, and passes the removal", async () => {
    const tables = await testTables('vouched-mark');
    const d = coordinatorDeps(tables.client, tables.names, { clock });
    try {
      await candidate('m', 'a', '1.30.0', T0 - 5 * HOUR, undefined, d);
      expect(await d.candidates.renew('m', 'a', T0 - 4 * HOUR)).toBe(true); // renewalMark 1
      await d.candidates.collect((await d.candidates.read('m', 'a')), T0);
      expect((await d.candidates.read('m', 'a')).item).toBeUndefined();
      const records = await streamRecords(tables.client, tables.names.candidates);
      const passed = records.filter((r) => (wiring.candidateStream.trigger.filters ?? []).some((f) => matchesFilter(f, r)));
      expect(records.map((r) => r.eventName)).toEqual(['INSERT', 'MODIFY', 'MODIFY', 'REMOVE']);
      // the registration, its first renewal (a mark from none), the removal; not the mark
      expect(passed.map((r) => r.eventName)).toEqual(['INSERT', 'MODIFY', 'REMOVE']);
      expect(passed[1]!.dynamodb?.NewImage?.['collectedAt']).toBeUndefined();
    } finally {
      await tables.drop();
    }
  });
});

/**
 * A candidate row's stand-down mark (standsDownUntil: its worker's leader work failed at two starts
 * in a row, on a Session) is a change the candidate stream reconciles on, both ways: marked, the
 * successor the lease names moves on to another at once; taken off (its candidacy's renewal), it is
 * named again at once. Before, neither write reconciled (candidateChangeMatters): the lease named a
 * successor that stood down, and the worker that stood again waited for the coordinator's tick (a
 * minute by default). On DynamoDB Local, through the candidate stream's function; a manual clock.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { manualClock } from '../../lib/clock.js';
import { coordinatorDeps } from '../../lib/coordinator/reconcile.js';
import { onCandidateChange, type FunctionDeps } from '../../lib/functions/core.js';
import { observability } from '../../lib/functions/env.js';
import { OLDEST_EMULATION_VERSION } from '../../lib/schemas/strategy.js';
import { CandidacyStore } from '../../lib/stores/candidate-store.js';
import { testTables, type TestTables } from '../support.js';

let t: TestTables;
beforeAll(async () => void (t = await testTables('stand-down-change')));
afterAll(async () => t.drop());

const L = 'stand-down';

describe("the candidate stream on a stand-down's mark", () => {
  it('marked: the successor named moves on to the next at once; taken off: named again at once (before: neither reconciled)', async () => {
    const start = Math.floor(Date.now() / 1000) * 1000;
    const clock = manualClock(start);
    const d: FunctionDeps = {
      coordinator: coordinatorDeps(t.client, t.names, { clock }),
      timer: { schedule: async () => undefined },
      publish: async () => undefined,
      deadLetter: async () => undefined,
      ...observability('test', 'SILENT'),
    };
    const c = d.coordinator;
    // h holds (the oldest: kept), a is its successor and b second, as the coordinator named them
    for (const [name, version] of [['h', '1.29.0'], ['a', '1.30.0'], ['b', '1.31.0']] as const) {
      await c.candidates.write(await c.candidates.read(L, name), { set: { binaryVersion: version, emulationVersion: version, preferredStrategies: [OLDEST_EMULATION_VERSION], renewTime: start, createdAt: start - 60_000, ackedPingTime: 0, identity: `${name}-1` } });
    }
    await c.leases.write(await c.leases.read(L), {
      set: { holderIdentity: 'h', holderInstance: 'h-1', leaseDurationSeconds: 15, acquireTime: start, renewTime: start, leaseTransitions: 0, fencingToken: 1, electedBy: 'coordinator', successor: 'a', successorInstance: 'a-1', secondSuccessor: 'b', secondSuccessorInstance: 'b-1' },
    });
    const named = async () => {
      const l = (await c.leases.read(L)).item!;
      return [l.successor, l.secondSuccessor];
    };
    const rows = new CandidacyStore(t.client, t.names.candidates);
    // a's work failed at two starts in a row: its row marked, as LeaseCandidate marks it (the record the stream delivers)
    clock.advance(1_000);
    const before = (await c.candidates.read(L, 'a')).item!;
    expect(await rows.markStandsDown(L, 'a', 'a-1', clock.now() + 600_000)).toBe(true);
    const marked = (await c.candidates.read(L, 'a')).item!;
    const first = await onCandidateChange(d, { eventID: 'mark', eventName: 'MODIFY', at: clock.now(), old: before, new: marked });
    expect(first?.decision).toMatchObject({ kind: 'setSuccessor', successor: { name: 'b' } });
    expect(await named()).toEqual(['b', undefined]);

    // its candidacy's renewal takes the mark off first: it stands again, named successor at once
    clock.advance(1_000);
    expect(await rows.markStandsDown(L, 'a', 'a-1', undefined)).toBe(true);
    const off = (await c.candidates.read(L, 'a')).item!;
    const second = await onCandidateChange(d, { eventID: 'off', eventName: 'MODIFY', at: clock.now(), old: marked, new: off });
    expect(second?.decision).toMatchObject({ kind: 'setSuccessor', successor: { name: 'a' }, secondSuccessor: { name: 'b' } });
    expect(await named()).toEqual(['a', 'b']);
  });
});

/**
 * The tick decides from its scans, made before a lease's turn in the pass (16 leases at a time:
 * seconds, at scale minutes). A candidate's answer or withdrawal since does not change the lease's
 * revision, which the lease write is conditioned on: a decision to write is taken again from the
 * lease's own reads. Here the change lands during the identities scan, the last before the pass.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { manualClock, type ManualClock } from '../../lib/clock.js';
import { coordinatorDeps } from '../../lib/coordinator/reconcile.js';
import { onTick, type FunctionDeps } from '../../lib/functions/core.js';
import { observability } from '../../lib/functions/env.js';
import { testTables, type TestTables } from '../support.js';

let t: TestTables;
beforeAll(async () => void (t = await testTables('tick-scan-age')));
afterAll(() => t.drop());

/** Deps whose identities scan (after the leases and candidates scans) runs `meanwhile` once first. */
function depsWith(clock: ManualClock): { d: FunctionDeps; meanwhile: (f: () => Promise<void>) => void } {
  const d: FunctionDeps = { coordinator: coordinatorDeps(t.client, t.names, { clock, config: { ackWindowMs: 5_000 } }), timer: { schedule: async () => undefined }, publish: async () => undefined, deadLetter: async () => undefined, ...observability('test', 'SILENT') };
  const ids = d.coordinator.identities;
  const scan = ids.scan.bind(ids);
  let pending: (() => Promise<void>) | undefined;
  ids.scan = async function* (opts) {
    const f = pending;
    pending = undefined;
    if (f) await f();
    yield* scan(opts);
  } as typeof ids.scan;
  return { d, meanwhile: (f) => (pending = f) };
}

/** Candidates a (the better: older binary) and b of `lease`, a tick that opens its election, and both answering. */
async function openElection(d: FunctionDeps, clock: ManualClock, lease: string): Promise<number> {
  const c = d.coordinator;
  const s = clock.now();
  for (const [n, bin] of [['a', '1.30.0'], ['b', '1.31.0']] as const)
    await c.candidates.write({ key: { leaseName: lease, name: n }, item: undefined, revision: 0 }, { set: { binaryVersion: bin, emulationVersion: '1.30.0', preferredStrategies: ['OldestEmulationVersion'], renewTime: s - 120_000, createdAt: s - 180_000, identity: `${n}-1` } });
  await onTick(d);
  const row = (await c.leases.read(lease)).item!;
  expect(row.election).toBeDefined();
  // the lease stream has seen the created row
  if (row.election!.awaitsStream) expect(await c.leases.clearAwaitsStream(lease, row.election!)).toBe(true);
  clock.set(s + 1_000);
  return row.election!.deadline;
}

const answer = async (d: FunctionDeps, clock: ManualClock, lease: string, name: string): Promise<void> => {
  const c = d.coordinator;
  const r = await c.candidates.read(lease, name);
  await c.candidates.write(r, { set: { renewTime: clock.now(), ackedPingTime: r.item!.pingTime! } });
};

it('answers that land after the scan, before the deadline, elect: the election is not failed on the scan', async () => {
  const clock = manualClock(Date.now());
  const { d, meanwhile } = depsWith(clock);
  const deadline = await openElection(d, clock, 'answered');
  meanwhile(async () => {
    await answer(d, clock, 'answered', 'a');
    await answer(d, clock, 'answered', 'b');
    clock.set(deadline + 1);
  });
  const r = await onTick(d);
  expect(r.outcomes.find((o) => o.lease === 'answered')?.decision.kind).toBe('elect');
  const row = (await d.coordinator.leases.read('answered')).item!;
  expect(row.holderIdentity).toBe('a');
  expect(row.lastElectionFailure).toBeUndefined();
});

it('a candidate withdrawn after the scan is not elected: the one still standing is', async () => {
  const clock = manualClock(Date.now());
  const { d, meanwhile } = depsWith(clock);
  const deadline = await openElection(d, clock, 'withdrawn');
  await answer(d, clock, 'withdrawn', 'a');
  await answer(d, clock, 'withdrawn', 'b');
  meanwhile(async () => {
    await d.coordinator.candidates.delete(await d.coordinator.candidates.read('withdrawn', 'a')); // a stops
    clock.set(deadline + 1);
  });
  await onTick(d);
  expect((await d.coordinator.leases.read('withdrawn')).item?.holderIdentity).toBe('b');
});

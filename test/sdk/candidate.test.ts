import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { manualClock } from '../../lib/clock.js';
import { LeaseCandidate } from '../../lib/sdk/candidate.js';
import { ValidationError } from '../../lib/schemas/validation.js';
import { CandidateStore } from '../../lib/stores/candidate-store.js';
import { testTables, type TestTables } from '../support.js';

let t: TestTables;
let store: CandidateStore;
// near the real time: DynamoDB Local applies the TTL attribute (expiresAt) on reads
const clock = manualClock(Date.now());
beforeAll(async () => {
  t = await testTables('candidate');
  store = new CandidateStore(t.client, t.names.candidates);
});
afterAll(() => t.drop());

const make = (over: Record<string, unknown> = {}, instance?: string) =>
  new LeaseCandidate({ leaseName: 'jobs', name: 'w1', table: t.names.candidates, binaryVersion: '1.31.0', emulationVersion: '1.30.0', ...over } as never, { client: t.client, clock, ...(instance ? { instance } : {}) });

describe('LeaseCandidate', () => {
  it.each([
    { over: { emulationVersion: '1.32.0' }, field: 'emulationVersion' },
    { over: { binaryVersion: '1.31' }, field: 'binaryVersion' },
    { over: { emulationVersion: 'v1.30.0' }, field: 'emulationVersion' },
    { over: { priority: 0 }, field: 'priority' },
    { over: { priority: -1 }, field: 'priority' },
    { over: { name: '' }, field: 'name' },
    { over: { leaseName: '' }, field: 'leaseName' },
    { over: { renewIntervalMs: 10 }, field: 'renewIntervalMs' },
  ])('rejects bad configuration at construction: $field', ({ over, field }) => {
    let err: unknown;
    try {
      make(over);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(ValidationError);
    expect((err as ValidationError).fields).toEqual([field]);
  });

  it('registers, renews (the ack), keeps its creation time across a restart, resets an operator’s priority, and removes its row on stop', async () => {
    const first = make({}, 'w1_first');
    const row = await first.start();
    expect(row).toMatchObject({ leaseName: 'jobs', name: 'w1', binaryVersion: '1.31.0', emulationVersion: '1.30.0', preferredStrategies: ['OldestEmulationVersion'], identity: 'w1_first', renewTime: clock.now(), createdAt: clock.now() });
    const created = row.createdAt;

    clock.advance(1_000);
    await store.ping('jobs', 'w1', clock.now());
    clock.advance(100);
    await first.ack();
    const acked = (await store.read('jobs', 'w1')).item!;
    expect(acked.renewTime).toBeGreaterThanOrEqual(acked.pingTime!);

    // an operator pins it
    await store.write(await store.read('jobs', 'w1'), { set: { priority: 50 } });
    await first.renew();
    expect((await store.read('jobs', 'w1')).item?.priority).toBe(50); // renewals leave it alone

    // the process restarts (a new instance, a new binary): same row, creation time kept, priority reset
    clock.advance(60_000);
    const second = make({ binaryVersion: '1.32.0' }, 'w1_second');
    const again = await second.start();
    expect(again).toMatchObject({ identity: 'w1_second', binaryVersion: '1.32.0', createdAt: created });
    expect(again.priority).toBeUndefined();

    // the old instance's stop does not remove the new instance's row
    await first.stop();
    expect((await store.read('jobs', 'w1')).item?.identity).toBe('w1_second');
    await second.stop();
    expect((await store.read('jobs', 'w1')).item).toBeUndefined();
    await second.stop(); // idempotent
  });

  it('a row collected while the worker lived (a long pause) is registered again at the next renewal', async () => {
    const c = make({ name: 'w2' }, 'w2_a');
    await c.start();
    await store.delete(await store.read('jobs', 'w2'));
    await c.renew();
    expect((await store.read('jobs', 'w2')).item).toMatchObject({ identity: 'w2_a' });
    await c.stop();
  });
});

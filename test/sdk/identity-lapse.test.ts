import { PutItemCommand } from '@aws-sdk/client-dynamodb';
import { marshall } from '@aws-sdk/util-dynamodb';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { manualClock, simulatedClock, type ManualClock } from '../../lib/clock.js';
import { coordinatorDeps, reconcileAll } from '../../lib/coordinator/reconcile.js';
import { IdentityLeaseHeartbeat, listIdentities, type IdentityLeaseHeartbeatOptions, type IdentityLost } from '../../lib/sdk/identity.js';
import { IdentityStore } from '../../lib/stores/identity-store.js';
import { testTables, type TestTables } from '../support.js';

/**
 * The identity heartbeat's renewals after its row was listed expired (a pause past the lease), or
 * taken by a row it cannot read, or collected at every renewal (a clock behind): on DynamoDB Local,
 * on clocks stepped by hand (only explicit renew() calls renew: the interval's timers are a
 * simulated clock's nobody runs).
 */
const T0 = Date.UTC(2026, 0, 1);
const SEC = 1000;
const LEASE = 60; // seconds: the reviewer's lease

let t: TestTables;
let store: IdentityStore;
const running: Array<{ stop(): Promise<void> }> = [];

beforeAll(async () => {
  t = await testTables('identity-lapse');
  store = new IdentityStore(t.client, t.names.identities);
});
afterEach(async () => {
  await Promise.all(running.splice(0).map((p) => p.stop()));
});
afterAll(() => t.drop());

const handClock = (start = T0): ManualClock => manualClock(start, simulatedClock({ start }));

function heartbeat(clock: ManualClock, component: string, id: string, extra: Partial<IdentityLeaseHeartbeatOptions> = {}) {
  const lost: IdentityLost[] = [];
  const errors: Error[] = [];
  const hb = new IdentityLeaseHeartbeat({
    client: t.client,
    tables: t.names,
    component,
    hostname: 'node-1',
    leaseDurationSeconds: LEASE,
    clock,
    clockSync: 'none', // stamps are the hand clock's
    newId: () => id,
    onLost: (l) => lost.push(l),
    onError: (e) => errors.push(e),
    ...extra,
  });
  const controller = new AbortController();
  let done: Promise<void> | undefined;
  const probe = {
    hb,
    lost,
    errors,
    start: () => {
      done ??= hb.run(controller.signal);
      return hb.ready;
    },
    stop: async () => {
      controller.abort();
      await done;
    },
  };
  running.push(probe);
  return probe;
}

const rowOf = async (hb: IdentityLeaseHeartbeat) => (await store.read(hb.component, hb.name)).item;

describe('IdentityLeaseHeartbeat: a renewal after the row was listed expired', () => {
  // a review (2026-12-08): paused past its lease and back before the coordinator collected the row, the process renewed it as if
  // nothing had happened (same acquireTime, no onLost), though readers had listed it expired and may have collected what it owned
  it("is a new acquisition: acquireTime reset in that write, onLost 'lapsed'; a renewal at the lease's last millisecond is not", async () => {
    const clock = handClock();
    const p = heartbeat(clock, 'lapse', 'u1');
    await p.start();
    const list = () => listIdentities({ client: t.client, tables: t.names, component: 'lapse', clock, clockSync: 'none' });

    // renewed at the last instant the row is live (renewTime + duration, strict as listIdentities): an ordinary renewal
    clock.advance(LEASE * SEC);
    expect((await list()).live.map((i) => i.name)).toEqual([p.hb.name]);
    expect(await p.hb.renew()).toBe('renewed');
    expect(await rowOf(p.hb)).toMatchObject({ acquireTime: T0, renewTime: T0 + LEASE * SEC });
    expect(p.lost).toEqual([]);

    // paused 120 s: listed expired, not yet collected
    clock.advance(2 * LEASE * SEC);
    const listed = await list();
    expect(listed.expired.map((i) => i.name)).toEqual([p.hb.name]);
    expect(p.hb.healthy()).toBe(false);
    // back: the renewal lands on the row it still holds, as a new acquisition
    expect(await p.hb.renew()).toBe('reacquired'); // before the fix: 'renewed', acquireTime T0, no onLost
    expect(p.lost).toEqual([{ reason: 'lapsed' }]);
    expect(await rowOf(p.hb)).toMatchObject({ holderIdentity: p.hb.identity, acquireTime: clock.now(), renewTime: clock.now() });
    expect(p.hb.healthy()).toBe(true);
    expect((await list()).live.map((i) => i.acquireTime)).toEqual([clock.now()]);

    // and renews on from there
    const acquired = clock.now();
    clock.advance(10 * SEC);
    expect(await p.hb.renew()).toBe('renewed');
    expect(await rowOf(p.hb)).toMatchObject({ acquireTime: acquired, renewTime: acquired + 10 * SEC });
    expect(p.lost).toHaveLength(1);
    expect(p.errors).toEqual([]);
  });
});

describe('IdentityLeaseHeartbeat: superseded by a row it cannot read', () => {
  // a review (2026-12-08): a newer SDK's start-up on the host (minReader 2) took the row; every renewal of the older one
  // rejected with "... upgrade this reader", told to onError at every interval for ever, never superseded
  it.each([
    ['a newer SDK wrote it (minReader 2)', { minReader: 2 }],
    ['its hostname is blank', { hostname: '' }],
  ] as const)("another start-up's row the schema refuses (%s) supersedes this one: onLost 'superseded' naming its holder, nothing written, no error", async (_why, spoilt) => {
    const clock = handClock();
    const component = `refused-${Object.keys(spoilt)[0]!.toLowerCase()}`;
    const p = heartbeat(clock, component, 'older');
    const written = await p.start();
    const newer = `${p.hb.name}_newer`;
    const row = { ...written, holderIdentity: newer, acquireTime: T0 + SEC, renewTime: T0 + SEC, revision: written.revision + 1, ...spoilt };
    await t.client.send(new PutItemCommand({ TableName: t.names.identities, Item: marshall(row) }));
    clock.advance(10 * SEC);
    expect(await p.hb.renew()).toBe('superseded'); // before the fix: rejected with the row's ValidationError
    expect(p.lost).toEqual([{ reason: 'superseded', by: newer }]);
    expect(p.hb.healthy()).toBe(false);
    expect(p.errors).toEqual([]);
    clock.advance(10 * SEC);
    expect(await p.hb.renew()).toBe('superseded');
    expect(p.lost).toHaveLength(1);
    expect(await store.readRow(component, p.hb.name)).toEqual(row); // never written over by the older start-up
  });
});

describe('IdentityLeaseHeartbeat: collected at every renewal', () => {
  // a review (2026-12-08): with clockSync 'none' and a wall clock behind by more than the lease, the coordinator collected the row
  // at each tick and the heartbeat created it again, onLost 'gone' each round, nothing naming the clock
  it("the row gone at consecutive renewals is told to onError once, naming the clock (behind: check it, or clockSync 'server')", async () => {
    const coordinator = handClock();
    const behind = handClock(T0 - 2 * LEASE * SEC); // two lease durations behind
    const p = heartbeat(behind, 'gone-again', 'u1');
    await p.start();
    const deps = coordinatorDeps(t.client, t.names, { clock: coordinator });
    const round = async () => {
      coordinator.advance(10 * SEC);
      behind.advance(10 * SEC);
      expect((await reconcileAll(deps)).collectedIdentities.filter((c) => c.component === 'gone-again')).toEqual([{ component: 'gone-again', name: p.hb.name }]);
      return p.hb.renew();
    };
    expect(await round()).toBe('reacquired');
    expect(p.lost).toEqual([{ reason: 'gone' }]);
    expect(p.errors).toEqual([]); // once may be an operator's delete, or a long pause
    expect(await round()).toBe('reacquired');
    expect(p.lost).toEqual([{ reason: 'gone' }, { reason: 'gone' }]);
    expect(p.errors).toHaveLength(1); // before the fix: none
    expect(p.errors[0]!.message).toMatch(/gone at 2 renewals in a row/);
    expect(p.errors[0]!.message).toMatch(/clock/);
    expect(p.errors[0]!.message).toMatch(/clockSync 'server'/);
    expect(await round()).toBe('reacquired');
    expect(p.errors).toHaveLength(1); // told once while it goes on
  });

  it('a row gone once, then renewed, then gone once more is not told as a clock', async () => {
    const clock = handClock();
    const p = heartbeat(clock, 'gone-twice', 'u1');
    await p.start();
    const remove = async () => store.delete((await store.read('gone-twice', p.hb.name)));
    await remove();
    clock.advance(10 * SEC);
    expect(await p.hb.renew()).toBe('reacquired');
    clock.advance(10 * SEC);
    expect(await p.hb.renew()).toBe('renewed');
    await remove();
    clock.advance(10 * SEC);
    expect(await p.hb.renew()).toBe('reacquired');
    expect(p.lost).toEqual([{ reason: 'gone' }, { reason: 'gone' }]);
    expect(p.errors).toEqual([]);
  });
});

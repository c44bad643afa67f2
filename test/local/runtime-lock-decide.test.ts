import { describe, expect, it } from 'vitest';
import { decideLock, RUNTIME_LOCK_STALE_MS, type LockSeer, type RuntimeLockItem } from '../../lib/local/runtime-lock.js';

const HOST = 'laptop';
const me: LockSeer = { host: HOST, pid: 100, holds: () => false, alive: (pid) => pid === 200 };
const lock = (over: Partial<RuntimeLockItem> = {}): RuntimeLockItem => ({
  prefix: 'conclave-local',
  owner: 'o-1',
  pid: 200,
  host: HOST,
  endpoint: 'http://127.0.0.1:8000',
  startedAt: 0,
  heartbeatAt: 1_000_000,
  staleAt: 1_000_000 + RUNTIME_LOCK_STALE_MS,
  renewals: 7,
  ...over,
});

describe('decideLock: a lock of a live process on this host', () => {
  it('renewed by this host\'s clock: refused', () => {
    expect(decideLock(lock(), undefined, me, 1_000_000 + 2_000, 50)).toEqual({ kind: 'refuse' });
  });

  it('looking unrenewed by this host\'s wall clock (the clock stepped forward past staleAt, a machine waking from sleep): not taken over at once, but watched as another host\'s lock is', () => {
    // before: { kind: 'takeOver', why: 'not renewed since …' }: a live holder renewing every 2 s lost its lock
    // to any start that read it in the moment after a forward step of more than RUNTIME_LOCK_STALE_MS
    const stepped = 1_000_000 + RUNTIME_LOCK_STALE_MS + 60_000;
    const first = { lock: lock(), at: 50 };
    expect(decideLock(lock(), first, me, stepped, 50)).toEqual({ kind: 'wait', ms: RUNTIME_LOCK_STALE_MS });
    // its holder renews meanwhile (the count moves): live, refused
    expect(decideLock(lock({ renewals: 8, heartbeatAt: stepped + 1_000, staleAt: stepped + 1_000 + RUNTIME_LOCK_STALE_MS }), first, me, stepped + 2_000, 2_050)).toEqual({ kind: 'refuse' });
    // a hung holder (or its pid taken by another program): unchanged for RUNTIME_LOCK_STALE_MS of this host's monotonic time, taken over
    expect(decideLock(lock(), first, me, stepped + RUNTIME_LOCK_STALE_MS, 50 + RUNTIME_LOCK_STALE_MS)).toMatchObject({ kind: 'takeOver' });
  });

  it('of a process gone: taken over at once', () => {
    expect(decideLock(lock({ pid: 300 }), undefined, me, 1_000_000, 50)).toMatchObject({ kind: 'takeOver', why: 'that process no longer runs' });
  });
});

describe('decideLock: a lock of the same host name in another pid namespace (containers sharing the host\'s name, --network host)', () => {
  const inContainer: LockSeer = { ...me, pidNamespace: 'pid:[4026532001]' };
  it('its pid is not looked at here (it may run there): watched as another host\'s lock, not taken over at once', () => {
    // before: pid 200 does not run in this namespace (alive false for it here), so "that process no
    // longer runs" and a take-over at once of a live runtime's lock: two runtimes on one prefix
    const theirs = lock({ pid: 300, pidNamespace: 'pid:[4026532002]' });
    expect(decideLock(theirs, { lock: theirs, at: 50 }, inContainer, 1_000_000 + 2_000, 50)).toEqual({ kind: 'wait', ms: RUNTIME_LOCK_STALE_MS });
    expect(decideLock(theirs, { lock: theirs, at: 50 }, inContainer, 1_000_000 + 12_000, 50 + RUNTIME_LOCK_STALE_MS)).toMatchObject({ kind: 'takeOver' });
  });
  it('one of the same namespace, or of an item that names none (an older one), is judged by its pid as before', () => {
    expect(decideLock(lock({ pid: 300, pidNamespace: 'pid:[4026532001]' }), undefined, inContainer, 1_000_000, 50)).toMatchObject({ kind: 'takeOver', why: 'that process no longer runs' });
    expect(decideLock(lock({ pid: 300 }), undefined, inContainer, 1_000_000, 50)).toMatchObject({ kind: 'takeOver', why: 'that process no longer runs' });
  });
});

describe('decideLock: the take-over line', () => {
  it('says how long the lock went unrenewed to a tenth of a second, not the monotonic clock\'s fractions', () => {
    // before: "not renewed for 10.00234 s as laptop's clock counts": the monotonic clock's microseconds
    const elsewhere = lock({ host: 'elsewhere' });
    const first = { lock: elsewhere, at: 50.1 };
    expect(decideLock(elsewhere, first, me, 1_000_000 + 12_000, 50.1 + 10_002.34)).toMatchObject({ kind: 'takeOver', why: expect.stringMatching(/^not renewed for 10 s as laptop's clock counts/) });
    expect(decideLock(elsewhere, first, me, 1_000_000 + 12_000, 50.1 + 10_261.7)).toMatchObject({ kind: 'takeOver', why: expect.stringMatching(/^not renewed for 10\.3 s as laptop's clock counts/) });
  });
});

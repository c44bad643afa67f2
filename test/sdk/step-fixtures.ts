/**
 * What the step's hand-fed tests (step.test.ts, decide.test.ts) share: client-go's timings as the
 * step's settings, a lease read, and a moment on a measured clock.
 */
import type { Lease } from '../../lib/schemas/lease.js';
import { acquisition, type LeaseLock, type LeaseRead } from '../../lib/sdk/lock.js';
import { decideFollower, decideLeader, leadFromRead, type FollowerEffect, type FollowerEvent, type Moment, type Settings } from '../../lib/sdk/step.js';

/** Monotonic now. */
export const T = 1_000_000;
/** DynamoDB's time less monotonic: stamps are OFFSET + T at monotonic T. */
export const OFFSET = 1_764_000_000_000;

/** The step's settings for elector `identity` (instance `<identity>-1`) on lease `job`. */
export function stepSettings(identity: string, o: Partial<Settings> = {}): Settings {
  return {
    leaseName: 'job',
    identity,
    instance: `${identity}-1`,
    mode: 'coordinated',
    leaseDurationMs: 15_000,
    renewDeadlineMs: 10_000,
    retryPeriodMs: 2_000,
    fallbackAfterMs: 45_000,
    sessionFallbackMs: 40_000,
    candidate: true,
    decideFollower,
    leadFromRead,
    decideLeader,
    onWorkFailure: 'giveUp',
    releaseOnCancel: true,
    promptly: false,
    cadenceMs: 5_900,
    stampErrorMs: 500,
    clockMeasured: true,
    ...o,
  };
}

export const read = (item: Lease | undefined): LeaseRead => ({ key: { name: 'job' }, item, revision: item?.revision ?? 0 });
export const at = (dt = 0, o: Partial<Moment> = {}): Moment => ({ now: T + dt, clock: { ok: true, errorMs: 5 }, offset: OFFSET, jumps: 0, ...o });

/**
 * A follower's shell for a test: carries effect `f` of followerStep through `lock` (a DynamoDB lock
 * over the test's tables) and answers the event it makes; undefined: nothing to wait on. `now`: the
 * wall-clock time its writes stamp.
 */
export function carryFollowerEffect(lock: LeaseLock, s: Settings, now: () => number): (f: FollowerEffect) => Promise<FollowerEvent | undefined> {
  return async (f) => {
    switch (f.kind) {
      case 'readLease':
        return { kind: 'leaseRead', raw: await lock.get(f.consistent) };
      case 'readSession':
        return { kind: 'sessionRead', read: await lock.session(f.name, f.shareMs, f.pendingMs, f.consistent, f.term) };
      case 'readProcessSession':
        return { kind: 'processSessionRead', read: await lock.processSession(f.named, f.process, f.term) };
      case 'reportVacancy':
        return { kind: 'reported', lease: await lock.reportVacancy(f.read, s.identity, now()) };
      case 'acquire':
        return { kind: 'acquired', got: await lock.acquire(f.read, acquisition(f.read.item, { identity: s.identity, instance: s.instance, now: now(), leaseDurationSeconds: 15, electedBy: f.electedBy })) };
      case 'lead':
        return { kind: 'led', ok: true, leading: true };
      case 'newLeader':
      case 'sessionCadence':
      case 'stepNow':
        return undefined;
      default:
        throw new Error(`the test's shell does not carry ${f.kind}`);
    }
  };
}

/**
 * What the step's hand-fed tests (step.test.ts, decide.test.ts) share: client-go's timings as the
 * step's settings, a lease read, and a moment on a measured clock.
 */
import type { Lease } from '../../lib/schemas/lease.js';
import type { LeaseRead } from '../../lib/sdk/lock.js';
import { decideFollower, decideLeader, leadFromRead, type Moment, type Settings } from '../../lib/sdk/step.js';

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

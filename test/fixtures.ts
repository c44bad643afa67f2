import type { Candidate } from '../lib/schemas/candidate.js';
import type { Lease } from '../lib/schemas/lease.js';
import { OLDEST_EMULATION_VERSION } from '../lib/schemas/strategy.js';

/** The fixed "now" of table rows. */
export const NOW = Date.UTC(2026, 0, 1, 12);
export const SEC = 1000;
export const MIN = 60 * SEC;

/** A candidate row for lease `component-A`, renewed now, OldestEmulationVersion, created an hour ago. */
export function cand(name: string, emulationVersion: string, binaryVersion: string, extra: Partial<Candidate> = {}): Candidate {
  return {
    leaseName: 'component-A',
    name,
    emulationVersion,
    binaryVersion,
    preferredStrategies: [OLDEST_EMULATION_VERSION],
    renewTime: NOW,
    createdAt: NOW - 60 * MIN,
    revision: 1,
    ...extra,
  };
}

/** A lease row for `component-A` held by `holder`, renewed now, 10 s long. */
export function lease(holder: string | undefined, extra: Partial<Lease> = {}): Lease {
  return {
    name: 'component-A',
    ...(holder ? { holderIdentity: holder } : {}),
    leaseDurationSeconds: 10,
    renewTime: NOW,
    acquireTime: NOW - 5 * MIN,
    leaseTransitions: 3,
    fencingToken: 7,
    electedBy: 'coordinator',
    revision: 12,
    ...extra,
  };
}

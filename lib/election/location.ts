import type { Candidate } from '../schemas/candidate.js';
import type { ElectionConfig } from '../schemas/config.js';
import type { Lease } from '../schemas/lease.js';
import { regionOfZone } from '../schemas/location.js';

/** A candidate's zone and region as the coordinator reads them; either may be unknown. */
export interface KnownLocation {
  zone?: string;
  region?: string;
}

/**
 * Where a candidate runs: its stated `location`, else the zone its platform reported (ECS task
 * metadata, EC2 IMDS) — rows written before `location` existed carry only that — and the region
 * the zone implies when none is stated.
 */
export function locationOf(c: Candidate): KnownLocation {
  const zone = c.location?.zone ?? c.platform?.availabilityZone;
  const region = c.location?.region ?? regionOfZone(zone);
  return { ...(zone !== undefined ? { zone } : {}), ...(region !== undefined ? { region } : {}) };
}

/** The preference in force on a lease: the operator's own on the lease (even `[]`), else the coordinator's default. */
export const preferredLocationsOf = (lease: Pick<Lease, 'preferredLocations'> | undefined, config: Pick<ElectionConfig, 'preferredLocations'>): readonly string[] =>
  lease?.preferredLocations ?? config.preferredLocations;

/**
 * The candidate's place in `preferred`: the index of the first entry naming its zone or its region;
 * `preferred.length` — after every listed location — when none does or its location is unknown. A
 * pure function of the row and the preference, so two reconciles of the same rows always agree.
 */
export function locationRank(c: Candidate, preferred: readonly string[]): number {
  if (preferred.length === 0) return 0;
  const { zone, region } = locationOf(c);
  const i = preferred.findIndex((p) => p === zone || p === region);
  return i < 0 ? preferred.length : i;
}

/** `us-east-1a`, `us-east-1a (us-east-1)` when the region is not the zone's prefix, `us-east-1`, or `-`. */
export function locationText(l: KnownLocation): string {
  if (l.zone === undefined) return l.region ?? '-';
  return l.region === undefined || regionOfZone(l.zone) === l.region ? l.zone : `${l.zone} (${l.region})`;
}

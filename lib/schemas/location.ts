import * as z from 'zod';
import { everyProblem } from './validation.js';

/** A lease's preference lists at most this many zones and regions. */
export const MAX_PREFERRED_LOCATIONS = 16;

/**
 * An Availability Zone or Region as AWS writes it: `us-east-1a`, `us-west-2-lax-1a` (a Local Zone),
 * `use1-az1` (a zone ID), `eu-central-1`. Lowercase, so that a preference and a worker's own
 * report compare as equal strings.
 */
export const LocationName = z
  .string()
  .min(1, 'must not be empty')
  .max(64, 'must be at most 64 characters')
  // "" passes: min(1) says it, and not aborting, so that an empty name hides no other field's problem
  .regex(/^(?:[a-z0-9](?:[a-z0-9-]*[a-z0-9])?)?$/, 'must be a zone or region name in lowercase letters, digits and -, such as us-east-1a or us-east-1');

/**
 * The Region a zone name belongs to: `us-east-1a` → `us-east-1`, `us-gov-west-1b` → `us-gov-west-1`,
 * `us-west-2-lax-1a` → `us-west-2`. Undefined when the name does not follow AWS's pattern (a zone
 * ID such as `use1-az1`, or a local name such as `local-1a`): then the region must be given.
 */
export function regionOfZone(zone: string | undefined): string | undefined {
  return zone === undefined ? undefined : /^([a-z]{2}(?:-[a-z]+)+-\d+)(?:[a-z]|-[a-z0-9-]+)$/.exec(zone)?.[1];
}

/**
 * Where a worker runs, as it states it on its candidacy (`location` on the LeaseCandidate or the
 * LeaderElector's `candidacy`). Either part may be left out; a zone that follows AWS's naming
 * implies its Region, and a Region given with it must be that one.
 */
export const Location = z
  .strictObject({
    /** The Availability Zone, e.g. `us-east-1a` (by default the one ECS or EC2 metadata reports). */
    zone: LocationName.optional(),
    /** The Region, e.g. `us-east-1` (by default the zone's, else AWS_REGION). */
    region: LocationName.optional(),
  })
  .superRefine((l, ctx) => {
    const implied = regionOfZone(l.zone);
    // compared only where both passed their own checks: a bad one is reported as itself
    if (everyProblem.valid(ctx)('zone', 'region') && implied !== undefined && l.region !== undefined && l.region !== implied) {
      ctx.addIssue({ code: 'custom', path: ['region'], message: `must be ${implied}, the region of zone ${l.zone} (or leave region out: the zone implies it)` });
    }
  });
export type Location = z.infer<typeof Location>;

/**
 * An ordered preference of zones and regions, best first: a candidate ranks by the first entry
 * that names its zone or its region; a candidate in none of them (or whose location is unknown)
 * ranks after every listed one, and stays eligible.
 */
export const PreferredLocations = z.array(LocationName).superRefine(
  (list, ctx) => {
    if (list.length > MAX_PREFERRED_LOCATIONS) ctx.addIssue({ code: 'custom', message: `must list at most ${MAX_PREFERRED_LOCATIONS} zones or regions` });
    // duplicates among the entries that passed their own checks: a bad entry is refused at its
    // index (not counted again as listed twice), and one of the wrong type stops no count of the rest
    const bad = new Set(ctx.issues.map((i) => i.path?.[0]));
    const first = new Map<string, number>();
    list.forEach((l, i) => {
      if (bad.has(i)) return;
      const at = first.get(l);
      if (at === undefined) first.set(l, i);
      else ctx.addIssue({ code: 'custom', message: `must not list a zone or region twice: ${JSON.stringify(l)} is at [${at}] and [${i}]; drop one` });
    });
  },
  // on any list, whatever its entries (zod skips a check while an entry is not even a string)
  { when: (payload) => Array.isArray(payload.value) },
);
export type PreferredLocations = z.infer<typeof PreferredLocations>;

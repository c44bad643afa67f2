import semver from 'semver';
import * as z from 'zod';

/**
 * Versions are strict at the edge and tolerant in the picker, like Kubernetes: API validation
 * rejects `v1.30` and `1.30`, but the election code still orders them if they reach a table.
 */

/** Full semver without a leading `v`: what a candidate may write. */
export const StrictVersion = z
  .string()
  .refine((v) => /^\d/.test(v) && semver.valid(v) === v, {
    message: 'must be a semantic version like 1.30.2 (MAJOR.MINOR.PATCH, no leading "v")',
  });

/**
 * The picker's reading of a version: one leading `v` and MAJOR.MINOR short forms are accepted;
 * anything else is undefined (and such a candidate never wins).
 */
export function parseVersionTolerant(v: string | undefined): semver.SemVer | undefined {
  if (!v) return undefined;
  const m = /^v?(\d+)\.(\d+)(?:\.(\d+))?((?:-[0-9A-Za-z.-]+)?(?:\+[0-9A-Za-z.-]+)?)$/.exec(v.trim());
  if (!m) return undefined;
  return semver.parse(`${m[1]}.${m[2]}.${m[3] ?? '0'}${m[4] ?? ''}`) ?? undefined;
}

/** True when `emulation` ≤ `binary` (both strict); the rule every candidate must keep. */
export function emulationWithinBinary(emulation: string, binary: string): boolean {
  return semver.lte(emulation, binary);
}

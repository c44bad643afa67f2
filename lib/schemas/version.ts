// node-semver's own modules, not its index (which loads every range function too: 29 KB of each function's bundle)
import SemVer from 'semver/classes/semver.js';
import lte from 'semver/functions/lte.js';
import parse from 'semver/functions/parse.js';
import * as z from 'zod';

/**
 * Versions are strict at the edge and tolerant in the picker, like Kubernetes: API validation
 * rejects `v1.30`, `1.30` and `01.30.0`, but the election code still orders them if they reach a
 * table (an older SDK, a hand-written row).
 */

/**
 * Whether `v` is full semver without a leading `v`, and its parse when it is: each distinct text
 * parsed once (every candidate row read is checked; the parse is only ever compared, never changed).
 * Build metadata (`1.31.0+git.abc123`) is semver too, and kept: node-semver's `valid()` drops it,
 * so the text is compared with the parse's version and build. Ordering ignores it (semver's rule):
 * two candidates that differ only by build are tied, and the tie-breaks decide.
 */
function strictParse(v: string): SemVer | undefined {
  if (strict.has(v)) return strict.get(v);
  const p = /^\d/.test(v) ? parse(v) : null;
  const parsed = p && `${p.version}${p.build.length ? `+${p.build.join('.')}` : ''}` === v ? p : undefined;
  if (strict.size >= MAX_PARSED) strict.clear();
  strict.set(v, parsed);
  return parsed;
}
const strict = new Map<string, SemVer | undefined>();
/** Bounded: versions are few, but a caller must not grow memory forever with made-up ones. */
const MAX_PARSED = 1_000;

/** Whether `v` is a strict version (StrictVersion's rule). */
export const isStrictVersion = (v: unknown): boolean => typeof v === 'string' && strictParse(v) !== undefined;

/** Full semver without a leading `v`, build metadata allowed (ignored in ordering): what a candidate may write. */
export const StrictVersion = z.string().refine(isStrictVersion, {
  message: 'must be a semantic version like 1.30.2 (MAJOR.MINOR.PATCH, no leading "v"; a pre-release -rc.1 or build +git.abc123 may follow)',
});

/**
 * The picker's reading of a version, as Kubernetes' picker reads one (blang/semver's
 * `ParseTolerant`, used by pkg/controlplane/controller/leaderelection/election.go): spaces around
 * and one leading `v` are dropped, leading zeros are stripped from MAJOR, MINOR and PATCH, and a
 * short form is filled up (`2` reads as 2.0.0, `2.7` as 2.7.0) unless it carries a pre-release or
 * build suffix (`2.7-beta.1` is invalid: which of MINOR or PATCH the suffix belongs to is a guess).
 * What is left must be semver. Anything else is undefined, and such a candidate never wins. So is
 * a MAJOR, MINOR or PATCH above 2^53 − 1 (`9007199254740992.0.0`): `ParseTolerant` reads each as a
 * uint64, node-semver refuses a number JavaScript cannot hold exactly (a limit kept, not
 * reimplemented; docs/architecture.md, the departures from Kubernetes).
 */
export function parseVersionTolerant(v: string | undefined): SemVer | undefined {
  if (v === undefined) return undefined;
  // every decision reads every candidate's versions: each distinct text is parsed once (the result
  // is only ever compared, never changed)
  if (tolerant.has(v)) return tolerant.get(v);
  const parsed = parseTolerantly(v);
  if (tolerant.size >= MAX_PARSED) tolerant.clear();
  tolerant.set(v, parsed);
  return parsed;
}

const tolerant = new Map<string, SemVer | undefined>();

function parseTolerantly(v: string): SemVer | undefined {
  // At most three parts: the third keeps PATCH with its pre-release and build suffix.
  const [major, minor, ...rest] = v.trim().replace(/^v/, '').split('.');
  const parts = [major!, ...(minor === undefined ? [] : [minor]), ...(rest.length ? [rest.join('.')] : [])].map(stripLeadingZeros);
  if (parts.length < 3 && /[+-]/.test(parts.at(-1)!)) return undefined;
  while (parts.length < 3) parts.push('0');
  const normalized = parts.join('.');
  // node-semver itself would also take a leading "v", "=" or spaces: only a digit may start it here.
  if (!/^\d[0-9A-Za-z.+-]*$/.test(normalized)) return undefined;
  return parse(normalized) ?? undefined;
}

/** `007` → `7`, `00` → `0`, `03-rc.1` → `3-rc.1`, `0-rc.1` stays: only a component's leading zeros go. */
function stripLeadingZeros(part: string): string {
  if (part.length < 2) return part;
  const rest = part.replace(/^0+/, '');
  return /^\d/.test(rest) ? rest : `0${rest}`;
}

/** True when `emulation` ≤ `binary` (both strict); the rule every candidate must keep. */
export function emulationWithinBinary(emulation: string, binary: string): boolean {
  const e = strictParse(emulation);
  const b = strictParse(binary);
  return e && b ? lte(e, b) : lte(emulation, binary);
}

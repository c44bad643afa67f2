import * as z from 'zod';
import { unknownKeyHint } from './validation.js';

/** Elect the candidate with the oldest emulation version, then binary version (KEP-4355). */
export const OLDEST_EMULATION_VERSION = 'OldestEmulationVersion';
/** Leave the lease to direct acquisition: workers in NoCoordination mode race for it (a plain client-go race); coordinated ones take it by their fallback, telling NoCoordinatorError. */
export const NO_COORDINATION = 'NoCoordination';

export const KNOWN_STRATEGIES = [OLDEST_EMULATION_VERSION, NO_COORDINATION] as const;
export type KnownStrategy = (typeof KNOWN_STRATEGIES)[number];

/**
 * Any strategy name is legal on a lease: an unknown one means a third party elects (Conclave
 * leaves that lease alone), as in Kubernetes. Rows written by others are read with it; what a
 * worker or an operator may name is stricter (strategyProblem).
 */
export const StrategyName = z
  .string()
  .regex(/^[A-Za-z][A-Za-z0-9.\/_-]{0,127}$/, 'must be a strategy name such as "OldestEmulationVersion" or "NoCoordination"');
export type StrategyName = z.infer<typeof StrategyName>;

export const isKnownStrategy = (s: string): s is KnownStrategy => (KNOWN_STRATEGIES as readonly string[]).includes(s);

/** A third party's strategy, in messages: a qualified name with a domain prefix. */
const THIRD_PARTY_EXAMPLE = 'example.com/my-strategy';

/**
 * A qualified name with a DNS subdomain prefix (Kubernetes' IsQualifiedName, the prefix required):
 * lower-case labels of letters, digits and `-`, joined by `.`, at most 253 characters; `/`; then at
 * most 63 letters, digits, `-`, `_` or `.`, beginning and ending with a letter or digit.
 */
const QUALIFIED = /^(?=[^/]{1,253}\/)[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\/[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$/;

/** The rule a name must meet to name a strategy, for messages. */
const PREFIX_RULE = `a third party's strategy is a qualified name with a domain prefix, such as "${THIRD_PARTY_EXAMPLE}"`;

/**
 * Why a worker may not prefer `name`, nor an operator set it (undefined: it may), by Kubernetes'
 * API validation of a CoordinatedLeaseStrategy: a name without a `/` must be one Conclave knows
 * (KNOWN_STRATEGIES); a third party's is a qualified name with a domain prefix
 * (`example.com/my-strategy`). A name Conclave does not know means a third party elects: the
 * coordinator leaves the lease alone, so a misspelt one (`OldestEmulatedVersion`, KEP-4355's own
 * older spelling) would leave a lease to nobody. Rows are read without this rule (StrategyName).
 */
export function strategyProblem(name: string): string | undefined {
  const format = StrategyName.safeParse(name).error?.issues[0]?.message;
  if (format !== undefined) return format;
  if (!name.includes('/')) {
    if (isKnownStrategy(name)) return undefined;
    return `"${name}" is not a strategy Conclave knows${unknownKeyHint(name, KNOWN_STRATEGIES)}; ${PREFIX_RULE}`;
  }
  return QUALIFIED.test(name)
    ? undefined
    : `"${name}" is no qualified name: ${PREFIX_RULE} (a lower-case DNS name, "/", then up to 63 letters, digits, "-", "_" or ".", beginning and ending with a letter or digit); without a "/" one of ${KNOWN_STRATEGIES.join(', ')}`;
}

/**
 * Adds an issue at each strategy of `list` a worker may not prefer (strategyProblem), for a list
 * whose own schema (the candidate row's) passed or named its other problems: a name of the wrong
 * shape is that schema's to report, once.
 */
export function checkPreferredStrategies(list: readonly string[], ctx: z.RefinementCtx): void {
  list.forEach((name, i) => {
    if (!StrategyName.safeParse(name).success) return;
    const problem = strategyProblem(name);
    if (problem !== undefined) ctx.addIssue({ code: 'custom', path: [i], message: problem });
  });
}

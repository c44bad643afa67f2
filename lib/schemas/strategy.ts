import * as z from 'zod';

/** Elect the candidate with the oldest emulation version, then binary version (KEP-4355). */
export const OLDEST_EMULATION_VERSION = 'OldestEmulationVersion';
/** Leave the lease to direct acquisition by its workers (a plain client-go race). */
export const NO_COORDINATION = 'NoCoordination';

export const KNOWN_STRATEGIES = [OLDEST_EMULATION_VERSION, NO_COORDINATION] as const;
export type KnownStrategy = (typeof KNOWN_STRATEGIES)[number];

/**
 * Any strategy name is legal on a lease: an unknown one means a third party elects (Conclave
 * leaves that lease alone), as in Kubernetes.
 */
export const StrategyName = z
  .string()
  .regex(/^[A-Za-z][A-Za-z0-9.\/_-]{0,127}$/, 'must be a strategy name such as "OldestEmulationVersion" or "NoCoordination"');
export type StrategyName = z.infer<typeof StrategyName>;

export const isKnownStrategy = (s: string): s is KnownStrategy => (KNOWN_STRATEGIES as readonly string[]).includes(s);

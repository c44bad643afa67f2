/**
 * Lambda's event filtering and EventBridge's rule patterns, as the local runtime applies them to
 * what the wiring declares (in AWS the services do: the construct only hands them the patterns).
 */
import type { EventPattern, FilterPattern, FilterRule } from '../wiring.js';

/**
 * Whether `value` matches `pattern` (the same rules EventBridge and Lambda apply to this subset).
 * Plain loops: the simulator matches every stream record it delivers (sim/world.ts).
 */
export function matchesFilter(pattern: FilterPattern, value: unknown): boolean {
  const v = value as Record<string, unknown> | undefined;
  // (for…in: a pattern is a plain object of its own keys, and no array of them is made per call)
  for (const key in pattern) {
    const rule = pattern[key]!;
    const field = v?.[key];
    if (Array.isArray(rule)) {
      if (!matchesRules(rule as readonly FilterRule[], field)) return false;
      continue;
    }
    // a missing object: its leaves are all missing (so `exists: false` below it matches)
    if (!matchesFilter(rule as FilterPattern, typeof field === 'object' && field !== null ? field : undefined)) return false;
  }
  return true;
}

/** Whether a leaf's value matches one of its rules. */
function matchesRules(rules: readonly FilterRule[], field: unknown): boolean {
  for (const r of rules) {
    if (typeof r === 'string') {
      if (field === r) return true;
      continue;
    }
    if ('exists' in r) {
      if (r.exists === (field !== undefined)) return true;
      continue;
    }
    // anything-but: the field is there and takes none of the values
    if (field !== undefined && !(typeof field === 'string' && r['anything-but'].includes(field))) return true;
  }
  return false;
}

/** Whether an event matches a rule's pattern. */
export const matchesPattern = (p: EventPattern, event: unknown): boolean => matchesFilter(p as unknown as FilterPattern, event);

/**
 * Lambda's event filtering and EventBridge's rule patterns, as the local runtime applies them to
 * what the wiring declares (in AWS the services do: the construct only hands them the patterns).
 */
import type { EventPattern, FilterPattern, FilterRule } from '../wiring.js';

/** Whether `value` matches `pattern` (the same rules EventBridge and Lambda apply to this subset). */
export function matchesFilter(pattern: FilterPattern, value: unknown): boolean {
  const v = value as Record<string, unknown> | undefined;
  return Object.entries(pattern).every(([key, rule]) => {
    const field = v?.[key];
    // a missing object: its leaves are all missing (so `exists: false` below it matches)
    if (!Array.isArray(rule)) return matchesFilter(rule as FilterPattern, typeof field === 'object' && field !== null ? field : undefined);
    return (rule as readonly FilterRule[]).some((r) => {
      if (typeof r === 'string') return field === r;
      if ('exists' in r) return r.exists === (field !== undefined);
      // anything-but: the field is there and takes none of the values
      return field !== undefined && !(typeof field === 'string' && r['anything-but'].includes(field));
    });
  });
}

/** Whether an event matches a rule's pattern. */
export const matchesPattern = (p: EventPattern, event: unknown): boolean => matchesFilter(p as unknown as FilterPattern, event);

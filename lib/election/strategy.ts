import type { Candidate } from '../schemas/candidate.js';
import { parseVersionTolerant } from '../schemas/version.js';

export type StrategyConsensus =
  | { ok: true; strategy: string }
  | { ok: false; reason: 'noCandidates' | 'contradictoryStrategies'; message: string };

/**
 * The strategy the candidates agree on (KEP-4355, `preferredStrategies`):
 * - each list ranks its strategies: an earlier one supersedes every later one;
 * - orders that contradict each other ([X, Y] and [Y, X], or any longer cycle) are a user error;
 * - otherwise the strategy nobody's list ranks below another wins ([X] and [Y, X] → Y);
 * - when several such strategies remain ([X] and [Y]), the newest binary's first choice wins, as
 *   Kubernetes decides since it moved to one strategy per candidate (kubernetes#127857: newer
 *   binaries know the way back); two candidates at that newest version disagreeing is an error.
 * The result does not depend on the order of `candidates`.
 */
export function strategyConsensus(candidates: readonly Candidate[]): StrategyConsensus {
  if (candidates.length === 0) return { ok: false, reason: 'noCandidates', message: 'no candidates to agree on a strategy' };
  const below = new Map<string, Set<string>>(); // strategy → strategies it supersedes
  const above = new Map<string, Set<string>>(); // strategy → strategies superseding it
  const node = (s: string) => {
    if (!below.has(s)) below.set(s, new Set());
    if (!above.has(s)) above.set(s, new Set());
  };
  for (const c of candidates) {
    c.preferredStrategies.forEach((s, i) => {
      node(s);
      for (const later of c.preferredStrategies.slice(i + 1)) {
        node(later);
        below.get(s)!.add(later);
        above.get(later)!.add(s);
      }
    });
  }
  const cycle = findCycle(below);
  if (cycle) {
    const who = candidates.filter((c) => cycle.filter((s) => c.preferredStrategies.includes(s)).length >= 2).map((c) => c.name);
    return {
      ok: false,
      reason: 'contradictoryStrategies',
      message: `candidates ${who.sort().join(', ')} order the strategies ${cycle.join(' > ')} > ${cycle[0]} contradictorily; make their preferredStrategies agree`,
    };
  }
  const roots = [...above].filter(([, sup]) => sup.size === 0).map(([s]) => s);
  if (roots.length === 1) return { ok: true, strategy: roots[0]! };

  // Several unranked strategies: the newest binary decides.
  let newest: { version: string; strategy: string; name: string }[] = [];
  let newestVersion = parseVersionTolerant('0.0.0')!;
  for (const c of candidates) {
    const first = c.preferredStrategies[0]!;
    if (!roots.includes(first)) continue;
    const v = parseVersionTolerant(c.binaryVersion) ?? parseVersionTolerant('0.0.0')!;
    const cmp = v.compare(newestVersion);
    if (cmp > 0 || newest.length === 0) {
      newestVersion = v;
      newest = [{ version: c.binaryVersion, strategy: first, name: c.name }];
    } else if (cmp === 0) newest.push({ version: c.binaryVersion, strategy: first, name: c.name });
  }
  const choices = [...new Set(newest.map((n) => n.strategy))];
  if (choices.length === 1) return { ok: true, strategy: choices[0]! };
  const names = newest.map((n) => `${n.name} (${n.strategy})`).sort();
  return {
    ok: false,
    reason: 'contradictoryStrategies',
    message: `candidates ${names.join(', ')} are at the same binary version ${newestVersion.version} but prefer different strategies; make their preferredStrategies agree`,
  };
}

/**
 * A cycle in the "supersedes" graph, as the strategies along it, or undefined. A depth-first search
 * with a stack of its own: candidate rows name the strategies, and a chain of thousands of them
 * overflowed the call stack of a recursive one, failing every reconcile of the lease.
 */
function findCycle(edges: Map<string, Set<string>>): string[] | undefined {
  const state = new Map<string, 'open' | 'done'>();
  for (const root of [...edges.keys()].sort()) {
    if (state.has(root)) continue;
    // the path from `root`, each strategy with the ones it supersedes still to visit
    const path: { strategy: string; next: string[] }[] = [];
    const open = (strategy: string) => {
      state.set(strategy, 'open');
      path.push({ strategy, next: [...(edges.get(strategy) ?? [])].sort().reverse() });
    };
    open(root);
    while (path.length > 0) {
      const top = path.at(-1)!;
      const next = top.next.pop();
      if (next === undefined) {
        state.set(top.strategy, 'done');
        path.pop();
      } else if (state.get(next) === 'open') {
        return path.slice(path.findIndex((p) => p.strategy === next)).map((p) => p.strategy);
      } else if (!state.has(next)) open(next);
    }
  }
  return undefined;
}

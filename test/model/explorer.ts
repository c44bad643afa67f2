/**
 * An explicit-state explorer: breadth first from the initial states, every enabled transition of
 * every state, each state visited once (by its canonical key), up to a depth. The first state that
 * breaks an invariant is returned with the shortest trace that reaches it (breadth first: no
 * shorter one exists within the bound).
 *
 * Visited states are kept as a 128-bit digest of their canonical key (hash compaction, as SPIN's):
 * two distinct states share a digest with probability about n² / 2¹²⁹ — for ten million states,
 * below 10⁻²⁴ — and a collision could only hide a state, never invent a violation.
 */
import { createHash } from 'node:crypto';

export interface Transition<S> {
  /** What happened, for the trace: "w1 polls", "tick", … */
  readonly label: string;
  readonly state: S;
}

export interface Spec<S> {
  readonly init: readonly S[];
  /** Every transition enabled in `s`. */
  next(s: S): Iterable<Transition<S>>;
  /** A broken invariant in `s` (a message), or undefined. */
  check(s: S): string | undefined;
  /** The canonical key: equal for states that behave alike from here on. */
  key(s: S): string;
}

export interface Bounds {
  /** Transitions from an initial state: the states this many steps away are checked but not expanded. */
  readonly maxDepth: number;
  /** Stop (inconclusive) past this many distinct states. */
  readonly maxStates?: number;
}

export interface Exploration<S> {
  /** Distinct states reached (and checked). */
  readonly states: number;
  /** Transitions taken (each one's target checked or found visited). */
  readonly transitions: number;
  /** The deepest level expanded into. */
  readonly depth: number;
  /** Every state within the bound was reached (no maxStates cut). */
  readonly complete: boolean;
  /** Nothing new beyond the last level: every reachable state was seen (a fixpoint, not just the bound). */
  readonly fixpoint: boolean;
  readonly ms: number;
  readonly violation?: { readonly message: string; readonly trace: readonly Transition<S>[] };
}

const digest = (key: string) => createHash('md5').update(key).digest('base64');

export function explore<S>(spec: Spec<S>, bounds: Bounds, now: () => number = () => performance.now()): Exploration<S> {
  const started = now();
  // each state's digest, and its parent's (null for an initial state): the trace is replayed from these
  const parents = new Map<string, string | null>();
  let transitions = 0;
  let frontier: { state: S; k: string }[] = [];
  const result = (depth: number, complete: boolean, fixpoint: boolean, bad?: { message: string; k: string }): Exploration<S> => ({
    states: parents.size,
    transitions,
    depth,
    complete,
    fixpoint,
    ms: now() - started,
    ...(bad ? { violation: { message: bad.message, trace: replay(spec, parents, bad.k) } } : {}),
  });
  for (const s of spec.init) {
    const k = digest(spec.key(s));
    if (parents.has(k)) continue;
    parents.set(k, null);
    const message = spec.check(s);
    if (message) return result(0, false, false, { message, k });
    frontier.push({ state: s, k });
  }
  for (let depth = 1; depth <= bounds.maxDepth; depth++) {
    const next: { state: S; k: string }[] = [];
    for (const node of frontier) {
      for (const t of spec.next(node.state)) {
        transitions++;
        const k = digest(spec.key(t.state));
        if (parents.has(k)) continue;
        parents.set(k, node.k);
        const message = spec.check(t.state);
        if (message) return result(depth, false, false, { message, k });
        if (bounds.maxStates !== undefined && parents.size >= bounds.maxStates) return result(depth, false, false);
        next.push({ state: t.state, k });
      }
    }
    frontier = next;
    if (frontier.length === 0) return result(depth, true, true);
  }
  return result(bounds.maxDepth, true, false);
}

/** The transitions from an initial state to the state with digest `k`, found again by taking the same steps. */
function replay<S>(spec: Spec<S>, parents: ReadonlyMap<string, string | null>, k: string): Transition<S>[] {
  const path: string[] = [];
  for (let m: string | null | undefined = k; m; m = parents.get(m)) path.push(m);
  path.reverse();
  let state: S = spec.init.find((s) => digest(spec.key(s)) === path[0]) as S;
  const trace: Transition<S>[] = [{ label: 'init', state }];
  for (const want of path.slice(1)) {
    const t = [...spec.next(state)].find((x) => digest(spec.key(x.state)) === want);
    if (!t) throw new Error('replay diverged: next() is not deterministic');
    trace.push(t);
    state = t.state;
  }
  return trace;
}

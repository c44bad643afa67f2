/**
 * The timer chains one process started (scheduleChain in core.ts), by lease: what each reaches
 * (`key`) and when (`due`). A send forgets the chains whose time has passed, so only those still
 * ahead are kept: at most one a lease, each gone once a send comes after its due time.
 *
 * Usually a handful of leases have one (a silent holder, an election open), but a whole fleet's
 * holders going silent at once (a partition, a zone lost) gives every lease one. Walking them all
 * at each send made a tick's sends quadratic (50,000 leases: 28 s of CPU), so the chains are also
 * kept soonest first, in a binary min-heap: a send looks only at the chains due by then.
 */

/** A chain this process started: its lease, what it reaches (`key`) and when (`due`). */
export interface Chain {
  lease: string;
  key: string;
  due: number;
}

export class Chains {
  private readonly byLease = new Map<string, Chain>();
  /**
   * Every chain set, soonest due first: heap[i] is due no later than heap[2i+1] and heap[2i+2]. A
   * chain its lease replaced stays in here until its own time, and is then dropped without touching
   * the lease's newer one. When such entries outnumber the kept chains, the heap is made again from
   * those (a sorted array is a heap), so it never holds much more than twice the kept chains.
   */
  private heap: Chain[] = [];
  /** Heap entries the drops looked at, for tests: one more than the chains dropped, not every chain kept. */
  examined = 0;

  /** The chains kept. */
  get size(): number {
    return this.byLease.size;
  }

  get(lease: string): Chain | undefined {
    return this.byLease.get(lease);
  }

  /** Forgets every chain due at or before `at`. */
  dropDue(at: number): void {
    for (let top = this.heap[0]; top; top = this.heap[0]) {
      this.examined++;
      if (top.due > at) return;
      this.pop();
      if (this.byLease.get(top.lease) === top) this.byLease.delete(top.lease); // (else replaced: the newer one stays)
    }
  }

  /** Keeps `lease`'s chain, in place of any it had. */
  set(lease: string, key: string, due: number): void {
    const chain = { lease, key, due };
    this.byLease.set(lease, chain);
    if (this.heap.length >= 2 * this.byLease.size + 16) this.heap = [...this.byLease.values()].sort((a, b) => a.due - b.due);
    else this.push(chain);
  }

  private push(chain: Chain): void {
    const h = this.heap;
    let i = h.push(chain) - 1;
    // up while due sooner than its parent
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (h[parent]!.due <= chain.due) break;
      h[i] = h[parent]!;
      i = parent;
    }
    h[i] = chain;
  }

  /** Removes the soonest (the caller has read it: heap[0]). */
  private pop(): void {
    const h = this.heap;
    const last = h.pop()!;
    if (!h.length) return;
    // the last entry put at the root, then down while a child is due sooner
    let i = 0;
    for (;;) {
      const left = 2 * i + 1;
      if (left >= h.length) break;
      const child = left + 1 < h.length && h[left + 1]!.due < h[left]!.due ? left + 1 : left;
      if (h[child]!.due >= last.due) break;
      h[i] = h[child]!;
      i = child;
    }
    h[i] = last;
  }
}

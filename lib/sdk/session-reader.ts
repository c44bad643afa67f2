/**
 * Reads of session rows (lib/sdk/session.ts) for a process's electors, shared among them, and the
 * renewal cadence of each session as the process has seen it.
 */
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { Clock } from '../clock.js';
import { sessionKey, type IdentityLease } from '../schemas/identity.js';
import { IdentityStore } from '../stores/identity-store.js';
import { RenewalPhase } from './follower.js';

/**
 * Followers of one process share a session read sent this recently (ms): a hundred electors whose
 * leases are held on one session read it once at each of its renewals, not a hundred times.
 */
export const SHARED_READ_MS = 100;

/** What a session read found, and when (monotonic) it was sent. */
export interface SessionRead {
  readonly row: IdentityLease | undefined;
  /** Monotonic time the read was sent: what it says holds from then on, at the earliest. */
  readonly sentAt: number;
}

/** The row of `process` in partition `component` renewed last, if any (the tick's choice too: lib/coordinator/reconcile.ts byProcess). */
export function freshestOf(rows: Iterable<IdentityLease>, component: string, process: string): IdentityLease | undefined {
  let best: IdentityLease | undefined;
  for (const r of rows) if (r.component === component && r.process === process && (best === undefined || r.renewTime > best.renewTime)) best = r;
  return best;
}

/**
 * Reads session rows for a process's electors (consistently: an observer that judges a session
 * expired must not act on an old copy), sharing a read sent within SHARED_READ_MS among them.
 */
export class SessionReader {
  private readonly store: IdentityStore;
  private readonly recent = new Map<string, { sentAt: number; pending: boolean; read: Promise<SessionRead> }>();
  private readonly phases = new Map<string, RenewalPhase>();

  constructor(
    client: DynamoDBClient,
    identitiesTable: string,
    private readonly clock: Pick<Clock, 'monotonic'>,
  ) {
    this.store = new IdentityStore(client, identitiesTable);
  }

  /**
   * Session `name`'s renewal cadence as this process has seen it (a RenewalPhase): one per session,
   * shared by the process's electors that follow leases held on it, so they all aim their reads at
   * the same moment and share them.
   */
  phase(name: string): RenewalPhase {
    let p = this.phases.get(name);
    if (!p) {
      if (this.phases.size >= 64) this.phases.delete(this.phases.keys().next().value!); // the oldest: sessions come and go
      this.phases.set(name, (p = new RenewalPhase()));
    }
    return p;
  }

  /**
   * The freshest row of process `process` in the partition of session row `named` (LeaseLock
   * processSession): one consistent Query of the partition, never shared — a follower judges by it
   * only if it was sent after the lease read it acts on was answered (lib/sdk/follower.ts
   * ownSessionRead), which a query another elector sent earlier need not be.
   */
  async freshestOf(named: string, process: string): Promise<SessionRead> {
    const sentAt = this.clock.monotonic();
    const component = sessionKey(named).component;
    const { items } = await this.store.query(component);
    return { row: freshestOf(items, component, process), sentAt };
  }

  /**
   * The session row `name`: from a read sent at most `shareMs` ago, or one still unanswered that was
   * sent at most `pendingMs` ago (a loaded process wakes its electors over more than `shareMs`, and
   * a read in flight is as good as a new one sent before it), or a new read. Both bounds must stay
   * well inside the margin a follower's judgement allows (see LeaderElector.readView).
   */
  read(name: string, shareMs = SHARED_READ_MS, pendingMs = shareMs): Promise<SessionRead> {
    const now = this.clock.monotonic();
    const r = this.recent.get(name);
    if (r && (now - r.sentAt <= shareMs || (r.pending && now - r.sentAt <= pendingMs))) return r.read;
    const entry = { sentAt: now, pending: true, read: undefined as unknown as Promise<SessionRead> };
    const key = sessionKey(name);
    entry.read = this.store.read(key.component, key.name).then(
      (x) => {
        entry.pending = false;
        return { row: x.item, sentAt: now };
      },
      (e: unknown) => {
        if (this.recent.get(name) === entry) this.recent.delete(name);
        throw e;
      },
    );
    this.recent.set(name, entry);
    if (this.recent.size > 64) for (const [k, v] of this.recent) if (now - v.sentAt > 60_000) this.recent.delete(k);
    return entry.read;
  }
}

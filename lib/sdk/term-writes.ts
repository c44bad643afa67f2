/**
 * The writes a LeaderElector makes on its lease, through LeaseStore (the only writer of lease
 * rows): a direct acquisition, a confirmation or renewal of its term, a hand-off, a release, a
 * vacancy report. Each is conditioned on what was read or on the term (holder and fencing token),
 * so a lost race is a refusal, never a corrupted row. The decisions to make them are the elector's
 * (lib/sdk/follower.ts, lib/sdk/leader.ts); these only write.
 */
import { nextFencingToken } from '../schemas/fencing-token.js';
import type { Lease } from '../schemas/lease.js';
import { HOLDER_FIELDS, type Platform } from '../schemas/platform.js';
import type { CandidateStore } from '../stores/candidate-store.js';
import { ConflictError } from '../stores/errors.js';
import type { Heir, LeaseRead, LeaseStore, Term } from '../stores/lease-store.js';
import type { StampClock } from './server-clock.js';

export interface TermWriteSettings {
  readonly leaseName: string;
  readonly identity: string;
  readonly leaseDurationMs: number;
  /** Where clients reach this worker: written as holderAddress by its direct acquisitions. */
  readonly advertise?: string | undefined;
}

/** What a direct acquisition came to: the row as written, or the holder of the row that refused it. */
export type Acquired = { readonly written: Lease } | { readonly refusedBy: unknown };

export class TermWrites {
  constructor(
    private readonly leases: LeaseStore,
    private readonly candidates: CandidateStore,
    private readonly s: TermWriteSettings,
    private readonly instance: string,
    private readonly time: StampClock,
    /** Tells the other followers the lease changed (a hand-off or a release this worker wrote). */
    private readonly announce: (revision: number | undefined) => void,
    private readonly onError: (e: Error) => void,
  ) {}

  private get durationSeconds(): number {
    return Math.ceil(this.s.leaseDurationMs / 1000);
  }

  /**
   * Direct acquisition (NoCoordination, the fallback, or as the designated successor), conditioned
   * on the revision read, with this worker's address (`advertise`) or none; the term goes on
   * `session` when one is given. A lost race is
   * `refusedBy` (the holder DynamoDB returned with the refusal: whoever moved first).
   */
  async acquire(read: LeaseRead, electedBy: 'self' | 'successor', session: string | null | undefined, platform: Platform | undefined): Promise<Acquired> {
    const lease = read.item;
    const now = this.time.now();
    try {
      const written = await this.leases.write(read, {
        set: {
          ...(session ? { session } : {}),
          holderIdentity: this.s.identity,
          holderInstance: this.instance,
          holderPlatform: platform,
          holderPlatformId: platform?.id,
          holderAddress: this.s.advertise,
          acquireTime: now,
          renewTime: now,
          leaseDurationSeconds: this.durationSeconds,
          leaseTransitions: lease ? lease.leaseTransitions + 1 : 0,
          fencingToken: nextFencingToken(lease?.fencingToken, now),
          electedBy,
          // the holder whose term ran out: the coordinator passes over its candidate row until it shows life
          ...(lease?.holderIdentity !== undefined ? { lastHolderIdentity: lease.holderIdentity } : {}),
        },
        remove: [
          ...(['election', 'preferredHolder', 'vacancyReport', 'successor', 'successorInstance'] as const),
          // only when the read names one: a grant that predates it (infra/access.ts) may not name it
          ...(lease?.secondSuccessor !== undefined || lease?.secondSuccessorInstance !== undefined ? (['secondSuccessor', 'secondSuccessorInstance'] as const) : []),
          ...(platform ? [] : HOLDER_FIELDS.filter((f) => f.startsWith('holderPlatform'))),
          // its own address or none: the previous holder's never outlives its term
          ...(this.s.advertise ? [] : (['holderAddress'] as const)),
          ...(session ? [] : (['session'] as const)),
        ],
      });
      return { written };
    } catch (e) {
      if (!(e instanceof ConflictError)) throw e; // somebody else moved first
      return { refusedBy: e.current?.['holderIdentity'] };
    }
  }

  /**
   * Confirms or renews `term` (LeaseStore.renewTerm): onto `session`, or off one (null); undefined
   * when the lease is no longer in the term.
   */
  renew(term: Term, session: string | null | undefined): Promise<Lease | undefined> {
    return this.leases.renewTerm(this.s.leaseName, term, this.time.now(), this.durationSeconds, session);
  }

  /**
   * Hands `term` to `heir` in one write (LeaseStore.handOver), with its platform from its candidate
   * row so the platform's stop event can end its term too. False when the lease no longer names that
   * heir, the row is not that process's, `mayStamp` says no (the clock), or the write failed: the
   * caller releases instead.
   */
  async handOver(term: Term, heir: Omit<Heir, 'platform'>, leaseTransitions: number, mayStamp: () => boolean, secondNamed = false): Promise<boolean> {
    try {
      const row = (await this.candidates.read(this.s.leaseName, heir.name)).item;
      if (row?.identity !== heir.instance || !mayStamp()) return false;
      const firstTermSeconds = Math.max(1, Math.ceil(this.s.leaseDurationMs / 3000));
      const given = await this.leases.handOver(this.s.leaseName, term, { ...heir, platform: row.platform, address: row.address }, this.time.now(), firstTermSeconds, leaseTransitions, secondNamed);
      if (given) this.announce(given.revision);
      return given !== undefined;
    } catch (e) {
      this.onError(e as Error);
      return false;
    }
  }

  /** Releases `term`; a failure is reported, and the term simply runs out. */
  async release(term: Term): Promise<void> {
    try {
      const released = await this.leases.releaseTerm(this.s.leaseName, term, this.time.now());
      if (released) this.announce(released.revision);
    } catch (e) {
      this.onError(e as Error); // the term simply runs out
    }
  }

  /** Ends `term` on a row rewritten under it (LeaseStore.endChangedTerm); a failure is reported, and the term runs out. */
  async endChanged(term: Term): Promise<void> {
    try {
      const ended = await this.leases.endChangedTerm(this.s.leaseName, term.fencingToken, term.holderIdentity, this.time.now());
      if (ended) this.announce(ended.revision);
    } catch (e) {
      this.onError(e as Error);
    }
  }

  /**
   * Tells the coordinator the holder has not renewed for a whole term, as this worker watched (its
   * monotonic clock; `at` is informational). False when the lease moved on: nothing to report.
   */
  async reportVacancy(read: LeaseRead): Promise<boolean> {
    try {
      await this.leases.write(read, { set: { vacancyReport: { by: this.s.identity, at: this.time.now(), observedRevision: read.revision } } });
      return true;
    } catch (e) {
      if (!(e instanceof ConflictError)) throw e;
      return false;
    }
  }
}

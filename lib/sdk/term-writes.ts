/**
 * The writes a LeaderElector makes on its lease, through its LeaseLock: a direct acquisition, a
 * confirmation or renewal of its term, a hand-off, a release, a vacancy report. Each is conditioned
 * on what was read or on the term (holder and fencing token), so a lost race is a refusal, never a
 * corrupted row. These stamp each write with DynamoDB's time as this worker measures it, tell the
 * other followers of a hand-off or a release, and report what fails; the decisions to make them are
 * the elector's (lib/sdk/follower.ts, lib/sdk/leader.ts).
 */
import type { Candidate } from '../schemas/candidate.js';
import type { Lease } from '../schemas/lease.js';
import type { Platform } from '../schemas/platform.js';
import { acquisition, type Acquired, type Heir, type LeaseLock, type LeaseRead, type Term } from './lock.js';
import type { StampClock } from './server-clock.js';

export type { Acquired } from './lock.js';

export interface TermWriteSettings {
  readonly leaseName: string;
  readonly identity: string;
  readonly leaseDurationMs: number;
  /** Where clients reach this worker: written as holderAddress by its direct acquisitions. */
  readonly advertise?: string | undefined;
}

export class TermWrites {
  constructor(
    private readonly lock: LeaseLock,
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
   * `session` when one is given. A lost race is `refusedBy` (whoever moved first).
   */
  acquire(read: LeaseRead, electedBy: 'self' | 'successor', session: string | null | undefined, platform: Platform | undefined): Promise<Acquired> {
    const claim = { identity: this.s.identity, instance: this.instance, now: this.time.now(), leaseDurationSeconds: this.durationSeconds, electedBy, address: this.s.advertise, platform, session };
    return this.lock.acquire(read, acquisition(read.item, claim));
  }

  /**
   * Confirms or renews `term` (LeaseLock.renew): onto `session`, or off one (null); undefined
   * when the lease is no longer in the term.
   */
  renew(term: Term, session: string | null | undefined): Promise<Lease | undefined> {
    return this.lock.renew(term, { now: this.time.now(), leaseDurationSeconds: this.durationSeconds, session });
  }

  /**
   * Hands `term` to `heir` in one write (LeaseLock.handOver), with its platform from its candidate
   * row so the platform's stop event can end its term too. False when the lease no longer names that
   * heir, the row is not that process's, `mayStamp` says no (the clock), or the write failed: the
   * caller releases instead. `heirRow`: the heir's candidate row, if the caller is reading it already.
   */
  async handOver(term: Term, heir: Omit<Heir, 'platform'>, leaseTransitions: number, mayStamp: () => boolean, secondNamed = false, heirRow?: Promise<{ readonly item: Candidate | undefined }>): Promise<boolean> {
    try {
      const row = (await (heirRow ?? this.lock.candidate(heir.name))).item;
      if (row?.identity !== heir.instance || !mayStamp()) return false;
      const firstTermSeconds = Math.max(1, Math.ceil(this.s.leaseDurationMs / 3000));
      const given = await this.lock.handOver(term, { heir: { ...heir, platform: row.platform, address: row.address }, now: this.time.now(), firstTermSeconds, leaseTransitions, secondNamed });
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
      const released = await this.lock.release(term, this.time.now());
      if (released) this.announce(released.revision);
    } catch (e) {
      this.onError(e as Error); // the term simply runs out
    }
  }

  /** Ends `term` on a row rewritten under it (LeaseLock.endChanged); a failure is reported, and the term runs out. */
  async endChanged(term: Term): Promise<void> {
    try {
      const ended = await this.lock.endChanged(term, this.time.now());
      if (ended) this.announce(ended.revision);
    } catch (e) {
      this.onError(e as Error);
    }
  }

  /**
   * Tells the coordinator the holder has not renewed for a whole term, as this worker watched (its
   * monotonic clock; `at` is informational). Undefined when the lease moved on: nothing to report.
   */
  reportVacancy(read: LeaseRead): Promise<Lease | undefined> {
    return this.lock.reportVacancy(read, this.s.identity, this.time.now());
  }
}

/**
 * Whether a LeaderElector may write the times it would write now: DynamoDB's time as this machine
 * measures it (server-clock.ts), within maxClockErrorMs. A write it may not make is a clock skew
 * prevention, counted, and reported to onError once per spell — at once after a jump, otherwise
 * once it has lasted a lease duration (the first responses of a start-up settle the estimate; that
 * is no fault).
 */
import type { ElectorStats } from './elector-options.js';
import { ClockSkewError, type ClockDoubt, type StampClock } from './server-clock.js';

export class ClockGuard {
  private preventions = 0;
  /** Since when this worker could not vouch for its times, and whether it said so. */
  private doubt: { since: number; reported: boolean } | undefined;

  constructor(
    private readonly time: StampClock,
    private readonly o: { readonly maxClockErrorMs: number; readonly leaseDurationMs: number },
    private readonly who: string,
    private readonly onError: (e: Error) => void,
  ) {}

  /**
   * Whether the times this worker would write now are within maxClockErrorMs of DynamoDB's clock.
   * If not, the caller does not write them.
   *
   * `settling`: for an acknowledgement, a doubt that is about to clear does not count. An answer
   * carries no time the coordinator relies on (it judges the copy of its own ping), and a worker
   * that does not answer is written off until it renews on its own — minutes. Such a worker is
   * elected only to confirm the term a poll later, once the next responses have settled the
   * estimate; a worker whose doubt lasts (no Date header, responses too slow) does not answer.
   */
  trusted(settling = false): boolean {
    const c = this.time.check(this.o.maxClockErrorMs);
    if (c.ok) {
      this.doubt = undefined;
      return true;
    }
    const now = this.time.monotonic();
    this.doubt ??= { since: now, reported: false };
    const lasting = now - this.doubt.since >= this.o.leaseDurationMs;
    if (settling && c.reason !== 'noSamples' && !lasting) return true;
    this.preventions++;
    if (!this.doubt.reported && (c.reason === 'jumped' || lasting)) this.report(c);
    return false;
  }

  /** A write not made, or a term stopped, for the clock (a jump: reported at once). */
  prevented(jumpMs?: number): void {
    this.preventions++;
    if (jumpMs !== undefined) this.report({ reason: 'jumped', jumpMs });
  }

  private report(d: ClockDoubt): void {
    this.doubt = { since: this.doubt?.since ?? this.time.monotonic(), reported: true };
    this.onError(new ClockSkewError(this.who, d, this.o.maxClockErrorMs));
  }

  /** Clock skew preventions so far, and this worker's measurement of DynamoDB's clock. */
  get stats(): ElectorStats {
    const c = this.time.check(this.o.maxClockErrorMs);
    return {
      clockSkewPreventions: this.preventions,
      clockSynced: c.ok,
      clockErrorMs: 'errorMs' in c ? c.errorMs : undefined,
      clockOffsetMs: this.time.wallOffsetMs(),
    };
  }
}

/**
 * What a LeaderElector has seen of its lease: the reads (the lease row, and the session row of a
 * lease held on one), when each was sent, and client-go's `observedTime` — when the term or its
 * renewal last changed, on this worker's monotonic clock. From these come the follower's decision
 * (lib/sdk/follower.ts decideFollower) and when it reads next (nextReadDelay). The elector owns one
 * per start-up and feeds it every read and every write it makes.
 */
import type { IdentityClaim, Lease } from '../schemas/lease.js';
import type { LeaseLock, LeaseRead, SessionRead } from './lock.js';
import { isQuiet, judgedOnSession, nextReadDelay, ownSessionRead, RenewalPhase, watchesTerm, type OwnSessionFound } from './follower.js';
import { SHARED_READ_MS } from './session-reader.js';
import { processOf, type IdentityLease } from '../schemas/identity.js';

type SessionReadRow = Pick<IdentityLease, 'name' | 'renewTime' | 'process'>;

export interface WatchSettings {
  readonly leaseName: string;
  readonly identity: string;
  readonly mode: 'coordinated' | 'NoCoordination';
  readonly leaseDurationMs: number;
  readonly renewDeadlineMs: number;
  readonly retryPeriodMs: number;
}

/** The part of the record a renewal changes: what client-go compares to reset observedTime (no lease: undefined). */
interface TermKey {
  readonly holderIdentity: string | undefined;
  readonly holderInstance: string | undefined;
  readonly renewTime: number | undefined;
  readonly fencingToken: number;
  readonly leaseDurationSeconds: number;
}

const termKey = (l: Lease | undefined): TermKey | undefined =>
  l && { holderIdentity: l.holderIdentity, holderInstance: l.holderInstance, renewTime: l.renewTime, fencingToken: l.fencingToken, leaseDurationSeconds: l.leaseDurationSeconds };

/** Whether `l` has the term key `k` (compared field by field: no string made per read). */
function sameTerm(k: TermKey | undefined, l: Lease | undefined): boolean {
  if (!k || !l) return k === undefined && l === undefined;
  return k.holderIdentity === l.holderIdentity && k.holderInstance === l.holderInstance && k.renewTime === l.renewTime && k.fencingToken === l.fencingToken && k.leaseDurationSeconds === l.leaseDurationSeconds;
}

export class LeaseWatch {
  /** The lease as last read (for a lease held on a session, the view with the session's stamp). */
  lastRead: Lease | undefined;
  /** The lease row as last read. */
  lastRaw: LeaseRead | undefined;
  /** When (monotonic) the lease row itself was last read. */
  leaseReadAt: number | undefined;
  /** What was last observed, and when (monotonic) the term or its renewal last changed. */
  observed: { key: TermKey | undefined; at: number; revision: number; token: number } | undefined;
  /** When this follower's last read was sent (monotonic): a renewal the next read finds first landed after it. */
  private previousReadSentAt: number | undefined;
  /** Since when (monotonic) the lease has been settling as this follower saw it (nextReadDelay). */
  private settlingSince: number | undefined;
  /** The holder's renewal cadence, as this worker saw it: when its designated successor (and second successor) reads. */
  private readonly phase = new RenewalPhase();
  /** Reads since the last new renewal seen that found nothing new past its expected time. */
  private misses = 0;
  /** Whether the last term a read showed (a lease with a holder) was held on a session: its fallback waits longer (lib/sdk/leader.ts sessionFallbackMs). */
  lastHeldOnSession = false;
  /** The session row the last view was judged with (a lease held on a session), if any. */
  private viewedSession: { name: string; renewTime: number; of: string } | undefined;

  constructor(
    private readonly s: WatchSettings,
    private readonly instance: string,
    private readonly lock: LeaseLock,
    /** Session `name`'s renewal cadence as this process has seen it (SessionReader.phase: shared by its electors). */
    private readonly sessionPhase: (name: string) => RenewalPhase,
    private readonly mono: () => number,
    /** Every holder a read or a refused write shows. */
    private readonly onHolder: (holder: unknown) => void,
    /** Every claim to a candidate name a read or a write shows (one identity, one process). */
    private readonly onClaim: (claim: IdentityClaim) => void = () => undefined,
    /** How long a term on a session that does not vouch for its holder lasts, from when it was first seen (see judged). */
    private readonly unvouchedTermMs: () => number = () => s.leaseDurationMs,
  ) {}

  /** Passes on a claim the row `l` carries (LeaseCandidate's, to a candidate name another start-up holds). */
  claimIn(l: Lease | undefined): void {
    if (l?.identityClaim) this.onClaim(l.identityClaim);
  }

  /**
   * The renewal cadence this follower times its reads by: for a lease held on a session, the
   * session's, shared by every elector of the process that follows a lease on it (they then aim at
   * the same moment, and one read serves them all); otherwise its own holder's.
   */
  private get activePhase(): RenewalPhase {
    const l = this.lastRaw?.item;
    return l?.session !== undefined && l.holderIdentity !== undefined && this.viewedSession !== undefined ? this.sessionPhase(this.viewedSession.name) : this.phase;
  }

  /** Whether the lease as last read is held on a session. */
  get sessionHeld(): boolean {
    return this.lastRaw?.item?.session !== undefined && this.lastRaw.item.holderIdentity !== undefined;
  }

  /**
   * Reads the lease and, if it is held on a session, that session's row: `raw` is the row (what
   * writes are conditioned on), `view` the lease as judged, renewTime the later of the two stamps
   * (effectiveLease). `sentAt`: when the read that could show a new renewal was sent. `raw` given:
   * only the session is read (a quiet lease held on a session, with wakes reaching this worker).
   */
  async readView(consistent: boolean, raw?: LeaseRead): Promise<{ raw: LeaseRead; view: LeaseRead; sentAt: number }> {
    let sentAt = this.mono();
    if (!raw) {
      raw = await this.lock.get(consistent);
      if (!consistent && this.isStale(raw)) raw = await this.lock.get();
      this.leaseReadAt = sentAt;
    }
    const l = raw.item;
    this.viewedSession = undefined;
    if (l?.session === undefined || l.holderIdentity === undefined) return { raw, view: raw, sentAt };
    // A read of the session serves every elector of the process that wants one about then: the
    // successor shares one sent SHARED_READ_MS ago (it times the holder's renewals), others one up to
    // a quarter of the margin between the renew deadline and the term, and anyone one still in flight
    // that was sent within that margin. A judgement from a read sent that much earlier is still sound:
    // any renewal landing after it was sent after the holder's own deadline (see Session).
    const margin = Math.max(SHARED_READ_MS, Math.min(this.s.retryPeriodMs, (this.s.leaseDurationMs - this.s.renewDeadlineMs) / 4));
    const successor = watchesTerm(l, this.s.identity, this.instance);
    const share = successor ? SHARED_READ_MS : margin;
    let s = await this.lock.session(l.session, share, margin);
    // A read sent longer ago than the margin (the process was frozen, or starved, between sending it
    // and now) proves nothing about now: read again before judging by it.
    if (this.mono() - s.sentAt > margin) s = await this.lock.session(l.session, 0, 0);
    sentAt = s.sentAt;
    // A row that does not vouch for the holder: its own process's session, found apart (ownSessionRead)
    const own = await this.ownSession(l, raw.revision, s.row, share, margin);
    if (own) sentAt = own.sentAt; // the row judged by, whose renewals the phase times
    const { lease: judged, by } = judgedOnSession(l, s.row, own?.row, this.unvouchedTermMs());
    this.viewedSession = by && { name: by.name, renewTime: by.renewTime, of: l.session };
    return { raw, view: { ...raw, item: judged }, sentAt };
  }

  /** Where the holder's own process's session was last looked for (ownSessionRead). */
  private ownFound: OwnSessionFound | undefined;

  /**
   * The holder's own process's session row, for a term on a session row `named` that does not vouch
   * for it (lib/sdk/follower.ts ownSessionRead): found by a query of the partition once a lease
   * duration, read by name in between (shared as the named row's reads are, and read again past
   * the margin). Undefined when the named row vouches, or no such row was found.
   */
  private async ownSession(l: Lease, revision: number, named: SessionReadRow | undefined, share: number, margin: number): Promise<SessionRead | undefined> {
    const plan = ownSessionRead(l, revision, named, this.ownFound, this.mono(), this.s.leaseDurationMs);
    if (plan === undefined || plan.kind === 'none') return undefined;
    let r = plan.kind === 'read' ? await this.lock.session(plan.name, share, margin) : undefined;
    if (!r?.row) {
      // a query (due, or the row found before is gone): the freshest row of the holder's process
      r = await this.lock.processSession(l.session!, processOf(l.holderInstance)!);
      this.ownFound = { holderInstance: l.holderInstance!, revision, name: r.row?.name, at: r.sentAt };
    }
    if (r.row && this.mono() - r.sentAt > margin) r = await this.lock.session(r.row.name, 0, 0);
    return r.row ? r : undefined;
  }

  /** Records what was read (or written); true when the term or its renewal changed since the last read. */
  observe(read: LeaseRead): boolean {
    const changed = !this.observed || !sameTerm(this.observed.key, read.item);
    const l = read.item;
    if (l?.holderIdentity !== undefined) this.lastHeldOnSession = l.session !== undefined;
    if (changed) {
      this.observed = { key: termKey(l), at: this.mono(), revision: read.revision, token: l?.fencingToken ?? -1 };
      // a term's first write (an election's, a hand-off's, an acquisition's) is not on the holder's renewal cadence
      const s = this.viewedSession;
      if (s && l?.session === s.of && l.holderInstance !== undefined && l.holderInstance !== this.instance) this.sessionPhase(s.name).seen(`session:${s.name}`, s.renewTime, this.observed.at, this.previousReadSentAt, l.leaseDurationSeconds * 1000);
      else if (l?.holderInstance !== undefined && l.renewTime !== undefined && l.renewTime !== l.acquireTime && l.holderInstance !== this.instance) this.phase.seen(`${l.holderInstance}|${l.fencingToken}`, l.renewTime, this.observed.at, this.previousReadSentAt, l.leaseDurationSeconds * 1000);
    } else this.observed!.revision = read.revision;
    this.onHolder(read.item?.holderIdentity);
    this.claimIn(read.item);
    return changed;
  }

  /** A follower's poll: `raw` and its `view` read at `sentAt` (woken: a read for news, not on the holder's cadence). */
  polled(raw: LeaseRead, view: LeaseRead, sentAt: number, woken: boolean): void {
    this.lastRaw = raw;
    if (this.observe(view)) this.misses = 0;
    else if (!woken) {
      this.misses++;
      this.activePhase.missed(sentAt); // the next renewal lands later than this read was served
    }
    this.previousReadSentAt = sentAt;
    this.lastRead = view.item;
    const settling = !isQuiet(view.item) || (watchesTerm(view.item, this.s.identity, this.instance) && !this.activePhase.known);
    this.settlingSince = settling ? (this.settlingSince ?? this.mono()) : undefined;
  }

  /**
   * An eventually consistent read older than one already seen (a lower revision in the same or an
   * earlier term, or no row where there was one): not acted on; it is read again, consistently.
   */
  private isStale(read: LeaseRead): boolean {
    const o = this.observed;
    if (!o || o.token < 0) return false;
    if (!read.item) return true;
    return read.revision < o.revision && read.item.fencingToken <= o.token;
  }

  /** This worker leads now: the cadence it learnt was another holder's. */
  leading(): void {
    this.phase.reset();
    this.misses = 0;
    this.previousReadSentAt = undefined;
  }

  /** When a follower reads next (lib/sdk/follower.ts `nextReadDelay`). */
  nextDelay(pushLive: boolean, random: number): number {
    const now = this.mono();
    return nextReadDelay({
      lease: this.lastRead,
      identity: this.s.identity,
      instance: this.instance,
      mode: this.s.mode,
      now,
      retryPeriodMs: this.s.retryPeriodMs,
      expectedAt: this.activePhase.expectedAt(),
      cadenceKnown: this.activePhase.known,
      settlingForMs: this.settlingSince === undefined ? undefined : now - this.settlingSince,
      leaseDurationMs: this.s.leaseDurationMs,
      termEndsAt: this.lastRead?.holderIdentity !== undefined && this.observed ? this.observed.at + this.lastRead.leaseDurationSeconds * 1000 : undefined,
      misses: this.misses,
      pushLive,
      sessionHeld: this.sessionHeld,
      random,
    });
  }
}

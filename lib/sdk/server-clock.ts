/**
 * The clock the SDK stamps rows with: DynamoDB's, read through this machine's monotonic clock.
 *
 * The coordinator judges expiry and freshness by comparing the times workers write with its own
 * clock, plus a margin (ElectionConfig.clockSkewMs, 1 s). A worker whose wall clock is 30 s off, or
 * steps, would be judged wrong by 30 s. So the SDK does not write its wall clock: every DynamoDB
 * response carries a `Date` header (the server's clock, truncated to the second), and each one
 * bounds `serverTime − monotonic` to an interval:
 *
 *   the server stamped the response at some monotonic instant m ∈ [sent, received], and its clock
 *   then read S ∈ [Date, Date + 1 s)  ⇒  S − m ∈ [Date − received, Date + 1 s − sent].
 *
 * Every sample's interval contains the true offset, so their intersection does too, and it narrows
 * to about the round trip as samples land at different points of the server's second (Cristian's
 * algorithm with a quantized server clock). A stamp is `monotonic + offset`, the offset chosen
 * inside the intersection and kept there as long as the evidence allows (moved only as far as a
 * new sample forces it): stamps within the intersection's width of DynamoDB's clock, whatever the
 * wall clock says or does, and steady from one stamp to the next. Older samples are
 * widened by how far a monotonic clock may drift since (100 ppm), and dropped when they no longer
 * agree with the newest; a newest sample that agrees with none of the history (the machine was
 * suspended — its monotonic clock stood still — or the server's clock stepped) is a *jump*: the
 * estimate starts again from it and is not trusted until a second sample confirms it.
 *
 * A suspend is told apart where the machine has a clock since boot (`Clock.sinceBoot`, which counts
 * it): each sample carries that clock less the monotonic one, which grows by the time slept. Grown
 * by its resolution or more since the newest sample, the machine slept: the older samples are on a
 * monotonic time that has since lost the sleep, so the estimate starts again from the new one (as
 * on a first sample), and a move of the offset by the sleep (to within that resolution, and
 * JUMP_MS) is no jump: the server's clock did not step. More than that is still one. Started again
 * so, the offset is the middle of what the samples since allow until they narrow it below a second
 * (one sample leaves it ±(500 ms + half the round trip); a second, any time later, within 500 ms),
 * and is kept from then on.
 */
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { SINCE_BOOT_RESOLUTION_MS, type Clock, type Timer, type TimerOptions } from '../clock.js';
import { electionConfig } from '../schemas/config.js';

/** What one response says about the server's clock. */
export interface TimeSample {
  /** The response's `Date` header, epoch ms (a whole second: the server's clock truncated). */
  date: number;
  /** This machine's monotonic ms when the request went out. */
  sent: number;
  /** This machine's monotonic ms when the response came back. */
  received: number;
  /** Its clock since boot less its monotonic one when the response came back (grows by the time it slept); absent without `Clock.sinceBoot`. */
  asleep?: number | undefined;
}

/** An interval of `serverTime − monotonic`, in ms. */
export interface OffsetInterval {
  lo: number;
  hi: number;
}

/** HTTP dates have whole seconds. */
export const DATE_RESOLUTION_MS = 1_000;
/** How fast a monotonic clock may drift from the server's: 100 ppm (crystals are within 50; NTP disciplines it further). */
export const DRIFT_PER_MS = 100e-6;
/**
 * Samples kept (newest first): the newest, and the two that bound the intersection (the latest lower
 * bound, the earliest upper bound). Those two are kept however many came after them: at 32 responses
 * a second (a process with many electors on one client, or a test polling DynamoDB Local) the newest
 * 32 can all fall inside one server second, which narrows nothing (±1 s less their spread): an
 * estimate that kept only them forgot its narrowing, and reported 'uncertain' (errorMs above
 * maxClockErrorMs) while its offset was as good as ever.
 */
export const MAX_SAMPLES = 32;
/**
 * Samples older than this are dropped: widened by drift (DRIFT_PER_MS, 360 ms each side at an hour)
 * they no longer narrow anything within the bound. Not less: while DynamoDB answers slowly (a
 * second or more), new answers narrow nothing, and the estimate stays within maxClockErrorMs on
 * the quick answers from before; kept only 10 minutes, every worker's clock was in doubt from then
 * on and no lease had a leader for as long as the slowness lasted (a review, 2026-12-07, twelfth).
 */
export const MAX_SAMPLE_AGE_MS = 60 * 60_000;
/** An estimate that moves by more than this between two samples has jumped. */
export const JUMP_MS = 250;
/** Samples that must agree after a jump before the estimate is trusted again. */
export const CONFIRMATIONS = 2;

/** Why stamps cannot be trusted now. */
export type ClockDoubt =
  /** No response with a Date header yet, or since the machine slept. */
  | { reason: 'noSamples' }
  /** Known only to ±errorMs, more than the bound (slow responses, or too few samples yet). */
  | { reason: 'uncertain'; errorMs: number }
  /** The estimate jumped by jumpMs and is not yet confirmed by a second sample. */
  | { reason: 'jumped'; jumpMs: number };

export type ClockCheck = { ok: true; errorMs: number } | ({ ok: false } & ClockDoubt);

/** The interval one sample allows, widened by the drift since it was taken. */
export function sampleInterval(s: TimeSample, at = s.received): OffsetInterval {
  const drift = Math.max(0, at - s.received) * DRIFT_PER_MS;
  return { lo: s.date - s.received - drift, hi: s.date + DATE_RESOLUTION_MS - s.sent + drift };
}

/**
 * At most MAX_SAMPLES of `samples` (newest first, mutually consistent), in the same order: the newest,
 * and the two whose intervals at `at` bound the intersection, so dropping the rest leaves it as narrow.
 */
function bounded(samples: TimeSample[], at: number): TimeSample[] {
  if (samples.length <= MAX_SAMPLES) return samples;
  let low = 0;
  let high = 0;
  samples.forEach((x, k) => {
    const i = sampleInterval(x, at);
    if (i.lo > sampleInterval(samples[low]!, at).lo) low = k;
    if (i.hi < sampleInterval(samples[high]!, at).hi) high = k;
  });
  return samples.filter((_, k) => k < MAX_SAMPLES - 2 || k === low || k === high);
}

/**
 * The estimate of `serverTime − monotonic` from samples: pure (no clock read, no I/O), so it is
 * tested by feeding it samples.
 */
export class OffsetEstimate {
  /** Newest first, mutually consistent. */
  private samples: TimeSample[] = [];
  /** The offset stamps use: inside every sample's interval, moved only when a sample forces it. */
  private chosen: number | undefined;
  private jumpCount = 0;
  private lastJumpMs = 0;
  private sleepCount = 0;
  private lastSleptMs = 0;
  private sinceJump = CONFIRMATIONS;
  /** Started again (first sample, sleep or jump), and no sample since has narrowed the interval below a second: its offset is the middle, not kept. */
  private settling = true;

  /** How many jumps were seen: a leader compares it before and after a renewal. */
  get jumps(): number {
    return this.jumpCount;
  }

  /** How many sleeps of the machine were seen (the estimate started again, no jump): a leader counts them against its renew deadline. */
  get sleeps(): number {
    return this.sleepCount;
  }

  /** How long the machine slept before the last sleep seen, as its clock since boot tells (to SINCE_BOOT_RESOLUTION_MS). */
  get sleptMs(): number {
    return this.lastSleptMs;
  }

  /** Samples the estimate rests on now. */
  get size(): number {
    return this.samples.length;
  }

  /** Takes one response's sample; returns how far the estimate jumped (0: it agreed with what came before, or the machine slept). */
  add(s: TimeSample): number {
    if (!Number.isFinite(s.date) || !(s.received >= s.sent)) return 0;
    const before = this.interval(s.received);
    const newest = this.samples[0];
    const slept = newest?.asleep !== undefined && s.asleep !== undefined ? s.asleep - newest.asleep : 0;
    const asleep = slept >= SINCE_BOOT_RESOLUTION_MS;
    // the new sample's interval, narrowed by the older samples, newest first, as long as they agree with it (none from before a sleep)
    let { lo, hi } = sampleInterval(s);
    let kept = 0;
    for (const old of asleep ? [] : this.samples) {
      if (s.received - old.received > MAX_SAMPLE_AGE_MS) break;
      const i = sampleInterval(old, s.received);
      if (Math.max(lo, i.lo) > Math.min(hi, i.hi)) break; // this one and everything older disagree with the newest: dropped
      lo = Math.max(lo, i.lo);
      hi = Math.min(hi, i.hi);
      kept++;
    }
    this.samples = bounded([s, ...this.samples.slice(0, kept)], s.received);
    this.sinceJump++;
    const gapTo = (w: OffsetInterval | undefined) => (w ? Math.max(0, lo - w.hi, w.lo - hi) : 0);
    const moved = gapTo(before);
    // where the offset was, moved on by the sleep (its monotonic clock lost that much): what is left is the server's clock
    const beyondSleep = asleep ? gapTo(before && { lo: before.lo + slept - SINCE_BOOT_RESOLUTION_MS, hi: before.hi + slept + SINCE_BOOT_RESOLUTION_MS }) : moved;
    // Started again (the first sample, a sleep, a jump), its one sample bounds the offset only to a second and the round
    // trip, and its middle is more than 500 ms from either end whatever a later sample in the same server second narrows
    // (only the next second's moves the low end): kept there, a fresh process, a woken leader and one past a jump waited
    // for a Date header from the next server second to vouch for a stamp. Until the interval is narrower than a second,
    // the middle of what the samples since allow (no stamp before them to agree with); then kept, as ever. Never outside
    // the interval: errorMs stays the bound.
    if (this.chosen === undefined || asleep || moved > JUMP_MS) this.settling = true;
    this.chosen = this.settling ? (lo + hi) / 2 : Math.min(Math.max(this.chosen!, lo), hi);
    if (hi - lo < DATE_RESOLUTION_MS) this.settling = false;
    if (asleep && beyondSleep <= JUMP_MS) {
      this.sleepCount++;
      this.lastSleptMs = slept;
      return 0;
    }
    // the offset did not move, whatever the clock since boot did (os.uptime() on macOS is read off the wall clock, which may step): no jump
    if (moved <= JUMP_MS) return 0;
    this.jumpCount++;
    this.lastJumpMs = lo > before!.hi ? moved : -moved;
    this.sinceJump = 1;
    return this.lastJumpMs;
  }

  /** The offset stamps are taken with (serverTime − monotonic); undefined before the first sample. */
  offset(): number | undefined {
    return this.chosen;
  }

  /** The offsets every kept sample allows at monotonic time `at` (their intersection; one that would empty it is passed over); undefined before the first sample. */
  interval(at: number): OffsetInterval | undefined {
    if (this.samples.length === 0) return undefined;
    let lo = -Infinity;
    let hi = Infinity;
    for (const s of this.samples) {
      const i = sampleInterval(s, at);
      if (Math.max(lo, i.lo) > Math.min(hi, i.hi)) continue;
      lo = Math.max(lo, i.lo);
      hi = Math.min(hi, i.hi);
    }
    return { lo, hi };
  }

  /**
   * Whether a stamp taken at `at` is within `maxErrorMs` of the server's clock, and if not why.
   * `asleep`: the machine's clock since boot less its monotonic one now; grown by the resolution
   * since the newest sample, the machine slept since, which the estimate (on the monotonic clock)
   * lost: no sample since.
   */
  check(at: number, maxErrorMs: number, asleep?: number): ClockCheck {
    const i = this.interval(at);
    if (!i) return { ok: false, reason: 'noSamples' };
    const before = this.samples[0]!.asleep;
    if (asleep !== undefined && before !== undefined && asleep - before >= SINCE_BOOT_RESOLUTION_MS) return { ok: false, reason: 'noSamples' };
    if (this.sinceJump < CONFIRMATIONS) return { ok: false, reason: 'jumped', jumpMs: this.lastJumpMs };
    const errorMs = Math.max(this.chosen! - i.lo, i.hi - this.chosen!);
    return errorMs <= maxErrorMs ? { ok: true, errorMs } : { ok: false, reason: 'uncertain', errorMs };
  }
}

/**
 * A Clock whose `now()` is a server-time estimate: what the SDK stamps rows with. `check()` says
 * whether those stamps are good enough to lead on; `jumps` counts the estimate's jumps.
 */
export interface StampClock extends Clock {
  check(maxErrorMs: number): ClockCheck;
  readonly jumps: number;
  /** Calls `listener` with the jump (ms) whenever the estimate jumps; returns the unsubscribe. */
  onJump(listener: (jumpMs: number) => void): () => void;
  /** Calls `listener` with how long the machine slept (ms, to SINCE_BOOT_RESOLUTION_MS) whenever a sample shows a sleep that is no jump; returns the unsubscribe. */
  onSleep(listener: (sleptMs: number) => void): () => void;
  /** DynamoDB's time minus this machine's wall clock (positive: the wall clock is behind); undefined before the first sample. */
  wallOffsetMs(): number | undefined;
}

/** `clockSync: 'none'`: the machine's own clock, trusted as it is (it must be within the coordinator's clockSkewMs). */
export function trustedClock(base: Clock): StampClock {
  return {
    now: () => base.now(),
    monotonic: () => base.monotonic(),
    setTimer: (ms, fn, opts) => base.setTimer(ms, fn, opts),
    sleep: (ms, signal) => base.sleep(ms, signal),
    random: () => base.random(),
    check: () => ({ ok: true, errorMs: 0 }),
    jumps: 0,
    onJump: () => () => undefined,
    onSleep: () => () => undefined,
    wallOffsetMs: () => 0,
  };
}

/** DynamoDB's clock, measured from the Date headers of one client's responses on `base`'s monotonic clock. */
export class ServerClock implements StampClock {
  readonly estimate = new OffsetEstimate();
  private readonly listeners = new Set<(jumpMs: number) => void>();
  private readonly sleepListeners = new Set<(sleptMs: number) => void>();

  constructor(readonly base: Clock) {}

  monotonic(): number {
    return this.base.monotonic();
  }

  setTimer(ms: number, fn: () => void, opts?: TimerOptions): Timer {
    return this.base.setTimer(ms, fn, opts);
  }

  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    return this.base.sleep(ms, signal);
  }

  random(): number {
    return this.base.random();
  }

  /** The server's time now, as well as it is known; the machine's wall clock before the first sample. */
  now(): number {
    const offset = this.estimate.offset();
    return offset === undefined ? this.base.now() : Math.round(this.monotonic() + offset);
  }

  check(maxErrorMs: number): ClockCheck {
    return this.estimate.check(this.monotonic(), maxErrorMs, this.asleep());
  }

  /** Jumps, and sleeps: a term won by a write sent before either is given back (its deadline on the monotonic clock did not count a sleep). */
  get jumps(): number {
    return this.estimate.jumps + this.estimate.sleeps;
  }

  onJump(listener: (jumpMs: number) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  onSleep(listener: (sleptMs: number) => void): () => void {
    this.sleepListeners.add(listener);
    return () => this.sleepListeners.delete(listener);
  }

  /** Its clock since boot less its monotonic one (grows by the time the machine slept); undefined without a clock since boot. */
  asleep(): number | undefined {
    return this.base.sinceBoot ? this.base.sinceBoot() - this.base.monotonic() : undefined;
  }

  wallOffsetMs(): number | undefined {
    return this.estimate.size ? this.now() - this.base.now() : undefined;
  }

  /** One response's Date header, with the monotonic times around its request. */
  record(sample: TimeSample): void {
    const sleeps = this.estimate.sleeps;
    const jump = this.estimate.add(sample);
    if (this.estimate.sleeps !== sleeps) for (const l of [...this.sleepListeners]) l(this.estimate.sleptMs);
    if (jump === 0) return;
    for (const l of [...this.listeners]) l(jump);
  }
}

const clocks = new WeakMap<DynamoDBClient, Map<Clock, ServerClock>>();

/**
 * The ServerClock of `client` on `base`'s monotonic clock: one per pair, so every SDK object on one
 * client shares its samples. The first call adds a middleware to the client that reads each
 * response's Date header (inside the retry loop: one sample per attempt, timed around the HTTP
 * exchange alone). A client without a middleware stack (a stub) gives no samples.
 */
export function serverClockOf(client: DynamoDBClient, base: Clock): ServerClock {
  let byBase = clocks.get(client);
  if (!byBase) {
    byBase = new Map();
    clocks.set(client, byBase);
    const registered = byBase;
    client.middlewareStack?.add(
      (next) => async (args) => {
        const all = [...registered.values()];
        const sent = all.map((c) => c.monotonic());
        const out = await next(args);
        const received = all.map((c) => c.monotonic());
        const asleep = all.map((c) => c.asleep());
        const header = (out.response as { headers?: Record<string, string | undefined> } | undefined)?.headers?.['date'];
        const date = header === undefined ? NaN : Date.parse(header);
        if (Number.isFinite(date)) all.forEach((c, i) => c.record({ date, sent: sent[i]!, received: received[i]!, asleep: asleep[i] }));
        return out;
      },
      // Inside the deserializer (priority low): the raw HTTP response, error statuses included.
      { step: 'deserialize', priority: 'low', name: 'conclaveServerTime' },
    );
  }
  let c = byBase.get(base);
  if (!c) {
    c = new ServerClock(base);
    byBase.set(base, c);
  }
  return c;
}

/**
 * The ServerClock of `client` on `base` if one was made (an SDK object on that client has had its
 * answers timed), else undefined: made by nothing, so looking adds no middleware to the client.
 */
export function knownServerClockOf(client: DynamoDBClient, base: Clock): ServerClock | undefined {
  return clocks.get(client)?.get(base);
}

/**
 * How far a heartbeat's or a candidate's stamp may be from DynamoDB's time: the coordinator's
 * default clockSkewMs, which it allows another machine's stamp before judging it expired, and
 * which clockSync 'none' asks of the wall clock. One answer's Date header meets it (it bounds
 * DynamoDB's time to half a second and half the round trip).
 */
const ROW_STAMP_ERROR_MS = electionConfig().clockSkewMs;

/**
 * DynamoDB's time now, to stamp a heartbeat's or a candidate's row with. After this machine slept
 * (the monotonic clock the estimate is carried on did not count the sleep) or the estimate jumped,
 * it is not known until DynamoDB answers again: `probe`, a read, goes out first, its answer's Date
 * header sampling it again, as a Session does before it stamps its row. Still not known (an
 * endpoint without a Date header, answers slower than a second, a jump not yet confirmed), nothing
 * is stamped: it throws, telling why, and the next renewal tries again. At once with clockSync 'none'.
 * @internal
 */
export async function stampNow(time: StampClock, probe: () => Promise<unknown>, what: string): Promise<number> {
  if (!time.check(ROW_STAMP_ERROR_MS).ok) await probe();
  const known = time.check(ROW_STAMP_ERROR_MS);
  if (known.ok) return time.now();
  const why = known.reason === 'noSamples' ? 'no answer with a Date header since this process started or the machine slept' : known.reason === 'uncertain' ? `known only to +/-${Math.round(known.errorMs)} ms: answers are slow` : `its measurement jumped by ${Math.round(known.jumpMs)} ms, not yet confirmed`;
  throw new Error(`${what}: not written, as DynamoDB's time is not known here within ${ROW_STAMP_ERROR_MS} ms (${why}); tried again at the next renewal (an endpoint that sends no Date header needs clockSync: 'none')`);
}

/**
 * Whether this machine slept since DynamoDB last answered this client (the estimate saw its clock
 * since boot gain on its monotonic one), or DynamoDB never did: a time measured on the monotonic
 * clock since is short by the sleep, until the next answer shows it. Never with clockSync 'none'. @internal
 */
export function sleptUnseen(time: StampClock): boolean {
  const known = time.check(Infinity);
  return !known.ok && known.reason === 'noSamples';
}

/**
 * A LeaderElector did not acquire, confirm, renew or acknowledge because it cannot vouch for the
 * times it would write (clockSync 'server'), or stopped leading because its clock jumped. It stays
 * a follower until DynamoDB's time is known again; `elector.stats` counts every such prevention.
 */
export class ClockSkewError extends Error {
  /** Always `ClockSkewError`. */
  override readonly name = 'ClockSkewError';
  constructor(
    /** Who could not: the elector's description. */
    readonly who: string,
    /** Why: no sample yet, too uncertain, or jumped. */
    readonly doubt: ClockDoubt,
    /** The bound the estimate must be within (maxClockErrorMs). */
    readonly maxErrorMs: number,
  ) {
    super(`${who}: ${ClockSkewError.why(doubt, maxErrorMs)}; it does not lead until it knows (a clock skew prevention)`);
  }

  private static why(d: ClockDoubt, maxErrorMs: number): string {
    switch (d.reason) {
      case 'noSamples':
        return "cannot tell DynamoDB's time: no response with a Date header yet (an endpoint that never sends one needs clockSync: 'none', and this machine's clock within the coordinator's clockSkewMs)";
      case 'uncertain':
        return `DynamoDB's time is known only to +/-${Math.round(d.errorMs)} ms, more than maxClockErrorMs (${maxErrorMs} ms): responses are slow, or too few yet`;
      case 'jumped':
        return `DynamoDB's time, measured on this machine's monotonic clock, jumped by ${Math.round(d.jumpMs)} ms (the machine was suspended, or the server's clock stepped)`;
    }
  }
}

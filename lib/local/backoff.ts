/**
 * The waits of a loop that retries a failing request, and how often it tells of the failures: what
 * keeps a fault that lasts (DynamoDB Local gone, a request it refuses) from being retried in a hot
 * loop and logged at each try, while still seen for as long as it lasts.
 */

/** The wait after `failures` failures in a row (1 or more): `firstMs`, twice as long after each later one, up to `maxMs`. */
export const backoffMs = (firstMs: number, maxMs: number, failures: number): number => Math.min(maxMs, firstMs * 2 ** (failures - 1));

/**
 * One loop's run of failures in a row: each failure's wait before the next try (backoffMs), and
 * whether to tell of it: the run's 1st, 2nd, 4th, 8th … failure, ever more rarely. A success ends
 * the run: the next failure waits `firstMs` and is told.
 */
export class Backoff {
  private failures = 0;
  /** The failure of the run told next. */
  private tellAt = 1;

  constructor(
    private readonly firstMs: number,
    private readonly maxMs: number,
  ) {}

  /** One more failure: the wait before the next try, and whether this one is told. */
  failed(): { waitMs: number; tell: boolean } {
    const n = ++this.failures;
    const tell = n === this.tellAt;
    if (tell) this.tellAt *= 2;
    return { waitMs: backoffMs(this.firstMs, this.maxMs, n), tell };
  }

  /** A try succeeded: the run of failures is over. */
  succeeded(): void {
    this.failures = 0;
    this.tellAt = 1;
  }
}

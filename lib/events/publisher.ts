import { systemClock, type Clock } from '../clock.js';
import { PutEventsCommand, type EventBridgeClient, type PutEventsRequestEntry, type PutEventsResultEntry } from '@aws-sdk/client-eventbridge';
import { EVENT_SOURCE, type ConclaveEvent } from './schemas.js';

/** PutEvents takes at most 10 entries per call… */
export const MAX_ENTRIES_PER_CALL = 10;
/** …and at most 256 KB of entries per call (and so per entry). */
export const MAX_CALL_BYTES = 256 * 1024;

/**
 * The most one publish takes (publishEvents): then the call under way is abandoned, no
 * other is started, and what is not published fails (PUBLISH_TIMEOUT), for the stream handlers to
 * defer to the timer queue. A healthy PutEvents answers in tens of milliseconds. Unbounded, an
 * EventBridge that accepted connections and never answered held a record 18.6 s (3 attempts here,
 * each the client's 3 tries of 2 s then: lib/functions/requests.ts), past the margin a batch keeps
 * before its deadline (lib/functions/lambda.ts BATCH_DEADLINE_MARGIN_MS, 10 s then), which counts
 * on one stuck request giving up within it: the record ran into the Lambda timeout and its batch
 * ran again. Bounded, a record's publishing fits in that margin as one stuck request does.
 */
export const PUBLISH_WITHIN_MS = 5_000;

/** The errorCode of the events a publish had no time left for (PUBLISH_WITHIN_MS). */
export const PUBLISH_TIMEOUT = 'PublishTimeout';

export interface PublishOptions {
  /** Attempts per event, the first included. @default 3 */
  maxAttempts?: number;
  /** Wait before the second attempt; doubled before each further one. @default 100 */
  backoffMs?: number;
  /** Whose time the backoff and the bound (PUBLISH_WITHIN_MS) run on (tests and the simulator pass theirs). @default systemClock */
  clock?: Pick<Clock, 'sleep' | 'setTimer'>;
  /** Each entry's `Resources`: the deployment's leases table ARN, which rules on a shared bus match. @default none */
  resources?: readonly string[];
}

export interface FailedEvent {
  event: ConclaveEvent;
  /** PutEvents' per-entry ErrorCode, the name of a whole-call error, `EntryTooLarge`, or PUBLISH_TIMEOUT. */
  errorCode: string;
  errorMessage: string;
  /** The call failed, not the entry alone: it threw (no answer within its tries, throttled, the network, the call refused), or the publish ran out of time (PUBLISH_TIMEOUT). */
  wholeCall?: true;
}

export interface PublishResult {
  published: number;
  failed: FailedEvent[];
}

/** Some events could not be published after every attempt; a stream handler throws it so the record is retried. */
export class PublishError extends Error {
  override readonly name = 'PublishError';
  constructor(
    readonly failed: readonly FailedEvent[],
    readonly published: number,
  ) {
    const shown = failed.slice(0, 5).map((f) => `${f.event.detailType} ${f.event.detail.id}: ${f.errorCode} ${f.errorMessage}`);
    const more = failed.length > shown.length ? `; and ${failed.length - shown.length} more` : '';
    super(`${failed.length} of ${failed.length + published} events could not be published to EventBridge: ${shown.join('; ')}${more}`);
  }

  /** The ids of the events that were not published. */
  get eventIds(): string[] {
    return this.failed.map((f) => f.event.detail.id);
  }

  /**
   * Whether EventBridge failed the calls, not only some entries: a call failed whole (wholeCall:
   * no answer, throttled, the network, the call refused, the publish out of time) or an entry was
   * throttled. Another publish now would most likely wait as long and fail alike: the stream
   * handlers defer their invocation's later events without a call (lib/functions/core.ts).
   */
  get outage(): boolean {
    return this.failed.some((f) => f.wholeCall || f.errorCode === 'ThrottlingException');
  }
}

/** The PutEvents entry of an event: its time is the change's, not the publishing's; `resources`, the deployment's leases table ARN. */
export function toEntry(busName: string, event: ConclaveEvent, resources: readonly string[] = []): PutEventsRequestEntry {
  return {
    EventBusName: busName,
    Source: EVENT_SOURCE,
    DetailType: event.detailType,
    Detail: JSON.stringify(event.detail),
    Time: new Date(event.detail.time),
    Resources: [...resources],
  };
}

const utf8 = (s: string | undefined): number => (s === undefined ? 0 : Buffer.byteLength(s, 'utf8'));

/** An entry's size as EventBridge counts it (docs: "Calculating PutEvents event entry size"). */
export function entrySize(e: PutEventsRequestEntry): number {
  return (e.Time ? 14 : 0) + utf8(e.Source) + utf8(e.DetailType) + utf8(e.Detail) + (e.Resources ?? []).reduce((n, r) => n + utf8(r), 0);
}

interface Item {
  event: ConclaveEvent;
  entry: PutEventsRequestEntry;
  size: number;
}

/** Consecutive batches of at most 10 entries and 256 KB each. */
function batches(items: readonly Item[]): Item[][] {
  const out: Item[][] = [];
  let cur: Item[] = [];
  let bytes = 0;
  for (const item of items) {
    if (cur.length === MAX_ENTRIES_PER_CALL || (cur.length > 0 && bytes + item.size > MAX_CALL_BYTES)) {
      out.push(cur);
      cur = [];
      bytes = 0;
    }
    cur.push(item);
    bytes += item.size;
  }
  if (cur.length) out.push(cur);
  return out;
}

/** Why an entry was not published; undefined where it was. */
type Failure = Omit<FailedEvent, 'event'>;

/**
 * One PutEvents call; a whole-call error (throttling, a missing bus, the network) fails every entry
 * of it, and so does `signal` aborting it (the publish out of time: `timedOut`).
 */
async function send(client: EventBridgeClient, batch: readonly Item[], signal: AbortSignal, timedOut: Failure): Promise<(Failure | undefined)[]> {
  let results: PutEventsResultEntry[];
  try {
    const r = await client.send(new PutEventsCommand({ Entries: batch.map((i) => i.entry) }), { abortSignal: signal });
    results = r.Entries ?? [];
  } catch (e) {
    const err = e as Error;
    const f: Failure = signal.aborted ? timedOut : { errorCode: err.name || 'Error', errorMessage: err.message, wholeCall: true };
    return batch.map(() => f);
  }
  // Results come in the order of the entries sent.
  return batch.map((_, i): Failure | undefined => {
    const r = results[i];
    if (r?.ErrorCode) return { errorCode: r.ErrorCode, errorMessage: r.ErrorMessage ?? '' };
    if (r?.EventId) return undefined;
    // Not said either way: publish again (consumers drop duplicates by id) rather than lose it.
    return { errorCode: 'MissingResult', errorMessage: `PutEvents returned no result for entry ${i}` };
  });
}

/**
 * Publishes `events` to bus `busName`: batches of ≤ 10 entries and ≤ 256 KB; the entries that come
 * back with an ErrorCode (or whose whole call failed) are sent again, and only they, after a
 * doubling backoff, up to `maxAttempts` per event, all within PUBLISH_WITHIN_MS: then the call
 * under way is abandoned and no other started. What still fails is returned, never thrown.
 *
 * The client's own retries (the SDK retries throttled and unanswered calls) come on top of these,
 * within the same bound.
 */
export async function publishEvents(client: EventBridgeClient, busName: string, events: readonly ConclaveEvent[], opts: PublishOptions = {}): Promise<PublishResult> {
  const maxAttempts = Math.max(1, opts.maxAttempts ?? 3);
  const backoffMs = opts.backoffMs ?? 100;
  const clock = opts.clock ?? systemClock;

  const failed: FailedEvent[] = [];
  let pending: Item[] = [];
  for (const event of events) {
    const entry = toEntry(busName, event, opts.resources);
    const size = entrySize(entry);
    if (size > MAX_CALL_BYTES) failed.push({ event, errorCode: 'EntryTooLarge', errorMessage: `the entry is ${size} bytes; PutEvents takes at most ${MAX_CALL_BYTES}` });
    else pending.push({ event, entry, size });
  }

  // the bound: the call under way aborted, the backoff cut short, no call started after it
  const bound = new AbortController();
  const timer = clock.setTimer(PUBLISH_WITHIN_MS, () => bound.abort(), { background: true });
  const timedOut: Failure = { errorCode: PUBLISH_TIMEOUT, errorMessage: `no answer within ${PUBLISH_WITHIN_MS} ms`, wholeCall: true };
  let published = 0;
  try {
    for (let attempt = 1; pending.length > 0; attempt++) {
      const retry: (Failure & { item: Item })[] = [];
      for (const batch of batches(pending)) {
        const outcomes = bound.signal.aborted ? batch.map(() => timedOut) : await send(client, batch, bound.signal, timedOut);
        outcomes.forEach((f, i) => (f ? retry.push({ ...f, item: batch[i]! }) : published++));
      }
      if (retry.length === 0) break;
      if (attempt < maxAttempts && !bound.signal.aborted) await clock.sleep(backoffMs * 2 ** (attempt - 1), bound.signal);
      if (attempt >= maxAttempts || bound.signal.aborted) {
        failed.push(...retry.map(({ item, ...f }) => ({ event: item.event, ...f })));
        break;
      }
      pending = retry.map((r) => r.item);
    }
  } finally {
    timer.cancel();
  }
  return { published, failed };
}

/** publishEvents, throwing a PublishError (which lists them) when any event could not be published. */
export async function publishOrThrow(client: EventBridgeClient, busName: string, events: readonly ConclaveEvent[], opts: PublishOptions = {}): Promise<void> {
  const r = await publishEvents(client, busName, events, opts);
  if (r.failed.length) throw new PublishError(r.failed, r.published);
}

import { systemClock, type Clock } from '../clock.js';
import { PutEventsCommand, type EventBridgeClient, type PutEventsRequestEntry, type PutEventsResultEntry } from '@aws-sdk/client-eventbridge';
import { EVENT_SOURCE, type ConclaveEvent } from './schemas.js';

/** PutEvents takes at most 10 entries per call… */
export const MAX_ENTRIES_PER_CALL = 10;
/** …and at most 256 KB of entries per call (and so per entry). */
export const MAX_CALL_BYTES = 256 * 1024;

export interface PublishOptions {
  /** Attempts per event, the first included. @default 3 */
  maxAttempts?: number;
  /** Wait before the second attempt; doubled before each further one. @default 100 */
  backoffMs?: number;
  /** Whose time the backoff waits on (tests and the simulator pass theirs). @default systemClock */
  clock?: Pick<Clock, 'sleep'>;
  /** Each entry's `Resources`: the deployment's leases table ARN, which rules on a shared bus match. @default none */
  resources?: readonly string[];
}

export interface FailedEvent {
  event: ConclaveEvent;
  /** PutEvents' per-entry ErrorCode, the name of a whole-call error, or `EntryTooLarge`. */
  errorCode: string;
  errorMessage: string;
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

type Outcome = { ok: true } | { ok: false; errorCode: string; errorMessage: string };

/** One PutEvents call; a whole-call error (throttling, a missing bus, the network) fails every entry of it. */
async function send(client: EventBridgeClient, batch: readonly Item[]): Promise<Outcome[]> {
  let results: PutEventsResultEntry[];
  try {
    const r = await client.send(new PutEventsCommand({ Entries: batch.map((i) => i.entry) }));
    results = r.Entries ?? [];
  } catch (e) {
    const err = e as Error;
    return batch.map(() => ({ ok: false, errorCode: err.name || 'Error', errorMessage: err.message }));
  }
  // Results come in the order of the entries sent.
  return batch.map((_, i): Outcome => {
    const r = results[i];
    if (r?.ErrorCode) return { ok: false, errorCode: r.ErrorCode, errorMessage: r.ErrorMessage ?? '' };
    if (r?.EventId) return { ok: true };
    // Not said either way: publish again (consumers drop duplicates by id) rather than lose it.
    return { ok: false, errorCode: 'MissingResult', errorMessage: `PutEvents returned no result for entry ${i}` };
  });
}

/**
 * Publishes `events` to bus `busName`: batches of ≤ 10 entries and ≤ 256 KB; the entries that come
 * back with an ErrorCode (or whose whole call failed) are sent again, and only they, after a
 * doubling backoff, up to `maxAttempts` per event. What still fails is returned, never thrown.
 *
 * The client's own retries (the SDK retries throttled calls) come on top of these.
 */
export async function publishEvents(client: EventBridgeClient, busName: string, events: readonly ConclaveEvent[], opts: PublishOptions = {}): Promise<PublishResult> {
  const maxAttempts = Math.max(1, opts.maxAttempts ?? 3);
  const backoffMs = opts.backoffMs ?? 100;
  const clock = opts.clock ?? systemClock;
  const sleep = (ms: number) => clock.sleep(ms);

  const failed: FailedEvent[] = [];
  let pending: Item[] = [];
  for (const event of events) {
    const entry = toEntry(busName, event, opts.resources);
    const size = entrySize(entry);
    if (size > MAX_CALL_BYTES) failed.push({ event, errorCode: 'EntryTooLarge', errorMessage: `the entry is ${size} bytes; PutEvents takes at most ${MAX_CALL_BYTES}` });
    else pending.push({ event, entry, size });
  }

  let published = 0;
  for (let attempt = 1; pending.length > 0; attempt++) {
    const retry: { item: Item; errorCode: string; errorMessage: string }[] = [];
    for (const batch of batches(pending)) {
      const outcomes = await send(client, batch);
      outcomes.forEach((o, i) => {
        if (o.ok) published++;
        else retry.push({ item: batch[i]!, errorCode: o.errorCode, errorMessage: o.errorMessage });
      });
    }
    if (retry.length === 0) break;
    if (attempt >= maxAttempts) {
      failed.push(...retry.map((r) => ({ event: r.item.event, errorCode: r.errorCode, errorMessage: r.errorMessage })));
      break;
    }
    await sleep(backoffMs * 2 ** (attempt - 1));
    pending = retry.map((r) => r.item);
  }
  return { published, failed };
}

/** publishEvents, throwing a PublishError (which lists them) when any event could not be published. */
export async function publishOrThrow(client: EventBridgeClient, busName: string, events: readonly ConclaveEvent[], opts: PublishOptions = {}): Promise<void> {
  const r = await publishEvents(client, busName, events, opts);
  if (r.failed.length) throw new PublishError(r.failed, r.published);
}

import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { EventBridgeClient } from '@aws-sdk/client-eventbridge';
import { MAX_ENTRIES_PER_CALL } from '../events/publisher.js';
import { systemClock, type Clock } from '../clock.js';

/** One entry a PutEvents call delivered, as the local bus read it off the wire. */
export interface LocalBusEntry {
  /** The id the bus gave the event (EventBridge's EventId). */
  eventId: string;
  source: string;
  detailType: string;
  /** The parsed `Detail`: a JSON object (an entry whose Detail is not one is refused). */
  detail: unknown;
  /** ISO time: the entry's `Time`, else when the bus received it. */
  time: string;
  eventBusName: string;
  resources: string[];
}

/** The event as EventBridge hands it to a rule's target (Lambda's `EventBridgeEvent`). */
export interface EventBridgeEnvelope {
  version: '0';
  id: string;
  'detail-type': string;
  source: string;
  account: string;
  time: string;
  region: string;
  resources: string[];
  detail: unknown;
}

export interface LocalEventBusOptions {
  /** Whose time stamps the events it receives. @default systemClock */
  clock?: Clock;
  /** Called once for each entry accepted, in the order received; if it throws, that entry fails (`InternalFailure`). */
  onEvent?: (entry: LocalBusEntry) => void;
  /** Fail this entry (`InternalFailure`) instead of accepting it: to exercise retries. */
  failNext?: (entry: LocalBusEntry) => boolean;
  /** Fail the whole call, e.g. `{ type: 'ThrottlingException', message: 'Rate exceeded' }` (HTTP 400). */
  rejectCall?: (entries: readonly LocalBusEntry[]) => { type: string; message: string } | undefined;
}

export interface LocalEventBus {
  /** `http://127.0.0.1:<port>`: an EventBridgeClient's `endpoint`. */
  endpoint: string;
  stop(): Promise<void>;
}

/** What the AWS SDK sends for one PutEvents entry (AWS JSON 1.1: timestamps in epoch seconds). */
interface WireEntry {
  Source?: string;
  DetailType?: string;
  Detail?: string;
  Time?: number | string;
  EventBusName?: string;
  Resources?: string[];
}

const JSON_11 = 'application/x-amz-json-1.1';

function reply(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': JSON_11 });
  res.end(JSON.stringify(body));
}

const awsError = (res: ServerResponse, status: number, type: string, message: string) => reply(res, status, { __type: type, message });

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

function timeOf(t: WireEntry['Time'], received: Date): string {
  const d = t === undefined ? received : typeof t === 'number' ? new Date(t * 1000) : new Date(t);
  return (Number.isNaN(d.getTime()) ? received : d).toISOString();
}

function detailOf(w: WireEntry): unknown {
  try {
    return JSON.parse(w.Detail ?? '') as unknown;
  } catch {
    return undefined;
  }
}

/** Why EventBridge would refuse this entry, if it would. */
function invalid(w: WireEntry): { ErrorCode: string; ErrorMessage: string } | undefined {
  if (!w.Source || !w.DetailType) return { ErrorCode: 'InvalidArgument', ErrorMessage: 'Source and DetailType are required' };
  const detail = detailOf(w);
  if (detail !== null && typeof detail === 'object' && !Array.isArray(detail)) return undefined;
  return { ErrorCode: 'MalformedDetail', ErrorMessage: 'Detail is not a JSON object' };
}

/**
 * A local stand-in for an EventBridge bus, for local mode and tests: serves PutEvents (AWS JSON
 * 1.1) on 127.0.0.1 on a free port, so the very same EventBridgeClient and publisher run against
 * it (`localEventBridgeClient(endpoint)`). Like EventBridge it rejects a call of more than 10
 * entries and an entry whose Detail is not a JSON object; it does not check signatures.
 */
export async function startLocalEventBus(opts: LocalEventBusOptions = {}): Promise<LocalEventBus> {
  const server = createServer((req, res) => {
    handle(req, res).catch((e: unknown) => awsError(res, 500, 'InternalException', (e as Error).message));
  });

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const body = await readBody(req);
    const target = req.headers['x-amz-target'];
    if (req.method !== 'POST' || target !== 'AWSEvents.PutEvents') {
      return awsError(res, 400, 'UnknownOperationException', `the local event bus serves only POST / with X-Amz-Target: AWSEvents.PutEvents (got ${req.method} ${String(target)})`);
    }
    let wire: WireEntry[];
    try {
      wire = (JSON.parse(body) as { Entries?: WireEntry[] }).Entries ?? [];
    } catch {
      return awsError(res, 400, 'SerializationException', 'the request body is not JSON');
    }
    if (wire.length < 1 || wire.length > MAX_ENTRIES_PER_CALL) {
      return awsError(res, 400, 'ValidationException', `1 validation error detected: Value at 'entries' failed to satisfy constraint: Member must have length between 1 and ${MAX_ENTRIES_PER_CALL} (got ${wire.length})`);
    }
    const received = new Date((opts.clock ?? systemClock).now());
    const entries = wire.map(
      (w): LocalBusEntry => ({
        eventId: randomUUID(),
        source: w.Source ?? '',
        detailType: w.DetailType ?? '',
        detail: detailOf(w),
        time: timeOf(w.Time, received),
        eventBusName: w.EventBusName ?? 'default',
        resources: w.Resources ?? [],
      }),
    );
    const rejected = opts.rejectCall?.(entries);
    if (rejected) return awsError(res, 400, rejected.type, rejected.message);

    let failedCount = 0;
    const results = entries.map((entry, i) => {
      const refused = invalid(wire[i]!) ?? (opts.failNext?.(entry) ? { ErrorCode: 'InternalFailure', ErrorMessage: 'injected failure (local event bus)' } : undefined);
      if (refused) {
        failedCount++;
        return refused;
      }
      try {
        opts.onEvent?.(entry);
      } catch (e) {
        // Fails this entry only: a whole-call error would make the publisher resend the entries already delivered.
        failedCount++;
        return { ErrorCode: 'InternalFailure', ErrorMessage: `onEvent threw: ${(e as Error).message}` };
      }
      return { EventId: entry.eventId };
    });
    reply(res, 200, { FailedEntryCount: failedCount, Entries: results });
  }

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  return {
    endpoint: `http://127.0.0.1:${port}`,
    stop: () =>
      new Promise<void>((resolve, reject) => {
        server.close((e) => (e ? reject(e) : resolve()));
        server.closeAllConnections(); // the SDK keeps connections alive
      }),
  };
}

/** An EventBridgeClient for the local bus: region `local`, placeholder credentials (never checked). */
export function localEventBridgeClient(endpoint: string, opts: { maxAttempts?: number } = {}): EventBridgeClient {
  return new EventBridgeClient({
    endpoint,
    region: 'local',
    credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
    ...(opts.maxAttempts ? { maxAttempts: opts.maxAttempts } : {}),
  });
}

/** The event as a rule's target receives it, e.g. to write local mode's JSON lines. */
export function envelopeOf(entry: LocalBusEntry, where: { account?: string; region?: string } = {}): EventBridgeEnvelope {
  return {
    version: '0',
    id: entry.eventId,
    'detail-type': entry.detailType,
    source: entry.source,
    account: where.account ?? '000000000000',
    time: entry.time,
    region: where.region ?? 'local',
    resources: entry.resources,
    detail: entry.detail,
  };
}

/** `conclave events`: the local runtime's events file (JSON lines), validated, filtered, optionally followed. */
import { open, readFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { StringDecoder } from 'node:string_decoder';
import * as z from 'zod';
import { parseEvent, type ConclaveEvent, type DetailType } from '../events/schemas.js';
import { ValidationError, parse } from '../schemas/validation.js';
import type { OutputFormat } from './args.js';
import type { Pace, Sink } from './context.js';
import { CliError } from './errors.js';
import { clean, jsonText } from './format.js';

/** One line of the file, as lib/local/runtime.ts appends it. */
const EventLine = z.object({
  time: z.iso.datetime(),
  source: z.string().min(1),
  detailType: z.string().min(1),
  // (z.unknown() refuses a missing one in zod's words, "expected nonoptional")
  detail: z.custom<unknown>((v) => v !== undefined, 'is required: the event\'s detail, an object (each line is {"time", "source", "detailType", "detail"}, as the local runtime writes it)'),
});

export interface EventRecord {
  time: string;
  source: string;
  detailType: DetailType;
  detail: ConclaveEvent['detail'];
}

/** A line as an event, or why it is not one. */
export function parseLine(text: string): { ok: true; record: EventRecord } | { ok: false; reason: string } {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (e) {
    return { ok: false, reason: `not JSON (${(e as Error).message})` };
  }
  try {
    const line = parse(EventLine, raw, 'event line');
    const event = parseEvent(line.detailType, line.detail);
    return { ok: true, record: { time: line.time, source: line.source, detailType: event.detailType, detail: event.detail } };
  } catch (e) {
    if (e instanceof ValidationError) return { ok: false, reason: e.message };
    throw e;
  }
}

/** The fields that matter for each kind, in one line. */
export function summary(e: ConclaveEvent): string {
  switch (e.detailType) {
    case 'Leader Elected': {
      const d = e.detail;
      return `${d.holder} leads, fencing token ${d.fencingToken}${d.previousHolder ? `, previous ${d.previousHolder}` : ''}${d.electedBy ? `, by ${d.electedBy}` : ''}${d.strategy ? ` under ${d.strategy}` : ''}`;
    }
    case 'Leader Changed':
      return `${e.detail.previousHolder} -> ${e.detail.holder}, fencing token ${e.detail.fencingToken}`;
    case 'Leader Preemption Requested':
      return `${e.detail.holder} asked to yield to ${e.detail.preferredHolder}`;
    case 'Lease Released':
      // an operator's delete of the held row: the term ended with it, not by its holder's release
      if (e.detail.rowDeleted) return `row deleted while ${e.detail.previousHolder} held it (fencing token ${e.detail.fencingToken}): the term ended with it`;
      return `${e.detail.previousHolder} released (fencing token ${e.detail.fencingToken})`;
    case 'Leader Lost':
      return `${e.detail.previousHolder}'s term ended (fencing token ${e.detail.fencingToken}): ${e.detail.source} reported ${e.detail.platformId} stopped: ${e.detail.reason}`;
    case 'Election Started':
      return `${e.detail.electionId}${e.detail.reelection ? `, re-election while ${e.detail.holder} leads` : `, vacant: ${e.detail.vacancy}`}, acks until ${e.detail.deadline}`;
    case 'Election Failed':
      return `${e.detail.reason}: ${e.detail.message}`;
    case 'Candidate Joined':
      return `${e.detail.candidate} (emulation ${e.detail.emulationVersion}, binary ${e.detail.binaryVersion}, prefers ${e.detail.preferredStrategies.join(', ')})`;
    case 'Candidate Expired':
      return `${e.detail.candidate} (last renewed ${e.detail.lastRenewTime})`;
    default: {
      // A detail-type added since: its own fields, as they are.
      const d = (e as { detail: Record<string, unknown> }).detail;
      return Object.entries(d)
        .filter(([k]) => !['id', 'lease', 'time'].includes(k))
        .map(([k, v]) => `${k} ${typeof v === 'string' ? v : JSON.stringify(v)}`)
        .join(', ');
    }
  }
}

const TYPE_WIDTH = 'Leader Preemption Requested'.length;

export interface EventsArgs {
  eventsFile: string;
  follow: boolean;
  lease?: string | undefined;
  type?: DetailType | undefined;
}

/** Reads lines as they come, numbering them; a partial last line waits for its newline. */
class LineReader {
  private carry = '';
  private lineNo = 0;
  private decoder = new StringDecoder('utf8'); // a character split across two reads stays whole
  constructor(private readonly emit: (text: string, lineNo: number) => void) {}
  reset(): void {
    this.carry = '';
    this.lineNo = 0;
    this.decoder = new StringDecoder('utf8');
  }
  push(chunk: Buffer | string, final = false): void {
    const text = typeof chunk === 'string' ? chunk : this.decoder.write(chunk);
    const parts = (this.carry + text).split('\n');
    this.carry = final ? '' : parts.pop()!;
    for (const p of parts) {
      this.lineNo++;
      if (p.trim()) this.emit(p, this.lineNo);
    }
  }
}

const missing = (file: string) =>
  new CliError(
    `no events file at ${resolve(file)} - the local system (\`npx conclave-local\`) writes .local/events.jsonl in the folder it runs in and prints its path as CONCLAVE_EVENTS_FILE: run this in that folder, or pass --events-file PATH (or set CONCLAVE_EVENTS_FILE); on AWS the events go to EventBridge, not to a file`,
  );

const isMissing = (e: unknown) => e instanceof Error && (e as { code?: string }).code === 'ENOENT';

const codeOf = (e: unknown) => (e instanceof Error ? (e as { code?: string }).code : undefined);

/** A path that cannot be read as the events file (a folder, a file not readable here): what it is and the fix, or `e` as it is. */
function unreadable(file: string, e: unknown): unknown {
  const code = codeOf(e);
  if (code === 'EISDIR') return new CliError(`--events-file ${resolve(file)} is a folder, not the events file - pass the file in it, such as ${join(file, 'events.jsonl')} (\`conclave-local --events-dir DIR\` writes DIR/events.jsonl)`);
  if (code === 'EACCES' || code === 'EPERM') return new CliError(`--events-file ${resolve(file)} cannot be read (${code}) - run as a user who may read it, or pass another --events-file`);
  return e;
}

/** `conclave events [--follow] [--lease NAME] [--type TYPE]`. */
export async function events(io: { sink: Sink; output: OutputFormat }, args: EventsArgs, pace: Pace): Promise<void> {
  const kept: EventRecord[] = [];
  const show = (r: EventRecord) => {
    if (io.output === 'json' && !args.follow) kept.push(r);
    else if (io.output === 'json') io.sink.out(jsonText(r));
    else io.sink.out(clean(`${r.time}  ${r.detailType.padEnd(TYPE_WIDTH)}  ${(r.detail as { lease: string }).lease}  ${summary({ detailType: r.detailType, detail: r.detail } as ConclaveEvent)}`));
  };
  const leases = new Set<string>(); // of the valid events read: a --lease none of them names is told (a typo, not an empty history)
  const reader = new LineReader((text, lineNo) => {
    const p = parseLine(text);
    if (!p.ok) return io.sink.err(clean(`${args.eventsFile}:${lineNo}: skipped: ${p.reason}`));
    leases.add((p.record.detail as { lease: string }).lease);
    if (args.type && p.record.detailType !== args.type) return;
    if (args.lease && (p.record.detail as { lease: string }).lease !== args.lease) return;
    show(p.record);
  });

  if (!args.follow) {
    let text: string;
    try {
      text = await readFile(args.eventsFile, 'utf8');
    } catch (e) {
      throw isMissing(e) ? missing(args.eventsFile) : unreadable(args.eventsFile, e);
    }
    reader.push(text, true);
    if (io.output === 'json') io.sink.out(jsonText(kept, 2));
    // (a file with no event yet is quiet: nothing has happened to any lease)
    if (args.lease !== undefined && leases.size > 0 && !leases.has(args.lease)) {
      io.sink.err(clean(`note: no event of lease ${args.lease} in ${args.eventsFile}; leases with events there: ${[...leases].sort().join(', ')}`));
    }
    return;
  }
  // (a folder opens, and fails at its first read)
  await follow(args.eventsFile, reader, io.sink, pace).catch((e: unknown) => {
    throw unreadable(args.eventsFile, e);
  });
}

/** Reads what is there, then what is appended, until the signal aborts. */
async function follow(file: string, reader: LineReader, sink: Sink, pace: Pace): Promise<void> {
  let offset = 0;
  let waiting = false;
  while (!pace.signal.aborted) {
    let handle;
    try {
      handle = await open(file, 'r');
    } catch (e) {
      if (!isMissing(e)) throw e;
      if (!waiting) sink.err(`waiting for ${resolve(file)} to appear (\`npx conclave-local\` writes it)...`);
      waiting = true;
      await pace.sleep(250);
      continue;
    }
    try {
      const { size } = await handle.stat();
      if (size < offset) {
        sink.err(`${file} was truncated; reading it from the start`);
        offset = 0;
        reader.reset();
      }
      if (size > offset) {
        const buf = Buffer.alloc(size - offset);
        const { bytesRead } = await handle.read(buf, 0, buf.length, offset);
        offset += bytesRead;
        reader.push(buf.subarray(0, bytesRead));
      }
    } finally {
      await handle.close();
    }
    await pace.sleep(250);
  }
}

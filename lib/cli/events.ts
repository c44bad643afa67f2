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
  // the system that wrote it (absent on the lines of versions before 0.2.0)
  tablePrefix: z.string().optional(),
  endpoint: z.string().optional(),
});

/** The local system a line came from: its table prefix and DynamoDB endpoint. */
export interface EventSystem {
  tablePrefix: string;
  endpoint: string;
}

export interface EventRecord {
  time: string;
  source: string;
  detailType: DetailType;
  detail: ConclaveEvent['detail'];
}

/** A line as an event, or why it is not one. */
export function parseLine(text: string): { ok: true; record: EventRecord; system?: EventSystem } | { ok: false; reason: string } {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (e) {
    return { ok: false, reason: `not JSON (${(e as Error).message})` };
  }
  try {
    const line = parse(EventLine, raw, 'event line');
    const event = parseEvent(line.detailType, line.detail);
    const record: EventRecord = { time: line.time, source: line.source, detailType: event.detailType, detail: event.detail };
    return line.tablePrefix !== undefined && line.endpoint !== undefined ? { ok: true, record, system: { tablePrefix: line.tablePrefix, endpoint: line.endpoint } } : { ok: true, record };
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

/** Reads lines as they come, numbering them; a partial last line waits for its newline. Each push's whole lines are handed on together. */
class LineReader {
  private carry = '';
  private lineNo = 0;
  private decoder = new StringDecoder('utf8'); // a character split across two reads stays whole
  constructor(private readonly emit: (lines: Array<{ text: string; lineNo: number }>) => void) {}
  reset(): void {
    this.carry = '';
    this.lineNo = 0;
    this.decoder = new StringDecoder('utf8');
  }
  push(chunk: Buffer | string, final = false): void {
    const text = typeof chunk === 'string' ? chunk : this.decoder.write(chunk);
    const parts = (this.carry + text).split('\n');
    this.carry = final ? '' : parts.pop()!;
    const lines: Array<{ text: string; lineNo: number }> = [];
    for (const p of parts) {
      this.lineNo++;
      if (p.trim()) lines.push({ text: p, lineNo: this.lineNo });
    }
    this.emit(lines);
  }
}

/** This machine, however a URL spells it: localhost, ::1, 127.x.y.z (URL has made 127.1 and LOCALHOST so already). */
const isLoopback = (hostname: string) => hostname === 'localhost' || hostname === '[::1]' || /^127(\.\d{1,3}){3}$/.test(hostname);

/**
 * An endpoint as compared: its URL's scheme, host, port and path, without a trailing slash (the
 * text as it is, if no URL). A loopback host is one host however spelt: local mode records
 * http://127.0.0.1:PORT, an operator types http://localhost:PORT for the same DynamoDB Local.
 */
function sameEndpoint(a: string, b: string): boolean {
  const norm = (u: string) => {
    try {
      const url = new URL(u);
      const host = isLoopback(url.hostname) ? `loopback${url.port ? `:${url.port}` : ''}` : url.host;
      return `${url.protocol}//${host}${url.pathname.replace(/\/+$/, '')}`;
    } catch {
      return u;
    }
  };
  return norm(a) === norm(b);
}

const systemText = (s: EventSystem) => `prefix ${s.tablePrefix} at ${s.endpoint}`;

/**
 * Which system's lines are shown: the one the command is pointed at (--table-prefix,
 * --endpoint, or their variables); what it is not pointed at is the latest system's that fits,
 * read off the last tagged line that does when the file is first read (or the first such line
 * after). Untagged lines (versions before 0.2.0 wrote them) are shown whatever the system.
 */
class SystemFilter {
  private chosen: EventSystem | undefined;
  readonly skipped = new Map<string, { system: EventSystem; lines: number }>();
  constructor(private readonly pointed: Partial<EventSystem>) {
    if (pointed.tablePrefix !== undefined && pointed.endpoint !== undefined) this.chosen = { tablePrefix: pointed.tablePrefix, endpoint: pointed.endpoint };
  }
  private fits(s: EventSystem): boolean {
    return (this.pointed.tablePrefix === undefined || s.tablePrefix === this.pointed.tablePrefix) && (this.pointed.endpoint === undefined || sameEndpoint(s.endpoint, this.pointed.endpoint));
  }
  /** Called with a batch's systems before its lines are judged: the last that fits is the one shown, if none is yet. */
  choose(systems: Array<EventSystem | undefined>): void {
    if (this.chosen !== undefined) return;
    this.chosen = systems.filter((s): s is EventSystem => s !== undefined && this.fits(s)).at(-1);
  }
  /** Whether a line of `system` is shown; one that is not is counted, and `first` is told the first of each other system. */
  shows(system: EventSystem | undefined, first: (s: EventSystem) => void): boolean {
    if (system === undefined) return true;
    if (this.chosen !== undefined && system.tablePrefix === this.chosen.tablePrefix && sameEndpoint(system.endpoint, this.chosen.endpoint)) return true;
    const key = `${system.tablePrefix}\n${system.endpoint}`;
    const other = this.skipped.get(key);
    if (other) other.lines++;
    else {
      this.skipped.set(key, { system, lines: 1 });
      first(system);
    }
    return false;
  }
  get shown(): EventSystem | undefined {
    return this.chosen;
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

/** How to see another system's lines. */
const seeOther = (s: EventSystem) => `--table-prefix ${s.tablePrefix} --endpoint ${s.endpoint}`;

/**
 * `conclave events [--follow] [--lease NAME] [--type TYPE]`: the lines of one local system,
 * `pointed` (the global --table-prefix and --endpoint, or CONCLAVE_TABLE_PREFIX and CONCLAVE_ENDPOINT,
 * as given: what is not given is the latest system's), the others' counted and told.
 */
export async function events(io: { sink: Sink; output: OutputFormat }, args: EventsArgs, pace: Pace, pointed: Partial<EventSystem> = {}): Promise<void> {
  const kept: EventRecord[] = [];
  const show = (r: EventRecord) => {
    if (io.output === 'json' && !args.follow) kept.push(r);
    else if (io.output === 'json') io.sink.out(jsonText(r));
    else io.sink.out(clean(`${r.time}  ${r.detailType.padEnd(TYPE_WIDTH)}  ${(r.detail as { lease: string }).lease}  ${summary({ detailType: r.detailType, detail: r.detail } as ConclaveEvent)}`));
  };
  const leases = new Set<string>(); // of the valid events shown: a --lease none of them names is told (a typo, not an empty history)
  const systems = new SystemFilter(pointed);
  const reader = new LineReader((lines) => {
    const parsed = lines.map((l) => ({ ...l, p: parseLine(l.text) }));
    systems.choose(parsed.map(({ p }) => (p.ok ? p.system : undefined)));
    for (const { p, lineNo } of parsed) {
      if (!p.ok) {
        io.sink.err(clean(`${args.eventsFile}:${lineNo}: skipped: ${p.reason}`));
        continue;
      }
      // following, each other system is told as it first appears (a new run, another prefix): read once, they are counted at the end
      if (!systems.shows(p.system, (s) => args.follow && io.sink.err(clean(`note: skipping the lines of another local system in ${args.eventsFile}: ${systemText(s)}${systems.shown ? ` (showing ${systemText(systems.shown)}'s)` : ''} - pass ${seeOther(s)} to see its lines`)))) continue;
      leases.add((p.record.detail as { lease: string }).lease);
      if (args.type && p.record.detailType !== args.type) continue;
      if (args.lease && (p.record.detail as { lease: string }).lease !== args.lease) continue;
      show(p.record);
    }
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
    if (systems.skipped.size > 0) {
      const others = [...systems.skipped.values()];
      const count = others.reduce((n, o) => n + o.lines, 0);
      io.sink.err(
        clean(
          `note: skipped ${count} line${count === 1 ? '' : 's'} of ${others.length === 1 ? 'another local system' : `${others.length} other local systems`} in ${args.eventsFile} (${others.map((o) => `${systemText(o.system)}: ${o.lines}`).join('; ')})${systems.shown ? `; shown: ${systemText(systems.shown)}'s` : ''} - pass ${seeOther(others.at(-1)!.system)} to see another's`,
        ),
      );
    }
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

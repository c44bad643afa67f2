import type { Platform } from '../schemas/platform.js';
import { displayWidth, graphemes, isEmoji } from './width.js';
/** Human forms of the tables' values: epoch ms become ages, rows become aligned columns. */

/**
 * Characters that act on a terminal instead of showing: C0 controls (ESC, newline, carriage
 * return, bell, …), DEL, C1 controls (U+009B is a CSI on some terminals), line and paragraph
 * separators; and those that show nothing yet change what a name is: format characters (the
 * bidirectional overrides and isolates that reorder what follows them, zero-width spaces and
 * joiners, the byte order mark, the soft hyphen, tag characters) and the other default-ignorable
 * code points (variation selectors, Hangul fillers), so `w1` and `w1` + U+200B never look alike.
 */
const CONTROL = /[\p{Cc}\u2028\u2029\p{Cf}\p{Default_Ignorable_Code_Point}]/u;
const NAMED: Record<string, string> = { '\n': '\\n', '\r': '\\r', '\t': '\\t', '\\': '\\\\' };

/** Text with nothing to escape: printable ASCII but the backslash. */
const PLAIN = /^[\x20-\x5b\x5d-\x7e]*$/;
/** A letter, digit or mark (non-ASCII ones are judged by lookAlike). */
const WORDLIKE = /^[\p{L}\p{N}\p{M}]$/u;
/** Scripts whose letters pass for no ASCII one (CJK, kana, Hangul), as the tables draw them (width.ts); not the fullwidth Latin forms, which are Latin. */
const EAST_ASIAN = /^[\p{scx=Han}\p{scx=Hiragana}\p{scx=Katakana}\p{scx=Hangul}\p{scx=Bopomofo}]$/u;
/** A precomposed Latin letter whose accent shows (é, ñ, Å): an ASCII letter and marks once decomposed, and the normal form itself. */
const ACCENTED = /^[A-Za-z]\p{M}+$/u;

/**
 * A non-ASCII letter, digit or mark that can pass for an ASCII one, or make a name look like another:
 * another script's (Cyrillic `о`, Greek `ο`, Armenian, Cherokee…), Latin ones without a visible
 * accent (`ı`, `ɑ`, the Kelvin sign), fullwidth and mathematical forms, other digits (`¹`, `١`),
 * and a combining mark (`e` + U+0301 looks like `é`, another string). Kept: CJK, kana and Hangul,
 * and a precomposed Latin letter whose accent shows.
 */
function lookAlike(c: string): boolean {
  if (c.charCodeAt(0) < 0x80 || !WORDLIKE.test(c) || EAST_ASIAN.test(c)) return false;
  return !(c.normalize('NFC') === c && ACCENTED.test(c.normalize('NFD')));
}

const escaped = (c: string): string => {
  const cp = c.codePointAt(0)!;
  return NAMED[c] ?? (cp > 0xffff ? `\\u{${cp.toString(16)}}` : `\\u${cp.toString(16).padStart(4, '0')}`);
};

/**
 * The one escaping function for text the tables hold: anything a worker (or whoever can write a
 * row or an event) wrote — identities, versions, reasons, messages — is shown with its control
 * and invisible characters escaped as `\n`, `\u001b`, `\u200b`, `\u{e0041}`, its look-alike
 * letters (lookAlike) as `\u043e`, and a backslash as `\\`, so it can neither drive the terminal,
 * forge a line, nor pass for another name (`w1\u200b` written with a backslash is shown
 * `w1\\u200b`). An emoji sequence (a ZWJ family, a flag, a symbol with VS16) is left whole: its
 * joiners and selectors draw one picture. Escape once, just before the output: escaped text
 * escaped again has its backslashes doubled.
 */
export function clean(text: string): string {
  if (PLAIN.test(text)) return text; // most text: nothing to escape
  return graphemes(text)
    .map((g) => (isEmoji(g) ? g : Array.from(g, (c) => (Object.hasOwn(NAMED, c) || CONTROL.test(c) || lookAlike(c) ? escaped(c) : c)).join('')))
    .join('');
}

/** `42s`, `5m10s`, `3h5m`, `2d4h`: the two largest units, floored. */
export function span(ms: number): string {
  const s = Math.floor(Math.abs(ms) / 1000);
  if (s < 60) return `${s}s`;
  const two = (a: number, ua: string, b: number, ub: string) => (b ? `${a}${ua}${b}${ub}` : `${a}${ua}`);
  if (s < 3600) return two(Math.floor(s / 60), 'm', s % 60, 's');
  if (s < 86_400) return two(Math.floor(s / 3600), 'h', Math.floor((s % 3600) / 60), 'm');
  return two(Math.floor(s / 86_400), 'd', Math.floor((s % 86_400) / 3600), 'h');
}

/** A past stamp as `3s ago`, a future one as `in 12s`. */
export function relative(at: number | undefined, now: number): string {
  if (at === undefined) return '-';
  return at <= now ? `${span(now - at)} ago` : `in ${span(at - now)}`;
}

/** An epoch-ms stamp with its age: `3s ago (2026-01-01T12:00:00.000Z)`. */
export const stamp = (at: number | undefined, now: number): string => (at === undefined ? '-' : `${relative(at, now)} (${new Date(at).toISOString()})`);

export const dash = (v: string | number | undefined): string => (v === undefined || v === '' ? '-' : String(v));

export interface Column<R> {
  header: string;
  cell(row: R): string;
  /** Styles the cell once escaped (watch's highlight): the only raw control sequences in a table. */
  decorate?(text: string, row: R): string;
}

/** Aligned columns, kubectl style: a header line, then one line per row, padded by the columns a terminal draws (width.ts). Cells are escaped, then decorated. */
export function table<R>(columns: readonly Column<R>[], rows: readonly R[]): string[] {
  const cells = [columns.map((c) => c.header), ...rows.map((r) => columns.map((c) => (c.decorate ? c.decorate(clean(c.cell(r)), r) : clean(c.cell(r)))))];
  const measured = cells.map((line) => line.map(displayWidth));
  const widths = columns.map((_, i) => Math.max(...measured.map((line) => line[i]!)));
  return cells.map((line, r) => line.map((v, i) => (i === line.length - 1 ? v : v + ' '.repeat(widths[i]! - measured[r]![i]!))).join('   ').trimEnd());
}

/** `label:  value` lines with the values aligned; values escaped. */
export function fields(pairs: readonly (readonly [string, string])[]): string[] {
  const width = Math.max(...pairs.map(([k]) => k.length)) + 1;
  return pairs.map(([k, v]) => `${`${k}:`.padEnd(width)}  ${clean(v)}`);
}

const ANSI = { bold: '1', inverse: '7', yellow: '33' } as const;

/** Wraps `text` in an ANSI style when `on`. */
export const style = (on: boolean, name: keyof typeof ANSI, text: string): string => (on ? `\x1b[${ANSI[name]}m${text}\x1b[0m` : text);

/** What JSON.stringify leaves raw that still acts on a terminal: DEL, C1 controls, separators, bidi controls. */
const JSON_RAW = /[\u007f-\u009f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g;

/** JSON text with every control character escaped (JSON.stringify escapes only C0): the same document once parsed. */
export const jsonText = (value: unknown, indent?: number): string =>
  JSON.stringify(value, null, indent).replace(JSON_RAW, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);

/** Clears the terminal and moves to its top: a watch frame replaces the previous one. */
export const CLEAR_SCREEN = '\x1b[H\x1b[2J';

/** Where a worker runs: `ecs <task ARN> (<zone>)`, `ec2 <instance id> (<zone>)`, or `-`. */
export const platformOf = (p: Platform | undefined): string => (p ? `${p.kind} ${p.id}${p.availabilityZone ? ` (${p.availabilityZone})` : ''}` : '-');

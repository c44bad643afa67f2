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
 * and a combining mark (`e` + U+0301 looks like `é`, another string). Kept: CJK, kana and Hangul
 * (judged by CJK_TWINS and mixedScripts), and a precomposed Latin letter whose accent shows.
 */
function lookAlike(c: string): boolean {
  if (c.charCodeAt(0) < 0x80 || !WORDLIKE.test(c) || EAST_ASIAN.test(c)) return false;
  return !(c.normalize('NFC') === c && ACCENTED.test(c.normalize('NFD')));
}

/**
 * Punctuation, symbols and spaces that pass for one ASCII character, as Unicode's confusables
 * (UTS #39 confusables.txt) map them, beyond those NFKC makes ASCII itself (fullwidth and small
 * forms, `․`, `;`): our own short list, not the whole file (its letters and digits are lookAlike's).
 */
const ASCII_TWIN = new RegExp(
  '[' +
    [
      '\\u2010-\\u2015\\u2043\\u2212\\u2796\\u2e3a\\u2e3b\\ufe58\\u06d4\\u2500\\u2501\\u23af', // - (hyphens, dashes, minus, box-drawing lines)
      '\\u2018\\u2019\\u201b\\u2032\\u2035\\u00b4\\u055a\\u055d\\u05f3\\u1fbd\\u1fbf\\u1ffd\\u1ffe\\u0384', // ' (quotes, primes, accents)
      '\\u201a\\u060d\\u066b', // ,
      '\\u201c\\u201d\\u201e\\u201f\\u2033\\u2036\\u02dd\\u05f4\\u3003', // "
      '\\u2044\\u2215\\u2571\\u27cb\\u29f8\\u1735\\u2041', // /
      '\\u2216\\u2572\\u27cd\\u29f5\\u29f9', // \
      '\\u2223\\u2502\\u2503\\u2758\\u23fd\\u05c0\\uffe8', // | and l
      '\\u0589\\u05c3\\u0703\\u0704\\u16ec\\u1803\\u1809\\u205a\\u2236\\ufe30', // :
      '\\u0701\\u0702\\ua60e', // .
      '\\u2039\\u276e\\u02c2\\u203a\\u276f\\u02c3', // < >
      '\\u2768\\u2769\\u2772\\u2773\\u3014\\u3015\\ufd3e\\ufd3f\\u2774\\u2775', // ( ) { }
      '\\u204e\\u066d\\u2217', // *
      '\\u16ed\\u2795', // +
      '\\u1400\\u2e40\\ua4ff', // =
      '\\u2053\\u02dc\\u1fc0\\u223c', // ~
      '\\u02c4\\u2038', // ^
      '\\u00d7\\u2715\\u2573\\u2a2f\\u2228\\u22c1\\u2229\\u22c2\\u222a\\u22c3\\u212e\\u2373\\u2374\\u237a\\u22a4', // x v n u e i p a T
    ].join('') +
    ']',
  'u',
);
const SPACE = /^\p{Zs}$/u;

/**
 * Passes for one ASCII character: a space other than U+0020, one NFKC makes ASCII (fullwidth and
 * small forms), or one of ASCII_TWIN. Wherever it stands: clean cannot tell our own sentences from
 * the values in them, so a dash between spaces in a holder's name (`a — b`) is escaped as one in
 * `a—b` is, and our own text is written in ASCII (`a - b`, `ms * 1000`).
 */
function asciiTwin(c: string): boolean {
  if (c.charCodeAt(0) < 0x80) return false;
  const n = c.normalize('NFKC');
  return SPACE.test(c) || (n.length === 1 && n.charCodeAt(0) >= 0x20 && n.charCodeAt(0) < 0x7f) || ASCII_TWIN.test(c);
}

/** The CJK scripts, as their letters' Script_Extensions name them. */
const CJK_SCRIPTS = { Han: /\p{scx=Han}/u, Hiragana: /\p{scx=Hiragana}/u, Katakana: /\p{scx=Katakana}/u, Hangul: /\p{scx=Hangul}/u, Bopomofo: /\p{scx=Bopomofo}/u } as const;
type CjkScript = keyof typeof CJK_SCRIPTS;
const scriptsOf = (c: string): Set<CjkScript> => new Set((Object.keys(CJK_SCRIPTS) as CjkScript[]).filter((k) => CJK_SCRIPTS[k].test(c)));

/**
 * Letters of the CJK scripts that pass for one another across them (confusables.txt; Chromium's
 * IDN spoof checks for ー, 一, ノ and 丿): each group's members, and whether the group passes for
 * an ASCII character too (ー and 一 for `-`, ノ for `/`). A member is shown as written only among
 * letters of its own script (lookAlikeOut); members of one script (丶 乀 乁, 丨 〡) never are.
 */
const CJK_GROUPS: readonly { members: string; ascii: boolean; back?: true }[] = [
  { members: 'ー一ㄧㅡ', ascii: true, back: true }, // long vowel mark, ideograph one, Bopomofo i, Hangul eu: a dash
  { members: 'ニ二', ascii: true }, // =
  { members: 'ノ丿', ascii: true }, // /
  { members: 'ヽ丶乀乁', ascii: true }, // \
  { members: '丨ㅣ〡', ascii: true }, // | and l
  { members: '〇', ascii: true }, // O
  { members: '゠', ascii: true }, // =
  { members: 'ロ口', ascii: false },
  { members: 'エ工', ascii: false },
  { members: 'カ力', ascii: false },
  { members: 'タ夕', ascii: false },
  { members: 'ハ八', ascii: false },
  { members: 'ト卜', ascii: false },
  { members: 'ヘへ', ascii: false },
  { members: 'ベべ', ascii: false },
  { members: 'ペぺ', ascii: false },
];
const CJK_TWINS = new Map(
  CJK_GROUPS.flatMap((g) => {
    const members = Array.from(g.members);
    return members.map((m) => {
      const others = new Set(members.filter((o) => o !== m).flatMap((o) => [...scriptsOf(o)]));
      return [m, { own: scriptsOf(m), others, ascii: g.ascii, back: g.back === true }] as const;
    });
  }),
);
/** Kangxi radicals, CJK radicals and strokes: drawn like the ideographs (NFKC makes many of them one), never a name's letters. */
const RADICAL = /^[\u2e80-\u2eff\u2f00-\u2fdf\u31c0-\u31ef]$/u;
const LETTER = /^[\p{L}\p{N}]$/u;

/**
 * Whether the CJK look-alike at `i` is out of its script, so shown escaped: its script is judged by
 * the nearest letter that is no look-alike (ー by the one before it, which it lengthens; the others
 * by the one after them, the word they begin, then by the one before), and it is shown as written
 * only where that letter is of its own script and of none of its twins' (ワーカー, not ワ一カ一;
 * 第一, not 第ー; 分散ロック, not 分散口ック). A run of look-alikes alone is read as katakana when it has
 * one that passes for no ASCII character (ハート); else escaped. So of two names that differ by
 * twins, at most one shows each as written.
 */
function lookAlikeOut(chars: readonly string[], i: number): boolean {
  const c = chars[i]!;
  if (RADICAL.test(c)) return true;
  const twin = CJK_TWINS.get(c);
  if (!twin) return false;
  const near = (step: 1 | -1): Set<CjkScript | 'other'> | undefined => {
    for (let j = i + step; j >= 0 && j < chars.length; j += step) {
      const n = chars[j]!;
      if (CJK_TWINS.has(n)) continue;
      if (!LETTER.test(n)) return undefined; // a space or punctuation: the word ends
      const s: Set<CjkScript | 'other'> = scriptsOf(n);
      return s.size ? s : new Set(['other']);
    }
    return undefined;
  };
  const [first, second] = twin.back ? ([-1, 1] as const) : ([1, -1] as const);
  const context = near(first) ?? near(second);
  if (!context) return !(twin.own.has('Katakana') && runHasLetter(chars, i));
  return ![...context].some((s) => twin.own.has(s as CjkScript)) || [...context].some((s) => twin.others.has(s as CjkScript));
}

/** Whether the run of look-alikes around `i` has one that passes for no ASCII character (ハ, ト), and more than one character. */
function runHasLetter(chars: readonly string[], i: number): boolean {
  let start = i;
  while (start > 0 && CJK_TWINS.has(chars[start - 1]!)) start--;
  let end = i;
  while (end < chars.length - 1 && CJK_TWINS.has(chars[end + 1]!)) end++;
  return end > start && chars.slice(start, end + 1).some((m) => !CJK_TWINS.get(m)!.ascii);
}

/** UTS #39's scripts written together (Highly Restrictive): Japanese, Korean, Chinese with Bopomofo; Latin goes with each. */
const WRITTEN_WITH: Record<CjkScript, readonly string[]> = { Han: ['Jpan', 'Kore', 'Hanb'], Hiragana: ['Jpan'], Katakana: ['Jpan'], Hangul: ['Kore'], Bopomofo: ['Hanb'] };

/** Whether a word (between spaces) mixes CJK scripts never written together: kana with Hangul, Bopomofo with either. */
function mixedScripts(word: readonly string[]): boolean {
  let together: Set<string> | undefined;
  for (const c of word) {
    const s = scriptsOf(c);
    if (!s.size || !LETTER.test(c)) continue;
    const writing = new Set([...s].flatMap((k) => WRITTEN_WITH[k]));
    together = together ? new Set([...together].filter((w) => writing.has(w))) : writing;
    if (!together.size) return true;
  }
  return false;
}

/**
 * Letters that pass for others of their own script (UTS #39 confusables.txt within one script: Latin
 * `rn` for `m`, `vv` for `w`, `cl` for `d`, `1`, `I` and `|` for `l`, `0` for `O`; katakana ソ for ン,
 * シ for ツ), each to the one it passes for. Names really hold them (kernel, node-1, ソース), so
 * none is escaped for what it is, only where two names shown together differ by them (twinParts).
 */
const SAME_SCRIPT_ONE: Readonly<Record<string, string>> = { '1': 'l', I: 'l', '|': 'l', '0': 'O', ソ: 'ン', シ: 'ツ' };
const SAME_SCRIPT_RUNS: readonly (readonly [string, string])[] = [['rn', 'm'], ['vv', 'w'], ['cl', 'd']];

/** What a name looks like, its same-script twins made one (UTS #39's skeleton, for those): two names that differ and share it pass for each other. */
function skeleton(name: string): string {
  let s = Array.from(name, (c) => SAME_SCRIPT_ONE[c] ?? c).join('');
  for (const [run, like] of SAME_SCRIPT_RUNS) s = s.replaceAll(run, like);
  return s;
}

/** Another of `names` that passes for `name` (differs, but looks alike: skeleton), or undefined. */
export function twinOf(name: string, names: readonly string[]): string | undefined {
  const k = skeleton(name);
  return names.find((n) => n !== name && skeleton(n) === k);
}

/**
 * For each of `names` shown together (a column), the code point indexes where it differs from a
 * name it passes for (the part between their common start and end), to be escaped (cleanAt's `also`),
 * so `worker-rn` beside `worker-m` shows `worker-\u0072\u006e` and `worker-\u006d`; undefined for a
 * name no other passes for, shown as written.
 */
export function twinParts(names: readonly string[]): (Set<number> | undefined)[] {
  // grouped by skeleton first: a table of thousands of leases compares each name with its few twins only
  const alike = new Map<string, Set<string>>();
  for (const n of names) {
    const k = skeleton(n);
    alike.set(k, (alike.get(k) ?? new Set()).add(n));
  }
  return names.map((name) => {
    let at: Set<number> | undefined;
    const a = Array.from(name);
    alike.get(skeleton(name))!.forEach((other) => {
      if (other === name) return;
      const b = Array.from(other);
      let start = 0;
      while (start < a.length && start < b.length && a[start] === b[start]) start++;
      let end = 0;
      while (end < a.length - start && end < b.length - start && a[a.length - 1 - end] === b[b.length - 1 - end]) end++;
      at ??= new Set();
      for (let k = start; k < a.length - end; k++) at.add(k);
    });
    return at;
  });
}

const escaped = (c: string): string => {
  const cp = c.codePointAt(0)!;
  return NAMED[c] ?? (cp > 0xffff ? `\\u{${cp.toString(16)}}` : `\\u${cp.toString(16).padStart(4, '0')}`);
};

/**
 * The one escaping function for text the tables hold: anything a worker (or whoever can write a
 * row or an event) wrote — identities, versions, reasons, messages — is shown with its control
 * and invisible characters escaped as `\n`, `\u001b`, `\u200b`, `\u{e0041}`, its look-alike
 * letters (lookAlike) as `\u043e`, what passes for an ASCII character (asciiTwin: `‐` for `-`)
 * as `\u2010`, a CJK letter out of its script (lookAlikeOut: `一` for `ー` among kana), the CJK
 * letters of a word that mixes scripts never written together, and a backslash as `\\`, so it
 * can neither drive the terminal, forge a line, nor pass for another name (`w1\u200b` written with
 * a backslash is shown `w1\\u200b`). An emoji sequence (a ZWJ family, a flag, a symbol with VS16)
 * is left whole: its joiners and selectors draw one picture. Escape once, just before the output:
 * escaped text escaped again has its backslashes doubled. (A table's cells also escape where a name
 * passes for another in its column: twinParts.)
 */
export function clean(text: string): string {
  return cleanAt(text);
}

/** clean, escaping besides the characters at `also` (code point indexes: twinParts), and leaving those at `keep` as written (a shellWord). */
function cleanAt(text: string, also?: ReadonlySet<number>, keep?: ReadonlySet<number>): string {
  if (PLAIN.test(text) && !also?.size) return text; // most text: nothing to escape
  const chars: string[] = [];
  const whole: boolean[] = []; // in an emoji sequence: kept whole
  for (const g of graphemes(text)) {
    const emoji = isEmoji(g);
    for (const c of g) {
      chars.push(c);
      whole.push(emoji);
    }
  }
  // the words (between spaces) that mix scripts never written together
  const mixed: boolean[] = [];
  for (let start = 0; start < chars.length; ) {
    let end = start;
    while (end < chars.length && !SPACE.test(chars[end]!)) end++;
    const m = mixedScripts(chars.slice(start, end));
    for (let k = start; k <= end && k < chars.length; k++) mixed[k] = m;
    start = end + 1;
  }
  return chars
    .map((c, i) => {
      if (whole[i] || keep?.has(i) === true) return c;
      const out =
        also?.has(i) === true ||
        Object.hasOwn(NAMED, c) ||
        CONTROL.test(c) ||
        lookAlike(c) ||
        asciiTwin(c) ||
        lookAlikeOut(chars, i) ||
        (mixed[i] === true && scriptsOf(c).size > 0 && LETTER.test(c));
      return out ? escaped(c) : c;
    })
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

/**
 * When something already happened (a renewal, a creation): never in the future. Its stamp is the
 * writer's estimate of DynamoDB's time, as `now` is this command's, each within half a second (Date
 * headers' whole seconds): a renewal just written may read up to a second ahead, shown `0s ago`.
 */
export const ago = (at: number | undefined, now: number): string => relative(at !== undefined && at > now && at - now < AHEAD_MS ? now : at, now);
/** How far ahead of a command's now a stamp of the past may read as its writer's estimate (further: a clock off, shown as `in …`). */
const AHEAD_MS = 1_000;

/** An epoch-ms stamp with its age: `3s ago (2026-01-01T12:00:00.000Z)`. */
export const stamp = (at: number | undefined, now: number): string => (at === undefined ? '-' : `${relative(at, now)} (${new Date(at).toISOString()})`);

export const dash = (v: string | number | undefined): string => (v === undefined || v === '' ? '-' : String(v));

export interface Column<R> {
  header: string;
  cell(row: R): string;
  /** Styles the cell once escaped (watch's highlight): the only raw control sequences in a table. */
  decorate?(text: string, row: R): string;
  /** Names shown apart from the table that its cells are compared with too (twinParts): describe's holder beside the candidates' names. */
  alike?: readonly string[];
}

/** Aligned columns, kubectl style: a header line, then one line per row, padded by the columns a terminal draws (width.ts). Cells are escaped, then decorated. */
export function table<R>(columns: readonly Column<R>[], rows: readonly R[]): string[] {
  const raw = rows.map((r) => columns.map((c) => c.cell(r)));
  // a column's names that pass for one another (worker-rn, worker-m) escaped where they differ
  const twins = columns.map((c, i) => twinParts([...raw.map((line) => line[i]!), ...(c.alike ?? [])]));
  const shown = (r: R, y: number, x: number): string => {
    const text = cleanAt(raw[y]![x]!, twins[x]![y]);
    const decorate = columns[x]!.decorate;
    return decorate ? decorate(text, r) : text;
  };
  const cells = [columns.map((c) => c.header), ...rows.map((r, y) => columns.map((_, x) => shown(r, y, x)))];
  const measured = cells.map((line) => line.map(displayWidth));
  const widths = columns.map((_, i) => Math.max(...measured.map((line) => line[i]!)));
  return cells.map((line, r) => line.map((v, i) => (i === line.length - 1 ? v : v + ' '.repeat(widths[i]! - measured[r]![i]!))).join('   ').trimEnd());
}

/** A value of `fields` with names in it: its text, and the code point indexes to escape besides (named). */
export interface Named {
  readonly text: string;
  readonly also: ReadonlySet<number>;
  /** Code point indexes shown as written: a name in a suggested command, already a shell word of printable ASCII (shellWord). */
  readonly keep?: ReadonlySet<number>;
}

/** Characters a POSIX shell takes as themselves in a word, unquoted. */
const SHELL_PLAIN = /^[A-Za-z0-9._:/@%+,=-]$/;

/**
 * `name` as a word a POSIX shell turns back into it, for a command the operator may paste: as
 * written, but each run of characters to escape (`escape`: where it passes for another name, as
 * twinParts marks them; and any a shell would not take as itself) in `$'…'` with each byte as
 * `\xHH` (POSIX.1-2024; bash, zsh, ksh): `worker-m` beside `worker-rn` is `worker-$'\x6d'`, told
 * apart on screen and pasted as worker-m. Each run ends the quote, so no digit after it is read
 * into its last escape. Printable ASCII only, so shown as written (Named `keep`).
 */
export function shellWord(name: string, escape?: ReadonlySet<number>): string {
  if (name === '') return "''";
  const bytes = new TextEncoder();
  let word = '';
  let run = '';
  Array.from(name).forEach((c, i) => {
    if (escape?.has(i) !== true && SHELL_PLAIN.test(c)) {
      if (run) word += `$'${run}'`;
      run = '';
      word += c;
    } else run += Array.from(bytes.encode(c), (b) => `\\x${b.toString(16).padStart(2, '0')}`).join('');
  });
  return run ? `${word}$'${run}'` : word;
}

/**
 * For values that hold names shown apart from one another (describe's holder, successor and best
 * candidate beside its candidates' table): `parts` joined, each name (`{ name }`) marked where it
 * differs from another of `names` it passes for (twinParts), so a holder worker-rn beside a
 * candidate worker-m is not shown as written. A name not among `names` is shown as written. A
 * name in a suggested command (`{ arg }`) is a shellWord instead: pasted, it is that name. A
 * message built elsewhere that lists names (`{ listing }`: the coordinator's consensus and failure
 * messages) has each whole one of `names` in it marked so (namesIn).
 */
export function named(names: readonly string[]): (...parts: readonly (string | { readonly name: string } | { readonly arg: string } | { readonly listing: string })[]) => Named {
  const twins = twinParts(names);
  const at = new Map(names.map((n, i) => [n, twins[i]] as const));
  return (...parts) => {
    let text = '';
    let offset = 0;
    const also = new Set<number>();
    const keep = new Set<number>();
    for (const part of parts) {
      let s: string;
      if (typeof part === 'string') s = part;
      else if ('listing' in part) {
        // a message built elsewhere that lists names (strategyConsensus's): each whole one marked, as namesIn marks them
        s = part.listing;
        for (const k of namesIn(names, s).also) also.add(offset + k);
      } else if ('arg' in part) {
        s = shellWord(part.arg, at.get(part.arg));
        for (let k = 0; k < Array.from(s).length; k++) keep.add(offset + k);
      } else {
        s = part.name;
        for (const k of at.get(s) ?? []) also.add(offset + k);
      }
      text += s;
      offset += Array.from(s).length;
    }
    return { text, also, keep };
  };
}

/** Text and Named values joined into one line, each Named part escaped where it was (a header and its `:`, a sentence around a refusal). */
export function joined(...parts: readonly (string | Named)[]): Named {
  let text = '';
  let offset = 0;
  const also = new Set<number>();
  const keep = new Set<number>();
  for (const part of parts) {
    const s = typeof part === 'string' ? part : part.text;
    if (typeof part !== 'string') {
      for (const k of part.also) also.add(offset + k);
      for (const k of part.keep ?? []) keep.add(offset + k);
    }
    text += s;
    offset += Array.from(s).length;
  }
  return { text, also, keep };
}

/** A character a name may hold (the Name schema's), so not the edge of one. */
const NAME_CHAR = /[A-Za-z0-9._:/-]/;

/**
 * A message built elsewhere that lists names (strategyConsensus's "candidates worker-m, worker-rn
 * order the strategies …") as a Named value: each whole occurrence of one of `names` (not part of a
 * longer name) marked where it passes for another of them, as named() marks a `{ name }` part.
 */
export function namesIn(names: readonly string[], text: string): Named {
  const twins = twinParts(names);
  const also = new Set<number>();
  names.forEach((name, i) => {
    const at = twins[i];
    if (!at || name === '') return;
    for (let k = text.indexOf(name); k >= 0; k = text.indexOf(name, k + 1)) {
      const before = text[k - 1];
      const after = text[k + name.length];
      if ((before !== undefined && NAME_CHAR.test(before)) || (after !== undefined && NAME_CHAR.test(after))) continue;
      const offset = Array.from(text.slice(0, k)).length;
      for (const j of at) also.add(offset + j);
    }
  });
  return { text, also };
}

/** A value escaped: a Named value also where its names pass for others. */
export const shown = (v: string | Named): string => (typeof v === 'string' ? clean(v) : cleanAt(v.text, v.also, v.keep));

/** `label:  value` lines with the values aligned; values escaped (shown). */
export function fields(pairs: readonly (readonly [string, string | Named])[]): string[] {
  const width = Math.max(...pairs.map(([k]) => k.length)) + 1;
  return pairs.map(([k, v]) => `${`${k}:`.padEnd(width)}  ${shown(v)}`);
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

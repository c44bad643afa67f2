/**
 * How many columns a terminal gives text: what the tables pad by. A string's length counts UTF-16
 * code units, so `名前` (2 units, 4 columns), `👨‍👩‍👧` (8 units, 2 columns) and `é` written as `e` and
 * a combining accent (2 units, 1 column) would misalign every column after them. Text is measured
 * per grapheme cluster (what a reader sees as one character, Intl.Segmenter's segments), as
 * terminals that follow Unicode draw it:
 * - an emoji sequence (flag, keycap, skin tone, ZWJ family, a symbol with VS16): 2;
 * - otherwise its widest code point: East Asian Wide or Fullwidth (CJK, kana, Hangul, fullwidth
 *   forms) and emoji presentation 2; combining marks, format and other default-ignorable code
 *   points 0; anything else 1 (East Asian Ambiguous, such as `→` and `…`, counts 1: a Western terminal).
 */

/**
 * East_Asian_Width W or F, Unicode 17.0 (EastAsianWidth.txt), as [first, last] code points, sorted.
 * Left out, since the checks below measure them first: emoji presentation characters (the regex
 * engine knows them, at its own Unicode version) and nonspacing marks and the Hangul filler (0).
 */
const WIDE: readonly (readonly [number, number])[] = [
  [0x1100, 0x115f], [0x2329, 0x232a], [0x2630, 0x2637], [0x268a, 0x268f], [0x2e80, 0x2e99], [0x2e9b, 0x2ef3],
  [0x2f00, 0x2fd5], [0x2ff0, 0x3029], [0x302e, 0x303e], [0x3041, 0x3096], [0x309b, 0x30ff], [0x3105, 0x312f],
  [0x3131, 0x3163], [0x3165, 0x318e], [0x3190, 0x31e5], [0x31ef, 0x321e], [0x3220, 0x3247], [0x3250, 0xa48c],
  [0xa490, 0xa4c6], [0xa960, 0xa97c], [0xac00, 0xd7a3], [0xf900, 0xfaff], [0xfe10, 0xfe19], [0xfe30, 0xfe52],
  [0xfe54, 0xfe66], [0xfe68, 0xfe6b], [0xff01, 0xff60], [0xffe0, 0xffe6], [0x16fe0, 0x16fe3],
  [0x16ff0, 0x16ff6], [0x17000, 0x18cd5], [0x18cff, 0x18d1e], [0x18d80, 0x18df2], [0x1aff0, 0x1aff3],
  [0x1aff5, 0x1affb], [0x1affd, 0x1affe], [0x1b000, 0x1b122], [0x1b132, 0x1b132], [0x1b150, 0x1b152],
  [0x1b155, 0x1b155], [0x1b164, 0x1b167], [0x1b170, 0x1b2fb], [0x1d300, 0x1d356], [0x1d360, 0x1d376],
  [0x1f200, 0x1f200], [0x1f202, 0x1f202], [0x1f210, 0x1f219], [0x1f21b, 0x1f22e], [0x1f230, 0x1f231],
  [0x1f237, 0x1f237], [0x1f23b, 0x1f23b], [0x1f240, 0x1f248], [0x1f260, 0x1f265], [0x20000, 0x2fffd],
  [0x30000, 0x3fffd],
];

function isWide(cp: number): boolean {
  for (const [first, last] of WIDE) {
    if (cp < first) return false;
    if (cp <= last) return true;
  }
  return false;
}

/** Takes no column: nonspacing and enclosing marks, controls, format characters, default ignorables (ZWJ, variation selectors). */
const ZERO = /^[\p{Mn}\p{Me}\p{Cc}\p{Cf}\p{Default_Ignorable_Code_Point}]$/u;
const EMOJI_PRESENTATION = /^\p{Emoji_Presentation}$/u;
/** A whole emoji sequence as Unicode recommends it (UTS #51 RGI): built at run time, since `v` regex literals need an ES2024 target. */
const EMOJI_SEQUENCE = new RegExp('^\\p{RGI_Emoji}$', 'v');
/** Every such sequence starts with an emoji character (digits, `#` and `*` for keycaps among them): a cheap test first. */
const EMOJI_START = /^\p{Emoji}/u;
/** The styles `style` adds (watch's highlight): they take no room. */
const SGR = /\x1b\[[0-9;]*m/g;
const PRINTABLE_ASCII = /^[\x20-\x7e]*$/;

const segmenter = new Intl.Segmenter('en', { granularity: 'grapheme' });

/** The grapheme clusters of `text`, in order. */
export const graphemes = (text: string): string[] => Array.from(segmenter.segment(text), (s) => s.segment);

/** Whether a grapheme cluster is one emoji as Unicode lists them (flags, keycaps, ZWJ sequences and all). */
export const isEmoji = (grapheme: string): boolean => EMOJI_START.test(grapheme) && EMOJI_SEQUENCE.test(grapheme);

function charWidth(ch: string): number {
  if (ZERO.test(ch)) return 0;
  return EMOJI_PRESENTATION.test(ch) || isWide(ch.codePointAt(0)!) ? 2 : 1;
}

function clusterWidth(grapheme: string): number {
  if (isEmoji(grapheme)) return 2;
  let width = 0;
  for (const ch of grapheme) width = Math.max(width, charWidth(ch)); // a base and its marks: the base's width
  return width;
}

/** The columns `text` takes on a terminal; ANSI styles take none. */
export function displayWidth(text: string): number {
  const plain = text.replace(SGR, '');
  if (PRINTABLE_ASCII.test(plain)) return plain.length; // most cells: one column a character
  let width = 0;
  for (const g of graphemes(plain)) width += clusterWidth(g);
  return width;
}

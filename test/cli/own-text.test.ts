/**
 * Our own text reaches the terminal through clean (lib/cli/format.ts), which escapes what passes for
 * another character: a look-alike dash, a curly quote, a no-break space (commit 0710a24). A
 * typographic character written into one of our messages would print as `\u2013`. So no string
 * literal or template text in a module the CLI loads holds a character clean would escape where it
 * stands: every module of lib/cli/ (what it prints through clean: fields, tables, say, note, its
 * errors; and its help, which commander prints, held to the same rule), and the modules whose text
 * it prints through clean, taken as the rest of its import graph (scripts/import-graph.ts): the
 * schemas' and validation.ts' messages in a ValidationError (a row, an argument, an events line), the
 * stores' errors (BrokenSessionError, ConflictError), the election's consensus messages and reasons.
 * Not judged: a schema's description (`.describe(…)`, `.meta(…)`: its JSON Schema, which the CLI
 * never prints), characters in ASCII (a newline or backslash in a literal is code: a split, a
 * regular expression's source; clean escapes them in a message on purpose), and the data below.
 */
import { describe, expect, it } from 'vitest';
import { clean } from '../../lib/cli/format.js';
import { importGraph } from '../../scripts/import-graph.js';
import { expectOnlyAllowed, literals, notAsciiInLiterals, VALUE, type Allowed, type Finding } from '../literals.js';

/** The UTF-16 offsets in `text` of the characters clean escapes there (clean keeps the others as they are, in order). */
export function escapedAt(text: string): number[] {
  const out = clean(text);
  const at: number[] = [];
  let p = 0;
  let offset = 0;
  for (const c of text) {
    if (c !== '\\' && out.startsWith(c, p)) p += c.length;
    else {
      // escaped: `\\`, `\n`, `\u2013`, `\u{e0041}`
      const form = out.slice(p).match(/^\\(?:u\{[0-9a-f]+\}|u[0-9a-f]{4}|.)/s)?.[0];
      if (!form) throw new Error(`clean(${JSON.stringify(text)}) is not the text with some characters escaped`);
      at.push(offset);
      p += form.length;
    }
    offset += c.length;
  }
  return at;
}

/** Each character outside ASCII that clean escapes in a literal of `src` (a schema's description left out), as `file:line: U+2019 '’' in "…"`. */
export function escapedInLiterals(file: string, src: string): Finding[] {
  const lineOf = (offset: number) => src.slice(0, offset).split('\n').length;
  return literals(src).flatMap(({ pieces, doc }, literal) => {
    if (doc) return [];
    const text = pieces.map((p) => p.text).join(VALUE);
    const at = pieces.flatMap((p, k) => (k === 0 ? p.at : [-1, ...p.at]));
    return escapedAt(text)
      .filter((o) => text.codePointAt(o)! >= 0x80)
      .map((o) => {
        const c = String.fromCodePoint(text.codePointAt(o)!);
        const code = c.codePointAt(0)!.toString(16).toUpperCase().padStart(4, '0');
        return { literal, text: `${file}:${lineOf(at[o]!)}: U+${code} '${c}' in ${JSON.stringify(text.slice(Math.max(0, o - 25), o + 25))}` };
      });
  });
}

/** Literals that hold such characters as data, never printed: how many in the file, and why. */
const ALLOWED: Allowed = {
  'lib/cli/format.ts': { literals: 16, why: 'CJK_GROUPS: the CJK look-alikes clean judges a name by (its members, one literal a group)' },
};

const WHAT_TO_WRITE = "clean (lib/cli/format.ts) would print these escaped: write an ASCII character (-, ', \", *)";

describe('our own text in the CLI prints as written: no character that clean escapes', () => {
  it('finds one in a string, a template (beside a substitution too), a nested template and an escape; not in a comment, a regular expression or a schema description (the check can fail)', () => {
    const src = [
      "const a = 'the lease’s holder';", // 1
      'const b = `a ${x} – b`;', // 2
      'const c = `${y}—${z}`;', // 3: beside a value, not between spaces
      'const d = `${`nested “quote”`}`;', // 4
      "const e = 'escaped \\u2013 dash';", // 5
      '// a comment’s quote', // 6
      'const f = /[‐‑]/u.test(s) ? 1 / 2 : 3;', // 7
      "const g = z.string().describe('The term’s token');", // 8
      "const h = z.object({}).meta({ description: 'the holder’s' });", // 9
      "const i = 'found: configure them; 3 to 255, ≥ 1, … and ワーカー';", // 10: kept by clean
      "const j = z.string().min(1, 'must’ve').describe('ok');", // 11: a message beside a description
      'const k = a / b; const l = `a ‐ b`;', // 12: division, then a template
      "const m = 'found — configure them; ms × 1000';", // 13: between spaces too (a value's dash there would pass for -)
    ].join('\n');
    expect(escapedInLiterals('x.ts', src).map((f) => f.text)).toEqual([
      'x.ts:1: U+2019 \'’\' in "the lease’s holder"',
      'x.ts:2: U+2013 \'–\' in "a x – b"',
      'x.ts:3: U+2014 \'—\' in "x—x"',
      'x.ts:4: U+201C \'“\' in "nested “quote”"',
      'x.ts:4: U+201D \'”\' in "nested “quote”"',
      'x.ts:5: U+2013 \'–\' in "escaped – dash"',
      'x.ts:11: U+2019 \'’\' in "must’ve"',
      'x.ts:12: U+2010 \'‐\' in "a ‐ b"',
      'x.ts:13: U+2014 \'—\' in "found — configure them; ms × 10"',
      'x.ts:13: U+00D7 \'×\' in "und — configure them; ms × 1000"',
    ]);
  });

  it("no literal of lib/cli, or of a module it loads, holds one, but the allowed data", async () => {
    const files = (await importGraph('lib/cli/main.ts')).internal.filter((f) => f.endsWith('.ts'));
    expect(files).toEqual(expect.arrayContaining(['lib/cli/main.ts', 'lib/cli/describe.ts', 'lib/schemas/validation.ts', 'lib/stores/errors.ts', 'lib/election/strategy.ts', 'lib/events/schemas.ts']));
    expectOnlyAllowed(files, escapedInLiterals, ALLOWED, WHAT_TO_WRITE);
  });
});

/**
 * Literals outside ASCII that are data, never words of ours: how many in the file, and why. Every
 * other literal of the CLI's graph is ASCII, as docs/cli.md says: a name's `–` or `→` (kept by
 * clean where it passes for nothing) then never passes for our own separator (`->`, `-`, `...`).
 */
const NOT_ASCII_ALLOWED: Allowed = {
  'lib/cli/format.ts': { literals: 18, why: "CJK_GROUPS' members and SAME_SCRIPT_ONE's katakana: the look-alikes clean judges a name by" },
};

describe("the CLI's own text is ASCII (docs/cli.md): a name's dash, arrow or ellipsis never passes for ours", () => {
  it('finds a character outside ASCII in a string, a template and an escape; not in a comment, a regular expression or a schema description (the check can fail)', () => {
    const src = [
      "const a = 'must be ≥ 1';", // 1
      'const b = `${x} → ${y}`;', // 2
      "const c = 'waiting\\u2026';", // 3
      '// a comment → here', // 4
      'const d = /[→]/u;', // 5
      "const e = z.string().describe('the term’s token');", // 6
      "const f = 'must be >= 1, x -> y, waiting...';", // 7
    ].join('\n');
    expect(notAsciiInLiterals('x.ts', src).map((f) => f.text)).toEqual([
      'x.ts:1: U+2265 \'≥\' in "must be ≥ 1"',
      'x.ts:2: U+2192 \'→\' in "x → x"',
      'x.ts:3: U+2026 \'…\' in "waiting…"',
    ]);
  });

  it('no literal of lib/cli, or of a module it loads, holds one, but the allowed data', async () => {
    const files = (await importGraph('lib/cli/main.ts')).internal.filter((f) => f.endsWith('.ts'));
    expectOnlyAllowed(files, notAsciiInLiterals, NOT_ASCII_ALLOWED, 'write ASCII: ">=" for ≥, "<=" for ≤, "->" for →, "-" for – or —, "..." for …');
  });
});

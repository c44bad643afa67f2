/**
 * The string literals and template texts of our TypeScript sources, as they run: what the
 * own-text tests (test/cli/own-text.test.ts, test/sdk/own-text.test.ts) judge our messages by.
 */
import { readFileSync } from 'node:fs';
import { expect } from 'vitest';
import { REPO_ROOT } from '../scripts/import-graph.js';

/** One literal's text as it runs (escapes cooked), each UTF-16 unit with its offset in the source. */
export interface Piece {
  text: string;
  at: number[];
}

/** A string literal, or a template's texts (its pieces between its substitutions); `doc`: an argument of a `.describe(` or `.meta(` call. */
export interface Literal {
  pieces: Piece[];
  doc: boolean;
}

/**
 * The string literals and template texts of TypeScript `src` (a substitution's own literals apart),
 * comments and regular expression literals skipped. A lexer of our own: TypeScript 7 has no
 * compiler API (TOOLCHAIN.md); checked once against oxc's parser on the 135 modules of lib/cli's
 * graph, lib/sdk, lib/coordinator, lib/functions, lib/local and infra (the same 6,642 literals). A
 * `/` is a regular expression where an operand may start (after an operator, a keyword, or nothing),
 * else division.
 */
export function literals(src: string): Literal[] {
  const found: Literal[] = [];
  let i = 0;
  let last = ''; // the last token: a word, a punctuator, or 'literal'
  let beforeLast = '';
  const calls: boolean[] = []; // the open parentheses, each whether it is a `.describe(` or `.meta(` call's
  const word = /[\p{ID_Continue}$]/u;
  const OPERAND_KEYWORDS = new Set(['return', 'typeof', 'case', 'do', 'else', 'in', 'of', 'new', 'delete', 'void', 'throw', 'instanceof', 'yield', 'await']);
  const cook = (): string => {
    const n = src[i + 1]!;
    i += 2;
    const hex = (len: number) => {
      const h = src.slice(i, i + len);
      i += len;
      return String.fromCodePoint(parseInt(h, 16));
    };
    switch (n) {
      case 'n': return '\n';
      case 't': return '\t';
      case 'r': return '\r';
      case 'b': return '\b';
      case 'f': return '\f';
      case 'v': return '\v';
      case '0': return '\0';
      case 'x': return hex(2);
      case 'u': {
        if (src[i] !== '{') return hex(4);
        const end = src.indexOf('}', i);
        const cp = String.fromCodePoint(parseInt(src.slice(i + 1, end), 16));
        i = end + 1;
        return cp;
      }
      case '\r': if (src[i] === '\n') i++; return '';
      case '\n': return '';
      default: return n;
    }
  };
  const add = (p: Piece, s: string, at: number) => {
    p.text += s;
    for (let k = 0; k < s.length; k++) p.at.push(at);
  };
  const quoted = (q: string): Piece => {
    const p: Piece = { text: '', at: [] };
    i++;
    while (i < src.length && src[i] !== q) {
      const at = i;
      if (src[i] === '\\') add(p, cook(), at);
      else add(p, src[i++]!, at);
    }
    i++;
    return p;
  };
  const template = (): Piece[] => {
    const pieces: Piece[] = [];
    let p: Piece = { text: '', at: [] };
    i++;
    while (i < src.length) {
      const at = i;
      if (src[i] === '`') {
        i++;
        break;
      }
      if (src[i] === '\\') add(p, cook(), at);
      else if (src[i] === '$' && src[i + 1] === '{') {
        pieces.push(p);
        p = { text: '', at: [] };
        i += 2;
        code(true);
      } else add(p, src[i++]!, at);
    }
    pieces.push(p);
    return pieces;
  };
  const regex = () => {
    let inClass = false;
    for (i++; i < src.length; i++) {
      const c = src[i];
      if (c === '\\') i++;
      else if (c === '[') inClass = true;
      else if (c === ']') inClass = false;
      else if (c === '/' && !inClass) break;
    }
    for (i++; i < src.length && word.test(src[i]!); i++);
  };
  const token = (t: string) => {
    beforeLast = last;
    last = t;
  };
  const operandMayStart = () => last === '' || OPERAND_KEYWORDS.has(last) || (!word.test(last[0]!) && last !== ')' && last !== ']' && last !== 'literal');
  function code(nested: boolean): void {
    let depth = 0;
    while (i < src.length) {
      const c = src[i]!;
      if (c === '/' && src[i + 1] === '/') {
        const end = src.indexOf('\n', i);
        i = end < 0 ? src.length : end;
      } else if (c === '/' && src[i + 1] === '*') {
        const end = src.indexOf('*/', i + 2);
        i = end < 0 ? src.length : end + 2;
      } else if (c === "'" || c === '"') {
        const doc = calls.includes(true);
        found.push({ pieces: [quoted(c)], doc });
        token('literal');
      } else if (c === '`') {
        const doc = calls.includes(true);
        const at = found.push({ pieces: [], doc }) - 1;
        found[at]!.pieces = template();
        token('literal');
      } else if (c === '/' && operandMayStart()) {
        regex();
        token('literal');
      } else if (/\s/.test(c)) i++;
      else if (word.test(c)) {
        const start = i;
        while (i < src.length && word.test(src[i]!)) i++;
        token(src.slice(start, i));
      } else {
        if (c === '{') depth++;
        if (c === '}') {
          if (nested && depth === 0) {
            i++;
            return;
          }
          depth--;
        }
        if (c === '(') calls.push(beforeLast === '.' && (last === 'describe' || last === 'meta'));
        if (c === ')') calls.pop();
        token(c);
        i++;
      }
    }
  }
  code(false);
  return found;
}

/** What stands for a substitution's value when a template's text is judged: a name's letter (a value beside a `—` is text, not a space). */
export const VALUE = 'x';

/** A character outside ASCII that clean escapes in a literal: where, and the literal's index in its file. */
export interface Finding {
  literal: number;
  text: string;
}

/** Each character outside ASCII in a literal of `src` (a schema's description left out), as `file:line: U+2265 '≥' in "…"`. */
export function notAsciiInLiterals(file: string, src: string): Finding[] {
  const lineOf = (offset: number) => src.slice(0, offset).split('\n').length;
  return literals(src).flatMap(({ pieces, doc }, literal) => {
    if (doc) return [];
    const text = pieces.map((p) => p.text).join(VALUE);
    const at = pieces.flatMap((p, k) => (k === 0 ? p.at : [-1, ...p.at]));
    return [...text.matchAll(/[^\x00-\x7f]/gu)].map((m) => {
      const o = m.index;
      const code = m[0].codePointAt(0)!.toString(16).toUpperCase().padStart(4, '0');
      return { literal, text: `${file}:${lineOf(at[o]!)}: U+${code} '${m[0]}' in ${JSON.stringify(text.slice(Math.max(0, o - 25), o + 25))}` };
    });
  });
}

/** Literals that hold what a check finds as data, never printed: how many in the file, and why. */
export type Allowed = Readonly<Record<string, { literals: number; why: string }>>;

/**
 * Judges the literals of each of `files` (repository-relative) with `judge`: nothing found outside
 * `allowed`, and in each allowed file exactly its count of literals (a literal more, a message in
 * that file, fails; one fewer is taken back). `write`: what to write instead, in the failure.
 */
export function expectOnlyAllowed(files: readonly string[], judge: (file: string, src: string) => Finding[], allowed: Allowed, write: string): void {
  const found = files.map((f) => ({ f, findings: judge(f, readFileSync(`${REPO_ROOT}/${f}`, 'utf8')) }));
  expect(found.filter(({ f }) => !(f in allowed)).flatMap(({ findings }) => findings.map((x) => x.text)), write).toEqual([]);
  for (const [f, { literals: n, why }] of Object.entries(allowed)) {
    const inFile = found.find((x) => x.f === f)?.findings ?? [];
    expect(new Set(inFile.map((x) => x.literal)).size, `${f}: ${why}; ${write}:\n${inFile.map((x) => x.text).join('\n')}`).toBe(n);
  }
}

/**
 * A comment (or message) in the code that sends its reader to a section of the docs names one that
 * is there. Issue 37, item 8 moved the history out of docs/safety.md and docs/benchmarks.md into
 * CHANGELOG.md, and comments went on citing what had moved: bench/scale-model.ts a benchmarks.md
 * section "Cheaper at rest", two operator-delete tests safety.md for seeds 1448349301 and
 * 1368225001. What is checked, in every tracked source file outside docs/ (Markdown aside):
 * `docs/x.md#anchor` makes a heading's anchor; `docs/x.md, "Name"` (or `x.md "Name"`,
 * `x.md's "Name"`, `x.md ("Name")`) names the start of a heading or of a bold lead (`**Name`) there;
 * and a seed cited with a doc (`docs/x.md, seeds 1448349301 and …`, up to the clause's end) is in it.
 * CHANGELOG.md is held to the same, as the place the history went.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { anchors, prose } from './markdown.js';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../..');

interface Doc {
  headings: string[];
  anchors: Set<string>;
  boldLeads: string[];
  text: string;
}

function docOf(markdown: string): Doc {
  const headings = [...prose(markdown).matchAll(/^#{1,6}\s+(.*?)\s*#*\s*$/gm)].map((h) => h[1]!.replace(/`/g, ''));
  const text = markdown.replace(/\s+/g, ' ');
  const boldLeads = [...text.matchAll(/\*\*([^*]+)\*\*/g)].map((m) => m[1]!.replace(/`/g, ''));
  return { headings, anchors: anchors(markdown), boldLeads, text };
}

const DOC_FILES = ['docs/safety.md', 'docs/benchmarks.md', 'docs/architecture.md', 'docs/deploy.md', 'docs/cli.md', 'CHANGELOG.md'];
const docs = new Map(DOC_FILES.map((f) => [f, docOf(readFileSync(join(root, f), 'utf8'))]));

/** A file's text with comment continuations (` * `, `// `) folded, so a name broken over two lines reads whole. */
const folded = (source: string): string => source.replace(/\s*\n\s*(?:\*(?!\/)|\/\/)?\s*/g, ' ');

const REF = /(?<![\w/.-])(?:docs\/)?(safety|benchmarks|architecture|deploy|cli|CHANGELOG)\.md(?:#([\w-]+)|(?:'s)?(?:,|:)?\s*\(?\s*"([^"]+)")?/g;

/** What is wrong with each docs reference in `source` (a file's text), named by `file`. */
function brokenRefs(file: string, source: string): string[] {
  const out: string[] = [];
  const text = folded(source);
  for (const m of text.matchAll(REF)) {
    const name = m[1] === 'CHANGELOG' ? 'CHANGELOG.md' : `docs/${m[1]}.md`;
    const doc = docs.get(name)!;
    const [, , anchor, section] = m;
    if (anchor !== undefined && !doc.anchors.has(anchor.toLowerCase())) out.push(`${file}: ${m[0]}: no heading in ${name} makes #${anchor}`);
    if (section !== undefined) {
      const s = section.replace(/`/g, '').replace(/\s+/g, ' ').trim();
      if (!doc.headings.some((h) => h.startsWith(s)) && !doc.boldLeads.some((b) => b.startsWith(s)))
        out.push(`${file}: ${m[0]}: ${name} has no heading or bold lead "${s}"`);
    }
    // seeds cited with the doc, up to the end of the clause
    const rest = text.slice(m.index + m[0].length, m.index + m[0].length + 200).split(/\)|\. |;/)[0]!;
    for (const seeds of rest.matchAll(/\bseeds? (\d{4,}(?:(?:,| and) \d{4,})*)/g))
      for (const seed of seeds[1]!.match(/\d{4,}/g)!)
        if (!new RegExp(`(?<!\\d)${seed}(?!\\d)`).test(doc.text)) out.push(`${file}: ${m[0]} … seed ${seed}: not in ${name}`);
  }
  return out;
}

const SOURCES = execFileSync('git', ['ls-files', '*.ts', '*.tsx', '*.js', '*.mjs', '*.cjs', '*.sh', '*.yml', '*.yaml'], { cwd: root, encoding: 'utf8' })
  .split('\n')
  .filter((f) => f !== '' && !f.startsWith('test/docs/') && !f.startsWith('docs/') && !f.startsWith('api/')); // test/docs: the checkers' own examples

describe('brokenRefs', () => {
  const q = (s: string): string => s.replace(/DOC/g, 'docs/safety' + '.md');
  it('finds a section, an anchor and a seed that are not there, and passes those that are', () => {
    expect(brokenRefs('x.ts', q('// see DOC, "No such section here"'))).toEqual([expect.stringMatching(/no heading or bold lead "No such section here"/)]);
    expect(brokenRefs('x.ts', q('// see DOC#no-such-anchor'))).toEqual([expect.stringMatching(/#no-such-anchor/)]);
    expect(brokenRefs('x.ts', q('/* DOC, seeds 11111111111 and\n * 22222222222). */'))).toHaveLength(2);
    expect(brokenRefs('x.ts', q('/* (DOC, "A session row the\n * schema refuses") and DOC#threat-model */'))).toEqual([]);
  });
});

describe('every docs section a source file names is there', () => {
  it('in every tracked source file', () => {
    expect(SOURCES.length).toBeGreaterThan(100);
    expect(SOURCES.flatMap((f) => brokenRefs(f, readFileSync(join(root, f), 'utf8')))).toEqual([]);
  });
});

/**
 * Issue 37, item 8 ("docs as design"): docs/safety.md and docs/benchmarks.md hold today's
 * guarantees and figures in tables, each with the command or test that reproduces it; the argument
 * behind a row is stated once, below its table; history lives in CHANGELOG.md; advice to operators
 * lives in docs/deploy.md. What is pinned here is the shape a reader relies on.
 */
import { readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { prose } from './markdown.js';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const read = (file: string): string => readFileSync(join(root, file), 'utf8');

/** The rows of the table whose header line starts with `header`, each split into its cells. */
function tableRows(markdown: string, header: string): string[][] {
  const lines = prose(markdown).split('\n');
  const start = lines.findIndex((l) => l.startsWith(header));
  expect(start, `a table headed "${header}"`).toBeGreaterThanOrEqual(0);
  const rows: string[][] = [];
  for (let i = start + 2; i < lines.length && lines[i]!.startsWith('|'); i++) rows.push(lines[i]!.split(/(?<!\\)\|/).slice(1, -1).map((c) => c.trim()));
  return rows;
}

describe("docs/safety.md's Planted bugs table states today's seeds", () => {
  it('coordinatorIgnoresSession: the seed that catches it, with no history of how it got there (that is in CHANGELOG.md)', () => {
    const row = tableRows(read('docs/safety.md'), '| planted bug |').find((r) => r[0]!.includes('`coordinatorIgnoresSession'));
    expect(row).toBeDefined();
    // before: "(5019 since a confirmation or renewal onto a session that may have landed unanswered holds the session's renewals)"
    for (const cell of row!) expect(cell).not.toMatch(/\b\d{4} since\b/);
    expect(read('CHANGELOG.md').replace(/\s+/g, ' ')).toContain(
      "(5019 since a confirmation or renewal onto a session that may have landed unanswered holds the session's renewals)",
    );
  });
});

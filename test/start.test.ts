import { spawnSync } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

describe('npm start -- --short', () => {
  it('plays the stories on its own DynamoDB Local with three worker processes, prints the summary, and exits 0', () => {
    const dir = mkdtempSync(join(tmpdir(), 'conclave-start-'));
    const r = spawnSync(process.execPath, ['--import', 'tsx', 'lib/local/start.ts', '--short', '--dir', dir], { encoding: 'utf8', timeout: 110_000 });
    expect(r.stderr).not.toMatch(/Error/);
    expect(r.status).toBe(0);
    const out = r.stdout;
    // The live timeline: each worker's own start line, with its versions and fencing token.
    expect(out).toMatch(/▶ w1 leads \(emulation 1\.30\.0, binary 1\.30\.0\) · fencing token 1/);
    // The summary: every step held, in order, with the leader the KEP's ordering picks.
    const summary = out.slice(out.indexOf('\nSummary'));
    const steps = summary.split('\n').filter((l) => /^\s+[✓✗] /.test(l));
    expect(steps.map((l) => l.trim().split(/\s{2,}/)[0])).toEqual(['✓ w1, w2, w3 start', '✓ upgrade w1 to 1.31.0', '✓ kill -9 w2', '✓ restart w2', '✓ stop w2']);
    expect(steps.map((l) => /leader (\S+)/.exec(l)![1])).toEqual(['w1', 'w2', 'w3', 'w2', 'w3']);
    const tokens = steps.map((l) => Number(/token\s+(\d+)/.exec(l)![1]));
    expect(tokens).toEqual([...tokens].sort((a, b) => a - b));
    expect(new Set(tokens).size).toBe(tokens.length);
    expect(summary).toMatch(/two leaders at once: never/);
    expect(summary).toMatch(/Leader Changed events: 4 for 4 leader changes/);
    expect(summary).toMatch(/dead letters: 0/);
    expect(summary).toMatch(/all expectations held/);
  }, 120_000);
});

import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';

describe('npm start', () => {
  it('walks through an election and a preemption on its own DynamoDB Local, and exits 0', () => {
    const r = spawnSync(process.execPath, ['--import', 'tsx', 'lib/local/start.ts'], { encoding: 'utf8', timeout: 90_000 });
    expect(r.stderr).not.toMatch(/Error/);
    expect(r.status).toBe(0);
    expect(r.stdout).toMatch(/elected worker-a/);
    expect(r.stdout).toMatch(/asked worker-a to yield to worker-old/);
    expect(r.stdout).toMatch(/elected worker-old .*\n.*holder=worker-old fencingToken=2/);
  }, 120_000);
});

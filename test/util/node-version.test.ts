/**
 * The shipped commands (`conclave`, `conclave-local`) stop on a Node older than 22 with a message
 * that says what to do, instead of failing somewhere later: npm only warns about `engines`.
 */
import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { MIN_NODE_MAJOR, nodeTooOld } from '../../lib/util/node-version.js';
import { NODE_TOO_OLD_CODE } from '../../lib/util/node-support.js';
import { REPO_ROOT } from '../../scripts/import-graph.js';

describe('nodeTooOld', () => {
  it('passes Node 22 and newer, and names the fix for older ones', () => {
    expect(MIN_NODE_MAJOR).toBe(22);
    expect(nodeTooOld('v22.0.0')).toBeUndefined();
    expect(nodeTooOld('v24.3.1')).toBeUndefined();
    expect(nodeTooOld('v20.19.5')).toBe('Conclave needs Node 22 or newer, and this is Node v20.19.5: install Node 22 (for example `nvm install 22`), or run the command through it (`npx -p node@22 -- <command>`)');
    expect(nodeTooOld('v18.20.0')).toMatch(/^Conclave needs Node 22 or newer/);
    expect(nodeTooOld('nonsense')).toMatch(/^Conclave needs Node 22 or newer/);
  });
});

describe('a command started on an older Node', () => {
  /** Runs `entry` after making process.version read `version`, as the command's first import sees it. */
  const start = (entry: string, version: string) =>
    spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', `Object.defineProperty(process, 'version', { value: ${JSON.stringify(version)} }); process.argv[2] = '--help'; await import(${JSON.stringify(`${REPO_ROOT}/${entry}`)});`], { cwd: REPO_ROOT, encoding: 'utf8', timeout: 120_000 });

  it.each(['lib/cli/bin.ts', 'lib/testing/bin.ts'])('%s stops before anything else, with the message and status 1', (entry) => {
    const r = start(entry, 'v20.19.5');
    expect(r.stderr.trim()).toBe(`error: ${nodeTooOld('v20.19.5')}`);
    expect(r.status).toBe(1);
    expect(r.stdout).toBe('');
  });
});

describe('the SDK imported on an older Node', () => {
  /** Imports `entries` after making process.version read `version`; what the process printed. */
  const load = (version: string, ...entries: string[]) =>
    spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', `Object.defineProperty(process, 'version', { value: ${JSON.stringify(version)} }); ${entries.map((e) => `await import(${JSON.stringify(`${REPO_ROOT}/${e}`)});`).join(' ')} console.log('loaded');`], { cwd: REPO_ROOT, encoding: 'utf8', timeout: 120_000 });

  it('says so once, as a process warning naming the fix, and goes on (a library does not stop its host)', () => {
    // before 2026-12-05: nothing at all on Node 20, though the package supports 22 and later only
    const r = load('v20.19.5', 'lib/sdk/index.ts', 'lib/sdk/push-entry.ts');
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout.trim()).toBe('loaded');
    const said = r.stderr.split('\n').filter((l) => l.includes(NODE_TOO_OLD_CODE));
    expect(said).toEqual([expect.stringContaining(`[${NODE_TOO_OLD_CODE}] Warning: ${nodeTooOld('v20.19.5')}; it is not supported on this Node`)]);
  });

  it('says nothing on Node 22', () => {
    const r = load('v22.12.0', 'lib/sdk/index.ts');
    expect(r.status, r.stderr).toBe(0);
    expect(r.stderr).not.toContain(NODE_TOO_OLD_CODE);
  });
});

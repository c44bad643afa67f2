import { spawnSync } from 'node:child_process';
import { appendFileSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Lease } from '../../lib/schemas/lease.js';
import { MIN, NOW, cand, lease } from '../fixtures.js';
import { bin, binChild, binIntoClosedReader, cliHarness, type CliHarness } from './harness.js';

/** The real `bin/conclave.mjs` in a child process: tsx, commander, exit codes and streams as a user sees them. */
let h: CliHarness;
beforeAll(async () => {
  h = await cliHarness('cli-bin');
  // Stamps near the real time: the bin runs on the system clock.
  const now = Date.now();
  // A long term: the subprocesses take seconds to start on a busy machine, and the table shows "in …".
  await h.seedLease(lease('b1', { name: 'bl', renewTime: now, acquireTime: now - MIN, leaseDurationSeconds: 3_600 }));
  await h.seedCandidate(cand('b1', '1.30.0', '1.30.0', { leaseName: 'bl', renewTime: now }));
  await h.seedCandidate(cand('b2', '1.31.0', '1.31.0', { leaseName: 'bl', renewTime: now }));
});
afterAll(() => h.t.drop());

const noStack = (s: string) => expect(s).not.toMatch(/^\s+at /m);

describe('bin/conclave.mjs', () => {
  it('--help lists the commands, exit 0', () => {
    const r = bin(['--help']);
    expect(r.status).toBe(0);
    for (const c of ['get', 'describe', 'set-priority', 'set-strategy', 'preempt', 'release', 'watch', 'events']) expect(r.stdout).toMatch(new RegExp(`^  ${c} `, 'm'));
  });

  it('--version (and -V) prints the version of @conclave/cli, exit 0', () => {
    const { version } = JSON.parse(readFileSync(new URL('../../packages/cli/package.json', import.meta.url), 'utf8')) as { version: string };
    for (const flag of ['--version', '-V']) {
      const r = bin([flag]);
      expect(r.status).toBe(0);
      expect(r.stdout.trim()).toBe(version);
    }
  });

  it("a command's --help lists the global options too (where DynamoDB is, the tables, the output)", () => {
    for (const argv of [['leader', '--help'], ['get', 'leases', '--help'], ['set-priority', '--help']]) {
      const r = bin(argv);
      expect(r.status).toBe(0);
      for (const o of ['--endpoint <url>', '--table-prefix <prefix>', '-o, --output <format>']) expect({ argv, has: r.stdout.includes(o) }).toEqual({ argv, has: true });
    }
  });

  it("the help points a user of the packages to `npx conclave-local`, not to this repository's `npm start`", () => {
    const root = bin(['--help']);
    expect(root.stdout).toContain('Examples (local mode: `npx conclave-local`, from @conclave/testing, prints the endpoint and prefix):');
    const events = bin(['events', '--help']);
    expect(events.stdout).toContain("tail the local system's events (the JSON lines `npx conclave-local` writes)");
    expect(events.stdout).toMatch(/--events-file <path> +the local system's events file \(env\s+CONCLAVE_EVENTS_FILE; default\s+\.local\/events\.jsonl/);
    for (const r of [root, events]) expect(r.stdout).not.toMatch(/npm start/);
  });

  it('get leases: table and -o json', () => {
    const t = bin([...h.target, 'get', 'leases']);
    expect(t.status).toBe(0);
    expect(t.stdout).toMatch(/^NAME +HOLDER +TOKEN +STRATEGY +ELECTION +PREFERRED +RENEWED +EXPIRES\nbl +b1 +7 +- +- +- +\d+s ago +in \d+m\d+s\n$/);
    const j = bin([...h.target, '-o', 'json', 'get', 'leases']);
    expect((JSON.parse(j.stdout) as Lease[]).map((l) => [l.name, l.holderIdentity])).toEqual([['bl', 'b1']]);
  });

  it('set-priority and release write to the table', async () => {
    const p = bin([...h.target, 'set-priority', 'bl', 'b2', '3', '--for', '1h', '--yes']);
    expect(p.stderr).toMatch(/^change candidate b2 of lease bl:\n {2}FIELD +BEFORE +AFTER\n {2}priority +- +3\n/);
    expect(p.status).toBe(0);
    const c = (await h.candidates.read('bl', 'b2')).item!;
    expect(c.priority).toBe(3);
    expect(c.priorityExpiresAt! - c.renewTime).toBeGreaterThan(59 * MIN);
    const r = bin([...h.target, 'release', 'bl', '--force', '--yes']);
    expect(r.status).toBe(0);
    expect(r.stdout).toMatch(/b1 was not asked to stop: it may act until its next renewal, at most \d+s from now; its writes fenced with token 7 fail from now on/);
    const after = (await h.leases.read('bl')).item!;
    expect(after.lastHolderIdentity).toBe('b1');
    expect(after).not.toHaveProperty('holderIdentity');
    const again = bin([...h.target, 'release', 'bl', '--force', '--yes']);
    expect(again.status).toBe(0);
    expect(again.stderr).toBe('lease bl has no holder (the last one was b1); nothing to release\n');
  });

  it('a write without --yes, stdin not a terminal: exit 1, says to pass --yes, writes nothing', async () => {
    const r = spawnSync(process.execPath, ['bin/conclave.mjs', ...h.target, 'set-priority', 'bl', 'b1', '9'], { encoding: 'utf8', input: 'y\n', env: { ...process.env, NO_COLOR: '1' } });
    expect(r.status).toBe(1);
    expect(r.stdout).toBe('');
    expect(r.stderr).toMatch(/\nerror: not confirmed: stdin is not a terminal, so nobody can answer - pass --yes \(-y\) to make this change; nothing was written\n$/);
    expect((await h.candidates.read('bl', 'b1')).item?.priority).toBeUndefined();
  });

  it('an unreachable endpoint: exit 1, what to do, no stack trace', () => {
    const r = bin(['--endpoint', 'http://127.0.0.1:1', 'describe', 'lease', 'x']);
    expect(r.status).toBe(1);
    expect(r.stdout).toBe('');
    expect(r.stderr).toBe(
      'error: cannot reach DynamoDB at http://127.0.0.1:1 (ECONNREFUSED) - is the local system (`npx conclave-local`, from @conclave/testing) running? It prints the endpoint to pass as --endpoint URL (or set CONCLAVE_ENDPOINT)\n',
    );
    noStack(r.stderr);
  });

  it('no credentials: exit 1 with how to configure them', () => {
    const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('AWS_') && !k.startsWith('CONCLAVE_')));
    const r = bin(['--region', 'eu-west-1', 'get', 'leases'], {
      ...env,
      AWS_EC2_METADATA_DISABLED: 'true', // no instance metadata lookup: the chain ends at once
      AWS_CONFIG_FILE: join(tmpdir(), 'conclave-no-such-config'),
      AWS_SHARED_CREDENTIALS_FILE: join(tmpdir(), 'conclave-no-such-credentials'),
    });
    expect(r.status).toBe(1);
    expect(r.stderr).toMatch(/^error: no AWS credentials found - configure them \(aws configure, aws sso login with AWS_PROFILE, or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY\), or pass --endpoint URL for DynamoDB Local\n$/);
  });

  it('a usage error exits 2', () => {
    const r = bin(['set-priority', 'bl']);
    expect(r.status).toBe(2);
    expect(r.stderr).toMatch(/missing required argument 'candidate'/);
  });

  it('watch --count 2 draws two frames and exits', () => {
    const r = bin([...h.target, 'watch', '--count', '2', '--interval', '100ms']);
    expect(r.status).toBe(0);
    expect(r.stdout.match(/^conclave watch - every 0\.1s - /gm)).toHaveLength(2);
    expect(r.stdout.match(/^bl /gm)).toHaveLength(2);
  });

  it('events: filters, and a bad line reported on stderr with its number', () => {
    const dir = mkdtempSync(join(tmpdir(), 'conclave-bin-events-'));
    const file = join(dir, 'events.jsonl');
    const ev = (lease: string, holder: string, token: number) =>
      JSON.stringify({ time: new Date(NOW).toISOString(), source: 'conclave', detailType: 'Leader Elected', detail: { id: `e${token}:x`, lease, time: new Date(NOW).toISOString(), holder, fencingToken: token, leaseTransitions: 0 } });
    writeFileSync(file, [ev('a', 'x1', 1), 'not json', ev('b', 'y1', 1)].join('\n') + '\n');
    const r = bin(['events', '--events-file', file, '--lease', 'b', '--type', 'Leader Elected']);
    expect(r.status).toBe(0);
    expect(r.stdout).toBe('2026-01-01T12:00:00.000Z  Leader Elected               b  y1 leads, fencing token 1\n');
    expect(r.stderr).toMatch(new RegExp(`^${file}:2: skipped: not JSON`));
  });

  it('events --follow picks up an appended line, and stops on SIGTERM with exit 0', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'conclave-bin-follow-'));
    const file = join(dir, 'events.jsonl');
    const ev = (holder: string, token: number) =>
      JSON.stringify({ time: new Date(NOW + token).toISOString(), source: 'conclave', detailType: 'Leader Elected', detail: { id: `f${token}:x`, lease: 'f', time: new Date(NOW + token).toISOString(), holder, fencingToken: token, leaseTransitions: token - 1 } });
    writeFileSync(file, `${ev('first', 1)}\n`);
    const p = binChild(['events', '--follow', '--events-file', file]);
    try {
      await p.until(/first leads/);
      appendFileSync(file, `${ev('second', 2)}\n`);
      await p.until(/second leads/);
    } finally {
      p.child.kill('SIGTERM');
    }
    expect(await p.exited).toBe(0);
    expect(p.out().trim().split('\n')).toHaveLength(2);
    expect(p.err()).toBe('');
  });
});

describe('a reader that stops reading (`conclave … | head`)', () => {
  const dir = mkdtempSync(join(tmpdir(), 'conclave-bin-pipe-'));
  const file = join(dir, 'events.jsonl');
  // several pipe buffers' worth (a pipe holds 64 KiB): the bin is still writing when the reader goes
  const ev = (i: number) =>
    JSON.stringify({ time: new Date(NOW + i).toISOString(), source: 'conclave', detailType: 'Leader Elected', detail: { id: `p${i}:x`, lease: `lease-${i}`, time: new Date(NOW + i).toISOString(), holder: 'w1', fencingToken: i + 1, leaseTransitions: 0 } });
  writeFileSync(file, `${Array.from({ length: 5_000 }, (_, i) => ev(i)).join('\n')}\n`);

  it('events | head -1: the first line, then the bin ends quietly by SIGPIPE, as git and cat do (a shell shows 141 under pipefail)', async () => {
    const r = await binIntoClosedReader(['events', '--events-file', file], 1);
    expect(r.read).toEqual(['2026-01-01T12:00:00.000Z  Leader Elected               lease-0  w1 leads, fencing token 1']);
    expect(r.stderr).toBe('');
    expect(r).toMatchObject({ status: null, signal: 'SIGPIPE' });
  });

  it.each([
    ['describe lease', () => [...h.target, 'describe', 'lease', 'bl']],
    ['get leases', () => [...h.target, 'get', 'leases']],
    ['get candidates', () => [...h.target, 'get', 'candidates']],
    ['watch', () => [...h.target, 'watch', 'bl', '--interval', '100ms']],
    ['events --follow', () => ['events', '--follow', '--events-file', file]],
    ['--help', () => ['--help']],
  ])('%s, its reader gone before the first line: no stack trace, ended by SIGPIPE', async (_name, argv) => {
    const r = await binIntoClosedReader(argv(), 0);
    expect(r.stderr).toBe('');
    expect(r).toMatchObject({ status: null, signal: 'SIGPIPE' });
  });
});

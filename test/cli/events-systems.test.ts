/**
 * Every local runtime appends to the same .local/events.jsonl (another --table-prefix, another
 * endpoint, an earlier in-memory run). Before, `conclave events --lease X` interleaved their
 * histories: a term of one system followed by another's read as a leader change nobody explains.
 * Each line is tagged with the system that wrote it (its table prefix and endpoint), and `conclave
 * events` shows one system's lines, saying how many of others' it skipped. Untagged lines (written
 * before 0.2.0) are shown as they are.
 */
import { appendFileSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runMain } from './harness.js';

const NOW = Date.parse('2026-01-01T12:00:00.000Z');
const iso = (ms: number) => new Date(ms).toISOString();
const A = { tablePrefix: 'conclave-local', endpoint: 'http://127.0.0.1:41001' };
const B = { tablePrefix: 'orphan-test', endpoint: 'http://127.0.0.1:41002' };
/** A Leader Elected line of `system` (untagged without one), `s` seconds in. */
const elected = (holder: string, token: number, s: number, system?: { tablePrefix: string; endpoint: string }) =>
  JSON.stringify({ time: iso(NOW + s * 1000), source: 'conclave', detailType: 'Leader Elected', detail: { id: `r${s}`, time: iso(NOW + s * 1000), lease: 'jobs', holder, fencingToken: token, leaseTransitions: 0 }, ...system });

const dir = mkdtempSync(join(tmpdir(), 'conclave-events-systems-'));
const file = join(dir, 'events.jsonl');
// an old untagged line, then two systems interleaved: B started last
writeFileSync(file, `${[elected('old', 1, 0), elected('a1', 1, 1, A), elected('b1', 1, 2, B), elected('a2', 2, 3, A), elected('b2', 2, 4, B)].join('\n')}\n`);
const holders = (out: string) => out.split('\n').filter(Boolean).map((l) => / (\w+) leads/.exec(l)?.[1]);

describe('conclave events, lines of several local systems in one file', () => {
  it('pointed at none: the system that wrote last, the others counted and named with the flags that show them', async () => {
    const r = await runMain(['events', '--events-file', file, '--lease', 'jobs']);
    expect(r.code).toBe(0);
    // before: old, a1, b1, a2, b2 (a1 -> b1 -> a2 read as leader changes), nothing said
    expect(holders(r.out)).toEqual(['old', 'b1', 'b2']);
    expect(r.err).toBe(`note: skipped 2 lines of another local system in ${file} (prefix conclave-local at http://127.0.0.1:41001: 2); shown: prefix orphan-test at http://127.0.0.1:41002's - pass --table-prefix conclave-local --endpoint http://127.0.0.1:41001 to see another's`);
  });

  it('pointed at one by --table-prefix, or by CONCLAVE_TABLE_PREFIX and CONCLAVE_ENDPOINT (the lines conclave-local prints): its lines', async () => {
    expect(holders((await runMain(['--table-prefix', 'conclave-local', 'events', '--events-file', file])).out)).toEqual(['old', 'a1', 'a2']);
    const r = await runMain(['events', '--events-file', file], { env: { CONCLAVE_TABLE_PREFIX: A.tablePrefix, CONCLAVE_ENDPOINT: `${A.endpoint}/` } });
    expect(holders(r.out)).toEqual(['old', 'a1', 'a2']);
    expect(r.err).toMatch(/^note: skipped 2 lines of another local system .*\(prefix orphan-test at http:\/\/127\.0\.0\.1:41002: 2\); shown: prefix conclave-local at http:\/\/127\.0\.0\.1:41001\/'s/);
    // the same prefix at another endpoint (an earlier in-memory run on another port) is another system
    const none = await runMain(['--table-prefix', 'conclave-local', '--endpoint', 'http://127.0.0.1:9', 'events', '--events-file', file]);
    expect(holders(none.out)).toEqual(['old']);
    expect(none.err).toMatch(/^note: skipped 4 lines of 2 other local systems /);
  });

  // found by a review (2026-12-06, eighth): `--endpoint http://localhost:PORT` showed nothing, exit 0, and called the
  // system that wrote the file (http://127.0.0.1:PORT) "another": the endpoints were compared as text
  it('pointed at a loopback endpoint spelt another way (localhost, ::1, 127.x.y.z): the same system, same port and scheme', async () => {
    for (const endpoint of ['http://localhost:41001', 'http://LOCALHOST:41001/', 'http://[::1]:41001', 'http://127.0.0.2:41001']) {
      const r = await runMain(['--endpoint', endpoint, 'events', '--events-file', file]);
      expect({ endpoint, code: r.code, holders: holders(r.out) }).toEqual({ endpoint, code: 0, holders: ['old', 'a1', 'a2'] });
      expect(r.err).toMatch(/^note: skipped 2 lines of another local system .*\(prefix orphan-test at http:\/\/127\.0\.0\.1:41002: 2\); shown: prefix conclave-local at http:\/\/127\.0\.0\.1:41001's/);
    }
    // another port, another scheme, another host: another system
    for (const endpoint of ['http://localhost:41009', 'https://localhost:41001', 'http://10.0.0.1:41001']) {
      const r = await runMain(['--endpoint', endpoint, 'events', '--events-file', file]);
      expect({ endpoint, holders: holders(r.out) }).toEqual({ endpoint, holders: ['old'] });
    }
  });

  it('-o json: the shown system only', async () => {
    const r = await runMain(['--table-prefix', 'orphan-test', '-o', 'json', 'events', '--events-file', file]);
    expect((JSON.parse(r.out) as Array<{ detail: { holder: string } }>).map((e) => e.detail.holder)).toEqual(['old', 'b1', 'b2']);
  });

  it('--follow: a system that starts writing later is told once and skipped', async () => {
    const followed = join(dir, 'followed.jsonl');
    writeFileSync(followed, `${elected('a1', 1, 1, A)}\n`);
    const stop = new AbortController();
    const steps = [() => appendFileSync(followed, `${elected('b1', 1, 2, B)}\n${elected('b2', 2, 3, B)}\n${elected('a2', 2, 4, A)}\n`), () => stop.abort()];
    const r = await runMain(['events', '--follow', '--events-file', followed], { pace: { signal: stop.signal, sleep: async () => steps.shift()?.() } });
    expect(r.code).toBe(0);
    expect(holders(r.out)).toEqual(['a1', 'a2']);
    expect(r.err).toBe(`note: skipping the lines of another local system in ${followed}: prefix orphan-test at http://127.0.0.1:41002 (showing prefix conclave-local at http://127.0.0.1:41001's) - pass --table-prefix orphan-test --endpoint http://127.0.0.1:41002 to see its lines`);
  });

  it('one system only (or untagged lines alone): nothing said', async () => {
    const one = join(dir, 'one.jsonl');
    writeFileSync(one, `${[elected('old', 1, 0), elected('a1', 1, 1, A)].join('\n')}\n`);
    expect(await runMain(['events', '--events-file', one])).toMatchObject({ code: 0, err: '' });
  });
});

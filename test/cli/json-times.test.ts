/**
 * `-o json` is public API (CHANGELOG): its times are epoch milliseconds, but for one attribute:
 * `expiresAt` on a candidate row (and a session row), DynamoDB's TTL, which DynamoDB requires in
 * epoch seconds. A review (2026-12-06, eighth) found docs/cli.md promising milliseconds for every
 * time: a script doing `new Date(expiresAt)` got 1970. The JSON keeps the row's attribute as stored
 * (as `aws dynamodb get-item` and the SDK's Candidate type show it, and as 0.1 printed it), and
 * docs/cli.md names the exception.
 */
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { manualClock } from '../../lib/clock.js';
import type { Candidate } from '../../lib/schemas/candidate.js';
import { NOW, SEC, cand, lease } from '../fixtures.js';
import { cliHarness, type CliHarness } from './harness.js';

const TTL = Math.floor(NOW / 1000) + 600; // the row's TTL: epoch seconds, 10 minutes on

let h: CliHarness;
beforeAll(async () => {
  h = await cliHarness('cli-json-times');
  await h.seedLease(lease('t1', { name: 'ttl' }));
  await h.seedCandidate(cand('t1', '1.31.0', '1.31.0', { leaseName: 'ttl', expiresAt: TTL }));
});
afterAll(() => h.t.drop());

describe("-o json: a candidate's expiresAt", () => {
  it('is the row\'s TTL attribute as stored, epoch seconds (get candidates, describe lease), beside times in milliseconds', async () => {
    const got = await h.run(['-o', 'json', 'get', 'candidates', 'ttl'], { clock: manualClock(NOW + SEC) });
    const [row] = JSON.parse(got.out) as Candidate[];
    expect(row).toMatchObject({ expiresAt: TTL, renewTime: NOW });
    const described = await h.run(['-o', 'json', 'describe', 'lease', 'ttl'], { clock: manualClock(NOW + SEC) });
    expect((JSON.parse(described.out) as { candidates: Candidate[] }).candidates.map((c) => c.expiresAt)).toEqual([TTL]);
  });

  it('docs/cli.md names it the one exception to epoch milliseconds, where it says JSON keeps raw values', () => {
    const doc = readFileSync(new URL('../../docs/cli.md', import.meta.url), 'utf8');
    // before: "`json`: the items as parsed from the table, raw values (epoch ms)" and "Times in the tables are epoch milliseconds", no exception
    const option = doc.split('\n').find((l) => l.startsWith('| `-o table\\|json` |'));
    expect(option).toMatch(/raw values \(times in epoch ms; `expiresAt`, DynamoDB's TTL on candidate and session rows, in epoch seconds\)/);
    expect(doc).toMatch(/Times in the tables are epoch milliseconds, but for one attribute: `expiresAt` on a candidate row, and on a\s+session row \(`judged\.session\.row`\), is DynamoDB's TTL, in epoch seconds/);
  });
});

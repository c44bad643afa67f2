/**
 * withLease's run-once decisions (lib/sdk/run-once-windows.ts), as plain functions of the row's
 * runs: each periodic window judged only by its own period's windows, each period keeping its 32
 * newest, runs recorded before runs named their period read by their window's form. On DynamoDB
 * Local: with-lease-local.test.ts (mixed periods, a ninth period).
 */
import { describe, expect, it } from 'vitest';
import { MAX_COMPLETED_RUNS } from '../../lib/schemas/lease.js';
import { MAX_PERIODS, type Period, type WindowRun } from '../../lib/schemas/run-once.js';
import { newPeriodRefusal, nextWindow, periodOf, rememberRun, windowRun } from '../../lib/sdk/run-once-windows.js';

const T0 = Date.UTC(2026, 1, 1);
const HOUR = 3_600_000;
const run = (window: string, every?: Period): WindowRun => ({ window, fencingToken: 1, holder: 'w', at: T0, ...(every !== undefined ? { every } : {}) });
/** `n` hour windows, newest first, the oldest `from` hours after T0; `legacy`: recorded before runs named their period. */
const hours = (from: number, n: number, legacy = false) => Array.from({ length: n }, (_, i) => run(new Date(T0 + (from + n - 1 - i) * HOUR).toISOString().slice(0, 13), legacy ? undefined : 'hour'));
/** `n` day windows, newest first, the oldest `from` days after 2026-02-01. */
const days = (from: number, n: number) => Array.from({ length: n }, (_, i) => run(new Date(T0 + (from + n - 1 - i) * 24 * HOUR).toISOString().slice(0, 10), 'day'));
const iso = (ms: number) => new Date(T0 + ms).toISOString();
/** `n` windows of `len` ms, newest first, the oldest starting at `from` ms after T0; `legacy`: recorded before runs named their period. */
const slices = (len: number, from: number, n: number, legacy = false) => Array.from({ length: n }, (_, i) => run(iso(from + (n - 1 - i) * len), legacy ? undefined : len));

describe('windowRun: a window is judged by its own period only', () => {
  const rows: { name: string; runs: WindowRun[]; window: string; every: Period | undefined; want: 'ran' | 'forgotten' | 'open' }[] = [
    { name: 'a day after 32 newer-named hours: open (the issue: skipped as older than all 32 kept)', runs: hours(8, 32), window: '2026-02-01', every: 'day', want: 'open' },
    { name: 'the same, the hours recorded before runs named their period', runs: hours(8, 32, true), window: '2026-02-01', every: 'day', want: 'open' },
    { name: 'an hour older than the 32 newest hours: forgotten', runs: hours(8, 32), window: '2026-02-01T03', every: 'hour', want: 'forgotten' },
    { name: 'an hour among them: ran', runs: hours(8, 32), window: '2026-02-01T10', every: 'hour', want: 'ran' },
    { name: 'an hour older than 31 hours only: open', runs: hours(8, 31), window: '2026-02-01T03', every: 'hour', want: 'open' },
    { name: 'a day older than the 32 newest days: forgotten, whatever hours are kept beside them', runs: [...hours(800, 40), ...days(30, 32)], window: '2026-02-01', every: 'day', want: 'forgotten' },
    { name: 'a day between them: open', runs: [...hours(0, 40), ...days(30, 31), run('2026-01-01', 'day')], window: '2026-02-01', every: 'day', want: 'open' },
    { name: '15-minute window named as a 5-minute one that ran: open', runs: [run(iso(15 * 60_000), 300_000)], window: iso(15 * 60_000), every: 900_000, want: 'open' },
    { name: 'a 15-minute window older than 32 five-minute ones: open', runs: slices(300_000, 3_600_000, 32), window: iso(0), every: 900_000, want: 'open' },
    { name: 'a 5-minute window older than 32 five-minute ones: forgotten', runs: slices(300_000, 3_600_000, 32), window: iso(0), every: 300_000, want: 'forgotten' },
    { name: 'a run recorded before runs named their period, same name, any length in ms: ran', runs: [run(iso(15 * 60_000))], window: iso(15 * 60_000), every: 900_000, want: 'ran' },
    { name: 'older than 32 such runs, any length in ms: forgotten (one of them may be its own)', runs: slices(300_000, 3_600_000, 32, true), window: iso(0), every: 900_000, want: 'forgotten' },
    { name: 'a keyed window: its own row, never forgotten', runs: [run('migration-7')], window: 'migration-7', every: undefined, want: 'ran' },
  ];
  it.each(rows)('$name', ({ runs, window, every, want }) => {
    const r = windowRun(runs, window, every);
    expect(r === undefined ? 'open' : r.run ? 'ran' : 'forgotten').toBe(want);
  });

  it('judges by the 32 newest of the period, not every run kept of it: a legacy run kept for its own kind does not reopen a dropped window', () => {
    // 32 newer 5-minute runs and an older legacy run (kept while among the newest legacy ones): a dropped 5-minute window between them stays forgotten
    const runs = [...slices(300_000, 3_600_000, 32), run(iso(-HOUR))];
    expect(windowRun(runs, iso(0), 300_000)).toEqual({ run: undefined });
  });
});

describe('rememberRun: each period keeps its 32 newest windows', () => {
  it('a day completed after 40 hours is kept, and so are the 32 newest hours; more hours push out only hours', () => {
    let runs = hours(0, 40).slice(0, MAX_COMPLETED_RUNS);
    runs = rememberRun(runs, run('2026-02-01', 'day') as WindowRun & { every: Period });
    expect(runs.map((r) => r.window)).toContain('2026-02-01');
    for (const h of hours(40, 10).reverse()) runs = rememberRun(runs, h as WindowRun & { every: Period });
    expect(runs.filter((r) => periodOf(r) === 'hour').map((r) => r.window)).toEqual(hours(18, 32).map((r) => r.window));
    expect(runs.filter((r) => periodOf(r) === 'day').map((r) => r.window)).toEqual(['2026-02-01']);
    expect(windowRun(runs, '2026-02-01', 'day')).toEqual({ run: expect.objectContaining({ window: '2026-02-01' }) });
  });

  it('a late retry of an older window never pushes out a newer one of its period; same-named windows of two lengths in ms are both kept', () => {
    const five = slices(300_000, 0, 32);
    const late = rememberRun(five, run(iso(-300_000), 300_000) as WindowRun & { every: Period });
    expect(late).toEqual(five); // older than all 32: dropped at once, as before
    const both = rememberRun(five, run(iso(0), 900_000) as WindowRun & { every: Period });
    expect(both.filter((r) => r.window === iso(0)).map((r) => r.every)).toEqual([900_000, 300_000]);
    expect(both).toHaveLength(33);
  });

  it('runs recorded before runs named their period stay while among the newest of their own kind', () => {
    const legacy = slices(300_000, 0, 40, true);
    const after = rememberRun(legacy, run('2026-03-01', 'day') as WindowRun & { every: Period });
    expect(after.filter((r) => r.every === undefined)).toEqual(legacy.slice(0, MAX_COMPLETED_RUNS));
  });
});

describe('newPeriodRefusal', () => {
  const periods: Period[] = ['day', 'hour', 60_000, 120_000, 300_000, 600_000, 900_000, 1_800_000];
  it.each([
    { name: 'fewer than 8 periods kept: a new one is welcome', runs: periods.slice(0, MAX_PERIODS - 1).map((p) => run('x', p)), every: 7_200_000 as Period, refused: false },
    { name: '8 periods kept, one of them: runs', runs: periods.map((p) => run('x', p)), every: 'hour' as Period, refused: false },
    { name: '8 periods kept, a ninth: refused', runs: periods.map((p) => run('x', p)), every: 7_200_000 as Period, refused: true },
  ])('$name', ({ runs, every, refused }) => {
    const why = newPeriodRefusal(runs, every);
    if (!refused) expect(why).toBeUndefined();
    else expect(why).toBe('this lease already keeps windows of 8 periods (day, hour, 60000 ms, 120000 ms, 300000 ms, 600000 ms, 900000 ms, 1800000 ms), the most one lease keeps, and 7200000 ms is not one of them: run this schedule under a lease of its own');
  });
});

describe('nextWindow: when the window after the one a time falls in begins (what a skip near that boundary is told by)', () => {
  const rows: { name: string; every: Period; t: number; want: { start: number; window: string } }[] = [
    { name: 'a day, 300 ms before midnight', every: 'day', t: Date.UTC(2026, 11, 31, 23, 59, 59, 700), want: { start: Date.UTC(2027, 0, 1), window: '2027-01-01' } },
    { name: 'a day, at midnight: the next one', every: 'day', t: Date.UTC(2026, 1, 28), want: { start: Date.UTC(2026, 2, 1), window: '2026-03-01' } },
    { name: 'an hour', every: 'hour', t: Date.UTC(2026, 1, 1, 22, 59, 59, 900), want: { start: Date.UTC(2026, 1, 1, 23), window: '2026-02-01T23' } },
    { name: '15 minutes, epoch-aligned', every: 900_000, t: T0 + 899_999, want: { start: T0 + 900_000, window: iso(900_000) } },
  ];
  it.each(rows)('$name', ({ every, t, want }) => expect(nextWindow(every, t)).toEqual(want));
});

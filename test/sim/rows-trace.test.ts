/**
 * `npm run sim -- --seed N --rows FROM-TO`: a world's timeline also tells the lease, candidate and
 * identity rows that changed, looked at every 250 ms within the window (sim/world.ts RunOptions.rows), so a slow election
 * can be read row by row; outside the window, and without the option, no row is told.
 */
import { describe, expect, it } from 'vitest';
import { generateSchedule } from '../../sim/schedule.js';
import { DEFAULT_SETTINGS, runWorld } from '../../sim/world.js';

process.env['POWERTOOLS_METRICS_DISABLED'] ??= 'true';

/** A seed whose schedule has an operator delete a lease row (test/sim/operator-delete.test.ts). */
const SEED = 3000437;
const at = (line: string) => Number(/^\s*([\d.]+)s/.exec(line)![1]) * 1000;

describe('a world traced with its rows', () => {
  it("tells the rows as they stand at the window's start, each change in it (a delete included), and nothing outside it", { timeout: 120_000 }, async () => {
    const schedule = generateSchedule(SEED, { workers: DEFAULT_SETTINGS.workers, durationMs: DEFAULT_SETTINGS.durationMs });
    const del = schedule.processFaults.find((f) => f.kind === 'deleteLease')!;
    const rows = { fromMs: del.at - 5_000, toMs: del.at + 20_000 };
    const r = await runWorld(schedule, DEFAULT_SETTINGS, { trace: true, rows });
    const told = r.timeline.filter((l) => /^\s*[\d.]+s\s+row /.test(l));
    expect(told.every((l) => at(l) >= rows.fromMs && at(l) <= rows.toMs)).toBe(true);
    const lease = `job-${del.lease}`;
    // as it stood when the window began: the lease row, held
    expect(told.find((l) => at(l) === rows.fromMs && l.includes(`row leases ${lease}: {`))).toMatch(/"holderIdentity":"w\d"/);
    // the delete, told once the rows are looked at after it
    const gone = told.findIndex((l) => l.includes(`row leases ${lease}: deleted`));
    expect(gone).toBeGreaterThan(-1);
    expect(at(told[gone]!)).toBeGreaterThanOrEqual(del.at);
    // candidates are told too
    expect(told.some((l) => l.includes(`row candidates ${lease}/w`))).toBe(true);

    const plain = await runWorld(schedule, DEFAULT_SETTINGS, { trace: true });
    expect(plain.timeline.some((l) => /^\s*[\d.]+s\s+row /.test(l))).toBe(false);
    // the rows are only looked at: the world runs as without them, line for line
    const traced = /^\s*[\d.]+s\s+(row |functions (error|warn):)/;
    expect(r.timeline.filter((l) => !traced.test(l))).toEqual(plain.timeline);
    expect(plain.verdict).toEqual(r.verdict);
  });

  it("tells the functions' errors and warnings within the window, each naming its machine", { timeout: 120_000 }, async () => {
    // seed 5068: an operator writes a held row malformed (the lease stream sends its record to the dead-letter destination), then deletes it
    const schedule = generateSchedule(5068, { workers: DEFAULT_SETTINGS.workers, durationMs: DEFAULT_SETTINGS.durationMs });
    const r = await runWorld(schedule, DEFAULT_SETTINGS, { trace: true, rows: { fromMs: 0, toMs: DEFAULT_SETTINGS.durationMs } });
    // an Error among the extras as its name and message (before: its own fields, the message lost)
    expect(r.timeline.some((l) => /functions error: poison record: .*\{"error":"ValidationError: invalid new image of lease stream record \d+: leaseTransitions/.test(l))).toBe(true);
    expect(r.timeline.some((l) => /functions warn: a broken row deleted while held/.test(l))).toBe(true);
    const early = await runWorld(schedule, DEFAULT_SETTINGS, { trace: true, rows: { fromMs: 0, toMs: 60_000 } });
    expect(early.timeline.some((l) => /functions (error|warn):/.test(l))).toBe(false);
  });
});

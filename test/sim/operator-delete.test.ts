/**
 * An operator deletes a held lease row (docs/safety.md, "A deleted row"; found by seeds 1448349301
 * and 1368225001: CHANGELOG.md, "Seeds 1448349301 and 1368225001"). The checker forgives the deleted term's holder within `revokedGraceMs` of the
 * delete and counts such an overlap apart (`revokedOverlaps`); the product promises one acting
 * leader, so these seeds must show none at all: the next leader is elected no earlier than the
 * deleted term could still be acted on (Election.notBefore, lib/functions/core.ts).
 */
import { describe, expect, it } from 'vitest';
import { formatVerdict } from '../../lib/history/checker.js';
import { generateSchedule, type Schedule } from '../../sim/schedule.js';
import { DEFAULT_SETTINGS, runWorld } from '../../sim/world.js';

process.env['POWERTOOLS_METRICS_DISABLED'] ??= 'true';

/** Seeds whose operator's delete once let two leaders act (before the held election). */
const SEEDS: { seed: number; found: string }[] = [
  { seed: 3000437, found: "the lease stream elected the next leader at once after an operator's delete: 246 ms before the deleted term's holder heard of it (revokedOverlaps)" },
  { seed: 5704226, found: "the lease stream reconciled a record written before the delete (a successor's take) after the row was gone, and elected at once: 1.8 s before the taker heard of the delete at its next session renewal" },
  { seed: 5068, found: "an operator wrote the held row malformed, then deleted it: the lease stream took the broken row's delete for nothing to do, and the tick elected the next leader 37 s later, 5.5 s before the session-held holder read the row gone (overlap)" },
];

describe("an operator's delete of a held row in the simulator", () => {
  it.each(SEEDS)('seed $seed: no overlap after the delete ($found)', { timeout: 120_000 }, async ({ seed }) => {
    const schedule = generateSchedule(seed, { workers: DEFAULT_SETTINGS.workers, durationMs: DEFAULT_SETTINGS.durationMs });
    expect(schedule.processFaults.some((f) => f.kind === 'deleteLease')).toBe(true);
    const r = await runWorld(schedule, DEFAULT_SETTINGS);
    expect(r.counts['fault:deleteLease']).toBeGreaterThan(0);
    expect(r.verdict.violations, formatVerdict(r.verdict).join('\n')).toEqual([]);
    expect(r.verdict.figures.revokedOverlaps, formatVerdict(r.verdict).join('\n')).toBe(0);
  });
});

/** A world written out rather than drawn: three workers on time, no drawn faults; `w` says the rest. */
const written = (w: Pick<Schedule, 'versions' | 'session' | 'push' | 'processFaults' | 'coordinatorDown'> & Partial<Schedule>): Schedule => ({
  ...generateSchedule(1, { workers: 3, durationMs: DEFAULT_SETTINGS.durationMs, faults: false }),
  skewMs: [0, 0, 0],
  driftPpm: undefined,
  userFaults: [],
  peerFaults: [],
  ...w,
});

/** What befell job-0 in a traced world, in order, its times and tokens left out. */
const storyOf = (timeline: readonly string[], pattern: RegExp): string[] => timeline.filter((l) => pattern.test(l)).map((l) => l.replace(/^\s*[\d.]+s\s+/, '').replace(/ \(token.*/, ''));

describe("an operator's delete of a row just handed to a holder on a session (a fleet part way through adopting Sessions)", () => {
  /**
   * w0 leads job-0 on no session, w1 (its successor) and w2 (its second successor) run Sessions, and
   * every wake is lost. w2 freezes; w0 is stopped and hands job-0 to w1, which confirms it onto its
   * session; an operator deletes the row while the functions are down, so w1 hears of it only at its
   * backstop read, a minute later. w2 wakes, finds the row gone, and its last read showed w0's term
   * (off any session, naming it second successor): before the fix it took the lease a lease duration
   * later, and both led for 43.4 s. It now reads the lease's candidates first and, one of them able
   * to hold a term on a session, waits the session fallback.
   */
  const T1 = 60_000;
  const crafted = (): Schedule => written({
    versions: ['1.29.0', '1.30.0', '1.31.0'], // w0 leads, w1 successor, w2 second successor
    session: { renewShare: 0.6, without: [0] },
    push: { delayMs: [1, 5], loss: 1, duplicate: 0, outages: [] },
    processFaults: [
      { kind: 'pause', worker: 2, at: T1 - 500, forMs: 5_000, aimed: false },
      { kind: 'stop', worker: 0, at: T1, forMs: 200_000 },
      { kind: 'deleteLease', lease: 0, at: T1 + 3_500 },
    ],
    coordinatorDown: [{ from: T1 - 1_000, to: T1 + 100_000 }],
  });

  it('the second successor waits the session fallback, not a lease duration: no overlap', { timeout: 120_000 }, async () => {
    const r = await runWorld(crafted(), DEFAULT_SETTINGS, { trace: true });
    const story = storyOf(r.timeline, / (w[12] leads|w1 stops leading) job-0| delete lease job-0/);
    // the scene as set: w1 led the handed term before the delete, and was deposed only at its backstop read
    expect(story.slice(0, 4)).toEqual(['w1 leads job-0', 'delete lease job-0', 'w1 stops leading job-0 (deposed)', 'w2 leads job-0']);
    expect(r.verdict.violations, formatVerdict(r.verdict).join('\n')).toEqual([]);
  });
});

describe("an operator's delete of a session-held row whose holder's timings are longer than its followers' (a fleet part way through a change of timings)", () => {
  /**
   * w1 leads job-0 on its session with timings twice the others' (lease 30 s); the row is deleted
   * while the functions are down, just after w1's own backstop read, so w1 reads it again only about
   * four of its lease durations later. Its followers waited out their own session fallback (figured
   * on their 15 s lease): before the fix w0 took the lease while w1 led on, both leading for 38.5 s.
   * The fallback is now figured on the holder's duration as its row showed it.
   */
  const T1 = 125_000;
  const crafted = (): Schedule => written({
    versions: ['1.30.0', '1.29.0', '1.31.0'], // w1 leads
    session: { renewShare: 0.6 },
    timingScale: [1, 2, 1],
    push: { delayMs: [1, 5], loss: 0, duplicate: 0, outages: [] },
    processFaults: [{ kind: 'deleteLease', lease: 0, at: T1 }],
    coordinatorDown: [{ from: T1 - 1_000, to: T1 + 250_000 }],
  });

  it("its followers wait out the holder's backstop read as its duration sets it: no overlap", { timeout: 120_000 }, async () => {
    const r = await runWorld(crafted(), DEFAULT_SETTINGS, { trace: true });
    const story = storyOf(r.timeline, / (w[0-2] leads|w1 stops leading) job-0| delete lease job-0/);
    // the scene as set: w1 led from the start, the delete came, and w1 read it gone only at its backstop, long after
    expect(story.slice(0, 3)).toEqual(['w1 leads job-0', 'delete lease job-0', 'w1 stops leading job-0 (deposed)']);
    expect(r.verdict.violations, formatVerdict(r.verdict).join('\n')).toEqual([]);
  });
});

describe("an operator's delete of a row a peer pointed at a missing session, its holder on none, the functions down (issue 38: seed 97467's tail in one Region)", () => {
  /**
   * w0 leads job-0 on no session (it renews the row itself), w1 is its successor, w2 its second
   * successor. A peer (w1) writes job-0's `session` to a row that does not exist; w0 dies; an
   * operator deletes the row before w1 would take the expired term; the functions are down from
   * just before w0 dies until 57 s after. The followers found the row gone under a term that named
   * a session and waited the session fallback (78 s), and the coordinator, back, held the
   * re-election a lease duration from when it handled the delete: w1 led job-0 69.3 s after the
   * delete, 76.3 s after w0 died. The named session row is read once the row is found gone: none there, the term could
   * only have lived on the row, and w1 takes it as it takes any row gone under its watch.
   */
  const T1 = 120_000;
  const crafted = (): Schedule => written({
    versions: ['1.29.0', '1.30.0', '1.31.0'], // w0 leads, w1 successor, w2 second successor
    session: undefined,
    push: undefined,
    peerFaults: [{ kind: 'sessionRedirect', lease: 0, worker: 1, at: T1 - 20_000, to: 'missing' }],
    processFaults: [
      { kind: 'kill', worker: 0, at: T1, forMs: 400_000 },
      { kind: 'deleteLease', lease: 0, at: T1 + 7_000 }, // 2.5 s before w1 would take the expired term
    ],
    coordinatorDown: [{ from: T1 - 1_000, to: T1 + 57_000 }],
  });
  /** The times (s) of the lines matching `pattern`. */
  const timesOf = (timeline: readonly string[], pattern: RegExp): number[] => timeline.filter((l) => pattern.test(l)).map((l) => Number(/^\s*([\d.]+)s/.exec(l)![1]));

  it('the successor takes the lease within a lease duration and two retry periods of the delete, without the coordinator: no overlap', { timeout: 120_000 }, async () => {
    const r = await runWorld(crafted(), DEFAULT_SETTINGS, { trace: true });
    const story = storyOf(r.timeline, / (w[0-2] leads) job-0| delete lease job-0| kill w0|rewrites job-0/);
    // the scene as set: w0 led job-0, its session was pointed at a missing row, w0 died, the row was deleted
    expect(story.slice(0, 4)).toEqual(['w0 leads job-0', "w1 rewrites job-0's session to job-0-no-such-session (a missing row)", 'kill w0', 'delete lease job-0']);
    expect(story[4]).toBe('w1 leads job-0');
    const [deleted] = timesOf(r.timeline, / delete lease job-0/);
    const [next] = timesOf(r.timeline, / w1 leads job-0/);
    const { leaseDurationMs, retryPeriodMs } = DEFAULT_SETTINGS;
    expect((next! - deleted!) * 1000, r.timeline.filter((l) => /job-0|kill|coordinator/.test(l)).join('\n')).toBeLessThan(leaseDurationMs + 2 * retryPeriodMs);
    expect(r.verdict.violations, formatVerdict(r.verdict).join('\n')).toEqual([]);
  });
});

describe("an operator's delete of a row a peer pointed at a missing session, its holder on none, its followers on Sessions (issue 38: the coordinator's hold)", () => {
  /**
   * w0 leads job-0 on no session; w1 (its successor) and w2 run Sessions, so a follower that finds
   * the row gone keeps the session fallback (one of the lease's candidates could hold a term on a
   * session): the coordinator elects the next leader. A peer (w1) writes job-0's `session` to a row
   * that does not exist; w0 dies; an operator deletes the row 7 s later, the functions up or down
   * until 57 s after w0 died. The coordinator held the next election a lease duration from when it
   * handled the delete; the term could only have lived on its row (sessionStanding 'none'), so it is
   * now held only until the term runs out by its own stamp (renewTime + lease duration + clockSkewMs).
   */
  const T1 = 120_000;
  const crafted = (down: number): Schedule => written({
    versions: ['1.29.0', '1.30.0', '1.31.0'], // w0 leads, w1 successor, w2 second successor
    session: { renewShare: 0.6, without: [0] },
    push: { delayMs: [1, 5], loss: 0, duplicate: 0, outages: [] },
    peerFaults: [{ kind: 'sessionRedirect', lease: 0, worker: 1, at: T1 - 20_000, to: 'missing' }],
    processFaults: [
      { kind: 'kill', worker: 0, at: T1, forMs: 400_000 },
      { kind: 'deleteLease', lease: 0, at: T1 + 7_000 },
    ],
    coordinatorDown: down > 0 ? [{ from: T1 - 1_000, to: T1 + down }] : [],
  });
  /** The times (s) of the lines matching `pattern`. */
  const timesOf = (timeline: readonly string[], pattern: RegExp): number[] => timeline.filter((l) => pattern.test(l)).map((l) => Number(/^\s*([\d.]+)s/.exec(l)![1]));

  it.each([
    { down: 10_000, within: 'the term’s end by its stamp (a lease duration and clockSkewMs) and an ack window' },
    { down: 57_000, within: 'their return and an ack window' },
  ])('the functions down $down ms: the next leader within $within of w0’s death, not a lease duration after the delete was handled: no overlap', { timeout: 120_000 }, async ({ down }) => {
    const r = await runWorld(crafted(down), DEFAULT_SETTINGS, { trace: true });
    const story = storyOf(r.timeline, / (w[0-2] leads) job-0| delete lease job-0| kill w0|rewrites job-0/);
    // the scene as set: w0 led job-0, its session was pointed at a missing row, w0 died, the row was deleted
    expect(story.slice(0, 4).map((l) => l.replace(/ \(a missing row\)$/, ''))).toEqual(['w0 leads job-0', "w1 rewrites job-0's session to job-0-no-such-session", 'kill w0', 'delete lease job-0']);
    expect(story[4]).toMatch(/^w[12] leads job-0$/);
    const [killed] = timesOf(r.timeline, / kill w0/);
    const [next] = timesOf(r.timeline, / w[12] leads job-0/);
    const ackWindowMs = 5_000;
    const bound = Math.max(down, DEFAULT_SETTINGS.leaseDurationMs + 1_000) + ackWindowMs;
    expect((next! - killed!) * 1000, r.timeline.filter((l) => /job-0|kill|coordinator/.test(l)).join('\n')).toBeLessThan(bound);
    expect(r.verdict.violations, formatVerdict(r.verdict).join('\n')).toEqual([]);
  });
});

describe("an operator's delete of a row held on a Session whose process died (its holder's instance names a process: judged by that process's session rows)", () => {
  /**
   * w0 leads job-0 on its Session; w1 and w2 run Sessions too, so a follower that finds the row gone
   * keeps the session fallback and the coordinator elects the next leader. w0's process dies (its
   * session row stops at its last renewal); an operator deletes the row 7 s later, the functions
   * down from just before the death until 10 or 20 s after (up, the next leader comes before the
   * delete). The coordinator held the next election a lease
   * duration from when it handled the delete; once its mark is on w0's own session row (read after
   * the mark), no renewal of that row can carry the term on, so it is now held only until that
   * row's last stamp runs out (+ a lease duration + clockSkewMs).
   */
  const T1 = 120_000;
  const crafted = (down: number): Schedule => written({
    versions: ['1.29.0', '1.30.0', '1.31.0'], // w0 leads, w1 successor, w2 second successor
    session: { renewShare: 0.6 },
    push: { delayMs: [1, 5], loss: 0, duplicate: 0, outages: [] },
    processFaults: [
      { kind: 'kill', worker: 0, at: T1, forMs: 400_000 },
      { kind: 'deleteLease', lease: 0, at: T1 + 7_000 },
    ],
    coordinatorDown: down > 0 ? [{ from: T1 - 1_000, to: T1 + down }] : [],
  });
  /** The times (s) of the lines matching `pattern`. */
  const timesOf = (timeline: readonly string[], pattern: RegExp): number[] => timeline.filter((l) => pattern.test(l)).map((l) => Number(/^\s*([\d.]+)s/.exec(l)![1]));

  it.each([{ down: 10_000 }, { down: 20_000 }])('the functions down $down ms: the next leader within a lease duration, clockSkewMs and an ack window of w0’s death, not a lease duration after the delete was handled: no overlap', { timeout: 120_000 }, async ({ down }) => {
    const r = await runWorld(crafted(down), DEFAULT_SETTINGS, { trace: true });
    const story = storyOf(r.timeline, / (w[0-2] leads) job-0| delete lease job-0| kill w0/);
    expect(story.slice(0, 3)).toEqual(['w0 leads job-0', 'kill w0', 'delete lease job-0']);
    expect(story[3]).toMatch(/^w[12] leads job-0$/);
    const [killed] = timesOf(r.timeline, / kill w0/);
    const [next] = timesOf(r.timeline, / w[12] leads job-0/);
    const ackWindowMs = 5_000;
    const bound = Math.max(down, DEFAULT_SETTINGS.leaseDurationMs + 1_000) + ackWindowMs;
    expect((next! - killed!) * 1000, r.timeline.filter((l) => /job-0|kill|coordinator/.test(l)).join('\n')).toBeLessThan(bound);
    expect(r.verdict.violations, formatVerdict(r.verdict).join('\n')).toEqual([]);
  });
});

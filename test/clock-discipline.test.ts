/**
 * Time and randomness come in through a Clock (lib/clock.ts): outside that module, no shipped or
 * local-runtime code reads the wall clock, sets a timer or draws a random number on its own. That
 * is what lets tests and a simulator run the real code on time they drive, and replay a seed.
 * Benchmarks (bench/) and the chaos harness (chaos/) measure real time on purpose and are not held
 * to it.
 *
 * Tests are held to a rule of their own: they wait for outcomes, never for time, and measure
 * durations on simulated time (sim/harness.ts), never on the machine's. So no file under
 * test/ sleeps on a raw timer or on systemClock, reads the monotonic clock, computes an elapsed
 * wall-clock figure, or waits for the wall clock to pass a time, except the few allowed below, each
 * with its reason. Where real processes must see real time go by, the wait is for the condition
 * the component judges on its own injected clock (`rt.deps.coordinator.clock`). Date.now() as a
 * stamp (a row's time, DynamoDB Local's TTL) is fine: it is no duration.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = join(import.meta.dirname, '..');
const CHECKED = ['lib', 'functions', 'infra', 'bin'];
const ALLOWED = new Set(['lib/clock.ts']);
/** The calls that reach the machine's time or randomness without a Clock. */
const RAW = /\b(?:Date\.now|setTimeout|setInterval|clearTimeout|clearInterval|setImmediate|Math\.random|performance\.now)\b|\bnew Date\(\s*\)/g;

/** Every `file:line: text` in `source` that uses a raw timer, clock or random source. */
export function rawTimeUses(file: string, source: string): string[] {
  return source.split('\n').flatMap((line, i) => (line.match(RAW) ? [`${file}:${i + 1}: ${line.trim()}`] : []));
}

/**
 * In tests: a raw timer (a sleep or a polling loop), the machine's clock slept on through the Clock
 * (`systemClock.sleep`), the monotonic clock, an elapsed wall-clock figure (`Date.now() - t0`,
 * `deadline - Date.now()`), or a wait for the wall clock to pass a time (`Date.now() >= t`,
 * `t <= Date.now()`). An arrow (`=> Date.now()`) is no comparison.
 */
const REAL_TIME = /\b(?:setTimeout|setInterval|performance\.now|systemClock\.sleep)\b|\bDate\.now\(\)\s*-\s*[A-Za-z_$(]|[\w$)\]!]\s*-\s*Date\.now\(\)|\bDate\.now\(\)\s*[<>]|(?<![=>])[<>]=?\s*Date\.now\(\)/g;

/** Every `file:line: text` in a test's `source` that sleeps on, or times with, the machine's clock. */
export function realTimeUses(file: string, source: string): string[] {
  return source.split('\n').flatMap((line, i) => (line.match(REAL_TIME) ? [`${file}:${i + 1}: ${line.trim()}`] : []));
}

/** The files under test/ that may, how many lines of them, and why. */
const REAL_TIME_ALLOWED: Record<string, { lines?: number; why: string }> = {
  'test/sdk/harness.ts': {
    lines: 4,
    why: 'waitFor polls an outcome of DynamoDB Local or real processes under a generous deadline (an outcome, not a timing); coordinatorLoop paces the in-process coordinator there as its timer would',
  },
  'test/clock-discipline.test.ts': { why: 'the patterns themselves, and the rows that show the check can fail' },
  'test/model/explorer.ts': { lines: 1, why: 'the model check reports how long an exploration took (a figure for safety.md, never asserted on: the exploration is bounded by depth, not time)' },
};

function files(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = join(dir, e.name);
    if (e.isDirectory()) return e.name === 'node_modules' ? [] : files(p);
    return /\.(ts|mts|js|mjs)$/.test(e.name) && !e.name.endsWith('.d.ts') ? [p] : [];
  });
}

describe('clock discipline', () => {
  it('finds each kind of raw use (the check can fail)', () => {
    const src = ['const a = Date.now();', 'setTimeout(f, 1);', 'const t = setInterval(f, 5);', 'x = Math.random();', 'performance.now()', 'new Date()', 'new Date(clock.now())', 'clock.sleep(5)', 'interface OffsetInterval {}'].join('\n');
    expect(rawTimeUses('x.ts', src)).toEqual([
      'x.ts:1: const a = Date.now();',
      'x.ts:2: setTimeout(f, 1);',
      'x.ts:3: const t = setInterval(f, 5);',
      'x.ts:4: x = Math.random();',
      'x.ts:5: performance.now()',
      'x.ts:6: new Date()',
    ]);
  });

  it('no module outside lib/clock.ts calls Date.now, timers, setImmediate, Math.random or performance.now', () => {
    const found = CHECKED.flatMap((d) => files(join(ROOT, d)))
      .map((f) => relative(ROOT, f))
      .filter((f) => !ALLOWED.has(f))
      .flatMap((f) => rawTimeUses(f, readFileSync(join(ROOT, f), 'utf8')));
    expect(found, 'take time, timers and randomness from an injected Clock (lib/clock.ts) instead').toEqual([]);
  });

  it('finds each way a test could sleep on or time with the machine’s clock, and no stamp (the check can fail)', () => {
    const src = [
      'await new Promise((r) => setTimeout(r, 600));',
      'const t0 = performance.now();',
      'expect(performance.now() - t0).toBeLessThan(2_000);',
      'const poll = setInterval(check, 50);',
      'expect(Date.now() - t0).toBeLessThan(15_000);',
      'const margin = first.acquireTime! + 1_000 - Date.now();',
      'const then = Date.now() - 60_000;',
      'const killedAt = Date.now();',
      'await sim.run(600);',
      'await clock.sleep(1_000);',
      'clearTimeout(t);',
      'if (afterMs) await systemClock.sleep(afterMs);',
      "await waitFor('the term old enough', () => Date.now() >= first.acquireTime! + 1_000);",
      'return rows.every((c) => c.renewTime + ackWindowMs <= Date.now());',
      'const stamp = () => Date.now();',
      'const until = { at: Date.now() + 5_000 };',
      'await clock.sleep(Date.now() > 0 ? 1 : 2);',
    ].join('\n');
    expect(realTimeUses('x.test.ts', src)).toEqual([
      'x.test.ts:1: await new Promise((r) => setTimeout(r, 600));',
      'x.test.ts:2: const t0 = performance.now();',
      'x.test.ts:3: expect(performance.now() - t0).toBeLessThan(2_000);',
      'x.test.ts:4: const poll = setInterval(check, 50);',
      'x.test.ts:5: expect(Date.now() - t0).toBeLessThan(15_000);',
      'x.test.ts:6: const margin = first.acquireTime! + 1_000 - Date.now();',
      'x.test.ts:12: if (afterMs) await systemClock.sleep(afterMs);',
      "x.test.ts:13: await waitFor('the term old enough', () => Date.now() >= first.acquireTime! + 1_000);",
      'x.test.ts:14: return rows.every((c) => c.renewTime + ackWindowMs <= Date.now());',
      'x.test.ts:17: await clock.sleep(Date.now() > 0 ? 1 : 2);',
    ]);
  });

  it('no test sleeps on a raw timer, reads the monotonic clock or times anything on the wall clock, outside the allowed files', () => {
    const found = files(join(ROOT, 'test'))
      .map((f) => relative(ROOT, f))
      .map((f) => ({ f, uses: realTimeUses(f, readFileSync(join(ROOT, f), 'utf8')) }));
    const offending = found.filter(({ f, uses }) => uses.length > 0 && !(f in REAL_TIME_ALLOWED)).flatMap(({ uses }) => uses);
    expect(offending, 'wait for an outcome (a simulated clock: sim/harness.ts; real processes: waitFor), and measure durations in simulated ms').toEqual([]);
    // an allowance is exact: one that is no longer used, or outgrown, is taken back or argued again
    const counts = Object.fromEntries(found.filter(({ f }) => f in REAL_TIME_ALLOWED).map(({ f, uses }) => [f, uses.length]));
    for (const [f, { lines }] of Object.entries(REAL_TIME_ALLOWED)) {
      expect(counts[f], `${f} is allowed but not found`).toBeDefined();
      if (lines !== undefined) expect(counts[f], `${f}: ${REAL_TIME_ALLOWED[f]!.why}`).toBe(lines);
    }
  });
});

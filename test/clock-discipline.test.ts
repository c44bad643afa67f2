/**
 * Time and randomness come in through a Clock (lib/clock.ts): outside that module, no shipped or
 * local-runtime code reads the wall clock, sets a timer or draws a random number on its own. That
 * is what lets tests and a simulator run the real code on time they drive, and replay a seed.
 * Benchmarks (bench/) and the chaos harness (chaos/) measure real time on purpose and are not held
 * to it; nor are tests.
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
});

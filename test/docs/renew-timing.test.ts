/**
 * The renew timing the docs and comments state is the leader's arithmetic (lib/sdk/step.ts
 * leaderDelay, lib/sdk/elector-options.ts renewCadenceMs). Two figures sat side by side, 137 ms
 * and 138 ms, for what read as one quantity, and docs/benchmarks.md said the longest interval the
 * option allows "rides out" 138 ms of DynamoDB trouble where it rides out about 2 s: 137 ms is how
 * much sooner than its interval a renewal goes out (PHASE_STEP_MS), and so also how long before the
 * renew deadline the default's last retry goes out; 138 ms is how long before the deadline the one
 * retry of `renewIntervalMs: 7999` goes out.
 */
import { readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { PHASE_STEP_MS, defaultRenewIntervalMs, renewCadenceMs } from '../../lib/sdk/elector-options.js';
import { leaderDelay, renewalBoundMs } from '../../lib/sdk/step.js';
import { prose } from './markdown.js';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const read = (file: string): string => readFileSync(join(root, file), 'utf8');

/** client-go's timings, the SDK's defaults. */
const T = { renewDeadlineMs: 10_000, retryPeriodMs: 2_000 };
const DEFAULT_INTERVAL = defaultRenewIntervalMs({ mode: 'coordinated', ...T });
/** The longest interval the option allows: renewIntervalMs + retryPeriodMs must stay below renewDeadlineMs. */
const LONGEST_INTERVAL = T.renewDeadlineMs - T.retryPeriodMs - 1;

/**
 * When a leader renewed at 0 sends its renewal and, each failing `answerMs` after it goes out (or
 * abandoned unanswered at its bound), its tries again, up to its renew deadline.
 */
function tries(interval: number, answerMs: number): number[] {
  const deadline = T.renewDeadlineMs;
  const out = [renewCadenceMs(interval, T.retryPeriodMs)];
  for (;;) {
    const sent = out.at(-1)!;
    const failedAt = sent + Math.min(answerMs, renewalBoundMs(deadline - sent));
    const base = { onLiveSession: false, pushLive: false, holderBackstopMs: 60_000, contended: 0, everyRetryPeriod: false, cadenceMs: renewCadenceMs(interval, T.retryPeriodMs), renewedAt: 0, random: 0, retryPeriodMs: T.retryPeriodMs };
    const next = failedAt + leaderDelay({ ...base, retrying: true, triedAt: sent, now: failedAt });
    if (next >= deadline) return out;
    out.push(next);
  }
}

describe('the leader’s renew timing at client-go’s timings (15/10/2 s)', () => {
  it('the default: every 6 s, sent 137 ms early; a failed renewal tried twice more, the last 137 ms before the deadline, about 4 s after the first', () => {
    expect(DEFAULT_INTERVAL).toBe(6_000);
    expect(PHASE_STEP_MS).toBe(137);
    expect(tries(DEFAULT_INTERVAL, 10)).toEqual([5_863, 7_863, 9_863]);
    expect(T.renewDeadlineMs - tries(DEFAULT_INTERVAL, 10).at(-1)!).toBe(137);
    // a try that hangs is abandoned at its bound, and the next goes out at once: still three tries
    expect(tries(DEFAULT_INTERVAL, Infinity)).toEqual([5_863, 7_931.5, 9_931.5]);
  });

  it('renewIntervalMs 7999: sent 137 ms early; one retry, 138 ms before the deadline, 2 s after the first, however long the first try took', () => {
    for (const answerMs of [10, 100, 500, Infinity]) expect(tries(LONGEST_INTERVAL, answerMs)).toEqual([7_862, 9_862]);
  });
});

/** The sentences of a text (Markdown prose, or a source file's comments folded into lines). */
const sentences = (text: string): string[] =>
  text
    .replace(/\s*\n\s*(?:\*(?!\/)|\/\/)?\s*/g, ' ')
    .split(/(?<=[.:;])\s+(?=[A-Z(`*[])/)
    .map((s) => s.trim());

const FILES = ['README.md', 'docs/architecture.md', 'docs/benchmarks.md', 'docs/deploy.md', 'docs/safety.md', 'lib/sdk/elector-options.ts'];
const textOf = (file: string): string => (file.endsWith('.md') ? prose(read(file)) : read(file));
/** The interval a sentence is about: the longest the option allows where it names it, else the default. */
const intervalOf = (sentence: string): number => (/7,?999/.test(sentence) ? LONGEST_INTERVAL : DEFAULT_INTERVAL);
const lastTryMargin = (interval: number): number => T.renewDeadlineMs - tries(interval, 10).at(-1)!;
const triesSpan = (interval: number): number => tries(interval, 10).at(-1)! - tries(interval, 10)[0]!;

describe('what the docs and comments say of it is that arithmetic', () => {
  it.each(FILES)('%s: "N ms before the deadline" is the last retry’s margin for the interval the sentence names (137 ms at 6 s, 138 ms at 7,999 ms)', (file) => {
    const wrong = sentences(textOf(file)).flatMap((s) =>
      [...s.matchAll(/([\d,]+) ms before (?:the|its) (?:renew )?deadline/g)]
        .map((m) => Number(m[1]!.replace(/,/g, '')))
        .filter((n) => n !== lastTryMargin(intervalOf(s)))
        .map((n) => `${n} ms (want ${lastTryMargin(intervalOf(s))}): ${s}`),
    );
    expect(wrong).toEqual([]);
  });

  it.each(FILES)('%s: "N ms early / sooner / short of it" is PHASE_STEP_MS', (file) => {
    const wrong = sentences(textOf(file)).flatMap((s) =>
      [...s.matchAll(/([\d,]+) ms (?:early|sooner|short of it)/g)].filter((m) => Number(m[1]!.replace(/,/g, '')) !== PHASE_STEP_MS).map((m) => `${m[0]}: ${s}`),
    );
    expect(wrong).toEqual([]);
  });

  it('docs/safety.md: the open item on a longer renew interval gives its one retry as the arithmetic does', () => {
    const row = read('docs/safety.md').split('\n').find((l) => l.startsWith('| A longer renew interval for cost'));
    expect(row).toBeDefined();
    // before: "tried again before the deadline only if its first try took under about 0.1 s"; the retry goes out a retry period after the first try went out, whatever it took
    expect(row).not.toMatch(/first try took/);
    expect(row).toMatch(/7,999 ms[^|]*tried once more, 138 ms before the deadline/);
  });

  it('docs/benchmarks.md: the outage each interval rides out is the span of its tries (about 4 s and 2 s), not the last retry’s margin', () => {
    const m = /rides out about ([\d.]+) s[^.]*?7,999 ms about ([\d.]+) (m?s)\b/.exec(prose(read('docs/benchmarks.md')).replace(/\s+/g, ' '));
    expect(m, 'benchmarks.md compares what the two intervals ride out').not.toBeNull();
    expect(Number(m![1]) * 1000).toBe(triesSpan(DEFAULT_INTERVAL));
    // before: "7,999 ms about 138 ms", the margin of its one retry, not the outage it rides out
    expect(`${m![2]} ${m![3]}`).toBe(`${triesSpan(LONGEST_INTERVAL) / 1000} s`);
  });
});

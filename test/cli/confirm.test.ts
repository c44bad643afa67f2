/**
 * The writes (set-priority, preempt, set-strategy, release) show what they change and ask first:
 * `--yes` (`-y`) skips the question; without a terminal to answer at, they refuse.
 */
import { PassThrough } from 'node:stream';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { main } from '../../lib/cli/main.js';
import { dropTypeAhead } from '../../lib/cli/type-ahead.js';
import { manualClock } from '../../lib/clock.js';
import type { Candidate } from '../../lib/schemas/candidate.js';
import { NOW, SEC, cand, lease } from '../fixtures.js';
import { cliHarness, scripted, type CliHarness } from './harness.js';

let h: CliHarness;
const at = () => manualClock(NOW + 3 * SEC);
const NOT_A_TERMINAL = 'error: not confirmed: stdin is not a terminal, so nobody can answer - pass --yes (-y) to make this change; nothing was written';

beforeAll(async () => {
  h = await cliHarness('cli-confirm');
  await h.seedLease(lease('k1', { name: 'ask', electedStrategy: 'OldestEmulationVersion' }));
  await h.seedCandidate(cand('k1', '1.30.0', '1.30.0', { leaseName: 'ask' }));
  await h.seedCandidate(cand('k2', '1.31.0', '1.31.0', { leaseName: 'ask' }));
});
afterAll(() => h.t.drop());

const priorityOfK2 = async () => (await h.candidates.read('ask', 'k2')).item?.priority;

describe('confirmation', () => {
  beforeEach(async () => {
    const read = await h.candidates.read('ask', 'k2');
    if (read.item?.priority !== undefined) await h.candidates.write(read, { remove: ['priority', 'priorityExpiresAt'] });
  });

  it('shows the candidate before → after on stderr, asks, and writes on "y"', async () => {
    const r = await h.run(['set-priority', 'ask', 'k2', '5', '--for', '10m'], { clock: at(), answer: 'y\n' });
    expect(r.code).toBe(0);
    expect(r.err.split('\n')).toEqual([
      'change candidate k2 of lease ask:',
      '  FIELD               BEFORE   AFTER',
      '  priority            -        5',
      '  priorityExpiresAt   -        in 10m (2026-01-01T12:10:03.000Z)',
      'Apply this change? [y/N] ',
    ]);
    expect(r.out).toMatch(/^set the priority of k2 on lease ask to 5, until in 10m/);
    expect(await priorityOfK2()).toBe(5);
  });

  it.each([['n\n'], ['\n'], ['yess\n'], ['']])('writes nothing on %j', async (answer) => {
    const r = await h.run(['set-priority', 'ask', 'k2', '5'], { clock: at(), answer });
    expect(r.code).toBe(1);
    expect(r.out).toBe('');
    expect(r.err).toMatch(/\nerror: not confirmed( \(no answer\))?; nothing was written$/);
    expect(await priorityOfK2()).toBeUndefined();
  });

  it('accepts "yes" in any case', async () => {
    expect((await h.run(['set-priority', 'ask', 'k2', '4'], { clock: at(), answer: ' YES \n' })).code).toBe(0);
    expect(await priorityOfK2()).toBe(4);
  });

  it('without a terminal: refuses, saying to pass --yes, after showing what would change', async () => {
    const r = await h.run(['set-priority', 'ask', 'k2', '5'], { clock: at() });
    expect(r.code).toBe(1);
    expect(r.err.split('\n').at(-1)).toBe(NOT_A_TERMINAL);
    expect(r.err).toMatch(/^ {2}priority +- +5$/m);
    expect(await priorityOfK2()).toBeUndefined();
  });

  // a review (2026-12-06): `-o json 2>/dev/null | jq` on a terminal showed nothing and waited; a blind "y" wrote the change
  it('stdin a terminal but stderr (where the question goes) not one: refuses, saying so, and writes nothing even on "y"', async () => {
    const r = await h.run(['-o', 'json', 'set-priority', 'ask', 'k2', '5'], { clock: at(), answer: 'y\n', promptIsTTY: false });
    expect(r).toMatchObject({ code: 1, out: '' });
    expect(r.err.split('\n').at(-1)).toBe('error: not confirmed: stderr, where the question goes, is not a terminal, so nobody sees it - pass --yes (-y) to make this change; nothing was written');
    expect(r.err).not.toMatch(/Apply this change/);
    expect(await priorityOfK2()).toBeUndefined();
  });

  it('--yes and -y skip the question; the change is still shown on stderr', async () => {
    const r = await h.run(['set-priority', 'ask', 'k2', '5', '--yes'], { clock: at() });
    expect(r.code).toBe(0);
    expect(r.err).toMatch(/^change candidate k2 of lease ask:\n/);
    expect(r.err).not.toMatch(/Apply this change/);
    expect(await priorityOfK2()).toBe(5);
    expect((await h.run(['set-priority', 'ask', 'k2', '--clear', '-y'], { clock: at() })).code).toBe(0);
    expect(await priorityOfK2()).toBeUndefined();
  });

  it('-o json: stdout is the written row alone; the change and the question are on stderr', async () => {
    const r = await h.run(['-o', 'json', 'set-priority', 'ask', 'k2', '6'], { clock: at(), answer: 'y\n' });
    expect(r.code).toBe(0);
    expect((JSON.parse(r.out) as Candidate).priority).toBe(6);
    expect(r.err).toMatch(/Apply this change\? \[y\/N\] $/);
    const refused = await h.run(['-o', 'json', 'set-priority', 'ask', 'k2', '7'], { clock: at() });
    expect(refused).toMatchObject({ code: 1, out: '' });
  });

  it.each([
    [['preempt', 'ask', '--to', 'k2'], '  priority            -        1'],
    [['set-strategy', 'ask', 'NoCoordination'], '  strategy   -        NoCoordination'],
  ])('%j shows its change and refuses without a terminal', async (argv, line) => {
    const before = [(await h.leases.read('ask')).item, await priorityOfK2()];
    const r = await h.run(argv, { clock: at() });
    expect(r.code).toBe(1);
    expect(r.err.split('\n')).toContain(line);
    expect(r.err.split('\n').at(-1)).toBe(NOT_A_TERMINAL);
    expect([(await h.leases.read('ask')).item, await priorityOfK2()]).toEqual(before);
  });

  it('set-strategy: shows the lease before → after and writes on "y"', async () => {
    const r = await h.run(['set-strategy', 'ask', 'OldestEmulationVersion'], { clock: at(), answer: 'y\n' });
    expect(r.code).toBe(0);
    expect(r.err.split('\n').slice(0, 3)).toEqual(['change lease ask:', '  FIELD      BEFORE   AFTER', '  strategy   -        OldestEmulationVersion']);
    expect((await h.leases.read('ask')).item?.strategy).toBe('OldestEmulationVersion');
  });

  it('a bad argument is refused before anything is shown or asked', async () => {
    const r = await h.run(['set-priority', 'ask', 'nobody', '3'], { clock: at(), answer: 'y\n' });
    expect(r).toMatchObject({ code: 1, err: 'error: "nobody" is not a candidate of lease "ask"; its candidates: k1, k2' });
  });

  it('a --for too long for a row to hold is refused at the flag, before anything is shown or asked', async () => {
    // now + 99999999h is past the year 10000, which no row may carry (Millis)
    const r = await h.run(['set-priority', 'ask', 'k2', '5', '--for', '99999999h'], { clock: at(), answer: 'y\n' });
    expect(r).toMatchObject({ code: 1, err: 'error: invalid set-priority arguments: --for: must be at most 8760h (a year)' });
    const p = await h.run(['preempt', 'ask', '--to', 'k2', '--for', '99999999h'], { clock: at(), answer: 'y\n' });
    expect(p).toMatchObject({ code: 1, err: 'error: invalid preempt arguments: --for: must be at most 8760h (a year)' });
    expect(await priorityOfK2()).toBeUndefined();
    expect((await h.run(['set-priority', 'ask', 'k2', '5', '--for', '8760h'], { clock: at(), answer: 'y\n' })).code).toBe(0);
  });
});

// a review (2026-12-06): a "y" typed at the terminal while the command still read the rows confirmed the change the moment it was shown
describe('type-ahead: only what is typed once the question is shown answers it', () => {
  beforeEach(async () => {
    const read = await h.candidates.read('ask', 'k2');
    if (read.item?.priority !== undefined) await h.candidates.write(read, { remove: ['priority', 'priorityExpiresAt'] });
  });

  it('a "y" typed before the question is dropped, and said so: nothing typed after it, nothing is written', async () => {
    const r = await h.run(['set-priority', 'ask', 'k2', '5'], { clock: at(), typedAhead: 'y\n', answer: '' });
    expect(r.code).toBe(1);
    expect(r.err.split('\n').slice(-3)).toEqual(['note: what was typed before this question is ignored - answer it now', 'Apply this change? [y/N] ', 'error: not confirmed (no answer); nothing was written']);
    expect(await priorityOfK2()).toBeUndefined();
  });

  it('a "y" typed before the question, "n" after it: "n" is the answer', async () => {
    const r = await h.run(['set-priority', 'ask', 'k2', '5'], { clock: at(), typedAhead: 'y\ny\n', answer: 'n\n' });
    expect(r.code).toBe(1);
    expect(r.err.split('\n').at(-1)).toBe('error: not confirmed; nothing was written');
    expect(await priorityOfK2()).toBeUndefined();
  });

  it('an "n" typed before the question, "y" after it: written; nothing typed ahead, no note', async () => {
    const r = await h.run(['set-priority', 'ask', 'k2', '5'], { clock: at(), typedAhead: 'n\n', answer: 'y\n' });
    expect(r.code, r.err).toBe(0);
    expect(await priorityOfK2()).toBe(5);
    const plain = await h.run(['set-priority', 'ask', 'k2', '6'], { clock: at(), answer: 'y\n' });
    expect(plain.code, plain.err).toBe(0);
    expect(plain.err).not.toMatch(/typed before/);
  });

  it('dropTypeAhead: drops what the stream holds now, keeps what comes after, and tells an input that ended', async () => {
    const input = new PassThrough();
    input.write('y\n');
    expect(await dropTypeAhead(input)).toEqual({ dropped: true, ended: false });
    input.write('n\n');
    expect(String(input.read())).toBe('n\n');
    expect(await dropTypeAhead(input)).toEqual({ dropped: false, ended: false });
    input.end('y\n'); // then Ctrl-D
    expect(await dropTypeAhead(input)).toEqual({ dropped: true, ended: true });
    expect(await dropTypeAhead(input)).toEqual({ dropped: false, ended: true });
  });
});

describe('release asks too', () => {
  it('shows the request to yield (or with --force the term it ends) and refuses without a terminal', async () => {
    const r = await h.run(['release', 'ask'], { clock: at() });
    expect(r.code).toBe(1);
    expect(r.err.split('\n').at(-1)).toBe(NOT_A_TERMINAL);
    expect(r.err).toMatch(/^ {2}preferredHolder +- +k2$/m);
    const f = await h.run(['release', 'ask', '--force'], { clock: at() });
    expect(f.err.split('\n').at(-1)).toBe(NOT_A_TERMINAL);
    expect(f.err).toMatch(/^ {2}holderIdentity +k1 +-$/m);
    expect((await h.leases.read('ask')).item?.holderIdentity).toBe('k1');
  });

  it('Ctrl-C at the question ends it: nothing is written, though "y" is typed after; exit 130, as an interrupt (it was 1)', async () => {
    // release listens for Ctrl-C (to stop its wait) before it asks: the question must end with it
    const clock = at();
    const pace = scripted([], clock);
    const stdin = new PassThrough();
    const err: string[] = [];
    const code = await main([...h.target, 'release', 'ask'], {
      out: () => undefined,
      err: (t) => err.push(t),
      color: false,
      env: {},
      clock,
      pace,
      stdin,
      stdinIsTTY: true,
      prompt: (t) => {
        err.push(t);
        pace.stop.abort(); // Ctrl-C while the question waits…
        stdin.write('y\n'); // …then "y", typed before the CLI ended
      },
    });
    expect(code).toBe(130);
    expect(err.at(-1)).toBe('error: not confirmed (interrupted); nothing was written');
    expect((await h.leases.read('ask')).item).not.toHaveProperty('preferredHolder');
  });
});

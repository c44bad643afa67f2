/**
 * A renewal just written, read by a one-shot command whose estimate of DynamoDB's time is a little
 * behind the writer's (each within half a second of it): shown as past, never `in 0s`.
 */
import { expect, it } from 'vitest';
import { ago, relative } from '../../lib/cli/format.js';

it('a renewal stamped up to a second ahead of the command\'s now reads 0s ago (further ahead, as it is); a future moment (a term\'s end) still reads in 5s', () => {
  const now = 1_800_000_000_000;
  expect(ago(now + 400, now)).toBe('0s ago');
  expect(ago(now - 3_000, now)).toBe('3s ago');
  expect(ago(undefined, now)).toBe('-');
  // further ahead: a writer's clock off, shown as it is
  expect(ago(now + 5 * 60_000, now)).toBe('in 5m');
  expect(relative(now + 5_000, now)).toBe('in 5s');
});

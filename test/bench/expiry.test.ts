/**
 * The past-expiry delay of a crash: the dead term's last renewal is the greatest renewTime among
 * the stream's images of that term (this lease, this holder, this token), whatever else the
 * stream holds; expiry is that renewTime plus the row's leaseDurationSeconds.
 */
import { describe, expect, it } from 'vitest';
import { lastRenewal, pastExpiryMs, type Image, type TermKey } from '../../bench/expiry.js';

const term: TermKey = { name: 'l1', holder: 'w1', token: 7, tokenField: 'fencingToken' };
const row = (over: Image): Image => ({ name: 'l1', holderIdentity: 'w1', fencingToken: 7, leaseDurationSeconds: 15, renewTime: 1_000, ...over });

describe('last renewal of a term', () => {
  it('the greatest renewTime of the term, in any order (old images included)', () => {
    const images = [row({ renewTime: 1_000 }), row({ renewTime: 3_000 }), row({ renewTime: 2_000 })];
    expect(lastRenewal(images, term)).toEqual({ renewTime: 3_000, leaseDurationSeconds: 15, expiresAt: 18_000 });
  });

  it('ignores other leases, other holders and other terms of the same holder', () => {
    const images = [
      row({ renewTime: 1_000 }),
      row({ name: 'l2', renewTime: 9_000 }),
      row({ holderIdentity: 'w2', renewTime: 9_000 }),
      row({ fencingToken: 8, renewTime: 9_000 }),
      { name: 'l1', lastHolderIdentity: 'w1', renewTime: 9_000, leaseDurationSeconds: 15 }, // released: no holder
    ];
    expect(lastRenewal(images, term)?.renewTime).toBe(1_000);
  });

  it('a write of the term that is no renewal (a successor named) keeps the renewTime it found', () => {
    const images = [row({ renewTime: 4_000 }), row({ renewTime: 4_000, successor: 'w2' })];
    expect(lastRenewal(images, term)?.renewTime).toBe(4_000);
  });

  it('the baseline tells its terms apart by leaseTransitions, and its duration is the row’s', () => {
    const base: TermKey = { name: 'l1', holder: 'w1', token: 2, tokenField: 'leaseTransitions' };
    const images = [
      { name: 'l1', holderIdentity: 'w1', leaseTransitions: 2, leaseDurationSeconds: 4, renewTime: 5_000 },
      { name: 'l1', holderIdentity: 'w1', leaseTransitions: 1, leaseDurationSeconds: 4, renewTime: 6_000 },
    ];
    expect(lastRenewal(images, base)).toEqual({ renewTime: 5_000, leaseDurationSeconds: 4, expiresAt: 9_000 });
  });

  it('nothing known of the term: undefined', () => {
    expect(lastRenewal([row({ fencingToken: 1 })], term)).toBeUndefined();
    expect(lastRenewal([row({ renewTime: undefined })], term)).toBeUndefined();
  });
});

describe('past-expiry delay', () => {
  it('started minus expiry: positive late, negative early', () => {
    expect(pastExpiryMs({ expiresAt: 18_000 }, 18_120)).toBe(120);
    expect(pastExpiryMs({ expiresAt: 18_000 }, 17_500)).toBe(-500);
  });
});

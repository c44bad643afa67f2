/**
 * The demo worker's default `advertise` (lib/local/demo/worker.ts: `http://<HTTP_HOST>:<HTTP_PORT>`):
 * an IPv6 literal in HTTP_HOST is bracketed, so the elector takes it (before the fix, HTTP_HOST=::1
 * gave `http://::1:8080`, a ValidationError, and the worker exited).
 */
import { describe, expect, it } from 'vitest';
import { httpUrl } from '../../lib/local/demo/http-url.js';
import { AdvertisedAddress } from '../../lib/schemas/lease.js'; // the elector's `advertise` option

describe('the demo worker: httpUrl(HTTP_HOST, HTTP_PORT)', () => {
  it.each([
    { host: '127.0.0.1', want: 'http://127.0.0.1:8080' },
    { host: 'worker-1.internal', want: 'http://worker-1.internal:8080' },
    { host: '::1', want: 'http://[::1]:8080' },
    { host: 'fd00::7', want: 'http://[fd00::7]:8080' },
    { host: '[::1]', want: 'http://[::1]:8080' }, // already bracketed: left so
  ])('$host: $want, an `advertise` the elector takes', ({ host, want }) => {
    expect(httpUrl(host, '8080')).toBe(want);
    expect(AdvertisedAddress.safeParse(want).success).toBe(true);
  });

  it('the template it replaces, `http://${HTTP_HOST}:${HTTP_PORT}`, is refused for an IPv6 literal', () => {
    expect(AdvertisedAddress.safeParse('http://::1:8080').success).toBe(false);
  });
});

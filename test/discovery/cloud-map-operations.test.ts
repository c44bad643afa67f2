/**
 * Cloud Map answers RegisterInstance and DeregisterInstance with an operation id and applies them
 * after (AWS Cloud Map API reference): the naming waits for each operation to be over, so the
 * ordering's check after a write (lib/discovery/apply.ts) follows the write's landing, and a write
 * Cloud Map took and then failed fails the invocation (Lambda's retry writes it again) instead of
 * being marked applied (a review, 2026-12-06). On the fake Cloud Map, which applies a write at the
 * second GetOperation.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { manualClock, type Clock } from '../../lib/clock.js';
import { parseAddress } from '../../lib/discovery/address.js';
import { cloudMapNaming } from '../../lib/discovery/cloud-map.js';
import type { LeaderTarget } from '../../lib/discovery/naming.js';
import { fakeAws, type FakeAws } from './fake-aws.js';

let aws: FakeAws;
beforeAll(async () => void (aws = await fakeAws()));
afterAll(() => aws?.close());

/** A clock whose sleeps move it on at once, and record how long they were. */
function steppingClock(): Clock & { slept: number[] } {
  const clock = manualClock(0);
  const slept: number[] = [];
  return { ...clock, slept, sleep: async (ms: number) => void (slept.push(ms), clock.advance(ms)) };
}

const target = (holder: string, fencingToken: number, raw: string): LeaderTarget => {
  const address = parseAddress(raw);
  if ('issue' in address) throw new Error(address.issue);
  return { holder, fencingToken, address };
};

it('point and clear return once the operation is over (the instance there, then gone), polling GetOperation', async () => {
  const clock = steppingClock();
  const naming = cloudMapNaming(aws.cloudMap(), aws.serviceId, clock);
  const before = aws.calls.length;
  await naming.point('ops', target('w1', 3, 'http://10.0.0.3:8080'));
  expect(aws.instances.get('ops')).toMatchObject({ holder: 'w1', fencingToken: '3' });
  await naming.clear('ops');
  expect(aws.instances.has('ops')).toBe(false);
  expect(aws.calls.slice(before).map((c) => c.action.replace('servicediscovery:', ''))).toEqual(['RegisterInstance', 'GetOperation', 'GetOperation', 'DeregisterInstance', 'GetOperation', 'GetOperation']);
  expect(clock.slept).toEqual([100, 100]); // one wait between the two looks at each operation
});

it('an operation Cloud Map took and failed fails the call, naming it (before: the name was marked applied, and stayed wrong)', async () => {
  const naming = cloudMapNaming(aws.cloudMap(), aws.serviceId, steppingClock());
  aws.failOperations = true;
  try {
    await expect(naming.point('failing', target('w2', 4, 'http://10.0.0.4:8080'))).rejects.toThrow(/Cloud Map registration of lease "failing" failed \(operation op-\d+\): INTERNAL_FAILURE/);
    expect(aws.instances.has('failing')).toBe(false);
  } finally {
    aws.failOperations = false;
  }
});

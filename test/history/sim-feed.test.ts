/**
 * The simulator's feed of the checker (sim/feed.ts): what a world hands the checker at its end. A
 * hand-made world: a clock moved by hand, the DynamoDB model for the ledger, terms and requests fed
 * as the workers would.
 */
import { describe, expect, it } from 'vitest';
import type { SimulatedClock } from '../../lib/clock.js';
import { DynamoDBModel } from '../../sim/dynamodb-model/index.js';
import { Feed, T0 } from '../../sim/feed.js';

const bound = { windowMs: 15_000, max: 1_000 };

/** A feed on a clock at `T0 + s` seconds, moved by `to(s)`. */
function world() {
  let now = T0;
  const clock = { now: () => now, monotonic: () => now } as unknown as SimulatedClock;
  const model = new DynamoDBModel({ now: () => now });
  const client = model.client();
  const feed = new Feed(clock, false);
  return { feed, client, to: (s: number) => void (now = T0 + s * 1000) };
}
const term = (lease: string, token: number) => ({ lease, identity: 'a', instance: 'a-1', fencingToken: token });

describe('the simulator’s feed of the checker', () => {
  it('a world without faults is judged from its start: 590 s without a leader is leaderless', async () => {
    const w = world();
    await w.feed.createLedger(w.client);
    w.to(0);
    w.feed.request('a-1', 'job-0', T0);
    w.feed.started(term('job-0', 1), 0);
    w.to(10);
    w.feed.stopped(term('job-0', 1), 10_000, 'renewDeadline');
    w.to(600);
    const v = await w.feed.verdict(w.client, { healMs: 60_000, episodicLeases: [], requestBound: bound });
    expect(v.violations.map((x) => x.kind)).toEqual(['leaderless', 'leaderlessSpell']);
  });

  it('a lease a worker stood for but nobody ever led is judged by the leaderless rule', async () => {
    const w = world();
    await w.feed.createLedger(w.client);
    w.to(0);
    w.feed.request('a-1', 'job-0', T0);
    w.feed.request('a-1', 'job-1', T0);
    w.feed.request('a-1', 'session', T0);
    w.feed.request('a-1', 'candidates', T0);
    w.feed.started(term('job-0', 1), 0);
    w.to(600);
    const v = await w.feed.verdict(w.client, { healMs: 60_000, episodicLeases: [], requestBound: bound });
    expect(v.violations.map((x) => [x.kind, x.lease])).toEqual([['leaderless', 'job-1'], ['leaderlessSpell', 'job-1']]);
    expect(v.figures.leases).toBe(2);
  });
});

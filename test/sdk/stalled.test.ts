/**
 * A leader whose process does not run the elector: synchronous work holding Node's event loop (a
 * long computation, a blocking call), a process stopped or starved of CPU. Its term ends at its
 * renew deadline, judged once the loop runs again, and onError is told why: nothing else failed,
 * and without it the user sees only `renewDeadline`. On DynamoDB Local, the real AWS SDK, and a
 * driven clock whose `stall` moves time with no timer run (what a blocked event loop does).
 */
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { localClient } from '../../lib/local/dynamodb-local.js';
import { LeaderElector, LeaderStalledError } from '../../lib/sdk/index.js';
import { drivenClock, inFlight } from '../proxy.js';
import { testTables, type TestTables } from '../support.js';
import { CLIENT_GO, drivenElector, type Terms } from './driven-elector.js';

let t: TestTables;
beforeAll(async () => void (t = await testTables('stalled')));
afterAll(async () => t.drop());

/** Elector "a" of lease `lease` on a driven clock, leading. */
async function leading(lease: string) {
  const client = localClient(inject('ddbEndpoint'));
  const c = drivenClock(inFlight(client));
  const terms: Terms = [];
  const errors = { a: [] as Error[], b: [] as Error[] };
  const a = drivenElector(t.names, 'a', lease, client, c, terms, errors.a);
  await c.drive(() => a.e.isLeader());
  return { client, c, terms, errors, a };
}

/** Electors "a" and "b" of lease `lease` in one process (one clock), "a" leading and "b" following it. */
async function led(lease: string) {
  const x = await leading(lease);
  const b = drivenElector(t.names, 'b', lease, x.client, x.c, x.terms, x.errors.b);
  await x.c.drive(() => b.e.leader === 'a');
  return { ...x, b };
}

describe('a leader whose event loop is held past its renew deadline', () => {
  it('stops once the loop runs again, never renewing the old term, and onError is told the term ended because nothing of the elector ran, for how long, and what to look for', async () => {
    const { client, c, terms, errors, a, b } = await led('stalled');
    const token = a.e.fencingToken!;
    const stallMs = 25_000;
    const from = c.clock.monotonic();
    c.stall(stallMs);
    await c.drive(() => !a.e.isLeader());
    // judged as the loop ran again: its term was already past its deadline
    const ofA = terms.filter((x) => x.who === 'a');
    expect(ofA).toHaveLength(1);
    expect(ofA[0]!.to).toBe(from + stallMs);
    const stalled = errors.a.filter((e): e is LeaderStalledError => e instanceof LeaderStalledError);
    expect(stalled).toHaveLength(1);
    expect(stalled[0]).toMatchObject({ name: 'LeaderStalledError', leaseName: 'stalled', identity: 'a' });
    // from its deadline (a renew deadline after its last renewal, which was before the stall) to the loop's running again
    expect(stalled[0]!.lateMs).toBeGreaterThanOrEqual(stallMs - CLIENT_GO.renewDeadlineMs);
    expect(stalled[0]!.lateMs).toBeLessThanOrEqual(stallMs);
    expect(stalled[0]!.message).toMatch(
      /^LeaderElector "a" of lease "stalled" stopped leading \d+\.\d s past its renew deadline: for at least that long this process ran none of the elector's timers, so its term was not renewed in time\. Look for synchronous work holding the event loop \(run CPU-bound work in a worker thread, or await between slices of it\), a process stopped or starved of CPU/,
    );
    // nothing else was wrong: it was told nothing more, and its follower nothing at all
    expect(errors.a).toHaveLength(1);
    expect(errors.b).toEqual([]);
    // the lease goes on: one of them leads a later term
    await c.drive(() => a.e.isLeader() || b.e.isLeader());
    expect(Math.max(a.e.fencingToken ?? 0, b.e.fencingToken ?? 0)).toBeGreaterThan(token);
    await b.stop();
    await a.stop();
    client.destroy();
  });

  it('its fencingToken, read first after the stall (before any timer and before isLeader()), is judged as isLeader() judges: undefined, the term ended then', async () => {
    const { client, c, terms, a, b } = await led('stalled-getters');
    expect(a.e.fencingToken).toBeGreaterThan(0);
    const from = c.clock.monotonic();
    c.stall(25_000);
    // it reported the expired term's token until its deadline's timer ran or something asked isLeader()
    expect(a.e.fencingToken).toBeUndefined();
    expect(terms.filter((x) => x.who === 'a')[0]!.to).toBe(from + 25_000);
    await b.stop();
    await a.stop();
    client.destroy();
  });

  it('held less than its renew deadline leaves it: it renews late, leads on, and is told nothing', async () => {
    const { client, c, terms, errors, a, b } = await led('held-briefly');
    const token = a.e.fencingToken!;
    // a renewal due within the stall goes out after it, still inside the renew deadline (renewals are a renew interval apart)
    const stallMs = CLIENT_GO.renewDeadlineMs - a.e.renewIntervalMs - 1_000;
    for (let i = 0; i < 3; i++) {
      c.stall(stallMs);
      const at = c.clock.monotonic();
      await c.drive(() => c.clock.monotonic() - at >= a.e.renewIntervalMs);
    }
    expect(a.e.isLeader()).toBe(true);
    expect(a.e.fencingToken).toBe(token);
    expect(terms).toHaveLength(1);
    expect(errors.a).toEqual([]);
    expect(errors.b).toEqual([]);
    await b.stop();
    await a.stop();
    client.destroy();
  });
});

describe('a process held between its win and the start of its work', () => {
  it("held in its own onNewLeader past the new term's renew deadline: the work never starts on that term (before the fix: onStartedLeading ran on a term already past its deadline), the term is given back, told as late, and a later term is led", async () => {
    const lease = 'held-at-start';
    const { client, c, a } = await leading(lease);
    // b's own onNewLeader, told of its win, holds the event loop (synchronous work) longer than a renew deadline, once
    const started: { token: number; abortedAtStart: boolean; at: number }[] = [];
    let held = false;
    const stallMs = CLIENT_GO.renewDeadlineMs + 5_000;
    let stalledAt: number | undefined;
    const bErrors: Error[] = [];
    const b = new LeaderElector({
      client,
      tables: t.names,
      clock: c.clock,
      clockSync: 'none',
      leaseName: lease,
      identity: 'b',
      mode: 'NoCoordination',
      ...CLIENT_GO,
      onError: (x) => void bErrors.push(x),
      callbacks: {
        onNewLeader: (holder) => {
          if (holder !== 'b' || held) return;
          held = true;
          stalledAt = c.clock.monotonic();
          c.stall(stallMs);
        },
        onStartedLeading: (signal, leading) => void started.push({ token: leading.fencingToken, abortedAtStart: signal.aborted, at: c.clock.monotonic() }),
      },
    });
    const cancel = new AbortController();
    let settled = false;
    const running = b.run(cancel.signal).finally(() => void (settled = true));
    await c.drive(() => b.leader === 'a');
    // a steps down (released): b takes the lease, is told, and is held
    await a.stop();
    await c.drive(() => started.length > 0);
    expect(held).toBe(true);
    // nothing started on the term b won before the stall: its first work began after the stall, on a later term, live
    expect(started[0]!.at).toBeGreaterThanOrEqual(stalledAt! + stallMs);
    expect(started[0]!.abortedAtStart).toBe(false);
    const late = bErrors.filter((e): e is LeaderStalledError => e instanceof LeaderStalledError);
    expect(late).toHaveLength(1);
    expect(late[0]!.lateMs).toBeGreaterThan(0);
    expect(late[0]!.lateMs).toBeLessThanOrEqual(stallMs);
    cancel.abort();
    await c.drive(() => settled);
    await running;
    client.destroy();
  });
});

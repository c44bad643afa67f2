/**
 * A candidate's renewal that fails (DynamoDB unreachable, throttled) is tried again soon, with
 * backoff, not a renew interval later. At the longest interval (15 minutes, half the coordinator's
 * default candidateStaleAfterMs of 30), one failed renewal left the row unrenewed for 30 minutes:
 * the next landed just as the row turned stale, and a tick then collected a live candidate. On
 * DynamoDB Local, the real AWS SDK, and a driven clock (test/proxy.ts drivenClock).
 */
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { localClient } from '../../lib/local/dynamodb-local.js';
import { LeaseCandidate } from '../../lib/sdk/candidate.js';
import { drivenClock, inFlight } from '../proxy.js';
import { testTables, type TestTables } from '../support.js';

let t: TestTables;
beforeAll(async () => void (t = await testTables('candidate-retry')));
afterAll(async () => t.drop());

const MIN = 60_000;
/** The coordinator's default candidateStaleAfterMs: a row not renewed for this long is collected. */
const STALE_AFTER_MS = 30 * MIN;
/** The longest renewIntervalMs. */
const INTERVAL_MS = 15 * MIN;

/**
 * Candidate "w1" at the longest renew interval on DynamoDB Local and a driven clock. `down(n)`:
 * the next `n` writes of its row fail as DynamoDB unreachable would (Infinity: until `down(0)`).
 * `landed`: when (the driven clock's now) each write of its row landed; `tries`: when each was tried.
 */
async function standing(name: string) {
  const client = localClient(inject('ddbEndpoint'));
  const c = drivenClock(inFlight(client));
  let failing = 0;
  const landed: number[] = [];
  const tries: number[] = [];
  client.middlewareStack.add(
    (next, context) => async (args) => {
      const write = ['UpdateItem', 'PutItem'].includes(context.commandName?.replace(/Command$/, '') ?? '') && (args.input as { TableName?: string }).TableName === t.names.candidates;
      if (!write) return next(args);
      tries.push(c.clock.now());
      if (failing > 0) {
        failing--;
        throw Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:8000'), { code: 'ECONNREFUSED' });
      }
      const out = await next(args);
      landed.push(c.clock.now());
      return out;
    },
    { step: 'initialize', name: 'candidateWritesDown' },
  );
  const errors: Error[] = [];
  const candidate = new LeaseCandidate({ leaseName: 'retry', name, tables: t.names, client, clock: c.clock, clockSync: 'none', binaryVersion: '1.31.0', emulationVersion: '1.31.0', renewIntervalMs: INTERVAL_MS, onError: (e) => void errors.push(e) });
  const stop = new AbortController();
  let settled = false;
  const run = candidate.run(stop.signal).finally(() => (settled = true));
  await c.drive(() => landed.length >= 1);
  const from = c.clock.now();
  return {
    c,
    errors,
    landed,
    tries,
    from,
    down: (n: number) => void (failing = n),
    /** The longest the row went unrenewed from its registration to now. */
    longestUnrenewed: () => Math.max(...[...landed, c.clock.now()].slice(1).map((at, i) => at - landed[i]!)),
    stop: async () => {
      stop.abort();
      await c.drive(() => settled);
      await run;
      client.destroy();
    },
  };
}

describe('a candidate renewal that fails', () => {
  it('at the longest renew interval, one failed renewal is tried again soon: the row never gets near stale while the process lives and DynamoDB answers again', async () => {
    const x = await standing('one-failure');
    x.down(1); // the first scheduled renewal (15 minutes on) fails
    await x.c.drive(() => x.c.clock.now() >= x.from + 2 * STALE_AFTER_MS);
    expect(x.errors).toHaveLength(1);
    // before the fix: 30 minutes (the next renewal a whole interval after the failed one), stale as it landed
    expect(x.longestUnrenewed()).toBeLessThan(STALE_AFTER_MS - 10 * MIN);
    await x.stop();
  });

  it('while DynamoDB stays unreachable it is tried again with backoff, never faster than a second and at most a minute apart, and renewed soon after DynamoDB answers again', async () => {
    const x = await standing('down');
    x.down(Infinity);
    const downFrom = x.c.clock.now();
    await x.c.drive(() => x.c.clock.now() >= downFrom + 2 * 60 * MIN);
    const failed = x.tries.filter((at) => at > downFrom);
    const gaps = failed.slice(1).map((at, i) => at - failed[i]!);
    // no hot loop: a second at least between tries, backing off to a minute or so (jittered), about two hours' worth at that pace
    expect(Math.min(...gaps)).toBeGreaterThanOrEqual(1_000);
    expect(Math.max(...gaps)).toBeLessThanOrEqual(1.2 * MIN + 1);
    expect(failed.length).toBeLessThan(2 * 60 + 10);
    // told the first time and every tenth after, not at each try (a Session's hundred candidates told 600 times their first minute)
    const told = x.errors.length;
    expect(told).toBeGreaterThanOrEqual(1);
    expect(told).toBeLessThanOrEqual(Math.ceil(failed.length / 10) + 1);
    // answered again: renewed within a backoff
    x.down(0);
    const back = x.c.clock.now();
    await x.c.drive(() => x.landed.some((at) => at >= back));
    expect(x.landed.find((at) => at >= back)! - back).toBeLessThanOrEqual(1.2 * MIN + 1);
    await x.stop();
  });
});

/**
 * `runOnce.every` in milliseconds is bounded (366 days), judged with the other options before
 * anything is read (a review, 2026-12-07, thirteenth: `every: 9e15` was taken; every window was
 * 1970-01-01, and each run after the first threw a bare `RangeError: Invalid time value` once the
 * lease was taken, the next window's start past any Date). The longest period runs and skips as any
 * other, on DynamoDB Local.
 */
import { type DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { localClient } from '../../lib/local/dynamodb-local.js';
import { ValidationError } from '../../lib/schemas/validation.js';
import { RunOnceSchema, WithLeaseOptionsSchema, tryWithLease, withLease, type WithLeaseOptions } from '../../lib/sdk/with-lease.js';
import { testTables, type TestTables } from '../support.js';

const MAX_PERIOD_MS = 366 * 86_400_000;

let t: TestTables;
beforeAll(async () => {
  t = await testTables('run-once-period');
});
afterAll(() => t?.drop());

/** A client that records what it sends. */
function recorded(): { client: DynamoDBClient; sent: string[] } {
  const client = localClient(inject('ddbEndpoint'));
  const sent: string[] = [];
  client.middlewareStack.add((next, context) => async (args) => (sent.push(context.commandName ?? '?'), next(args)), { step: 'initialize', name: 'recorded', priority: 'high' });
  return { client, sent };
}

const opts = (client: DynamoDBClient, identity: string, every: number): WithLeaseOptions => ({ client, tables: t.names, identity, mode: 'NoCoordination', platform: 'none', runOnce: { every }, onError: () => undefined });

describe('runOnce.every in milliseconds: at most 366 days', () => {
  it.each([9e15, MAX_PERIOD_MS + 1, Date.now() * 2])('every: %d is refused before anything is read: a ValidationError naming runOnce.every, the bound and the way out', async (every) => {
    const { client, sent } = recorded();
    let ran = 0;
    for (const call of [withLease, tryWithLease]) {
      // before the fix: the first call ran (window 1970-01-01T00:00:00.000Z), the second threw RangeError: Invalid time value
      const e = await call(`period-${every}`, () => ++ran, opts(client, 'a', every)).catch((x: unknown) => x);
      expect(e).toBeInstanceOf(ValidationError);
      expect((e as ValidationError).fields).toEqual(['runOnce.every']);
      expect((e as Error).message).toMatch(/runOnce\.every: must be at most 31622400000 ms \(366 days\): .*aligned to the epoch.*name the window yourself: runOnce: \{ window: '<key>' \}/);
    }
    expect(ran).toBe(0);
    expect(sent).toEqual([]);
    // the schemas say the same
    expect(RunOnceSchema.safeParse({ every }).success).toBe(false);
    expect(WithLeaseOptionsSchema.safeParse(opts(client, 'a', every)).error?.issues.map((i) => i.path.join('.'))).toEqual(['runOnce.every']);
    client.destroy();
  });

  it('the longest period (366 days) runs once in its window, and the next run skips it: no error once the lease is taken', async () => {
    const { client } = recorded();
    const first = await withLease('period-max', () => 'first', opts(client, 'a', MAX_PERIOD_MS));
    const window = new Date(Math.floor(Date.now() / MAX_PERIOD_MS) * MAX_PERIOD_MS).toISOString();
    // (a window boundary between the two lines above is 366 days apart: the run's window is the one named, or the next)
    expect(first).toMatchObject({ status: 'ran', value: 'first' });
    expect([window, new Date(Date.parse(window) + MAX_PERIOD_MS).toISOString()]).toContain((first as { window: string }).window);
    const second = await withLease('period-max', () => 'second', opts(client, 'b', MAX_PERIOD_MS));
    expect(second).toMatchObject({ status: 'skipped', window: (first as { window: string }).window, run: { holder: 'a' } });
    client.destroy();
  });
});

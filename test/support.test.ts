/**
 * The tests' own tables: DynamoDB Local's TTL sweeper goes by the machine's clock, and many tests
 * stamp rows from a manual clock at a fixed date that has since passed (a candidate's `expiresAt`
 * an hour after it): with TTL on, the sweeper deleted such rows under the test, about 20 every
 * 10 s (test/coordinator/tick-reads.test.ts failed so on 2026-12-01, after 01:00 UTC).
 */
import { DescribeTimeToLiveCommand } from '@aws-sdk/client-dynamodb';
import { afterEach, expect, it } from 'vitest';
import { testTables, type TestTables } from './support.js';

let t: TestTables | undefined;
afterEach(async () => t?.drop());

it("testTables makes every table without TTL, so no row stamped from a test's manual clock is swept under it", async () => {
  t = await testTables('ttl-off');
  for (const name of Object.values(t.names)) {
    const ttl = await t.client.send(new DescribeTimeToLiveCommand({ TableName: name }));
    expect(ttl.TimeToLiveDescription?.TimeToLiveStatus, name).toBe('DISABLED');
  }
});

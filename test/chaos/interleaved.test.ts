/**
 * Chaos's `streamReorder` (chaos/coordinator-faults.ts): a batch's records in an order DynamoDB
 * Streams could deliver. One item's records stay in the order they were written; records of
 * different items interleave. (Until 2026-11-29 it shuffled them all, an order a shard never gives.)
 */
import type { DynamoDBRecord } from 'aws-lambda';
import { describe, expect, it } from 'vitest';
import { interleaved } from '../../chaos/coordinator-faults.js';
import { rng } from '../../chaos/rng.js';

const record = (item: string, n: number): DynamoDBRecord => ({ eventID: `${item}${n}`, dynamodb: { Keys: { name: { S: item } } } });

describe('interleaved', () => {
  it("keeps each item's records in order, and every record once, whatever the draw; items interleave", () => {
    const batch = [record('a', 1), record('b', 1), record('a', 2), record('c', 1), record('a', 3), record('b', 2)];
    const orders = new Set<string>();
    for (let seed = 1; seed <= 200; seed++) {
      const out = interleaved(batch, rng(seed)).map((r) => r.eventID!);
      expect([...out].sort()).toEqual(batch.map((r) => r.eventID!).sort());
      for (const item of ['a', 'b', 'c']) expect(out.filter((id) => id.startsWith(item))).toEqual(batch.map((r) => r.eventID!).filter((id) => id.startsWith(item)));
      orders.add(out.join(','));
    }
    expect(orders.size).toBeGreaterThan(10); // a reorder, not the batch as it came
  });
});

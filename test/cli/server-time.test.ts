/**
 * The CLI's reckoning of DynamoDB's time from its answers' Date headers (whole seconds). A helper's
 * review: it took the middle of each answer's second, so a watch's frames 100 ms apart went back
 * and forth by up to a second, and a stamp just written read as "in 0s".
 */
import { ListTablesCommand } from '@aws-sdk/client-dynamodb';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dynamoDbTime } from '../../lib/cli/server-time.js';
import { manualClock } from '../../lib/clock.js';
import { localClient } from '../../lib/local/dynamodb-local.js';

/** This machine's clock, moved by hand; DynamoDB's is OFFSET_MS ahead of it, and its Date header truncates to the second. */
const OFFSET_MS = 10 * 60_000 + 300;
/** DynamoDB's time less this machine's, as the endpoint stamps it (moved when the test steps this machine's clock alone). */
let serverAhead = OFFSET_MS;
const machine = manualClock(Date.UTC(2026, 11, 5, 12, 0, 0, 0));
/** Each way of a round trip, on the hand-moved clock: the header is written this long after the send, and answered as long after. */
const LATENCY_MS = 300;
const server = createServer((req, res) => {
  req.resume();
  req.on('end', () => {
    machine.advance(LATENCY_MS);
    const date = new Date(machine.now() + serverAhead).toUTCString();
    machine.advance(LATENCY_MS);
    res.writeHead(200, { 'content-type': 'application/x-amz-json-1.0', 'x-amzn-RequestId': 'r', date });
    res.end(JSON.stringify({ TableNames: [] }));
  });
});
let endpoint = '';
beforeAll(async () => {
  await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok));
  endpoint = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(() => new Promise((ok) => server.close(ok)));

describe("the CLI's DynamoDB time", () => {
  /** Reads a watch makes, one every 100 ms after each answer; each answer's error (now() less DynamoDB's true time) and the now() read. */
  async function reads(client: ReturnType<typeof localClient>, time: ReturnType<typeof dynamoDbTime>, n: number, offsetMs: number) {
    const seen: { now: number; error: number }[] = [];
    for (let i = 0; i < n; i++) {
      await client.send(new ListTablesCommand({}));
      const now = time.now();
      seen.push({ now, error: now - (machine.now() + offsetMs) });
      machine.advance(100);
    }
    return seen;
  }

  it('narrows to well within a second over answers at different points of the second (each 600 ms round trip), and never goes back', async () => {
    const client = localClient(endpoint);
    const time = dynamoDbTime(client, machine);
    const seen = await reads(client, time, 25, OFFSET_MS);
    client.destroy();
    // forward only (the middle of each answer's second went back by up to 900 ms)
    for (let i = 1; i < seen.length; i++) expect(seen[i]!.now).toBeGreaterThan(seen[i - 1]!.now);
    // after a few answers at other points of the second, within 100 ms of DynamoDB's time (the middle of
    // one answer's second is up to 500 ms off; bounds taken the wrong way round, the send's time for the
    // answer's, never meet across a round trip this long and start again at every answer)
    for (const { error } of seen.slice(10)) expect(Math.abs(error)).toBeLessThanOrEqual(100);
  });

  it("this machine's clock stepped back between answers: the bounds start again from the next answer, and now() holds until DynamoDB's time passes it", async () => {
    const client = localClient(endpoint);
    const time = dynamoDbTime(client, machine);
    await reads(client, time, 10, OFFSET_MS);
    const before = time.now();
    // time sync steps this machine back 5 s: DynamoDB's time is now OFFSET_MS + 5 s ahead of it
    machine.advance(-5_000);
    serverAhead += 5_000;
    const seen = await reads(client, time, 25, OFFSET_MS + 5_000);
    client.destroy();
    for (const { now } of seen) expect(now).toBeGreaterThanOrEqual(before);
    // from the answer after the step on, DynamoDB's time again (within its second's bounds, then narrowed)
    // (one answer's bounds span its second and the round trip: 1.6 s, the middle within 800 ms)
    for (const { error } of seen.slice(1)) expect(Math.abs(error)).toBeLessThanOrEqual(800);
    for (const { error } of seen.slice(11)) expect(Math.abs(error)).toBeLessThanOrEqual(100);
  });
});

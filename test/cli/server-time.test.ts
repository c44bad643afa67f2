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
const machine = manualClock(Date.UTC(2026, 11, 5, 12, 0, 0, 0));
const server = createServer((req, res) => {
  req.resume();
  req.on('end', () => {
    res.writeHead(200, { 'content-type': 'application/x-amz-json-1.0', 'x-amzn-RequestId': 'r', date: new Date(machine.now() + OFFSET_MS).toUTCString() });
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
  it('narrows to well within a second over answers at different points of the second, and never goes back', async () => {
    const client = localClient(endpoint);
    const time = dynamoDbTime(client, machine);
    const seen: number[] = [];
    const errors: number[] = [];
    // a watch: a read every 100 ms (no time passes while a request is out: the manual clock stands)
    for (let i = 0; i < 25; i++) {
      await client.send(new ListTablesCommand({}));
      seen.push(time.now());
      errors.push(time.now() - (machine.now() + OFFSET_MS));
      machine.advance(100);
    }
    client.destroy();
    // forward only (the middle of each answer's second went back by up to 900 ms)
    for (let i = 1; i < seen.length; i++) expect(seen[i]!).toBeGreaterThan(seen[i - 1]!);
    // after a second of answers, within 100 ms of DynamoDB's time (the middle of its second was 200 ms off here, and up to 500)
    for (const e of errors.slice(11)) expect(Math.abs(e)).toBeLessThanOrEqual(100);
  });
});

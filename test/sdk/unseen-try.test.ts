/**
 * A request abandoned at its bound whose try was never seen on its way out: the client's
 * requestHandler does not use Node.js's http module (fetch, undici, http2), so lib/connection-phase.ts
 * follows nothing of it, and it may still be looking up the endpoint's name or connecting. Before (a
 * review of 2026-12-07's ninth list): told "DynamoDB at … took the request and gave no answer … on a
 * connection made", which nothing showed, since a try not seen unsent was judged sent. Now only a try
 * seen sent (its socket connected, or the simulator's network taking it) is told so; one of which
 * nothing was seen is told as DynamoDB out of reach, with the endpoint and region to check. On
 * simulated time; the handler answers nothing, so no network is used.
 */
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { describe, expect, it } from 'vitest';
import { simulatedClock } from '../../lib/clock.js';
import { MIN_REQUEST_BOUND_MS } from '../../lib/sdk/bounded-client.js';
import { getLeader } from '../../lib/sdk/index.js';
import { defaultTableNames } from '../../lib/tables.js';

describe("a try on a requestHandler that is not Node.js's http, abandoned at its bound", () => {
  it('is told as DynamoDB out of reach (timed out), not as taken and unanswered on a connection made', async () => {
    let handed: (() => void) | undefined;
    const reached = new Promise<void>((resolve) => (handed = resolve));
    const endpoint = 'http://dynamodb.example.internal:8000';
    const client = new DynamoDBClient({
      region: 'us-east-1',
      endpoint,
      credentials: { accessKeyId: 'x', secretAccessKey: 'y' },
      maxAttempts: 1,
      // a fetch, undici or http2 handler still resolving the name or connecting: it never answers
      requestHandler: {
        handle: () => {
          handed?.();
          return new Promise<never>(() => undefined);
        },
      },
    });
    const clock = simulatedClock({ start: Date.now() });
    const out = getLeader('unseen', { client, clock, tables: defaultTableNames('unseen'), clockSync: 'none' }).then(
      () => undefined,
      (e: unknown) => e as Error,
    );
    await reached;
    await clock.run(2 * MIN_REQUEST_BOUND_MS);
    const e = await out;
    expect(e).toMatchObject({ name: 'DynamoDBUnreachableError', code: 'timed out' });
    // before the fix: `getLeader of lease "unseen": DynamoDB at http://dynamodb.example.internal:8000 took the request and gave no answer within 5000 ms (timed out after it was sent on a connection made: …`
    expect(e!.message).toMatch(
      /^getLeader of lease "unseen": cannot reach DynamoDB at http:\/\/dynamodb\.example\.internal:8000 \(timed out\): check the client's endpoint and region, and that DynamoDB \(or DynamoDB Local: npx conclave-local\) is up; .*getLeader does not retry/,
    );
    expect(e!.message).not.toContain('took the request');
  });
});

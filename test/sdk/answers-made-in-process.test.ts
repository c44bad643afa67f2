/**
 * An exception a process builds itself (a test's mocked client, a stand-in) is not an answer read
 * from the wire: every AWS SDK exception class declares `$response`, set only when the error was
 * read from an HTTP answer. A mocked failure keeps its own type; an answer naming an error type
 * without x-amzn-RequestId is not DynamoDB's (test/sdk/push-broker-port.test.ts).
 */
import { ConditionalCheckFailedException, ProvisionedThroughputExceededException } from '@aws-sdk/client-dynamodb';
import { describe, expect, it } from 'vitest';
import { answeredByDynamoDB, NotDynamoDBError } from '../../lib/dynamodb-answers.js';

describe('answeredByDynamoDB and exceptions made in the process', () => {
  it.each([
    new ConditionalCheckFailedException({ $metadata: { httpStatusCode: 400 }, message: 'The conditional request failed' }),
    new ProvisionedThroughputExceededException({ $metadata: { httpStatusCode: 400, attempts: 3 }, message: 'throttled' }),
  ])('a mocked $name (no request id, no answer read) is passed on as it is', async (e) => {
    await expect(answeredByDynamoDB(Promise.reject(e), () => 'http://mock')).rejects.toBe(e);
  });

  it('the same exception read from an HTTP answer with no request id is not DynamoDB\'s', async () => {
    const e = Object.assign(new ConditionalCheckFailedException({ $metadata: { httpStatusCode: 400 }, message: 'The conditional request failed' }), { $response: { statusCode: 400, headers: {} } });
    const out = await answeredByDynamoDB(Promise.reject(e), () => 'http://127.0.0.1:9').catch((x: unknown) => x);
    expect(out).toBeInstanceOf(NotDynamoDBError);
    expect((out as Error).message).toMatch(/no x-amzn-RequestId header/);
  });
});

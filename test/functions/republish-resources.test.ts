/**
 * Events the election timer publishes again (deferred by an EventBridge outage) go out as the
 * stream functions' do: `resources` is the deployment's leases table ARN, which rules on a shared
 * bus (leader discovery's among them) match. A review (2026-12-07) asked whether the election
 * timer had CONCLAVE_LEASES_TABLE_ARN: the construct gives every function the same environment
 * (test/infra/conclave.test.ts), and depsFromEnv publishes with it. The coordinator and the
 * platform function publish no events (infra/access.ts: no events:PutEvents).
 */
import { EventBridgeClient, PutEventsCommand } from '@aws-sdk/client-eventbridge';
import type { SQSRecord } from 'aws-lambda';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { makeHandler as electionTimer } from '../../functions/election-timer.js';
import { depsFromEnv } from '../../lib/functions/env.js';
import { ENV } from '../../lib/function-env.js';
import { lambdaContext } from '../../lib/local/runtime.js';

afterEach(() => vi.restoreAllMocks());

const ARN = 'arn:aws:dynamodb:eu-west-1:111122223333:table/orders-leases';
const env = {
  [ENV.leasesTable]: 'orders-leases',
  [ENV.candidatesTable]: 'orders-candidates',
  [ENV.identitiesTable]: 'orders-identities',
  [ENV.eventBus]: 'arn:aws:events:eu-west-1:111122223333:event-bus/conclave',
  [ENV.leasesTableArn]: ARN,
  [ENV.timerQueueUrl]: 'https://sqs.eu-west-1.amazonaws.com/111122223333/timer',
  AWS_REGION: 'eu-west-1',
  AWS_ACCESS_KEY_ID: 'test',
  AWS_SECRET_ACCESS_KEY: 'test',
};

const sqsMessage = (id: string, body: unknown): SQSRecord => ({ messageId: id, receiptHandle: id, body: JSON.stringify(body), attributes: { ApproximateReceiveCount: '1' } as SQSRecord['attributes'], messageAttributes: {}, md5OfBody: '', eventSource: 'aws:sqs', eventSourceARN: 'arn:aws:sqs:eu-west-1:111122223333:timer', awsRegion: 'eu-west-1' }) as SQSRecord;

describe('the election timer as Lambda runs it (its deps from the environment the construct sets)', () => {
  it("publishes deferred events again with the leases table's ARN as their resources", async () => {
    const sent: PutEventsCommand[] = [];
    vi.spyOn(EventBridgeClient.prototype, 'send').mockImplementation((async (command: PutEventsCommand) => {
      sent.push(command);
      return { FailedEntryCount: 0, Entries: command.input.Entries!.map((_, i) => ({ EventId: `e-${i}` })) };
    }) as never);
    const detail = { id: 'r1:leader-elected', lease: 'orders', time: new Date(0).toISOString(), holder: 'a', fencingToken: 1, leaseTransitions: 0 };
    const handler = electionTimer(depsFromEnv('electionTimer', env));
    const out = await handler({ Records: [sqsMessage('m1', { republish: [{ detailType: 'Leader Elected', detail }], since: Date.now(), attempt: 1 })] }, lambdaContext('electionTimer'));
    expect(out).toEqual({ batchItemFailures: [] });
    expect(sent).toHaveLength(1);
    expect(sent[0]!.input.Entries).toEqual([expect.objectContaining({ EventBusName: env[ENV.eventBus], DetailType: 'Leader Elected', Resources: [ARN] })]);
  });
});

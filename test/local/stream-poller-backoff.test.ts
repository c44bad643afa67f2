/**
 * A read of the stream that keeps failing (DynamoDB Local gone, a request it refuses) is retried at
 * a backoff and told ever more rarely, never in a hot loop: the poller's sleeps are held by the test
 * and let go at each look at the outcome, so each failure's wait is seen and none is slept on the
 * machine's clock. The faults are real: a closed loopback port, DynamoDB Local's own answer.
 */
import { DescribeTableCommand, PutItemCommand } from '@aws-sdk/client-dynamodb';
import { DescribeStreamCommand, DynamoDBStreamsClient } from '@aws-sdk/client-dynamodb-streams';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { LOCAL_CREDENTIALS, LOCAL_REGION } from '../../lib/local/dynamodb-local.js';
import type { ShardCheckpoints } from '../../lib/local/stream-checkpoints.js';
import { RETRY_BACKOFF_MAX_MS, StreamPoller, type StreamPollerOptions } from '../../lib/local/stream-poller.js';
import { wiring } from '../../lib/wiring.js';
import { waitFor } from '../sdk/harness.js';
import { close, closableProxy, rewritingProxy } from '../proxy.js';
import { heldClock, testTables, type TestTables } from '../support.js';

let t: TestTables;
let arn: string;
/** The poller's wait on a shard with nothing new (idleMs): a number no backoff wait is. */
const IDLE = 7;
/** The stream discovery's nap (lib/local/stream-poller.ts: DISCOVER_EVERY_MS in naps of 100 ms). */
const DISCOVER_NAP = 100;
/** The waits after the 1st … 12th failure in a row: twice idleMs, twice as long each time, up to RETRY_BACKOFF_MAX_MS. */
const BACKOFF = [14, 28, 56, 112, 224, 448, 896, 1000, 1000, 1000, 1000, 1000];
/** How many times a run of `n` failures is told: at its 1st, 2nd, 4th, 8th … */
const toldOf = (n: number) => Math.floor(Math.log2(n)) + 1;

beforeAll(async () => {
  t = await testTables('backoff');
  arn = (await t.client.send(new DescribeTableCommand({ TableName: t.names.candidates }))).Table!.LatestStreamArn!;
});
afterAll(async () => {
  await t.drop();
});

const put = (name: string) => t.client.send(new PutItemCommand({ TableName: t.names.candidates, Item: { leaseName: { S: 'job' }, name: { S: name } } }));

/** A client of the Streams API at `endpoint` without the AWS SDK's own retries (they wait on the machine's clock): each failure is the poller's. */
const streamsAt = (endpoint: string) => new DynamoDBStreamsClient({ endpoint, region: LOCAL_REGION, credentials: LOCAL_CREDENTIALS, maxAttempts: 1 });

/** A poller of the candidates table's stream through `streams`, on a held clock: the names of the items it handled, the faults it told. */
function poller(streams: DynamoDBStreamsClient, more: Partial<StreamPollerOptions> = {}) {
  const held = heldClock();
  const handled: string[] = [];
  const errors: Error[] = [];
  const p = new StreamPoller({
    client: streams,
    streamArn: arn,
    trigger: wiring.candidateStream.trigger,
    functionName: 'candidateStream',
    idleMs: IDLE,
    clock: held.clock,
    invoke: async (e) => void handled.push(...e.Records.map((r) => r.dynamodb!.Keys!['name']!.S!)),
    deadLetter: () => undefined,
    onError: (e) => void errors.push(e),
    ...more,
  });
  /** A look at the outcome, which lets every held wait go first. */
  const look = <T>(probe: () => T) => () => (held.release(), probe());
  return { ...held, poller: p, handled, errors, look };
}

describe('StreamPoller on a read that keeps failing', () => {
  it('DynamoDB Local unreachable (its port closed): each retry waits twice as long as the one before, up to RETRY_BACKOFF_MAX_MS, the fault told at the 1st, 2nd, 4th, 8th … failure in a row; a read that succeeds starts over', async () => {
    expect(RETRY_BACKOFF_MAX_MS).toBe(1000);
    await put('before');
    const proxy = await closableProxy(inject('ddbEndpoint'));
    const streams = streamsAt(proxy.endpoint);
    const { poller: p, asked, release, unhold, holding, handled, errors } = poller(streams);
    // each look lets the shard's waits go, the discovery's only until its shard is known: the faults told are then the shard's alone
    let discovering = true;
    const look = <T>(probe: () => T) => () => (release((ms) => discovering || ms !== DISCOVER_NAP), probe());
    /** The port closed: twelve failed reads in a row, their waits and how often they were told. */
    const streak = async (label: string) => {
      const from = asked.length;
      const toldBefore = errors.length;
      await proxy.close();
      // an idle shard's waits (IDLE) aside, what the shard waited after each failure; before the fix: IDLE each time, each failure told
      const waits = () => asked.slice(from).filter((ms) => ms !== IDLE && ms !== DISCOVER_NAP);
      await waitFor(`${label}: twelve failed reads`, look(() => waits().length >= 12 || errors.length - toldBefore >= 12));
      const n = waits().length;
      expect(waits().slice(0, 12)).toEqual(BACKOFF);
      expect(errors.length - toldBefore).toBe(toldOf(n));
      expect(errors.slice(toldBefore).every((e) => /ECONNREFUSED|ECONNRESET|socket hang up/.test(e.message))).toBe(true);
    };
    p.start();
    try {
      await waitFor('the record written before the fault', look(() => handled.includes('before')));
      discovering = false;
      await waitFor('the discovery held', look(() => holding(DISCOVER_NAP)));
      await streak('the first fault');

      await proxy.open();
      await put('after');
      await waitFor('the record written once DynamoDB Local is back', look(() => handled.includes('after')));
      // the run of failures ended with that read: the next fault starts over, and is told at once
      await streak('the second fault');
      expect(handled).toEqual(['before', 'after']);
    } finally {
      unhold();
      await p.stop();
      streams.destroy();
      await proxy.close();
    }
  });

  it('a checkpoint DynamoDB Local refuses (InternalFailure for each GetShardIterator after it): retried at the same backoff, told at the 1st, 2nd, 4th … failure, never 10 times a second', async () => {
    const streams = streamsAt(inject('ddbEndpoint'));
    const plain = streamsAt(inject('ddbEndpoint'));
    const shardId = (await plain.send(new DescribeStreamCommand({ StreamArn: arn }))).StreamDescription!.Shards![0]!.ShardId!;
    plain.destroy();
    // a sequence number of the right form (stream-checkpoints.ts) beyond any in the shard
    const checkpoints: ShardCheckpoints = { get: (s, id) => (s === arn && id === shardId ? '999999999999999999999999' : undefined), set: () => undefined, drop: () => undefined };
    const { poller: p, asked, unhold, errors, look } = poller(streams, { checkpoints });
    const waits = () => asked.filter((ms) => ms !== IDLE && ms !== DISCOVER_NAP);
    p.start();
    try {
      await waitFor('twelve refused reads', look(() => waits().length >= 12 || errors.length >= 12));
      expect(waits().slice(0, 12)).toEqual(BACKOFF);
      expect(errors).toHaveLength(toldOf(waits().length));
      expect(errors.every((e) => e.name === 'InternalFailure')).toBe(true);
    } finally {
      unhold();
      await p.stop();
      streams.destroy();
    }
  });

  it('a stream that cannot be described (DynamoDB Local unreachable from the start): looked at every DISCOVER round as before, the fault told at the 1st, 2nd, 4th … failure in a row, not every round', async () => {
    const proxy = await closableProxy(inject('ddbEndpoint'));
    await proxy.close();
    const streams = streamsAt(proxy.endpoint);
    const { poller: p, asked, unhold, errors, look } = poller(streams);
    const naps = () => asked.filter((ms) => ms === DISCOVER_NAP).length;
    p.start();
    try {
      // a DescribeStream, then 20 naps: past the 81st nap, 5 (to 7) have failed
      await waitFor('five failed descriptions', look(() => naps() > 4 * 20 || errors.length >= 5));
      expect(asked.filter((ms) => ms !== DISCOVER_NAP)).toEqual([]);
      expect(errors).toHaveLength(toldOf(5)); // (as toldOf(6) and toldOf(7))
      expect(errors.every((e) => /ECONNREFUSED/.test(e.message))).toBe(true);
    } finally {
      unhold();
      await p.stop();
      streams.destroy();
    }
  });

  it('an expired iterator (the normal case, here DynamoDB Local’s answer to an iterator aged 20 minutes on its way): a new one after the idle wait, neither told nor backed off', async () => {
    let aging = 5;
    let aged = 0;
    // an iterator ends in base64 of "shardId|sequence number|epoch ms" (zero-padded): the time moved 20 minutes back, its length kept
    const proxy = await rewritingProxy(inject('ddbEndpoint'), (chunk) =>
      chunk.replace(/("ShardIterator":"[^"]*\|)([A-Za-z0-9+/=]+)"/, (whole, head: string, b64: string) => {
        if (aging <= 0) return whole;
        const [shard, sequence, ms] = Buffer.from(b64, 'base64').toString('latin1').split('|');
        if (ms === undefined || !/^\d+$/.test(ms)) return whole;
        aging--;
        aged++;
        const older = String(Number(ms) - 20 * 60_000).padStart(ms.length, '0');
        return `${head}${Buffer.from(`${shard}|${sequence}|${older}`, 'latin1').toString('base64')}"`;
      }),
    );
    const streams = streamsAt(proxy.endpoint);
    const { poller: p, asked, unhold, handled, errors, look } = poller(streams);
    p.start();
    try {
      await waitFor('five iterators expired', look(() => aged >= 5));
      await put('expired-after');
      await waitFor('the record written after', look(() => handled.includes('expired-after')));
      expect(errors).toEqual([]);
      expect(asked.filter((ms) => ms !== IDLE && ms !== DISCOVER_NAP)).toEqual([]);
      expect(handled.filter((n) => n === 'expired-after')).toHaveLength(1);
    } finally {
      unhold();
      await p.stop();
      streams.destroy();
      await close(proxy);
    }
  });
});

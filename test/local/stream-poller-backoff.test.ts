/**
 * A read of the stream that keeps failing (DynamoDB Local gone, a request it refuses) is retried at
 * a backoff and told ever more rarely, never in a hot loop: the poller's sleeps are held by the test
 * and let go at each look at the outcome, so each failure's wait is seen and none is slept on the
 * machine's clock. The faults are real: a closed loopback port, DynamoDB Local's own answer.
 */
import { DescribeTableCommand, PutItemCommand } from '@aws-sdk/client-dynamodb';
import { DescribeStreamCommand, DynamoDBStreamsClient, GetRecordsCommand, GetShardIteratorCommand } from '@aws-sdk/client-dynamodb-streams';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { LOCAL_CREDENTIALS, LOCAL_REGION } from '../../lib/local/dynamodb-local.js';
import type { ShardCheckpoints } from '../../lib/local/stream-checkpoints.js';
import { CHECKPOINT_REFUSALS, RETRY_BACKOFF_MAX_MS, StreamPoller, type StreamPollerOptions } from '../../lib/local/stream-poller.js';
import { wiring } from '../../lib/wiring.js';
import { waitFor } from '../sdk/harness.js';
import { close, closableProxy, rewritingProxy } from '../proxy.js';
import { heldClock, testTables, type TestTables } from '../support.js';

let t: TestTables;
let arn: string;
/** The poller's wait on a shard with nothing new (idleMs): a number no backoff wait is. */
const IDLE = 7;
/** The stream discovery's wait between rounds (lib/local/stream-poller.ts: DISCOVER_EVERY_MS, one sleep cut short by stop()). */
const DISCOVER_NAP = 2_000;
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

  it('a checkpoint DynamoDB Local refuses (InternalFailure for each GetShardIterator after it): retried at the same backoff, told at the 1st, 2nd, 4th failure; at the CHECKPOINT_REFUSALS-th (5) in a row the shard is read from TRIM_HORIZON, told once as a warning, the checkpoint dropped, and its records are delivered', async () => {
    expect(CHECKPOINT_REFUSALS).toBe(5);
    await put('refused-internal');
    const streams = streamsAt(inject('ddbEndpoint'));
    const plain = streamsAt(inject('ddbEndpoint'));
    const shardId = (await plain.send(new DescribeStreamCommand({ StreamArn: arn }))).StreamDescription!.Shards![0]!.ShardId!;
    plain.destroy();
    // a sequence number of the right form (stream-checkpoints.ts) beyond any in the shard: DynamoDB Local answers it with InternalFailure, every time
    const bad = '999999999999999999999999';
    const kept = new Map([[shardId, bad]]);
    const dropped: string[] = [];
    const checkpoints: ShardCheckpoints = {
      get: (s, id) => (s === arn ? kept.get(id) : undefined),
      set: (s, id, seq) => void (s === arn && kept.set(id, seq)),
      drop: (s, id) => void (s === arn && (dropped.push(id), kept.delete(id))),
      open: () => undefined,
    };
    const warned: { message: string; extra: Record<string, unknown> }[] = [];
    const log = { warn: (message: string, extra: Record<string, unknown>) => void warned.push({ message, extra }), error: () => undefined };
    const { poller: p, asked, unhold, handled, errors, look } = poller(streams, { checkpoints, log });
    const waits = () => asked.filter((ms) => ms !== IDLE && ms !== DISCOVER_NAP);
    p.start();
    try {
      // before the fix: refused for ever, the record never delivered (stopped at twelve refusals)
      await waitFor('the shard read after the fallback', look(() => handled.includes('refused-internal') || errors.length >= 12 || waits().length >= 12));
      // four refusals waited on (the fifth falls back at once), told at the 1st, 2nd and 4th
      expect(waits()).toEqual(BACKOFF.slice(0, 4));
      expect(errors).toHaveLength(toldOf(4));
      expect(errors.every((e) => e.name === 'InternalFailure')).toBe(true);
      expect(warned).toHaveLength(1);
      expect(warned[0]!.message).toContain(`the candidateStream function's checkpoint in shard ${shardId} (sequence number ${bad}) is refused by the stream (InternalFailure, 5 times in a row): reading the shard from TRIM_HORIZON; records before the checkpoint may be handled again`);
      expect(warned[0]!.extra).toMatchObject({ function: 'candidateStream', stream: arn, shard: shardId, sequenceNumber: bad });
      expect(dropped).toEqual([shardId]);
      expect(handled).toContain('before'); // from the shard's oldest record
      expect(kept.get(shardId)).not.toBe(bad); // and the checkpoint moves on from there
    } finally {
      unhold();
      await p.stop();
      streams.destroy();
    }
  });

  it('a single InternalFailure for a kept checkpoint (transient) is retried, the checkpoint kept: the shard resumes after it', async () => {
    const plain = streamsAt(inject('ddbEndpoint'));
    const shardId = (await plain.send(new DescribeStreamCommand({ StreamArn: arn }))).StreamDescription!.Shards![0]!.ShardId!;
    const it0 = await plain.send(new GetShardIteratorCommand({ StreamArn: arn, ShardId: shardId, ShardIteratorType: 'TRIM_HORIZON' }));
    const seen = (await plain.send(new GetRecordsCommand({ ShardIterator: it0.ShardIterator }))).Records!;
    plain.destroy();
    const at = seen.at(-1)!.dynamodb!.SequenceNumber!;
    // the checkpoint's first GetShardIterator reaches DynamoDB Local as one it answers with InternalFailure (its length kept), the later ones as they are
    let failing = 1;
    const proxy = await rewritingProxy(inject('ddbEndpoint'), (chunk) =>
      chunk.replace(`"SequenceNumber":"${at}"`, (whole) => (failing-- > 0 ? `"SequenceNumber":"${'9'.repeat(at.length)}"` : whole)),
    );
    const streams = streamsAt(proxy.endpoint);
    const dropped: string[] = [];
    const checkpoints: ShardCheckpoints = { get: (s, id) => (s === arn && id === shardId ? at : undefined), set: () => undefined, drop: (_s, id) => void dropped.push(id), open: () => undefined };
    const warned: string[] = [];
    const { poller: p, unhold, handled, errors, look } = poller(streams, { checkpoints, log: { warn: (m) => void warned.push(m), error: () => undefined } });
    p.start();
    try {
      await put('after-transient');
      await waitFor('the record written after the checkpoint', look(() => handled.includes('after-transient')));
      expect(handled).toEqual(['after-transient']); // resumed after the checkpoint, nothing before it again
      expect(errors.map((e) => e.name)).toEqual(['InternalFailure']);
      expect(warned).toEqual([]);
      expect(dropped).toEqual([]);
      expect(failing).toBeLessThan(0); // the proxy rewrote the first, and saw the retry
    } finally {
      unhold();
      await p.stop();
      streams.destroy();
      await close(proxy);
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
      // a DescribeStream, then one wait: past the 5th wait, 5 (or 6) have failed
      await waitFor('five failed descriptions', look(() => naps() > 4 || errors.length >= 5));
      expect(asked.filter((ms) => ms !== DISCOVER_NAP)).toEqual([]);
      expect(errors).toHaveLength(toldOf(5)); // (as toldOf(6))
      expect(errors.every((e) => /ECONNREFUSED/.test(e.message))).toBe(true);
    } finally {
      unhold();
      await p.stop();
      streams.destroy();
    }
  });

  it('a healthy stream: the discovery waits DISCOVER_EVERY_MS in one sleep per round, not ten naps a second, and stop() ends that wait at once (the held clock never lets it go)', async () => {
    const streams = streamsAt(inject('ddbEndpoint'));
    const { poller: p, asked, release, unhold, holding } = poller(streams);
    // the shard's idle waits go at each look; the discovery's only for the first rounds, then never
    let rounds = true;
    const look = <T>(probe: () => T) => () => (release((ms) => ms === IDLE || rounds), probe());
    const discovery = () => asked.filter((ms) => ms !== IDLE);
    p.start();
    let stopped = false;
    try {
      await waitFor('three rounds of discovery', look(() => discovery().length >= 3));
      // before the fix: [100, 100, 100 …], 20 naps of 100 ms a round
      expect(discovery().slice(0, 3)).toEqual([DISCOVER_NAP, DISCOVER_NAP, DISCOVER_NAP]);
      rounds = false;
      await waitFor('the discovery waiting', look(() => holding(DISCOVER_NAP)));
      const stopping = p.stop().then(() => void (stopped = true));
      await waitFor('stop() to resolve with the discovery’s wait still held', look(() => stopped));
      await stopping;
      expect(holding(DISCOVER_NAP)).toBe(true); // never let go: stop() cut it short
    } finally {
      unhold();
      if (!stopped) await p.stop();
      streams.destroy();
    }
  });

  it('an idle shard: stop() ends its idle wait (idleMs) at once, as it ends the discovery’s, instead of letting it run out (the held clock never lets it go)', async () => {
    await put('idle-before');
    const streams = streamsAt(inject('ddbEndpoint'));
    const { poller: p, unhold, handled, holding, look } = poller(streams);
    p.start();
    let stopped = false;
    try {
      // the shard is read to its end, then waits: nothing new in it
      await waitFor('the shard read', look(() => handled.includes('idle-before')));
      // from here nothing is let go: the probes only look
      await waitFor('the shard’s idle wait held', () => holding(IDLE));
      const stopping = p.stop().then(() => void (stopped = true));
      // before the fix: hung here, the idle wait had no stop signal (up to idleMs, 100 ms by default, on the machine's clock)
      await waitFor('stop() to resolve with the shard’s idle wait still held', () => stopped);
      await stopping;
      expect(holding(IDLE)).toBe(true); // never let go: stop() cut it short
    } finally {
      unhold();
      if (!stopped) await p.stop();
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

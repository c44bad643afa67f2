/**
 * Issue 36, item 5: no elections for nobody. The real handlers (tick, both streams, the election
 * timer) on DynamoDB Local, stepped on a manual clock: every stream record is read from DynamoDB
 * Local's streams and delivered through the wiring's filters, every timer message when it falls
 * due, the tick every minute. What they send is counted: invocations per function, DynamoDB writes
 * and reads, timer messages, elections.
 *
 * Before the fix, a lease whose last candidate was killed had an election at every tick until the
 * dead candidate's row went stale at 30 minutes: in the 8 minutes after the first one failed, 8 more
 * elections, each a ping, two lease writes, a timer message and four invocations (the candidate
 * stream, the lease stream twice, the timer); locally, with `npm start`'s 5 s tick, 90.
 */
import { DescribeTableCommand } from '@aws-sdk/client-dynamodb';
import { DescribeStreamCommand, DynamoDBStreamsClient, GetRecordsCommand, GetShardIteratorCommand } from '@aws-sdk/client-dynamodb-streams';
import type { DynamoDBRecord, SQSRecord } from 'aws-lambda';
import { afterEach, describe, expect, inject, it } from 'vitest';
import { makeHandler as candidateStream } from '../../functions/candidate-stream.js';
import { makeHandler as coordinatorTick } from '../../functions/coordinator.js';
import { makeHandler as electionTimer } from '../../functions/election-timer.js';
import { makeHandler as leaseStream } from '../../functions/lease-stream.js';
import { manualClock, type ManualClock } from '../../lib/clock.js';
import { coordinatorDeps } from '../../lib/coordinator/reconcile.js';
import { answeredLastPing } from '../../lib/election/decide.js';
import { decideFollower } from '../../lib/sdk/step.js';
import type { ConclaveEvent } from '../../lib/events/schemas.js';
import type { FunctionDeps } from '../../lib/functions/core.js';
import { observability } from '../../lib/functions/env.js';
import type { TimerQueueMessage } from '../../lib/functions/timer.js';
import { LOCAL_CREDENTIALS, LOCAL_REGION, localClient } from '../../lib/local/dynamodb-local.js';
import { matchesFilter } from '../../lib/local/event-filter.js';
import { lambdaContext } from '../../lib/local/runtime.js';
import { toLambdaRecord } from '../../lib/local/stream-poller.js';
import { OLDEST_EMULATION_VERSION } from '../../lib/schemas/strategy.js';
import { wiring, type FunctionName, type StreamTrigger } from '../../lib/wiring.js';
import { testTables, type TestTables } from '../support.js';

const T0 = Date.UTC(2026, 5, 1);
const MIN = 60_000;
const TICK_MS = wiring.coordinator.trigger.everySeconds * 1000;
const LEASE = 'reports';
const WRITES = new Set(['PutItemCommand', 'UpdateItemCommand', 'DeleteItemCommand', 'TransactWriteItemsCommand', 'BatchWriteItemCommand']);

/** One stream's reader: the records written since the last read, from DynamoDB Local's stream. */
class StreamReader {
  private readonly iterators = new Map<string, string | undefined>();
  constructor(
    private readonly streams: DynamoDBStreamsClient,
    private readonly arn: string,
  ) {}

  async read(): Promise<DynamoDBRecord[]> {
    const out: DynamoDBRecord[] = [];
    for (const s of (await this.streams.send(new DescribeStreamCommand({ StreamArn: this.arn }))).StreamDescription!.Shards!) {
      let it = this.iterators.has(s.ShardId!) ? this.iterators.get(s.ShardId!) : (await this.streams.send(new GetShardIteratorCommand({ StreamArn: this.arn, ShardId: s.ShardId, ShardIteratorType: 'TRIM_HORIZON' }))).ShardIterator;
      while (it) {
        const r = await this.streams.send(new GetRecordsCommand({ ShardIterator: it }));
        out.push(...(r.Records ?? []).map((x) => toLambdaRecord(x, this.arn)));
        this.iterators.set(s.ShardId!, r.NextShardIterator);
        if (!r.Records?.length) break;
        it = r.NextShardIterator;
      }
    }
    return out;
  }
}

/** The coordinator's functions, stepped by hand on `clock`, with what they did counted. */
class Coordinator {
  readonly invocations: Record<FunctionName, number> = { coordinator: 0, candidateStream: 0, leaseStream: 0, electionTimer: 0, platform: 0 };
  readonly requests = new Map<string, number>();
  readonly events: ConclaveEvent[] = [];
  readonly timerMessages: TimerQueueMessage[] = [];
  /** The functions' own client: what they send is counted, the test's own reads and writes are not. */
  readonly client = localClient(inject('ddbEndpoint'));
  readonly deps: FunctionDeps;
  private due: { at: number; body: string }[] = [];
  private readonly handlers: Record<'coordinator' | 'candidateStream' | 'leaseStream' | 'electionTimer', (e: unknown) => Promise<unknown>>;
  private readers: { name: 'candidateStream' | 'leaseStream'; reader: StreamReader; filters: StreamTrigger['filters'] }[] = [];
  private nextTick: number;

  private constructor(
    t: TestTables,
    readonly clock: ManualClock,
  ) {
    this.client.middlewareStack.add((next, context) => async (args) => {
      this.requests.set(context.commandName!, (this.requests.get(context.commandName!) ?? 0) + 1);
      return next(args);
    }, { step: 'initialize' });
    this.deps = {
      coordinator: coordinatorDeps(this.client, t.names, { clock }),
      timer: {
        schedule: async (m, delayMs) => {
          this.timerMessages.push(m);
          this.due.push({ at: clock.now() + delayMs, body: JSON.stringify(m) });
        },
      },
      publish: async (events) => void this.events.push(...events),
      deadLetter: async (p) => {
        throw new Error(`unexpected dead letter: ${p.reason}`);
      },
      ...observability('test', 'SILENT'),
    };
    const wrap = (name: FunctionName, h: (e: never, c: never) => Promise<unknown>) => (e: unknown) => {
      this.invocations[name]++;
      return h(e as never, lambdaContext(name, clock, false) as never);
    };
    this.handlers = { coordinator: wrap('coordinator', coordinatorTick(this.deps)), candidateStream: wrap('candidateStream', candidateStream(this.deps)), leaseStream: wrap('leaseStream', leaseStream(this.deps)), electionTimer: wrap('electionTimer', electionTimer(this.deps)) };
    this.nextTick = clock.now() + TICK_MS;
  }

  static async start(t: TestTables, clock: ManualClock, streams: DynamoDBStreamsClient): Promise<Coordinator> {
    const c = new Coordinator(t, clock);
    const arn = async (table: string) => (await t.client.send(new DescribeTableCommand({ TableName: table }))).Table!.LatestStreamArn!;
    const filters = (name: 'candidateStream' | 'leaseStream') => (wiring[name].trigger as StreamTrigger).filters;
    c.readers = [
      { name: 'candidateStream', reader: new StreamReader(streams, await arn(t.names.candidates)), filters: filters('candidateStream') },
      { name: 'leaseStream', reader: new StreamReader(streams, await arn(t.names.leases)), filters: filters('leaseStream') },
    ];
    return c;
  }

  /** The live workers' part, run before each look at the streams (the test's candidates answering their pings). */
  workers: () => Promise<void> = async () => undefined;

  /** Delivers every stream record written so far (Lambda's filters applied), until none is left. */
  async settle(): Promise<void> {
    for (let more = true; more; ) {
      more = false;
      await this.workers();
      for (const { name, reader, filters } of this.readers) {
        const records = (await reader.read()).filter((r) => !filters || filters.some((f) => matchesFilter(f, r)));
        if (!records.length) continue;
        more = true;
        await this.handlers[name]({ Records: records });
      }
    }
  }

  /** Reads the candidate stream's new records and drops them: as if they never reached the function. */
  async loseCandidateRecords(): Promise<number> {
    return (await this.readers[0]!.reader.read()).length;
  }

  /** Runs simulated time until `until`: ticks and timer messages as they fall due, the streams after each. */
  async runUntil(until: number): Promise<void> {
    await this.settle();
    for (;;) {
      const timer = this.due.reduce<number>((m, d) => Math.min(m, d.at), Infinity);
      const next = Math.min(timer, this.nextTick);
      if (next > until) break;
      this.clock.set(next);
      if (next === timer) {
        const ready = this.due.filter((d) => d.at <= next);
        this.due = this.due.filter((d) => d.at > next);
        await this.handlers.electionTimer({ Records: ready.map((d, i) => sqsRecord(`${next}-${i}`, d.body)) });
      } else {
        this.nextTick += TICK_MS;
        await this.handlers.coordinator({ 'detail-type': 'Scheduled Event', source: 'aws.events', time: new Date(next).toISOString() });
      }
      await this.settle();
    }
    this.clock.set(until);
  }

  /** What was counted since the last call: invocations, DynamoDB writes and reads, timer messages, elections opened and failed. */
  take() {
    const count = (pred: (command: string) => boolean) => [...this.requests].filter(([k]) => pred(k)).reduce((n, [, v]) => n + v, 0);
    const out = {
      invocations: { ...this.invocations },
      writes: count((k) => WRITES.has(k)),
      reads: count((k) => !WRITES.has(k)),
      timerMessages: this.timerMessages.length,
      electionsStarted: this.events.filter((e) => e.detailType === 'Election Started').length,
      electionsFailed: this.events.filter((e) => e.detailType === 'Election Failed').length,
    };
    for (const k of Object.keys(this.invocations) as FunctionName[]) this.invocations[k] = 0;
    this.requests.clear();
    this.events.length = 0;
    this.timerMessages.length = 0;
    return out;
  }
}

const sqsRecord = (id: string, body: string): SQSRecord =>
  ({ messageId: id, receiptHandle: id, body, attributes: { ApproximateReceiveCount: '1' } as SQSRecord['attributes'], messageAttributes: {}, md5OfBody: '', eventSource: 'aws:sqs', eventSourceARN: 'arn:aws:sqs:local:000000000000:timer', awsRegion: 'local' }) as SQSRecord;

const cleanup: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const f of cleanup.splice(0).reverse()) await f();
});

/**
 * A lease elected for its one candidate `w1`, which is then killed (kill -9: its candidate row
 * stays, live for 30 minutes, and nothing renews anything); run until the first election after
 * the kill has failed.
 */
async function lastCandidateKilled(label: string) {
  const t = await testTables(label);
  const streams = new DynamoDBStreamsClient({ endpoint: inject('ddbEndpoint'), region: LOCAL_REGION, credentials: LOCAL_CREDENTIALS });
  cleanup.push(async () => {
    streams.destroy();
    await t.drop();
  });
  const clock = manualClock(T0);
  const c = await Coordinator.start(t, clock, streams);
  cleanup.push(async () => c.client.destroy());
  // the test's own stores (on the test's client: not counted)
  const { candidates, leases } = coordinatorDeps(t.client, t.names, { clock });
  const lease = async () => (await leases.read(LEASE)).item;
  /** Live candidates: each answers a ping as soon as it is written (LeaseCandidate answers an election it reads by renewing). */
  const live = new Set<string>();
  c.workers = async () => {
    for (const name of live) {
      const row = (await candidates.read(LEASE, name)).item;
      if (row?.pingTime !== undefined && !answeredLastPing(row)) await candidates.renew(LEASE, name, clock.now());
    }
  };
  const stand = async (name: string) => {
    await candidates.write(await candidates.read(LEASE, name), { set: { emulationVersion: '1.30.0', binaryVersion: '1.30.0', preferredStrategies: [OLDEST_EMULATION_VERSION], renewTime: clock.now(), createdAt: clock.now() } });
    live.add(name);
  };
  await stand('w1');
  await c.settle();
  // the candidate stream created the row with an election that waited for the lease stream to see it, which elected w1
  expect(await lease()).toMatchObject({ holderIdentity: 'w1' });
  c.take(); // that first election is not what this file counts
  // killed now: its 5 s first term runs out; the next tick opens an election, which fails at its deadline
  live.delete('w1');
  await c.runUntil(T0 + TICK_MS + 10_000);
  // (two timer messages: the failed election's, and the term end the first election's own timer
  // scheduled when, firing after w1 was elected, it found w1 silent: recheckAt)
  expect(c.take()).toMatchObject({ electionsStarted: 1, electionsFailed: 1, timerMessages: 2 });
  expect(await lease()).toMatchObject({ lastElectionFailure: { reason: 'noLiveCandidates' } });
  return { c, clock, candidates, lease, stand };
}

// each tick scans DynamoDB Local: room for a busy machine, not a budget
describe('no elections for nobody (issue 36 item 5)', { timeout: 120_000 }, () => {
  it('a lease whose last candidate was killed gets no election at any tick while that candidate stays silent: 8 minutes, no ping, no lease write, no timer', async () => {
    const { c, clock, candidates, lease } = await lastCandidateKilled('idle-lease');
    const pinged = (await candidates.read(LEASE, 'w1')).item!.pingTime;
    await c.runUntil(clock.now() + 8 * MIN);
    // 8 ticks, each a scan of the three tables and nothing more (before the fix: 8 elections, 24
    // writes, 16 more reads, 8 timer messages, 32 stream and timer invocations)
    expect(c.take()).toEqual({ invocations: { coordinator: 8, candidateStream: 0, leaseStream: 0, electionTimer: 0, platform: 0 }, writes: 0, reads: 24, timerMessages: 0, electionsStarted: 0, electionsFailed: 0 });
    expect((await candidates.read(LEASE, 'w1')).item!.pingTime).toBe(pinged); // asked once, not again
    const l = (await lease())!;
    expect(l.holderIdentity).toBeUndefined();
    expect(l.election).toBeUndefined();
  });

  it('a new candidate is elected by the candidate stream at once, not at the next tick', async () => {
    const { c, clock, lease, stand } = await lastCandidateKilled('idle-lease-new');
    await c.runUntil(clock.now() + 3 * MIN);
    c.take();
    clock.advance(7_000); // between ticks
    await stand('w2');
    await c.settle();
    expect(await lease()).toMatchObject({ holderIdentity: 'w2', renewTime: clock.now() });
    expect(c.take()).toMatchObject({ invocations: { coordinator: 0, electionTimer: 0 }, electionsStarted: 0 });
  });

  it('the silent candidate that comes back answers its standing ping by renewing, and is elected at once', async () => {
    const { c, clock, candidates, lease } = await lastCandidateKilled('idle-lease-back');
    await c.runUntil(clock.now() + 3 * MIN);
    c.take();
    clock.advance(7_000);
    expect(await candidates.renew(LEASE, 'w1', clock.now())).toBe(true); // what LeaseCandidate does every 5 minutes, or when it answers
    await c.settle();
    expect(await lease()).toMatchObject({ holderIdentity: 'w1', renewTime: clock.now() });
    expect(c.take()).toMatchObject({ invocations: { coordinator: 0, electionTimer: 0 } });
  });

  it('a live candidate that missed the failed election (its wake lost) answers the failure by renewing, once, and is elected by the re-asked election, not its fallback (seed 12040)', async () => {
    const { c, clock, candidates, lease } = await lastCandidateKilled('idle-lease-missed');
    // w1 was alive all along, a quiet follower whose ping's wake was lost: it polls the lease every
    // 2 s and does what the SDK's follower decides (decideFollower), renewing its candidacy when
    // told to answer; its fallback (take the vacant lease itself) is 45 s away
    const renewals: number[] = [];
    let acked: string | undefined;
    let vacantSince: number | undefined;
    let polledAt = -Infinity;
    c.workers = async () => {
      if (clock.now() - polledAt < 2_000) return;
      polledAt = clock.now();
      const l = await lease();
      const d = decideFollower({ lease: l, identity: 'w1', instance: 'w1-2', mode: 'coordinated', candidate: true, ackedElection: acked, unanswered: false, standAgain: undefined, hadRow: l !== undefined, now: clock.now(), observedAt: clock.now(), vacantSince, vanished: undefined, retryPeriodMs: 2_000, fallbackAfterMs: 45_000 });
      vacantSince = d.vacantSince;
      expect(d.take).toBeUndefined(); // never its fallback
      if (typeof d.answer === 'object') {
        expect(await candidates.renew(LEASE, 'w1', clock.now())).toBe(true);
        renewals.push(clock.now());
        acked = d.answer.election;
      }
    };
    for (let i = 0; i < 15 && !(await lease())!.holderIdentity; i++) await c.runUntil(clock.now() + 2_000);
    expect(await lease()).toMatchObject({ holderIdentity: 'w1' });
    expect(renewals).toHaveLength(1); // once for the failure, not at every read of it
    expect(c.take()).toMatchObject({ electionsFailed: 0 });
  });

  it('the tick asks a new candidate whose stream record never reached the function, and it is elected', async () => {
    const { c, clock, lease, stand } = await lastCandidateKilled('idle-lease-tick');
    await stand('w2');
    expect(await c.loseCandidateRecords()).toBe(1); // its INSERT never reaches the function
    await c.runUntil(clock.now() + TICK_MS);
    expect(await lease()).toMatchObject({ holderIdentity: 'w2' });
    // the second election is w2's own first term running out (this harness's candidates answer
    // pings and never renew a lease): opened at the term's end by its term-end timer, not the next tick
    expect(c.take()).toMatchObject({ invocations: { coordinator: 1 }, electionsStarted: 2 });
  });
});

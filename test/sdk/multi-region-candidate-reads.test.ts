/**
 * `multiRegion` promises that every read is strongly consistent (an eventually consistent one may
 * miss writes made in any Region). A coordinated elector's candidacy on a live session checks its
 * own row with a read each renewIntervalMs (lib/sdk/candidate.ts, scheduled): eventually
 * consistent in one Region (half the read units), strongly consistent under `multiRegion` (before:
 * eventually consistent whatever the elector's option, as the candidacy never heard of it). On
 * DynamoDB Local (a single-Region table, which `multiRegion` allows), each GetItem's input is
 * captured by a middleware on the client.
 */
import type { DynamoDBClient, GetItemCommandInput } from '@aws-sdk/client-dynamodb';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { localClient } from '../../lib/local/dynamodb-local.js';
import { LeaderElector } from '../../lib/sdk/elector.js';
import { Session } from '../../lib/sdk/session.js';
import { CandidateStore } from '../../lib/stores/candidate-store.js';
import { testTables, type TestTables } from '../support.js';
import { waitFor } from './harness.js';

/** A client of the run's DynamoDB Local that records the input of each GetItem it sends. */
function recordingClient(): { client: DynamoDBClient; gets: GetItemCommandInput[] } {
  const client = localClient(inject('ddbEndpoint'));
  const gets: GetItemCommandInput[] = [];
  client.middlewareStack.add(
    (next, context) => async (args) => {
      if (context.commandName === 'GetItemCommand') gets.push(args.input as GetItemCommandInput);
      return next(args);
    },
    { step: 'initialize', name: 'recordGetItem' },
  );
  return { client, gets };
}

describe("a candidacy on a session reads its own row as its elector's multiRegion says", () => {
  let t: TestTables;
  beforeAll(async () => {
    t = await testTables('mr-cand-reads');
  });
  afterAll(async () => t?.drop());

  /** An elector on a session, its candidacy checking its row every second; the GetItems on the candidates table sent once the row is on the session. */
  async function candidateReads(multiRegion: boolean): Promise<GetItemCommandInput[]> {
    const { client, gets } = recordingClient();
    const stop = new AbortController();
    const session = new Session({ client, tables: t.names, prefix: `mr${multiRegion ? 1 : 0}` });
    const elector = new LeaderElector({
      client,
      session,
      multiRegion,
      leaseName: `lease-${multiRegion}`,
      identity: `worker-${multiRegion}`,
      tables: t.names,
      platform: 'none',
      candidacy: { binaryVersion: '1.0.0', emulationVersion: '1.0.0', renewIntervalMs: 1_000 },
      callbacks: { onStartedLeading: () => {}, onStoppedLeading: () => {} },
    });
    const sessionRun = session.run(stop.signal);
    const run = elector.run(stop.signal);
    try {
      await elector.ready;
      // the row stands on the session: the next renewals are reads of it, not writes
      const candidates = new CandidateStore(t.client, t.names.candidates);
      await waitFor('the row on the session', async () => session.name !== undefined && elector.candidate!.healthy() && (await candidates.read(`lease-${multiRegion}`, `worker-${multiRegion}`)).item?.session === session.name);
      const from = gets.length;
      const onCandidates = () => gets.slice(from).filter((g) => g.TableName === t.names.candidates);
      await waitFor('two checks of the row', () => onCandidates().length >= 2);
      return onCandidates();
    } finally {
      stop.abort();
      await Promise.allSettled([run, sessionRun]);
      client.destroy();
    }
  }

  it('multiRegion: every read of the row strongly consistent', async () => {
    const reads = await candidateReads(true);
    expect(reads.map((r) => r.ConsistentRead)).toEqual(reads.map(() => true)); // before the fix: false, the eventually consistent check
  });

  it('in one Region: the check is eventually consistent (half the read units), as before', async () => {
    const reads = await candidateReads(false);
    expect(reads.some((r) => r.ConsistentRead === false)).toBe(true);
  });
});

/**
 * getLeader on a term its lease's named session row does not vouch for (the row gone, or another
 * process's: a same-lease peer redirected `session`), or one its process left (leftTerms): judged
 * as the coordinator's tick judges it (lib/election/vacancy.ts judgingRow), by its holder's own
 * process's freshest session row, or by the lease's own stamp with none left. On DynamoDB Local,
 * with an injected clock.
 */
import { PutItemCommand } from '@aws-sdk/client-dynamodb';
import { marshall } from '@aws-sdk/util-dynamodb';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { manualClock } from '../../lib/clock.js';
import { localClient } from '../../lib/local/dynamodb-local.js';
import { SESSION_COMPONENT, allLeasesSessionComponent, sessionKey, type LeftTerm } from '../../lib/schemas/identity.js';
import type { Lease } from '../../lib/schemas/lease.js';
import { DynamoDBRefusedError } from '../../lib/sdk/faults.js';
import { getLeader } from '../../lib/sdk/get-leader.js';
import { IdentityStore } from '../../lib/stores/identity-store.js';
import { BrokenSessionError } from '../../lib/stores/errors.js';
import { LeaseStore } from '../../lib/stores/lease-store.js';
import { MIN, NOW, SEC } from '../fixtures.js';
import { testTables, type TestTables } from '../support.js';

let t: TestTables;
let leases: LeaseStore;
let identities: IdentityStore;

beforeAll(async () => {
  t = await testTables('get-leader-judging');
  leases = new LeaseStore(t.client, t.names.leases);
  identities = new IdentityStore(t.client, t.names.identities);
});
afterAll(() => t?.drop());

/** Lease `name` held by a1 of process `process` on session `session` (15 s long, token 42), its own stamp at `renewTime`. */
const heldBy = (name: string, process: string, session: string, renewTime = NOW - MIN, extra: Partial<Lease> = {}) =>
  leases.write(LeaseStore.readOf(name, undefined), {
    set: { holderIdentity: 'a1', holderInstance: `a1_1@${process}`, session, acquireTime: NOW - MIN, renewTime, leaseDurationSeconds: 15, leaseTransitions: 2, fencingToken: 42, ...extra },
  });
/** Session row `name` of process `process`, renewed at `renewTime`; `left`: the terms its stopped electors left. */
const processSession = (name: string, process: string, renewTime: number, left?: Record<string, LeftTerm>) =>
  identities.write(
    { key: sessionKey(name), item: undefined, revision: 0 },
    { set: { holderIdentity: `${name}_1`, process, hostname: 'web-9', leaseDurationSeconds: 60, acquireTime: NOW - 10 * MIN, renewTime, ...(left ? { leftTerms: left } : {}) } },
  );
const at = (ms: number) => ({ client: t.client, tables: t.names, clockSync: 'none' as const, clock: manualClock(ms) });

describe("getLeader: a term its named session does not vouch for, judged as the coordinator's tick judges it (judgingRow)", () => {
  it("redirected, its holder's own process's session live: the leader until that session's stamp + the lease duration (+ clockSkewMs), then null", async () => {
    await processSession('s-pl', 'pl', NOW - 2 * SEC);
    await processSession('s-pl-old', 'pl', NOW - 5 * MIN); // an older session of the same process: not the one it renews
    await processSession('s-peer', 'p2', NOW - 30 * SEC); // a peer's, stale: it would end the term if believed
    await heldBy('redirected-gone', 'pl', 's-redirected-gone'); // pointed at a missing row
    await heldBy('redirected-peer', 'pl', 's-peer'); // pointed at another process's row
    for (const lease of ['redirected-gone', 'redirected-peer']) {
      expect(await getLeader(lease, at(NOW)), lease).toMatchObject({ holder: 'a1', fencingToken: 42 });
      expect(await getLeader(lease, at(NOW + 14 * SEC)), lease).toMatchObject({ holder: 'a1' }); // s-pl's renewal + 15 s + the 1 s skew margin
      // before: a1 as of now, whatever the time (held until its holder reads the lease)
      expect(await getLeader(lease, at(NOW + 14 * SEC + 1)), lease).toBeNull();
    }
  });

  it("redirected, its holder's own process's session in its shard (granted every lease): found there", async () => {
    const name = `${allLeasesSessionComponent('ps').slice('conclave-session:'.length)}:s-ps`;
    await processSession(name, 'ps', NOW - 2 * SEC);
    await heldBy('redirected-shard', 'ps', 's-shard-gone'); // a name without a partition: conclave-session and ps's shard are both looked in
    expect(await getLeader('redirected-shard', at(NOW + 14 * SEC))).toMatchObject({ holder: 'a1' });
    expect(await getLeader('redirected-shard', at(NOW + 14 * SEC + 1))).toBeNull();
  });

  it("redirected, a row of its holder's process's partitions that the schema refuses: judged by nobody (a BrokenSessionError naming that row), as a refused named row; one naming another process is no bar", async () => {
    // a session row of pr another writer broke (its host name a number): pr may renew it on
    const broken = (name: string, process: string) =>
      t.client.send(new PutItemCommand({ TableName: t.names.identities, Item: marshall({ component: SESSION_COMPONENT, name, holderIdentity: `${name}_1`, process, hostname: 5, leaseDurationSeconds: 60, acquireTime: NOW - 10 * MIN, renewTime: NOW - 2 * SEC, revision: 3 }) }));
    await broken('s-pr-broken', 'pr');
    await heldBy('redirected-refused', 'pr', 's-redirected-refused-gone'); // its own stamp a minute old
    // before: null (the refused row dropped, the lease's own stamp over 45 s ago)
    const e = await getLeader('redirected-refused', at(NOW)).catch((x: unknown) => x);
    expect(e).toBeInstanceOf(BrokenSessionError);
    expect((e as BrokenSessionError).key).toEqual(sessionKey('s-pr-broken'));
    expect((e as BrokenSessionError).message).toMatch(/^getLeader of lease "redirected-refused": the term of a1 \(fencing token 42\) is held on session "s-pr-broken", whose row .* does not match the schema \(hostname: /);
    await broken('s-p8-broken', 'p8');
    await heldBy('redirected-refused-other', 'pq', 's-redirected-refused-other-gone');
    expect(await getLeader('redirected-refused-other', at(NOW))).toBeNull();
  });

  it("redirected, no session of its holder's process left: by the lease's own stamp, null once that ran out", async () => {
    await heldBy('redirected-none', 'p-none', 's-redirected-none-gone', NOW - 2 * SEC);
    expect(await getLeader('redirected-none', at(NOW + 14 * SEC))).toMatchObject({ holder: 'a1' });
    // before: a1 as of now, whatever the time
    expect(await getLeader('redirected-none', at(NOW + 14 * SEC + 1))).toBeNull();
    await heldBy('redirected-none-old', 'p-none', 's-redirected-none-gone'); // its own stamp a minute old: over 45 s ago
    expect(await getLeader('redirected-none-old', at(NOW))).toBeNull();
  });

  it("a term its process left to run out (leftTerms), redirected off its session: null once the stamp it was left at + the lease duration ran out, however the session renews on", async () => {
    await processSession('s-pk', 'pk', NOW - SEC, { 'kept-left': { token: 42, instance: 'a1_1@pk', stamp: NOW - 10 * SEC } });
    await heldBy('kept-left', 'pk', 's-kept-left-gone');
    expect(await getLeader('kept-left', at(NOW + 6 * SEC))).toMatchObject({ holder: 'a1' }); // left at NOW - 10 s, + 15 s, + 1 s
    // before: a1 as of now, whatever the time
    expect(await getLeader('kept-left', at(NOW + 6 * SEC + 1))).toBeNull();
  });

  it('reads: the lease, the named row, then a consistent Query of each partition its holder’s process keeps its sessions in; a vouched term, the two GetItems alone', async () => {
    await processSession('s-pq', 'pq', NOW - 2 * SEC);
    await heldBy('counted-redirected', 'pq', 's-counted-gone');
    await heldBy('counted-vouched', 'pq', 's-pq');
    const client = localClient(inject('ddbEndpoint'));
    const sent: string[] = [];
    client.middlewareStack.add((next, context) => async (args) => {
      const input = args.input as { ConsistentRead?: boolean; ExpressionAttributeValues?: Record<string, { S?: string }> };
      sent.push(`${context.commandName as string}${input.ConsistentRead ? ' consistent' : ''}${input.ExpressionAttributeValues ? ` ${input.ExpressionAttributeValues[':pk']?.S}` : ''}`);
      return next(args);
    });
    expect(await getLeader('counted-redirected', { ...at(NOW), client })).toMatchObject({ holder: 'a1' });
    expect(sent.sort()).toEqual(['GetItemCommand consistent', 'GetItemCommand consistent', `QueryCommand consistent ${SESSION_COMPONENT}`, `QueryCommand consistent ${allLeasesSessionComponent('pq')}`].sort());
    sent.length = 0;
    expect(await getLeader('counted-vouched', { ...at(NOW), client })).toMatchObject({ holder: 'a1' });
    expect(sent).toEqual(['GetItemCommand consistent', 'GetItemCommand consistent']);
    client.destroy();
  });

  it('a role not allowed the Query of its holder’s process’s sessions: an error naming the identities table, the partition and the grant', async () => {
    await heldBy('denied-query', 'pd', 's-denied-gone');
    const client = localClient(inject('ddbEndpoint'));
    client.middlewareStack.add(
      (next, context) => async (args) => {
        if (context.commandName === 'QueryCommand') throw Object.assign(new Error('User: arn:aws:sts::1:assumed-role/client is not authorized to perform: dynamodb:Query'), { name: 'AccessDeniedException' });
        return next(args);
      },
      { step: 'initialize', name: 'deny' },
    );
    const e = await getLeader('denied-query', { ...at(NOW), client }).catch((x: unknown) => x);
    client.destroy();
    expect(e).toBeInstanceOf(DynamoDBRefusedError);
    expect(e).toMatchObject({ kind: 'denied' });
    expect((e as Error).message).toMatch(
      new RegExp(
        `^getLeader of lease "denied-query": DynamoDB refused the request \\(AccessDeniedException: .*dynamodb:Query\\): ` +
          `its session "s-denied-gone" does not vouch for a1's term, so it is judged by a1's own process's sessions, in the partitions "${SESSION_COMPONENT}", "${allLeasesSessionComponent('pd')}" on the identities table "${t.names.identities}", which this role may not read \\(Query\\); ` +
          `grant it Conclave's grantGetLeader \\(a worker's role: grantWorker\\) of @conclave/cdk 0.2.0 or later \\(the lease rows, and reads and queries of every session partition\\), and check its credentials$`,
      ),
    );
  });
});

describe('getLeader: a session row read after the lease is evidence as of its own read, as the coordinator’s tick takes it', () => {
  /**
   * A client whose requests take `rttMs` of the injected clock: the lease read is sent at the
   * clock's start, the session row's read (and the Query of the holder's own sessions) that much
   * later, each after the answer before it.
   */
  const slow = (clock: ReturnType<typeof manualClock>, rttMs: number) => {
    const client = localClient(inject('ddbEndpoint'));
    client.middlewareStack.add((next) => async (args) => {
      const out = await next(args);
      clock.advance(rttMs);
      return out;
    });
    return client;
  };

  it.each([
    { name: 'its named row, vouching', lease: 'late-vouched', process: 'pv', session: 's-pv' },
    { name: "redirected: its holder's own process's row, read by the Query after the named row's read", lease: 'late-redirected', process: 'pw', session: 's-late-gone' },
  ])("$name: a term whose session's stamp + lease + skew falls between the lease read and the session read is over (null), as a tick reading the same rows judges it", async ({ lease, process, session }) => {
    await processSession(`s-${process}`, process, NOW - 2 * SEC);
    await heldBy(lease, process, session);
    // the session's stamp + 15 s + the 1 s skew margin: NOW + 14 s; the lease read 10 ms before it, the session's 10 ms (or, for the Query, 30 ms) after
    const clock = manualClock(NOW + 14 * SEC - 10);
    const client = slow(clock, 20);
    // before: a1, judged as of the lease read's send with the later read's stamp (a tick with these reads: over since NOW + 14 s)
    expect(await getLeader(lease, { client, tables: t.names, clockSync: 'none', clock })).toBeNull();
    // the same reads, none slow: the leader, to the millisecond
    expect(await getLeader(lease, { ...at(NOW + 14 * SEC), client: t.client })).toMatchObject({ holder: 'a1', fencingToken: 42 });
    client.destroy();
  });

  it('a term its lease’s own stamp keeps is judged by it as of the lease read, however late the session read', async () => {
    await processSession('s-po', 'po', NOW - 30 * SEC);
    await heldBy('late-own', 'po', 's-po', NOW - 2 * SEC);
    const clock = manualClock(NOW + 14 * SEC - 10);
    const client = slow(clock, 20);
    expect(await getLeader('late-own', { client, tables: t.names, clockSync: 'none', clock })).toMatchObject({ holder: 'a1' });
    client.destroy();
  });
});

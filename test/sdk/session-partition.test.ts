/**
 * The partitions of session rows (lib/schemas/session-partition.ts): a process granted every lease
 * writes its sessions in one of SESSION_SHARDS partitions, `conclave-session:all-<k>`, named by its
 * session's name; a scoped one in its grant's; an older SDK's names (no colon) are rows of
 * `conclave-session`. Real Sessions and the session reader on DynamoDB Local.
 */
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { seededRandom, systemClock } from '../../lib/clock.js';
import {
  SESSION_COMPONENT,
  SESSION_SHARDS,
  allLeasesSessionComponent,
  isSessionComponent,
  isSessionShard,
  mayBeProcessSession,
  processSessionComponents,
  sessionComponent,
  sessionKey,
  sessionScope,
  sessionShard,
  type IdentityLease,
} from '../../lib/schemas/identity.js';
import { localClient } from '../../lib/local/dynamodb-local.js';
import { DynamoDBRefusedError } from '../../lib/sdk/faults.js';
import { SessionReader } from '../../lib/sdk/lock.js';
import { Session } from '../../lib/sdk/session.js';
import { waitFor } from './harness.js';
import { IdentityStore } from '../../lib/stores/identity-store.js';
import { NOW } from '../fixtures.js';
import { testTables, type TestTables } from '../support.js';

let t: TestTables;
beforeAll(async () => void (t = await testTables('spart')));
afterAll(() => t.drop());

/** The term a follower looks for its holder's own process's session for (SessionReader.freshestOf: what a refused row's error names). */
const TERM = { lease: 'job', holderIdentity: 'a', fencingToken: 7 };

/** Two process ids whose shards differ, the first in shard `all-<k>` for some k. */
function twoShards(tag: string): [string, string] {
  const a = `${tag}-a`;
  for (let i = 0; ; i++) if (sessionShard(`${tag}-b${i}`) !== sessionShard(a)) return [a, `${tag}-b${i}`];
}

describe('the partition of a session, from its name', () => {
  it('spreads 1,000 processes over all 64 shards, none with more than twice its share', () => {
    const counts = new Map<string, number>();
    for (let i = 0; i < 1_000; i++) {
      const c = allLeasesSessionComponent(`process-${i}`);
      counts.set(c, (counts.get(c) ?? 0) + 1);
    }
    expect(counts.size).toBe(SESSION_SHARDS);
    expect(Math.max(...counts.values())).toBeLessThanOrEqual((2 * 1_000) / SESSION_SHARDS);
    for (const c of counts.keys()) expect(c).toMatch(/^conclave-session:all-\d\d$/);
  });

  it('finds the partition from the name alone: a shard, a scope, or (no colon: an older SDK) conclave-session', () => {
    const shard = sessionShard('p-1');
    expect(sessionKey(`${shard}:session-x`)).toEqual({ component: allLeasesSessionComponent('p-1'), name: `${shard}:session-x` });
    expect(sessionKey(`${sessionScope(['A'])}:session-x`).component).toBe(sessionComponent(['A']));
    expect(sessionKey('session-old')).toEqual({ component: SESSION_COMPONENT, name: 'session-old' });
    // every kind is a session partition (the identities scan and the grants leave them apart); only the shards are shards
    for (const c of [SESSION_COMPONENT, allLeasesSessionComponent('p-1'), sessionComponent(['A'])]) expect(isSessionComponent(c)).toBe(true);
    expect([SESSION_COMPONENT, sessionComponent(['A']), `${SESSION_COMPONENT}:all-64`, `${SESSION_COMPONENT}:all-7`].map(isSessionShard)).toEqual([false, false, false, false]);
    expect(isSessionShard(allLeasesSessionComponent('p-1'))).toBe(true);
  });

  it("looks for a process's own sessions in its own shard, whoever's shard the lease names; in the scope; for a name without a partition, in conclave-session and its shard", () => {
    const [a, b] = twoShards('own');
    // a peer (b) rewrote the lease a holds onto its own session: a's sessions are in a's shard
    expect(processSessionComponents(`${sessionShard(b)}:session-1`, a)).toEqual([allLeasesSessionComponent(a)]);
    expect(processSessionComponents(`${sessionScope(['A'])}:session-1`, a)).toEqual([sessionComponent(['A'])]);
    // an older SDK's name: its process's sessions are all in conclave-session; or a peer wrote it over a
    // newer process's term, whose sessions are in its shard (seed 17052 --regions)
    expect(processSessionComponents('session-old', a)).toEqual([SESSION_COMPONENT, allLeasesSessionComponent(a)]);
  });
});

describe('a session row the schema refuses, as a term judged off its named row sees it (mayBeProcessSession)', () => {
  const shard = allLeasesSessionComponent('p7');
  const inShard = `${shard.slice(SESSION_COMPONENT.length + 1)}:s-1`;
  it.each([
    { name: "p7's, in its shard: may be its own", row: { component: shard, name: inShard, process: 'p7' }, want: true },
    { name: 'a process that does not read (a number): may be its own', row: { component: shard, name: inShard, process: 7 }, want: true },
    { name: 'another process by a string: not its own, as a readable row', row: { component: shard, name: inShard, process: 'p8' }, want: false },
    { name: 'no process (an older SDK\'s): not its own, as a readable row', row: { component: shard, name: inShard }, want: false },
    { name: 'in a partition p7 keeps no sessions in', row: { component: `${SESSION_COMPONENT}:jobs`, name: 'jobs:s-1', process: 'p7' }, want: false },
    { name: "under another partition's name", row: { component: shard, name: 'jobs:s-1', process: 'p7' }, want: false },
    { name: 'in conclave-session, the named row there (a name without a partition)', row: { component: SESSION_COMPONENT, name: 's-2', process: 'p7' }, want: true },
  ])('$name', ({ row, want }) => {
    expect(mayBeProcessSession(row, 's-named', 'p7')).toBe(want);
  });
});

describe('Sessions on DynamoDB Local', () => {
  it("a fleet's sessions (no leaseNames) land in their processes' shards, spread over the partitions, and each is read where its name says", async () => {
    const random = seededRandom(38);
    const sessions = Array.from({ length: 24 }, (_, i) =>
      new Session({ client: t.client, tables: t.names, prefix: `p${i}`, clockSync: 'none', clock: { ...systemClock, random } }),
    );
    const stop = new AbortController();
    const running = sessions.map((s) => s.run(stop.signal));
    try {
      await Promise.all(sessions.map((s) => s.ready));
      const store = new IdentityStore(t.client, t.names.identities);
      const reader = new SessionReader(t.client, t.names.identities, systemClock);
      const components = new Set<string>();
      for (const s of sessions) {
        const name = s.name!;
        const component = allLeasesSessionComponent(s.process);
        expect(name.startsWith(`${sessionShard(s.process)}:p`), name).toBe(true);
        expect(sessionKey(name).component).toBe(component);
        expect((await store.read(component, name)).item).toMatchObject({ process: s.process, holderIdentity: name });
        // nothing in the partition every such session shared before
        expect((await store.read(SESSION_COMPONENT, name)).item).toBeUndefined();
        // a follower's read by name, and the own-process query (the lease naming any session of its partition's kind)
        expect((await reader.read(name, 0, 0)).row?.process).toBe(s.process);
        expect((await reader.freshestOf(`${sessionShard(`${s.process}-peer`)}:gone`, s.process, TERM)).row?.name).toBe(name);
        components.add(component);
      }
      expect((await store.query(SESSION_COMPONENT)).items).toEqual([]);
      // 24 processes over 64 shards: about 20 distinct (the seed gives the same ids every run)
      expect(components.size).toBeGreaterThanOrEqual(12);
    } finally {
      stop.abort();
      await Promise.all(running);
    }
  });

  it("an older SDK's session row (a name without a colon, in conclave-session) is still read by name and found as its process's own", async () => {
    const store = new IdentityStore(t.client, t.names.identities);
    const put = (name: string, process: string, renewTime: number) =>
      store.write({ key: { component: SESSION_COMPONENT, name }, item: undefined, revision: 0 }, { set: { holderIdentity: name, process, hostname: 'h', leaseDurationSeconds: 15, acquireTime: NOW, renewTime } });
    await put('old-1', 'p-old', NOW + 10);
    await put('old-2', 'p-old', NOW + 30);
    const reader = new SessionReader(t.client, t.names.identities, systemClock);
    expect((await reader.read('old-1', 0, 0)).row).toMatchObject({ component: SESSION_COMPONENT, renewTime: NOW + 10, process: 'p-old' });
    const own: IdentityLease | undefined = (await reader.freshestOf('old-gone', 'p-old', TERM)).row;
    expect(own).toMatchObject({ name: 'old-2', renewTime: NOW + 30 });
  });
});

describe("a Session given other leaseNames than its role's grant (IAM's LeadingKeys denies every write of its rows)", () => {
  it("tells onError, every try, the partition it wrote and that leaseNames must be the grant's (before: only \"check the worker's role\"); run() retries, and resolves once its signal aborts", async () => {
    const GRANT = ['reports'];
    const client = localClient(inject('ddbEndpoint'));
    // the grant's statement on the identities table: rows of its own partition only (grantWorker's dynamodb:LeadingKeys)
    client.middlewareStack.add(
      (next, context) => async (args) => {
        const input = args.input as { TableName?: string; Key?: { component?: { S?: string } } };
        if (context.commandName === 'UpdateItemCommand' && input.TableName === t.names.identities && input.Key?.component?.S !== sessionComponent(GRANT))
          throw Object.assign(new Error(`User: arn:aws:sts::123456789012:assumed-role/Workers/i-0abc is not authorized to perform: dynamodb:UpdateItem on resource: arn:aws:dynamodb:us-east-1:123456789012:table/${t.names.identities} because no identity-based policy allows the dynamodb:UpdateItem action`), { name: 'AccessDeniedException', $fault: 'client', $metadata: { httpStatusCode: 400 } });
        return next(args);
      },
      { step: 'initialize', name: 'leadingKeys' },
    );
    const errors: Error[] = [];
    const session = new Session({ client, tables: t.names, leaseNames: ['reports', 'billing'], clockSync: 'none', retryPeriodMs: 200, onError: (e) => void errors.push(e) });
    session.ready.catch(() => undefined); // rejected as run() ends before a first row
    const stop = new AbortController();
    const running = session.run(stop.signal);
    await waitFor('two tries told', () => errors.length >= 2);
    stop.abort();
    await expect(running).resolves.toBeUndefined();
    expect(session.stats.started).toBe(0);
    for (const e of errors.slice(0, 2)) {
      expect(e).toBeInstanceOf(DynamoDBRefusedError);
      expect(e.message).toContain(`its rows are written in the identities partition ${sessionComponent(['reports', 'billing'])}, chosen by its leaseNames (reports, billing)`);
      expect(e.message).toMatch(/give the Session the same leaseNames as the role's grantWorker\(\{ leaseNames \}\) \(in any order\), or leave both out \(allLeases\).*Retrying with backoff; its electors renew their leases themselves meanwhile$/);
    }
  });
});

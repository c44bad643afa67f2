/**
 * The role a worker's request is counted under: the table says candidate or identity, and on the
 * identities table a process session's row is counted apart, its writes (renewals) from its reads;
 * on the leases table, leading that lease says leader, and the lease as last read or written says
 * whether this worker is its designated successor.
 */
import { waitFor } from '../sdk/harness.js';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { RequestCounter } from '../../bench/requests.js';
import { RoleTracker } from '../../bench/roles.js';
import { localClient } from '../../lib/local/dynamodb-local.js';
import { SESSION_COMPONENT } from '../../lib/schemas/identity.js';
import { Session, sessionSeam } from '../../lib/sdk/session.js';
import { testTables, type TestTables } from '../support.js';

const tables = { leases: 'p-leases', candidates: 'p-candidates', identities: 'p-identities' };
const get = (name: string) => ({ TableName: tables.leases, Key: { name: { S: name } } });
const item = (name: string, successor?: string) => ({ Item: { name: { S: name }, ...(successor ? { successor: { S: successor } } : {}) } });

describe('request roles', () => {
  it('by table: candidate and identity rows', () => {
    const r = new RoleTracker(tables, 'w2');
    expect(r.roleOf({ TableName: tables.candidates }, 'UpdateItem')).toBe('candidate');
    expect(r.roleOf({ TableName: tables.identities, Key: { component: { S: 'kube-controller-manager' }, name: { S: 'h1' } } }, 'UpdateItem')).toBe('identity');
    expect(r.roleOf(get('a'), 'GetItem')).toBe('follower');
  });

  it('successor while the lease last seen names this worker, follower once it names another', () => {
    const r = new RoleTracker(tables, 'w2');
    r.observe(get('a'), item('a', 'w2'));
    expect(r.roleOf(get('a'), 'GetItem')).toBe('successor');
    expect(r.roleOf(get('b'), 'GetItem')).toBe('follower'); // per lease
    r.observe(get('a'), { Attributes: { name: { S: 'a' }, successor: { S: 'w3' } } }); // a write's ALL_NEW answer
    expect(r.roleOf(get('a'), 'GetItem')).toBe('follower');
    r.observe(get('a'), item('a', 'w2'));
    r.observe(get('a'), item('a')); // no successor named
    expect(r.roleOf(get('a'), 'GetItem')).toBe('follower');
  });

  it('answers from other tables, and answers without an item, teach nothing', () => {
    const r = new RoleTracker(tables, 'w2');
    r.observe(get('a'), item('a', 'w2'));
    r.observe({ TableName: tables.candidates, Key: { name: { S: 'a' } } }, item('a'));
    r.observe(get('a'), {});
    expect(r.roleOf(get('a'), 'GetItem')).toBe('successor');
  });

  it('a session row: its writes are session renewals, its reads session reads, whoever sends them; other identities rows stay identity', () => {
    const r = new RoleTracker(tables, 'w1');
    r.leading('a', true);
    const row = { TableName: tables.identities, Key: { component: { S: SESSION_COMPONENT }, name: { S: 'session-w1-x' } } };
    expect(r.roleOf(row, 'UpdateItem')).toBe('session-renewal');
    expect(r.roleOf(row, 'DeleteItem')).toBe('session-renewal');
    expect(r.roleOf({ TableName: tables.identities, Item: { component: { S: SESSION_COMPONENT }, name: { S: 'session-w1-y' } } }, 'PutItem')).toBe('session-renewal');
    expect(r.roleOf(row, 'GetItem')).toBe('session-read');
    expect(r.roleOf({ TableName: tables.identities, Key: { component: { S: 'other' }, name: { S: 'h' } } }, 'GetItem')).toBe('identity');
    expect(r.roleOf({ TableName: tables.identities }, 'Scan')).toBe('identity');
    expect(r.roleOf(get('a'), 'GetItem')).toBe('leader'); // the leases table is unchanged by it
  });

  it('leader of a lease it leads, in a process with many; any lease for the one-lease worker', () => {
    const many = new RoleTracker(tables, 'w1');
    many.leading('a', true);
    expect(many.roleOf(get('a'), 'GetItem')).toBe('leader');
    expect(many.roleOf(get('b'), 'GetItem')).toBe('follower');
    many.leading('a', false);
    expect(many.roleOf(get('a'), 'GetItem')).toBe('follower');

    const one = new RoleTracker(tables, 'w1');
    one.leading(undefined, true);
    expect(one.roleOf({ TableName: tables.leases }, 'UpdateItem')).toBe('leader');
    one.leading(undefined, false);
    expect(one.roleOf({ TableName: tables.leases }, 'UpdateItem')).toBe('follower');
  });
});

describe('a real Session on DynamoDB Local, counted as the multi-lease worker counts it', () => {
  let t: TestTables;
  beforeAll(async () => {
    t = await testTables('bench-roles');
  });
  afterAll(async () => {
    await t.drop();
  });

  it('its creation, renewals and deletion are session renewals; a read of its row through the session reader is a session read', async () => {
    const client = localClient(inject('ddbEndpoint'));
    const roles = new RoleTracker(t.names, 'p1');
    const counter = new RequestCounter().attach(client, (input, command) => roles.roleOf(input, command));
    // a renewal every second, the deadline 5 s past the one due: one answered late on a busy machine (a
    // stall, a slow DynamoDB Local) still renews, so every UpdateItem sent is a start or a renewal the
    // session counts. (Before: 300 ms apart, a 1 s deadline: a stall ended the session, or a renewal
    // answered past the deadline was counted by neither: { UpdateItem: 5 } for 4)
    const session = new Session({ client, tables: t.names, prefix: 'session-p1', clockSync: 'none', renewIntervalMs: 1_000, retryPeriodMs: 300, renewDeadlineMs: 6_000, maxLeaseDurationMs: 8_000 });
    const stop = new AbortController();
    try {
      const running = session.run(stop.signal);
      await session.ready;
      const name = session.name!;
      await waitFor('a renewal of the session', () => session.stats.renewals >= 1);
      expect((await sessionSeam(session).reader.read(name)).row?.name).toBe(name);
      stop.abort();
      await running;
      const { renewals, started } = session.stats;
      const tallies = counter.snapshot();
      expect(Object.keys(tallies).sort()).toEqual(['session-read', 'session-renewal']);
      expect(tallies['session-read']!.commands).toEqual({ GetItem: 1 });
      expect(tallies['session-renewal']!.commands).toEqual({ UpdateItem: started + renewals, DeleteItem: 1 });
      expect(renewals).toBeGreaterThanOrEqual(1);
      expect(tallies['session-renewal']!.wru).toBe(started + renewals + 1); // a small row: 1 WRU a write
    } finally {
      stop.abort();
      client.destroy();
    }
  });
});

/**
 * What a role `grantGetLeader` gives may do, judged request by request (test/infra/iam.ts):
 * every request getLeader really sends on DynamoDB Local — for a term held on a session, the
 * session's row on the identities table too, and for a term that row does not vouch for, the Query
 * of its holder's process's session partitions — is let through; writes, another lease's row and
 * identity rows that are no session are not.
 */
import { Stack } from 'aws-cdk-lib';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as kms from 'aws-cdk-lib/aws-kms';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { Conclave } from '../../infra/conclave.js';
import { manualClock } from '../../lib/clock.js';
import { SESSION_COMPONENT, allLeasesSessionComponent } from '../../lib/schemas/identity.js';
import { ValidationError } from '../../lib/schemas/validation.js';
import { getLeader } from '../../lib/sdk/get-leader.js';
import { IdentityStore } from '../../lib/stores/identity-store.js';
import { LeaseStore } from '../../lib/stores/lease-store.js';
import { TABLES } from '../../lib/tables.js';
import { MIN, NOW, SEC } from '../fixtures.js';
import { testTables, type TestTables } from '../support.js';
import { creatingTableProxy, drivenClock } from '../proxy.js';
import { grantedRole, recordingClient, type DynamoRequest, type GrantedRole } from './iam.js';
import { buildAssets, logicalId, statementsOf, synth, unacknowledged } from './support.js';

type Role = keyof typeof TABLES;
const LEASE = 'routed-service';
const REDIRECTED = 'routed-redirected';

let t: TestTables;
let g: GrantedRole;

beforeAll(async () => {
  await buildAssets();
  t = await testTables('reader-policy');
  g = grantedRole('Readers', 'lambda.amazonaws.com', t.names, (c, role) => c.grantGetLeader(role, { leaseNames: [LEASE, REDIRECTED] }));
});
afterAll(async () => {
  g?.s.cleanup();
  await t?.drop();
});

const allowed = (r: DynamoRequest) => g.allowed(r);
const show = (r: DynamoRequest) => `${r.action} ${g.roleOf(r.table)} ${r.leadingKeys.join(' ')}`;
const get = (role: Role, key: string): DynamoRequest => {
  const table: { partitionKey: string; sortKey?: string } = TABLES[role];
  return { action: 'dynamodb:GetItem', table: t.names[role], leadingKeys: [key], attributes: [table.partitionKey, ...(table.sortKey ? [table.sortKey] : [])].sort() };
};

describe('the reader policy (grantGetLeader) and getLeader', () => {
  it('lets through every request getLeader sends, the session row’s read for a term held on a session included', async () => {
    await new LeaseStore(t.client, t.names.leases).write(LeaseStore.readOf(LEASE, undefined), {
      set: { holderIdentity: 'a1', holderInstance: 'a1_1@p1', session: 's-live', acquireTime: NOW - 10 * MIN, renewTime: NOW - MIN, leaseDurationSeconds: 15, leaseTransitions: 1, fencingToken: 42 },
    });
    await new IdentityStore(t.client, t.names.identities).write({ key: { component: SESSION_COMPONENT, name: 's-live' }, item: undefined, revision: 0 }, { set: { holderIdentity: 's-live_1', process: 'p1', hostname: 'web-1', leaseDurationSeconds: 15, acquireTime: NOW - 10 * MIN, renewTime: NOW - 2 * SEC } });
    const { client, requests } = recordingClient(inject('ddbEndpoint'), t.names);
    expect(await getLeader(LEASE, { client, tables: t.names, clockSync: 'none', clock: manualClock(NOW) })).toMatchObject({ holder: 'a1', fencingToken: 42 });
    client.destroy();
    expect(requests.map(show)).toEqual([`dynamodb:GetItem leases ${LEASE}`, `dynamodb:GetItem identities ${SESSION_COMPONENT}`]);
    // before the fix: no grant covered getLeader (a hand-written leases-table read was refused the session row)
    expect(requests.filter((r) => !allowed(r)).map(show)).toEqual([]);
  });

  it('lets through the Query of its holder’s process’s session partitions, for a term whose named session row does not vouch for it (a peer redirected it)', async () => {
    await new LeaseStore(t.client, t.names.leases).write(LeaseStore.readOf(REDIRECTED, undefined), {
      set: { holderIdentity: 'a1', holderInstance: 'a1_1@p9', session: 's-gone', acquireTime: NOW - 10 * MIN, renewTime: NOW - MIN, leaseDurationSeconds: 15, leaseTransitions: 1, fencingToken: 43 },
    });
    await new IdentityStore(t.client, t.names.identities).write({ key: { component: SESSION_COMPONENT, name: 's-own' }, item: undefined, revision: 0 }, { set: { holderIdentity: 's-own_1', process: 'p9', hostname: 'web-9', leaseDurationSeconds: 15, acquireTime: NOW - 10 * MIN, renewTime: NOW - 2 * SEC } });
    const { client, requests } = recordingClient(inject('ddbEndpoint'), t.names);
    // judged by p9's own session s-own (2 s ago), as the coordinator's tick judges it
    expect(await getLeader(REDIRECTED, { client, tables: t.names, clockSync: 'none', clock: manualClock(NOW) })).toMatchObject({ holder: 'a1', fencingToken: 43 });
    client.destroy();
    expect(requests.map(show).sort()).toEqual([`dynamodb:GetItem leases ${REDIRECTED}`, `dynamodb:GetItem identities ${SESSION_COMPONENT}`, `dynamodb:Query identities ${SESSION_COMPONENT}`, `dynamodb:Query identities ${allLeasesSessionComponent('p9')}`].sort());
    // before the fix: the grant had GetItem alone, and a role granted it was refused the Query
    expect(requests.filter((r) => !allowed(r)).map(show)).toEqual([]);
  });

  it('lets through the DescribeTable of the tables it reads, which getLeader sends on a table still being created (and on no other table)', async () => {
    const proxy = await creatingTableProxy(inject('ddbEndpoint'), t.names.leases, { describe: 'creating' });
    const { client, requests } = recordingClient(proxy.endpoint, t.names);
    try {
      const c = drivenClock(() => proxy.inFlight() > 0);
      proxy.creating(2);
      let answer: { ok: boolean; value: unknown } | undefined;
      void getLeader(LEASE, { client, tables: t.names, clockSync: 'none', clock: c.clock }).then(
        (value) => void (answer = { ok: true, value }),
        (value: unknown) => void (answer = { ok: false, value }),
      );
      await c.drive(() => answer !== undefined);
      expect(answer).toMatchObject({ ok: true });
      const described = requests.filter((r) => r.action === 'dynamodb:DescribeTable').map(show);
      // the table its request found missing is looked at, no other (b4480f7)
      expect(new Set(described)).toEqual(new Set(['dynamodb:DescribeTable leases ']));
      // before: DescribeTable was not granted, so getLeader could not tell a table being made from one missing (60 s of tries, then TableNotFoundError)
      expect(requests.filter((r) => !allowed(r)).map(show)).toEqual([]);
      // and both tables it reads may be looked at, whichever it finds missing
      for (const table of [t.names.leases, t.names.identities]) expect(allowed({ action: 'dynamodb:DescribeTable', table, leadingKeys: [], attributes: [] }), table).toBe(true);
      expect(allowed({ action: 'dynamodb:DescribeTable', table: t.names.candidates, leadingKeys: [], attributes: [] })).toBe(false);
    } finally {
      client.destroy();
      await proxy.close();
    }
  });

  const refused: [string, () => DynamoRequest][] = [
    ['another lease’s row', () => get('leases', 'someone-elses')],
    ['a candidate row', () => get('candidates', LEASE)],
    ['an identity lease (no session)', () => get('identities', 'scheduler')],
    ['a Query of identity leases (no session)', () => ({ ...get('identities', 'scheduler'), action: 'dynamodb:Query', attributes: ['component'] })],
    ['a Query of the leases', () => ({ ...get('leases', LEASE), action: 'dynamodb:Query', attributes: ['name'] })],
    ['a write of the lease', () => ({ ...get('leases', LEASE), action: 'dynamodb:UpdateItem', attributes: ['name', 'renewTime'], returnValues: 'NONE' })],
    ['a write of a session row', () => ({ ...get('identities', SESSION_COMPONENT), action: 'dynamodb:UpdateItem', attributes: ['component', 'name', 'renewTime'], returnValues: 'NONE' })],
  ];
  it.each(refused)('refuses %s', (_, request) => {
    const r = request();
    expect(allowed(r), show(r)).toBe(false);
  });

  it('synthesizes with no cdk-nag finding', () => {
    expect(unacknowledged(g.s.report)).toEqual([]);
  });

  it('on tables encrypted with a key: that key’s decrypt, no encrypt; on every lease with allLeases: no LeadingKeys condition', () => {
    let roleId = '';
    const k = synth((app) => {
      const stack = new Stack(app, 'KeyedReaders', { env: { region: 'eu-west-1', account: '123456789012' } });
      const key = new kms.Key(stack, 'Key', { enableKeyRotation: true });
      const c = new Conclave(stack, 'Conclave', { encryptionKey: key });
      const role = new iam.Role(stack, 'Client', { assumedBy: new iam.ServicePrincipal('lambda.amazonaws.com') });
      c.grantGetLeader(role, { allLeases: true });
      roleId = logicalId(stack, role);
      return stack;
    });
    try {
      const granted = statementsOf(k.template, roleId);
      expect(granted.flatMap((x) => x.Action).sort()).toEqual(['dynamodb:DescribeTable', 'dynamodb:GetItem', 'dynamodb:GetItem', 'dynamodb:Query', 'kms:Decrypt', 'kms:DescribeKey']);
      expect(granted.filter((x) => x.Action.includes('dynamodb:GetItem')).map((x) => JSON.stringify(x.Condition ?? {}))).toEqual(['{}', expect.stringContaining('conclave-session:*')]);
      // the Query only in the session partitions' statement
      expect(granted.filter((x) => x.Action.includes('dynamodb:Query')).map((x) => JSON.stringify(x.Condition ?? {}))).toEqual([expect.stringContaining('conclave-session:*')]);
      expect(unacknowledged(k.report)).toEqual([]);
    } finally {
      k.cleanup();
    }
  });

  it('the scope is required and explicit: leaseNames or allLeases, not both, not neither', () => {
    const stack = new Stack();
    const c = new Conclave(stack, 'Conclave');
    const role = new iam.Role(stack, 'R', { assumedBy: new iam.ServicePrincipal('lambda.amazonaws.com') });
    for (const bad of [{}, { leaseNames: [LEASE], allLeases: true as const }, { leaseNames: [] }]) {
      const e = (() => {
        try {
          c.grantGetLeader(role, bad);
        } catch (x) {
          return x;
        }
      })();
      expect(e).toBeInstanceOf(ValidationError);
      expect((e as Error).message).toMatch(/^invalid grantGetLeader options/);
    }
  });
});

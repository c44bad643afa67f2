/**
 * getLeader (issue 39): who leads a lease and where clients reach it, from one consistent read,
 * judged as the coordinator judges vacancy. On DynamoDB Local, with an injected clock.
 */
import { DynamoDBClient, UpdateItemCommand } from '@aws-sdk/client-dynamodb';
import { marshall } from '@aws-sdk/util-dynamodb';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { manualClock } from '../../lib/clock.js';
import { drivenClock, inFlight } from '../proxy.js';
import { LeaderInfoSchema } from '../../lib/election/leader.js';
import { localClient } from '../../lib/local/dynamodb-local.js';
import { SESSION_COMPONENT } from '../../lib/schemas/identity.js';
import type { Lease } from '../../lib/schemas/lease.js';
import { DynamoDBRefusedError } from '../../lib/sdk/faults.js';
import { getLeader } from '../../lib/sdk/get-leader.js';
import { BrokenSessionError } from '../../lib/stores/errors.js';
import { IdentityStore } from '../../lib/stores/identity-store.js';
import { ValidationError } from '../../lib/schemas/validation.js';
import { LeaseStore } from '../../lib/stores/lease-store.js';
import { MIN, NOW, SEC } from '../fixtures.js';
import { testTables, type TestTables } from '../support.js';
import { Log, startElector, waitFor } from './harness.js';

const ADDRESS = 'http://10.0.0.5:8080';
let t: TestTables;
let leases: LeaseStore;

beforeAll(async () => {
  t = await testTables('get-leader');
  leases = new LeaseStore(t.client, t.names.leases);
});
afterAll(() => t?.drop());

/** Lease `name` held by a1 since a minute ago, last renewed at `renewTime`, 15 s long. */
const seed = (name: string, extra: Partial<Lease> = {}) =>
  leases.write(LeaseStore.readOf(name, undefined), {
    set: { holderIdentity: 'a1', holderInstance: 'a1_1', acquireTime: NOW - MIN, renewTime: NOW - 2 * SEC, leaseDurationSeconds: 15, leaseTransitions: 2, fencingToken: 42, ...extra },
  });
const at = (ms: number) => ({ client: t.client, tables: t.names, clockSync: 'none' as const, clock: manualClock(ms) });

describe('getLeader', () => {
  it('a live term: holder, address, fencing token and since, from one consistent GetItem', async () => {
    await seed('led', { holderAddress: ADDRESS });
    const client = localClient(inject('ddbEndpoint'));
    const sent: { command: string; consistent: unknown }[] = [];
    client.middlewareStack.add((next, context) => async (args) => {
      sent.push({ command: context.commandName as string, consistent: (args.input as { ConsistentRead?: boolean }).ConsistentRead });
      return next(args);
    });
    const leader = await getLeader('led', { ...at(NOW), client });
    expect(leader).toEqual({ lease: 'led', holder: 'a1', address: ADDRESS, fencingToken: 42, since: NOW - MIN });
    expect(LeaderInfoSchema.parse(leader)).toEqual(leader);
    expect(sent).toEqual([{ command: 'GetItemCommand', consistent: true }]);
    client.destroy();
  });

  it('no address advertised: none in the answer', async () => {
    await seed('plain');
    const leader = await getLeader('plain', at(NOW));
    expect(leader).toMatchObject({ holder: 'a1', fencingToken: 42 });
    expect(leader).not.toHaveProperty('address');
  });

  it('a term that ran out counts for clockSkewMs more, as the coordinator judges it; then null', async () => {
    await seed('ending');
    const end = NOW + 13 * SEC;
    expect(await getLeader('ending', at(end + 1_000))).toMatchObject({ holder: 'a1' });
    expect(await getLeader('ending', at(end + 1_001))).toBeNull();
    expect(await getLeader('ending', { ...at(end + 1_001), clockSkewMs: 5_000 })).toMatchObject({ holder: 'a1' });
  });

  it('null when nobody holds a live term: no row, no holder, a vacancy reported', async () => {
    expect(await getLeader('never', at(NOW))).toBeNull();
    await leases.write(LeaseStore.readOf('released', undefined), { set: { lastHolderIdentity: 'a1', renewTime: NOW, leaseDurationSeconds: 15, leaseTransitions: 2, fencingToken: 42 } });
    expect(await getLeader('released', at(NOW))).toBeNull();
    await seed('reported', { vacancyReport: { by: 'b1', at: NOW, observedRevision: 1 } });
    expect(await getLeader('reported', at(NOW))).toBeNull();
  });

  it('a term held on a session lives by the session’s renewals', async () => {
    const identities = new IdentityStore(t.client, t.names.identities);
    const session = (name: string, renewTime: number) =>
      identities.write({ key: { component: SESSION_COMPONENT, name }, item: undefined, revision: 0 }, { set: { holderIdentity: `${name}_1`, process: 'p1', hostname: 'web-1', leaseDurationSeconds: 60, acquireTime: NOW - 10 * MIN, renewTime } });
    // its own stamp a minute old: only the session keeps it
    await seed('on-live-session', { holderInstance: 'a1_1@p1', session: 's-live', renewTime: NOW - MIN });
    await session('s-live', NOW - 2 * SEC);
    expect(await getLeader('on-live-session', at(NOW))).toMatchObject({ holder: 'a1' });
    expect(await getLeader('on-live-session', at(NOW + 14 * SEC))).toMatchObject({ holder: 'a1' }); // the session's renewal, 15 s long, and the skew margin
    expect(await getLeader('on-live-session', at(NOW + 15 * SEC))).toBeNull();
    await seed('on-stale-session', { holderInstance: 'a1_1@p1', session: 's-stale', renewTime: NOW - MIN });
    await session('s-stale', NOW - 30 * SEC);
    expect(await getLeader('on-stale-session', at(NOW))).toBeNull();
  });

  it('a term on a session row the schema refuses: a BrokenSessionError naming the table, the row, the fields and the repair, never a leader or null', async () => {
    const identities = new IdentityStore(t.client, t.names.identities);
    await identities.write({ key: { component: SESSION_COMPONENT, name: 's-broken' }, item: undefined, revision: 0 }, { set: { holderIdentity: 's-broken_1', process: 'p1', hostname: 'web-1', leaseDurationSeconds: 60, acquireTime: NOW - 10 * MIN, renewTime: NOW - 2 * SEC } });
    // another writer breaks it: an empty host name, a duration in words
    await t.client.send(new UpdateItemCommand({ TableName: t.names.identities, Key: marshall({ component: SESSION_COMPONENT, name: 's-broken' }), UpdateExpression: 'SET hostname = :h, leaseDurationSeconds = :d', ExpressionAttributeValues: marshall({ ':h': '', ':d': 'a minute' }) }));
    // before: the holder of this process was answered as leading (the row taken for gone: unvouched), an older SDK's holder as none (by the lease's own stamp)
    await seed('on-broken-session', { holderInstance: 'a1_1@p1', session: 's-broken', renewTime: NOW - MIN });
    await seed('on-broken-session-old-sdk', { holderInstance: 'a1_1', session: 's-broken', renewTime: NOW - MIN });
    for (const lease of ['on-broken-session', 'on-broken-session-old-sdk']) {
      const e = await getLeader(lease, at(NOW)).then((x) => x, (x: unknown) => x);
      expect(e).toBeInstanceOf(BrokenSessionError);
      expect(e).toBeInstanceOf(ValidationError);
      expect(e).toMatchObject({ table: t.names.identities, key: { component: SESSION_COMPONENT, name: 's-broken' }, term: { lease, holderIdentity: 'a1', fencingToken: 42, session: 's-broken' } });
      expect((e as ValidationError).fields.sort()).toEqual(['hostname', 'leaseDurationSeconds']);
      expect((e as Error).message).toMatch(
        new RegExp(
          `^getLeader of lease "${lease}": the term of a1 \\(fencing token 42\\) is held on session "s-broken", whose row on the identities table "${t.names.identities}" does not match the schema \\(.*hostname: .*leaseDurationSeconds: .*\\), so nobody can judge whether that term is live: .*` +
            `Rewrite the row valid, or delete it: aws dynamodb delete-item --table-name ${t.names.identities} --key '\\{"component":\\{"S":"${SESSION_COMPONENT}"\\},"name":\\{"S":"s-broken"\\}\\}'`,
        ),
      );
    }
  });

  it('a role not allowed the session row’s read: an error naming the identities table, the session and the grant (not a bare AccessDenied)', async () => {
    await seed('on-denied-session', { holderInstance: 'a1_1@p1', session: 's-denied', renewTime: NOW - MIN });
    const client = localClient(inject('ddbEndpoint'));
    client.middlewareStack.add(
      (next, context) => async (args) => {
        if (context.commandName === 'GetItemCommand' && (args.input as { TableName?: string }).TableName === t.names.identities) throw Object.assign(new Error('User: arn:aws:sts::1:assumed-role/client is not authorized to perform: dynamodb:GetItem'), { name: 'AccessDeniedException' });
        return next(args);
      },
      { step: 'initialize', name: 'deny' },
    );
    const e = await getLeader('on-denied-session', { ...at(NOW), client }).catch((x: unknown) => x);
    // a lease not on a session needs the lease row alone
    expect(await getLeader('plain', { ...at(NOW), client })).toMatchObject({ holder: 'a1' });
    client.destroy();
    expect(e).toBeInstanceOf(DynamoDBRefusedError);
    expect(e).toMatchObject({ kind: 'denied', cause: { name: 'AccessDeniedException' } });
    expect((e as Error).message).toBe(
      `getLeader of lease "on-denied-session": DynamoDB refused the request (AccessDeniedException: User: arn:aws:sts::1:assumed-role/client is not authorized to perform: dynamodb:GetItem): ` +
        `the term is held on session "s-denied", whose row on the identities table "${t.names.identities}" this role may not read (GetItem); ` +
        `grant it Conclave's grantGetLeader (the lease rows and every session row), and check its credentials`,
    );

    // the lease row's read refused: named the same way
    const none = localClient(inject('ddbEndpoint'));
    none.middlewareStack.add(() => async () => {
      throw Object.assign(new Error('not authorized'), { name: 'AccessDeniedException' });
    }, { step: 'initialize', name: 'deny' });
    const lease = await getLeader('plain', { ...at(NOW), client: none }).catch((x: unknown) => x);
    none.destroy();
    expect((lease as Error).message).toMatch(new RegExp(`^getLeader of lease "plain": DynamoDB refused the request \\(AccessDeniedException: not authorized\\): the lease's row on the leases table "${t.names.leases}" this role may not read \\(GetItem\\); grant it Conclave's grantGetLeader`));

    // throttled: named too, and not retried (before: the SDK's bare ThrottlingException)
    const busy = localClient(inject('ddbEndpoint'));
    busy.middlewareStack.add(() => async () => {
      throw Object.assign(new Error('Rate of requests exceeds the allowed throughput.'), { name: 'ThrottlingException' });
    }, { step: 'initialize', name: 'throttle' });
    const throttled = await getLeader('plain', { ...at(NOW), client: busy }).catch((x: unknown) => x);
    busy.destroy();
    expect(throttled).toBeInstanceOf(DynamoDBRefusedError);
    expect((throttled as Error).message).toBe(
      `getLeader of lease "plain": DynamoDB throttled the request (ThrottlingException): the lease's row on the leases table "${t.names.leases}" was not read: ` +
        `the table's capacity is exhausted (on-demand tables: a hot partition, or the account's limit), the AWS SDK's own retries used up, and getLeader does not retry: call it again later`,
    );
  });

  it('a client with no region (the AWS SDK\'s bare "Region is missing"): an error naming getLeader, the region and where to give it', async () => {
    // nothing in the environment or a profile names a region: the AWS SDK refuses before sending
    const env = { AWS_REGION: process.env.AWS_REGION, AWS_DEFAULT_REGION: process.env.AWS_DEFAULT_REGION, AWS_PROFILE: process.env.AWS_PROFILE, AWS_CONFIG_FILE: process.env.AWS_CONFIG_FILE };
    delete process.env.AWS_REGION;
    delete process.env.AWS_DEFAULT_REGION;
    delete process.env.AWS_PROFILE;
    process.env.AWS_CONFIG_FILE = '/nonexistent/conclave-test-config';
    const client = new DynamoDBClient({ credentials: { accessKeyId: 'local', secretAccessKey: 'local' } });
    const e = await getLeader('plain', { client, tables: t.names }).catch((x: unknown) => x);
    client.destroy();
    for (const [k, v] of Object.entries(env)) if (v === undefined) delete process.env[k]; else process.env[k] = v;
    expect((e as Error).message).toBe(
      `getLeader of lease "plain": the DynamoDB client has no region (Region is missing): give it one (new DynamoDBClient({ region: 'eu-west-1' }), AWS_REGION, or the profile's region); ` +
        `a client of DynamoDB Local needs one too, beside its endpoint, and any name does there (region: 'local', as npx conclave-local prints it); the lease's row on the leases table "${t.names.leases}" was not read`,
    );
    expect((e as Error).cause).toMatchObject({ message: 'Region is missing' });
  });

  it('what an elector with advertise leads: its address and its term’s token', async () => {
    // The elector and the reader on a clock the test moves (drivenClock), only while it waits for w
    // to lead: w's term neither lapses at its renew deadline nor looks run out to the reader,
    // however long a busy machine takes. (Before: the machine's clock, FAST's 1.5 s renew deadline
    // and 2 s lease, a budget a stall between w's election and the read could miss.)
    const client = localClient(inject('ddbEndpoint'));
    const { clock, drive } = drivenClock(inFlight(client));
    const log = new Log();
    const e = startElector(t, log, 'w', { leaseName: 'live-elector', mode: 'NoCoordination', platform: 'none', advertise: ADDRESS, clockSync: 'none', clock }, { client });
    const reader = { client: t.client, tables: t.names, clockSync: 'none' as const, clock };
    try {
      await drive(() => e.elector.isLeader());
      expect(await getLeader('live-elector', reader)).toMatchObject({ holder: 'w', address: ADDRESS, fencingToken: e.elector.fencingToken });
      expect(log.of('stopped')).toEqual([]); // the term read is the one it leads
    } finally {
      await e.stop();
    }
    expect(await getLeader('live-elector', reader)).toBeNull(); // released
    client.destroy();
  });

  it('the options passed without the lease name: a ValidationError saying what was passed and showing the call', async () => {
    // before: "invalid getLeader lease name: (root): Invalid input: expected string, received object"
    const e = await getLeader({ client: t.client, tables: t.names } as never, undefined as never).catch((x: unknown) => x);
    expect(e).toBeInstanceOf(ValidationError);
    expect(e).toMatchObject({ fields: ['leaseName'] });
    expect((e as Error).message).toBe(
      "invalid getLeader arguments: leaseName: must be the lease's name, a string, first; this call passed an options object ({ client, tables }) in its place and no options: " +
        "call getLeader('my-lease', { client, tables })",
    );
    const missing = await getLeader(undefined as never, at(NOW)).catch((x: unknown) => x);
    expect((missing as Error).message).toBe("invalid getLeader arguments: leaseName: must be the lease's name, a string, first; this call passed undefined: call getLeader('my-lease', { client, tables })");
  });

  it('bad input is a ValidationError naming it', async () => {
    await expect(getLeader('no spaces', at(NOW))).rejects.toMatchObject({ name: 'ValidationError', fields: ['leaseName'], message: expect.stringMatching(/^invalid getLeader arguments: leaseName: /) });
    await expect(getLeader('x', { client: t.client, tables: t.names, clockSkewMs: -1 })).rejects.toMatchObject({ name: 'ValidationError', fields: ['clockSkewMs'] });
    await expect(getLeader('x', { client: t.client, table: 'x' } as never)).rejects.toThrow(/unknown option of getLeader: "table": name the tables with `tables`/);
  });
});

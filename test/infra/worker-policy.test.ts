/**
 * What a worker's role may write, judged request by request. DynamoDB Local does not enforce IAM,
 * so every request the worker SDK really sends (recorded on DynamoDB Local by a client middleware)
 * is judged against the policy `grantWorker` synthesizes (test/infra/iam.ts), and so are the
 * writes a hostile worker would send with the same credentials: the policy and the SDK cannot
 * drift apart, and the operator's and coordinator's attributes stay out of a worker's reach.
 */
import { randomUUID } from 'node:crypto';
import { CreateTableCommand, DeleteTableCommand, type DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { marshall } from '@aws-sdk/util-dynamodb';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { manualClock } from '../../lib/clock.js';
import { sessionComponent, sessionScope } from '../../lib/schemas/identity.js';
import { OLDEST_EMULATION_VERSION } from '../../lib/schemas/strategy.js';
import { getLeader } from '../../lib/sdk/get-leader.js';
import { IdentityLeaseHeartbeat, LeaderElector, listIdentities, withLease } from '../../lib/sdk/index.js';
import { Session } from '../../lib/sdk/session.js';
import { CandidateStore } from '../../lib/stores/candidate-store.js';
import { IdentityStore } from '../../lib/stores/identity-store.js';
import { LeaseStore } from '../../lib/stores/lease-store.js';
import { TABLES } from '../../lib/tables.js';
import { MIN, NOW, SEC } from '../fixtures.js';
import { waitFor } from '../sdk/harness.js';
import { testTables, type TestTables } from '../support.js';
import { creatingTableProxy, drivenClock } from '../proxy.js';
import { allows, bareNames, grantedRole, recordingClient, type DynamoRequest, type GrantedRole } from './iam.js';
import { buildAssets, unacknowledged, type Statement } from './support.js';

type Role = keyof typeof TABLES;
const LEASE = 'worker-lease';
const COMPONENT = 'scheduler';

let t: TestTables;
let g: GrantedRole;
const appTable = `t-policy-app-${randomUUID().slice(0, 8)}`;

beforeAll(async () => {
  await buildAssets();
  t = await testTables('worker-policy');
  await t.client.send(new CreateTableCommand({ TableName: appTable, BillingMode: 'PAY_PER_REQUEST', AttributeDefinitions: [{ AttributeName: 'id', AttributeType: 'S' }], KeySchema: [{ AttributeName: 'id', KeyType: 'HASH' }] }));
  g = grantedRole('Workers', 'ecs-tasks.amazonaws.com', t.names, (c, role) => c.grantWorker(role, { leaseNames: [LEASE], components: [COMPONENT] }));
});
afterAll(async () => {
  g?.s.cleanup();
  await t?.client.send(new DeleteTableCommand({ TableName: appTable }));
  await t?.drop();
});

/** A client of DynamoDB Local that records each request as IAM sees it (one per transaction item). */
const recording = () => recordingClient(inject('ddbEndpoint'), t.names);

/** Until `holder` has renewed the term it took at least once (read with the unrecorded client). */
function renewedOnce(tables: TestTables, lease: string, holder: string) {
  const leases = new LeaseStore(tables.client, tables.names.leases);
  return waitFor(`${holder} to renew its term`, async () => {
    const l = (await leases.read(lease)).item;
    return l?.holderIdentity === holder && l.renewTime! > l.acquireTime!;
  });
}

const allowed = (r: DynamoRequest) => g.allowed(r);
/** A write statement's `dynamodb:ReturnValues` list, under whichever operator tests it. */
const returnValuesOf = (st: Statement): unknown => (st.Condition?.['StringEqualsIfExists'] ?? st.Condition?.['StringEquals'])?.['dynamodb:ReturnValues'];
const show = (r: DynamoRequest) => `${r.action} ${g.roleOf(r.table)} [${r.attributes.join(' ')}] ReturnValues=${r.returnValues ?? '-'}`;

describe('the worker policy and the worker SDK', () => {
  const sent: DynamoRequest[] = [];

  beforeAll(async () => {
    // An operator pinned w-1's candidacy of a previous start-up (priority 5): the new start-up's
    // registration must drop the pin without ever naming it.
    const operator = new CandidateStore(t.client, t.names.candidates);
    const then = Date.now() - 60_000;
    await operator.write(await operator.read(LEASE, 'w-1'), {
      set: { binaryVersion: '1.29.0', emulationVersion: '1.29.0', preferredStrategies: [OLDEST_EMULATION_VERSION], renewTime: then, createdAt: then, identity: 'w-1_old', priority: 5, priorityExpiresAt: Date.now() + 3_600_000 },
    });
    // w-2's previous start-up stood down (its row marked): the new start-up's registration takes the mark off
    await operator.write(await operator.read(LEASE, 'w-2'), {
      set: { binaryVersion: '1.29.0', emulationVersion: '1.29.0', preferredStrategies: [OLDEST_EMULATION_VERSION], renewTime: then, createdAt: then, identity: 'w-2_old', standsDownUntil: Date.now() + 60_000 },
    });

    // long enough that a starved machine does not stop a leader between its renewal and its fenced write (a 600 ms deadline did under load)
    const timing = { leaseDurationMs: 5_000, renewDeadlineMs: 3_000, retryPeriodMs: 500, fallbackAfterMs: 1_000 };
    const start = (identity: string, client: DynamoDBClient) => {
      let leading = false;
      const elector = new LeaderElector({
        leaseName: LEASE, identity, tables: t.names, ...timing, platform: 'none', client,
        candidacy: { emulationVersion: '1.30.0', binaryVersion: '1.30.0', labels: { team: 'reports' } },
        callbacks: { onStartedLeading: () => void (leading = true), onStoppedLeading: () => void (leading = false) },
        onError: () => undefined,
      });
      const stop = new AbortController();
      return { elector, stop, run: elector.run(stop.signal), leading: () => leading };
    };

    // w-1 takes the lease itself (no coordinator runs), renews, makes a fenced write; then its
    // renewals start failing (as in a network partition), so w-2 reports the vacancy and takes over.
    const one = recording();
    let partitioned = false;
    one.client.middlewareStack.add(
      (next, context) => async (args) => {
        if (partitioned && context.commandName === 'UpdateItemCommand' && (args.input as { TableName: string }).TableName === t.names.leases) throw Object.assign(new Error('partitioned'), { name: 'NetworkingError' });
        return next(args);
      },
      { step: 'initialize', name: 'partition', priority: 'high' },
    );
    const w1 = start('w-1', one.client);
    await waitFor('w-1 leads', () => w1.leading());
    await w1.elector.candidate!.renew();
    await renewedOnce(t, LEASE, 'w-1'); // its renewals are among the requests judged
    // the fence is a ConditionCheck on the lease; the write itself is on the application's table
    await w1.elector.fencedWrite({ TransactItems: [{ Put: { TableName: appTable, Item: marshall({ id: 'report-1' }) } }] });
    const two = recording();
    const w2 = start('w-2', two.client);
    await w2.elector.ready;
    // a second process given w-2's identity: it claims the name on the lease, w-2 answers by
    // renewing its candidate row, and the newcomer is refused
    const dup = recording();
    const w2again = start('w-2', dup.client);
    await expect(w2again.run).rejects.toMatchObject({ name: 'DuplicateIdentityError' });
    expect(dup.requests.some((r) => r.table === t.names.leases && r.attributes.includes('identityClaim'))).toBe(true);
    // the coordinator's notes on the held lease (none runs here: written as it would), which w-2's
    // takeover clears: a second successor is removed only where one is named (issue 38)
    const notes = new LeaseStore(t.client, t.names.leases);
    await notes.write(await notes.read(LEASE), { set: { successor: 'w-9', successorInstance: 'w-9_x', secondSuccessor: 'w-8', secondSuccessorInstance: 'w-8_x' } });
    partitioned = true;
    await waitFor('w-2 leads', () => w2.leading());
    partitioned = false;
    w1.stop.abort();
    await w1.run;
    w2.stop.abort();
    await w2.run; // releases the lease

    // a scheduled job: withLease with a run-once window, its result and the window's row in one fenced transaction
    const job = recording();
    const ran = await withLease(
      LEASE,
      (_signal, term) => term.complete([{ Put: { TableName: appTable, Item: marshall({ id: 'report-2' }) } }]),
      { client: job.client, tables: t.names, identity: 'cron-1', mode: 'NoCoordination', runOnce: { window: 'nightly-1' }, leaseDurationMs: timing.leaseDurationMs, renewDeadlineMs: timing.renewDeadlineMs, retryPeriodMs: timing.retryPeriodMs, onError: () => undefined },
    );
    expect(ran.status).toBe('ran');
    // … and in `auto` mode (the default), which first asks whether the lease has candidates (a Query of its partition)
    const auto = await withLease(LEASE, async (_signal, term) => term.fencingToken, {
      client: job.client, tables: t.names, identity: 'cron-2', candidacy: { emulationVersion: '1.30.0', binaryVersion: '1.30.0' }, waitMs: 0,
      leaseDurationMs: timing.leaseDurationMs, renewDeadlineMs: timing.renewDeadlineMs, retryPeriodMs: timing.retryPeriodMs, onError: () => undefined,
    });
    expect(['ran', 'busy']).toContain(auto.status);
    expect(job.requests.some((r) => r.action === 'dynamodb:Query' && r.table === t.names.candidates)).toBe(true);

    // a process with a Session: w-3 takes the lease renewing it itself, then moves the term onto its
    // session once that runs (a renewal naming the session), and off it again when the session's
    // renewals fail (a renewal removing it)
    const three = recording();
    let sessionCut = false;
    three.client.middlewareStack.add(
      (next, context) => async (args) => {
        if (sessionCut && context.commandName === 'UpdateItemCommand' && (args.input as { TableName: string }).TableName === t.names.identities) throw Object.assign(new Error('partitioned'), { name: 'NetworkingError' });
        return next(args);
      },
      { step: 'initialize', name: 'partition', priority: 'high' },
    );
    const session = new Session({ client: three.client, tables: t.names, leaseNames: [LEASE], prefix: 'w-3', renewIntervalMs: 1_000, retryPeriodMs: 500, renewDeadlineMs: 2_000, maxLeaseDurationMs: 5_000, onError: () => undefined });
    let leading3 = false;
    const w3 = new LeaderElector({
      leaseName: LEASE, identity: 'w-3', tables: t.names, ...timing, platform: 'none', client: three.client, session,
      candidacy: { emulationVersion: '1.30.0', binaryVersion: '1.30.0' },
      callbacks: { onStartedLeading: () => void (leading3 = true), onStoppedLeading: () => void (leading3 = false) },
      onError: () => undefined,
    });
    const stop3 = new AbortController();
    const run3 = w3.run(stop3.signal);
    await waitFor('w-3 leads', () => leading3);
    const sessionRun = session.run(stop3.signal);
    const leaseNow = async () => (await new LeaseStore(t.client, t.names.leases).read(LEASE)).item;
    await waitFor('the term on the session', async () => (await leaseNow())?.session !== undefined);
    sessionCut = true;
    await waitFor('the term off the session', async () => leading3 && (await leaseNow())?.session === undefined);
    sessionCut = false;
    stop3.abort();
    await run3;
    await sessionRun;

    const beat = recording();
    const heartbeat = new IdentityLeaseHeartbeat({ client: beat.client, tables: t.names, component: COMPONENT, hostname: 'host-1' });
    const beating = new AbortController();
    const running = heartbeat.run(beating.signal);
    await heartbeat.ready;
    await heartbeat.renew();
    await listIdentities({ client: beat.client, tables: t.names, component: COMPONENT });
    beating.abort();
    await running;

    sent.push(...one.requests, ...two.requests, ...dup.requests, ...three.requests, ...job.requests, ...beat.requests);
    for (const c of [one.client, two.client, three.client, job.client, beat.client]) c.destroy();
  });

  it('synthesizes with no cdk-nag finding', () => {
    expect(unacknowledged(g.s.report)).toEqual([]);
  });

  it('lets through every request the SDK sent', () => {
    expect(sent.length).toBeGreaterThan(10);
    expect(sent.filter((r) => !allowed(r)).map(show)).toEqual([]);
  });

  it('the SDK names attributes only through placeholders (none escapes the accounting)', () => {
    expect(sent.flatMap((r) => r.attributes.filter((a) => bareNames(a).length !== 1))).toEqual([]);
  });

  it('grants each write statement exactly the attributes the SDK names under it, no more', () => {
    const writes = g.statements.filter((st) => st.Action.includes('dynamodb:UpdateItem'));
    expect(writes.length).toBeGreaterThanOrEqual(3);
    for (const st of writes) {
      const listed = [...((st.Condition?.['ForAllValues:StringEquals']?.['dynamodb:Attributes'] as string[] | undefined) ?? ['(no attribute condition)'])].sort();
      const used = [...new Set(sent.filter((r) => r.action === 'dynamodb:UpdateItem' && allows([st], r, st.Resource[0])).flatMap((r) => r.attributes))].sort();
      expect(used, JSON.stringify(st.Resource[0])).toEqual(listed);
      // a write that names no ReturnValues gets nothing back: NONE, as WORKER_WRITES lists it
      const returns = [...new Set(sent.filter((r) => r.action === 'dynamodb:UpdateItem' && allows([st], r, st.Resource[0])).map((r) => r.returnValues ?? 'NONE'))].sort();
      expect(returns).toEqual([...((returnValuesOf(st) as string[] | undefined) ?? [])].sort());
    }
  });
});

describe('what the worker policy refuses', () => {
  const update = (role: Role, key: Record<string, string>, attributes: string[], returnValues = 'ALL_NEW'): DynamoRequest => ({
    action: 'dynamodb:UpdateItem',
    table: t.names[role],
    leadingKeys: [key[TABLES[role].partitionKey]!],
    attributes: [...new Set([...Object.keys(key), 'revision', ...attributes])].sort(),
    returnValues,
  });
  /** `r` naming no ReturnValues (DynamoDB returns nothing: NONE): the request carries no such key. */
  const unnamed = (r: DynamoRequest): DynamoRequest => {
    const { returnValues: _, ...rest } = r;
    return rest;
  };
  const lease = (...a: string[]) => update('leases', { name: LEASE }, a);
  const candidate = (...a: string[]) => update('candidates', { leaseName: LEASE, name: 'w-1' }, a);

  const refused: [string, () => DynamoRequest][] = [
    ['a worker raising its own priority', () => candidate('priority')],
    ['a worker extending a priority pin', () => candidate('priorityExpiresAt')],
    ["the operator's strategy on the lease", () => lease('strategy')],
    ["the coordinator's record of the strategy it elected under", () => lease('electedStrategy')],
    ["the coordinator's election failure", () => lease('lastElectionFailure')],
    ["the platform function's record of a lost holder", () => lease('holderLoss')],
    // the renewal mark lets a write past the lease stream: it may not travel with a change of term
    ['a holder change carrying the renewal mark', () => lease('renewalMark', 'renewTime', 'holderIdentity')],
    ['an instance change carrying the renewal mark', () => lease('renewalMark', 'holderInstance')],
    ['a token change carrying the renewal mark', () => lease('renewalMark', 'fencingToken')],
    // issue 36, item 6: a change of the session the term is judged by (and its end marked on) must reach the lease stream
    ['a session change carrying the renewal mark', () => lease('renewalMark', 'renewTime', 'session')],
    // a stand-down's mark keeps the candidate out of elections: the candidate stream's filter must not drop it
    ['a stand-down’s mark carrying the renewal mark', () => unnamed(candidate('standsDownUntil', 'identity', 'renewalMark'))],
    ['an attribute no schema knows', () => lease('renewTime', 'payload')],
    ['another lease', () => update('leases', { name: 'someone-elses' }, ['renewTime'])],
    ["another lease's run-once row", () => update('candidates', { leaseName: 'someone-elses', name: '~run-once/nightly-1' }, ['runs'], 'NONE')],
    ['a run-once row naming a candidate’s attribute', () => update('candidates', { leaseName: LEASE, name: '~run-once/nightly-1' }, ['runs', 'renewTime'], 'NONE')],
    ['a write that returns the old item', () => update('leases', { name: LEASE }, ['renewTime'], 'ALL_OLD')],
    // the renewal's statement lists ALL_NEW alone (LeaseStore.renewTerm reads its row back): a write under it must name it
    ['a renewal carrying the renewal mark that names no ReturnValues', () => unnamed(lease('renewTime', 'renewalMark'))],
  ];
  it.each(refused)('refuses %s', (_, request) => {
    const r = request();
    expect(allowed(r), show(r)).toBe(false);
  });

  it('lets a renewal and a direct acquisition through, each on its own, and a run-once row of its own lease', () => {
    expect(allowed(update('candidates', { leaseName: LEASE, name: '~run-once/nightly-1' }, ['runs'], 'NONE'))).toBe(true);
    expect(allowed(lease('renewTime', 'leaseDurationSeconds', 'vacancyReport', 'renewalMark', 'termToken'))).toBe(true);
    expect(allowed(lease('holderIdentity', 'holderInstance', 'fencingToken', 'termToken', 'acquireTime', 'renewTime', 'leaseDurationSeconds', 'leaseTransitions', 'electedBy'))).toBe(true);
    // a renewal that puts the term on its session: without the mark, so the lease stream sees it
    expect(allowed(lease('renewTime', 'leaseDurationSeconds', 'vacancyReport', 'termToken', 'session'))).toBe(true);
  });

  it('lets a write that names no ReturnValues through wherever its statement lists NONE (no dynamodb:ReturnValues key: StringEqualsIfExists)', () => {
    // as the SDK sends them (CandidateStore.renew, IdentityStore's writes, a run-once mark): before, `StringEquals` refused each in AWS
    expect(allowed(unnamed(candidate('renewTime', 'ackedPingTime', 'pingTime', 'expiresAt', 'renewalMark', 'session', 'identity')))).toBe(true);
    expect(allowed(unnamed(update('candidates', { leaseName: LEASE, name: '~run-once/nightly-1' }, ['runs'])))).toBe(true);
    // a stand-down's mark, set or taken off (CandidateStore.markStandsDown)
    expect(allowed(unnamed(candidate('standsDownUntil', 'identity')))).toBe(true);
    expect(allowed(unnamed(lease('holderIdentity', 'holderInstance', 'fencingToken', 'termToken', 'acquireTime', 'renewTime', 'leaseDurationSeconds', 'leaseTransitions', 'electedBy')))).toBe(true);
    for (const st of g.statements.filter((x) => x.Action.includes('dynamodb:UpdateItem'))) {
      const listed = returnValuesOf(st) as string[];
      expect(Object.keys(st.Condition ?? {}).filter((o) => o.startsWith('StringEquals')), JSON.stringify(listed)).toEqual([listed.includes('NONE') ? 'StringEqualsIfExists' : 'StringEquals']);
    }
  });
});

describe('getLeader with the worker policy', () => {
  const ROUTED = 'worker-routed';
  let w: GrantedRole;
  beforeAll(() => {
    w = grantedRole('RoutingWorkers', 'ecs-tasks.amazonaws.com', t.names, (c, role) => c.grantWorker(role, { leaseNames: [ROUTED], components: [COMPONENT] }));
  });
  afterAll(() => w?.s.cleanup());

  it('lets through the Query of a holder’s process’s session partitions outside its own grant’s, which getLeader sends for a term its named session row does not vouch for', async () => {
    // a1's process p7 was granted ROUTED with another lease: its sessions are in that grant's partition, not this worker's
    const scope = sessionScope([ROUTED, 'nightly-report']);
    const theirs = sessionComponent([ROUTED, 'nightly-report']);
    await new LeaseStore(t.client, t.names.leases).write(LeaseStore.readOf(ROUTED, undefined), {
      set: { holderIdentity: 'a1', holderInstance: 'a1_1@p7', session: `${scope}:s-gone`, acquireTime: NOW - 10 * MIN, renewTime: NOW - MIN, leaseDurationSeconds: 15, leaseTransitions: 1, fencingToken: 44 },
    });
    await new IdentityStore(t.client, t.names.identities).write({ key: { component: theirs, name: `${scope}:s-own` }, item: undefined, revision: 0 }, { set: { holderIdentity: 's-own_1', process: 'p7', hostname: 'web-7', leaseDurationSeconds: 15, acquireTime: NOW - 10 * MIN, renewTime: NOW - 2 * SEC } });
    const { client, requests } = recording();
    // judged by p7's own session s-own (2 s ago), as the coordinator's tick judges it
    expect(await getLeader(ROUTED, { client, tables: t.names, clockSync: 'none', clock: manualClock(NOW) })).toMatchObject({ holder: 'a1', fencingToken: 44 });
    client.destroy();
    const seen = (r: DynamoRequest) => `${r.action} ${w.roleOf(r.table)} ${r.leadingKeys.join(' ')}`;
    expect(requests.map(seen)).toEqual([`dynamodb:GetItem leases ${ROUTED}`, `dynamodb:GetItem identities ${theirs}`, `dynamodb:Query identities ${theirs}`]);
    // before the fix: the worker's session reads were GetItem alone, and its Query of p7's partition was refused
    expect(requests.filter((r) => !w.allowed(r)).map(seen)).toEqual([]);
    // reads only: still no write to that partition
    expect(w.allowed({ action: 'dynamodb:UpdateItem', table: t.names.identities, leadingKeys: [theirs], attributes: ['component', 'name', 'renewTime', 'revision'], returnValues: 'ALL_NEW' })).toBe(false);
  });
});

describe('a start-up on a table still being created, with the worker policy', () => {
  it('lets through the DescribeTable of each table, which a LeaderElector\'s start-up sends where its table is not found', async () => {
    const proxy = await creatingTableProxy(inject('ddbEndpoint'), t.names.candidates, { describe: 'creating' });
    const { client, requests } = recordingClient(proxy.endpoint, t.names);
    const stop = new AbortController();
    try {
      const c = drivenClock(() => proxy.inFlight() > 0);
      proxy.creating(2);
      const elector = new LeaderElector({
        leaseName: LEASE, identity: 'w-creating', tables: t.names, platform: 'none', client, clock: c.clock, clockSync: 'none',
        candidacy: { emulationVersion: '1.30.0', binaryVersion: '1.30.0' }, callbacks: { onStartedLeading: () => undefined }, onError: () => undefined,
      });
      let started: boolean | undefined;
      let ran = false;
      const running = elector.run(stop.signal).catch(() => undefined).finally(() => void (ran = true));
      void elector.ready.then(() => void (started = true), () => void (started = false));
      await c.drive(() => started !== undefined);
      stop.abort();
      await c.drive(() => ran);
      await running;
      expect(started).toBe(true);
      const show = (r: DynamoRequest) => `${r.action} ${g.roleOf(r.table)}`;
      // the table its request found missing is looked at, no other (b4480f7)
      expect(new Set(requests.filter((r) => r.action === 'dynamodb:DescribeTable').map(show))).toEqual(new Set(['dynamodb:DescribeTable candidates']));
      // before: DescribeTable was granted only with multiRegion, so the start-up could not tell a table being made from one missing (60 s of tries, then TableNotFoundError)
      expect(requests.filter((r) => !allowed(r)).map(show)).toEqual([]);
      // and each of its tables may be looked at, whichever a start-up finds missing
      for (const table of [t.names.leases, t.names.candidates, t.names.identities]) expect(allowed({ action: 'dynamodb:DescribeTable', table, leadingKeys: [], attributes: [] }), table).toBe(true);
    } finally {
      stop.abort();
      client.destroy();
      await proxy.close();
    }
  });
});

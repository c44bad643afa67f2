/**
 * The IAM grants are only right if they name what the code really calls. Here every DynamoDB call
 * the functions and the worker SDK make is recorded (one client per caller, on DynamoDB Local) and
 * compared with infra/access.ts, from which the construct builds its policies: a call missing from
 * a grant would be AccessDenied in AWS; a grant nobody calls is privilege nobody needs.
 */
import { randomUUID } from 'node:crypto';
import { CreateTableCommand, DeleteItemCommand, DeleteTableCommand, type DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import type { Context } from 'aws-lambda';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { FUNCTION_ACCESS, WORKER_ACCESS, type FunctionAccess, type TableAccess, type TableRole } from '../../infra/access.js';
import { manualClock } from '../../lib/clock.js';
import { coordinatorDeps } from '../../lib/coordinator/reconcile.js';
import { TICK_DEFAULTS } from '../../lib/coordinator/tick.js';
import type { FunctionDeps } from '../../lib/functions/core.js';
import { noDeadLetter } from '../../lib/functions/dead-letter.js';
import { observability } from '../../lib/functions/env.js';
import { localClient } from '../../lib/local/dynamodb-local.js';
import { lambdaContext } from '../../lib/local/runtime.js';
import type { TableNames } from '../../lib/schemas/config.js';
import { OLDEST_EMULATION_VERSION } from '../../lib/schemas/strategy.js';
import { IdentityLeaseHeartbeat, LeaderElector, listIdentities, withLease } from '../../lib/sdk/index.js';
import { IdentityStore } from '../../lib/stores/identity-store.js';
import { CandidateStore } from '../../lib/stores/candidate-store.js';
import { sessionKey } from '../../lib/schemas/identity.js';
import { LeaseStore } from '../../lib/stores/lease-store.js';
import { wiring, type FunctionName } from '../../lib/wiring.js';
import { waitFor } from '../sdk/harness.js';
import { streamRecords, testTables, type TestTables } from '../support.js';

const MIN = 60_000;
const TRANSACT_ACTION: Record<string, string> = { ConditionCheck: 'ConditionCheckItem', Put: 'PutItem', Update: 'UpdateItem', Delete: 'DeleteItem' };

/** A client like localClient's that records each call as the IAM action it needs: `table action`. */
function recording(names: TableNames): { client: DynamoDBClient; calls: Set<string> } {
  const client = localClient(inject('ddbEndpoint'));
  const roleOf = new Map(Object.entries(names).map(([role, table]) => [table, role]));
  const calls = new Set<string>();
  const note = (table: string | undefined, action: string) => {
    const role = table && roleOf.get(table);
    if (role) calls.add(`${role} dynamodb:${action}`);
    else if (!table) calls.add(`(no table) dynamodb:${action}`); // anything unexpected shows up too
  };
  client.middlewareStack.add(
    (next, context) => async (args) => {
      const input = args.input as { TableName?: string; TransactItems?: Record<string, { TableName: string }>[]; RequestItems?: Record<string, unknown> };
      const command = String(context.commandName).replace(/Command$/, '');
      if (input.TransactItems) for (const item of input.TransactItems) for (const [kind, body] of Object.entries(item)) note(body.TableName, TRANSACT_ACTION[kind] ?? kind);
      else if (input.RequestItems) for (const table of Object.keys(input.RequestItems)) note(table, command);
      else note(input.TableName, command);
      return next(args);
    },
    { step: 'initialize', name: 'recordIamActions' },
  );
  return { client, calls };
}

const expected = (access: TableAccess) =>
  (Object.entries(access) as [TableRole, readonly string[]][]).flatMap(([role, actions]) => actions.map((a) => `${role} ${a}`)).sort();

beforeAll(() => {
  process.env['POWERTOOLS_METRICS_DISABLED'] = 'true'; // EMF lines would only clutter the output
});

describe('what each function calls is what its role grants', () => {
  const tables: TestTables[] = [];
  afterAll(() => Promise.all(tables.map((t) => t.drop())));

  /** Each function's calls over all its scenarios: every action its role grants must be one of them. */
  const seen = new Map<FunctionName, Set<string>>();

  /**
   * Fresh tables, the function's handler on a recording client, a candidate last renewed 10 minutes
   * ago on a session of process `p-a` (as a worker's Session registers it: grantWorker's default
   * `sessions`), so each reconcile reads the session that vouches for it.
   */
  async function setUp(name: FunctionName, lease: string, scenario = 0) {
    const t = await testTables(`access-${name}-${scenario}`);
    tables.push(t);
    const clock = manualClock();
    const rec = recording(t.names);
    const sent = { published: 0, timers: 0, wakes: 0 };
    const deps: FunctionDeps = {
      coordinator: coordinatorDeps(rec.client, t.names, { clock }),
      timer: { schedule: async () => void sent.timers++ },
      publish: async (e) => void (sent.published += e.length),
      deadLetter: noDeadLetter,
      wake: async () => void sent.wakes++, // every function gets a push path here: only those granted iot:Publish may use it
      ...observability(name, 'SILENT'),
    };
    const mod = (await import(/* @vite-ignore */ `../../${wiring[name].entry.replace(/\.ts$/, '.js')}`)) as { makeHandler(d: FunctionDeps): (e: unknown, c: Context) => Promise<unknown> };
    const handler = mod.makeHandler(deps);
    const candidates = new CandidateStore(t.client, t.names.candidates);
    const seedCandidate = async (leaseName: string, n: string, renewTime: number, session?: string) =>
      candidates.write(await candidates.read(leaseName, n), { set: { binaryVersion: '1.30.0', emulationVersion: '1.30.0', preferredStrategies: [OLDEST_EMULATION_VERSION], renewTime, createdAt: renewTime, ...(session ? { session } : {}) } });
    const ids = new IdentityStore(t.client, t.names.identities);
    await ids.write({ key: sessionKey('s-a'), item: undefined, revision: 0 }, { set: { holderIdentity: 's-a', hostname: 'h', process: 'p-a', leaseDurationSeconds: 15, acquireTime: clock.now(), renewTime: clock.now() } });
    await seedCandidate(lease, 'a', clock.now() - 10 * MIN, 's-a');
    const invoke = (event: unknown) => handler(event, lambdaContext(name));
    /** What this scenario called is granted; what it called counts toward what every grant must be used by. */
    const check = () => {
      const access: FunctionAccess = FUNCTION_ACCESS[name];
      const onIndexes = (access.indexQueries ?? []).map((q) => `${q.table} dynamodb:Query`);
      const granted = new Set([...expected(access.tables), ...onIndexes]);
      seen.set(name, new Set([...(seen.get(name) ?? []), ...rec.calls]));
      expect([...rec.calls].filter((c) => !granted.has(c)), `${name}: DynamoDB calls not granted by FUNCTION_ACCESS`).toEqual([]);
      if (sent.published) expect(FUNCTION_ACCESS[name].publishEvents, `${name} published events`).toBe(true);
      if (sent.timers) expect(FUNCTION_ACCESS[name].scheduleTimer, `${name} scheduled a timer`).toBe(true);
      if (sent.wakes) expect(FUNCTION_ACCESS[name].publishWakes, `${name} woke workers`).toBe(true);
    };
    return { t, clock, rec, sent, invoke, check, seedCandidate, handler, ids };
  }
  const noFailures = (r: unknown) => expect((r as { batchItemFailures: unknown[] }).batchItemFailures).toEqual([]);
  /** A timer queue message with `body`, as SQS delivers it. */
  const timerRecord = (body: unknown) => ({ messageId: 'm-1', receiptHandle: 'r', body: JSON.stringify(body), attributes: {}, messageAttributes: {}, md5OfBody: '', eventSource: 'aws:sqs', eventSourceARN: 'arn:aws:sqs:local:000000000000:timer', awsRegion: 'local' });

  it('candidateStream: a candidate joins → events, one reconcile that opens an election and wakes the lease', async () => {
    const { t, invoke, check, sent } = await setUp('candidateStream', 'cs');
    const records = (await streamRecords(t.client, t.names.candidates)).filter((r) => r.eventName === 'INSERT');
    noFailures(await invoke({ Records: records }));
    expect(sent.timers).toBe(1);
    expect(sent.wakes).toBe(1);
    check();
  });

  it('leaseStream: a lease held on a session released by someone else → the end marked on the session, wakes, events, one reconcile that opens an election and wakes the lease again', async () => {
    const { t, clock, invoke, check, sent } = await setUp('leaseStream', 'ls');
    const leases = new LeaseStore(t.client, t.names.leases);
    const ids = new IdentityStore(t.client, t.names.identities);
    const now = clock.now();
    const key = sessionKey('s-z');
    await ids.write({ key, item: undefined, revision: 0 }, { set: { holderIdentity: 's-z', hostname: 'h', leaseDurationSeconds: 15, acquireTime: now, renewTime: now } });
    const held = await leases.write(await leases.read('ls'), { set: { holderIdentity: 'z', holderInstance: 'z-1', leaseDurationSeconds: 15, acquireTime: now, renewTime: now, leaseTransitions: 0, fencingToken: 1, electedBy: 'coordinator', session: 's-z' } });
    await leases.write(LeaseStore.readOf('ls', held), { set: { renewTime: now, lastHolderIdentity: 'z' }, remove: ['holderIdentity', 'holderInstance', 'session'] });
    const records = (await streamRecords(t.client, t.names.leases)).filter((r) => r.eventName === 'MODIFY');
    noFailures(await invoke({ Records: records }));
    expect((await ids.read(key.component, key.name)).item?.endedTerms).toEqual({ ls: 1 });
    expect(sent.published).toBeGreaterThan(0);
    expect(sent.wakes).toBe(records.length + 1);
    expect(sent.timers).toBe(1);
    check();
  });

  it("leaseStream: a held row deleted by an operator, the session it names not its holder's process's → that process's sessions queried, the end marked on the named row", async () => {
    const { t, clock, invoke, check, ids } = await setUp('leaseStream', 'ld', 1);
    const leases = new LeaseStore(t.client, t.names.leases);
    const now = clock.now();
    // the named row s-a is process p-a's; the holder runs in p-b (a peer of the lease rewrote `session`, say): its term is judged by p-b's own session rows (judgedOffNamed)
    await leases.write(await leases.read('ld'), { set: { holderIdentity: 'b', holderInstance: 'b-1@p-b', leaseDurationSeconds: 15, acquireTime: now, renewTime: now, leaseTransitions: 0, fencingToken: 1, electedBy: 'coordinator', session: 's-a' } });
    await t.client.send(new DeleteItemCommand({ TableName: t.names.leases, Key: { name: { S: 'ld' } } }));
    const records = (await streamRecords(t.client, t.names.leases)).filter((r) => r.eventName === 'REMOVE');
    noFailures(await invoke({ Records: records }));
    expect((await ids.read(sessionKey('s-a').component, sessionKey('s-a').name)).item?.endedTerms).toEqual({ ld: 1 });
    check();
  });

  it('platform: a stopped ECS task → the index queried, the lease read and vacated, the dead candidacy withdrawn, the lease woken', async () => {
    const { t, clock, invoke, check, sent } = await setUp('platform', 'pf');
    const task = { kind: 'ecs' as const, id: 'arn:aws:ecs:local:000000000000:task/c/0123', cluster: 'arn:aws:ecs:local:000000000000:cluster/c' };
    const leases = new LeaseStore(t.client, t.names.leases);
    const now = clock.now();
    // the term began a minute before the task stopped: an event from before a term never ends it
    await leases.write(await leases.read('pf'), { set: { holderIdentity: 'a', holderInstance: 'a-1', holderPlatform: task, holderPlatformId: task.id, leaseDurationSeconds: 15, acquireTime: now - MIN, renewTime: now, leaseTransitions: 0, fencingToken: 1, electedBy: 'coordinator' } });
    const candidates = new CandidateStore(t.client, t.names.candidates);
    await candidates.write(await candidates.read('pf', 'a'), { set: { platform: task } });
    const event = { version: '0', id: 'e-1', 'detail-type': 'ECS Task State Change', source: 'aws.ecs', account: '000000000000', time: new Date(now).toISOString(), region: 'local', resources: [task.id], detail: { clusterArn: task.cluster, taskArn: task.id, lastStatus: 'STOPPED' } };
    expect(await invoke(event)).toMatchObject({ outcomes: [{ lease: 'pf', outcome: 'vacated' }] });
    expect(sent.wakes).toBe(1);
    check();
  });

  it('electionTimer: a deadline → one reconcile that opens an election and wakes the lease', async () => {
    const { t, clock, invoke, check, sent } = await setUp('electionTimer', 'et');
    // a lease row to reconcile: the timer of a lease whose row is gone creates nothing (an operator's delete: lib/functions/core.ts)
    const leases = new LeaseStore(t.client, t.names.leases);
    await leases.write(await leases.read('et'), { set: { leaseDurationSeconds: 15, leaseTransitions: 0, fencingToken: 0 } });
    noFailures(await invoke({ Records: [timerRecord({ lease: 'et', electionId: 'e-1', deadline: clock.now() })] }));
    expect(sent.timers).toBe(1);
    expect(sent.wakes).toBe(1);
    check();
  });

  it('electionTimer: a deferred mark (markEnded) of a term released by someone else → the end marked on its session row, the next election held', async () => {
    const { t, clock, invoke, check, ids } = await setUp('electionTimer', 'em', 1);
    const leases = new LeaseStore(t.client, t.names.leases);
    const now = clock.now();
    const held = await leases.write(await leases.read('em'), { set: { holderIdentity: 'a', holderInstance: 'a-1@p-a', leaseDurationSeconds: 15, acquireTime: now, renewTime: now, leaseTransitions: 0, fencingToken: 1, electedBy: 'coordinator', session: 's-a' } });
    await leases.write(LeaseStore.readOf('em', held), { set: { renewTime: now, lastHolderIdentity: 'a' }, remove: ['holderIdentity', 'holderInstance', 'session'] });
    noFailures(await invoke({ Records: [timerRecord({ lease: 'em', markEnded: { holderIdentity: 'a', session: 's-a', fencingToken: 1, leaseDurationSeconds: 15, deleted: false }, since: now, attempt: 1 })] }));
    expect((await ids.read(sessionKey('s-a').component, sessionKey('s-a').name)).item?.endedTerms).toEqual({ em: 1 });
    check();
  });

  it("electionTimer: a deferred mark of a deleted row's term whose named session is not its holder's process's → marked, that process's sessions queried for the hold", async () => {
    const { t, clock, invoke, check, ids } = await setUp('electionTimer', 'ed', 2);
    const now = clock.now();
    const body = { lease: 'ed', markEnded: { holderIdentity: 'b', session: 's-a', fencingToken: 1, leaseDurationSeconds: 15, deleted: true, renewTime: now, holderInstance: 'b-1@p-b' }, since: now, attempt: 1 };
    noFailures(await invoke({ Records: [timerRecord(body)] }));
    expect((await ids.read(sessionKey('s-a').component, sessionKey('s-a').name)).item?.endedTerms).toEqual({ ed: 1 });
    check();
  });

  it('coordinator: a tick that loses a race, opens an election and collects a stale candidate and an expired identity', async () => {
    const { t, clock, rec, invoke, check, seedCandidate, handler } = await setUp('coordinator', 'co');
    await seedCandidate('gone', 'old', clock.now() - 31 * MIN);
    const identities = new IdentityStore(t.client, t.names.identities);
    const then = clock.now() - 3 * 60 * MIN;
    await identities.write(await identities.read('scheduler', 'scheduler-host'), { set: { holderIdentity: 'scheduler-host_1', hostname: 'host', leaseDurationSeconds: 3_600, acquireTime: then, renewTime: then } });
    // Another reconciler writes lease "co" between the tick's scan and its write: the tick re-reads.
    let raced = false;
    rec.client.middlewareStack.add(
      (next, context) => async (args) => {
        const input = args.input as { TableName?: string; Key?: Record<string, never> };
        if (!raced && context.commandName === 'UpdateItemCommand' && input.TableName === t.names.leases && unmarshall(input.Key!)['name'] === 'co') {
          raced = true;
          const leases = new LeaseStore(t.client, t.names.leases);
          await leases.write(await leases.read('co'), { set: { leaseDurationSeconds: 15, leaseTransitions: 0, fencingToken: 0 } });
        }
        return next(args);
      },
      { step: 'initialize', name: 'raceTheTick', priority: 'high' },
    );
    const result = (await invoke({ 'detail-type': 'Scheduled Event', source: 'aws.events', time: new Date(clock.now()).toISOString() })) as { errors: unknown[]; collectedCandidates: number; collectedIdentities: number };
    expect(raced).toBe(true);
    expect(result).toMatchObject({ errors: [], collectedCandidates: 1, collectedIdentities: 1 });
    // an invocation left no time past the tick's margin: it reaches nothing and keeps its place in the round (the cursor's write)
    const late = { ...lambdaContext('coordinator'), getRemainingTimeInMillis: () => TICK_DEFAULTS.marginMs };
    expect(await handler({ 'detail-type': 'Scheduled Event', source: 'aws.events', time: new Date(clock.now()).toISOString() }, late)).toMatchObject({ leases: 0, round: { done: false, invocations: 1 } });
    check();
  });

  // after every scenario above: a grant nobody calls is privilege nobody needs
  it.each(Object.keys(FUNCTION_ACCESS) as FunctionName[])('%s: every action its role grants is called in a scenario above', (name) => {
    const access: FunctionAccess = FUNCTION_ACCESS[name];
    const onIndexes = (access.indexQueries ?? []).map((q) => `${q.table} dynamodb:Query`);
    expect([...(seen.get(name) ?? [])].sort(), `${name}: DynamoDB calls over its scenarios`).toEqual([...new Set([...expected(access.tables), ...onIndexes])].sort());
  });
});

describe('what a worker calls is what grantWorker grants', () => {
  let t: TestTables;
  const appTable = `t-access-app-${randomUUID().slice(0, 8)}`;
  beforeAll(async () => {
    t = await testTables('access-worker');
    await t.client.send(new CreateTableCommand({ TableName: appTable, BillingMode: 'PAY_PER_REQUEST', AttributeDefinitions: [{ AttributeName: 'id', AttributeType: 'S' }], KeySchema: [{ AttributeName: 'id', KeyType: 'HASH' }] }));
  });
  afterAll(async () => {
    await t.client.send(new DeleteTableCommand({ TableName: appTable }));
    await t.drop();
  });

  it('LeaderElector (candidate, fallback acquisition, renewals, a fenced write, release), IdentityLeaseHeartbeat (start, renew, list, stop) and withLease (auto mode, run-once)', async () => {
    const rec = recording(t.names);
    let led!: () => void;
    const leading = new Promise<void>((resolve) => (led = resolve));
    const elector = new LeaderElector({
      // with no coordinator running, the worker falls back to acquiring itself at once and renews often;
      // the renew deadline is long, so a busy machine's stall never ends the term before the fenced write
      leaseName: 'worker-lease', identity: 'w-1', tables: t.names, leaseDurationMs: 15_000, renewDeadlineMs: 10_000, retryPeriodMs: 100, renewIntervalMs: 200, fallbackAfterMs: 200, platform: 'none',
      client: rec.client, candidacy: { emulationVersion: '1.30.0', binaryVersion: '1.30.0' }, callbacks: { onStartedLeading: () => led() },
    });
    const stop = new AbortController();
    const run = elector.run(stop.signal);
    await leading;
    const leases = new LeaseStore(t.client, t.names.leases); // unrecorded
    await waitFor('a renewal', async () => {
      const l = (await leases.read('worker-lease')).item;
      return l?.holderIdentity === 'w-1' && l.renewTime! > l.acquireTime!;
    });
    await elector.fencedWrite({ TransactItems: [{ Put: { TableName: appTable, Item: { id: { S: 'report-1' } } } }] });
    stop.abort();
    await run;

    const heartbeat = new IdentityLeaseHeartbeat({ client: rec.client, tables: t.names, component: 'scheduler', hostname: 'host-1' });
    const beating = new AbortController();
    const beat = heartbeat.run(beating.signal);
    await heartbeat.ready;
    await heartbeat.renew();
    const listing = await listIdentities({ client: rec.client, tables: t.names, component: 'scheduler' });
    expect(listing.live.map((i) => i.holderIdentity)).toEqual([heartbeat.identity]);
    beating.abort();
    await beat;

    // withLease in its default mode asks whether the lease has candidates (a Query) before it races or
    // stands; run-once, it reads the window's row (GetItem) and writes it in a fenced transaction
    // (UpdateItem beside a ConditionCheckItem on the lease), all on the lease's own partitions
    const ran = await withLease('worker-lease', async () => 'done', { client: rec.client, tables: t.names, identity: 'cron-1', candidacy: { emulationVersion: '1.30.0', binaryVersion: '1.30.0' }, waitMs: 0, runOnce: { window: 'nightly-1' }, onError: () => undefined });
    expect(['ran', 'busy']).toContain(ran.status);

    expect([...rec.calls].sort()).toEqual(expected(WORKER_ACCESS));
  });
});

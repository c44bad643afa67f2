/**
 * A LeaderElector's stop meeting a fault (eighth review): its release at the SIGTERM failing for a
 * moment is tried again within the stop's 10 s, after a retry period (doubling), re-read before
 * each try; failing throughout, the term is left to run out and onError is told so once, with when.
 * A take in flight at the abort that lands after it starts no work. run() without a signal claims
 * nothing. The step fed by hand (no I/O), then NoCoordination electors at client-go's timings on
 * DynamoDB Local through loopback proxies (test/proxy.ts), on a clock moved only while no request
 * is in flight: waits on simulated time, never on a time budget.
 */
import { GetItemCommand, type DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { localClient } from '../../lib/local/dynamodb-local.js';
import { STOP_BUDGET_MS } from '../../lib/sdk/faults.js';
import { LeaderElector, ValidationError } from '../../lib/sdk/index.js';
import { decide, LEAVING_TRY_MS, START, type Effect, type Event, type Moment, type State } from '../../lib/sdk/step.js';
import { closableProxy, drivenClock, foreignAnswersProxy, holdingProxy, inFlight } from '../proxy.js';
import { testTables, type TestTables } from '../support.js';
import { CLIENT_GO, drivenElector, type Terms } from './driven-elector.js';
import { at, read, stepSettings } from './step-fixtures.js';

let t: TestTables;
beforeAll(async () => void (t = await testTables('stopretry')));
afterAll(async () => t.drop());

const row = async (lease: string) => {
  const r = await t.client.send(new GetItemCommand({ TableName: t.names.leases, Key: { name: { S: lease } }, ConsistentRead: true }));
  return r.Item ? unmarshall(r.Item) : undefined;
};

/** Each request `client` sends (its command, e.g. UpdateItem), and when on `c`'s clock: noted as the AWS SDK begins it, before its tries. */
function tries(client: DynamoDBClient, c: ReturnType<typeof drivenClock>): { op: string; at: number }[] {
  const sent: { op: string; at: number }[] = [];
  const note = (next: (args: unknown) => Promise<unknown>, context: { commandName?: string }) => (args: unknown) => {
    sent.push({ op: context.commandName ?? '?', at: c.clock.monotonic() });
    return next(args);
  };
  client.middlewareStack.add(note as never, { step: 'initialize', name: 'stopRetryTries', priority: 'high' });
  return sent;
}

describe('the step: a stopping leader whose release fails, within the stop\'s wait on DynamoDB', () => {
  const s = stepSettings('a', { mode: 'NoCoordination', candidate: false });
  const term = { holderIdentity: 'a', fencingToken: 7 };
  const mine = { name: 'job', revision: 4, holderIdentity: 'a', holderInstance: 'a-1', leaseDurationSeconds: 15, acquireTime: 1, renewTime: 2, leaseTransitions: 1, fencingToken: 7 } as const;
  const within = (dt: number, leftMs: number, o: Partial<Moment> = {}) => at(dt, { stopLeftMs: leftMs, ...o });
  /** Feeds `events` in order from `state`: each step's effects, and the last state. */
  const feed = (state: State, events: [Event, Moment][]) => {
    const fx: Effect[][] = [];
    for (const [e, m] of events) {
      const out = decide(s, state, e, m);
      state = out.state;
      fx.push(out.effects);
    }
    return { fx, state };
  };
  const left: Event = { kind: 'leave', led: { term, handed: false }, held: undefined };

  it('a release that failed is tried again after a retry period (a pause counted in the stop), the row read first; the pause doubles; none once no pause and a try fit in what is left', () => {
    const r = feed(START, [
      [left, within(0, 10_000)],
      [{ kind: 'leavingWritten', out: 'failed', random: 0 }, within(10, 9_990)],
      [{ kind: 'answer', rest: [{ k: 'leaveAgain' }] }, within(2_010, 7_990)],
      [{ kind: 'leavingRead', read: 'unread', random: 0 }, within(2_020, 7_980)],
    ]);
    expect(r.fx[0]).toEqual([{ kind: 'leavingWrite', write: { kind: 'release', term } }]);
    expect(r.fx[1]).toEqual([{ kind: 'sleep', ms: CLIENT_GO.retryPeriodMs, counted: true, rest: [{ k: 'leaveAgain' }] }]);
    expect(r.fx[2]).toEqual([{ kind: 'readToLeave' }]);
    expect(r.fx[3]).toEqual([{ kind: 'sleep', ms: 2 * CLIENT_GO.retryPeriodMs, counted: true, rest: [{ k: 'leaveAgain' }] }]);
    // the row read shows the term still this start-up's: released again, by its holder and token
    const again = feed(r.state, [
      [{ kind: 'answer', rest: [{ k: 'leaveAgain' }] }, within(6_020, 3_980)],
      [{ kind: 'leavingRead', read: read(mine as never) }, within(6_030, 3_970)],
    ]);
    expect(again.fx[1]).toEqual([{ kind: 'leavingWrite', write: { kind: 'release', term } }]);
    // failed again with 3.9 s left: the next pause (8 s) does not fit, the part ends unsettled, its release left undone
    const given = feed(again.state, [[{ kind: 'leavingWritten', out: 'failed', random: 0 }, within(6_040, 3_960)]]);
    expect(given.fx[0]).toEqual([]);
    expect(given.state.leaving).toMatchObject({ part: 'gone', faults: 3, leaseLeft: { kind: 'release', term } });
  });

  it.each(['failed', 'unknown'] as const)('a pause that would leave less than a try is not taken (%s): given up, not read again at once', (out) => {
    const r = feed(START, [
      [left, within(0, 10_000)],
      [{ kind: 'leavingWritten', out, random: 0 }, within(10, CLIENT_GO.retryPeriodMs + LEAVING_TRY_MS - 1)],
    ]);
    expect(r.fx[1]).toEqual([]);
    expect(r.state.leaving).toMatchObject({ part: 'gone', faults: 1, leaseLeft: { kind: 'release', term } });
  });

  it('landed on a later try, or the row read showing the term no longer its own: settled, nothing left undone', () => {
    const failed = feed(START, [
      [left, within(0, 10_000)],
      [{ kind: 'leavingWritten', out: 'unknown', random: 0 }, within(10, 9_990)],
      [{ kind: 'answer', rest: [{ k: 'leaveAgain' }] }, within(2_010, 7_990)],
    ]);
    const landed = feed(failed.state, [
      [{ kind: 'leavingRead', read: read(mine as never) }, within(2_020, 7_980)],
      [{ kind: 'leavingWritten', out: 'landed' }, within(2_030, 7_970)],
    ]);
    expect(landed.state.leaving?.part).toBe('gone');
    expect(landed.state.leaving?.leaseLeft).toBeUndefined();
    // the unanswered release had landed: the row shows no term of its own, nothing more to write
    const gone = feed(failed.state, [[{ kind: 'leavingRead', read: read({ ...mine, holderIdentity: undefined, holderInstance: undefined, revision: 5 } as never) }, within(2_020, 7_980)]]);
    expect(gone.fx[0]).toEqual([]);
    expect(gone.state.leaving).toMatchObject({ part: 'gone' });
    expect(gone.state.leaving?.leaseLeft).toBeUndefined();
  });

  it('on a process that runs a Session, the term is named as left on its session rows before the pause (else its renewals keep the term alive meanwhile), and not again when the part ends', () => {
    const onSession = (dt: number, leftMs: number) => within(dt, leftMs, { session: 's1' });
    const r = feed(START, [
      [left, onSession(0, 10_000)],
      [{ kind: 'leavingWritten', out: 'failed', random: 0 }, onSession(10, 9_990)],
      [{ kind: 'termLeft', at: 5 }, onSession(20, 9_980)],
      [{ kind: 'answer', rest: [{ k: 'leaveAgain' }] }, onSession(2_020, 7_980)],
      [{ kind: 'leavingRead', read: 'unread', random: 0 }, onSession(2_030, 7_970)],
      [{ kind: 'answer', rest: [{ k: 'leaveAgain' }] }, onSession(6_030, 3_970)],
      [{ kind: 'leavingRead', read: 'unread', random: 0 }, onSession(6_040, 3_960)],
    ]);
    expect(r.fx.map((f) => f.map((x) => x.kind))).toEqual([['leavingWrite'], ['leaveTerm'], ['sleep'], ['readToLeave'], ['sleep'], ['readToLeave'], []]);
    expect(r.fx[1]).toEqual([{ kind: 'leaveTerm', term: { token: 7, instance: 'a-1' } }]);
    expect(r.state.leaving).toMatchObject({ part: 'gone', leftAt: 5, leaseLeft: { kind: 'release', term } });
  });

  it("while it holds its session's renewals (a take onto it in doubt): no pause, each pause would bring the session's deadline nearer; decided at once, as before", () => {
    const r = feed(START, [
      [{ ...left, held: 's1' } as Event, within(0, 10_000, { session: 's1' })],
      [{ kind: 'leavingWritten', out: 'failed', random: 0 }, within(10, 9_990, { session: 's1' })],
    ]);
    expect(r.fx[1]!.map((f) => f.kind)).toEqual(['leaveTerm']);
    expect(r.state.leaving?.pauseMs).toBeUndefined();
  });

  it('no stop known (no wait to fit a pause in): decided at once, as before', () => {
    const r = feed(START, [
      [left, at(0)],
      [{ kind: 'leavingWritten', out: 'failed' }, at(10)],
    ]);
    expect(r.fx[1]).toEqual([]);
    expect(r.state.leaving?.part).toBe('gone');
  });
});

/** a leads `lease` through `through`, b follows it straight to DynamoDB Local, 20 s settled. */
async function leaderAndPeer(lease: string, through: ReturnType<typeof localClient>, direct: ReturnType<typeof localClient>, c: ReturnType<typeof drivenClock>) {
  const terms: Terms = [];
  const errors = { a: [] as Error[], b: [] as Error[] };
  const a = drivenElector(t.names, 'a', lease, through, c, terms, errors.a);
  await c.drive(() => a.e.isLeader());
  const b = drivenElector(t.names, 'b', lease, direct, c, terms, errors.b);
  await c.drive(() => b.e.leader === 'a');
  await c.drive(() => c.waited() >= 20_000);
  return { a, b, terms, errors };
}

describe('a NoCoordination leader stopped (SIGTERM) as its release meets a fault; its peer straight to DynamoDB Local', () => {
  it('DynamoDB refusing connections for 1 s (an endpoint restarting): the release is tried again a retry period later and lands; the peer leads within seconds, not after the lease duration; nothing told of a term left', async () => {
    const lease = 'blip';
    const p = await closableProxy(inject('ddbEndpoint'));
    const through = localClient(p.endpoint);
    const direct = localClient(inject('ddbEndpoint'));
    const busy = [inFlight(through), inFlight(direct)];
    const c = drivenClock(() => busy.some((b) => b()));
    const { a, b, terms, errors } = await leaderAndPeer(lease, through, direct, c);
    const from = c.clock.monotonic();
    await p.close();
    c.clock.setTimer(1_000, () => void p.open());
    await a.stop();
    const stopMs = c.clock.monotonic() - from;
    const after = await row(lease);
    await c.drive(() => b.e.isLeader());
    const ledMs = c.clock.monotonic() - from;
    console.log(`the release refused for 1 s: run() resolved ${stopMs} ms after the SIGTERM, b led ${ledMs} ms after it; a told: ${errors.a.map((e) => e.name).join(', ')}`);
    // before: run() resolved at once (0 ms), the row still a's, b led 15,200 ms after the SIGTERM (the lease duration)
    expect(after?.['holderIdentity']).toBeUndefined();
    expect(stopMs).toBeGreaterThanOrEqual(CLIENT_GO.retryPeriodMs);
    expect(stopMs).toBeLessThan(STOP_BUDGET_MS);
    expect(ledMs).toBeLessThan(stopMs + 2 * CLIENT_GO.retryPeriodMs);
    expect(errors.a.every((e) => e.name === 'DynamoDBUnreachableError')).toBe(true);
    // never two leaders
    expect(terms.filter((x) => x.who === 'a')).toHaveLength(1);
    expect(terms.find((x) => x.who === 'b')!.from).toBeGreaterThanOrEqual(terms.find((x) => x.who === 'a')!.to!);
    await b.stop();
    through.destroy();
    direct.destroy();
    await p.close();
  });

  it("a proxy refusing its writes (HTTP 403) for a minute: the release is tried again within the stop's 10 s, the row read before each try, a retry period or more apart, nothing after run() resolves; onError is told once that the term is left to run out, and when; the peer leads only once it has", async () => {
    const lease = 'forbidden';
    const proxy = await foreignAnswersProxy(inject('ddbEndpoint'), (op) => op === 'UpdateItem');
    const through = localClient(proxy.endpoint);
    const direct = localClient(inject('ddbEndpoint'));
    const db = inFlight(direct);
    const c = drivenClock(() => proxy.inFlight() > 0 || db());
    const sent = tries(through, c);
    const { a, b, terms, errors } = await leaderAndPeer(lease, through, direct, c);
    const from = c.clock.monotonic();
    proxy.answer('forbidden403');
    c.clock.setTimer(60_000, () => proxy.answer(undefined));
    const before = sent.length;
    await a.stop();
    const stopMs = c.clock.monotonic() - from;
    const during = sent.slice(before);
    const after = await row(lease);
    await c.drive(() => b.e.isLeader());
    const ledMs = c.clock.monotonic() - from;
    const leftTold = errors.a.filter((e) => /left to run out/.test(e.message));
    console.log(`refused throughout: run() resolved ${stopMs} ms after the SIGTERM; its requests then ${JSON.stringify(during.map((x) => ({ ...x, at: x.at - from })))}; b led ${ledMs} ms after it; a told: ${errors.a.map((e) => e.message).join(' | ')}`);
    // before: one release and one read, back to back at 0 ms; run() resolved at once; nothing told of the term left
    const releases = during.filter((x) => x.op === 'UpdateItemCommand');
    expect(releases.length).toBeGreaterThanOrEqual(2);
    for (let i = 1; i < releases.length; i++) {
      expect(releases[i]!.at - releases[i - 1]!.at).toBeGreaterThanOrEqual(CLIENT_GO.retryPeriodMs);
      expect(during.some((x) => x.op === 'GetItemCommand' && x.at > releases[i - 1]!.at && x.at <= releases[i]!.at)).toBe(true);
    }
    expect(during.every((x) => x.at - from < STOP_BUDGET_MS)).toBe(true);
    expect(stopMs).toBeGreaterThanOrEqual(CLIENT_GO.retryPeriodMs);
    expect(stopMs).toBeLessThanOrEqual(STOP_BUDGET_MS);
    expect(leftTold).toHaveLength(1);
    expect(leftTold[0]!.message).toMatch(/release of the term \(fencing token \d+\) was not seen to land .*a lease duration \(15 s\) after its last renewal, at about \d{4}-\d\d-\d\dT/);
    // nothing more sent once run() resolved (the peer's reads go straight to DynamoDB Local)
    expect(sent.length).toBe(before + during.length);
    expect(after?.['holderIdentity']).toBe('a');
    // the term ran out: the peer leads after a's last renewal's lease duration, never beside it
    expect(ledMs).toBeGreaterThan(CLIENT_GO.leaseDurationMs - 2 * CLIENT_GO.retryPeriodMs);
    expect(terms.find((x) => x.who === 'b')!.from).toBeGreaterThanOrEqual(terms.find((x) => x.who === 'a')!.to!);
    await b.stop();
    through.destroy();
    direct.destroy();
    await proxy.close();
  });
});

describe('run() cancelled while its take of the lease is in flight, the take landing after the abort', () => {
  it('no work starts: neither onStartedLeading nor onStoppedLeading runs, the term won is given back, and run() resolves', async () => {
    const lease = 'take-in-flight';
    const hp = await holdingProxy(inject('ddbEndpoint'), (op, body) => (op === 'UpdateItem' || op === 'PutItem') && body.includes(t.names.leases));
    const client = localClient(hp.endpoint);
    const c = drivenClock(() => hp.inFlight() - hp.held() > 0);
    const log: string[] = [];
    const errors: Error[] = [];
    hp.holding(true);
    const e = new LeaderElector({
      client,
      tables: t.names,
      clock: c.clock,
      clockSync: 'none',
      leaseName: lease,
      identity: 'a',
      mode: 'NoCoordination',
      platform: 'none',
      ...CLIENT_GO,
      onError: (x) => void errors.push(x),
      callbacks: {
        onStartedLeading: (signal) => void log.push(`started, signal.aborted=${signal.aborted}`),
        onStoppedLeading: ({ reason }) => void log.push(`stopped ${reason}`),
      },
    });
    const cancel = new AbortController();
    let settled = false;
    const running = e.run(cancel.signal).finally(() => void (settled = true));
    await c.drive(() => hp.held() > 0);
    cancel.abort();
    c.clock.setTimer(500, () => hp.release());
    await c.drive(() => settled);
    await running;
    const after = await row(lease);
    console.log('cancelled with its take in flight:', log, 'row', after && { holder: after['holderIdentity'], last: after['lastHolderIdentity'] }, errors.map((x) => x.message));
    // before: ['started, signal.aborted=false', 'stopped cancelled']
    expect(log).toEqual([]);
    expect(e.isLeader()).toBe(false);
    expect(after?.['holderIdentity']).toBeUndefined();
    expect(after?.['lastHolderIdentity']).toBe('a');
    expect(errors).toEqual([]);
    client.destroy();
    await hp.close();
  });
});

describe('run() called without a signal (plain JavaScript: `await elector.run()`)', () => {
  it('rejects with a ValidationError naming `signal` and the fix, claiming nothing: run(signal) then runs', async () => {
    const client = localClient(inject('ddbEndpoint'));
    const c = drivenClock(inFlight(client));
    const e = new LeaderElector({ client, tables: t.names, clock: c.clock, clockSync: 'none', leaseName: 'no-signal', identity: 'a', mode: 'NoCoordination', platform: 'none', ...CLIENT_GO, callbacks: { onStartedLeading: () => undefined } });
    const run = e.run as (signal?: unknown) => Promise<void>;
    for (const bad of [undefined, null, {}, 'stop']) {
      const err = await run.call(e, bad).then(
        () => undefined,
        (x: unknown) => x,
      );
      // before: TypeError: Cannot read properties of undefined (reading 'aborted'), the start-up claimed
      expect(err).toBeInstanceOf(ValidationError);
      expect((err as ValidationError).fields).toEqual(['signal']);
      expect((err as Error).message).toMatch(/signal: must be an AbortSignal.*AbortController.*call run\(\) again with one/);
    }
    expect(e.runPhase).toBe('idle');
    const cancel = new AbortController();
    let settled = false;
    const running = e.run(cancel.signal).finally(() => void (settled = true));
    await c.drive(() => e.isLeader());
    await e.ready;
    cancel.abort();
    await c.drive(() => settled);
    await running;
    expect(e.runPhase).toBe('stopped');
    client.destroy();
  });
});

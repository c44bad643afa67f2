/**
 * The leader's address (issue 39): a LeaderElector's `advertise` goes onto the lease as
 * `holderAddress` with every term it takes — directly, as the designated successor, elected by the
 * coordinator, handed over — and leaves with the term, so a client never reads a previous holder's
 * address beside a new holder. On DynamoDB Local, with the real coordinator driven in-process.
 */
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { coordinatorDeps } from '../../lib/coordinator/reconcile.js';
import { localClient } from '../../lib/local/dynamodb-local.js';
import { LeaderElector } from '../../lib/sdk/elector.js';
import { LeaseStore } from '../../lib/stores/lease-store.js';
import { CandidateStore } from '../../lib/stores/candidate-store.js';
import { drivenClock, inFlight } from '../proxy.js';
import { testTables, type TestTables } from '../support.js';
import { inject } from 'vitest';
import { FAST, Log, STEADY, coordinatorLoop, startElector, validationError, waitFor } from './harness.js';

const A = 'http://10.0.0.1:8080';
const B = '10.0.0.2:8080';
let t: TestTables;
let leases: LeaseStore;
const row = async (lease: string) => (await leases.read(lease)).item;
/** A client of DynamoDB Local and a clock that moves only while the test drives it, each timer once the client has no request under way (test/proxy.ts). */
const driven = () => {
  const client = localClient(inject('ddbEndpoint'));
  return { client, ...drivenClock(inFlight(client)) };
};

beforeAll(async () => {
  t = await testTables('address');
  leases = new LeaseStore(t.client, t.names.leases);
});
afterAll(() => t?.drop());

/** Each UpdateItem `client` sends to the lease table (a take, a renewal, a release) goes through `around`, which sends it with `send`. */
function leaseUpdates(client: DynamoDBClient, around: (send: () => Promise<unknown>) => Promise<unknown>): void {
  client.middlewareStack.add(
    (next, context) => async (args) => {
      const lease = context.commandName === 'UpdateItemCommand' && (args.input as { TableName?: string }).TableName === t.names.leases;
      return lease ? ((await around(() => next(args))) as Awaited<ReturnType<typeof next>>) : next(args);
    },
    { step: 'initialize', name: 'leaseUpdates', priority: 'high' },
  );
}

/** A client whose every request fails once `down` is set: a process that crashed, as its peers see it. */
function crashable(): { client: DynamoDBClient; crash(): void } {
  const client = localClient(inject('ddbEndpoint'));
  let down = false;
  client.middlewareStack.add(
    (next) => async (args) => {
      if (down) throw Object.assign(new Error('crashed'), { name: 'NetworkingError' });
      return next(args);
    },
    { step: 'initialize', name: 'crash', priority: 'high' },
  );
  return { client, crash: () => void (down = true) };
}

describe('advertise', () => {
  /** An elector that never runs, given `advertise`. */
  const advertising = (advertise: string) => new LeaderElector({ leaseName: 'x', identity: 'w', mode: 'NoCoordination', client: t.client, callbacks: { onStartedLeading: () => undefined }, advertise });
  /** The ValidationError `advertise` is refused with: it names that field alone. */
  const refused = (advertise: string) => {
    const e = validationError(() => advertising(advertise));
    expect(e.fields).toEqual(['advertise']);
    return e;
  };

  it.each([
    ['an empty string', ''],
    ['a host without a port', '10.0.0.1'],
    ['a URL without a host', 'http://:8080'],
    ['spaces', 'http://10.0.0.1:8080 '],
    ['more than 2048 characters', `http://${'a'.repeat(2048)}:8080`],
  ])('refuses %s, naming the field and the forms it takes', (_what, advertise) => {
    const e = refused(advertise);
    if (advertise !== '' && advertise.length <= 2048) expect(e.message).toMatch(/URL such as http:\/\/10\.0\.0\.5:8080 or host:port/);
  });

  // found from outside (2026-12-02): a port out of range got the generic "must be a URL" message,
  // and a URL's port 0 was taken (no client dials port 0)
  it.each([
    ['10.0.0.1:70000', 70000],
    ['http://10.0.0.1:70000', 70000],
    ['grpc://svc.local:99999/x', 99999],
    ['[fd00::1]:65536', 65536],
    ['http://[fd00::1]:123456', 123456],
    ['10.0.0.1:0', 0],
    ['http://10.0.0.1:0/', 0],
  ])('refuses %s: its port is out of range, and says so', (advertise, port) => {
    const e = refused(advertise);
    expect(e.message).toContain(`advertise: has port ${port}, out of range: a port is 1-65535`);
    expect(e.message).not.toMatch(/must be a URL/);
  });

  // found by a review (2026-12-01): a worker that binds 0.0.0.0 and advertises the same variable
  // published 0.0.0.0, which a client dials as its own host; before the fix each was taken
  it.each(['0.0.0.0:8080', 'http://0.0.0.0:8080', '[::]:8080', 'http://[::]:8080/', 'grpc://[0:0::0]:50051', 'http://0:8080'])('refuses the wildcard address %s, naming the field and what to give instead', (advertise) => {
    const e = refused(advertise);
    expect(e.message).toMatch(/listens on every interface, and no client reaches it there: advertise this worker's own address/);
  });

  // found by a review (2026-12-01): README's `http://${process.env.POD_IP}:8080` with POD_IP unset
  // (ECS has none) advertised http://undefined:8080; before the fix each was taken
  it.each(['http://undefined:8080', 'undefined:8080', 'http://null:8080', 'grpc://NaN:50051', 'http://undefined.:8080'])('refuses %s, a template whose variable was unset', (advertise) => {
    const e = refused(advertise);
    expect(e.message).toMatch(/an unset variable written into a template: set it/);
  });

  // found by a review (2026-12-05): each was taken, and leader discovery then pointed a name
  // elsewhere than clients dial (10.1:80 a CNAME to "10.1", which Node dials as 10.0.0.1), or
  // cleared the leader's name (a host that is no DNS name)
  it.each([
    ['10.1:80', /names the host 10\.1, which clients read as 10\.0\.0\.1: write 10\.0\.0\.1 \(10\.0\.0\.1:80\)/],
    ['012.0.0.5:80', /which clients read as 10\.0\.0\.5/],
    ['0x7f.1:80', /which clients read as 127\.0\.0\.1/],
    ['999.999.999.999:80', /names the host 999\.999\.999\.999, which is no IPv4 address and no DNS name/],
    ['[1:2]:80', /names the host 1:2, which is no IPv6 address/],
    // in a URL of a scheme the URL reads no host of (a review of this change: they were taken)
    ['grpc://10.1:50051', /names the host 10\.1, which clients read as 10\.0\.0\.1: write 10\.0\.0\.1/],
    ['tcp://012.0.0.5:9000', /which clients read as 10\.0\.0\.5/],
    ['grpc://999.999.999.999:50051', /names the host 999\.999\.999\.999, which is no IPv4 address and no DNS name/],
    ['a..b:80', /has the label "", not a host-name label/],
    ['http://-bad-.example', /names the host -bad-\.example, which has the label "-bad-"/],
    [`${'a'.repeat(64)}.internal:80`, /not a host-name label \(1-63/],
    ['[::ffff:0.0.0.0]:80', /is the wildcard address/],
  ])('refuses %s: its host is not what clients and leader discovery read', (advertise, why) => {
    expect(refused(advertise).message).toMatch(why);
  });

  // found by a review (2026-12-06): each was taken and published as written (the lease, events, the
  // Conclave-Address header, Cloud Map's attributes); the password is not in the message
  it.each(['http://admin:s3cret@10.0.0.7:8080/', 'http://user@10.0.0.1:8080/a:1', 'grpc://:s3cret@svc.local:50051', 'https://@leader.example.com'])('refuses %s: its URL carries credentials, and says what to give instead', (advertise) => {
    const e = refused(advertise);
    expect(e.message).toMatch(/advertise: carries credentials \(user:password@ before the host\), which would be published with it .*: leave them out \(http:\/\/10\.0\.0\.5:8080\)/);
    expect(e.message).not.toMatch(/s3cret|admin/);
  });

  it.each(['http://10.0.0.1:8080', 'https://leader.example.com/api', 'grpc://svc.local:50051', 'leader.internal:8080', '[fd00::1]:8080', '10.0.0.1:1', 'http://10.0.0.1:65535', 'http://10.0.0.1:8080/a:1', 'http://10.0.0.1:8080/a@b', 'http://127.0.0.1:8080', 'localhost:8080', 'my_host:8080', 'http://my_host:8080', 'Worker-3.Internal:8080', 'grpc://münchen.de:50051', 'grpc://[fd00::1]:50051', 'redis://10.0.0.5:6379'])('takes %s', (advertise) => {
    expect(advertising(advertise).options.advertise).toBe(advertise);
  });
});

describe('holderAddress on the lease', () => {
  it('a direct acquisition writes the address with the term, and the release removes it', async () => {
    const L = 'addr-direct';
    // on a clock the test moves, only while it waits for a to lead: no renew deadline passes before
    // the row is read, however long a busy machine takes. (Before: the machine's clock and FAST's
    // 1.5 s renew deadline: a stall past it released the term before the read.)
    const { client, clock, drive } = driven();
    const a = startElector(t, new Log(), 'a', { leaseName: L, mode: 'NoCoordination', platform: 'none', advertise: A, clockSync: 'none', clock }, { client });
    await drive(() => a.elector.isLeader());
    expect(await row(L)).toMatchObject({ holderIdentity: 'a', holderAddress: A, electedBy: 'self' });
    await a.stop();
    client.destroy();
    const released = (await row(L))!;
    expect(released.holderIdentity).toBeUndefined();
    expect(released).not.toHaveProperty('holderAddress');
  });

  it('a term stopped at its renew deadline is still released by the stop (NoCoordination, releaseOnCancel), its address with it', async () => {
    const L = 'addr-deadline-stop';
    // a busy machine: a's renewals go unanswered past its renew deadline (here refused before they
    // are sent, so none lands), so a stops leading while its term stands on the row. Its stop then
    // gives the term up as a leader's does (client-go releases a lease it is still the holder of
    // after a failed renew loop), rather than leave it to run out with no one leading it.
    const { client, clock, drive } = driven();
    let refuseRenewals = false;
    leaseUpdates(client, async (send) => {
      if (refuseRenewals) throw Object.assign(new Error('throttled'), { name: 'ThrottlingException', $metadata: {} });
      return send();
    });
    const log = new Log();
    const a = startElector(t, log, 'a', { leaseName: L, mode: 'NoCoordination', platform: 'none', advertise: A, clockSync: 'none', clock }, { client });
    await drive(() => a.elector.isLeader());
    refuseRenewals = true;
    await drive(() => log.of('stopped', 'a').length > 0);
    expect(log.of('stopped', 'a')).toMatchObject([{ reason: 'renewDeadline' }]);
    expect(await row(L)).toMatchObject({ holderIdentity: 'a', holderAddress: A });
    refuseRenewals = false;
    await a.stop();
    client.destroy();
    const released = (await row(L))!;
    expect(released.holderIdentity).toBeUndefined();
    expect(released).not.toHaveProperty('holderAddress');
  });

  it("a leader whose loop stalled past its renew deadline stops ('renewDeadline') at its next step, never renews: the step's timer, due first, fires before the deadline's", async () => {
    const L = 'addr-stall';
    // a busy machine: the event loop blocked past a's renew deadline, so its overdue timers fire in the
    // order they were due, its next step's (a renewal's turn) before the deadline's
    const { client, clock, drive, stall } = driven();
    let stalled = false;
    let renewalsAfter = 0;
    leaseUpdates(client, (send) => {
      if (stalled) renewalsAfter++;
      return send();
    });
    const log = new Log();
    const a = startElector(t, log, 'a', { leaseName: L, mode: 'NoCoordination', platform: 'none', advertise: A, clockSync: 'none', clock }, { client });
    await drive(() => a.elector.isLeader());
    stalled = true;
    stall(FAST.renewDeadlineMs + 500);
    await drive(() => log.of('stopped', 'a').length > 0 || renewalsAfter > 0);
    expect(renewalsAfter).toBe(0);
    expect(log.of('stopped', 'a')).toMatchObject([{ reason: 'renewDeadline' }]);
    await a.stop();
    client.destroy();
  });

  it('a take in doubt (landed, its answer lost) is released by the stop, its address with it (NoCoordination, releaseOnCancel)', async () => {
    const L = 'addr-take-doubt';
    // a's take lands, but its answer is lost (a timeout, a dropped connection): its step fails, and
    // run() is cancelled before the next. The row names a in a term nobody leads; its stop reads the
    // lease and releases it, rather than leave it to run out, a lease duration leaderless.
    const { client, clock, drive } = driven();
    let lost = 0;
    leaseUpdates(client, async (send) => {
      const out = await send();
      if (lost++ === 0) throw Object.assign(new Error('socket hang up'), { name: 'TimeoutError', $metadata: {} });
      return out;
    });
    const errors: Error[] = [];
    const a = startElector(t, new Log(), 'a', { leaseName: L, mode: 'NoCoordination', platform: 'none', advertise: A, clockSync: 'none', clock }, { client, errors });
    await drive(() => errors.length > 0); // the lost answer reported: its step failed, the loop naps its backoff
    expect(a.elector.isLeader()).toBe(false);
    expect(await row(L)).toMatchObject({ holderIdentity: 'a', holderAddress: A }); // the take landed
    await a.stop();
    client.destroy();
    const released = (await row(L))!;
    expect(released.holderIdentity).toBeUndefined();
    expect(released).not.toHaveProperty('holderAddress');
  });

  it('a take over a term that ran out writes the taker’s address or none, never the previous holder’s', async () => {
    const L = 'addr-take';
    // x held the lease with an address, and stopped renewing long ago (a crash)
    const old = Date.now() - 60_000;
    await leases.write(LeaseStore.readOf(L, undefined), { set: { holderIdentity: 'x', holderInstance: 'x_1', holderAddress: 'http://10.0.0.9:8080', acquireTime: old, renewTime: old, leaseDurationSeconds: 2, leaseTransitions: 0, fencingToken: 5 } });
    const { client, clock, drive } = driven(); // as above: the row read while b's term stands
    const b = startElector(t, new Log(), 'b', { leaseName: L, mode: 'NoCoordination', platform: 'none', clockSync: 'none', clock }, { client }); // no advertise
    await drive(() => b.elector.isLeader());
    const taken = (await row(L))!;
    expect(taken).toMatchObject({ holderIdentity: 'b', lastHolderIdentity: 'x' });
    expect(taken).not.toHaveProperty('holderAddress');
    await b.stop();
    client.destroy();
  });

  it('the coordinator’s election writes the winner’s address from its candidate row; the designated successor’s take writes its own', async () => {
    const L = 'addr-succession';
    const log = new Log();
    const coord = coordinatorLoop(coordinatorDeps(t.client, t.names, { config: { ackWindowMs: 500, electedLeaseDurationSeconds: 2 } }), L);
    const crashing = crashable();
    // STEADY: a's term outlives a busy machine's stall (on FAST's 1.5 s renew deadline, on the
    // machine's clock, a stall could end it before b is named, as in the hand-off test below)
    const a = startElector(t, log, 'a', { leaseName: L, platform: 'none', advertise: A, ...STEADY }, { client: crashing.client, versions: ['1.30.0', '1.30.0'] });
    await waitFor('a to lead', () => a.elector.isLeader());
    expect(await row(L)).toMatchObject({ holderIdentity: 'a', holderAddress: A, electedBy: 'coordinator' });
    expect((await new CandidateStore(t.client, t.names.candidates).read(L, 'a')).item).toMatchObject({ address: A });
    const b = startElector(t, log, 'b', { leaseName: L, platform: 'none', advertise: B, ...STEADY }, { versions: ['1.31.0', '1.31.0'] });
    await waitFor('b named successor', async () => (await row(L))?.successor === 'b');
    // nobody but the two workers writes the lease from here on. (Before: the coordinator ran on, and
    // its term-end timer elected b itself clockSkewMs, 1 s, after a's term ran out: a b slower than
    // that on a busy machine was elected by the coordinator, not as the successor.)
    await coord.stop();
    crashing.crash(); // a stops renewing; b takes the lease at its term's end, as the designated successor
    await waitFor('b to lead', () => b.elector.isLeader());
    const taken = (await row(L))!;
    expect(taken).toMatchObject({ holderIdentity: 'b', electedBy: 'successor', holderAddress: B, lastHolderIdentity: 'a' });
    await b.stop();
    await a.stop();
    crashing.client.destroy();
  });

  it('a hand-off writes the heir’s address from its candidate row, or removes the giver’s', async () => {
    const L = 'addr-handoff';
    const log = new Log();
    const coord = coordinatorLoop(coordinatorDeps(t.client, t.names, { config: { ackWindowMs: 500, electedLeaseDurationSeconds: 2 } }), L);
    // STEADY: a's term outlives a busy machine's stall (on FAST's 1.5 s renew deadline it could be
    // given back and taken by b as the successor: a's stop would then hand nothing over)
    const a = startElector(t, log, 'a', { leaseName: L, platform: 'none', advertise: A, ...STEADY }, { versions: ['1.30.0', '1.30.0'] });
    await waitFor('a to lead', () => a.elector.isLeader());
    const b = startElector(t, log, 'b', { leaseName: L, platform: 'none', ...STEADY }, { versions: ['1.31.0', '1.31.0'] }); // no advertise
    await waitFor('b named successor', async () => (await row(L))?.successor === 'b');
    await coord.stop(); // nobody but the two workers writes the lease from here on
    const token = a.elector.fencingToken;
    expect(await row(L), 'a still holds the term it leads').toMatchObject({ holderIdentity: 'a', fencingToken: token, successor: 'b' });
    await a.stop(); // cancelled with an heir: hands the term over in one write
    expect(log.of('stopped', 'a').at(-1)).toMatchObject({ reason: 'cancelled', token });
    const handed = (await row(L))!;
    expect(handed).toMatchObject({ holderIdentity: 'b', electedBy: 'successor', lastHolderIdentity: 'a' });
    expect(handed).not.toHaveProperty('holderAddress');
    await waitFor('b to lead', () => b.elector.isLeader()); // it confirms the handed term: a renewal, which leaves the address alone
    expect(await row(L)).not.toHaveProperty('holderAddress');
    await b.stop();
  });

  it.each([
    ['with the heir’s address', B],
    ['without one: the giver’s is removed', undefined],
  ])('LeaseStore.handOver: %s', async (_what, address) => {
    const L = `addr-store-handoff-${address ? 'with' : 'without'}`;
    const now = Date.now();
    const held = await leases.write(LeaseStore.readOf(L, undefined), {
      set: { holderIdentity: 'a', holderInstance: 'a_1', holderAddress: A, acquireTime: now, renewTime: now, leaseDurationSeconds: FAST.leaseDurationMs / 1000, leaseTransitions: 0, fencingToken: 5, successor: 'b', successorInstance: 'b_1' },
    });
    const given = (await leases.handOver(L, { holderIdentity: 'a', fencingToken: held.fencingToken }, { name: 'b', instance: 'b_1', address }, now + 1, 1, held.leaseTransitions))!;
    expect(given).toMatchObject({ holderIdentity: 'b', holderInstance: 'b_1' });
    expect(given.holderAddress).toBe(address);
    expect(await row(L)).toEqual(given);
  });
});

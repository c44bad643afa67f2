/**
 * A worker started while its tables are still being made (`cdk deploy` or local mode creating them):
 * DynamoDB answers data-plane requests on a CREATING table with ResourceNotFoundException, as for a
 * table that is not there. A start-up looks at the tables (DescribeTable) before it gives up: one
 * CREATING is waited for, a `tables` option naming no table still rejects at once, and where
 * DescribeTable is not granted the start-up goes on trying for TABLE_WAIT_MS, then rejects. DynamoDB
 * Local never shows CREATING, so a loopback proxy in front of it answers as AWS does
 * (test/proxy.ts, creatingTableProxy). getLeader, withLease, tryWithLease and listIdentities, single calls, wait
 * the same way, until their `signal` aborts. Time is the test's: each wait asked for moves it at once.
 */
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { Clock } from '../../lib/clock.js';
import { localClient } from '../../lib/local/dynamodb-local.js';
import { SESSION_COMPONENT } from '../../lib/schemas/identity.js';
import { IdentityLeaseHeartbeat, LeaderElector, LeaseCandidate, Session, TableNotFoundError, getLeader, listIdentities, tryWithLease, withLease, type IdentityListing, type RunOnce } from '../../lib/sdk/index.js';
import { TABLE_WAIT_MS } from '../../lib/sdk/options.js';
import { ValidationError } from '../../lib/schemas/validation.js';
import { IdentityStore } from '../../lib/stores/identity-store.js';
import { LeaseStore } from '../../lib/stores/lease-store.js';
import { creatingTableProxy, drivenClock } from '../proxy.js';
import { testTables, type TestTables } from '../support.js';

let t: TestTables;
beforeAll(async () => void (t = await testTables('creating')));

/**
 * A TableNotFoundError of `subject` for `table`, which DescribeTable showed ACTIVE as a request on
 * it answered "not found" again: said so, not "does not exist" nor "create them"; its fields as
 * ever (the tables, DynamoDB's error, not retrying).
 */
function activeNotFound(e: unknown, subject: string, table: string): void {
  expect(e).toBeInstanceOf(TableNotFoundError);
  const error = e as TableNotFoundError;
  // before: "<subject>: a table it uses does not exist where its DynamoDB client points … or create them: …"
  expect(error.message.startsWith(`${subject}: table ${table} answered "not found" again after DescribeTable showed it ACTIVE (DynamoDB said: Requested resource not found), so it is not a table being created`), error.message).toBe(true);
  expect(error.message).not.toMatch(/does not exist|create them/);
  expect(error.message).toContain('check the endpoint and Region its DynamoDB client points at');
  expect(error).toMatchObject({ subject, tables: t.names, retrying: false });
  expect(error.cause.name).toBe('ResourceNotFoundException');
}
afterAll(async () => t.drop());

const candidacy = { emulationVersion: '1.0.0', binaryVersion: '1.0.0' };
/** Stamped with the test's clock, not DynamoDB's (its Date headers are the machine's, which the test's clock is not). */
const clockSync = 'none' as const;
type Role = 'candidates' | 'identities';
const objects: [string, Role, (client: ReturnType<typeof localClient>, tables: string | TestTables['names'], clock: Clock, onError: (e: Error) => void) => { run(s: AbortSignal): Promise<void>; ready: Promise<unknown> }][] = [
  // coordinated: its candidacy's start-up
  ['LeaderElector', 'candidates', (client, tables, clock, onError) => new LeaderElector({ client, tables, clock, clockSync, onError, leaseName: 'job', identity: 'w1', candidacy, platform: 'none', callbacks: { onStartedLeading: () => undefined } })],
  ['LeaseCandidate', 'candidates', (client, tables, clock, onError) => new LeaseCandidate({ client, tables, clock, clockSync, onError, leaseName: 'job', name: 'w1', ...candidacy })],
  ['IdentityLeaseHeartbeat', 'identities', (client, tables, clock, onError) => new IdentityLeaseHeartbeat({ client, tables, clock, clockSync, onError, component: 'scheduler' })],
  ['Session', 'identities', (client, tables, clock, onError) => new Session({ client, tables, clock, clockSync, onError })],
];

/** Lease `lease` held by `holder` on session `session` of process `process`, whose row (an hour long) was renewed at `renewedAt`; `term`: the lease's own stamps, duration and token. */
async function heldOnSession(lease: string, on: { holder: string; session: string; process: string; renewedAt: number }, term: { acquireTime: number; renewTime: number; leaseDurationSeconds: number; fencingToken: number }): Promise<void> {
  await new IdentityStore(t.client, t.names.identities).write({ key: { component: SESSION_COMPONENT, name: on.session }, item: undefined, revision: 0 }, { set: { holderIdentity: `${on.session}_1`, process: on.process, hostname: 'web-1', leaseDurationSeconds: 3_600, acquireTime: on.renewedAt, renewTime: on.renewedAt } });
  await new LeaseStore(t.client, t.names.leases).write(LeaseStore.readOf(lease, undefined), { set: { holderIdentity: on.holder, holderInstance: `${on.holder}_1@${on.process}`, session: on.session, leaseTransitions: 1, ...term } });
}

/**
 * Runs `test` with a client through a CREATING-table proxy in front of DynamoDB Local (`creatingTableProxy`'s
 * `table` and `options`), on a clock driven while a request is in flight; closes both after.
 */
async function throughProxy(
  table: Parameters<typeof creatingTableProxy>[1],
  options: Parameters<typeof creatingTableProxy>[2],
  test: (x: { proxy: Awaited<ReturnType<typeof creatingTableProxy>>; client: ReturnType<typeof localClient>; c: ReturnType<typeof drivenClock> }) => Promise<void>,
): Promise<void> {
  const proxy = await creatingTableProxy(inject('ddbEndpoint'), table, options);
  const client = localClient(proxy.endpoint);
  try {
    await test({ proxy, client, c: drivenClock(() => proxy.inFlight() > 0) });
  } finally {
    client.destroy();
    await proxy.close();
  }
}

/** Runs `o` until `ready` settles, the clock driven meanwhile; how it settled, and the time it took on the clock. */
async function start(o: { run(s: AbortSignal): Promise<void>; ready: Promise<unknown> }, c: ReturnType<typeof drivenClock>) {
  const stop = new AbortController();
  let ran = false;
  const running = o.run(stop.signal).catch(() => undefined).finally(() => void (ran = true));
  let settled: { ok: boolean; error: unknown } | undefined;
  void o.ready.then(
    () => void (settled = { ok: true, error: undefined }),
    (error: unknown) => void (settled = { ok: false, error }),
  );
  await c.drive(() => settled !== undefined);
  const tookMs = c.waited();
  stop.abort();
  await c.drive(() => ran);
  await running;
  return { ...settled!, tookMs };
}

describe('a start-up whose table is still being created (CREATING)', () => {
  it.each(objects)('%s: waits while DescribeTable says CREATING, each try told to onError as a TableNotFoundError naming the tables; starts once the table answers', async (_, role, make) => {
    await throughProxy(t.names[role], { describe: 'creating' }, async ({ proxy, client, c }) => {
      const errors: Error[] = [];
      proxy.creating(6);
      const r = await start(make(client, t.names, c.clock, (e) => void errors.push(e)), c);
      // before: rejected at the first ResourceNotFoundException with a TableNotFoundError
      expect(r.error).toBeUndefined();
      expect(r.ok).toBe(true);
      expect(proxy.notFound()).toBe(6);
      expect(proxy.described()).toBeGreaterThanOrEqual(6); // looked at after each
      expect(errors).toHaveLength(6);
      for (const e of errors) {
        expect(e).toBeInstanceOf(TableNotFoundError);
        expect((e as TableNotFoundError).retrying).toBe(true);
        expect(e.message).toContain(t.names[role]);
      }
    });
  });

  it.each(objects)('%s: DescribeTable not granted: tries again for TABLE_WAIT_MS from the first missing table, told to onError, then rejects with a TableNotFoundError', async (_, role, make) => {
    await throughProxy(t.names[role], { describe: 'denied' }, async ({ proxy, client, c }) => {
      const errors: Error[] = [];
      proxy.creating(1_000);
      const r = await start(make(client, t.names, c.clock, (e) => void errors.push(e)), c);
      expect(r.ok).toBe(false);
      expect(r.error).toBeInstanceOf(TableNotFoundError);
      expect((r.error as TableNotFoundError).retrying).toBe(false);
      expect(r.tookMs).toBeGreaterThanOrEqual(TABLE_WAIT_MS);
      expect(r.tookMs).toBeLessThan(TABLE_WAIT_MS + 10_000); // within a retry's backoff after the window
      expect(errors.length).toBeGreaterThanOrEqual(3);
      expect(errors.every((e) => e instanceof TableNotFoundError && e.retrying)).toBe(true);
    });
  });

  it.each(objects)('%s: DescribeTable says ACTIVE, yet the request finds no table, twice: rejects after one more try with a TableNotFoundError saying so, not "does not exist"', async (_, role, make) => {
    await throughProxy(t.names[role], { describe: 'active' }, async ({ proxy, client, c }) => {
      proxy.creating(1_000);
      const o = make(client, t.names, c.clock, () => undefined);
      const r = await start(o, c);
      expect(r.ok).toBe(false);
      expect(proxy.notFound()).toBe(2);
      activeNotFound(r.error, (r.error as TableNotFoundError).subject, t.names[role]);
    });
  });

  it.each(objects)('%s: a `tables` option naming no table (DescribeTable finds none either) still rejects at once, with no wait', async (_, _role, make) => {
    // the proxy only to see when a request is in flight: it passes everything on
    await throughProxy('none', { describe: 'creating' }, async ({ client, c }) => {
      const errors: Error[] = [];
      const r = await start(make(client, 'no-such-deployment', c.clock, (e) => void errors.push(e)), c);
      expect(r.error).toBeInstanceOf(TableNotFoundError);
      expect(r.tookMs).toBe(0);
      expect(errors).toEqual([]);
    });
  });
});

describe('getLeader on a table still being created (CREATING)', () => {
  const T0 = 1_800_000_000_000; // the driven clock's start: the seeded term is judged by it
  const HELD = 'held-on-session';
  beforeAll(async () => {
    // a term held on a session, so that getLeader reads the identities table too
    await heldOnSession(HELD, { holder: 'a1', session: 's-1', process: 'p1', renewedAt: T0 }, { acquireTime: T0, renewTime: T0, leaseDurationSeconds: 3_600, fencingToken: 42 });
  });

  /** getLeader of `lease` until it settles, the clock driven meanwhile: how it settled, and the time it took on the clock. */
  async function call(lease: string, tables: string | TestTables['names'], c: ReturnType<typeof drivenClock>, client: ReturnType<typeof localClient>, signal?: AbortSignal) {
    let settled: { ok: boolean; value: unknown } | undefined;
    void getLeader(lease, { client, tables, clock: c.clock, clockSync, ...(signal ? { signal } : {}) }).then(
      (value) => void (settled = { ok: true, value }),
      (value: unknown) => void (settled = { ok: false, value }),
    );
    await c.drive(() => settled !== undefined);
    return { ...settled!, tookMs: c.waited() };
  }

  it.each([
    ['leases', 'job', null],
    ['identities', HELD, { holder: 'a1', fencingToken: 42 }],
  ] as const)('the %s table: waits while DescribeTable says CREATING, then answers', async (role, lease, want) => {
    await throughProxy(t.names[role], { describe: 'creating' }, async ({ proxy, client, c }) => {
      proxy.creating(6);
      const r = await call(lease, t.names, c, client);
      // before: rejected at the first ResourceNotFoundException with a TableNotFoundError
      expect(r.ok, String(r.value)).toBe(true);
      if (want === null) expect(r.value).toBeNull();
      else expect(r.value).toMatchObject(want);
      expect(proxy.notFound()).toBe(6);
      expect(proxy.described()).toBeGreaterThanOrEqual(6); // looked at after each
      expect(r.tookMs).toBeGreaterThan(0); // backed off between the tries, on the caller's clock
    });
  });

  it('DescribeTable not granted: tries again for TABLE_WAIT_MS from the first missing table, then rejects with a TableNotFoundError', async () => {
    await throughProxy(t.names.leases, { describe: 'denied' }, async ({ proxy, client, c }) => {
      proxy.creating(1_000);
      const r = await call('job', t.names, c, client);
      expect(r.ok).toBe(false);
      expect(r.value).toBeInstanceOf(TableNotFoundError);
      expect((r.value as TableNotFoundError).message).toMatch(/^getLeader of lease "job": a table it uses does not exist/);
      expect(r.tookMs).toBeGreaterThanOrEqual(TABLE_WAIT_MS);
      expect(r.tookMs).toBeLessThan(TABLE_WAIT_MS + 10_000); // within a retry's backoff after the window
      expect(proxy.notFound()).toBeGreaterThanOrEqual(3);
    });
  });

  it('"not found" on the leases table while the identities table, unrelated, is CREATING: only the table the request named is looked at', async () => {
    await throughProxy(t.names.leases, { describe: 'active', creatingToo: [t.names.identities] }, async ({ proxy, client, c }) => {
      proxy.creating(1_000);
      const stop = new AbortController();
      c.clock.setTimer(5 * TABLE_WAIT_MS, () => stop.abort(new Error('stopped by the test'))); // before: waited on the identities table until then
      const r = await call('job', t.names, c, client, stop.signal);
      expect(r.value).toBeInstanceOf(TableNotFoundError);
      expect(proxy.notFound()).toBe(2); // tried once more after DescribeTable said ACTIVE, then given up on
      expect(r.tookMs).toBeLessThan(5_000);
    });
  });

  it('DescribeTable says ACTIVE, yet the request finds no table, twice: rejects after one more try with a TableNotFoundError saying so, not "does not exist"', async () => {
    await throughProxy(t.names.leases, { describe: 'active' }, async ({ proxy, client, c }) => {
      proxy.creating(1_000);
      const r = await call('job', t.names, c, client);
      expect(r.ok).toBe(false);
      expect(proxy.notFound()).toBe(2);
      activeNotFound(r.value, 'getLeader of lease "job"', t.names.leases);
    });
  });

  it('a `tables` option naming no table (DescribeTable finds none either) still rejects at once, with no wait', async () => {
    await throughProxy('none', { describe: 'creating' }, async ({ client, c }) => {
      const r = await call('job', 'no-such-deployment', c, client);
      expect(r.ok).toBe(false);
      expect(r.value).toBeInstanceOf(TableNotFoundError);
      expect(r.tookMs).toBe(0);
    });
  });

  it('its `signal` ends the wait: getLeader rejects with the signal\'s reason', async () => {
    await throughProxy(t.names.leases, { describe: 'creating' }, async ({ proxy, client, c }) => {
      proxy.creating(1_000_000); // never made
      const stop = new AbortController();
      const reason = new Error('gave up waiting');
      // the caller's bound on the clock getLeader runs on (AbortSignal.timeout(ms) on the machine's)
      c.clock.setTimer(30_000, () => stop.abort(reason));
      const r = await call('job', t.names, c, client, stop.signal);
      expect(r.ok).toBe(false);
      expect(r.value).toBe(reason);
      expect(r.tookMs).toBe(30_000);
      expect(proxy.notFound()).toBeGreaterThanOrEqual(3);
      // already aborted: rejects at once, nothing sent
      const sent = proxy.notFound();
      const again = await call('job', t.names, c, client, stop.signal);
      expect(again).toMatchObject({ ok: false, value: reason });
      expect(proxy.notFound()).toBe(sent);
    });
  });

  it('a `signal` that is no AbortSignal is a ValidationError naming it', async () => {
    const e = await getLeader('job', { client: t.client, tables: t.names, signal: 'soon' as never }).then(() => undefined, (x: unknown) => x);
    expect(e).toBeInstanceOf(ValidationError);
    expect((e as ValidationError).issues).toEqual([expect.objectContaining({ field: 'signal', message: expect.stringMatching(/AbortSignal/) })]);
  });
});

describe('withLease and tryWithLease on a table still being created (CREATING)', () => {
  type Call = typeof withLease;
  const calls = { withLease, tryWithLease } as const;
  let n = 0;

  /** `call` of a new lease until it settles, the clock driven meanwhile: how it settled, whether its function ran, and the time it took on the clock. */
  async function run(call: Call, tables: string | TestTables['names'], c: ReturnType<typeof drivenClock>, client: ReturnType<typeof localClient>, extra: { mode?: 'auto' | 'NoCoordination'; signal?: AbortSignal; runOnce?: RunOnce; lease?: string; onError?: (e: Error) => void } = {}) {
    let settled: { ok: boolean; value: unknown } | undefined;
    let ran = false;
    const lease = extra.lease ?? `wl-${++n}`;
    void call(lease, async () => void (ran = true), { client, tables, clock: c.clock, clockSync, mode: extra.mode ?? 'NoCoordination', ...(extra.signal ? { signal: extra.signal } : {}), ...(extra.runOnce ? { runOnce: extra.runOnce } : {}), ...(extra.onError ? { onError: extra.onError } : {}) }).then(
      (value) => void (settled = { ok: true, value }),
      (value: unknown) => void (settled = { ok: false, value }),
    );
    await c.drive(() => settled !== undefined);
    return { ...settled!, ran, lease, tookMs: c.waited() };
  }

  it.each([
    ['withLease', 'leases', 'NoCoordination'],
    ['tryWithLease', 'leases', 'NoCoordination'],
    // mode auto reads the lease's candidates too (first come, first served when it has none)
    ['withLease', 'candidates', 'auto'],
    ['tryWithLease', 'candidates', 'auto'],
  ] as const)('%s, the %s table: waits while DescribeTable says CREATING, then takes the lease and runs the function', async (name, role, mode) => {
    await throughProxy(t.names[role], { describe: 'creating' }, async ({ proxy, client, c }) => {
      proxy.creating(6);
      const r = await run(calls[name], t.names, c, client, { mode });
      // before: rejected at the first ResourceNotFoundException with a TableNotFoundError
      expect(r.ok, String(r.value)).toBe(true);
      expect(r.value).toMatchObject({ status: 'ran' });
      expect(r.ran).toBe(true);
      expect(proxy.notFound()).toBe(6);
      expect(proxy.described()).toBeGreaterThanOrEqual(6); // looked at after each
      expect(r.tookMs).toBeGreaterThan(0); // backed off between the tries, on the caller's clock
    });
  });

  it.each([
    ['withLease', { window: 'migration-1' }],
    ['tryWithLease', { window: 'migration-1' }],
    ['withLease', { every: 'day' }],
  ] as const)('%s, NoCoordination with runOnce %j: the candidates table (the window row the term claims) is waited for, then the function runs', async (name, runOnce) => {
    await throughProxy(t.names.candidates, { describe: 'creating' }, async ({ proxy, client, c }) => {
      proxy.creating(6);
      const r = await run(calls[name], t.names, c, client, { mode: 'NoCoordination', runOnce });
      // before: nothing before the take looked at the candidates table, the window's claim met
      // its ResourceNotFoundException in the term and the call rejected with it
      expect(r.ok, String(r.value)).toBe(true);
      expect(r.value).toMatchObject({ status: 'ran', window: expect.any(String) });
      expect(r.ran).toBe(true);
      expect(proxy.notFound()).toBe(6);
      expect(proxy.described()).toBeGreaterThanOrEqual(6); // looked at after each
      expect(r.tookMs).toBeGreaterThan(0); // backed off between the tries, on the caller's clock
    });
  });

  it("auto, the lease's own strategy NoCoordination (its candidates not queried), with runOnce: the candidates table is waited for, then the function runs", async () => {
    const lease = 'wl-strategy';
    await new LeaseStore(t.client, t.names.leases).write(LeaseStore.readOf(lease, undefined), { set: { strategy: 'NoCoordination', leaseDurationSeconds: 15, leaseTransitions: 0, fencingToken: 1 } });
    await throughProxy(t.names.candidates, { describe: 'creating' }, async ({ proxy, client, c }) => {
      proxy.creating(6);
      const r = await run(withLease, t.names, c, client, { mode: 'auto', runOnce: { window: 'migration-1' }, lease });
      // before: rejected in the term with the window claim's ResourceNotFoundException
      expect(r.ok, String(r.value)).toBe(true);
      expect(r.value).toMatchObject({ status: 'ran', window: 'migration-1' });
      expect(proxy.notFound()).toBe(6);
    });
  });

  describe('tryWithLease of a lease held on a session: the identities table (the session row that judges the term)', () => {
    const T0 = 1_800_000_000_000; // the driven clock's start: the seeded term is judged by it
    const lease = 'wl-on-session';
    beforeAll(async () => {
      // the session renewed now; the lease's own stamp an hour old: live only by its session (for
      // the lease's minute from the session's stamp, longer than the wait for the table)
      await heldOnSession(lease, { holder: 'a2', session: 's-2', process: 'p2', renewedAt: T0 }, { acquireTime: T0 - 3_600_000, renewTime: T0 - 3_600_000, leaseDurationSeconds: 60, fencingToken: 7 });
    });

    it('waits while DescribeTable says CREATING, then judges the term by its session: busy at once, nothing told to onError', async () => {
      await throughProxy(t.names.identities, { describe: 'creating' }, async ({ proxy, client, c }) => {
        const errors: Error[] = [];
        proxy.creating(6);
        const r = await run(tryWithLease, t.names, c, client, { lease, onError: (e) => void errors.push(e) });
        // before: the session row's ResourceNotFoundException told to onError, the term judged by the
        // lease's own stamp (an hour old: stale), and the call waited for a lease its holder renews
        expect(r.ok, String(r.value)).toBe(true);
        expect(r.value).toEqual({ status: 'busy', holder: 'a2' });
        expect(r.ran).toBe(false);
        expect(errors).toEqual([]);
        expect(proxy.notFound()).toBe(6);
        expect(proxy.described()).toBeGreaterThanOrEqual(6); // looked at after each
        expect(r.tookMs).toBeGreaterThan(0); // backed off between the tries, on the caller's clock
        expect(r.tookMs).toBeLessThan(60_000); // not the wait for the lease (waitMs: two lease durations)
      });
    });

    it('an identities table DescribeTable does not find either: rejects at once with a TableNotFoundError naming the tables, as getLeader', async () => {
      // the proxy only to see when a request is in flight: it passes everything on
      await throughProxy('none', { describe: 'creating' }, async ({ client, c }) => {
        const errors: Error[] = [];
        const r = await run(tryWithLease, { ...t.names, identities: 'no-such-identities' }, c, client, { lease, onError: (e) => void errors.push(e) });
        // before: the missing table told to onError, the term judged by the lease's own stamp (stale),
        // and a run started for a lease its holder renews
        expect(r.ok).toBe(false);
        expect(r.value).toBeInstanceOf(TableNotFoundError);
        expect((r.value as TableNotFoundError).message).toMatch(/^tryWithLease of lease "wl-on-session": a table it uses does not exist .*no-such-identities/);
        expect(r.ran).toBe(false);
        expect(r.tookMs).toBe(0);
        expect(errors).toEqual([]);
      });
    });

    it('its `signal` ends the wait: tryWithLease rejects with the signal\'s reason, the function never run', async () => {
      await throughProxy(t.names.identities, { describe: 'creating' }, async ({ proxy, client, c }) => {
        const errors: Error[] = [];
        proxy.creating(1_000_000); // never made
        const stop = new AbortController();
        const reason = new Error('gave up waiting');
        c.clock.setTimer(30_000, () => stop.abort(reason));
        const r = await run(tryWithLease, t.names, c, client, { lease, signal: stop.signal, onError: (e) => void errors.push(e) });
        expect(r.ok).toBe(false);
        expect(r.value).toBe(reason);
        expect(r.ran).toBe(false);
        expect(r.tookMs).toBe(30_000);
        // before: the same rejection, but only after the unread session row was told to onError and
        // a run started on the lease's own stamp (its elector then told each missing table too)
        expect(errors).toEqual([]);
        expect(proxy.notFound()).toBeGreaterThanOrEqual(3);
      });
    });
  });

  it("its `signal` ends the window claim's wait for the candidates table: withLease rejects with the signal's reason, the function never run, the lease given up", async () => {
    await throughProxy(t.names.candidates, { describe: 'creating' }, async ({ proxy, client, c }) => {
      proxy.creating(1_000_000); // never made
      const stop = new AbortController();
      const reason = new Error('gave up waiting');
      c.clock.setTimer(30_000, () => stop.abort(reason));
      const r = await run(withLease, t.names, c, client, { runOnce: { window: 'migration-2' }, signal: stop.signal });
      // before: rejected at the claim's first answer with its ResourceNotFoundException
      expect(r.ok).toBe(false);
      expect(r.value).toBe(reason);
      expect(r.ran).toBe(false);
      expect(r.tookMs).toBe(30_000);
      expect(proxy.notFound()).toBeGreaterThanOrEqual(3);
      expect((await new LeaseStore(t.client, t.names.leases).read(r.lease)).item?.holderIdentity).toBeUndefined();
    });
  });

  it('DescribeTable not granted: tries again for TABLE_WAIT_MS from the first missing table, then rejects with a TableNotFoundError', async () => {
    await throughProxy(t.names.leases, { describe: 'denied' }, async ({ proxy, client, c }) => {
      proxy.creating(1_000);
      const r = await run(withLease, t.names, c, client);
      expect(r.ok).toBe(false);
      expect(r.value).toBeInstanceOf(TableNotFoundError);
      expect((r.value as TableNotFoundError).message).toMatch(new RegExp(`^withLease of lease "${r.lease}": a table it uses does not exist`));
      expect(r.ran).toBe(false);
      expect(r.tookMs).toBeGreaterThanOrEqual(TABLE_WAIT_MS);
      expect(r.tookMs).toBeLessThan(TABLE_WAIT_MS + 10_000); // within a retry's backoff after the window
      expect(proxy.notFound()).toBeGreaterThanOrEqual(3);
    });
  });

  it('DescribeTable says ACTIVE, yet the request finds no table, twice: withLease rejects after one more try with a TableNotFoundError saying so, not "does not exist"', async () => {
    await throughProxy(t.names.leases, { describe: 'active' }, async ({ proxy, client, c }) => {
      proxy.creating(1_000);
      const r = await run(withLease, t.names, c, client);
      expect(r.ok).toBe(false);
      expect(r.ran).toBe(false);
      expect(proxy.notFound()).toBe(2);
      activeNotFound(r.value, `withLease of lease "${r.lease}"`, t.names.leases);
    });
  });

  it.each(['withLease', 'tryWithLease'] as const)('%s: a `tables` option naming no table (DescribeTable finds none either) still rejects at once, with no wait', async (name) => {
    await throughProxy('none', { describe: 'creating' }, async ({ client, c }) => {
      const r = await run(calls[name], 'no-such-deployment', c, client, { mode: 'auto' });
      expect(r.ok).toBe(false);
      expect(r.value).toBeInstanceOf(TableNotFoundError);
      expect((r.value as TableNotFoundError).message).toMatch(new RegExp(`^${name} of lease "${r.lease}": a table it uses does not exist`));
      expect(r.tookMs).toBe(0);
    });
  });

  it('its `signal` ends the wait: withLease rejects with the signal\'s reason, the function never run', async () => {
    await throughProxy(t.names.leases, { describe: 'creating' }, async ({ proxy, client, c }) => {
      proxy.creating(1_000_000); // never made
      const stop = new AbortController();
      const reason = new Error('gave up waiting');
      c.clock.setTimer(30_000, () => stop.abort(reason));
      const r = await run(withLease, t.names, c, client, { signal: stop.signal });
      expect(r.ok).toBe(false);
      expect(r.value).toBe(reason);
      expect(r.ran).toBe(false);
      expect(r.tookMs).toBe(30_000);
      expect(proxy.notFound()).toBeGreaterThanOrEqual(3);
    });
  });
});

describe('listIdentities on a table still being created (CREATING)', () => {
  const T0 = 1_800_000_000_000; // the driven clock's start: the seeded heartbeat is judged by it
  beforeAll(async () => {
    await new IdentityStore(t.client, t.names.identities).write({ key: { component: 'reporter', name: 'r-1' }, item: undefined, revision: 0 }, { set: { holderIdentity: 'r-1', hostname: 'web-1', leaseDurationSeconds: 3_600, acquireTime: T0, renewTime: T0 } });
  });

  /** listIdentities of `reporter` until it settles, the clock driven meanwhile: how it settled, and the time it took on the clock. */
  async function list(tables: string | TestTables['names'], c: ReturnType<typeof drivenClock>, client: ReturnType<typeof localClient>, signal?: AbortSignal) {
    let settled: { ok: boolean; value: unknown } | undefined;
    void listIdentities({ client, tables, component: 'reporter', clock: c.clock, clockSync, ...(signal ? { signal } : {}) }).then(
      (value) => void (settled = { ok: true, value }),
      (value: unknown) => void (settled = { ok: false, value }),
    );
    await c.drive(() => settled !== undefined);
    return { ...settled!, tookMs: c.waited() };
  }

  it('waits while DescribeTable says CREATING, then lists the component', async () => {
    await throughProxy(t.names.identities, { describe: 'creating' }, async ({ proxy, client, c }) => {
      proxy.creating(6);
      const r = await list(t.names, c, client);
      // before: rejected at the first ResourceNotFoundException
      expect(r.ok, String(r.value)).toBe(true);
      expect((r.value as IdentityListing).live.map((i) => i.name)).toEqual(['r-1']);
      expect(proxy.notFound()).toBe(6);
      expect(proxy.described()).toBeGreaterThanOrEqual(6); // looked at after each
      expect(r.tookMs).toBeGreaterThan(0); // backed off between the tries, on the caller's clock
    });
  });

  it('DescribeTable not granted: tries again for TABLE_WAIT_MS from the first missing table, then rejects with a TableNotFoundError', async () => {
    await throughProxy(t.names.identities, { describe: 'denied' }, async ({ proxy, client, c }) => {
      proxy.creating(1_000);
      const r = await list(t.names, c, client);
      expect(r.ok).toBe(false);
      // before: DynamoDB's bare ResourceNotFoundException, naming no table
      expect(r.value).toBeInstanceOf(TableNotFoundError);
      expect((r.value as TableNotFoundError).message).toMatch(/^listIdentities of component "reporter": a table it uses does not exist/);
      expect((r.value as TableNotFoundError).cause.name).toBe('ResourceNotFoundException');
      expect(r.tookMs).toBeGreaterThanOrEqual(TABLE_WAIT_MS);
      expect(r.tookMs).toBeLessThan(TABLE_WAIT_MS + 10_000); // within a retry's backoff after the window
      expect(proxy.notFound()).toBeGreaterThanOrEqual(3);
    });
  });

  it('DescribeTable says ACTIVE, yet the request finds no table, twice: rejects after one more try with a TableNotFoundError saying so, as getLeader', async () => {
    await throughProxy(t.names.identities, { describe: 'active' }, async ({ proxy, client, c }) => {
      proxy.creating(1_000);
      const r = await list(t.names, c, client);
      expect(r.ok).toBe(false);
      expect(proxy.notFound()).toBe(2);
      activeNotFound(r.value, 'listIdentities of component "reporter"', t.names.identities);
      expect(r.tookMs).toBeLessThan(5_000);
    });
  });

  it('a `tables` option naming no table (DescribeTable finds none either) rejects at once, with no wait, with a TableNotFoundError naming the tables', async () => {
    await throughProxy('none', { describe: 'creating' }, async ({ client, c }) => {
      const r = await list('no-such-deployment', c, client);
      expect(r.ok).toBe(false);
      // before: DynamoDB's bare ResourceNotFoundException, naming no table
      expect(r.value).toBeInstanceOf(TableNotFoundError);
      expect((r.value as TableNotFoundError).message).toMatch(/^listIdentities of component "reporter": a table it uses does not exist .*no-such-deployment-identities/);
      expect((r.value as TableNotFoundError).cause.name).toBe('ResourceNotFoundException');
      expect(r.tookMs).toBe(0);
    });
  });

  it('its `signal` ends the wait: listIdentities rejects with the signal\'s reason; one that is no AbortSignal is a ValidationError naming it', async () => {
    await throughProxy(t.names.identities, { describe: 'creating' }, async ({ proxy, client, c }) => {
      proxy.creating(1_000_000); // never made
      const stop = new AbortController();
      const reason = new Error('gave up waiting');
      c.clock.setTimer(30_000, () => stop.abort(reason));
      const r = await list(t.names, c, client, stop.signal);
      expect(r.ok).toBe(false);
      expect(r.value).toBe(reason);
      expect(r.tookMs).toBe(30_000);
      expect(proxy.notFound()).toBeGreaterThanOrEqual(3);
    });
    const e = await listIdentities({ client: t.client, tables: t.names, component: 'reporter', signal: 'soon' as never }).then(() => undefined, (x: unknown) => x);
    expect(e).toBeInstanceOf(ValidationError);
    expect((e as ValidationError).issues).toEqual([expect.objectContaining({ field: 'signal', message: expect.stringMatching(/AbortSignal/) })]);
  });
});

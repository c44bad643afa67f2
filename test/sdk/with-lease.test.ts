/**
 * withLease / tryWithLease on simulated time (sim/harness.ts): the real SDK over the
 * DynamoDB model, one machine per run, durations in simulated ms. Run-once windows and the fenced
 * marker on DynamoDB Local: test/sdk/with-lease-local.test.ts.
 */
import { GetItemCommand } from '@aws-sdk/client-dynamodb';
import { marshall, unmarshall } from '@aws-sdk/util-dynamodb';
import { describe, expect, it } from 'vitest';
import type { ElectionConfigInput } from '../../lib/schemas/config.js';
import { ValidationError } from '../../lib/schemas/validation.js';
import { PHASE_STEP_MS } from '../../lib/sdk/elector.js';
import { FencingError, fencedTransactWrite } from '../../lib/sdk/fencing.js';
import { aborted } from '../../lib/sdk/options.js';
import { requestBoundMs } from '../../lib/sdk/bounded-client.js';
import type { Push } from '../../lib/sdk/push.js';
import { Session } from '../../lib/sdk/session.js';
import { PERIODIC_WINDOWS, keyedWindowRow } from '../../lib/schemas/run-once.js';
import { LeaseLostError, tryWithLease, withLease, windowOf, type LeaseFn, type LeaseTerm, type WithLeaseOptions } from '../../lib/sdk/with-lease.js';
import { RunOnceStore } from '../../lib/stores/run-once-store.js';
import { FAST } from './harness.js';
import { LATENCY_MS, Sim, T0, type Machine } from '../../sim/harness.js';

const L = 'nightly';
const RTT_MS = 2 * LATENCY_MS;
const CONFIG: ElectionConfigInput = { ackWindowMs: 500, electedLeaseDurationSeconds: 2 };

const opts = (sim: Sim, m: Machine, identity: string, extra: Partial<WithLeaseOptions> = {}): WithLeaseOptions => ({
  client: m.client,
  clock: m.clock,
  tables: sim.names,
  identity,
  ...FAST,
  onError: () => undefined, // faults the tests inject are retried: not news
  ...extra,
});

/** A run on its own machine; `spans` records, in simulated ms, when each run's function ran. */
/** When a run's function ran, in simulated ms, with its term's token. */
interface Span {
  who: string;
  token: number;
  from: number;
  to?: number;
}

function runner(sim: Sim, spans: Span[]) {
  return <T>(identity: string, fn: LeaseFn<T>, extra: Partial<WithLeaseOptions> = {}, m: Machine = sim.machine(), tryOnly = false) =>
    (tryOnly ? tryWithLease : withLease)(
      L,
      async (signal, term) => {
        const span: Span = { who: identity, token: term.fencingToken, from: sim.elapsed };
        spans.push(span);
        try {
          return await fn(signal, term);
        } finally {
          span.to = sim.elapsed;
        }
      },
      opts(sim, m, identity, extra),
    );
}

/** A simulation with the tables made, and a runner recording its runs' spans. */
async function world() {
  const sim = await Sim.create();
  const spans: Span[] = [];
  return { sim, spans, run: runner(sim, spans) };
}

const jobRow = async (sim: Sim) => {
  const r = await sim.client.send(new GetItemCommand({ TableName: sim.names.candidates, Key: marshall({ leaseName: 'job-output', name: 'result' }), ConsistentRead: true }));
  return r.Item && unmarshall(r.Item);
};
/** The "job's" fenced write: a row the leader owns (on the candidates table, for want of another in the model). */
const jobWrite = (sim: Sim, by: string, token: number) => ({
  TransactItems: [{ Put: { TableName: sim.names.candidates, Item: marshall({ leaseName: 'job-output', name: 'result', by, token }) } }],
});

describe('withLease, first come first served (NoCoordination)', () => {
  it('takes a vacant lease, runs fn with the term’s token while renewing it, and releases before it resolves: no timer left behind', async () => {
    const { sim, spans, run } = await world();
    const m = sim.machine();
    const r = await sim.settle(run('a', async (_signal, term) => { await m.clock.sleep(3 * FAST.leaseDurationMs); return `done ${term.fencingToken}`; }, {}, m), 'the run', 20_000);
    expect(r).toEqual({ status: 'ran', value: `done ${spans[0]!.token}`, fencingToken: spans[0]!.token });
    // it ran for three lease durations: renewed all along, as its own writes show
    const terms = new Set(sim.leaseWrites.filter((w) => w.item?.['holderIdentity'] === 'a').map((w) => w.item!['renewTime']));
    expect(terms.size).toBeGreaterThanOrEqual(3 * FAST.leaseDurationMs / FAST.renewDeadlineMs);
    // … at the renew interval (deadline − 2 retries, less the phase step), not every retry period as client-go's race would: a third of the writes
    const interval = FAST.renewDeadlineMs - 2 * FAST.retryPeriodMs - PHASE_STEP_MS;
    expect(terms.size).toBeLessThanOrEqual(Math.ceil((3 * FAST.leaseDurationMs) / interval) + 2);
    expect(terms.size).toBeLessThan((3 * FAST.leaseDurationMs) / FAST.retryPeriodMs / 2);
    const lease = (await sim.leases.read(L)).item!;
    expect(lease.holderIdentity).toBeUndefined();
    expect(lease).toMatchObject({ lastHolderIdentity: 'a', fencingToken: spans[0]!.token });
    expect(sim.clock.pending()).toBe(0);
  });

  it('releases in every outcome: fn throws (withLease rejects with its error), or the caller aborts (rejects with the reason)', async () => {
    const { sim, spans, run } = await world();
    const boom = new Error('boom');
    await expect(sim.settle(run('a', async () => { throw boom; }), 'a throwing run')).rejects.toBe(boom);
    expect((await sim.leases.read(L)).item).toMatchObject({ lastHolderIdentity: 'a' });
    expect((await sim.leases.read(L)).item!.holderIdentity).toBeUndefined();

    const caller = new AbortController();
    const stop = new Error('the invocation is about to time out');
    let sawReason: unknown;
    const p = run('b', async (signal) => {
      await aborted(signal);
      sawReason = signal.reason;
      throw signal.reason;
    }, { signal: caller.signal });
    await sim.until('b runs', () => spans.some((s) => s.who === 'b'));
    caller.abort(stop);
    await expect(sim.settle(p, 'the aborted run')).rejects.toBe(stop);
    expect(sawReason).toBe(stop);
    const lease = (await sim.leases.read(L)).item!;
    expect(lease.holderIdentity).toBeUndefined();
    expect(lease.lastHolderIdentity).toBe('b');
    expect(sim.clock.pending()).toBe(0);
  });

  it('two at once: the second waits and runs after the first released (never overlapping, token raised); tryWithLease is busy at once', async () => {
    const { sim, spans, run } = await world();
    const first = run('a', async (_s, term) => { await sim.clock.sleep(FAST.leaseDurationMs); return term.fencingToken; });
    await sim.until('a runs', () => spans.length === 1);
    const second = run('b', async (_s, term) => term.fencingToken);
    const asked = sim.elapsed;
    const tried = run('c', async () => 'never', {}, sim.machine(), true);
    expect(await sim.settle(tried, 'the try')).toEqual({ status: 'busy', holder: 'a' });
    expect(sim.elapsed - asked).toBeLessThanOrEqual(2 * RTT_MS); // one read: no wait
    const [ra, rb] = await sim.settle(Promise.all([first, second]), 'both runs', 20_000);
    expect(ra.status).toBe('ran');
    expect(rb.status).toBe('ran');
    expect(spans.map((s) => s.who)).toEqual(['a', 'b']);
    expect(spans[1]!.from).toBeGreaterThanOrEqual(spans[0]!.to!);
    expect(spans[1]!.token).toBeGreaterThan(spans[0]!.token);
    // released, not expired: b ran within a poll of a's end, not a lease duration later
    expect(spans[1]!.from - spans[0]!.to!).toBeLessThan(FAST.leaseDurationMs);
  });

  it('two tries at once on a vacant lease: one runs, the other is busy as soon as it sees the winner (it does not run after it); waitMs 0 behaves as a try', async () => {
    const { sim, spans, run } = await world();
    const work = async (_s: AbortSignal, term: LeaseTerm) => {
      await sim.clock.sleep(FAST.leaseDurationMs);
      return term.fencingToken;
    };
    const [a, b] = await sim.settle(Promise.all([run('a', work, {}, sim.machine(), true), run('b', work, {}, sim.machine(), true)]), 'both tries', 20_000);
    expect([a.status, b.status].sort()).toEqual(['busy', 'ran']);
    expect(spans).toHaveLength(1);
    expect([a, b].find((r) => r.status === 'busy')).toEqual({ status: 'busy', holder: spans[0]!.who });
    // withLease with waitMs 0: a vacant lease is taken, a held one given up at once
    const vacant = await sim.settle(run('c', async (_s, term) => term.fencingToken, { waitMs: 0 }), 'c');
    expect(vacant.status).toBe('ran');
    const holding = run('d', work);
    await sim.until('d runs', () => spans.some((x) => x.who === 'd'));
    const asked = sim.elapsed;
    expect(await sim.settle(run('e', work, { waitMs: 0 }), 'e')).toEqual({ status: 'busy', holder: 'd' });
    expect(sim.elapsed - asked).toBeLessThanOrEqual(2 * RTT_MS);
    await sim.settle(holding, 'd');
  });

  it('a run that does not get the lease within waitMs is busy, and leaves nothing behind', async () => {
    const { sim, spans, run } = await world();
    const release = new AbortController();
    const first = run('a', (signal) => aborted(release.signal).then(() => signal.aborted));
    await sim.until('a runs', () => spans.length === 1);
    const r = await sim.settle(run('b', async () => 'never', { waitMs: 1_000 }), 'the waiting run');
    expect(r).toEqual({ status: 'busy', holder: 'a' });
    release.abort();
    expect(await sim.settle(first, 'a')).toMatchObject({ status: 'ran', value: false });
    expect(spans.map((s) => s.who)).toEqual(['a']);
    expect(sim.clock.pending()).toBe(0);
  });

  it('a crashed run’s lease: tryWithLease sees the holder is stale by DynamoDB’s clock and waits for the term to run out, then runs', async () => {
    const { sim, spans, run } = await world();
    const m = sim.machine();
    void run('a', () => new Promise<never>(() => undefined), {}, m);
    await sim.until('a runs', () => spans.length === 1);
    m.kill();
    await sim.run(3 * FAST.leaseDurationMs); // the next scheduled invocation comes later
    const r = await sim.settle(run('b', async (_s, term) => term.fencingToken, {}, sim.machine(), true), 'the try', 20_000);
    expect(r.status).toBe('ran');
    expect(spans[1]!.token).toBeGreaterThan(spans[0]!.token);
  });

  it('renewals that fail abort fn’s signal at the renew deadline, before the term can expire for anyone; withLease rejects with LeaseLostError', async () => {
    const { sim, spans, run } = await world();
    const m = sim.machine();
    let abortedAt: number | undefined;
    const p = run('a', async (signal) => {
      await aborted(signal);
      abortedAt = sim.clock.now();
      throw signal.reason;
    }, {}, m);
    await sim.until('a runs', () => spans.length === 1);
    m.fault = (req) => (req.operation === 'UpdateItem' ? new Error('network unreachable') : undefined);
    const e = await sim.settle(p, 'the run').catch((x: unknown) => x);
    expect(e).toBeInstanceOf(LeaseLostError);
    expect(e).toMatchObject({ leaseName: L, reason: 'renewDeadline', fencingToken: spans[0]!.token });
    const last = sim.lastRenewal(L, 'a');
    expect(abortedAt! - last).toBeLessThanOrEqual(FAST.renewDeadlineMs + RTT_MS);
    expect(abortedAt! - last).toBeLessThan(FAST.leaseDurationMs);
  });
});

describe('a Lambda invocation frozen mid-fn and thawed after its lease expired', () => {
  it('learns it lost the lease at its first look, before its timers run; its fenced writes are refused; the new holder’s stand', async () => {
    const { sim, spans, run } = await world();
    const a = sim.machine();
    let handle: LeaseTerm | undefined;
    let signalA: AbortSignal | undefined;
    let onThaw: { aborted: boolean; held: boolean } | undefined;
    let handleWrite: unknown;
    let rawWrite: unknown;
    // the invocation's work: a request whose answer comes back only after the freeze
    a.fault = (req) => {
      const input = req.input as { Key?: { name?: { S?: string } } };
      if (req.operation === 'GetItem' && input.Key?.name?.S === 'work-in-progress') a.clock.pause();
      return undefined;
    };
    const pa = run('a', async (signal, term) => {
      handle = term;
      signalA = signal;
      await a.client.send(new GetItemCommand({ TableName: sim.names.leases, Key: marshall({ name: 'work-in-progress' }) }));
      // thawed: the first thing it looks at
      onThaw = { aborted: signal.aborted, held: term.held() };
      handleWrite = await term.fencedWrite(jobWrite(sim, 'a', term.fencingToken)).catch((e: unknown) => e);
      // and a write that skips the SDK's own check: DynamoDB refuses it by the token
      rawWrite = await fencedTransactWrite(a.client, { table: sim.names.leases, leaseName: L, term: { holderIdentity: 'a', fencingToken: term.fencingToken } }, jobWrite(sim, 'a', term.fencingToken)).catch((e: unknown) => e);
      return 'a finished';
    }, {}, a);
    await sim.until('a frozen mid-fn', () => handle !== undefined && a.sent.some((r) => r.operation === 'GetItem' && (r.input as { Key?: { name?: { S?: string } } }).Key?.name?.S === 'work-in-progress'));
    await sim.run(FAST.renewDeadlineMs + 100);
    // frozen: no timer of a's has run, yet a look at its term judges the deadline now
    expect(signalA!.aborted).toBe(true);
    expect(handle!.held()).toBe(false);
    expect(() => handle!.assertHeld()).toThrow(LeaseLostError);

    // meanwhile another invocation takes the lease once the term ran out, and writes
    const pb = run('b', async (_s, term) => {
      await term.fencedWrite(jobWrite(sim, 'b', term.fencingToken));
      await sim.clock.sleep(FAST.leaseDurationMs);
      return term.fencingToken;
    });
    await sim.until('b wrote its result', async () => (await jobRow(sim))?.['by'] === 'b', 20_000);
    a.clock.resume();
    const ea = await sim.settle(pa, 'a').catch((x: unknown) => x);
    const rb = await sim.settle(pb, 'b');

    expect(onThaw).toEqual({ aborted: true, held: false });
    expect(handleWrite).toBeInstanceOf(FencingError); // refused without a request
    expect(rawWrite).toBeInstanceOf(FencingError); // refused by DynamoDB: the lease is in b's term
    expect(await jobRow(sim)).toMatchObject({ by: 'b', token: spans[1]!.token });
    expect(ea).toBeInstanceOf(LeaseLostError); // fn returned, but after its term ended: not a run that counts
    expect(rb).toMatchObject({ status: 'ran' });
    expect(spans[1]!.token).toBeGreaterThan(spans[0]!.token);
    expect(sim.log.maxConcurrentLeaders()).toBeLessThanOrEqual(1);
  });
});

describe('withLease: a run frozen before its function starts', () => {
  it('a run-once run frozen while it reads the windows done, past its renew deadline: fn never starts (its term may be someone else’s by then), and it rejects with LeaseLostError', async () => {
    const { sim, spans, run } = await world();
    const a = sim.machine();
    // the run-once claim and read of the window's row, right after a took the lease: its answer comes back only after the freeze
    let froze = false;
    a.fault = (req) => {
      const input = req.input as { Key?: { leaseName?: { S?: string }; name?: { S?: string } } };
      if (!froze && req.operation === 'UpdateItem' && input.Key?.leaseName?.S === L && input.Key.name?.S === keyedWindowRow('w-1')) {
        froze = true;
        a.clock.pause();
      }
      return undefined;
    };
    const pa = run('a', async () => 'a ran', { runOnce: { window: 'w-1' } }, a);
    await sim.until('a frozen in its run-once read', () => froze);
    await sim.run(FAST.leaseDurationMs + 4 * FAST.retryPeriodMs);
    // meanwhile another invocation takes the lease once the term ran out, and runs the window
    const rb = await sim.settle(run('b', async () => 'b ran', { runOnce: { window: 'w-1' } }), 'b');
    expect(rb).toMatchObject({ status: 'ran', value: 'b ran' });
    a.clock.resume();
    const ea = await sim.settle(pa, 'a').catch((x: unknown) => x);
    expect(ea).toBeInstanceOf(LeaseLostError);
    expect(spans.map((x) => x.who)).toEqual(['b']); // a's function never started
  });
});

describe('a cancel while the function awaits a call on its term that is never answered', () => {
  const calls = {
    fencedWrite: (sim: Sim, term: LeaseTerm) => term.fencedWrite(jobWrite(sim, 'a', term.fencingToken)),
    fencedItemWrite: (sim: Sim, term: LeaseTerm) => term.fencedItemWrite({ put: { TableName: sim.names.candidates, Item: marshall({ leaseName: 'job-output', name: 'result', by: 'a' }) } }),
    complete: (sim: Sim, term: LeaseTerm) => term.complete(jobWrite(sim, 'a', term.fencingToken).TransactItems),
  };
  it.each(Object.keys(calls) as (keyof typeof calls)[])('%s rejects with the signal\'s reason as the caller aborts, its request aborted; later calls are refused unsent; the lease is given up and the window left open', async (call) => {
    const { sim, spans, run } = await world();
    const a = sim.machine();
    // the function's own writes (its job row) are never answered (a black-holed connection); the lease's are
    const job = (req: { input: unknown }) => JSON.stringify(req.input).includes('job-output');
    a.swallow = job;
    // the requests the job's writes went out with, as the caller's client saw them
    const requests: (AbortSignal | undefined)[] = [];
    const client = Object.create(a.client) as typeof a.client;
    Object.defineProperty(client, 'send', {
      value: (command: { input: unknown }, options?: { abortSignal?: AbortSignal }) => {
        if (job(command)) requests.push(options?.abortSignal);
        return a.client.send(command as never, options);
      },
    });
    const caller = new AbortController();
    const stop = new Error('the invocation is about to time out');
    const CANCEL_AT_MS = 1_000;
    let answer: unknown;
    let later: unknown;
    let waited = -1;
    let aborted: boolean[] = [];
    const work: LeaseFn<string> = async (_signal, term) => {
      void a.clock.sleep(CANCEL_AT_MS).then(() => caller.abort(stop));
      const from = sim.elapsed;
      answer = await calls[call](sim, term).catch((e: unknown) => e);
      waited = sim.elapsed - from;
      aborted = requests.map((r) => r?.aborted === true);
      const sent = a.sent.length;
      later = await calls[call](sim, term).catch((e: unknown) => e);
      expect(a.sent.length).toBe(sent);
      throw answer;
    };
    const ea = await sim.settle(run('a', work, { client, signal: caller.signal, ...(call === 'complete' ? { runOnce: { window: 'w-1' } } : {}) }, a), 'a').catch((x: unknown) => x);
    // before: the call waited on (the elector's fenced writes for their bound, a mark's read back for its own), and rejected as a timeout
    expect(answer).toBe(stop);
    expect(waited).toBe(CANCEL_AT_MS);
    expect(aborted.length).toBeGreaterThan(0);
    expect(aborted.every(Boolean)).toBe(true);
    expect(later).toBe(stop);
    expect(ea).toBe(stop);
    expect(spans[0]!.to! - spans[0]!.from).toBe(CANCEL_AT_MS);
    const lease = (await sim.leases.read(L)).item!;
    expect(lease.lastHolderIdentity).toBe('a');
    expect(lease.holderIdentity).toBeUndefined();
    expect(sim.clock.pending()).toBe(0);
    if (call === 'complete') {
      a.swallow = undefined;
      expect(await sim.settle(run('b', async () => 'b ran', { runOnce: { window: 'w-1' } }), 'b')).toMatchObject({ status: 'ran', value: 'b ran' });
    }
  });
});

describe('a long lease', () => {
  it("a run's write never answered gives up after the elector's request bound (its retry period, at least 5 s), not a lease duration", async () => {
    const { sim, run } = await world();
    const a = sim.machine();
    const leaseDurationMs = 60_000;
    let answer: unknown;
    let waited = -1;
    const ra = await sim.settle(
      run('a', async (_signal, term) => {
        a.swallow = (req) => JSON.stringify(req.input).includes('job-output');
        const from = sim.elapsed;
        answer = await term.fencedWrite(jobWrite(sim, 'a', term.fencingToken)).catch((e: unknown) => e);
        waited = sim.elapsed - from;
        return 'a ran';
      }, { leaseDurationMs }, a),
      'a',
      2 * leaseDurationMs,
    );
    expect(ra).toMatchObject({ status: 'ran' });
    expect((answer as Error).name).toBe('TimeoutError');
    // before: a lease duration (the bound withLease gave its requests when leaseDurationMs was given; 5 s when not)
    expect(waited).toBe(requestBoundMs(FAST.retryPeriodMs));
  });
});

describe('a cancel after the function returned', () => {
  it('changes nothing: its run-once window is marked and the call resolves with its value, so the next run skips the window', async () => {
    const { sim, spans, run } = await world();
    const caller = new AbortController();
    // the function does its work and returns as the caller's signal aborts (a Lambda's remaining time running short)
    const ra = await sim.settle(run('a', async () => { caller.abort(new Error('time runs short')); return 'a ran'; }, { runOnce: { window: 'w-1' }, signal: caller.signal }), 'a');
    // before the fix: rejected with the reason, the window left open, and b ran the work again
    expect(ra).toMatchObject({ status: 'ran', value: 'a ran', window: 'w-1' });
    const rb = await sim.settle(run('b', async () => 'b ran', { runOnce: { window: 'w-1' } }), 'b');
    expect(rb).toMatchObject({ status: 'skipped', window: 'w-1' });
    expect(spans.map((x) => x.who)).toEqual(['a']);
  });
});

describe('a request withLease waits on that is never answered (a black-holed connection)', () => {
  const onTable = (sim: Sim, table: string) => (req: { input: unknown }) => (req.input as { TableName?: string }).TableName === table;

  it('the candidates read of auto mode: the call rejects within its bound as DynamoDB out of reach (a read), nothing is held, and the next run runs', async () => {
    const { sim, spans, run } = await world();
    const a = sim.machine();
    a.swallow = (req) => req.operation === 'Query' && onTable(sim, sim.names.candidates)(req);
    // before the fix: never settled (the read had no bound)
    const ea = await sim.settle(run('a', async () => 'a ran', {}, a), 'a', 4 * FAST.leaseDurationMs + 10_000).catch((x: unknown) => x);
    // a read unanswered: told as DynamoDB out of reach, naming what was not read (to 2026-12-07: the bare TimeoutError)
    expect(ea).toMatchObject({ name: 'DynamoDBUnreachableError', code: 'timed out', cause: { name: 'TimeoutError' } });
    expect((ea as Error).message).toMatch(/the lease's candidates on the candidates table ".*" was not read, and withLease does not retry: call it again once DynamoDB answers$/);
    expect((await sim.leases.read(L)).item?.holderIdentity).toBeUndefined();
    expect(await sim.settle(run('b', async () => 'b ran'), 'b')).toMatchObject({ status: 'ran', value: 'b ran' });
    expect(spans.map((x) => x.who)).toEqual(['b']);
  });

  it("the run-once window's claim: the call rejects once the claim is abandoned, fn never starts, the lease is let go, and the next run does the window", async () => {
    const { sim, spans, run } = await world();
    const a = sim.machine();
    const claims = (req: { operation: string; input: unknown }) => {
      const input = req.input as { Key?: { leaseName?: { S?: string }; name?: { S?: string } } };
      return req.operation === 'UpdateItem' && input.Key?.leaseName?.S === L && input.Key.name?.S === keyedWindowRow('w-1');
    };
    a.swallow = claims;
    // before the fix: never settled, while a's elector renewed the lease it did nothing with
    const ea = await sim.settle(run('a', async () => 'a ran', { runOnce: { window: 'w-1' } }, a), 'a', 4 * FAST.leaseDurationMs + 10_000).catch((x: unknown) => x);
    // named with the lease, the window and that fn was not run (with-lease-window-time.test.ts): the bound's TimeoutError its cause
    expect(ea).toMatchObject({ name: 'DynamoDBUnreachableError', code: 'timed out', cause: { name: 'TimeoutError' } });
    expect((await sim.leases.read(L)).item?.holderIdentity).toBeUndefined();
    const rb = await sim.settle(run('b', async () => 'b ran', { runOnce: { window: 'w-1' } }), 'b');
    expect(rb).toMatchObject({ status: 'ran', value: 'b ran', window: 'w-1' });
    expect(spans.map((x) => x.who)).toEqual(['b']);
  });
});

describe("a window's mark that landed with every answer lost", () => {
  it.each(['alone', 'with the caller’s items'] as const)("%s: resolves 'ran' with the function's value (the row read back shows the mark is this term's), and the next run skips the window", async (how) => {
    const { sim, spans, run } = await world();
    const a = sim.machine();
    const marks = (req: { operation: string; input: unknown }) => {
      if (how !== 'alone') return req.operation === 'TransactWriteItems';
      const input = req.input as { Key?: { leaseName?: { S?: string }; name?: { S?: string } }; UpdateExpression?: string };
      return req.operation === 'UpdateItem' && input.Key?.leaseName?.S === L && input.Key.name?.S === keyedWindowRow('w-1') && input.UpdateExpression?.includes('#runs') === true;
    };
    // the first attempt lands and its answer is lost; the SDK's tries after it time out on the way (a connection dropped)
    let tries = 0;
    a.loseAnswer = (req) => marks(req) && tries++ === 0;
    a.fault = (req) => (marks(req) && tries > 0 ? Object.assign(new Error('socket hang up'), { name: 'TimeoutError', $metadata: {} }) : undefined);
    const work: LeaseFn<string> = async (_signal, term) => {
      if (how !== 'alone') await term.complete(jobWrite(sim, 'a', term.fencingToken).TransactItems);
      return 'a ran';
    };
    const ra = await sim.settle(run('a', work, { runOnce: { window: 'w-1' } }, a), 'a').catch((x: unknown) => x);
    // before the fix: rejected as unanswered, though the window was marked
    expect(ra).toMatchObject({ status: 'ran', value: 'a ran', window: 'w-1' });
    expect(tries).toBeGreaterThan(0);
    const rb = await sim.settle(run('b', async () => 'b ran', { runOnce: { window: 'w-1' } }), 'b');
    expect(rb).toMatchObject({ status: 'skipped', window: 'w-1' });
    expect(spans.map((x) => x.who)).toEqual(['a']);
    if (how !== 'alone') expect(await jobRow(sim)).toMatchObject({ by: 'a' });
  });
});

describe("the function's mark abandoned, landed all the same, and the function returning", () => {
  const CANCEL_AT_MS = 1_000;
  const ways = {
    // the caller's cancel abandons it while the SDK's next copy hangs
    cancel: (a: Machine) => {
      a.swallow = (req) => req.operation === 'TransactWriteItems' && tries(a) > 0;
    },
    // its request bound: every copy after it times out, and the read back is not answered
    timeout: (a: Machine) => {
      a.fault = (req) => (req.operation === 'TransactWriteItems' && tries(a) > 0 ? Object.assign(new Error('socket hang up'), { name: 'TimeoutError', $metadata: {} }) : undefined);
      a.swallow = (req) => req.operation === 'GetItem' && JSON.stringify(req.input).includes(keyedWindowRow('w-1'));
    },
  };
  const tries = (a: Machine) => a.sent.filter((r) => r.operation === 'TransactWriteItems').length - 1;
  it.each(Object.keys(ways) as (keyof typeof ways)[])("%s: withLease's own mark after it finds the row is this run's: resolves 'ran', and the next run skips the window", async (way) => {
    const { sim, spans, run } = await world();
    const a = sim.machine();
    const caller = new AbortController();
    // the first copy of the function's mark lands and its answer is lost
    let lost = 0;
    a.loseAnswer = (req) => req.operation === 'TransactWriteItems' && lost++ === 0;
    ways[way](a);
    const stop = new Error('the invocation is about to time out');
    let answer: unknown;
    const work: LeaseFn<string> = async (_signal, term) => {
      if (way === 'cancel') void a.clock.sleep(CANCEL_AT_MS).then(() => caller.abort(stop));
      answer = await term.complete(jobWrite(sim, 'a', term.fencingToken).TransactItems).catch((e: unknown) => e);
      a.swallow = undefined;
      a.fault = undefined;
      return 'a ran';
    };
    const ra = await sim.settle(run('a', work, { runOnce: { window: 'w-1' }, signal: caller.signal }, a), 'a').catch((x: unknown) => x);
    if (way === 'cancel') expect(answer).toBe(stop);
    else expect(answer).toMatchObject({ name: 'TimeoutError' });
    expect(await jobRow(sim)).toMatchObject({ by: 'a' });
    // before the fix: rejected (its own mark, stamped later, refused by the row its abandoned mark left)
    expect(ra).toMatchObject({ status: 'ran', value: 'a ran', window: 'w-1' });
    const rb = await sim.settle(run('b', async () => 'b ran', { runOnce: { window: 'w-1' } }), 'b');
    expect(rb).toMatchObject({ status: 'skipped', window: 'w-1' });
    expect(spans.map((x) => x.who)).toEqual(['a']);
  });
});

describe("the function's mark tried again after one that timed out and landed", () => {
  it.each(['the same items', 'other items'] as const)("%s: refused by the row this run's first mark left, it is told apart from a write from outside the term", async (how) => {
    const { sim, run } = await world();
    const a = sim.machine();
    // the first copy lands, its answer lost; the SDK's copies after it time out, and the row read back is not answered
    let lost = 0;
    a.loseAnswer = (req) => req.operation === 'TransactWriteItems' && lost++ === 0;
    a.fault = (req) => (req.operation === 'TransactWriteItems' && lost > 0 ? Object.assign(new Error('socket hang up'), { name: 'TimeoutError', $metadata: {} }) : undefined);
    a.swallow = (req) => req.operation === 'GetItem' && JSON.stringify(req.input).includes(keyedWindowRow('w-1'));
    const answers: unknown[] = [];
    const work: LeaseFn<string> = async (_signal, term) => {
      answers.push(await term.complete(jobWrite(sim, 'a', term.fencingToken).TransactItems).catch((e: unknown) => e));
      a.swallow = undefined;
      a.fault = undefined;
      // its outcome unknown, the function tries again
      answers.push(await term.complete(jobWrite(sim, how === 'the same items' ? 'a' : 'a again', term.fencingToken).TransactItems).catch((e: unknown) => e));
      return 'a ran';
    };
    const ra = await sim.settle(run('a', work, { runOnce: { window: 'w-1' } }, a), 'a');
    expect(answers[0]).toMatchObject({ name: 'TimeoutError' });
    // before the fix: a ConflictError blaming a write from outside the term, or a newer term
    if (how === 'the same items') expect(answers[1]).toBeUndefined();
    else expect(answers[1]).toMatchObject({ name: 'RangeError', message: expect.stringMatching(/already marked by this run.*were not written/) as unknown });
    expect(ra).toMatchObject({ status: 'ran', value: 'a ran', window: 'w-1' });
    expect(await jobRow(sim)).toMatchObject({ by: 'a' });
  });
});

describe('complete(items) with more items than a transaction holds beside the window and the fence', () => {
  it.each([99, 150])('%i items: a RangeError naming the 98 that fit, before anything is sent or read; the window stays open', async (n) => {
    const { sim, run } = await world();
    const a = sim.machine();
    let sent = -1;
    const r = await sim.settle(run('a', async (_s, term) => {
      const items = Array.from({ length: n }, (_, i) => ({ Put: { TableName: sim.names.candidates, Item: marshall({ leaseName: 'job-output', name: `r${i}` }) } }));
      const from = a.sent.length;
      try {
        return await term.complete(items);
      } finally {
        sent = a.sent.length - from;
      }
    }, { runOnce: { window: 'w-1' } }, a), 'a').catch((e: unknown) => e);
    // it said "100 items ... split the write" for 99, counting the window's row, after reading that row back
    expect(r).toMatchObject({ name: 'RangeError', message: expect.stringMatching(new RegExp(`^complete\\(items\\): ${n} items do not fit .*at most 98`)) as unknown });
    expect(sent).toBe(0);
    const rb = await sim.settle(run('b', async (_s, term) => (await term.complete(jobWrite(sim, 'b', term.fencingToken).TransactItems), 'b ran'), { runOnce: { window: 'w-1' } }), 'b');
    expect(rb).toMatchObject({ status: 'ran', value: 'b ran' });
  });
});

describe('complete(items) after a complete() of the row alone that landed unanswered', () => {
  it('is refused with a RangeError: its items were not written (it resolved, and withLease said ran, the items lost)', async () => {
    const { sim, run } = await world();
    const a = sim.machine();
    const isMark = (req: { operation: string; input: unknown }) => req.operation === 'UpdateItem' && (req.input as { TableName?: string }).TableName === sim.names.candidates && (req.input as { UpdateExpression?: string }).UpdateExpression?.includes('#runs') === true;
    let lost = 0;
    a.loseAnswer = (req) => isMark(req) && lost++ === 0;
    a.fault = (req) => (isMark(req) && lost > 0 ? Object.assign(new Error('socket hang up'), { name: 'TimeoutError', $metadata: {} }) : undefined);
    a.swallow = (req) => req.operation === 'GetItem' && JSON.stringify(req.input).includes(keyedWindowRow('w-1'));
    const answers: unknown[] = [];
    const work: LeaseFn<string> = async (_signal, term) => {
      answers.push(await term.complete().catch((e: unknown) => e));
      a.swallow = undefined;
      a.fault = undefined;
      // its outcome unknown, the function marks the window with its result
      answers.push(await term.complete(jobWrite(sim, 'a', term.fencingToken).TransactItems).catch((e: unknown) => e));
      return 'a ran';
    };
    await sim.settle(run('a', work, { runOnce: { window: 'w-1' } }, a), 'a');
    expect(answers[0]).toMatchObject({ name: 'TimeoutError' });
    expect(answers[1]).toMatchObject({ name: 'RangeError', message: expect.stringMatching(/already marked by this run.*were not written/) as unknown });
    expect(await jobRow(sim)).toBeUndefined();
  });

  it("a complete(items) the function returned without waiting for is the run's outcome: withLease's own mark never goes out before it without its items", async () => {
    const { sim, run } = await world();
    const a = sim.machine();
    // the transaction is black-holed: it never lands, and only its bound ends it
    a.swallow = (req) => req.operation === 'TransactWriteItems';
    let pending: Promise<void> | undefined;
    const work: LeaseFn<string> = async (_signal, term) => {
      pending = term.complete(jobWrite(sim, 'a', term.fencingToken).TransactItems); // not awaited
      return 'a ran';
    };
    const ea = await sim.settle(run('a', work, { runOnce: { window: 'w-1' } }, a), 'a').catch((x: unknown) => x);
    // as if the function had waited for it: its error is the run's (before: "ran", the window marked without the items)
    expect(ea).toMatchObject({ name: 'TimeoutError' });
    await expect(pending).rejects.toMatchObject({ name: 'TimeoutError' });
    expect(await jobRow(sim)).toBeUndefined();
    // the window is not marked: the next run does it
    a.swallow = undefined;
    const rb = await sim.settle(run('b', async (_s, term) => (await term.complete(jobWrite(sim, 'b', term.fencingToken).TransactItems), 'b ran'), { runOnce: { window: 'w-1' } }), 'b');
    expect(rb).toMatchObject({ status: 'ran', value: 'b ran' });
    expect(await jobRow(sim)).toMatchObject({ by: 'b' });
  });
});

describe('a complete(items) refused, and the function catching it and returning', () => {
  it.each(['refused by its own condition', 'refused under multiRegion', 'timed out, not landed'] as const)('%s: the run rejects with its error and the window stays open (it resolved "ran", the window marked without the items)', async (how) => {
    const { sim, run } = await world();
    const a = sim.machine();
    if (how === 'timed out, not landed') a.fault = (req) => (req.operation === 'TransactWriteItems' ? Object.assign(new Error('socket hang up'), { name: 'TimeoutError', $metadata: {} }) : undefined);
    const answers: unknown[] = [];
    const work: LeaseFn<string> = async (_signal, term) => {
      const items = jobWrite(sim, 'a', term.fencingToken).TransactItems;
      // the caller's own condition fails: the transaction writes nothing
      const refused = [{ ...items[0]!, Put: { ...items[0]!.Put, ConditionExpression: 'attribute_exists(#never)', ExpressionAttributeNames: { '#never': 'never' } } }];
      answers.push(await term.complete(how === 'timed out, not landed' ? items : refused).catch((e: unknown) => e));
      a.fault = undefined;
      return 'a returned';
    };
    const ra = await sim.settle(run('a', work, { runOnce: { window: 'w-1' }, ...(how === 'refused under multiRegion' ? { multiRegion: true } : {}) }, a), 'a').catch((e: unknown) => e);
    const error = {
      // the fence passed: a ConflictError naming the caller's item, DynamoDB's cancellation its cause
      'refused by its own condition': { name: 'ConflictError', message: expect.stringMatching(/TransactItems\[0\] .*failed its own condition.*the fence passed/) as unknown, cause: { name: 'TransactionCanceledException' } },
      'refused under multiRegion': { name: 'RangeError', message: expect.stringMatching(/^complete\(items\): .*fencedItemWrite/) as unknown },
      'timed out, not landed': { name: 'TimeoutError' },
    }[how];
    expect(answers[0]).toMatchObject(error);
    expect(ra).toMatchObject(error);
    expect(await jobRow(sim)).toBeUndefined();
    expect((await new RunOnceStore(sim.client, sim.names.candidates).read(L, keyedWindowRow('w-1'))).runs).toEqual([]);
    // the next run does the window
    const rb = await sim.settle(run('b', async (_s, term) => (await term.complete(jobWrite(sim, 'b', term.fencingToken).TransactItems), 'b ran'), { runOnce: { window: 'w-1' } }), 'b');
    expect(rb).toMatchObject({ status: 'ran', value: 'b ran' });
    expect(await jobRow(sim)).toMatchObject({ by: 'b' });
  });

  it('a complete(items) that failed and a later one that landed: the run ran, its items written once', async () => {
    const { sim, run } = await world();
    const work: LeaseFn<string> = async (_signal, term) => {
      const items = jobWrite(sim, 'a', term.fencingToken).TransactItems;
      const refused = [{ ...items[0]!, Put: { ...items[0]!.Put, ConditionExpression: 'attribute_exists(#never)', ExpressionAttributeNames: { '#never': 'never' } } }];
      await term.complete(refused).catch(() => undefined);
      await term.complete(items);
      return 'a ran';
    };
    expect(await sim.settle(run('a', work, { runOnce: { window: 'w-1' } }), 'a')).toMatchObject({ status: 'ran', value: 'a ran' });
    expect(await jobRow(sim)).toMatchObject({ by: 'a' });
  });
});

describe("a window's mark unanswered as its term ends", () => {
  it("the read back that would tell whether it landed ends with the term: the function stops at the term's end, not the read's bound, and the next run finds the window done", async () => {
    const { sim, spans, run } = await world();
    const a = sim.machine();
    let tries = 0;
    // the mark lands and its answer is lost; the SDK's tries after it time out on the way
    a.loseAnswer = (req) => req.operation === 'TransactWriteItems' && tries++ === 0;
    a.fault = (req) => (req.operation === 'TransactWriteItems' && tries > 0 ? Object.assign(new Error('socket hang up'), { name: 'TimeoutError', $metadata: {} }) : undefined);
    const work: LeaseFn<string> = async (_signal, term) => {
      // from here on nothing else a sends is answered (a route black-holed): its renewals, and the read back
      a.swallow = (req) => req.operation !== 'TransactWriteItems';
      await term.complete(jobWrite(sim, 'a', term.fencingToken).TransactItems);
      return 'a ran';
    };
    const ea = await sim.settle(run('a', work, { runOnce: { window: 'w-1' } }, a), 'a', 4 * FAST.leaseDurationMs + 10_000).catch((x: unknown) => x);
    expect(ea).toBeInstanceOf(LeaseLostError);
    expect(tries).toBeGreaterThan(0);
    // others may take the lease from its expiry on: a's function had stopped by then (before the fix:
    // it waited out the read's 5 s bound, leading in its own eyes past the next holder's start)
    const expiry = sim.lastRenewal(L, 'a') - T0 + FAST.leaseDurationMs;
    expect(spans[0]!.to).toBeLessThanOrEqual(expiry);
    a.swallow = undefined;
    const rb = await sim.settle(run('b', async () => 'b ran', { runOnce: { window: 'w-1' } }), 'b');
    expect(rb).toMatchObject({ status: 'skipped', window: 'w-1' });
    expect(await jobRow(sim)).toMatchObject({ by: 'a' });
  });
});

describe("a window's mark refused by its own copy as its term ends", () => {
  it('the read back that tells whether the first copy landed is abandoned with the term: no request of the run outlives the call', async () => {
    const { sim, run } = await world();
    const a = sim.machine();
    const onRow = (req: { input: unknown }) => (req.input as { TableName?: string }).TableName === sim.names.candidates;
    const mark = (req: { operation: string; input: unknown }) => req.operation === 'UpdateItem' && onRow(req) && (req.input as { UpdateExpression?: string }).UpdateExpression?.includes('#runs') === true;
    let copies = 0;
    // the mark lands and its answer is lost; the SDK's next copy is refused by the row it left
    a.loseAnswer = (req) => mark(req) && copies++ === 0;
    const work: LeaseFn<string> = async (_signal, term) => {
      // from here on the lease cannot be written (its renewals, its release), and the row read back is never answered
      a.fault = (req) => (req.operation === 'UpdateItem' && !onRow(req) ? new Error('network unreachable') : undefined);
      a.swallow = (req) => req.operation === 'GetItem' && onRow(req);
      await term.complete();
      return 'a ran';
    };
    const ea = await sim.settle(run('a', work, { runOnce: { window: 'w-1' } }, a), 'a').catch((x: unknown) => x);
    expect(ea).toBeInstanceOf(LeaseLostError);
    expect(a.sent.filter(mark).map((r) => r.ok)).toEqual([true, false]); // landed, then its copy refused
    expect(a.sent.filter((r) => r.operation === 'GetItem' && onRow(r))).toHaveLength(1);
    // before the fix: the read back's request was still waited for, its bound's timer left behind
    expect(sim.clock.pending()).toBe(0);
  });
});

describe('withLease on a coordinated lease (it has candidates)', () => {
  /** A long-lived worker `w` at `version` leading the lease, with the coordinator running. */
  const workerLeading = async (version: string) => {
    const sim = await Sim.create({ config: CONFIG });
    const coord = sim.coordinator();
    const w = sim.elector('w', { leaseName: L }, { versions: [version, version] });
    await sim.until('w leads', () => w.elector.isLeader());
    return { sim, coord, w };
  };

  it('auto mode without a candidacy is refused, naming the option and the way out', async () => {
    const sim = await Sim.create({ config: CONFIG });
    const w = sim.elector('w', { leaseName: L });
    await sim.settle(w.elector.ready, 'w stands');
    const e = await sim.settle(withLease(L, async () => 1, opts(sim, sim.machine(), 'run')), 'the refusal').catch((x: unknown) => x);
    expect(e).toBeInstanceOf(ValidationError);
    expect((e as ValidationError).fields).toEqual(['candidacy']);
    expect((e as Error).message).toMatch(/has candidates.*NoCoordination/);
    await w.stop();
  });

  it('a better candidate: the coordinator elects the run (preempting the worker), it runs, and hands the lease back', async () => {
    const { sim, coord, w } = await workerLeading('1.31.0');
    const spans: Span[] = [];
    const run = runner(sim, spans);
    const r = await sim.settle(run('migrate', async (_s, term) => term.fencingToken, { candidacy: { emulationVersion: '1.30.0', binaryVersion: '1.30.0' } }), 'the run', 30_000);
    expect(r.status).toBe('ran');
    expect(sim.log.of('stopped', 'w')[0]).toMatchObject({ reason: 'preempted' });
    // its candidacy is withdrawn, and the worker leads again
    expect((await sim.candidates.list(L)).candidates.map((c) => c.name)).toEqual(['w']);
    await sim.until('w leads again', () => w.elector.isLeader(), 20_000);
    expect(w.elector.fencingToken!).toBeGreaterThan(spans[0]!.token);
    coord.stop();
    await w.stop();
  });

  it('a worse candidate is not chosen while the worker lives: busy after waitMs, its candidacy withdrawn', async () => {
    const { sim, coord, w } = await workerLeading('1.30.0');
    const r = await sim.settle(withLease(L, async () => 'never', opts(sim, sim.machine(), 'late', { waitMs: 5_000, candidacy: { emulationVersion: '1.31.0', binaryVersion: '1.31.0' } })), 'the run', 30_000);
    expect(r).toEqual({ status: 'busy', holder: 'w' });
    expect((await sim.candidates.list(L)).candidates.map((c) => c.name)).toEqual(['w']);
    expect(w.elector.isLeader()).toBe(true);
    coord.stop();
    await w.stop();
  });

  /** The process's push path, recording which leases its electors watch. */
  const watchedPush = (sim: Sim, m: Machine): { push: Push; watched: string[] } => {
    const inner = sim.pushFor(m);
    const watched: string[] = [];
    return { watched, push: { watch: (lease, onWake) => (watched.push(lease), inner.watch(lease, onWake)), wake: (lease, revision) => inner.wake(lease, revision), healthy: () => inner.healthy() } };
  };
  /** Session timings that fit FAST's (lease 2 s, renew deadline 1.5 s, retry 250 ms). */
  const SESSION = { renewIntervalMs: 600, retryPeriodMs: 150, renewDeadlineMs: 1_200, maxLeaseDurationMs: 2_000 } as const;

  it('takes the process’s push and session as an elector does: the run watches the lease, its term is held on the session; NoCoordination refuses both', async () => {
    const { sim, coord, w } = await workerLeading('1.31.0');
    sim.pushBroker({ delayMs: 50, deliveryMs: 5 });
    const m = sim.machine();
    const { push, watched } = watchedPush(sim, m);
    const session = new Session({ client: m.client, tables: sim.names, clock: m.clock, ...SESSION });
    const stopSession = new AbortController();
    const sessionRun = session.run(stopSession.signal);
    await sim.settle(session.ready, 'the session');

    // a bad combination is the run's ValidationError, naming the option
    for (const key of ['push', 'session'] as const) {
      const e = await sim.settle(withLease(L, async () => 1, opts(sim, m, 'race', { mode: 'NoCoordination', [key]: key === 'push' ? push : session })), 'the refusal').catch((x: unknown) => x);
      expect(e).toBeInstanceOf(ValidationError);
      expect((e as ValidationError).fields).toEqual([key]);
    }
    const e = await sim.settle(withLease(L, async () => 1, opts(sim, m, 'bad', { candidacy: { emulationVersion: '1.30.0', binaryVersion: '1.30.0' }, push: { watch: 1 } as never })), 'the refusal').catch((x: unknown) => x);
    expect((e as Error).message).toMatch(/push: must be a PushChannel/);

    const r = await sim.settle(
      // handed over, the run leads from its read of the hand-over and its first renewal (the
      // confirmation) puts the term on the session: looked for during the run's first second
      withLease(L, async () => {
        for (let i = 0; i < 100; i++) {
          const onSession = (await sim.leases.read(L)).item?.session;
          if (onSession) return onSession;
          await m.clock.sleep(10);
        }
        return undefined;
      }, opts(sim, m, 'migrate', { candidacy: { emulationVersion: '1.30.0', binaryVersion: '1.30.0' }, push, session })),
      'the run',
      30_000,
    );
    expect(r).toMatchObject({ status: 'ran', value: session.name });
    expect(watched).toContain(L);
    await sim.until('w leads again', () => w.elector.isLeader(), 20_000);
    coord.stop();
    await w.stop();
    stopSession.abort();
    await sim.settle(sessionRun, 'the session ends');
  });

  it('a run that auto makes first come, first served (no candidates) leaves push and session unused', async () => {
    const { sim } = await world();
    sim.pushBroker();
    const m = sim.machine();
    const { push, watched } = watchedPush(sim, m);
    const session = new Session({ client: m.client, tables: sim.names, clock: m.clock, ...SESSION });
    const r = await sim.settle(withLease(L, async () => (await sim.leases.read(L)).item?.session, opts(sim, m, 'cron', { push, session })), 'the run', 20_000);
    expect(r).toMatchObject({ status: 'ran', value: undefined });
    expect(watched).toEqual([]);
  });

  it('a worse candidate named successor takes the lease when the worker dies, without an election, and runs', async () => {
    const { sim, coord, w } = await workerLeading('1.30.0');
    const spans: Span[] = [];
    const run = runner(sim, spans);
    const p = run('late', async (_s, term) => term.fencingToken, { waitMs: 20_000, candidacy: { emulationVersion: '1.31.0', binaryVersion: '1.31.0' } });
    await sim.until('the run named successor', async () => (await sim.leases.read(L)).item?.successor === 'late');
    w.machine.kill();
    const r = await sim.settle(p, 'the run', 30_000);
    expect(r.status).toBe('ran');
    expect(spans.map((x) => x.who)).toEqual(['late']);
    const took = sim.leaseWrites.find((x) => x.item?.['holderIdentity'] === 'late');
    expect(took?.item).toMatchObject({ electedBy: 'successor' });
    coord.stop();
  });
});

describe('run-once windows', () => {
  it('names windows by UTC day, hour, or epoch-aligned length; a caller’s key as given', () => {
    const at = Date.UTC(2026, 10, 24, 22, 5, 7);
    expect(windowOf({ every: 'day' }, at)).toBe('2026-11-24');
    expect(windowOf({ every: 'hour' }, at)).toBe('2026-11-24T22');
    expect(windowOf({ every: 15 * 60_000 }, at)).toBe('2026-11-24T22:00:00.000Z');
    expect(windowOf({ window: 'migration-42' }, at)).toBe('migration-42');
    // named by the scheduled time when given, whenever the run happens
    expect(windowOf({ every: 'day', at: Date.UTC(2026, 10, 23, 23, 59) }, at)).toBe('2026-11-23');
    expect(windowOf({ every: 'hour', at: Date.UTC(2026, 10, 24, 21, 59) }, at)).toBe('2026-11-24T21');
  });

  it('a retry after midnight with the scheduled time counts for the scheduled day, and the next day’s run still runs', async () => {
    const { sim, spans, run } = await world();
    const DAY = 86_400_000;
    // the schedule fires at 23:59 each day (T0 is midnight): EventBridge's `time` says so
    const scheduled = (d: number) => new Date(T0 + d * DAY + DAY - 60_000).toISOString();
    const daily = (d: number, who: string, fails = false) =>
      sim.settle(run(who, async () => { if (fails) throw new Error('the report failed'); return d; }, { runOnce: { every: 'day', at: scheduled(d) } }), who).then((r) => r, (e: Error) => e.message);
    await sim.run(DAY - 60_000);
    expect(await daily(0, 'day-0', true)).toBe('the report failed'); // Lambda will retry it
    await sim.run(3 * 60_000); // … after midnight: the clock says day 1 now
    expect(new Date(sim.clock.now()).toISOString().slice(0, 10)).toBe(new Date(T0 + DAY).toISOString().slice(0, 10));
    expect(await daily(0, 'day-0-retry')).toMatchObject({ status: 'ran', window: scheduled(0).slice(0, 10) });
    expect(await daily(0, 'day-0-late-duplicate')).toMatchObject({ status: 'skipped', window: scheduled(0).slice(0, 10), run: { holder: 'day-0-retry' } });
    await sim.run(DAY - 3 * 60_000); // day 1's own firing, at 23:59
    expect(await daily(1, 'day-1')).toMatchObject({ status: 'ran', window: scheduled(1).slice(0, 10) });
    expect(spans.map((x) => x.who)).toEqual(['day-0', 'day-0-retry', 'day-1']);
    expect((await new RunOnceStore(sim.client, sim.names.candidates).read(L, PERIODIC_WINDOWS)).runs.map((r) => [r.window, r.holder])).toEqual([
      [scheduled(1).slice(0, 10), 'day-1'],
      [scheduled(0).slice(0, 10), 'day-0-retry'],
    ]);
  });

  it('bad options are refused, naming the field', async () => {
    const sim = await Sim.create();
    const m = sim.machine();
    const e = await sim.settle(withLease(L, async () => 1, { ...opts(sim, m, 'a'), runOnce: { every: 'week' } as never, waitMs: -1 })).catch((x: unknown) => x);
    expect(e).toBeInstanceOf(ValidationError);
    expect((e as ValidationError).fields.sort()).toEqual(['runOnce', 'waitMs']);
    const t = await sim.settle(withLease(L, async () => 1, { ...opts(sim, m, 'a'), renewDeadlineMs: 5_000 })).catch((x: unknown) => x);
    expect((t as ValidationError).message).toMatch(/^invalid withLease options for lease "nightly": renewDeadlineMs: must be < leaseDurationMs/);
  });

  it('a second run in the window skips; a failed run leaves it open; a late run of an older window skips too (many invocations, each window run once)', async () => {
    const { sim, spans, run } = await world();
    const results: string[] = [];
    for (const [i, fails] of [[1, false], [2, false], [3, true], [4, false], [5, false], [6, false]] as const) {
      const window = i <= 2 || i === 6 ? 'w1' : 'w2'; // the 6th: a late invocation of the older window
      const r = await sim.settle(run(`inv-${i}`, async () => { if (fails) throw new Error('the job failed'); return i; }, { runOnce: { window } }), `invocation ${i}`).then((x) => x.status, () => 'error');
      results.push(`${window}: ${r}`);
    }
    expect(results).toEqual(['w1: ran', 'w1: skipped', 'w2: error', 'w2: ran', 'w2: skipped', 'w1: skipped']);
    const rows = new RunOnceStore(sim.client, sim.names.candidates);
    expect((await rows.read(L, keyedWindowRow('w2'))).runs).toEqual([expect.objectContaining({ window: 'w2', holder: 'inv-4', fencingToken: spans[2]!.token })]);
    expect((await rows.read(L, keyedWindowRow('w1'))).runs).toEqual([expect.objectContaining({ window: 'w1', holder: 'inv-1' })]);
    expect(spans.map((s) => s.who)).toEqual(['inv-1', 'inv-3', 'inv-4']);
  });
});

/**
 * Operators as they are: two at once, slow to answer, Ctrl-C at the question, a write whose answer
 * never came, a change already made, a folder given for a file. (An operator's review, 2026-12-05.)
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { QUESTION, assumeYes } from '../../lib/cli/confirm.js';
import { cliContext, type CliContext } from '../../lib/cli/context.js';
import { CliError, explain } from '../../lib/cli/errors.js';
import { afterChange, main } from '../../lib/cli/main.js';
import { preempt } from '../../lib/cli/priority.js';
import { release } from '../../lib/cli/release.js';
import { manualClock, type ManualClock } from '../../lib/clock.js';
import { CandidateStore, type CandidatePatch, type CandidateRead } from '../../lib/stores/candidate-store.js';
import { LeaseStore } from '../../lib/stores/lease-store.js';
import { MIN, NOW, SEC, cand, lease } from '../fixtures.js';
import { aheadProxy } from '../proxy.js';
import { cliHarness, runMain, scripted, type CliHarness } from './harness.js';

let h: CliHarness;
const at = () => manualClock(NOW + 3 * SEC);

beforeAll(async () => {
  h = await cliHarness('cli-operators');
});
afterAll(() => h.t.drop());

/** The CLI in-process on a terminal: `answer` is called at the question and returns what is typed (undefined: nothing, stdin left open). */
async function atTerminal(argv: string[], clock: ManualClock, answer: () => Promise<string | undefined> | string | undefined) {
  const stdin = new PassThrough();
  const out: string[] = [];
  const err: string[] = [];
  const code = await main([...h.target, ...argv], {
    out: (t) => out.push(t),
    err: (t) => err.push(t),
    color: false,
    env: {},
    clock,
    stdin,
    stdinIsTTY: true,
    prompt: (t) => {
      err.push(t);
      void Promise.resolve(answer()).then((typed) => typed !== undefined && stdin.write(`${typed}\n`));
    },
  });
  return { code, out: out.join('\n'), err: err.join('\n') };
}

const quiet = (clock: ManualClock): CliContext => cliContext(h.t.client, { tablePrefix: h.prefix, tables: h.t.names }, { clock, sink: { out: () => {}, err: () => {}, color: false }, output: 'table', confirm: assumeYes });

/** Lease `name` held by the first of `candidates` ([name, emulation, binary] each), and those candidates. */
async function seedLeaseWith(name: string, candidates: [string, string, string][]): Promise<void> {
  await h.seedLease(lease(candidates[0]![0], { name }));
  for (const [c, emulation, binary] of candidates) await h.seedCandidate(cand(c, emulation, binary, { leaseName: name }));
}

/** A candidates store whose write of `mine` on `lease` lands just after another operator's `set` on `theirs`. */
function racing(lease: string, mine: string, theirs: string, set: CandidatePatch['set']): CandidateStore {
  return new (class extends CandidateStore {
    override async write(read: CandidateRead, patch: CandidatePatch) {
      if (read.key['name'] === mine) await super.write(await this.read(lease, theirs), { set });
      return super.write(read, patch);
    }
  })(h.t.client, h.t.names.candidates);
}

describe('two operators preempt one lease at once', () => {
  beforeAll(async () => {
    await seedLeaseWith('two-ops', [['a1', '1.31.0', '1.31.0'], ['a2', '1.30.0', '1.31.0'], ['a3', '1.31.0', '1.31.0']]);
  });

  it('a pin that landed while the question waited: the other is refused, nothing written (both said "pinned")', async () => {
    const clock = at();
    const r = await atTerminal(['preempt', 'two-ops', '--to', 'a3'], clock, async () => {
      // the other operator, answering at once, pins a2 at the same priority meanwhile
      const other = await h.run(['preempt', 'two-ops', '--to', 'a2', '--yes'], { clock: at() });
      expect(other.code).toBe(0);
      return 'y';
    });
    expect(r.code).toBe(1);
    expect(r.err.split('\n').at(-1)).toBe(
      'error: another pin landed on lease two-ops while this one was asked: a2 at priority 1; the pin shown (1) no longer puts a3 above every other candidate - nothing was written; run the command again',
    );
    expect((await h.candidates.read('two-ops', 'a3')).item?.priority).toBeUndefined();
    expect((await h.candidates.read('two-ops', 'a2')).item).toMatchObject({ priority: 1 });
  });

  it('a pin that landed between that read and the write, ranked above this one: the command says its pin does not preempt', async () => {
    await seedLeaseWith('two-ops-late', [['b1', '1.31.0', '1.31.0'], ['b2', '1.30.0', '1.31.0'], ['b3', '1.31.0', '1.31.0']]);
    // the other operator's write of b2's pin lands just before this one's write of b3's
    const ctx = quiet(at());
    ctx.candidates = racing('two-ops-late', 'b3', 'b2', { priority: 1, priorityExpiresAt: NOW + 10 * MIN });
    const e = await preempt(ctx, { lease: 'two-ops-late', to: 'b3', for: 10 * MIN }).catch((x: unknown) => x);
    expect(e).toBeInstanceOf(CliError);
    expect((e as CliError).message).toBe(
      'pinned b3 on lease two-ops-late at priority 1, but another pin landed at the same time: b2 at priority 1 - so b3 is not elected; run `conclave preempt two-ops-late --to b3` again to pin it above, or `conclave set-priority two-ops-late b3 --clear` to drop this pin',
    );
    // what it wrote stands, and the message says so
    expect((await h.candidates.read('two-ops-late', 'b3')).item).toMatchObject({ priority: 1 });
    expect(ctx.progress.written).toBeDefined();
  });

  it('an equal pin that landed on a candidate ranked below this one: the preempt stands, and says so', async () => {
    await seedLeaseWith('two-ops-below', [['c1', '1.31.0', '1.31.0'], ['c2', '1.32.0', '1.32.0'], ['c3', '1.30.0', '1.30.0']]);
    const ctx = quiet(at());
    ctx.candidates = racing('two-ops-below', 'c3', 'c2', { priority: 1 });
    await preempt(ctx, { lease: 'two-ops-below', to: 'c3', for: 10 * MIN });
    expect((await h.candidates.read('two-ops-below', 'c3')).item).toMatchObject({ priority: 1 });
  });
});

describe('a slow answer', () => {
  it('set-priority --for 1m answered 25 s after the question: the pin lasts 1m from the answer (it lasted 35 s)', async () => {
    await h.seedLease(lease('s1', { name: 'slow' }));
    await h.seedCandidate(cand('s2', '1.31.0', '1.31.0', { leaseName: 'slow' }));
    const clock = at();
    const r = await atTerminal(['set-priority', 'slow', 's2', '2', '--for', '1m'], clock, () => {
      clock.advance(25 * SEC);
      return 'y';
    });
    expect(r.code).toBe(0);
    expect(r.out.split('\n')[0]).toBe('set the priority of s2 on lease slow to 2, until in 1m (2026-01-01T12:01:28.000Z)');
    expect((await h.candidates.read('slow', 's2')).item).toMatchObject({ priority: 2, priorityExpiresAt: NOW + 28 * SEC + MIN });
  });

  it('Ctrl-C at the question of any write: not confirmed, exit 130 (it was 1), on a line of its own after the ^C the terminal echoes, nothing written, though "y" is typed after (set-priority died of SIGINT with no word)', async () => {
    await h.seedCandidate(cand('s3', '1.31.0', '1.31.0', { leaseName: 'slow' }));
    const r = await atTerminal(['set-priority', 'slow', 's3', '4'], at(), () => {
      process.emit('SIGINT'); // what Node does for Ctrl-C when the CLI listens for it
      return 'y';
    });
    expect(r.code).toBe(130);
    // before: "Apply this change? [y/N] ^Cerror: not confirmed (no answer); …", exit 1
    expect(r.err.split('\n').slice(-3)).toEqual([QUESTION, '', 'error: not confirmed (interrupted); nothing was written']);
    expect((await h.candidates.read('slow', 's3')).item?.priority).toBeUndefined();
    expect(process.listenerCount('SIGINT')).toBe(0); // listened for only while it asked
  });
});

describe('a change the rows already show', () => {
  it('set-priority, set-strategy and set-locations say so, and neither ask nor write (they asked "Apply this change?" about nothing)', async () => {
    await h.seedLease(lease('u1', { name: 'same', strategy: 'OldestEmulationVersion', preferredLocations: ['us-east-1a'] }));
    await h.seedCandidate(cand('u2', '1.31.0', '1.31.0', { leaseName: 'same', priority: 3 }));
    // no --yes, and stdin no terminal: a question would end in "not confirmed"
    const p = await h.run(['set-priority', 'same', 'u2', '3'], { clock: at() });
    expect(p).toMatchObject({ code: 0, out: '', err: 'u2 on lease same already has priority 3 with no expiry; nothing to change' });
    const s = await h.run(['set-strategy', 'same', 'OldestEmulationVersion'], { clock: at() });
    expect(s).toMatchObject({ code: 0, out: '', err: 'the strategy of lease same is already OldestEmulationVersion; nothing to change' });
    const l = await h.run(['set-locations', 'same', 'us-east-1a'], { clock: at() });
    expect(l).toMatchObject({ code: 0, out: '', err: 'the preferred locations of lease same are already us-east-1a; nothing to change' });
    expect((await h.leases.read('same')).item?.revision).toBe(1);
    expect((await h.candidates.read('same', 'u2')).item?.revision).toBe(1);
    // -o json: the row as it stands
    expect(JSON.parse((await h.run(['set-priority', 'same', 'u2', '3', '-o', 'json'], { clock: at() })).out)).toMatchObject({ name: 'u2', priority: 3, revision: 1 });
  });
});

describe("this machine's clock 10 minutes slow", () => {
  // found by a review (2026-12-05): `--for 5m` stamped the pin's expiry on this machine's clock, so
  // the coordinator (on DynamoDB's time) found it over already, while the CLI said it was pinned
  it("a pin's expiry is stamped on DynamoDB's time, measured from its answers", async () => {
    const AHEAD_MS = 10 * MIN;
    const proxy = await aheadProxy(h.endpoint, AHEAD_MS);
    try {
      const now = Date.now();
      await h.seedCandidate(cand('s1', '1.30.0', '1.30.0', { leaseName: 'skewed', renewTime: now + AHEAD_MS, createdAt: now + AHEAD_MS }));
      const argv = h.target.map((a) => (a === h.endpoint ? proxy.endpoint : a));
      expect(argv).toContain(proxy.endpoint);
      const r = await runMain([...argv, 'set-priority', 'skewed', 's1', '5', '--for', '5m', '--yes']);
      expect(r.code).toBe(0);
      const expires = (await h.candidates.read('skewed', 's1')).item!.priorityExpiresAt!;
      // DynamoDB's now plus 5 minutes (its Date header whole seconds, measured across a round trip: a
      // minute covers a machine however busy); this machine's now plus 5 minutes, before the fix
      expect(Math.abs(expires - (now + AHEAD_MS + 5 * MIN))).toBeLessThan(MIN);
    } finally {
      await proxy.close();
    }
  });
});

describe('a fault after a change was confirmed or written', () => {
  const target = { tablePrefix: 'x', tables: { leases: 'x-leases', candidates: 'x-candidates', identities: 'x-identities' }, endpoint: 'http://127.0.0.1:9' };
  const timeout = () => Object.assign(new Error('socket timed out'), { name: 'TimeoutError' });

  it('confirmed: the message says the change may have landed, and how to see it (it said only "gave no answer")', async () => {
    const e = timeout();
    const told = afterChange(await explain(e, target), e, { confirmed: { lease: 'jobs', what: 'change candidate w1 of lease jobs' }, sent: true });
    expect((told as CliError).message).toMatch(
      /^DynamoDB at http:\/\/127\.0\.0\.1:9 gave no answer within --request-timeout .*; the change confirmed \(change candidate w1 of lease jobs\) may have landed, its answer lost - `conclave describe lease jobs` shows whether it did, and the command run again shows what is left to change \(every write is conditional: none is made twice\)$/,
    );
  });

  it('written: the message says what stands', async () => {
    const e = Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' });
    const told = afterChange(await explain(e, target), e, { confirmed: { lease: 'jobs', what: 'x' }, sent: true, written: { lease: 'jobs', what: 'lease jobs: preferredHolder w2' } });
    expect((told as CliError).message).toMatch(/; before that, this command wrote \(lease jobs: preferredHolder w2\): it stands - `conclave describe lease jobs` shows the lease now$/);
  });

  it("DynamoDB's own failure (a 5xx past the SDK's tries) is told as passing, not as a bug, and after a confirmed write as one that may have landed", async () => {
    // an endpoint answering every request as DynamoDB does when it fails: HTTP 500, InternalServerError
    const server = createServer((req, res) => {
      req.resume();
      req.on('end', () => {
        res.writeHead(500, { 'content-type': 'application/x-amz-json-1.0', 'x-amzn-RequestId': 'r-1', date: new Date().toUTCString() });
        res.end(JSON.stringify({ __type: 'com.amazonaws.dynamodb.v20120810#InternalServerError', message: 'Internal error' }));
      });
    });
    await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok));
    const endpoint = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    try {
      const r = await runMain(['--endpoint', endpoint, 'get', 'leases']);
      // it said "unexpected error (a bug: please report it)" with a stack
      expect(r.code).toBe(1);
      expect(r.err).toMatch(new RegExp(`^error: DynamoDB at ${endpoint.replace(/\./g, '\\.')} failed \\(InternalServerError: Internal error\\) and the SDK's 3 tries ran out - the command stopped there; run it again in a moment`));
      expect(r.err).not.toMatch(/a bug/);
    } finally {
      await new Promise((ok) => server.close(ok));
    }
    const e = Object.assign(new Error('Internal error'), { name: 'InternalServerError', $fault: 'server', $metadata: { httpStatusCode: 500 } });
    const told = afterChange(await explain(e, target), e, { confirmed: { lease: 'jobs', what: 'change candidate w1 of lease jobs' }, sent: true });
    expect((told as CliError).message).toMatch(/failed \(InternalServerError: Internal error\).*; the change confirmed \(change candidate w1 of lease jobs\) may have landed, its answer lost/);
  });

  it('nothing confirmed, or a fault that is no passing one: told as it was', async () => {
    const e = timeout();
    const plain = await explain(e, target);
    expect(afterChange(plain, e, {})).toBe(plain);
    const denied = Object.assign(new Error('no'), { name: 'AccessDeniedException' });
    const deniedTold = await explain(denied, target);
    expect(afterChange(deniedTold, denied, { confirmed: { lease: 'jobs', what: 'x' }, sent: true })).toBe(deniedTold);
  });

  it("preempt: a fault in its read before the write is told as it is: nothing was sent (a review: it said the change may have landed)", async () => {
    await seedLeaseWith('rv', [['r1', '1.31.0', '1.31.0'], ['r2', '1.30.0', '1.31.0'], ['r3', '1.31.0', '1.31.0']]);
    const before = (await h.candidates.read('rv', 'r3')).item!;
    const ctx = quiet(at());
    let lists = 0;
    let writes = 0;
    ctx.candidates = new (class extends CandidateStore {
      override async list(l: string) {
        if (++lists === 2) throw timeout(); // the read just before the write (the first is the snapshot's)
        return super.list(l);
      }
      override async write(...a: Parameters<CandidateStore['write']>) {
        writes++;
        return super.write(...a);
      }
    })(h.t.client, h.t.names.candidates);
    const e = await preempt(ctx, { lease: 'rv', to: 'r3', for: 10 * MIN }).catch((x: unknown) => x);
    const told = afterChange(await explain(e, target), e, ctx.progress) as CliError;
    expect(writes).toBe(0);
    expect((await h.candidates.read('rv', 'r3')).item!.revision).toBe(before.revision);
    expect(ctx.progress.confirmed).toBeDefined();
    expect(told.message).not.toMatch(/may have landed/);
    expect(told.message).toMatch(/gave no answer within --request-timeout/);
  });

  it('release: a read of its wait that failed is read again at the next poll (one failed read ended the wait)', async () => {
    await h.seedLease(lease('r1', { name: 'rel-fault' }));
    await h.seedCandidate(cand('r1', '1.31.0', '1.31.0', { leaseName: 'rel-fault' }));
    await h.seedCandidate(cand('r2', '1.30.0', '1.31.0', { leaseName: 'rel-fault' }));
    let reads = 0;
    class Flaky extends LeaseStore {
      override async read(name: string) {
        // the first read of the wait (the third: the snapshot's, the ask's) meets no answer
        if (++reads === 2) throw timeout();
        return super.read(name);
      }
    }
    const clock = at();
    const lines: string[] = [];
    const ctx = cliContext(h.t.client, { tablePrefix: h.prefix, tables: h.t.names }, { clock, sink: { out: (t) => lines.push(t), err: (t) => lines.push(t), color: false }, output: 'table', confirm: assumeYes });
    ctx.leases = new Flaky(h.t.client, h.t.names.leases);
    // the holder releases while the wait sleeps after the failed read
    const pace = scripted([() => h.leases.releaseTerm('rel-fault', { holderIdentity: 'r1', fencingToken: 7 }, clock.now())], clock);
    await release(ctx, { lease: 'rel-fault', force: false }, pace);
    expect(lines).toContain('a read of lease rel-fault failed (TimeoutError: socket timed out); reading again every 500 ms (Ctrl-C stops)');
    expect(lines).toContain('r1 yielded lease rel-fault: its term (fencing token 7) is over; writes fenced with it fail from now on');
    expect((await h.leases.read('rel-fault')).item?.holderIdentity).toBeUndefined();
  });
});

describe('events --events-file', () => {
  it('a folder: an error naming the option and the file in it, no stack trace (it printed "unexpected error (a bug …)")', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'conclave-events-'));
    for (const follow of [[], ['--follow']]) {
      const r = await runMain(['events', '--events-file', dir, ...follow]);
      expect(r).toMatchObject({ code: 1, err: `error: --events-file ${dir} is a folder, not the events file - pass the file in it, such as ${join(dir, 'events.jsonl')} (\`conclave-local --events-dir DIR\` writes DIR/events.jsonl)` });
    }
  });
});

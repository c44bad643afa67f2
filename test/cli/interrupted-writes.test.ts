/**
 * Ctrl-C (or SIGTERM) after a change is confirmed, while it is being written. A review (2026-12-06,
 * eighth) drove `preempt` on a slow link: Ctrl-C 7 s after `y` showed `^C` and nothing else, the
 * process killed by SIGINT, yet the pin had landed; 1.5 s after (the read before the write) the
 * same silence, and nothing written. An interrupt was caught only at the question and in waits.
 * Now, once confirmed, the command ends at once saying what stands: nothing sent ("nothing was
 * written"), or a write sent and unanswered (it may have landed, and the command that shows
 * whether it did), and `release --force`'s two writes each told; no request is sent after it.
 *
 * The real bin in a child process, its requests through a proxy that holds the one under test
 * unanswered (test/proxy.ts holdingProxy); the signal is sent once the proxy holds it, and what
 * reached DynamoDB is read after the child has exited: no timing.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CliError, explain } from '../../lib/cli/errors.js';
import { afterChange, interruptedLine } from '../../lib/cli/main.js';
import { SESSION_COMPONENT, sessionKey } from '../../lib/schemas/identity.js';
import { IdentityStore } from '../../lib/stores/identity-store.js';
import { MIN, cand, lease } from '../fixtures.js';
import { holdingProxy } from '../proxy.js';
import { waitFor } from '../sdk/harness.js';
import { binChild, cliHarness, runMain, type CliHarness } from './harness.js';

let h: CliHarness;
let identities: IdentityStore;
beforeAll(async () => {
  h = await cliHarness('cli-interrupted');
  identities = new IdentityStore(h.t.client, h.t.names.identities);
});
afterAll(() => h.t.drop());

/** Lease `name` held by p1 (a long term: the bin runs on the real clock), candidates p1 and p2, near the real time. */
async function seeded(name: string) {
  const now = Date.now();
  await h.seedLease(lease('p1', { name, renewTime: now, acquireTime: now - MIN, leaseDurationSeconds: 3_600 }));
  await h.seedCandidate(cand('p1', '1.30.0', '1.30.0', { leaseName: name, renewTime: now }));
  await h.seedCandidate(cand('p2', '1.31.0', '1.31.0', { leaseName: name, renewTime: now }));
}

/** Lease `name` held by a1 on session s-NAME (renewed now), candidates a1 and a2: `release --force` marks the session, then ends the term. */
async function sessionHeld(name: string) {
  const now = Date.now();
  await h.seedLease(lease('a1', { name, holderInstance: 'a1_1@p1', session: `s-${name}`, leaseDurationSeconds: 3_600, renewTime: now - MIN, acquireTime: now - MIN }));
  await h.seedCandidate(cand('a1', '1.30.0', '1.30.0', { leaseName: name, renewTime: now }));
  await h.seedCandidate(cand('a2', '1.31.0', '1.31.0', { leaseName: name, renewTime: now }));
  await identities.write(
    { key: { component: SESSION_COMPONENT, name: `s-${name}` }, item: undefined, revision: 0 },
    { set: { holderIdentity: `s-${name}_1`, process: 'p1', hostname: 'web-1', leaseDurationSeconds: 3_600, acquireTime: now - 10 * MIN, renewTime: now } },
  );
}

/** A request as the proxy saw it: its operation and table. */
interface Seen {
  operation: string;
  table: string;
}

/**
 * The bin run on `argv` through a proxy that holds the first request `hold` picks (every request
 * seen is recorded); once it is held, `signal` is sent to the child. Resolves with how the child
 * ended, what it printed and what the proxy saw; the held request is passed on after the exit.
 */
async function interruptedAt(argv: string[], hold: (s: Seen, seen: readonly Seen[]) => boolean, signal: NodeJS.Signals) {
  const seen: Seen[] = [];
  let held = false;
  const proxy = await holdingProxy(h.endpoint, (operation, body) => {
    const s = { operation, table: String((JSON.parse(body) as { TableName?: unknown }).TableName) };
    seen.push(s);
    if (held || !hold(s, seen)) return false;
    held = true;
    return true;
  });
  proxy.holding(true);
  try {
    const p = binChild(['--endpoint', proxy.endpoint, '--table-prefix', h.prefix, ...argv]);
    await waitFor('the request held', () => proxy.held() === 1 || p.child.exitCode !== null);
    p.child.kill(signal);
    const status = await new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
      if (p.child.exitCode !== null || p.child.signalCode !== null) resolve({ code: p.child.exitCode, signal: p.child.signalCode });
      else p.child.once('exit', (code, sig) => resolve({ code, signal: sig }));
    });
    const sent = [...seen];
    proxy.release(); // the held request reaches DynamoDB after all: what "may have landed" means
    return { ...status, out: p.out(), err: p.err(), sent };
  } finally {
    await proxy.close();
  }
}

const writes = (seen: readonly Seen[]) => seen.filter((s) => s.operation === 'UpdateItem' || s.operation === 'PutItem' || s.operation === 'DeleteItem');

describe('preempt, interrupted once confirmed', () => {
  it("Ctrl-C while the pin's write is unanswered: exit 130, says it may have landed and how to see it (it died of SIGINT with no word)", async () => {
    await seeded('int-sent');
    const r = await interruptedAt(['preempt', 'int-sent', '--to', 'p2', '--yes'], (s) => s.operation === 'UpdateItem', 'SIGINT');
    expect({ code: r.code, signal: r.signal }).toEqual({ code: 130, signal: null });
    expect(r.out).toBe('');
    expect(r.err.trimEnd().split('\n').at(-1)).toBe(
      'error: interrupted while writing (change candidate p2 of lease int-sent): the write was sent and may have landed, its answer not awaited - `conclave describe lease int-sent` shows whether it did, and the command run again shows what is left to change (every write is conditional: none is made twice)',
    );
    expect(writes(r.sent)).toHaveLength(1); // the write held, and no try of it after
    // and it lands: the proxy passes it on after the exit
    await waitFor('the pin landed', async () => (await h.candidates.read('int-sent', 'p2')).item?.priority === 1);
  });

  it('SIGTERM during the read just before the write: exit 143, "nothing was written", and the write is never sent', async () => {
    await seeded('int-unsent');
    // the candidates' second listing: the snapshot's is the first, the one just before the write the second
    const candidatesQuery = (s: Seen, seen: readonly Seen[]) => s.operation === 'Query' && s.table === h.t.names.candidates && seen.filter((x) => x.operation === 'Query' && x.table === h.t.names.candidates).length === 2;
    const r = await interruptedAt(['preempt', 'int-unsent', '--to', 'p2', '--yes'], candidatesQuery, 'SIGTERM');
    expect({ code: r.code, signal: r.signal }).toEqual({ code: 143, signal: null });
    expect(r.out).toBe('');
    expect(r.err.trimEnd().split('\n').at(-1)).toBe('error: interrupted before the write was sent: nothing was written (the change confirmed: change candidate p2 of lease int-unsent) - run the command again to make it');
    expect(writes(r.sent)).toEqual([]);
    expect((await h.candidates.read('int-unsent', 'p2')).item?.priority).toBeUndefined();
  });
});

describe('at a terminal, answered y', () => {
  it('Ctrl-C while the write is unanswered: exit 130, the message on a line of its own after the ^C, and no listener left behind', async () => {
    await seeded('int-tty');
    const proxy = await holdingProxy(h.endpoint, (operation) => operation === 'UpdateItem');
    proxy.holding(true);
    try {
      const run = runMain(['--endpoint', proxy.endpoint, '--table-prefix', h.prefix, 'set-priority', 'int-tty', 'p2', '5'], { answer: 'y' });
      await waitFor('the write held', () => proxy.held() === 1);
      process.emit('SIGINT'); // what Node does for Ctrl-C when the CLI listens for it
      const r = await run;
      expect(r.code).toBe(130);
      expect(r.err.split('\n').slice(-2)).toEqual([
        '',
        'error: interrupted while writing (change candidate p2 of lease int-tty): the write was sent and may have landed, its answer not awaited - `conclave describe lease int-tty` shows whether it did, and the command run again shows what is left to change (every write is conditional: none is made twice)',
      ]);
      expect(r.out).toBe('');
      expect(process.listenerCount('SIGINT')).toBe(0);
    } finally {
      proxy.release();
      await proxy.close();
    }
  });
});

describe('release --force, interrupted between its two writes: each told', () => {
  it("Ctrl-C while the session's mark is unanswered: it may have landed, and the term's end was not sent", async () => {
    await sessionHeld('int-mark');
    const r = await interruptedAt(['release', 'int-mark', '--force', '--yes'], (s) => s.operation === 'UpdateItem' && s.table === h.t.names.identities, 'SIGINT');
    expect({ code: r.code, signal: r.signal }).toEqual({ code: 130, signal: null });
    expect(r.err.trimEnd().split('\n').at(-1)).toBe(
      "error: interrupted while writing (the end of a1's term (fencing token 7) marked on session s-int-mark): the write was sent and may have landed, its answer not awaited; the end of the term on lease int-mark was not sent - `conclave describe lease int-mark` shows whether the mark did, and the command run again shows what is left to change (every write is conditional: none is made twice)",
    );
    expect(writes(r.sent).map((s) => s.table)).toEqual([h.t.names.identities]);
    const key = sessionKey('s-int-mark');
    await waitFor('the mark landed', async () => (await identities.read(key.component, key.name)).item?.endedTerms?.['int-mark'] === 7);
    expect((await h.leases.read('int-mark')).item?.holderIdentity).toBe('a1'); // the term's end never sent
  });

  it("Ctrl-C while the term's end is unanswered: the mark landed and stands, the end may have landed", async () => {
    await sessionHeld('int-end');
    const r = await interruptedAt(['release', 'int-end', '--force', '--yes'], (s) => s.operation === 'UpdateItem' && s.table === h.t.names.leases, 'SIGINT');
    expect({ code: r.code, signal: r.signal }).toEqual({ code: 130, signal: null });
    expect(r.err.trimEnd().split('\n').at(-1)).toBe(
      "error: interrupted while writing (the end of a1's term on lease int-end (fencing token 7)): the write was sent and may have landed, its answer not awaited; before it, this command wrote (the end of a1's term (fencing token 7) marked on session s-int-end), which stands - `conclave describe lease int-end` shows whether the last write did, and the command run again shows what is left to change (every write is conditional: none is made twice)",
    );
    expect(writes(r.sent).map((s) => s.table)).toEqual([h.t.names.identities, h.t.names.leases]);
    await waitFor("the term's end landed", async () => (await h.leases.read('int-end')).item?.lastHolderIdentity === 'a1');
  });
});

describe('release, interrupted before anything is confirmed', () => {
  // A review (2026-12-07, twelfth): Ctrl-C while `release other --force -y`'s first read was in
  // flight (a proxy delaying reads 2.5 s) printed "released lease other: …" with exit 0, the UpdateItem
  // sent 5 s after the Ctrl-C: release listened for Ctrl-C from its start (to end its wait), so Node's
  // default no longer ended the process, and nothing looked at it before the write. Now it listens
  // only once it waits on the term: before, the signal ends it, as every other command.
  it.each([
    { how: '--force', argv: ['--force', '--yes'], signal: 'SIGINT' as const },
    { how: '--force', argv: ['--force', '--yes'], signal: 'SIGTERM' as const },
    { how: 'asking the holder to yield', argv: ['--yes'], signal: 'SIGINT' as const },
  ])('$how, $signal while the lease is read: ended by the signal, as any command before a confirmation; nothing is sent', async ({ argv, signal }) => {
    const name = `int-read-${argv.length}-${signal}`;
    await seeded(name);
    const r = await interruptedAt(['--request-timeout', '1000', 'release', name, ...argv], (s) => s.operation === 'GetItem' && s.table === h.t.names.leases, signal);
    expect({ code: r.code, signal: r.signal }, r.err).toEqual({ code: null, signal });
    expect(r.out).toBe('');
    expect(writes(r.sent)).toEqual([]);
    expect((await h.leases.read(name)).item).toMatchObject({ holderIdentity: 'p1', revision: 1 });
    expect((await h.leases.read(name)).item?.preferredHolder).toBeUndefined();
  });
});

describe('what stands, as told', () => {
  const mark = "the end of a1's term (fencing token 7) marked on session s-x";
  const ended = "the end of a1's term on lease x (fencing token 7)";
  const confirmed = { lease: 'x', what: 'end the term of a1 on lease x (fencing token 7) without asking it' };

  it('interrupted once every write landed (a read after it in flight): it stands, and nothing after it was sent', () => {
    expect(interruptedLine({ confirmed, sent: true, written: { lease: 'x', what: "lease x: a1's term (fencing token 7) ended" } })).toMatchObject({
      text: "interrupted after this command wrote (lease x: a1's term (fencing token 7) ended): it stands, and nothing after it was sent - `conclave describe lease x` shows the lease now",
    });
  });

  it("a fault on release --force's term end after its mark landed: both told (it said only that the mark stands)", async () => {
    const e = Object.assign(new Error('socket timed out'), { name: 'TimeoutError' });
    const target = { tablePrefix: 'x', tables: { leases: 'x-leases', candidates: 'x-candidates', identities: 'x-identities' }, endpoint: 'http://127.0.0.1:9' };
    const told = afterChange(await explain(e, target), e, { confirmed, sent: true, written: { lease: 'x', what: mark }, inFlight: { what: ended } }) as CliError;
    expect(told.message).toMatch(new RegExp(`; ${ended.replace(/[()]/g, '\\$&')} may have landed, its answer lost; before it, this command wrote \\(${mark.replace(/[()]/g, '\\$&')}\\), which stands - \`conclave describe lease x\` shows the lease now$`));
  });
});

/**
 * The CLI run while a table is still being made (`cdk deploy` or local mode creating it): DynamoDB
 * answers data-plane requests on a CREATING table with ResourceNotFoundException, as for one that
 * is not there. A command looks at the tables (DescribeTable) as the SDK does (TableWait): one
 * CREATING is waited for, told in one line on stderr, until it answers or Ctrl-C; a prefix naming
 * no table is still refused at once with the same message. DynamoDB Local never shows CREATING, so
 * a loopback proxy in front of it answers as AWS does (test/proxy.ts, creatingTableProxy). Time is
 * the test's: each wait asked for moves it at once.
 */
import { PassThrough } from 'node:stream';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { QUESTION } from '../../lib/cli/confirm.js';
import { main } from '../../lib/cli/main.js';
import { TABLE_WAIT_MS } from '../../lib/table-wait.js';
import { SESSION_COMPONENT } from '../../lib/schemas/identity.js';
import { IdentityStore } from '../../lib/stores/identity-store.js';
import { LeaseStore } from '../../lib/stores/lease-store.js';
import { CandidateStore } from '../../lib/stores/candidate-store.js';
import { manualClock } from '../../lib/clock.js';
import type { Candidate } from '../../lib/schemas/candidate.js';
import type { Lease } from '../../lib/schemas/lease.js';
import { NOW, SEC, cand, lease } from '../fixtures.js';
import { creatingTableProxy, drivenClock } from '../proxy.js';
import { testTables, type TestTables } from '../support.js';
import { runMain, scripted } from './harness.js';

let t: TestTables;
const T0 = 1_800_000_000_000; // the driven clock's start: the seeded term is judged by it
beforeAll(async () => {
  t = await testTables('cli-creating');
  await new LeaseStore(t.client, t.names.leases).write(LeaseStore.readOf('held', undefined), {
    set: { holderIdentity: 'a1', holderInstance: 'a1_1@p1', acquireTime: T0, renewTime: T0, leaseDurationSeconds: 3_600, leaseTransitions: 1, fencingToken: 42 },
  });
  await new IdentityStore(t.client, t.names.identities).write({ key: { component: SESSION_COMPONENT, name: 's-1' }, item: undefined, revision: 0 }, { set: { holderIdentity: 's-1_1', process: 'p2', hostname: 'web-1', leaseDurationSeconds: 3_600, acquireTime: T0, renewTime: T0 } });
  await new LeaseStore(t.client, t.names.leases).write(LeaseStore.readOf('on-session', undefined), {
    set: { holderIdentity: 'b1', holderInstance: 'b1_1@p2', session: 's-1', acquireTime: T0, renewTime: T0, leaseDurationSeconds: 3_600, leaseTransitions: 1, fencingToken: 7 },
  });
});
afterAll(async () => t.drop());

/** A fixture's fields as a store writes them: its key and revision are the store's. */
const withoutKey = ({ name: _n, revision: _r, ...set }: Lease) => set;
const withoutCandidateKey = ({ leaseName: _l, name: _n, revision: _r, ...set }: Candidate) => set;
const prefix = () => t.names.leases.replace(/-leases$/, '');
const WAITING = /^waiting for table (\S+), still being created \(CREATING\): trying again until it answers \(Ctrl-C to stop\)$/;

/** `conclave --endpoint <proxy> --table-prefix <prefix> …argv` until it ends, the clock driven meanwhile; Ctrl-C is `stop`. */
async function run(endpoint: string, argv: string[], c: ReturnType<typeof drivenClock>, stop = new AbortController()) {
  const pace = { signal: stop.signal, sleep: (ms: number) => c.clock.sleep(ms, stop.signal) };
  let done: Awaited<ReturnType<typeof runMain>> | undefined;
  void runMain(['--endpoint', endpoint, ...argv], { clock: c.clock, pace }).then((r) => void (done = r));
  await c.drive(() => done !== undefined);
  return { ...done!, tookMs: c.waited() };
}

describe('a CLI command on a table still being created (CREATING)', () => {
  it.each([
    ['leases', 'get leases', /^held\s+a1\s+42\b/m],
    ['leases', 'leader held', /^Leader:\s+a1$/m],
    ['leases', 'describe lease held', /^Holder:\s+a1\b/m],
    ['candidates', 'describe lease held', /^Holder:\s+a1\b/m],
    // a term held on a session: judged by the session's row
    ['identities', 'leader on-session', /^Leader:\s+b1$/m],
  ] as const)('the %s table, `conclave %s`: waits while DescribeTable says CREATING, told in one line on stderr, then answers', async (role, argv, want) => {
    const proxy = await creatingTableProxy(inject('ddbEndpoint'), t.names[role], { describe: 'creating' });
    try {
      const c = drivenClock(() => proxy.inFlight() > 0);
      proxy.creating(6);
      const r = await run(proxy.endpoint, ['--table-prefix', prefix(), ...argv.split(' ')], c);
      // before: exit 1 at the first answer, "table … does not exist"
      expect(r.code, r.err).toBe(0);
      expect(r.out).toMatch(want);
      const lines = r.err.split('\n').filter((l) => l !== '');
      expect(lines).toEqual([expect.stringMatching(WAITING)]);
      expect(lines[0]).toContain(t.names[role]);
      expect(proxy.notFound()).toBe(6);
      expect(proxy.described()).toBeGreaterThanOrEqual(6); // looked at after each
      expect(r.tookMs).toBeGreaterThan(0); // backed off between the tries, on the CLI's clock
    } finally {
      await proxy.close();
    }
  });

  it('a prefix naming no table (DescribeTable finds none either) is still refused at once, with the same message', async () => {
    const proxy = await creatingTableProxy(inject('ddbEndpoint'), 'none', { describe: 'creating' });
    try {
      const c = drivenClock(() => proxy.inFlight() > 0);
      const r = await run(proxy.endpoint, ['--table-prefix', 'no-such', 'get', 'leases'], c);
      expect(r.code).toBe(1);
      expect(r.err).toMatch(/^error: tables no-such-leases, no-such-candidates, no-such-identities do not exist at http:\/\/127\.0\.0\.1:\d+ \(prefix "no-such"\) - pass --table-prefix PREFIX/);
      expect(r.err).not.toMatch(/waiting/);
      expect(r.tookMs).toBe(0);
    } finally {
      await proxy.close();
    }
  });

  it('DescribeTable not granted: tries again for TABLE_WAIT_MS, told in one line, then says a table it lists answered "not found"', async () => {
    const proxy = await creatingTableProxy(inject('ddbEndpoint'), t.names.leases, { describe: 'denied' });
    try {
      const c = drivenClock(() => proxy.inFlight() > 0);
      proxy.creating(1_000);
      const r = await run(proxy.endpoint, ['--table-prefix', prefix(), 'get', 'leases'], c);
      expect(r.code).toBe(1);
      const lines = r.err.split('\n');
      expect(lines).toHaveLength(2);
      expect(lines[0]).toMatch(/^a table was not found and DescribeTable was refused, so whether one is being created cannot be told: trying again for 60 s \(Ctrl-C to stop\)$/);
      // the table is listed (ListTables), so not named as missing: before, "tables (none) do not exist"
      expect(lines[1]).toMatch(/^error: DynamoDB at http:\/\/127\.0\.0\.1:\d+ answered "not found" on a table it lists \(\S+-leases, \S+-candidates, \S+-identities\): one is still being created, or being deleted - run the command again once DescribeTable shows it ACTIVE/);
      expect(r.tookMs).toBeGreaterThanOrEqual(TABLE_WAIT_MS);
      expect(r.tookMs).toBeLessThan(TABLE_WAIT_MS + 10_000);
    } finally {
      await proxy.close();
    }
  });

  it('DescribeTable says ACTIVE, yet the request finds no table, twice: stops after one more try, saying so (not "DescribeTable was refused", not 60 s)', async () => {
    const proxy = await creatingTableProxy(inject('ddbEndpoint'), t.names.leases, { describe: 'active' });
    try {
      const c = drivenClock(() => proxy.inFlight() > 0);
      proxy.creating(1_000);
      const stop = new AbortController();
      c.clock.setTimer(5 * TABLE_WAIT_MS, () => stop.abort()); // before: tried again for TABLE_WAIT_MS, saying DescribeTable was refused
      const r = await run(proxy.endpoint, ['--table-prefix', prefix(), 'get', 'leases'], c, stop);
      expect(r.code).toBe(1);
      expect(r.err).not.toMatch(/refused/);
      const lines = r.err.split('\n');
      expect(lines).toEqual([
        `table ${t.names.leases} answered "not found", though DescribeTable shows it ACTIVE: trying once more (a table just made may answer so for a moment)`,
        expect.stringMatching(new RegExp(`^error: DescribeTable at http://127\\.0\\.0\\.1:\\d+ says table ${t.names.leases} is ACTIVE, yet a request on it answered "not found" again after that, so it is not a table being created - check --endpoint`)),
      ]);
      expect(proxy.notFound()).toBe(2);
      expect(r.tookMs).toBeLessThan(5_000);
    } finally {
      await proxy.close();
    }
  });

  it('a request that met the table CREATING, the table ACTIVE by the look: tried once more, and answers', async () => {
    const proxy = await creatingTableProxy(inject('ddbEndpoint'), t.names.leases, { describe: 'active' });
    try {
      const c = drivenClock(() => proxy.inFlight() > 0);
      proxy.creating(1);
      const r = await run(proxy.endpoint, ['--table-prefix', prefix(), 'get', 'leases'], c);
      expect(r.code, r.err).toBe(0);
      expect(r.out).toMatch(/^held\s+a1\s+42\b/m);
      expect(r.err).not.toMatch(/refused/);
      expect(proxy.notFound()).toBe(1);
    } finally {
      await proxy.close();
    }
  });

  it('"not found" on one table while another, unrelated, is CREATING: only the table the request named is looked at', async () => {
    const proxy = await creatingTableProxy(inject('ddbEndpoint'), t.names.leases, { describe: 'active', creatingToo: [t.names.identities] });
    try {
      const c = drivenClock(() => proxy.inFlight() > 0);
      proxy.creating(1_000);
      const stop = new AbortController();
      c.clock.setTimer(5 * TABLE_WAIT_MS, () => stop.abort()); // before: waited for the identities table, "still being created", until Ctrl-C
      const r = await run(proxy.endpoint, ['--table-prefix', prefix(), 'get', 'leases'], c, stop);
      expect(r.code).toBe(1);
      expect(r.err).not.toContain(t.names.identities);
      expect(r.err).toMatch(new RegExp(`^error: DescribeTable at \\S+ says table ${t.names.leases} is ACTIVE`, 'm'));
      expect(r.tookMs).toBeLessThan(5_000);
    } finally {
      await proxy.close();
    }
  });

  it('Ctrl-C ends the wait: exit 130, saying which table it waited for and that nothing was written', async () => {
    const proxy = await creatingTableProxy(inject('ddbEndpoint'), t.names.leases, { describe: 'creating' });
    try {
      const c = drivenClock(() => proxy.inFlight() > 0);
      proxy.creating(1_000_000); // never made
      const stop = new AbortController();
      c.clock.setTimer(30_000, () => stop.abort());
      const r = await run(proxy.endpoint, ['--table-prefix', prefix(), 'leader', 'held'], c, stop);
      expect(r.code).toBe(130);
      const lines = r.err.split('\n');
      expect(lines).toEqual([expect.stringMatching(WAITING), `error: interrupted while waiting for table ${t.names.leases} to be created; nothing was written`]);
      expect(r.out).toBe('');
      expect(r.tookMs).toBe(30_000);
    } finally {
      await proxy.close();
    }
  });
});

/**
 * `conclave release NAME --yes` on y1's term (fencing token 7; candidates y1 and y2): as it waits,
 * y1 puts its term on session `session` (its row written where the workers write it) and the
 * CLI's identities table answers "not found" for a while (CREATING); meanwhile y1 yields and the
 * coordinator elects y2 (fencing token 8).
 */
async function releaseAsTermMoves(name: string, session: string, extra: Partial<Lease> = {}) {
  const leases = new LeaseStore(t.client, t.names.leases);
  const candidates = new CandidateStore(t.client, t.names.candidates);
  await leases.write(LeaseStore.readOf(name, undefined), { set: withoutKey(lease('y1', { name, leaseDurationSeconds: 15, ...extra })) });
  for (const [c, v] of [['y1', '1.30.0'], ['y2', '1.31.0']] as const) {
    await candidates.write({ key: { leaseName: name, name: c }, item: undefined, revision: 0 }, { set: withoutCandidateKey(cand(c, v, v, { leaseName: name })) });
  }
  const proxy = await creatingTableProxy(inject('ddbEndpoint'), t.names.identities, { describe: 'creating' });
  try {
    const clock = manualClock(NOW + SEC);
    const pace = scripted(
      [
        async () => {
          await new IdentityStore(t.client, t.names.identities).write({ key: { component: SESSION_COMPONENT, name: session }, item: undefined, revision: 0 }, { set: { holderIdentity: `${session}_1`, process: 'p1', hostname: 'web-1', leaseDurationSeconds: 15, acquireTime: NOW, renewTime: clock.now() } });
          await leases.renewTerm(name, { holderIdentity: 'y1', fencingToken: 7 }, clock.now(), 15, session);
          proxy.creating(4);
        },
        async () => {
          await leases.releaseTerm(name, { holderIdentity: 'y1', fencingToken: 7 }, clock.now());
          await leases.write(await leases.read(name), { set: { holderIdentity: 'y2', acquireTime: clock.now(), renewTime: clock.now(), fencingToken: 8, leaseTransitions: 4 } });
        },
      ],
      clock,
    );
    const r = await runMain(['--endpoint', proxy.endpoint, '--table-prefix', prefix(), 'release', name, '--yes', '--timeout', '10s'], { clock, pace });
    return { ...r, lease: (await leases.read(name)).item };
  } finally {
    await proxy.close();
  }
}

/**
 * `conclave …argv` on a terminal, the operator answering "y" to each question; as the first is
 * open `table` starts answering "not found" (deleted and being created again: CREATING; or, with
 * `describe: 'active'`, while DescribeTable shows it ACTIVE) for two requests. The questions asked,
 * the exit code and stderr.
 */
async function confirmedAsTableGoes(table: string, argv: string[], describe: 'creating' | 'active' = 'creating') {
  const proxy = await creatingTableProxy(inject('ddbEndpoint'), table, { describe });
  try {
    const clock = manualClock(NOW + SEC);
    const stdin = new PassThrough();
    const questions: string[] = [];
    const err: string[] = [];
    const code = await main(['--endpoint', proxy.endpoint, '--table-prefix', prefix(), ...argv], {
      out: () => undefined,
      err: (s) => void err.push(s),
      color: false,
      env: {},
      clock,
      pace: scripted([], clock),
      stdin,
      stdinIsTTY: true,
      prompt: (q) => {
        questions.push(q);
        if (questions.length === 1) proxy.creating(2);
        stdin.write('y\n');
      },
    });
    return { code, questions, err };
  } finally {
    await proxy.close();
  }
}

/**
 * A command that wrote is not run again. The CLI runs a command again, as a whole, while a table it
 * met answers "not found" and is being created; that is only sound while nothing was written. Here
 * `release` asked the holder to yield (preferredHolder, written), and the term then moved onto a
 * session whose table answers "not found" (the identities table, not touched by anything before
 * the write): run again, it read the lease anew and, with --yes, asked the next holder to yield.
 */
describe('a table not found after a command wrote: the command is not run again', () => {
  it('release, the request to yield written, then the identities table not found while waiting: stops, saying the request stands; the next term is never asked to yield', async () => {
    const name = 'yield-then-creating';
    const r = await releaseAsTermMoves(name, 's-y1');
    // before: run again, it found y2's term (fencing token 8) and, --yes standing for it, asked y2
    // to yield to y1 (a term the operator never saw), then waited for y2 for the whole --timeout
    expect(r.err).not.toMatch(/ask y2 to yield/);
    expect(r.err.match(/^ask /gm)).toEqual(['ask ']);
    // it ended while y1's term stood, the request on it: nothing done twice, nothing on another term
    expect(r.lease).toMatchObject({ holderIdentity: 'y1', fencingToken: 7, session: 's-y1', preferredHolder: 'y2' });
    expect(r.code).toBe(1);
    expect(r.err.split('\n').at(-1)).toBe(
      `error: table ${t.names.identities}, still being created (CREATING), answered "not found" after this command wrote (lease ${name}: preferredHolder y2), so it is not run again: what it wrote stands - \`conclave describe lease ${name}\` shows the lease now, once the table answers`,
    );
  });
});

/**
 * A command the operator confirmed is not run again either: run again, it reads its rows anew and
 * asks again (or, under --yes, acts on what it finds then, unshown). Here the candidates table,
 * read before the question, answers "not found" while the question is open (deleted and being
 * created again) and DescribeTable shows it CREATING.
 */
describe('a table not found after the operator confirmed: the command is not run again', () => {
  it('set-priority, confirmed, then its write answered "not found": asks once, writes nothing, says so', async () => {
    const name = 'confirm-then-creating';
    const candidates = new CandidateStore(t.client, t.names.candidates);
    await candidates.write({ key: { leaseName: name, name: 'c1' }, item: undefined, revision: 0 }, { set: withoutCandidateKey(cand('c1', '1.30.0', '1.30.0', { leaseName: name })) });
    const { code, questions, err } = await confirmedAsTableGoes(t.names.candidates, ['set-priority', name, 'c1', '10', '--for', '30m']);
    // before: the write answered "not found", the command ran again and asked a second time
    expect(questions).toEqual([QUESTION]);
    expect(code).toBe(1);
    expect(err.at(-1)).toBe(
      `error: table ${t.names.candidates}, still being created (CREATING), answered "not found" after the change was confirmed (change candidate c1 of lease ${name}), so the command is not run again (it would read the rows anew and ask again): nothing was written - run the command again once the table answers`,
    );
    expect((await candidates.read(name, 'c1')).item?.priority).toBeUndefined();
  });

  it('set-priority, confirmed, then its write answered "not found": the change it names escapes a candidate where it passes for another', async () => {
    const name = 'confirm-then-creating-twins';
    const candidates = new CandidateStore(t.client, t.names.candidates);
    for (const c of ['worker-rn', 'worker-m']) await candidates.write({ key: { leaseName: name, name: c }, item: undefined, revision: 0 }, { set: withoutCandidateKey(cand(c, '1.30.0', '1.30.0', { leaseName: name })) });
    const { code, err } = await confirmedAsTableGoes(t.names.candidates, ['set-priority', name, 'worker-m', '10']);
    expect(code).toBe(1);
    // before: "(change candidate worker-m of lease …)", where the confirmation above it escaped the two
    expect(err.at(-1)).toContain(`after the change was confirmed (change candidate worker-\\u006d of lease ${name}), so the command is not run again`);
    expect(err.at(-1)).not.toMatch(/worker-(rn|m)\b/);
  });

  it('set-priority, confirmed, then its write answered "not found" on a table DescribeTable shows ACTIVE: says so, not "still being created"', async () => {
    const name = 'confirm-then-active';
    const candidates = new CandidateStore(t.client, t.names.candidates);
    await candidates.write({ key: { leaseName: name, name: 'c1' }, item: undefined, revision: 0 }, { set: withoutCandidateKey(cand('c1', '1.30.0', '1.30.0', { leaseName: name })) });
    const { code, questions, err } = await confirmedAsTableGoes(t.names.candidates, ['set-priority', name, 'c1', '10', '--for', '30m'], 'active');
    expect(questions).toEqual([QUESTION]);
    expect(code).toBe(1);
    // before: "... (DynamoDB at … answered "not found" on a table it lists (…): one is still being
    // created, or being deleted - run the command again once DescribeTable shows it ACTIVE …)"
    expect(err.at(-1)).not.toMatch(/still being created|being deleted/);
    expect(err.at(-1)).toBe(
      `error: table ${t.names.candidates} answered "not found", though DescribeTable shows it ACTIVE, after the change was confirmed (change candidate c1 of lease ${name}), so the command is not run again (it would read the rows anew and ask again): nothing was written - run the command again once the table answers ` +
        `(a table just made may answer so for a moment, as may one deleted and created again under its name; if it goes on, it is not a table being created: check --endpoint / --region (or CONCLAVE_ENDPOINT, AWS_REGION) and the table's name (--table-prefix, --leases-table, --candidates-table, --identities-table))`,
    );
    expect((await candidates.read(name, 'c1')).item?.priority).toBeUndefined();
  });
});

describe('release --force: the end of the term marked on its session, then the leases table not found', () => {
  it('asks once; stops, saying the mark stands (its holder ends the term at it), the lease row as it was', async () => {
    const name = 'force-then-creating';
    const leases = new LeaseStore(t.client, t.names.leases);
    const identities = new IdentityStore(t.client, t.names.identities);
    await identities.write({ key: { component: SESSION_COMPONENT, name: 's-f1' }, item: undefined, revision: 0 }, { set: { holderIdentity: 's-f1_1', process: 'p3', hostname: 'web-3', leaseDurationSeconds: 15, acquireTime: NOW, renewTime: NOW } });
    await leases.write(LeaseStore.readOf(name, undefined), { set: withoutKey(lease('f1', { name, holderInstance: 'f1_1@p3', session: 's-f1', leaseDurationSeconds: 15 })) });
    // the mark, on the identities table, lands; then the release, on the leases table, answers "not found"
    const { code, questions, err } = await confirmedAsTableGoes(t.names.leases, ['release', name, '--force']);
    // before: the command ran again and asked a second time
    expect(questions).toEqual([QUESTION]);
    expect(code).toBe(1);
    expect(err.at(-1)).toBe(
      `error: table ${t.names.leases}, still being created (CREATING), answered "not found" after this command wrote (the end of f1's term (fencing token 7) marked on session s-f1), so it is not run again: what it wrote stands - \`conclave describe lease ${name}\` shows the lease now, once the table answers`,
    );
    expect((await identities.read(SESSION_COMPONENT, 's-f1')).item?.endedTerms).toEqual({ [name]: 7 });
    expect((await leases.read(name)).item).toMatchObject({ holderIdentity: 'f1', fencingToken: 7 });
  });
});

describe('release waiting on a request already on the lease, then a table not found: the command is not run again', () => {
  it('stops, the request as it was; the next term is never asked to yield', async () => {
    const name = 'already-then-creating';
    const r = await releaseAsTermMoves(name, 's-y1a', { preferredHolder: 'y2' });
    // before: run again, it found y2's term and, --yes standing for it, asked y2 to yield to y1
    expect(r.err).not.toMatch(/^ask /m);
    expect(r.lease).toMatchObject({ holderIdentity: 'y1', fencingToken: 7, session: 's-y1a', preferredHolder: 'y2' });
    expect(r.code).toBe(1);
    expect(r.err.split('\n').at(-1)).toBe(
      `error: table ${t.names.identities}, still being created (CREATING), answered "not found" while this command waited for y1 to release lease ${name} (fencing token 7), so it is not run again (it would read the lease anew and act on the term found then): it wrote nothing; the request already on the lease stands - \`conclave describe lease ${name}\` shows the lease now, once the table answers`,
    );
  });
});

/**
 * `watch` run again by the table wait: withDb runs the command again, as a whole, once a table it
 * met answers again; watch kept its count of frames (and the terms it drew) in the run, so a run
 * again started counting from nothing and printed `--count` frames more.
 */
describe('watch --count N, a table being created between its frames', () => {
  it('watch --count 3, the leases table "not found" (CREATING) after the first frame: 3 frames in all, and the holder change across the wait still told', async () => {
    const name = 'watched';
    const leases = new LeaseStore(t.client, t.names.leases);
    await leases.write(LeaseStore.readOf(name, undefined), { set: withoutKey(lease('v1', { name })) });
    const proxy = await creatingTableProxy(inject('ddbEndpoint'), t.names.leases, { describe: 'creating' });
    try {
      const clock = manualClock(NOW + SEC);
      // after the first frame: v2 takes the lease, and the leases table answers "not found" twice
      const pace = scripted(
        [
          async () => {
            await leases.write(await leases.read(name), { set: { holderIdentity: 'v2', fencingToken: 8 } });
            proxy.creating(2);
          },
        ],
        clock,
      );
      const r = await runMain(['--endpoint', proxy.endpoint, '--table-prefix', prefix(), 'watch', '--count', '3'], { clock, pace });
      expect(r.code, r.err).toBe(0);
      expect(proxy.notFound()).toBe(2);
      expect(r.err.split('\n')).toEqual([expect.stringMatching(WAITING)]);
      // before: 4 frames (1, then 3 more from a count started again), and the change from v1 to v2 never told
      expect(r.out.match(/^conclave watch - every 1s - /gm)).toHaveLength(3);
      expect(r.out.match(/^holder changed on watched: v1 -> v2 \(fencing token 7 -> 8\)$/gm)).toHaveLength(1);
    } finally {
      await proxy.close();
    }
  });
});

import { appendFileSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CreateTableCommand, ProvisionedThroughputExceededException, type DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { cliContext } from '../../lib/cli/context.js';
import { summary } from '../../lib/cli/events.js';
import { watch } from '../../lib/cli/watch.js';
import { manualClock, systemClock } from '../../lib/clock.js';
import { localClient } from '../../lib/stores/client.js';
import { deleteTable } from '../../lib/stores/table-admin.js';
import { NOW, SEC, cand, lease } from '../fixtures.js';
import { cliHarness, runMain, scripted, type CliHarness } from './harness.js';


describe('watch', () => {
  let h: CliHarness;
  beforeAll(async () => {
    h = await cliHarness('cli-watch');
    await h.seedLease(lease('a1', { name: 'wl' }));
    await h.seedCandidate(cand('a1', '1.30.0', '1.30.0', { leaseName: 'wl' }));
    await h.seedCandidate(cand('a2', '1.30.0', '1.31.0', { leaseName: 'wl' }));
  });
  afterAll(() => h.t.drop());

  it('--count 2 draws two frames, one interval apart, and highlights a change of holder', async () => {
    const pace = scripted([
      async () => {
        await h.leases.write(await h.leases.read('wl'), { set: { holderIdentity: 'a2', fencingToken: 8 } });
      },
    ]);
    const r = await h.run(['watch', '--count', '2'], { clock: manualClock(NOW + 3 * SEC), pace });
    expect(r.code).toBe(0);
    expect(pace.waits).toEqual([1000]);
    const frames = r.out.split(/^conclave watch - every 1s - .*$/m).slice(1);
    expect(frames).toHaveLength(2);
    const row = (frame: string) => frame.split('\n').find((l) => l.startsWith('wl '))!.split(/\s{3,}/).slice(0, 3);
    expect(row(frames[0]!)).toEqual(['wl', 'a1', '7']);
    expect(frames[0]).not.toMatch(/holder changed/);
    expect(row(frames[1]!)).toEqual(['wl', 'a2 (new)', '8']);
    expect(frames[1]).toMatch(/^holder changed on wl: a1 -> a2 \(fencing token 7 -> 8\)$/m);
  });

  // a review (2026-12-07, twelfth): w2 -> w3 -> w2 between two frames showed no change, holders alone compared
  it('the same holder with a new term between frames (it lost the lease and took it again) is highlighted, its fencing token named', async () => {
    const h = await cliHarness('cli-watch-again'); // its own tables: the leases listed elsewhere stay as they are
    try {
      await h.seedLease(lease('b1', { name: 'wl-again', fencingToken: 7 }));
      const pace = scripted([
        async () => {
          await h.leases.write(await h.leases.read('wl-again'), { set: { holderIdentity: 'b2', fencingToken: 8 } });
          await h.leases.write(await h.leases.read('wl-again'), { set: { holderIdentity: 'b1', fencingToken: 9 } });
        },
        async () => undefined,
      ]);
      const r = await h.run(['watch', '--count', '3'], { clock: manualClock(NOW + 3 * SEC), pace });
      expect(r.code, r.err).toBe(0);
      const frames = r.out.split(/^conclave watch - every 1s - .*$/m).slice(1);
      const row = (frame: string) => frame.split('\n').find((l) => l.startsWith('wl-again '))!.split(/\s{3,}/).slice(0, 3);
      expect(row(frames[1]!)).toEqual(['wl-again', 'b1 (new)', '9']);
      expect(frames[1]).toMatch(/^new term of b1 on wl-again \(fencing token 7 -> 9\)$/m);
      // the frame after, the term unchanged: nothing highlighted
      expect(row(frames[2]!)).toEqual(['wl-again', 'b1', '9']);
      expect(frames[2]).not.toMatch(/wl-again \(fencing token/);
      // one lease: the line above its description
      const one = await h.run(['watch', 'wl-again', '--count', '2'], {
        clock: manualClock(NOW + 3 * SEC),
        pace: scripted([async () => void (await h.leases.write(await h.leases.read('wl-again'), { set: { fencingToken: 10 } }))]),
      });
      expect(one.out.split(/^conclave watch wl-again - every 1s - .*$/m)[2]!.split('\n')[2]).toBe('new term of b1 on wl-again (fencing token 9 -> 10)');
    } finally {
      await h.t.drop();
    }
  });

  it('watch LEASE shows the lease with its candidates; --interval sets the wait; -o json is a document a frame', async () => {
    const pace = scripted([]);
    const r = await h.run(['watch', 'wl', '--count', '2', '--interval', '0.5s', '-o', 'json'], { clock: manualClock(NOW + 3 * SEC), pace });
    expect(pace.waits).toEqual([500]);
    const docs = r.out.split('\n').map((l) => JSON.parse(l) as { lease: { name: string }; candidates: { name: string }[] });
    expect(docs).toHaveLength(2);
    expect(docs[1]!.lease.name).toBe('wl');
    expect(docs[1]!.candidates.map((c) => c.name)).toEqual(['a1', 'a2']);
    const table = await h.run(['watch', 'wl', '--count', '1'], { clock: manualClock(NOW + 3 * SEC), pace: scripted([]) });
    expect(table.out).toMatch(/^Holder: +a2$/m);
    expect(table.out).toMatch(/^Best candidate: +a1: same emulation version as a2, older binary \(1\.30\.0 < 1\.31\.0\)$/m);
  });

  // a review (2026-12-06): it blamed the table prefix ("pass --table-prefix"), which had served every frame
  it('a table deleted while watching ends the watch saying so, not blaming the prefix', async () => {
    const gone = await cliHarness('cli-watch-gone');
    try {
      await gone.seedLease(lease('g1', { name: 'gl' }));
      const pace = scripted([() => deleteTable(gone.t.client, gone.t.names.leases)]);
      const r = await gone.run(['watch', '--interval', '1s'], { clock: manualClock(NOW + 3 * SEC), pace });
      expect(r.code).toBe(1);
      expect(r.out.match(/^conclave watch - /gm)).toHaveLength(1);
      expect(r.err).toBe(`error: a table the watch read for 1 frame answered "not found" at ${gone.endpoint}: it was deleted (or is being deleted) while watching - the watch stopped; \`conclave get leases\` tells once the tables are back`);
    } finally {
      await gone.t.drop();
    }
  });

  it('a fault after frames that is no missing table keeps its own message (the diff review: every fault read as "deleted")', async () => {
    const other = await cliHarness('cli-watch-other');
    try {
      await other.seedLease(lease('o1', { name: 'ol' }));
      // the leases table made again under its name with another key: the next read is refused as not one of Conclave's tables
      const pace = scripted([async () => {
        await deleteTable(other.t.client, other.t.names.leases);
        await other.t.client.send(new CreateTableCommand({ TableName: other.t.names.leases, BillingMode: 'PAY_PER_REQUEST', AttributeDefinitions: [{ AttributeName: 'id', AttributeType: 'S' }], KeySchema: [{ AttributeName: 'id', KeyType: 'HASH' }] }));
      }]);
      const r = await other.run(['watch', 'ol', '--interval', '1s'], { clock: manualClock(NOW + 3 * SEC), pace });
      expect(r.code).toBe(1);
      expect(r.err).toMatch(/^error: DynamoDB refused a request on the tables named \(ValidationException/);
      expect(r.err).not.toMatch(/deleted/);
    } finally {
      await other.t.drop();
    }
  });

  /** `watch` on DynamoDB Local through a client whose next requests fail with `faults`, one each, before they are sent; no jitter. */
  const faulty = (faults: Error[]) => {
    const client: DynamoDBClient = localClient(h.endpoint);
    client.middlewareStack.add((next) => async (args) => {
      const f = faults.shift();
      if (f) throw f;
      return next(args);
    });
    const out: string[] = [];
    const err: string[] = [];
    const ctx = cliContext(client, { endpoint: h.endpoint, tablePrefix: h.prefix, tables: h.t.names }, { clock: manualClock(NOW + 3 * SEC, { ...systemClock, random: () => 0 }), sink: { out: (t) => out.push(t), err: (t) => err.push(t), color: false }, output: 'table' });
    return { ctx, out, err, done: () => client.destroy() };
  };
  const throttled = () => new ProvisionedThroughputExceededException({ message: 'The level of configured provisioned throughput for the table was exceeded', $metadata: {} });
  const reset = () => Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET' });

  it('a read that fails for a passing fault (throttled, a connection reset) is told on stderr and tried again after a backoff; the watch goes on', async () => {
    const w = faulty([throttled(), reset()]);
    const pace = scripted([]);
    try {
      // before the fix: the throttled read ended the watch
      await watch(w.ctx, { interval: 1_000, count: 2 }, pace);
    } finally {
      w.done();
    }
    expect(pace.waits).toEqual([1000, 2000, 1000]); // the backoff doubles; then a frame's interval
    expect(w.err).toEqual([
      'watch: a read failed (ProvisionedThroughputExceededException: The level of configured provisioned throughput for the table was exceeded); trying again in 1s (Ctrl-C stops)',
      'watch: a read failed (Error ECONNRESET: read ECONNRESET); trying again in 2s (Ctrl-C stops)',
    ]);
    expect(w.out).toHaveLength(2);
    expect(w.out.every((f) => /^wl +a[12] /m.test(f))).toBe(true);
  });

  it('ends on a fault the next read would meet too (access denied, a table that does not exist), or when interrupted during a backoff', async () => {
    const accessDenied = Object.assign(new Error('not authorized to perform: dynamodb:Scan'), { name: 'AccessDeniedException', $fault: 'client' });
    const denied = faulty([accessDenied]);
    const pace = scripted([]);
    try {
      await expect(watch(denied.ctx, { interval: 1_000 }, pace)).rejects.toBe(accessDenied);
    } finally {
      denied.done();
    }
    expect(pace.waits).toEqual([]);
    const missing = await runMain(['--endpoint', h.endpoint, '--table-prefix', 'no-such', 'watch'], { pace: scripted([]) });
    expect(missing).toMatchObject({ code: 1, err: expect.stringMatching(/^error: tables no-such-leases, .* do not exist/) });

    const stopped = faulty([throttled()]);
    const stop = scripted([() => stop.stop.abort()]);
    try {
      await watch(stopped.ctx, { interval: 1_000 }, stop);
    } finally {
      stopped.done();
    }
    expect(stop.waits).toEqual([1000]);
    expect(stopped.out).toEqual([]);
  });

  it('stops when interrupted', async () => {
    const pace = scripted([() => pace.stop.abort()]);
    const r = await h.run(['watch'], { clock: manualClock(NOW), pace });
    expect(r.code).toBe(0);
    expect(r.out.match(/^conclave watch/gm)).toHaveLength(1);
  });

  it('refuses an unknown lease and a bad --count or --interval', async () => {
    expect((await h.run(['watch', 'nope', '--count', '1'], { pace: scripted([]) })).err).toMatch(/^error: no lease "nope" .*; leases: wl$/);
    expect(await h.run(['watch', '--count', '0'], { pace: scripted([]) })).toMatchObject({ code: 1, err: 'error: invalid watch arguments: --count: must be >= 1' });
    expect(await h.run(['watch', '--interval', 'fast'], { pace: scripted([]) })).toMatchObject({ code: 1, err: 'error: invalid watch arguments: --interval: must be a duration such as 90s, 1.5s, 500ms, 10m, 2h or 1h30m (units ms, s, m, h)' });
  });

  it('--interval takes the durations --for and --timeout take (1s, 500ms), each flag named in its error', async () => {
    const pace = scripted([]);
    expect((await h.run(['watch', '--interval', '1s', '--count', '2'], { clock: manualClock(NOW), pace })).code).toBe(0);
    expect((await h.run(['watch', '--interval', '500ms', '--count', '2'], { clock: manualClock(NOW), pace })).code).toBe(0);
    expect(pace.waits).toEqual([1_000, 500]);
    const bad = await h.run(['release', 'wl', '--timeout', 'fast'], { pace: scripted([]) });
    expect(bad).toMatchObject({ code: 1, err: 'error: invalid release arguments: --timeout: must be a duration such as 90s, 1.5s, 500ms, 10m, 2h or 1h30m (units ms, s, m, h)' });
  });

  // a review (2026-12-06, seventh): `--interval 0` was told "0 seconds is 0s", which was then refused ("must be at least 100ms")
  it("a bare number's hint names only a value the flag takes", async () => {
    const pace = scripted([]);
    expect(await h.run(['watch', '--interval', '0', '--count', '2'], { pace })).toMatchObject({ code: 1, err: 'error: invalid watch arguments: --interval: must be a duration such as 90s, 1.5s, 500ms, 10m, 2h or 1h30m (units ms, s, m, h); a number alone has no unit' });
    expect((await h.run(['watch', '--interval', '2', '--count', '2'], { pace })).err).toBe('error: invalid watch arguments: --interval: must be a duration such as 90s, 1.5s, 500ms, 10m, 2h or 1h30m (units ms, s, m, h); a number alone has no unit: 2 seconds is 2s');
    expect((await h.run(['release', 'wl', '--timeout', '0'], { pace })).err).toBe('error: invalid release arguments: --timeout: must be a duration such as 90s, 1.5s, 500ms, 10m, 2h or 1h30m (units ms, s, m, h); a number alone has no unit');
    expect(pace.waits).toEqual([]);
  });

  it('refuses an --interval too long to wait for (a timer past 2^31 ms fires at once: a redraw every millisecond)', async () => {
    const pace = scripted([]);
    const r = await h.run(['watch', '--interval', '2147484s', '--count', '2'], { pace });
    expect(r).toMatchObject({ code: 1, err: 'error: invalid watch arguments: --interval: must be at most 24h (a day)' });
    expect(pace.waits).toEqual([]);
    expect((await h.run(['watch', '--interval', '24h', '--count', '2'], { clock: manualClock(NOW), pace })).code).toBe(0);
    expect(pace.waits).toEqual([86_400_000]);
  });
});

const iso = (ms: number) => new Date(ms).toISOString();
const line = (detailType: string, detail: Record<string, unknown>, at = NOW) => JSON.stringify({ time: iso(at), source: 'conclave', detailType, detail: { id: `r${at}:x`, time: iso(at), ...detail } });

const EVENTS = [
  line('Leader Elected', { lease: 'component-A', holder: 'w1', fencingToken: 1, leaseTransitions: 0, electedBy: 'coordinator', strategy: 'OldestEmulationVersion' }, NOW),
  '{"time": "2026-01-01T12:00:01.000Z", oops',
  line('Leader Elected', { lease: 'jobs', holder: 'j1', fencingToken: 1, leaseTransitions: 0 }, NOW + SEC),
  line('Leader Changed', { lease: 'component-A', previousHolder: 'w1', fencingToken: 2 }, NOW + 2 * SEC), // no holder
  line('Leader Vanished', { lease: 'component-A' }, NOW + 3 * SEC),
  '',
  line('Leader Changed', { lease: 'component-A', previousHolder: 'w1', holder: 'w2', fencingToken: 2 }, NOW + 4 * SEC),
];

describe('events', () => {
  const dir = mkdtempSync(join(tmpdir(), 'conclave-events-'));
  const file = join(dir, 'events.jsonl');
  writeFileSync(file, `${EVENTS.join('\n')}\n`);

  it('prints each valid event in a line; a line that does not parse is reported with its number and skipped', async () => {
    const r = await runMain(['events', '--events-file', file]);
    expect(r.code).toBe(0);
    expect(r.out.split('\n')).toEqual([
      '2026-01-01T12:00:00.000Z  Leader Elected               component-A  w1 leads, fencing token 1, by coordinator under OldestEmulationVersion',
      '2026-01-01T12:00:01.000Z  Leader Elected               jobs  j1 leads, fencing token 1',
      '2026-01-01T12:00:04.000Z  Leader Changed               component-A  w1 -> w2, fencing token 2',
    ]);
    const err = r.err.split('\n');
    expect(err).toHaveLength(3);
    expect(err[0]).toMatch(new RegExp(`^${file}:2: skipped: not JSON`));
    expect(err[1]).toBe(`${file}:4: skipped: invalid "Leader Changed" event detail: holder: is required: give a string`);
    expect(err[2]).toMatch(new RegExp(`^${file}:5: skipped: invalid Conclave event: detail-type: "Leader Vanished" is not a Conclave detail-type; expected one of: Leader Elected, `));
  });

  it('filters by lease and by detail-type; -o json is one document of the events as parsed', async () => {
    const byLease = await runMain(['events', '--events-file', file, '--lease', 'jobs']);
    expect(byLease.out.split('\n')).toHaveLength(1);
    expect(byLease.out).toMatch(/Leader Elected +jobs/);
    const byType = await runMain(['events', '--events-file', file, '--type', 'Leader Changed', '-o', 'json']);
    const docs = JSON.parse(byType.out) as { detailType: string; detail: { holder: string } }[];
    expect(docs).toEqual([{ time: iso(NOW + 4 * SEC), source: 'conclave', detailType: 'Leader Changed', detail: { id: `r${NOW + 4 * SEC}:x`, time: iso(NOW + 4 * SEC), lease: 'component-A', previousHolder: 'w1', holder: 'w2', fencingToken: 2 } }]);
  });

  it('--lease naming a lease with no event in the file says so on stderr, listing the leases that have some (a typo is not an empty history)', async () => {
    const r = await runMain(['events', '--events-file', file, '--lease', 'jbos']);
    expect(r.code).toBe(0);
    expect(r.out).toBe('');
    // before: nothing at all, on either stream
    expect(r.err.split('\n').at(-1)).toBe(`note: no event of lease jbos in ${file}; leases with events there: component-A, jobs`);
    const json = await runMain(['events', '--events-file', file, '--lease', 'jbos', '-o', 'json']);
    expect(JSON.parse(json.out)).toEqual([]);
    expect(json.err.split('\n').at(-1)).toBe(`note: no event of lease jbos in ${file}; leases with events there: component-A, jobs`);
    // a lease that has events, none of the --type asked: no note
    const none = await runMain(['events', '--events-file', file, '--lease', 'jobs', '--type', 'Leader Changed']);
    expect(none.out).toBe('');
    expect(none.err).not.toMatch(/^note:/m);
  });

  it('an unknown --type lists the detail-types; a missing file says where it comes from', async () => {
    const r = await runMain(['events', '--events-file', file, '--type', 'Leader Vanished']);
    expect(r.code).toBe(1);
    expect(r.err).toMatch(/^error: invalid events options: --type: must be one of: "Leader Elected", "Leader Changed", "Leader Preemption Requested", "Lease Released", /);
    const missing = await runMain(['events', '--events-file', join(dir, 'nope.jsonl')]);
    expect(missing.code).toBe(1);
    expect(missing.err).toBe(
      `error: no events file at ${join(dir, 'nope.jsonl')} - the local system (\`npx conclave-local\`) writes .local/events.jsonl in the folder it runs in and prints its path as CONCLAVE_EVENTS_FILE: run this in that folder, or pass --events-file PATH (or set CONCLAVE_EVENTS_FILE); on AWS the events go to EventBridge, not to a file`,
    );
  });

  it("a held row's delete is not told as its holder's release; Leader Lost has its own line (it fell to the generic dump)", () => {
    const base = { id: 'x', lease: 'component-A', time: iso(NOW) };
    // before: "w2 released (fencing token 6)", as if w2 had given its term up
    expect(summary({ detailType: 'Lease Released', detail: { ...base, previousHolder: 'w2', fencingToken: 6, rowDeleted: true } })).toBe('row deleted while w2 held it (fencing token 6): the term ended with it');
    expect(summary({ detailType: 'Lease Released', detail: { ...base, previousHolder: 'w2', fencingToken: 6 } })).toBe('w2 released (fencing token 6)');
    const lost = { ...base, previousHolder: 'w2', fencingToken: 6, source: 'aws.ecs' as const, platformId: 'arn:aws:ecs:eu-west-1:111122223333:task/c/abc', reason: 'Essential container in task exited (EssentialContainerExited)' };
    // before: "previousHolder w2, fencingToken 6, source aws.ecs, platformId arn:..., reason ..."
    expect(summary({ detailType: 'Leader Lost', detail: lost })).toBe(
      "w2's term ended (fencing token 6): aws.ecs reported arn:aws:ecs:eu-west-1:111122223333:task/c/abc stopped: Essential container in task exited (EssentialContainerExited)",
    );
    expect(summary({ detailType: 'Leader Lost', detail: { ...lost, source: 'aws.ec2', platformId: 'i-0123456789abcdef0', reason: 'terminated' } })).toBe("w2's term ended (fencing token 6): aws.ec2 reported i-0123456789abcdef0 stopped: terminated");
  });

  it('a detail-type without its own summary line shows its fields as they are', () => {
    const detail = { id: 'x', lease: 'l', time: iso(NOW), previousHolder: 'w1', fencingToken: 3, reason: 'Task stopped' };
    expect(summary({ detailType: 'Something New', detail } as never)).toBe('previousHolder w1, fencingToken 3, reason Task stopped');
  });

  it('--follow prints what is there, then lines as they are appended (a line written in two parts once), until stopped', async () => {
    const followed = join(dir, 'followed.jsonl');
    writeFileSync(followed, `${EVENTS[0]}\n`);
    const next = line('Lease Released', { lease: 'component-A', previousHolder: 'w2', fencingToken: 2 }, NOW + 9 * SEC);
    const pace = {
      ...(() => {
        const stop = new AbortController();
        const steps = [
          () => appendFileSync(followed, next.slice(0, 20)),
          () => appendFileSync(followed, `${next.slice(20)}\n`),
          () => stop.abort(),
        ];
        return { signal: stop.signal, sleep: async () => steps.shift()?.() };
      })(),
    };
    const r = await runMain(['events', '--follow', '--events-file', followed], { pace });
    expect(r.code).toBe(0);
    expect(r.err).toBe('');
    expect(r.out.split('\n')).toEqual([
      '2026-01-01T12:00:00.000Z  Leader Elected               component-A  w1 leads, fencing token 1, by coordinator under OldestEmulationVersion',
      '2026-01-01T12:00:09.000Z  Lease Released               component-A  w2 released (fencing token 2)',
    ]);
  });
});

/**
 * The operator's views under an incident, found by a review (2026-12-08, sixteenth) running the CLI
 * against local mode: a lease row the schema refuses vanished from `watch` at a terminal (its
 * warning cleared with the screen) and from `-o json`; a term over showed its holder as holding
 * (`get leases`, `watch`, `describe`), and `preempt` refused "already holds"; a held row deleted
 * while watching was no change, then "no lease row yet"; a throttled write read as one that "may
 * have landed"; `--request-timeout 1s` was refused.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DeleteItemCommand, UpdateItemCommand } from '@aws-sdk/client-dynamodb';
import { marshall } from '@aws-sdk/util-dynamodb';
import { globalOptions } from '../../lib/cli/args.js';
import { CliError, explain } from '../../lib/cli/errors.js';
import { afterChange, main } from '../../lib/cli/main.js';
import { manualClock } from '../../lib/clock.js';
import { NOW, SEC, cand, lease } from '../fixtures.js';
import { foreignAnswersProxy } from '../proxy.js';
import { cliHarness, runMain, scripted, type CliHarness } from './harness.js';

let h: CliHarness;
const at = (ms = 3 * SEC) => manualClock(NOW + ms);

beforeAll(async () => {
  h = await cliHarness('cli-incident');
});
afterAll(() => h.t.drop());

/** The frames a watch printed (after each title line). */
const framesOf = (out: string, title = 'conclave watch') => out.split(new RegExp(`^${title} - every .*$`, 'm')).slice(1);

describe('a lease row the schema refuses, in a listing', () => {
  let own: CliHarness;
  beforeAll(async () => {
    own = await cliHarness('cli-incident-newer');
    await own.seedLease(lease('a', { name: 'fine' }));
    await own.seedLease(lease('n1', { name: 'newer' }));
    await own.t.client.send(new UpdateItemCommand({ TableName: own.t.names.leases, Key: marshall({ name: 'newer' }), UpdateExpression: 'SET minReader = :two', ExpressionAttributeValues: marshall({ ':two': 2 }) }));
  });
  afterAll(() => own.t.drop());

  it('watch at a terminal: a line of the frame names it and why (before: a warning on stderr, cleared with the screen)', async () => {
    const out: string[] = [];
    const err: string[] = [];
    const code = await main([...own.target, 'watch', '--count', '1'], { out: (s) => out.push(s), err: (s) => err.push(s), color: true, env: {}, clock: at(), pace: scripted([]) });
    expect(code).toBe(0);
    expect(out.join('\n')).toContain('newer: row refused (minReader 2: written for a newer Conclave): `conclave describe lease newer` shows what to do');
    expect(err.filter((l) => /skipped a lease row/.test(l))).toEqual([]);
  });

  it('get leases: the line in the table and the warning on stderr; -o json (get leases, watch): an entry with `refused`, the others as they were', async () => {
    const listed = await own.run(['get', 'leases'], { clock: at() });
    expect(listed.out.split('\n').at(-1)).toBe('newer: row refused (minReader 2: written for a newer Conclave): `conclave describe lease newer` shows what to do');
    expect(listed.err).toMatch(/^warning: skipped a lease row that does not match its schema/m);
    for (const argv of [['-o', 'json', 'get', 'leases'], ['-o', 'json', 'watch', '--count', '1']]) {
      const r = await own.run(argv, { clock: at(), pace: scripted([]) });
      expect(r.code, r.err).toBe(0);
      const doc = JSON.parse(r.out) as { name: string; holderIdentity?: string; judged?: unknown; refused?: { issues: { field: string }[]; minReader?: number } }[];
      expect(doc.map((d) => d.name)).toEqual(['fine', 'newer']);
      expect(doc[0]).toMatchObject({ holderIdentity: 'a', judged: expect.any(Object) });
      expect(doc[0]!.refused).toBeUndefined();
      expect(doc[1]).toEqual({ name: 'newer', refused: { issues: [expect.objectContaining({ field: 'minReader' })], minReader: 2 } });
    }
  });
});

describe('a term over, as `leader` judges it', () => {
  beforeAll(async () => {
    // expired: renewed 30s before NOW + 3s, a 10s lease; reported: renewed now, a follower's report on its revision
    await h.seedLease(lease('a', { name: 'ran-out', renewTime: NOW - 30 * SEC, preferredHolder: 'c', successor: 'c' }));
    await h.seedLease(lease('b', { name: 'reported', vacancyReport: { by: 'c', at: NOW, observedRevision: 1 } }));
    await h.seedLease(lease('d', { name: 'live' }));
    for (const [n, l] of [['a', 'ran-out'], ['c', 'ran-out'], ['b', 'reported'], ['c', 'reported']] as const) await h.seedCandidate(cand(n, '1.30.0', '1.30.0', { leaseName: l }));
  });

  it('get leases and watch: HOLDER shows whose term it was and why it is over (before: the holder, as if it held)', async () => {
    for (const argv of [['get', 'leases'], ['watch', '--count', '1']]) {
      const r = await h.run(argv, { clock: at(), pace: scripted([]) });
      const holder = (name: string) => r.out.split('\n').find((l) => l.startsWith(`${name} `))!.split(/\s{3,}/)[1];
      expect([holder('ran-out'), holder('reported'), holder('live')]).toEqual(['- (was a: expired)', '- (was b: reported)', 'd']);
    }
  });

  it('describe lease: no one should release, the successor is no taker-to-be, and the holder is tagged as a term over', async () => {
    const r = await h.run(['describe', 'lease', 'ran-out'], { clock: at() });
    expect(r.out).toMatch(/^State: +vacant: expired/m);
    expect(r.out).toMatch(/^Preferred holder: +c \(the term of a is over, so nobody releases: the Next step below says whom the coordinator elects\)$/m);
    expect(r.out).toMatch(/^Successor: +c$/m);
    expect(r.out).toMatch(/^ {2}\S+ +a +.*holder of a term over, fresh$/m);
    expect(r.out).not.toMatch(/should release at its next renewal|does not take the lease if it falls vacant now|(?<!preferred )holder, (live|fresh)/);
  });

  it('preempt --to the holder of a term over: pins it, saying the term is over (before: "a already holds lease ...; nothing to preempt")', async () => {
    const r = await h.run(['preempt', 'ran-out', '--to', 'a', '--yes'], { clock: at() });
    expect(r.code, r.err).toBe(0);
    expect(r.err).toMatch(/^note: the term of a on lease ran-out is over \(it ran out 23s ago\), so there is no holder to preempt: the coordinator elects at its next step, and the pin puts a first among the candidates it counts while it lasts$/m);
    expect(r.out).toMatch(/^pinned a on lease ran-out at priority 1 /m);
    expect((await h.candidates.read('ran-out', 'a')).item?.priority).toBe(1);
    // a live term still refuses
    await h.seedCandidate(cand('d', '1.30.0', '1.30.0', { leaseName: 'live' }));
    expect((await h.run(['preempt', 'live', '--to', 'd', '--yes'], { clock: at() })).err).toMatch(/^error: d already holds lease live; nothing to preempt/);
  });
});

describe('a row deleted while watching', () => {
  it('watch: the holder change is told (before: no change); watch LEASE: told, and the state says deleted, not "no lease row yet"', async () => {
    const own = await cliHarness('cli-incident-gone');
    try {
      await own.seedLease(lease('a', { name: 'gone' }));
      await own.seedLease(lease('b', { name: 'stays' }));
      await own.seedCandidate(cand('a', '1.30.0', '1.30.0', { leaseName: 'gone' }));
      const drop = async () => void (await own.t.client.send(new DeleteItemCommand({ TableName: own.t.names.leases, Key: marshall({ name: 'gone' }) })));
      const r = await own.run(['watch', '--count', '3'], { clock: at(), pace: scripted([drop, async () => undefined]) });
      expect(r.code, r.err).toBe(0);
      const frames = framesOf(r.out);
      expect(frames[1]).toMatch(/^holder changed on gone: a -> \(none\): row deleted \(fencing token 7\)$/m);
      expect(frames[2]).not.toMatch(/row deleted/);

      await own.seedLease(lease('a', { name: 'gone' }));
      const one = await own.run(['watch', 'gone', '--count', '3'], { clock: at(), pace: scripted([drop, async () => undefined]) });
      expect(one.code, one.err).toBe(0);
      const [first, second, third] = framesOf(one.out, 'conclave watch gone');
      expect(first).toMatch(/^Holder: +a$/m);
      expect(second!.split('\n')[2]).toBe('holder changed on gone: a -> (none): row deleted (fencing token 7)');
      for (const f of [second, third]) expect(f).toMatch(/^State: +vacant: the lease row was deleted while watching \(the coordinator writes a new one at its next election\)$/m);
      expect(third).not.toMatch(/holder changed/);
    } finally {
      await own.t.drop();
    }
  });
});

describe('a throttled write', () => {
  it('is told as refused, not landed (before: "may have landed, its answer lost")', async () => {
    await h.seedCandidate(cand('t1', '1.30.0', '1.30.0', { leaseName: 'throttled' }));
    const proxy = await foreignAnswersProxy(h.endpoint, (operation) => operation === 'UpdateItem');
    proxy.answer('throttled');
    try {
      const r = await runMain(['--endpoint', proxy.endpoint, '--table-prefix', h.prefix, 'set-priority', 'throttled', 't1', '3', '--yes'], { clock: at() });
      expect(r.code).toBe(1);
      const line = r.err.split('\n').at(-1)!;
      expect(line).toMatch(/throttled the requests \(ThrottlingException: /);
      expect(line).toMatch(/; the change confirmed \(change candidate t1 of lease throttled\) was refused \(throttled\) and did not land: nothing was written - the command run again makes it$/);
      expect(line).not.toMatch(/may have landed/);
    } finally {
      await proxy.close();
    }
    expect((await h.candidates.read('throttled', 't1')).item?.priority).toBeUndefined();
  });

  it('throttled on its last try after one unanswered (an earlier try timed out): it may have landed, as before', async () => {
    const target = { tablePrefix: 'x', tables: { leases: 'x-leases', candidates: 'x-candidates', identities: 'x-identities' }, endpoint: 'http://127.0.0.1:9' };
    const e = Object.assign(new Error('Rate of requests exceeds the allowed throughput.'), { name: 'ThrottlingException', $metadata: { httpStatusCode: 400 } });
    const confirmed = { lease: 'jobs', what: 'change candidate w1 of lease jobs' };
    const mixed = afterChange(await explain(e, target), e, { confirmed, sent: true, inFlight: {}, mayHaveLanded: true }) as CliError;
    expect(mixed.message).toMatch(/; the change confirmed \(change candidate w1 of lease jobs\) may have landed, its answer lost - /);
    const refused = afterChange(await explain(e, target), e, { confirmed, sent: true, inFlight: {} }) as CliError;
    expect(refused.message).toMatch(/was refused \(throttled\) and did not land: nothing was written/);
  });
});

describe('--request-timeout', () => {
  it('takes the duration forms every time flag takes, and plain milliseconds as before (before: "must be whole milliseconds" for 1s)', () => {
    expect(globalOptions({ requestTimeout: '1s' }, {}).requestTimeoutMs).toBe(1000);
    expect(globalOptions({ requestTimeout: '1.5s' }, {}).requestTimeoutMs).toBe(1500);
    expect(globalOptions({ requestTimeout: '2500' }, {}).requestTimeoutMs).toBe(2500);
    expect(globalOptions({}, { CONCLAVE_REQUEST_TIMEOUT: '750ms' }).requestTimeoutMs).toBe(750);
    expect(() => globalOptions({ requestTimeout: '50ms' }, {})).toThrow(/--request-timeout: must be at least 100ms/);
    expect(() => globalOptions({ requestTimeout: '11m' }, {})).toThrow(/--request-timeout: must be at most 10m/);
    expect(() => globalOptions({ requestTimeout: 'soon' }, {})).toThrow(/--request-timeout: must be whole milliseconds such as 5000, or a duration between 100ms and 10m such as 5s, 1\.5s or 500ms/);
  });
});

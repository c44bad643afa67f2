/**
 * A lease held on a session (lib/sdk/session.ts) keeps its own renewTime at the acquisition; the
 * session's row carries the renewals. The CLI reads that row after the lease and judges with it, as
 * the coordinator does: a fresh session keeps the lease held in every view (get, describe, its next
 * step, watch, release), a stale or missing one leaves it expired.
 */
import { PutItemCommand, UpdateItemCommand } from '@aws-sdk/client-dynamodb';
import { marshall } from '@aws-sdk/util-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cliContext } from '../../lib/cli/context.js';
import { getLeases } from '../../lib/cli/get.js';
import { manualClock } from '../../lib/clock.js';
import type { Judged } from '../../lib/cli/judged.js';
import { MAX_ENDED_TERMS, SESSION_COMPONENT, sessionKey, sessionShard } from '../../lib/schemas/identity.js';
import { release, yieldWaitMs } from '../../lib/cli/release.js';
import { CliError } from '../../lib/cli/errors.js';
import { SESSION_QUIET_LEASES } from '../../lib/sdk/step.js';
import type { Lease } from '../../lib/schemas/lease.js';
import { IdentityStore } from '../../lib/stores/identity-store.js';
import { REFUSED_SEEN, rowDigest } from '../../lib/coordinator/refused-session.js';
import { localClient } from '../../lib/stores/client.js';
import { MIN, NOW, SEC, cand, lease } from '../fixtures.js';
import { cliHarness, scripted, type CliHarness } from './harness.js';
import { collectIdentities, coordinatorDeps } from '../../lib/coordinator/reconcile.js';

let h: CliHarness;
let identities: IdentityStore;
const at = () => manualClock(NOW);

/** Session `name`'s row, last renewed at `renewTime`. */
const seedSession = (name: string, renewTime: number) =>
  identities.write(
    { key: { component: SESSION_COMPONENT, name }, item: undefined, revision: 0 },
    { set: { holderIdentity: `${name}_1`, process: 'p1', hostname: 'web-1', leaseDurationSeconds: 60, acquireTime: NOW - 10 * MIN, renewTime } },
  );

/** A lease `name` held by a1 on session `s-NAME` since a minute ago (its own stamp), 15 s long; a1 and a2 are candidates. */
async function sessionHeld(name: string, sessionAt: number | undefined) {
  await h.seedLease(lease('a1', { name, holderInstance: 'a1_1@p1', session: `s-${name}`, leaseDurationSeconds: 15, renewTime: NOW - MIN, acquireTime: NOW - MIN, electedStrategy: 'OldestEmulationVersion' }));
  await h.seedCandidate(cand('a1', '1.30.0', '1.30.0', { leaseName: name }));
  await h.seedCandidate(cand('a2', '1.31.0', '1.31.0', { leaseName: name }));
  if (sessionAt !== undefined) await seedSession(`s-${name}`, sessionAt);
}

beforeAll(async () => {
  h = await cliHarness('cli-sessions');
  identities = new IdentityStore(h.t.client, h.t.names.identities);
  await sessionHeld('live', NOW - 2 * SEC); // ends at NOW + 13 s
  await sessionHeld('stale', NOW - 30 * SEC); // ended 15 s ago
  await sessionHeld('gone', undefined); // by its own stamp: ended 45 s ago
  await h.seedLease(lease('b1', { name: 'plain', leaseDurationSeconds: 15, renewTime: NOW - SEC })); // renews itself
});
afterAll(() => h.t.drop());

/**
 * A lease held on session s-NAME, whose row another writer broke (an empty host name): nobody judges
 * its term. Of process p-refused, not p1: a refused row of p1 may be p1's own session, and would leave
 * p1's terms judged off their named rows (gone's) judged by nobody too (mayBeProcessSession).
 */
async function refusedHeld(name: string, holderInstance = 'a1_1@p-refused') {
  await sessionHeld(name, NOW - 2 * SEC);
  await h.leases.write(await h.leases.read(name), { set: { holderInstance } });
  await h.t.client.send(new UpdateItemCommand({ TableName: h.t.names.identities, Key: marshall(sessionKey(`s-${name}`)), UpdateExpression: 'SET hostname = :h, #p = :p', ExpressionAttributeNames: { '#p': 'process' }, ExpressionAttributeValues: marshall({ ':h': '', ':p': 'p-refused' }) }));
}

describe('a term held on a session row the schema refuses: judged by nobody, as the coordinator and getLeader judge it', () => {
  const refusal = (lease: string) =>
    new RegExp(
      `lease "${lease}": the term of a1 \\(fencing token 7\\) is held on session "s-${lease}", whose row on the identities table "${h.t.names.identities}" does not match the schema \\(hostname: [^)]*\\), so nobody can judge whether that term is live: .*` +
        `Rewrite the row valid, or delete it: aws dynamodb delete-item --endpoint-url ${h.endpoint} --table-name ${h.t.names.identities} --key '\\{"component":\\{"S":"${SESSION_COMPONENT}"\\},"name":\\{"S":"s-${lease}"\\}\\}'`,
    );

  it('leader fails naming the table, the row, the field and the repair (before: a1 answered as leading, or, an older SDK\'s holder, "no leader")', async () => {
    await refusedHeld('refused-leader');
    await refusedHeld('refused-leader-old', 'a1_1');
    for (const lease of ['refused-leader', 'refused-leader-old']) {
      for (const argv of [['leader', lease], ['-o', 'json', 'leader', lease]]) {
        const r = await h.run(argv, { clock: at() });
        expect(r.code, r.out).toBe(1);
        expect(r.out).toBe('');
        expect(r.err).toMatch(new RegExp(`^error: ${refusal(lease).source}`));
      }
    }
  });

  it('get leases lists it held, its end unknown, and tells the row and its repair on stderr; -o json says so in `judged`', async () => {
    await refusedHeld('refused-list');
    const r = await h.run(['get', 'leases'], { clock: at() });
    expect(r.code, r.err).toBe(0);
    const row = r.out.split('\n').find((l) => l.startsWith('refused-list '))!.split(/\s{3,}/).slice(-2);
    expect(row).toEqual(['1m ago (session row refused)', 'unknown']);
    expect(r.err.split('\n').filter((l) => l.includes('s-refused-list'))).toEqual([expect.stringMatching(new RegExp(`^warning: ${refusal('refused-list').source}`))]);
    const json = await h.run(['-o', 'json', 'get', 'leases'], { clock: at() });
    const item = (JSON.parse(json.out) as (Lease & { judged: Judged })[]).find((l) => l.name === 'refused-list')!;
    expect(item.judged).toEqual({ at: NOW, vacant: false, session: { name: 's-refused-list', row: null, vouches: false, refused: { issues: [{ field: 'hostname', message: expect.any(String) }], repair: expect.stringMatching(/^aws dynamodb delete-item /) } } });
  });

  it('describe lease: state unknown, the row\'s problem, no next step, and the repair', async () => {
    await refusedHeld('refused-describe');
    const r = await h.run(['describe', 'lease', 'refused-describe'], { clock: at() });
    expect(r.code, r.err).toBe(0);
    expect(r.out).toMatch(/^State: +unknown: held on a session row the schema refuses, which no one judges a term by \(the coordinator, getLeader, followers\)$/m);
    expect(r.out).toMatch(/^Session: +held on session s-refused-describe, whose row does not match the schema: hostname: /m);
    expect(r.out).toMatch(/^Next step: +none: the coordinator leaves the lease alone until the session row is rewritten valid or deleted$/m);
    expect(r.out).toMatch(new RegExp(`^Repair: +rewrite the session row valid, or delete it: aws dynamodb delete-item --endpoint-url ${h.endpoint} --table-name ${h.t.names.identities} `, 'm'));
  });

  it("describe lease: when the coordinator's tick will delete the row (refusedSeen's time + the longest lease on it + clockSkewMs), once it has timed it; before, when it has not, and once due", async () => {
    await refusedHeld('refused-deleted');
    const deletion = async (now: number) => {
      const r = await h.run(['describe', 'lease', 'refused-deleted'], { clock: manualClock(now) });
      expect(r.code, r.err).toBe(0);
      return r.out.split('\n').find((l) => l.startsWith('Row deleted:'))?.replace(/^Row deleted: +/, '');
    };
    const json = async (now: number) => (JSON.parse((await h.run(['-o', 'json', 'describe', 'lease', 'refused-deleted'], { clock: manualClock(now) })).out) as { lease: { judged: Judged } }).lease.judged.session?.refused;
    // not timed yet: the longest lease on it is the row's own (60 s, its lease's 15 s), plus clockSkewMs (1 s)
    expect(await deletion(NOW)).toBe("not timed yet: the coordinator's tick has not seen the row as it is now; it deletes it 1m1s after it first does, if it stays unchanged: the longest lease on it (1m) and clockSkewMs (1s)");
    expect(await json(NOW)).not.toHaveProperty('deleteAfter');
    // the tick's sighting, as it leaves it (lib/coordinator/reconcile.ts timeRefusedSessions), 5 s ago
    const key = sessionKey('s-refused-deleted');
    const row = (await identities.readRow(key.component, key.name))!;
    expect(await identities.markRefused(key, row, REFUSED_SEEN, { at: NOW - 5 * SEC, digest: rowDigest(row) })).toBe(true);
    const after = new Date(NOW - 5 * SEC + 61 * SEC).toISOString();
    expect(await deletion(NOW)).toBe(`by the coordinator's tick after ${after} (in 56s), if the row stays unchanged: first seen so 5s ago (${new Date(NOW - 5 * SEC).toISOString()}), then the longest lease on it (1m) and clockSkewMs (1s)`);
    expect(await json(NOW)).toMatchObject({ unchangedSince: NOW - 5 * SEC, deleteAfter: NOW + 56 * SEC });
    expect(await deletion(NOW + 57 * SEC)).toBe(`due since ${after} (1s ago): the coordinator's tick deletes it at its next pass over every lease (a round's end, or the next invocation's start where the round ran out of time), if it is still unchanged`);
  });

  it('release refuses, naming the row and its repair (it can neither judge the term nor mark its end there)', async () => {
    await refusedHeld('refused-release');
    for (const argv of [['release', 'refused-release', '--yes'], ['release', 'refused-release', '--force', '--yes']]) {
      const r = await h.run(argv, { clock: at(), pace: scripted([]) });
      expect(r.code, r.out).toBe(1);
      expect(r.err).toMatch(new RegExp(`^error: ${refusal('refused-release').source}`));
    }
    expect((await h.leases.read('refused-release')).item).toMatchObject({ holderIdentity: 'a1', fencingToken: 7 });
  });
});

describe('get leases', () => {
  it('RENEWED and EXPIRES count the session’s renewals', async () => {
    const r = await h.run(['get', 'leases'], { clock: at() });
    expect(r.code, r.err).toBe(0);
    const row = (name: string) => r.out.split('\n').find((l) => l.startsWith(`${name} `))!.split(/\s{3,}/).slice(-2);
    expect(row('live')).toEqual(['2s ago (session)', 'in 13s']);
    expect(row('stale')).toEqual(['30s ago (session)', '15s ago']);
    // a session row gone vouches for nothing: judged, as the coordinator's tick judges it, by its holder's own process's (p1's) freshest session, s-live (vacancy.ts judgingRow)
    expect(row('gone')).toEqual(["2s ago (its process's session)", 'in 13s']);
    expect(row('plain')).toEqual(['1s ago', 'in 14s']);
  });

  it('-o json: each item as stored, with `judged`: the verdict and the session row it was judged with', async () => {
    const r = await h.run(['-o', 'json', 'get', 'leases'], { clock: at() });
    const items = JSON.parse(r.out) as (Lease & { judged: Judged })[];
    const of = (name: string) => items.find((l) => l.name === name)!;
    expect(of('live')).toMatchObject({ session: 's-live', renewTime: NOW - MIN }); // stored as written
    expect(of('live').judged).toEqual({ at: NOW, vacant: false, expiresAt: NOW + 13 * SEC, session: { name: 's-live', row: expect.objectContaining({ component: SESSION_COMPONENT, name: 's-live', renewTime: NOW - 2 * SEC }), vouches: true } });
    expect(of('stale').judged).toMatchObject({ vacant: true, reason: 'expired', expiresAt: NOW - 15 * SEC, session: { name: 's-stale', row: { renewTime: NOW - 30 * SEC } } });
    expect(of('gone').judged).toEqual({ at: NOW, vacant: false, expiresAt: NOW + 13 * SEC, session: { name: 's-gone', row: null, vouches: false } });
    expect(of('plain').judged).toEqual({ at: NOW, vacant: false, expiresAt: NOW + 14 * SEC });
  });

  it("reads the sessions once for the whole list (one query of each partition: the one the sessions named are in, and the shard of the process of gone's holder, whose named row is gone), and not at all when no lease is held on one", async () => {
    const count = async (tables = h.t.names) => {
      const client = localClient(h.endpoint);
      const sent: string[] = [];
      client.middlewareStack.add((next, context) => async (args) => {
        sent.push(`${context.commandName} ${(args.input as { TableName?: string }).TableName}`);
        return next(args);
      });
      const sink = { out: () => {}, err: () => {}, color: false };
      try {
        await getLeases(cliContext(client, { tablePrefix: h.prefix, tables }, { clock: at(), sink, output: 'table' }));
      } finally {
        client.destroy();
      }
      return sent.filter((s) => s.endsWith(` ${tables.identities}`));
    };
    expect(await count()).toEqual([`QueryCommand ${h.t.names.identities}`, `QueryCommand ${h.t.names.identities}`]);
    const plain = await cliHarness('cli-sessions-none');
    try {
      await plain.seedLease(lease('b1', { name: 'plain' }));
      expect(await count(plain.t.names)).toEqual([]);
    } finally {
      await plain.t.drop();
    }
  });
});

describe('describe lease', () => {
  it('a fresh session: held, its term ends by the session’s renewal, and the coordinator leaves it alone', async () => {
    const r = await h.run(['describe', 'lease', 'live'], { clock: at() });
    expect(r.code, r.err).toBe(0);
    expect(r.out).toMatch(/^State: +held, term ends in 13s$/m);
    expect(r.out).toMatch(/^Renewed: +1m ago \(2026-01-01T11:59:00\.000Z\) \(the lease's own; the session's renewals keep the term\)$/m);
    expect(r.out).toMatch(/^Session: +held on session s-live, last renewed 2s ago by the session \(2026-01-01T11:59:58\.000Z; host web-1, process p1\)$/m);
    expect(r.out).toMatch(/^Next step: +designate a2 successor: it takes the lease at once if a1 stops renewing or releases$/m);
  });

  it('a stale session: expired, and the coordinator elects anew', async () => {
    const stale = await h.run(['describe', 'lease', 'stale'], { clock: at() });
    expect(stale.out).toMatch(/^State: +vacant: expired \(the term ended 15s ago; the coordinator allows 1s of clock skew\)$/m);
    expect(stale.out).toMatch(/^Session: +held on session s-stale, last renewed 30s ago by the session /m);
    expect(stale.out).toMatch(/^Next step: +elect a1 with a fencing token above 7 /m);
  });

  it("a session row gone, or another process's: it vouches for nothing, so the term is judged by its holder's own process's session, as the coordinator's tick judges it", async () => {
    const gone = await h.run(['describe', 'lease', 'gone'], { clock: at() });
    expect(gone.out).toMatch(/^State: +held, term ends in 13s$/m);
    expect(gone.out).toMatch(/^Session: +held on session s-gone, whose row is gone: it vouches for nothing .*; judged, as the coordinator judges it, by its holder's own process's session s-live \(process p1\), last renewed 2s ago$/m);
    expect(gone.out).not.toMatch(/^Next step: +elect/m);
    await h.seedLease(lease('a1', { name: 'foreign', holderInstance: 'a1_1@p1', session: 's-live', leaseDurationSeconds: 15, renewTime: NOW - MIN, acquireTime: NOW - MIN }));
    await identities.write({ key: { component: SESSION_COMPONENT, name: 's-peer' }, item: undefined, revision: 0 }, { set: { holderIdentity: 's-peer_1', process: 'p2', hostname: 'web-2', leaseDurationSeconds: 60, acquireTime: NOW - MIN, renewTime: NOW - 30 * SEC } });
    const l = await h.leases.read('foreign');
    await h.leases.write(l, { set: { session: 's-peer' } }); // a peer redirects the term onto its own process's session (stale: it would end the term if believed)
    const foreign = await h.run(['describe', 'lease', 'foreign'], { clock: at() });
    expect(foreign.out).toMatch(/^State: +held, term ends in 13s$/m);
    expect(foreign.out).toMatch(/^Session: +held on session s-peer, of another process \(p2; host web-2\): it does not vouch for a1's term .*; judged, as the coordinator judges it, by its holder's own process's session s-live \(process p1\), last renewed 2s ago$/m);
  });

  it('a lease its holder renews itself says so', async () => {
    const r = await h.run(['describe', 'lease', 'plain'], { clock: at() });
    expect(r.out).toMatch(/^Session: +none: the holder renews the lease itself$/m);
    expect(r.out).toMatch(/^State: +held, term ends in 14s$/m);
  });

  it('-o json: the lease as stored, with `judged`', async () => {
    const r = await h.run(['-o', 'json', 'describe', 'lease', 'live'], { clock: at() });
    const doc = JSON.parse(r.out) as { lease: Lease & { judged: Judged } };
    expect(doc.lease).toMatchObject({ name: 'live', renewTime: NOW - MIN, session: 's-live', judged: { at: NOW, vacant: false, expiresAt: NOW + 13 * SEC, session: { name: 's-live' } } });
  });

  it('watch LEASE and watch judge the same way', async () => {
    const one = await h.run(['watch', 'live', '--count', '1'], { clock: at(), pace: scripted([]) });
    expect(one.out).toMatch(/^State: +held, term ends in 13s$/m);
    const all = await h.run(['watch', '--count', '1'], { clock: at(), pace: scripted([]) });
    expect(all.out.split('\n').find((l) => l.startsWith('live '))).toMatch(/ 2s ago \(session\) +in 13s$/);
  });
});

describe('the next step after a write', () => {
  it('set-priority foresees the coordinator’s decision on the lease as judged', async () => {
    const live = await h.run(['set-priority', 'live', 'a1', '5', '--yes'], { clock: at() });
    // the coordinator's own prediction (decideWithSuccession): a1's term is current and a2 is named its successor, as set-locations says
    expect(live.out).toMatch(/^the coordinator's next step: designate a2 successor: it takes the lease at once if a1 stops renewing or releases$/m);
    const stale = await h.run(['set-priority', 'stale', 'a1', '5', '--yes'], { clock: at() });
    expect(stale.out).toMatch(/^the coordinator's next step: elect a1 with a fencing token above 7 /m);
  });

  it('set-locations too', async () => {
    const r = await h.run(['set-locations', 'live', 'us-east-1a', '--yes'], { clock: at() });
    expect(r.code, r.err).toBe(0);
    expect(r.out).toMatch(/^the coordinator's next step: designate a2 successor/m);
  });

  it("its holder standing down (standsDownUntil), its term live on its session: the best candidate the words name is judged on the lease as judged too (before: on the lease's own stamp, vacant, so a2 was called the best over a1)", async () => {
    for (const name of ['downed-p', 'downed-l']) {
      // as sessionHeld, but a1 stands down and a2 is already named successor (nothing else to do)
      await h.seedLease(lease('a1', { name, holderInstance: 'a1_1@p1', session: `s-${name}`, leaseDurationSeconds: 15, renewTime: NOW - MIN, acquireTime: NOW - MIN, electedStrategy: 'OldestEmulationVersion', successor: 'a2' }));
      await h.seedCandidate(cand('a1', '1.30.0', '1.30.0', { leaseName: name, standsDownUntil: NOW + 5 * MIN }));
      await h.seedCandidate(cand('a2', '1.31.0', '1.31.0', { leaseName: name }));
      await seedSession(`s-${name}`, NOW - 2 * SEC);
    }
    const pinned = await h.run(['set-priority', 'downed-p', 'a1', '5', '--yes'], { clock: at() });
    expect(pinned.code, pinned.err).toBe(0);
    expect(pinned.out).toMatch(/^the coordinator's next step: nothing: a1 is the best candidate and its term is current$/m);
    const placed = await h.run(['set-locations', 'downed-l', 'us-east-1a', '--yes'], { clock: at() });
    expect(placed.code, placed.err).toBe(0);
    expect(placed.out).toMatch(/^the coordinator's next step: nothing: a1 is the best candidate and its term is current$/m);
  });
});

describe('release', () => {
  it('a holder whose session renews is asked to yield, and waited for, though its own stamp is old', async () => {
    await sessionHeld('yield', NOW - SEC);
    const clock = manualClock(NOW);
    const renewSession = async () => {
      const s = await identities.read(SESSION_COMPONENT, 's-yield');
      await identities.write(s, { set: { renewTime: clock.now() } });
    };
    const holderYields = async () => {
      const l = (await h.leases.read('yield')).item!;
      await h.leases.releaseTerm('yield', { holderIdentity: l.holderIdentity!, fencingToken: l.fencingToken }, clock.now());
    };
    // ten polls (5 s) with the session renewed, then it yields: its own stamp (a minute old) never ends the wait
    const pace = scripted([...Array.from({ length: 10 }, () => renewSession), holderYields], clock);
    const r = await h.run(['release', 'yield', '--yes'], { clock, pace });
    expect(r.code, r.err).toBe(0);
    expect(r.err).toMatch(/^ask a1 to yield lease yield \(fencing token 7\) to a2/m);
    expect(r.err).toMatch(/^still waiting for a1: 5s so far \(it renewed 0s ago, through its session s-yield\)$/m);
    expect(r.out.split('\n')[0]).toBe('a1 yielded lease yield: its term (fencing token 7) is over; writes fenced with it fail from now on');
  });

  it('a holder whose session stopped renewing: the term ran out, ended directly', async () => {
    await sessionHeld('dead', NOW - 20 * SEC);
    const r = await h.run(['release', 'dead', '--yes'], { clock: at(), pace: scripted([]) });
    expect(r.code, r.err).toBe(0);
    expect(r.err).toMatch(/^note: a1's term ran out 5s ago \(its session s-dead stopped renewing\), so nobody acts on it: ending it directly$/m);
    expect((await h.leases.read('dead')).item).toMatchObject({ lastHolderIdentity: 'a1' });
    expect((await h.leases.read('dead')).item?.session).toBeUndefined();
  });

  it('--force says how long the holder may act, and marks the ended term on its session row (the holder reads it at its next session renewal, wake or no wake)', async () => {
    await sessionHeld('forced', NOW - 3 * SEC);
    const r = await h.run(['release', 'forced', '--force', '--yes'], { clock: at() });
    expect(r.code, r.err).toBe(0);
    expect(r.err).toMatch(/learns that its term is over at its next renewal \(of its session s-forced, on which this command marks the term ended\).*at most 15s from now/);
    const key = sessionKey('s-forced');
    expect((await identities.read(key.component, key.name)).item?.endedTerms).toEqual({ forced: expect.any(Number) });
  });

  it('--force on a holder whose session row is full of marks it may not have read yet: nothing is written, the operator is told to try again', async () => {
    await sessionHeld('crowded', NOW - 2 * SEC);
    const key = sessionKey('s-crowded');
    // a scripted --force over the process's leases: 512 of its terms ended within its last renewal
    const others = Array.from({ length: MAX_ENDED_TERMS }, (_, i) => `other-${i}`);
    const map = (v: number) => Object.fromEntries(others.map((l) => [l, v]));
    await h.t.client.send(new UpdateItemCommand({ TableName: h.t.names.identities, Key: marshall(key), UpdateExpression: 'SET endedTerms = :m, endedTermStamps = :s', ExpressionAttributeValues: marshall({ ':m': map(1), ':s': map(NOW - 2 * SEC) }) }));
    const r = await h.run(['release', 'crowded', '--force', '--yes'], { clock: at() });
    expect(r.code).not.toBe(0);
    expect(r.err).toMatch(/session s-crowded of a1 already holds 512 ended terms its holder may not have read yet .*nothing was written - run the command again in a few seconds/);
    expect((await h.leases.read('crowded')).item).toMatchObject({ holderIdentity: 'a1', session: 's-crowded' }); // not ended unmarked
    expect(Object.keys((await identities.read(key.component, key.name)).item!.endedTerms!)).not.toContain('crowded');
  });

  it('--force whose session row fills while the operator confirms: nothing is ended unmarked', async () => {
    await sessionHeld('filled', NOW - 2 * SEC);
    const key = sessionKey('s-filled');
    // room for one mark when the command looks; the process's other terms ended while the question is open
    const map = (n: number, v: number) => Object.fromEntries(Array.from({ length: n }, (_, i) => [`other-${i}`, v]));
    const fill = (n: number) => h.t.client.send(new UpdateItemCommand({ TableName: h.t.names.identities, Key: marshall(key), UpdateExpression: 'SET endedTerms = :m, endedTermStamps = :s', ExpressionAttributeValues: marshall({ ':m': map(n, 1), ':s': map(n, NOW - 2 * SEC) }) }));
    await fill(MAX_ENDED_TERMS - 1);
    const ask = async () => {
      await fill(MAX_ENDED_TERMS);
      return 'y';
    };
    const err: string[] = [];
    const ctx = cliContext(h.t.client, { tablePrefix: h.prefix, tables: h.t.names }, { clock: at(), sink: { out: () => {}, err: (l) => err.push(l), color: false }, output: 'table', confirm: { yes: false, interactive: true, ask } });
    const done = await release(ctx, { lease: 'filled', force: true }, scripted([])).then(() => 'released', (e: unknown) => e);
    const row = (await identities.read(key.component, key.name)).item!;
    const held = (await h.leases.read('filled')).item!;
    // (before: the check passed, the release landed, the mark was refused: a1 led on unmarked beside its successor)
    expect(held.holderIdentity === 'a1' || row.endedTerms?.['filled'] === held.fencingToken, `${String(done)}\n${err.join('\n')}`).toBe(true);
    expect(held).toMatchObject({ holderIdentity: 'a1', session: 's-filled' });
    expect(done).toBeInstanceOf(CliError);
    expect((done as CliError).message).toMatch(/session s-filled of a1 already holds 512 ended terms its holder may not have read yet .*nothing was written - run the command again in a few seconds/);
  });

  it("--force from a machine whose clock runs ahead drops none of the session's unread marks", async () => {
    await sessionHeld('ahead', NOW - 2 * SEC);
    const key = sessionKey('s-ahead');
    // the lease stream marked 40 of the process's other terms ended at its last renewal: none read yet
    const others = Object.fromEntries(Array.from({ length: 40 }, (_, i) => [`other-${i}`, 3]));
    const stamps = Object.fromEntries(Object.keys(others).map((l) => [l, NOW - 2 * SEC]));
    await h.t.client.send(new UpdateItemCommand({ TableName: h.t.names.identities, Key: marshall(key), UpdateExpression: 'SET endedTerms = :m, endedTermStamps = :s', ExpressionAttributeValues: marshall({ ':m': others, ':s': stamps }) }));
    // the operator's clock a minute ahead: by it, the session looks over
    const r = await h.run(['release', 'ahead', '--force', '--yes'], { clock: manualClock(NOW + MIN) });
    expect(r.code, r.err).toBe(0);
    // (before: the mark dropped 32 of them as of a session over, and their holders never heard their terms had ended)
    expect((await identities.read(key.component, key.name)).item!.endedTerms).toEqual({ ...others, ahead: expect.any(Number) });
  });

  it('--force on a term its session does not vouch for says the holder learns only at its own read of the lease (the mark cannot reach it)', async () => {
    await sessionHeld('unvouched', undefined); // the row the lease names does not exist
    await h.leases.write(await h.leases.read('unvouched'), { set: { holderInstance: 'a1_1@p-gone' } }); // and its process has no session left
    const r = await h.run(['release', 'unvouched', '--force', '--yes'], { clock: at() });
    expect(r.code, r.err).toBe(0);
    expect(r.err).toMatch(/learns that its term is over at its own next read of the lease - its session s-unvouched does not vouch for its term .* at most 66s from now with the push path/);
    expect((await h.leases.read('unvouched')).item).toMatchObject({ lastHolderIdentity: 'a1' });
  });

  it.each([
    ["an older SDK's (no colon: conclave-session)", 'redirected', (name: string) => name],
    // granted every lease: each process's sessions in its own shard, the peer's in another than the holder's
    ['in shards (all-<k>:…)', 'redirected-sharded', (name: string, process: string) => `${sessionShard(process)}:${name}`],
  ] as const)("--force on a term a peer redirected marks it ended on the holder's own process's session, which the holder renews: session names %s", async (_, leaseName, named) => {
    // a1's process p7 renews s-own; a peer of the lease rewrote `session` to its own process's row
    const p2 = ['p2', 'p3', 'p4', 'p5', 'p6'].find((p) => sessionShard(p) !== sessionShard('p7'))!;
    const peer = named(`s-peer-of-${leaseName}`, p2);
    await h.seedLease(lease('a1', { name: leaseName, holderInstance: 'a1_1@p7', session: peer, leaseDurationSeconds: 15, renewTime: NOW - MIN, acquireTime: NOW - MIN, electedStrategy: 'OldestEmulationVersion' }));
    await h.seedCandidate(cand('a1', '1.30.0', '1.30.0', { leaseName }));
    const write = (name: string, process: string, renewTime: number) =>
      identities.write({ key: sessionKey(name), item: undefined, revision: 0 }, { set: { holderIdentity: `${name}_1`, process, hostname: 'web', leaseDurationSeconds: 60, acquireTime: NOW - 10 * MIN, renewTime } });
    const own = named(`s-own-${leaseName}`, 'p7');
    const old = named(`s-own-old-${leaseName}`, 'p7');
    await write(peer, p2, NOW - SEC);
    await write(old, 'p7', NOW - 5 * MIN); // an older session of the same process: not the one it renews
    await write(own, 'p7', NOW - 2 * SEC);
    const r = await h.run(['release', leaseName, '--force', '--yes'], { clock: at() });
    expect(r.code, r.err).toBe(0);
    expect(r.err).toContain(`learns that its term is over at its next renewal of its own process's session ${own} (the lease names session ${peer}, which does not vouch for its term; this command marks the term ended on ${own})`);
    expect(r.err).toMatch(/at most 15s from now/);
    const read = async (name: string) => { const k = sessionKey(name); return (await identities.read(k.component, k.name)).item?.endedTerms; };
    expect(await read(own)).toEqual({ [leaseName]: expect.any(Number) });
    expect(await read(old)).toBeUndefined();
    expect(await read(peer)).toBeUndefined();
  });

  it('waits as long as a session-held holder can take to see a request to yield (its backstop read), not twice the lease', () => {
    const base = { name: 'x', leaseDurationSeconds: 15 } as Lease;
    expect(yieldWaitMs({ ...base, session: 's' })).toBe(Math.ceil((SESSION_QUIET_LEASES * 1.1 + 1) * 15_000));
    expect(yieldWaitMs(base)).toBe(30_000);
    expect(yieldWaitMs({ ...base, leaseDurationSeconds: 2 })).toBe(10_000);
  });
});

describe("a term the lease's session does not vouch for, or one its process left: shown as the coordinator's tick judges it (vacancy.ts judgingRow)", () => {
  /** Session row `name` of process `process`, renewed at `renewTime`; `left`: the terms its stopped electors left (leftTerms). */
  const processSession = (name: string, process: string, renewTime: number, left?: Record<string, { token: number; instance: string; stamp: number }>) =>
    identities.write(
      { key: sessionKey(name), item: undefined, revision: 0 },
      { set: { holderIdentity: `${name}_1`, process, hostname: 'web-9', leaseDurationSeconds: 60, acquireTime: NOW - 10 * MIN, renewTime, ...(left ? { leftTerms: left } : {}) } },
    );
  /** Lease `name` held by a1 of process `process` (its own stamp a minute old, 15 s long), on session `session`. */
  const heldBy = async (name: string, process: string, session: string) => {
    await h.seedLease(lease('a1', { name, holderInstance: `a1_1@${process}`, session, leaseDurationSeconds: 15, renewTime: NOW - MIN, acquireTime: NOW - MIN, electedStrategy: 'OldestEmulationVersion' }));
    await h.seedCandidate(cand('a1', '1.30.0', '1.30.0', { leaseName: name }));
    await h.seedCandidate(cand('a2', '1.31.0', '1.31.0', { leaseName: name }));
  };
  const lines = async (name: string) => {
    const list = await h.run(['get', 'leases'], { clock: at() });
    const json = JSON.parse((await h.run(['-o', 'json', 'get', 'leases'], { clock: at() })).out) as (Lease & { judged: Judged })[];
    const describe = await h.run(['describe', 'lease', name], { clock: at() });
    const watch = await h.run(['watch', '--count', '1'], { clock: at(), pace: scripted([]) });
    return {
      row: list.out.split('\n').find((l) => l.startsWith(`${name} `))!.split(/\s{3,}/).slice(-2),
      judged: json.find((l) => l.name === name)!.judged,
      state: describe.out.split('\n').find((l) => l.startsWith('State:'))!.replace(/^State: +/, ''),
      session: describe.out.split('\n').find((l) => l.startsWith('Session:'))!.replace(/^Session: +/, ''),
      next: describe.out.split('\n').find((l) => l.startsWith('Next step:'))!.replace(/^Next step: +/, ''),
      watched: watch.out.split('\n').find((l) => l.startsWith(`${name} `))!.split(/\s{3,}/).slice(-1)[0],
    };
  };

  it("(a) a kept term its process's session names in leftTerms, the lease's session pointed at a missing row, the session renewing on: it ends at the stamp it was left at + the lease duration", async () => {
    // pk's session renews (1 s ago); its stopped elector left kept-left's term (token 7) at NOW - 10 s
    await processSession('s-pk', 'pk', NOW - SEC, { 'kept-left': { token: 7, instance: 'a1_1@pk', stamp: NOW - 10 * SEC } });
    await heldBy('kept-left', 'pk', 's-kept-left-gone'); // a same-lease peer pointed the row at a missing session
    const seen = await lines('kept-left');
    // (before: 'unknown', held as of now, no expiresAt: the coordinator ends it 5 s from now)
    expect(seen.row).toEqual(['10s ago (its process left the term)', 'in 5s']);
    expect(seen.watched).toBe('in 5s');
    expect(seen.judged).toEqual({ at: NOW, vacant: false, expiresAt: NOW + 5 * SEC, session: { name: 's-kept-left-gone', row: null, vouches: false } });
    expect(seen.state).toBe('held, term ends in 5s');
    expect(seen.session).toMatch(/^held on session s-kept-left-gone, whose row is gone: .*; judged, as the coordinator judges it, by its holder's own process's session s-pk \(process pk\), which names this term as left by its stopped elector 10s ago \(2026-01-01T11:59:50\.000Z\): later renewals do not keep it$/);
  });

  it('(a) the same once the left stamp + the lease duration is past: vacant, and the coordinator elects anew', async () => {
    await processSession('s-pk2', 'pk2', NOW - SEC, { 'kept-out': { token: 7, instance: 'a1_1@pk2', stamp: NOW - 20 * SEC } });
    await heldBy('kept-out', 'pk2', 's-kept-out-gone');
    const seen = await lines('kept-out');
    expect(seen.row).toEqual(['20s ago (its process left the term)', '5s ago']);
    expect(seen.judged).toEqual({ at: NOW, vacant: true, reason: 'expired', expiresAt: NOW - 5 * SEC, session: { name: 's-kept-out-gone', row: null, vouches: false } });
    expect(seen.state).toBe('vacant: expired (the term ended 5s ago; the coordinator allows 1s of clock skew)');
    expect(seen.next).toMatch(/^elect a1 with a fencing token above 7 /);
  });

  it('(a) on the session the lease names, its own process renewing it on: RENEWED is the stamp the term was left at, not the renewals', async () => {
    await processSession('s-pk3', 'pk3', NOW - SEC, { 'kept-named': { token: 7, instance: 'a1_1@pk3', stamp: NOW - 10 * SEC } });
    await heldBy('kept-named', 'pk3', 's-pk3');
    const seen = await lines('kept-named');
    expect(seen.row).toEqual(['10s ago (its process left the term)', 'in 5s']);
    expect(seen.judged).toMatchObject({ vacant: false, expiresAt: NOW + 5 * SEC, session: { name: 's-pk3', vouches: true } });
    expect(seen.session).toMatch(/^held on session s-pk3, last renewed 1s ago by the session .*; it names this term as left by its stopped elector 10s ago \(2026-01-01T11:59:50\.000Z\): later renewals do not keep it$/);
  });

  it("(b) an unvouched term (its row's session points at a missing row) whose holder's own process session is live: held until that session's stamp + the lease duration", async () => {
    await processSession('s-pl', 'pl', NOW - 2 * SEC);
    await processSession('s-pl-old', 'pl', NOW - 5 * MIN); // an older session of the same process: not the one it renews
    await heldBy('redirected-live', 'pl', 's-redirected-live-gone');
    const seen = await lines('redirected-live');
    // (before: 'unknown', no expiresAt, "held; its session does not vouch for its holder…")
    expect(seen.row).toEqual(["2s ago (its process's session)", 'in 13s']);
    expect(seen.judged).toEqual({ at: NOW, vacant: false, expiresAt: NOW + 13 * SEC, session: { name: 's-redirected-live-gone', row: null, vouches: false } });
    expect(seen.state).toBe('held, term ends in 13s');
    expect(seen.session).toMatch(/^held on session s-redirected-live-gone, whose row is gone: .*; judged, as the coordinator judges it, by its holder's own process's session s-pl \(process pl\), last renewed 2s ago$/);
  });

  it("(b) release: a term whose holder's own process session stopped renewing ran out as the coordinator judges it, so it is ended directly, not waited for", async () => {
    await processSession('s-pr', 'pr', NOW - 30 * SEC);
    await heldBy('redirected-out', 'pr', 's-redirected-out-gone');
    const clock = at();
    const r = await h.run(['release', 'redirected-out', '--yes'], { clock, pace: scripted([], clock) });
    // (before: asked a1 to yield to a2 and waited it out, the term held as of now: 'a1 did not release lease redirected-out within 1m21s')
    expect(r.code, r.err).toBe(0);
    expect(r.err).toMatch(/^note: a1's term ran out 15s ago \(its process's session s-pr stopped renewing\), so nobody acts on it: ending it directly$/m);
    expect((await h.leases.read('redirected-out')).item).toMatchObject({ lastHolderIdentity: 'a1' });
  });

  it('(b) with no session of its own process left: by the lease\'s own stamp (a minute old: over)', async () => {
    await heldBy('redirected-none', 'p-none', 's-redirected-none-gone');
    const seen = await lines('redirected-none');
    expect(seen.row).toEqual(['1m ago (session gone)', '45s ago']);
    expect(seen.judged).toEqual({ at: NOW, vacant: true, reason: 'expired', expiresAt: NOW - 45 * SEC, session: { name: 's-redirected-none-gone', row: null, vouches: false } });
    expect(seen.state).toBe('vacant: expired (the term ended 45s ago; the coordinator allows 1s of clock skew)');
    expect(seen.session).toMatch(/^held on session s-redirected-none-gone, whose row is gone: .*; no session of its holder's process p-none is left, so the coordinator judges it by the lease's own stamp$/);
    expect(seen.next).toMatch(/^elect a1 with a fencing token above 7 /);
  });
  it("(c) a row of its holder's process's partitions that the schema refuses (it may be its own session): judged by nobody, as a refused named row: leader fails naming that row, get leases shows its end unknown; before: no leader, ended by the lease's own stamp", async () => {
    // pr's session row another writer broke (its host name a number): pr may renew it on
    await h.t.client.send(new PutItemCommand({ TableName: h.t.names.identities, Item: marshall({ component: SESSION_COMPONENT, name: 's-pr-broken', holderIdentity: 's-pr-broken_1', process: 'pr', hostname: 5, leaseDurationSeconds: 60, acquireTime: NOW - 10 * MIN, renewTime: NOW - 2 * SEC, revision: 3 }) }));
    await heldBy('redirected-refused', 'pr', 's-redirected-refused-gone');
    const leader = await h.run(['leader', 'redirected-refused'], { clock: at() });
    expect(leader.code, leader.out).toBe(1);
    expect(leader.err).toMatch(/^error: lease "redirected-refused": the term of a1 \(fencing token 7\) is held on session "s-pr-broken", whose row on the identities table "[^"]+" does not match the schema \(hostname: /);
    const list = await h.run(['get', 'leases'], { clock: at() });
    expect(list.out.split('\n').find((l) => l.startsWith('redirected-refused '))!.split(/\s{3,}/).slice(-1)).toEqual(['unknown']);
  });
});

describe("describe lease, a term judged off its named row while a refused row of its holder's process may be its own session: Row deleted says what the coordinator's tick does with that row, which no held lease names", () => {
  /** A lease held by a1 of process `process` on session `<name>-gone` (no row), and a row of `process`'s sessions the schema refuses (`set` over a readable one). */
  async function world(label: string, process: string, set: Record<string, unknown>) {
    const g = await cliHarness(label);
    const name = `held-${process}`;
    await g.seedLease(lease('a1', { name, holderInstance: `a1_1@${process}`, session: `${name}-gone`, leaseDurationSeconds: 15, renewTime: NOW - MIN, acquireTime: NOW - MIN, electedStrategy: 'OldestEmulationVersion' }));
    await g.seedCandidate(cand('a1', '1.30.0', '1.30.0', { leaseName: name }));
    const key = sessionKey(`s-${process}-broken`);
    await g.t.client.send(new PutItemCommand({ TableName: g.t.names.identities, Item: marshall({ ...key, holderIdentity: `s-${process}-broken_1`, process, hostname: 'web-9', leaseDurationSeconds: 60, acquireTime: NOW - 10 * MIN, renewTime: NOW - 2 * SEC, revision: 3, ...set }) }));
    const rowDeleted = async (now: number) => {
      const r = await g.run(['describe', 'lease', name], { clock: manualClock(now) });
      expect(r.code, r.err).toBe(0);
      expect(r.out).toMatch(new RegExp(`^Session: +held on session s-${process}-broken, whose row does not match the schema: `, 'm'));
      return r.out.split('\n').find((l) => l.startsWith('Row deleted:'))?.replace(/^Row deleted: +/, '');
    };
    const json = async (now: number) => (JSON.parse((await g.run(['-o', 'json', 'describe', 'lease', name], { clock: manualClock(now) })).out) as { lease: { judged: Judged } }).lease.judged.session?.refused;
    // the coordinator's round's end over the same tables, at `now`; then the row as stored (undefined: deleted)
    const tick = async (now: number) => {
      await collectIdentities(coordinatorDeps(g.t.client, g.t.names, { clock: manualClock(now) }));
      return new IdentityStore(g.t.client, g.t.names.identities).readRow(key.component, key.name);
    };
    return { g, rowDeleted, json, tick };
  }

  it('its stamp reads: deleted once expired by it (renewTime + leaseDurationSeconds + identityGcGraceMs + clockSkewMs), not timed by a sighting (before: "not timed yet … 1m1s after it first does")', async () => {
    const { g, rowDeleted, json, tick } = await world('cli-refused-own-stamped', 'pq', { hostname: 5 });
    try {
      const due = NOW - 2 * SEC + 60 * SEC + SEC; // its renewTime + 1m + 0s + 1s
      expect(await rowDeleted(NOW)).toBe(`by the coordinator's tick after ${new Date(due).toISOString()} (in 59s), once expired by its own stamp, if no held lease or live candidate names it then: its renewTime (2s ago, ${new Date(NOW - 2 * SEC).toISOString()}) + its leaseDurationSeconds (1m) + identityGcGraceMs (0s) + the larger of clockSkewMs and a row stamp's own error (1s); no held lease names the row, so the tick does not time it by a sighting`);
      expect(await json(NOW)).toMatchObject({ deleteAfter: due });
      expect(await json(NOW)).not.toHaveProperty('unchangedSince');
      // the tick leaves no sighting on it, keeps it until then, and deletes it after
      expect(await tick(NOW)).not.toHaveProperty(REFUSED_SEEN);
      expect(await tick(due)).toBeDefined();
      expect(await rowDeleted(due + SEC)).toBe(`due since ${new Date(due).toISOString()} (1s ago), expired by its own stamp: the coordinator's tick deletes it at its next pass over every lease (a round's end, or the next invocation's start where the round ran out of time), if no held lease or live candidate names it and its stamp is unchanged`);
      expect(await tick(due + 1)).toBeUndefined();
    } finally {
      await g.t.drop();
    }
  });

  it("its stamp reads, clockSkewMs set below a row stamp's own error (0 s): the tick still waits the stamp's error (1 s), and so does describe (before: it said the row was due a second before the tick would delete it)", async () => {
    const { g, json, tick } = await world('cli-refused-own-skew0', 'pz', { hostname: 5 });
    try {
      const due = NOW - 2 * SEC + 60 * SEC + SEC; // its renewTime + 1m + 0s + the larger of 0s and the stamp's error, 1s
      const zero = ['--election-config', '{"clockSkewMs":0}'];
      const r = await g.run([...zero, 'describe', 'lease', `held-pz`], { clock: manualClock(NOW) });
      expect(r.code, r.err).toBe(0);
      expect(r.out).toContain(`by the coordinator's tick after ${new Date(due).toISOString()} (in 59s), once expired by its own stamp`);
      expect(r.out).toContain("+ identityGcGraceMs (0s) + the larger of clockSkewMs and a row stamp's own error (1s);");
      const j = JSON.parse((await g.run([...zero, '-o', 'json', 'describe', 'lease', 'held-pz'], { clock: manualClock(NOW) })).out) as { lease: { judged: Judged } };
      expect(j.lease.judged.session?.refused).toMatchObject({ deleteAfter: due });
      // the coordinator configured alike keeps it until then
      expect(await json(NOW)).toMatchObject({ deleteAfter: due });
      await collectIdentities(coordinatorDeps(g.t.client, g.t.names, { clock: manualClock(due), config: { clockSkewMs: 0 } }));
      expect(await new IdentityStore(g.t.client, g.t.names.identities).readRow(sessionKey('s-pz-broken').component, sessionKey('s-pz-broken').name)).toBeDefined();
      expect(await tick(due + 1)).toBeUndefined();
    } finally {
      await g.t.drop();
    }
  });

  it("its stamp does not read: timed from the tick's first sighting for the longest lease of the held terms it may be the session of (15s), or its own that reads and is longer (1m), and clockSkewMs (before: a day, the longest a row may state, the term judged by nobody until then)", async () => {
    const { g, rowDeleted, json, tick } = await world('cli-refused-own-unstamped', 'pu', { renewTime: 'yesterday' });
    try {
      const wait = `the longest lease of the held terms whose holder's process it may be the session of, or its own where that reads and is longer (1m: no held lease names the row, and its stamp does not read) and clockSkewMs (1s)`;
      expect(await rowDeleted(NOW)).toBe(`not timed yet: the coordinator's tick has not seen the row as it is now; it deletes it 1m1s after it first does, if it stays unchanged: ${wait}`);
      expect(await tick(NOW)).toMatchObject({ [REFUSED_SEEN]: { at: NOW } });
      const due = NOW + MIN + SEC;
      expect(await rowDeleted(NOW + SEC)).toBe(`by the coordinator's tick after ${new Date(due).toISOString()} (in 1m), if the row stays unchanged: first seen so 1s ago (${new Date(NOW).toISOString()}), then ${wait}`);
      expect(await json(NOW + SEC)).toMatchObject({ unchangedSince: NOW, deleteAfter: due });
      expect(await tick(due)).toBeDefined();
      expect(await tick(due + 1)).toBeUndefined();
    } finally {
      await g.t.drop();
    }
  });
});

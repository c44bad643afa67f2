import { CreateTableCommand, DeleteTableCommand, PutItemCommand, UpdateItemCommand } from '@aws-sdk/client-dynamodb';
import { marshall } from '@aws-sdk/util-dynamodb';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createServer as createHttpServer } from 'node:http';
import { createServer, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { DEFAULT_REQUEST_TIMEOUT_MS } from '../../lib/cli/args.js';
import { QUESTION, assumeYes } from '../../lib/cli/confirm.js';
import { awsTarget } from '../../lib/cli/broken.js';
import { cliContext, clientFor, configFileRegion, type Target } from '../../lib/cli/context.js';
import { CliError, explain } from '../../lib/cli/errors.js';
import { release } from '../../lib/cli/release.js';
import { setPriority } from '../../lib/cli/priority.js';
import { manualClock } from '../../lib/clock.js';
import type { Candidate } from '../../lib/schemas/candidate.js';
import type { Lease } from '../../lib/schemas/lease.js';
import { fencingTokenFloor } from '../../lib/schemas/fencing-token.js';
import { CandidateStore, type CandidatePatch, type CandidateRead } from '../../lib/stores/candidate-store.js';
import { ConflictError } from '../../lib/stores/errors.js';
import { IdentityStore } from '../../lib/stores/identity-store.js';
import { sessionKey } from '../../lib/schemas/identity.js';
import { LeaseStore, type Term } from '../../lib/stores/lease-store.js';
import { MIN, NOW, SEC, cand, lease } from '../fixtures.js';
import { cliHarness, runMain, scripted, withAwsEnv, type CliHarness } from './harness.js';
import { close, listen, resettingProxy, synDroppingPort } from '../proxy.js';
import { listenOnLoopback } from '../support.js';

let h: CliHarness;
/** Three seconds after the rows were written: ages are exact. */
const at = () => manualClock(NOW + 3 * SEC);

beforeAll(async () => {
  h = await cliHarness('cli');
  // component-A: w1 holds; w2 has the older emulation version and is fresh; w3 is stale; w4's versions do not parse.
  await h.seedLease(lease('w1', { holderInstance: 'w1-i1', electedStrategy: 'OldestEmulationVersion' }));
  await h.seedCandidate(cand('w1', '1.31.0', '1.31.0', { identity: 'w1-i1' }));
  await h.seedCandidate(cand('w2', '1.30.0', '1.31.0', { identity: 'w2-i1', pingTime: NOW - 20 * SEC, renewTime: NOW - SEC }));
  await h.seedCandidate(cand('w3', '1.29.0', '1.29.0', { renewTime: NOW - 40 * MIN }));
  await h.seedCandidate(cand('w4', 'v1.x', '1.31.0', { priority: 9, priorityExpiresAt: NOW + 10 * MIN }));
  // jobs: no holder, an operator's strategy, an open election and a failure.
  await h.seedLease(lease(undefined, { name: 'jobs', lastHolderIdentity: 'j1', strategy: 'NoCoordination', election: { id: 'jobs#4', startedAt: NOW - SEC, deadline: NOW + 4 * SEC, strategy: 'NoCoordination' } }));
  await h.seedCandidate(cand('j2', '1.30.0', '1.30.0', { leaseName: 'jobs' }));
});
afterAll(() => h.t.drop());

describe('get', () => {
  it('get leases: an aligned table with holder, token, strategy, election, ages', async () => {
    const r = await h.run(['get', 'leases'], { clock: at() });
    expect(r.code).toBe(0);
    const lines = r.out.split('\n');
    expect(lines[0]).toMatch(/^NAME\s+HOLDER\s+TOKEN\s+STRATEGY\s+ELECTION\s+PREFERRED\s+RENEWED\s+EXPIRES$/);
    const row = (name: string) => lines.find((l) => l.startsWith(`${name} `))!.split(/\s{3,}/);
    expect(row('component-A')).toEqual(['component-A', 'w1', '7', 'OldestEmulationVersion', '-', '-', '3s ago', 'in 7s']);
    expect(row('jobs')).toEqual(['jobs', '- (was j1)', '7', 'NoCoordination (operator)', 'jobs#4 open, acks until in 1s', '-', '3s ago', '-']);
    // Columns line up: each header starts where its cells start.
    const col = lines[0]!.indexOf('TOKEN');
    expect(lines.slice(1).every((l) => /\S/.test(l[col]!) && l[col - 1] === ' ')).toBe(true);
  });

  it('get leases -o json: the items as parsed, one document', async () => {
    const r = await h.run(['get', 'leases', '-o', 'json'], { clock: at() });
    expect(r.code).toBe(0);
    const items = JSON.parse(r.out) as Lease[];
    expect(items.map((l) => l.name)).toEqual(['component-A', 'jobs']);
    // termToken: the store's copy of the term's token; judged: what the CLI judged (not stored)
    expect(items[0]).toEqual({ ...lease('w1', { holderInstance: 'w1-i1', electedStrategy: 'OldestEmulationVersion' }), termToken: 7, revision: 1, judged: { at: NOW + 3 * SEC, vacant: false, expiresAt: NOW + 10 * SEC } });
  });

  it('get candidates LEASE: versions, priority with expiry, strategies, renewal, ping state, identity, location, platform', async () => {
    const r = await h.run(['get', 'candidates', 'component-A'], { clock: at() });
    expect(r.code).toBe(0);
    const lines = r.out.split('\n');
    expect(lines[0]).toMatch(/^NAME\s+LEASE\s+EMULATION\s+BINARY\s+PRIORITY\s+STRATEGIES\s+RENEWED\s+PING\/ACK\s+IDENTITY\s+LOCATION\s+PLATFORM$/);
    const row = (name: string) => lines.find((l) => l.startsWith(`${name} `))!.split(/\s{3,}/);
    expect(row('w1')).toEqual(['w1', 'component-A', '1.31.0', '1.31.0', '-', 'OldestEmulationVersion', '3s ago', '-', 'w1-i1', '-', '-']);
    expect(row('w2')).toEqual(['w2', 'component-A', '1.30.0', '1.31.0', '-', 'OldestEmulationVersion', '4s ago', 'acked (pinged 23s ago)', 'w2-i1', '-', '-']);
    expect(row('w3')[6]).toBe('40m3s ago');
    expect(row('w4')[4]).toBe('9 (expires in 9m57s)');
    expect(lines).toHaveLength(5);
  });

  it('PING/ACK judges an ack as the coordinator does: by ackedPingTime (its own stamp copied back), not by the worker’s clock', async () => {
    // p-fast: its clock runs ahead (renewTime after the ping) but it never answered (ackedPingTime 0): the coordinator counts it as ignoring the ping
    await h.seedCandidate(cand('p-fast', '1.30.0', '1.30.0', { leaseName: 'pings', pingTime: NOW - 20 * SEC, ackedPingTime: 0, renewTime: NOW }));
    // p-slow: its clock runs behind (renewTime before the ping) but its renewal copied the ping back: answered
    await h.seedCandidate(cand('p-slow', '1.30.0', '1.30.0', { leaseName: 'pings', pingTime: NOW - 20 * SEC, ackedPingTime: NOW - 20 * SEC, renewTime: NOW - 25 * SEC }));
    try {
      const r = await h.run(['get', 'candidates', 'pings'], { clock: at() });
      expect(r.code, r.err).toBe(0);
      const row = (name: string) => r.out.split('\n').find((l) => l.startsWith(`${name} `))!.split(/\s{3,}/);
      expect(row('p-fast')[7]).toBe('ignored (pinged 23s ago)');
      expect(row('p-slow')[7]).toBe('acked (pinged 23s ago)');
    } finally {
      for (const name of ['p-fast', 'p-slow']) await h.candidates.delete(await h.candidates.read('pings', name));
    }
  });

  it('get candidates without a lease scans every lease', async () => {
    const r = await h.run(['get', 'candidates', '-o', 'json'], { clock: at() });
    expect((JSON.parse(r.out) as Candidate[]).map((c) => `${c.leaseName}/${c.name}`)).toEqual(['component-A/w1', 'component-A/w2', 'component-A/w3', 'component-A/w4', 'jobs/j2']);
  });

  it('an unknown lease lists the ones that exist', async () => {
    const r = await h.run(['get', 'candidates', 'nope'], { clock: at() });
    expect(r.code).toBe(1);
    expect(r.err).toBe(`error: no lease "nope" in ${h.prefix}-leases (and no candidates for it in ${h.prefix}-candidates); leases: component-A, jobs`);
  });
});

describe('describe lease', () => {
  it("docs/cli.md's `describe lease nightly-report` sample is what the command prints for its rows", async () => {
    // the sample's rows: w2 holds, w1 is pinned (priority 5) and preferred, w3 the second successor
    const now = Date.parse('2026-11-23T11:54:22.431Z');
    const acquired = Date.parse('2026-11-23T11:53:58.896Z');
    const id = { w1: 'w1_9eec4b13-38a7-4700-9edb-623c8376759b', w2: 'w2_cd53e60c-1ebb-4dc6-bdfe-aeec45ab486d', w3: 'w3_5a0be1ba-58a9-4fc5-a27b-946333bb19c7' };
    const own = await cliHarness('cli-docs-sample');
    try {
      const set = { leaseDurationSeconds: 15, renewTime: now - SEC, acquireTime: acquired, leaseTransitions: 4, fencingToken: fencingTokenFloor(acquired), electedBy: 'coordinator' as const, electedStrategy: 'OldestEmulationVersion', holderIdentity: 'w2', holderInstance: id.w2, preferredHolder: 'w1', lastHolderIdentity: 'w3', successor: 'w1', successorInstance: id.w1, secondSuccessor: 'w3', secondSuccessorInstance: id.w3 };
      await own.leases.write(LeaseStore.readOf('nightly-report', undefined), { set });
      for (let i = 1; i < 50; i++) await own.leases.write(await own.leases.read('nightly-report'), { set: { renewTime: now - SEC } }); // revision 50
      const candidate = (name: 'w1' | 'w2' | 'w3', emulationVersion: string, createdAgo: number, renewedAgo: number, extra: Partial<Candidate> = {}) =>
        own.seedCandidate(cand(name, emulationVersion, '1.31.0', { leaseName: 'nightly-report', identity: id[name], createdAt: now - createdAgo, renewTime: now - renewedAgo, pingTime: now - 2 * SEC, ackedPingTime: now - 2 * SEC, ...extra }));
      await candidate('w1', '1.31.0', 70 * SEC, 2 * SEC, { priority: 5, priorityExpiresAt: now + 29 * MIN + 57.5 * SEC });
      await candidate('w2', '1.30.0', 67 * SEC, SEC);
      await candidate('w3', '1.31.0', 63 * SEC, SEC);
      const r = await own.run(['describe', 'lease', 'nightly-report'], { clock: manualClock(now) });
      expect(r.code, r.err).toBe(0);
      const docs = readFileSync(new URL('../../docs/cli.md', import.meta.url), 'utf8');
      const sample = /```\n\$ npx conclave describe lease nightly-report\n([\s\S]*?)\n```/.exec(docs)?.[1];
      expect(sample).toBe(r.out);
    } finally {
      await own.t.drop();
    }
  });

  it('shows where the holder runs and the last term the platform ended', async () => {
    const task = { kind: 'ecs' as const, id: 'arn:aws:ecs:eu-west-1:000000000000:task/workers/0123abcd', cluster: 'workers', availabilityZone: 'eu-west-1a' };
    const own = await cliHarness('cli-platform');
    await own.seedLease(
      lease('p1', { name: 'on-ecs', holderPlatform: task, holderPlatformId: task.id, holderLoss: { holder: 'p0', fencingToken: 6, source: 'aws.ecs', platformId: 'arn:aws:ecs:eu-west-1:000000000000:task/workers/99', reason: 'Essential container in task exited', at: NOW - MIN } }),
    );
    const r = await own.run(['describe', 'lease', 'on-ecs'], { clock: at() });
    await own.t.drop();
    expect(r.code).toBe(0);
    expect(r.out).toMatch(/Platform:\s+ecs arn:aws:ecs:eu-west-1:000000000000:task\/workers\/0123abcd \(eu-west-1a\)/);
    expect(r.out).toMatch(/Last lost:\s+p0 \(token 6\) 1m3s ago: aws\.ecs said Essential container in task exited/);
  });

  it('a candidate that showed no life since before the term began (a process killed then): not seen alive this term, as the coordinator judges it for succession', async () => {
    // before: "live (renewed 12m ago)" until the row was 30 minutes stale, while the coordinator would not name it successor unasked
    const own = await cliHarness('cli-not-seen');
    try {
      // p1's term began 5 min ago (10 s lease): p2 renewed in it, p3 last 12 min ago, p4 within a lease duration before it began
      await own.seedLease(lease('p1', { name: 'after-crash', holderInstance: 'p1-i1', renewTime: NOW }));
      for (const [name, ago] of [['p1', 0], ['p2', 2 * MIN], ['p3', 12 * MIN], ['p4', 5 * MIN + 8 * SEC]] as const) await own.seedCandidate(cand(name, '1.31.0', '1.31.0', { leaseName: 'after-crash', renewTime: NOW - ago }));
      const r = await own.run(['describe', 'lease', 'after-crash'], { clock: at() });
      expect(r.code, r.err).toBe(0);
      const state = (name: string) => r.out.split('\n').find((l) => l.trim().split(/\s{3,}/)[1] === name)!.trim().split(/\s{3,}/).at(-1);
      expect(state('p1')).toBe('holder, fresh');
      expect(state('p2')).toBe('live (renewed 2m3s ago)');
      expect(state('p3')).toBe('live (renewed 12m3s ago), not seen alive this term: pinged before it is named successor');
      expect(state('p4')).toBe('live (renewed 5m11s ago)');
      // with succession off nobody is named or pinged for it: plain live
      const off = await own.run(['--election-config', '{"succession":false}', 'describe', 'lease', 'after-crash'], { clock: at() });
      expect(off.out).toMatch(/^ +\d +p3 .* live \(renewed 12m3s ago\)$/m);
    } finally {
      await own.t.drop();
    }
  });

  it('shows every field, the candidates in the coordinator’s order, the pick and why, and the next step', async () => {
    const r = await h.run(['describe', 'lease', 'component-A'], { clock: at() });
    expect(r.code).toBe(0);
    const out = r.out;
    expect(out).toMatch(/^Holder: +w1 \(instance w1-i1\)$/m);
    expect(out).toMatch(/^State: +held, term ends in 7s$/m);
    expect(out).toMatch(/^Fencing token: +7 \(transitions: 3\)$/m);
    expect(out).toMatch(/^Acquired: +5m3s ago \(2026-01-01T11:55:00\.000Z\)$/m);
    expect(out).toMatch(/^Strategy: +not set: the candidates agree on OldestEmulationVersion$/m);
    expect(out).toMatch(/^Election: +none open$/m);
    const ranking = out.split('\n').filter((l) => /^ {2}[-\d] /.test(l)).map((l) => l.trim().split(/\s{3,}/));
    expect(ranking.map((c) => [c[0], c[1]])).toEqual([['1', 'w2'], ['2', 'w1'], ['-', 'w3'], ['-', 'w4']]);
    expect(ranking[1]!.at(-1)).toBe('holder, fresh');
    expect(ranking[2]!.at(-1)).toBe('stale (not renewed for 30m): not counted');
    expect(ranking[3]!.at(-1)).toBe('versions do not parse: never elected');
    expect(out).toMatch(/^Best candidate: +w2: older emulation version than w1 \(1\.30\.0 < 1\.31\.0\)$/m);
    expect(out).toMatch(/^Next step: +ask w1 to yield to w2 \(preferredHolder\); w1 releases at its next renewal/m);
  });

  it.each([
    {
      why: 'a tie on versions: the earlier registration elects only into a vacant lease',
      best: 'w1: same versions as w3, registered earlier (2026-01-01T10:00:00.000Z)',
      w1: { createdAt: NOW - 2 * 60 * MIN },
    },
  ])("the holder kept though another is the best candidate ($why): the Next step does not call the holder the best", async ({ best, w1 }) => {
    const own = await cliHarness('cli-kept');
    try {
      await own.seedLease(lease('w3', { name: 'kept', successor: 'w1', successorInstance: 'w1_1' }));
      await own.seedCandidate(cand('w1', '1.31.0', '1.31.0', { leaseName: 'kept', identity: 'w1_1', ...w1 }));
      await own.seedCandidate(cand('w3', '1.31.0', '1.31.0', { leaseName: 'kept', identity: 'w3_1' }));
      const r = await own.run(['describe', 'lease', 'kept'], { clock: at() });
      expect(r.code, r.err).toBe(0);
      expect(r.out).toMatch(new RegExp(`^Best candidate: +${best.replace(/[.()]/g, '\\$&')}$`, 'm'));
      // before: "nothing: w3 is the best candidate and its term is current", under "Best candidate: w1"
      expect(r.out).toMatch(/^Next step: +nothing: w3 keeps its term: a holder is preempted only for a candidate of higher priority, older versions or a better location that answers and has renewed since the term began, and w1 is none now$/m);
    } finally {
      await own.t.drop();
    }
  });

  it('the last holder, better, has not renewed since the term began (isDeparted): passed over, so not the Best candidate, as decide() passes it over (before: the Best candidate, "live")', async () => {
    const own = await cliHarness('cli-kept-departed');
    try {
      await own.seedLease(lease('w3', { name: 'kept', lastHolderIdentity: 'w1', acquireTime: NOW - 5 * SEC }));
      await own.seedCandidate(cand('w1', '1.30.0', '1.30.0', { leaseName: 'kept', identity: 'w1_1', renewTime: NOW - 10 * SEC }));
      await own.seedCandidate(cand('w3', '1.31.0', '1.31.0', { leaseName: 'kept', identity: 'w3_1' }));
      const r = await own.run(['describe', 'lease', 'kept'], { clock: at() });
      expect(r.code, r.err).toBe(0);
      expect(r.out).toMatch(/^ +1 +w1 .* last holder, not seen alive since this term began \(renewed 13s ago\): passed over \(may be dead\) until it renews or answers a ping$/m);
      expect(r.out).toMatch(/^Best candidate: +w3: the only candidate that counts$/m);
      expect(r.out).toMatch(/^Next step: +nothing: w3 is the best candidate and its term is current$/m);
    } finally {
      await own.t.drop();
    }
  });

  it('a term its successor holds by succession reads as handed over or taken vacant, not only taken vacant', async () => {
    // a SIGTERMed leader's hand-over writes electedBy 'successor' as a take of a vacant lease does: the row cannot tell them apart
    const own = await cliHarness('cli-succession');
    await own.seedLease(lease('p2', { name: 'handed', electedBy: 'successor', electedStrategy: 'OldestEmulationVersion', lastHolderIdentity: 'p1' }));
    const r = await own.run(['describe', 'lease', 'handed'], { clock: at() });
    await own.t.drop();
    expect(r.code, r.err).toBe(0);
    expect(r.out).toMatch(/^Elected: +by succession \(the designated successor: handed the term by the leader stepping down, or taking the lease as it fell vacant\) under OldestEmulationVersion$/m);
  });

  it('shows the run-once windows withLease completed on the lease, newest first', async () => {
    const own = await cliHarness('cli-runs');
    const runs = ['2026-01-03', '2026-01-02', '2026-01-01'].map((window, i) => ({ window, fencingToken: 30 - i, holder: `inv-${3 - i}`, at: NOW - i * MIN }));
    await own.seedLease(lease(undefined, { name: 'nightly', runs }));
    await own.seedLease(lease(undefined, { name: 'never-ran' }));
    const r = await own.run(['describe', 'lease', 'nightly'], { clock: at() });
    const none = await own.run(['describe', 'lease', 'never-ran'], { clock: at() });
    await own.t.drop();
    expect(r.out).toMatch(/^Run-once windows: +2026-01-03 by inv-3 \(token 30\); 2 earlier: 2026-01-02, 2026-01-01$/m);
    expect(none.out).toMatch(/^Run-once windows: +none completed$/m);
  });

  it('shows an open election, an operator strategy and the vacancy', async () => {
    const r = await h.run(['describe', 'lease', 'jobs'], { clock: at() });
    expect(r.out).toMatch(/^State: +vacant: no holder$/m);
    expect(r.out).toMatch(/^Strategy: +NoCoordination \(set by an operator; sticky until `conclave set-strategy jobs --clear`\)$/m);
    expect(r.out).toMatch(/^Election: +jobs#4: started 4s ago, acks until in 1s, strategy NoCoordination$/m);
    expect(r.out).toMatch(/^Next step: +cancel election jobs#4 \(strategyChanged\)$/m);
  });

  it('a lease with candidates but no row yet: what the coordinator will do with it', async () => {
    await h.seedCandidate(cand('c1', '1.30.0', '1.30.0', { leaseName: 'no-row', renewTime: NOW + 2 * SEC }));
    const r = await h.run(['describe', 'lease', 'no-row'], { clock: at() });
    expect(r.code).toBe(0);
    expect(r.out).toMatch(/^State: +vacant: no lease row yet \(the coordinator writes it at the first election\)$/m);
    expect(r.out).toMatch(/^Best candidate: +c1: the only candidate that counts$/m);
    expect(r.out).toMatch(/^Next step: +elect c1 with a fencing token above 0$/m);
    const j = await h.run(['describe', 'lease', 'no-row', '-o', 'json'], { clock: at() });
    expect(JSON.parse(j.out)).toMatchObject({ lease: null, candidates: [{ name: 'c1' }] });
  });

  it('-o json: the lease row and its candidate rows, best first', async () => {
    const r = await h.run(['-o', 'json', 'describe', 'lease', 'component-A'], { clock: at() });
    const doc = JSON.parse(r.out) as { lease: Lease; candidates: Candidate[] };
    expect(doc.lease.holderIdentity).toBe('w1');
    expect(doc.candidates.map((c) => c.name)).toEqual(['w2', 'w1', 'w3', 'w4']);
  });

  it("the repair commands reach the CLI's own DynamoDB: its endpoint, or its region and profile (the account: before --profile's, the AWS CLI's default)", () => {
    const tables = { leases: 'l', candidates: 'c', identities: 'i' };
    const of = (target: Partial<Target>) => awsTarget({ target: { tablePrefix: 'conclave', tables, ...target } });
    expect(of({ region: 'eu-west-1', profile: 'prod' })).toBe('--region eu-west-1 --profile prod');
    expect(of({ profile: "ops's" })).toBe(`--profile 'ops'\\''s'`);
    // DynamoDB Local: the endpoint alone, its dummy credentials any profile's
    expect(of({ endpoint: 'http://127.0.0.1:8000', profile: 'prod' })).toBe('--endpoint-url http://127.0.0.1:8000');
    expect(of({})).toBe('');
  });

  it('a broken lease row: names the field and the schema\'s message, shows the row, and gives the commands that repair it', async () => {
    const own = await cliHarness('cli-broken');
    try {
      await own.seedCandidate(cand('c1', '1.30.0', '1.30.0', { leaseName: 'bricked' }));
      // Written by hand (or by another version of Conclave): a term of 0 seconds.
      await own.t.client.send(new PutItemCommand({ TableName: own.t.names.leases, Item: marshall({ name: 'bricked', holderIdentity: 'x', leaseDurationSeconds: 0, leaseTransitions: 2, fencingToken: 7, revision: 3 }) }));
      const r = await own.run(['describe', 'lease', 'bricked'], { clock: at() });
      expect(r.code).toBe(0);
      expect(r.out).toMatch(/^State: +broken: the row does not match the schema/m);
      expect(r.out).toMatch(/^Problem: +leaseDurationSeconds: must be >= 1, not the number 0$/m);
      expect(r.out).toMatch(/"fencingToken":7/);
      const table = own.t.names.leases;
      // the exact commands, pointed at this DynamoDB
      expect(r.out).toContain(`aws dynamodb update-item --endpoint-url ${own.endpoint} --table-name ${table} --key '{"name":{"S":"bricked"}}'`);
      expect(r.out).toContain(`--update-expression 'SET #f0 = :v0 ADD #rev :one' --expression-attribute-names '{"#f0":"leaseDurationSeconds","#rev":"revision"}'`);
      expect(r.out).toContain(`aws dynamodb delete-item --endpoint-url ${own.endpoint} --table-name ${table} --key '{"name":{"S":"bricked"}}'`);
      expect(r.out).toMatch(/fencing token/i);
      // the candidates are still shown
      expect(r.out).toMatch(/^ {2}\S+ +c1 /m);

      const j = await own.run(['-o', 'json', 'describe', 'lease', 'bricked'], { clock: at() });
      expect(j.code).toBe(0);
      const doc = JSON.parse(j.out) as { lease: null; broken: { issues: { field: string; message: string }[]; row: Record<string, unknown>; repair: string[] }; candidates: Candidate[] };
      expect(doc.lease).toBeNull();
      expect(doc.broken.issues.map((i) => i.field)).toEqual(['leaseDurationSeconds']);
      expect(doc.broken.row).toMatchObject({ name: 'bricked', fencingToken: 7 });
      expect(doc.broken.repair.some((c) => c.startsWith('aws dynamodb delete-item'))).toBe(true);
      expect(doc.candidates.map((c) => c.name)).toEqual(['c1']);
    } finally {
      await own.t.drop();
    }
  });

  it("a lease row written for a newer Conclave (minReader 2): describe says to upgrade, and offers no command that strips the guard or deletes the row (before: both, as for a broken row)", async () => {
    const own = await cliHarness('cli-newer-row');
    try {
      await own.seedCandidate(cand('c1', '1.30.0', '1.30.0', { leaseName: 'future' }));
      await own.seedLease(lease('c1', { name: 'future' }));
      await own.t.client.send(new UpdateItemCommand({ TableName: own.t.names.leases, Key: marshall({ name: 'future' }), UpdateExpression: 'SET minReader = :two', ExpressionAttributeValues: marshall({ ':two': 2 }) }));
      const r = await own.run(['describe', 'lease', 'future'], { clock: at() });
      expect(r.code, r.err).toBe(0);
      expect(r.out).toMatch(/^State: +written for a newer Conclave: the row needs readers of format 2, and this CLI reads format 1\./m);
      expect(r.out).toMatch(/^Repair: +none to the row: upgrade this CLI, and the construct and workers still on this version, to a Conclave that reads format 2\./m);
      expect(r.out).not.toContain('aws dynamodb update-item');
      expect(r.out).not.toContain('aws dynamodb delete-item');
      const j = JSON.parse((await own.run(['-o', 'json', 'describe', 'lease', 'future'], { clock: at() })).out) as { broken: { issues: { field: string }[]; repair: string[] } };
      expect(j.broken.issues.map((i) => i.field)).toEqual(['minReader']);
      expect(j.broken.repair).toEqual([]);
    } finally {
      await own.t.drop();
    }
  });

  it.each([
    ['release', ['release', 'bricked', '--yes']],
    ['release --force', ['release', 'bricked', '--force', '--yes']],
    ['leader', ['leader', 'bricked']],
    ['set-strategy', ['set-strategy', 'bricked', 'NoCoordination', '--yes']],
    ['preempt', ['preempt', 'bricked', '--to', 'c1', '--yes']],
    ['watch', ['watch', 'bricked', '--count', '1']],
  ])('a broken lease row met by %s: the error names the field, then where the repair is shown (describe)', async (_command, argv) => {
    const own = await cliHarness('cli-broken-acts');
    try {
      await own.seedCandidate(cand('c1', '1.30.0', '1.30.0', { leaseName: 'bricked' }));
      await own.t.client.send(new PutItemCommand({ TableName: own.t.names.leases, Item: marshall({ name: 'bricked', holderIdentity: 'x', leaseDurationSeconds: 0, leaseTransitions: 2, fencingToken: 7, revision: 3 }) }));
      const r = await own.run(argv, { clock: at(), pace: scripted([], at()) });
      expect(r).toMatchObject({ code: 1, out: '' });
      expect(r.err.split('\n').at(-1)).toBe(`error: invalid lease "bricked" in table ${own.t.names.leases}: leaseDurationSeconds: must be >= 1, not the number 0 - \`conclave describe lease bricked\` shows the repair`);
    } finally {
      await own.t.drop();
    }
  });

  it('an unknown lease is an error that lists the leases', async () => {
    const r = await h.run(['describe', 'lease', 'nope'], { clock: at() });
    expect(r).toMatchObject({ code: 1, out: '' });
    expect(r.err).toMatch(/no lease "nope" .*; leases: component-A, jobs, no-row$/);
  });
});

describe('set-priority', () => {
  beforeAll(async () => {
    await h.seedLease(lease('p1', { name: 'prio' }));
    await h.seedCandidate(cand('p1', '1.30.0', '1.30.0', { leaseName: 'prio' }));
    await h.seedCandidate(cand('p2', '1.31.0', '1.31.0', { leaseName: 'prio' }));
  });

  it('pins a priority with an expiry, conditioned on the revision read, and says what the coordinator does next', async () => {
    const clock = at();
    const r = await h.run(['set-priority', 'prio', 'p2', '5', '--for', '10m', '--yes'], { clock });
    expect(r.code).toBe(0);
    expect(r.out).toBe(
      'set the priority of p2 on lease prio to 5, until in 10m (2026-01-01T12:10:03.000Z)\n' +
        "the coordinator's next step: ask p1 to yield to p2 (preferredHolder); p1 releases at its next renewal and the next election elects p2",
    );
    const c = (await h.candidates.read('prio', 'p2')).item!;
    expect(c).toMatchObject({ priority: 5, priorityExpiresAt: NOW + 3 * SEC + 10 * MIN, revision: 2 });
  });

  it('without --for the pin has no expiry, and says so', async () => {
    const r = await h.run(['set-priority', 'prio', 'p2', '6', '--yes'], { clock: at() });
    expect(r.out).toMatch(/to 6, with no expiry \(it lasts until `--clear` or the worker restarts/);
    const c = (await h.candidates.read('prio', 'p2')).item!;
    expect(c.priority).toBe(6);
    expect(c.priorityExpiresAt).toBeUndefined();
  });

  it('--clear removes it; -o json prints the candidate as written', async () => {
    const r = await h.run(['set-priority', 'prio', 'p2', '--clear', '-o', 'json', '--yes'], { clock: at() });
    expect(r.code).toBe(0);
    const written = JSON.parse(r.out) as Candidate;
    expect(written).toEqual((await h.candidates.read('prio', 'p2')).item);
    expect(written.priority).toBeUndefined();
    expect(written.priorityExpiresAt).toBeUndefined();
  });

  it.each([
    [['0'], /priority: must be a whole number >= 1, e.g. 10 \(higher wins\), or --clear to remove the pin/],
    [['1.5'], /priority: must be a whole number >= 1/],
    [['ten'], /priority: must be a whole number >= 1/],
    [[], /priority: is required: a whole number >= 1 \(or --clear/],
    [['3', '--clear'], /priority: give either a priority or --clear/],
    [['3', '--for', '10x'], /: --for: must be a duration such as 90s, 1.5s, 500ms, 10m, 2h or 1h30m \(units ms, s, m, h\)$/],
    [['3', '--for', '0m'], /for: must be longer than 0s/],
  ])('refuses %j, naming the field, exit 1', async (rest, message) => {
    const r = await h.run(['set-priority', 'prio', 'p2', ...rest, '--yes'], { clock: at() });
    expect(r.code).toBe(1);
    expect(r.err).toMatch(/^error: invalid set-priority arguments: /);
    expect(r.err).toMatch(message);
    expect(r.err).not.toMatch(/\n\s+at /); // no stack trace
  });

  it('an unknown candidate lists the lease’s candidates', async () => {
    const r = await h.run(['set-priority', 'prio', 'nobody', '3', '--yes'], { clock: at() });
    expect(r).toMatchObject({ code: 1, err: 'error: "nobody" is not a candidate of lease "prio"; its candidates: p1, p2' });
  });

  it('a lost race is a ConflictError that says to run again, and writes nothing', async () => {
    // A store whose write races with a concurrent writer: the real condition fails on DynamoDB Local.
    class Racing extends CandidateStore {
      override async write(read: CandidateRead, patch: CandidatePatch) {
        await super.write(await this.read(read.key['leaseName']!, read.key['name']!), { set: { labels: { by: 'someone else' } } });
        return super.write(read, patch);
      }
    }
    const ctx = cliContext(h.t.client, { tablePrefix: h.prefix, tables: h.t.names }, { clock: at(), sink: { out: () => {}, err: () => {}, color: false }, output: 'table', confirm: assumeYes });
    ctx.candidates = new Racing(h.t.client, h.t.names.candidates);
    const e = await setPriority(ctx, { lease: 'prio', candidate: 'p1', priority: 4, clear: false }).catch((x: unknown) => x);
    expect(e).toBeInstanceOf(ConflictError);
    const told = await explain(e, ctx.target);
    expect(told).toBeInstanceOf(CliError);
    expect((told as CliError).message).toMatch(/^the row changed while writing \(candidate "prio"\/"p1" .* changed since revision \d+ was read \(now revision \d+\)\); nothing was written - run the command again$/);
    expect((await h.candidates.read('prio', 'p1')).item?.priority).toBeUndefined();
  });

  it('throttled past the SDK’s tries: an error saying to run it again, not “a bug”', async () => {
    const ctx = cliContext(h.t.client, { tablePrefix: h.prefix, tables: h.t.names }, { clock: at(), sink: { out: () => {}, err: () => {}, color: false }, output: 'table', confirm: assumeYes });
    for (const name of ['ThrottlingException', 'ProvisionedThroughputExceededException', 'RequestLimitExceeded']) {
      const told = await explain(Object.assign(new Error('Rate of requests exceeds the allowed throughput.'), { name }), ctx.target);
      expect(told).toBeInstanceOf(CliError);
      expect((told as CliError).message).toMatch(new RegExp(`^DynamoDB .* throttled the requests \\(${name}: Rate of requests exceeds the allowed throughput\\.\\) and the SDK's 3 tries ran out - the command stopped there; run it again in a moment`));
    }
  });
});

describe('set-strategy', () => {
  it('refuses a lease that does not exist (a typo would create one), naming it and how to list leases; writes nothing', async () => {
    const r = await h.run(['set-strategy', 'brand-nwe', 'NoCoordination', '--yes'], { clock: at() });
    expect(r.code).toBe(1);
    expect(r.err).toMatch(/^error: no lease "brand-nwe" in \S+-leases \(and no candidates for it in \S+-candidates\); leases: component-A, [^;]+; `conclave get leases` lists them; --create makes the row of a lease no worker has joined yet$/);
    expect((await h.leases.read('brand-nwe')).item).toBeUndefined();
  });

  it('a lease with candidates but no row yet gets its row, as the coordinator would create it', async () => {
    await h.seedCandidate(cand('s9', '1.30.0', '1.30.0', { leaseName: 'joined' }));
    const r = await h.run(['set-strategy', 'joined', 'OldestEmulationVersion', '--yes'], { clock: at() });
    expect(r.code).toBe(0);
    expect(r.err).toMatch(/^create lease joined \(it has no row yet; without a holder\):$/m);
    expect((await h.leases.read('joined')).item).toMatchObject({ strategy: 'OldestEmulationVersion', revision: 1 });
  });

  it('--create makes the row of a lease nobody has joined yet, without a holder', async () => {
    const r = await h.run(['set-strategy', 'brand-new', 'NoCoordination', '--create', '--yes'], { clock: at() });
    expect(r.code).toBe(0);
    expect(r.out).toBe(
      'set the strategy of lease brand-new to NoCoordination - created the lease row, without a holder\n' +
        "from now on the coordinator elects nobody on the lease: workers run with mode 'NoCoordination' race for it; coordinated workers (candidates) take it only once it stands vacant and a vacancy report goes unanswered for 10s (or their fallbackAfterMs passes), each take reported to onError as a NoCoordinatorError: run them with mode 'NoCoordination'",
    );
    // no candidates, so no coordinated worker to warn of
    expect(r.err).not.toMatch(/warning/);
    expect((await h.leases.read('brand-new')).item).toEqual({ name: 'brand-new', strategy: 'NoCoordination', leaseDurationSeconds: 15, leaseTransitions: 0, fencingToken: fencingTokenFloor(NOW + 3 * SEC), revision: 1 });
  });

  it('NoCoordination on a lease with live candidates warns before the question: they are coordinated workers, slow to fail over and reporting NoCoordinatorError', async () => {
    await h.seedLease(lease('c1', { name: 'coord-fleet' }));
    await h.seedCandidate(cand('c1', '1.30.0', '1.30.0', { leaseName: 'coord-fleet' }));
    await h.seedCandidate(cand('c2', '1.30.0', '1.30.0', { leaseName: 'coord-fleet' }));
    // a stale row is no worker running: not counted
    await h.seedCandidate(cand('c3', '1.30.0', '1.30.0', { leaseName: 'coord-fleet', renewTime: NOW - 40 * MIN }));
    const r = await h.run(['set-strategy', 'coord-fleet', 'NoCoordination', '--yes'], { clock: at() });
    expect(r.code).toBe(0);
    const warning =
      "warning: lease coord-fleet has 2 live candidates (`conclave get candidates coord-fleet` lists them): their workers run coordinated, so under NoCoordination none is elected; each takes the lease only once it stands vacant and a vacancy report goes unanswered for 10s (or its fallbackAfterMs passes), failing over more slowly than a race, and reports NoCoordinatorError to onError at each take - run them with mode 'NoCoordination' to race for it directly";
    expect(r.err.split('\n')).toContain(warning);
    // before the question's place (the change table), so an operator can say no
    expect(r.err.indexOf(warning)).toBeGreaterThan(r.err.indexOf('  strategy '));
    expect((await h.leases.read('coord-fleet')).item?.strategy).toBe('NoCoordination');
    // another strategy: nothing to warn of
    const back = await h.run(['set-strategy', 'coord-fleet', 'OldestEmulationVersion', '--yes'], { clock: at() });
    expect(back.err).not.toMatch(/warning/);
  });

  it('changes and clears the strategy of an existing lease, keeping the rest', async () => {
    await h.seedLease(lease('s1', { name: 'strat' }));
    expect((await h.run(['set-strategy', 'strat', 'OldestEmulationVersion', '--yes'], { clock: at() })).code).toBe(0);
    expect((await h.leases.read('strat')).item).toMatchObject({ strategy: 'OldestEmulationVersion', holderIdentity: 's1', fencingToken: 7, revision: 2 });
    const r = await h.run(['set-strategy', 'strat', '--clear', '--yes'], { clock: at() });
    expect(r.out).toMatch(/^cleared the strategy of lease strat \(was OldestEmulationVersion\)\nfrom now on the candidates' preferredStrategies decide again/);
    const after = (await h.leases.read('strat')).item!;
    expect(after.strategy).toBeUndefined();
    expect(after).toMatchObject({ holderIdentity: 's1', revision: 3 });
  });

  it('an unknown strategy lists the valid ones; a third party’s is a qualified name and needs --third-party', async () => {
    const r = await h.run(['set-strategy', 'strat', 'Newest', '--yes'], { clock: at() });
    expect(r.code).toBe(1);
    expect(r.err).toBe(
      'error: invalid set-strategy arguments: strategy: "Newest" is not a strategy Conclave knows (the options: OldestEmulationVersion, NoCoordination); a third party\'s strategy is a qualified name with a domain prefix, such as "example.com/my-strategy" (set with --third-party)',
    );
    // KEP-4355's older spelling, --third-party or not: a name without a domain prefix is Conclave's to know
    const typo = await h.run(['set-strategy', 'strat', 'OldestEmulatedVersion', '--third-party', '--yes'], { clock: at() });
    expect(typo.err).toMatch(/^error: invalid set-strategy arguments: strategy: "OldestEmulatedVersion" is not a strategy Conclave knows \(did you mean "OldestEmulationVersion"\?\)/);
    const ok = await h.run(['set-strategy', 'strat', 'example.com/Custom', '--third-party', '--yes'], { clock: at() });
    expect(ok.out).toMatch(/a third party elects under "example\.com\/Custom"/);
    expect((await h.leases.read('strat')).item?.strategy).toBe('example.com/Custom');
  });
});

describe('set-locations, and where candidates run in describe lease (issue 18)', () => {
  beforeAll(async () => {
    // placed: p1 (the oldest) leads from us-east-1b; p2 runs in us-east-1a; p3's location is unknown
    await h.seedLease(lease('p1', { name: 'placed' }));
    await h.seedCandidate(cand('p1', '1.30.0', '1.30.0', { leaseName: 'placed', createdAt: NOW - 2 * 60 * MIN, location: { zone: 'us-east-1b', region: 'us-east-1' } }));
    await h.seedCandidate(cand('p2', '1.30.0', '1.30.0', { leaseName: 'placed', location: { zone: 'us-east-1a', region: 'us-east-1' } }));
    await h.seedCandidate(cand('p3', '1.30.0', '1.30.0', { leaseName: 'placed', createdAt: NOW - 90 * MIN }));
  });
  const ranking = (out: string) => out.split('\n').filter((l) => /^ {2}[-\d] /.test(l)).map((l) => l.trim().split(/\s{3,}/));

  it('without a preference: each candidate’s zone is shown, and the version order decides', async () => {
    const r = await h.run(['describe', 'lease', 'placed'], { clock: at() });
    expect(r.out).toMatch(/^Preferred locations: +none$/m);
    expect(r.out).toMatch(/^Candidates, in the coordinator's order \(priority, oldest emulation, oldest binary, earliest registration, name\):$/m);
    expect(ranking(r.out).map((c) => [c[1], c[4]])).toEqual([['p1', 'us-east-1b'], ['p3', '-'], ['p2', 'us-east-1a']]);
    expect(r.out).toMatch(/^ {2}p1 before p3: same versions as p3, registered earlier/m);
  });

  it('sets the lease’s preference, says where each candidate stands and that the better-placed one preempts the holder', async () => {
    const r = await h.run(['set-locations', 'placed', 'us-east-1a,us-east-1', '--yes'], { clock: at() });
    expect(r.code, r.err).toBe(0);
    expect(r.err).toMatch(/^change lease placed:$/m);
    expect(r.err).toMatch(/preferredLocations +- +\["us-east-1a","us-east-1"\]/);
    expect(r.out.split('\n')).toEqual([
      "set the preferred locations of lease placed to us-east-1a, us-east-1 (was the coordinator's)",
      'in force now: us-east-1a, us-east-1 (set on the lease by an operator; `conclave set-locations placed --clear` returns to the coordinator\'s)',
      '  p1: us-east-1b (preferred #2)',
      '  p2: us-east-1a (preferred #1)',
      '  p3: - (unknown: not preferred)',
      "the coordinator's next step: ask p1 to yield to p2 (preferredHolder); p1 releases at its next renewal and the next election elects p2",
    ]);
    expect((await h.leases.read('placed')).item).toMatchObject({ holderIdentity: 'p1', preferredLocations: ['us-east-1a', 'us-east-1'], revision: 2 });

    const d = await h.run(['describe', 'lease', 'placed'], { clock: at() });
    expect(d.out).toMatch(/^Candidates, in the coordinator's order \(priority, oldest emulation, preferred location, oldest binary, earliest registration, name\):$/m);
    expect(ranking(d.out).map((c) => [c[1], c[4]])).toEqual([['p2', 'us-east-1a (preferred #1)'], ['p1', 'us-east-1b (preferred #2)'], ['p3', '- (unknown: not preferred)']]);
    expect(d.out).toMatch(/^Why in this order:\n {2}p2 before p1: same emulation version as p1, better placed \(in us-east-1a, preferred #1; p1 in us-east-1b, preferred #2\)\n {2}p1 before p3: same emulation version as p3, better placed \(in us-east-1b, preferred #2; p3 of unknown location, in no preferred location\)$/m);
    expect(d.out).toMatch(/^Best candidate: +p2: same emulation version as p1, better placed/m);
  });

  it('--none prefers no location whatever the coordinator’s; --clear returns to the coordinator’s; -o json prints the lease', async () => {
    await h.run(['set-locations', 'placed', 'us-east-1a', 'us-east-1', '--yes'], { clock: at() });
    const none = await h.run(['set-locations', 'placed', '--none', '--yes'], { clock: at() });
    expect(none.out).toMatch(/^set the preferred locations of lease placed to none \(was us-east-1a, us-east-1\)\nin force now: none \(set on the lease by an operator/);
    expect(none.out).not.toMatch(/yield/); // p1, the oldest, is the best again
    expect((await h.leases.read('placed')).item?.preferredLocations).toEqual([]);
    const cleared = await h.run(['set-locations', 'placed', '--clear', '--yes', '-o', 'json'], { clock: at() });
    expect((JSON.parse(cleared.out) as Lease).preferredLocations).toBeUndefined();
    const again = await h.run(['set-locations', 'placed', '--clear', '--yes'], { clock: at() });
    expect(again.err).toMatch(/lease placed has no preferred locations of its own \(none\); nothing to clear/);
  });

  it('written, then its candidates cannot be read: the change is told as written and the command succeeds (it exited 1, as if nothing was written)', async () => {
    const r = await h.run(['set-locations', 'placed', 'us-east-1a', '--candidates-table', 'no-such-candidates', '--yes'], { clock: at() });
    expect(r.code, r.err).toBe(0);
    expect(r.out).toMatch(/^set the preferred locations of lease placed to us-east-1a \(was the coordinator's\)$/m);
    expect(r.err).toMatch(/^the change is written; where the candidates stand could not be read: table no-such-candidates does not exist /m);
    expect((await h.leases.read('placed')).item?.preferredLocations).toEqual(['us-east-1a']);
    await h.run(['set-locations', 'placed', '--clear', '--yes'], { clock: at() });
  });

  it('nobody in the listed locations: says that all stay eligible', async () => {
    const r = await h.run(['set-locations', 'placed', 'eu-west-1', '--yes'], { clock: at() });
    expect(r.out).toMatch(/^no candidate of lease placed runs in any of them now: all stay eligible, ranked as without a preference/m);
    await h.run(['set-locations', 'placed', '--clear', '--yes'], { clock: at() });
  });

  it.each([
    { args: ['US-EAST-1A'], error: /^error: invalid set-locations arguments: locations\[0\]: must be a zone or region name in lowercase letters, digits and -/ },
    { args: ['us-east-1a', 'us-east-1a'], error: /locations: must not list a zone or region twice/ },
    { args: [], error: /locations: is required: zones or regions, best first/ },
    { args: ['us-east-1a', '--clear'], error: /locations: give one of zones or regions, --none or --clear, not zones or regions and --clear/ },
  ])('refuses $args, naming the field and the fix; writes nothing', async ({ args, error }) => {
    const r = await h.run(['set-locations', 'placed', ...args, '--yes'], { clock: at() });
    expect(r.code).toBe(1);
    expect(r.err).toMatch(error);
    expect((await h.leases.read('placed')).item?.preferredLocations).toBeUndefined();
  });
});

describe('preempt', () => {
  beforeAll(async () => {
    await h.seedLease(lease('q1', { name: 'pre' }));
    await h.seedCandidate(cand('q1', '1.30.0', '1.30.0', { leaseName: 'pre' }));
    await h.seedCandidate(cand('q2', '1.31.0', '1.31.0', { leaseName: 'pre', priority: 2 }));
    await h.seedCandidate(cand('q3', '1.31.0', '1.31.0', { leaseName: 'pre', priority: 7, priorityExpiresAt: NOW - MIN }));
  });

  it('pins the candidate one above every other priority in force, for 10 minutes by default, and says what happens', async () => {
    const r = await h.run(['preempt', 'pre', '--to', 'q3', '--yes'], { clock: at() });
    expect(r.code).toBe(0);
    expect(r.out.split('\n')).toEqual([
      'pinned q3 on lease pre at priority 3 (one above every other candidate), until in 10m (2026-01-01T12:10:03.000Z)',
      "the coordinator's next step: ask q1 to yield to q3 (preferredHolder); q1 releases at its next renewal and the next election elects q3",
      'when the pin expires the usual order applies again and may move leadership back; `conclave set-priority pre q3 --clear` ends it sooner',
    ]);
    expect((await h.candidates.read('pre', 'q3')).item).toMatchObject({ priority: 3, priorityExpiresAt: NOW + 3 * SEC + 10 * MIN });
    // The coordinator decides: the lease itself is not written.
    expect((await h.leases.read('pre')).item).toMatchObject({ holderIdentity: 'q1', revision: 1 });
  });

  it('names a candidate that stands down (its work failed at two starts in a row): the coordinator elects it only once its mark has passed', async () => {
    await h.seedLease(lease('d1', { name: 'pre-down' }));
    await h.seedCandidate(cand('d1', '1.31.0', '1.31.0', { leaseName: 'pre-down' }));
    await h.seedCandidate(cand('d2', '1.30.0', '1.30.0', { leaseName: 'pre-down', standsDownUntil: NOW + 30 * SEC }));
    const r = await h.run(['preempt', 'pre-down', '--to', 'd2'], { clock: at(), answer: 'y' });
    expect(r.code, r.err).toBe(0);
    // with the change, before the question (it came after the write), naming a command there is
    // (it named `conclave explain`, which does not exist)
    const err = r.err.split('\n');
    const note = 'note: d2 stands down until 2026-01-01T12:00:30.000Z (in 27s; its work failed at two starts in a row): the coordinator elects it only after that, while the pin lasts; `conclave describe lease pre-down` shows where it stands';
    expect(err.indexOf(note)).toBeGreaterThan(0);
    expect(err.indexOf(note)).toBeLessThan(err.indexOf(QUESTION));
    expect(r.out).not.toContain('stands down');
    expect((await h.candidates.read('pre-down', 'd2')).item).toMatchObject({ priority: 1, standsDownUntil: NOW + 30 * SEC });
    // without a mark, no such note
    const q = await h.run(['preempt', 'pre', '--to', 'q3', '--yes'], { clock: at() });
    expect(q.out).not.toContain('stands down');
  });

  it('--for sets the pin’s length; -o json prints the candidate', async () => {
    const r = await h.run(['preempt', 'pre', '--to', 'q2', '--for', '1h', '-o', 'json', '--yes'], { clock: at() });
    expect(JSON.parse(r.out)).toMatchObject({ name: 'q2', priority: 4, priorityExpiresAt: NOW + 3 * SEC + 60 * MIN });
  });

  it('refuses the holder, an unknown candidate, and a lease the coordinator does not elect', async () => {
    expect(await h.run(['preempt', 'pre', '--to', 'q1', '--yes'], { clock: at() })).toMatchObject({ code: 1, err: expect.stringMatching(/^error: q1 already holds lease pre; nothing to preempt/) });
    expect(await h.run(['preempt', 'pre', '--to', 'q9', '--yes'], { clock: at() })).toMatchObject({ code: 1, err: 'error: "q9" is not a candidate of lease "pre"; its candidates: q1, q2, q3' });
    const r = await h.run(['preempt', 'jobs', '--to', 'j2', '--yes'], { clock: at() });
    expect(r.code).toBe(1);
    expect(r.err).toBe('error: the coordinator does not elect on lease jobs: its strategy is NoCoordination (set by an operator) - first run `conclave set-strategy jobs OldestEmulationVersion`');
    expect((await h.candidates.read('jobs', 'j2')).item?.priority).toBeUndefined();
  });

  it('refuses a candidate that cannot win: stale, or versions that do not parse', async () => {
    expect((await h.run(['preempt', 'component-A', '--to', 'w3', '--yes'], { clock: at() })).err).toMatch(/w3 has not renewed for 40m3s, so the coordinator does not count it; is its worker running\?/);
    expect((await h.run(['preempt', 'component-A', '--to', 'w4', '--yes'], { clock: at() })).err).toMatch(/w4 cannot be elected: its versions do not parse \(emulation "v1\.x"/);
  });

  it("refuses a --for shorter than twice the lease's re-election window (20s for lease pre's 10 s at the default settings): such a pin expires before the preemption lands, or moves leadership back just after; writes nothing", async () => {
    for (const short of ['1ms', '10s', '19.9s']) {
      const r = await h.run(['preempt', 'pre', '--to', 'q3', '--for', short, '--yes'], { clock: at() });
      expect(r).toMatchObject({ code: 1, out: '' });
      expect(r.err).toBe(
        "error: invalid preempt arguments: --for: must be at least 20s on lease pre (twice its re-election window, 10s with the coordinator's default settings: a shorter pin expires before the preemption takes effect, or moves leadership back just after; give --for 20s or longer)",
      );
    }
    const before = (await h.candidates.read('pre', 'q3')).item!;
    expect((await h.run(['preempt', 'pre', '--to', 'q3', '--for', '1ms', '--yes'], { clock: at() })).code).toBe(1);
    expect((await h.candidates.read('pre', 'q3')).item!.revision).toBe(before.revision);
  });

  it("refuses a --for shorter than twice the lease's own re-election window, under the election config given", async () => {
    await h.seedLease(lease('r1', { name: 'long-term', leaseDurationSeconds: 90 }));
    await h.seedCandidate(cand('r1', '1.30.0', '1.30.0', { leaseName: 'long-term' }));
    await h.seedCandidate(cand('r2', '1.31.0', '1.31.0', { leaseName: 'long-term' }));
    const config = ['--election-config', '{"askAgainAfterMs":600000}'];
    const r = await h.run([...config, 'preempt', 'long-term', '--to', 'r2', '--for', '2m', '--yes'], { clock: at() });
    expect(r).toMatchObject({ code: 1, out: '' });
    expect(r.err).toBe(
      'error: invalid preempt arguments: --for: must be at least 3m on lease long-term (twice its re-election window, 1m30s with the election config from --election-config: a shorter pin expires before the preemption takes effect, or moves leadership back just after; give --for 3m or longer)',
    );
    expect((await h.candidates.read('long-term', 'r2')).item?.priority).toBeUndefined();
    // at the floor it pins
    expect((await h.run([...config, 'preempt', 'long-term', '--to', 'r2', '--for', '3m', '--yes'], { clock: at() })).code).toBe(0);
    expect((await h.candidates.read('long-term', 'r2')).item?.priorityExpiresAt).toBe(NOW + 3 * SEC + 3 * MIN);
  });

  it('a missing --to is a usage error (exit 2)', async () => {
    const r = await h.run(['preempt', 'pre', '--yes'], { clock: at() });
    expect(r.code).toBe(2);
    expect(r.err).toMatch(/required option '--to <candidate>' not specified/);
  });
});

/**
 * The coordinator's reconcile decides with decideWithSuccession (lib/coordinator/reconcile.ts):
 * decide(), then, for a lease it leaves alone, the successors it names. set-priority and preempt
 * predicted with decide() alone, so for a state where the two differ they said "nothing", where
 * describe (and the coordinator) name a successor.
 */
describe("set-priority and preempt: the next step is the coordinator's own, successors included (as describe says it)", () => {
  beforeAll(async () => {
    // s1 holds, pinned at 9; s2 is its successor and s3 the second, as the coordinator named them
    await h.seedLease(lease('s1', { name: 'succ-prio', successor: 's2', secondSuccessor: 's3' }));
    await h.seedCandidate(cand('s1', '1.30.0', '1.30.0', { leaseName: 'succ-prio', priority: 9 }));
    await h.seedCandidate(cand('s2', '1.31.0', '1.31.0', { leaseName: 'succ-prio' }));
    await h.seedCandidate(cand('s3', '1.32.0', '1.32.0', { leaseName: 'succ-prio' }));
    // t1 holds, no successor named yet; t2 let its last ping pass 10 s ago (passed over), t3 answers
    await h.seedLease(lease('t1', { name: 'succ-pre' }));
    await h.seedCandidate(cand('t1', '1.30.0', '1.30.0', { leaseName: 'succ-pre' }));
    await h.seedCandidate(cand('t2', '1.31.0', '1.31.0', { leaseName: 'succ-pre', renewTime: NOW - 20 * SEC, pingTime: NOW - 10 * SEC }));
    await h.seedCandidate(cand('t3', '1.32.0', '1.32.0', { leaseName: 'succ-pre' }));
  });

  const nextOf = (out: string, label: RegExp) => out.split('\n').find((l) => label.test(l))?.replace(label, '');

  it.each([
    {
      command: 'set-priority: s3 pinned above s2, below the holder',
      args: ['set-priority', 'succ-prio', 's3', '5', '--yes'],
      // before: "nothing: s1 is the best candidate and its term is current"
      want: 'designate s3 successor: it takes the lease at once if s1 stops renewing or releases; s2 second successor: it takes it a moment later if s3 has not',
    },
    {
      command: 'preempt: t2 pinned, but passed over for the ping it let pass',
      args: ['preempt', 'succ-pre', '--to', 't2', '--yes'],
      // before: "nothing: t1 is the best candidate and its term is current"
      want: 'designate t3 successor: it takes the lease at once if t1 stops renewing or releases; t2 second successor: it takes it a moment later if t3 has not',
    },
  ])('$command', async ({ args, want }) => {
    const r = await h.run(args, { clock: at() });
    expect(r.code, r.err).toBe(0);
    const step = nextOf(r.out, /^the coordinator's next step: /);
    expect(step).toBe(want);
    const d = await h.run(['describe', 'lease', args[1]!], { clock: at() });
    expect(step).toBe(nextOf(d.out, /^Next step: +/));
  });
});

describe('a write whose answer is lost as the connection is reset (the AWS SDK sends it again, and the copy is refused by it)', () => {
  /** The command through a proxy that resets the first connection carrying a request `matches` picks, as DynamoDB answers. */
  async function throughReset(matches: (request: string) => boolean, argv: string[]) {
    const { proxy, arm, resets } = await resettingProxy(h.endpoint, matches);
    arm();
    try {
      const r = await runMain(['--endpoint', proxy.endpoint, '--table-prefix', h.prefix, ...argv], { clock: at() });
      expect(resets()).toBe(1);
      return r;
    } finally {
      await close(proxy);
    }
  }

  it('set-priority: the pin landed, and the command says so (it said "nothing was written")', async () => {
    await h.seedLease(lease('q1', { name: 'prio-reset' }));
    await h.seedCandidate(cand('q1', '1.30.0', '1.30.0', { leaseName: 'prio-reset' }));
    await h.seedCandidate(cand('q2', '1.31.0', '1.31.0', { leaseName: 'prio-reset' }));
    const r = await throughReset((text) => /UpdateItem/.test(text) && text.includes('prio-reset'), ['set-priority', 'prio-reset', 'q2', '5', '--yes']);
    expect(r.code).toBe(0);
    expect(r.err).not.toMatch(/error/);
    expect(r.out).toMatch(/^set the priority of q2 on lease prio-reset to 5/);
    expect((await h.candidates.read('prio-reset', 'q2')).item).toMatchObject({ priority: 5, revision: 2 });
  });

  it('release --force: the term ended, and the command says so (it said "nothing was written")', async () => {
    await h.seedLease(lease('s1', { name: 'rel-reset', holderInstance: 's1-i' }));
    const r = await throughReset((text) => /UpdateItem/.test(text) && text.includes('rel-reset'), ['release', 'rel-reset', '--force', '--yes']);
    expect(r.code).toBe(0);
    expect(r.err).not.toMatch(/error/);
    expect(r.out.split('\n')[0]).toBe("released lease rel-reset: s1's term (fencing token 7) is over");
    expect((await h.leases.read('rel-reset')).item).toMatchObject({ lastHolderIdentity: 's1', revision: 2 });
  });
});

describe('release', () => {
  it('--force ends the holder’s term like the SDK’s release and says what follows', async () => {
    await h.seedLease(lease('r1', { name: 'rel', holderInstance: 'r1-i', preferredHolder: 'r2', vacancyReport: { by: 'r3', at: NOW, observedRevision: 1 } }));
    const r = await h.run(['release', 'rel', '--force', '--yes'], { clock: at() });
    expect(r.code).toBe(0);
    expect(r.out.split('\n')).toEqual([
      "released lease rel: r1's term (fencing token 7) is over",
      'r1 was not asked to stop: it may act until its next renewal, at most 10s from now; its writes fenced with token 7 fail from now on',
      // no candidate row: r1 runs without the coordinator, and so may its peers (before: "stays vacant")
      "r1 has no candidate row on lease rel (it ran without the coordinator, NoCoordination, or its row was collected): its workers take it, with a new fencing token (workers run with mode 'NoCoordination' race for it; coordinated workers (candidates) take it only once it stands vacant and a vacancy report goes unanswered for 10s (or their fallbackAfterMs passes), each take reported to onError as a NoCoordinatorError: run them with mode 'NoCoordination')",
    ]);
    const after = (await h.leases.read('rel')).item!;
    expect(after).toEqual({ name: 'rel', lastHolderIdentity: 'r1', leaseDurationSeconds: 10, renewTime: NOW + 3 * SEC, acquireTime: NOW - 5 * MIN, leaseTransitions: 3, fencingToken: 7, electedBy: 'coordinator', revision: 2 });
  });

  it('names the candidate the coordinator will elect next, even when it is the same holder', async () => {
    await h.seedLease(lease('n1', { name: 'rel-next' }));
    await h.seedCandidate(cand('n1', '1.30.0', '1.30.0', { leaseName: 'rel-next' }));
    await h.seedCandidate(cand('n2', '1.31.0', '1.31.0', { leaseName: 'rel-next' }));
    expect((await h.run(['release', 'rel-next', '--force', '--yes'], { clock: at() })).out.split('\n')[2]).toBe(
      'the coordinator elects the next holder at its next reconcile, with a new fencing token: the best candidate is still n1 (`conclave preempt rel-next --to ...` picks another)',
    );
    await h.seedLease(lease('n1', { name: 'rel-other' }));
    await h.seedCandidate(cand('n1', '1.31.0', '1.31.0', { leaseName: 'rel-other' }));
    await h.seedCandidate(cand('n2', '1.30.0', '1.30.0', { leaseName: 'rel-other' }));
    expect((await h.run(['release', 'rel-other', '--force', '--yes'], { clock: at() })).out.split('\n')[2]).toBe(
      'the coordinator elects the next holder at its next reconcile, with a new fencing token: the best candidate now is n2',
    );
  });

  // a review (2026-12-06, seventh): exit 1, where every other write the row already shows is "nothing to change", exit 0
  it('a lease without a holder: nothing to release, nothing written, exit 0 (-o json: the row as it is); an unknown lease is an error', async () => {
    const before = (await h.leases.read('rel')).item;
    expect(await h.run(['release', 'rel', '--yes'], { clock: at() })).toMatchObject({ code: 0, out: '', err: 'lease rel has no holder (the last one was r1); nothing to release' });
    expect(await h.run(['release', 'rel', '--force', '--yes'], { clock: at() })).toMatchObject({ code: 0, out: '', err: 'lease rel has no holder (the last one was r1); nothing to release' });
    const json = await h.run(['-o', 'json', 'release', 'rel', '--yes'], { clock: at() });
    expect(json.code).toBe(0);
    expect(JSON.parse(json.out)).toMatchObject({ name: 'rel', lastHolderIdentity: 'r1' });
    expect((await h.leases.read('rel')).item).toEqual(before);
    expect((await h.run(['release', 'nope', '--yes'], { clock: at() })).err).toMatch(/^error: no lease "nope" .*; leases: .*rel/);
  });

  it('a term that ended between the read and the write is not released', async () => {
    await h.seedLease(lease('old', { name: 'rel-race' }));
    class Racing extends LeaseStore {
      override async releaseTerm(name: string, term: Term, now: number) {
        const read = await this.read(name);
        await this.write(read, { set: { holderIdentity: 'new', fencingToken: term.fencingToken + 1 } }); // a new term began meanwhile
        return super.releaseTerm(name, term, now);
      }
    }
    const ctx = cliContext(h.t.client, { tablePrefix: h.prefix, tables: h.t.names }, { clock: at(), sink: { out: () => {}, err: () => {}, color: false }, output: 'table', confirm: assumeYes });
    ctx.leases = new Racing(h.t.client, h.t.names.leases);
    await expect(release(ctx, { lease: 'rel-race', force: true }, { signal: new AbortController().signal, sleep: async () => undefined })).rejects.toThrow(/^the row changed while writing: the term of old \(fencing token 7\) had already ended; nothing was written - run the command again/);
    expect((await h.leases.read('rel-race')).item).toMatchObject({ holderIdentity: 'new', fencingToken: 8 });
  });
});


describe('where DynamoDB is', () => {
  it("region local without --endpoint is told that region is local mode's and which endpoint to give", async () => {
    // before: "cannot reach DynamoDB in region local (ENOTFOUND) — check the network and --region", as
    // if an AWS Region were unreachable. Called on explain() itself: the CLI would ask dynamodb.local.amazonaws.com
    const target = { region: 'local', tablePrefix: 'conclave', tables: { leases: 'conclave-leases', candidates: 'conclave-candidates', identities: 'conclave-identities' } };
    const fix = "region 'local' is local mode's, and no endpoint was given: pass the endpoint `npx conclave-local` prints as --endpoint URL (or set CONCLAVE_ENDPOINT)";
    const unreachable = await explain(Object.assign(new Error('getaddrinfo ENOTFOUND dynamodb.local.amazonaws.com'), { code: 'ENOTFOUND' }), target);
    expect(unreachable).toBeInstanceOf(CliError);
    expect((unreachable as CliError).message).toBe(`cannot reach DynamoDB in region local (ENOTFOUND) - ${fix}`);
    const timedOut = await explain(Object.assign(new Error('timed out'), { name: 'TimeoutError' }), target);
    expect((timedOut as CliError).message).toBe(`DynamoDB in region local gave no answer within --request-timeout (${DEFAULT_REQUEST_TIMEOUT_MS} ms, each of 3 tries) - ${fix}`);
    // an AWS Region: as before
    expect(((await explain(Object.assign(new Error('getaddrinfo ENOTFOUND'), { code: 'ENOTFOUND' }), { ...target, region: 'us-east-1' })) as CliError).message).toBe(
      'cannot reach DynamoDB in region us-east-1 (ENOTFOUND) - check the network and --region; for DynamoDB Local pass --endpoint URL',
    );
  });

  it('a TLS certificate the CLI does not trust (a proxy that intercepts TLS) names the code and NODE_EXTRA_CA_CERTS, not "is the local system running?"', async () => {
    const target = { region: 'eu-west-1', tablePrefix: 'conclave', tables: { leases: 'conclave-leases', candidates: 'conclave-candidates', identities: 'conclave-identities' } };
    const told = await explain(Object.assign(new Error('self-signed certificate in certificate chain'), { code: 'SELF_SIGNED_CERT_IN_CHAIN' }), target);
    // before: the bare "self-signed certificate in certificate chain", with a stack trace (not a CliError)
    expect(told).toBeInstanceOf(CliError);
    expect((told as CliError).message).toBe(
      "cannot reach DynamoDB in region eu-west-1 (SELF_SIGNED_CERT_IN_CHAIN: self-signed certificate in certificate chain) - the TLS certificate it presented is not trusted by this process: a proxy that intercepts TLS on the way (give Node its certificate authority: NODE_EXTRA_CA_CERTS=/path/to/ca.pem), or this machine's clock far off (the certificate looks expired or not yet valid)",
    );
  });

  it("a Region from the AWS config file is named with its profile, not as '(default)'", async () => {
    // before: "cannot reach DynamoDB in region (default) (ENOTFOUND)" with --profile p, whose region is eu-west-1.
    // The Region read from the file as the AWS SDK reads it (no request); the message made by explain itself
    const dir = mkdtempSync(join(tmpdir(), 'conclave-profile-region-'));
    const config = join(dir, 'config');
    writeFileSync(config, '[default]\nregion = us-east-2\n\n[profile p]\nregion = eu-west-1\n\n[profile bare]\noutput = json\n');
    await withAwsEnv({ AWS_EC2_METADATA_DISABLED: 'true', AWS_CONFIG_FILE: config, AWS_SHARED_CREDENTIALS_FILE: join(dir, 'credentials') }, async () => {
      const client = (profile?: string) => clientFor({ endpoint: undefined, region: undefined, profile, requestTimeoutMs: DEFAULT_REQUEST_TIMEOUT_MS });
      expect(await configFileRegion(client('p'))).toBe('eu-west-1');
      expect(await configFileRegion(client())).toBe('us-east-2');
      expect(await configFileRegion(client('bare'))).toBeUndefined();
    });
    const tables = { leases: 'conclave-leases', candidates: 'conclave-candidates', identities: 'conclave-identities' };
    const notFound = Object.assign(new Error('getaddrinfo ENOTFOUND'), { code: 'ENOTFOUND' });
    const told = async (target: Target) => ((await explain(notFound, target)) as CliError).message;
    expect(await told({ tablePrefix: 'conclave', tables, profile: 'p', profileRegion: 'eu-west-1' })).toBe(
      'cannot reach DynamoDB in region eu-west-1 (profile p) (ENOTFOUND) - check the network and --region; for DynamoDB Local pass --endpoint URL',
    );
    expect(await told({ tablePrefix: 'conclave', tables, profileRegion: 'us-east-2' })).toMatch(/^cannot reach DynamoDB in region us-east-2 \(the default profile\) \(ENOTFOUND\)/);
    expect(await told({ tablePrefix: 'conclave', tables })).toMatch(/^cannot reach DynamoDB in region \(default\) \(ENOTFOUND\)/);
  });

  it("region local without --endpoint and without AWS credentials says region 'local' is local mode's (docs/cli.md), before any request", async () => {
    // before: "no AWS credentials found - configure them ..." (the SDK looks for credentials before
    // it resolves dynamodb.local.amazonaws.com), pointing a local-mode user at AWS credentials they
    // do not need. No credentials anywhere the SDK looks, and no instance metadata: no network at all
    await withAwsEnv({ AWS_EC2_METADATA_DISABLED: 'true', AWS_CONFIG_FILE: '/nonexistent/config', AWS_SHARED_CREDENTIALS_FILE: '/nonexistent/credentials' }, async () => {
      const fix = "error: region 'local' is local mode's, and no endpoint was given: pass the endpoint `npx conclave-local` prints as --endpoint URL (or set CONCLAVE_ENDPOINT)";
      expect(await runMain(['--region', 'local', 'get', 'leases'])).toMatchObject({ code: 1, err: fix });
      // the SDK's region from the environment, as the CLI reads it
      expect(await runMain(['describe', 'lease', 'nightly-report'], { env: { AWS_REGION: 'local' } })).toMatchObject({ code: 1, err: fix });
    });
  });

  it("credentials the AWS SDK cannot load name the profile, and keep the SDK's own words where they say more (an SSO session to log in again)", async () => {
    // before: "no AWS credentials found - configure them ..." for both, the profile and the SSO login unnamed.
    // An SSO profile with no cached token, and a profile not in the file: both fail before any request, no network
    const dir = mkdtempSync(join(tmpdir(), 'conclave-profiles-'));
    const config = join(dir, 'config');
    writeFileSync(config, '[profile dev]\nsso_session = corp\nsso_account_id = 111111111111\nsso_role_name = Admin\nregion = eu-west-1\n\n[sso-session corp]\nsso_start_url = https://example.awsapps.com/start\nsso_region = eu-west-1\n');
    // the profile as AWS_PROFILE (the AWS SDK reads the process's environment; the CLI is given the same), or as --profile
    const as = async (profile: string) => {
      process.env['AWS_PROFILE'] = profile;
      return runMain(['get', 'leases'], { env: { AWS_PROFILE: profile, AWS_REGION: 'eu-west-1' } });
    };
    await withAwsEnv({ HOME: dir, AWS_EC2_METADATA_DISABLED: 'true', AWS_CONFIG_FILE: config, AWS_SHARED_CREDENTIALS_FILE: join(dir, 'credentials'), AWS_REGION: 'eu-west-1' }, async () => {
      const sso = await runMain(['--profile', 'dev', 'get', 'leases'], { env: { AWS_REGION: 'eu-west-1' } });
      expect(sso.code).toBe(1);
      expect(sso.err).toBe(
        "error: the AWS credentials of profile dev could not be loaded (CredentialsProviderError: The SSO session token associated with profile=dev was not found or is invalid. To refresh this SSO session run 'aws sso login' with the corresponding profile.) - do what it says (an SSO session: aws sso login --profile dev), check with `aws sts get-caller-identity --profile dev`, or pass --endpoint URL for DynamoDB Local",
      );
      expect(await as('dev')).toEqual(sso);
      const missing = await as('nosuch');
      expect(missing.code).toBe(1);
      expect(missing.err).toBe(
        'error: no AWS credentials found for profile nosuch - check that the AWS config file (~/.aws/config, or AWS_CONFIG_FILE) has the profile and that its credentials load (`aws sts get-caller-identity --profile nosuch`), or pass --endpoint URL for DynamoDB Local',
      );
      delete process.env['AWS_PROFILE'];
      expect(await runMain(['--profile', 'nosuch', 'get', 'leases'], { env: { AWS_REGION: 'eu-west-1' } })).toEqual(missing);
      expect((await runMain(['--profile', 'my prod', 'get', 'leases'])).err).toMatch(/--profile: must be a profile name of the AWS config file/);
    });
    // with no AWS_REGION, a misspelt profile failed on its region first: "pass --region", though the profile gives it
    await withAwsEnv({ HOME: dir, AWS_EC2_METADATA_DISABLED: 'true', AWS_CONFIG_FILE: config, AWS_SHARED_CREDENTIALS_FILE: join(dir, 'credentials') }, async () => {
      const r = await runMain(['--profile', 'nosuch', 'get', 'leases'], { env: {} });
      expect(r.code).toBe(1);
      expect(r.err).toBe('error: no AWS region configured: profile nosuch gives none - check that the AWS config file (~/.aws/config, or AWS_CONFIG_FILE) has the profile, spelt so, with a region; or pass --region (or set AWS_REGION), or --endpoint URL for DynamoDB Local');
    });
  });

  it('an unreachable endpoint says how to start local mode', async () => {
    const r = await runMain(['--endpoint', 'http://127.0.0.1:1', 'get', 'leases']);
    expect(r.code).toBe(1);
    expect(r.err).toBe('error: cannot reach DynamoDB at http://127.0.0.1:1 (ECONNREFUSED) - is the local system (`npx conclave-local`, from @conclave/testing) running? It prints the endpoint to pass as --endpoint URL (or set CONCLAVE_ENDPOINT)');
  });

  it("an endpoint where another server answers (an empty '200 OK' to anything, an HTML error page): said so, not \"No leases\" nor a write done", async () => {
    const stub = createHttpServer((req, res) => {
      req.resume();
      req.on('end', () => (req.url?.startsWith('/html') ? res.writeHead(502, { 'content-type': 'text/html' }).end('<html>502 Bad Gateway</html>') : res.writeHead(200).end()));
    });
    const port = await listenOnLoopback(stub);
    try {
      const endpoint = `http://127.0.0.1:${port}`;
      // before: "No leases in conclave-leases", exit 0, and a preempt that "succeeded" writing nothing
      const read = await runMain(['--endpoint', endpoint, 'get', 'leases']);
      expect(read).toMatchObject({ code: 1 });
      // (a read-only command: nothing of a write that may have landed)
      expect(read.err).toBe(`error: the answer at ${endpoint} is not DynamoDB's (HTTP 200, no x-amzn-RequestId header, which DynamoDB sends with every answer) - something else answers there (another server on that port, a proxy's error page): check --endpoint / --region (or CONCLAVE_ENDPOINT, AWS_REGION) and any HTTPS_PROXY or HTTP_PROXY setting`);
      const write = await runMain(['--endpoint', endpoint, 'set-priority', '--yes', 'nightly-report', 'w1', '5']);
      expect(write).toMatchObject({ code: 1 });
      expect(write.err).toMatch(/^error: the answer at \S+ is not DynamoDB's \(HTTP 200, /);
      const page = await runMain(['--endpoint', `${endpoint}/html`, 'get', 'leases']);
      expect(page).toMatchObject({ code: 1 });
      expect(page.err).toMatch(/^error: the answer at \S+\/html is not DynamoDB's \(HTTP 502, content-type text\/html, a body the AWS SDK could not read: Unexpected token '<', "<html>502 "\.\.\. is not valid JSON\) - /);
    } finally {
      await new Promise<void>((r) => stub.close(() => r()));
    }
  });

  it.each([
    ['ExpiredTokenException', 'The security token included in the request is expired'],
    ['MissingAuthenticationTokenException', 'Request is missing Authentication Token'],
  ])('credentials DynamoDB refuses (%s): told as credentials to renew, with the clock named, exit 1', async (name, message) => {
    const stub = createHttpServer((req, res) => {
      req.resume();
      req.on('end', () => void res.writeHead(400, { 'content-type': 'application/x-amz-json-1.0', 'x-amzn-requestid': 'refused-1' }).end(JSON.stringify({ __type: `com.amazon.coral.service#${name}`, message })));
    });
    const port = await listenOnLoopback(stub);
    try {
      const r = await runMain(['--endpoint', `http://127.0.0.1:${port}`, 'get', 'leases']);
      expect(r.code).toBe(1);
      // before (MissingAuthenticationTokenException): the AWS SDK's bare error
      expect(r.err).toBe(`error: AWS rejected the credentials (${name}: ${message}) - refresh them (aws sso login) or check AWS_PROFILE; a signature refused as expired means this machine's clock is more than 5 minutes off`);
    } finally {
      await new Promise<void>((r) => stub.close(() => r()));
    }
  });

  it('an endpoint the environment configures (AWS_ENDPOINT_URL_DYNAMODB), no --endpoint: used with region local (before: refused, "no endpoint was given"), and named when it cannot be reached', async () => {
    const keys = ['AWS_ENDPOINT_URL_DYNAMODB', 'AWS_ACCESS_KEY_ID', 'AWS_SECRET_ACCESS_KEY'] as const;
    const saved = keys.map((k) => process.env[k]);
    // the AWS SDK reads the process's environment; the CLI is given the same
    const env = (endpoint: string) => {
      const e = { AWS_ENDPOINT_URL_DYNAMODB: endpoint, AWS_ACCESS_KEY_ID: 'local', AWS_SECRET_ACCESS_KEY: 'local', AWS_REGION: 'local' };
      for (const k of keys) process.env[k] = e[k];
      return e;
    };
    try {
      const up = await runMain(['--region', 'local', '--table-prefix', 'no-such-prefix', 'get', 'leases'], { env: env(inject('ddbEndpoint')) });
      expect(up.err).not.toContain("no endpoint was given");
      // it reached DynamoDB Local (which has no such tables), and names it with where it came from
      expect(up.err).toMatch(/^error: tables no-such-prefix-leases, no-such-prefix-candidates, no-such-prefix-identities do not exist at http:\/\/127\.0\.0\.1:\d+ \(AWS_ENDPOINT_URL_DYNAMODB\) /);
      const down = await runMain(['--region', 'local', 'get', 'leases'], { env: env('http://127.0.0.1:1/') });
      expect(down.code).toBe(1);
      expect(down.err).toBe('error: cannot reach DynamoDB at http://127.0.0.1:1 (AWS_ENDPOINT_URL_DYNAMODB) (ECONNREFUSED) - is DynamoDB (or the local system, `npx conclave-local`) up there? The endpoint is the environment\'s: unset that variable to reach the Region\'s');
    } finally {
      keys.forEach((k, i) => (saved[i] === undefined ? delete process.env[k] : (process.env[k] = saved[i])));
    }
  });

  it('an endpoint that accepts and never answers (a black-holed route) gives up after --request-timeout on each of 3 tries and says so; a bad value is named', async () => {
    const silent = createServer((s) => {
      s.on('data', () => undefined); // reads the request, never answers
      s.on('error', () => undefined);
    });
    const sockets = new Set<Socket>();
    silent.on('connection', (s) => sockets.add(s));
    const endpoint = `http://127.0.0.1:${await listenOnLoopback(silent)}`;
    const r = await runMain(['--endpoint', endpoint, '--request-timeout', '200', 'get', 'leases']);
    expect(r.code).toBe(1);
    expect(r.err).toBe(`error: DynamoDB at ${endpoint} gave no answer within --request-timeout (200 ms, each of 3 tries) - check the network path to it and --endpoint, or raise --request-timeout on a slow link`);
    expect(sockets.size).toBeGreaterThanOrEqual(1); // it did reach the server
    for (const s of sockets) s.destroy();
    await new Promise<void>((r) => silent.close(() => r()));
    // (5s is taken, as every time flag takes it: test/cli/under-incident.test.ts)
    const bad = await runMain(['--endpoint', endpoint, '--request-timeout', '5 seconds', 'get', 'leases']);
    expect(bad.code).toBe(1);
    expect(bad.err).toMatch(/--request-timeout: must be whole milliseconds such as 5000, or a duration between 100ms and 10m such as 5s, 1\.5s or 500ms/);
    // a number alone meant as seconds (a new user's `2`): told it is milliseconds, and what to write
    const seconds = await runMain(['--endpoint', endpoint, '--request-timeout', '2', 'get', 'leases']);
    expect(seconds.code).toBe(1);
    expect(seconds.err).toMatch(/--request-timeout: must be at least 100ms \(a number alone is milliseconds: for 2 seconds write 2s\)/);
  });

  it('a try timed out before it was sent is told by where it stopped: a TCP handshake nobody answers (a private subnet without a route), a TLS handshake nobody answers', async () => {
    // before: both "DynamoDB at … gave no answer within --request-timeout (200 ms, each of 3 tries) - check the network path to it and --endpoint, or raise --request-timeout on a slow link"
    const dropping = await synDroppingPort();
    try {
      const r = await runMain(['--endpoint', `http://127.0.0.1:${dropping.port}`, '--request-timeout', '200', 'get', 'leases']);
      expect(r.code).toBe(1);
      expect(r.err).toBe(
        `error: cannot reach DynamoDB at http://127.0.0.1:${dropping.port} (the last of 3 tries timed out connecting to 127.0.0.1: the TCP handshake was not answered within 200 ms) - something on the way drops the packets: from a private subnet, DynamoDB is reached through a gateway VPC endpoint (or a NAT gateway) in the subnet's route table; check the security group's and the network ACL's outbound rules, and any firewall`,
      );
    } finally {
      dropping.close();
    }
    const silent = await listen(() => undefined);
    try {
      const endpoint = silent.endpoint.replace('http:', 'https:');
      // (a second: the loopback connection is made long before, on a busy machine too)
      const r = await runMain(['--endpoint', endpoint, '--request-timeout', '1000', 'get', 'leases']);
      expect(r.err).toBe(
        `error: cannot reach DynamoDB at ${endpoint} (the last of 3 tries timed out in the TLS handshake with 127.0.0.1: connected, but no TLS answer within 1000 ms) - something that accepts the connection does not speak TLS (a proxy or firewall holding it, or a plain-http server: an http:// endpoint?)`,
      );
    } finally {
      await close(silent);
    }
  });

  it('a missing table is named, with the prefixes that do exist, the closest to the one asked first', async () => {
    const r = await runMain(['--endpoint', h.endpoint, '--table-prefix', 'no-such', 'describe', 'lease', 'x']);
    expect(r.code).toBe(1);
    expect(r.err).toMatch(/^error: tables no-such-leases, no-such-candidates, no-such-identities do not exist at http:\/\/127\.0\.0\.1:\d+ \(prefix "no-such"\) - pass --table-prefix PREFIX/);
    expect(r.err).toMatch(/; the Conclave table prefixes there: \S/);
    // a mistyped prefix (its first letter): its own is listed first, however many other deployments
    // share the endpoint (here one whose name sorts before it)
    const other = `a-${h.prefix}-leases`;
    await h.t.client.send(new CreateTableCommand({ TableName: other, BillingMode: 'PAY_PER_REQUEST', AttributeDefinitions: [{ AttributeName: 'name', AttributeType: 'S' }], KeySchema: [{ AttributeName: 'name', KeyType: 'HASH' }] }));
    try {
      const typo = await runMain(['--endpoint', h.endpoint, '--table-prefix', `x${h.prefix.slice(1)}`, 'describe', 'lease', 'x']);
      expect(typo.code).toBe(1);
      expect(typo.err).toContain(`; the Conclave table prefixes there: ${h.prefix}, `);
      expect(typo.err).toContain(`a-${h.prefix}`);
    } finally {
      await h.t.client.send(new DeleteTableCommand({ TableName: other }));
    }
    const one = await runMain(['--endpoint', h.endpoint, '--table-prefix', h.prefix, '--candidates-table', 'no-such-table', 'get', 'candidates']);
    expect(one.err).toMatch(/^error: table no-such-table does not exist/);
  });

  it('a table option naming a table of another shape (the wrong key) is an error naming the table options, not a bug', async () => {
    // the candidates table for the leases table: a GetItem by `name` alone, which DynamoDB refuses (ValidationException)
    const r = await runMain(['--endpoint', h.endpoint, '--table-prefix', h.prefix, '--leases-table', h.t.names.candidates, 'describe', 'lease', 'component-A']);
    expect(r.code).toBe(1);
    expect(r.err).not.toMatch(/a bug|^\s+at /m);
    expect(r.err).toMatch(/^error: DynamoDB refused a request on the tables named \(ValidationException: .+\): one is not a Conclave table of its kind \(its key differs\) - check --leases-table, --candidates-table and --identities-table \(leases \S+-candidates, candidates \S+-candidates, identities \S+-identities\), or --table-prefix$/);
    // the leases table for the candidates table: a Query by `leaseName`, which it has no key for
    const q = await runMain(['--endpoint', h.endpoint, '--table-prefix', h.prefix, '--candidates-table', h.t.names.leases, 'get', 'candidates', 'component-A']);
    expect(q.code).toBe(1);
    expect(q.err).toMatch(/^error: DynamoDB refused a request on the tables named \(ValidationException: .+\): one is not a Conclave table of its kind/);
  });

  it('a table of another kind under a listing (get leases, get candidates, watch): exit 1 and the same advice, not an empty or warning-strewn list', async () => {
    const kind = /^error: DynamoDB refused a request on the tables named \(ValidationException: .+\): one is not a Conclave table of its kind/;
    for (const argv of [
      ['--leases-table', h.t.names.identities, 'get', 'leases'],
      ['--leases-table', h.t.names.candidates, 'get', 'leases'],
      ['--candidates-table', h.t.names.leases, 'get', 'candidates'],
      ['--leases-table', h.t.names.identities, 'watch', '--count', '1'],
    ]) {
      const r = await runMain(['--endpoint', h.endpoint, '--table-prefix', h.prefix, ...argv]);
      expect({ argv, code: r.code }).toEqual({ argv, code: 1 });
      expect(r.err).toMatch(kind);
    }
  });

  it('CONCLAVE_ENDPOINT and CONCLAVE_TABLE_PREFIX stand in for the flags', async () => {
    const r = await runMain(['get', 'leases', '-o', 'json'], { env: { CONCLAVE_ENDPOINT: h.endpoint, CONCLAVE_TABLE_PREFIX: h.prefix } });
    expect(r.code).toBe(0);
    expect((JSON.parse(r.out) as Lease[]).map((l) => l.name)).toContain('component-A');
  });

  it('bad global options are named', async () => {
    expect(await runMain(['--endpoint', 'localhost:8000', 'get', 'leases'])).toMatchObject({ code: 1, err: 'error: invalid global options: --endpoint: must be an http(s) URL such as http://127.0.0.1:8000' });
    expect(await runMain(['-o', 'yaml', 'get', 'leases'])).toMatchObject({ code: 1, err: 'error: invalid global options: --output: must be one of: table, json (given "yaml")' });
    // a short option's value follows a space: commander reads -o=json as "=json"
    expect(await runMain(['-o=json', 'get', 'leases'])).toMatchObject({ code: 1, err: 'error: invalid global options: --output: must be one of: table, json (given "=json": write -o json or --output=json)' });
  });

  it('an unknown command is a usage error (exit 2)', async () => {
    const r = await runMain(['frobnicate']);
    expect(r.code).toBe(2);
    expect(r.err).toMatch(/unknown command 'frobnicate'/);
  });

  it.each([
    // before: each ended "(conclave --help shows the commands and options)", which lists neither `describe lease NAME` nor set-priority's options
    { argv: ['describe', 'nightly-report'], first: "error: unknown command 'nightly-report'", hint: '(`conclave describe lease NAME` describes a lease; `conclave describe --help` shows what describe takes)' },
    { argv: ['get', 'nightly-report'], first: "error: unknown command 'nightly-report'", hint: '(`conclave get leases` lists the leases, `conclave get candidates LEASE` the candidates of one; `conclave get --help` shows what get takes)' },
    { argv: ['get', 'lease'], first: "error: unknown command 'lease'", hint: '(Did you mean leases?)' },
    { argv: ['set-priority', 'nightly-report', 'w1', '5', '--fro', '2h'], first: "error: unknown option '--fro'", hint: '(Did you mean --for?)' },
    { argv: ['set-priority', 'nightly-report', 'w1', '5', '--fro', '2h'], first: "error: unknown option '--fro'", hint: '(`conclave set-priority --help` shows its arguments and options)' },
    { argv: ['preempt', 'nightly-report'], first: "error: required option '--to <candidate>' not specified", hint: '(`conclave preempt --help` shows its arguments and options)' },
  ])('a usage error of `conclave $argv.0` points at that command\'s help', async ({ argv, first, hint }) => {
    const r = await runMain(argv);
    expect(r.code).toBe(2);
    const lines = r.err.split('\n');
    expect(lines[0]).toBe(first);
    expect(lines).toContain(hint);
  });
});

describe('a candidate on a session (it lives by its process’s session: vouchedCandidate)', () => {
  it('get candidates (one lease, and the scan) and describe judge it by the session its row names, not by its own stamp hours old', async () => {
    const s = await cliHarness('cli-session');
    try {
      const session = 'all-07:session-p9';
      await new IdentityStore(s.t.client, s.t.names.identities).write({ key: sessionKey(session), item: undefined, revision: 0 }, {
        set: { holderIdentity: session, process: 'p9', hostname: 'h', leaseDurationSeconds: 15, acquireTime: NOW - MIN, renewTime: NOW - SEC },
      });
      await s.seedCandidate(cand('s1', '1.30.0', '1.30.0', { leaseName: 'on-session', identity: 's1_1@p9', session, renewTime: NOW - 120 * MIN }));
      // the same row on no session's word: another process's session vouches for nothing
      await s.seedCandidate(cand('s2', '1.30.0', '1.30.0', { leaseName: 'on-session', identity: 's2_1@p8', session, renewTime: NOW - 120 * MIN }));
      const one = await s.run(['get', 'candidates', 'on-session'], { clock: at() });
      const row = (name: string) => one.out.split('\n').find((l) => l.startsWith(`${name} `))!.split(/\s{3,}/);
      expect(row('s1')[6]).toBe('4s ago');
      expect(row('s2')[6]).toBe('2h ago');
      const all = JSON.parse((await s.run(['get', 'candidates', '-o', 'json'], { clock: at() })).out) as Candidate[];
      expect(all.map((c) => [c.name, c.renewTime])).toEqual([['s1', NOW - SEC], ['s2', NOW - 120 * MIN]]);
      const described = (await s.run(['describe', 'lease', 'on-session'], { clock: at() })).out;
      expect(described).toMatch(/^\s+\d+\s+s1 .*fresh/m);
      expect(described).toMatch(/^\s+-\s+s2 .*stale/m);
    } finally {
      await s.t.drop();
    }
  });
});

describe('rows the schema refuses, skipped with a warning', () => {
  it('says what the coordinator does with each: a candidate or identity row is deleted once stale by the stamp it still carries, a lease row is reported broken', async () => {
    const s = await cliHarness('cli-refused');
    try {
      const session = 'all-07:session-p9';
      // acquireTime of the wrong type: refused, its stamp readable
      await s.t.client.send(new PutItemCommand({ TableName: s.t.names.identities, Item: marshall({ ...sessionKey(session), holderIdentity: session, process: 'p9', hostname: 'h', leaseDurationSeconds: 15, acquireTime: 'then', renewTime: NOW - SEC, revision: 1 }) }));
      await s.seedLease(lease('w1', { name: 'odd', holderInstance: 'w1_1@p9', session }));
      await s.t.client.send(new PutItemCommand({ TableName: s.t.names.candidates, Item: marshall({ leaseName: 'odd', name: 'c9', binaryVersion: '1.30.0', emulationVersion: '1.30.0', preferredStrategies: ['OldestEmulationVersion'], createdAt: NOW, renewTime: NOW, priority: 'high', revision: 1 }) }));
      await s.t.client.send(new PutItemCommand({ TableName: s.t.names.leases, Item: marshall({ name: 'bricked', holderIdentity: 'x', leaseDurationSeconds: 0, leaseTransitions: 0, fencingToken: 7, revision: 3 }) }));
      const described = await s.run(['describe', 'lease', 'odd'], { clock: at() });
      const warnings = described.err.split('\n').filter((l) => l.startsWith('warning: skipped'));
      // before: "the coordinator ignores it too", of each; the coordinator deletes such rows once stale.
      // The session row the lease is held on is no skipped row: the lease's own state, judged by nobody
      expect(warnings).toEqual([
        expect.stringMatching(/^warning: skipped a candidate row that does not match its schema \(it takes no part in elections; the coordinator deletes it once stale by the renewTime it still carries, if that parses as epoch milliseconds\): .*priority/),
      ]);
      expect(described.out).toMatch(/^State: +unknown: held on a session row the schema refuses/m);
      expect(described.out).toMatch(/^Session: +held on session all-07:session-p9, whose row does not match the schema: acquireTime/m);
      expect(described.out).toMatch(/^Repair: +rewrite the session row valid, or delete it: aws dynamodb delete-item /m);
      const listed = await s.run(['get', 'leases'], { clock: at() });
      expect(listed.err.split('\n').filter((l) => l.startsWith('warning:'))).toEqual([
        expect.stringMatching(/^warning: skipped a lease row that does not match its schema \(the coordinator decides nothing on it, and reports it broken each tick\): .*leaseDurationSeconds/),
        expect.stringMatching(/^warning: lease "odd": the term of w1 \(fencing token 7\) is held on session "all-07:session-p9", whose row .* does not match the schema \(acquireTime: .*\), so nobody can judge whether that term is live: .*delete-item /),
      ]);
      expect(listed.out).toMatch(/^odd +w1 +7 .*\(session row refused\) +unknown$/m);
    } finally {
      await s.t.drop();
    }
  });
});

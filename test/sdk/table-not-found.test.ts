/**
 * A worker whose `tables` do not match the deployment (issue 29): on DynamoDB Local, each SDK
 * object that cannot start says which tables it looked for and how to fix the option, instead of
 * DynamoDB's bare "Cannot do operations on a non-existent table" from deep in a store.
 */
import { describe, expect, inject, it } from 'vitest';
import { DeleteTableCommand } from '@aws-sdk/client-dynamodb';
import { localClient } from '../../lib/local/dynamodb-local.js';
import { IdentityLeaseHeartbeat, LeaderElector, LeaseCandidate, Session, TableNotFoundError, getLeader, listIdentities, listLiveIdentities, tryWithLease, withLease } from '../../lib/sdk/index.js';
import { StartUp } from '../../lib/sdk/options.js';
import { testTables } from '../support.js';
import { waitFor } from './harness.js';

const client = () => localClient(inject('ddbEndpoint'));
const PREFIX = 'no-such-deployment';
const candidacy = { emulationVersion: '1.0.0', binaryVersion: '1.0.0' };

describe('a `tables` option that names no table', () => {
  it.each([
    ['LeaderElector', () => new LeaderElector({ client: client(), tables: PREFIX, leaseName: 'job', identity: 'w1', candidacy, platform: 'none', callbacks: { onStartedLeading: () => undefined } })],
  ] as const)('%s: run() rejects with a TableNotFoundError naming the tables, the option and the fix', async (_, make) => {
    const o = make();
    const stop = new AbortController();
    let error: unknown;
    try {
      await o.run(stop.signal);
    } catch (e) {
      error = e;
    } finally {
      stop.abort();
    }
    expect(error).toBeInstanceOf(TableNotFoundError);
    const e = error as TableNotFoundError;
    expect(e.tables).toEqual({ leases: `${PREFIX}-leases`, candidates: `${PREFIX}-candidates`, identities: `${PREFIX}-identities` });
    expect(e.message).toMatch(new RegExp(`${PREFIX}-leases, ${PREFIX}-candidates and ${PREFIX}-identities`));
    expect(e.message).toMatch(/`tables` option/);
    expect(e.message).toMatch(/LeasesTable, CandidatesTable and IdentitiesTable outputs/);
    // local mode as the README starts it: the prefix conclave-local prints
    expect(e.message).toMatch(/`npx conclave-local` \(its CONCLAVE_TABLE_PREFIX\) or startLocalConclave\(\) \(its tablePrefix\)/);
    expect(e.cause.name).toBe('ResourceNotFoundException');
    // where the client sent it: a table in another Region (or on another endpoint) is the usual cause
    expect(e.message).toContain(`a table it uses does not exist where its DynamoDB client points, ${inject('ddbEndpoint')} (DynamoDB said: `);
    // named as the object the caller made, not a part of it (a LeaderElector's candidacy)
    if (_ === 'LeaderElector') expect(e.message).toMatch(/^LeaderElector "w1" of lease "job": /);
    await expect(o.ready).rejects.toBe(error); // ready says the same
  });

  it.each([
    ['a prefix naming no table', PREFIX, PREFIX, ''],
    // a table's full name given as the prefix (copied from a stack output): the message names the prefix meant
    ['a table name given as the prefix', `${PREFIX}-leases`, `${PREFIX}-leases`, `\`tables\` is the prefix the three names share, without the dash: '${PREFIX}', not '${PREFIX}-leases'. `],
  ] as const)("LeaderElector in mode 'NoCoordination', %s: run() rejects with a TableNotFoundError naming the leases and identities tables, and ready with it", async (_, tables, given, hint) => {
    const told: Error[] = [];
    const o = new LeaderElector({ client: client(), tables, leaseName: 'job', identity: 'w1', mode: 'NoCoordination', platform: 'none', onError: (e) => told.push(e), callbacks: { onStartedLeading: () => undefined } });
    const stop = new AbortController();
    // before the fix: no candidacy, so nothing was read before it took part: ready resolved and run() retried for ever
    const error = await Promise.race([o.run(stop.signal).then(() => 'resolved', (e: unknown) => e), o.ready.then(() => 'ready resolved', () => new Promise(() => undefined))]);
    stop.abort();
    expect(error).toBeInstanceOf(TableNotFoundError);
    const e = error as TableNotFoundError;
    expect(e.retrying).toBe(false);
    // it reads the lease row, and a holder's session row: never the candidates table (no candidacy)
    expect(e.uses).toEqual(['leases', 'identities']);
    expect(e.message).toMatch(/^LeaderElector "w1" of lease "job": a table it uses does not exist where its DynamoDB client points/);
    expect(e.message).toContain(`It uses ${given}-leases and ${given}-identities, as its \`tables\` option names them`);
    expect(e.message).not.toContain(`${given}-candidates`);
    expect(e.message).toMatch(/LeasesTable and IdentitiesTable outputs/);
    if (hint) expect(e.message).toContain(hint);
    expect(e.cause.name).toBe('ResourceNotFoundException');
    await expect(o.ready).rejects.toBe(error);
    expect(o.runPhase).toBe('failed');
    expect(told).toEqual([]); // not told as a fault retried: run() says it
  });

  it.each([
    // each writes and reads its rows in the identities table alone (IdentityStore, SessionReader)
    ['IdentityLeaseHeartbeat', () => new IdentityLeaseHeartbeat({ client: client(), tables: PREFIX, component: 'scheduler' })],
    ['Session', () => new Session({ client: client(), tables: PREFIX })],
  ] as const)('%s: run() rejects with a TableNotFoundError naming the identities table alone, the option and the fix', async (_, make) => {
    const o = make();
    const stop = new AbortController();
    const error = await o.run(stop.signal).then(() => undefined, (e: unknown) => e);
    stop.abort();
    // before: "It uses <p>-leases, <p>-candidates and <p>-identities" and three stack outputs
    expect(error).toBeInstanceOf(TableNotFoundError);
    const e = error as TableNotFoundError;
    expect(e.tables).toEqual({ leases: `${PREFIX}-leases`, candidates: `${PREFIX}-candidates`, identities: `${PREFIX}-identities` });
    expect(e.uses).toEqual(['identities']);
    expect(e.message).toContain(`It uses ${PREFIX}-identities, as its \`tables\` option names it`);
    expect(e.message).not.toMatch(new RegExp(`${PREFIX}-(leases|candidates)`));
    expect(e.message).toMatch(/IdentitiesTable output \(its prefix\)/);
    expect(e.message).not.toMatch(/LeasesTable|CandidatesTable/);
    expect(e.cause.name).toBe('ResourceNotFoundException');
    await expect(o.ready).rejects.toBe(error);
  });

  it('LeaseCandidate: run() rejects with a TableNotFoundError naming the candidates and leases tables, the option and the fix, not the identities table', async () => {
    // its rows are in the candidates table (CandidateStore); it reads a lease row and claims its name
    // there (askForName: LeaseStore); a session's identities row is the Session's own, never read here
    const o = new LeaseCandidate({ client: client(), tables: PREFIX, leaseName: 'job', name: 'w1', ...candidacy });
    const stop = new AbortController();
    const error = await o.run(stop.signal).then(() => undefined, (e: unknown) => e);
    stop.abort();
    // before: "It uses <p>-leases, <p>-candidates and <p>-identities" and three stack outputs
    expect(error).toBeInstanceOf(TableNotFoundError);
    const e = error as TableNotFoundError;
    expect(e.uses).toEqual(['leases', 'candidates']);
    expect(e.message).toContain(`It uses ${PREFIX}-leases and ${PREFIX}-candidates, as its \`tables\` option names them`);
    expect(e.message).not.toContain(`${PREFIX}-identities`);
    expect(e.message).toMatch(/LeasesTable and CandidatesTable outputs/);
    expect(e.message).not.toMatch(/IdentitiesTable/);
    expect(e.cause.name).toBe('ResourceNotFoundException');
    await expect(o.ready).rejects.toBe(error);
  });

  it('a running Session whose identities table is deleted: its onError names that table alone', async () => {
    const t = await testTables('session-gone');
    const told: Error[] = [];
    const session = new Session({ client: t.client, tables: t.names, renewIntervalMs: 600, retryPeriodMs: 150, renewDeadlineMs: 1_200, maxLeaseDurationMs: 2_000, onError: (e) => told.push(e) });
    const stop = new AbortController();
    const running = session.run(stop.signal).catch(() => undefined);
    try {
      await session.ready;
      await t.client.send(new DeleteTableCommand({ TableName: t.names.identities }));
      const e = await waitFor('a TableNotFoundError told to onError', () => told.find((x): x is TableNotFoundError => x instanceof TableNotFoundError));
      expect(e.retrying).toBe(true);
      expect(e.message).toContain(`It uses ${t.names.identities}, as its \`tables\` option names it`);
      expect(e.message).not.toContain(t.names.leases);
      expect(e.message).not.toContain(t.names.candidates);
    } finally {
      stop.abort();
      await running;
      await t.drop().catch(() => undefined);
    }
  });

  it.each([
    // getLeader reads the lease and its holder's session: never the candidates table, so never named
    ['getLeader', () => getLeader('job', { client: client(), tables: PREFIX }), `It uses ${PREFIX}-leases and ${PREFIX}-identities, as`, /LeasesTable and IdentitiesTable outputs/],
    ['withLease', () => withLease('job', async () => 1, { client: client(), tables: PREFIX, mode: 'NoCoordination' }), `It uses ${PREFIX}-leases, ${PREFIX}-candidates and ${PREFIX}-identities, as`, /LeasesTable, CandidatesTable and IdentitiesTable outputs/],
    ['tryWithLease', () => tryWithLease('job', async () => 1, { client: client(), tables: PREFIX }), `It uses ${PREFIX}-leases, ${PREFIX}-candidates and ${PREFIX}-identities, as`, /LeasesTable, CandidatesTable and IdentitiesTable outputs/],
  ] as const)('%s rejects with a TableNotFoundError naming the tables it uses, the option and the fix', async (_, call, uses, outputs) => {
    const error = await call().then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(TableNotFoundError);
    const e = error as TableNotFoundError;
    expect(e.message).toContain(uses);
    expect(e.message).toMatch(outputs);
    expect(e.message).toMatch(/`tables` option/);
    // a call does not "start": it names itself and what it could not do
    expect(e.message).toMatch(new RegExp(`^${_} of lease "job": a table it uses does not exist`));
    expect(e.cause.name).toBe('ResourceNotFoundException');
  });

  it.each([
    ['listIdentities', () => listIdentities({ client: client(), tables: PREFIX, component: 'scheduler' })],
    ['listLiveIdentities', () => listLiveIdentities({ client: client(), tables: PREFIX, component: 'scheduler' })],
  ] as const)('%s rejects with a TableNotFoundError naming the tables, the option and the fix, as getLeader does', async (_, call) => {
    const error = await call().then(
      () => undefined,
      (e: unknown) => e,
    );
    // before: DynamoDB's bare ResourceNotFoundException ("Cannot do operations on a non-existent table")
    expect(error).toBeInstanceOf(TableNotFoundError);
    const e = error as TableNotFoundError;
    expect(e.tables).toEqual({ leases: `${PREFIX}-leases`, candidates: `${PREFIX}-candidates`, identities: `${PREFIX}-identities` });
    // it reads the identities table alone, and names no other
    expect(e.message).toContain(`It uses ${PREFIX}-identities, as its \`tables\` option names it`);
    expect(e.message).not.toMatch(new RegExp(`${PREFIX}-(leases|candidates)`));
    expect(e.message).toMatch(/IdentitiesTable output\b/);
    expect(e.message).toMatch(new RegExp(`^${_} of component "scheduler": a table it uses does not exist`));
    expect(e.retrying).toBe(false);
    expect(e.cause.name).toBe('ResourceNotFoundException');
  });
});

describe('a `tables` prefix written as a table name, or with its dash', () => {
  // the two mistakes a user makes copying a name from `conclave-local`'s output or a stack's outputs
  it.each([
    ['a table name (conclave-local-leases)', 'conclave-local-leases', 'conclave-local'],
    ['the candidates table name', 'conclave-local-candidates', 'conclave-local'],
    ['a trailing dash (conclave-local-)', 'conclave-local-', 'conclave-local'],
  ] as const)('LeaderElector and getLeader with %s: the TableNotFoundError names the prefix meant', async (_, tables, meant) => {
    const stop = new AbortController();
    const elector = new LeaderElector({ client: client(), tables, leaseName: 'job', identity: 'w1', candidacy, platform: 'none', callbacks: { onStartedLeading: () => undefined } });
    const errors = [await elector.run(stop.signal).then(() => undefined, (e: unknown) => e), await getLeader('job', { client: client(), tables }).then(() => undefined, (e: unknown) => e)];
    stop.abort();
    for (const error of errors) {
      expect(error).toBeInstanceOf(TableNotFoundError);
      expect((error as TableNotFoundError).message).toContain(`\`tables\` is the prefix the three names share, without the dash: '${meant}', not '${tables}'`);
    }
  });

  it('a prefix that is neither gets no such hint', async () => {
    const error = await getLeader('job', { client: client(), tables: PREFIX }).then(() => undefined, (e: unknown) => e);
    expect(error).toBeInstanceOf(TableNotFoundError);
    expect((error as TableNotFoundError).message).not.toContain('without the dash');
  });
});

describe("a start-up's wait for a missing table looks at the tables the object uses", () => {
  // Session and IdentityLeaseHeartbeat use the identities table alone: a missing table whose request
  // is not known (no TableName noted) is looked at there, not at the leases and candidates tables,
  // which such a worker's role may not be granted DescribeTable on
  it('StartUp given uses: DescribeTable on those tables only, and the error names them', async () => {
    const tables = { leases: 'p-leases', candidates: 'p-candidates', identities: 'p-identities' };
    const looked: string[] = [];
    const startUp = new StartUp<void>('Session', tables, { state: async (t) => (looked.push(t), 'missing'), clock: { monotonic: () => 0 } }, ['identities']);
    const missing = Object.assign(new Error('Requested resource not found'), { name: 'ResourceNotFoundException' });
    expect(await startUp.cannotStart(missing)).toBe(true);
    expect(looked).toEqual(['p-identities']); // before: all three
    const e = startUp.fail(missing) as TableNotFoundError;
    expect(e.uses).toEqual(['identities']);
    expect(e.message).toContain('It uses p-identities, as');
  });
});

/**
 * `multiRegion` against the leases table as DescribeTable describes it (lib/sdk/multi-region.ts):
 * the decision as a function of the description, table by table; then on DynamoDB Local, whose
 * tables have no replicas (single-Region: allowed), the start-up check as run() makes it. Local
 * cannot make a global table, so the refusal's path through run() and withLease is shown on Local's
 * own DescribeTable answer with the replicas and consistency an MREC table's has added to it. Local
 * does not know DescribeGlobalTable (UnknownOperationException); a 2017.11.29 global table, which
 * only DescribeGlobalTable finds, is shown by the answer that operation gives for one. Off this
 * machine (a client of AWS's endpoint of a Region), single-Region tables are refused: shown on a
 * client whose describes are answered by a middleware, so that nothing leaves the machine.
 */
import { DynamoDBClient, GetItemCommand, GlobalTableNotFoundException, ResourceNotFoundException, type DescribeTableCommandOutput, type GlobalTableDescription, type TableDescription } from '@aws-sdk/client-dynamodb';
import { marshall } from '@aws-sdk/util-dynamodb';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { localClient } from '../../lib/local/dynamodb-local.js';
import { ValidationError } from '../../lib/schemas/validation.js';
import { LeaderElector } from '../../lib/sdk/elector.js';
import { multiRegionMismatch, multiRegionRefusal, singleRegionRefusal } from '../../lib/sdk/multi-region.js';
import { TableNotFoundError } from '../../lib/sdk/options.js';
import { withLease } from '../../lib/sdk/with-lease.js';
import { testTables, type TestTables } from '../support.js';

const replicas = (...regions: string[]) => regions.map((RegionName) => ({ RegionName, ReplicaStatus: 'ACTIVE' as const }));
/** DescribeGlobalTable's answer for a 2017.11.29 global table named `name`, replicated in us-east-1 and eu-west-1. */
const legacyGlobal = (name: string): GlobalTableDescription => ({ GlobalTableName: name, GlobalTableStatus: 'ACTIVE', ReplicationGroup: replicas('us-east-1', 'eu-west-1') });

describe('multiRegionRefusal: the decision from DescribeTable', () => {
  const rows: { name: string; table: TableDescription; refused: RegExp | undefined }[] = [
    { name: 'a single-Region table (no replicas; DynamoDB Local)', table: { TableName: 'c-leases' }, refused: undefined },
    { name: 'replicas listed empty (after a disassociation)', table: { TableName: 'c-leases', Replicas: [] }, refused: undefined },
    { name: 'MRSC, three replicas', table: { TableName: 'c-leases', Replicas: replicas('us-east-1', 'us-east-2', 'us-west-2'), MultiRegionConsistency: 'STRONG', GlobalTableVersion: '2019.11.21' }, refused: undefined },
    { name: 'MRSC, two replicas and a witness', table: { TableName: 'c-leases', Replicas: replicas('us-east-1', 'us-east-2'), GlobalTableWitnesses: [{ RegionName: 'us-west-2' }], MultiRegionConsistency: 'STRONG' }, refused: undefined },
    { name: 'MREC, said so', table: { TableName: 'c-leases', Replicas: replicas('eu-west-1', 'eu-central-1'), MultiRegionConsistency: 'EVENTUAL', GlobalTableVersion: '2019.11.21' }, refused: /"c-leases" is a global table with multi-Region eventual consistency \(MultiRegionConsistency EVENTUAL; replicas in eu-west-1, eu-central-1\)/ },
    { name: 'MREC, consistency not set (EVENTUAL is the default)', table: { TableName: 'c-leases', Replicas: replicas('eu-west-1', 'eu-central-1') }, refused: /MultiRegionConsistency not set: EVENTUAL; replicas in eu-west-1, eu-central-1/ },
    { name: 'a 2017.11.29 global table (always MREC; its replicas may not be listed)', table: { TableName: 'c-leases', GlobalTableVersion: '2017.11.29' }, refused: /is a global table of version 2017\.11\.29/ },
  ];
  it.each(rows)('$name', ({ table, refused }) => {
    const why = multiRegionRefusal(table);
    if (refused === undefined) expect(why).toBeUndefined();
    else {
      expect(why).toMatch(refused);
      expect(why).toMatch(/last writer wins/);
      expect(why).toMatch(/MultiRegionConsistency STRONG: the Conclave construct's `regions` makes them\), or run in one Region on single-Region tables$/);
    }
  });

  it('a 2017.11.29 global table that only DescribeGlobalTable finds (DescribeTable lists no replicas and no version): refused, naming its replicas', () => {
    const why = multiRegionRefusal({ TableName: 'c-leases' }, 'leases', legacyGlobal('c-leases'));
    expect(why).toMatch(/"c-leases" is a global table of version 2017\.11\.29 \(replicas in us-east-1, eu-west-1\)/); // before the fix: undefined, allowed
    expect(why).toMatch(/last writer wins/);
  });
});

describe('multiRegionMismatch: the tables, each allowed alone, judged together', () => {
  const strong = (TableName: string, ...regions: string[]): TableDescription => ({ TableName, Replicas: replicas(...regions), MultiRegionConsistency: 'STRONG' });
  const at = (role: 'leases' | 'candidates' | 'identities', table: TableDescription) => ({ role, name: table.TableName!, table });
  const rows: { name: string; tables: ReturnType<typeof at>[]; refused: RegExp | undefined }[] = [
    { name: 'all single-Region (DynamoDB Local; one Region on its own tables)', tables: [at('leases', { TableName: 'c-leases' }), at('candidates', { TableName: 'c-candidates' }), at('identities', { TableName: 'c-identities', Replicas: [] })], refused: undefined },
    { name: 'all MRSC, the same Regions in another order; a witness apart', tables: [at('leases', { ...strong('c-leases', 'us-east-1', 'us-east-2'), GlobalTableWitnesses: [{ RegionName: 'us-west-2' }] }), at('identities', strong('c-identities', 'us-east-2', 'us-east-1'))], refused: undefined },
    { name: 'one table alone (withLease checks its candidates table so)', tables: [at('candidates', strong('c-candidates', 'us-east-1', 'us-east-2'))], refused: undefined },
    { name: 'a single-Region identities table beside MRSC leases', tables: [at('leases', strong('c-leases', 'us-east-1', 'us-east-2')), at('identities', { TableName: 'c-identities' })], refused: /^the identities table "c-identities" has no replicas \(a table of this Region alone\), while the leases table "c-leases" is a multi-Region strongly consistent global table with replicas in us-east-1, us-east-2: .*so two Regions can each judge a session by its own replica's renewals/ },
    { name: 'a single-Region leases table beside MRSC candidates: the leases table named, against the candidates table', tables: [at('leases', { TableName: 'c-leases' }), at('candidates', strong('c-candidates', 'eu-west-1', 'eu-central-1'))], refused: /^the leases table "c-leases" has no replicas .*while the candidates table "c-candidates" is .*replicas in eu-west-1, eu-central-1: .*so two Regions can each grant the lease/ },
    { name: 'MRSC candidates in other Regions than the leases table', tables: [at('leases', strong('c-leases', 'us-east-1', 'us-east-2')), at('candidates', strong('c-candidates', 'us-east-1', 'us-west-2'))], refused: /^the candidates table "c-candidates" has replicas in us-east-1, us-west-2, while the leases table "c-leases" .*replicas in us-east-1, us-east-2: .*each claim and mark one run-once window/ },
  ];
  it.each(rows)('$name', ({ tables, refused }) => {
    const why = multiRegionMismatch(tables);
    if (refused === undefined) expect(why).toBeUndefined();
    else {
      expect(why).toMatch(refused);
      expect(why).toMatch(/Make it an MRSC global table with the same Regions \(MultiRegionConsistency STRONG; replicas in [\w-]+, [\w-]+: the Conclave construct's `regions` makes them\), or run each Region on its own tables without multiRegion$/);
    }
  });
});

describe('the start-up check on DynamoDB Local', () => {
  let t: TestTables;
  beforeAll(async () => {
    t = await testTables('multi-region');
  });
  afterAll(async () => t?.drop());

  /**
   * A client of the run's DynamoDB Local that records each command, and hands DescribeTable's answer
   * to `describe`; with `global`, DescribeGlobalTable of a table is answered by it (Local does not know the operation).
   */
  function client(
    describe?: (table: TableDescription) => TableDescription | Error,
    global?: (name: string) => GlobalTableDescription | Error,
  ): { client: DynamoDBClient; sent: string[]; described: string[] } {
    const c = localClient(inject('ddbEndpoint'));
    const sent: string[] = [];
    const described: string[] = [];
    c.middlewareStack.add(
      (next, context) => async (args) => {
        sent.push(context.commandName ?? '?');
        if (context.commandName === 'DescribeTableCommand') described.push((args.input as { TableName: string }).TableName);
        if (context.commandName === 'DescribeGlobalTableCommand' && global) {
          const answer = global((args.input as { GlobalTableName: string }).GlobalTableName);
          if (answer instanceof Error) throw answer;
          return { output: { $metadata: { httpStatusCode: 200, requestId: 'answered-here' }, GlobalTableDescription: answer }, response: undefined } as Awaited<ReturnType<typeof next>>;
        }
        const out = await next(args);
        if (context.commandName !== 'DescribeTableCommand' || !describe) return out;
        const output = out.output as DescribeTableCommandOutput;
        const answer = describe(output.Table!);
        if (answer instanceof Error) throw answer;
        return { ...out, output: { ...output, Table: answer } };
      },
      { step: 'initialize', name: 'describeAs' },
    );
    return { client: c, sent, described };
  }
  const mrec = (table: TableDescription): TableDescription => ({ ...table, Replicas: replicas('eu-west-1', 'eu-central-1'), MultiRegionConsistency: 'EVENTUAL' });
  const elector = (c: DynamoDBClient, lease: string, extra: object = {}, onError: (e: Error) => void = () => undefined) =>
    new LeaderElector({ client: c, tables: t.names, leaseName: lease, identity: 'w1', mode: 'NoCoordination', multiRegion: true, platform: 'none', onError, callbacks: { onStartedLeading: () => undefined }, ...extra });
  const leaseRow = async (lease: string) => (await t.client.send(new GetItemCommand({ TableName: t.names.leases, Key: marshall({ name: lease }), ConsistentRead: true }))).Item;

  it('a single-Region table on DynamoDB Local (an endpoint on this machine): multiRegion is allowed, one DescribeTable each of the leases and identities tables before anything else, and the worker leads', async () => {
    const { client: c, sent, described } = client();
    let leading!: () => void;
    const led = new Promise<void>((r) => (leading = r));
    const e = elector(c, 'single', { callbacks: { onStartedLeading: () => leading() } });
    const stop = new AbortController();
    const running = e.run(stop.signal);
    await e.ready;
    await led;
    stop.abort();
    await running;
    expect(sent[0]).toBe('DescribeTableCommand');
    // the identities table too: a NoCoordination follower judges a holder's term on a session by its rows
    expect(described.sort()).toEqual([t.names.identities, t.names.leases].sort());
    c.destroy();
  });

  it('an MREC table: run() and ready reject with a ValidationError naming multiRegion and the fix, and nothing is written', async () => {
    const { client: c, sent } = client(mrec);
    const e = elector(c, 'mrec', { mode: 'coordinated', candidacy: { emulationVersion: '1.0.0', binaryVersion: '1.0.0' } });
    const error = await e.run(new AbortController().signal).then(() => undefined, (x: unknown) => x);
    expect(error).toBeInstanceOf(ValidationError);
    expect((error as ValidationError).fields).toEqual(['multiRegion']);
    expect((error as Error).message).toMatch(/^invalid options for lease "mrec": multiRegion: the leases table "t-multi-region-\w+-leases" is a global table with multi-Region eventual consistency/);
    expect((error as Error).message).toMatch(/Give multiRegion only with multi-Region strongly consistent tables/);
    await expect(e.ready).rejects.toBe(error);
    expect(sent.filter((s) => s !== 'DescribeTableCommand')).toEqual([]); // no candidate row, no lease read or write
    expect(await leaseRow('mrec')).toBeUndefined();
    c.destroy();
  });

  it('an MREC table: withLease rejects with the same error, without running the function', async () => {
    const { client: c } = client(mrec);
    let ran = false;
    const error = await withLease('mrec-run', async () => (ran = true), { client: c, tables: t.names, identity: 'r1', mode: 'NoCoordination', multiRegion: true, platform: 'none' }).catch((x: unknown) => x);
    expect(error).toBeInstanceOf(ValidationError);
    expect((error as ValidationError).fields).toEqual(['multiRegion']);
    expect(ran).toBe(false);
    c.destroy();
  });

  /** The description with an MREC table's replicas and consistency, for the table named `suffix` only. */
  const mrecOnly = (suffix: string) => (table: TableDescription): TableDescription => (table.TableName!.endsWith(suffix) ? mrec(table) : table);

  it('an MREC candidates table under MRSC leases: a run-once run is refused naming the candidates table, without running (its window could run in two Regions)', async () => {
    const { client: c, sent } = client(mrecOnly('-candidates'));
    let ran = false;
    const error = await withLease('mrec-window', async () => (ran = true), { client: c, tables: t.names, identity: 'r1', mode: 'NoCoordination', multiRegion: true, platform: 'none', runOnce: { window: 'migration-1' } }).catch((x: unknown) => x);
    expect(error).toBeInstanceOf(ValidationError); // before the fix: the run ran, its window marked on one Region's replica
    expect((error as ValidationError).fields).toEqual(['multiRegion']);
    expect((error as Error).message).toMatch(/multiRegion: the candidates table "t-multi-region-\w+-candidates" is a global table with multi-Region eventual consistency .*so two Regions can each claim and mark one run-once window \(it runs twice\)/);
    expect(ran).toBe(false);
    expect(sent.filter((s) => s !== 'DescribeTableCommand')).not.toContain('UpdateItemCommand'); // nothing claimed, no lease taken
    // without runOnce a first-come run uses no candidates table: not described, and it runs
    const { client: plain, described } = client(mrecOnly('-candidates'));
    expect(await withLease('mrec-plain', async () => 'ran', { client: plain, tables: t.names, identity: 'r2', mode: 'NoCoordination', multiRegion: true, platform: 'none' })).toMatchObject({ status: 'ran' });
    expect(described.sort()).toEqual([t.names.identities, t.names.leases].sort());
    c.destroy();
    plain.destroy();
  });

  it('coordinated: an MREC candidates or identities table refuses run() naming that table', async () => {
    const coordinated = { mode: 'coordinated', candidacy: { emulationVersion: '1.0.0', binaryVersion: '1.0.0' } };
    for (const [suffix, role, consequence] of [['-candidates', 'candidates', /each claim and mark one run-once window/], ['-identities', 'identities', /each judge a session by its own replica's renewals/]] as const) {
      const { client: c, sent } = client(mrecOnly(suffix));
      const e = elector(c, `mrec${suffix}`, coordinated);
      const stop = new AbortController();
      void e.ready.then(() => stop.abort(), () => undefined); // started: stopped again, and judged below
      const error = await e.run(stop.signal).then(() => undefined, (x: unknown) => x);
      expect(error).toBeInstanceOf(ValidationError); // before the fix: it started, on the leases table's word alone
      expect((error as Error).message).toMatch(new RegExp(`multiRegion: the ${role} table "t-multi-region-\\w+${suffix}" is a global table with multi-Region eventual consistency`));
      expect((error as Error).message).toMatch(consequence);
      expect(sent.every((s) => /^Describe(Global)?TableCommand$/.test(s))).toBe(true); // nothing read or written
      c.destroy();
    }
  });

  /** An MRSC global table's description, replicated in `regions`. */
  const mrsc = (...regions: string[]) => (table: TableDescription): TableDescription => ({ ...table, Replicas: replicas(...regions), MultiRegionConsistency: 'STRONG', GlobalTableVersion: '2019.11.21' });
  /** Each table described by the first of `as` whose suffix ends its name; a table none names as DynamoDB Local describes it (single-Region). */
  const describedAs = (as: Record<string, (table: TableDescription) => TableDescription>) => (table: TableDescription): TableDescription => {
    const suffix = Object.keys(as).find((s) => table.TableName!.endsWith(s));
    return suffix ? as[suffix]!(table) : table;
  };

  it('coordinated, MRSC leases: a candidates or identities table of one Region, or with other replica Regions, refuses run() naming that table, what it has, the leases table\'s Regions and the fix', async () => {
    const coordinated = { mode: 'coordinated', candidacy: { emulationVersion: '1.0.0', binaryVersion: '1.0.0' } };
    const cases = [
      // brought by the user: two tables global, the third made in each Region by the same name
      { as: { '-leases': mrsc('us-east-1', 'us-east-2'), '-candidates': mrsc('us-east-1', 'us-east-2') }, role: 'identities', has: /has no replicas \(a table of this Region alone\)/ },
      { as: { '-leases': mrsc('us-east-1', 'us-east-2'), '-identities': mrsc('us-east-1', 'us-east-2') }, role: 'candidates', has: /has no replicas \(a table of this Region alone\)/ },
      { as: { '-leases': mrsc('us-east-1', 'us-east-2'), '-candidates': mrsc('us-east-1', 'us-east-2'), '-identities': mrsc('us-east-1', 'us-west-2') }, role: 'identities', has: /has replicas in us-east-1, us-west-2/ },
    ] as const;
    for (const [i, { as, role, has }] of cases.entries()) {
      const { client: c, sent } = client(describedAs(as));
      const e = elector(c, `mixed-${i}`, coordinated);
      const stop = new AbortController();
      void e.ready.then(() => stop.abort(), () => undefined); // started: stopped again, and judged below
      const error = await e.run(stop.signal).then(() => undefined, (x: unknown) => x);
      expect(error).toBeInstanceOf(ValidationError); // before the fix: it started, each table judged alone
      expect((error as ValidationError).fields).toEqual(['multiRegion']);
      const message = (error as Error).message;
      expect(message).toMatch(new RegExp(`multiRegion: the ${role} table "t-multi-region-\\w+-${role}" `));
      expect(message).toMatch(has);
      expect(message).toMatch(/the leases table "t-multi-region-\w+-leases" is a multi-Region strongly consistent global table with replicas in us-east-1, us-east-2/);
      expect(message).toMatch(/Make it an MRSC global table with the same Regions \(MultiRegionConsistency STRONG; replicas in us-east-1, us-east-2: the Conclave construct's `regions` makes them\), or run each Region on its own tables without multiRegion$/);
      expect(sent.every((s) => /^Describe(Global)?TableCommand$/.test(s))).toBe(true); // nothing read or written
      expect(await leaseRow(`mixed-${i}`)).toBeUndefined();
      c.destroy();
    }
  });

  it('NoCoordination, MRSC leases: an identities table of one Region refuses run() naming it (a follower judges a holder\'s term on a session by that table\'s renewals)', async () => {
    const { client: c, sent } = client(describedAs({ '-leases': mrsc('us-east-1', 'us-east-2') }));
    const e = elector(c, 'mixed-racing');
    const stop = new AbortController();
    void e.ready.then(() => stop.abort(), () => undefined); // started: stopped again, and judged below
    const error = await e.run(stop.signal).then(() => undefined, (x: unknown) => x);
    expect(error).toBeInstanceOf(ValidationError); // before the fix: it started, the leases table alone checked
    expect((error as ValidationError).fields).toEqual(['multiRegion']);
    expect((error as Error).message).toMatch(/multiRegion: the identities table "t-multi-region-\w+-identities" has no replicas \(a table of this Region alone\), while the leases table "t-multi-region-\w+-leases" is a multi-Region strongly consistent global table with replicas in us-east-1, us-east-2: .*so two Regions can each judge a session by its own replica's renewals/);
    expect(sent.every((s) => /^Describe(Global)?TableCommand$/.test(s))).toBe(true); // nothing read or written
    expect(await leaseRow('mixed-racing')).toBeUndefined();
    c.destroy();
  });

  it('a first-come run-once run: MRSC leases beside a candidates table of one Region is refused naming the candidates table, without running', async () => {
    const { client: c } = client(describedAs({ '-leases': mrsc('us-east-1', 'us-east-2') }));
    let ran = false;
    const error = await withLease('mixed-window', async () => (ran = true), { client: c, tables: t.names, identity: 'r1', mode: 'NoCoordination', multiRegion: true, platform: 'none', runOnce: { window: 'migration-2' } }).catch((x: unknown) => x);
    // before: its window's table was judged alone (one copy: allowed), and the window could run once in each Region
    expect(error).toBeInstanceOf(ValidationError);
    expect((error as Error).message).toMatch(/multiRegion: the candidates table "t-multi-region-\w+-candidates" has no replicas \(a table of this Region alone\), while the leases table "t-multi-region-\w+-leases" is a multi-Region strongly consistent global table/);
    expect(ran).toBe(false);
    c.destroy();
  });

  it('coordinated: every table MRSC with the same Regions (in any order) starts, and onError is told nothing', async () => {
    const { client: c } = client(describedAs({ '-leases': mrsc('us-east-1', 'us-east-2'), '-candidates': mrsc('us-east-2', 'us-east-1'), '-identities': mrsc('us-east-1', 'us-east-2') }));
    const errors: Error[] = [];
    const e = elector(c, 'all-mrsc', { mode: 'coordinated', candidacy: { emulationVersion: '1.0.0', binaryVersion: '1.0.0' } }, (x) => errors.push(x));
    const stop = new AbortController();
    const running = e.run(stop.signal);
    await e.ready;
    stop.abort();
    await running;
    expect(errors).toEqual([]);
    c.destroy();
  });

  /** Runs an elector of `lease` on `c` until it leads, then stops it; what onError was told. */
  async function ledOnce(c: DynamoDBClient, lease: string): Promise<Error[]> {
    const errors: Error[] = [];
    let leading!: () => void;
    const led = new Promise<void>((r) => (leading = r));
    const e = elector(c, lease, { callbacks: { onStartedLeading: () => leading() } }, (x) => errors.push(x));
    const stop = new AbortController();
    const running = e.run(stop.signal);
    await led;
    stop.abort();
    await running;
    return errors;
  }

  it('DescribeTable not allowed: onError is told the option is unchecked and what to grant, and the worker starts', async () => {
    const denied = Object.assign(new Error('not authorized to perform: dynamodb:DescribeTable'), { name: 'AccessDeniedException' });
    const { client: c } = client(() => denied);
    const errors = await ledOnce(c, 'unchecked');
    expect(errors.map((x) => x.message)).toEqual(
      ['leases', 'identities'].map((role) => expect.stringMatching(new RegExp(`^options for lease "unchecked": multiRegion not checked: DescribeTable of the ${role} table "t-multi-region-\\w+-${role}" failed \\(AccessDeniedException: .*\\); allow dynamodb:DescribeTable on it`))),
    );
    c.destroy();
  });
  /** A legacy global table's answer for the table named `suffix`; for any other, the answer AWS gives a table that is not one. */
  const legacyOnly = (suffix: string) => (name: string) =>
    name.endsWith(suffix) ? legacyGlobal(name) : Object.assign(new Error(`Global table not found: Global table with name: '${name}' does not exist.`), { name: 'GlobalTableNotFoundException' });

  it('a 2017.11.29 global table (DescribeTable lists no replicas, DescribeGlobalTable finds it): run() rejects naming multiRegion and its replicas, and nothing is written', async () => {
    const { client: c, sent } = client(undefined, legacyOnly('-leases'));
    const e = elector(c, 'legacy');
    const stop = new AbortController();
    void e.ready.then(() => stop.abort(), () => undefined); // started: stopped again, and judged below
    const error = await e.run(stop.signal).then(() => undefined, (x: unknown) => x);
    expect(error).toBeInstanceOf(ValidationError); // before the fix: it started, as on a single-Region table
    expect((error as ValidationError).fields).toEqual(['multiRegion']);
    expect((error as Error).message).toMatch(/multiRegion: the leases table "t-multi-region-\w+-leases" is a global table of version 2017\.11\.29 \(replicas in us-east-1, eu-west-1\)/);
    expect(sent.every((s) => /^Describe(Global)?TableCommand$/.test(s))).toBe(true);
    expect(await leaseRow('legacy')).toBeUndefined();
    c.destroy();
  });

  it('a table no global table of version 2017.11.29 names (GlobalTableNotFoundException): allowed, and onError is told nothing', async () => {
    const { client: c, sent } = client(undefined, legacyOnly('-no-such-suffix'));
    const errors = await ledOnce(c, 'not-legacy');
    // the leases and identities tables, each described, then looked up as a global table
    expect(sent.slice(0, 4).sort()).toEqual(['DescribeGlobalTableCommand', 'DescribeGlobalTableCommand', 'DescribeTableCommand', 'DescribeTableCommand']);
    expect(errors).toEqual([]);
    c.destroy();
  });

  it('DescribeGlobalTable not allowed: onError is told the option is unchecked and what to grant, and the worker starts', async () => {
    const denied = Object.assign(new Error('not authorized to perform: dynamodb:DescribeGlobalTable'), { name: 'AccessDeniedException' });
    const { client: c } = client(undefined, () => denied);
    const errors = await ledOnce(c, 'legacy-unchecked');
    expect(errors.map((x) => x.message)).toEqual(
      ['leases', 'identities'].map((role) => expect.stringMatching(new RegExp(`^options for lease "legacy-unchecked": multiRegion not checked: DescribeGlobalTable of the ${role} table "t-multi-region-\\w+-${role}" failed \\(AccessDeniedException: .*\\); allow dynamodb:DescribeGlobalTable on it`))),
    );
    c.destroy();
  });

  it('on DynamoDB Local itself (UnknownOperationException: it has no global tables): allowed, and onError is told nothing', async () => {
    const { client: c, sent } = client();
    const errors = await ledOnce(c, 'local-only');
    expect(sent).toContain('DescribeGlobalTableCommand');
    expect(errors).toEqual([]);
    c.destroy();
  });
});

describe('singleRegionRefusal: tables of one Region, judged by where the client sends', () => {
  const at = (role: 'leases' | 'candidates' | 'identities', table: TableDescription) => ({ role, name: table.TableName!, table });
  const single = [at('leases', { TableName: 'c-leases' }), at('identities', { TableName: 'c-identities', Replicas: [] })];
  const rows: { name: string; tables: ReturnType<typeof at>[]; region: string | undefined; refused: RegExp | undefined }[] = [
    { name: 'on this machine (DynamoDB Local): allowed', tables: single, region: undefined, refused: undefined },
    { name: "AWS's endpoint of us-west-2 (a witness Region, a fourth one): refused, naming each table and the Region", tables: single, region: 'us-west-2', refused: /^the leases table "c-leases" and the identities table "c-identities" have no replicas in Region us-west-2, where the client sends: tables of that Region alone\. .*two leaders for one lease name/ },
    { name: 'one table', tables: [single[0]!], region: 'us-west-2', refused: /^the leases table "c-leases" has no replicas in Region us-west-2, where the client sends: a table of that Region alone\./ },
    { name: 'a table with replicas (multiRegionMismatch judges them)', tables: [at('leases', { TableName: 'c-leases', Replicas: replicas('us-east-1', 'us-east-2'), MultiRegionConsistency: 'STRONG' }), single[1]!], region: 'us-west-2', refused: undefined },
  ];
  it.each(rows)('$name', ({ tables, region, refused }) => {
    const why = singleRegionRefusal(tables, region);
    if (refused === undefined) expect(why).toBeUndefined();
    else {
      expect(why).toMatch(refused);
      expect(why).toMatch(/Point the client at one of the tables' replica Regions \(the `replicas` of the Conclave construct's `regions`; its witness holds no table\), or drop multiRegion for tables of one Region \(multiRegion allows single-Region tables only on an endpoint on this machine: DynamoDB Local at localhost or 127\.0\.0\.1\)$/);
    }
  });
});

describe("the start-up check through AWS's endpoint of a Region (answered here: nothing leaves the machine)", () => {
  /**
   * A client of AWS's endpoint in us-west-2 (or `config`'s), whose DescribeTable of a table is
   * answered by `describe` and DescribeGlobalTable by `global`, else GlobalTableNotFoundException (the
   * answer for a table no legacy global table names); with `firstLook`, a GetItem of the lease by
   * "no row" (withLease's first look), or by that error; any other request aborts `stop` and fails, unsent.
   */
  function awsClient(describe: (name: string) => TableDescription | Error, stop: AbortController, config: { endpoint?: string } = {}, global?: Error, firstLook: boolean | Error = false): { client: DynamoDBClient; sent: string[] } {
    const c = new DynamoDBClient({ region: 'us-west-2', credentials: { accessKeyId: 'test', secretAccessKey: 'test' }, maxAttempts: 1, ...config });
    const sent: string[] = [];
    c.middlewareStack.add(
      (_next, context) => async (args) => {
        const command = context.commandName ?? '?';
        sent.push(command);
        const input = args.input as { TableName?: string; GlobalTableName?: string };
        let answer: object | Error;
        if (command === 'DescribeTableCommand') {
          const table = describe(input.TableName!);
          answer = table instanceof Error ? table : { Table: table };
        } else if (command === 'DescribeGlobalTableCommand') answer = global ?? new GlobalTableNotFoundException({ message: `Global table not found: Global table with name: '${input.GlobalTableName}' does not exist.`, $metadata: { httpStatusCode: 400, requestId: 'answered-here' } });
        else if (firstLook && command === 'GetItemCommand' && input.TableName?.endsWith('-leases') && !stop.signal.aborted) answer = firstLook instanceof Error ? firstLook : {}; // withLease's first look: no lease row
        else {
          stop.abort(); // started: what the check is there to prevent
          answer = new Error(`${command} not sent: this test answers only the start-up check`);
        }
        if (answer instanceof Error) throw answer;
        return { output: { $metadata: { httpStatusCode: 200, requestId: 'answered-here' }, ...answer }, response: undefined } as Awaited<ReturnType<typeof _next>>;
      },
      { step: 'initialize', name: 'answeredHere' },
    );
    return { client: c, sent };
  }
  const elector = (c: DynamoDBClient, leaseName: string) =>
    new LeaderElector({ client: c, tables: 'conclave', leaseName, identity: 'w1', mode: 'NoCoordination', multiRegion: true, platform: 'none', onError: () => undefined, callbacks: { onStartedLeading: () => undefined } });

  it.each([
    { name: "AWS's endpoint of the client's Region", config: {} },
    { name: 'an endpoint given off this machine', config: { endpoint: 'https://dynamodb.us-west-2.amazonaws.com' } },
  ])('single-Region tables (a witness or fourth Region holding an earlier stack\'s tables by the name), $name: run() rejects naming multiRegion, the tables, the Region and the fix; nothing but the check is sent', async ({ config }) => {
    const stop = new AbortController();
    const { client: c, sent } = awsClient((TableName) => ({ TableName, TableStatus: 'ACTIVE' }), stop, config);
    const e = elector(c, 'jobs');
    const error = await e.run(stop.signal).then(() => undefined, (x: unknown) => x);
    // before the fix: run() started (no error; the lease read sent), beside the MRSC tables' election
    expect(error).toBeInstanceOf(ValidationError);
    expect((error as ValidationError).fields).toEqual(['multiRegion']);
    expect((error as Error).message).toMatch(/^invalid options for lease "jobs": multiRegion: the leases table "conclave-leases" and the identities table "conclave-identities" have no replicas in Region us-west-2, where the client sends/);
    expect((error as Error).message).toMatch(/Point the client at one of the tables' replica Regions .*or drop multiRegion for tables of one Region/);
    expect(sent.every((s) => /^Describe(Global)?TableCommand$/.test(s))).toBe(true);
    c.destroy();
  });

  it('withLease: rejects with the same ValidationError, without running the function', async () => {
    const stop = new AbortController();
    const { client: c, sent } = awsClient((TableName) => ({ TableName, TableStatus: 'ACTIVE' }), stop, {}, undefined, true);
    let ran = false;
    const error = await withLease('jobs', async () => (ran = true), { client: c, tables: 'conclave', identity: 'r1', mode: 'NoCoordination', multiRegion: true, platform: 'none', signal: stop.signal }).catch((x: unknown) => x);
    expect(error).toBeInstanceOf(ValidationError); // before the fix: it took the lease (its write refused here) and would have run
    expect((error as Error).message).toMatch(/multiRegion: the leases table "conclave-leases" and the identities table "conclave-identities" have no replicas in Region us-west-2/);
    expect(ran).toBe(false);
    expect(sent.every((s) => /^(Describe(Global)?Table|GetItem)Command$/.test(s))).toBe(true);
    c.destroy();
  });

  it('DescribeGlobalTable not allowed (grantWorker does not grant it): refused all the same, the tables named single-Region or of version 2017.11.29 (neither is MRSC); onError told nothing', async () => {
    const stop = new AbortController();
    const denied = Object.assign(new Error('not authorized to perform: dynamodb:DescribeGlobalTable'), { name: 'AccessDeniedException', $metadata: { httpStatusCode: 400, requestId: 'answered-here' } });
    const { client: c, sent } = awsClient((TableName) => ({ TableName, TableStatus: 'ACTIVE' }), stop, {}, denied);
    const errors: Error[] = [];
    const e = new LeaderElector({ client: c, tables: 'conclave', leaseName: 'jobs', identity: 'w1', mode: 'NoCoordination', multiRegion: true, platform: 'none', onError: (x) => void errors.push(x), callbacks: { onStartedLeading: () => undefined } });
    const error = await e.run(stop.signal).then(() => undefined, (x: unknown) => x);
    // before: "multiRegion not checked" told to onError, and the worker started
    expect(error).toBeInstanceOf(ValidationError);
    expect((error as Error).message).toMatch(/multiRegion: the leases table "conclave-leases" and the identities table "conclave-identities" have no replicas in Region us-west-2, where the client sends: tables of that Region alone \(or a global table of version 2017\.11\.29, which DescribeTable shows so too and is no MRSC table either: DescribeGlobalTable of "conclave-leases" failed, AccessDeniedException: not authorized/);
    expect(errors).toEqual([]);
    expect(sent.every((s) => /^Describe(Global)?TableCommand$/.test(s))).toBe(true);
    c.destroy();
  });

  it("no leases table in the client's Region (the witness Region, say): run()'s TableNotFoundError says the client must send to a replica Region", async () => {
    const stop = new AbortController();
    const { client: c } = awsClient(() => new ResourceNotFoundException({ message: 'Requested resource not found', $metadata: { httpStatusCode: 400, requestId: 'answered-here' } }), stop);
    const error = await elector(c, 'jobs').run(stop.signal).then(() => undefined, (x: unknown) => x);
    expect(error).toBeInstanceOf(TableNotFoundError);
    // before the fix: only "create them: ... `cdk deploy` in AWS"
    expect((error as Error).message).toMatch(/Under `multiRegion` the client must send to one of the tables' replica Regions \(the `replicas` of the Conclave construct's `regions`; its witness Region holds no table\), and it sends to us-west-2\. /);
    c.destroy();
  });

  // found by a review (2026-12-07, tenth): withLease's first read met the missing table before any check, and its error gave no such hint
  it("withLease, no leases table in the client's Region: its TableNotFoundError says the same, its function not run", async () => {
    const stop = new AbortController();
    const notFound = () => new ResourceNotFoundException({ message: 'Requested resource not found', $metadata: { httpStatusCode: 400, requestId: 'answered-here' } });
    let ran = false;
    const run = async (multiRegion: boolean) => {
      const { client: c } = awsClient(notFound, stop, {}, undefined, notFound());
      const error = await withLease('jobs', async () => (ran = true), { client: c, tables: 'conclave', identity: 'r1', mode: 'NoCoordination', multiRegion, platform: 'none', signal: stop.signal }).catch((x: unknown) => x);
      c.destroy();
      expect(error).toBeInstanceOf(TableNotFoundError);
      expect((error as Error).message).toMatch(/^withLease of lease "jobs": a table it uses does not exist/);
      return (error as Error).message;
    };
    // before: only "create them: ... `cdk deploy` in AWS"
    expect(await run(true)).toMatch(/Under `multiRegion` the client must send to one of the tables' replica Regions \(the `replicas` of the Conclave construct's `regions`; its witness Region holds no table\), and it sends to us-west-2\. /);
    expect(await run(false)).not.toMatch(/multiRegion/); // without it: no such hint
    expect(ran).toBe(false);
  });

  it('on DynamoDB Local, a missing leases table under multiRegion: TableNotFoundError as without it (no Regions there)', async () => {
    const c = localClient(inject('ddbEndpoint'));
    const error = await new LeaderElector({ client: c, tables: 'no-such-multi-region', leaseName: 'jobs', identity: 'w1', mode: 'NoCoordination', multiRegion: true, platform: 'none', onError: () => undefined, callbacks: { onStartedLeading: () => undefined } })
      .run(new AbortController().signal)
      .then(() => undefined, (x: unknown) => x);
    expect(error).toBeInstanceOf(TableNotFoundError);
    expect((error as Error).message).not.toMatch(/multiRegion/);
    c.destroy();
  });
});

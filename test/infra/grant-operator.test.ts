/**
 * grantOperator: what the `conclave` CLI sends, on the tables' ARNs only, and cdk-nag clean in an
 * app checked as the README recommends — where the workaround it replaces, grantReadWriteData,
 * fails synth (AwsSolutions-IAM5 on `index/*`).
 */
import { Stack } from 'aws-cdk-lib';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as kms from 'aws-cdk-lib/aws-kms';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { KEY_READ, KEY_WRITE, type TableRole } from '../../infra/access.js';
import { Conclave } from '../../infra/conclave.js';
import { OPERATOR_ACCESS } from '../../infra/operator.js';
import { SESSION_COMPONENT } from '../../lib/schemas/session-partition.js';
import { cliContext, type CliContext } from '../../lib/cli/context.js';
import { describeLease } from '../../lib/cli/describe.js';
import { getCandidates, getLeases } from '../../lib/cli/get.js';
import { leader } from '../../lib/cli/leader.js';
import { setLocations, setStrategy } from '../../lib/cli/lease-writes.js';
import { preempt, setPriority } from '../../lib/cli/priority.js';
import { release } from '../../lib/cli/release.js';
import { manualClock } from '../../lib/clock.js';
import { CandidateStore } from '../../lib/stores/candidate-store.js';
import { IdentityStore } from '../../lib/stores/identity-store.js';
import { LeaseStore } from '../../lib/stores/lease-store.js';
import { scripted } from '../cli/harness.js';
import { MIN, NOW, SEC, cand } from '../fixtures.js';
import { testTables, type TestTables } from '../support.js';
import { grantedRole, recordingClient, type GrantedRole } from './iam.js';
import { buildAssets, getAtt, logicalId, metadataAcknowledgements, statementsOf, synth, unacknowledged, type Statement, type Synthesized } from './support.js';

beforeAll(buildAssets);

const operatorRole = (scope: Stack) => new iam.Role(scope, 'Operator', { assumedBy: new iam.AccountRootPrincipal() });

describe('grantOperator', () => {
  let s: Synthesized<Stack>;
  let statements: Statement[];
  let arn: (r: TableRole) => unknown;
  let success = false;

  beforeAll(() => {
    s = synth((app) => {
      const stack = new Stack(app, 'Operators');
      const c = new Conclave(stack, 'Conclave');
      const role = operatorRole(stack);
      success = c.grantOperator(role).success;
      arn = (r) => getAtt(logicalId(stack, c.tables[r]));
      return stack;
    });
    statements = statementsOf(s.template, logicalId(s.stack, s.stack.node.findChild('Operator')));
  });
  afterAll(() => s?.cleanup());

  it("grants exactly the CLI's actions, on the three tables' ARNs and nothing else", () => {
    expect(success).toBe(true);
    const on = (r: TableRole) => [...new Set(statements.filter((x) => x.Resource.some((res) => JSON.stringify(res) === JSON.stringify(arn(r)))).flatMap((x) => x.Action))].sort();
    expect(on('leases')).toEqual(['dynamodb:DescribeTable', 'dynamodb:GetItem', 'dynamodb:Scan', 'dynamodb:UpdateItem']);
    expect(on('candidates')).toEqual(['dynamodb:DescribeTable', 'dynamodb:GetItem', 'dynamodb:Query', 'dynamodb:Scan', 'dynamodb:UpdateItem']);
    expect(on('identities')).toEqual(['dynamodb:DescribeTable', 'dynamodb:GetItem', 'dynamodb:Query', 'dynamodb:UpdateItem']);
    expect(OPERATOR_ACCESS.leases).toEqual(['dynamodb:GetItem', 'dynamodb:Scan', 'dynamodb:UpdateItem']);
    // every resource is one of the tables: no index ARN, no `*`, no other action anywhere
    const tables = (['leases', 'candidates', 'identities'] as const).map((r) => JSON.stringify(arn(r)));
    for (const st of statements) {
      expect(st.Effect).toBe('Allow');
      for (const res of st.Resource) expect(tables).toContain(JSON.stringify(res));
      for (const a of st.Action) expect(a).not.toMatch(/\*|PutItem|DeleteItem|Batch|CreateTable|DeleteTable|UpdateTimeToLive|ListTables/);
    }
    expect(JSON.stringify(statements)).not.toContain('/index/');
  });

  it('keeps the identities table to the session partitions', () => {
    const rows = statements.filter((x) => x.Action.includes('dynamodb:UpdateItem') && JSON.stringify(x.Resource) === JSON.stringify([arn('identities')]));
    expect(rows).toHaveLength(1);
    expect(rows[0]!.Condition).toEqual({ 'ForAllValues:StringLike': { 'dynamodb:LeadingKeys': [SESSION_COMPONENT, `${SESSION_COMPONENT}:*`] }, Null: { 'dynamodb:LeadingKeys': 'false' } });
  });

  it('synthesizes with cdk-nag clean, nothing acknowledged for it (no key)', () => {
    expect(unacknowledged(s.report)).toEqual([]);
    expect(metadataAcknowledgements(s.stack.node.findChild('Operator'))).toEqual([]);
  });

  it("the workaround it replaces, grantReadWriteData, fails cdk-nag (AwsSolutions-IAM5 on the tables' indexes)", () => {
    const w = synth(
      (app) => {
        const stack = new Stack(app, 'Workaround');
        const c = new Conclave(stack, 'Conclave');
        const role = operatorRole(stack);
        for (const t of Object.values(c.tables)) t.grantReadWriteData(role);
        return stack;
      },
      { expectFindings: true },
    );
    try {
      expect(unacknowledged(w.report).filter((f) => f.startsWith('AwsSolutions-IAM5') && f.includes('Operator'))).not.toEqual([]);
    } finally {
      w.cleanup();
    }
  });
});

describe('grantOperator with an encryption key', () => {
  it('adds the key actions on that key, their wildcards acknowledged on the role; cdk-nag clean', () => {
    let keyId = '';
    const s = synth((app) => {
      const stack = new Stack(app, 'KeyedOperators', { env: { region: 'eu-west-1' } });
      const key = new kms.Key(stack, 'Key', { enableKeyRotation: true });
      const c = new Conclave(stack, 'Conclave', { encryptionKey: key });
      c.grantOperator(operatorRole(stack));
      keyId = logicalId(stack, key);
      return stack;
    });
    try {
      const statements = statementsOf(s.template, logicalId(s.stack, s.stack.node.findChild('Operator')));
      const onKey = statements.filter((x) => JSON.stringify(x.Resource) === JSON.stringify([getAtt(keyId)]));
      expect([...new Set(onKey.flatMap((x) => x.Action))].sort()).toEqual([...KEY_READ, ...KEY_WRITE].sort());
      expect(unacknowledged(s.report)).toEqual([]);
      const acks = metadataAcknowledgements(s.stack.node.findChild('Operator')).map((a) => a.id).sort();
      expect(acks).toEqual(['AwsSolutions-IAM5[Action::kms:GenerateDataKey*]', 'AwsSolutions-IAM5[Action::kms:ReEncrypt*]']);
    } finally {
      s.cleanup();
    }
  });
});

describe('grantOperator and the CLI on DynamoDB Local', () => {
  let t: TestTables;
  let g: GrantedRole;
  beforeAll(async () => {
    t = await testTables('grant-operator');
    g = grantedRole('CliOperators', 'ec2.amazonaws.com', t.names, (c, role) => void c.grantOperator(role));
  });
  afterAll(async () => {
    g?.s.cleanup();
    await t?.drop();
  });

  it('lets through every request the commands send: reads, writes, and release marking the session row', async () => {
    const LEASE = 'nightly-report';
    await new LeaseStore(t.client, t.names.leases).write(LeaseStore.readOf(LEASE, undefined), {
      set: { holderIdentity: 'w1', holderInstance: 'w1_1@p1', session: 's-live', acquireTime: NOW - 10 * MIN, renewTime: NOW - SEC, leaseDurationSeconds: 15, leaseTransitions: 1, fencingToken: 42 },
    });
    await new IdentityStore(t.client, t.names.identities).write({ key: { component: 'conclave-session', name: 's-live' }, item: undefined, revision: 0 }, { set: { holderIdentity: 's-live_1', process: 'p1', hostname: 'web-1', leaseDurationSeconds: 15, acquireTime: NOW - 10 * MIN, renewTime: NOW - SEC } });
    for (const name of ['w1', 'w2']) {
      const { leaseName: _l, name: _n, revision: _r, ...set } = cand(name, '1.31.0', '1.31.0', { leaseName: LEASE, renewTime: NOW - SEC, session: 's-live' });
      await new CandidateStore(t.client, t.names.candidates).write({ key: { leaseName: LEASE, name }, item: undefined, revision: 0 }, { set });
    }
    const { client, requests } = recordingClient(inject('ddbEndpoint'), t.names);
    const clock = manualClock(NOW);
    const out: string[] = [];
    const ctx: CliContext = cliContext(client, { tablePrefix: 'unused', tables: t.names, endpoint: inject('ddbEndpoint') }, { clock, sink: { out: (l) => out.push(l), err: (l) => out.push(l), color: false }, output: 'table', confirm: { yes: true, interactive: false, ask: async () => undefined } });
    const fresh = (): CliContext => ({ ...ctx, progress: {} });
    try {
      await getLeases(fresh());
      await getCandidates(fresh(), {});
      await getCandidates(fresh(), { lease: LEASE });
      await describeLease(fresh(), { lease: LEASE });
      await leader(fresh(), { lease: LEASE });
      await setPriority(fresh(), { lease: LEASE, candidate: 'w2', priority: 5, for: 10 * MIN, clear: false });
      await preempt(fresh(), { lease: LEASE, to: 'w2', for: 10 * MIN });
      await setStrategy(fresh(), { lease: LEASE, strategy: 'OldestEmulationVersion', clear: false });
      await setLocations(fresh(), { lease: LEASE, locations: ['us-east-1a'], none: false, clear: false });
      await release(fresh(), { lease: LEASE, force: true }, scripted([], clock));
    } finally {
      client.destroy();
    }
    const show = (r: (typeof requests)[number]) => `${r.action} ${g.roleOf(r.table)} ${r.leadingKeys.join(' ')}`;
    const refused = requests.filter((r) => !g.allowed(r)).map(show);
    expect(refused).toEqual([]);
    // release wrote the session row (the identities table's UpdateItem) and the lease row
    expect(requests.map(show)).toEqual(expect.arrayContaining(['dynamodb:UpdateItem identities conclave-session', `dynamodb:UpdateItem leases ${LEASE}`, `dynamodb:UpdateItem candidates ${LEASE}`, 'dynamodb:Scan leases ', 'dynamodb:Scan candidates ', `dynamodb:Query candidates ${LEASE}`]));
    // every action the grant names on the items was sent by some command
    const sent = new Set(requests.map((r) => `${g.roleOf(r.table)} ${r.action}`));
    for (const [role, actions] of Object.entries(OPERATOR_ACCESS)) for (const a of actions) if (!(role === 'identities' && a === 'dynamodb:Query')) expect(sent, `${role} ${a}`).toContain(`${role} ${a}`);
  });
});

/**
 * The push path's AWS side (infra/push.ts, infra/grants.ts): IoT Core's data endpoint looked up at
 * deploy time, the lease stream's function given it with iot:Publish on the deployment's wake
 * topics, the `PushEndpoint` output, and grantWorker's IoT actions. The grants are judged request by
 * request, as worker-policy.test.ts judges DynamoDB's: a PushChannel's connection, subscription and
 * wakes on a recording MQTT broker, and the lease stream's publishes, against the synthesized
 * policies (IoT Core checks Connect, Subscribe, Publish and Receive; here test/infra/iam.ts does).
 */
import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import { IoTDataPlaneClient } from '@aws-sdk/client-iot-data-plane';
import { App, Stack, Validations } from 'aws-cdk-lib';
import { Match, Template } from 'aws-cdk-lib/assertions';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import { Aedes } from 'aedes';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createWebSocketStream, WebSocketServer } from 'ws';
import { ENDPOINT_LOOKUP, FUNCTION_ACCESS, WAKE_PUBLISH, WORKER_PUSH_ACCESS } from '../../infra/access.js';
import { addConclaveStack } from '../../infra/app/app.js';
import { Conclave } from '../../infra/conclave.js';
import type { ConclaveStack } from '../../infra/stack.js';
import { iotWaker } from '../../lib/functions/wake.js';
import { hashedPushTopic, MAX_PLAIN_CLIENT_ID_TABLE, plainPushTopic, processTopic, pushClientIdPrefix, pushTopic } from '../../lib/schemas/push.js';
import { ValidationError } from '../../lib/schemas/validation.js';
import { PushChannel } from '../../lib/sdk/push-channel.js';
import { Session } from '../../lib/sdk/session.js';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { Wake } from '../../lib/sdk/push.js';
import { ENV, wiring, type FunctionName } from '../../lib/wiring.js';
import { waitFor } from '../sdk/harness.js';
import { iotAllows, resolveArn, TEST_ENV, type IotRequest } from './iam.js';
import { buildAssets, getAtt, ids, logicalId, metadataAcknowledgements, statementsOf, synth, unacknowledged, type Statement, type Synthesized } from './support.js';

beforeAll(buildAssets);

const names = Object.keys(wiring) as FunctionName[];
const IOT = /^iot:/;
const iotStatements = (st: Statement[]) => st.filter((s) => s.Action.some((a) => IOT.test(a)));
/** What a role may do on IoT Core: `action resource` with the template's ARNs resolved (`refs`: Refs to names). */
const iotGrants = (st: Statement[], refs: Record<string, string> = {}) =>
  iotStatements(st)
    .flatMap((s) => s.Action.flatMap((a) => s.Resource.map((r) => `${a} ${resolveArn(r, { 'AWS::Partition': 'aws', 'AWS::Region': 'r', 'AWS::AccountId': 'a', ...refs }).replace(/^arn:aws:iot:r:a:/, '')}`)))
    .sort();
const taskRole = (scope: Stack, id: string) => new iam.Role(scope, id, { assumedBy: new iam.ServicePrincipal('ecs-tasks.amazonaws.com') });
const SLASHED = 'team/reports:nightly';
const LONG = `report-${'x'.repeat(240)}`; // its plain topic is over IoT Core's 256 bytes: the hashed form
const LONG_TABLE = `leases-${'y'.repeat(MAX_PLAIN_CLIENT_ID_TABLE)}`; // no room for a UUID after conclave-<table>:, the hashed client id prefix


/** The roles of the functions that wake workers (FUNCTION_ACCESS publishWakes), and the wake topics' forms each may publish on. */
const WAKING_ROLES = ['CandidateStreamRole', 'ElectionTimerRole', 'LeaseStreamRole', 'PlatformRole'];
const WAKE_TOPICS = ['lease', 'lease-hash', 'process'];
describe('the app with the push path (the default)', () => {
  let s: Synthesized<ConclaveStack>;
  let t: Template;
  let c: Conclave;
  let lookupId: string;

  beforeAll(() => {
    s = synth(addConclaveStack);
    t = s.template;
    c = s.stack.conclave;
    lookupId = Object.keys(t.findResources('Custom::ConclaveIotEndpoint'))[0]!;
  });
  afterAll(() => s?.cleanup());

  it("looks up IoT Core's data endpoint (iot:Data-ATS) when the stack deploys, with the Lambda runtime's own SDK", () => {
    expect(Object.keys(t.findResources('Custom::ConclaveIotEndpoint'))).toHaveLength(1);
    const props = t.toJSON()['Resources'][lookupId].Properties;
    const call = { service: 'Iot', action: 'DescribeEndpoint', parameters: { endpointType: 'iot:Data-ATS' }, physicalResourceId: { responsePath: 'endpointAddress' }, outputPaths: ['endpointAddress'] };
    // created and looked up again at every update; a delete has nothing to undo
    expect(JSON.parse(props.Create)).toEqual(call);
    expect(JSON.parse(props.Update)).toEqual(call);
    expect(props.Delete).toBeUndefined();
    expect(props.InstallLatestAwsSdk).toBe(false);
  });

  it('runs the lookup with iot:DescribeEndpoint alone, as a function with its own role and log group (no AWSLambdaBasicExecutionRole)', () => {
    const provider = Object.entries(t.findResources('AWS::Lambda::Function')).find(([id]) => id.startsWith('AWS679f53fac002430cb0da5b7982bd2287'))!;
    expect(provider, 'the AwsCustomResource provider').toBeDefined();
    const roleId = (provider[1]['Properties'].Role as { 'Fn::GetAtt': string[] })['Fn::GetAtt'][0]!;
    const role = t.toJSON()['Resources'][roleId];
    expect(role.Properties.ManagedPolicyArns).toBeUndefined();
    expect(provider[1]['Properties'].LoggingConfig).toEqual({ LogGroup: { Ref: expect.stringMatching(/^ConclavePushEndpointLookupLogs/) } });
    const st = statementsOf(t, roleId);
    expect(st.filter((x) => x.Action.some((a) => !a.startsWith('logs:')))).toEqual([{ Effect: 'Allow', Action: [...ENDPOINT_LOOKUP], Resource: ['*'] }]);
    t.hasResourceProperties('AWS::Logs::LogGroup', { RetentionInDays: 30 });
  });

  it("gives IoT Core's endpoint (CONCLAVE_PUSH_ENDPOINT, https://) to the functions that wake workers: every one but the tick", () => {
    expect(names.filter((n) => FUNCTION_ACCESS[n].publishWakes).sort()).toEqual(['candidateStream', 'electionTimer', 'leaseStream', 'platform']);
    const id = ids(s.stack, c);
    for (const n of names) {
      const vars = t.toJSON()['Resources'][id.fn(n)].Properties.Environment.Variables as Record<string, unknown>;
      expect(vars[ENV.pushEndpoint], n).toEqual(FUNCTION_ACCESS[n].publishWakes ? { 'Fn::Join': ['', ['https://', getAtt(lookupId, 'endpointAddress')]] } : undefined);
    }
  });

  it("grants iot:Publish on this deployment's wake topics, both forms, and its process topics to those functions, and no IoT action to the others", () => {
    const id = ids(s.stack, c);
    for (const n of names) {
      expect(iotGrants(statementsOf(t, id.role(n))), n).toEqual(
        FUNCTION_ACCESS[n].publishWakes ? WAKE_PUBLISH.flatMap((a) => [`${a} topic/conclave/conclave-leases/lease-hash/*`, `${a} topic/conclave/conclave-leases/lease/*`, `${a} topic/conclave/conclave-leases/process/*`]).sort() : [],
      );
    }
  });

  it('outputs PushEndpoint, wss://<endpoint>/mqtt: what workers pass to PushChannel, and the construct’s pushEndpoint', () => {
    const wss = { 'Fn::Join': ['', ['wss://', getAtt(lookupId, 'endpointAddress'), '/mqtt']] };
    t.hasOutput('PushEndpoint', { Value: wss, Description: Match.stringLikeRegexp('PushChannel') });
    expect(s.stack.resolve(c.pushEndpoint)).toEqual(wss);
  });

  it('acknowledges the findings the push path raises, each where it arises, by its exact id, and why', () => {
    expect(unacknowledged(s.report)).toEqual([]);
    const iot = metadataAcknowledgements(s.stack).filter((a) => a.id.startsWith('AwsSolutions-IAM5'));
    expect(iot.map((a) => `${a.at} ${a.id}`).sort()).toEqual(
      [
        'Conclave/Conclave/PushEndpoint AwsSolutions-IAM5[Resource::*]',
        ...WAKING_ROLES.flatMap((r) => WAKE_TOPICS.map((x) => `Conclave/Conclave/${r} AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:iot:<AWS::Region>:<AWS::AccountId>:topic/conclave/conclave-leases/${x}/*]`)),
      ].sort(),
    );
    expect(iot.find((a) => a.id.endsWith('[Resource::*]'))!.reason).toMatch(/no resource-level permissions/);
    for (const a of iot) expect(a.reason.length, a.id).toBeGreaterThan(40);
  });

  it('acknowledges the lookup function’s runtime (AwsSolutions-L1), which aws-cdk-lib chooses: no finding here, one on the peer range’s floor', () => {
    const l1 = metadataAcknowledgements(s.stack).filter((a) => a.id.endsWith('AwsSolutions-L1'));
    const lookup = l1.filter((a) => a.at === 'Conclave/AWS679f53fac002430cb0da5b7982bd2287');
    expect(lookup).toHaveLength(1);
    expect(lookup[0]!.reason).toMatch(/aws-cdk-lib chooses its runtime/);
  });

  it("acknowledges each of Conclave's own functions' runtime (AwsSolutions-L1): no finding here, one with an aws-cdk-lib that knows a newer Node.js (2.278: Node.js 26; the documented cdk-nag recipe failed there)", () => {
    const fns = s.stack.node.findAll().filter((c): c is lambda.Function => c instanceof lambda.Function && c.node.path.startsWith('Conclave/Conclave/'));
    expect(fns.length).toBeGreaterThanOrEqual(5);
    const l1 = metadataAcknowledgements(s.stack).filter((a) => a.id === 'AwsSolutions-L1');
    expect(l1.map((a) => a.at).sort()).toEqual(fns.map((f) => f.node.path).sort());
    for (const a of l1) expect(a.reason).toMatch(/^Conclave's functions run on nodejs24\.x, the runtime their bundles are built and tested for/);
  });

  it('the findings it acknowledges are real: without the acknowledgements, cdk-nag reports exactly these', () => {
    // every acknowledgement made while the stack is built goes under another metadata key, which cdk-nag does not read
    const keyed = Validations as unknown as { ACKNOWLEDGED_RULES_METADATA_KEY: string };
    const key = keyed.ACKNOWLEDGED_RULES_METADATA_KEY;
    const bare = synth((app) => {
      keyed.ACKNOWLEDGED_RULES_METADATA_KEY = 'test:set-aside';
      try {
        return addConclaveStack(app);
      } finally {
        keyed.ACKNOWLEDGED_RULES_METADATA_KEY = key;
      }
    }, { expectFindings: true });
    try {
      expect(unacknowledged(bare.report).filter((f) => !f.startsWith('AwsSolutions-SQS3 ')).sort()).toEqual(
        [
          'AwsSolutions-IAM5[Resource::*] Conclave/Conclave/PushEndpoint/CustomResourcePolicy/Resource',
          ...WAKING_ROLES.flatMap((r) => WAKE_TOPICS.map((x) => `AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:iot:<AWS::Region>:<AWS::AccountId>:topic/conclave/conclave-leases/${x}/*] Conclave/Conclave/${r}/DefaultPolicy/Resource`)),
        ].sort(),
      );
    } finally {
      bare.cleanup();
    }
  });
});

describe('without the push path', () => {
  it('-c push=false: no lookup, no IoT grant, no environment variable, no output; still cdk-nag clean', () => {
    const s = synth((app) => {
      app.node.setContext('push', 'false');
      const stack = addConclaveStack(app);
      stack.conclave.grantWorker(taskRole(stack, 'Task'), { allLeases: true, allComponents: true });
      return stack;
    });
    try {
      const json = JSON.stringify(s.template.toJSON());
      expect(json).not.toMatch(/iot|Custom::|AWS679f53fa|PushEndpoint|CONCLAVE_PUSH_ENDPOINT/i);
      expect(s.stack.conclave.pushEndpoint).toBeUndefined();
      expect(unacknowledged(s.report)).toEqual([]);
      // (each function's runtime acknowledged, as above)
      expect(metadataAcknowledgements(s.stack).filter((a) => !a.id.endsWith('AwsSolutions-SQS3') && a.id !== 'AwsSolutions-L1')).toEqual([]);
    } finally {
      s.cleanup();
    }
  });

  it('push: false in the construct leaves out the same', () => {
    const stack = new Stack(new App(), 'NoPush');
    const c = new Conclave(stack, 'Conclave', { push: false });
    c.grantWorker(taskRole(stack, 'Task'), { leaseNames: ['jobs'], components: [] });
    expect(JSON.stringify(Template.fromStack(stack).toJSON())).not.toMatch(/iot|Custom::|CONCLAVE_PUSH_ENDPOINT/i);
  });

  it('refuses a push value that is not a boolean, naming the prop and the context flag', () => {
    expect(() => new Conclave(new Stack(new App(), 'S'), 'Conclave', { push: 'false' as unknown as boolean })).toThrow(ValidationError);
    expect(() => new Conclave(new Stack(new App(), 'S'), 'Conclave', { push: 'false' as unknown as boolean })).toThrow(/push/);
    const app = new App({ context: { push: 'no' } });
    expect(() => addConclaveStack(app)).toThrow(/-c push=false/);
  });
});

describe("grantWorker's push path", () => {
  let s: Synthesized<Stack>;
  const role: Record<'scoped' | 'any' | 'named' | 'namedAny' | 'longNamed', string> = { scoped: '', any: '', named: '', namedAny: '', longNamed: '' };
  let leasesRef = '';

  beforeAll(() => {
    s = synth((app) => {
      const stack = new Stack(app, 'Workers');
      // table names CloudFormation picks (a token at synth) …
      const generated = new Conclave(stack, 'Generated');
      const scoped = taskRole(stack, 'Scoped');
      const any = taskRole(stack, 'Any');
      generated.grantWorker(scoped, { leaseNames: ['jobs', SLASHED], components: [] });
      generated.grantWorker(any, { allLeases: true, allComponents: true });
      // … and names known at synth (tablePrefix)
      const named = new Conclave(stack, 'Named', { tablePrefix: 'acme' });
      const namedRole = taskRole(stack, 'NamedTask');
      const namedAny = taskRole(stack, 'NamedAny');
      named.grantWorker(namedRole, { leaseNames: ['jobs', SLASHED, LONG], components: [] });
      named.grantWorker(namedAny, { allLeases: true, components: [] });
      // … and a leases table's name too long for conclave-<name>-<uuid> (128 characters)
      const longNamed = new Conclave(stack, 'LongNamed', { tableNames: { leases: LONG_TABLE } });
      const longRole = taskRole(stack, 'LongTask');
      longNamed.grantWorker(longRole, { leaseNames: ['jobs'], components: [] });
      role.scoped = logicalId(stack, scoped);
      role.longNamed = logicalId(stack, longRole);
      role.any = logicalId(stack, any);
      role.named = logicalId(stack, namedRole);
      role.namedAny = logicalId(stack, namedAny);
      leasesRef = logicalId(stack, generated.tables.leases);
      return stack;
    });
  });
  afterAll(() => s?.cleanup());

  const grants = (id: string) => iotGrants(statementsOf(s.template, id), { [leasesRef]: 'T' });
  const on = (actions: readonly string[], resources: string[]) => actions.flatMap((a) => resources.map((r) => `${a} ${r}`));
  const base = (table: string) => [...on(WORKER_PUSH_ACCESS.client, [`client/conclave-${table}:*`]), ...on(WORKER_PUSH_ACCESS.topicfilter, [`topicfilter/conclave/${table}/#`])];

  it('keeps the worker roles free of cdk-nag findings (grantWorker acknowledges the wildcards it adds, on the role)', () => {
    expect(unacknowledged(s.report)).toEqual([]);
    const on = (id: string) => metadataAcknowledgements(s.stack).filter((a) => a.at === `Workers/${id}`).map((a) => a.id.replace(/^.*:(client|topicfilter|topic)\//, '$1/'));
    expect(on('Scoped')).toEqual([`client/conclave-<${leasesRef}>:*]`]);
    expect(on('Any').sort()).toEqual(
      [`client/conclave-<${leasesRef}>:*]`, `topic/conclave/<${leasesRef}>/lease/*]`, `topic/conclave/<${leasesRef}>/lease-hash/*]`, `topic/conclave/<${leasesRef}>/process/*]`, `topicfilter/conclave/<${leasesRef}>/process/*]`].sort(),
    );
  });

  it("leaseNames: Receive and Publish on exactly those leases' topics, a '/' and a ':' URI-encoded as pushTopic does (table name a token: both forms of each)", () => {
    expect(grants(role.scoped)).toEqual(
      [...base('T'), ...on(WORKER_PUSH_ACCESS.topic, ['jobs', SLASHED].flatMap((l) => [`topic/${plainPushTopic('T', l)}`, `topic/${hashedPushTopic('T', l)}`]))].sort(),
    );
    expect(grants(role.scoped)).toContain('iot:Receive topic/conclave/T/lease/team%2Freports%3Anightly');
  });

  it('leaseNames with the table name known at synth: the one topic pushTopic gives each lease (the hashed one for a long name)', () => {
    const topics = ['jobs', SLASHED, LONG].map((l) => `topic/${pushTopic('acme-leases', l)}`);
    expect(topics[2]).toMatch(/^topic\/conclave\/acme-leases\/lease-hash\/[0-9a-f]{64}$/);
    expect(grants(role.named)).toEqual([...base('acme-leases'), ...on(WORKER_PUSH_ACCESS.topic, topics)].sort());
  });

  it("allLeases: every lease's wake topics, both forms, and the process topics (subscribed to one at a time: PushChannel's session)", () => {
    for (const [id, table] of [[role.any, 'T'], [role.namedAny, 'acme-leases']] as const) {
      expect(grants(id)).toEqual(
        [
          ...base(table),
          ...on(WORKER_PUSH_ACCESS.topicfilter, [`topicfilter/conclave/${table}/process/*`]),
          ...on(WORKER_PUSH_ACCESS.topic, [`topic/conclave/${table}/lease/*`, `topic/conclave/${table}/lease-hash/*`, `topic/conclave/${table}/process/*`]),
        ].sort(),
      );
    }
  });

  it('leaseNames: no process topic (it would carry wakes of leases not its own): neither subscribe, receive nor publish there', () => {
    for (const [id, table] of [[role.scoped, 'T'], [role.named, 'acme-leases']] as const) {
      const st = statementsOf(s.template, id);
      for (const r of <IotRequest[]>[
        { action: 'iot:Subscribe', resource: `topicfilter/${processTopic(table, 'p1')}` },
        { action: 'iot:Receive', resource: `topic/${processTopic(table, 'p1')}` },
        { action: 'iot:Publish', resource: `topic/${processTopic(table, 'p1')}` },
      ])
        expect(iotAllows(st, r, { [leasesRef]: 'T' }), `${id} ${r.action}`).toBe(false);
    }
  });

  it("iot:Connect only with this deployment's client ids: conclave-<leases table>:… (a token's name as CloudFormation picks it), the SHA-256 form for a long name", () => {
    const connects = (id: string) => grants(id).filter((g) => g.startsWith('iot:Connect '));
    expect(connects(role.scoped)).toEqual(['iot:Connect client/conclave-T:*']);
    expect(connects(role.named)).toEqual(['iot:Connect client/conclave-acme-leases:*']);
    const long = pushClientIdPrefix(LONG_TABLE);
    expect(long).toMatch(/^conclave-:sha256:[0-9a-f]{32}:$/);
    expect(connects(role.longNamed)).toEqual([`iot:Connect client/${long}*`]);
    // what PushChannel connects with by default fits IoT Core's 128 characters, whatever the name's length
    expect(`${long}${'0'.repeat(36)}`.length).toBeLessThanOrEqual(128);
    expect(`${pushClientIdPrefix(LONG_TABLE.slice(0, MAX_PLAIN_CLIENT_ID_TABLE))}${'0'.repeat(36)}`.length).toBe(128);
    // another deployment's process, or one connecting with the old, unscoped conclave-<uuid>: refused
    const st = statementsOf(s.template, role.named);
    const id = '0b9c5a3e-8f7d-4c1b-9a2e-3d4f5a6b7c8d';
    expect(iotAllows(st, { action: 'iot:Connect', resource: `client/conclave-acme-leases:${id}` })).toBe(true);
    expect(iotAllows(st, { action: 'iot:Connect', resource: `client/conclave-${id}` })).toBe(false);
    expect(iotAllows(st, { action: 'iot:Connect', resource: `client/conclave-other-leases:${id}` })).toBe(false);
    expect(iotAllows(statementsOf(s.template, role.scoped), { action: 'iot:Connect', resource: `client/conclave-acme-leases:${id}` }, { [leasesRef]: 'T' })).toBe(false);
    // nor a deployment whose leases table's name extends this one's (conclave-acme-leases-* matched
    // conclave-acme-leases-eu-<uuid>), nor a long-named one's hashed ids, nor the ids of before (`-`)
    for (const other of ['acme-leases-eu', 'acme-leases.eu', 'acme-leases_eu', LONG_TABLE]) {
      expect(iotAllows(st, { action: 'iot:Connect', resource: `client/${pushClientIdPrefix(other)}${id}` }), other).toBe(false);
    }
    expect(iotAllows(st, { action: 'iot:Connect', resource: `client/conclave-acme-leases-${id}` })).toBe(false);
    // and a table named sha256 meets no hashed id
    expect(pushClientIdPrefix('sha256')).toBe('conclave-sha256:');
    expect(long.startsWith(pushClientIdPrefix('sha256'))).toBe(false);
  });

  it('no conditions, no IoT action beyond Connect, Subscribe, Receive and Publish', () => {
    for (const id of Object.values(role)) {
      const st = iotStatements(statementsOf(s.template, id));
      for (const x of st) expect(x.Condition).toBeUndefined();
      expect([...new Set(st.flatMap((x) => x.Action))].sort()).toEqual(['iot:Connect', 'iot:Publish', 'iot:Receive', 'iot:Subscribe']);
    }
  });
});

/**
 * An MQTT broker on loopback (WebSocket at /mqtt, as local mode's and IoT Core's) that records every
 * request as IoT Core's IAM sees it, and delivers a message only where `mayReceive` says (IoT Core
 * checks iot:Receive per delivery: a subscription to every wake brings only those allowed).
 */
async function recordingBroker(mayReceive: (r: IotRequest) => boolean) {
  const requests: IotRequest[] = [];
  const broker = await Aedes.createBroker({
    authenticate: (client, _u, _p, done) => (requests.push({ action: 'iot:Connect', resource: `client/${client.id}` }), done(null, true)),
    authorizeSubscribe: (_c, sub, done) => (requests.push({ action: 'iot:Subscribe', resource: `topicfilter/${sub.topic}` }), done(null, sub)),
    authorizePublish: (_c, packet, done) => (requests.push({ action: 'iot:Publish', resource: `topic/${packet.topic}` }), done(null)),
    authorizeForward: (_c, packet) => {
      if (packet.topic.startsWith('$SYS')) return packet;
      const r: IotRequest = { action: 'iot:Receive', resource: `topic/${packet.topic}` };
      requests.push(r);
      return mayReceive(r) ? packet : null;
    },
  });
  const wss = new WebSocketServer({ host: '127.0.0.1', port: 0, path: '/mqtt' });
  wss.on('connection', (ws, req) => {
    const stream = createWebSocketStream(ws);
    stream.on('error', () => undefined);
    broker.handle(stream, req);
  });
  await once(wss, 'listening');
  /** A wake as the lease stream's function publishes it (through IoT Core, not an MQTT client: not judged here). */
  const publish = (topic: string, wake: Wake) =>
    new Promise<void>((resolve, reject) => broker.publish({ cmd: 'publish', topic, payload: Buffer.from(JSON.stringify(wake)), qos: 1, retain: false, dup: false }, (e) => (e ? reject(e) : resolve())));
  return {
    endpoint: `ws://127.0.0.1:${(wss.address() as AddressInfo).port}/mqtt`,
    requests,
    publish,
    async stop() {
      for (const ws of wss.clients) ws.terminate();
      await new Promise<void>((resolve) => wss.close(() => resolve()));
      await new Promise<void>((resolve) => broker.close(() => resolve()));
    },
  };
}

describe('what the push path calls is what the policies grant', () => {
  const LEASES = 'push-leases';
  let s: Synthesized<Stack>;
  let worker: Statement[];
  let fleet: Statement[];
  let stream: Statement[];

  beforeAll(() => {
    s = synth((app) => {
      const stack = new Stack(app, 'Judged');
      const c = new Conclave(stack, 'Conclave', { tableNames: { leases: LEASES, candidates: 'push-candidates', identities: 'push-identities' } });
      const task = taskRole(stack, 'Task');
      c.grantWorker(task, { leaseNames: ['jobs', SLASHED, LONG], components: [] });
      const fleetTask = taskRole(stack, 'Fleet');
      c.grantWorker(fleetTask, { allLeases: true, components: [] });
      worker = statementsOf(Template.fromStack(stack), logicalId(stack, task));
      fleet = statementsOf(Template.fromStack(stack), logicalId(stack, fleetTask));
      stream = statementsOf(Template.fromStack(stack), logicalId(stack, c.functions.leaseStream.role!));
      return stack;
    });
  });
  afterAll(() => s?.cleanup());

  it("a worker's PushChannel: its connection, its subscription, the wakes of its leases it receives and sends; a foreign lease's wake is not delivered", async () => {
    const broker = await recordingBroker((r) => iotAllows(worker, r));
    const channel = new PushChannel({ endpoint: broker.endpoint, tables: { leases: LEASES }, onError: () => undefined });
    const stop = new AbortController();
    const run = channel.run(stop.signal);
    try {
      await channel.ready;
      const got: string[] = [];
      for (const lease of ['jobs', SLASHED, LONG, 'payroll']) channel.watch(lease, (w) => void (w && got.push(`${w.by} ${w.lease}`)));
      for (const lease of ['jobs', SLASHED, LONG, 'payroll']) await broker.publish(pushTopic(LEASES, lease), { lease, by: 'stream' });
      channel.wake('jobs', 7); // after a hand-off it wrote (it receives its own wake too)
      await waitFor('the wakes', () => got.length >= 4);
      await broker.publish(pushTopic(LEASES, 'jobs'), { lease: 'jobs', by: 'stream' }); // delivered after any payroll wake would have been
      await waitFor('the last wake', () => got.length >= 5);
      expect(got.sort()).toEqual(['stream jobs', 'stream jobs', `stream ${LONG}`, `stream ${SLASHED}`, 'worker jobs'].sort());

      expect(channel.options.clientId).toMatch(new RegExp(`^conclave-${LEASES}:[0-9a-f-]{36}$`));
      const judged = broker.requests.map((r) => ({ ...r, allowed: iotAllows(worker, r) }));
      expect(judged.map((r) => r.action).sort()).toEqual(['iot:Connect', 'iot:Publish', ...Array<string>(6).fill('iot:Receive'), 'iot:Subscribe'].sort());
      expect(judged.filter((r) => !r.allowed).map((r) => `${r.action} ${r.resource}`)).toEqual([`iot:Receive topic/${pushTopic(LEASES, 'payroll')}`]);
    } finally {
      stop.abort();
      await run;
      await broker.stop();
    }
  });

  /** A PushChannel with a Session (its DynamoDB never reached) on a broker that judges each request by the allLeases worker's grant. */
  async function sessionChannel() {
    const broker = await recordingBroker((r) => iotAllows(fleet, r));
    const client = new DynamoDBClient({ region: 'local', endpoint: 'http://127.0.0.1:1', credentials: { accessKeyId: 'x', secretAccessKey: 'x' } });
    const session = new Session({ client, tables: { leases: LEASES, candidates: 'push-candidates', identities: 'push-identities' } });
    const channel = new PushChannel({ endpoint: broker.endpoint, tables: { leases: LEASES }, session, onError: () => undefined });
    const stop = new AbortController();
    const run = channel.run(stop.signal);
    const close = async () => {
      stop.abort();
      await run;
      await broker.stop();
      client.destroy();
    };
    return { broker, session, channel, close };
  }

  it("an allLeases worker's PushChannel with its Session: one subscription, its own process topic (allowed; a leaseNames role's is refused), and only its process's wakes", async () => {
    const { broker, session, channel, close } = await sessionChannel();
    try {
      await channel.ready;
      const got: string[] = [];
      const mine = `w1_u1@${session.process}`;
      for (const lease of ['jobs', 'payroll']) channel.watch(lease, (w) => void (w && got.push(`${w.by} ${w.lease}`)), mine);
      await broker.publish(processTopic(LEASES, 'another-process'), { lease: 'payroll', by: 'stream' }); // not this process's: never reaches it
      await broker.publish(pushTopic(LEASES, 'payroll'), { lease: 'payroll', by: 'stream' }); // the lease topic: not subscribed
      await broker.publish(processTopic(LEASES, session.process), { lease: 'jobs', by: 'stream' });
      await waitFor('the wake on its process topic', () => got.length >= 1);
      channel.wake('jobs', 8, `w2_u2@another-process`); // a hand-off: the lease topic and the heir's process topic
      await waitFor('the publishes', () => broker.requests.filter((r) => r.action === 'iot:Publish').length >= 2);
      expect(got).toEqual(['stream jobs']);
      const subscribed = broker.requests.filter((r) => r.action === 'iot:Subscribe').map((r) => r.resource);
      expect(subscribed).toEqual([`topicfilter/${processTopic(LEASES, session.process)}`]);
      expect(broker.requests.filter((r) => r.action === 'iot:Publish').map((r) => r.resource).sort()).toEqual([`topic/${pushTopic(LEASES, 'jobs')}`, `topic/${processTopic(LEASES, 'another-process')}`].sort());
      for (const r of broker.requests) expect(iotAllows(fleet, r), `${r.action} ${r.resource}`).toBe(true);
      expect(iotAllows(worker, { action: 'iot:Subscribe', resource: subscribed[0]! })).toBe(false);
    } finally {
      await close();
    }
  });

  it("an allLeases worker's PushChannel with its Session and an elector on no session: that elector's wakes come on the deployment's subscription, which the grant allows (a lease topic's filter it does not)", async () => {
    const { broker, session, channel, close } = await sessionChannel();
    try {
      await channel.ready;
      const got: string[] = [];
      const unwatch = channel.watch('jobs', (w) => void (w && got.push(`${w.by} ${w.lease}`)), 'w1_u1');
      await waitFor('its subscription', () => broker.requests.filter((r) => r.action === 'iot:Subscribe').length >= 2);
      await broker.publish(pushTopic(LEASES, 'jobs'), { lease: 'jobs', by: 'stream' });
      await waitFor('the wake on the lease topic', () => got.length >= 1);
      expect(got).toEqual(['stream jobs']);
      const subscribed = broker.requests.filter((r) => r.action === 'iot:Subscribe').map((r) => r.resource);
      // before the fix: topicfilter/conclave/push-leases/lease/jobs, which IoT Core refuses the role (its `#` is literal in a policy)
      expect(subscribed).toEqual([`topicfilter/${processTopic(LEASES, session.process)}`, `topicfilter/conclave/${LEASES}/#`]);
      for (const r of broker.requests) expect(iotAllows(fleet, r), `${r.action} ${r.resource}`).toBe(true);
      unwatch();
    } finally {
      await close();
    }
  });

  it("a client id of your own must start with the deployment's prefix, conclave-<leases table>: (PushChannel refuses any other)", () => {
    expect(iotAllows(worker, { action: 'iot:Connect', resource: `client/conclave-${LEASES}:reports-1` })).toBe(true);
    expect(iotAllows(worker, { action: 'iot:Connect', resource: 'client/conclave-reports-1' })).toBe(false);
    expect(iotAllows(worker, { action: 'iot:Connect', resource: 'client/reports-1' })).toBe(false);
    expect(new PushChannel({ endpoint: 'ws://127.0.0.1:1/mqtt', tables: { leases: LEASES }, clientId: `conclave-${LEASES}:reports-1` }).options.clientId).toBe(`conclave-${LEASES}:reports-1`);
    expect(iotAllows(worker, { action: 'iot:Connect', resource: `client/conclave-${LEASES}-reports-1` })).toBe(false); // a table named push-leases-reports's, as it was
    expect(() => new PushChannel({ endpoint: 'ws://127.0.0.1:1/mqtt', tables: { leases: LEASES }, clientId: `conclave-${LEASES}-reports-1` })).toThrow(ValidationError);
    expect(() => new PushChannel({ endpoint: 'ws://127.0.0.1:1/mqtt', tables: { leases: LEASES }, clientId: 'conclave-reports-1' })).toThrow(ValidationError);
  });

  it("the lease stream's wakes: Publish on every lease's topic of this deployment, and no other deployment's", async () => {
    const topics: string[] = [];
    const client = new IoTDataPlaneClient({ region: TEST_ENV.region, endpoint: 'https://example-ats.iot.us-east-1.amazonaws.com', credentials: { accessKeyId: 'x', secretAccessKey: 'x' } });
    client.middlewareStack.add(
      () => async (args) => {
        topics.push((args.input as { topic: string }).topic);
        return { output: { $metadata: {} }, response: {} };
      },
      { step: 'initialize', name: 'recordPublish' },
    );
    const wake = iotWaker(client, LEASES);
    for (const lease of ['jobs', SLASHED, LONG, 'payroll']) await wake(lease, 3);
    await wake('jobs', 4, ['p1', 'p2']); // addressed to its candidates' processes
    expect(topics.slice(4).sort()).toEqual([processTopic(LEASES, 'p1'), processTopic(LEASES, 'p2')].sort());
    expect(topics).toHaveLength(6);
    for (const topic of topics) expect(iotAllows(stream, { action: 'iot:Publish', resource: `topic/${topic}` }), topic).toBe(true);
    expect(iotAllows(stream, { action: 'iot:Publish', resource: 'topic/conclave/other-leases/lease/jobs' })).toBe(false);
    expect(iotAllows(stream, { action: 'iot:Receive', resource: `topic/${topics[0]}` })).toBe(false);
  });
});

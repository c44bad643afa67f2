/**
 * Cloud Map and Route 53 on loopback, for the leader-discovery tests: neither has a local
 * emulator, so this serves the calls lib/discovery/ makes, on the wire the AWS SDK speaks (Cloud
 * Map's JSON 1.1, Route 53's REST-XML), with the semantics those calls rely on:
 * - Cloud Map: RegisterInstance creates or replaces an instance's attributes whole;
 *   DeregisterInstance of an unknown instance is InstanceNotFound; ids and attribute values are
 *   checked as Cloud Map checks them. Both answer an OperationId and apply later: GetOperation
 *   reports each PENDING once, then SUCCESS (applied then), or FAIL (`failOperations`).
 * - Route 53: a change batch is applied whole or not at all; CREATE of an existing record and
 *   DELETE of a record that is absent or differs (TTL, values) are InvalidChangeBatch (in the
 *   standard ErrorResponse form Route 53 answers with now: aws/aws-sdk-kotlin#1435); a CNAME may
 *   not share its name with another record; names are listed in Route 53's order (labels reversed).
 * Every request is recorded (action and input), and a test may hold each write until it says.
 */
import { once } from 'node:events';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Route53Client } from '@aws-sdk/client-route-53';
import { ServiceDiscoveryClient } from '@aws-sdk/client-servicediscovery';

export interface RecordedCall {
  /** IAM's action name, e.g. `servicediscovery:RegisterInstance`. */
  readonly action: string;
  readonly input: Record<string, unknown>;
}

export interface FakeRecord {
  readonly name: string; // with the trailing dot, as Route 53 keeps it
  readonly type: string;
  readonly ttl: number;
  readonly values: readonly string[];
}

export interface FakeAws {
  readonly endpoint: string;
  readonly calls: RecordedCall[];
  /** Cloud Map: the service's instances, by id → attributes. */
  readonly instances: Map<string, Record<string, string>>;
  /** Route 53: the zone's records. */
  readonly records: FakeRecord[];
  readonly serviceId: string;
  readonly hostedZoneId: string;
  /**
   * Before each write (RegisterInstance, DeregisterInstance, ChangeResourceRecordSets) is applied,
   * this is awaited: a test holds writes back to order them. Default: none.
   */
  beforeWrite: ((call: RecordedCall) => Promise<void>) | undefined;
  /** Cloud Map: operations taken from now on end FAIL (as an operation AWS took and could not apply). Default: false. */
  failOperations: boolean;
  cloudMap(): ServiceDiscoveryClient;
  route53(): Route53Client;
  close(): Promise<void>;
}

const CREDENTIALS = { accessKeyId: 'test', secretAccessKey: 'test' };
const INSTANCE_ID = /^[0-9a-zA-Z_/:.@-]{1,64}$/;
const ATTRIBUTE_VALUE = /^([a-zA-Z0-9!-~][ \ta-zA-Z0-9!-~]*){0,1}[a-zA-Z0-9!-~]{0,1}$/;

const xmlEscape = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
const xmlText = (s: string) => s.replace(/&lt;/g, '<').replace(/&gt;/g, '>').replace(/&amp;/g, '&');
const tag = (xml: string, name: string): string | undefined => new RegExp(`<${name}>([\\s\\S]*?)</${name}>`).exec(xml)?.[1];
const tags = (xml: string, name: string): string[] => [...xml.matchAll(new RegExp(`<${name}>([\\s\\S]*?)</${name}>`, 'g'))].map((m) => m[1]!);

/** Route 53's listing order: by name with its labels reversed (com.example.www), then type. */
const orderKey = (name: string) => name.toLowerCase().replace(/\.$/, '').split('.').reverse().join('.');

export async function fakeAws(): Promise<FakeAws> {
  const calls: RecordedCall[] = [];
  const instances = new Map<string, Record<string, string>>();
  let records: FakeRecord[] = [];
  const serviceId = 'srv-fake0000000000';
  const hostedZoneId = 'ZFAKE0000000000000000';
  let operation = 0;
  /** Cloud Map's operations: a write is taken (an id) and applied later, as GetOperation reports it over. */
  const operations = new Map<string, { status: 'PENDING' | 'SUCCESS' | 'FAIL'; looks: number; apply: () => void }>();
  const taken = (apply: () => void): string => {
    const id = `op-${++operation}`;
    operations.set(id, { status: 'PENDING', looks: 0, apply });
    return id;
  };

  const fake = {
    calls,
    instances,
    get records() {
      return records;
    },
    serviceId,
    hostedZoneId,
    beforeWrite: undefined as FakeAws['beforeWrite'],
    failOperations: false,
  };

  const json = (res: ServerResponse, status: number, body: unknown, errorType?: string) => {
    res.writeHead(status, { 'content-type': 'application/x-amz-json-1.1', ...(errorType ? { 'x-amzn-errortype': errorType } : {}) });
    res.end(JSON.stringify(body));
  };
  const xml = (res: ServerResponse, status: number, body: string) => {
    res.writeHead(status, { 'content-type': 'text/xml' });
    res.end(`<?xml version="1.0"?>\n${body}`);
  };
  const route53Error = (res: ServerResponse, code: string, message: string) =>
    xml(res, 400, `<ErrorResponse xmlns="https://route53.amazonaws.com/doc/2013-04-01/"><Error><Type>Sender</Type><Code>${code}</Code><Message>${xmlEscape(message)}</Message></Error><RequestId>fake</RequestId></ErrorResponse>`);

  async function cloudMap(target: string, input: Record<string, unknown>, res: ServerResponse) {
    const action = target.replace(/^Route53AutoNaming_v20170314\./, '');
    const call = { action: `servicediscovery:${action}`, input };
    calls.push(call);
    if (action === 'GetOperation') {
      // taken, then applied at the second look (each write is seen PENDING once: the naming waits it out)
      const op = operations.get(String(input['OperationId']));
      if (!op) return json(res, 400, { __type: 'OperationNotFound', Message: `no operation ${String(input['OperationId'])}` }, 'OperationNotFound');
      if (op.status === 'PENDING' && op.looks++ >= 1) {
        if (fake.failOperations) op.status = 'FAIL';
        else {
          op.apply();
          op.status = 'SUCCESS';
        }
      }
      return json(res, 200, { Operation: { Id: input['OperationId'], Status: op.status, ...(op.status === 'FAIL' ? { ErrorCode: 'INTERNAL_FAILURE', ErrorMessage: 'the fake failed it' } : {}) } });
    }
    if (input['ServiceId'] !== serviceId) return json(res, 400, { __type: 'ServiceNotFound', Message: `no service ${String(input['ServiceId'])}` }, 'ServiceNotFound');
    const id = String(input['InstanceId']);
    if (!INSTANCE_ID.test(id)) return json(res, 400, { __type: 'InvalidInput', Message: `InstanceId ${id} does not match ${INSTANCE_ID}` }, 'InvalidInput');
    if (action === 'RegisterInstance') {
      const attributes = input['Attributes'] as Record<string, string>;
      for (const [k, v] of Object.entries(attributes)) {
        if (v.length > 1024 || !ATTRIBUTE_VALUE.test(v)) return json(res, 400, { __type: 'InvalidInput', Message: `attribute ${k} has a value Cloud Map refuses` }, 'InvalidInput');
      }
      await fake.beforeWrite?.(call);
      return json(res, 200, { OperationId: taken(() => void instances.set(id, { ...attributes })) });
    }
    if (action === 'DeregisterInstance') {
      await fake.beforeWrite?.(call);
      if (!instances.has(id)) return json(res, 400, { __type: 'InstanceNotFound', Message: `no instance ${id}` }, 'InstanceNotFound');
      return json(res, 200, { OperationId: taken(() => void instances.delete(id)) });
    }
    return json(res, 400, { __type: 'InvalidInput', Message: `the fake does not serve ${action}` }, 'InvalidInput');
  }

  /** One change batch on a copy of the records: the copy, or the batch's first error. */
  function applyBatch(changes: { action: string; record: FakeRecord }[]): FakeRecord[] | string {
    let next = [...records];
    const same = (a: FakeRecord, b: FakeRecord) => a.name.toLowerCase() === b.name.toLowerCase() && a.type === b.type;
    for (const { action, record } of changes) {
      const existing = next.find((r) => same(r, record));
      const desc = `[name='${record.name}', type='${record.type}']`;
      if (action === 'CREATE' && existing) return `Tried to create resource record set ${desc} but it already exists`;
      if (action === 'DELETE') {
        if (!existing) return `Tried to delete resource record set ${desc} but it was not found`;
        if (existing.ttl !== record.ttl || existing.values.join('\n') !== record.values.join('\n')) return `Tried to delete resource record set ${desc} but the values provided do not match the current values`;
        next = next.filter((r) => r !== existing);
      } else next = [...next.filter((r) => r !== existing), record];
    }
    for (const c of next.filter((r) => r.type === 'CNAME')) {
      if (next.some((r) => r !== c && r.name.toLowerCase() === c.name.toLowerCase())) return `RRSet of type CNAME with DNS name ${c.name} is not permitted as it conflicts with other records with the same DNS name`;
    }
    return next;
  }

  async function route53(req: IncomingMessage, body: string, res: ServerResponse) {
    const url = new URL(req.url ?? '/', 'http://fake');
    const m = /^\/2013-04-01\/hostedzone\/([^/]+)\/rrset\/?$/.exec(url.pathname);
    if (!m) return route53Error(res, 'InvalidInput', `the fake does not serve ${req.method} ${url.pathname}`);
    if (m[1] !== hostedZoneId) return route53Error(res, 'NoSuchHostedZone', `No hosted zone found with ID: ${m[1]}`);
    if (req.method === 'GET') {
      const start = url.searchParams.get('name') ?? '';
      const max = Number(url.searchParams.get('maxitems') ?? '100');
      calls.push({ action: 'route53:ListResourceRecordSets', input: { HostedZoneId: m[1], StartRecordName: start, MaxItems: max } });
      const listed = [...records].sort((a, b) => (orderKey(a.name) < orderKey(b.name) ? -1 : orderKey(a.name) > orderKey(b.name) ? 1 : a.type < b.type ? -1 : 1)).filter((r) => orderKey(r.name) >= orderKey(start));
      const page = listed.slice(0, max);
      const sets = page
        .map((r) => `<ResourceRecordSet><Name>${xmlEscape(r.name)}</Name><Type>${r.type}</Type><TTL>${r.ttl}</TTL><ResourceRecords>${r.values.map((v) => `<ResourceRecord><Value>${xmlEscape(v)}</Value></ResourceRecord>`).join('')}</ResourceRecords></ResourceRecordSet>`)
        .join('');
      return xml(res, 200, `<ListResourceRecordSetsResponse xmlns="https://route53.amazonaws.com/doc/2013-04-01/"><ResourceRecordSets>${sets}</ResourceRecordSets><IsTruncated>${listed.length > max}</IsTruncated><MaxItems>${max}</MaxItems></ListResourceRecordSetsResponse>`);
    }
    const changes = tags(body, 'Change').map((c) => {
      const set = tag(c, 'ResourceRecordSet') ?? '';
      return {
        action: tag(c, 'Action') ?? '',
        record: { name: xmlText(tag(set, 'Name') ?? ''), type: tag(set, 'Type') ?? '', ttl: Number(tag(set, 'TTL')), values: tags(set, 'Value').map(xmlText) },
      };
    });
    const call = { action: 'route53:ChangeResourceRecordSets', input: { HostedZoneId: m[1], changes } };
    calls.push(call);
    await fake.beforeWrite?.(call);
    const next = applyBatch(changes);
    if (typeof next === 'string') return route53Error(res, 'InvalidChangeBatch', `[${next}]`);
    records = next;
    return xml(res, 200, `<ChangeResourceRecordSetsResponse xmlns="https://route53.amazonaws.com/doc/2013-04-01/"><ChangeInfo><Id>/change/C${++operation}</Id><Status>PENDING</Status><SubmittedAt>2026-01-01T00:00:00.000Z</SubmittedAt></ChangeInfo></ChangeResourceRecordSetsResponse>`);
  }

  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      const target = req.headers['x-amz-target'];
      const handled = typeof target === 'string' ? cloudMap(target, JSON.parse(body || '{}') as Record<string, unknown>, res) : route53(req, body, res);
      handled.catch((e: unknown) => {
        res.writeHead(500);
        res.end(String(e));
      });
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const endpoint = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const clients: { destroy(): void }[] = [];
  return Object.assign(fake, {
    endpoint,
    cloudMap() {
      const c = new ServiceDiscoveryClient({ endpoint, region: 'us-east-1', credentials: CREDENTIALS, maxAttempts: 1 });
      clients.push(c);
      return c;
    },
    route53() {
      const c = new Route53Client({ endpoint, region: 'us-east-1', credentials: CREDENTIALS, maxAttempts: 1 });
      clients.push(c);
      return c;
    },
    async close() {
      for (const c of clients) c.destroy();
      server.closeAllConnections();
      server.close();
      await once(server, 'close');
    },
  });
}

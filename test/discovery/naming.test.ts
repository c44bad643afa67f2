/**
 * The naming services behind a leader's name (lib/discovery/cloud-map.ts, route53.ts) on the fake
 * Cloud Map and Route 53 (test/discovery/fake-aws.ts), and the address a name is made from
 * (lib/discovery/address.ts).
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { simulatedClock } from '../../lib/clock.js';
import { parseAddress } from '../../lib/discovery/address.js';
import { cloudMapNaming, instanceIdOf } from '../../lib/discovery/cloud-map.js';
import { nameStateOf, type LeaderNaming, type LeaderTarget } from '../../lib/discovery/naming.js';
import { route53Naming } from '../../lib/discovery/route53.js';
import { ValidationError } from '../../lib/schemas/validation.js';
import { fakeAws, type FakeAws } from './fake-aws.js';

const target = (address: string, holder = 'w1', fencingToken = 7): LeaderTarget => {
  const a = parseAddress(address);
  if ('issue' in a) throw new Error(a.issue);
  return { holder, fencingToken, address: a };
};

describe('parseAddress', () => {
  it.each([
    { raw: 'http://10.0.0.7:8080/leader', want: { host: '10.0.0.7', kind: 'ipv4', port: 8080 } },
    { raw: 'https://Leader.Internal', want: { host: 'leader.internal', kind: 'hostname', port: 443 } },
    { raw: 'http://[fd00::7]/', want: { host: 'fd00::7', kind: 'ipv6', port: 80 } },
    { raw: '10.0.0.7:8080', want: { host: '10.0.0.7', kind: 'ipv4', port: 8080 } },
    { raw: '[fd00::7]:9000', want: { host: 'fd00::7', kind: 'ipv6', port: 9000 } },
    { raw: 'worker-3.internal:8080', want: { host: 'worker-3.internal', kind: 'hostname', port: 8080 } },
    { raw: 'fd00::7', want: { host: 'fd00::7', kind: 'ipv6' } },
    { raw: 'worker-3', want: { host: 'worker-3', kind: 'hostname' } },
    { raw: 'grpc://10.0.0.7', want: { host: '10.0.0.7', kind: 'ipv4' } },
  ])('$raw', ({ raw, want }) => {
    const a = parseAddress(raw);
    expect(a).toEqual({ raw, ...want });
  });

  it.each([
    { raw: 'http://', why: /not a URL/ },
    { raw: 'host:0', why: /port 0/ },
    { raw: 'host:70000', why: /port 70000/ },
    { raw: 'bad_host!:80', why: /not a host-name label/ },
    { raw: 'a b', why: /not a host-name label/ },
    // found by a review (2026-12-01): written by a worker of 0.1.0, which took them as `advertise`
    { raw: 'http://0.0.0.0:8080', why: /wildcard address/ },
    { raw: '[::]:8080', why: /wildcard address/ },
    { raw: '::', why: /wildcard address/ },
    { raw: 'http://undefined:8080', why: /unset variable/ },
    // found by a review (2026-12-06): each was named, pointing every client at itself; advertise
    // takes them (local mode's workers are reached on loopback), so discovery refuses them
    { raw: 'http://127.0.0.1:8080', why: /"http:\/\/127\.0\.0\.1:8080" is a loopback address/ },
    { raw: '127.0.0.53:8080', why: /loopback address/ },
    { raw: 'http://127.1:8080', why: /loopback address/ },
    { raw: 'http://localhost:8080', why: /loopback address/ },
    { raw: 'grpc://LocalHost.:50051', why: /loopback address/ },
    { raw: 'worker.localhost:8080', why: /loopback address/ },
    { raw: '[::1]:8080', why: /loopback address/ },
    { raw: '::1', why: /loopback address/ },
    { raw: 'http://[::ffff:127.0.0.1]:8080', why: /loopback address/ },
    // found by the same review: published as written in Cloud Map's attributes (advertise refuses them now)
    { raw: 'http://admin:s3cret@10.0.0.7:8080/', why: /carries credentials/ },
    { raw: 'grpc://admin@10.0.0.7:50051', why: /carries credentials/ },
  ])('refuses $raw', ({ raw, why }) => {
    const a = parseAddress(raw);
    expect('issue' in a && a.issue).toMatch(why);
  });

  it('a row whose address cannot be named clears the name, with the reason; so do an ended term and a leader with no address', () => {
    expect(nameStateOf({ ended: false, holder: 'w1', address: 'a b', fencingToken: 1 })).toEqual({ kind: 'clear', why: expect.stringMatching(/cannot be named/) });
    expect(nameStateOf({ ended: true, holder: 'w1', address: '10.0.0.1:80', fencingToken: 1 })).toEqual({ kind: 'clear', why: 'the term ended' });
    expect(nameStateOf({ ended: false, holder: 'w1', fencingToken: 1 })).toEqual({ kind: 'clear', why: expect.stringMatching(/advertised no address/) });
    expect(nameStateOf({ ended: false, holder: 'w1', address: '10.0.0.1:80', fencingToken: 1 })).toMatchObject({ kind: 'point', target: { holder: 'w1', fencingToken: 1, address: { host: '10.0.0.1', port: 80 } } });
  });

  it('a loopback address clears the name, as the wildcard does; an address with credentials too, its reason without them (it is logged)', () => {
    // before the fix: each pointed the name (an A record to 127.0.0.1, the attributes with the password)
    expect(nameStateOf({ ended: false, holder: 'w1', address: 'http://127.0.0.1:8080', fencingToken: 1 })).toEqual({ kind: 'clear', why: expect.stringMatching(/cannot be named: .*loopback/) });
    expect(nameStateOf({ ended: false, holder: 'w1', address: 'http://localhost:8080', fencingToken: 1 })).toEqual({ kind: 'clear', why: expect.stringMatching(/cannot be named: .*loopback/) });
    const secret = nameStateOf({ ended: false, holder: 'w1', address: 'http://admin:s3cret@10.0.0.7:8080/', fencingToken: 1 });
    expect(secret).toEqual({ kind: 'clear', why: expect.stringMatching(/cannot be named: .*credentials/) });
    expect(JSON.stringify(secret)).not.toMatch(/admin|s3cret/);
    // not loopback: kept
    expect(parseAddress('http://128.0.0.1:8080')).toMatchObject({ host: '128.0.0.1', kind: 'ipv4' });
    expect(parseAddress('localhost.example.com:8080')).toMatchObject({ host: 'localhost.example.com', kind: 'hostname' });
    expect(parseAddress('[::2]:8080')).toMatchObject({ host: '::2', kind: 'ipv6' });
  });
});

let aws: FakeAws;
beforeAll(async () => {
  aws = await fakeAws();
});
afterAll(() => aws?.close());

describe('Cloud Map', () => {
  let naming: LeaderNaming;
  beforeEach(() => {
    aws.instances.clear();
    naming = cloudMapNaming(aws.cloudMap(), aws.serviceId);
  });

  it('registers an instance per lease, id the lease name, with the address, the token and the lease to query by', async () => {
    await naming.point('nightly-report', target('http://10.0.0.7:8080/leader'));
    expect(aws.instances.get('nightly-report')).toEqual({
      AWS_INSTANCE_IPV4: '10.0.0.7',
      AWS_INSTANCE_PORT: '8080',
      lease: 'nightly-report',
      holder: 'w1',
      fencingToken: '7',
      address: 'http://10.0.0.7:8080/leader',
      host: '10.0.0.7',
    });
  });

  it('replaces the attributes whole when the leader changes (no port, IPv4 or IPv6 of the previous leader is left)', async () => {
    await naming.point('jobs', target('10.0.0.7:8080'));
    await naming.point('jobs', target('worker-4.internal', 'w4', 9));
    expect(aws.instances.get('jobs')).toEqual({ lease: 'jobs', holder: 'w4', fencingToken: '9', address: 'worker-4.internal', host: 'worker-4.internal' });
    await naming.point('jobs', target('[fd00::9]:7000', 'w5', 10));
    expect(aws.instances.get('jobs')).toMatchObject({ AWS_INSTANCE_IPV6: 'fd00::9', AWS_INSTANCE_PORT: '7000', fencingToken: '10' });
  });

  it('deregisters on clear, and a clear of a lease with no instance is a clear (InstanceNotFound)', async () => {
    await naming.point('jobs', target('10.0.0.7:8080'));
    await naming.clear('jobs');
    expect(aws.instances.has('jobs')).toBe(false);
    await expect(naming.clear('jobs')).resolves.toBeUndefined();
  });

  it('gives a lease name Cloud Map cannot take as an id a hashed one, and a holder name it cannot take as a value percent-encoded', async () => {
    const long = `reports/${'x'.repeat(80)}`;
    expect(instanceIdOf(long)).toMatch(/^conclave-h:[a-z2-7]{26}$/);
    expect(instanceIdOf('team/reports:nightly')).toBe('team/reports:nightly');
    await naming.point(long, target('10.0.0.7:8080', 'wörker 1'));
    expect(aws.instances.get(instanceIdOf(long))).toMatchObject({ lease: long, holder: 'w%C3%B6rker%201' });
  });

  it('says which leaders it cannot name (an attribute value over 1024 characters, as sent), so the name is cleared rather than left on the previous leader', () => {
    expect(naming.issue?.(target('http://10.0.0.7:8080/leader'))).toBeUndefined();
    expect(naming.issue?.(target(`http://10.0.0.7:8080/${'p'.repeat(1100)}`))).toMatch(/address is 1121 characters.*at most 1024/);
    expect(naming.issue?.(target('10.0.0.7:8080', '日'.repeat(200)))).toMatch(/holder is 1800 characters/);
    const row = { ended: false, holder: 'w1', address: `http://10.0.0.7:8080/${'p'.repeat(1100)}`, fencingToken: 3 };
    expect(nameStateOf(row, naming)).toEqual({ kind: 'clear', why: expect.stringMatching(/^Cloud Map service .* cannot name the leader: .*address is 1121 characters/) });
    expect(nameStateOf(row)).toMatchObject({ kind: 'point' });
  });
});

describe('Route 53', () => {
  let naming: LeaderNaming;
  const zone = 'internal.example.com';
  const record = (type: string, value: string, name = 'jobs.leader.internal.example.com.') => ({ name, type, ttl: 5, values: [value] });
  beforeEach(() => {
    aws.records.splice(0);
    aws.calls.splice(0);
    aws.beforeWrite = undefined;
    naming = route53Naming(aws.route53(), { hostedZoneId: aws.hostedZoneId, recordName: `{lease}.leader.${zone}`, ttlSeconds: 5 });
  });

  it('writes an A record for an IPv4 address, AAAA for IPv6, a CNAME for a host name, each replacing the last in one batch', async () => {
    await naming.point('jobs', target('http://10.0.0.7:8080'));
    expect(aws.records).toEqual([record('A', '10.0.0.7')]);
    await naming.point('jobs', target('worker-4.internal:8080'));
    // the fake refuses a CNAME beside another record: the A went in the same batch
    expect(aws.records).toEqual([record('CNAME', 'worker-4.internal')]);
    await naming.point('jobs', target('[fd00::9]:8080'));
    expect(aws.records).toEqual([record('AAAA', 'fd00::9')]);
    const batches = aws.calls.filter((c) => c.action === 'route53:ChangeResourceRecordSets').map((c) => (c.input['changes'] as { action: string; record: { type: string } }[]).map((x) => `${x.action} ${x.record.type}`));
    expect(batches).toEqual([['UPSERT A'], ['DELETE A', 'UPSERT CNAME'], ['DELETE CNAME', 'UPSERT AAAA']]);
  });

  it('sends no change when the record already says so, and leaves other names alone', async () => {
    aws.records.push(record('A', '10.9.9.9', 'other.leader.internal.example.com.'));
    await naming.point('jobs', target('10.0.0.7:1'));
    await naming.point('jobs', target('10.0.0.7:2')); // the port is not in DNS
    expect(aws.calls.filter((c) => c.action === 'route53:ChangeResourceRecordSets')).toHaveLength(1);
    expect(aws.records).toContainEqual(record('A', '10.9.9.9', 'other.leader.internal.example.com.'));
  });

  it('deletes the record on clear, exactly as it is; nothing there, no change', async () => {
    await naming.point('jobs', target('10.0.0.7:8080'));
    await naming.clear('jobs');
    expect(aws.records).toEqual([]);
    await naming.clear('jobs');
    expect(aws.calls.filter((c) => c.action === 'route53:ChangeResourceRecordSets')).toHaveLength(2);
  });

  it('lists and changes again when the record changed between its listing and the change (InvalidChangeBatch)', async () => {
    await naming.point('jobs', target('10.0.0.7:8080'));
    let raced = false;
    aws.beforeWrite = async () => {
      if (raced) return;
      raced = true;
      aws.records.splice(0, aws.records.length, record('A', '10.0.0.8')); // another writer, just before this batch
    };
    await naming.point('jobs', target('worker-4.internal'));
    expect(aws.records).toEqual([record('CNAME', 'worker-4.internal')]);
    expect(aws.calls.filter((c) => c.action === 'route53:ChangeResourceRecordSets')).toHaveLength(3); // the first, the refused, the retry
  });

  // found by a review (2026-12-07): the refused batch failed every delivery and left the previous
  // leader's A record; Cloud Map's names are cleared when it cannot register the leader
  it('clears the name, saying why, when Route 53 refuses the new record there (a CNAME beside a TXT not the construct\'s)', async () => {
    const txt = { name: 'jobs.leader.internal.example.com.', type: 'TXT', ttl: 300, values: ['"owner=team-a"'] };
    aws.records.push(txt);
    expect(await naming.point('jobs', target('http://10.0.0.1:8080'))).toBeUndefined();
    expect(aws.records).toEqual([txt, record('A', '10.0.0.1')]);
    const why = await naming.point('jobs', target('http://worker-2.internal:8080'));
    expect(why).toMatch(/^it refused the CNAME record \(.*CNAME .*conflicts with other records/);
    expect(aws.records).toEqual([txt]); // the previous leader's A gone; the TXT is not the construct's
    // the refusal is not taken for a lost race: listed once more, not changed three times
    expect(aws.calls.filter((c) => c.action === 'route53:ChangeResourceRecordSets')).toHaveLength(3); // the A; the refused; the DELETE of the A
  });

  it('keeps to the time it is given (withinMs): none left, nothing sent; a call still waiting when it is up is abandoned', async () => {
    const clock = simulatedClock({ start: 1_800_000_000_000 });
    const timed = route53Naming(aws.route53(), { hostedZoneId: aws.hostedZoneId, recordName: `{lease}.leader.${zone}`, ttlSeconds: 5 }, clock);
    await expect(timed.point('jobs', target('10.0.0.7:8080'), 0)).rejects.toThrow(/not over within 0 ms/);
    await expect(timed.clear('jobs', -5)).rejects.toThrow(/not over within 0 ms/);
    expect(aws.calls).toEqual([]);
    // Route 53 holds the change past the time left
    let release = () => {};
    const held = new Promise<void>((resolve) => {
      aws.beforeWrite = () => new Promise<void>((r) => ((release = r), resolve()));
    });
    const pointing = timed.point('jobs', target('10.0.0.7:8080'), 1_000).then(
      () => 'resolved',
      (e: Error) => e.message,
    );
    await held;
    await clock.run(1_000);
    release();
    expect(await pointing).toMatch(/Route 53 change of lease "jobs"'s record was not over within 1000 ms/);
  });

  it('refuses a lease whose name is no host-name label, naming the fix', async () => {
    const e = await naming.point('team/reports:nightly', target('10.0.0.7:1')).catch((x: unknown) => x);
    expect(e).toBeInstanceOf(ValidationError);
    expect((e as Error).message).toMatch(/team\/reports:nightly\.leader\.internal\.example\.com .*not a host-name label.*leaseNames/);
  });

  it('one fixed name for one lease: the record name as given', async () => {
    const one = route53Naming(aws.route53(), { hostedZoneId: aws.hostedZoneId, recordName: `leader.${zone}`, ttlSeconds: 30, leases: new Set(['nightly-report']) });
    await one.point('nightly-report', target('10.0.0.7:8080'));
    expect(aws.records).toEqual([{ name: `leader.${zone}.`, type: 'A', ttl: 30, values: ['10.0.0.7'] }]);
  });
});

/**
 * Issue 36 (9): DynamoDB Local has no bind option and listens on every interface; from another
 * address, ListTables and Scan returned the tables. What reaches the one startDynamoDBLocal()
 * starts: 127.0.0.1 does; this machine's own non-loopback addresses (their packets never leave
 * the host) reach neither the loopback front nor Java's own port.
 */
import { readdirSync, readFileSync, readlinkSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { networkInterfaces } from 'node:os';
import { CreateTableCommand, DynamoDBClient, ListTablesCommand } from '@aws-sdk/client-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LOCAL_CREDENTIALS, LOCAL_REGION, startDynamoDBLocal, type DynamoDBLocal } from '../../lib/local/dynamodb-local.js';
import { namespaceSupport } from '../../lib/local/network-namespace.js';

const TABLE = `loopback-only-${process.pid}`;
const ns = namespaceSupport();
/** This machine's addresses other than loopback; link-local IPv6 ones need a zone, which an endpoint URL can't carry. */
const ownAddresses = Object.values(networkInterfaces())
  .flat()
  .filter((a) => a !== undefined && !a.internal && !(a.family === 'IPv6' && a.scopeid !== 0))
  .map((a) => (a!.family === 'IPv6' ? `[${a!.address}]` : a!.address));

/** One try, no retries: what a stranger's client gets. */
const stranger = (host: string, port: number) =>
  new DynamoDBClient({ endpoint: `http://${host}:${port}`, region: LOCAL_REGION, credentials: LOCAL_CREDENTIALS, maxAttempts: 1, requestHandler: { connectionTimeout: 2000, requestTimeout: 2000 } });

async function tableNames(host: string, port: number): Promise<string[]> {
  const db = stranger(host, port);
  try {
    return (await db.send(new ListTablesCommand({}))).TableNames ?? [];
  } finally {
    db.destroy();
  }
}

/** Where an fd points, or '' for one closed since its directory was read (the process runs on). */
function linkOf(path: string): string {
  try {
    return readlinkSync(path);
  } catch {
    return '';
  }
}

/** The TCP ports `pid` listens on, from its own network namespace's view (/proc/PID/net), matched to its sockets. */
function listeningPorts(pid: number): number[] {
  const inodes = new Set(
    readdirSync(`/proc/${pid}/fd`)
      .map((fd) => /^socket:\[(\d+)\]$/.exec(linkOf(`/proc/${pid}/fd/${fd}`))?.[1])
      .filter((i) => i !== undefined),
  );
  const ports = ['tcp', 'tcp6'].flatMap((f) =>
    readFileSync(`/proc/${pid}/net/${f}`, 'utf8')
      .split('\n')
      .slice(1)
      .map((l) => l.trim().split(/\s+/))
      .filter((c) => c[3] === '0A' && inodes.has(c[9]!)) // 0A: LISTEN
      .map((c) => parseInt(c[1]!.split(':')[1]!, 16)),
  );
  return [...new Set(ports)];
}

let ddb: DynamoDBLocal;
const warnings: string[] = [];

beforeAll(async () => {
  ddb = await startDynamoDBLocal({ log: (l) => warnings.push(l) });
  const db = stranger('127.0.0.1', ddb.port);
  await db.send(new CreateTableCommand({ TableName: TABLE, KeySchema: [{ AttributeName: 'k', KeyType: 'HASH' }], AttributeDefinitions: [{ AttributeName: 'k', AttributeType: 'S' }], BillingMode: 'PAY_PER_REQUEST' }));
  db.destroy();
});

afterAll(() => ddb?.stop());

describe('DynamoDB Local started by startDynamoDBLocal()', () => {
  it('answers on 127.0.0.1, its endpoint', async () => {
    expect(ddb.endpoint).toBe(`http://127.0.0.1:${ddb.port}`);
    expect(await tableNames('127.0.0.1', ddb.port)).toContain(TABLE);
  });

  it.runIf(ns.ok)('where network namespaces can be made (as on Linux here): Java runs in one of its own, and no warning is given', () => {
    expect(ddb.listensOn).toBe('loopback');
    expect(readlinkSync(`/proc/${ddb.pid}/ns/net`)).not.toBe(readlinkSync('/proc/self/ns/net'));
    expect(warnings).toEqual([]);
  });

  it.runIf(!ns.ok)('where they cannot: it listens on every interface, and a warning says so and why', () => {
    expect(ddb.listensOn).toBe('every interface');
    expect(warnings.join('\n')).toMatch(/listens on every interface of this machine, port \d+: whoever reaches this machine can read and write its tables/);
  });

  // Without a namespace it does listen on every interface: the warning above is what holds there.
  // Without a non-loopback address there is nothing to try, and adding one needs root and changes the host's network.
  it.skipIf(!ns.ok || ownAddresses.length === 0)("no non-loopback address of this machine reaches it: neither the front's port nor Java's", async () => {
    const javaPorts = process.platform === 'linux' ? listeningPorts(ddb.pid!) : [];
    expect(javaPorts.length).toBeGreaterThan(0);
    // control: these addresses do reach a server that listens on every interface of this machine
    const open = createServer((_req, res) => res.writeHead(200, { 'content-type': 'application/x-amz-json-1.0' }).end('{"TableNames":["control"]}'));
    await new Promise<void>((r) => open.listen(0, r));
    const openPort = (open.address() as AddressInfo).port;
    try {
      for (const host of ownAddresses) {
        expect(await tableNames(host, openPort), `${host}:${openPort}, the control`).toEqual(['control']);
        for (const port of [ddb.port, ...javaPorts]) {
          await expect(tableNames(host, port), `${host}:${port}`).rejects.toThrow();
        }
      }
    } finally {
      open.close();
    }
  });
});

describe('where no network namespace can be made', () => {
  it("loopbackOnly 'prefer' (the default): the warning names the likely cause where `unshare` is refused (Ubuntu 23.10 and later: AppArmor's restriction of user namespaces) and how to refuse instead (a review, 2026-12-07)", async () => {
    const told: string[] = [];
    const refused = () => ({ ok: false, why: '`unshare --user --map-root-user --net ip link set lo up` failed: unshare: write failed /proc/self/uid_map: Operation not permitted' }) as const;
    const open = await startDynamoDBLocal({ namespace: refused, loopbackOnly: 'prefer', log: (l) => told.push(l) });
    try {
      expect(open.listensOn).toBe('every interface');
      expect(told).toHaveLength(1);
      // before: the reason alone, with neither the likely cause nor the way to require loopback
      expect(told[0]).toContain('kernel.apparmor_restrict_unprivileged_userns=1, which forbids `unshare -Urn` to a user who is not root');
      expect(told[0]).toMatch(/ CONCLAVE_LOOPBACK_ONLY=require \(or loopbackOnly: 'require'\) refuses to start it on every interface instead\.$/);
    } finally {
      await open.stop();
    }
  });

  it("loopbackOnly: 'require' refuses to start it, saying why", async () => {
    const none = () => ({ ok: false, why: 'user namespaces are disabled' }) as const;
    await expect(startDynamoDBLocal({ loopbackOnly: 'require', namespace: none })).rejects.toThrow(
      /no bind option, and the network namespace that keeps it on loopback can't be made here: user namespaces are disabled\. CONCLAVE_LOOPBACK_ONLY=require/,
    );
  });
});

describe('stop()', () => {
  it('ends Java and, with it, the relay', async () => {
    const pid = ddb.pid!;
    await ddb.stop();
    expect(() => process.kill(pid, 0)).toThrow(/ESRCH/);
    await expect(tableNames('127.0.0.1', ddb.port)).rejects.toThrow();
  });
});

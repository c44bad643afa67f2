/**
 * A worker whose process has run out of file descriptors (a leak of sockets or files, a small
 * `ulimit -n`): a request that needs a new connection fails in Node's connect with EMFILE. Tried
 * from outside (a review, 2026-12-07, ninth): onError was told Node's bare "connect EMFILE
 * 127.0.0.1:48815 - Local (undefined:undefined)", named for nothing, with no fix. Now it names what
 * ran out and what to do. Node's error as its connect throws it (code, errno, syscall), handed to
 * the HTTP handler's place in a real client on DynamoDB Local, and to namedFault.
 */
import { afterAll, beforeAll, expect, inject, it } from 'vitest';
import { localClient } from '../../lib/local/dynamodb-local.js';
import { namedFault } from '../../lib/sdk/faults.js';
import { getLeader } from '../../lib/sdk/index.js';
import { testTables, type TestTables } from '../support.js';

let t: TestTables;
beforeAll(async () => void (t = await testTables('descriptors')));
afterAll(async () => t.drop());

/** Node's error for a connect refused a descriptor, as `net.connect` emits it (`connect EMFILE 127.0.0.1:8000 - Local (undefined:undefined)`). */
const refused = (code: 'EMFILE' | 'ENFILE', to: string) => Object.assign(new Error(`connect ${code} ${to} - Local (undefined:undefined)`), { code, errno: code === 'EMFILE' ? -24 : -23, syscall: 'connect' });

it('getLeader in a process with no file descriptor left: the error names what ran out and what to do, nothing sent', async () => {
  const client = localClient(inject('ddbEndpoint'));
  // every try's connection refused a descriptor, where the HTTP handler would open one
  client.middlewareStack.add(() => async () => Promise.reject(refused('EMFILE', '127.0.0.1:8000')), { step: 'finalizeRequest', priority: 'low', name: 'noDescriptors' });
  const e = (await getLeader('descriptors', { client, tables: t.names }).catch((x: unknown) => x)) as Error & { code?: string };
  client.destroy();
  // before: Error, "connect EMFILE 127.0.0.1:8000 - Local (undefined:undefined)", as Node threw it
  expect(e).toMatchObject({ name: 'Error', code: 'EMFILE', cause: { code: 'EMFILE' } });
  expect(e.message).toBe(
    `getLeader of lease "descriptors": could not open a connection to DynamoDB: this process has no file descriptor left (its limit: ulimit -n, systemd's LimitNOFILE, the container's nofile) (EMFILE: connect EMFILE 127.0.0.1:8000 - Local (undefined:undefined)): nothing was sent; raise the limit, or find what holds descriptors open (sockets or files never closed, a client made per request); the lease's row on the leases table "${t.names.leases}" was not read, and getLeader does not retry: call it again once descriptors are free`,
  );
});

it("a worker's request refused a descriptor by the machine (ENFILE): named so, retried", () => {
  const node = refused('ENFILE', '10.0.0.1:443');
  const named = namedFault(node, 'LeaderElector "w1" of lease "jobs"', 'the DynamoDB endpoint of region eu-west-1');
  expect(named).toMatchObject({ name: 'Error', code: 'ENFILE', cause: node });
  expect(named.message).toBe(
    'LeaderElector "w1" of lease "jobs": could not open a connection to DynamoDB: the machine has no file descriptor left (its limit: fs.file-max) (ENFILE: connect ENFILE 10.0.0.1:443 - Local (undefined:undefined)): nothing was sent; raise the limit, or find what holds descriptors open (sockets or files never closed, a client made per request); retrying with backoff',
  );
  // named once: a fault named again stays as it is
  expect(namedFault(named, 'x', 'y')).toBe(named);
});

/**
 * The functions' AWS clients bound each try of a request (lib/functions/requests.ts): on a
 * connection that accepts and never answers (a half-open socket), a read rejects as a timeout
 * after its tries instead of holding its record, or the tick, until the function's deadline. The
 * AWS SDK sets no timeout of its own: before, the reads below never settled.
 */
import { createServer, type Server, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { discoveryDepsFromEnv } from '../../lib/discovery/handler.js';
import { depsFromEnv } from '../../lib/functions/env.js';
import { FUNCTION_REQUEST_TIMEOUT_MS } from '../../lib/functions/requests.js';

let server: Server;
const sockets: Socket[] = [];
let endpoint: string;
const saved = { ...process.env };

beforeAll(async () => {
  // accepts every connection and never answers
  server = createServer((s) => void sockets.push(s));
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  endpoint = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
  // the clients read their endpoint, Region and credentials from the environment, as on Lambda (no request leaves the loopback)
  Object.assign(process.env, { AWS_ENDPOINT_URL: endpoint, AWS_REGION: 'us-east-1', AWS_ACCESS_KEY_ID: 'test', AWS_SECRET_ACCESS_KEY: 'test', AWS_EC2_METADATA_DISABLED: 'true' });
});
afterAll(async () => {
  process.env = saved;
  for (const s of sockets) s.destroy();
  await new Promise<void>((r) => server.close(() => r()));
});

const env = { CONCLAVE_LEASES_TABLE: 'c-leases', CONCLAVE_CANDIDATES_TABLE: 'c-candidates', CONCLAVE_IDENTITIES_TABLE: 'c-identities', CONCLAVE_EVENT_BUS: 'bus', CONCLAVE_TIMER_QUEUE_URL: 'https://sqs.us-east-1.amazonaws.com/000000000000/timer' };

describe("a function's request on a connection that never answers", () => {
  it('a DynamoDB read of the stream and tick functions rejects as a timeout after its tries', async () => {
    const deps = depsFromEnv('leaseStream', env);
    const e = await deps.coordinator.leases.read('job').then(() => undefined, (x: unknown) => x as Error);
    expect(e).toMatchObject({ name: 'TimeoutError' });
    expect(e!.message).toMatch(new RegExp(`${FUNCTION_REQUEST_TIMEOUT_MS}`));
  }, 60_000);

  it("the leader-discovery function's DynamoDB reads too", async () => {
    const deps = discoveryDepsFromEnv({
      CONCLAVE_DISCOVERY_TABLE: 'c-discovery',
      CONCLAVE_LEASES_TABLE: 'c-leases',
      CONCLAVE_IDENTITIES_TABLE: 'c-identities',
      CONCLAVE_DISCOVERY_LEASES: '["job"]',
      CONCLAVE_DISCOVERY_HOSTED_ZONE_ID: 'Z1',
      CONCLAVE_DISCOVERY_RECORD_NAME: 'leader.example.com',
      CONCLAVE_DISCOVERY_TTL_SECONDS: '5',
    });
    const e = await deps.discovery.state.list().then(() => undefined, (x: unknown) => x as Error);
    expect(e).toMatchObject({ name: 'TimeoutError' });
  }, 60_000);
});

/**
 * What a new user of the CLI met in a trial of it and of local mode: an empty or malformed
 * AWS_REGION (an unset CI variable), the local push broker's port taken for DynamoDB's, a read-only
 * command told that a write "may have landed", and a mistyped option named as a missing one.
 */
import { createServer as createHttpServer } from 'node:http';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPushBroker } from '../../lib/local/push-broker.js';
import { NOW, SEC, cand, lease } from '../fixtures.js';
import { manualClock } from '../../lib/clock.js';
import { foreignAnswersProxy } from '../proxy.js';
import { listenOnLoopback } from '../support.js';
import { cliHarness, runMain, withAwsEnv, type CliHarness } from './harness.js';

let h: CliHarness;
beforeAll(async () => {
  h = await cliHarness('cli-new-user');
  await h.seedLease(lease('w1', { name: 'nightly-report' }));
  await h.seedCandidate(cand('w1', '1.31.0', '1.31.0', { leaseName: 'nightly-report' }));
  await h.seedCandidate(cand('w2', '1.30.0', '1.31.0', { leaseName: 'nightly-report' }));
});
afterAll(() => h.t.drop());


/** No config file, no credentials file, no instance metadata: nothing the AWS SDK finds on this machine. */
const BARE = { AWS_EC2_METADATA_DISABLED: 'true', AWS_CONFIG_FILE: '/nonexistent/conclave-config', AWS_SHARED_CREDENTIALS_FILE: '/nonexistent/conclave-credentials', AWS_ACCESS_KEY_ID: 'x', AWS_SECRET_ACCESS_KEY: 'y' };

describe('an AWS_REGION the AWS SDK refuses', () => {
  // before: "unexpected error (a bug: please report it): Error: Region not accepted: region="" is not a valid hostname component." and a stack
  it('set but empty (an unset CI variable): told as no region, naming AWS_REGION and the fix, exit 1', async () => {
    const r = await withAwsEnv({ ...BARE, AWS_REGION: '' }, () => runMain(['get', 'leases'], { env: { AWS_REGION: '' } }));
    expect(r).toEqual({
      code: 1,
      out: '',
      err: 'error: no AWS region configured: AWS_REGION is set but empty (AWS_REGION="", as an unset CI variable leaves it) - set it to a region such as eu-west-1, or unset it (empty, it hides the profile\'s region); or pass --region, or --endpoint URL for DynamoDB Local',
    });
  });

  it('not a region name: told with its value and the fix, exit 1', async () => {
    const r = await withAwsEnv({ ...BARE, AWS_REGION: 'us east 1' }, () => runMain(['describe', 'lease', 'nightly-report'], { env: { AWS_REGION: 'us east 1' } }));
    expect(r).toEqual({
      code: 1,
      out: '',
      err: 'error: no valid AWS region configured: AWS_REGION="us east 1" is not a region name (the AWS SDK refused it: not a valid host name part) - set it to one such as eu-west-1, or pass --region, or --endpoint URL for DynamoDB Local',
    });
  });

  it("a profile's region that is not a region name: told with the profile, exit 1", async () => {
    const dir = mkdtempSync(join(tmpdir(), 'conclave-bad-region-'));
    writeFileSync(join(dir, 'config'), '[profile ops]\nregion = us east 1\n');
    const r = await withAwsEnv({ ...BARE, AWS_CONFIG_FILE: join(dir, 'config') }, () => runMain(['--profile', 'ops', 'get', 'leases'], { env: {} }));
    expect(r).toEqual({
      code: 1,
      out: '',
      err: 'error: no valid AWS region configured: profile ops gives region "us east 1", which is not a region name (the AWS SDK refused it: not a valid host name part) - correct it in the AWS config file (~/.aws/config, or AWS_CONFIG_FILE), or pass --region (or set AWS_REGION), or --endpoint URL for DynamoDB Local',
    });
  });
});

describe("the local push broker's port given as DynamoDB's", () => {
  // before: "tables … do not exist at http://127.0.0.1:<port>": the broker answered every other route as a ResourceNotFoundException
  it('is told as not DynamoDB, and a read-only command says nothing of a write', async () => {
    const broker = await startPushBroker();
    try {
      const r = await runMain(['--endpoint', broker.httpEndpoint, '--table-prefix', h.prefix, 'get', 'leases']);
      expect(r.code).toBe(1);
      expect(r.err).toMatch(new RegExp(`^error: the answer at ${broker.httpEndpoint.replace(/\./g, '\\.')} is not DynamoDB's \\(HTTP 404, `));
      expect(r.err).not.toMatch(/do not exist|a write/);
    } finally {
      await broker.stop();
    }
  });
});

describe('an answer that names a DynamoDB error type without x-amzn-RequestId', () => {
  it.each(['ResourceNotFoundException', 'AccessDeniedException', 'ConditionalCheckFailedException'])('(%s) is not DynamoDB\'s: never "tables do not exist" nor its own error', async (type) => {
    const stub = createHttpServer((req, res) => {
      req.resume();
      req.on('end', () => void res.writeHead(400, { 'content-type': 'application/x-amz-json-1.0', 'x-amzn-errortype': type }).end(JSON.stringify({ __type: `com.amazonaws.dynamodb.v20120810#${type}`, message: 'no' })));
    });
    const port = await listenOnLoopback(stub);
    try {
      const r = await runMain(['--endpoint', `http://127.0.0.1:${port}`, 'get', 'leases']);
      expect(r.code).toBe(1);
      expect(r.err).toBe(
        `error: the answer at http://127.0.0.1:${port} is not DynamoDB's (HTTP 400, no x-amzn-RequestId header, which DynamoDB sends with every answer, though it names the error type ${type}) - something else answers there (another server on that port, a proxy's error page): check --endpoint / --region (or CONCLAVE_ENDPOINT, AWS_REGION) and any HTTPS_PROXY or HTTP_PROXY setting`,
      );
    } finally {
      await new Promise<void>((r) => stub.close(() => r()));
    }
  });
});

describe('an answer not DynamoDB\'s: what may have landed', () => {
  it.each([
    ['get leases'],
    ['describe lease nightly-report'],
    ['leader nightly-report'],
    ['watch --count 1'],
    ['get candidates nightly-report'],
  ])('%s, which writes nothing, says nothing of a write', async (command) => {
    const proxy = await foreignAnswersProxy(h.endpoint);
    proxy.answer('empty200');
    try {
      const r = await runMain(['--endpoint', proxy.endpoint, '--table-prefix', h.prefix, ...command.split(' ')], { clock: manualClock(NOW + SEC) });
      expect(r.code).toBe(1);
      // before: "…; a write the command sent may have landed: run it again once DynamoDB answers (…)"
      expect(r.err).toBe(
        `error: the answer at ${proxy.endpoint} is not DynamoDB's (HTTP 200, no x-amzn-RequestId header, which DynamoDB sends with every answer) - something else answers there (another server on that port, a proxy's error page): check --endpoint / --region (or CONCLAVE_ENDPOINT, AWS_REGION) and any HTTPS_PROXY or HTTP_PROXY setting`,
      );
    } finally {
      await proxy.close();
    }
  });

  it('a write whose own answer is not DynamoDB\'s: says the change may have landed and how to see it', async () => {
    // the reads are DynamoDB's; the write's answer is not (a proxy may have passed it on)
    const proxy = await foreignAnswersProxy(h.endpoint, (operation) => operation === 'UpdateItem' || operation === 'PutItem');
    proxy.answer('empty200');
    try {
      const r = await runMain(['--endpoint', proxy.endpoint, '--table-prefix', h.prefix, 'set-priority', 'nightly-report', 'w2', '3', '--for', '10m', '--yes'], { clock: manualClock(NOW + SEC) });
      expect(r.code).toBe(1);
      expect(r.err.split('\n').at(-1)).toBe(
        `error: the answer at ${proxy.endpoint} is not DynamoDB's (HTTP 200, no x-amzn-RequestId header, which DynamoDB sends with every answer) - something else answers there (another server on that port, a proxy's error page): check --endpoint / --region (or CONCLAVE_ENDPOINT, AWS_REGION) and any HTTPS_PROXY or HTTP_PROXY setting; ` +
          'the change confirmed (change candidate w2 of lease nightly-report) may have landed, its answer lost - `conclave describe lease nightly-report` shows whether it did, and the command run again shows what is left to change (every write is conditional: none is made twice)',
      );
    } finally {
      await proxy.close();
    }
  });

  it('a write command whose read met it, nothing sent: says nothing of a write', async () => {
    const proxy = await foreignAnswersProxy(h.endpoint);
    proxy.answer('empty200');
    try {
      const r = await runMain(['--endpoint', proxy.endpoint, '--table-prefix', h.prefix, 'set-priority', 'nightly-report', 'w2', '3', '--yes'], { clock: manualClock(NOW + SEC) });
      expect(r.code).toBe(1);
      expect(r.err).toMatch(/^error: the answer at \S+ is not DynamoDB's \(HTTP 200, no x-amzn-RequestId header, which DynamoDB sends with every answer\) - .* any HTTPS_PROXY or HTTP_PROXY setting$/);
    } finally {
      await proxy.close();
    }
  });
});

describe('https:// for an endpoint that speaks plain HTTP', () => {
  // found by a review (2026-12-06, eighth): "unexpected error (a bug: please report it): Error: write EPROTO … wrong version number", exit 1
  it('DynamoDB Local given as https://: told as an endpoint that does not speak TLS, with the http:// URL to try, exit 1', async () => {
    const https = h.endpoint.replace(/^http:/, 'https:');
    const r = await runMain(['--endpoint', https, '--table-prefix', h.prefix, 'get', 'leases']);
    expect(r.code).toBe(1);
    expect(r.err).toBe(`error: cannot reach DynamoDB at ${https} (EPROTO: wrong version number) - it answers in plain HTTP, not TLS: DynamoDB Local (and \`npx conclave-local\`) speaks http:// - try --endpoint ${h.endpoint}`);
  });
});

describe('a mistyped option', () => {
  it('preempt --too is named as unknown, with the option meant, not as --to missing; exit 2', async () => {
    const r = await h.run(['preempt', 'nightly-report', '--too', 'w2']);
    expect(r.code).toBe(2);
    // before: "error: required option '--to <candidate>' not specified"
    expect(r.err.split('\n').slice(0, 2)).toEqual(["error: unknown option '--too'", '(Did you mean --to?)']);
    const missing = await h.run(['preempt', 'nightly-report']);
    expect(missing.code).toBe(2);
    expect(missing.err.split('\n')[0]).toBe("error: required option '--to <candidate>' not specified");
    expect((await h.candidates.read('nightly-report', 'w2')).item?.priority).toBeUndefined();
  });
});

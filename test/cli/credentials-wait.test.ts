import { DynamoDBClient, ListTablesCommand } from '@aws-sdk/client-dynamodb';
import { existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { CREDENTIALS_TOLD_AFTER_MS, credentialsWaitLine, tellCredentialsWait } from '../../lib/cli/credentials-wait.js';
import { main } from '../../lib/cli/main.js';
import { simulatedClock } from '../../lib/clock.js';
import { LOCAL_REGION } from '../../lib/stores/client.js';
import { MIN, lease } from '../fixtures.js';
import { waitFor } from '../sdk/harness.js';
import { cliHarness, type CliHarness } from './harness.js';

/**
 * A credential provider that, while `hold` is set, answers only at `give()`; `asked` counts the
 * calls. Its credentials expire within the AWS SDK's refresh window, so each request asks again.
 */
function heldCredentials() {
  const state = { asked: 0, hold: true, give: () => undefined as void };
  const credentials = () => ({ accessKeyId: 'local', secretAccessKey: 'local', expiration: new Date(Date.now() + 60_000) });
  const provider = () => {
    state.asked++;
    if (!state.hold) return Promise.resolve(credentials());
    return new Promise<ReturnType<typeof credentials>>((resolve) => {
      state.give = () => {
        state.hold = false;
        resolve(credentials());
      };
    });
  };
  return { state, provider };
}

describe('a request held on its credentials (tellCredentialsWait)', () => {
  it(`is told once a wait, after ${CREDENTIALS_TOLD_AFTER_MS} ms on the given clock; again on a later wait; never for credentials that come`, async () => {
    const clock = simulatedClock();
    const { state, provider } = heldCredentials();
    const client = new DynamoDBClient({ endpoint: inject('ddbEndpoint'), region: LOCAL_REGION, credentials: provider });
    const told: number[] = [];
    tellCredentialsWait(client, clock, (waited) => told.push(waited));
    try {
      const first = client.send(new ListTablesCommand({ Limit: 1 }));
      await waitFor('the credentials asked for', () => state.asked === 1);
      await clock.run(CREDENTIALS_TOLD_AFTER_MS - 1);
      expect(told).toEqual([]);
      await clock.run(1);
      expect(told).toEqual([CREDENTIALS_TOLD_AFTER_MS]);
      await clock.run(60_000); // the same wait: told once
      expect(told).toHaveLength(1);
      state.give();
      await first;
      // the credentials expire within the SDK's refresh window: the next request asks again, and is held
      state.hold = true;
      const asked = state.asked;
      const second = client.send(new ListTablesCommand({ Limit: 1 }));
      await waitFor('the credentials asked for again', () => state.asked === asked + 1);
      await clock.run(CREDENTIALS_TOLD_AFTER_MS);
      expect(told).toHaveLength(2);
      state.give();
      await second;
      // credentials that come at once: nothing told, however long the clock runs afterwards
      await client.send(new ListTablesCommand({ Limit: 1 }));
      await clock.run(5 * CREDENTIALS_TOLD_AFTER_MS);
      expect(told).toHaveLength(2);
    } finally {
      client.destroy();
    }
  });
});

describe('conclave held on a credential_process', () => {
  let h: CliHarness;
  let dir: string;
  const saved = { ...process.env };
  beforeAll(async () => {
    h = await cliHarness('cli-credentials');
    const now = 1_800_000_000_000;
    await h.seedLease(lease('w1', { name: 'held-job', renewTime: now, acquireTime: now - MIN }));
    dir = mkdtempSync(join(tmpdir(), 'conclave-credentials-'));
    // a credential_process that says it started, then answers once a file appears (watched, not polled)
    writeFileSync(
      join(dir, 'process.mjs'),
      `import { existsSync, watch, writeFileSync } from 'node:fs';
const go = ${JSON.stringify(join(dir, 'go'))};
const answer = () => existsSync(go) && process.stdout.write(JSON.stringify({ Version: 1, AccessKeyId: 'local', SecretAccessKey: 'local' }), () => process.exit(0));
watch(${JSON.stringify(dir)}, answer);
writeFileSync(${JSON.stringify(join(dir, 'started'))}, '');
answer();
`,
    );
    writeFileSync(join(dir, 'config'), `[profile waiting]\nregion = ${LOCAL_REGION}\ncredential_process = "${process.execPath}" "${join(dir, 'process.mjs')}"\n`);
  });
  afterAll(async () => {
    for (const k of Object.keys(process.env)) if (!(k in saved)) delete process.env[k];
    Object.assign(process.env, saved);
    await h.t.drop();
  });

  it('says after 10 s what it waits for and how to check it, then runs once the credentials come (the profile given as --profile)', async () => {
    // the AWS SDK reads the process's environment (the profile, the endpoint); the CLI is given the same
    for (const k of Object.keys(process.env)) if (k.startsWith('AWS_')) delete process.env[k];
    // the profile given as --profile, not AWS_PROFILE: its credential_process runs only if the flag reaches the AWS SDK
    const env = { AWS_CONFIG_FILE: join(dir, 'config'), AWS_SHARED_CREDENTIALS_FILE: join(dir, 'no-credentials'), AWS_EC2_METADATA_DISABLED: 'true', AWS_ENDPOINT_URL_DYNAMODB: h.endpoint };
    Object.assign(process.env, env);
    const clock = simulatedClock();
    const out: string[] = [];
    const err: string[] = [];
    const run = main(['--profile', 'waiting', '--table-prefix', h.prefix, 'get', 'leases'], { out: (s) => out.push(s), err: (s) => err.push(s), color: false, env, clock, stdinIsTTY: false });
    await waitFor('the credential_process started', () => existsSync(join(dir, 'started')));
    await clock.run(CREDENTIALS_TOLD_AFTER_MS - 1);
    expect(err).toEqual([]);
    await clock.run(1);
    // before: nothing at all, until Ctrl-C
    expect(err).toEqual([credentialsWaitLine(CREDENTIALS_TOLD_AFTER_MS, 'waiting')]);
    expect(err[0]).toBe(
      "waiting for AWS credentials: the AWS SDK's credential provider (profile waiting) has not answered in 10 s, and no request is sent until it does - a credential_process waiting for input, an SSO login to renew (aws sso login) or an instance metadata service out of reach hold it; check them with `aws sts get-caller-identity --profile waiting`. Ctrl-C stops the command",
    );
    writeFileSync(join(dir, 'go'), '');
    expect(await run).toBe(0);
    expect(out.join('\n')).toContain('held-job');
    expect(err).toHaveLength(1);
  });

  it('names the default profile when none is set', () => {
    expect(credentialsWaitLine(12_000, undefined)).toMatch(/^waiting for AWS credentials: the AWS SDK's credential provider \(the default profile, or the environment\) has not answered in 12 s, .* check them with `aws sts get-caller-identity`\. Ctrl-C/);
  });
});

/**
 * Bad input is refused before anything is read or written, every problem at once. Found by a
 * review (2026-12-02): withLease judged its timings only when it made its elector, after its first
 * read of the lease, so with a `tables` option naming no table a bad renewDeadlineMs came as a
 * TableNotFoundError (and, the table fixed, as the ValidationError after it), and a bad waitMs and
 * a bad renewDeadlineMs came in two rounds. Each entry point below is given bad options and tables
 * that do not exist on DynamoDB Local: it must refuse with the options' ValidationError, naming
 * every problem, with no request sent (counted by middleware on the client).
 */
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { describe, expect, inject, it } from 'vitest';
import { manualClock } from '../../lib/clock.js';
import { localClient } from '../../lib/local/dynamodb-local.js';
import { IdentityLeaseHeartbeat, LeaderElector, LeaseCandidate, Session, WithLeaseOptionsSchema, getLeader, listIdentities, tryWithLease, withLease, type WithLeaseOptions } from '../../lib/sdk/index.js';
import { PushChannel } from '../../lib/sdk/push-channel.js';
import { ValidationError, issuesOf } from '../../lib/schemas/validation.js';

const PREFIX = 'no-such-deployment';
const candidacy = { emulationVersion: '1.0.0', binaryVersion: '1.0.0' };

/** A client to DynamoDB Local that counts the requests it is asked to send. */
function counted(): { client: DynamoDBClient; sent: string[] } {
  const client = localClient(inject('ddbEndpoint'));
  const sent: string[] = [];
  client.middlewareStack.add(
    (next, context) => (args) => {
      sent.push(context.commandName ?? '?');
      return next(args);
    },
    { step: 'initialize', name: 'countRequests' },
  );
  return { client, sent };
}

interface Row {
  name: string;
  /** Makes the call (or the object, and runs it) with `client`: it must reject or throw. */
  call: (client: DynamoDBClient) => unknown;
  /** Every field the ValidationError names, in order. */
  fields: string[];
}

const rows: Row[] = [
  {
    name: "withLease: a renew deadline not below the lease's duration, and a waitMs below 0",
    call: (client) => withLease('job', async () => 1, { client, tables: PREFIX, mode: 'NoCoordination', leaseDurationMs: 10_000, renewDeadlineMs: 10_000, waitMs: -1 }),
    fields: ['waitMs', 'renewDeadlineMs'],
  },
  {
    name: 'withLease: a renew deadline below 0 (a bound only the elector knew)',
    call: (client) => withLease('job', async () => 1, { client, tables: PREFIX, renewDeadlineMs: -1 }),
    fields: ['renewDeadlineMs'],
  },
  {
    name: "withLease: mode 'coordinated' without a candidacy, and a retry period not below the renew deadline",
    call: (client) => withLease('job', async () => 1, { client, tables: PREFIX, mode: 'coordinated', retryPeriodMs: 10_000 }),
    fields: ['candidacy', 'retryPeriodMs'],
  },
  {
    name: 'withLease: a candidacy emulating above its binary',
    call: (client) => withLease('job', async () => 1, { client, tables: PREFIX, candidacy: { emulationVersion: '2.0.0', binaryVersion: '1.0.0' } }),
    fields: ['candidacy.emulationVersion'],
  },
  {
    name: 'tryWithLease: a lease duration below 1000 ms, and an identity that is no name',
    call: (client) => tryWithLease('job', async () => 1, { client, tables: PREFIX, leaseDurationMs: 500, identity: 'no spaces' }),
    fields: ['identity', 'leaseDurationMs'],
  },
  {
    name: 'getLeader: a clock skew below 0',
    call: (client) => getLeader('job', { client, tables: PREFIX, clockSkewMs: -1 }),
    fields: ['clockSkewMs'],
  },
  // found by a review (2026-12-02): the lease name, the function and the options were judged in
  // three steps, so a bad lease name hid a bad function and bad options
  {
    name: 'withLease: a lease name that is no name, a function that is none, and a waitMs below 0',
    call: (client) => withLease('no spaces', 'fn' as never, { client, tables: PREFIX, waitMs: -1 }),
    fields: ['leaseName', 'fn', 'waitMs'],
  },
  {
    name: 'tryWithLease: an empty lease name, and a lease duration below 1000 ms',
    call: (client) => tryWithLease('', async () => 1, { client, tables: PREFIX, leaseDurationMs: 500 }),
    fields: ['leaseName', 'leaseDurationMs'],
  },
  {
    name: 'withLease: a function that is none, and a renew deadline below 0',
    call: (client) => withLease('job', undefined as never, { client, tables: PREFIX, renewDeadlineMs: -1 }),
    fields: ['fn', 'renewDeadlineMs'],
  },
  {
    name: 'getLeader: a lease name that is no name, and a clock skew below 0',
    call: (client) => getLeader('no spaces', { client, tables: PREFIX, clockSkewMs: -1 }),
    fields: ['leaseName', 'clockSkewMs'],
  },
  {
    name: 'listIdentities: a component that is no name',
    call: (client) => listIdentities({ client, tables: PREFIX, component: 'no spaces' }),
    fields: ['component'],
  },
  // found by a review (2026-12-02): a runOnce.at after now was judged only at the first read, even
  // where the clock it is judged on needs no request (clockSync 'none': this machine's), so a
  // missing table came first, and a bad waitMs hid it. runOnce.at that is no time at all (NaN, a
  // Date that is invalid, a negative number, text) was already refused before any request: held to it
  ...([NaN, new Date('no date'), -1, 'tomorrow'] as unknown[]).map((at) => ({
    name: `withLease: runOnce.at ${at instanceof Date ? 'an invalid Date' : typeof at === 'string' ? JSON.stringify(at) : String(at)}, and a waitMs below 0`,
    call: (client: DynamoDBClient) => withLease('job', async () => 1, { client, tables: PREFIX, waitMs: -1, runOnce: { every: 'day', at: at as number } }),
    fields: ['waitMs', 'runOnce.at'],
  })),
  {
    name: "withLease: runOnce.at 3 min after this machine's time (clockSync 'none'), and a waitMs below 0",
    call: (client) => withLease('job', async () => 1, { client, tables: PREFIX, mode: 'NoCoordination', clockSync: 'none', clock: manualClock(Date.UTC(2026, 11, 1, 23, 59)), waitMs: -1, runOnce: { every: 'day', at: '2026-12-02T00:02:00Z' } }),
    fields: ['waitMs', 'runOnce.at'],
  },
  {
    name: "tryWithLease: runOnce.at 3 min after this machine's time (clockSync 'none')",
    call: (client) => tryWithLease('job', async () => 1, { client, tables: PREFIX, clockSync: 'none', clock: manualClock(Date.UTC(2026, 11, 1, 23, 59)), runOnce: { every: 'day', at: Date.UTC(2026, 11, 2, 0, 2) } }),
    fields: ['runOnce.at'],
  },
  {
    // found by a review (2026-12-05): 256 characters passed, but of four bytes each the window's row key is over DynamoDB's 1,024 bytes,
    // and the run took the lease, then failed its claim with DynamoDB's own ValidationException, naming no option
    name: 'withLease: a runOnce.window of 256 four-byte characters (1,024 bytes: its row key over a sort key’s 1,024)',
    call: (client) => withLease('job', async () => 1, { client, tables: PREFIX, runOnce: { window: '😀'.repeat(256) } }),
    fields: ['runOnce.window'],
  },
  {
    name: 'LeaderElector: a renew deadline not below the lease duration',
    call: (client) => new LeaderElector({ client, tables: PREFIX, leaseName: 'job', identity: 'w1', candidacy, platform: 'none', leaseDurationMs: 10_000, renewDeadlineMs: 10_000, callbacks: { onStartedLeading: () => undefined } }).run(new AbortController().signal),
    fields: ['renewDeadlineMs'],
  },
  {
    name: 'Session: renewals that do not fit the renew deadline',
    call: (client) => new Session({ client, tables: PREFIX, renewIntervalMs: 5_000, retryPeriodMs: 1_500, renewDeadlineMs: 6_000 }).run(new AbortController().signal),
    fields: ['renewIntervalMs'],
  },
  {
    name: 'LeaseCandidate: an emulation above its binary',
    call: (client) => new LeaseCandidate({ client, tables: PREFIX, leaseName: 'job', name: 'w1', emulationVersion: '2.0.0', binaryVersion: '1.0.0' }).run(new AbortController().signal),
    fields: ['emulationVersion'],
  },
  {
    name: 'IdentityLeaseHeartbeat: a lease too short for its renewals',
    call: (client) => new IdentityLeaseHeartbeat({ client, tables: PREFIX, component: 'scheduler', renewIntervalMs: 10_000, leaseDurationSeconds: 1 }).run(new AbortController().signal),
    fields: ['leaseDurationSeconds'],
  },
  {
    name: "PushChannel: a client id of another deployment's prefix",
    call: (client) => new PushChannel({ client, tables: PREFIX, endpoint: 'ws://127.0.0.1:1/mqtt', clientId: 'other' }),
    fields: ['clientId'],
  },
];

describe('bad options and a missing table: the options are refused, every problem at once, nothing sent', () => {
  it.each(rows)('$name', async ({ call, fields }) => {
    const { client, sent } = counted();
    let error: unknown;
    try {
      await call(client);
    } catch (e) {
      error = e;
    }
    expect(error, String(error)).toBeInstanceOf(ValidationError);
    expect((error as ValidationError).fields, (error as Error).message).toEqual(fields);
    expect(sent).toEqual([]);
  });
});

describe('runOnce.at after DynamoDB’s time, already known from the client’s earlier answers', () => {
  // found by a review (2026-12-02): a client that has answered before (a Lambda function's, kept
  // between invocations) already knows DynamoDB's time, yet runOnce.at was judged only after the
  // first read: a missing table came first, and a bad waitMs hid it
  it('withLease: refused with the other options before any request, in one ValidationError', async () => {
    const { client, sent } = counted();
    // this machine's clock 10 min fast: judged on DynamoDB's time, which the client's answers told
    const clock = manualClock(Date.now() + 10 * 60_000);
    // an earlier call on this client: its answers (a missing table's too) carry DynamoDB's Date header
    expect(await withLease('job', async () => 1, { client, tables: PREFIX, clock }).catch((x: unknown) => (x as Error).name)).toBe('TableNotFoundError');
    expect(sent.length).toBeGreaterThan(0);
    sent.length = 0;
    const e = await withLease('job', async () => 1, { client, tables: PREFIX, clock, waitMs: -1, runOnce: { every: 'hour', at: clock.now() } }).catch((x: unknown) => x);
    expect(e, String(e)).toBeInstanceOf(ValidationError);
    expect((e as ValidationError).fields).toEqual(['waitMs', 'runOnce.at']);
    expect((e as Error).message).toMatch(/runOnce\.at: is (59\d|60\d)\.\d s after DynamoDB's time now/);
    // alone: the options' error, not the missing table's
    const alone = await tryWithLease('job', async () => 1, { client, tables: PREFIX, clock, runOnce: { every: 'hour', at: clock.now() } }).catch((x: unknown) => x);
    expect(alone, String(alone)).toBeInstanceOf(ValidationError);
    expect((alone as ValidationError).fields).toEqual(['runOnce.at']);
    expect(sent).toEqual([]);
  });
});

describe('WithLeaseOptionsSchema alone reports the problems withLease reports', () => {
  // found by a review (2026-12-02): the exported schema judged withLease's own fields only, not the
  // LeaderElector's rules withLease applies to them (each timing's bounds and their order, the
  // candidacy's rules, a session's fit, a candidacy for mode 'coordinated'), so options a user
  // checked with it passed, and withLease refused them
  const rows: { name: string; options: (client: DynamoDBClient) => WithLeaseOptions; fields: string[] }[] = [
    { name: "a renew deadline not below the lease's duration, and a waitMs below 0", options: (client) => ({ client, mode: 'NoCoordination', leaseDurationMs: 10_000, renewDeadlineMs: 10_000, waitMs: -1 }), fields: ['waitMs', 'renewDeadlineMs'] },
    { name: 'a renew deadline below 0', options: (client) => ({ client, renewDeadlineMs: -1 }), fields: ['renewDeadlineMs'] },
    { name: 'a retry period not below the renew deadline', options: (client) => ({ client, retryPeriodMs: 10_000 }), fields: ['retryPeriodMs'] },
    { name: 'a renew interval that leaves no retry before the renew deadline', options: (client) => ({ client, renewIntervalMs: 9_000 }), fields: ['renewIntervalMs'] },
    { name: "mode 'coordinated' without a candidacy", options: (client) => ({ client, mode: 'coordinated' }), fields: ['candidacy'] },
    { name: 'a candidacy emulating above its binary', options: (client) => ({ client, candidacy: { emulationVersion: '2.0.0', binaryVersion: '1.0.0' } }), fields: ['candidacy.emulationVersion'] },
    { name: 'a lease duration below 1000 ms, and an identity that is no name', options: (client) => ({ client, leaseDurationMs: 500, identity: 'no spaces' }), fields: ['identity', 'leaseDurationMs'] },
    {
      name: "a session holding leases shorter than the run's",
      options: (client) => ({ client, candidacy: { emulationVersion: '1.0.0', binaryVersion: '1.0.0' }, session: new Session({ client, tables: PREFIX, leaseNames: ['job'], maxLeaseDurationMs: 10_000 }) }),
      fields: ['session'],
    },
  ];
  it.each(rows)('$name', async ({ options, fields }) => {
    const { client, sent } = counted();
    const told = await withLease('job', async () => 1, { ...options(client), tables: PREFIX }).catch((x: unknown) => x);
    expect(told, String(told)).toBeInstanceOf(ValidationError);
    expect((told as ValidationError).fields).toEqual(fields);
    expect(sent).toEqual([]);
    const alone = WithLeaseOptionsSchema.safeParse({ ...options(client), tables: PREFIX });
    expect(alone.success).toBe(false);
    expect(issuesOf(alone.error!)).toEqual((told as ValidationError).issues);
  });

  it('good options pass; a session that does not serve the lease is told by withLease, which knows the lease, and not by the schema, which does not', async () => {
    const { client, sent } = counted();
    const options = { client, tables: PREFIX, candidacy: { emulationVersion: '1.0.0', binaryVersion: '1.0.0' }, session: new Session({ client, tables: PREFIX, leaseNames: ['other'] }) };
    expect(WithLeaseOptionsSchema.safeParse(options).success).toBe(true);
    const told = await withLease('job', async () => 1, options).catch((x: unknown) => x);
    expect((told as ValidationError).fields).toEqual(['session']);
    expect((told as Error).message).toMatch(/session: serves the leases \["other"\] \(its leaseNames, the grant's\), not 'job'/);
    expect(sent).toEqual([]);
  });
});

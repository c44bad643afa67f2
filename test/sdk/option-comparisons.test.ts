/**
 * A comparison between two fields runs only when both passed their own checks. Found by a review
 * (2026-12-02): `renewDeadlineMs: -1` was reported as itself ("must be > 0") and again through the
 * comparison it took part in ("retryPeriodMs: must be < renewDeadlineMs (-1)"), a second message
 * that names a field with nothing wrong and a bound no one can meet. The checks compared any value
 * of its type (everyProblem.parsed); each row below is one comparison of the SDK's options, the
 * coordinator's config or a row's schema, fed an operand that fails its own check.
 */
import { describe, expect, it } from 'vitest';
import type * as z from 'zod';
import { LeaseCandidateOptionsSchema } from '../../lib/sdk/candidate.js';
import { LeaderElectorOptionsSchema } from '../../lib/sdk/elector-options.js';
import { IdentityLeaseHeartbeatOptionsSchema } from '../../lib/sdk/identity.js';
import { PushChannelOptionsSchema } from '../../lib/sdk/push-channel.js';
import { Session, SessionOptionsSchema } from '../../lib/sdk/session.js';
import { withLease } from '../../lib/sdk/with-lease.js';
import { ElectionConfigSchema } from '../../lib/schemas/config.js';
import { Location } from '../../lib/schemas/location.js';
import { TickCursorItem } from '../../lib/schemas/tick-cursor.js';
import { parse, ValidationError } from '../../lib/schemas/validation.js';
import { DynamoDBModel } from '../../sim/dynamodb-model/index.js';
import { Sim } from '../../sim/harness.js';

const client = new DynamoDBModel({ now: () => 0 }).client({ name: 'test' });
const elector = { leaseName: 'nightly-report', identity: 'w-1', mode: 'NoCoordination' as const, client, callbacks: { onStartedLeading: () => undefined } };
const coordinated = { ...elector, mode: 'coordinated' as const, candidacy: { emulationVersion: '1.0.0', binaryVersion: '1.0.0' } };
const session = new Session({ client, leaseNames: ['nightly-report'] });
const candidate = { leaseName: 'nightly-report', name: 'w-1', emulationVersion: '1.0.0', binaryVersion: '1.0.0', client };

/** The issues `parse` refuses `input` with. */
function issuesOf(schema: z.ZodType, input: unknown): ValidationError['issues'] {
  try {
    parse(schema, input, 'options');
  } catch (e) {
    if (e instanceof ValidationError) return e.issues;
    throw e;
  }
  throw new Error('no ValidationError');
}

interface Row {
  name: string;
  schema: z.ZodType;
  input: unknown;
  /** Every issue, field and message start: the bad operand's own, and no comparison. */
  want: [field: string, message: string][];
}
const rows: Row[] = [
  {
    name: 'LeaderElector: renewDeadlineMs -1 is not compared with retryPeriodMs (nor renewIntervalMs)',
    schema: LeaderElectorOptionsSchema,
    input: { ...elector, renewDeadlineMs: -1, renewIntervalMs: 1_000 },
    want: [['renewDeadlineMs', 'must be > 0, not the number -1']],
  },
  {
    name: 'LeaderElector: leaseDurationMs 500 (below 1000) is not compared with renewDeadlineMs',
    schema: LeaderElectorOptionsSchema,
    input: { ...elector, leaseDurationMs: 500 },
    want: [['leaseDurationMs', 'must be >= 1000 ms']],
  },
  {
    name: "LeaderElector: leaseDurationMs above a day is not compared with the session's maxLeaseDurationMs",
    schema: LeaderElectorOptionsSchema,
    input: { ...coordinated, session, leaseDurationMs: 100_000_000, renewDeadlineMs: 10_000 },
    want: [['leaseDurationMs', 'must be at most 86400000 ms']],
  },
  {
    name: "LeaderElector: a leaseName that is no name is not looked for among the session's leaseNames",
    schema: LeaderElectorOptionsSchema,
    input: { ...coordinated, session, leaseName: 'Nightly Report' },
    want: [['leaseName', 'may use letters, digits']],
  },
  {
    name: "LeaderElector: renewDeadlineMs 0 is not compared with the session's renewDeadlineMs and retryPeriodMs",
    schema: LeaderElectorOptionsSchema,
    input: { ...coordinated, session, renewDeadlineMs: 0 },
    want: [['renewDeadlineMs', 'must be > 0, not the number 0']],
  },
  {
    name: 'Session: renewDeadlineMs -1 is not compared with renewIntervalMs + retryPeriodMs',
    schema: SessionOptionsSchema,
    input: { client, renewDeadlineMs: -1 },
    want: [['renewDeadlineMs', 'must be > 0, not the number -1']],
  },
  {
    // before: only "renewIntervalMs: must be < renewDeadlineMs - retryPeriodMs (-1099511620276)", a
    // field with nothing wrong and a bound no one can meet, and nothing said of retryPeriodMs
    name: 'Session: retryPeriodMs at or above renewDeadlineMs is named itself, and renewIntervalMs is not compared with their difference',
    schema: SessionOptionsSchema,
    input: { client, retryPeriodMs: 2 ** 40 },
    want: [['retryPeriodMs', 'must be < renewDeadlineMs (7500)']],
  },
  {
    name: 'LeaderElector: retryPeriodMs at or above renewDeadlineMs is named itself, and renewIntervalMs is not compared with their difference',
    schema: LeaderElectorOptionsSchema,
    input: { ...elector, retryPeriodMs: 10_000, renewIntervalMs: 1_000 },
    want: [['retryPeriodMs', 'must be < renewDeadlineMs (10000)']],
  },
  {
    name: 'Session: maxLeaseDurationMs 500 (below 1000) is not compared with renewDeadlineMs',
    schema: SessionOptionsSchema,
    input: { client, maxLeaseDurationMs: 500 },
    want: [['maxLeaseDurationMs', 'must be >= 1000, not the number 500']],
  },
  {
    name: "LeaseCandidate: an empty instance is not compared with the session's process",
    schema: LeaseCandidateOptionsSchema,
    input: { ...candidate, session, instance: '' },
    want: [['instance', 'must not be empty']],
  },
  {
    name: 'IdentityLeaseHeartbeat: leaseDurationSeconds 0 is not compared with what renewIntervalMs needs',
    schema: IdentityLeaseHeartbeatOptionsSchema,
    input: { client, component: 'scheduler', leaseDurationSeconds: 0 },
    want: [['leaseDurationSeconds', 'must be >= 1']],
  },
  {
    name: "PushChannel: a clientId of characters IoT Core refuses is not compared with the deployment's prefix",
    schema: PushChannelOptionsSchema,
    input: { endpoint: 'ws://127.0.0.1:1883/mqtt', clientId: 'other id!' },
    want: [['clientId', 'must be 1-']],
  },
  {
    name: 'coordinator config: candidateStaleAfterMs 0 is not compared with candidateRepingAfterMs',
    schema: ElectionConfigSchema,
    input: { candidateStaleAfterMs: 0 },
    want: [['candidateStaleAfterMs', 'must be whole milliseconds above 0, e.g. 1800000 (the default)']],
  },
  {
    name: 'coordinator config: ackWindowMs above its bound is not compared with askAgainAfterMs',
    schema: ElectionConfigSchema,
    input: { ackWindowMs: 100_000 },
    want: [['ackWindowMs', 'must be <= 60000, not the number 100000']],
  },
  {
    name: "a candidate's location: a region that is no region's name is not compared with the zone's",
    schema: Location,
    input: { zone: 'us-east-1a', region: 'US East' },
    want: [['region', 'must']],
  },
  {
    name: 'the tick cursor row: segments 0 is not compared with segment',
    schema: TickCursorItem,
    input: { component: 'conclave-coordinator', name: 'tick', segments: 0, segment: 1, leases: 0, invocations: 0, revision: 1 },
    want: [['segments', 'must be >= 1, not the number 0']],
  },
];

describe('a comparison whose operand failed its own check is not made', () => {
  it.each(rows)('$name', ({ schema, input, want }) => {
    const issues = issuesOf(schema, input);
    expect(issues.map((i) => i.field)).toEqual(want.map(([field]) => field));
    want.forEach(([, message], n) => expect(issues[n]!.message.startsWith(message), `${issues[n]!.field}: ${issues[n]!.message}`).toBe(true));
  });

  it('withLease: renewDeadlineMs -1, judged by the elector, is not compared with retryPeriodMs', async () => {
    const sim = await Sim.create();
    const m = sim.machine();
    const e = await sim.settle(withLease('nightly-report', async () => 1, { client: m.client, clock: m.clock, tables: sim.names, mode: 'NoCoordination', renewDeadlineMs: -1 })).catch((x: unknown) => x);
    expect(e).toBeInstanceOf(ValidationError);
    expect((e as ValidationError).message).toBe('invalid withLease options for lease "nightly-report": renewDeadlineMs: must be > 0, not the number -1');
  });

  it('operands that passed their own checks are still compared, beside another field that failed', () => {
    // a bad value elsewhere does not stop the comparison of two good timings (everyProblem's first purpose)
    const issues = issuesOf(LeaderElectorOptionsSchema, { ...elector, healthToleranceMs: -1, leaseDurationMs: 10_000, renewDeadlineMs: 10_000, retryPeriodMs: 20_000 });
    expect(issues.map((i) => i.field)).toEqual(['healthToleranceMs', 'renewDeadlineMs', 'retryPeriodMs']);
    expect(issues[1]!.message).toMatch(/^must be < leaseDurationMs \(10000\)/);
    expect(issues[2]!.message).toMatch(/^must be < renewDeadlineMs \(10000\)/);
  });
});

describe('a timing refused because of another option left to its default', () => {
  // before: `leaseDurationMs: 1000` alone was refused as "renewDeadlineMs: must be < leaseDurationMs
  // (1000)", an option the user never wrote, without saying it was the default nor what to give
  it('leaseDurationMs alone below the default renew deadline: says renewDeadlineMs is 10000 when not given, and timings that fit', () => {
    const issues = issuesOf(LeaderElectorOptionsSchema, { ...elector, leaseDurationMs: 1_000 });
    expect(issues).toEqual([
      {
        field: 'renewDeadlineMs',
        message:
          "must be < leaseDurationMs (1000) so a leader stops acting before its term can expire (renewDeadlineMs is 10000 when not given: give it and retryPeriodMs with a shorter leaseDurationMs, such as 666 and 133 (client-go's 15000/10000/2000 scaled))",
      },
    ]);
    // the timings it names are accepted
    expect(() => parse(LeaderElectorOptionsSchema, { ...elector, leaseDurationMs: 1_000, renewDeadlineMs: 666, retryPeriodMs: 133 }, 'options')).not.toThrow();
  });

  it('renewDeadlineMs alone below the default retry period: says retryPeriodMs is 2000 when not given', () => {
    const issues = issuesOf(LeaderElectorOptionsSchema, { ...elector, leaseDurationMs: 3_000, renewDeadlineMs: 1_500 });
    expect(issues).toEqual([{ field: 'retryPeriodMs', message: 'must be < renewDeadlineMs (1500) so a leader gets more than one try to renew (retryPeriodMs is 2000 when not given: give it with a shorter renewDeadlineMs)' }]);
  });

  it('a Session with maxLeaseDurationMs alone below its default renew deadline: says renewDeadlineMs is 7500 when not given, and timings that fit', () => {
    const issues = issuesOf(SessionOptionsSchema, { client, maxLeaseDurationMs: 5_000 });
    expect(issues).toEqual([
      {
        field: 'renewDeadlineMs',
        message:
          'must be < maxLeaseDurationMs (5000) so the session ends before anyone can see it expire (renewDeadlineMs is 7500 when not given: give it with renewIntervalMs and retryPeriodMs for a shorter maxLeaseDurationMs, such as 2500, 1666 and 500 (the defaults scaled))',
      },
    ]);
    expect(() => parse(SessionOptionsSchema, { client, maxLeaseDurationMs: 5_000, renewDeadlineMs: 2_500, renewIntervalMs: 1_666, retryPeriodMs: 500 }, 'options')).not.toThrow();
    // renewDeadlineMs alone, short: the default renew interval and retry period named as such
    expect(issuesOf(SessionOptionsSchema, { client, renewDeadlineMs: 1_000 })).toEqual([
      { field: 'retryPeriodMs', message: 'must be < renewDeadlineMs (1000) so a failed renewal is tried again before the deadline (retryPeriodMs is 1500 when not given: give it with a shorter renewDeadlineMs)' },
    ]);
    expect(issuesOf(SessionOptionsSchema, { client, renewDeadlineMs: 3_000 })).toEqual([
      { field: 'renewIntervalMs', message: 'must be < renewDeadlineMs - retryPeriodMs (1500) so a failed renewal is tried again before the deadline (renewIntervalMs is 5000 when not given: give it with a shorter renewDeadlineMs)' },
    ]);
  });

  it('a value given that differs from the default: no word of defaults', () => {
    const issues = issuesOf(LeaderElectorOptionsSchema, { ...elector, leaseDurationMs: 5_000, renewDeadlineMs: 6_000 });
    expect(issues.map((i) => [i.field, i.message])).toEqual([['renewDeadlineMs', 'must be < leaseDurationMs (5000) so a leader stops acting before its term can expire']]);
  });
});

describe('a period meant in seconds', () => {
  // retryPeriodMs: 2 (client-go's 2 s) was accepted: a leader renewed about every 2 ms (96 writes a
  // second, one lease at rest), and a failing follower tried again every few milliseconds
  it.each([
    ['LeaderElector retryPeriodMs', LeaderElectorOptionsSchema, { ...elector, retryPeriodMs: 2 }, 'retryPeriodMs'],
    ['LeaderElector renewIntervalMs', LeaderElectorOptionsSchema, { ...elector, renewIntervalMs: 5 }, 'renewIntervalMs'],
    ['Session retryPeriodMs', SessionOptionsSchema, { client, retryPeriodMs: 1 }, 'retryPeriodMs'],
    ['Session renewIntervalMs', SessionOptionsSchema, { client, renewIntervalMs: 5 }, 'renewIntervalMs'],
  ])('%s is refused, naming it and the unit', (_, schema, input, field) => {
    expect(issuesOf(schema, input)).toEqual([{ field, message: "must be >= 100 ms (milliseconds, not seconds: client-go's 2 s is 2000)" }]);
  });

  it('100 ms is taken', () => {
    expect(() => parse(LeaderElectorOptionsSchema, { ...elector, leaseDurationMs: 1_000, renewDeadlineMs: 500, retryPeriodMs: 100 }, 'options')).not.toThrow();
  });
});

describe('a Session on other tables than its electors and candidates', () => {
  // a review (2026-12-06): taken without a word; the coordinator and the other workers looked for the
  // session in the lease's deployment, so each term on it was judged ended (the lease leaderless 45% of the time)
  const elsewhere = new Session({ client, tables: 'other-deployment', leaseNames: ['nightly-report'] });
  const message = /^keeps its rows in the identities table other-deployment-identities, and these tables' is conclave-identities: .*Give the Session the same tables/;
  it('a LeaderElector is refused, naming session and both tables', () => {
    expect(issuesOf(LeaderElectorOptionsSchema, { ...coordinated, session: elsewhere })).toEqual([{ field: 'session', message: expect.stringMatching(message) as unknown }]);
  });
  it('a LeaseCandidate is refused the same way', () => {
    expect(issuesOf(LeaseCandidateOptionsSchema, { ...candidate, session: elsewhere })).toEqual([{ field: 'session', message: expect.stringMatching(message) as unknown }]);
  });
  it('the same tables are taken', () => {
    expect(() => parse(LeaderElectorOptionsSchema, { ...coordinated, session }, 'options')).not.toThrow();
  });
});

describe("a Session whose clock options are looser than its electors' and candidates'", () => {
  // a review (2026-12-06): taken without a word; every term held on the session is judged by the
  // session row's stamp, so an elector on clockSync 'server' over a Session on 'none' took the wall
  // clock after all (the simulator: a clock 12 s slow, two leaders of one lease)
  const wallClock = new Session({ client, leaseNames: ['nightly-report'], clockSync: 'none' });
  const loose = new Session({ client, leaseNames: ['nightly-report'], maxClockErrorMs: 5_000 });
  const onWall = /^stamps its row with this machine's wall clock \(its clockSync 'none'\), and clockSync here is 'server': .*Give the Session clockSync 'server' \(the default\), or clockSync 'none' here too/;
  it("a LeaderElector on clockSync 'server' (the default) over a Session on 'none' is refused, naming session and the fix", () => {
    expect(issuesOf(LeaderElectorOptionsSchema, { ...coordinated, session: wallClock })).toEqual([{ field: 'session', message: expect.stringMatching(onWall) as unknown }]);
  });
  it('a LeaseCandidate the same way', () => {
    expect(issuesOf(LeaseCandidateOptionsSchema, { ...candidate, session: wallClock })).toEqual([{ field: 'session', message: expect.stringMatching(onWall) as unknown }]);
  });
  it("a LeaderElector with a tighter maxClockErrorMs than its Session's is refused, naming both and a value that fits", () => {
    expect(issuesOf(LeaderElectorOptionsSchema, { ...coordinated, session: loose })).toEqual([
      { field: 'session', message: expect.stringMatching(/^renews its row while its estimate of DynamoDB's time is within 5000 ms \(its maxClockErrorMs\), looser than maxClockErrorMs here \(500 ms\): .*Give the Session a maxClockErrorMs of 500 or less$/) as unknown },
    ]);
  });
  it("taken: both on 'none', an elector on 'none' over a Session on 'server', a Session as tight as its elector or tighter", () => {
    expect(() => parse(LeaderElectorOptionsSchema, { ...coordinated, clockSync: 'none', session: wallClock }, 'options')).not.toThrow();
    expect(() => parse(LeaseCandidateOptionsSchema, { ...candidate, clockSync: 'none', session: wallClock }, 'options')).not.toThrow();
    expect(() => parse(LeaderElectorOptionsSchema, { ...coordinated, clockSync: 'none', session }, 'options')).not.toThrow();
    expect(() => parse(LeaderElectorOptionsSchema, { ...coordinated, maxClockErrorMs: 5_000, session: loose }, 'options')).not.toThrow();
    expect(() => parse(LeaderElectorOptionsSchema, { ...coordinated, maxClockErrorMs: 1_000, session }, 'options')).not.toThrow();
  });
});

describe("a Session whose renew deadline leaves its elector no retry: the fix named is one the Session takes", () => {
  // a review (2026-12-06): the message named only a renewDeadlineMs, which the Session then refused
  // against its default renewIntervalMs and retryPeriodMs (a second round trip for the user)
  it('at 8000/6000/500 the advice is a whole set of timings, and a Session given them is taken by both', () => {
    const timings = { leaseDurationMs: 8_000, renewDeadlineMs: 6_000, retryPeriodMs: 500 };
    const [issue] = issuesOf(LeaderElectorOptionsSchema, { ...coordinated, ...timings, session });
    expect(issue).toEqual({ field: 'session', message: expect.stringMatching(/Give the session a renewDeadlineMs below 5500, with its renewIntervalMs and retryPeriodMs below that, such as renewDeadlineMs 5400, renewIntervalMs 3600 and retryPeriodMs 1000 \(the session's defaults scaled\)$/) as unknown });
    const fitted = new Session({ client, leaseNames: ['nightly-report'], renewDeadlineMs: 5_400, renewIntervalMs: 3_600, retryPeriodMs: 1_000 });
    expect(() => parse(LeaderElectorOptionsSchema, { ...coordinated, ...timings, session: fitted }, 'options')).not.toThrow();
  });
});

describe('a retry period that leaves the default renew interval no retry before the renew deadline', () => {
  // before: only retryPeriodMs < renewDeadlineMs was checked; at 15000/10000/9999 a lone NoCoordination
  // leader renewed every 9,999 ms, 1 ms before its deadline, and lost every term (no error, no warning)
  it.each([
    ['NoCoordination', 9_999, elector, "mode 'NoCoordination' renews as client-go does"],
    ['NoCoordination', 5_000, elector, "mode 'NoCoordination' renews as client-go does"],
    ['coordinated', 9_999, coordinated, 'the default interval, renewDeadlineMs less two retry periods, is never below one'],
    ['coordinated', 5_000, coordinated, 'the default interval, renewDeadlineMs less two retry periods, is never below one'],
  ] as const)('%s, retryPeriodMs %i against renewDeadlineMs 10000: refused, naming retryPeriodMs and a value that fits', (_, retryPeriodMs, base, why) => {
    const issues = issuesOf(LeaderElectorOptionsSchema, { ...base, leaseDurationMs: 15_000, renewDeadlineMs: 10_000, retryPeriodMs });
    expect(issues).toEqual([
      {
        field: 'retryPeriodMs',
        message: `must be < renewDeadlineMs / 2 (5000) when renewIntervalMs is not given: a leader then renews every retry period (${why}), and a failed renewal must be tried again before the renew deadline. Give retryPeriodMs 4999 or less, such as 2000 (client-go's 10000/2000)`,
      },
    ]);
  });

  it('a retry period below half the deadline, or an interval of its own that leaves a retry, is accepted', () => {
    for (const base of [elector, coordinated]) {
      expect(() => parse(LeaderElectorOptionsSchema, { ...base, leaseDurationMs: 15_000, renewDeadlineMs: 10_000, retryPeriodMs: 4_999 }, 'options')).not.toThrow();
      expect(() => parse(LeaderElectorOptionsSchema, { ...base, leaseDurationMs: 15_000, renewDeadlineMs: 10_000, retryPeriodMs: 6_000, renewIntervalMs: 3_000 }, 'options')).not.toThrow();
    }
  });
});

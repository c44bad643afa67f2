/**
 * A lease row at the largest number the schema took as a fencing token, Number.MAX_SAFE_INTEGER
 * (a review, 2026-12-06): no next term's token (+1) is a safe integer, so every election on it
 * threw a RangeError blaming the clock, the lease stream retried its record for 12 h holding the
 * records behind it, and the tick counted the lease neither broken nor leaderless. The schema now
 * refuses such a token: the row reads as broken, as any row the schema refuses.
 */
import { DeleteItemCommand, PutItemCommand } from '@aws-sdk/client-dynamodb';
import { marshall } from '@aws-sdk/util-dynamodb';
import type { DynamoDBStreamEvent } from 'aws-lambda';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeHandler as leaseStream } from '../../functions/lease-stream.js';
import { brokenLeaseLines, brokenLeaseReport } from '../../lib/cli/broken.js';
import type { CliContext } from '../../lib/cli/context.js';
import { describeLease } from '../../lib/cli/describe.js';
import { cliContext } from '../../lib/cli/context.js';
import { systemClock } from '../../lib/clock.js';
import { coordinatorDeps } from '../../lib/coordinator/reconcile.js';
import type { PoisonRecord } from '../../lib/functions/dead-letter.js';
import { onTick, type FunctionDeps } from '../../lib/functions/core.js';
import { observability } from '../../lib/functions/env.js';
import { METRIC } from '../../lib/functions/metrics.js';
import { lambdaContext } from '../../lib/local/runtime.js';
import { FencingToken, MAX_FENCING_TOKEN, nextFencingToken } from '../../lib/schemas/fencing-token.js';
import { LeaseItem } from '../../lib/schemas/lease.js';
import { parse, ValidationError } from '../../lib/schemas/validation.js';
import { streamRecords, testTables, type TestTables } from '../support.js';

const OEV = 'OldestEmulationVersion';
const T0 = Date.UTC(2026, 11, 6);

describe('the largest fencing token', () => {
  it('is one below Number.MAX_SAFE_INTEGER: a lease row above it is refused, naming the field and what to do', () => {
    const row = (fencingToken: number) => ({ name: 'x', leaseDurationSeconds: 15, leaseTransitions: 0, fencingToken, revision: 1 });
    expect(LeaseItem.parse(row(MAX_FENCING_TOKEN)).fencingToken).toBe(MAX_FENCING_TOKEN);
    expect(nextFencingToken(MAX_FENCING_TOKEN - 1, T0)).toBe(MAX_FENCING_TOKEN);
    const e = (() => {
      try {
        parse(LeaseItem, row(Number.MAX_SAFE_INTEGER), 'lease "x"');
      } catch (x) {
        return x;
      }
    })();
    // before the fix: parsed
    expect(e).toBeInstanceOf(ValidationError);
    expect((e as ValidationError).fields).toEqual(['fencingToken']);
    expect((e as ValidationError).message).toMatch(/^invalid lease "x": fencingToken: 9007199254740991 is above the largest fencing token, 9007199254740990 \(a next term's, \+1, must be a safe integer\): set it to the clock's \(epoch ms \* 1000\), or delete the row$/);
    expect(FencingToken.safeParse(Number.MAX_SAFE_INTEGER).success).toBe(false);
  });

  it("nextFencingToken blames the previous token when its +1 is what overflows, the clock only when the clock is", () => {
    // before the fix: "is the clock right?" for a clock of 2026
    expect(() => nextFencingToken(Number.MAX_SAFE_INTEGER, T0)).toThrow(/\(previous 9007199254740991, clock \d+\) is past 9007199254740990: the previous token leaves no room: set the row's fencingToken to the clock's \(epoch ms \* 1000\), or delete it$/);
    expect(() => nextFencingToken(Number.MAX_SAFE_INTEGER, T0)).not.toThrow(/clock right/);
    // the row's fault, as the schema's refusal is (a stream record of it is poison): a ValidationError of its fencingToken
    expect(() => nextFencingToken(MAX_FENCING_TOKEN, T0)).toThrow(ValidationError);
    expect(() => nextFencingToken(MAX_FENCING_TOKEN, T0, 'jobs')).toThrow(/^invalid lease "jobs": fencingToken: fencing token 9007199254740991 \(previous 9007199254740990, clock \d+\) is past 9007199254740990: the previous token leaves no room/);
    expect(() => nextFencingToken(5, Math.floor(Number.MAX_SAFE_INTEGER / 1000) + 1)).toThrow(RangeError);
    expect(() => nextFencingToken(5, Math.floor(Number.MAX_SAFE_INTEGER / 1000) + 1)).toThrow(/\(previous 5, clock 9007199254741\) is past 9007199254740990: is the clock right\?$/);
  });
});

/**
 * The functions' deps on `t` (dead letters and gauges collected), a live candidate of `lease`, and
 * an operator's row of it with no holder at `fencingToken` (a raw PutItem: the store would refuse it).
 */
async function rowAt(t: TestTables, lease: string, fencingToken: number) {
  const dead: PoisonRecord[] = [];
  const gauges: [string, number][] = [];
  const o = observability('test', 'SILENT');
  const add = o.metrics.addMetric.bind(o.metrics);
  o.metrics.addMetric = (name, unit, value) => (gauges.push([name, value]), add(name, unit, value));
  const d: FunctionDeps = { coordinator: coordinatorDeps(t.client, t.names), timer: { schedule: async () => undefined }, publish: async () => undefined, deadLetter: async (m) => void dead.push(m as PoisonRecord), ...o };
  const now = Date.now();
  const c = d.coordinator.candidates;
  await c.write(await c.read(lease, 'w'), { set: { binaryVersion: '1.30.0', emulationVersion: '1.30.0', preferredStrategies: [OEV], renewTime: now, createdAt: now, identity: 'w-1' } });
  await t.client.send(new PutItemCommand({ TableName: t.names.leases, Item: marshall({ name: lease, leaseDurationSeconds: 15, leaseTransitions: 0, fencingToken, revision: 1 }) }));
  return { d, dead, gauges };
}

describe('a lease row at the largest fencing tokens, on DynamoDB Local', () => {
  let t: TestTables;
  beforeAll(async () => void (t = await testTables('tok-max')));
  afterAll(() => t.drop());

  it('at MAX_FENCING_TOKEN (the largest the schema takes), no next term: the tick counts the lease broken naming it, describe says the token is the last, and the lease stream dead-letters its record at once as poison (before: a RangeError blaming the clock, retried for 12 h)', async () => {
    const lease = 'tok-top';
    const { d, dead } = await rowAt(t, lease, MAX_FENCING_TOKEN);
    expect((await d.coordinator.leases.read(lease)).item?.fencingToken).toBe(MAX_FENCING_TOKEN);

    const r = await onTick(d, 600_000);
    // broken, as a row the schema refuses (its gauge and alarm), naming the lease: not a failed reconcile retried each tick
    expect(r.errors).toEqual([]);
    expect(r.broken.map((b) => [b.lease, b.error.fields])).toEqual([[lease, ['fencingToken']]]);
    expect(r.broken[0]!.message).toMatch(/^lease "tok-top" is broken, left alone until repaired \(conclave describe lease tok-top\): invalid lease "tok-top": fencingToken: .*the previous token leaves no room: set the row's fencingToken to the clock's/);

    // `conclave describe lease`: the row reads, and its token is told as the last
    const lines: string[] = [];
    await describeLease(cliContext(t.client, { tablePrefix: 'tok', tables: t.names }, { clock: systemClock, sink: { out: (l) => void lines.push(l), err: () => undefined, color: false }, output: 'table' }), { lease });
    expect(lines.join('\n')).toMatch(/Fencing token: +9007199254740990 \(transitions: 0\): the largest a row may hold, so no term can follow it; put the clock's token in its place/);

    const records = (await streamRecords(t.client, t.names.leases)).filter((x) => x.dynamodb!.Keys!['name']!.S === lease);
    const answer = await leaseStream(d)({ Records: records } as DynamoDBStreamEvent, lambdaContext('leaseStream'));
    expect(answer).toEqual({ batchItemFailures: [] });
    expect(dead).toHaveLength(1);
    expect(dead[0]).toMatchObject({ kind: 'poisonRecord', function: 'leaseStream', issues: [{ field: 'fencingToken' }] });
    // (the next test's tick counts what is broken on these tables)
    await t.client.send(new DeleteItemCommand({ TableName: t.names.leases, Key: marshall({ name: lease }) }));
  });

  it('at fencingToken Number.MAX_SAFE_INTEGER, reads as broken: the tick counts it (its gauge, no failed reconcile), the lease stream dead-letters its record at once as poison, and describe says to replace the token', async () => {
    const lease = 'tok-max';
    // an operator's row: no holder, the token the schema took as its largest
    const { d, dead, gauges } = await rowAt(t, lease, Number.MAX_SAFE_INTEGER);

    // what every reader of the row gets (the SDK's and the CLI's reads too)
    await expect(d.coordinator.leases.read(lease)).rejects.toThrow(ValidationError);

    const r = await onTick(d, 600_000);
    // before the fix: errors [RangeError "... is the clock right?"], broken [] and leaderless []
    expect(r.errors.filter((x) => x.lease === lease)).toEqual([]); // (the other test's lease, on the same tables, fails as it should)
    expect(r.broken.map((b) => b.lease)).toEqual([lease]);
    expect(r.broken[0]!.error.fields).toEqual(['fencingToken']);
    expect(gauges.filter(([n]) => n === METRIC.brokenLeases)).toEqual([[METRIC.brokenLeases, 1]]);

    // the INSERT record: poison, dead-lettered with its content and reported processed (before: retried, a RangeError, for 12 h)
    const records = (await streamRecords(t.client, t.names.leases)).filter((x) => x.dynamodb!.Keys!['name']!.S === lease);
    expect(records.map((x) => x.eventName)).toEqual(['INSERT']);
    const out = await leaseStream(d)({ Records: records } as DynamoDBStreamEvent, lambdaContext('leaseStream'));
    expect(out).toEqual({ batchItemFailures: [] });
    expect(dead).toHaveLength(1);
    expect(dead[0]).toMatchObject({ kind: 'poisonRecord', function: 'leaseStream', issues: [{ field: 'fencingToken' }] });

    // `conclave describe lease`: broken, and the token to replace, not keep
    const ctx = { client: t.client, target: { tables: t.names } } as unknown as Pick<CliContext, 'client' | 'target'>;
    const lines = brokenLeaseLines(await brokenLeaseReport(ctx, lease, r.broken[0]!.error)).join('\n');
    expect(lines).toMatch(/Problem: +fencingToken: 9007199254740991 is above the largest fencing token/);
    expect(lines).toMatch(/Fencing token: +9007199254740991 in the row, refused \(above\)\. Put the writer's clock in its place/);
    expect(lines).not.toMatch(/Fixing the row in place keeps it/);
  });
});

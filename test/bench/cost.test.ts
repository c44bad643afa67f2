/**
 * The cost arithmetic: the price sheet's units, Lambda's billed GB-seconds (each invocation rounded
 * up to the millisecond, at its function's memory), per-lease spreading of the coordinator's tick
 * against the live leases' stream invocations, IoT Core's connection-minutes and messages from the
 * push broker's counts, and the rows by kind summing to the total. The price sheet is checked
 * against what infra/ deploys (arm64).
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { leaseMonthCost, TIMER_QUEUE_POLLS_PER_MINUTE } from '../../bench/cost.js';
import { addUse, lambdaUse, scaleUse, type Invocation } from '../../bench/lambda.js';
import { billedGbSeconds, dollarsPerMonth, eventsDollarsPerMonth, iotDollarsPerMonth, LAMBDA_PRICES, lambdaDollarsPerMonth, MINUTES_PER_MONTH, sqsDollarsPerMonth } from '../../bench/prices.js';
import { eventsPerLease, iotPerLease, lambdaPerLease } from '../../bench/scenarios/rates.js';
import { wiring } from '../../lib/wiring.js';

describe('price sheet', () => {
  it('a million units, requests or events a month cost the listed price', () => {
    const perMinute = 1e6 / MINUTES_PER_MONTH;
    expect(dollarsPerMonth(perMinute, 0)).toBeCloseTo(0.625, 10);
    expect(dollarsPerMonth(0, perMinute)).toBeCloseTo(0.125, 10);
    expect(lambdaDollarsPerMonth(perMinute, 0)).toBeCloseTo(0.2, 10);
    expect(lambdaDollarsPerMonth(0, 1 / MINUTES_PER_MONTH)).toBeCloseTo(0.0000133334, 12);
    expect(eventsDollarsPerMonth(perMinute)).toBeCloseTo(1, 10);
    expect(sqsDollarsPerMonth(perMinute)).toBeCloseTo(0.4, 10);
    expect(iotDollarsPerMonth(0, perMinute)).toBeCloseTo(1, 10);
    expect(iotDollarsPerMonth(1e6 / MINUTES_PER_MONTH, 0)).toBeCloseTo(0.08, 10); // a million connection-minutes
  });

  it('one connection held all month costs 43,800 connection-minutes: $0.0035', () => {
    expect(iotDollarsPerMonth(1, 0)).toBeCloseTo(0.003504, 10);
  });

  it('IoT Core messages are priced without acknowledgements: PushChannel subscribes at QoS 0 (IoT Core meters the PUBACK of a QoS 1 delivery too)', () => {
    const push = readFileSync(new URL('../../lib/sdk/push-channel.ts', import.meta.url), 'utf8');
    // every subscription it makes (at connecting, and when the filter it wants changes: the deployment's, its process's)
    const calls = [...push.matchAll(/\.subscribe(?:Async)?\([^;]*?\{ qos: (\d) \}/g)];
    expect(calls.length).toBeGreaterThanOrEqual(2);
    expect(calls.map((c) => c[1])).toEqual(calls.map(() => '0'));
    expect(push.match(/\.subscribe(?:Async)?\(/g)).toHaveLength(calls.length);
  });

  it('Lambda is priced for the architecture infra/ deploys', () => {
    const assets = readFileSync(new URL('../../infra/assets.ts', import.meta.url), 'utf8');
    expect(assets).toMatch(/ARCHITECTURE = lambda\.Architecture\.ARM_64/);
    expect(LAMBDA_PRICES.architecture).toBe('arm64');
  });
});

describe('Lambda use', () => {
  it('billed duration rounds each invocation up to the millisecond, at least 1 ms', () => {
    expect(billedGbSeconds([0.2, 1.5, 10], 1024)).toBeCloseTo((1 + 2 + 10) / 1000, 12);
    expect(billedGbSeconds([1000], 512)).toBeCloseTo(0.5, 12);
  });

  it('per function, at the memory the wiring gives it', () => {
    const calls: Invocation[] = [
      { fn: 'coordinator', at: 0, ms: 100 },
      { fn: 'leaseStream', at: 0, ms: 9.2, records: 3 },
      { fn: 'leaseStream', at: 0, ms: 0.4 },
    ];
    expect(lambdaUse(calls)).toEqual({
      coordinator: { invocations: 1, billedMs: 100, gbSeconds: (100 / 1000) * (wiring.coordinator.memoryMb / 1024) },
      leaseStream: { invocations: 2, billedMs: 11, gbSeconds: (11 / 1000) * (wiring.leaseStream.memoryMb / 1024) },
    });
  });

  it('scaled and added per function', () => {
    const a = lambdaUse([{ fn: 'coordinator', at: 0, ms: 10 }], () => 1024);
    expect(addUse(a, scaleUse(a, 2))).toEqual({ coordinator: { invocations: 3, billedMs: 30, gbSeconds: 0.03 } });
  });

  it('per lease: a tick is spread over every lease it scans, once a minute; stream invocations over the live leases and the window', () => {
    const calls: Invocation[] = [
      { fn: 'coordinator', at: 0, ms: 200 },
      { fn: 'coordinator', at: 0, ms: 200 },
      { fn: 'candidateStream', at: 0, ms: 10 },
      { fn: 'candidateStream', at: 0, ms: 10 },
      { fn: 'candidateStream', at: 0, ms: 10 },
      { fn: 'candidateStream', at: 0, ms: 10 },
    ];
    const use = lambdaPerLease(calls, { windowMinutes: 2, ticks: 2, leasesTicked: 100, leasesLive: 2 });
    expect(use.coordinator!.invocations).toBeCloseTo(0.01, 12); // 1 tick a minute ÷ 100 leases
    expect(use.candidateStream!.invocations).toBeCloseTo(1, 12); // 4 in 2 min ÷ 2 leases
  });

  it('events and timer messages per lease per minute, inside the window only', () => {
    const at = (ms: number) => ({ time: new Date(ms).toISOString() }) as never;
    const r = eventsPerLease([at(0), at(30_000), at(61_000), at(200_000)], [{ fn: 'electionTimer', at: 1, ms: 1, records: 2 }], 0, 60_000, 1);
    expect(r).toEqual({ eventsPerMinute: 2, timerMessagesPerMinute: 2 });
  });
});

describe('IoT Core per lease', () => {
  const stats = (s: Partial<{ published: number; workerPublished: number; delivered: number; connectionMs: number }>) => ({ published: 0, workerPublished: 0, delivered: 0, connectionMs: 0, connections: 6, subscriptions: 6, ...s });

  it('connections: the connection time over the window, spread over the leases; messages per lease per minute', () => {
    // 6 processes connected for a 2-minute window, standing for 2 leases
    const r = iotPerLease(stats({ connectionMs: 1_000 }), stats({ connectionMs: 1_000 + 6 * 120_000, published: 4, workerPublished: 2, delivered: 36 }), { windowMinutes: 2, leases: 2 });
    expect(r.connections).toBeCloseTo(3, 12);
    expect(r.published).toBeCloseTo(1, 12);
    expect(r.workerPublished).toBeCloseTo(0.5, 12);
    expect(r.delivered).toBeCloseTo(9, 12);
  });

  it('three processes over 100 leases: 0.03 connections a lease; a quiet window sends nothing', () => {
    const r = iotPerLease(stats({}), stats({ connectionMs: 3 * 60_000 }), { windowMinutes: 1, leases: 100 });
    expect(r).toEqual({ connections: 0.03, published: 0, workerPublished: 0, delivered: 0 });
  });
});

describe('cost per lease-month by kind', () => {
  it('a row per role, function and service, summing to the total', () => {
    const { rows, total } = leaseMonthCost({
      dynamo: { leader: { requests: 30, wru: 30, rru: 0 }, follower: { requests: 30, wru: 0, rru: 30 } },
      lambda: { coordinator: { invocations: 0.01, billedMs: 1, gbSeconds: 0.0005 } },
      eventsPerMinute: 0.001,
      timerMessagesPerMinute: 0.001,
      leasesInDeployment: 100,
    });
    expect(rows.map((r) => `${r.service} ${r.kind}`)).toEqual(['DynamoDB leader', 'DynamoDB follower', 'Lambda coordinator', 'EventBridge events', 'SQS timer messages', 'SQS timer queue polling (per deployment, spread)']);
    expect(rows[0]!.dollars).toBeCloseTo(dollarsPerMonth(30, 0), 12);
    expect(rows[4]!.dollars).toBeCloseTo(sqsDollarsPerMonth(0.003), 12); // send, receive, delete
    expect(rows[5]!.dollars).toBeCloseTo(sqsDollarsPerMonth(TIMER_QUEUE_POLLS_PER_MINUTE / 100), 12);
    expect(total).toBeCloseTo(rows.reduce((a, r) => a + r.dollars, 0), 12);
  });

  it("a session's renewals and reads are their own DynamoDB kinds, named in words", () => {
    const { rows } = leaseMonthCost({ dynamo: { leader: { requests: 1, wru: 0, rru: 0.5 }, 'session-renewal': { requests: 0.3, wru: 0.3, rru: 0 }, 'session-read': { requests: 0.1, wru: 0, rru: 0.05 } }, lambda: {} });
    const dynamo = rows.filter((r) => r.service === 'DynamoDB');
    expect(dynamo.map((r) => r.kind)).toEqual(['leader', 'session renewals', 'session reads']);
    expect(dynamo[1]!.dollars).toBeCloseTo(dollarsPerMonth(0.3, 0), 12);
    expect(dynamo[2]!.dollars).toBeCloseTo(dollarsPerMonth(0, 0.05), 12);
  });

  it('without a deployment size, no fixed costs are spread; without the push path, no IoT Core', () => {
    expect(leaseMonthCost({ dynamo: {}, lambda: {} }).rows.map((r) => r.kind)).toEqual(['events', 'timer messages']);
  });

  it('with the push path: IoT Core connectivity and messages (published + delivered), in the total', () => {
    const iot = { connections: 3, published: 0.5, workerPublished: 0.25, delivered: 4.5 };
    const { rows, total } = leaseMonthCost({ dynamo: {}, lambda: {}, iot });
    const of = (kind: string) => rows.find((r) => r.service === 'IoT Core' && r.kind === kind)!;
    expect(rows.filter((r) => r.service === 'IoT Core').map((r) => r.kind)).toEqual(['connectivity', 'messages']);
    expect(of('connectivity').dollars).toBeCloseTo(3 * 0.003504, 10); // 3 processes, each connected all month
    expect(of('messages').dollars).toBeCloseTo(iotDollarsPerMonth(0, 5.25), 12);
    expect(total).toBeCloseTo(rows.reduce((a, r) => a + r.dollars, 0), 12);
  });
});

/**
 * What the steady-state scenarios share: request tallies turned into rates per minute and per
 * lease, the workers' own counts read over a window, Lambda use and the push broker's counts over
 * the same window, and the cost by kind printed as figures.
 */
import { GetItemCommand } from '@aws-sdk/client-dynamodb';
import { marshall } from '@aws-sdk/util-dynamodb';
import { localClient } from '../../lib/local/dynamodb-local.js';
import { matchesFilter } from '../../lib/local/event-filter.js';
import { electionConfig } from '../../lib/schemas/config.js';
import type { WorkerEvent, WorkerProcess } from '../../lib/local/worker-process.js';
import type { PushBrokerStats } from '../../lib/local/push-broker.js';
import type { LocalEvent, LocalRuntime } from '../../lib/local/runtime.js';
import { CandidateStore } from '../../lib/stores/candidate-store.js';
import { wiring, type FunctionName, type StreamTrigger } from '../../lib/wiring.js';
import { leaseMonthCost, type CostInput, type IotRate } from '../cost.js';
import { sleep, waitFor } from '../fleet.js';
import { addUse, lambdaUse, scaleUse, type Invocation, type LambdaMeter, type LambdaUse } from '../lambda.js';
import type { Collector } from '../report.js';
import { diffTallies, READ_COMMANDS, RequestCounter, type Tallies, type Tally } from '../requests.js';
import { median } from '../stats.js';

export interface Rate {
  requests: number;
  rru: number;
  wru: number;
  commands: Record<string, number>;
}
export type Rates = Record<string, Rate>;

export const ZERO: Rate = { requests: 0, rru: 0, wru: 0, commands: {} };

export const perMinute = (t: Tallies, minutes: number): Rates =>
  Object.fromEntries(Object.entries(t).map(([role, x]) => [role, { requests: x.requests / minutes, rru: x.rru / minutes, wru: x.wru / minutes, commands: Object.fromEntries(Object.entries(x.commands).map(([c, n]) => [c, n / minutes])) }]));

export const sumRates = (rs: Rates[]): Rates => {
  const out: Rates = {};
  for (const r of rs) {
    for (const [role, x] of Object.entries(r)) {
      const o = (out[role] ??= { requests: 0, rru: 0, wru: 0, commands: {} });
      o.requests += x.requests;
      o.rru += x.rru;
      o.wru += x.wru;
      for (const [c, n] of Object.entries(x.commands)) o.commands[c] = (o.commands[c] ?? 0) + n;
    }
  }
  return out;
};

export const scaleRate = (r: Rate, k: number): Rate => ({ requests: r.requests * k, rru: r.rru * k, wru: r.wru * k, commands: Object.fromEntries(Object.entries(r.commands).map(([c, n]) => [c, n * k])) });
export const scaleRates = (rs: Rates, k: number): Rates => Object.fromEntries(Object.entries(rs).map(([role, r]) => [role, scaleRate(r, k)]));
export const addRate = (a: Rate, b: Rate): Rate => sumRates([{ x: a }, { x: b }])['x']!;
export const writesOf = (r: Rate): number => Object.entries(r.commands).reduce((a, [c, n]) => a + (READ_COMMANDS.has(c) ? 0 : n), 0);
export const commandsText = (r: Rate): string => Object.entries(r.commands).map(([c, n]) => `${c} ${n.toFixed(2)}`).join(', ');

/** A worker's requests between its first and last `requests` line inside the window, per minute. */
export function workerRates(w: WorkerProcess, from: number, to: number): { rates: Rates; minutes: number } {
  const lines = w.events.filter((e): e is WorkerEvent & { requests: Tallies } => e.event === 'requests' && e.requests !== undefined && e.at >= from && e.at <= to);
  const first = lines[0];
  const last = lines.at(-1);
  if (!first || !last || last === first) throw new Error(`${w.identity}: fewer than two request counts inside the window`);
  const minutes = (last.at - first.at) / 60_000;
  return { rates: perMinute(diffTallies(last.requests, first.requests), minutes), minutes };
}

/** The order roles are shown in; others (if a worker names more) after these. */
export const ROLE_ORDER = ['leader', 'successor', 'second-successor', 'follower', 'candidate', 'identity', 'session-renewal', 'session-read', 'coordinator'];
export const byRoleOrder = ([a]: [string, unknown], [b]: [string, unknown]): number => {
  const i = (r: string) => (ROLE_ORDER.includes(r) ? ROLE_ORDER.indexOf(r) : ROLE_ORDER.length);
  return i(a) - i(b) || a.localeCompare(b);
};

/**
 * Lambda per lease per minute over a window: the coordinator's tick covers every lease of the
 * table (`leasesTicked`), so it is spread over them, one tick a minute as scheduled; what the
 * streams, the timer and the platform invoked came from the leases with real workers (`leasesLive`).
 */
export function lambdaPerLease(invocations: readonly Invocation[], o: { windowMinutes: number; ticks: number; leasesTicked: number; leasesLive: number }): LambdaUse {
  const ticks = invocations.filter((i) => i.fn === 'coordinator');
  const rest = invocations.filter((i) => i.fn !== 'coordinator');
  return addUse(scaleUse(lambdaUse(ticks), 1 / Math.max(1, o.ticks) / o.leasesTicked), scaleUse(lambdaUse(rest), 1 / o.windowMinutes / o.leasesLive));
}

/**
 * IoT Core per lease from the push broker's counts at a window's ends: connections held (the
 * summed connection time over the window's length, i.e. the mean number open), and messages per
 * minute, spread over `leases` (the leases the connected processes stand for). The local broker
 * authorizes nothing, so a wake reaches every connection, as IoT Core delivers it with grants on
 * every lease (`allLeases`); with grants scoped by `leaseNames` it reaches only the processes of
 * its lease, and the local deliveries are an upper bound where processes stand for different leases.
 */
export function iotPerLease(before: PushBrokerStats, after: PushBrokerStats, o: { windowMinutes: number; leases: number }): IotRate {
  const per = (x: number) => x / o.windowMinutes / o.leases;
  const published = after.published - before.published;
  return {
    connections: (after.connectionMs - before.connectionMs) / 60_000 / o.windowMinutes / o.leases,
    published: per(published),
    workerPublished: per(after.workerPublished - before.workerPublished),
    delivered: per(after.delivered - before.delivered),
  };
}

/** One line for the log: IoT Core per lease. */
export const iotText = (r: IotRate): string =>
  `${r.connections.toFixed(3)} connections; per minute ${r.published.toFixed(3)} wakes published by the function, ${r.workerPublished.toFixed(3)} by workers, ${r.delivered.toFixed(3)} deliveries`;

/** Events published and timer messages in [from, to], per lease per minute. */
export function eventsPerLease(events: readonly LocalEvent[], invocations: readonly Invocation[], from: number, to: number, leasesLive: number): { eventsPerMinute: number; timerMessagesPerMinute: number } {
  const minutes = (to - from) / 60_000;
  const published = events.filter((e) => Date.parse(e.time) >= from && Date.parse(e.time) <= to).length;
  const timer = invocations.filter((i) => i.fn === ('electionTimer' satisfies FunctionName)).reduce((a, i) => a + (i.records ?? 1), 0);
  return { eventsPerMinute: published / minutes / leasesLive, timerMessagesPerMinute: timer / minutes / leasesLive };
}

/** The cost by kind as figures (`<system> · $/lease-month · <service> <kind>`), and the total with its target. */
export function costFigures(c: Collector, what: string, system: string, input: CostInput, target?: { text: string; max: number }): number {
  const { rows, total } = leaseMonthCost(input);
  for (const r of rows) c.value(what, `${system} · $/lease-month · ${r.service} ${r.kind}`, r.dollars, '$/lease-month', undefined, r.detail);
  c.value(what, `${system} · $/lease-month · total`, total, '$/lease-month', target ? { text: target.text, met: total <= target.max } : undefined);
  return total;
}

/**
 * Candidates renew on a timer (5 minutes): none falls in a window started fresh. Their rate is the
 * SDK's schedule; the cost of one renewal is measured here on a live candidate row (`lease`,
 * `name`), with the candidate-stream invocation it sets off (the candidates' stream has no filter).
 */
export async function candidateRenewalCost(endpoint: string, rt: LocalRuntime, meter: LambdaMeter, lease: string, name: string): Promise<{ oneRenewal: Tally; invocationMs: number; invokes: number }> {
  const probe = new RequestCounter();
  const client = localClient(endpoint);
  probe.attach(client, () => 'candidate');
  const store = new CandidateStore(client, rt.tables.candidates);
  const at = Date.now();
  let invokes = 1;
  let oneRenewal: Tally;
  try {
    await store.renew(lease, name, Date.now(), Math.ceil((Date.now() + 3_600_000) / 1000));
    oneRenewal = structuredClone(probe.snapshot()['candidate']!);
    // A scheduled renewal follows the candidate's last renewal: does its stream record reach the
    // function? (The candidate stream's filter drops a renewal right after a renewal: lib/wiring.ts.)
    // Judged by the wiring's own filters on the row's images before and after it, as Lambda judges them.
    const image = async () => (await client.send(new GetItemCommand({ TableName: rt.tables.candidates, Key: marshall({ leaseName: lease, name }), ConsistentRead: true }))).Item;
    const before = await image();
    await store.renew(lease, name, Date.now() + 1, Math.ceil((Date.now() + 3_600_000) / 1000));
    const after = await image();
    const filters = (wiring.candidateStream.trigger as StreamTrigger).filters;
    invokes = !filters || filters.some((f) => matchesFilter(f, { eventName: 'MODIFY', dynamodb: { ...(before ? { OldImage: before } : {}), ...(after ? { NewImage: after } : {}) } })) ? 1 : 0;
  } finally {
    client.destroy();
  }
  const seen = await waitFor('the candidate stream to carry the probe renewal', () => meter.invocations.find((i) => i.fn === 'candidateStream' && i.at >= at), 10_000).catch(() => undefined);
  // not seen (a slow poller): the median of the candidate stream's invocations so far
  const invocationMs = seen?.ms ?? median([0, ...meter.invocations.filter((i) => i.fn === 'candidateStream').map((i) => i.ms)]);
  return { oneRenewal, invocationMs, invokes };
}

/**
 * The candidates' rate per lease per minute plus their scheduled checks (a candidate on a session
 * reads its row every renewIntervalMs instead of writing it: one eventually consistent GetItem of
 * a row under 4 KB, 0.5 RRU), which a window shorter than the interval does not see.
 */
export function withScheduledChecks(measured: Rate, checksPerMinute: number): Rate {
  return {
    requests: measured.requests + checksPerMinute,
    rru: measured.rru + 0.5 * checksPerMinute,
    wru: measured.wru,
    commands: { ...measured.commands, GetItem: (measured.commands['GetItem'] ?? 0) + checksPerMinute },
  };
}

/** The candidates' rate per lease per minute: what the window saw plus the scheduled renewals, at the measured cost. */
export function withScheduledRenewals(measured: Rate, renewalsPerMinute: number, oneRenewal: Tally): Rate {
  return {
    requests: measured.requests + renewalsPerMinute,
    rru: measured.rru,
    wru: measured.wru + renewalsPerMinute * oneRenewal.wru,
    commands: { ...measured.commands, UpdateItem: (measured.commands['UpdateItem'] ?? 0) + renewalsPerMinute },
  };
}

/** How long the functions must have been idle before a steady-state window: two ack windows of the default election configuration. */
export const QUIET_MS = 2 * electionConfig().ackWindowMs;

/**
 * Waits until no function of the runtime has been invoked for `quietMs` (at most `withinMs`; false
 * if it never was): whatever settling set off — the re-elections that ask candidates not known to be
 * alive (issue 38), their pings and answers, their election timers — is over, so none of it falls in
 * a steady-state window (one run's window once caught the tail of 200 reconciles: $0.02 a
 * lease-month that no steady state pays). `quietMs` longer than the ack window lets any election
 * opened before it reach its timer first.
 */
export async function functionsQuiet(meter: LambdaMeter, quietMs: number, withinMs: number): Promise<boolean> {
  const quiet = () => {
    const last = meter.invocations.at(-1);
    return !last || Date.now() - (last.at + last.ms) >= quietMs;
  };
  return waitFor(`no function invoked for ${quietMs / 1000} s`, quiet, withinMs, 200).then(
    () => true,
    () => false,
  );
}

/**
 * The measurement window: `windowMs` from now, with the coordinator's tick run at the middle of
 * each minute of it (once a minute, as scheduled in AWS; the runtime's own timer is off), each
 * tick's requests counted apart from whatever else the coordinator did (streams, timer).
 */
export async function tickWindow(rt: Pick<LocalRuntime, 'tick'>, coordinator: RequestCounter, windowMs: number, tickEveryMs = 60_000): Promise<{ t0: number; t1: number; ticks: number; tickDeltas: Tallies[]; windowTotal: Tallies }> {
  const t0 = Date.now();
  const atStart = coordinator.snapshot();
  const ticks = Math.max(1, Math.round(windowMs / tickEveryMs));
  const tickDeltas: Tallies[] = [];
  for (let k = 0; k < ticks; k++) {
    await sleep(t0 + ((k + 0.5) * windowMs) / ticks - Date.now());
    const before = coordinator.snapshot();
    await rt.tick();
    tickDeltas.push(diffTallies(coordinator.snapshot(), before));
  }
  await sleep(t0 + windowMs - Date.now());
  return { t0, t1: Date.now(), ticks, tickDeltas, windowTotal: diffTallies(coordinator.snapshot(), atStart) };
}

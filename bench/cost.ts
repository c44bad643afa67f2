/**
 * Dollars per lease-month by kind, everything on one price sheet (bench/prices.ts): DynamoDB
 * request units by role (leader, successor, other followers, candidates, identity heartbeats,
 * session renewals and session reads, coordinator), Lambda invocations and GB-seconds by function, EventBridge events, SQS requests,
 * and IoT Core's connection-minutes and messages (the push path). Plain arithmetic on rates per
 * lease per minute; the scenarios measure the rates.
 */
import type { LambdaUse } from './lambda.js';
import { dollarsPerMonth, eventsDollarsPerMonth, iotDollarsPerMonth, lambdaDollarsPerMonth, MINUTES_PER_MONTH, sqsDollarsPerMonth } from './prices.js';

/** DynamoDB requests and units per lease per minute. */
export interface DynamoRate {
  requests: number;
  rru: number;
  wru: number;
}

/**
 * IoT Core per lease (the push path), from the push broker's counts over a window: what IoT Core
 * meters (bench/prices.ts). Messages per lease per minute.
 */
export interface IotRate {
  /** Connections held, per lease: each Conclave worker process holds one, all month. */
  connections: number;
  /** Wakes the lease stream's function published (IoT Core's HTTP Publish API). */
  published: number;
  /** Wakes workers published over MQTT (after a hand-off or a release they wrote). */
  workerPublished: number;
  /** Deliveries: one per subscribed connection a wake reached (at QoS 0: no acknowledgement is metered). */
  delivered: number;
}

export interface CostRow {
  service: 'DynamoDB' | 'Lambda' | 'EventBridge' | 'SQS' | 'IoT Core';
  /** The role (DynamoDB), the function (Lambda), or what the events/requests are. */
  kind: string;
  /** Dollars per lease-month. */
  dollars: number;
  /** The rate behind it, per lease per minute, in words. */
  detail: string;
}

/**
 * The timer queue's event source long-polls the queue whether or not anything is in it: Lambda's
 * pollers (5 to start with) each ReceiveMessage with a 20 s wait, about 15 requests a minute per
 * deployment (docs/deploy.md's bill). Not measured locally (the local delay queue has no pollers);
 * spread over the deployment's leases.
 */
export const TIMER_QUEUE_POLLS_PER_MINUTE = 15;
/** Each election timer message costs SendMessage, ReceiveMessage and DeleteMessage. */
export const SQS_REQUESTS_PER_TIMER_MESSAGE = 3;

export interface CostInput {
  /** DynamoDB per role, per lease per minute. */
  dynamo: Record<string, DynamoRate>;
  /** Lambda per function, per lease per minute. */
  lambda: LambdaUse;
  /** EventBridge events published, per lease per minute. @default 0 */
  eventsPerMinute?: number;
  /** Election timer messages, per lease per minute. @default 0 */
  timerMessagesPerMinute?: number;
  /** Leases in the deployment, to spread its fixed costs (the timer queue's polling) over. Omit to leave them out. */
  leasesInDeployment?: number;
  /** IoT Core (the push path), per lease. Omit when the workers do not take it (no rows). */
  iot?: IotRate;
}

/** What a DynamoDB role is called in a cost row, where its key (bench/roles.ts) is not plain words. */
export const DYNAMO_KINDS: Readonly<Record<string, string>> = { 'session-renewal': 'session renewals', 'session-read': 'session reads' };

const f2 = (x: number) => (Math.abs(x) >= 0.1 || x === 0 ? x.toFixed(2) : x.toPrecision(2));

/** One row per role, function and service (rows of zero dollars included), and their total. */
export function leaseMonthCost(input: CostInput): { rows: CostRow[]; total: number } {
  const rows: CostRow[] = [];
  for (const [kind, r] of Object.entries(input.dynamo)) {
    rows.push({ service: 'DynamoDB', kind: DYNAMO_KINDS[kind] ?? kind, dollars: dollarsPerMonth(r.wru, r.rru), detail: `${f2(r.requests)} req/min: ${f2(r.wru)} WRU + ${f2(r.rru)} RRU /min` });
  }
  for (const [fn, u] of Object.entries(input.lambda)) {
    rows.push({ service: 'Lambda', kind: fn, dollars: lambdaDollarsPerMonth(u.invocations, u.gbSeconds), detail: `${f2(u.invocations)} invocations/min, ${f2(u.gbSeconds)} GB-s/min` });
  }
  const events = input.eventsPerMinute ?? 0;
  rows.push({ service: 'EventBridge', kind: 'events', dollars: eventsDollarsPerMonth(events), detail: `${f2(events)} events/min` });
  const timer = (input.timerMessagesPerMinute ?? 0) * SQS_REQUESTS_PER_TIMER_MESSAGE;
  rows.push({ service: 'SQS', kind: 'timer messages', dollars: sqsDollarsPerMonth(timer), detail: `${f2(timer)} requests/min` });
  if (input.leasesInDeployment !== undefined) {
    const polls = TIMER_QUEUE_POLLS_PER_MINUTE / input.leasesInDeployment;
    rows.push({ service: 'SQS', kind: 'timer queue polling (per deployment, spread)', dollars: sqsDollarsPerMonth(polls), detail: `${TIMER_QUEUE_POLLS_PER_MINUTE} receives/min ÷ ${input.leasesInDeployment} leases (assumed, not measured)` });
  }
  const iot = input.iot;
  if (iot) {
    rows.push({ service: 'IoT Core', kind: 'connectivity', dollars: iotDollarsPerMonth(iot.connections, 0), detail: `${f2(iot.connections)} connections held all month (${Math.round(iot.connections * MINUTES_PER_MONTH)} connection-minutes a month)` });
    const messages = iot.published + iot.workerPublished + iot.delivered;
    rows.push({ service: 'IoT Core', kind: 'messages', dollars: iotDollarsPerMonth(0, messages), detail: `${f2(messages)} messages/min: ${f2(iot.published)} wakes published by the function + ${f2(iot.workerPublished)} by workers, ${f2(iot.delivered)} deliveries` });
  }
  return { rows, total: rows.reduce((a, r) => a + r.dollars, 0) };
}

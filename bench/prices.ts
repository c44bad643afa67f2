/**
 * The price sheet every dollar figure uses: us-east-1, on-demand, as the construct deploys
 * (infra/: DynamoDB on-demand, Standard table class; Lambda on arm64, infra/assets.ts'
 * ARCHITECTURE, with the memory sizes of lib/wiring.ts; EventBridge custom events on a custom bus;
 * SQS standard queues; IoT Core's message broker for the push path).
 *
 * - DynamoDB: https://aws.amazon.com/dynamodb/pricing/on-demand/ (since the November 2024
 *   reduction). A strongly consistent read is 1 RRU per 4 KB (an eventually consistent one half
 *   that), a write 1 WRU per 1 KB, a transactional write 2 WRU per 1 KB; the units themselves are
 *   measured (ConsumedCapacity), so only the prices are assumed here. Stream reads by Lambda
 *   triggers are free; storage (a few hundred bytes per row) is left out.
 * - Lambda: https://aws.amazon.com/lambda/pricing/ — $0.20 per million requests and
 *   $0.0000133334 per GB-second on arm64 (first 7.5 billion GB-s a month; x86 is $0.0000166667).
 *   Duration is billed per started millisecond. Stream records dropped by the event source's
 *   filter are not invocations and are not billed. No free tier is assumed.
 * - EventBridge: https://aws.amazon.com/eventbridge/pricing/ — $1.00 per million custom events
 *   published (scheduled rules and AWS service events are free).
 * - SQS: https://aws.amazon.com/sqs/pricing/ — $0.40 per million standard-queue requests.
 * - IoT Core ("AWS IoT Core pricing", https://aws.amazon.com/iot-core/pricing/, and "AWS IoT Core
 *   additional metering details", https://aws.amazon.com/iot-core/pricing/additional-details/):
 *   connectivity $0.08 per million minutes of connection, metered in one-minute increments;
 *   messaging $1.00 per million messages (the first billion a month), each message metered per
 *   5 KB (a wake is under 200 bytes: one). A wake counts once when published — by the lease
 *   stream's function through the HTTP Publish API, or by a worker over MQTT — and once per
 *   delivery to a subscribed connection. The metering page also bills an MQTT 3.1.1 PUBACK
 *   received from a device as one 5 KB message, but PushChannel subscribes at QoS 0
 *   (lib/sdk/push.ts; test/bench/cost.test.ts checks it), so its deliveries are never
 *   acknowledged. A connection's CONNECT and SUBSCRIBE are billed once per connection (left out:
 *   once a process lifetime); keep-alive pings are free. No free tier is assumed.
 */
export const PRICES = {
  region: 'us-east-1',
  dollarsPerMillionWru: 0.625,
  dollarsPerMillionRru: 0.125,
} as const;

export const LAMBDA_PRICES = {
  architecture: 'arm64',
  dollarsPerMillionRequests: 0.2,
  dollarsPerGbSecond: 0.0000133334,
} as const;

export const EVENTBRIDGE_PRICES = { dollarsPerMillionEvents: 1.0 } as const;
export const SQS_PRICES = { dollarsPerMillionRequests: 0.4 } as const;
export const IOT_PRICES = { dollarsPerMillionConnectionMinutes: 0.08, dollarsPerMillionMessages: 1.0 } as const;

/** AWS bills by the hour; a month is 730 hours. */
export const MINUTES_PER_MONTH = 730 * 60;

/** Dollars a month for a steady rate of DynamoDB units per minute. */
export const dollarsPerMonth = (wruPerMinute: number, rruPerMinute: number): number =>
  ((wruPerMinute * PRICES.dollarsPerMillionWru + rruPerMinute * PRICES.dollarsPerMillionRru) * MINUTES_PER_MONTH) / 1e6;

/** Dollars a month for a steady rate of Lambda invocations and GB-seconds per minute. */
export const lambdaDollarsPerMonth = (invocationsPerMinute: number, gbSecondsPerMinute: number): number =>
  ((invocationsPerMinute * LAMBDA_PRICES.dollarsPerMillionRequests) / 1e6 + gbSecondsPerMinute * LAMBDA_PRICES.dollarsPerGbSecond) * MINUTES_PER_MONTH;

/** Dollars a month for a steady rate of EventBridge custom events per minute. */
export const eventsDollarsPerMonth = (eventsPerMinute: number): number => (eventsPerMinute * EVENTBRIDGE_PRICES.dollarsPerMillionEvents * MINUTES_PER_MONTH) / 1e6;

/** Dollars a month for a steady rate of SQS requests per minute. */
export const sqsDollarsPerMonth = (requestsPerMinute: number): number => (requestsPerMinute * SQS_PRICES.dollarsPerMillionRequests * MINUTES_PER_MONTH) / 1e6;

/** Dollars a month for `connections` held all month and a steady rate of IoT Core messages per minute. */
export const iotDollarsPerMonth = (connections: number, messagesPerMinute: number): number =>
  ((connections * IOT_PRICES.dollarsPerMillionConnectionMinutes + messagesPerMinute * IOT_PRICES.dollarsPerMillionMessages) * MINUTES_PER_MONTH) / 1e6;

/**
 * Lambda's billed GB-seconds for invocations that ran `durationsMs` at `memoryMb`: each duration
 * rounded up to the millisecond, times the memory in GB (1 GB = 1024 MB, as Lambda counts).
 */
export const billedGbSeconds = (durationsMs: readonly number[], memoryMb: number): number =>
  durationsMs.reduce((a, ms) => a + Math.max(1, Math.ceil(ms)), 0) / 1000 * (memoryMb / 1024);

export const describePrices = (): string =>
  `us-east-1 on-demand: DynamoDB $${PRICES.dollarsPerMillionWru} per million WRU, $${PRICES.dollarsPerMillionRru} per million RRU; Lambda (${LAMBDA_PRICES.architecture}) $${LAMBDA_PRICES.dollarsPerMillionRequests} per million requests, $${LAMBDA_PRICES.dollarsPerGbSecond} per GB-s; EventBridge $${EVENTBRIDGE_PRICES.dollarsPerMillionEvents} per million events; SQS $${SQS_PRICES.dollarsPerMillionRequests} per million requests; IoT Core $${IOT_PRICES.dollarsPerMillionConnectionMinutes} per million connection-minutes, $${IOT_PRICES.dollarsPerMillionMessages.toFixed(2)} per million messages; 730 h a month`;

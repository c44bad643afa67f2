/**
 * DynamoDB on-demand prices used for the dollar figures: us-east-1, Standard table class, as
 * listed on https://aws.amazon.com/dynamodb/pricing/on-demand/ since the November 2024 reduction.
 * A strongly consistent read is 1 RRU per 4 KB (an eventually consistent one half that), a write
 * 1 WRU per 1 KB, a transactional write 2 WRU per 1 KB; the units themselves are measured
 * (ConsumedCapacity), so only the prices are assumed here. Stream reads by Lambda triggers are
 * free; storage (a few hundred bytes per row) is left out.
 */
export const PRICES = {
  region: 'us-east-1',
  dollarsPerMillionWru: 0.625,
  dollarsPerMillionRru: 0.125,
} as const;

/** AWS bills by the hour; a month is 730 hours. */
export const MINUTES_PER_MONTH = 730 * 60;

/** Dollars a month for a steady rate of units per minute. */
export const dollarsPerMonth = (wruPerMinute: number, rruPerMinute: number): number =>
  ((wruPerMinute * PRICES.dollarsPerMillionWru + rruPerMinute * PRICES.dollarsPerMillionRru) * MINUTES_PER_MONTH) / 1e6;

export const describePrices = (): string =>
  `DynamoDB on-demand ${PRICES.region}: $${PRICES.dollarsPerMillionWru} per million WRU, $${PRICES.dollarsPerMillionRru} per million RRU, 730 h a month`;

/**
 * DynamoDB's time, as the CLI judges by it: a priority pin's expiry is stamped on it, and every age
 * and expiry shown is reckoned on it, as the coordinator and the workers reckon them. The machine's
 * clock, moved by the difference its answers' Date headers show. An operator's laptop 10 minutes
 * slow stamped a 5-minute pin already over.
 */
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { Clock } from '../clock.js';

/**
 * `base` with `now()` moved to DynamoDB's time as `client`'s answers show it (base's own before the
 * first). Each answer bounds the difference: its Date header (a whole second, truncated) was written
 * between the request's send and its answer, so DynamoDB's time less this machine's lies within
 * [date − answered, date + 1 s − sent]. The bounds of every answer are intersected, so a run of a
 * few requests narrows them well below the second, and the middle is taken; bounds that do not meet
 * (this machine's clock stepped) start again from the answer. Never goes back: a watch's frames
 * and the ages they show move forward only (it snapped to the middle of each answer's second, so
 * frames 100 ms apart went back, and a stamp just written read as "in 0s").
 */
export function dynamoDbTime(client: DynamoDBClient, base: Clock): Clock {
  let bounds: { lo: number; hi: number } | undefined;
  let last = -Infinity;
  client.middlewareStack?.add(
    (next) => async (args) => {
      const sent = base.now();
      const out = await next(args);
      const answered = base.now();
      const date = (out.response as { headers?: Record<string, string | undefined> } | undefined)?.headers?.['date'];
      const at = date === undefined ? NaN : Date.parse(date);
      if (Number.isFinite(at)) {
        const lo = at - answered;
        const hi = at + 1000 - sent;
        bounds = bounds === undefined || lo > bounds.hi || hi < bounds.lo ? { lo, hi } : { lo: Math.max(bounds.lo, lo), hi: Math.min(bounds.hi, hi) };
      }
      return out;
    },
    { step: 'deserialize', name: 'conclaveCliDynamoDbTime', override: true },
  );
  return {
    now: () => (last = Math.max(last, Math.round(base.now() + (bounds ? (bounds.lo + bounds.hi) / 2 : 0)))),
    monotonic: () => base.monotonic(),
    setTimer: (ms, fn, opts) => base.setTimer(ms, fn, opts),
    sleep: (ms, signal) => base.sleep(ms, signal),
    random: () => base.random(),
    ...(base.sinceBoot ? { sinceBoot: () => base.sinceBoot!() } : {}),
  };
}

/**
 * DynamoDB's time, as the CLI judges by it: a priority pin's expiry is stamped on it, and every age
 * and expiry shown is reckoned on it, as the coordinator and the workers reckon them. The machine's
 * clock, moved by the difference its answers' Date headers show (whole seconds: the middle of the
 * second is taken). An operator's laptop 10 minutes slow stamped a 5-minute pin already over.
 */
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { Clock } from '../clock.js';

/** `base` with `now()` moved to DynamoDB's time as `client`'s answers last showed it (base's own before the first). */
export function dynamoDbTime(client: DynamoDBClient, base: Clock): Clock {
  let offset: number | undefined;
  client.middlewareStack?.add(
    (next) => async (args) => {
      const out = await next(args);
      const date = (out.response as { headers?: Record<string, string | undefined> } | undefined)?.headers?.['date'];
      const at = date === undefined ? NaN : Date.parse(date);
      if (Number.isFinite(at)) offset = at + 500 - base.now();
      return out;
    },
    { step: 'deserialize', name: 'conclaveCliDynamoDbTime', override: true },
  );
  return {
    now: () => base.now() + (offset ?? 0),
    monotonic: () => base.monotonic(),
    setTimer: (ms, fn, opts) => base.setTimer(ms, fn, opts),
    sleep: (ms, signal) => base.sleep(ms, signal),
    random: () => base.random(),
    ...(base.sinceBoot ? { sinceBoot: () => base.sinceBoot!() } : {}),
  };
}

/**
 * The functions' side of the push path: the lease stream's function publishes a wake for each lease
 * change that reaches it (renewals are filtered out before it), through IoT Core's data plane, so
 * the workers following the lease read it at once. Local mode points the same client at its broker.
 */
import { IoTDataPlaneClient, PublishCommand } from '@aws-sdk/client-iot-data-plane';
import { systemClock, type Clock } from '../clock.js';
import { pushTopic, type Wake } from '../schemas/push.js';

/**
 * Publishes one wake; resolves once the broker took it, or at once while the broker is not
 * answering (see iotWaker). Rejects when it failed or took longer than the waker's timeout.
 */
export type Waker = (lease: string, revision: number | undefined) => Promise<void>;

/**
 * How long a publish may take before it is given up. IoT Core answers in tens of milliseconds; a
 * hung endpoint must cost the record little (the SDK has no request timeout of its own).
 */
export const WAKE_TIMEOUT_MS = 1_500;

export interface WakerOptions {
  /** What the timeout is measured on. @default systemClock */
  readonly clock?: Clock;
  /** @default WAKE_TIMEOUT_MS */
  readonly timeoutMs?: number;
}

/** A publish given up after the waker's timeout. */
export class WakeTimeoutError extends Error {
  override readonly name = 'WakeTimeoutError';
}

/**
 * A Waker publishing to `client`'s endpoint (IoT Core's data endpoint, `https://<id>-ats.iot.<region>.amazonaws.com`,
 * or local mode's broker) under the deployment's leases table, at QoS 1. Each publish is aborted
 * after `timeoutMs`. Once one has timed out, the broker counts as stalled: later wakes are still
 * sent (each with its timeout) but not waited for, so a batch of records pays the timeout once, not
 * once per record; the first of them that gets through ends the stall.
 */
export function iotWaker(client: IoTDataPlaneClient, leasesTable: string, options: WakerOptions = {}): Waker {
  const clock = options.clock ?? systemClock;
  const timeoutMs = options.timeoutMs ?? WAKE_TIMEOUT_MS;
  let stalled = false;
  const publish = async (lease: string, revision: number | undefined): Promise<void> => {
    const wake: Wake = { lease, by: 'stream', ...(revision !== undefined ? { revision } : {}) };
    const abort = new AbortController();
    let timedOut!: (e: Error) => void;
    const timeout = new Promise<never>((_, reject) => (timedOut = reject));
    const timer = clock.setTimer(
      timeoutMs,
      () => {
        const e = new WakeTimeoutError(`IoT Core did not answer a publish within ${timeoutMs} ms: given up`);
        timedOut(e);
        abort.abort(e);
      },
      { background: true },
    );
    try {
      // raced as well as aborted: the wake settles at the timeout whatever the HTTP handler does with the abort
      await Promise.race([client.send(new PublishCommand({ topic: pushTopic(leasesTable, lease), qos: 1, payload: new TextEncoder().encode(JSON.stringify(wake)) }), { abortSignal: abort.signal }), timeout]);
      stalled = false;
    } catch (e) {
      if (e instanceof WakeTimeoutError) stalled = true;
      throw e;
    } finally {
      timer.cancel();
    }
  };
  return async (lease, revision) => {
    if (!stalled) return publish(lease, revision);
    // not waited for: its outcome only tells whether the stall is over
    void publish(lease, revision).catch(() => undefined);
  };
}

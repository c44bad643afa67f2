/**
 * The functions' side of the push path: the lease stream's function publishes a wake for each lease
 * change that reaches it (renewals are filtered out before it), through IoT Core's data plane, so
 * the workers following the lease read it at once. Local mode points the same client at its broker.
 */
import { IoTDataPlaneClient, PublishCommand } from '@aws-sdk/client-iot-data-plane';
import { pushTopic, type Wake } from '../schemas/push.js';

/** Publishes one wake; resolves once the broker took it. */
export type Waker = (lease: string, revision: number | undefined) => Promise<void>;

/**
 * A Waker publishing to `client`'s endpoint (IoT Core's data endpoint, `https://<id>-ats.iot.<region>.amazonaws.com`,
 * or local mode's broker) under the deployment's leases table, at QoS 1.
 */
export function iotWaker(client: IoTDataPlaneClient, leasesTable: string): Waker {
  return async (lease, revision) => {
    const wake: Wake = { lease, by: 'stream', ...(revision !== undefined ? { revision } : {}) };
    await client.send(new PublishCommand({ topic: pushTopic(leasesTable, lease), qos: 1, payload: new TextEncoder().encode(JSON.stringify(wake)) }));
  };
}

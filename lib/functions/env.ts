import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { EventBridgeClient } from '@aws-sdk/client-eventbridge';
import { IoTDataPlaneClient } from '@aws-sdk/client-iot-data-plane';
import { SQSClient } from '@aws-sdk/client-sqs';
import * as z from 'zod';
import { coordinatorDeps } from '../coordinator/reconcile.js';
import { publishOrThrow } from '../events/publisher.js';
import { ElectionConfigSchema } from '../schemas/config.js';
import { ValidationError, parse } from '../schemas/validation.js';
import { ENV } from '../function-env.js';
import type { FunctionName } from '../wiring.js';
import type { FunctionDeps } from './core.js';
import { noDeadLetter, sqsDeadLetter } from './dead-letter.js';
import { NAMESPACE, SERVICE } from './metrics.js';
import { observability } from './observability.js';
import { sqsTimerQueue } from './timer.js';
import { iotWaker } from './wake.js';
import { bounded } from './requests.js';

const Env = z.object({
  [ENV.leasesTable]: z.string().min(3),
  [ENV.candidatesTable]: z.string().min(3),
  [ENV.identitiesTable]: z.string().min(3),
  [ENV.eventBus]: z.string().min(1),
  [ENV.leasesTableArn]: z.string().startsWith('arn:', 'must be the leases table\'s ARN (arn:aws:dynamodb:<region>:<account>:table/<name>)').optional(),
  [ENV.timerQueueUrl]: z.string().min(1),
  [ENV.deadLetterQueueUrl]: z.string().min(1).optional(),
  [ENV.electionConfig]: z.string().optional(),
  [ENV.pushEndpoint]: z.url({ protocol: /^https$/, error: 'must be IoT Core\'s data endpoint, https://<id>-ats.iot.<region>.amazonaws.com' }).optional(),
});

export { NAMESPACE, SERVICE };
// here too, where the handlers have always found them
export { lazy, observability } from './observability.js';

function jsonOf(text: string, subject: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch (e) {
    throw new ValidationError(subject, [{ field: '(root)', message: `must be JSON such as {"ackWindowMs":2000} (${(e as Error).message})` }]);
  }
}

/** A function's dependencies from its environment (set by the CDK construct). */
export function depsFromEnv(functionName: FunctionName, env: NodeJS.ProcessEnv = process.env): FunctionDeps {
  const e = parse(Env, env, `environment of the ${functionName} function`);
  const configJson = e[ENV.electionConfig];
  const config = configJson ? parse(ElectionConfigSchema, jsonOf(configJson, ENV.electionConfig), ENV.electionConfig) : undefined;
  const events = new EventBridgeClient(bounded);
  const sqs = new SQSClient(bounded);
  const bus = e[ENV.eventBus];
  const arn = e[ENV.leasesTableArn];
  const resources = arn !== undefined ? { resources: [arn] } : {};
  const deadLetterQueue = e[ENV.deadLetterQueueUrl];
  return {
    coordinator: coordinatorDeps(new DynamoDBClient(bounded), { leases: e[ENV.leasesTable], candidates: e[ENV.candidatesTable], identities: e[ENV.identitiesTable] }, config ? { config } : {}),
    timer: sqsTimerQueue(sqs, e[ENV.timerQueueUrl]),
    publish: async (list) => {
      await publishOrThrow(events, bus, list, resources);
    },
    deadLetter: deadLetterQueue ? sqsDeadLetter(sqs, deadLetterQueue) : noDeadLetter,
    ...(e[ENV.pushEndpoint] ? { wake: iotWaker(new IoTDataPlaneClient({ ...bounded, endpoint: e[ENV.pushEndpoint] }), e[ENV.leasesTable]) } : {}),
    ...observability(functionName, undefined, e[ENV.leasesTable]),
  };
}

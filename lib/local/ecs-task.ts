/**
 * An ECS task, as far as a worker and the platform handler can tell, for a local process: a task
 * metadata endpoint (v4) on loopback that the SDK's detection asks for real, and — when the
 * process exits — the "ECS Task State Change" event ECS would put on the default bus.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import type { ChildProcess } from 'node:child_process';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Platform } from '../schemas/platform.js';
import { LOCAL_REGION } from '../stores/client.js';
import type { Deployment } from '../wiring.js';
import { systemClock, type Clock } from '../clock.js';

export const LOCAL_ACCOUNT = '000000000000';
/** Where local mode runs, as its rules, its functions (their ARNs) and its platform events say. */
export const LOCAL_DEPLOYMENT: Deployment = { account: LOCAL_ACCOUNT, region: LOCAL_REGION };
export const LOCAL_CLUSTER = `arn:aws:ecs:${LOCAL_REGION}:${LOCAL_ACCOUNT}:cluster/conclave-local`;

export interface LocalEcsTask {
  platform: Platform & { kind: 'ecs' };
  /** The environment a container gets: ECS_CONTAINER_METADATA_URI_V4. */
  env: Record<string, string>;
  /** Whether its STOPPED event reaches the platform function (false: a platform that says nothing). */
  signal: boolean;
  /** Watches the process; when it exits, the task is STOPPED and `onStopped` gets ECS's event. */
  attach(child: ChildProcess): void;
  close(): Promise<void>;
}

/** The event ECS sends when a task's last essential container has exited (shape from the ECS documentation). */
export function taskStoppedEvent(task: Platform & { kind: 'ecs' }, exit: { code: number | null; signal: NodeJS.Signals | null }, at = new Date(systemClock.now()), id: string = randomUUID()): Record<string, unknown> {
  const exitCode = exit.code ?? (exit.signal === 'SIGKILL' ? 137 : exit.signal === 'SIGTERM' ? 143 : 1);
  return {
    version: '0',
    id,
    'detail-type': 'ECS Task State Change',
    source: 'aws.ecs',
    account: LOCAL_DEPLOYMENT.account,
    time: at.toISOString().replace(/\.\d{3}Z$/, 'Z'),
    region: LOCAL_DEPLOYMENT.region,
    resources: [task.id],
    detail: {
      availabilityZone: task.availabilityZone,
      clusterArn: task.cluster,
      taskArn: task.id,
      containers: [{ containerArn: `${task.id.replace(':task/', ':container/')}/worker`, exitCode, lastStatus: 'STOPPED', name: 'worker', taskArn: task.id }],
      desiredStatus: 'STOPPED',
      lastStatus: 'STOPPED',
      launchType: 'FARGATE',
      stopCode: 'EssentialContainerExited',
      stoppedReason: 'Essential container in task exited',
      stoppedAt: at.toISOString(),
      version: 3,
    },
  };
}

/** EC2's "Instance State-change Notification" for `instanceId` stopped at `at` (epoch ms), as EventBridge delivers it (whole seconds). */
export function instanceStoppedEvent(instanceId: string, at: number, id: string = randomUUID()): Record<string, unknown> {
  const { account, region } = LOCAL_DEPLOYMENT;
  return {
    version: '0',
    id,
    'detail-type': 'EC2 Instance State-change Notification',
    source: 'aws.ec2',
    account,
    time: new Date(at).toISOString().replace(/\.\d{3}Z$/, 'Z'),
    region,
    resources: [`arn:aws:ec2:${region}:${account}:instance/${instanceId}`],
    detail: { 'instance-id': instanceId, state: 'stopped' },
  };
}

/** The Availability Zone a local task reports unless it is given another. */
export const LOCAL_ZONE = 'local-1a';

/** `clock` stamps the STOPPED event: the local runtime's, which its platform function judges the event by. */
export async function startEcsTask(onStopped: (event: Record<string, unknown>) => void, zone = LOCAL_ZONE, clock: Clock = systemClock): Promise<LocalEcsTask> {
  const platform = { kind: 'ecs' as const, id: `arn:aws:ecs:${LOCAL_REGION}:${LOCAL_ACCOUNT}:task/conclave-local/${randomBytes(16).toString('hex')}`, cluster: LOCAL_CLUSTER, availabilityZone: zone };
  // Like ECS: http://169.254.170.2/v4/<container id>; the task is at <that>/task.
  const base = `/v4/${randomUUID()}`;
  const server = createServer((req, res) => {
    if (req.method === 'GET' && req.url === `${base}/task`) {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ Cluster: platform.cluster, TaskARN: platform.id, AvailabilityZone: platform.availabilityZone, LaunchType: 'FARGATE', KnownStatus: 'RUNNING', DesiredStatus: 'RUNNING', Family: 'conclave-worker', Revision: '1' }));
      return;
    }
    res.writeHead(404).end();
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  const close = () => new Promise<void>((r) => server.close(() => r()));
  return {
    platform,
    signal: true,
    env: { ECS_CONTAINER_METADATA_URI_V4: `http://127.0.0.1:${port}${base}` },
    attach(child) {
      child.once('exit', (code, signal) => {
        void close();
        onStopped(taskStoppedEvent(platform, { code, signal }, new Date(clock.now())));
      });
    },
    close,
  };
}

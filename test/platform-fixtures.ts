/**
 * Platform events in the shapes the services document (Amazon ECS "Task state change events",
 * Amazon EC2 "EC2 Instance State-change Notification"), with placeholder account and ids. Every
 * event comes from ACCOUNT in REGION at TIME unless `extra` says otherwise.
 */
export const ACCOUNT = '000000000000';
export const REGION = 'eu-west-1';
export const TIME = '2026-11-23T12:00:00Z';
/** The envelope fields a test may change: where and when the event happened, its id. */
export interface Envelope {
  id?: string;
  time?: string;
  account?: string;
  region?: string;
}
export const CLUSTER = `arn:aws:ecs:eu-west-1:${ACCOUNT}:cluster/workers`;
export const taskArn = (id: string, cluster = 'workers') => `arn:aws:ecs:eu-west-1:${ACCOUNT}:task/${cluster}/${id}`;

export function ecsTaskStateChange(task: string, lastStatus: string, extra: Envelope & { clusterArn?: string; stoppedReason?: string; stopCode?: string } = {}) {
  const stopped = lastStatus === 'STOPPED';
  return {
    version: '0',
    id: extra.id ?? '3317b2af-7005-947d-b652-f55e762e571a',
    'detail-type': 'ECS Task State Change',
    source: 'aws.ecs',
    account: extra.account ?? ACCOUNT,
    time: extra.time ?? TIME,
    region: extra.region ?? REGION,
    resources: [task],
    detail: {
      attachments: [{ id: 'a1b2c3d4-5678-90ab-cdef-EXAMPLE11111', type: 'eni', status: stopped ? 'DELETED' : 'ATTACHED', details: [] }],
      availabilityZone: 'eu-west-1a',
      clusterArn: extra.clusterArn ?? CLUSTER,
      containers: [{ containerArn: `${task.replace(':task/', ':container/')}/app`, exitCode: stopped ? 137 : undefined, lastStatus, name: 'app', taskArn: task, cpu: '0' }],
      createdAt: '2026-11-23T11:00:00.000Z',
      launchType: 'FARGATE',
      cpu: '256',
      memory: '512',
      desiredStatus: stopped || lastStatus === 'DEACTIVATING' || lastStatus === 'STOPPING' ? 'STOPPED' : 'RUNNING',
      group: 'service:worker',
      lastStatus,
      overrides: { containerOverrides: [{ name: 'app' }] },
      ...(stopped ? { stoppedAt: '2026-11-23T12:00:00.000Z', stoppedReason: extra.stoppedReason ?? 'Essential container in task exited', stopCode: extra.stopCode ?? 'EssentialContainerExited', executionStoppedAt: '2026-11-23T11:59:58.000Z' } : {}),
      startedAt: '2026-11-23T11:00:20.000Z',
      taskArn: task,
      taskDefinitionArn: `arn:aws:ecs:eu-west-1:${ACCOUNT}:task-definition/worker:1`,
      updatedAt: '2026-11-23T12:00:00.000Z',
      version: 5,
    },
  };
}

export function ec2StateChange(instanceId: string, state: string, extra: Envelope = {}) {
  return {
    version: '0',
    id: extra.id ?? '7bf73129-1428-4cd3-a780-95db273d1602',
    'detail-type': 'EC2 Instance State-change Notification',
    source: 'aws.ec2',
    account: extra.account ?? ACCOUNT,
    time: extra.time ?? TIME,
    region: extra.region ?? REGION,
    resources: [`arn:aws:ec2:eu-west-1:${ACCOUNT}:instance/${instanceId}`],
    detail: { 'instance-id': instanceId, state },
  };
}

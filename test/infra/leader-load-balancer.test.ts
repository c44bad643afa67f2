/**
 * The documented pattern (docs/deploy.md, "Clients find the leader"): examples/leader-load-balancer-stack.ts
 * synthesizes cdk-nag clean, its ALB and NLB target groups ask GET /leader with the settings the
 * docs give, and its leader's name is a private Route 53 record kept by leaderDiscovery.
 */
import { Match, type Template } from 'aws-cdk-lib/assertions';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LEADER_HEALTH_CHECK, LeaderLoadBalancerStack } from '../../examples/leader-load-balancer-stack.js';
import { DISCOVERY_ENV } from '../../lib/discovery/wiring.js';
import { buildAssets, logicalId, synth, unacknowledged, type Synthesized } from './support.js';

beforeAll(buildAssets);

describe('examples/leader-load-balancer-stack.ts', () => {
  let s: Synthesized<LeaderLoadBalancerStack>;
  let t: Template;
  beforeAll(() => {
    s = synth((app) => new LeaderLoadBalancerStack(app, 'Orders', { env: { region: 'eu-west-1', account: '123456789012' } }));
    t = s.template;
  });
  afterAll(() => s?.cleanup());

  it('synthesizes with no unacknowledged cdk-nag finding', () => {
    expect(unacknowledged(s.report)).toEqual([]);
  });

  it('health-checks the ALB’s targets with GET /leader: every 5 s, 2 s timeout, 2 to turn healthy or unhealthy, 200 only', () => {
    expect(LEADER_HEALTH_CHECK).toEqual({ path: '/leader', interval: expect.anything(), timeout: expect.anything(), healthyThresholdCount: 2, unhealthyThresholdCount: 2 });
    t.hasResourceProperties('AWS::ElasticLoadBalancingV2::TargetGroup', {
      Protocol: 'HTTP',
      Port: 8080,
      TargetType: 'ip',
      HealthCheckPath: '/leader',
      HealthCheckIntervalSeconds: 5,
      HealthCheckTimeoutSeconds: 2,
      HealthyThresholdCount: 2,
      UnhealthyThresholdCount: 2,
      Matcher: { HttpCode: '200' },
      TargetGroupAttributes: Match.arrayWith([{ Key: 'deregistration_delay.timeout_seconds', Value: '5' }]),
    });
    t.hasResourceProperties('AWS::ElasticLoadBalancingV2::LoadBalancer', { Type: 'application', Scheme: 'internal' });
    t.hasResourceProperties('AWS::ElasticLoadBalancingV2::Listener', { Protocol: 'HTTP', Port: 80, DefaultActions: [{ Type: 'forward', TargetGroupArn: { Ref: logicalId(s.stack, s.stack.alb.targets) } }] });
  });

  it('health-checks the NLB’s TCP targets with the same HTTP GET /leader', () => {
    t.hasResourceProperties('AWS::ElasticLoadBalancingV2::TargetGroup', {
      Protocol: 'TCP',
      Port: 8080,
      TargetType: 'ip',
      HealthCheckProtocol: 'HTTP',
      HealthCheckPath: '/leader',
      HealthCheckIntervalSeconds: 5,
      HealthCheckTimeoutSeconds: 2,
      HealthyThresholdCount: 2,
      UnhealthyThresholdCount: 2,
      Matcher: { HttpCode: '200' },
    });
    t.hasResourceProperties('AWS::ElasticLoadBalancingV2::Listener', { Protocol: 'TCP', Port: 8080, DefaultActions: [{ Type: 'forward', TargetGroupArn: { Ref: logicalId(s.stack, s.stack.nlb.targets) } }] });
  });

  it('lets the workers’ port be reached from the load balancers only', () => {
    const worker = logicalId(s.stack, s.stack.workerSecurityGroup);
    const ingress = Object.values(t.findResources('AWS::EC2::SecurityGroupIngress')).map((r) => r['Properties']).filter((p) => JSON.stringify(p.GroupId).includes(worker));
    expect(ingress.map((p) => [p.FromPort, p.ToPort, JSON.stringify(p.SourceSecurityGroupId)]).sort()).toEqual(
      [s.stack.alb.loadBalancer, s.stack.nlb.loadBalancer].map((lb) => [8080, 8080, JSON.stringify({ 'Fn::GetAtt': [logicalId(s.stack, lb.connections.securityGroups[0]!), 'GroupId'] })]).sort(),
    );
  });

  it('names the leader in the private zone: orders.leader.conclave.internal, kept by leaderDiscovery', () => {
    const d = s.stack.conclave.leaderDiscovery!;
    expect(d.recordName).toBe('{lease}.leader.conclave.internal');
    const vars = t.toJSON()['Resources'][logicalId(s.stack, d.fn)].Properties.Environment.Variables;
    expect(vars).toMatchObject({ [DISCOVERY_ENV.hostedZoneId]: { Ref: logicalId(s.stack, s.stack.zone) }, [DISCOVERY_ENV.recordName]: '{lease}.leader.conclave.internal', [DISCOVERY_ENV.leases]: '["orders"]' });
  });
});

/**
 * Clients find the leader, two ways side by side (docs/deploy.md, "Clients find the leader"):
 *
 * - **A load balancer in front of every worker.** Each worker is a target; the target group's
 *   health check asks `GET /leader`, which the SDK's health check answers 200 only on the leader
 *   (503 on the others), so requests go to the leader alone. An Application Load Balancer for
 *   HTTP, a Network Load Balancer for anything on TCP (its health check is HTTP all the same).
 * - **A name** (ConclaveProps `leaderDiscovery`): a private Route 53 record per lease,
 *   `<lease>.leader.conclave.internal`, kept pointing at the leader by the discovery function.
 *
 * The workers themselves are yours: register them with the target groups (`targets.addTarget`),
 * run them with `workerSecurityGroup` and `workerRole`, and start each LeaderElector with
 * `advertise` (its own address and `port`) and the SDK's health check on `port`. Whatever replaces
 * unhealthy workers must not act on this check, which every follower fails: an Auto Scaling group
 * keeps its EC2 health check (the default); an ECS service attached to a target group replaces the
 * tasks that fail its check, so set its `healthCheckGracePeriod` to the largest value, or give its
 * clients the leader's name instead (docs/deploy.md, "Clients find the leader").
 *
 * test/infra/leader-load-balancer.test.ts synthesizes it, cdk-nag clean.
 */
import { Duration, RemovalPolicy, Stack, Validations, type StackProps } from 'aws-cdk-lib';
import * as ec2 from 'aws-cdk-lib/aws-ec2';
import * as elbv2 from 'aws-cdk-lib/aws-elasticloadbalancingv2';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as route53 from 'aws-cdk-lib/aws-route53';
import * as s3 from 'aws-cdk-lib/aws-s3';
import type { Construct } from 'constructs';
import { Conclave } from '@conclave/cdk';

/**
 * The health check of a leader's target group. The shortest interval and thresholds both load
 * balancers allow: a new leader takes traffic `healthyThresholdCount × interval` (10 s) after it
 * first answers 200, and a leader that stopped answering (a crash) or answers 503 (a hand-off,
 * a lost term) is out after `unhealthyThresholdCount × interval` (10 s). A crash is then routed to
 * the new leader within the lease duration (15 s by default: the successor takes the lease then)
 * plus 10 s. Only a 200 counts: 503 is the SDK's answer on a follower.
 */
export const LEADER_HEALTH_CHECK = {
  path: '/leader',
  interval: Duration.seconds(5),
  timeout: Duration.seconds(2),
  healthyThresholdCount: 2,
  unhealthyThresholdCount: 2,
} as const;

export interface LeaderLoadBalancerStackProps extends StackProps {
  /** The lease the workers elect a leader for. @default 'orders' */
  readonly leaseName?: string;
  /** The port the workers serve on, their health check included. @default 8080 */
  readonly port?: number;
}

export class LeaderLoadBalancerStack extends Stack {
  readonly vpc: ec2.Vpc;
  readonly conclave: Conclave;
  readonly zone: route53.PrivateHostedZone;
  /** The Application Load Balancer (HTTP on 80) and its target group of workers. */
  readonly alb: { readonly loadBalancer: elbv2.ApplicationLoadBalancer; readonly targets: elbv2.ApplicationTargetGroup };
  /** The Network Load Balancer (TCP on `port`) and its target group of workers. */
  readonly nlb: { readonly loadBalancer: elbv2.NetworkLoadBalancer; readonly targets: elbv2.NetworkTargetGroup };
  /** What the workers run as: granted the lease, nothing else. */
  readonly workerRole: iam.Role;
  /** The workers' security group: `port` from the load balancers only. */
  readonly workerSecurityGroup: ec2.SecurityGroup;

  constructor(scope: Construct, id: string, props: LeaderLoadBalancerStackProps = {}) {
    super(scope, id, props);
    const leaseName = props.leaseName ?? 'orders';
    const port = props.port ?? 8080;

    const cidr = '10.40.0.0/16'; // a literal, so the load balancers' rules name it (cdk-nag EC23 reads it)
    this.vpc = new ec2.Vpc(this, 'Vpc', {
      ipAddresses: ec2.IpAddresses.cidr(cidr),
      maxAzs: 2,
      natGateways: 0,
      subnetConfiguration: [{ name: 'private', subnetType: ec2.SubnetType.PRIVATE_ISOLATED }],
      flowLogs: { all: {} },
    });
    this.zone = new route53.PrivateHostedZone(this, 'Zone', { zoneName: 'conclave.internal', vpc: this.vpc });
    this.conclave = new Conclave(this, 'Conclave', {
      tablePrefix: 'orders',
      // the name: orders.leader.conclave.internal, an A record of the leader's IP while it leads
      leaderDiscovery: { leaseNames: [leaseName], route53: { hostedZone: this.zone, recordName: '{lease}.leader', ttl: Duration.seconds(5) } },
    });
    this.workerRole = new iam.Role(this, 'WorkerRole', { assumedBy: new iam.ServicePrincipal('ecs-tasks.amazonaws.com') });
    this.conclave.grantWorker(this.workerRole, { leaseNames: [leaseName], components: [] });

    const accessLogs = new s3.Bucket(this, 'AccessLogs', {
      enforceSSL: true,
      encryption: s3.BucketEncryption.S3_MANAGED,
      blockPublicAccess: s3.BlockPublicAccess.BLOCK_ALL,
      removalPolicy: RemovalPolicy.RETAIN,
    });
    Validations.of(accessLogs).acknowledge({ id: 'AwsSolutions::AwsSolutions-S1', reason: 'This bucket holds the load balancers\' access logs; logging access to it would need another bucket, whose access would need another.' });

    const albSecurityGroup = new ec2.SecurityGroup(this, 'AlbSecurityGroup', { vpc: this.vpc, description: 'The leader ALB: HTTP from the VPC', allowAllOutbound: false });
    albSecurityGroup.addIngressRule(ec2.Peer.ipv4(cidr), ec2.Port.tcp(80), 'clients in the VPC');
    const nlbSecurityGroup = new ec2.SecurityGroup(this, 'NlbSecurityGroup', { vpc: this.vpc, description: 'The leader NLB: TCP from the VPC', allowAllOutbound: false });
    nlbSecurityGroup.addIngressRule(ec2.Peer.ipv4(cidr), ec2.Port.tcp(port), 'clients in the VPC');
    this.workerSecurityGroup = new ec2.SecurityGroup(this, 'WorkerSecurityGroup', { vpc: this.vpc, description: 'Workers: their port from the load balancers (requests and health checks)' });
    for (const lb of [albSecurityGroup, nlbSecurityGroup]) {
      this.workerSecurityGroup.addIngressRule(lb, ec2.Port.tcp(port), 'the load balancer: requests and GET /leader');
      lb.addEgressRule(this.workerSecurityGroup, ec2.Port.tcp(port), 'to the workers');
    }

    // ALB: HTTP requests to the leader
    const alb = new elbv2.ApplicationLoadBalancer(this, 'Alb', { vpc: this.vpc, internetFacing: false, securityGroup: albSecurityGroup, dropInvalidHeaderFields: true });
    alb.logAccessLogs(accessLogs, 'alb');
    const albTargets = new elbv2.ApplicationTargetGroup(this, 'AlbTargets', {
      vpc: this.vpc,
      targetType: elbv2.TargetType.IP,
      port,
      protocol: elbv2.ApplicationProtocol.HTTP,
      healthCheck: { ...LEADER_HEALTH_CHECK, healthyHttpCodes: '200' },
      // a follower is never sent new requests; a deposed leader's in-flight ones may finish. Short:
      // ECS drains a task this long before its SIGTERM, and no leader is routed to meanwhile (docs/deploy.md)
      deregistrationDelay: Duration.seconds(5),
    });
    alb.addListener('Http', { port: 80, protocol: elbv2.ApplicationProtocol.HTTP, open: false, defaultTargetGroups: [albTargets] });
    this.alb = { loadBalancer: alb, targets: albTargets };

    // NLB: TCP to the leader, chosen by the same HTTP health check
    const nlb = new elbv2.NetworkLoadBalancer(this, 'Nlb', { vpc: this.vpc, internetFacing: false, securityGroups: [nlbSecurityGroup] });
    nlb.logAccessLogs(accessLogs, 'nlb');
    const nlbTargets = new elbv2.NetworkTargetGroup(this, 'NlbTargets', {
      vpc: this.vpc,
      targetType: elbv2.TargetType.IP,
      port,
      protocol: elbv2.Protocol.TCP,
      healthCheck: { ...LEADER_HEALTH_CHECK, protocol: elbv2.Protocol.HTTP, healthyHttpCodes: '200' },
      deregistrationDelay: Duration.seconds(5),
    });
    nlb.addListener('Tcp', { port, protocol: elbv2.Protocol.TCP, defaultTargetGroups: [nlbTargets] });
    this.nlb = { loadBalancer: nlb, targets: nlbTargets };
  }
}

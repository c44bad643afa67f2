/**
 * What runs in each Region of a Conclave deployment, on the tables there: the event bus, the
 * election timer's queue, the functions wired to their triggers as lib/wiring.ts declares them, the
 * push path, the alarms and the dashboard; and the grants of workers there. `Conclave` builds it
 * beside the tables it creates; `ConclaveReplica` (infra/replica.ts) on the replicas of another
 * Region.
 */
import { Duration, Lazy, Names, Stack, Token, type RemovalPolicy } from 'aws-cdk-lib';
import * as events from 'aws-cdk-lib/aws-events';
import * as iam from 'aws-cdk-lib/aws-iam';
import type * as kms from 'aws-cdk-lib/aws-kms';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import type * as logs from 'aws-cdk-lib/aws-logs';
import type * as sns from 'aws-cdk-lib/aws-sns';
import * as sqs from 'aws-cdk-lib/aws-sqs';
import type { Construct } from 'constructs';
import type { ElectionConfig, TableNames } from '../lib/schemas/config.js';
import { parse } from '../lib/schemas/validation.js';
import { ALL_LEASES_SESSION_PARTITIONS, COORDINATOR_COMPONENT, sessionComponent } from '../lib/schemas/session-partition.js';
import { ENV, wiring, type FunctionName, type FunctionWiring } from '../lib/wiring.js';
import { FUNCTION_ACCESS, type TableRole } from './access.js';
import { conclaveFunction } from './functions.js';
import { checkRolePolicySizes, grantDescribeTables, grantFunctionAccess, grantLeaderReads, grantSessionReads, grantWorkerAccess, grantWorkerPush, SESSION_PARTITIONS, warnIfNothingGranted } from './grants.js';
import { ConclaveMonitoring } from './monitoring.js';
import { iotDataEndpoint } from './push.js';
import { deadLetterQueue, queueEncryption } from './queues.js';
import type { ConclaveRegions } from './regions.js';
import { GrantGetLeaderSettingsSchema, GrantWorkerSettingsSchema, refuseTokens } from './settings.js';
import type { ConclaveTableRefs } from './tables.js';
import { addEventRules, addQueueSource, addSchedule, addStreamSource } from './triggers.js';

/**
 * What a `Conclave` with `regions` hands its ConclaveReplicas (not public API): the settings every
 * Region runs with, and the replicas made so far, by Region.
 */
export interface PrimaryRecord {
  readonly regions: ConclaveRegions;
  /** Every table's name (required with `regions`). */
  readonly names: TableNames;
  readonly tick: Duration;
  readonly removalPolicy: RemovalPolicy;
  readonly logRetention: logs.RetentionDays;
  readonly platformSignals: boolean;
  readonly push: { readonly leasesTable: string } | undefined;
  readonly replicas: Map<string, Construct>;
}

/** The multi-Region `Conclave`s, and what they hand their replicas. */
export const PRIMARIES = new WeakMap<Construct, PrimaryRecord>();

/** What a Region's part is built from (validated by the construct that builds it). */
export interface RegionalSettings {
  /** The tables in this Region: the tables themselves, or their replicas here. */
  readonly tables: ConclaveTableRefs;
  readonly config: ElectionConfig;
  readonly tick: Duration;
  readonly removalPolicy: RemovalPolicy;
  readonly logRetention: logs.RetentionDays;
  readonly encryptionKey: kms.IKey | undefined;
  /** @default a new EventBus */
  readonly eventBus: events.IEventBus | undefined;
  readonly alarmTopic: sns.ITopic | undefined;
  readonly platformSignals: boolean;
  /** The push path: its wake topics are named after the leases table. Undefined: no push path. */
  readonly push: { readonly leasesTable: string } | undefined;
}

/** What RegionalSettings builds. */
export interface RegionalDeployment {
  readonly eventBus: events.IEventBus;
  readonly timerQueue: sqs.Queue;
  readonly deadLetterQueues: Partial<Record<FunctionName, sqs.Queue>>;
  readonly functions: Record<FunctionName, lambda.Function>;
  readonly schedule: events.Rule;
  readonly monitoring: ConclaveMonitoring;
  readonly pushEndpoint: string | undefined;
}

/**
 * The deployment's own bus. CDK's default name for it is its path, which leaves a given stack name
 * out: one stack deployed twice in an account and Region under two stack names, say `svc-dev` and
 * `svc-staging` from one app, gave both the same bus name, and the second create failed. So a
 * stack given its own name (`stackName`) names the bus from that name and the path; a stack named
 * as CDK names it (its id, or its stage's name and its id: no clash there) keeps the name it always
 * had, so no deployed bus is replaced on upgrade. A nested stack's name is a token CloudFormation
 * makes: the top-level stack it is nested in is the one whose name counts (Names.uniqueResourceName
 * names from that stack's name and the path below it).
 */
function newEventBus(scope: Construct): events.EventBus {
  const bus: events.EventBus = new events.EventBus(scope, 'Bus', {
    description: 'Conclave: lease and candidate events',
    eventBusName: Lazy.string({ produce: () => (namedByCdk(topLevelStack(Stack.of(bus))) ? Names.uniqueId(bus) : Names.uniqueResourceName(bus, { maxLength: 256 })) }),
  });
  return bus;
}

/** `stack`, or the top-level stack a nested stack is nested in (at any depth). */
function topLevelStack(stack: Stack): Stack {
  let s = stack;
  while (s.nestedStackParent) s = s.nestedStackParent;
  return s;
}

/** Whether the top-level `stack` has the name CDK makes for it (no `stackName` given). */
function namedByCdk(stack: Stack): boolean {
  // the name CDK makes (Stack's own generateStackName: its stage's name and its id); an aws-cdk-lib without it: as before
  const generated = (stack as unknown as { generateStackName?: () => string }).generateStackName;
  return Token.isUnresolved(stack.stackName) || typeof generated !== 'function' || generated.call(stack) === stack.stackName;
}

/**
 * A Region's part, under `scope` (its ids are the ones `Conclave` has always given them: its
 * logical ids do not change).
 */
export function deployRegion(scope: Construct, s: RegionalSettings): RegionalDeployment {
  const { tables, tick, removalPolicy, logRetention } = s;
  const key = s.encryptionKey;
  const eventBus = s.eventBus ?? newEventBus(scope);

  // The timer queue, shaped by the function the wiring puts behind it.
  const consumer = (Object.keys(wiring) as FunctionName[]).find((n) => {
    const t: FunctionWiring['trigger'] = wiring[n].trigger;
    return t.kind === 'queue' && t.queue === 'electionTimer';
  });
  const consumed: FunctionWiring | undefined = consumer && wiring[consumer];
  if (!consumer || consumed?.trigger.kind !== 'queue') throw new Error('lib/wiring.ts puts no function behind the electionTimer queue');
  const timerDlq = deadLetterQueue(scope, 'TimerDeadLetters', { encryptionKey: key });
  const timerQueue = new sqs.Queue(scope, 'TimerQueue', {
    enforceSSL: true,
    // AWS's advice for a Lambda source queue: 6× the function timeout, so a throttled batch is
    // not received again while it waits. A late retry costs nothing: the tick finishes any
    // election past its deadline within a minute.
    visibilityTimeout: Duration.seconds(6 * consumed.timeoutSeconds),
    deadLetterQueue: { queue: timerDlq, maxReceiveCount: consumed.trigger.maxReceiveCount },
    ...queueEncryption(key),
  });
  const deadLetterQueues: Partial<Record<FunctionName, sqs.Queue>> = { [consumer]: timerDlq };

  const environment: Record<string, string> = {
    [ENV.leasesTable]: tables.leases.tableName,
    [ENV.candidatesTable]: tables.candidates.tableName,
    [ENV.identitiesTable]: tables.identities.tableName,
    // an ARN works for PutEvents on any bus, this account's or another's
    [ENV.eventBus]: eventBus.eventBusArn,
    [ENV.leasesTableArn]: tables.leases.tableArn,
    [ENV.timerQueueUrl]: timerQueue.queueUrl,
    [ENV.electionConfig]: JSON.stringify(s.config),
  };

  const functions = {} as Record<FunctionName, lambda.Function>;
  for (const name of Object.keys(wiring) as FunctionName[]) {
    // The timer queue's function sends to its own queue on purpose: events an EventBridge outage
    // deferred, published again for a day (REPUBLISH_FOR_MS); a mark the session row refused,
    // written again until the row takes it; a term end or an election's deadline further off than
    // SQS's 15 minutes, reached link by link. Lambda's recursive loop detection cut each such chain
    // at about 16 invocations, its message to the dead-letter queue: the 17th republish came about
    // 2 hours into an outage, a term end of a day-long lease about 4 hours in. Each chain has an
    // end the function keeps: a republish past REPUBLISH_FOR_MS throws (the queue's redrive takes
    // it); a mark still refused markAgainForMs after its first refusal (the unmarked hold, 6.4
    // lease durations: under 7 days) is given up, logged; a term end's links stop at the first
    // that finds the term run out (by the lease's stamp: a lease lasts at most a day) or its
    // holder renewed within half its term; an election's at its deadline on the row, which closes it.
    const ownQueue = name === consumer && FUNCTION_ACCESS[name].scheduleTimer;
    functions[name] = conclaveFunction(scope, name, { environment, removalPolicy, logRetention, encryptionKey: key, ...(ownQueue ? { recursiveLoop: lambda.RecursiveLoop.ALLOW } : {}) });
  }

  // The push path: IoT Core's data endpoint, found at deploy time, for the functions that wake
  // workers. Topics are named after the leases table's name as given, when there is one: the
  // worker's ARNs then name each lease's one topic (infra/push.ts).
  let pushEndpoint: string | undefined;
  if (s.push) {
    const address = iotDataEndpoint(scope, 'PushEndpoint', { removalPolicy, logRetention, encryptionKey: key });
    for (const name of Object.keys(functions) as FunctionName[]) if (FUNCTION_ACCESS[name].publishWakes) functions[name].addEnvironment(ENV.pushEndpoint, `https://${address}`);
    pushEndpoint = `wss://${address}/mqtt`;
  }

  // Triggers, read from the wiring: whatever local mode polls and schedules, AWS does too.
  let schedule: events.Rule | undefined;
  for (const name of Object.keys(wiring) as FunctionName[]) {
    const w: FunctionWiring = wiring[name];
    const fn = functions[name];
    switch (w.trigger.kind) {
      case 'stream': {
        const dlq = addStreamSource(scope, name, fn, w.trigger, tables[w.trigger.table], key);
        // the function itself sends poison records there, with their content (lib/functions/dead-letter.ts)
        fn.addEnvironment(ENV.deadLetterQueueUrl, dlq.queueUrl);
        dlq.grantSendMessages(fn);
        deadLetterQueues[name] = dlq;
        break;
      }
      case 'queue':
        addQueueSource(fn, w.trigger, timerQueue);
        break;
      case 'schedule':
        schedule = addSchedule(scope, name, fn, tick);
        break;
      case 'events':
        deadLetterQueues[name] = addEventRules(scope, name, fn, w.trigger, s.platformSignals, key);
        break;
      default: {
        const unknown: never = w.trigger; // a new kind of trigger in lib/wiring.ts needs its source here
        throw new Error(`lib/wiring.ts: ${name} has a trigger this construct cannot build: ${JSON.stringify(unknown)}`);
      }
    }
  }
  if (!schedule) throw new Error('lib/wiring.ts declares no scheduled function: the coordinator must run on a schedule');

  for (const name of Object.keys(functions) as FunctionName[]) grantFunctionAccess(name, functions[name], { tables, encryptionKey: key, eventBus, timerQueue, push: s.push });
  // The timer queue's messages are believed: a mark is written on the holder's session row (which
  // ends its term), events are published as they are. So only the functions that schedule timers
  // may send to it, whatever another principal of the account is allowed (Lambda's polling and the
  // redrive to its dead-letter queue send nothing to it; a dead letter is replayed through the
  // function: docs/deploy.md).
  const senders = (Object.keys(functions) as FunctionName[]).filter((n) => FUNCTION_ACCESS[n].scheduleTimer);
  timerQueue.addToResourcePolicy(
    new iam.PolicyStatement({
      sid: 'OnlyConclaveFunctionsSend',
      effect: iam.Effect.DENY,
      principals: [new iam.AnyPrincipal()],
      actions: ['sqs:SendMessage'],
      resources: [timerQueue.queueArn],
      conditions: { ArnNotEquals: { 'aws:PrincipalArn': senders.map((n) => functions[n].role!.roleArn) } },
    }),
  );

  // id "Default" leaves the path out of logical ids: the alarms and the dashboard keep the ids
  // they had when the Conclave construct made them itself (no replacement on upgrade)
  const monitoring = new ConclaveMonitoring(scope, 'Default', {
    // the functions publish every metric with it (ENV.leasesTable): unique in the account and Region
    deployment: tables.leases.tableName,
    functions,
    deadLetterQueues,
    timerQueue,
    tick,
    ...(s.alarmTopic ? { alarmTopic: s.alarmTopic } : {}),
  });
  return { eventBus, timerQueue, deadLetterQueues, functions, schedule, monitoring, pushEndpoint };
}

/**
 * Options of `grantWorker`: which leases, and which identity-lease components, the worker may
 * write. Both scopes are required: list them, or opt in to every one explicitly.
 */
export interface GrantWorkerOptions {
  /**
   * Keep the worker to these leases: a `dynamodb:LeadingKeys` condition on the leases table
   * (partition key `name`) and the candidates table (partition key `leaseName`). Required unless
   * `allLeases` is true. A role can name about 195 leases of 18 characters (fewer, longer ones):
   * the names are split over statements that CDK spreads over the role's inline policy and up to
   * IAM's default 10 managed policies (`npx tsx bench/scale-iam.ts`); past that, synth fails naming
   * this option: give each cell of processes a role naming its own leases, or use `allLeases`. A
   * role imported with `Role.fromRoleArn` has one inline policy, never split: about 18 names.
   */
  readonly leaseNames?: readonly string[];
  /**
   * `true`: the worker may take part in every lease (no `dynamodb:LeadingKeys` condition), so it
   * can also take or disturb any lease. Only instead of `leaseNames`.
   */
  readonly allLeases?: true;
  /**
   * Keep the worker's identity leases (KEP-1965) to these components: a `dynamodb:LeadingKeys`
   * condition on the identities table (partition key `component`). The identities table is keyed
   * by component, not by lease, so `leaseNames` cannot scope it; a worker heartbeats and lists its
   * own component, so this is usually one name. `[]`: no access to the identities table (a worker
   * without `IdentityLeaseHeartbeat`). Required unless `allComponents` is true.
   */
  readonly components?: readonly string[];
  /** `true`: identity leases of every component. Only instead of `components`. */
  readonly allComponents?: true;
  /**
   * The worker's Session (lib/sdk/session.ts): it may create, renew and end session rows in its
   * grant's own partition of the identities table only — `conclave-session:<scope>`, where the
   * scope is a hash of `leaseNames` (sessionComponent; give the Session the same `leaseNames`), or
   * with `allLeases` the 64 partitions `conclave-session:all-<k>` its sessions are spread over (by
   * process) and `conclave-session` (an SDK before 0.2.0) — and read every process's session row (GetItem), which a
   * follower needs to judge a lease held on one, and query every session partition (Query), which
   * `getLeader` needs to judge a term whose named session row does not vouch for it. So a worker cannot touch the session of a process
   * granted other leases: it can neither depose that process's leaders by backdating their session
   * nor keep a dead one's leases by renewing it. Workers granted the same leases share a partition
   * (one trust domain, as they share their leases' rows): a write by any of them to another's row is
   * seen by the owner at its next renewal, which ends the session. `components` may not name a
   * session partition; `allComponents` excludes them. Keep this unless no process of the fleet runs
   * a Session. @default true
   */
  readonly sessions?: boolean;
}

/** Options of `grantGetLeader`: which leases the reader may look up. Required: list them, or opt in to every one explicitly. */
export interface GrantGetLeaderOptions {
  /**
   * Keep the reader to these leases' rows: a `dynamodb:LeadingKeys` condition on the leases table.
   * Required unless `allLeases` is true. The names are split over statements as grantWorker's are;
   * a role naming more than about 3,000 leases of 18 characters outgrows IAM's quotas, and synth
   * fails naming this option: use `allLeases`, or a role per cell of clients. A role imported with
   * `Role.fromRoleArn` has one inline policy, never split: about 420 names.
   */
  readonly leaseNames?: readonly string[];
  /** `true`: every lease's row. Only instead of `leaseNames`. */
  readonly allLeases?: true;
}

/** `grantGetLeader` of `Conclave` and `ConclaveReplica`, on the tables of one Region. */
export function grantGetLeaderIn(grantee: iam.IGrantable, options: GrantGetLeaderOptions, on: Pick<WorkerGrantTargets, 'tables' | 'encryptionKey'>): iam.Grant {
  refuseTokens(options, [], 'grantGetLeader options');
  const o = parse(GrantGetLeaderSettingsSchema, options ?? {}, 'grantGetLeader options');
  // a role naming too many leases fails synth with the fix, not the deploy
  checkRolePolicySizes(grantee, o.leaseNames, 'grantGetLeader');
  const grant = grantLeaderReads(grantee, o.leaseNames, on);
  // an immutable imported role takes none of it, and CDK says nothing
  warnIfNothingGranted(grantee, 'grantGetLeader');
  return grant;
}

/** What a worker's grant in a Region is on. */
export interface WorkerGrantTargets {
  /** The construct granting: IoT ARNs name its stack's Region and account. */
  readonly scope: Construct;
  readonly tables: ConclaveTableRefs;
  readonly encryptionKey: kms.IKey | undefined;
  readonly push: { readonly leasesTable: string } | undefined;
  readonly multiRegion: boolean;
}

/** `grantWorker` of `Conclave` and `ConclaveReplica`, on the tables (and IoT Core) of one Region. */
export function grantWorkerIn(grantee: iam.IGrantable, options: GrantWorkerOptions, on: WorkerGrantTargets): iam.Grant {
  refuseTokens(options, [], 'grantWorker options');
  const o = parse(GrantWorkerSettingsSchema, options ?? {}, 'grantWorker options');
  // a role naming too many leases fails synth with the fix, not the deploy
  checkRolePolicySizes(grantee, o.leaseNames, 'grantWorker');
  // The worker's own session partition: its grant's scope (sessionComponent of its leaseNames, the
  // Session's `leaseNames`); it may read (and query: getLeader) every other process's session
  // partition, and write none. Granted
  // every lease: the shards its processes' sessions are spread over (`conclave-session:all-*`, by
  // process) and `conclave-session` (an SDK before 0.2.0), as IAM patterns, none of them a scope.
  const ownSessions = o.sessions ? (o.leaseNames ? [sessionComponent(o.leaseNames)] : [...ALL_LEASES_SESSION_PARTITIONS]) : undefined;
  const like = o.sessions && !o.leaseNames;
  const targets = { tables: on.tables, encryptionKey: on.encryptionKey, multiRegion: on.multiRegion };
  const scope: Record<TableRole, readonly string[] | undefined> = {
    leases: o.leaseNames,
    candidates: o.leaseNames,
    identities: o.components && ownSessions && !like ? [...o.components, ...ownSessions] : o.components,
  };
  // (allComponents: every partition but the sessions' and the coordinator's own, its tick cursor)
  let grant = grantWorkerAccess(grantee, scope, targets, { identities: [...SESSION_PARTITIONS, COORDINATOR_COMPONENT] });
  // allComponents or patterns: every partition but the sessions' (above); its own session partitions apart
  if ((!o.components || like) && ownSessions) grant = grant.combine(grantWorkerAccess(grantee, { leases: [], candidates: [], identities: ownSessions }, { ...targets, encryptionKey: undefined }, {}, like));
  if (o.sessions) grant = grant.combine(grantSessionReads(grantee, targets, { query: true }));
  // DescribeTable of each table it may use: a start-up tells a table being created from one missing (and, multiRegion, checks MRSC:
  // a coordinated elector describes the identities table too, where other workers' sessions vouch for terms, sessions or not)
  const used = (Object.keys(scope) as TableRole[]).filter((r) => scope[r]?.length !== 0 || (r === 'identities' && (o.sessions || on.multiRegion)));
  if (used.length) grant = grant.combine(grantDescribeTables(grantee, used, targets));
  if (on.push) grant = grant.combine(grantWorkerPush(grantee, o.leaseNames, { scope: on.scope, ...on.push }));
  // an immutable imported role takes none of it, and CDK says nothing
  warnIfNothingGranted(grantee, 'grantWorker');
  return grant;
}

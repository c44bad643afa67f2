/**
 * Who calls which DynamoDB operation on which table, worked out from the code that runs (and
 * checked against it: test/infra/access.test.ts records every call the handlers and the worker
 * SDK make on DynamoDB Local). Grants are built from these lists and nothing else.
 *
 * IAM authorises a TransactWriteItems per item: a ConditionCheck needs
 * `dynamodb:ConditionCheckItem`, a Put `PutItem`, an Update `UpdateItem`, a Delete `DeleteItem`.
 */
import type { TableNames } from '../lib/schemas/config.js';
import { HOLDER_PLATFORM_INDEX } from '../lib/tables.js';
import type { FunctionName } from '../lib/wiring.js';

export type TableRole = keyof TableNames;
export type DynamoAction = `dynamodb:${'GetItem' | 'UpdateItem' | 'DeleteItem' | 'Query' | 'Scan' | 'ConditionCheckItem'}`;
export type TableAccess = Partial<Record<TableRole, readonly DynamoAction[]>>;

export interface FunctionAccess {
  readonly tables: TableAccess;
  /** dynamodb:Query on these secondary indexes (granted on the index ARN, not the table's). */
  readonly indexQueries?: readonly { readonly table: TableRole; readonly index: string }[];
  /** events:PutEvents on the bus (lease and candidate changes become events). */
  readonly publishEvents: boolean;
  /** sqs:SendMessage on the timer queue (an opened election schedules its deadline). */
  readonly scheduleTimer: boolean;
  /**
   * The push path, when the construct has one: iot:Publish on the deployment's wake topics
   * (lib/functions/wake.ts), and IoT Core's data endpoint in CONCLAVE_PUSH_ENDPOINT.
   */
  readonly publishWakes: boolean;
}

/**
 * One lease's reconcile (lib/coordinator/reconcile.ts `reconcileLease`): GetItem of the lease and
 * Query of its candidates (ItemStore.get/query), GetItem of the session rows its holder and its
 * candidates name (the snapshot's: a candidate on a session is judged by it, as every worker's
 * candidacy is with grantWorker's default `sessions`), UpdateItem to ping candidates (touch) and to
 * write the lease (write). It never deletes a lease and never puts a whole item.
 */
const reconcileOne = {
  leases: ['dynamodb:GetItem', 'dynamodb:UpdateItem'],
  candidates: ['dynamodb:Query', 'dynamodb:UpdateItem'],
  identities: ['dynamodb:GetItem'],
} as const satisfies TableAccess;

/**
 * A term held on a session that someone else ended, marked on the holder's session row
 * (IdentityStore.markTermEnded: a GetItem, then a conditional UpdateItem of `endedTerms` and
 * `endedTermStamps` only); a held row an operator deleted is judged, for the hold of its next
 * election, by the session row it names, or, where that row is not its holder's process's, by that
 * process's session rows (IdentityStore.processSessions: a Query of each of its partitions).
 */
const markEnded = ['dynamodb:GetItem', 'dynamodb:UpdateItem', 'dynamodb:Query'] as const satisfies readonly DynamoAction[];

export const FUNCTION_ACCESS = {
  /**
   * The tick (`reconcileAll`): Scan of leases and candidates instead of a read per lease, the
   * reconciles above (GetItem and Query again after a lost race), then garbage collection:
   * DeleteItem of stale candidates, Scan and DeleteItem of expired identity leases; UpdateItem
   * (`refusedSeen` alone) and DeleteItem of a session row the schema refuses that held leases name,
   * once unchanged long enough (lib/coordinator/refused-session.ts); GetItem and UpdateItem of its tick cursor, the identities table's row where one invocation's round leaves
   * off (lib/coordinator/tick.ts; DeleteItem when it does not parse).
   * It publishes no events: events come from the streams.
   */
  coordinator: {
    tables: {
      leases: ['dynamodb:Scan', ...reconcileOne.leases],
      candidates: ['dynamodb:Scan', ...reconcileOne.candidates, 'dynamodb:DeleteItem'],
      identities: ['dynamodb:Scan', 'dynamodb:DeleteItem', 'dynamodb:GetItem', 'dynamodb:UpdateItem'],
    },
    publishEvents: false,
    scheduleTimer: true,
    publishWakes: false,
  },
  /**
   * Reconciles the candidate's lease (and wakes its followers when that wrote it: an election's
   * winner, a preemption), then publishes Candidate Joined/Expired (deferred to the timer queue if
   * EventBridge fails).
   */
  candidateStream: { tables: reconcileOne, publishEvents: true, scheduleTimer: true, publishWakes: true },
  /**
   * Wakes the lease's followers (every change that reaches it: renewals are filtered out before),
   * reconciles a released or reported lease, then publishes Leader Elected/Changed/… (deferred likewise).
   */
  leaseStream: {
    tables: { ...reconcileOne, identities: markEnded },
    publishEvents: true,
    scheduleTimer: true,
    publishWakes: true,
  },
  /**
   * Finishes an election whose ack window ended (and wakes the lease's followers); puts an early
   * timer back. Publishes the events a stream function deferred to the timer queue while
   * EventBridge failed (and defers them again), and writes the session marks it deferred there
   * (lib/functions/core.ts onMarkEnded: the lease stream's marks, as it writes them).
   */
  electionTimer: { tables: { ...reconcileOne, identities: markEnded }, publishEvents: true, scheduleTimer: true, publishWakes: true },
  /**
   * A stopped task or instance (lib/platform/vacate.ts): Query of the holder-platform index, then
   * per lease GetItem and a conditional UpdateItem; the dead holder's candidate row GetItem, and its
   * and its peers' UpdateItem (`collectedAt`: Candidate Expired) and DeleteItem; wakes each lease it
   * vacated (its successor takes it at once). The lease stream publishes and reconciles what follows.
   */
  platform: {
    // candidates' Query: the processes a wake of a vacated lease goes to (lib/functions/core.ts wakeProcesses)
    tables: { leases: ['dynamodb:GetItem', 'dynamodb:UpdateItem'], candidates: ['dynamodb:GetItem', 'dynamodb:Query', 'dynamodb:UpdateItem', 'dynamodb:DeleteItem'] },
    indexQueries: [{ table: 'leases', index: HOLDER_PLATFORM_INDEX.name }],
    publishEvents: false,
    scheduleTimer: false,
    publishWakes: true,
  },
} as const satisfies Record<FunctionName, FunctionAccess>;

/**
 * A worker process (lib/sdk):
 * - LeaderElector on the leases table: GetItem (poll), UpdateItem (acquire, renew, release,
 *   report a vacancy), ConditionCheckItem (the fence of `fencedWrite` and of a run-once completion
 *   with the run's items);
 * - LeaseCandidate on the candidates table: GetItem and UpdateItem (register, renew = ack),
 *   DeleteItem (stop); withLease's run-once rows, in the lease's own partition of that table
 *   (lib/schemas/run-once.ts): UpdateItem (the term's claim, which reads the row back; the mark,
 *   alone or as an item of the run's fenced transaction) and GetItem (after a refused mark);
 * - IdentityLeaseHeartbeat on the identities table: GetItem, UpdateItem, DeleteItem (release),
 *   and Query for `listIdentities`/`listLiveIdentities` (one component's partition).
 * Nothing Scans and nothing Puts: every write is a conditional UpdateItem.
 */
export const WORKER_ACCESS = {
  leases: ['dynamodb:GetItem', 'dynamodb:UpdateItem', 'dynamodb:ConditionCheckItem'],
  // Query: withLease's `auto` mode asks whether a lease has candidates (its own partition only, by LeadingKeys)
  candidates: ['dynamodb:GetItem', 'dynamodb:UpdateItem', 'dynamodb:DeleteItem', 'dynamodb:Query'],
  identities: ['dynamodb:GetItem', 'dynamodb:UpdateItem', 'dynamodb:DeleteItem', 'dynamodb:Query'],
} as const satisfies Required<TableAccess>;

/**
 * The worker actions only a transaction uses: the ConditionCheckItem of `fencedWrite`'s and a
 * run-once completion's fence, a TransactWriteItems item. Tables with multi-Region strong
 * consistency (ConclaveProps `regions`) take no transactions (DynamoDB: "How DynamoDB global tables
 * work", MRSC), so a grant on them leaves these out; workers there run with `multiRegion`
 * and fence without a transaction (`fencedItemWrite`; run-once rows claimed by the term).
 */
export const WORKER_TRANSACTION_ONLY = {
  leases: ['dynamodb:ConditionCheckItem'],
} as const satisfies TableAccess;

/**
 * What a worker's writes may name (`dynamodb:Attributes`, `ForAllValues:StringEquals`): IAM counts
 * every attribute a request names — its key, its update expression and its condition expression
 * (AWS: "Using IAM policy conditions for fine-grained access control"); setting and removing are
 * the same to it. Each list is what the worker SDK's UpdateItem requests name, exactly
 * (test/infra/worker-policy.test.ts records them on DynamoDB Local and compares, both ways), and
 * with OPERATOR_OWNED it covers every attribute of the table's schema. `returnValues` is what those
 * requests ask back (`dynamodb:ReturnValues`); NONE stands for a request that names none, which
 * carries no such key, so a list with NONE is tested only where the key is there
 * (`StringEqualsIfExists`, infra/grants.ts returnValuesCondition) and one without it needs it named
 * (`StringEquals`); ALL_NEW shows nothing the worker's GetItem does not.
 *
 * The leases table has two write statements, and a request must fit one: a renewal
 * (LeaseStore.renewTerm), the only write that may flip `renewalMark` — which is what lets the lease
 * stream's filter drop it (lib/wiring.ts) — names no holder, instance, token or session; every other
 * worker write (acquire, release, report a vacancy, a renewal that puts the term on its session or
 * takes it off) may name those but not the mark. So no write a worker can send both changes the
 * term, or the session it is judged by and its end marked on, and hides from the lease stream
 * (a change of `session` in a term is marked on the session it left: lib/functions/core.ts
 * endedSessionTerm). IAM cannot say which session a worker may name: the stream makes up for it.
 */
export interface WriteScope {
  readonly attributes: readonly string[];
  readonly returnValues: readonly string[];
}

const LEASE_RENEWAL: WriteScope = {
  // not `session`: a renewal that puts the term on its session, or takes it off, is one of LEASE_WRITES
  attributes: ['name', 'revision', 'termToken', 'renewTime', 'leaseDurationSeconds', 'vacancyReport', 'renewalMark'],
  returnValues: ['ALL_NEW'],
};

const LEASE_WRITES: WriteScope = {
  attributes: [
    'name', 'revision', 'termToken',
    // a direct acquisition (fallback, successor, NoCoordination) writes the term …
    'holderIdentity', 'holderInstance', 'holderPlatform', 'holderPlatformId', 'holderAddress', 'acquireTime', 'renewTime', 'leaseDurationSeconds', 'leaseTransitions', 'fencingToken', 'electedBy',
    // … or puts its term on its session, or takes it off (a renewal that names no renewalMark)
    'session',
    // … and clears the coordinator's notes on the old one, the second successor moving up to
    // successor (IAM cannot tell a removal from a write)
    'election', 'preferredHolder', 'successor', 'successorInstance', 'secondSuccessor', 'secondSuccessorInstance', 'vacancyReport',
    // a release names the holder that leaves
    'lastHolderIdentity',
    // a new start-up asks the live holder of its candidate name to show itself (LeaseCandidate)
    'identityClaim',
  ],
  returnValues: ['NONE', 'ALL_NEW'],
};

export const WORKER_WRITES = {
  leases: [LEASE_RENEWAL, LEASE_WRITES],
  candidates: [
    // a renewal (CandidateStore.renew) copies pingTime into ackedPingTime (naming both) and flips
    // renewalMark, which is what lets the candidate stream's filter drop it (lib/wiring.ts): the
    // only write that may name the mark, and it names no version or strategy; it may move the row
    // onto its process's new session, or off one that ended (`session`); it names `identity` in its
    // condition (only this start-up's row is renewed), which IAM cannot tell from a write: a peer of
    // the same lease could rewrite a row's start-up unseen by the candidate stream, as it can rewrite
    // the row seen (safety.md's threat model: liveness and choice only), and the tick reads it
    { attributes: ['leaseName', 'name', 'revision', 'renewTime', 'ackedPingTime', 'pingTime', 'expiresAt', 'renewalMark', 'session', 'identity'], returnValues: ['NONE'] },
    {
      // registration removes the previous start-up's pingTime and stand-down; a stand-down's mark, set
      // and taken off (LeaseCandidate standDown), names its start-up's `identity` and nothing the renewal flips
      attributes: ['leaseName', 'name', 'revision', 'binaryVersion', 'emulationVersion', 'preferredStrategies', 'renewTime', 'ackedPingTime', 'createdAt', 'identity', 'platform', 'address', 'location', 'labels', 'expiresAt', 'pingTime', 'session', 'standsDownUntil'],
      returnValues: ['NONE'],
    },
    // withLease's run-once rows (lib/schemas/run-once.ts): claimed by a run's term (its token as
    // `fence`, the row read back: ALL_NEW) and marked in it, only in the partitions of the worker's
    // own leases, like its candidacies
    { attributes: ['leaseName', 'name', 'runs', 'revision', 'fence'], returnValues: ['NONE', 'ALL_NEW'] },
  ],
  identities: [
    {
      // (a session row's `leftTerms`: the terms its process's stopped electors left to run out, written in its renewals: lib/sdk/session.ts)
      attributes: ['component', 'name', 'revision', 'holderIdentity', 'process', 'hostname', 'leaseDurationSeconds', 'acquireTime', 'renewTime', 'labels', 'expiresAt', 'leftTerms'],
      returnValues: ['NONE', 'ALL_NEW'],
    },
  ],
} as const satisfies Record<TableRole, readonly WriteScope[]>;

/**
 * Attributes only an operator (the CLI) or Conclave's functions write, which no worker write may
 * name: the operator's priority pin and its expiry, the operator's sticky strategy, and the
 * coordinator's and platform function's records. (The coordinator's notes a direct acquisition
 * clears — election, preferredHolder, successor — are in LEASE_WRITES: a worker that may write
 * itself in as holder gains nothing by writing them.) The lease's `runs` is written by nobody any
 * more (a pre-release withLease's run-once windows, now rows of the candidates table): no worker
 * may name it either.
 */
export const OPERATOR_OWNED = {
  // (and each table's `minReader`, the reader format a row needs, written by nobody yet: a later
  // version's worker names it once that version's construct grants it, the construct upgraded first)
  leases: ['strategy', 'electedStrategy', 'lastElectionFailure', 'holderLoss', 'preferredLocations', 'runs', 'minReader'],
  // (and the mark the coordinator's collection stamps before its delete: lib/stores/candidate-store.ts collect)
  candidates: ['priority', 'priorityExpiresAt', 'collectedAt', 'minReader'],
  // the lease stream's marks of ended terms on a session row (its owner reads them, never writes them), and their stamps
  identities: ['endedTerms', 'endedTermStamps', 'minReader'],
} as const satisfies Record<TableRole, readonly string[]>;

/**
 * A worker process's push path (lib/sdk/push-channel.ts, PushChannel), on IoT Core's resources
 * (infra/push.ts builds the ARNs):
 * - `client`: its one MQTT connection, with a client id `conclave-…` (PUSH_CLIENT_ID_PREFIX);
 * - `topicfilter`: its one subscription, every wake of the deployment (`conclave/<leases table>/#`);
 * - `topic`, the wake topics of its own leases: Receive (IoT Core checks it per message delivered,
 *   so a subscription to every wake still brings only these) and Publish (the wake it sends after a
 *   hand-off or a release it wrote).
 */
export const WORKER_PUSH_ACCESS = {
  client: ['iot:Connect'],
  topicfilter: ['iot:Subscribe'],
  topic: ['iot:Receive', 'iot:Publish'],
} as const satisfies Record<'client' | 'topicfilter' | 'topic', readonly `iot:${string}`[]>;

/** What a function with `publishWakes` calls: the data plane's Publish (HTTPS), on the wake topics. */
export const WAKE_PUBLISH = ['iot:Publish'] as const;

/** What the construct's deploy-time lookup of IoT Core's data endpoint calls (a custom resource). */
export const ENDPOINT_LOOKUP = ['iot:DescribeEndpoint'] as const;

/** KMS actions for a table encrypted with a customer-managed key (what aws-cdk-lib's table grants give). */
export const KEY_READ = ['kms:Decrypt', 'kms:DescribeKey'] as const;
export const KEY_WRITE = ['kms:Encrypt', 'kms:ReEncrypt*', 'kms:GenerateDataKey*'] as const;

/**
 * The leader-discovery function (ConclaveProps `leaderDiscovery`, lib/discovery/): conditional
 * UpdateItem of its own table's rows (lib/discovery/state-store.ts: claim, join, settle; each reads
 * the row back, so no GetItem) and the sweep's Scan of them, and its naming service's calls, on the
 * one service or zone (lib/discovery/cloud-map.ts, lib/discovery/route53.ts; test/discovery/
 * records each call). The sweep reads the named leases as getLeader does (grantGetLeader's reads).
 */
export const DISCOVERY_ACCESS = {
  /**
   * On its own table: the claims and settles of apply.ts, the sweep's Scan (lib/discovery/sweep.ts),
   * and a Route 53 record's hold taken over from another lease (holdName: a transaction of an
   * UpdateItem and a ConditionCheckItem on that lease's row).
   */
  table: ['dynamodb:UpdateItem', 'dynamodb:Scan', 'dynamodb:ConditionCheckItem'],
  /** On the one Cloud Map service the construct creates. */
  cloudMap: ['servicediscovery:RegisterInstance', 'servicediscovery:DeregisterInstance'],
  /** Cloud Map applies a registration after answering it: each is waited for. An operation is no resource IAM names: on `*`. */
  cloudMapOperations: ['servicediscovery:GetOperation'],
  /** On the one hosted zone, kept to the leases' record names, A/AAAA/CNAME, UPSERT and DELETE. */
  route53Change: ['route53:ChangeResourceRecordSets'],
  /** On the one hosted zone: a DELETE names the record exactly, so the function lists it first. */
  route53List: ['route53:ListResourceRecordSets'],
} as const;

/**
 * Which function runs on which trigger, declared once: the CDK construct builds its event
 * sources from this, and the local runtime polls and schedules from the same values, so local
 * mode cannot drift from AWS.
 */

export interface StreamTrigger {
  readonly kind: 'stream';
  /** The table whose stream feeds the function. */
  readonly table: 'leases' | 'candidates';
  readonly batchSize: number;
  /** How long records may gather before a batch is sent (Lambda's MaximumBatchingWindowInSeconds). */
  readonly maxBatchingWindowSeconds: number;
  readonly startingPosition: 'TRIM_HORIZON' | 'LATEST';
  /** Split a failing batch in two and retry each half (Lambda's BisectBatchOnFunctionError). */
  readonly bisectOnError: boolean;
  /**
   * Retries of a failing batch before its shard position goes to the dead-letter destination
   * (Lambda's MaximumRetryAttempts); -1: none is given up, a failing record is retried until it
   * is handled or the stream trims it (24 h), and the records behind it wait.
   */
  readonly retryAttempts: number;
  /**
   * Records older than this are sent to the dead-letter destination unprocessed (Lambda's
   * MaximumRecordAgeInSeconds); -1: none are, a record waits until the stream trims it (24 h).
   */
  readonly maxRecordAgeSeconds: number;
  /** The handler returns batchItemFailures; processing resumes from the first failed record. */
  readonly reportBatchItemFailures: true;
  /**
   * Batches of one shard handled at once (Lambda's ParallelizationFactor, 1–10). Above 1 Lambda
   * still keeps each item's records in order (Lambda developer guide, "Using AWS Lambda with
   * Amazon DynamoDB", concurrent batches per shard: "in-order processing at the item (partition
   * and sort key) level"), not the shard's: records of different items may run side by side.
   */
  readonly parallelizationFactor: number;
  /** Lambda's event filtering: only records matching one of these reach the function (none: all do). */
  readonly filters?: readonly FilterPattern[];
}

export interface ScheduleTrigger {
  readonly kind: 'schedule';
  readonly everySeconds: number;
}

export interface QueueTrigger {
  readonly kind: 'queue';
  readonly queue: 'electionTimer';
  readonly batchSize: number;
  readonly reportBatchItemFailures: true;
  /** Receives before a message goes to the queue's dead-letter queue. */
  readonly maxReceiveCount: number;
}

/** An EventBridge pattern: each named field must take one of the listed values. */
export interface EventPattern {
  readonly source: readonly string[];
  readonly 'detail-type': readonly string[];
  readonly detail: Readonly<Record<string, readonly string[]>>;
}

/** Where a deployment runs: its rules match, and its platform function acts on, only events from here. */
export interface Deployment {
  readonly account: string;
  readonly region: string;
}

/** A rule's pattern as deployed: the wiring's, and EventBridge's `account` and `region` of the deployment. */
export interface RulePattern extends EventPattern {
  readonly account: readonly string[];
  readonly region: readonly string[];
}

/**
 * The pattern a rule gets in a deployment: events from its own account and region only, so a
 * misrouted or forwarded event (another account's bus rule, a cross-region copy) never invokes the
 * function. The construct passes its stack's account and region, local mode its own; the function
 * checks them again (lib/functions/platform.ts).
 */
export const rulePattern = (p: EventPattern, d: Deployment): RulePattern => ({ ...p, account: [d.account], region: [d.region] });

/** Rules on the account's default bus: AWS services' own events (asynchronous invocation). */
export interface EventsTrigger {
  readonly kind: 'events';
  readonly bus: 'default';
  readonly patterns: readonly EventPattern[];
  /** Lambda's retries of a failed asynchronous invocation before the event goes to the dead-letter queue (0–2). */
  readonly retryAttempts: number;
  /** An event older than this is sent to the dead-letter queue unprocessed. */
  readonly maxEventAgeSeconds: number;
}

export type Trigger = StreamTrigger | ScheduleTrigger | QueueTrigger | EventsTrigger;

/** One rule on a leaf: a value it must equal, whether it exists, or values it must not take (it must exist). */
export type FilterRule = string | { readonly exists: boolean } | { readonly 'anything-but': readonly string[] };

/**
 * A content filter as EventBridge and Lambda's event filtering write them, in the subset used
 * here: nested objects, and on a leaf a list of rules of which one must match. AWS applies them;
 * locally lib/local/event-filter.ts does.
 */
export type FilterPattern = { readonly [key: string]: FilterPattern | readonly FilterRule[] };

/**
 * The lease stream's filters: every record but a renewal. A renewal flips `renewalMark`
 * (absent → 1 → 2 → 1) and no other write names it (lib/stores/lease-store.ts), and IAM lets a
 * worker's write that names it name nothing but what a renewal writes: no holder, instance,
 * token or session (infra/access.ts). So every write that does not name the mark leaves it as it was, and
 * such a record always passes — whatever the mark's value, whatever else changed: filters compare
 * with constants only, so "unchanged" is spelled out per value (absent, 1, 2, anything else).
 * What is dropped is a record whose new mark is 1 or 2 and differs from the old one: only a write
 * that may name the mark (a renewal) makes one. A new image with a vacancy report is no renewal (a
 * renewal removes it) and passes too; so do REMOVE and any INSERT without the mark. Five patterns:
 * Lambda's default quota per event source mapping.
 */
const markIs = (image: 'OldImage' | 'NewImage', rule: FilterRule) => ({ [image]: { renewalMark: { N: [rule] } } });
export const LEASE_STREAM_FILTERS: readonly FilterPattern[] = [
  { dynamodb: markIs('NewImage', { exists: false }) },
  { dynamodb: markIs('NewImage', { 'anything-but': ['1', '2'] }) },
  { dynamodb: { ...markIs('OldImage', '1'), ...markIs('NewImage', '1') } },
  { dynamodb: { ...markIs('OldImage', '2'), ...markIs('NewImage', '2') } },
  { dynamodb: { NewImage: { vacancyReport: { M: [{ exists: true }] } } } },
];

/**
 * The candidate stream's filter: every record but those of withLease's run-once rows, which share
 * the table (lib/schemas/run-once.ts) and are no candidates — each of their images carries `fence`
 * (a number: every run claims its row first) or `runs` (a list; rows of an older release have no
 * fence until a run claims them), which no candidate row has. A REMOVE has no new image, an INSERT
 * no old one: a missing image matches `exists: false`. Lambda's filters have no "does not begin
 * with", so the rows are told apart by those attributes, not by their key.
 *
 * And but a renewal that follows a renewal (issue 38, cheaper at rest: each candidate renews every
 * 10 minutes, which invoked the function for nothing). A renewal flips `renewalMark` (absent → 1 →
 * 2 → 1, CandidateStore.renew) and a ping removes it, so a record whose mark went from 1 to 2 or
 * from 2 to 1 is a renewal with no ping since the last one: it acknowledges no ping not already
 * acknowledged and changes no version, strategy or start-up (candidateChangeMatters: no reconcile;
 * no event), and is dropped. Every other record passes: no mark before (an INSERT, the answer to a
 * ping, a row an older release wrote) or after (a REMOVE), or the mark unchanged (a registration,
 * a ping's withdrawal, an operator's pin: writes that do not name it). What makes a flipped mark
 * safe to drop: a row with a mark has acknowledged its ping, if any — a renewal sets ackedPingTime
 * to the ping as it sets the mark, a ping removes the mark, a registration removes the ping and
 * sets ackedPingTime to 0 (LeaseCandidate.register), and a withdrawal takes only an unanswered
 * ping (so no mark). Five patterns: Lambda's default quota per event source mapping.
 */
const notRunOnce = {
  NewImage: { runs: { L: [{ exists: false }] }, fence: { N: [{ exists: false }] } },
  OldImage: { runs: { L: [{ exists: false }] }, fence: { N: [{ exists: false }] } },
} as const;
const candidateMark = (rules: { readonly OldImage?: FilterRule; readonly NewImage?: FilterRule }): FilterPattern => ({
  dynamodb: {
    NewImage: { ...notRunOnce.NewImage, ...(rules.NewImage ? { renewalMark: { N: [rules.NewImage] } } : {}) },
    OldImage: { ...notRunOnce.OldImage, ...(rules.OldImage ? { renewalMark: { N: [rules.OldImage] } } : {}) },
  },
});
export const CANDIDATE_STREAM_FILTERS: readonly FilterPattern[] = [
  candidateMark({ OldImage: { exists: false } }),
  candidateMark({ NewImage: { exists: false } }),
  candidateMark({ NewImage: { 'anything-but': ['1', '2'] } }),
  candidateMark({ OldImage: '1', NewImage: '1' }),
  candidateMark({ OldImage: '2', NewImage: '2' }),
];

export interface FunctionWiring {
  /** The handler module under functions/ (its `handler` export). */
  readonly entry: string;
  readonly trigger: Trigger;
  readonly timeoutSeconds: number;
  readonly memoryMb: number;
  /**
   * At most this many instances at once (Lambda's reserved concurrency; locally, invocations wait
   * their turn). Unset: as many as Lambda gives.
   */
  readonly reservedConcurrency?: number;
}

const stream = (table: StreamTrigger['table'], retryAttempts: number, filters?: readonly FilterPattern[]): StreamTrigger => ({
  ...(filters ? { filters } : {}),
  kind: 'stream',
  table,
  batchSize: 100,
  maxBatchingWindowSeconds: 0,
  startingPosition: 'TRIM_HORIZON',
  bisectOnError: true,
  retryAttempts,
  // No maximum age: a record's events, session mark and wake are facts of its change, and Lambda's
  // on-failure record of an expired one is a shard position (its content is gone once the stream
  // trims it). A stream behind (EventBridge down, the function throttled) catches up late, never
  // drops one (docs/architecture.md, Functions and events).
  maxRecordAgeSeconds: -1,
  reportBatchItemFailures: true,
  // Lambda's most (issue 38, item 5): a third of 1,000 processes lost backs the lease stream up
  // ~150 s, not ~1,500 s. Sound for both streams: an item's records stay in order (a lease row's:
  // the leases table has no sort key; a candidate row's), and what a record does depends on no
  // other item's record before it — it reconciles from the rows as they are read, under the same
  // conditions that already let the tick, the election timer and the other stream run beside it.
  parallelizationFactor: 10,
});

export const wiring = {
  // One coordinator at a time: a tick that outlasts the schedule (its timeout is 5 ticks) must not
  // run beside the next one. A tick throttled meanwhile waits in Lambda's async queue and is
  // dropped after maxEventAge (one tick): the next tick does its work.
  coordinator: { entry: 'functions/coordinator.ts', trigger: { kind: 'schedule', everySeconds: 60 }, timeoutSeconds: 300, memoryMb: 512, reservedConcurrency: 1 },
  // run-once rows share the candidates table: their records never reach the function
  // a batch given up after 3 retries (its position to the dead-letter queue, which alarms) loses
  // nothing the tick does not do within a minute, and no event of a record handled or held: each
  // publishes its own before it fails, one held behind a failed record of its row too, without its
  // reconcile (lib/functions/lambda.ts streamBatchHandler). Lost with it: the events of records never
  // started because each of its four deliveries ran out of time (BATCH_DEADLINE_MARGIN_MS), and of a
  // record whose events could be neither published nor deferred (EventBridge and SQS both down)
  candidateStream: { entry: 'functions/candidate-stream.ts', trigger: stream('candidates', 3, CANDIDATE_STREAM_FILTERS), timeoutSeconds: 60, memoryMb: 256 },
  leaseStream: {
    entry: 'functions/lease-stream.ts',
    // A holder's renewal (every retry period, per lease) is most of the stream and means nothing
    // to the function: these filters drop renewals, and only renewals, before any invocation.
    // Retried without bound (-1): a record's session mark ends a term its holder must hear of, and
    // nothing else writes it. Lambda's 3 retries came within seconds: a throttled or unreachable
    // identities table lost the mark, and the tick elected the next holder while the old one led
    // on. Poison is dead-lettered by the function at once and a mark the session row refuses is
    // deferred (lib/functions/core.ts), so only a fault keeps a record failing: it waits, in order,
    // and the iterator-age and error alarms fire, until 12 h after its change the function
    // dead-letters it with its content (STUCK_RECORD_MS; docs/deploy.md, "A stream record that keeps failing").
    trigger: stream('leases', -1, LEASE_STREAM_FILTERS),
    timeoutSeconds: 60,
    memoryMb: 256,
  },
  electionTimer: {
    entry: 'functions/election-timer.ts',
    trigger: { kind: 'queue', queue: 'electionTimer', batchSize: 10, reportBatchItemFailures: true, maxReceiveCount: 5 },
    timeoutSeconds: 60,
    memoryMb: 256,
  },
  /** The platform's word that a holder is gone: ECS task STOPPED, EC2 instance stopped or terminated. */
  platform: {
    entry: 'functions/platform.ts',
    trigger: {
      kind: 'events',
      bus: 'default',
      patterns: [
        { source: ['aws.ecs'], 'detail-type': ['ECS Task State Change'], detail: { lastStatus: ['STOPPED'] } },
        { source: ['aws.ec2'], 'detail-type': ['EC2 Instance State-change Notification'], detail: { state: ['stopped', 'terminated'] } },
      ],
      retryAttempts: 2,
      maxEventAgeSeconds: 600,
    },
    timeoutSeconds: 60,
    memoryMb: 256,
  },
} as const satisfies Record<FunctionName, FunctionWiring>;

/**
 * A function's name in the wiring. Spelt out, not `keyof typeof wiring`, so that `@conclave/cdk`'s
 * API names no internal table; `satisfies` above keeps the two the same (a name missing from the
 * wiring, or one too many, does not compile).
 */
export type FunctionName = 'coordinator' | 'candidateStream' | 'leaseStream' | 'electionTimer' | 'platform';

/** Environment variables every function reads its resources from: lib/function-env.ts (a module of its own, so a function's bundle holds the names, not this table). */
export { ENV } from './function-env.js';

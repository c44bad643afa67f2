/**
 * Metric names and where they go: read by the handlers (through Powertools Metrics) and by the CDK
 * construct's alarms and dashboard. No dependencies, so synth does not load the functions' code.
 */
export const SERVICE = 'conclave';
export const NAMESPACE = 'Conclave';

/**
 * The dimensions of every metric, beside Powertools' `service`: the function that published it,
 * and its deployment, the leases table's name (CONCLAVE_LEASES_TABLE), unique in an account and
 * Region, so two deployments there publish metrics apart and each one's alarms judge its own data
 * points alone. Per-lease metrics also have `lease`.
 */
export const DIMENSION = { function: 'function', deployment: 'deployment', lease: 'lease' } as const;

/** KEP-4355's metric names, plus what client-go and Conclave add. */
export const METRIC = {
  leaderChanges: 'coordinated_leader_election_leader_changes',
  preemptions: 'coordinated_leader_election_leader_preemptions',
  failures: 'coordinated_leader_election_failures_total',
  skewPreventions: 'coordinated_leader_election_skew_preventions_total',
  electionDuration: 'coordinated_leader_election_duration',
  leaderless: 'coordinated_leader_election_leaderless_leases',
  /** Lease rows the schema refuses, at each tick: no election is decided on them until repaired. */
  brokenLeases: 'coordinated_leader_election_broken_leases',
  /**
   * Held leases the tick cannot judge, at each tick: their term is on a session row the schema
   * refuses, so no one judges it until the row is rewritten or the tick deletes it (unchanged for
   * the longest lease on it and clockSkewMs).
   */
  unjudgedLeases: 'coordinated_leader_election_unjudged_leases',
  /**
   * Failures at each tick (0 when none): leases whose reconcile failed, or the follow-up of one
   * (its election's timer), and garbage-collection deletes that failed; each is retried at the next
   * trigger and logged ("reconcile failed; the next trigger retries") with its lease and error.
   */
  reconcileFailures: 'coordinated_leader_election_reconcile_failures',
  conflicts: 'coordinated_leader_election_write_conflicts',
  /** Terms the platform function ended because the holder's task or instance stopped. */
  leadersLost: 'coordinated_leader_election_leaders_lost_total',
} as const;

/**
 * Records (stream records, timer messages) a batch function reported failed, for their event
 * source to deliver again (0 is not published). Lambda counts no error for a batch that failed in
 * part; a batch that failed whole is an invocation error instead. Apart from METRIC, so that a
 * function without batches does not bundle it.
 */
export const RECORDS_FAILED = 'conclave_records_failed';

/**
 * Leases leaderless past their bound, at each tick (0 included): of the leases the tick counts
 * leaderless (METRIC.leaderless: live candidates, no live holder after it) and reconciled, those
 * whose row shows them vacant for longer than the larger of LEADERLESS_BOUND_MS and the workers'
 * fallback (three lease durations), and `clockSkewMs` (lib/functions/core.ts leaderlessPastBound).
 * A lease mid-election, or fallen vacant since, is not counted: the leaderless gauge counts every
 * lease caught between a term and the next, and at scale successive ticks catch different ones.
 * The LeaderlessLeases alarm watches this one. Apart from METRIC, as RECORDS_FAILED.
 */
export const LEADERLESS_PAST_BOUND = 'conclave_leases_leaderless_past_bound';

/** The least time a lease stands vacant before LEADERLESS_PAST_BOUND counts it: the simulator's bound on leaderless time after faults heal. */
export const LEADERLESS_BOUND_MS = 60_000;

/**
 * Wakes (IoT Core publishes of the push path) not known sent, per invocation (0 is not published):
 * those refused or failed (a role without iot:Publish, IoT Core throttling), and at the invocation's
 * end those still queued (dropped) or unanswered. Not those sent while IoT Core counts as stalled
 * (lib/functions/wake.ts iotWaker: not waited for, their outcome unknown): the timeout that began
 * the stall is. A wake is a hint: its workers see the change at their next read, 2 to 4 lease
 * durations on. Apart from METRIC, as RECORDS_FAILED.
 */
export const WAKES_NOT_SENT = 'conclave_wakes_not_sent';

/**
 * Events EventBridge did not take, put on the timer queue to be published again: one value per
 * deferral, how long since they were first refused (0 at a stream record's deferral; at each
 * republish that fails again, the time since then). Deferral keeps the records moving through an
 * outage, and so no record fails and no invocation errs: its Maximum is what tells a lasting
 * refusal (the role without events:PutEvents, the bus deleted, its key disabled) from a brief
 * outage. Apart from METRIC, as RECORDS_FAILED.
 */
export const EVENTS_UNPUBLISHED = 'conclave_events_unpublished_ms';

/**
 * The age of deferred events at which the construct's alarm fires (EventsUnpublished). Deferred
 * events are published again 1 s after their first refusal, then at doubling delays
 * (lib/functions/timer.ts republishDelayMs): 1, 3, 7 … 511, 1,023 s after it. A refusal still
 * there at 1,023 s (17 min) is measured past this; an outage that heals before then never is.
 */
export const EVENTS_UNPUBLISHED_ALARM_MS = 15 * 60_000;

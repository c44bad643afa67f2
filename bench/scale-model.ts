/**
 * The scale model (issue 38, item 5): what a deployment of many leases and processes costs and
 * which AWS limits it meets. Plain arithmetic, calibrated from real runs (bench/scale-calibrate.ts
 * on DynamoDB Local; the steady-state bench's rates by request kind); bench/scale.ts prints it.
 */
import type { AttributeValue } from '@aws-sdk/client-dynamodb';
import { TICK_DEFAULTS, segmentsFor } from '../lib/coordinator/tick.js';
import { wiring } from '../lib/wiring.js';
import { seededRandom } from '../lib/clock.js';
import { sessionShard } from '../lib/schemas/session-partition.js';
import { ON_SESSION_RENEW_MS } from '../lib/sdk/candidate.js';

const utf8 = (s: string) => Buffer.byteLength(s, 'utf8');

/** DynamoDB's size of a number: about one byte per two significant digits, plus one. */
function numberBytes(n: string): number {
  const digits = n.replace(/^-/, '').replace('.', '').replace(/^0+/, '').replace(/0+$/, '');
  return Math.ceil(Math.max(1, digits.length) / 2) + 1;
}

function valueBytes(v: AttributeValue): number {
  if (v.S !== undefined) return utf8(v.S);
  if (v.N !== undefined) return numberBytes(v.N);
  if (v.B !== undefined) return v.B.byteLength;
  if (v.BOOL !== undefined || v.NULL !== undefined) return 1;
  if (v.SS) return v.SS.reduce((a, s) => a + utf8(s), 0);
  if (v.NS) return v.NS.reduce((a, s) => a + numberBytes(s), 0);
  if (v.BS) return v.BS.reduce((a, b) => a + b.byteLength, 0);
  if (v.L) return 3 + v.L.reduce((a, x) => a + 1 + valueBytes(x), 0);
  if (v.M) return 3 + Object.entries(v.M).reduce((a, [k, x]) => a + 1 + utf8(k) + valueBytes(x), 0);
  return 0;
}

/**
 * An item's size as DynamoDB bills it ("Item sizes and formats", DynamoDB Developer Guide): each
 * attribute's name in UTF-8 bytes plus its value (strings in UTF-8 bytes, numbers about a byte per
 * two significant digits plus one, lists and maps 3 bytes plus a byte per element).
 */
export function itemBytes(item: Record<string, AttributeValue>): number {
  return Object.entries(item).reduce((a, [k, v]) => a + utf8(k) + valueBytes(v), 0);
}

// ---------------------------------------------------------------------------------------------
// Inputs measured here, each with where it came from.
// ---------------------------------------------------------------------------------------------

/**
 * Per lease per minute in the steady state, from `npm run bench -- --only steady-state,multi-lease`
 * (CHANGELOG.md, "Issue 38: repeated crashes and the cost at rest", its "Cheaper at rest (item 4)":
 * the *after* figures, 2026-11-28 13:34 UTC, push path, default timing 15/10/2 s, 120 s windows;
 * today's run is docs/benchmarks.md's "Cost at rest").
 */
export const MEASURED = {
  /** 1 lease × 3 processes, no session: the leader renews the lease row itself. */
  single: {
    leaderRenewals: 10.32, // UpdateItem, 1 WRU
    watcherReads: 11.31 + 11.15, // successor + second successor, GetItem eventually consistent (0.5 RRU)
    candidateRenewals: 0.3, // UpdateItem, 1 WRU
  },
  /** 100 leases × 3 processes, one Session per process. */
  session: {
    /** Each candidate process reads each lease row once a minute (its backstop): 1.01 + 1.01 + 1.00 for 3. */
    leaseReadsPerCandidate: 3.02 / 3,
    /** Each candidate on a live session renews its row every ON_SESSION_RENEW_MS (6 h): its session's renewals show it alive (every 10 minutes before). */
    candidateRenewalsPerCandidate: 60_000 / ON_SESSION_RENEW_MS,
    /** Session renewals per process a minute: 0.37 per lease × 100 leases ÷ 3 processes. */
    sessionRenewalsPerProcess: (0.37 * 100) / 3,
    /**
     * Consistent session reads a minute per (watcher process, watched session) pair: 0.68 per lease
     * × 100 leases = 68 a minute over the 4 pairs of that run (leaders p1 1, p2 99; each lease's
     * other two processes watch its holder's session closely: p1 and p3 watch p2, p2 and p3 watch
     * p1). About 1.4 reads per session renewal; a process's electors share one read of a session.
     */
    sessionReadsPerPair: (0.68 * 100) / 4,
  },
  /** Lambda GB-seconds per candidate-stream invocation that reconciles nothing (a plain renewal): $0.0027 a lease-month at 0.30 a minute, of which $0.0026 requests. */
  candidateStreamGbSecondsPerInvocation: 0.0004,
} as const;

/**
 * The coordinator's tick on DynamoDB Local, from `npx tsx bench/scale-calibrate.ts` (this
 * machine, 2 cores shared with other work): the tick with nothing to change, per lease, and the
 * settling tick that writes once per lease. Filled from the calibration run quoted in
 * docs/benchmarks.md ("Cost of scale").
 */
export interface Calibration {
  /** Least-squares fit of the unchanged tick's wall time, ms = interceptMs + msPerLease × leases. */
  unchanged: { interceptMs: number; msPerLease: number };
  /** CPU milliseconds of the coordinator's own process per lease in the unchanged tick (scans parsed, decisions). */
  cpuMsPerLease: number;
  /** CPU milliseconds per conditional write the tick sends (the all-vacant tick less the unchanged one, per write). */
  writeCpuMs: number;
  /** Peak heap growth per lease during the tick, MB. */
  heapMbPerLease: number;
  /** Consistent scan read units per lease per tick (3 candidates a lease). */
  scanRruPerLease: number;
  /** Item sizes, bytes. */
  leaseBytes: number;
  candidateBytes: number;
}

// ---------------------------------------------------------------------------------------------
// AWS limits met on the way: value, and where it is documented.
// ---------------------------------------------------------------------------------------------

export const LIMITS = {
  lambdaTimeoutSeconds: { value: 900, source: 'Lambda quotas (docs.aws.amazon.com/lambda/latest/dg/gettingstarted-limits.html): function timeout 900 s (15 min)' },
  coordinatorTimeoutSeconds: { value: 300, source: "lib/wiring.ts: the coordinator's own timeout (5 ticks)" },
  coordinatorMemoryMb: { value: 512, source: 'lib/wiring.ts: the coordinator\'s memory; Lambda gives one vCPU at 1,769 MB (Lambda "Memory and computing power"), so 512 MB is about 0.29 vCPU' },
  lambdaConcurrency: { value: 1000, source: 'Lambda quotas: concurrent executions per Region, default 1,000 (adjustable)' },
  partitionWcu: { value: 1000, source: 'DynamoDB Developer Guide ("Warm throughput" scenarios; burst and adaptive capacity): each partition at most 1,000 write units/s' },
  partitionRcu: { value: 3000, source: 'same: each partition at most 3,000 read units/s' },
  onDemandTableUnits: { value: 40_000, source: 'DynamoDB quotas / "maximum throughput for on-demand tables": 40,000 read and 40,000 write request units/s per table by default (adjustable)' },
  streamParallelization: { value: 10, source: 'Lambda "parameters for DynamoDB event source mappings": ParallelizationFactor default 1, maximum 10' },
  streamRetentionHours: { value: 24, source: 'same page: DynamoDB Streams keeps records 24 h' },
  iotSubscriptionsPerConnection: { value: 50, source: 'AWS General Reference, AWS IoT Core quotas, message broker: subscriptions per connection 50, not adjustable' },
  iotSubscriptionsPerSubscribe: { value: 8, source: 'same, protocol limits: at most 8 subscriptions per SUBSCRIBE' },
  iotPublishPerConnection: { value: 100, source: 'same: publish requests per second per connection (inbound and outbound) 100, not adjustable; over it they are discarded' },
  iotOutboundPerAccount: { value: 20_000, source: 'same: outbound publish requests per second per account 20,000 (adjustable): one per subscribed connection a message reaches' },
  iotInboundPerAccount: { value: 20_000, source: 'same: inbound publish requests per second per account 20,000 (adjustable)' },
  iotConnectPerAccount: { value: 500, source: 'same: CONNECT requests per second per account 500 (adjustable; newer copies of the page give 3,000 in large Regions)' },
  iamRolePolicyChars: { value: 10_240, source: "IAM and AWS STS quotas: a role's inline policies together 10,240 characters (white space not counted)" },
  iamManagedPolicyChars: { value: 6_144, source: 'same: a managed policy 6,144 characters; 10 managed policies per role by default, 20 at most (AWS Knowledge Center, "iam-increase-policy-size")' },
  iotSubscriptionsPerAccount: { value: 500_000, source: 'same: subscriptions per account 500,000; subscriptions per second per account 500 (both adjustable)' },
} as const;

// ---------------------------------------------------------------------------------------------
// The model.
// ---------------------------------------------------------------------------------------------

/**
 * Which processes stand for which lease. `random`: each lease's candidates are `candidatesPerLease`
 * processes drawn at random (a hash of the lease name, say). `cells`: the processes form cells of
 * `candidatesPerLease` (those left over stand for nothing), and each lease's candidates are one
 * cell (its leases spread over the cell's members as holders).
 */
export type Placement = 'random' | 'cells';

export interface Deployment {
  leases: number;
  processes: number;
  candidatesPerLease: number;
  /** One Session per process (many leases per process) or each leader renewing its own lease row. */
  sessions: boolean;
  placement: Placement;
  /**
   * grantWorker's scope: `leases` (each worker granted its own lease names) or `all` (allLeases).
   * A role names about 60 leases with the push path before IAM's policy size stops it
   * (bench/scale-iam.ts), so fleets of thousands of leases take `all`.
   */
  grants: 'leases' | 'all';
}

export interface WatchPairs {
  /** Distinct (watcher process, holder's session) pairs: each is about one consistent read per session renewal. */
  pairs: number;
  /** The most watchers any one session has. */
  maxWatchersOfOneSession: number;
  /** The most sessions any one process watches. */
  maxSessionsWatchedByOneProcess: number;
  /** The most leases any one process is a candidate for. */
  maxCandidaciesOfOneProcess: number;
}

/**
 * Who watches whose session: a lease's holder is its first candidate, and every other candidate
 * watches the holder's session closely (the successor and the second successor, which with 3
 * candidates are all of them; with more, the others read only at their backstop and are left out).
 * Counted by placing every lease (seeded, so the same figures every run).
 */
export function watchPairs(d: Pick<Deployment, 'leases' | 'processes' | 'candidatesPerLease' | 'placement'>, seed = 38): WatchPairs {
  const { leases, processes, candidatesPerLease: c, placement } = d;
  if (c < 1 || c > processes) throw new Error(`candidatesPerLease must be between 1 and processes (${processes}), got ${c}`);
  const close = Math.min(2, c - 1); // successor and second successor
  const random = seededRandom(seed); // placements that must not change between runs
  const watched = new Map<number, Set<number>>(); // holder → watchers
  const candidacies = new Array<number>(processes).fill(0);
  const cells = Math.floor(processes / c); // processes left over stand for nothing
  const pick = new Array<number>(c);
  for (let i = 0; i < leases; i++) {
    if (placement === 'cells') {
      const cell = i % cells;
      const turn = Math.floor(i / cells) % c; // leases of a cell spread over its members as holders
      for (let k = 0; k < c; k++) pick[k] = cell * c + ((turn + k) % c);
    } else {
      for (let k = 0; k < c; k++) {
        let p: number;
        do p = Math.floor(random() * processes);
        while (pick.slice(0, k).includes(p));
        pick[k] = p;
      }
    }
    for (let k = 0; k < c; k++) candidacies[pick[k]!]! += 1;
    const holder = pick[0]!;
    const w = watched.get(holder) ?? watched.set(holder, new Set()).get(holder)!;
    for (let k = 1; k <= close; k++) w.add(pick[k]!);
  }
  let pairs = 0;
  let maxWatchers = 0;
  const perWatcher = new Array<number>(processes).fill(0);
  for (const ws of watched.values()) {
    pairs += ws.size;
    maxWatchers = Math.max(maxWatchers, ws.size);
    for (const w of ws) perWatcher[w]!++;
  }
  return { pairs, maxWatchersOfOneSession: maxWatchers, maxSessionsWatchedByOneProcess: Math.max(0, ...perWatcher), maxCandidaciesOfOneProcess: Math.max(0, ...candidacies) };
}

/** Assumptions for a Region where nothing here measures it; each is printed beside the figures it moves. */
export interface RegionAssumptions {
  /** A conditional write's latency as the coordinator sees it. @default 10 ms ("single-digit milliseconds", rounded up) */
  writeLatencyMs: number;
  /** A 1 MB Scan page. @default 100 ms */
  scanPageMs: number;
  /** The coordinator's CPU on its Lambda relative to one core of this machine: 1,769 MB ÷ 512 MB. */
  cpuSlowdown: number;
  /** One stream record that reconciles (lease read, candidates query, session read, one write, PutEvents). @default 60 ms */
  reconcileRecordMs: number;
  /** One stream record that reconciles nothing (a candidate's plain renewal). @default 1 ms */
  plainRecordMs: number;
  /** Lambda polls each shard this often when it is idle (4 times a second: every 250 ms). */
  pollIntervalMs: number;
  /** Leader changes per lease a month (deploys, crashes), as docs/deploy.md's bill assumes. @default 10 */
  leaderChangesPerLeaseMonth: number;
  /** Lease-stream records per leader change (the take or release, the successor named, a term-end mark's election…). @default 3 */
  recordsPerLeaderChange: number;
  /** Wakes per leader change: one per lease-stream record plus the old leader's own after a hand-off. @default 4 */
  wakesPerLeaderChange: number;
  /** Stream shards of a table too small to split by size or throughput (an on-demand table starts with room for 4,000 writes/s: about 4 partitions). @default 4 */
  minShards: number;
}

export const REGION: RegionAssumptions = {
  writeLatencyMs: 10,
  scanPageMs: 100,
  cpuSlowdown: 1769 / 512,
  reconcileRecordMs: 60,
  plainRecordMs: 1,
  pollIntervalMs: 250,
  leaderChangesPerLeaseMonth: 10,
  recordsPerLeaderChange: 3,
  wakesPerLeaderChange: 4,
  minShards: 4,
};

const MINUTES_PER_MONTH_ = 730 * 60;
const SECONDS_PER_MONTH = MINUTES_PER_MONTH_ * 60;

/** Stream shards of a table: about one per partition, and a partition per 10 GB or per 1,000 WCU/s (or 3,000 RCU/s) at peak. */
export function shardsFor(bytes: number, peakWcuPerSecond: number, peakRcuPerSecond: number, minShards: number): number {
  return Math.max(minShards, Math.ceil(bytes / 10e9), Math.ceil(peakWcuPerSecond / LIMITS.partitionWcu.value), Math.ceil(peakRcuPerSecond / LIMITS.partitionRcu.value));
}

export interface StreamFigure {
  /** Records a second, steady. */
  recordsPerSecond: number;
  shards: number;
  parallelization: number;
  /** Concurrent invocations at most: shards × parallelization factor. */
  concurrency: number;
  /** Records per invocation in the steady state (what arrives per shard between polls, at most the batch size). */
  recordsPerInvocation: number;
  /** Iterator age in the steady state, seconds: a poll interval plus one batch. */
  steadyAgeSeconds: number;
  /** Iterator age after a burst of `burstRecords` landing at once, seconds: the last record waits for the others of its shard. */
  burstAgeSeconds: number;
  burstRecords: number;
  /** Whether the steady load keeps up (utilisation below 1). */
  keepsUp: boolean;
}

/**
 * One stream trigger: records arrive at `recordsPerSecond` spread over the shards (by partition key)
 * and are handled one after another within a batch (lib/functions/lambda.ts: processInParallel
 * false), one batch per shard at a time per parallelization slot. A burst of `burstRecords` spread
 * evenly: the last waits for its shard's share.
 */
export function streamFigure(o: { recordsPerSecond: number; recordMs: number; shards: number; parallelization: number; batchSize: number; pollIntervalMs: number; burstRecords: number; burstRecordMs: number }): StreamFigure {
  const slots = o.shards * o.parallelization;
  const perSlot = o.recordsPerSecond / slots;
  const recordsPerInvocation = Math.max(1, Math.min(o.batchSize, perSlot * (o.pollIntervalMs / 1000)));
  const utilisation = (perSlot * o.recordMs) / 1000;
  const steady = (o.pollIntervalMs + recordsPerInvocation * o.recordMs) / 1000;
  const burst = (o.pollIntervalMs + Math.ceil(o.burstRecords / slots) * o.burstRecordMs) / 1000;
  return { recordsPerSecond: o.recordsPerSecond, shards: o.shards, parallelization: o.parallelization, concurrency: slots, recordsPerInvocation, steadyAgeSeconds: steady, burstAgeSeconds: burst, burstRecords: o.burstRecords, keepsUp: utilisation < 1 };
}

/** One line of the bill, per lease-month. */
export interface BillLine {
  service: 'DynamoDB' | 'Lambda' | 'SQS' | 'EventBridge' | 'IoT Core';
  kind: string;
  dollars: number;
  /** Requests (DynamoDB) or invocations/messages per lease per minute. */
  perMinute: number;
}

export interface ScaleFigures {
  deployment: Deployment;
  watch: WatchPairs;
  bill: BillLine[];
  dollarsPerLeaseMonth: number;
  /** DynamoDB requests per lease per minute, steady state and leader changes. */
  dynamoRequestsPerLeaseMinute: number;
  tick: {
    /** The unchanged tick on DynamoDB Local at this size (the calibration's fit). */
    localSeconds: number;
    /** A round over every lease with nothing to change, on the coordinator's Lambda (model): scan pages and CPU. */
    regionSeconds: number;
    /** A round when every lease is vacant at once (4 writes each), on the Lambda (model). */
    regionAllVacantSeconds: number;
    /** Heap a part of a round holds at its peak (model: the calibration's growth per lease, segmentLeases at most). */
    heapMb: number;
    scanPages: number;
    /** Parts of a round (lib/coordinator/tick.ts segmentsFor). */
    segments: number;
    /** What an invocation may spend: the coordinator's timeout less the tick's margin. */
    budgetSeconds: number;
    /** Invocations a round takes, nothing to change / every lease vacant. */
    invocations: number;
    allVacantInvocations: number;
    /** Every lease is reached within this, nothing to change / every lease vacant: the round's invocations, each followed by at most one schedule interval. */
    reachSeconds: number;
    allVacantReachSeconds: number;
  };
  leaseStream: StreamFigure;
  /** The lease stream when a third of the processes go at once (an Availability Zone): every lease they held changes hands. */
  leaseStreamZoneLost: StreamFigure;
  candidateStream: StreamFigure;
  partitions: {
    /**
     * The busiest session partition: grants `all`, the hottest of the SESSION_SHARDS partitions the
     * processes' sessions are spread over (sessionShard of each process id, lib/schemas/session-partition.ts);
     * scoped, one partition per scope.
     */
    sessionPartitionWritesPerSecond: number;
    sessionPartitionReadsPerSecond: number;
    /** The most-read session row. */
    hottestSessionReadsPerSecond: number;
    /** A lease row renewed by its leader (no session), writes/s. */
    leaseRowWritesPerSecond: number;
    /** The identities table as a whole, read units/s (against the on-demand table quota). */
    identitiesTableRcuPerSecond: number;
  };
  iot: {
    subscriptionsPerConnection: number;
    /** Connections a wake is delivered to. */
    deliveriesPerWake: number;
    /** Wakes a second the deployment sends on average. */
    wakesPerSecond: number;
    /** Deliveries a second to one connection while the lease stream drains a burst at its fastest. */
    burstDeliveriesPerConnectionPerSecond: number;
    /** Outbound publishes a second for the account during that burst. */
    burstOutboundPerSecond: number;
  };
}

const dynamoDollars = (wru: number, rru: number) => ((wru * 0.625 + rru * 0.125) * MINUTES_PER_MONTH_) / 1e6;
const lambdaDollars = (invocations: number, gbSeconds: number) => ((invocations * 0.2) / 1e6 + gbSeconds * 0.0000133334) * MINUTES_PER_MONTH_;
const SESSION_ROW_BYTES = 300;

/**
 * The figures of one deployment: the bill per lease-month (the measured rates, scaled by what
 * grows with leases, with processes and with watched sessions), the tick, both streams, the hot
 * partitions and IoT Core's fan-out. `parallelization` is the stream triggers' factor (each
 * stream's as lib/wiring.ts deploys it when not given).
 */
/**
 * Where wakes go, as the processes' channels subscribe: `lease`, channels without a session (one
 * subscription to every wake of the deployment): each wake reaches every connection whose role may
 * receive it, and, with sessions, so do its copies on the candidates' process topics, which the
 * lease stream publishes since they are built (roles granted named leases receive no process topic);
 * `process`, channels given their Session (as built, docs/benchmarks.md "Wakes addressed to
 * processes"): each wake on its lease topic (no subscriber) and on each candidate's process topic
 * (a candidates Query per lease-stream record); `coalesced`, the same with a stream invocation's
 * wakes to one process sent as one message (designed, not built).
 */
export type WakeRouting = 'lease' | 'process' | 'coalesced';

export function scaleFigures(d: Deployment, cal: Calibration, r: RegionAssumptions = REGION, opts: { parallelization?: number; wakes?: WakeRouting } = {}): ScaleFigures {
  const toProcesses = opts.wakes === 'process' || opts.wakes === 'coalesced';
  const { leases: L, processes: P, candidatesPerLease: c } = d;
  if (!Number.isInteger(L) || L < 1) throw new Error(`leases must be a whole number ≥ 1, got ${L}`);
  if (!Number.isInteger(P) || P < c) throw new Error(`processes must be a whole number ≥ candidatesPerLease (${c}), got ${P}`);
  const candidatePf = opts.parallelization ?? wiring.candidateStream.trigger.parallelizationFactor;
  const leasePf = opts.parallelization ?? wiring.leaseStream.trigger.parallelizationFactor;
  const watch = d.sessions ? watchPairs(d) : { pairs: 0, maxWatchersOfOneSession: 0, maxSessionsWatchedByOneProcess: 0, maxCandidaciesOfOneProcess: Math.ceil((L * c) / P) };
  const bill: BillLine[] = [];
  const dyn = (kind: string, perMinute: number, wru: number, rru: number) => bill.push({ service: 'DynamoDB', kind, perMinute, dollars: dynamoDollars(wru, rru) });

  // DynamoDB, steady state
  if (d.sessions) {
    const s = MEASURED.session;
    dyn('lease rows: each candidate process reads each lease once a minute (eventually consistent)', c * s.leaseReadsPerCandidate, 0, c * s.leaseReadsPerCandidate * 0.5);
    dyn('session renewals (one row per process)', (P * s.sessionRenewalsPerProcess) / L, (P * s.sessionRenewalsPerProcess) / L, 0);
    dyn(`session reads (consistent): ${watch.pairs.toLocaleString('en-US')} watcher–session pairs`, (watch.pairs * s.sessionReadsPerPair) / L, 0, (watch.pairs * s.sessionReadsPerPair) / L);
  } else {
    const m = MEASURED.single;
    dyn('leader renewals (the lease row)', m.leaderRenewals, m.leaderRenewals, 0);
    dyn('successor and second successor reads', m.watcherReads, 0, m.watcherReads * 0.5);
  }
  // a candidate on a live session renews its own row every 6 h, one on none every 10 minutes
  const candidateWrites = c * (d.sessions ? MEASURED.session.candidateRenewalsPerCandidate : MEASURED.single.candidateRenewals / 3); // (measured with 3 candidates)
  dyn(`candidate renewals (every ${d.sessions ? '6 h' : '10 min'} each)`, candidateWrites, candidateWrites, 0);
  // … and, on a session, reads its row every 10 minutes instead (eventually consistent), to find it gone
  if (d.sessions) dyn('candidate checks (a read every 10 min each, eventually consistent)', c * 0.1, 0, c * 0.1 * 0.5);
  const identityRru = (P * SESSION_ROW_BYTES) / 4096 / L;
  const parts = segmentsFor(L, TICK_DEFAULTS.segmentLeases);
  // a round a minute (conservative: a round longer than the schedule's interval makes the rounds rarer);
  // each part scans all the identities again (after its lease rows), and a round in parts once more
  // at its end (collectIdentities; the leases and candidates again only in a round that finds an
  // identity expired, a process gone: not counted)
  const identityScans = parts + (parts > 1 ? 1 : 0);
  dyn(`coordinator's tick: a round a minute, ${parts} part${parts === 1 ? '' : 's'} of 3 consistent scans${parts > 1 ? ', the identities again at its end' : ''}, and its cursor's GetItem`, (3 * parts + (identityScans - parts) + 1) / L, 0, cal.scanRruPerLease * (c / 3) + identityRru * identityScans + 1 / L);
  const changesPerMinute = r.leaderChangesPerLeaseMonth / MINUTES_PER_MONTH_;
  dyn(`leader changes (${r.leaderChangesPerLeaseMonth} a lease-month: ~${r.recordsPerLeaderChange} writes, ~10 reads each)`, changesPerMinute * (r.recordsPerLeaderChange + 10), changesPerMinute * r.recordsPerLeaderChange, changesPerMinute * 10);

  // the streams
  const candidateRecordsPerSecond = (L * candidateWrites) / 60;
  const candidateBytes = L * c * cal.candidateBytes;
  const candidateShards = shardsFor(candidateBytes, candidateRecordsPerSecond, 0, r.minShards);
  // a process restarting registers again on every lease it stands for: each INSERT is reconciled
  const candidateStream = streamFigure({ recordsPerSecond: candidateRecordsPerSecond, recordMs: r.plainRecordMs, shards: candidateShards, parallelization: candidatePf, batchSize: 100, pollIntervalMs: r.pollIntervalMs, burstRecords: watch.maxCandidaciesOfOneProcess, burstRecordMs: r.reconcileRecordMs });
  const leaseRecordsPerSecond = (L * r.leaderChangesPerLeaseMonth * r.recordsPerLeaderChange) / SECONDS_PER_MONTH;
  const leaseRowWritesPerSecond = d.sessions ? 0 : MEASURED.single.leaderRenewals / 60;
  const leaseShards = shardsFor(L * (cal.leaseBytes + 150), L * leaseRowWritesPerSecond, 0, r.minShards);
  // one process lost: each lease it held changes hands (records per change each)
  const heldByOne = Math.ceil(L / P);
  const leaseStream = streamFigure({ recordsPerSecond: leaseRecordsPerSecond, recordMs: r.reconcileRecordMs, shards: leaseShards, parallelization: leasePf, batchSize: 100, pollIntervalMs: r.pollIntervalMs, burstRecords: heldByOne * r.recordsPerLeaderChange, burstRecordMs: r.reconcileRecordMs });

  const leaseStreamZoneLost = streamFigure({ recordsPerSecond: leaseRecordsPerSecond, recordMs: r.reconcileRecordMs, shards: leaseShards, parallelization: leasePf, batchSize: 100, pollIntervalMs: r.pollIntervalMs, burstRecords: Math.ceil(L / 3) * r.recordsPerLeaderChange, burstRecordMs: r.reconcileRecordMs });

  // Lambda
  const candInvocations = (candidateRecordsPerSecond * 60) / candidateStream.recordsPerInvocation / L;
  const candGbs = candInvocations * (MEASURED.candidateStreamGbSecondsPerInvocation + (candidateStream.recordsPerInvocation - 1) * 0.25 * (r.plainRecordMs / 1000));
  bill.push({ service: 'Lambda', kind: `candidateStream (${candidateStream.recordsPerInvocation.toFixed(1)} records an invocation)`, perMinute: candInvocations, dollars: lambdaDollars(candInvocations, candGbs) });
  const leaseInvocations = changesPerMinute * r.recordsPerLeaderChange;
  bill.push({ service: 'Lambda', kind: 'leaseStream (one per record, conservative)', perMinute: leaseInvocations, dollars: lambdaDollars(leaseInvocations, leaseInvocations * 0.25 * (r.reconcileRecordMs / 1000)) });

  // the tick: a round in parts of TICK_DEFAULTS.segmentLeases leases, each part scanning its share
  // of the leases and candidates tables and all the identities (a page or two), and, in parts, the
  // identities once more at its end; every invocation reconciling until the timeout less the margin
  // (lib/coordinator/tick.ts)
  const segments = parts;
  const identityPages = Math.ceil((P * SESSION_ROW_BYTES) / 1_048_576);
  const bytes = L * cal.leaseBytes + L * c * cal.candidateBytes + P * SESSION_ROW_BYTES;
  const scanPages = Math.max(3, Math.ceil(bytes / 1_048_576) + 2) + (segments - 1) * (2 + identityPages) + (identityScans - segments) * identityPages;
  const cpuSeconds = (L * cal.cpuMsPerLease * (c / 3) * r.cpuSlowdown) / 1000;
  const regionSeconds = (scanPages * r.scanPageMs) / 1000 + cpuSeconds;
  const writeCpuMs = cal.writeCpuMs;
  const vacantWrites = L * (1 + c);
  const regionAllVacantSeconds = regionSeconds + Math.max((vacantWrites * writeCpuMs * r.cpuSlowdown) / 1000, (vacantWrites * r.writeLatencyMs) / 16 / 1000);
  const budgetSeconds = LIMITS.coordinatorTimeoutSeconds.value - TICK_DEFAULTS.marginMs / 1000;
  const tickEvery = wiring.coordinator.trigger.everySeconds;
  const invocationsFor = (work: number) => Math.max(1, Math.ceil(work / budgetSeconds));
  // each invocation but the last spends its budget, then the next one starts at a schedule tick (within one interval)
  const reachFor = (work: number) => (invocationsFor(work) - 1) * (budgetSeconds + tickEvery) + (work - (invocationsFor(work) - 1) * budgetSeconds) + tickEvery;
  const tick = {
    localSeconds: (cal.unchanged.interceptMs + cal.unchanged.msPerLease * L) / 1000,
    regionSeconds,
    regionAllVacantSeconds,
    heapMb: Math.min(L, TICK_DEFAULTS.segmentLeases) * cal.heapMbPerLease,
    scanPages,
    segments,
    budgetSeconds,
    invocations: invocationsFor(regionSeconds),
    allVacantInvocations: invocationsFor(regionAllVacantSeconds),
    reachSeconds: reachFor(regionSeconds),
    allVacantReachSeconds: reachFor(regionAllVacantSeconds),
  };
  bill.push({ service: 'Lambda', kind: `coordinator (1 tick a minute, ${regionSeconds.toFixed(1)} s at 512 MB)`, perMinute: 1 / L, dollars: lambdaDollars(1 / L, (regionSeconds * 0.5) / L) });

  // the rest
  bill.push({ service: 'SQS', kind: "timer queue's long polling (15 receives a minute per deployment)", perMinute: 15 / L, dollars: ((15 / L) * 0.4 * MINUTES_PER_MONTH_) / 1e6 });
  bill.push({ service: 'EventBridge', kind: 'events (5 per leader change)', perMinute: changesPerMinute * 5, dollars: (changesPerMinute * 5 * MINUTES_PER_MONTH_) / 1e6 });
  const deliveriesPerWake = toProcesses || d.grants !== 'all' ? c : P;
  bill.push({ service: 'IoT Core', kind: `connectivity (${P} connections)`, perMinute: 0, dollars: (P / L) * 0.08e-6 * MINUTES_PER_MONTH_ });
  // to processes: a publish per candidate's process and its delivery, and one on the lease topic (observers).
  // Channels on every wake: the lease topic's delivered to each that may receive it, and with sessions
  // the process topics' copies too, to each process of a role granted every lease (none of a role of named leases)
  const copies = d.sessions ? 1 + c : 1;
  const copiesReceived = d.sessions && d.grants === 'all' ? copies : 1;
  const messages = changesPerMinute * r.wakesPerLeaderChange * (toProcesses ? 2 * c + 1 : copies + copiesReceived * deliveriesPerWake);
  bill.push({ service: 'IoT Core', kind: toProcesses ? `wakes (published to each of ${c} candidates' processes, and once on the lease topic)` : `wakes (published ${copies === 1 ? 'once' : `${copies} times: the lease topic and the candidates' processes'`}, delivered to ${deliveriesPerWake} connections${copiesReceived > 1 ? ' each' : ''})`, perMinute: messages, dollars: (messages * MINUTES_PER_MONTH_) / 1e6 });
  {
    // made whatever the channels: the function cannot tell who subscribes where
    const queries = changesPerMinute * r.recordsPerLeaderChange;
    dyn("wakes to processes: the changed lease's candidates, one consistent Query a lease-stream record", queries, 0, queries * 0.5);
  }

  // partitions
  const s = MEASURED.session;
  const sessionReads = d.sessions ? (watch.pairs * s.sessionReadsPerPair) / 60 : 0;
  // granted every lease, a process's sessions are in its shard: the busiest shard holds the most processes' rows
  const inBusiestShard = d.grants === 'all' ? busiestShard(P) : 1;
  const hottestRow = (watch.maxWatchersOfOneSession * s.sessionReadsPerPair) / 60;
  const partitions = {
    sessionPartitionWritesPerSecond: d.sessions ? (inBusiestShard * s.sessionRenewalsPerProcess) / 60 : 0,
    sessionPartitionReadsPerSecond: d.sessions ? (d.grants === 'all' ? Math.max(hottestRow, (sessionReads * inBusiestShard) / P) : hottestRow) : 0,
    hottestSessionReadsPerSecond: d.sessions ? (watch.maxWatchersOfOneSession * s.sessionReadsPerPair) / 60 : 0,
    leaseRowWritesPerSecond,
    identitiesTableRcuPerSecond: sessionReads,
  };

  // IoT Core: a burst's wakes go out as fast as the lease stream drains its records; a limit per
  // second is crossed only by what lands within one second
  const wakesPerSecond = (L * r.leaderChangesPerLeaseMonth * r.wakesPerLeaderChange) / SECONDS_PER_MONTH;
  const burstWakes = leaseStream.burstRecords * (r.wakesPerLeaderChange / r.recordsPerLeaderChange);
  const burstSeconds = Math.max(1, leaseStream.burstAgeSeconds - r.pollIntervalMs / 1000);
  // the share of the burst one connection receives: all of it when it may receive every wake, or
  // stands for every lease the lost process held (its cell); else the leases it shares with it
  const toOneConnection = (d.grants === 'all' && !toProcesses) || d.placement === 'cells' || P <= c ? 1 : (c - 1) / (P - 1);
  // coalesced per process and invocation: a connection gets at most one message per stream invocation of the burst
  // (the burst's records spread over the stream's concurrent invocations, a batch of at most 100 each)
  const recordsEach = Math.min(100, Math.max(1, Math.ceil(leaseStream.burstRecords / leaseStream.concurrency)));
  const burstInvocationsPerSecond = Math.ceil(leaseStream.burstRecords / recordsEach) / burstSeconds;
  const perConnection = (burstWakes * toOneConnection) / burstSeconds;
  const iot = {
    subscriptionsPerConnection: 1,
    deliveriesPerWake,
    wakesPerSecond,
    burstDeliveriesPerConnectionPerSecond: opts.wakes === 'coalesced' ? Math.min(perConnection, burstInvocationsPerSecond) : perConnection * (toProcesses ? 1 : copiesReceived),
    burstOutboundPerSecond: (burstWakes * deliveriesPerWake * (toProcesses ? 1 : copiesReceived)) / burstSeconds,
  };

  const dollarsPerLeaseMonth = bill.reduce((a, b) => a + b.dollars, 0);
  const dynamoRequestsPerLeaseMinute = bill.filter((b) => b.service === 'DynamoDB').reduce((a, b) => a + b.perMinute, 0);
  return { deployment: d, watch, bill, dollarsPerLeaseMonth, dynamoRequestsPerLeaseMinute, tick, leaseStream, leaseStreamZoneLost, candidateStream, partitions, iot };
}

export interface BusyLease {
  candidates: number;
  /** An election pings every live candidate at once (Promise.all): one write each, all under the lease's partition key of the candidates table. */
  pingBurstWcu: number;
  /** Each answer is a candidate-stream record that reconciles the lease: a consistent Query of all its candidates. */
  rruPerReconcile: number;
  /** The answers share one shard (one partition key) and run one after another: how long they take. */
  answersDrainSeconds: number;
  /** Read units a second on that partition while they drain. */
  answersRcuPerSecond: number;
}

/**
 * A lease with `candidates` candidates (every process of a fleet standing for one lease): its
 * election and the answers that follow, all on one partition key of the candidates table.
 */
export function busyLease(candidates: number, cal: Pick<Calibration, 'candidateBytes'>, r: RegionAssumptions = REGION): BusyLease {
  if (!Number.isInteger(candidates) || candidates < 1) throw new Error(`candidates must be a whole number ≥ 1, got ${candidates}`);
  const rruPerReconcile = Math.max(1, Math.ceil((candidates * cal.candidateBytes) / 4096));
  const answersDrainSeconds = (candidates * r.reconcileRecordMs) / 1000;
  return { candidates, pingBurstWcu: candidates, rruPerReconcile, answersDrainSeconds, answersRcuPerSecond: (candidates * rruPerReconcile) / answersDrainSeconds };
}

/** The most processes of `processes` (ids `process-<i>`) whose sessions share one shard (sessionShard): 27 of 1,000 (15.6 on average). */
export function busiestShard(processes: number): number {
  const counts = new Map<string, number>();
  for (let i = 0; i < processes; i++) {
    const k = sessionShard(`process-${i}`);
    counts.set(k, (counts.get(k) ?? 0) + 1);
  }
  return Math.max(0, ...counts.values());
}

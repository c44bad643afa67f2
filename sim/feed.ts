/**
 * The checker's feed of a simulated world: the history (who led, with which token, when — on the
 * simulated monotonic clock), the fault windows, and at the end the ledger of fenced writes, judged
 * by the same checker as the chaos runs (lib/history/checker.ts). Also the world's timeline (with
 * --seed) and its counters.
 */
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { SimulatedClock } from '../lib/clock.js';
import { checkHistory, healingFaults, type ProcessRequests, type RequestBound, type Verdict } from '../lib/history/checker.js';
import { createLedgerTable, readLedger } from '../lib/history/ledger.js';
import type { FaultWindow, HistoryRecord } from '../lib/history/schema.js';

/** Simulated epoch ms every world starts at. */
export const T0 = 1_800_000_000_000;
/** Simulated ms as the history's nanosecond stamps. */
export const ns = (ms: number): string => BigInt(Math.round(ms * 1e6)).toString();

/** The keys leaseOf (sim/network.ts) counts a session row's and a keyless candidates request's requests under: no lease. */
const SESSION_ROWS = 'session';
const CANDIDATE_SCAN = 'candidates';

/** Who a history record is about: a term of `lease` held by `identity`'s `instance`. */
export interface TermOf {
  readonly lease: string;
  readonly identity: string;
  readonly instance: string;
  readonly fencingToken: number;
}

export class Feed {
  readonly history: HistoryRecord[] = [];
  readonly faults: FaultWindow[] = [];
  /** Every line of the timeline (kept with `trace`). */
  readonly timeline: string[] = [];
  /** Counters, counted in a Map (thousands of counts a schedule, under keys made as they come). */
  private readonly tally = new Map<string, number>();
  readonly ledgerTable = 'sim-ledger';
  /** Each worker process's DynamoDB requests per lease: when each attempt was sent (simulated monotonic ms). */
  private readonly requests = new Map<string, { process: string; lease: string; sent: number[] }>();

  constructor(
    private readonly clock: SimulatedClock,
    private readonly trace: boolean,
  ) {}

  /** Counters: requests, faults applied, events, dead letters (a copy, in the order they were first counted). */
  get counts(): Record<string, number> {
    return Object.fromEntries(this.tally);
  }

  count(k: string, n = 1): void {
    this.tally.set(k, (this.tally.get(k) ?? 0) + n);
  }

  /** Whether the timeline is kept (a story is told): lines costlier to make are made only then. */
  get tracing(): boolean {
    return this.trace;
  }

  log(line: string): void {
    if (this.trace) this.timeline.push(`${((this.clock.now() - T0) / 1000).toFixed(3).padStart(8)}s  ${line}`);
  }

  /** A term began now; `wall` is its holder's wall clock. */
  started(t: TermOf, wall: number): void {
    this.history.push({ event: 'started', lease: t.lease, identity: t.identity, instance: t.instance, fencingToken: t.fencingToken, mono: ns(this.clock.monotonic()), wall });
  }

  /** A term ended now, for `reason`. */
  stopped(t: TermOf, wall: number, reason: string): void {
    this.history.push({ event: 'stopped', lease: t.lease, identity: t.identity, instance: t.instance, fencingToken: t.fencingToken, mono: ns(this.clock.monotonic()), wall, reason });
  }

  /** A fault window, from and to in simulated monotonic ms (returned: a Region loss's learns later when its survivors serve). */
  window(kind: string, from: number, to: number, extra: Omit<FaultWindow, 'kind' | 'from' | 'to'> = {}): FaultWindow {
    const w: FaultWindow = { kind, from: ns(from), to: ns(to), ...extra };
    this.faults.push(w);
    return w;
  }

  /** Worker process `process` sent an attempt of a request for `lease` (undefined: not Conclave's) at `mono`. */
  request(process: string, lease: string | undefined, mono: number): void {
    if (lease === undefined) return;
    const key = `${process}\u0000${lease}`;
    let r = this.requests.get(key);
    if (!r) this.requests.set(key, (r = { process, lease, sent: [] }));
    r.sent.push(mono);
  }

  /** The ledger's table, made on the world's model (`client`: no network in between). */
  async createLedger(client: DynamoDBClient): Promise<void> {
    await createLedgerTable(client, this.ledgerTable);
  }

  /** The checker's verdict on the world as it ended now. */
  async verdict(client: DynamoDBClient, o: { healMs: number; episodicLeases: string[]; requestBound: RequestBound }): Promise<Verdict> {
    const end = this.clock.monotonic();
    const ledger = await readLedger(client, this.ledgerTable);
    // a failed leader's work and a moved token heal nothing: the stuck-lease rule judges from them
    const lastHeal = Math.max(0, ...healingFaults(this.faults).map((w) => Number(BigInt(w.to) / 1_000_000n)));
    const requests: ProcessRequests[] = [...this.requests.values()].map((r) => ({ process: r.process, lease: r.lease, sentMs: r.sent }));
    // the leases the workers stood for: every lease a worker process asked about (its lease row or
    // its candidate rows; not a session row nor a scan of the candidates), led or not
    const leases = [...new Set(requests.map((r) => r.lease))].filter((l) => l !== SESSION_ROWS && l !== CANDIDATE_SCAN);
    return checkHistory(
      { history: this.history, ledger, faults: this.faults, requests, leases, end: { mono: ns(end) } },
      {
        healMs: o.healMs,
        episodicLeases: o.episodicLeases,
        requestBound: o.requestBound,
        // no fault healed: judged from the world's start (its start-up within the same bound)
        healedAt: ns(Math.max(lastHeal, T0)),
        startedAt: ns(T0),
        // One rule for every world (issue 27): a holder on a session learns of an operator's delete
        // as any holder does, within its renew deadline — from the mark the lease stream's function
        // leaves on its session row, read in the answer to its next session renewal.
      },
    );
  }
}

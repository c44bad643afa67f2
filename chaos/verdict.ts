/**
 * The verdict of one chaos schedule, and what it is drawn from: the workers' history lines, the
 * harness's own observations of the leases table (a token it has seen is evidence the term had
 * begun), the fault windows, the state at the end and the ledger of accepted fenced writes —
 * judged by the history checker (lib/history/checker.ts), written to the schedule's directory, and
 * summed into the schedule's figures.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { checkHistory, type Verdict } from '../lib/history/checker.js';
import { monoNow, type EndState, type FaultWindow, type HistoryRecord, type LedgerEntry, type Observation } from '../lib/history/schema.js';
import type { CandidateStore } from '../lib/stores/candidate-store.js';
import type { LeaseStore } from '../lib/stores/lease-store.js';
import type { ChaosProcess } from './process.js';
import type { WorkerLine } from './protocol.js';
import type { FaultFigureKind, Schedule } from './schedule.js';
import { systemClock } from '../lib/clock.js';

export type SessionStats = Extract<WorkerLine, { type: 'session' }>['stats'];

/** The workers' sessions, summed over every worker process (the last `session` line of each). */
export interface SessionFigures {
  /** Rows started, renewals answered in time, renewals failed, sessions ended. */
  started: number;
  renewals: number;
  failedRenewals: number;
  ended: number;
  /** The harness's reads of the leases table (every 100 ms) that found a lease held on a session, or held without one (its holder renewing it itself). */
  leaseReadsOnSession: number;
  leaseReadsOwn: number;
}

/** What the checker is fed during a run, and the run's counts. */
export class Feed {
  readonly history: HistoryRecord[] = [];
  readonly observations: Observation[] = [];
  readonly windows: FaultWindow[] = [];
  /** Injections actually made, by kind. */
  readonly injected: Record<string, number> = {};
  readonly fenced = { accepted: 0, refused: 0, zombieAccepted: 0, zombieRefused: 0 };
  workerErrors = 0;
  /** Each process's session as its last `session` line said. */
  readonly sessionStats = new Map<ChaosProcess, SessionStats>();
  readonly leaseReads = { onSession: 0, own: 0 };

  count(k: string): void {
    this.injected[k] = (this.injected[k] ?? 0) + 1;
  }

  /** A worker's line: history, injections, session figures, fenced writes (errors are the fleet's). */
  onLine(p: ChaosProcess, l: WorkerLine): void {
    if (l.type === 'history') this.history.push(l.record);
    else if (l.type === 'injected') this.count(l.session ? `sessionLoss:${l.mode}` : `dynamodb:${l.mode}`);
    else if (l.type === 'session') this.sessionStats.set(p, l.stats);
    else if (l.type === 'fenced') {
      if (l.zombie) this.fenced[l.accepted ? 'zombieAccepted' : 'zombieRefused']++;
      else this.fenced[l.accepted ? 'accepted' : 'refused']++;
    }
  }

  /**
   * Reads the leases table every 100 ms until stopped: each write seen (a new revision: a term, a
   * renewal, a release that keeps the token) as an observation; `seen`
   * is told every read of a held lease (whether it is held on a session, and by whom).
   */
  watch(leases: LeaseStore, names: readonly string[], seen: (lease: string, holder: string, onSession: boolean) => void): () => Promise<void> {
    let watching = true;
    const lastRevision = new Map<string, number>();
    const watcher = (async () => {
      while (watching) {
        for (const lease of names) {
          try {
            const { item: l, revision } = await leases.read(lease);
            if (l?.holderIdentity !== undefined) {
              this.leaseReads[l.session !== undefined ? 'onSession' : 'own']++;
              seen(lease, l.holderIdentity, l.session !== undefined);
            }
            // every write, not only a new token: a release keeps the token and takes the holder off
            if (l && revision !== lastRevision.get(lease)) {
              lastRevision.set(lease, revision);
              this.observations.push({ lease, fencingToken: l.fencingToken, ...(l.holderIdentity ? { holder: l.holderIdentity } : {}), ...(l.renewTime !== undefined ? { renewTime: l.renewTime } : {}), revision, mono: monoNow() });
            }
          } catch {
            // DynamoDB Local busy: the next round looks again
          }
        }
        await systemClock.sleep(100);
      }
    })();
    return async () => {
      watching = false;
      await watcher;
    };
  }

  /** The workers' session figures (undefined: no sessions in this schedule). */
  sessions(s: Schedule): SessionFigures | undefined {
    const sum = (k: keyof SessionStats) => [...this.sessionStats.values()].reduce((n, x) => n + x[k], 0);
    return s.session ? { started: sum('started'), renewals: sum('renewals'), failedRenewals: sum('failedRenewals'), ended: sum('ended'), leaseReadsOnSession: this.leaseReads.onSession, leaseReadsOwn: this.leaseReads.own } : undefined;
  }
}

/** The state at the end: every live worker standing for every lease, and the candidate rows. */
export async function endState(s: Schedule, alive: readonly ChaosProcess[], candidates: CandidateStore): Promise<EndState> {
  const rows = (await Promise.all(s.leases.map((l) => candidates.list(l)))).flatMap((r) => r.candidates);
  return {
    mono: monoNow(),
    live: alive.flatMap((p) => s.leases.map((lease) => ({ lease, identity: p.plan.identity, instance: p.instances[lease]! }))),
    candidateRows: rows.map((r) => ({ lease: r.leaseName, name: r.name, ...(r.identity ? { identity: r.identity } : {}) })),
  };
}

/** The checker's verdict on the run, written to `dir` with everything it was drawn from. */
export function judge(feed: Feed, ledger: LedgerEntry[], end: EndState, dir: string, o: { healMs: number; allowedSkewMs: number; episodicLeases: string[] }): Verdict {
  const verdict = checkHistory({ history: feed.history, ledger, observations: feed.observations, faults: feed.windows, end }, o);
  const jsonl = (xs: readonly unknown[]) => xs.map((x) => `${JSON.stringify(x)}\n`).join('');
  writeFileSync(join(dir, 'history.jsonl'), jsonl(feed.history));
  writeFileSync(join(dir, 'ledger.jsonl'), jsonl(ledger));
  writeFileSync(join(dir, 'observations.jsonl'), jsonl(feed.observations));
  writeFileSync(join(dir, 'faults.jsonl'), jsonl(feed.windows));
  writeFileSync(join(dir, 'verdict.json'), `${JSON.stringify({ ok: verdict.ok, violations: verdict.violations, figures: verdict.figures, end }, null, 2)}\n`);
  return verdict;
}

/** The schedule's faults by kind, clock skew counted per skewed worker. */
export function faultsByKind(s: Schedule): Partial<Record<FaultFigureKind, number>> {
  const out: Partial<Record<FaultFigureKind, number>> = {};
  for (const f of s.faults) out[f.kind] = (out[f.kind] ?? 0) + 1;
  const skewed = s.workers.filter((w) => w.skewMs !== 0 && Math.abs(w.skewMs) < 30_000).length;
  if (skewed) out.clockSkew = skewed;
  const skewed30 = s.workers.filter((w) => Math.abs(w.skewMs) >= 30_000).length;
  if (skewed30) out.clockSkew30s = skewed30;
  return out;
}

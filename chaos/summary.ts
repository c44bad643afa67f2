import type { Violation } from '../lib/history/checker.js';
import type { ScheduleResult, SessionFigures } from './harness.js';

export interface ChaosSummary {
  schedules: number;
  /** Schedules on the push path, and with a Session per worker process. */
  push: number;
  session: number;
  /** The sessions' figures, summed over the session schedules. */
  sessions: SessionFigures;
  /**
   * sessionLoss faults that began (on a session schedule); those whose worker's session ended in
   * the window; those that hit a leader, and of those the ones after which it still led, in the
   * same terms, every lease it led when the fault began; and those in which a term of the worker
   * stopped at its renew deadline (a leader that did not take its terms off the lost session in time).
   */
  sessionLosses: { begun: number; sessionEnded: number; onLeader: number; termsKept: number; renewDeadline: number };
  faultsByKind: Record<string, number>;
  injected: Record<string, number>;
  violations: { schedule: number; violation: Violation }[];
  worstLeaderlessAfterHealMs: number | undefined;
  fenced: ScheduleResult['fenced'];
  pausedOverlaps: number;
  deadLetters: number;
  elapsedMs: number;
}

const add = <K extends string>(into: Record<K, number>, from: Partial<Record<K, number>>) => {
  for (const [k, v] of Object.entries(from) as [K, number | undefined][]) into[k] = (into[k] ?? 0) + (v ?? 0);
};

export function summarize(results: readonly ScheduleResult[]): ChaosSummary {
  const s: ChaosSummary = {
    schedules: results.length,
    push: 0,
    session: 0,
    sessions: { started: 0, renewals: 0, failedRenewals: 0, ended: 0, leaseReadsOnSession: 0, leaseReadsOwn: 0 },
    sessionLosses: { begun: 0, sessionEnded: 0, onLeader: 0, termsKept: 0, renewDeadline: 0 },
    faultsByKind: {},
    injected: {},
    violations: [],
    worstLeaderlessAfterHealMs: undefined,
    fenced: { accepted: 0, refused: 0, zombieAccepted: 0, zombieRefused: 0 },
    pausedOverlaps: 0,
    deadLetters: 0,
    elapsedMs: 0,
  };
  for (const r of results) {
    if (r.schedule.push) s.push++;
    if (r.schedule.session) s.session++;
    if (r.sessions) add<keyof SessionFigures>(s.sessions, r.sessions);
    s.sessionLosses.begun += r.sessionLosses.length;
    s.sessionLosses.sessionEnded += r.sessionLosses.filter((x) => x.sessionsEnded > 0).length;
    const onLeader = r.sessionLosses.filter((x) => x.ledAtStart.length > 0);
    s.sessionLosses.onLeader += onLeader.length;
    s.sessionLosses.termsKept += onLeader.filter((x) => x.kept.length === x.ledAtStart.length).length;
    s.sessionLosses.renewDeadline += r.sessionLosses.filter((x) => x.stops.some((t) => t.endsWith(':renewDeadline'))).length;
    add(s.faultsByKind, r.faultsByKind);
    add(s.injected, r.injected);
    add(s.fenced, r.fenced);
    s.violations.push(...r.verdict.violations.map((violation) => ({ schedule: r.schedule.index, violation })));
    const worst = r.verdict.figures.worstLeaderlessAfterHealMs;
    if (worst !== undefined) s.worstLeaderlessAfterHealMs = Math.max(s.worstLeaderlessAfterHealMs ?? 0, worst);
    s.pausedOverlaps += r.verdict.figures.pausedOverlaps;
    s.deadLetters += r.deadLetters;
    s.elapsedMs += r.elapsedMs;
  }
  return s;
}

const table = (rec: Record<string, number>) =>
  Object.entries(rec)
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([k, v]) => `    ${k.padEnd(36)} ${String(v).padStart(6)}`);

export function formatSummary(s: ChaosSummary, seed: number): string[] {
  return [
    '',
    `Chaos summary (seed ${seed})`,
    `  schedules                              ${String(s.schedules).padStart(6)}`,
    `    on the push path                       ${String(s.push).padStart(6)}`,
    `    with sessions                          ${String(s.session).padStart(6)}`,
    `  sessions started / ended               ${s.sessions.started} / ${s.sessions.ended}  (renewals ${s.sessions.renewals}, failed ${s.sessions.failedRenewals})`,
    `  lease reads on a session / off one     ${s.sessions.leaseReadsOnSession} / ${s.sessions.leaseReadsOwn}  (the harness's reads of held leases, session schedules)`,
    `  sessionLoss faults                     ${s.sessionLosses.begun}  (session ended in the window: ${s.sessionLosses.sessionEnded}; on a leader: ${s.sessionLosses.onLeader}, every term kept: ${s.sessionLosses.termsKept}; a term stopped at its renew deadline: ${s.sessionLosses.renewDeadline})`,
    '  faults injected, by kind (schedule windows; clockSkew: skewed workers)',
    ...table(s.faultsByKind),
    '  injections made, by kind',
    ...table(s.injected),
    `  fenced writes accepted / refused       ${s.fenced.accepted} / ${s.fenced.refused}`,
    `  zombie writes accepted / refused       ${s.fenced.zombieAccepted} / ${s.fenced.zombieRefused}  (old term's token after it stopped; accepted only while no newer term had begun)`,
    `  overlaps of a frozen leader forgiven   ${s.pausedOverlaps}  (the fence had to hold there)`,
    `  dead letters                           ${s.deadLetters}`,
    `  worst leaderless time after heal       ${s.worstLeaderlessAfterHealMs === undefined ? '-' : `${(s.worstLeaderlessAfterHealMs / 1000).toFixed(2)} s`}`,
    `  violations                             ${s.violations.length}`,
    ...s.violations.map((v) => `    ✗ schedule ${v.schedule}: ${v.violation.kind}: ${v.violation.message}`),
    `  elapsed                                ${(s.elapsedMs / 1000).toFixed(0)} s`,
  ];
}

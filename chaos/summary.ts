import type { Violation } from '../lib/history/checker.js';
import type { ScheduleResult } from './harness.js';

export interface ChaosSummary {
  schedules: number;
  faultsByKind: Record<string, number>;
  injected: Record<string, number>;
  violations: { schedule: number; violation: Violation }[];
  worstLeaderlessAfterHealMs: number | undefined;
  fenced: ScheduleResult['fenced'];
  pausedOverlaps: number;
  deadLetters: number;
  elapsedMs: number;
}

const add = (into: Record<string, number>, from: Partial<Record<string, number>>) => {
  for (const [k, v] of Object.entries(from)) into[k] = (into[k] ?? 0) + (v ?? 0);
};

export function summarize(results: readonly ScheduleResult[]): ChaosSummary {
  const s: ChaosSummary = {
    schedules: results.length,
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

/**
 * What scenarios hand back and how it is written: every sample and figure as a JSON line, a
 * markdown table, and the printed summary with each issue target beside its figure (reported,
 * never asserted).
 */
import { execFileSync } from 'node:child_process';
import { cpus, loadavg, totalmem } from 'node:os';
import { summarize, type Summary } from './stats.js';

/** One figure of the summary: a latency distribution (ms) or a single value. */
export interface Figure {
  scenario: string;
  /** What was measured, e.g. `crash failover · lease 15 s / renew deadline 10 s / retry 2 s`. */
  what: string;
  system: string;
  /** Latencies in milliseconds. */
  stats?: Summary;
  /** A single value with its unit, e.g. 84.6 `req/min per lease`. */
  value?: number;
  unit?: string;
  target?: string;
  met?: boolean;
  note?: string;
}

export interface ScenarioResult {
  /** JSON lines: samples, failed runs, details. */
  records: Record<string, unknown>[];
  figures: Figure[];
}

/** Collects a scenario's records and figures. */
export class Collector implements ScenarioResult {
  readonly records: Record<string, unknown>[] = [];
  readonly figures: Figure[] = [];
  constructor(readonly scenario: string) {}

  record(type: string, fields: Record<string, unknown>): void {
    this.records.push({ type, scenario: this.scenario, ...fields });
  }

  latency(what: string, system: string, ms: number[], target?: { text: string; met: (s: Summary) => boolean }, note?: string): Summary | undefined {
    if (ms.length === 0) {
      this.figures.push({ scenario: this.scenario, what, system, note: note ?? 'no successful run' });
      return undefined;
    }
    const stats = summarize(ms);
    this.figures.push({ scenario: this.scenario, what, system, stats, ...(target ? { target: target.text, met: target.met(stats) } : {}), ...(note ? { note } : {}) });
    return stats;
  }

  value(what: string, system: string, value: number, unit: string, target?: { text: string; met: boolean }, note?: string): void {
    this.figures.push({ scenario: this.scenario, what, system, value, unit, ...(target ? { target: target.text, met: target.met } : {}), ...(note ? { note } : {}) });
  }
}

export interface Machine {
  nproc: number;
  cpu: string;
  memoryGb: number;
  node: string;
  /** 1-minute load average when the run started: others' work on a shared machine shows here. */
  loadAtStart: number;
  commit: string;
  /** Uncommitted changes under lib/ (the demo's worker included) or functions/: the system measured is not exactly the commit. */
  dirty: boolean;
}

export function machine(): Machine {
  const git = (...args: string[]) => {
    try {
      return execFileSync('git', args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
    } catch {
      return ''; // not a git checkout (a copied tree): reported as unknown
    }
  };
  return {
    nproc: cpus().length,
    cpu: cpus()[0]?.model.trim() ?? 'unknown',
    memoryGb: Math.round(totalmem() / 2 ** 30),
    node: process.version,
    loadAtStart: Number(loadavg()[0]!.toFixed(2)),
    commit: git('rev-parse', '--short', 'HEAD') || 'unknown',
    dirty: git('status', '--porcelain', '--', 'lib', 'functions') !== '',
  };
}

const sec = (ms: number) => `${(ms / 1000).toFixed(2)} s`;
const mark = (f: Figure) => (f.met === undefined ? '' : f.met ? '✓' : '✗');
const fmtNumber = (v: number) => (Number.isInteger(v) ? String(v) : Math.abs(v) >= 1 ? v.toFixed(2) : v.toPrecision(3));
const fmtDollars = (v: number) => (v >= 1 || v === 0 ? v.toFixed(2) : v.toPrecision(3));
const fmtValue = (f: Figure) => (f.unit === '$' ? `$${f.value!.toFixed(2)}` : f.unit === '$/lease-month' ? `$${fmtDollars(f.value!)} /lease-month` : `${fmtNumber(f.value!)} ${f.unit}`);

/** The markdown table of every figure. */
export function markdown(figures: Figure[], m: Machine, title: string): string {
  const lines = [
    `# ${title}`,
    '',
    `Machine: ${m.nproc} × ${m.cpu}, ${m.memoryGb} GB, Node ${m.node}; load average at start ${m.loadAtStart}; commit ${m.commit}${m.dirty ? ' with uncommitted changes' : ''}.`,
    '',
    '| scenario | system | n | min | median | p90 | max | value | target | met | note |',
    '|---|---|---|---|---|---|---|---|---|---|---|',
  ];
  for (const f of figures) {
    const s = f.stats;
    lines.push(
      `| ${f.what} | ${f.system} | ${s ? s.n : ''} | ${s ? sec(s.min) : ''} | ${s ? sec(s.median) : ''} | ${s ? sec(s.p90) : ''} | ${s ? sec(s.max) : ''} | ${f.value !== undefined ? fmtValue(f) : ''} | ${f.target ?? ''} | ${mark(f)} | ${f.note ?? ''} |`,
    );
  }
  return `${lines.join('\n')}\n`;
}

/** The figures that have a target, one line each: what, the figure (its median, or its value), ✓ or ✗. */
export function targetLines(figures: Figure[]): string[] {
  return figures
    .filter((f) => f.target !== undefined)
    .map((f) => `  ${mark(f) || '·'} ${f.what} · ${f.system}: ${f.stats ? judgedStat(f.stats, f.target!) : f.value !== undefined ? fmtValue(f) : '—'} (target ${f.target})`);
}

/** The statistic a target judges ("max ≤ 0.25 s" and "every … ≤ 0.25 s" judge the maximum), shown beside it; the median otherwise. */
function judgedStat(stats: Summary, target: string): string {
  const stat = target.startsWith('every ') ? 'max' : ((['max', 'p90', 'min'] as const).find((k) => target.startsWith(k)) ?? 'median');
  return `${stat} ${sec(stats[stat])}`;
}

/** The printed summary: one line per figure, the target beside it. */
export function summaryLines(figures: Figure[]): string[] {
  const out: string[] = [];
  let last = '';
  for (const f of figures) {
    if (f.what !== last) {
      out.push(`\n${f.what}`);
      last = f.what;
    }
    const s = f.stats;
    const figure = s
      ? `n=${String(s.n).padStart(2)}  min ${sec(s.min).padStart(8)}  median ${sec(s.median).padStart(8)}  p90 ${sec(s.p90).padStart(8)}  max ${sec(s.max).padStart(8)}`
      : f.value !== undefined
        ? fmtValue(f)
        : '—';
    const target = f.target ? `   target: ${f.target} ${mark(f)}` : '';
    out.push(`  ${f.system.padEnd(28)} ${figure}${target}${f.note ? `   (${f.note})` : ''}`);
  }
  return out;
}

/**
 * Counts Lambda invocations and their duration per function, from outside lib/: the local
 * runtime's `intercept` hook stands between every trigger and its handler (stream batches after
 * the event source's filter, timer messages, ticks, platform events), so each call through it is
 * one invocation as Lambda would bill it, retries included. Duration is the handler's wall time
 * here, on DynamoDB Local (a few ms a request; in a Region, single-digit ms): an estimate of the
 * billed duration, not a measurement of it. Cold starts (init) are not counted.
 */
import type { LocalRuntimeOptions } from '../lib/local/runtime.js';
import { wiring, type FunctionName } from '../lib/wiring.js';
import { billedGbSeconds, lambdaDollarsPerMonth } from './prices.js';

export interface Invocation {
  fn: FunctionName;
  /** When it started (this machine's clock). */
  at: number;
  ms: number;
  /** Stream and queue batches: how many records it carried. */
  records?: number;
}

export interface FunctionUse {
  invocations: number;
  /** Billed duration: the sum of durations, each rounded up to the millisecond. */
  billedMs: number;
  gbSeconds: number;
}
export type LambdaUse = Partial<Record<FunctionName, FunctionUse>>;

/** Invocations and GB-seconds per function, at each function's memory size (lib/wiring.ts, as infra/ deploys it). */
export function lambdaUse(invocations: readonly Invocation[], memoryOf: (fn: FunctionName) => number = (fn) => wiring[fn].memoryMb): LambdaUse {
  const out: LambdaUse = {};
  const by = new Map<FunctionName, number[]>();
  for (const i of invocations) by.set(i.fn, [...(by.get(i.fn) ?? []), i.ms]);
  for (const [fn, ms] of by) out[fn] = { invocations: ms.length, billedMs: ms.reduce((a, x) => a + Math.max(1, Math.ceil(x)), 0), gbSeconds: billedGbSeconds(ms, memoryOf(fn)) };
  return out;
}

/** `use` scaled by `k` (e.g. per minute and per lease). */
export const scaleUse = (use: LambdaUse, k: number): LambdaUse =>
  Object.fromEntries(Object.entries(use).map(([fn, u]) => [fn, { invocations: u.invocations * k, billedMs: u.billedMs * k, gbSeconds: u.gbSeconds * k }]));

/** The sum of several uses, per function. */
export function addUse(...all: LambdaUse[]): LambdaUse {
  const out: LambdaUse = {};
  for (const use of all) {
    for (const [fn, u] of Object.entries(use) as [FunctionName, FunctionUse][]) {
      const o = (out[fn] ??= { invocations: 0, billedMs: 0, gbSeconds: 0 });
      o.invocations += u.invocations;
      o.billedMs += u.billedMs;
      o.gbSeconds += u.gbSeconds;
    }
  }
  return out;
}

/** Dollars a month per function for a use given per minute. */
export const lambdaDollars = (perMinute: LambdaUse): Partial<Record<FunctionName, number>> =>
  Object.fromEntries(Object.entries(perMinute).map(([fn, u]) => [fn, lambdaDollarsPerMonth(u.invocations, u.gbSeconds)]));

const recordsOf = (event: unknown): number | undefined => {
  const r = (event as { Records?: unknown } | undefined)?.Records;
  return Array.isArray(r) ? r.length : undefined;
};

/** Records every invocation of a local runtime (pass `intercept` to startLocalRuntime). */
export class LambdaMeter {
  readonly invocations: Invocation[] = [];

  /** Wraps `inner` (another intercept, if any): the meter counts what actually reaches the handler. */
  intercept(inner?: LocalRuntimeOptions['intercept']): NonNullable<LocalRuntimeOptions['intercept']> {
    return async (name, event, invoke) => {
      const call = async (e: unknown) => {
        const at = Date.now();
        const t0 = performance.now();
        try {
          return await invoke(e);
        } finally {
          const records = recordsOf(e);
          this.invocations.push({ fn: name, at, ms: performance.now() - t0, ...(records !== undefined ? { records } : {}) });
        }
      };
      return inner ? inner(name, event, call) : call(event);
    };
  }

  /** The invocations that started in [from, to]. */
  between(from: number, to: number): Invocation[] {
    return this.invocations.filter((i) => i.at >= from && i.at <= to);
  }
}

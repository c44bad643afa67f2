/**
 * The schedule, played: each fault begun at its time from the end of the warm-up and ended after
 * its duration (an instant — a deleted row, a platform event — has no end: its window closes as
 * it begins), by the injectors (chaos/injectors.ts); each fault's window goes to the checker. A
 * fault that waits for its target holds the schedule's clock meanwhile (Injectors.heldMs).
 */
import { systemClock } from '../lib/clock.js';
import { monoNow, type FaultWindow } from '../lib/history/schema.js';
import type { Injectors } from './injectors.js';
import { describeFault, faultDuration, type Fault, type Schedule } from './schedule.js';
import type { Feed } from './verdict.js';

/** One step of the schedule: a fault's beginning or end, `at` ms after the warm-up. */
interface Action {
  at: number;
  begin: boolean;
  f: Fault;
}

const instant = (f: Fault) => f.kind === 'leaseDelete' || f.kind === 'platformLate';

/** The schedule's steps in time order (at one time, ends before beginnings). */
export function actionsOf(s: Schedule): Action[] {
  const actions: Action[] = s.faults.flatMap((f) => [{ at: f.at, begin: true, f }, ...(instant(f) ? [] : [{ at: f.at + faultDuration(f), begin: false, f }])]);
  return actions.sort((a, b) => a.at - b.at || Number(a.begin) - Number(b.begin));
}

/** Plays the schedule from now; resolves once its last fault has ended. */
export async function playSchedule(s: Schedule, injectors: Injectors, feed: Feed): Promise<void> {
  const open = new Map<Fault, FaultWindow>();
  const t0 = systemClock.monotonic();
  for (const a of actionsOf(s)) {
    // later by as long as the schedule stood still for faults waiting for their target
    const wait = t0 + injectors.heldMs + a.at - systemClock.monotonic();
    if (wait > 0) await systemClock.sleep(wait);
    const f = a.f;
    if (a.begin) {
      const w: FaultWindow = { kind: f.kind, from: monoNow(), to: '0', detail: describeFault(f).trim() };
      if (!(await injectors.begin(f, w))) continue; // skipped: nothing to hit
      if (instant(f)) {
        w.to = w.from;
        feed.windows.push(w);
      } else open.set(f, w);
    } else {
      const w = open.get(f);
      if (!w) continue; // skipped at its start
      await injectors.end(f, w);
      w.to = monoNow();
      feed.windows.push(w);
    }
  }
}

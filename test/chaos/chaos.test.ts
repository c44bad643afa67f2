/**
 * A short chaos set for CI: five schedules on the local runtime — one of worker faults
 * (SIGKILL, SIGSTOP longer than the lease, a graceful hand-off, DynamoDB errors, throttling,
 * latency and lost responses, clock skew), one of lying clocks and stale signals (wall clocks 30 s
 * off and stepped, a deleted lease row, late and replayed platform events), one of coordinator
 * faults (functions down, duplicated, reordered, held and stale stream deliveries, a reconciler
 * crashing between its writes, lost timer messages, failing publishes), one on the push path and
 * one on sessions (a process heartbeat lost while its leases look healthy) — each judged by the
 * history checker: no violation.
 * The long runs are `npm run chaos` (docs/safety.md).
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, inject, it } from 'vitest';
import { formatVerdict } from '../../lib/history/checker.js';
import { JOB_LEASE, runSchedule } from '../../chaos/harness.js';
import { describeSchedule, generateSchedule, type FaultKind, type Schedule, type ScheduleOptions } from '../../chaos/schedule.js';

const dir = mkdtempSync(join(tmpdir(), 'conclave-chaos-ci-'));
const SHORT: ScheduleOptions = { faultPhaseMs: 8_000, minFaults: 3, maxFaults: 4 };
const WORKER_FAULTS: FaultKind[] = ['kill', 'pause', 'handoff', 'dynamodb'];

async function check(schedule: Schedule | { seed: number; opts: ScheduleOptions }) {
  const s = 'faults' in schedule ? schedule : generateSchedule(schedule.seed, 0, { ...SHORT, ...schedule.opts });
  const lines: string[] = [...describeSchedule(s)];
  const r = await runSchedule(s, { endpoint: inject('ddbEndpoint'), dir, stableMs: s.timing.leaseDurationMs, print: (l) => lines.push(l) });
  lines.push(...formatVerdict(r.verdict), `files: ${r.dir}`);
  expect(r.verdict.violations, lines.join('\n')).toEqual([]);
  expect(r.deadLetters, lines.join('\n')).toBe(0);
  return r;
}

describe('chaos (short CI set)', () => {
  it('the push path: a hand-off told by a wake, its heir paused past the lease, the broker down while a leader dies', async () => {
    const s: Schedule = {
      ...generateSchedule(17, 0, { ...SHORT, kinds: ['handoff'], push: true, session: false }),
      faults: [
        { kind: 'handoff', at: 0, worker: 'leader:alpha', restartAfterMs: 1_500 },
        { kind: 'pause', at: 1_000, worker: 'successor:beta', durationMs: 4_000 },
        { kind: 'pushOutage', at: 2_500, durationMs: 4_000 },
        { kind: 'kill', at: 3_000, worker: 'leader:alpha', restartAfterMs: 1_000 },
        { kind: 'handoff', at: 7_000, worker: 'leader:beta', restartAfterMs: 1_000 },
      ],
    };
    const r = await check(s);
    expect(r.injected['pushOutage:begun']).toBe(1);
    // wakes went out (the lease stream's and the stopping leaders') and reached the workers
    expect(r.push!.published).toBeGreaterThan(0);
    expect(r.push!.workerPublished).toBeGreaterThan(0);
    expect(r.push!.delivered).toBeGreaterThan(r.push!.published);
  });

  it('sessions: a heartbeat lost while the leases look healthy (refused, then late), the heir paused meanwhile, a session-held leader killed, one handing off', async () => {
    const base = generateSchedule(19, 0, { ...SHORT, kinds: ['handoff'], push: true, session: true });
    const s: Schedule = {
      ...base,
      // one version: a restarted worker preempting a leader would end the terms these checks follow
      workers: base.workers.map((w) => ({ ...w, emulationVersion: '1.30.0' })),
      faults: [
        // alpha's leader loses its heartbeat while alpha's heir is frozen; then it is killed (a crash
        // takeover of a lease back on a session); beta's leader's session writes land too late
        { kind: 'sessionLoss', at: 0, worker: 'leader:alpha', durationMs: 4_000, mode: 'error' },
        { kind: 'pause', at: 500, worker: 'successor:alpha', durationMs: 4_000 },
        { kind: 'kill', at: 4_500, worker: 'leader:alpha', restartAfterMs: 1_000 },
        { kind: 'sessionLoss', at: 9_000, worker: 'leader:beta', durationMs: 3_500, mode: 'latency', latencyMs: 2_000 },
        { kind: 'handoff', at: 13_000, worker: 'leader:beta', restartAfterMs: 1_000 },
      ],
    };
    const r = await check(s);
    const said = JSON.stringify(r.sessionLosses);
    // the terms were held on sessions at all (the harness read leases naming one)
    expect(r.sessions!.leaseReadsOnSession).toBeGreaterThan(0);
    expect(r.injected['sessionLoss:begun']).toBe(2);
    expect(r.injected['sessionLoss:error']).toBeGreaterThan(0);
    expect(r.injected['sessionLoss:latency']).toBeGreaterThan(0);
    const [refused, late] = r.sessionLosses;
    // each hit a leader whose terms were on its session (counted by what the worker told as the loss
    // took effect and as it was lifted, however late its lines came); the refused renewals failed or
    // ended the session (a session that reaches its deadline while a refused renewal is still being
    // tried ends before that renewal's failure is counted), and the late session (its renewal
    // answered after the deadline extends nothing) ended
    expect(refused!.ledAtStart.length, said).toBeGreaterThan(0);
    expect(late!.ledAtStart.length, said).toBeGreaterThan(0);
    expect(refused!.failedRenewals + refused!.sessionsEnded, said).toBeGreaterThan(0);
    expect(late!.sessionsEnded, said).toBeGreaterThan(0);
  });

  it('worker faults: kill, pause, hand-off, DynamoDB faults, skewed clocks', async () => {
    const r = await check({ seed: 7, opts: { kinds: WORKER_FAULTS } });
    expect(r.fenced.accepted).toBeGreaterThan(0);
    // the scheduled job's withLease runs were judged with the terms: they ran, and none overlapped
    expect(r.verdict.terms.filter((t) => t.lease === JOB_LEASE).length).toBeGreaterThan(0);
  });

  it('lying clocks (workers 30 s slow and fast, steps of 30 s), a deleted lease row, late and replayed platform events', async () => {
    // Written out: each fault aimed where it bites (at a leader), on workers whose wall clocks are 30 s off.
    // on sessions: each process stamps its session row, too, with DynamoDB's time, not its wall clock's
    const base = generateSchedule(13, 0, { ...SHORT, kinds: ['kill'], session: true });
    const skews = [-30_000, 30_000, 0];
    const s: Schedule = {
      ...base,
      workers: base.workers.map((w, i) => ({ ...w, skewMs: skews[i]! })),
      faults: [
        { kind: 'clockStep', at: 0, worker: 'leader:alpha', stepMs: -30_000, durationMs: 4_000 },
        { kind: 'kill', at: 500, worker: 'leader:alpha', restartAfterMs: 1_000 },
        { kind: 'clockStep', at: 2_500, worker: 'leader:beta', stepMs: 30_000, durationMs: 3_000 },
        { kind: 'platformLate', at: 3_500, worker: 'leader:alpha', lateMs: 120_000, replay: true },
        { kind: 'leaseDelete', at: 4_500, lease: 'beta' },
        { kind: 'platformLate', at: 6_000, worker: 'leader:beta', lateMs: 180_000, replay: false },
      ],
    };
    const r = await check(s);
    expect(r.faultsByKind).toMatchObject({ clockSkew30s: 2, clockStep: 2, leaseDelete: 1, platformLate: 2 });
    expect(r.injected).toMatchObject({ 'leaseDelete:deleted': 1, 'platformLate:replayed': 1, 'platformLate:late': 1 });
  });

  it('coordinator faults during elections, then the functions down while the leader dies: the fallback keeps a leader', async () => {
    // Written out rather than drawn: the coordinator's faults only bite while an election runs.
    const s: Schedule = {
      ...generateSchedule(11, 0, { ...SHORT, kinds: ['handoff'] }),
      faults: [
        { kind: 'reconcilerCrash', at: 0, durationMs: 4_000, rate: 0.5, point: 'beforeLeaseWrite' },
        { kind: 'reconcilerCrash', at: 0, durationMs: 4_000, rate: 0.5, point: 'afterLeaseWrite' },
        { kind: 'timerLoss', at: 0, durationMs: 4_000, rate: 1 },
        { kind: 'streamDuplicate', at: 0, durationMs: 4_000, rate: 1, delayMs: 0 },
        { kind: 'streamReorder', at: 0, durationMs: 4_000, rate: 1, delayMs: 0 },
        { kind: 'streamStale', at: 0, durationMs: 4_000, rate: 0.6, delayMs: 800 },
        { kind: 'publishFailure', at: 0, durationMs: 4_000, rate: 0.3 },
        { kind: 'handoff', at: 300, worker: 'leader:alpha', restartAfterMs: 1_500 },
        { kind: 'coordinatorDown', at: 4_000, durationMs: 16_000 },
        { kind: 'kill', at: 4_500, worker: 'leader:alpha', restartAfterMs: 1_000 },
      ],
    };
    const r = await check(s);
    expect(r.injected['coordinatorDown:tickSkipped']).toBeGreaterThan(0);
    // While the functions were down the lease changed hands all the same: by direct acquisition.
    const down = r.windows.find((w) => w.kind === 'coordinatorDown')!;
    expect(r.verdict.terms.some((t) => t.lease === 'alpha' && t.start > BigInt(down.from) && t.start < BigInt(down.to))).toBe(true);
  });
});

/**
 * Platform-confirmed failover end to end: worker processes run as local ECS tasks (each with its
 * own task metadata endpoint, detected by the SDK for real); SIGKILL the leader and ECS's STOPPED
 * event ends its term, so the next leader comes long before the lease could run out: its terms
 * last 10 minutes, which no wait of the test lasts.
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { LOCAL_DEPLOYMENT } from '../../lib/local/ecs-task.js';
import { startEcsWorker } from '../../lib/local/ecs-worker.js';
import { startLocalRuntime, type LocalRuntime } from '../../lib/local/runtime.js';
import type { WorkerProcess } from '../../lib/local/worker-process.js';
import { ecsTaskStateChange, taskArn } from '../platform-fixtures.js';
import { waitFor } from '../sdk/harness.js';

let rt: LocalRuntime;
const workers: WorkerProcess[] = [];
beforeAll(async () => {
  rt = await startLocalRuntime({ endpoint: inject('ddbEndpoint'), prefix: `pf-${randomUUID().slice(0, 8)}`, dir: mkdtempSync(join(tmpdir(), 'conclave-pf-')), tickEveryMs: 600_000, logLevel: 'SILENT' });
});
afterAll(async () => {
  await Promise.all(workers.map((w) => w.stop()));
  await rt.stop();
});

/** Every start/stop line of every worker, in time order: the largest number leading at once. */
function maxConcurrent(): number {
  const lines = workers.flatMap((w) => w.events.filter((e) => e.event === 'started' || e.event === 'stopped')).sort((a, b) => a.at - b.at);
  const leading = new Set<string>();
  let max = 0;
  for (const e of lines) {
    if (e.event === 'started') leading.add(e.identity);
    else leading.delete(e.identity);
    max = Math.max(max, leading.size);
  }
  return max;
}

describe('crash failover with the platform signal', () => {
  it('SIGKILL the leader: its task STOPPED event ends the term; a new leader long before the lease (10 min) would expire; never two at once', async () => {
    // Without the signal the next term waits this out, and the wait for it is called hung first (3
    // minutes): no time budget. (Before: 15 s, and the next term asserted to come within 15 s of the
    // last renewal, a budget a busy machine's stall in the event's path could miss.)
    const LEASE_MS = 600_000;
    for (const id of ['t1', 't2', 't3']) {
      workers.push(await startEcsWorker(rt, { identity: id, lease: 'ecs-job', emulationVersion: '1.30.0', binaryVersion: '1.30.0', timing: { leaseDurationMs: LEASE_MS, renewDeadlineMs: 10_000, retryPeriodMs: 2_000 } }));
    }
    // A settled term: workers registering one after another can preempt each other at start-up,
    // and a term that changes between this read and the kill is a newer term the event must not end.
    const settled = async () => {
      const l = (await rt.deps.coordinator.leases.read('ecs-job')).item;
      const w = workers.find((x) => x.leading && x.identity === l?.holderIdentity);
      return w && !l!.preferredHolder && !l!.election && workers.every((x) => x === w || !x.leading) ? { w, l: l! } : undefined;
    };
    await waitFor('a leader', settled);
    // A registration still on its way through the candidates stream could yet start a preemption:
    // a tick reconciles from the rows as they are now, as that stream hop would, so after it any
    // preemption has begun (and the wait below sees it through).
    await rt.tick();
    const { w: leader, l: first } = await waitFor('a settled leader', settled);
    // The SDK found its task through the metadata endpoint and it is on the lease.
    expect(first.holderPlatform).toMatchObject({ kind: 'ecs', cluster: expect.stringContaining(':cluster/conclave-local') });
    expect(first.holderPlatformId).toMatch(/^arn:aws:ecs:local:000000000000:task\/conclave-local\//);

    // ECS's event carries whole seconds, and only an event later than the term's start by more
    // than clockSkewMs ends it (a late or replayed event must not end a newer term): a term killed
    // in its first two seconds would run out instead.
    // (the runtime stamps the STOPPED event on its clock, the one its functions run on: wait until that clock says so)
    const { clock, config } = rt.deps.coordinator;
    await waitFor('the term older than clockSkewMs and a second', () => clock.now() >= first.acquireTime! + config.clockSkewMs + 1_000);
    const lastSeen = (await rt.deps.coordinator.leases.read('ecs-job')).item!;
    expect(lastSeen).toMatchObject({ holderIdentity: leader.identity, fencingToken: first.fencingToken });
    await leader.kill();
    // The next term, as its leader's own line and the row agree (token and holder): pinned when it
    // is seen, for a busy machine may yet end it (a renew deadline missed) before the checks below.
    const termOf = (w: WorkerProcess) => w.events.findLast((e) => e.event === 'started')?.fencingToken;
    const { taken } = await waitFor('the next leader, the row agreeing', async () => {
      const next = workers.find((w) => w !== leader && w.leading);
      const taken = next && (await rt.deps.coordinator.leases.read('ecs-job')).item;
      return next && taken?.holderIdentity === next.identity && taken.fencingToken === termOf(next) && next.leading ? { next, taken } : undefined;
    });
    // Without the signal nobody may take over before the term has run out; with it, the next term
    // began before it could have (its last renewal was no earlier than the read just before the
    // kill), by the row's own stamps.
    expect(taken.acquireTime!).toBeLessThan(lastSeen.renewTime! + LEASE_MS);

    const lost = await waitFor('Leader Lost', () => rt.events.find((e) => e.detailType === 'Leader Lost'));
    expect(lost.detail).toMatchObject({ previousHolder: leader.identity, fencingToken: first.fencingToken, source: 'aws.ecs', platformId: first.holderPlatformId, reason: 'Essential container in task exited (EssentialContainerExited)' });
    expect(taken.fencingToken).toBeGreaterThan(first.fencingToken);
    // and no term since went back to an older token (the next leader need not still lead: see above)
    expect((await rt.deps.coordinator.leases.read('ecs-job')).item!.fencingToken).toBeGreaterThanOrEqual(taken.fencingToken);
    expect(maxConcurrent()).toBe(1);
    expect(rt.deadLetters).toEqual([]);
  });
});

describe('the default bus in local mode', () => {
  it('a malformed event that matches the rule: retried as Lambda retries, then the dead-letter file; one the rule does not match goes nowhere', async () => {
    const before = rt.deadLetters.length;
    const bad = ecsTaskStateChange(taskArn('0badbad0'), 'STOPPED', LOCAL_DEPLOYMENT) as { detail: Record<string, unknown> };
    delete bad.detail['taskArn'];
    await rt.platformEvent(bad);
    const dead = rt.deadLetters.slice(before);
    expect(dead).toEqual([expect.objectContaining({ function: 'platform', reason: expect.stringMatching(/detail\.taskArn/) })]);
    const file = readFileSync(rt.deadLetterFile, 'utf8');
    expect(file).toContain('"function":"platform"');
    await rt.platformEvent(ecsTaskStateChange(taskArn('0badbad0'), 'RUNNING', LOCAL_DEPLOYMENT));
    await rt.platformEvent({ source: 'aws.ecs', 'detail-type': 'ECS Container Instance State Change', detail: {} });
    expect(rt.deadLetters.length).toBe(before + 1);
  });

  it('an event from another account or region matches no rule, as in AWS: it goes nowhere', async () => {
    const before = rt.deadLetters.length;
    for (const envelope of [{ account: '111111111111' }, { region: 'us-east-1' }]) {
      // malformed on purpose: had it reached the function, it would have been dead-lettered
      const bad = ecsTaskStateChange(taskArn('0badbad1'), 'STOPPED', envelope) as { detail: Record<string, unknown> };
      delete bad.detail['taskArn'];
      await rt.platformEvent(bad);
    }
    expect(rt.deadLetters.length).toBe(before);
  });
});

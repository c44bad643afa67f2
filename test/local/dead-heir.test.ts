/**
 * A departing heir named again by a coordinator's write decided on a read from before it withdrew
 * (the coordinator read lease and candidates with b's row there; b withdrew and read the lease, not
 * named, so it took nothing off; the coordinator's write then named b). Which reconcile takes the
 * dead name off, on the local runtime with the tick off (every 10 min) and the election timer
 * withheld, so only the streams act: docs/architecture.md, "Crash failover: succession".
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
import { afterEach, describe, expect, inject, it } from 'vitest';
import type { FunctionName } from '../../lib/wiring.js';
import { startLocalRuntime, type LocalRuntime } from '../../lib/local/runtime.js';
import { Log, STEADY, startElector, waitFor, type RunningElector } from '../sdk/harness.js';
import type { TestTables } from '../support.js';

const LEASE = 'reports';
const running: { rt: LocalRuntime; electors: RunningElector[] }[] = [];
// a test that fails before it releases the held batch must not leave its runtime's stop waiting on it
const releases: (() => void)[] = [];
afterEach(async () => {
  for (const release of releases.splice(0)) release();
  for (const { rt, electors } of running.splice(0)) {
    await Promise.all(electors.map((e) => e.stop()));
    await rt.stop();
  }
});

type Image = { name?: { S?: string }; revision?: { N?: string }; successor?: { S?: string }; successorInstance?: { S?: string } };
type Records = { Records?: { eventName?: string; dynamodb?: { OldImage?: Image; NewImage?: Image } }[] };
/** The revisions of the writes in a lease stream batch that named `name` successor (or another start-up of it). */
const naming = (event: unknown, name: string): number[] =>
  ((event as Records).Records ?? []).flatMap(({ dynamodb: d }) => (d?.NewImage?.successor?.S === name && (d.OldImage?.successor?.S !== name || d.OldImage?.successorInstance?.S !== d.NewImage?.successorInstance?.S) ? [Number(d.NewImage.revision?.N)] : []));
const removes = (event: unknown, name: string) => ((event as Records).Records ?? []).some((r) => r.eventName === 'REMOVE' && r.dynamodb?.OldImage?.name?.S === name);

/**
 * a leading, b its named heir (and `others` started after b, named after it: a newer binary
 * version ranks them after b, as their start order would not: a row's createdAt is its elector's
 * estimate of DynamoDB's clock, from Date headers to the second, so a later start-up's stamp can be
 * the earlier); the candidate stream's batch removing b's row is held until `release()`.
 */
async function heirNamed(others: string[] = []) {
  let release!: () => void;
  const held = new Promise<void>((r) => (release = r));
  releases.push(() => release());
  // the revisions of the writes naming b whose lease stream records were handled: a test waits for its own write's (the setup's own record may still be on its way)
  const handled = { remove: false, namedB: [] as number[] };
  // with `naming` set, a lease stream batch with a write naming b waits for `letNaming()`: the lease stream cannot take the name off meanwhile
  let letNaming!: () => void;
  const namingLet = new Promise<void>((r) => (letNaming = r));
  releases.push(() => letNaming());
  const hold = { naming: false };
  const calls: FunctionName[] = [];
  const rt = await startLocalRuntime({
    endpoint: inject('ddbEndpoint'),
    prefix: `heir-${randomUUID().slice(0, 8)}`,
    dir: mkdtempSync(join(tmpdir(), 'conclave-heir-')),
    tickEveryMs: 600_000,
    logLevel: 'SILENT',
    intercept: async (name, event, invoke) => {
      if (name === 'electionTimer') return undefined; // withheld: only the streams act
      calls.push(name);
      if (name === 'candidateStream' && removes(event, 'b')) {
        await held;
        const out = await invoke(event);
        handled.remove = true;
        return out;
      }
      if (name === 'leaseStream' && hold.naming && naming(event, 'b').length > 0) await namingLet;
      const out = await invoke(event);
      if (name === 'leaseStream') handled.namedB.push(...naming(event, 'b'));
      return out;
    },
  });
  const electors: RunningElector[] = [];
  running.push({ rt, electors });
  const t: TestTables = { client: rt.client, names: rt.tables, drop: async () => undefined };
  const log = new Log();
  const start = (id: string, binaryVersion = '1.30.0') => {
    const e = startElector(t, log, id, { leaseName: LEASE, ...STEADY }, { versions: ['1.30.0', binaryVersion] });
    electors.push(e);
    return e;
  };
  const read = () => rt.deps.coordinator.leases.read(LEASE);
  const a = start('a');
  await waitFor('a to lead', () => a.elector.isLeader());
  const b = start('b');
  await waitFor('b named successor', async () => (await read()).item?.successor === 'b');
  for (const id of others) {
    start(id, '1.31.0');
    await waitFor(`${id} named second successor`, async () => (await read()).item?.secondSuccessor === id);
  }
  return { rt, a, b, read, release, handled, calls, hold, letNaming };
}

describe('a departing heir named by a write decided before it withdrew', () => {
  it('the write lands before the candidate stream handles b’s REMOVE record: that reconcile takes the name off', async () => {
    const { rt, b, read, release, handled, calls, hold, letNaming } = await heirNamed();
    const instance = b.elector.instance;
    await b.stop(); // its row deleted, its name taken off (LeaderElector.leaveLease)
    const cur = await read();
    expect(cur.item?.successor).not.toBe('b');
    // the coordinator's write, decided on a read from before b's withdrawal; its lease stream
    // record held, so only the REMOVE's reconcile can take the name off (before: the lease stream
    // might, and the read after the write raced it)
    hold.naming = true;
    const written = await rt.deps.coordinator.leases.write(cur, { set: { successor: 'b', successorInstance: instance } });
    expect(written.successor).toBe('b');
    expect((await read()).item?.successor).toBe('b');
    release();
    await waitFor('the REMOVE record handled', () => handled.remove);
    expect((await read()).item?.successor).not.toBe('b');
    letNaming();
    await waitFor("the lease stream given the write's record", () => handled.namedB.includes(written.revision));
    expect(calls).not.toContain('coordinator');
  });

  it('the candidate stream handled b’s REMOVE record before the write landed (a late write): the lease stream’s record of that write finds b’s row gone and takes the name off, without the tick', async () => {
    const { rt, b, read, release, handled, calls } = await heirNamed();
    const instance = b.elector.instance;
    release();
    await b.stop();
    await waitFor('the REMOVE record handled', () => handled.remove);
    const cur = await read();
    const w = await rt.deps.coordinator.leases.write(cur, { set: { successor: 'b', successorInstance: instance } });
    await waitFor('the lease stream to handle the write', () => handled.namedB.includes(w.revision));
    expect((await read()).item?.successor).toBeUndefined(); // nobody else stands
    expect(calls).not.toContain('coordinator');
  });

  it('the candidate stream handled b’s REMOVE record before the write landed (a late write): the lease stream’s record of that write finds b’s row gone and names c, without the tick', async () => {
    const { rt, b, read, release, handled, calls } = await heirNamed(['c']);
    const instance = b.elector.instance;
    release();
    await b.stop(); // c moved up (LeaderElector.leaveLease)
    await waitFor('the REMOVE record handled', () => handled.remove);
    const cur = await read();
    expect(cur.item?.successor).toBe('c');
    // the coordinator's write, decided on a read from before b's withdrawal: b named again, c second
    const w = await rt.deps.coordinator.leases.write(cur, { set: { successor: 'b', successorInstance: instance, secondSuccessor: 'c', secondSuccessorInstance: cur.item!.successorInstance! } });
    await waitFor('the lease stream to handle the write', () => handled.namedB.includes(w.revision));
    expect((await read()).item?.successor).toBe('c');
    expect(calls).not.toContain('coordinator');
  });

  it('a write naming b’s earlier start-up (b’s row now another instance’s): the lease stream’s record of it names b’s current start-up, without the tick', async () => {
    const { rt, b, read, release, handled, calls } = await heirNamed();
    release();
    const cur = await read();
    expect(cur.item?.successorInstance).toBe(b.elector.instance);
    const w = await rt.deps.coordinator.leases.write(cur, { set: { successor: 'b', successorInstance: `${b.elector.instance}-before` } });
    await waitFor('the lease stream to handle the write', () => handled.namedB.includes(w.revision));
    expect((await read()).item).toMatchObject({ successor: 'b', successorInstance: b.elector.instance });
    expect(calls).not.toContain('coordinator');
  });
});

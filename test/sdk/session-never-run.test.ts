/**
 * A Session handed to electors whose run() is never called: easy to forget (nothing else in the API
 * needs it), and silent before: its electors kept their terms themselves, a write per lease every
 * renew interval. Told once, naming run() and the fix.
 */
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { describe, expect, it } from 'vitest';
import { Session } from '../../lib/sdk/session.js';
import { Sim } from '../../sim/harness.js';
import { CLIENT_GO } from './fault-group.js';

async function process(run: boolean) {
  const sim = await Sim.create({ config: { electedLeaseDurationSeconds: 15 } });
  sim.coordinator();
  const machine = sim.machine();
  const told: Error[] = [];
  const session = new Session({ client: machine.client, tables: sim.names, clock: machine.clock, prefix: 'p', onError: (e) => told.push(e) });
  if (run) void session.run(new AbortController().signal);
  const electors = ['job-1', 'job-2'].map((leaseName) => sim.elector('p', { leaseName, ...CLIENT_GO, session }, { machine, errors: told }));
  await sim.run(120_000);
  return { sim, told, electors };
}

describe('a Session whose run() is never called', () => {
  it('is told once, a lease duration after an elector took part, naming run() and the fix; its electors still lead', async () => {
    const { told, electors } = await process(false);
    const never = told.filter((e) => /run\(\) was never called/.test(e.message));
    expect(never).toHaveLength(1);
    expect(never[0]!.message).toMatch(/the electors on it renew their leases themselves .*call session\.run\(signal\) beside the electors' run\(\)/);
    expect(electors.every((e) => e.elector.isLeader())).toBe(true);
  });

  it('run, nothing of the kind is told', async () => {
    const { told } = await process(true);
    expect(told.filter((e) => /never called/.test(e.message))).toEqual([]);
  });

  it('run() called and rejected (a client whose region is no region name): nothing more is told, its rejection was its caller\'s to see', async () => {
    const sim = await Sim.create({ config: { electedLeaseDurationSeconds: 15 } });
    sim.coordinator();
    const machine = sim.machine();
    const told: Error[] = [];
    const session = new Session({ client: new DynamoDBClient({ region: 'us east 1' }), tables: sim.names, clock: machine.clock, prefix: 'p', onError: (e) => told.push(e) });
    const rejected = session.run(new AbortController().signal).then(() => undefined, (e: unknown) => e);
    sim.elector('p', { leaseName: 'job-1', ...CLIENT_GO, session }, { machine, errors: told });
    await sim.run(60_000);
    expect(await rejected).toBeInstanceOf(Error);
    expect(told.filter((e) => /never called/.test(e.message))).toEqual([]);
  });
});

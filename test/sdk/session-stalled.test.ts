/**
 * A Session whose process does not run (a GC pause, a VM frozen, SIGSTOP, a blocked event loop)
 * for longer than its renew deadline and less than a lease duration. On resume Node fires the
 * overdue timers in the order they were due, each one's microtasks before the next: the renewal's
 * nap is due before the deadline's timer, so the renewal's turn comes first. It must not send: a
 * renewal stamped at the resume would keep every term on the session alive another lease duration,
 * though its electors stopped at their own deadline. On DynamoDB Local, the real AWS SDK, and a
 * driven clock whose `stall` moves time with no timer run, then fires the overdue ones in order,
 * running each one's continuation (and waiting for its requests) before the next.
 */
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { GetItemCommand } from '@aws-sdk/client-dynamodb';
import { marshall, unmarshall } from '@aws-sdk/util-dynamodb';
import { seededRandom } from '../../lib/clock.js';
import { localClient } from '../../lib/local/dynamodb-local.js';
import { Session, sessionSeam } from '../../lib/sdk/session.js';
import { sessionKey } from '../../lib/schemas/identity.js';
import { drivenClock, inFlight } from '../proxy.js';
import { testTables, type TestTables } from '../support.js';

let t: TestTables;
beforeAll(async () => void (t = await testTables('session-stalled')));
afterAll(async () => t.drop());

/** A Session at its default timings (renew deadline 7.5 s, lease 15 s) on DynamoDB Local and a driven clock, its row renewed twice. */
async function running(prefix: string) {
  const client = localClient(inject('ddbEndpoint'));
  const c = drivenClock(inFlight(client));
  const errors: Error[] = [];
  // seeded: each row the session starts has a name of its own (the driven clock's random is constant)
  const clock = { ...c.clock, random: seededRandom(7) };
  // stamped with the test's clock (DynamoDB Local's Date headers are the machine's, which a stall does not move)
  const session = new Session({ client, tables: t.names, clock, clockSync: 'none', prefix, onError: (e) => void errors.push(e) });
  const stop = new AbortController();
  let settled = false;
  const run = session.run(stop.signal).finally(() => (settled = true));
  await c.drive(() => session.stats.renewals >= 2);
  const name = session.name!;
  const row = async () => unmarshall((await client.send(new GetItemCommand({ TableName: t.names.identities, Key: marshall(sessionKey(name)), ConsistentRead: true }))).Item!);
  return {
    client,
    c,
    errors,
    session,
    name,
    row,
    stop: async () => {
      stop.abort();
      await c.drive(() => settled);
      await run;
      client.destroy();
    },
  };
}

describe('a Session whose process is held past its renew deadline', () => {
  it('sends no renewal once the loop runs again, though the renewal is due before the deadline’s timer: the session ends and its row keeps the stamp it had', async () => {
    const { c, errors, session, name, row, stop } = await running('stalled');
    const before = await row();
    // past the renew deadline (7.5 s) from the last renewal, within the row's lease (15 s)
    c.stall(10_000);
    await c.drive(() => session.stats.ended >= 1);
    const after = await row();
    // before the fix: a renewal went out at the resume and landed, stamped 10 s on (revision + 1)
    expect(after['renewTime']).toBe(before['renewTime']);
    expect(after['revision']).toBe(before['revision']);
    expect(session.stats).toMatchObject({ renewals: 2, ended: 1 });
    expect(errors.map((e) => e.message)).toEqual([expect.stringMatching(new RegExp(`^Session ${name} ended: its renew deadline passed;`))]);
    // a new session starts, on a new row
    await c.drive(() => session.name !== undefined);
    expect(session.name).not.toBe(name);
    await stop();
  });

  it('a hold placed on a session that already ended is not kept: none is left behind once it is released, nor while it is not', async () => {
    const { c, session, name, stop } = await running('held-ended');
    c.stall(10_000);
    await c.drive(() => session.stats.ended >= 1);
    const holds = (session as unknown as { holds: Map<string, unknown> }).holds;
    // an elector's doubt over a take naming the ended session, settled later or never
    const release = sessionSeam(session).hold(name, 'a take in doubt');
    expect(holds.has(name)).toBe(false);
    release();
    expect(holds.has(name)).toBe(false);
    await stop();
  });
});

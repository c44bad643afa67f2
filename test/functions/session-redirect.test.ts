/**
 * Issue 36, item 6: a worker of the same lease rewrites the lease's `session` alone. The lease
 * stream's function marks the term ended on the session it was moved off (endedSessionTerm): the
 * holder stops at that mark, at its next session renewal, and ends the term on the row itself. A
 * term put back on the marked session is left to its holder (simulator seed 962116: ending it there,
 * as a release, ended a term its holder still led). Rows for the decision, then the lease stream's
 * handler on real stream records of DynamoDB Local, through the wiring's filters.
 */
import { UpdateItemCommand } from '@aws-sdk/client-dynamodb';
import { marshall } from '@aws-sdk/util-dynamodb';
import type { DynamoDBRecord, DynamoDBStreamEvent } from 'aws-lambda';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeHandler as leaseStream } from '../../functions/lease-stream.js';
import { coordinatorDeps } from '../../lib/coordinator/reconcile.js';
import { endedSessionTerm, type FunctionDeps } from '../../lib/functions/core.js';
import { observability } from '../../lib/functions/env.js';
import type { Change } from '../../lib/functions/records.js';
import { matchesFilter } from '../../lib/local/event-filter.js';
import { lambdaContext } from '../../lib/local/runtime.js';
import { sessionKey } from '../../lib/schemas/identity.js';
import type { Lease } from '../../lib/schemas/lease.js';
import { IdentityStore } from '../../lib/stores/identity-store.js';
import { LeaseStore } from '../../lib/stores/lease-store.js';
import { wiring } from '../../lib/wiring.js';
import { NOW, lease } from '../fixtures.js';
import { streamRecords, testTables, type TestTables } from '../support.js';

const change = (old: Lease | undefined, neu: Lease | undefined): Pick<Change<Lease>, 'old' | 'new'> => ({ old, new: neu });
const onS1 = lease('a', { holderInstance: 'a-1', session: 's1' });

describe('a change of `session` within a term', () => {
  it.each([
    { name: 'a renewal on the same session: nothing', old: onS1, neu: lease('a', { holderInstance: 'a-1', session: 's1', renewTime: NOW + 1 }), want: undefined },
    { name: 'moved to another session: the term is marked ended on the one it left', old: onS1, neu: lease('a', { holderInstance: 'a-1', session: 's2' }), want: 's1' },
    { name: 'taken off its session: marked ended there (its holder left it only once it ended)', old: onS1, neu: lease('a', { holderInstance: 'a-1' }), want: 's1' },
    { name: 'put on a session: nothing to mark', old: lease('a', { holderInstance: 'a-1' }), neu: onS1, want: undefined },
    { name: 'a new term (another holder): marked, as before', old: onS1, neu: lease('b', { holderInstance: 'b-1', fencingToken: 8 }), want: 's1' },
  ])('endedSessionTerm: $name', ({ old, neu, want }) => {
    expect(endedSessionTerm(change(old, neu))?.session).toBe(want);
  });
});

let t: TestTables;
beforeAll(async () => {
  t = await testTables('session-redirect');
});
afterAll(async () => {
  await t.drop();
});

/** The lease stream's dependencies on the test tables (nothing published, nothing dead-lettered). */
const functionDeps = (): FunctionDeps => ({
  coordinator: coordinatorDeps(t.client, t.names, { config: { ackWindowMs: 5_000 } }),
  timer: { schedule: async () => undefined },
  publish: async () => undefined,
  deadLetter: async () => undefined,
  ...observability('test', 'SILENT'),
});

/** A live session row named `name`, as a Session writes it. */
async function sessionRow(identities: IdentityStore, name: string, now: number): Promise<{ component: string; name: string }> {
  const key = sessionKey(name);
  await identities.write(await identities.read(key.component, key.name), { set: { holderIdentity: name, hostname: 'h', leaseDurationSeconds: 15, acquireTime: now, renewTime: now } });
  return key;
}

describe('the lease stream, on a redirected session (DynamoDB Local)', () => {
  it('marks the term ended on the session it was moved off; a term put back there is left to its holder, which stops at the mark', async () => {
    const leases = new LeaseStore(t.client, t.names.leases);
    const identities = new IdentityStore(t.client, t.names.identities);
    const now = Date.now();
    const mine = await sessionRow(identities, 'a-session', now);
    await sessionRow(identities, 'b-session', now);
    const marks = async () => (await identities.read(mine.component, mine.name)).item?.endedTerms;

    // a holds the lease, its term on its session (a renewal naming the session: it reaches the stream)
    const held = await leases.write(await leases.read('jobs'), {
      set: { holderIdentity: 'a', holderInstance: 'a-1', leaseDurationSeconds: 15, acquireTime: now, renewTime: now, leaseTransitions: 0, fencingToken: 1, electedBy: 'coordinator' },
    });
    const term = { holderIdentity: 'a', fencingToken: held.fencingToken };
    expect(await leases.renewTerm('jobs', term, now + 1, 15, 'a-session')).toMatchObject({ session: 'a-session' });
    // a worker of the same lease names another session: `session` alone, as its grant allows
    await t.client.send(
      new UpdateItemCommand({
        TableName: t.names.leases,
        Key: marshall({ name: 'jobs' }),
        UpdateExpression: 'SET #s = :s ADD #rev :one',
        ExpressionAttributeNames: { '#s': 'session', '#rev': 'revision' },
        ExpressionAttributeValues: marshall({ ':s': 'b-session', ':one': 1 }),
      }),
    );
    const handler = leaseStream(functionDeps());
    const seen = new Set<string>();
    // what Lambda would deliver since the last call: the new records its filters let through
    const deliver = async () => {
      const filters = wiring.leaseStream.trigger.filters ?? [];
      const fresh = (await streamRecords(t.client, t.names.leases)).filter((r) => !seen.has(r.eventID!));
      for (const r of fresh) seen.add(r.eventID!);
      const kept: DynamoDBRecord[] = fresh.filter((r) => filters.some((f) => matchesFilter(f, r as never)));
      const out = await handler({ Records: kept } as DynamoDBStreamEvent, lambdaContext('leaseStream'));
      expect(out).toEqual({ batchItemFailures: [] });
      return kept.length;
    };
    expect(await deliver()).toBe(3); // created, put on its session, redirected
    expect(await marks()).toEqual({ jobs: term.fencingToken });
    expect((await leases.read('jobs')).item).toMatchObject({ holderIdentity: 'a', session: 'b-session' }); // the term is left as it is

    // a's own renewal puts the term back on its session (one whose answer was lost had put it there
    // before the redirect, so a did not know of the mark): the term is left to a, which may still
    // lead it — ended here, as a release, its successor would take the lease at once
    expect(await leases.renewTerm('jobs', term, now + 2, 15, 'a-session')).toMatchObject({ session: 'a-session' });
    expect(await deliver()).toBe(1);
    expect((await leases.read('jobs')).item).toMatchObject({ holderIdentity: 'a', fencingToken: term.fencingToken, session: 'a-session' });
    // the mark stays: a stops at its next session renewal, and ends the term on the row itself
    expect(await marks()).toEqual({ jobs: term.fencingToken });
  });

  it("a holder's own moves (its session ended: off it, onto the next) end nothing, even with a record delivered again late", async () => {
    const leases = new LeaseStore(t.client, t.names.leases);
    const identities = new IdentityStore(t.client, t.names.identities);
    const now = Date.now();
    const first = await sessionRow(identities, 'c-session-1', now);
    await sessionRow(identities, 'c-session-2', now);
    const held = await leases.write(await leases.read('moves'), {
      set: { holderIdentity: 'c', holderInstance: 'c-1', leaseDurationSeconds: 15, acquireTime: now, renewTime: now, leaseTransitions: 0, fencingToken: 1, electedBy: 'coordinator' },
    });
    const term = { holderIdentity: 'c', fencingToken: held.fencingToken };
    await leases.renewTerm('moves', term, now + 1, 15, 'c-session-1'); // onto its session
    await leases.renewTerm('moves', term, now + 2, 15, null); // that session ended: off it (marked there)
    await leases.renewTerm('moves', term, now + 3, 15, 'c-session-2'); // onto the next
    const filters = wiring.leaseStream.trigger.filters ?? [];
    const records = (await streamRecords(t.client, t.names.leases)).filter((r) => r.dynamodb?.Keys?.['name']?.S === 'moves' && filters.some((f) => matchesFilter(f, r as never)));
    expect(records).toHaveLength(4);
    // delivered in order, then the move onto the first session delivered again (a retried batch)
    const out = await leaseStream(functionDeps())({ Records: [...records, records[1]!] } as DynamoDBStreamEvent, lambdaContext('leaseStream'));
    expect(out).toEqual({ batchItemFailures: [] });
    expect((await identities.read(first.component, first.name)).item?.endedTerms).toEqual({ moves: term.fencingToken });
    expect((await leases.read('moves')).item).toMatchObject({ holderIdentity: 'c', fencingToken: term.fencingToken, session: 'c-session-2' });
  });
});

/**
 * Malformed records, timer messages, scheduled events and event details to the handlers and the
 * parsers behind them: every bad input is a ValidationError naming the field; a stream handler
 * dead-letters exactly the records it could not read, with their content, and reports none of
 * them failed (no retry could read them); a queue handler reports exactly the messages it could
 * not read (a batch of nothing but bad ones throws, so Lambda retries it whole); good records in
 * the same batch are handled.
 */
import { marshall } from '@aws-sdk/util-dynamodb';
import type { DynamoDBRecord, SQSRecord } from 'aws-lambda';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeHandler as candidateStream } from '../../functions/candidate-stream.js';
import { makeHandler as coordinatorTick } from '../../functions/coordinator.js';
import { makeHandler as electionTimer } from '../../functions/election-timer.js';
import { makeHandler as leaseStream } from '../../functions/lease-stream.js';
import { coordinatorDeps } from '../../lib/coordinator/reconcile.js';
import { DETAIL_SCHEMAS, DETAIL_TYPES, parseEvent } from '../../lib/events/schemas.js';
import type { FunctionDeps } from '../../lib/functions/core.js';
import { observability } from '../../lib/functions/env.js';
import type { PoisonRecord } from '../../lib/functions/dead-letter.js';
import { candidateChange, leaseChange, parseTick } from '../../lib/functions/records.js';
import { parseTimerMessage, type TimerMessage } from '../../lib/functions/timer.js';
import { lambdaContext } from '../../lib/local/runtime.js';
import type { Candidate } from '../../lib/schemas/candidate.js';
import type { Lease } from '../../lib/schemas/lease.js';
import { ValidationError } from '../../lib/schemas/validation.js';
import { testTables, type TestTables } from '../support.js';
import { RUNS, attributeJunk, expectTypedOutcome, junk, mutate, mutations, rootOf } from './support.js';

let t: TestTables;
beforeAll(async () => {
  t = await testTables('fuzz-handlers');
});
afterAll(() => t.drop());

function deps(dead: PoisonRecord[] = []): FunctionDeps {
  return {
    coordinator: coordinatorDeps(t.client, t.names, { config: { ackWindowMs: 1_000 } }),
    timer: { schedule: async () => undefined },
    publish: async () => undefined,
    deadLetter: async (p) => void dead.push(p),
    ...observability('fuzz', 'SILENT'),
  };
}

const now = Date.now();
const candidate = (name: string, renewTime = now): Candidate => ({
  leaseName: 'fuzz-lease',
  name,
  binaryVersion: '1.31.0',
  emulationVersion: '1.30.0',
  preferredStrategies: ['OldestEmulationVersion'],
  renewTime,
  createdAt: now - 60_000,
  identity: `${name}_1`,
  revision: 3,
});
const lease = (renewTime = now): Lease => ({ name: 'fuzz-lease', holderIdentity: 'a', holderInstance: 'a_1', leaseDurationSeconds: 15, acquireTime: now - 60_000, renewTime, leaseTransitions: 1, fencingToken: 2, electedBy: 'coordinator', revision: 9 });

/** A well-formed MODIFY record: a plain renewal (the handlers read it and find nothing to do). */
function record(kind: 'lease' | 'candidate', seq: number): DynamoDBRecord {
  const [oldImg, newImg, keys] =
    kind === 'lease' ? [lease(now - 2_000), lease(now), { name: 'fuzz-lease' }] : [candidate('c', now - 2_000), candidate('c', now), { leaseName: 'fuzz-lease', name: 'c' }];
  return {
    eventID: `ev-${seq}`,
    eventName: 'MODIFY',
    eventVersion: '1.1',
    eventSource: 'aws:dynamodb',
    awsRegion: 'local',
    dynamodb: {
      ApproximateCreationDateTime: Math.floor(now / 1000),
      Keys: marshall(keys) as never,
      OldImage: marshall(oldImg) as never,
      NewImage: marshall(newImg) as never,
      SequenceNumber: String(100_000 + seq),
      StreamViewType: 'NEW_AND_OLD_IMAGES',
    },
  };
}

/** A way to spoil a record: a top-level field, a field of `dynamodb`, or an attribute of an image. */
const spoiler = fc.oneof(
  mutations(['eventID', 'eventName']).map((ms) => ({ where: 'record' as const, ms })),
  mutations(['Keys', 'NewImage', 'OldImage', 'ApproximateCreationDateTime']).map((ms) => ({ where: 'dynamodb' as const, ms })),
  fc.tuple(fc.constantFrom('NewImage' as const, 'OldImage' as const), mutations(['name', 'leaseName', 'renewTime', 'fencingToken', 'revision', 'leaseDurationSeconds', 'preferredStrategies', 'election', 'priority'], attributeJunk)).map(([image, ms]) => ({ where: image, ms })),
);
type Spoiler = typeof spoiler extends fc.Arbitrary<infer S> ? S : never;

function spoil(r: DynamoDBRecord, s: Spoiler | undefined): DynamoDBRecord {
  if (!s) return r;
  const copy = structuredClone(r) as unknown as Record<string, unknown> & { dynamodb: Record<string, unknown> };
  if (s.where === 'record') return { ...mutate(copy, s.ms), dynamodb: copy.dynamodb } as never;
  if (s.where === 'dynamodb') return { ...copy, dynamodb: { ...mutate(copy.dynamodb, s.ms), SequenceNumber: copy.dynamodb['SequenceNumber'] } } as never;
  return { ...copy, dynamodb: { ...copy.dynamodb, [s.where]: mutate(copy.dynamodb[s.where] as Record<string, unknown>, s.ms) } } as never;
}

const failures = (r: unknown) => ((r as { batchItemFailures?: { itemIdentifier: string }[] } | undefined)?.batchItemFailures ?? []).map((f) => f.itemIdentifier);

describe.each([
  { kind: 'lease' as const, parse: leaseChange, make: leaseStream, name: 'leaseStream' as const },
  { kind: 'candidate' as const, parse: candidateChange, make: candidateStream, name: 'candidateStream' as const },
])('$name handler', ({ kind, parse, make, name }) => {
  it('a malformed record is a ValidationError naming the field, never a TypeError', async () => {
    await fc.assert(
      fc.asyncProperty(spoiler, async (s) => {
        const r = spoil(record(kind, 1), s);
        // an image replaced by junk brings attribute names of its own: those are what gets named
        const imageKeys = [r.dynamodb?.NewImage, r.dynamodb?.OldImage].flatMap((img) => (img && typeof img === 'object' ? Object.keys(img) : []));
        await expectTypedOutcome(() => parse(r), {
          known: ['eventID', 'eventName', 'dynamodb', ...Object.keys(kind === 'lease' ? lease() : candidate('c')), 'name', 'leaseName', ...imageKeys],
        });
      }),
      RUNS,
    );
  });

  it('dead-letters exactly the records it cannot read, each with its content, and reports none failed', async () => {
    const dead: PoisonRecord[] = [];
    const handler = make(deps(dead));
    await fc.assert(
      fc.asyncProperty(fc.array(fc.option(spoiler, { nil: undefined, freq: 2 }), { minLength: 1, maxLength: 8 }), async (spoilers) => {
        dead.length = 0;
        const records = spoilers.map((s, i) => spoil(record(kind, i), s));
        const bad = records.filter((r) => {
          try {
            parse(r);
            return false;
          } catch (e) {
            expect(e).toBeInstanceOf(ValidationError);
            return true;
          }
        });
        const outcome = await handler({ Records: records }, lambdaContext(name)).then(
          (r) => ({ ok: true as const, failed: failures(r) }),
          (e: unknown) => ({ ok: false as const, error: e as Error & { recordErrors?: unknown[] } }),
        );
        expect(outcome).toEqual({ ok: true, failed: [] });
        expect(dead.map((p) => p.record)).toEqual(bad);
        for (const p of dead) expect(p.function).toBe(name);
      }),
      { numRuns: 60 },
    );
  });
});

describe('election timer', () => {
  const good = (): TimerMessage => ({ lease: 'fuzz-lease', electionId: 'fuzz-lease#1', deadline: now });
  const body = fc.oneof(
    fc.string({ maxLength: 30 }),
    fc.jsonValue({ maxDepth: 2 }).map((v) => JSON.stringify(v)),
    mutations(['lease', 'electionId', 'deadline']).map((ms) => JSON.stringify(mutate(good(), ms))),
    fc.constant(JSON.stringify(good())),
  );
  const message = (id: string, b: string): SQSRecord =>
    ({ messageId: id, receiptHandle: id, body: b, attributes: {} as SQSRecord['attributes'], messageAttributes: {}, md5OfBody: '', eventSource: 'aws:sqs', eventSourceARN: 'arn:aws:sqs:local:000000000000:timer', awsRegion: 'local' }) as SQSRecord;

  it('a malformed body is a ValidationError naming the field', async () => {
    await fc.assert(
      fc.asyncProperty(body, async (b) => {
        await expectTypedOutcome(() => parseTimerMessage(b, 'timer message'), { known: ['lease', 'electionId', 'deadline'] });
      }),
      RUNS,
    );
  });

  it('reports exactly the messages it cannot read', async () => {
    const handler = electionTimer(deps());
    await fc.assert(
      fc.asyncProperty(fc.array(body, { minLength: 1, maxLength: 6 }), async (bodies) => {
        const records = bodies.map((b, i) => message(`m${i}`, b));
        const bad = records.filter((r) => {
          try {
            parseTimerMessage(r.body, 'x');
            return false;
          } catch {
            return true;
          }
        });
        const outcome = await handler({ Records: records }, lambdaContext('electionTimer')).then(
          (r) => ({ ok: true as const, failed: failures(r) }),
          (e: unknown) => ({ ok: false as const, name: (e as Error).name }),
        );
        if (bad.length === records.length) expect(outcome).toEqual({ ok: false, name: 'FullBatchFailureError' });
        else expect(outcome).toEqual({ ok: true, failed: bad.map((r) => r.messageId) });
      }),
      { numRuns: 40 },
    );
  });

  it('regression: two invocations at once each answer for their own batch (they shared one BatchProcessor)', async () => {
    const handler = electionTimer(deps());
    const ok = JSON.stringify(good());
    const [a, b] = await Promise.allSettled([
      handler({ Records: [message('a1', ok), message('a2', 'not json')] }, lambdaContext('electionTimer')),
      handler({ Records: [message('b1', ok)] }, lambdaContext('electionTimer')),
    ]);
    expect(a).toEqual({ status: 'fulfilled', value: { batchItemFailures: [{ itemIdentifier: 'a2' }] } });
    expect(b).toEqual({ status: 'fulfilled', value: { batchItemFailures: [] } });
  });
});

describe('scheduled tick and event details', () => {
  const tick = { source: 'aws.events', 'detail-type': 'Scheduled Event', time: new Date(now).toISOString(), id: 'x', region: 'local', resources: [], account: '0', version: '0', detail: {} };

  it('a malformed scheduled event is a ValidationError naming the field; the handler refuses it before any work', async () => {
    const handler = coordinatorTick(deps());
    await fc.assert(
      fc.asyncProperty(fc.oneof(mutations(['source', 'detail-type', 'time']).map((ms) => mutate(tick, ms)), junk), async (event) => {
        const parsed = await expectTypedOutcome(() => parseTick(event), { known: ['source', 'detail-type', 'time'] });
        if (parsed === 'ok') return; // a valid tick: the full reconcile is the handlers tests' business
        await expect(handler(event as never, lambdaContext('coordinator'))).rejects.toBeInstanceOf(ValidationError);
      }),
      RUNS,
    );
  });

  it('parseEvent: an unknown detail-type or a bad detail is a ValidationError naming the field', async () => {
    const valid = { id: 'rec-1:leader-elected', lease: 'fuzz-lease', time: new Date(now).toISOString(), holder: 'a', fencingToken: 2, leaseTransitions: 1 };
    const keys = [...new Set(Object.values(DETAIL_SCHEMAS).flatMap((s) => Object.keys(s.shape)))];
    await fc.assert(
      fc.asyncProperty(fc.oneof(fc.constantFrom(...DETAIL_TYPES), fc.string({ maxLength: 20 })), fc.oneof(mutations(keys).map((ms) => mutate(valid, ms)), junk), async (type, detail) => {
        const e = await expectTypedOutcome(() => parseEvent(type, detail), { known: [...keys, 'detail-type'] });
        if (e instanceof ValidationError && !(DETAIL_TYPES as string[]).includes(type)) expect(e.fields.map(rootOf)).toEqual(['detail-type']);
      }),
      RUNS,
    );
  });
});

describe('regressions found by these properties (counterexamples kept as rows)', () => {
  it.each([
    { name: 'an attribute that is no AttributeValue ({"L":5}) was a TypeError from unmarshall', image: { ...marshall(candidate('c')), renewTime: { L: 5 } }, field: 'renewTime' },
    { name: 'an unknown type tag ({"Q":1}) was a plain Error', image: { ...marshall(candidate('c')), renewTime: { Q: 1 } }, field: 'renewTime' },
    { name: 'null was a TypeError', image: { ...marshall(candidate('c')), priority: null }, field: 'priority' },
  ])('$name: now a ValidationError naming the attribute', ({ image, field }) => {
    const r = record('candidate', 7);
    r.dynamodb!.NewImage = image as never;
    const e = (() => {
      try {
        candidateChange(r);
      } catch (err) {
        return err;
      }
    })();
    expect(e).toBeInstanceOf(ValidationError);
    expect((e as ValidationError).fields).toEqual([field]);
  });

  it('a MODIFY record with neither image parsed, then crashed the candidate handler (row = new ?? old); now refused naming both images, and dead-lettered', async () => {
    const r = record('candidate', 8);
    delete r.dynamodb!.NewImage;
    delete r.dynamodb!.OldImage;
    const e = await expectTypedOutcome(() => candidateChange(r));
    expect((e as ValidationError).fields).toEqual(['dynamodb.NewImage', 'dynamodb.OldImage']);
    const dead: PoisonRecord[] = [];
    const res = await candidateStream(deps(dead))({ Records: [record('candidate', 9), r] }, lambdaContext('candidateStream'));
    expect(failures(res)).toEqual([]);
    expect(dead.map((p) => p.eventID)).toEqual([r.eventID]);
  });
});

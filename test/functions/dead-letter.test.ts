/**
 * The poison-record message: the record itself, within SQS's 256 KB. A DynamoDB item may be
 * 400 KB and a record carries two images, so what does not fit is left out, oldest first, and
 * named.
 */
import type { DynamoDBRecord } from 'aws-lambda';
import { describe, expect, it } from 'vitest';
import { MAX_MESSAGE_BYTES, poisonMessage, poisonRecord, type PoisonRecord } from '../../lib/functions/dead-letter.js';
import { ValidationError } from '../../lib/schemas/validation.js';
import { timerQueueBody, type TimerQueueMessage } from '../../lib/functions/timer.js';

const image = (kb: number) => ({ name: { S: 'big' }, blob: { S: 'x'.repeat(kb * 1024) }, fencingToken: { S: 'seven' } });
const record = (oldKb: number, newKb: number): DynamoDBRecord =>
  ({ eventID: 'ev-1', eventName: 'MODIFY', dynamodb: { Keys: { name: { S: 'big' } }, SequenceNumber: '42', OldImage: image(oldKb), NewImage: image(newKb) } }) as unknown as DynamoDBRecord;
const error = new ValidationError('new image of lease stream record ev-1', [{ field: 'fencingToken', message: 'Invalid input: expected number, received string' }]);
const bytes = (s: string) => Buffer.byteLength(s, 'utf8');

describe('poisonMessage', () => {
  it('a record that fits goes whole', () => {
    const p = poisonRecord('leaseStream', record(1, 1), error, Date.UTC(2026, 0, 1));
    const m = JSON.parse(poisonMessage(p)) as PoisonRecord;
    expect(m).toEqual({ kind: 'poisonRecord', function: 'leaseStream', reason: error.message, issues: error.issues, eventID: 'ev-1', sequenceNumber: '42', at: '2026-01-01T00:00:00.000Z', record: JSON.parse(JSON.stringify(record(1, 1))) });
  });

  it.each([
    { name: 'two 200 KB images: the old one is left out', oldKb: 200, newKb: 200, omitted: ['dynamodb.OldImage'] },
    { name: 'a 300 KB new image: both images are left out', oldKb: 10, newKb: 300, omitted: ['dynamodb.OldImage', 'dynamodb.NewImage'] },
  ])('$name, and the message says so', ({ oldKb, newKb, omitted }) => {
    const body = poisonMessage(poisonRecord('leaseStream', record(oldKb, newKb), error, 0));
    expect(bytes(body)).toBeLessThanOrEqual(MAX_MESSAGE_BYTES);
    const m = JSON.parse(body) as PoisonRecord & { record: DynamoDBRecord };
    expect(m.omitted).toEqual(omitted);
    expect(m.issues).toEqual(error.issues);
    expect(m.record.dynamodb!.Keys).toEqual({ name: { S: 'big' } });
    if (!omitted.includes('dynamodb.NewImage')) expect(m.record.dynamodb!.NewImage!['fencingToken']).toEqual({ S: 'seven' });
  });

  /** What SQS takes in a message body (SendMessage: "Any characters not included in this list will be rejected"). */
  const SQS_BODY = /^[\x09\x0A\x0D\x20-\uD7FF\uE000-\uFFFD\u{10000}-\u{10FFFF}]*$/u;

  it('a record holding characters SQS refuses in a body (U+FFFE, U+FFFF; DynamoDB takes them) goes whole, escaped, and reads back the same', () => {
    const r = record(1, 1);
    r.dynamodb!.Keys = { name: { S: 'bad\uFFFFname' } };
    r.dynamodb!.NewImage!['name'] = { S: 'bad\uFFFFname' };
    r.dynamodb!.NewImage!['note'] = { S: '\uFFFE\u0001\uD800 ok \u{1F600}' };
    const body = poisonMessage(poisonRecord('leaseStream', r, error, 0));
    // before the fix: U+FFFE and U+FFFF went as they were, SendMessage failed, and the record was retried until Lambda gave up on it, its content lost
    expect(body).toMatch(SQS_BODY);
    expect((JSON.parse(body) as PoisonRecord).record).toEqual(JSON.parse(JSON.stringify(r)));
  });

  it('a timer queue message of events to publish again, holding U+FFFE or U+FFFF (an exotic holder name), is sent escaped and reads back the same', () => {
    const message = { republish: [{ detailType: 'Lease Released', detail: { lease: 'job', previousHolder: 'w\uFFFE\uFFFF' } }], since: 1, attempt: 1 } as unknown as TimerQueueMessage;
    const body = timerQueueBody(message);
    expect(body).toMatch(SQS_BODY);
    expect(JSON.parse(body)).toEqual(message);
  });

  it('a record that must be cut is cut by its escaped size', () => {
    const r = record(1, 1);
    r.dynamodb!.NewImage!['blob'] = { S: '\uFFFF'.repeat(60 * 1024) }; // 180 KB in UTF-8, 360 KB escaped
    const body = poisonMessage(poisonRecord('leaseStream', r, error, 0));
    expect(body).toMatch(SQS_BODY);
    expect(bytes(body)).toBeLessThanOrEqual(MAX_MESSAGE_BYTES);
    expect((JSON.parse(body) as PoisonRecord).omitted).toEqual(['dynamodb.OldImage', 'dynamodb.NewImage']);
  });

  it('a row refused for many long label names fits, whatever the issues hold: each field and message cut, 20 issues at most', () => {
    // found by a review: a session row whose 25 label names were 15 KB each made a message of
    // 305,390 bytes (the fallbacks cut the reason and the number of issues, never a field), refused by
    // SQS every time, and the lease stream retried the record without bound
    const long = (n: number) => `${n}`.padEnd(15_000, 'k');
    const issues = Array.from({ length: 25 }, (_, n) => ({ field: `labels.${long(n)}`, message: `label names must be at most 128 characters: ${long(n)}` }));
    const refused = new ValidationError('session row s of lease job', issues);
    const body = poisonMessage(poisonRecord('leaseStream', record(200, 200), { message: refused.message, issues }, 0));
    expect(bytes(body)).toBeLessThanOrEqual(MAX_MESSAGE_BYTES);
    const m = JSON.parse(body) as PoisonRecord;
    expect(m.issues).toHaveLength(20);
    expect(m.issues[0]!.field).toBe(`labels.0${'k'.repeat(504)}...(+14495 chars)`);
    // and the same issues as a ValidationError keeps them
    expect(bytes(poisonMessage(poisonRecord('leaseStream', record(200, 200), refused, 0)))).toBeLessThanOrEqual(MAX_MESSAGE_BYTES);
  });
});

/**
 * The poison-record message: the record itself, within SQS's 256 KB. A DynamoDB item may be
 * 400 KB and a record carries two images, so what does not fit is left out, oldest first, and
 * named.
 */
import type { DynamoDBRecord } from 'aws-lambda';
import { describe, expect, it } from 'vitest';
import { MAX_MESSAGE_BYTES, poisonMessage, poisonRecord, type PoisonRecord } from '../../lib/functions/dead-letter.js';
import { ValidationError } from '../../lib/schemas/validation.js';

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
});

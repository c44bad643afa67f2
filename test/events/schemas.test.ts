import { describe, expect, it } from 'vitest';
import { eventJsonSchemas } from '../../lib/events/json-schema.js';
import { DETAIL_SCHEMAS, DETAIL_TYPES, EVENT_SOURCE, parseEvent } from '../../lib/events/schemas.js';
import { ValidationError } from '../../lib/schemas/validation.js';

const ALL = [
  'Leader Elected',
  'Leader Changed',
  'Leader Preemption Requested',
  'Lease Released',
  'Leader Lost',
  'Election Started',
  'Election Failed',
  'Candidate Joined',
  'Candidate Expired',
];

describe('event schemas', () => {
  it('one source, nine detail-types named exactly', () => {
    expect(EVENT_SOURCE).toBe('conclave');
    expect([...DETAIL_TYPES].sort()).toEqual([...ALL].sort());
    expect(Object.keys(DETAIL_SCHEMAS).sort()).toEqual([...ALL].sort());
  });

  it.each(['draft-2020-12', 'draft-04', 'openapi-3.0'] as const)('a JSON Schema for every detail-type (%s)', (target) => {
    const schemas = eventJsonSchemas({ target });
    expect(Object.keys(schemas).sort()).toEqual([...ALL].sort());
    for (const t of ALL) {
      const s = schemas[t as keyof typeof schemas] as { type: string; title: string; required: string[]; properties: Record<string, { format?: string }>; additionalProperties?: unknown };
      expect(s.type).toBe('object');
      expect(s.title).toBe(t);
      expect(s.required).toEqual(expect.arrayContaining(['id', 'lease', 'time']));
      expect(s.properties['time']!.format).toBe('date-time');
      // Consumers with an older schema keep accepting events that gained an optional field.
      expect(s.additionalProperties).toBeUndefined();
    }
  });

  it("Leader Elected's electedBy says a successor is handed the term on a hand-off, or takes the lease vacant", () => {
    // a SIGTERMed leader's hand-over is published with electedBy 'successor', as a take of a vacant lease is
    const s = eventJsonSchemas()['Leader Elected'] as { properties: { electedBy: { description: string } } };
    expect(s.properties.electedBy.description).toBe(
      'coordinator: elected; successor: the designated successor, handed the term by the leader stepping down or taking the lease as it fell vacant; self: acquired directly (fallback or NoCoordination)',
    );
  });

  it('Leader Changed requires both holders', () => {
    const s = eventJsonSchemas()['Leader Changed'] as { required: string[] };
    expect(s.required).toEqual(expect.arrayContaining(['previousHolder', 'holder', 'fencingToken']));
  });

  it('Election Failed carries the fencing token it orders by (a review, 2026-12-07: none, and no electionId either where no election was opened)', () => {
    const s = eventJsonSchemas()['Election Failed'] as { required: string[]; properties: Record<string, { description?: string }> };
    expect(s.required).toEqual(expect.arrayContaining(['reason', 'message']));
    // optional only for events published by functions before 0.2.0 (redelivered, or republished from the timer queue after an upgrade)
    expect(s.properties['fencingToken']?.description).toBe('The lease’s token at the failure: orders it (none from functions before 0.2.0)');
    expect(parseEvent('Election Failed', { id: 'e', lease: 'jobs', time: '2026-01-01T12:00:00.000Z', reason: 'noValidCandidates', message: 'm' })).toMatchObject({ detailType: 'Election Failed', detail: { reason: 'noValidCandidates' } });
  });

  it("Lease Released does not claim the platform handler's term ends (those are Leader Lost)", () => {
    const s = eventJsonSchemas()['Lease Released'] as { description: string };
    expect(s.description).not.toMatch(/released by [^.]*platform handler/);
    expect(s.description).toMatch(/platform stop is Leader Lost/);
  });

  it('parseEvent reads a consumer event and names bad fields', () => {
    const detail = { id: 'r:lease-released', lease: 'jobs', time: '2026-01-01T12:00:00.000Z', previousHolder: 'a', fencingToken: 3 };
    expect(parseEvent('Lease Released', detail)).toEqual({ detailType: 'Lease Released', detail });
    expect(() => parseEvent('Lease Released', { ...detail, time: 1767268800000 })).toThrow(ValidationError);
    try {
      parseEvent('Lease Released', { ...detail, fencingToken: -1, previousHolder: undefined });
      expect.unreachable();
    } catch (e) {
      expect((e as ValidationError).fields.sort()).toEqual(['fencingToken', 'previousHolder']);
    }
    expect(() => parseEvent('Leader Left', detail)).toThrow(/not a Conclave detail-type/);
  });

  it('parseEvent given the whole EventBridge event (from JavaScript) says to pass its detail-type and detail', () => {
    const event = { source: EVENT_SOURCE, 'detail-type': 'Lease Released', detail: {} };
    // before: "[object Object]" is not a Conclave detail-type
    expect(() => parseEvent(event as never, undefined)).toThrow(
      "invalid Conclave event: detail-type: must be the event's detail-type, a string such as \"Leader Elected\", not an object: call parseEvent(event['detail-type'], event.detail)",
    );
  });
});

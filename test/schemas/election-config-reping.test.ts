/**
 * candidateRepingAfterMs must be below candidateStaleAfterMs. A review (2026-12-06, seventh):
 * `election: { candidateStaleAfterMs: 60000 }` was refused naming candidateRepingAfterMs, a field
 * the user never set, with no word that its default (15 minutes) is what conflicts.
 */
import { describe, expect, it } from 'vitest';
import { electionConfig } from '../../lib/schemas/config.js';
import { ValidationError } from '../../lib/schemas/validation.js';

const refusal = (input: Parameters<typeof electionConfig>[0]) => {
  try {
    electionConfig(input);
  } catch (e) {
    expect(e).toBeInstanceOf(ValidationError);
    return (e as ValidationError).issues;
  }
  throw new Error('taken');
};

describe('candidateRepingAfterMs at or above candidateStaleAfterMs', () => {
  it('left at its default: says the default is what conflicts, and to set it below too', () => {
    expect(refusal({ candidateStaleAfterMs: 60_000 })).toEqual([
      { field: 'candidateRepingAfterMs', message: expect.stringMatching(/is 900000 \(15 min\), its default when not given.*candidateStaleAfterMs \(60000\).*give candidateRepingAfterMs below 60000 too/) },
    ]);
  });

  it('given: says so as before, without speaking of a default', () => {
    const [issue] = refusal({ candidateStaleAfterMs: 120_000, candidateRepingAfterMs: 120_000 });
    expect(issue).toEqual({ field: 'candidateRepingAfterMs', message: expect.stringMatching(/^must be < candidateStaleAfterMs \(120000\)/) });
    expect(issue!.message).not.toMatch(/default/);
  });
});

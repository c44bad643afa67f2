/** `describe lease` on a broken row: what its repairs do to a holder still running (lib/cli/broken.ts). */
import { expect, it } from 'vitest';
import { brokenLeaseLines } from '../../lib/cli/broken.js';

it('a broken row\'s repairs say how a holder still running hears its term is over: at its next renewal, of the lease or of its session (the lease stream marks the term on it)', () => {
  const lines = brokenLeaseLines({ lease: 'x', message: 'invalid lease "x"', issues: [{ field: 'holderIdentity', message: 'expected string' }], row: { name: 'x', holderIdentity: 42, session: 's', fencingToken: 7 }, repair: ['aws dynamodb update-item …', 'aws dynamodb delete-item …'] }).join('\n');
  expect(lines).toMatch(/fix the fields named above in place \(.*a fix that removes the holder ends its term, and a holder still running stops at its next renewal\):\n {4}aws dynamodb update-item/);
  expect(lines).toMatch(/or delete the row \(a holder still running stops at its next renewal, of the lease or of its session, which tells it the term is over; the coordinator holds the next election for it, then writes a new row\):\n {4}aws dynamodb delete-item/);
});

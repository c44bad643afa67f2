/**
 * The election model-checked (./model.test.ts), its scopes of an operator deleting the lease row
 * and of a machine suspended (./scopes.ts DELETE_SCOPES): every state within each scope's depth
 * keeps the invariants, and these scopes reach the goals only they reach (./goals.ts DELETE_GOALS).
 * A file of its own, so it runs beside the elections' scopes.
 */
import { describe } from 'vitest';
import { checkScopes, DELETE_GOALS } from './goals.js';
import { DELETE_SCOPES } from './scopes.js';

describe("the election, model-checked: an operator's deletes and a suspended machine", () => {
  checkScopes(
    DELETE_SCOPES,
    [...DELETE_GOALS],
    "an operator's delete under a leading term, the election held for it, the row written again, a session-held term's end marked, the successor taking a row gone under its watch (a peer's redirect to a missing session among them), and a suspended machine's sleep counted, its heir taking over and its requests landing while it slept",
  );
});

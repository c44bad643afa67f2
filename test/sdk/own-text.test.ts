/**
 * The SDK's own messages are ASCII, as the CLI's are (test/cli/own-text.test.ts) and as the shared
 * schemas' are: a ValidationError, an error given to onError, a health check's message and a log
 * line reach terminals and log viewers, and `≥`, `–`, `—` or `…` there is a character a user cannot
 * type back, that a terminal may draw as another, and that the same message from the CLI or a
 * schema writes as `>=`, `-`, `...`. Every literal of the modules the SDK's entries load (lib/sdk/
 * and what it imports: the schemas, the stores) is judged, comments and schema descriptions apart.
 */
import { describe, expect, it } from 'vitest';
import { importGraph } from '../../scripts/import-graph.js';
import { expectOnlyAllowed, notAsciiInLiterals, type Allowed } from '../literals.js';

/** Literals outside ASCII that are data, never words of ours: how many in the file, and why. */
const NOT_ASCII_ALLOWED: Allowed = {
  'lib/sdk/migration.ts': { literals: 1, why: 'the byte order mark a JSON file may start with (U+FEFF), stripped before JSON.parse' },
};

const WRITE = 'write ASCII: ">=" for ≥, "<=" for ≤, "-" for – — or −, "..." for …, "+/-" for ±, "*" for ×, "\'" for ’';

describe("the SDK's own text is ASCII: its messages read the same as the CLI's and the schemas'", () => {
  it('no literal of @conclave/sdk or @conclave/sdk/push, or of a module they load, holds a character outside ASCII, but the allowed data', async () => {
    const entries = await Promise.all(['lib/sdk/index.ts', 'lib/sdk/push-entry.ts'].map((e) => importGraph(e)));
    const files = [...new Set(entries.flatMap((g) => g.internal))].filter((f) => f.endsWith('.ts')).sort();
    expect(files).toEqual(expect.arrayContaining(['lib/sdk/elector.ts', 'lib/sdk/candidate.ts', 'lib/sdk/fencing.ts', 'lib/sdk/health.ts', 'lib/sdk/push-channel.ts', 'lib/schemas/validation.ts']));
    expectOnlyAllowed(files, notAsciiInLiterals, NOT_ASCII_ALLOWED, WRITE);
  });
});

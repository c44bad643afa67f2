/**
 * @conclave/testing's and @conclave/cdk's own messages are ASCII, as the SDK's (test/sdk/own-text.test.ts)
 * and the CLI's (test/cli/own-text.test.ts) are: conclave-local's option errors, the local runtime's
 * refusals, the functions' log lines (which the local runtime runs as AWS does), a construct's
 * ValidationError or synth warning reach terminals and log viewers, where `≥`, `–`, `—` or `…` is a
 * character a user cannot type back, that a terminal may draw as another, and that the same message
 * from the CLI, the SDK or a schema writes as `>=`, `-`, `...`. Every literal of the modules each
 * package's entries load is judged, comments and schema descriptions apart (test/literals.ts).
 */
import { describe, expect, it } from 'vitest';
import { importGraph } from '../scripts/import-graph.js';
import { expectOnlyAllowed, notAsciiInLiterals, type Allowed } from './literals.js';

const WRITE = 'write ASCII: ">=" for ≥, "<=" for ≤, "-" for – — or −, "..." for …, "->" for →, "\'" for ’';

/** The modules `entries` load (their import graph), TypeScript only. */
async function loaded(entries: readonly string[]): Promise<string[]> {
  const graphs = await Promise.all(entries.map((e) => importGraph(e)));
  return [...new Set(graphs.flatMap((g) => g.internal))].filter((f) => f.endsWith('.ts')).sort();
}

/**
 * @conclave/cdk's literals outside ASCII that are no message: how many in the file, and why. An
 * EventBridge rule's description is a deployed resource's property, shown in the AWS console beside
 * the rule, never printed by the package: changing it would update every deployed rule for nothing.
 */
const CDK_ALLOWED: Allowed = {
  'infra/triggers.ts': { literals: 1, why: "an EventBridge rule's description, a deployed property (`Conclave: <detail types> → the <name> function`)" },
  'infra/discovery.ts': { literals: 1, why: "the discovery rule's description, a deployed property (`Conclave: <detail types> → the <name> function`)" },
};

/**
 * `npm start`'s story (lib/local/start.ts, lib/local/demo/): its lines are drawn on purpose, a
 * presentation pinned by test/start.test.ts (▶ a worker leads, ■ it stops, ▸ a story's heading, ·
 * between facts, ✓ and ✗ a check's verdict, → a client's path, — in a heading's sentence): kept, each
 * file's count exact. Its status lines and refusals (JOB_WINDOW's) are ASCII as the packages' are.
 * The history checker's verdict line (✗) is its report's, as the story's.
 */
const START_ALLOWED: Allowed = {
  'lib/local/demo/stories.ts': { literals: 14, why: "the story's headings (▸, —), leads and stops (▶ ·, ■), facts (·) and verdicts (✓, ✗)" },
  'lib/local/demo/load-balancer-story.ts': { literals: 3, why: "the load-balancer story's heading (▸), a client's path (→) and its facts (·)" },
  'lib/local/demo/scheduled-job-story.ts': { literals: 5, why: "the scheduled-job story's heading (▸, —) and its runs' marks (◆, ·)" },
  'lib/history/checker.ts': { literals: 1, why: "the history checker's verdict line (✗), as the story prints it" },
};

describe("@conclave/testing's and @conclave/cdk's own text is ASCII: their messages read as the CLI's and the SDK's", () => {
  it('no literal of @conclave/testing (its entry and conclave-local), or of a module they load, holds a character outside ASCII', async () => {
    const files = await loaded(['lib/testing/index.ts', 'lib/testing/bin.ts']);
    expect(files).toEqual(expect.arrayContaining(['lib/testing/index.ts', 'lib/local/runtime.ts', 'lib/local/debian-package.ts', 'lib/functions/core.ts', 'lib/stores/table-admin.ts']));
    expectOnlyAllowed(files, notAsciiInLiterals, {}, WRITE);
  });

  it('no literal of @conclave/cdk, or of a module it loads, holds a character outside ASCII, but the rules\' descriptions', async () => {
    const files = await loaded(['infra/index.ts']);
    expect(files).toEqual(expect.arrayContaining(['infra/index.ts', 'infra/settings.ts', 'infra/grants.ts', 'infra/push.ts', 'lib/discovery/wiring.ts']));
    expectOnlyAllowed(files, notAsciiInLiterals, CDK_ALLOWED, WRITE);
  });

  it("no literal of `npm start` (lib/local/start.ts), or of a module it loads, holds a character outside ASCII, but its story's drawing", async () => {
    const files = await loaded(['lib/local/start.ts']);
    expect(files).toEqual(expect.arrayContaining(['lib/local/start.ts', 'lib/local/demo/stories.ts', 'lib/local/demo/scheduled-job.ts']));
    expectOnlyAllowed(files, notAsciiInLiterals, START_ALLOWED, WRITE);
  });
});

/**
 * A worker of lease R writes up to 999 candidate rows of R the schema refuses (review, 2026-12-07,
 * fourteenth). Before: every reconcile of R not made by the tick logged each of them whole (with
 * 1,024-character keys, a 13.9 MB line), and every tick a line for each. Now a reconcile's line
 * names how many and the first ROWS_LOGGED; a tick names the first ROWS_LOGGED of each kind, one
 * line each, and counts the rest in one line.
 */
import { BatchWriteItemCommand, type WriteRequest } from '@aws-sdk/client-dynamodb';
import { marshall } from '@aws-sdk/util-dynamodb';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { makeHandler as coordinatorTick } from '../../functions/coordinator.js';
import { coordinatorDeps, type ReconcileOutcome } from '../../lib/coordinator/reconcile.js';
import { afterReconcile, ROWS_LOGGED, type FunctionDeps } from '../../lib/functions/core.js';
import { observability } from '../../lib/functions/env.js';
import { lambdaContext } from '../../lib/local/runtime.js';
import { ValidationError } from '../../lib/schemas/validation.js';
import { testTables, type TestTables } from '../support.js';

let t: TestTables;
beforeAll(async () => void (t = await testTables('refused-log')));
afterAll(() => t.drop());

function deps(): { d: FunctionDeps; warned: [string, Record<string, unknown>][] } {
  const d: FunctionDeps = {
    coordinator: coordinatorDeps(t.client, t.names),
    timer: { schedule: async () => undefined },
    publish: async () => undefined,
    deadLetter: async () => undefined,
    ...observability('test', 'SILENT'),
  };
  const warned: [string, Record<string, unknown>][] = [];
  const warn = d.logger.warn.bind(d.logger);
  d.logger.warn = ((message: string, extra: Record<string, unknown>) => (warned.push([message, extra]), warn(message, extra))) as typeof d.logger.warn;
  return { d, warned };
}

it(`a reconcile of a lease with 999 refused candidate rows logs how many, and names the first ${ROWS_LOGGED}`, async () => {
  const { d, warned } = deps();
  const invalid = Array.from({ length: 999 }, (_, i) => ({ key: { leaseName: 'R', name: `r${String(i).padStart(4, '0')}`.padEnd(1024, '-') }, error: new ValidationError(`candidate "R"/"r${i}"`, [{ field: 'binaryVersion', message: 'must be a string' }]) }));
  const o: ReconcileOutcome = { lease: 'R', decision: { kind: 'leaveAlone', reason: 'noCandidates' }, before: undefined, after: undefined, pinged: [], invalidCandidates: invalid, attempts: 1, at: Date.now() };
  await afterReconcile(d, o, 'candidate MODIFY');
  expect(warned.map(([m]) => m)).toEqual(['candidate rows that do not match the schema took no part']);
  const [, line] = warned[0]!;
  expect(line).toMatchObject({ lease: 'R', trigger: 'candidate MODIFY', refused: 999 }); // before: no count
  expect(line['invalid']).toEqual(invalid.slice(0, ROWS_LOGGED).map((i) => ({ key: i.key, error: i.error.message }))); // before: all 999
  expect(JSON.stringify(line).length).toBeLessThan(20_000); // before: ~1.1 MB here (13.9 MB with keys of control characters)
});

it(`a tick names the first ${ROWS_LOGGED} refused candidate rows, and counts the others in one line`, async () => {
  const now = Date.now();
  const rows = Array.from({ length: 30 }, (_, i) => ({ leaseName: 'R', name: `r${String(i).padStart(2, '0')}`, binaryVersion: 7, emulationVersion: '1.30.0', preferredStrategies: ['OldestEmulationVersion'], createdAt: now, renewTime: now, revision: 1 }));
  for (let i = 0; i < rows.length; i += 25) {
    let req: Record<string, WriteRequest[]> | undefined = { [t.names.candidates]: rows.slice(i, i + 25).map((r) => ({ PutRequest: { Item: marshall(r) } })) };
    while (req && Object.keys(req).length) req = (await t.client.send(new BatchWriteItemCommand({ RequestItems: req }))).UnprocessedItems;
  }
  const { d, warned } = deps();
  const r = (await coordinatorTick(d)({ source: 'aws.events', 'detail-type': 'Scheduled Event', time: new Date().toISOString() } as never, lambdaContext('coordinator'))) as { errors: unknown[] };
  expect(r.errors).toEqual([]);
  const perRow = warned.filter(([m]) => m === 'candidate row does not match its schema: it takes no part in elections');
  expect(perRow.map(([, x]) => (x['key'] as { name: string }).name)).toEqual(rows.slice(0, ROWS_LOGGED).map((x) => x.name)); // before: all 30
  expect(warned.filter(([m]) => m.startsWith('candidate rows that do not match their schema'))).toEqual([[`candidate rows that do not match their schema: 30, the first ${ROWS_LOGGED} named above`, { refused: 30 }]]);
});

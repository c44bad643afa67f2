/**
 * A row the schema refuses is told each tick in a warning of bounded size, however large the row.
 * Found by a review (confirmed on DynamoDB Local): a worker of a lease wrote candidate rows in its
 * partition with 300-character label names, kept them uncollected by bumping their renewTime, and
 * each tick logged each row's whole refusal: 5 rows of 368 KB made 1,994,370 bytes of warnings a
 * tick (the message held every issue, each field path a label name whole).
 */
import { PutItemCommand } from '@aws-sdk/client-dynamodb';
import { marshall } from '@aws-sdk/util-dynamodb';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { manualClock } from '../../lib/clock.js';
import { coordinatorDeps } from '../../lib/coordinator/reconcile.js';
import { onTick, type FunctionDeps } from '../../lib/functions/core.js';
import { observability } from '../../lib/functions/env.js';
import { testTables, type TestTables } from '../support.js';

const T0 = Date.UTC(2026, 10, 28);

let t: TestTables;
beforeEach(async () => {
  t = await testTables('refused-warn');
});
afterEach(() => t.drop());

describe('a refused row of many long label names', () => {
  it('is warned of once a tick, in a few KB: its first issues, each key cut, and how many more', async () => {
    const clock = manualClock(T0);
    const deps = coordinatorDeps(t.client, t.names, { clock });
    const row = { leaseName: 'job', emulationVersion: '1.30.0', binaryVersion: '1.30.0', preferredStrategies: ['OldestEmulationVersion'], renewTime: T0, createdAt: T0, revision: 1 };
    await t.client.send(new PutItemCommand({ TableName: t.names.candidates, Item: marshall({ ...row, name: 'a' }) }));
    // 1,000 label names of 300 characters: 300 KB, each name refused (at most 128)
    const labels = Object.fromEntries(Array.from({ length: 1_000 }, (_, i) => [`${i}`.padEnd(300, 'k'), 'v']));
    await t.client.send(new PutItemCommand({ TableName: t.names.candidates, Item: marshall({ ...row, name: 'evil', labels }) }));
    const warned: [string, Record<string, unknown>][] = [];
    const o = observability('test', 'SILENT');
    const warn = o.logger.warn.bind(o.logger);
    o.logger.warn = ((message: string, extra: Record<string, unknown>) => (warned.push([message, extra]), warn(message, extra))) as typeof o.logger.warn;
    const d: FunctionDeps = { coordinator: deps, timer: { schedule: async () => undefined }, publish: async () => undefined, deadLetter: async () => undefined, ...o };
    const r = await onTick(d, 600_000);
    expect(r.invalid.map((i) => i.key['name'])).toEqual(['evil']);
    const told = warned.filter(([, extra]) => JSON.stringify(extra.key) === JSON.stringify({ leaseName: 'job', name: 'evil' }));
    expect(told).toHaveLength(1);
    const [[, extra]] = told as [[string, Record<string, unknown>]];
    // before the fix: 332,496 characters, as large as the row
    expect(JSON.stringify(extra).length).toBeLessThan(4_096);
    expect(extra['error']).toMatch(/^invalid candidate "job"\/"evil" in table [^:]+: labels\.\d+k+\.\.\.\(\+236 chars\): Invalid key in record; .*; and 990 more issues$/);
  });
});

/**
 * The strategy `get leases` and `describe lease` show for a term: the one it began under. A term a
 * worker took itself finds the coordinator's record of an earlier election on the row (workers may
 * not write electedStrategy), which is not its strategy (a review of the events, 2026-12-06).
 */
import { describe, expect, it } from 'vitest';
import { describeLines } from '../../lib/cli/describe.js';
import { strategyOf } from '../../lib/cli/views.js';
import { ElectionConfigSchema } from '../../lib/schemas/config.js';
import { NOW, lease } from '../fixtures.js';

describe('the strategy shown for a term', () => {
  it.each([
    ['elected by the coordinator', { electedBy: 'coordinator', electedStrategy: 'OldestEmulationVersion' }, 'OldestEmulationVersion'],
    ['taken by a worker itself, an earlier election recorded on the row', { electedBy: 'self', electedStrategy: 'OldestEmulationVersion' }, '-'],
    ['handed to a successor, no operator strategy', { electedBy: 'successor', electedStrategy: 'OldestEmulationVersion' }, 'OldestEmulationVersion'],
    ['an operator strategy', { electedBy: 'self', electedStrategy: 'OldestEmulationVersion', strategy: 'NoCoordination' }, 'NoCoordination (operator)'],
  ] as const)('%s', (_, extra, shown) => {
    expect(strategyOf(lease('w1', { ...extra }))).toBe(shown);
  });

  it('describe lease: a term a worker took itself is elected "by itself", under no strategy the row recorded of an earlier election', () => {
    const held = lease('w1', { electedBy: 'self', electedStrategy: 'OldestEmulationVersion' });
    const lines = describeLines('component-A', { read: { key: { name: 'component-A' }, item: held, revision: held.revision ?? 1 }, candidates: [], session: undefined } as never, NOW, ElectionConfigSchema.parse({}));
    const elected = lines.find((l) => /^Elected:/.test(l));
    expect(elected).toBeDefined();
    expect(elected).not.toMatch(/OldestEmulationVersion/);
  });
});

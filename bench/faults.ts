/**
 * `npx tsx bench/faults.ts`: what a worker sends and reports under the faults users bring (issue
 * 36, item 1), on simulated time at client-go's timings (15/10/2 s): three coordinated electors, one
 * leading with a successor named, then the fault. Prints, per scenario, the lease reads the worst
 * process sent and the onError calls it made, beside the figures measured at 2508432 (before the
 * backoff). Asserts nothing (test/sdk/faults.test.ts holds the bounds).
 */
import { GetItemCommand, PutItemCommand } from '@aws-sdk/client-dynamodb';
import { marshall, unmarshall } from '@aws-sdk/util-dynamodb';
import type { ModelRequest } from '../sim/dynamodb-model/index.js';
import { Sim, type SimElector } from '../sim/harness.js';

process.env['POWERTOOLS_METRICS_DISABLED'] ??= 'true';

const L = 'job';
const CLIENT_GO = { leaseDurationMs: 15_000, renewDeadlineMs: 10_000, retryPeriodMs: 2_000 } as const;

async function group(seed: number) {
  const sim = await Sim.create({ seed, config: { ackWindowMs: 5_000, electedLeaseDurationSeconds: 5 } });
  sim.coordinator({ tickEveryMs: 1_000 });
  const errors = new Map<SimElector, Error[]>();
  const es = ['a', 'b', 'c'].map((id) => {
    const list: Error[] = [];
    const e = sim.elector(id, { leaseName: L, ...CLIENT_GO }, { errors: list });
    errors.set(e, list);
    return e;
  });
  await sim.until('a successor named', async () => (await sim.leases.read(L)).item?.successor, 120_000);
  return { sim, es, errors };
}

const onLeases = (sim: Sim, r: ModelRequest) => (r.input as { TableName?: string }).TableName === sim.names.leases;

interface Figure {
  scenario: string;
  windowS: number;
  reads: number;
  onError: number;
  before: string;
}

async function measure(scenario: string, windowMs: number, before: string, fault: (g: Awaited<ReturnType<typeof group>>) => Promise<void>): Promise<Figure> {
  const g = await group(1);
  const from = g.sim.clock.monotonic();
  const errorsBefore = new Map(g.es.map((e) => [e, g.errors.get(e)!.length]));
  await fault(g);
  await g.sim.run(windowMs);
  let reads = 0;
  let onError = 0;
  for (const e of g.es) {
    reads = Math.max(reads, e.machine.sent.filter((r) => r.operation === 'GetItem' && onLeases(g.sim, r) && r.at >= from).length);
    onError = Math.max(onError, g.errors.get(e)!.length - errorsBefore.get(e)!);
  }
  return { scenario, windowS: windowMs / 1000, reads, onError, before };
}

const denied = () => Object.assign(new Error('not authorized'), { name: 'AccessDeniedException', $fault: 'client', $metadata: { httpStatusCode: 400 } });
const outage = () => Object.assign(new Error('service unavailable'), { name: 'ServiceUnavailable', $fault: 'server', $metadata: { httpStatusCode: 503 } });

const figures = [
  await measure('AccessDenied on every lease GetItem', 30_000, '7,819 GetItems (≈260/s)', async ({ sim, es }) => {
    for (const e of es) e.machine.fault = (r) => (r.operation === 'GetItem' && onLeases(sim, r) ? denied() : undefined);
  }),
  await measure('a schema-invalid lease row', 30_000, '6,234 GetItems, 6,421 onError', async ({ sim }) => {
    const row = unmarshall((await sim.client.send(new GetItemCommand({ TableName: sim.names.leases, Key: marshall({ name: L }) }))).Item!);
    await sim.client.send(new PutItemCommand({ TableName: sim.names.leases, Item: marshall({ ...row, leaseTransitions: -1 }) }));
  }),
  await measure('DynamoDB down after start', 32_000, '86 onError', async ({ es }) => {
    for (const e of es) e.machine.fault = () => outage();
  }),
];

console.log('| scenario | window | lease reads (worst process) | onError (worst process) | at 2508432 |');
console.log('|---|---|---|---|---|');
for (const f of figures) console.log(`| ${f.scenario} | ${f.windowS} s | ${f.reads} | ${f.onError} | ${f.before} |`);
process.exit(0);

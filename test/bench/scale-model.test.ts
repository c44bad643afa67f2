/**
 * The scale model's decisions (bench/scale-model.ts, bench/scale.ts): who watches whose session
 * under each placement, how many shards a table's stream has, when a stream falls behind, which
 * AWS limit a deployment crosses, and reading a calibration run. Figures are not asserted, only
 * what follows from the model's own rules.
 */
import { describe, expect, it } from 'vitest';
import { calibrationFrom, CALIBRATION, deployments } from '../../bench/scale.js';
import { wiring } from '../../lib/wiring.js';
import { busiestShard, busyLease, itemBytes, LIMITS, MEASURED, scaleFigures, shardsFor, streamFigure, watchPairs, type Deployment } from '../../bench/scale-model.js';

describe('watchPairs', () => {
  it('cells: every process watches the other members of its cell, nobody else', () => {
    const w = watchPairs({ leases: 60, processes: 6, candidatesPerLease: 3, placement: 'cells' });
    expect(w).toEqual({ pairs: 12, maxWatchersOfOneSession: 2, maxSessionsWatchedByOneProcess: 2, maxCandidaciesOfOneProcess: 30 });
  });

  it('cells: processes left over stand for nothing', () => {
    const w = watchPairs({ leases: 60, processes: 7, candidatesPerLease: 3, placement: 'cells' });
    expect(w.pairs).toBe(12);
    expect(w.maxCandidaciesOfOneProcess).toBe(30);
  });

  it('random: three processes make at most every ordered pair; the same seed places the same way', () => {
    const d = { leases: 100, processes: 3, candidatesPerLease: 3, placement: 'random' as const };
    expect(watchPairs(d).pairs).toBe(6);
    expect(watchPairs({ ...d, processes: 30 })).toEqual(watchPairs({ ...d, processes: 30 }));
  });

  it('random placement over many processes watches far more sessions than cells', () => {
    const d = { leases: 3_000, processes: 300, candidatesPerLease: 3 };
    const random = watchPairs({ ...d, placement: 'random' });
    const cells = watchPairs({ ...d, placement: 'cells' });
    expect(cells.pairs).toBe(600); // 2 per process
    expect(random.pairs).toBeGreaterThan(5 * cells.pairs); // each process watches about 19 sessions, not 2
    expect(random.maxSessionsWatchedByOneProcess).toBeGreaterThan(2);
  });

  it('more candidates than processes is refused, naming the field', () => {
    expect(() => watchPairs({ leases: 1, processes: 2, candidatesPerLease: 3, placement: 'random' })).toThrow(/candidatesPerLease must be between 1 and processes \(2\)/);
  });
});

describe('shardsFor', () => {
  it('a small quiet table keeps the minimum; size and peak throughput add partitions', () => {
    expect(shardsFor(1e6, 10, 10, 4)).toBe(4);
    expect(shardsFor(55e9, 0, 0, 4)).toBe(6); // a partition per 10 GB
    expect(shardsFor(1e6, 17_200, 0, 4)).toBe(18); // a partition per 1,000 WCU/s
    expect(shardsFor(1e6, 0, 30_001, 4)).toBe(11); // a partition per 3,000 RCU/s
  });
});

describe('streamFigure', () => {
  const base = { shards: 4, parallelization: 1, batchSize: 100, pollIntervalMs: 250, burstRecords: 0, burstRecordMs: 60 };

  it('keeps up while each slot is busy less than all the time', () => {
    expect(streamFigure({ ...base, recordsPerSecond: 60, recordMs: 60 }).keepsUp).toBe(true); // 15/s a shard × 60 ms = 0.9
    expect(streamFigure({ ...base, recordsPerSecond: 67, recordMs: 60 }).keepsUp).toBe(false); // 1.005
  });

  it('a burst waits for its shard’s share, and the parallelization factor divides it', () => {
    expect(streamFigure({ ...base, recordsPerSecond: 0, recordMs: 1, burstRecords: 300 }).burstAgeSeconds).toBeCloseTo(0.25 + 75 * 0.06, 10);
    const ten = streamFigure({ ...base, parallelization: 10, recordsPerSecond: 0, recordMs: 1, burstRecords: 300 });
    expect(ten.concurrency).toBe(40);
    expect(ten.burstAgeSeconds).toBeCloseTo(0.25 + 8 * 0.06, 10);
  });

  it('records per invocation grow with the rate between polls, up to the batch size', () => {
    expect(streamFigure({ ...base, recordsPerSecond: 0.5, recordMs: 1 }).recordsPerInvocation).toBe(1);
    expect(streamFigure({ ...base, recordsPerSecond: 500, recordMs: 1 }).recordsPerInvocation).toBeCloseTo(31.25, 10);
    expect(streamFigure({ ...base, recordsPerSecond: 1e6, recordMs: 0 }).recordsPerInvocation).toBe(100);
  });
});

describe('scaleFigures', () => {
  const big: Deployment = { leases: 100_000, processes: 1_000, candidatesPerLease: 3, sessions: true, placement: 'random', grants: 'all' };

  it('session reads scale with watcher–session pairs, not leases', () => {
    const f = scaleFigures(big, CALIBRATION);
    const reads = f.bill.find((b) => b.kind.startsWith('session reads'))!;
    expect(reads.perMinute).toBeCloseTo((f.watch.pairs * MEASURED.session.sessionReadsPerPair) / big.leases, 10);
    const cells = scaleFigures({ ...big, placement: 'cells' }, CALIBRATION);
    expect(cells.watch.pairs).toBe(333 * 3 * 2); // 333 cells of 3, each member watching the other two
    expect(cells.dollarsPerLeaseMonth).toBeLessThan(f.dollarsPerLeaseMonth);
  });

  it('with every lease granted, a wake reaches every process; with a grant per lease, its candidates', () => {
    expect(scaleFigures(big, CALIBRATION).iot.deliveriesPerWake).toBe(1_000);
    expect(scaleFigures({ ...big, grants: 'leases' }, CALIBRATION).iot.deliveriesPerWake).toBe(3);
  });

  it("a lost process's wakes reach every connection when every lease is granted (each wake's lease topic and its 3 process-topic copies), only its co-candidates' otherwise", () => {
    const all = scaleFigures(big, CALIBRATION).iot;
    const scoped = scaleFigures({ ...big, grants: 'leases' }, CALIBRATION).iot;
    // a role of named leases receives the lease topic only (no grant on process topics)
    expect(scoped.burstDeliveriesPerConnectionPerSecond).toBeCloseTo((all.burstDeliveriesPerConnectionPerSecond / 4) * (2 / 999), 10);
    expect(all.burstOutboundPerSecond).toBeCloseTo(all.burstDeliveriesPerConnectionPerSecond * 1_000, 6);
    expect(scoped.burstOutboundPerSecond).toBeCloseTo((all.burstDeliveriesPerConnectionPerSecond / 4) * 3, 6);
  });

  it("channels given their Session (wakes to processes, as built): a wake reaches its 3 candidates' processes, a lost process's burst its co-candidates' only; uncoalesced", () => {
    const legacy = scaleFigures(big, CALIBRATION);
    const built = scaleFigures(big, CALIBRATION, undefined, { wakes: 'process' });
    const coalesced = scaleFigures({ ...big, placement: 'cells' }, CALIBRATION, undefined, { wakes: 'coalesced' });
    expect(built.iot.deliveriesPerWake).toBe(3);
    expect(built.iot.burstDeliveriesPerConnectionPerSecond).toBeCloseTo((legacy.iot.burstDeliveriesPerConnectionPerSecond / 4) * (2 / 999), 10);
    expect(built.iot.burstOutboundPerSecond).toBeLessThan(LIMITS.iotOutboundPerAccount.value);
    expect(built.dollarsPerLeaseMonth).toBeLessThan(legacy.dollarsPerLeaseMonth);
    // in cells a lost process's wakes all go to its two cell-mates: only coalescing (designed) brings them under 100/s
    expect(scaleFigures({ ...big, placement: 'cells' }, CALIBRATION, undefined, { wakes: 'process' }).iot.burstDeliveriesPerConnectionPerSecond).toBeGreaterThan(LIMITS.iotPublishPerConnection.value);
    expect(coalesced.iot.burstDeliveriesPerConnectionPerSecond).toBeLessThan(LIMITS.iotPublishPerConnection.value);
  });

  it('session rows of workers granted every lease are spread over 64 partition keys by process (the busiest holds 27 of 1,000); scoped ones one per scope', () => {
    const all = scaleFigures(big, CALIBRATION).partitions;
    const scoped = scaleFigures({ ...big, grants: 'leases' }, CALIBRATION).partitions;
    expect(busiestShard(1_000)).toBe(27);
    expect(all.sessionPartitionWritesPerSecond).toBeCloseTo((27 * MEASURED.session.sessionRenewalsPerProcess) / 60, 10);
    expect(scoped.sessionPartitionWritesPerSecond).toBeCloseTo(MEASURED.session.sessionRenewalsPerProcess / 60, 10);
    // random placement at this size: the whole table's session reads are over a partition's 3,000 RCU, the busiest shard's under
    expect(all.identitiesTableRcuPerSecond).toBeGreaterThan(LIMITS.partitionRcu.value);
    expect(all.sessionPartitionReadsPerSecond).toBeCloseTo((all.identitiesTableRcuPerSecond * 27) / 1_000, 6);
    expect(all.sessionPartitionReadsPerSecond).toBeLessThan(LIMITS.partitionRcu.value);
    expect(scoped.sessionPartitionReadsPerSecond).toBe(scoped.hottestSessionReadsPerSecond);
  });

  it('without sessions the leader renews its own row and nobody reads a session', () => {
    const f = scaleFigures({ leases: 1, processes: 3, candidatesPerLease: 3, sessions: false, placement: 'random', grants: 'leases' }, CALIBRATION);
    expect(f.partitions.leaseRowWritesPerSecond).toBeCloseTo(MEASURED.single.leaderRenewals / 60, 10);
    expect(f.watch.pairs).toBe(0);
    expect(f.bill.some((b) => b.kind.startsWith('session'))).toBe(false);
  });

  it('the parallelization factor multiplies stream concurrency', () => {
    expect(scaleFigures(big, CALIBRATION, undefined, { parallelization: 10 }).leaseStream.concurrency).toBe(10 * scaleFigures(big, CALIBRATION, undefined, { parallelization: 1 }).leaseStream.concurrency);
  });

  it('takes each stream’s factor from lib/wiring.ts when none is given', () => {
    const f = scaleFigures(big, CALIBRATION);
    expect(f.leaseStream.parallelization).toBe(wiring.leaseStream.trigger.parallelizationFactor);
    expect(f.candidateStream.parallelization).toBe(wiring.candidateStream.trigger.parallelizationFactor);
  });

  it('bad sizes are refused with the field named', () => {
    expect(() => scaleFigures({ ...big, leases: 0 }, CALIBRATION)).toThrow(/leases must be a whole number ≥ 1, got 0/);
    expect(() => scaleFigures({ ...big, processes: 2 }, CALIBRATION)).toThrow(/processes must be a whole number ≥ candidatesPerLease \(3\), got 2/);
  });

  it("the tick's round: 3 scans a part; in parts, the identities once more at its end (the leases and candidates not again while no identity expired); and the cursor's GetItem", () => {
    const tick = (f: ReturnType<typeof scaleFigures>) => f.bill.find((b) => b.kind.startsWith("coordinator's tick"))!;
    const onePart = scaleFigures({ ...big, leases: 10_000, processes: 100 }, CALIBRATION);
    expect(onePart.tick.segments).toBe(1);
    expect(tick(onePart).perMinute * 10_000).toBeCloseTo(3 + 1, 10);
    const f = scaleFigures(big, CALIBRATION);
    expect(f.tick.segments).toBe(10);
    expect(tick(f).perMinute * big.leases).toBeCloseTo(3 * 10 + 1 + 1, 10);
    // read units: the leases and candidates tables once (the calibration's), the identities 11 times, the cursor
    const identityRru = (big.processes * 300) / 4096; // a session row of 300 bytes (the model's)
    const rru = CALIBRATION.scanRruPerLease * big.leases + 11 * identityRru + 1;
    expect(tick(f).dollars).toBeCloseTo((rru * 0.125 * ((730 * 60) / 1e6)) / big.leases, 12);
    // pages: the three tables once, the identities again at each further part and at the round's end
    const pages = Math.ceil((big.leases * CALIBRATION.leaseBytes + 3 * big.leases * CALIBRATION.candidateBytes + big.processes * 300) / 1_048_576) + 2;
    expect(f.tick.scanPages).toBe(pages + 9 * 3 + 1);
  });

  it('the table’s deployments: sessions from 100 leases, every lease granted from 10,000', () => {
    expect(deployments('random').map((d) => [d.leases, d.processes, d.sessions, d.grants])).toEqual([
      [1, 3, false, 'leases'],
      [100, 3, true, 'leases'],
      [10_000, 100, true, 'all'],
      [100_000, 1_000, true, 'all'],
    ]);
  });
});

describe('busyLease', () => {
  it('an election pings every candidate in one burst; each answer queries them all', () => {
    const b = busyLease(1_000, { candidateBytes: 184 });
    expect(b.pingBurstWcu).toBe(1_000); // at the partition's 1,000 WCU/s
    expect(b.rruPerReconcile).toBe(45); // 184 KB, consistent: 4 KB a unit
    expect(b.answersDrainSeconds).toBeCloseTo(60, 10); // one shard, 60 ms a record
    expect(b.answersRcuPerSecond).toBeCloseTo(750, 10);
    expect(busyLease(3, { candidateBytes: 184 }).rruPerReconcile).toBe(1);
    expect(() => busyLease(0, { candidateBytes: 184 })).toThrow(/candidates must be a whole number ≥ 1, got 0/);
  });
});

describe('calibrationFrom', () => {
  it("fits the unchanged ticks' wall time and CPU in the leases, and reads the rows' sizes and the CPU per write", () => {
    const lines = [
      JSON.stringify({ type: 'rows', leases: 1000, leaseBytes: 207, candidateBytes: 184 }),
      JSON.stringify({ type: 'tick', label: 'unchanged', leases: 1000, wallMs: 3000, cpuMs: 600, rru: 200, wru: 0, heapGrowthMb: 1 }),
      JSON.stringify({ type: 'tick', label: 'all vacant', leases: 1000, wallMs: 90000, cpuMs: 8600, rru: 200, wru: 4000, heapGrowthMb: 12 }),
      JSON.stringify({ type: 'tick', label: 'settling', leases: 10000, wallMs: 1, cpuMs: 1, rru: 1, heapGrowthMb: 1 }),
      JSON.stringify({ type: 'tick', label: 'unchanged', leases: 10000, wallMs: 6000, cpuMs: 5000, rru: 2000, wru: 0, heapGrowthMb: 10 }),
      '',
    ];
    const c = calibrationFrom(lines);
    expect(c.unchanged.msPerLease).toBeCloseTo(3000 / 9000, 10);
    expect(c.unchanged.interceptMs).toBeCloseTo(3000 - 1000 * (3000 / 9000), 6);
    expect(c.cpuMsPerLease).toBeCloseTo(4400 / 9000, 10); // what a lease adds, not the ratio at one size
    expect(c).toMatchObject({ writeCpuMs: 2, heapMbPerLease: 0.001, scanRruPerLease: 0.2, leaseBytes: 207, candidateBytes: 184 });
  });

  it('with one size, the ratios of that tick', () => {
    const lines = [
      JSON.stringify({ type: 'rows', leases: 1000, leaseBytes: 207, candidateBytes: 184 }),
      JSON.stringify({ type: 'tick', label: 'unchanged', leases: 1000, wallMs: 3000, cpuMs: 600, rru: 200, wru: 0, heapGrowthMb: 1 }),
      JSON.stringify({ type: 'tick', label: 'all vacant', leases: 1000, wallMs: 90000, cpuMs: 8600, rru: 200, wru: 4000, heapGrowthMb: 12 }),
    ];
    expect(calibrationFrom(lines)).toMatchObject({ unchanged: { interceptMs: 0, msPerLease: 3 }, cpuMsPerLease: 0.6 });
  });

  it('a run without an unchanged tick, or without an all-vacant one beside it, is refused, saying what to run', () => {
    expect(() => calibrationFrom([JSON.stringify({ type: 'meta' })])).toThrow(/run npx tsx bench\/scale-calibrate.ts/);
    const noVacant = [JSON.stringify({ type: 'rows', leases: 10, leaseBytes: 1, candidateBytes: 1 }), JSON.stringify({ type: 'tick', label: 'unchanged', leases: 10, wallMs: 1, cpuMs: 1, rru: 1, wru: 0, heapGrowthMb: 0 })];
    expect(() => calibrationFrom(noVacant)).toThrow(/--vacant-at/);
  });
});

describe('itemBytes', () => {
  it('counts names and values as DynamoDB sizes them', () => {
    expect(itemBytes({ name: { S: 'lease-1' } })).toBe(4 + 7);
    expect(itemBytes({ n: { N: '1800000000000' } })).toBe(1 + 2); // "18" significant: one byte, plus one
    expect(itemBytes({ n: { N: '123456' } })).toBe(1 + 4);
    expect(itemBytes({ m: { M: { a: { S: 'xy' } } } })).toBe(1 + 3 + 1 + 1 + 2);
    expect(itemBytes({ b: { BOOL: true }, l: { L: [{ S: 'a' }, { S: 'b' }] } })).toBe(1 + 1 + 1 + 3 + 2 * (1 + 1));
  });
});

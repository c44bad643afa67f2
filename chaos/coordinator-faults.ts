/**
 * Faults on the coordinator's side of the local runtime, switched on and off by the harness:
 * through `decorate` (the functions' dependencies) a reconciler that crashes between its writes,
 * lost timer messages and failing publishes; through `intercept` (every trigger) an outage of the
 * functions and duplicated, reordered, held and late stream deliveries.
 */
import type { DynamoDBRecord, DynamoDBStreamEvent } from 'aws-lambda';
import { systemClock } from '../lib/clock.js';
import type { FunctionDeps } from '../lib/functions/core.js';
import type { FunctionName } from '../lib/wiring.js';
import type { LeaseStore } from '../lib/stores/lease-store.js';
import type { Rng } from './rng.js';
import type { Fault, StreamFaultKind } from './schedule.js';

/** The member of Fault whose kind includes K (stream faults share one member). */
type Windowed<K extends Fault['kind']> = Fault extends infer F ? (F extends { kind: infer FK } ? (K extends FK ? F : never) : never) : never;

export class CoordinatorFaults {
  /** What was injected, by kind: ticks skipped, batches duplicated, messages dropped, … */
  readonly injected: Record<string, number> = {};
  private down = 0;
  private up: { promise: Promise<void>; open: () => void } | undefined;
  private readonly active = new Map<Fault['kind'], Fault[]>();
  private readonly late = new Set<Promise<unknown>>();
  private readonly begun = new Set<Fault>();

  constructor(private readonly random: Rng) {}

  private count(what: string): void {
    this.injected[what] = (this.injected[what] ?? 0) + 1;
  }

  private current<K extends Fault['kind']>(kind: K): Windowed<K> | undefined {
    return this.active.get(kind)?.at(-1) as Windowed<K> | undefined;
  }

  private hit<K extends Fault['kind']>(kind: K): Windowed<K> | undefined {
    const f = this.current(kind);
    return f && 'rate' in f && this.random.chance(f.rate) ? f : undefined;
  }

  /** A coordinator-side fault comes into force (worker faults are the harness's). */
  begin(f: Fault): void {
    if (this.begun.has(f)) return;
    this.begun.add(f);
    if (f.kind === 'coordinatorDown') {
      if (this.down++ === 0) {
        let open!: () => void;
        const promise = new Promise<void>((r) => (open = r));
        this.up = { promise, open };
      }
      return;
    }
    this.active.set(f.kind, [...(this.active.get(f.kind) ?? []), f]);
  }

  /** Idempotent: the harness ends every fault again on its way out. */
  end(f: Fault): void {
    if (!this.begun.delete(f)) return;
    if (f.kind === 'coordinatorDown') {
      if (--this.down === 0) {
        this.up?.open();
        this.up = undefined;
      }
      return;
    }
    this.active.set(
      f.kind,
      (this.active.get(f.kind) ?? []).filter((x) => x !== f),
    );
  }

  /** Wraps the functions' dependencies (LocalRuntimeOptions.decorate). */
  readonly decorate = (d: FunctionDeps): FunctionDeps => {
    const original = d.coordinator.leases;
    const leases = Object.create(original) as LeaseStore;
    leases.write = async (read, patch) => {
      const crash = this.hit('reconcilerCrash');
      if (crash?.point === 'beforeLeaseWrite') {
        this.count('reconcilerCrash:beforeLeaseWrite');
        throw new Error('chaos: the reconciler crashed after its pings, before the lease write');
      }
      const written = await original.write(read, patch);
      if (crash?.point === 'afterLeaseWrite') {
        this.count('reconcilerCrash:afterLeaseWrite');
        throw new Error('chaos: the reconciler crashed after the lease write, before the timer was set');
      }
      return written;
    };
    return {
      ...d,
      coordinator: { ...d.coordinator, leases },
      timer: {
        schedule: async (m, delayMs) => {
          // an election's deadline is lost (a crash before its send); deferred events are not: SQS keeps what it took
          if (!('republish' in m) && this.hit('timerLoss')) return this.count('timerLoss');
          return d.timer.schedule(m, delayMs);
        },
      },
      publish: async (events) => {
        if (this.hit('publishFailure')) {
          this.count('publishFailure');
          throw new Error('chaos: EventBridge PutEvents failed');
        }
        return d.publish(events);
      },
    };
  };

  /** Stands between triggers and functions (LocalRuntimeOptions.intercept). */
  readonly intercept = async (name: FunctionName, event: unknown, invoke: (e: unknown) => Promise<unknown>): Promise<unknown> => {
    if (name === 'coordinator') {
      if (this.down) {
        this.count('coordinatorDown:tickSkipped');
        return undefined;
      }
      return invoke(event);
    }
    if (this.up) {
      this.count('coordinatorDown:deliveryHeld');
      while (this.up) await this.up.promise;
    }
    const isStream = name === 'candidateStream' || name === 'leaseStream';
    let e = event;
    if (isStream) {
      const delay = this.hit('streamDelay');
      if (delay) {
        this.count('streamDelay');
        await systemClock.sleep(delay.delayMs);
      }
      const records = (e as DynamoDBStreamEvent).Records;
      if (records.length > 1 && this.hit('streamReorder')) {
        this.count('streamReorder');
        e = { Records: interleaved(records, this.random) };
      }
    }
    const result = await invoke(e);
    if (this.hit('streamDuplicate')) {
      this.count(`streamDuplicate:${name}`);
      await invoke(structuredClone(e)).catch(() => undefined); // the redelivery's answer is not the poller's
    }
    const stale = isStream ? this.hit('streamStale') : undefined;
    if (stale) this.redeliverLater(stale, name, structuredClone(e), invoke);
    return result;
  };

  /** The same batch again after newer ones were handled: a stale, out-of-order delivery. */
  private redeliverLater(f: Windowed<StreamFaultKind>, name: FunctionName, e: unknown, invoke: (e: unknown) => Promise<unknown>): void {
    this.count(`streamStale:${name}`);
    const p = (async () => {
      await systemClock.sleep(f.delayMs);
      while (this.up) await this.up.promise;
      await invoke(e);
    })()
      .catch(() => undefined)
      .finally(() => this.late.delete(p));
    this.late.add(p);
  }

  /** Waits for late deliveries still on their way (before the runtime stops). */
  async drain(): Promise<void> {
    while (this.late.size) await Promise.all(this.late);
  }
}

/**
 * A batch's records in another order DynamoDB Streams could deliver: one item's records stay in the
 * order they were written (a shard holds an item's changes in order), records of different items
 * interleave at random (different shards, no order between them).
 */
export function interleaved(records: readonly DynamoDBRecord[], random: () => number): DynamoDBRecord[] {
  const byItem = new Map<string, DynamoDBRecord[]>();
  for (const r of records) {
    const key = JSON.stringify(r.dynamodb?.Keys ?? {});
    byItem.set(key, [...(byItem.get(key) ?? []), r]);
  }
  const queues = [...byItem.values()];
  const out: DynamoDBRecord[] = [];
  while (queues.length) {
    const i = Math.floor(random() * queues.length);
    out.push(queues[i]!.shift()!);
    if (queues[i]!.length === 0) queues.splice(i, 1);
  }
  return out;
}

/**
 * Which role a worker's DynamoDB request belongs to, named at send time for the request counter
 * (bench/requests.ts), from the request's table and key and from what the worker itself last
 * learned: `candidate` (the candidates table), `identity` (the identities table: per-process
 * heartbeats), and on the leases table `leader` while it leads that lease, `successor` while the
 * lease as it last read or wrote it names this worker its successor, `follower` otherwise. One
 * tracker serves one lease (examples/worker.ts) or many in one process (bench/multi-lease-worker.ts).
 */
import type { TableNames } from '../lib/schemas/config.js';

type Attr = { S?: string } | undefined;
type Item = Record<string, Attr> | undefined;

/** The lease named by a request's Key (`name`), if it names one. */
const keyName = (input: { Key?: unknown }): string | undefined => ((input.Key as Item)?.['name'])?.S;

export class RoleTracker {
  private readonly leads = new Set<string>();
  private readonly successorOf = new Set<string>();
  /** `leading(undefined, …)`: the one-lease worker, whose lines name no lease. */
  private leadingAny = false;

  constructor(
    private readonly tables: Pick<TableNames, 'leases' | 'candidates'> & Partial<Pick<TableNames, 'identities'>>,
    private readonly identity: string,
  ) {}

  /** The worker started (`true`) or stopped leading `lease` (undefined: its only lease). */
  leading(lease: string | undefined, on: boolean): void {
    if (lease === undefined) this.leadingAny = on;
    else if (on) this.leads.add(lease);
    else this.leads.delete(lease);
  }

  roleOf(input: { TableName?: string; Key?: unknown }): string {
    if (input.TableName === this.tables.candidates) return 'candidate';
    if (this.tables.identities !== undefined && input.TableName === this.tables.identities) return 'identity';
    const lease = keyName(input);
    if (this.leadingAny || (lease !== undefined && this.leads.has(lease))) return 'leader';
    return lease !== undefined && this.successorOf.has(lease) ? 'successor' : 'follower';
  }

  /** Learns from an answer on the leases table whether the lease names this worker successor. */
  observe(input: { TableName?: string; Key?: unknown }, output: unknown): void {
    if (input.TableName !== this.tables.leases) return;
    const o = output as { Item?: Item; Attributes?: Item } | undefined;
    const item = o?.Item ?? o?.Attributes;
    const lease = item?.['name']?.S ?? keyName(input);
    if (!item || lease === undefined) return;
    if (item['successor']?.S === this.identity) this.successorOf.add(lease);
    else this.successorOf.delete(lease);
  }
}

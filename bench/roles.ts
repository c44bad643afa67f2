/**
 * Which role a worker's DynamoDB request belongs to, named at send time for the request counter
 * (bench/requests.ts), from the request's table, key and command and from what the worker itself
 * last learned: `candidate` (the candidates table); on the identities table, a process session's
 * row (component `conclave-session`, lib/sdk/session.ts) is `session-renewal` for a write (the
 * session's creation, renewals and deletion) and `session-read` for a read (the electors' shared
 * reads of a holder's session; the session's own clock probes), any other row `identity`
 * (per-process heartbeats); and on the leases table `leader` while it leads that lease,
 * `successor` while the lease as it last read or wrote it names this worker its successor,
 * `second-successor` while it names it second successor (it watches the term as closely: issue 38),
 * `follower` otherwise. One tracker serves one lease (lib/local/demo/worker.ts) or many in one process
 * (bench/multi-lease-worker.ts).
 */
import type { TableNames } from '../lib/schemas/config.js';
import { isSessionComponent } from '../lib/schemas/identity.js';
import { READ_COMMANDS } from './requests.js';

type Attr = { S?: string } | undefined;
type Item = Record<string, Attr> | undefined;

/** The lease named by a request's Key (`name`), if it names one. */
const keyName = (input: { Key?: unknown }): string | undefined => ((input.Key as Item)?.['name'])?.S;
/** The identities row's component, from a request's Key (reads, updates, deletes) or Item (puts). */
const componentOf = (input: { Key?: unknown; Item?: unknown }): string | undefined => ((input.Key ?? input.Item) as Item)?.['component']?.S;

export class RoleTracker {
  private readonly leads = new Set<string>();
  private readonly successorOf = new Set<string>();
  private readonly secondSuccessorOf = new Set<string>();
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

  /** `command`: the request's command without its `Command` suffix (GetItem, UpdateItem…), as the counter names it. */
  roleOf(input: { TableName?: string; Key?: unknown; Item?: unknown }, command: string): string {
    if (input.TableName === this.tables.candidates) return 'candidate';
    if (this.tables.identities !== undefined && input.TableName === this.tables.identities) {
      if (!isSessionComponent(componentOf(input) ?? '')) return 'identity';
      return READ_COMMANDS.has(command) ? 'session-read' : 'session-renewal';
    }
    const lease = keyName(input);
    if (this.leadingAny || (lease !== undefined && this.leads.has(lease))) return 'leader';
    if (lease !== undefined && this.successorOf.has(lease)) return 'successor';
    return lease !== undefined && this.secondSuccessorOf.has(lease) ? 'second-successor' : 'follower';
  }

  /** Learns from an answer on the leases table whether the lease names this worker successor, or second successor. */
  observe(input: { TableName?: string; Key?: unknown }, output: unknown): void {
    if (input.TableName !== this.tables.leases) return;
    const o = output as { Item?: Item; Attributes?: Item } | undefined;
    const item = o?.Item ?? o?.Attributes;
    const lease = item?.['name']?.S ?? keyName(input);
    if (!item || lease === undefined) return;
    if (item['successor']?.S === this.identity) this.successorOf.add(lease);
    else this.successorOf.delete(lease);
    if (item['secondSuccessor']?.S === this.identity) this.secondSuccessorOf.add(lease);
    else this.secondSuccessorOf.delete(lease);
  }
}

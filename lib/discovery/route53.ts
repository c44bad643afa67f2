/**
 * Leader names in Route 53: a simple record per lease (the record name, `{lease}` replaced), whose
 * type follows the leader's address: A for an IPv4 address, AAAA for IPv6, CNAME for a host name.
 * DNS carries no port: clients know it, or use Cloud Map (AWS_INSTANCE_PORT). The record is the
 * construct's alone: only its A, AAAA and CNAME records at that name are read and changed.
 */
import { ChangeResourceRecordSetsCommand, ListResourceRecordSetsCommand, type Change, type ResourceRecordSet, type Route53Client } from '@aws-sdk/client-route-53';
import { systemClock, type Clock } from '../clock.js';
import { ValidationError } from '../schemas/validation.js';
import type { LeaderNaming, LeaderTarget } from './naming.js';
import { dnsNameIssue, LEASE_PLACEHOLDER, normalizeDnsName, recordNameOf } from './wiring.js';

/** The record types a leader's name may have: the ones the function deletes when the type changes or the term ends. */
export const MANAGED_TYPES = ['A', 'AAAA', 'CNAME'] as const;
type ManagedType = (typeof MANAGED_TYPES)[number];

/** A ChangeResourceRecordSets whose DELETE met a record changed since it was listed (a concurrent writer): list and change again, this many times in all. */
const CHANGE_ATTEMPTS = 3;

export interface Route53NamingOptions {
  readonly hostedZoneId: string;
  /** Fully qualified, with `{lease}` where each lease has a record of its own. */
  readonly recordName: string;
  readonly ttlSeconds: number;
  /** The leases the deployment names (its leaseNames); undefined: every lease. */
  readonly leases?: ReadonlySet<string> | undefined;
}

/**
 * Why Route 53 gives a lease no record (LeaderNaming.leaseIssue), or undefined. Its record name
 * must be a DNS name, and no other lease's: DNS names ignore case, so leases whose names differ only
 * in case (`Orders`, `orders`) would share one record, each lease's terms pointing it at their
 * leader and deleting it at their end, while each lease's fencing order is its own. With
 * leaseNames, only those leases are named: one that shares its record with another of them is
 * refused, both (synth refuses the pair first). With every lease named, each is named (below), and
 * one record is held by one of the leases that share it at a time (sharedName). One record name with
 * no `{lease}` is one lease's: with every lease, none.
 */
function route53LeaseIssue(o: Pick<Route53NamingOptions, 'recordName' | 'leases'>): (lease: string) => string | undefined {
  // the named leases by record name, once: judged at every event and every swept row
  const byName = new Map<string, string[]>();
  for (const l of o.leases ?? []) {
    const name = recordNameOf(o.recordName, l);
    byName.set(name, [...(byName.get(name) ?? []), l]);
  }
  return (lease) => {
    const name = recordNameOf(o.recordName, lease);
    const issue = dnsNameIssue(name);
    if (issue) return `its record name ${name} ${issue}; Route 53 names only leases whose names are host-name labels (leaderDiscovery.leaseNames takes no other)`;
    if (o.leases) {
      const other = byName.get(name)?.find((m) => m !== lease);
      return other === undefined ? undefined : `its record name ${name} is lease "${other}"'s too (DNS names ignore case): neither is named; give leaderDiscovery.leaseNames leases whose record names differ`;
    }
    // With every lease, one that shares its record with another by case alone cannot be told here
    // (the function sees one lease at a time), and refusing every upper-case name froze an upgraded
    // deployment's record of such a lease on its old leader (a review, 2026-12-07, twelfth): each
    // is named, and the record is written only by the lease that holds it (sharedName, apply.ts).
    if (!o.recordName.includes(LEASE_PLACEHOLDER)) return `the record name ${name} has no ${LEASE_PLACEHOLDER}, so every lease would share it: give the one lease it names in leaderDiscovery.leaseNames`;
    return undefined;
  };
}

/** The record that names `target`. */
export function leaderRecord(name: string, target: LeaderTarget, ttlSeconds: number): ResourceRecordSet {
  const type: ManagedType = target.address.kind === 'ipv4' ? 'A' : target.address.kind === 'ipv6' ? 'AAAA' : 'CNAME';
  return { Name: `${name}.`, Type: type, TTL: ttlSeconds, ResourceRecords: [{ Value: target.address.host }] };
}

const sameValue = (a: string | undefined, b: string | undefined) => a !== undefined && b !== undefined && normalizeDnsName(a) === normalizeDnsName(b);
const sameRecord = (a: ResourceRecordSet, b: ResourceRecordSet) =>
  a.Type === b.Type && a.TTL === b.TTL && a.ResourceRecords?.length === 1 && b.ResourceRecords?.length === 1 && sameValue(a.ResourceRecords[0]?.Value, b.ResourceRecords[0]?.Value);

/** What a listing holds, to tell a batch refused on its own merits (the records as they were) from one that lost a race. */
const listed = (records: readonly ResourceRecordSet[]): string => JSON.stringify(records.map((r) => [r.Type, r.TTL, r.ResourceRecords?.map((v) => v.Value), r.AliasTarget?.DNSName]));

/**
 * Route 53 as a LeaderNaming: a name is pointed by one change batch (DELETE of the record of
 * another type, if any, and UPSERT of the new one: atomic, so no moment without a record), and
 * cleared by DELETE of what is there. A DELETE must name the record exactly, so the records are
 * listed first; if another writer changed them in between, Route 53 refuses the batch
 * (InvalidChangeBatch) and this lists and changes again. A batch refused with the records as they
 * were is refused for what it writes (a CNAME where the zone has another record at the name, a TXT
 * say): the name is then cleared, and `point` resolves to Route 53's reason, as Cloud Map's names
 * are cleared for a target it cannot register: a previous leader's address would be wrong. Each
 * call is bounded by `withinMs` on `clock`.
 */
export function route53Naming(client: Route53Client, o: Route53NamingOptions, clock: Clock = systemClock): LeaderNaming {
  /** The lease's record name; a lease with no record of its own (route53LeaseIssue) is refused before any call: its writes would be another lease's. */
  const leaseIssue = route53LeaseIssue(o);
  const nameOf = (lease: string): string => {
    const issue = leaseIssue(lease);
    if (issue) throw new ValidationError(`Route 53 record of lease "${lease}"`, [{ field: 'recordName', message: issue }]);
    return recordNameOf(o.recordName, lease);
  };
  /** The construct's records at `name`: simple A, AAAA and CNAME records. */
  const current = async (name: string, signal: AbortSignal | undefined): Promise<ResourceRecordSet[]> => {
    const out = await client.send(new ListResourceRecordSetsCommand({ HostedZoneId: o.hostedZoneId, StartRecordName: name, MaxItems: 10 }), { abortSignal: signal });
    return (out.ResourceRecordSets ?? []).filter((r) => normalizeDnsName(r.Name ?? '') === name && (MANAGED_TYPES as readonly string[]).includes(r.Type ?? '') && r.SetIdentifier === undefined);
  };
  /**
   * Lists, then changes what `plan` says: again, after a lost race, up to CHANGE_ATTEMPTS times.
   * Returns Route 53's refusal of a batch it refused with the records unchanged (no race).
   */
  const change = async (name: string, plan: (records: ResourceRecordSet[]) => Change[], signal: AbortSignal | undefined): Promise<Error | undefined> => {
    let records = await current(name, signal);
    for (let attempt = 1; ; attempt++) {
      const changes = plan(records);
      if (!changes.length) return undefined;
      try {
        await client.send(new ChangeResourceRecordSetsCommand({ HostedZoneId: o.hostedZoneId, ChangeBatch: { Comment: 'Conclave leader discovery', Changes: changes } }), { abortSignal: signal });
        return undefined;
      } catch (e) {
        if (!(e instanceof Error && e.name === 'InvalidChangeBatch')) throw e;
        const now = await current(name, signal);
        if (listed(now) === listed(records)) return e; // nobody changed them: refused for what it writes
        if (attempt >= CHANGE_ATTEMPTS) throw e;
        records = now;
      }
    }
  };
  /** `fn` with a signal that ends its calls `withinMs` from now on `clock` (none without it); none sent when no time is left. */
  const within = async <T>(withinMs: number | undefined, what: string, fn: (signal: AbortSignal | undefined) => Promise<T>): Promise<T> => {
    if (withinMs === undefined) return fn(undefined);
    const late = new AbortController();
    const why = new Error(`Route 53 ${what} was not over within ${Math.max(0, withinMs)} ms, the invocation's time left: the retry writes the name again`);
    if (withinMs <= 0) throw why;
    const timer = clock.setTimer(withinMs, () => late.abort(why));
    try {
      return await fn(late.signal);
    } catch (e) {
      throw late.signal.aborted ? why : e;
    } finally {
      timer.cancel();
    }
  };
  const deleteAll = (records: ResourceRecordSet[]) => records.map((r): Change => ({ Action: 'DELETE', ResourceRecordSet: r }));
  return {
    describe: `Route 53 zone ${o.hostedZoneId} (${o.recordName})`,
    leaseIssue,
    // the record name, lower case: `Orders`' and `orders`' one record
    sharedName: (lease) => ({ name: recordNameOf(o.recordName, lease), given: o.leases !== undefined }),
    async point(lease, target, withinMs) {
      const wanted = leaderRecord(nameOf(lease), target, o.ttlSeconds);
      const name = normalizeDnsName(wanted.Name!);
      return within(withinMs, `change of lease "${lease}"'s record`, async (signal) => {
        const refused = await change(
          name,
          (records) =>
            records.length === 1 && sameRecord(records[0]!, wanted)
              ? []
              : [...records.filter((r) => r.Type !== wanted.Type).map((r): Change => ({ Action: 'DELETE', ResourceRecordSet: r })), { Action: 'UPSERT', ResourceRecordSet: wanted }],
          signal,
        );
        if (!refused) return undefined;
        const failed = await change(name, deleteAll, signal);
        if (failed) throw failed;
        return `it refused the ${wanted.Type} record (${refused.message})`;
      });
    },
    async clear(lease, withinMs) {
      const name = nameOf(lease);
      return within(withinMs, `deletion of lease "${lease}"'s record`, async (signal) => {
        const refused = await change(name, deleteAll, signal);
        if (refused) throw refused;
      });
    },
  };
}

/**
 * Leader names in Route 53: a simple record per lease (the record name, `{lease}` replaced), whose
 * type follows the leader's address: A for an IPv4 address, AAAA for IPv6, CNAME for a host name.
 * DNS carries no port: clients know it, or use Cloud Map (AWS_INSTANCE_PORT). The record is the
 * construct's alone: only its A, AAAA and CNAME records at that name are read and changed.
 */
import { ChangeResourceRecordSetsCommand, ListResourceRecordSetsCommand, type Change, type ResourceRecordSet, type Route53Client } from '@aws-sdk/client-route-53';
import { ValidationError } from '../schemas/validation.js';
import type { LeaderNaming, LeaderTarget } from './naming.js';
import { dnsNameIssue, normalizeDnsName, recordNameOf } from './wiring.js';

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
}

/** The record that names `target`. */
export function leaderRecord(name: string, target: LeaderTarget, ttlSeconds: number): ResourceRecordSet {
  const type: ManagedType = target.address.kind === 'ipv4' ? 'A' : target.address.kind === 'ipv6' ? 'AAAA' : 'CNAME';
  return { Name: `${name}.`, Type: type, TTL: ttlSeconds, ResourceRecords: [{ Value: target.address.host }] };
}

const sameValue = (a: string | undefined, b: string | undefined) => a !== undefined && b !== undefined && normalizeDnsName(a) === normalizeDnsName(b);
const sameRecord = (a: ResourceRecordSet, b: ResourceRecordSet) =>
  a.Type === b.Type && a.TTL === b.TTL && a.ResourceRecords?.length === 1 && b.ResourceRecords?.length === 1 && sameValue(a.ResourceRecords[0]?.Value, b.ResourceRecords[0]?.Value);

/**
 * Route 53 as a LeaderNaming: a name is pointed by one change batch (DELETE of the record of
 * another type, if any, and UPSERT of the new one: atomic, so no moment without a record), and
 * cleared by DELETE of what is there. A DELETE must name the record exactly, so the records are
 * listed first; if another writer changed them in between, Route 53 refuses the batch
 * (InvalidChangeBatch) and this lists and changes again.
 */
export function route53Naming(client: Route53Client, o: Route53NamingOptions): LeaderNaming {
  const nameOf = (lease: string): string => {
    const name = recordNameOf(o.recordName, lease);
    const issue = dnsNameIssue(name);
    if (issue) throw new ValidationError(`Route 53 record of lease "${lease}"`, [{ field: 'recordName', message: `${name} ${issue}; give the construct's leaderDiscovery.leaseNames only leases whose names are host-name labels` }]);
    return name;
  };
  /** The construct's records at `name`: simple A, AAAA and CNAME records. */
  const current = async (name: string): Promise<ResourceRecordSet[]> => {
    const out = await client.send(new ListResourceRecordSetsCommand({ HostedZoneId: o.hostedZoneId, StartRecordName: name, MaxItems: 10 }));
    return (out.ResourceRecordSets ?? []).filter((r) => normalizeDnsName(r.Name ?? '') === name && (MANAGED_TYPES as readonly string[]).includes(r.Type ?? '') && r.SetIdentifier === undefined);
  };
  /** Lists, then changes what `plan` says: again, after a lost race, up to CHANGE_ATTEMPTS times. */
  const change = async (name: string, plan: (records: ResourceRecordSet[]) => Change[]): Promise<void> => {
    for (let attempt = 1; ; attempt++) {
      const changes = plan(await current(name));
      if (!changes.length) return;
      try {
        await client.send(new ChangeResourceRecordSetsCommand({ HostedZoneId: o.hostedZoneId, ChangeBatch: { Comment: 'Conclave leader discovery', Changes: changes } }));
        return;
      } catch (e) {
        if (!(e instanceof Error && e.name === 'InvalidChangeBatch') || attempt >= CHANGE_ATTEMPTS) throw e;
      }
    }
  };
  return {
    describe: `Route 53 zone ${o.hostedZoneId} (${o.recordName})`,
    async point(lease, target) {
      const wanted = leaderRecord(nameOf(lease), target, o.ttlSeconds);
      await change(normalizeDnsName(wanted.Name!), (records) =>
        records.length === 1 && sameRecord(records[0]!, wanted)
          ? []
          : [...records.filter((r) => r.Type !== wanted.Type).map((r): Change => ({ Action: 'DELETE', ResourceRecordSet: r })), { Action: 'UPSERT', ResourceRecordSet: wanted }],
      );
    },
    async clear(lease) {
      await change(nameOf(lease), (records) => records.map((r): Change => ({ Action: 'DELETE', ResourceRecordSet: r })));
    },
  };
}

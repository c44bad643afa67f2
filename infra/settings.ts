/**
 * The construct's props that are data, validated with zod when the construct is created (field
 * names are the props' names, so an error names the prop to fix).
 */
import { RemovalPolicy, Token } from 'aws-cdk-lib';
import * as logs from 'aws-cdk-lib/aws-logs';
import * as z from 'zod';
import { Name } from '../lib/schemas/common.js';
import { ValidationError, everyProblem, unknownKeyHint } from '../lib/schemas/validation.js';
import { ElectionConfigSchema, TableNamesSchema } from '../lib/schemas/config.js';
import { dnsNameIssue, LEASE_PLACEHOLDER, normalizeDnsName, qualifiedRecordName, recordNameOf } from '../lib/discovery/wiring.js';
import { COORDINATOR_COMPONENT, isSessionComponent } from '../lib/schemas/session-partition.js';

/** A table name prefix: `<prefix>-candidates` must still be a DynamoDB table name. */
export const TablePrefixSchema = z.string().regex(/^[A-Za-z0-9_.-]{1,240}$/, 'must be 1-240 of A-Z a-z 0-9 _ . - (a table name is prefix + "-candidates")');

/**
 * `schema`, or a token (a CfnParameter, another construct's attribute): its value is known at
 * deploy time only, and CloudFormation checks it then.
 */
const orToken = (schema: z.ZodType<string>) =>
  z.string().superRefine((v, ctx) => {
    if (Token.isUnresolved(v)) return;
    for (const i of schema.safeParse(v).error?.issues ?? []) ctx.addIssue({ code: 'custom', message: i.message });
  });

/**
 * Throws a ValidationError naming each token (a CfnParameter, another resource's attribute) in
 * `data` outside `deployTime` (paths such as `tableNames.leases`, `*` for any one key): values the
 * construct computes with at synth (hashes, IAM conditions, JSON in an environment), which a token
 * failed deep in their own checks, with advice that did not fit ("must be >= 1, not the number
 * -1.888e+289"). Plain objects and arrays are looked into; anything else (a construct) is not.
 */
export function refuseTokens(data: unknown, deployTime: readonly string[], subject: string): void {
  const issues: { field: string; message: string }[] = [];
  const allowed = (path: string) => deployTime.some((p) => p === path || (p.endsWith('.*') && path.startsWith(p.slice(0, -1)) && !path.slice(p.length - 1).includes('.')));
  const walk = (v: unknown, path: string): void => {
    if ((typeof v === 'string' || typeof v === 'number') && Token.isUnresolved(v)) {
      if (!allowed(path)) issues.push({ field: path, message: 'must be known at synth, not a token (a CfnParameter, another resource\'s attribute): the construct computes with it (names, IAM conditions, the functions\' settings); give the value itself' });
      return;
    }
    if (Array.isArray(v)) v.forEach((x, i) => walk(x, `${path}[${i}]`));
    else if (v !== null && typeof v === 'object' && Object.getPrototypeOf(v) === Object.prototype) for (const [k, x] of Object.entries(v)) walk(x, path ? `${path}.${k}` : k);
  };
  walk(data, '');
  if (issues.length) throw new ValidationError(subject, issues);
}

/**
 * ConclaveStack's and ConclaveReplicaStack's `alarmEmail` (an address, or a token): checked when
 * the stack is created, as the app's `-c alarmEmail` is, not at deploy time by SNS after the tables
 * were made.
 */
export const AlarmEmailPropsSchema = z.object({
  alarmEmail: orToken(z.email('must be an e-mail address, such as oncall@example.com (AWS sends it a confirmation message first)')).optional(),
});

/** ConclaveProps' `tableNames` (each a name, or a token). */
export const ConclaveTableNamesSchema = z
  .object({
    leases: orToken(TableNamesSchema.shape.leases).optional(),
    candidates: orToken(TableNamesSchema.shape.candidates).optional(),
    identities: orToken(TableNamesSchema.shape.identities).optional(),
  })
  .strict()
  .superRefine((o, ctx) => {
    const ok = everyProblem.parsed(ctx);
    const roles = ['leases', 'candidates', 'identities'] as const;
    roles.forEach((role, i) => {
      const name = o[role];
      const first = roles.slice(0, i).find((r) => ok(role, r) && name !== undefined && !Token.isUnresolved(name) && o[r] === name);
      if (first) ctx.addIssue({ code: 'custom', path: [role], message: `is the ${first} table's name too: each table needs a name of its own` });
    });
  }, { when: everyProblem.when });

const ScopeList = (what: string, all: string) => z.array(Name).min(1, `give at least one ${what}, or \`${all}: true\` for all`);

/** An AWS Region's name, as `env.region` gives it. */
export const RegionNameSchema = z.string('must be an AWS Region name, e.g. us-east-1').regex(/^[a-z]{2}(-[a-z]+)+-\d{1,2}$/, 'must be an AWS Region name, e.g. us-east-1');

/**
 * DynamoDB's MRSC Region sets: an MRSC global table's three Regions (replicas and witness) are all
 * of one set. As the DynamoDB API Reference lists them (CreateGlobalTableWitnessGroupMemberAction,
 * RegionName: "US Region set: US East (N. Virginia), US East (Ohio), US West (Oregon)", EU:
 * Ireland, London, Paris, Frankfurt; AP: Tokyo, Seoul, Osaka), and as aws-cdk-lib's TableV2 checks
 * them (validateMrscConfiguration, which keeps its list to itself): that check stays a second line
 * at synth, so a set AWS adds needs a line here, and an aws-cdk-lib that knows it.
 */
const MRSC_REGION_SETS: Readonly<Record<string, readonly string[]>> = {
  US: ['us-east-1', 'us-east-2', 'us-west-2'],
  EU: ['eu-west-1', 'eu-west-2', 'eu-west-3', 'eu-central-1'],
  AP: ['ap-northeast-1', 'ap-northeast-2', 'ap-northeast-3'],
};
const mrscSetOf = (region: string): string | undefined => Object.keys(MRSC_REGION_SETS).find((s) => MRSC_REGION_SETS[s]!.includes(region));
const mrscSets = () => Object.entries(MRSC_REGION_SETS).map(([s, rs]) => `${s} (${rs.join(', ')})`).join('; ');

/**
 * ConclaveProps' `regions` (ConclaveRegions): DynamoDB multi-Region strong consistency (MRSC) needs
 * exactly three Regions of one Region set (MRSC_REGION_SETS), three replicas or two replicas and a
 * witness, each Region once.
 */
export const RegionsSchema = z
  .object({
    replicas: z.array(RegionNameSchema, "must list the replicas' Regions, e.g. ['us-east-1', 'us-east-2', 'us-west-2']"),
    witness: RegionNameSchema.optional(),
  })
  .strict()
  .superRefine((r, ctx) => {
    const ok = everyProblem.parsed(ctx);
    if (!ok('replicas')) return; // every check counts or compares the replicas
    r.replicas.forEach((region, i) => {
      if (r.replicas.indexOf(region) !== i) ctx.addIssue({ code: 'custom', path: ['replicas', i], message: `lists ${region} twice: each replica is in a Region of its own` });
    });
    const regions = `MRSC runs in exactly three Regions: three replicas, or two replicas and a witness`;
    if (ok('witness') && r.witness !== undefined && r.replicas.includes(r.witness)) {
      ctx.addIssue({ code: 'custom', path: ['witness'], message: `is ${r.witness}, also a replica: the witness must be a third Region, apart from the two replicas (${regions})` });
    }
    if (ok('witness') && r.witness !== undefined && r.replicas.length !== 2) {
      ctx.addIssue({ code: 'custom', path: ['replicas'], message: `must name 2 Regions with a witness, not ${r.replicas.length} (${regions}); or drop \`witness\` and name 3` });
    }
    if (r.witness === undefined && r.replicas.length !== 3) {
      ctx.addIssue({ code: 'custom', path: ['replicas'], message: `must name 3 Regions, not ${r.replicas.length} (${regions}); or name 2 and a \`witness\`` });
    }
    // one Region set: each Region outside every set is named; of Regions in different sets, those
    // outside the set most of them are in (the first replica's, on a tie), each with its fix
    const members = [
      ...r.replicas.map((region, i) => ({ region, path: ['replicas', i], field: `regions.replicas[${i}]` })),
      ...(ok('witness') && r.witness !== undefined ? [{ region: r.witness, path: ['witness'], field: 'regions.witness' }] : []),
    ]
      .filter((m) => RegionNameSchema.safeParse(m.region).success) // a name that is none is told so, and only so
      .map((m) => ({ ...m, set: mrscSetOf(m.region) }));
    const counts = new Map<string, number>();
    for (const m of members) if (m.set) counts.set(m.set, (counts.get(m.set) ?? 0) + 1);
    const main = [...counts.entries()].reduce<[string, number] | undefined>((best, c) => (best && best[1] >= c[1] ? best : c), undefined)?.[0];
    for (const m of members) {
      if (m.set === undefined) {
        const first = members.find((o) => o.set === main);
        const use = main && first ? `use a Region of the ${main} set (${MRSC_REGION_SETS[main]!.join(', ')}), as ${first.field} (${first.region}) is` : 'pick all three Regions from one set';
        ctx.addIssue({ code: 'custom', path: m.path, message: `is ${m.region}, in none of DynamoDB's MRSC Region sets, ${mrscSets()}: ${use}` });
      } else if (m.set !== main) {
        const other = members.find((o) => o.set === main)!;
        ctx.addIssue({ code: 'custom', path: m.path, message: `is ${m.region}, of the ${m.set} Region set, but ${other.field} is ${other.region}, of the ${main} set: MRSC runs in three Regions of one set; use a Region of the ${main} set (${MRSC_REGION_SETS[main!]!.join(', ')}), or move the others to the ${m.set} set (${MRSC_REGION_SETS[m.set]!.join(', ')})` });
      }
    }
  }, { when: everyProblem.when });

/** A Cloud Map service name: DNS labels (the namespace may be a DNS one), at most 127 characters. */
const CloudMapServiceName = z
  .string()
  .max(127, 'must be at most 127 characters (a Cloud Map service name)')
  .regex(/^[A-Za-z0-9_](?:[A-Za-z0-9_-]{0,61}[A-Za-z0-9_])?(?:\.[A-Za-z0-9_](?:[A-Za-z0-9_-]{0,61}[A-Za-z0-9_])?)*$/, 'must be DNS labels of letters, digits, - and _, e.g. conclave-leader');

/**
 * ConclaveProps' `leaderDiscovery` as data (infra/discovery.ts makes it from the props): the
 * constructs given are `true`; the hosted zone is its zone name, `null` when it has none at synth;
 * `ttl` in seconds.
 */
export const LeaderDiscoverySettingsSchema = z
  .object({
    leaseNames: z.array(Name).min(1, 'give at least one lease name, or leave it out for every lease').optional(),
    cloudMap: z
      .object({
        namespace: z.literal(true, 'is required: the Cloud Map namespace (HttpNamespace, PrivateDnsNamespace, PublicDnsNamespace, or one imported) the construct creates the service in'),
        // a token: Cloud Map checks it at deploy time (nothing is computed from it at synth)
        serviceName: orToken(CloudMapServiceName).optional(),
      })
      .strict()
      .optional(),
    route53: z
      .object({
        hostedZone: z.string({
          error: (i) =>
            i.input === undefined
              ? 'is required: the hosted zone of the record (a route53.PrivateHostedZone, or one imported with HostedZone.fromHostedZoneAttributes)'
              : 'needs its zone name at synth (for the record name and the IAM condition on it): import it with HostedZone.fromHostedZoneAttributes({ hostedZoneId, zoneName }), not fromHostedZoneId',
        }),
        recordName: z.string('is required: the record clients resolve, e.g. "leader" or "{lease}.leader"').min(1, 'must not be empty'),
        ttl: z.number().int('must be whole seconds').min(0, 'must be at least 0 seconds').max(86_400, 'must be at most a day: a leader\'s name that resolvers keep longer outlives many terms'),
      })
      .strict()
      .optional(),
  })
  .strict()
  .superRefine((o, ctx) => {
    // given or not is judged of any value; the record's name only from fields of their type
    if (o.cloudMap && o.route53) ctx.addIssue({ code: 'custom', path: ['route53'], message: 'give cloudMap or route53, not both: one naming service per Conclave' });
    if (!o.cloudMap && !o.route53) ctx.addIssue({ code: 'custom', path: ['cloudMap'], message: 'is required: cloudMap ({ namespace }) or route53 ({ hostedZone, recordName })' });
    const r = o.route53;
    if (!r || !everyProblem.parsed(ctx)('route53', 'leaseNames')) return;
    const name = qualifiedRecordName(r.recordName, r.hostedZone);
    const perLease = name.includes(LEASE_PLACEHOLDER);
    const one = o.leaseNames?.length === 1 ? o.leaseNames[0] : undefined;
    if (!perLease && one === undefined) {
      const which = o.leaseNames ? `${o.leaseNames.length} leases` : 'every lease (no leaseNames)';
      ctx.addIssue({ code: 'custom', path: ['route53', 'recordName'], message: `must hold ${LEASE_PLACEHOLDER}, e.g. "${LEASE_PLACEHOLDER}.${r.recordName}": it names ${which}, each with a record of its own; or give one lease in leaseNames` });
      return;
    }
    if (name === normalizeDnsName(r.hostedZone)) ctx.addIssue({ code: 'custom', path: ['route53', 'recordName'], message: `is the zone's apex (${name}): a leader's name needs a record of its own, e.g. "leader"` });
    // the names the function will write: each lease's, or the template's with a stand-in label
    const names = o.leaseNames ? o.leaseNames.map((l, i) => ({ name: recordNameOf(name, l), path: perLease ? ['leaseNames', i] : ['route53', 'recordName'] })) : [{ name: recordNameOf(name, 'x'), path: ['route53', 'recordName'] }];
    for (const n of names) {
      const issue = dnsNameIssue(n.name);
      if (issue) ctx.addIssue({ code: 'custom', path: n.path, message: `gives the record name ${n.name}, which ${issue}` });
    }
    // DNS names ignore case: leases whose names differ only in case would share (and clear) one record
    if (perLease && o.leaseNames)
      o.leaseNames.forEach((l, i) => {
        const first = o.leaseNames!.findIndex((m) => m !== l && m.toLowerCase() === l.toLowerCase());
        if (first >= 0 && first < i) ctx.addIssue({ code: 'custom', path: ['leaseNames', i], message: `gives the record name ${recordNameOf(name, l)}, as "${o.leaseNames![first]}" (leaseNames[${first}]) does: DNS names ignore case, so each would replace and clear the other's leader; give leases whose names differ in more than case` });
      });
  }, { when: everyProblem.when });

/**
 * How often a worker renews its candidate row by default: the SDK's candidacy `renewIntervalMs`
 * (lib/sdk/candidate.ts CandidacyShape, which the construct does not load; a test holds the two
 * equal). `election.candidateStaleAfterMs` is kept at least twice it (lib/schemas/config.ts).
 */
export const CANDIDACY_RENEW_INTERVAL_MS = 10 * 60_000;

/**
 * The warning for a `candidateStaleAfterMs` below twice the workers' default candidacy renewal:
 * the tick would collect a live worker's candidate row between its renewals. A warning, not an
 * error: the construct cannot see the workers' settings, and a fleet that renews more often may
 * keep candidates a shorter time (undefined: nothing to say).
 */
export function candidateStaleWarning(candidateStaleAfterMs: number): string | undefined {
  const floor = 2 * CANDIDACY_RENEW_INTERVAL_MS;
  if (candidateStaleAfterMs >= floor) return undefined;
  const min = (ms: number) => `${+(ms / 60_000).toFixed(2)} min`;
  return (
    `election.candidateStaleAfterMs is ${candidateStaleAfterMs} ms (${min(candidateStaleAfterMs)}), less than twice the workers' candidacy renewal interval ` +
    `(the SDK's candidacy renewIntervalMs: ${CANDIDACY_RENEW_INTERVAL_MS} ms, ${min(CANDIDACY_RENEW_INTERVAL_MS)}, by default): the coordinator's tick would collect live candidates' rows between their renewals, ` +
    `and their leases would go without candidates (no election, no successor) until each renews. Give it at least ${floor} (twice the default renewal; the default, 1800000, covers the longest, 900000), ` +
    `or give every worker's candidacy a renewIntervalMs at most ${Math.floor(candidateStaleAfterMs / 2)} (half of it)`
  );
}

/** The longest tick: the leaderless alarm's two periods of one tick each fit CloudWatch's 7 days of evaluation (infra/monitoring.ts). */
export const MAX_TICK_SECONDS = 84 * 3600;

/**
 * Every prop of ConclaveProps (infra/conclave.ts), by name: what a prop not among them is likely
 * meant as. The construct's PROPS is built from it, typed so that a prop missing here does not compile.
 */
export const CONCLAVE_PROP_NAMES = ['tableNames', 'tablePrefix', 'tick', 'election', 'eventBus', 'removalPolicy', 'encryptionKey', 'alarmTopic', 'logRetention', 'platformSignals', 'push', 'regions', 'leaderDiscovery'] as const;

/** A prop not in ConclaveProps: the one it was likely meant as (the SDK's option errors' hint), else every prop. */
const notAProp = (issue: { readonly path?: readonly PropertyKey[] }): string =>
  `is not a prop of Conclave${unknownKeyHint(String(issue.path?.at(-1) ?? ''), CONCLAVE_PROP_NAMES).replace(' (the options: ', ' (the props: ')}: check its spelling against ConclaveProps`;

/** ConclaveProps' data: `tick` in seconds (null: no Duration); any other key is a prop misspelt. */
export const ConclaveSettingsSchema = z
  .object({
    tableNames: ConclaveTableNamesSchema.optional(),
    tablePrefix: orToken(TablePrefixSchema).optional(),
    // one issue, whatever is wrong (under a minute, part minutes), with the Duration to give
    tick: z.number('must be a Duration, e.g. Duration.minutes(1)').superRefine((s, ctx) => {
      if (s > MAX_TICK_SECONDS) {
        ctx.addIssue({ code: 'custom', message: `must be at most ${MAX_TICK_SECONDS / 3600} hours (Duration.hours(${MAX_TICK_SECONDS / 3600})): the LeaderlessLeases alarm looks at two ticks, and CloudWatch judges an alarm over at most 7 days; not Duration.hours(${+(s / 3600).toFixed(2)})` });
        return;
      }
      if (s >= 60 && s % 60 === 0) return;
      ctx.addIssue({ code: 'custom', message: `must be whole minutes, at least one (EventBridge schedules run at most once a minute): give Duration.minutes(${Math.max(1, Math.round(s / 60))}), not Duration.seconds(${s})` });
    }),
    election: ElectionConfigSchema,
    push: z.boolean('must be true (the default: workers are woken through IoT Core) or false').optional(),
    removalPolicy: z.enum(RemovalPolicy, 'must be a RemovalPolicy: RETAIN (the default), RETAIN_ON_UPDATE_OR_DELETE or DESTROY').optional(),
    logRetention: z.enum(logs.RetentionDays, 'must be a logs.RetentionDays, e.g. RetentionDays.ONE_MONTH (the default)').optional(),
    platformSignals: z.boolean('must be true (the default: rules for ECS and EC2 stops) or false').optional(),
    regions: RegionsSchema.optional(),
    leaderDiscovery: LeaderDiscoverySettingsSchema.optional(),
  })
  // (z.never would report them all at the root: this names each)
  .catchall(z.custom<never>(() => false, { error: notAProp, abort: false }))
  .superRefine((o, ctx) => {
    const ok = everyProblem.parsed(ctx);
    if (o.regions && o.leaderDiscovery) {
      ctx.addIssue({
        code: 'custom',
        path: ['leaderDiscovery'],
        message: 'is not supported with `regions` yet: each Region publishes the leader changes it sees, and one name would be written from three Regions; leave it out, or deploy in one Region',
      });
    }
    // the table names are judged only when of their type (a name's own check, a duplicate, goes on)
    if (!ok('tablePrefix', 'tableNames')) return;
    // the replicas in the other Regions are found by name: a name CloudFormation picks is known to the primary's stack only
    const named = o.tablePrefix !== undefined || (['leases', 'candidates', 'identities'] as const).every((t) => o.tableNames?.[t] !== undefined);
    if (o.regions) {
      const tokens = [...(o.tablePrefix !== undefined && Token.isUnresolved(o.tablePrefix) ? [['tablePrefix']] : []), ...Object.entries(o.tableNames ?? {}).filter(([, n]) => n !== undefined && Token.isUnresolved(n)).map(([t]) => ['tableNames', t])];
      for (const path of tokens) {
        ctx.addIssue({ code: 'custom', path, message: 'must be known at synth with `regions`, not a token: the stacks in the other Regions find their replicas of the tables by name' });
      }
    }
    if (o.regions && !named) {
      ctx.addIssue({
        code: 'custom',
        path: ['tablePrefix'],
        message: 'is required with `regions` (or tableNames for all three tables): the stacks in the other Regions find their replicas of the tables by name, so the names must be known at synth',
      });
    }
  }, { when: everyProblem.when });

const AllOptIn = (what: string, scoped: string) => z.literal(true, `must be true (a worker may use every ${what}), or leave it out and list ${scoped}`).optional();

/** GrantGetLeaderOptions: the leases read, listed or every one (explicitly). */
export const GrantGetLeaderSettingsSchema = z
  .object({
    leaseNames: ScopeList('lease name', 'allLeases').optional(),
    allLeases: z.literal(true, 'must be true (the reader may read every lease), or leave it out and list leaseNames').optional(),
  })
  .strict()
  .superRefine((o, ctx) => {
    if (o.leaseNames !== undefined && o.allLeases !== undefined) ctx.addIssue({ code: 'custom', path: ['allLeases'], message: 'give leaseNames or allLeases, not both' });
    if (o.leaseNames === undefined && o.allLeases === undefined)
      ctx.addIssue({ code: 'custom', path: ['leaseNames'], message: "is required: the leases this reader looks up, e.g. { leaseNames: ['nightly-report'] }; or `allLeases: true` to let it read every lease" });
  }, { when: everyProblem.when }); // given or not: judged of any value

/**
 * GrantWorkerOptions. Each table's scope is required and explicit: a grant without one used to
 * cover every lease (a worker could then rewrite leases and candidacies that are not its own).
 */
export const GrantWorkerSettingsSchema = z
  .object({
    leaseNames: ScopeList('lease name', 'allLeases').optional(),
    allLeases: AllOptIn('lease', 'leaseNames'),
    // empty: no access to the identities table (a worker without IdentityLeaseHeartbeat)
    components: z
      .array(
        Name.refine((c) => !isSessionComponent(c), 'is a session partition (conclave-session...): those are granted by `sessions`, each worker its own grant\'s only; drop it from components').refine(
          (c) => c !== COORDINATOR_COMPONENT,
          'is the coordinator\'s own partition (its tick cursor): no worker writes it; drop it from components',
        ),
      )
      .optional(),
    allComponents: AllOptIn('component', 'components'),
    sessions: z.boolean().default(true),
  })
  .strict()
  .superRefine((o, ctx) => {
    const pick = (list: string, all: string, example: string, none = '') => {
      const listed = (o as Record<string, unknown>)[list] !== undefined;
      const everything = (o as Record<string, unknown>)[all] !== undefined;
      if (listed && everything) ctx.addIssue({ code: 'custom', path: [all], message: `give ${list} or ${all}, not both` });
      if (!listed && !everything)
        ctx.addIssue({ code: 'custom', path: [list], message: `is required: the ${example}${none}; or \`${all}: true\` to grant every one (any worker with this role can then write all of them)` });
    };
    pick('leaseNames', 'allLeases', "leases this worker stands for, e.g. { leaseNames: ['nightly-report'] }");
    pick('components', 'allComponents', "identity-lease components this worker heartbeats, e.g. { components: ['scheduler'] }", ', or `components: []` for none');
  }, { when: everyProblem.when }); // given or not: judged of any value

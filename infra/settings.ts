/**
 * The construct's props that are data, validated with zod when the construct is created (field
 * names are the props' names, so an error names the prop to fix).
 */
import * as z from 'zod';
import { Name } from '../lib/schemas/common.js';
import { ElectionConfigSchema, TableNamesSchema } from '../lib/schemas/config.js';
import { isSessionComponent } from '../lib/tables.js';

/** A table name prefix: `<prefix>-candidates` must still be a DynamoDB table name. */
export const TablePrefixSchema = z.string().regex(/^[A-Za-z0-9_.-]{1,240}$/, 'must be 1–240 of A-Z a-z 0-9 _ . - (a table name is prefix + "-candidates")');

const ScopeList = (what: string, all: string) => z.array(Name).min(1, `give at least one ${what}, or \`${all}: true\` for all`);

/** An AWS Region's name, as `env.region` gives it. */
export const RegionNameSchema = z.string('must be an AWS Region name, e.g. us-east-1').regex(/^[a-z]{2}(-[a-z]+)+-\d{1,2}$/, 'must be an AWS Region name, e.g. us-east-1');

/**
 * ConclaveProps' `regions` (ConclaveRegions): DynamoDB multi-Region strong consistency (MRSC) needs
 * exactly three Regions, three replicas or two replicas and a witness, each Region once.
 */
export const RegionsSchema = z
  .object({
    replicas: z.array(RegionNameSchema, "must list the replicas' Regions, e.g. ['us-east-1', 'us-east-2', 'us-west-2']"),
    witness: RegionNameSchema.optional(),
  })
  .strict()
  .superRefine((r, ctx) => {
    r.replicas.forEach((region, i) => {
      if (r.replicas.indexOf(region) !== i) ctx.addIssue({ code: 'custom', path: ['replicas', i], message: `lists ${region} twice: each replica is in a Region of its own` });
    });
    const regions = `MRSC runs in exactly three Regions: three replicas, or two replicas and a witness`;
    if (r.witness !== undefined && r.replicas.includes(r.witness)) {
      ctx.addIssue({ code: 'custom', path: ['witness'], message: `is ${r.witness}, also a replica: the witness must be a third Region, apart from the two replicas (${regions})` });
    }
    if (r.witness !== undefined && r.replicas.length !== 2) {
      ctx.addIssue({ code: 'custom', path: ['replicas'], message: `must name 2 Regions with a witness, not ${r.replicas.length} (${regions}); or drop \`witness\` and name 3` });
    }
    if (r.witness === undefined && r.replicas.length !== 3) {
      ctx.addIssue({ code: 'custom', path: ['replicas'], message: `must name 3 Regions, not ${r.replicas.length} (${regions}); or name 2 and a \`witness\`` });
    }
  });

/** ConclaveProps' data: `tick` in seconds. */
export const ConclaveSettingsSchema = z
  .object({
    tableNames: TableNamesSchema.partial().optional(),
    tablePrefix: TablePrefixSchema.optional(),
    tick: z
      .number()
      .int('must be whole minutes: EventBridge schedules run at most once a minute')
      .min(60, 'must be at least 1 minute: EventBridge schedules run at most once a minute')
      .multipleOf(60, 'must be whole minutes: EventBridge schedules run at most once a minute'),
    election: ElectionConfigSchema,
    push: z.boolean('must be true (the default: workers are woken through IoT Core) or false').optional(),
    regions: RegionsSchema.optional(),
  })
  .strict()
  .superRefine((o, ctx) => {
    // the replicas in the other Regions are found by name: a name CloudFormation picks is known to the primary's stack only
    const named = o.tablePrefix !== undefined || (['leases', 'candidates', 'identities'] as const).every((t) => o.tableNames?.[t] !== undefined);
    if (o.regions && !named) {
      ctx.addIssue({
        code: 'custom',
        path: ['tablePrefix'],
        message: 'is required with `regions` (or tableNames for all three tables): the stacks in the other Regions find their replicas of the tables by name, so the names must be known at synth',
      });
    }
  });

const AllOptIn = (what: string, scoped: string) => z.literal(true, `must be true (a worker may use every ${what}), or leave it out and list ${scoped}`).optional();

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
      .array(Name.refine((c) => !isSessionComponent(c), 'is a session partition (conclave-session…): those are granted by `sessions`, each worker its own grant\'s only; drop it from components'))
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
  });

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
  })
  .strict();

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

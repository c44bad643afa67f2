/**
 * The construct's props that are data, validated with zod when the construct is created (field
 * names are the props' names, so an error names the prop to fix).
 */
import * as z from 'zod';
import { Name } from '../lib/schemas/common.js';
import { ElectionConfigSchema, TableNamesSchema } from '../lib/schemas/config.js';

/** A table name prefix: `<prefix>-candidates` must still be a DynamoDB table name. */
export const TablePrefixSchema = z.string().regex(/^[A-Za-z0-9_.-]{1,240}$/, 'must be 1–240 of A-Z a-z 0-9 _ . - (a table name is prefix + "-candidates")');

const ScopeList = (what: string) => z.array(Name).min(1, `give at least one ${what}, or leave it out for all`);

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
  })
  .strict();

/** GrantWorkerOptions. */
export const GrantWorkerSettingsSchema = z.object({ leaseNames: ScopeList('lease name').optional(), components: ScopeList('component').optional() }).strict();

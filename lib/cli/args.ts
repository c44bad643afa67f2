/**
 * The CLI's input, as zod schemas: commander only splits argv; every value a user types is
 * parsed here, so a bad one fails at the edge with the field named (ValidationError).
 */
import * as z from 'zod';
import { DETAIL_TYPES } from '../events/schemas.js';
import { MAX_PINNED_PRIORITY, PinnedPriority } from '../schemas/candidate.js';
import { Name } from '../schemas/common.js';
import { durationFlag } from '../schemas/duration.js';
import { ElectionConfigSchema, TableNamesSchema, type ElectionConfig } from '../schemas/config.js';
import { PreferredLocations } from '../schemas/location.js';
import { KNOWN_STRATEGIES, StrategyName, isKnownStrategy, strategyProblem } from '../schemas/strategy.js';
import { ValidationError, issuesOf, parse } from '../schemas/validation.js';
import { defaultTableNames } from '../tables.js';

/** The longest duration taken: a pin's expiry (now + --for) must stay a time a row can carry. */
const MAX_DURATION_HOURS = 8_760;

const LONGEST = { ms: MAX_DURATION_HOURS * 3_600_000, text: `${MAX_DURATION_HOURS}h (a year)` };

/** A bare number's hint (`; a number alone has no unit: 0 seconds is 0s`), which names a value the flag would take. */
const BARE_HINT = /(; a number alone has no unit): (\S+) seconds is \S+s$/;

/**
 * `flag` whose bare-number hint is kept only where the value it suggests is one the flag takes:
 * `watch --interval 0` was told "0 seconds is 0s", then refused 0s ("must be at least 100ms").
 */
export function suggestingOnlyAccepted(flag: z.ZodType<number, string>): z.ZodType<number, string> {
  return z.string().transform((s, ctx) => {
    const r = flag.safeParse(s);
    if (r.success) return r.data;
    for (const issue of r.error.issues) {
      const hint = BARE_HINT.exec(issue.message);
      const message = hint && !flag.safeParse(`${hint[2]}s`).success ? issue.message.replace(BARE_HINT, '$1') : issue.message;
      ctx.addIssue({ code: 'custom', message });
    }
    return z.NEVER;
  });
}

/** A pin's --for and release's --timeout: at most a year, so a pin's expiry (now + --for) stays a time a row can carry. */
export const Duration = suggestingOnlyAccepted(durationFlag(LONGEST));

/** An operator's priority as typed: a whole number, then the schema's rule for a pin (room left for preempt). */
export const PriorityArg = z
  .string()
  .trim()
  .regex(/^\d+$/, 'must be a whole number >= 1, e.g. 10 (higher wins)')
  .transform(Number)
  // a pin of 0 is no pin: the schema's "leave it unset" is refused here too, so name --clear
  .refine((n) => n >= 1, 'must be a whole number >= 1, e.g. 10 (higher wins), or --clear to remove the pin')
  // one message for a number too big, however big: the schema's checks after it (a safe integer, int32, the pin's bound) would each say it again
  .refine((n) => n <= MAX_PINNED_PRIORITY, `must be at most ${MAX_PINNED_PRIORITY} (preempt pins one above the highest, and needs room)`)
  .pipe(PinnedPriority);

/** At most a day: a wait is a Node timer, and one past 2^31 - 1 ms (24.8 days) fires at once, every time. */
const WatchInterval = suggestingOnlyAccepted(durationFlag({ ms: 86_400_000, text: '24h (a day)' }, { ms: 100, text: '100ms' }));

const Count = z
  .string()
  .trim()
  .regex(/^\d+$/, 'must be a whole number >= 1')
  .transform(Number)
  // past it a number is no longer exact (zod's own words for it name no fix)
  .refine((n) => n <= Number.MAX_SAFE_INTEGER, `must be at most ${Number.MAX_SAFE_INTEGER} (leave --count out to watch until Ctrl-C)`)
  .pipe(z.number().int().min(1, 'must be >= 1'));

/** How long the CLI waits for DynamoDB to answer one try of a request (3 tries), unless --request-timeout says otherwise. */
export const DEFAULT_REQUEST_TIMEOUT_MS = 5_000;

const REQUEST_TIMEOUT_SPAN = durationFlag({ ms: 600_000, text: '10m (600000 ms)' }, { ms: 100, text: '100ms' });

/**
 * --request-timeout: whole milliseconds, as it always took them (`5000`), or a duration as every
 * other time flag takes it (`5s`, `1.5s`, `500ms`).
 */
const RequestTimeout = z
  .string()
  .trim()
  .transform((s, ctx) => {
    const bare = /^\d+$/.test(s);
    const r = REQUEST_TIMEOUT_SPAN.safeParse(bare ? `${s}ms` : s);
    if (r.success) return r.data;
    for (const i of r.error.issues) {
      // a number alone is milliseconds: `2` meant as seconds is told so, with the unit to write
      const message = i.message.startsWith('must be a duration') ? `must be whole milliseconds such as 5000, or a duration between 100ms and 10m such as 5s, 1.5s or 500ms` : bare ? `${i.message} (a number alone is milliseconds: for ${s} seconds write ${s}s)` : i.message;
      ctx.addIssue({ code: 'custom', message });
    }
    return z.NEVER;
  });

export const OUTPUTS = ['table', 'json'] as const;
export type OutputFormat = (typeof OUTPUTS)[number];

/** Global options after environment fallbacks: where DynamoDB is and which tables to use. */
export const GlobalOptions = z
  .object({
    endpoint: z.url({ protocol: /^https?$/, error: 'must be an http(s) URL such as http://127.0.0.1:8000' }).optional(),
    region: z.string().regex(/^[a-z0-9-]{2,32}$/, 'must be an AWS region such as eu-west-1').optional(),
    profile: z.string().regex(/^[^\s\[\]]{1,128}$/, 'must be a profile name of the AWS config file (no spaces or brackets), such as prod').optional(),
    tablePrefix: z.string().regex(/^[A-Za-z0-9_.-]{1,200}$/, 'may use A-Z a-z 0-9 _ . - (tables are PREFIX-leases, PREFIX-candidates, PREFIX-identities)').default('conclave'),
    leasesTable: z.string().optional(),
    candidatesTable: z.string().optional(),
    identitiesTable: z.string().optional(),
    output: z.enum(OUTPUTS, { error: (i) => `must be one of: ${OUTPUTS.join(', ')} (given ${JSON.stringify(i.input)}${typeof i.input === 'string' && i.input.startsWith('=') ? ': write -o json or --output=json' : ''})` }).default('table'),
    electionConfig: z.object({ value: z.string(), from: z.enum(['--election-config', 'CONCLAVE_ELECTION_CONFIG']) }).optional(),
    requestTimeout: RequestTimeout.optional(),
  })
  .transform((o, ctx) => {
    const defaults = defaultTableNames(o.tablePrefix);
    const tables = TableNamesSchema.safeParse({
      leases: o.leasesTable ?? defaults.leases,
      candidates: o.candidatesTable ?? defaults.candidates,
      identities: o.identitiesTable ?? defaults.identities,
    });
    if (!tables.success) {
      for (const i of tables.error.issues) ctx.addIssue({ code: 'custom', path: [`${String(i.path[0])}Table`], message: i.message });
      return z.NEVER;
    }
    return { endpoint: o.endpoint, region: o.region, profile: o.profile, tablePrefix: o.tablePrefix, tables: tables.data, output: o.output, electionConfig: o.electionConfig, requestTimeoutMs: o.requestTimeout ?? DEFAULT_REQUEST_TIMEOUT_MS };
  });
export type GlobalOptions = z.output<typeof GlobalOptions>;

/** Commander's raw global options plus the environment: CONCLAVE_ENDPOINT, CONCLAVE_TABLE_PREFIX, CONCLAVE_ELECTION_CONFIG, CONCLAVE_REQUEST_TIMEOUT. */
export function globalOptions(raw: Record<string, unknown>, env: Record<string, string | undefined>): GlobalOptions {
  const electionConfig =
    typeof raw['electionConfig'] === 'string'
      ? { value: raw['electionConfig'], from: '--election-config' }
      : env['CONCLAVE_ELECTION_CONFIG']
        ? { value: env['CONCLAVE_ELECTION_CONFIG'], from: 'CONCLAVE_ELECTION_CONFIG' }
        : undefined;
  const r = GlobalOptions.safeParse({
    ...raw,
    endpoint: raw['endpoint'] ?? (env['CONCLAVE_ENDPOINT'] || undefined),
    tablePrefix: raw['tablePrefix'] ?? (env['CONCLAVE_TABLE_PREFIX'] || undefined),
    requestTimeout: raw['requestTimeout'] ?? (env['CONCLAVE_REQUEST_TIMEOUT'] || undefined),
    electionConfig,
  });
  if (r.success) return r.data;
  // each bad value named as the user gave it: the flag, or the environment variable it came from
  const given = (field: string): string => {
    const variable = FROM_ENV[field];
    if (variable && raw[field] === undefined && env[variable]) return variable;
    return `--${field.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)}`;
  };
  throw new ValidationError('global options', issuesOf(r.error).map((i) => ({ ...i, field: given(i.field) })));
}

/** The global options an environment variable can give. */
const FROM_ENV: Record<string, string> = { endpoint: 'CONCLAVE_ENDPOINT', tablePrefix: 'CONCLAVE_TABLE_PREFIX', requestTimeout: 'CONCLAVE_REQUEST_TIMEOUT' };

/**
 * The coordinator's configuration as JSON text — what the functions read from
 * CONCLAVE_ELECTION_CONFIG (the construct writes it with every default filled in) — parsed by the
 * functions' own schema: an unknown or out-of-range field is named.
 */
export function parseElectionConfig(text: string, subject: string): ElectionConfig {
  let raw: unknown;
  try {
    raw = JSON.parse(text) as unknown;
  } catch (e) {
    throw new ValidationError(subject, [{ field: '(root)', message: `must be JSON such as {"ackWindowMs":2000}, or the name of a file holding it (${(e as Error).message})` }]);
  }
  return parse(ElectionConfigSchema, raw, subject);
}

export const LeaseArg = z.object({ lease: Name });
export const CandidatesArgs = z.object({ lease: Name.optional() });

export const SetPriorityArgs = z
  .object({ lease: Name, candidate: Name, priority: PriorityArg.optional(), for: Duration.optional(), clear: z.boolean().default(false) })
  .superRefine((a, ctx) => {
    if (a.clear && a.priority !== undefined) ctx.addIssue({ code: 'custom', path: ['priority'], message: 'give either a priority or --clear, not both' });
    if (!a.clear && a.priority === undefined) ctx.addIssue({ code: 'custom', path: ['priority'], message: 'is required: a whole number >= 1 (or --clear to remove the pin)' });
    if (a.clear && a.for !== undefined) ctx.addIssue({ code: 'custom', path: ['for'], message: 'only goes with a priority, not with --clear' });
  });

export const SetStrategyArgs = z
  .object({ lease: Name, strategy: StrategyName.optional(), clear: z.boolean().default(false), thirdParty: z.boolean().default(false), create: z.boolean().default(false) })
  .superRefine((a, ctx) => {
    if (a.clear && a.strategy !== undefined) ctx.addIssue({ code: 'custom', path: ['strategy'], message: 'give either a strategy or --clear, not both' });
    if (a.clear && a.create) ctx.addIssue({ code: 'custom', path: ['create'], message: 'only goes with a strategy, not with --clear' });
    if (!a.clear && a.strategy === undefined) ctx.addIssue({ code: 'custom', path: ['strategy'], message: `is required: one of ${KNOWN_STRATEGIES.join(', ')} (or --clear to let the candidates decide)` });
    // the name by the rule a worker's preferredStrategies meet (Kubernetes' for a lease's strategy too); a well-formed third
    // party's still needs --third-party: it stops the coordinator electing on the lease, which a typed name alone must not do
    if (a.strategy !== undefined && StrategyName.safeParse(a.strategy).success) {
      const problem = strategyProblem(a.strategy);
      if (problem !== undefined) ctx.addIssue({ code: 'custom', path: ['strategy'], message: `${problem}${a.strategy.includes('/') ? '' : ' (set with --third-party)'}` });
      else if (!isKnownStrategy(a.strategy) && !a.thirdParty) ctx.addIssue({ code: 'custom', path: ['strategy'], message: `"${a.strategy}" is a third party's strategy: the coordinator would leave the lease alone, to whatever elects under that name; add --third-party to set it (Conclave runs ${KNOWN_STRATEGIES.join(', ')})` });
    }
  });

/** Zones and regions as typed: each argument, or several in one separated by commas (`us-east-1a,us-east-1`). */
const LocationsArg = z
  .array(z.string())
  .transform((args) => args.flatMap((a) => a.split(',')).map((a) => a.trim()).filter(Boolean))
  .pipe(PreferredLocations);

export const SetLocationsArgs = z
  .object({ lease: Name, locations: LocationsArg.default([]), none: z.boolean().default(false), clear: z.boolean().default(false), create: z.boolean().default(false) })
  .superRefine((a, ctx) => {
    const given = [a.locations.length > 0 && 'zones or regions', a.none && '--none', a.clear && '--clear'].filter(Boolean);
    if (given.length > 1) ctx.addIssue({ code: 'custom', path: ['locations'], message: `give one of zones or regions, --none or --clear, not ${given.join(' and ')}` });
    if (given.length === 0) ctx.addIssue({ code: 'custom', path: ['locations'], message: 'is required: zones or regions, best first (e.g. us-east-1a us-east-1), or --none (prefer none on this lease), or --clear (the coordinator\'s preference again)' });
    if (a.clear && a.create) ctx.addIssue({ code: 'custom', path: ['create'], message: 'only goes with locations or --none, not with --clear' });
  });

/** A pin's length when `preempt` is given no --for. */
const DEFAULT_PIN_MS = 10 * 60_000;

/**
 * Why `preempt` refuses a pin under twice the lease's re-election window (lib/cli/priority.ts, by
 * the deployment's settings): a preemption waits up to that window before the holder is asked to
 * yield, so a shorter pin expires before it takes effect, and one just longer moves leadership
 * back as soon as it lapses.
 */
export const SHORT_PIN = 'a shorter pin expires before the preemption takes effect, or moves leadership back just after';

export const PreemptArgs = z.object({ lease: Name, to: Name, for: Duration.default(DEFAULT_PIN_MS) });

export const ReleaseArgs = z
  .object({ lease: Name, force: z.boolean().default(false), timeout: Duration.optional() })
  // --force waits for nothing: a --timeout given with it was taken and did nothing
  .superRefine((a, ctx) => {
    if (a.force && a.timeout !== undefined) ctx.addIssue({ code: 'custom', path: ['timeout'], message: 'only goes without --force, which ends the term at once and waits for nothing: drop --timeout, or drop --force to ask the holder to yield and wait that long' });
  });

export const WatchArgs = z.object({ lease: Name.optional(), interval: WatchInterval.default(1_000), count: Count.optional() });

export const EventsArgs = z.object({
  eventsFile: z.string().min(1, 'must name the events file, such as .local/events.jsonl (leave --events-file out for that one)').default('.local/events.jsonl'),
  follow: z.boolean().default(false),
  lease: Name.optional(),
  type: z.enum(DETAIL_TYPES, { error: `must be one of: ${DETAIL_TYPES.map((t) => `"${t}"`).join(', ')}` }).optional(),
});

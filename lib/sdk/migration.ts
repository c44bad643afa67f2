/**
 * Leader migration (KEP-2436): moving controllers from one component to another without ever
 * running them in both. Each component keeps its own (primary) lease; the migrating controllers
 * run under one extra lease shared by every party of the migration, so exactly one process runs
 * them whichever side of the upgrade it is on.
 */
import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { extname } from 'node:path';
import type { YAMLError } from 'yaml';
import * as z from 'zod';
import { systemClock, type Clock } from '../clock.js';
import type { Candidate } from '../schemas/candidate.js';
import { MAX_LABELS, Name } from '../schemas/common.js';
import { LeaseName } from '../schemas/lease.js';
import { ValidationError, ownChecksPassed, parse, unknownKeyHint } from '../schemas/validation.js';
import { CandidateStore } from '../stores/candidate-store.js';
import type { Term } from '../stores/lease-store.js';
import { boundedClient, requestBoundMs } from './bounded-client.js';
import { electorWith, type LeaderElectorOptions } from './elector.js';
import { errorSink } from './faults.js';
import { FencingError, LeaseLostError, alsoFencedBy, untilTermEnds } from './fencing.js';
import { TablesSchema, optionErrors } from './options.js';
import type { LeadingTerm } from './elector-options.js';
import type { StopReason } from './step.js';

/** KEP-2436's wildcard: the controller may run in any component that takes part in the migration. */
export const ANY_COMPONENT = '*';

/**
 * The lease the default configuration migrates under. Fixed, like Kubernetes'
 * `cloud-provider-extraction-migration`: both parties compute the default on their own, and they
 * exclude each other only if they land on the same lease (the KEP: "version skew is handled as long
 * as the leader name is consistent"). A name derived from the component computing it would give
 * each side its own lease and run the migrated controllers twice.
 */
export const DEFAULT_MIGRATION_LEADER_NAME = 'conclave-leader-migration';

const ComponentOrAny = z
  .string()
  .min(1, `must not be empty: a component name, or "${ANY_COMPONENT}" for any component`)
  .refine((c) => c === ANY_COMPONENT || Name.safeParse(c).success, {
    message: `must be a component name (letters, digits, . _ : / -) or "${ANY_COMPONENT}" for any component`,
    when: ownChecksPassed, // an empty one is said once
  });

/**
 * This component, as resolveLeaderMigration and runWithLeaderMigration take it: a name that
 * `controllerLeaders[].component` can give (ComponentOrAny's), so that a configuration can list a
 * controller for it; not the wildcard, which is no component.
 */
const ThisComponent = z
  .string()
  .min(1, 'must not be empty: give this component\'s name, as controllerLeaders[].component names it')
  .refine((c) => c !== ANY_COMPONENT, {
    message: `"${ANY_COMPONENT}" is the configuration's wildcard (any component), not a component: give this component's name, as controllerLeaders[].component names it`,
    when: ownChecksPassed,
  })
  .refine((c) => c === ANY_COMPONENT || Name.safeParse(c).success, {
    message:
      'must be a component name as controllerLeaders[].component gives one (letters, digits, . _ : / -, starting with a letter or digit, at most 253 characters): no configuration can list a controller for this one; give the component such a name',
    when: ownChecksPassed,
  });

/** One migrating controller and the component that runs it, under the migration lease. */
export const ControllerLeaderConfigurationSchema = z.strictObject({
  /** The controller's name as the component registers it, e.g. `route`. */
  name: z
    .string()
    .min(1, 'must not be empty: the name the component registers the controller under')
    // "service " names no controller: the one meant would be unlisted, run by each party under its own lease, two at once
    .refine((n) => n === n.trim(), {
      error: (issue) => `"${String(issue.input)}" has whitespace at its start or end, which matches no controller's name (the controller meant would run under each party's own lease, two at once): remove it`,
      when: ownChecksPassed,
    }),
  /** The component that runs it during this release, or `*` when either party may. */
  component: ComponentOrAny,
});
/** One migrating controller and the component that runs it. */
export type ControllerLeaderConfiguration = z.infer<typeof ControllerLeaderConfigurationSchema>;

/**
 * KEP-2436's configuration file, field for field, so a Kubernetes file loads unchanged (its
 * `apiVersion` is accepted as is: Conclave has no API groups to check it against). Strict: a
 * misspelt field is an error, not a silently ignored setting.
 */
export const LeaderMigrationConfigurationSchema = z
  .strictObject(
    {
      kind: z.literal('LeaderMigrationConfiguration', { message: 'must be "LeaderMigrationConfiguration" (or left out)' }).optional(),
      apiVersion: z.string().optional(),
      /** The migration lease: the same on every party, different from each party's own lease. */
      leaderName: LeaseName,
      /** Kept for Kubernetes files; Conclave only has leases. */
      resourceLock: z.literal('leases', { message: 'must be "leases" (the only lock Conclave has) or left out' }).optional(),
      controllerLeaders: z
        .array(ControllerLeaderConfigurationSchema, { message: 'must be a list of { name, component }' })
        .min(1, 'must list at least one controller: a migration of nothing is a mistake (disable leader migration instead)')
        .superRefine((leaders, ctx) => {
          const firstAt = new Map<string, number>();
          leaders.forEach(({ name }, i) => {
            const first = firstAt.get(name);
            if (first === undefined) firstAt.set(name, i);
            else
              ctx.addIssue({
                code: 'custom',
                path: [i, 'name'],
                message: `"${name}" is already listed at controllerLeaders[${first}]: a controller runs in exactly one place, list it once`,
              });
          });
        }),
    },
    {
      error: (issue) =>
        issue.code === 'invalid_type' ? 'must be a LeaderMigrationConfiguration mapping with leaderName and controllerLeaders' : undefined,
    },
  );
/** A leader migration configuration (KEP-2436), as loaded and validated. */
export type LeaderMigrationConfiguration = z.infer<typeof LeaderMigrationConfigurationSchema>;

/**
 * The leader migration configuration cannot be used at all (unreadable, not YAML/JSON, or given
 * while migration is off). Kubernetes exits at FATAL for these: starting anyway could run the
 * migrated controllers in two places or in none.
 */
export class MigrationConfigError extends Error {
  /** Always `MigrationConfigError`. */
  override readonly name = 'MigrationConfigError';
  constructor(
    message: string,
    /** The configuration file concerned, when there is one. */
    readonly path?: string,
    /** 1-based line of a syntax error, when the parser gives it. */
    readonly line?: number,
  ) {
    super(message);
  }
}

const reasonOf = (e: unknown): string => (e instanceof Error ? e.message : String(e));

const STOP_REASONS: readonly StopReason[] = ['cancelled', 'preempted', 'renewDeadline', 'deposed', 'workFailed'];
/** A term signal's abort reason as a StopReason (an elector's is one; another StartElector's may not be: given up). */
const stopReason = (r: unknown): StopReason => STOP_REASONS.find((x) => x === r) ?? 'cancelled';

/** Line and column of a JSON.parse error: Node 22 prints them; older V8 only the offset. */
function jsonErrorPosition(message: string, text: string): { line: number; column: number } | undefined {
  const lc = /line (\d+) column (\d+)/.exec(message);
  if (lc) return { line: Number(lc[1]), column: Number(lc[2]) };
  const pos = /position (\d+)/.exec(message);
  if (!pos) return undefined;
  const before = text.slice(0, Number(pos[1])).split('\n');
  return { line: before.length, column: (before.at(-1)?.length ?? 0) + 1 };
}

function syntaxError(path: string, format: string, reason: string, where: { line: number; column: number } | undefined, hint = ''): MigrationConfigError {
  const at = where ? ` at line ${where.line}, column ${where.column}` : '';
  return new MigrationConfigError(
    `leader migration configuration "${path}" is not valid ${format}${at}: ${reason}.${hint} Fix the file, or drop it to use the default configuration.`,
    path,
    where?.line,
  );
}

/**
 * The yaml package: an optional peer dependency of @conclave/sdk, loaded only for a YAML
 * configuration, so a worker that reads none (or reads JSON) installs no YAML parser.
 */
async function yamlPackage(path: string): Promise<typeof import('yaml')> {
  try {
    return await import('yaml');
  } catch (e) {
    if ((e as { code?: unknown }).code !== 'ERR_MODULE_NOT_FOUND') throw e;
    throw new MigrationConfigError(
      `leader migration configuration "${path}" is YAML, and reading YAML needs the yaml package (an optional peer dependency of @conclave/sdk): install it (npm i yaml@2), or write the configuration as JSON in a file ending in .json.`,
      path,
    );
  }
}

async function parseText(path: string, text: string): Promise<unknown> {
  if (extname(path).toLowerCase() === '.json') {
    // a byte order mark (Notepad, PowerShell 5) is no syntax error: JSON.parse refuses it, the YAML parser and Node's require skip it
    const json = text.startsWith('\uFEFF') ? text.slice(1) : text;
    try {
      return JSON.parse(json);
    } catch (e) {
      const reason = reasonOf(e);
      throw syntaxError(path, 'JSON', reason, jsonErrorPosition(reason, json));
    }
  }
  // Nothing is printed: a warning (an unknown tag such as `!include`, read as a plain string by the
  // parser) is as wrong in a configuration as an error, and is reported the same way.
  const { parseDocument } = await yamlPackage(path);
  const doc = parseDocument(text, { logLevel: 'silent' });
  const problem: YAMLError | undefined = doc.errors[0] ?? doc.warnings[0];
  if (problem) {
    const where = problem.linePos ? { line: problem.linePos[0].line, column: problem.linePos[0].col } : undefined;
    // The parser's first line, without its own "at line …" suffix and code frame.
    const reason = (problem.message.split('\n')[0] ?? problem.message).replace(/ at line \d+, column \d+:?$/, '');
    // The KEP's own example writes `component: *`, which YAML reads as an alias.
    const hint =
      problem.code === 'BAD_ALIAS'
        ? ` A bare * starts a YAML alias: quote the wildcard, component: "${ANY_COMPONENT}".`
        : problem.code === 'TAG_RESOLVE_FAILED'
          ? ' A ! starts a YAML tag, and this file format has none: quote the value.'
          : '';
    throw syntaxError(path, 'YAML', reason, where, hint);
  }
  try {
    return doc.toJS();
  } catch (e) {
    // An alias with no anchor (`component: *route`) or too many aliases: the yaml package throws a
    // ReferenceError for these while building the value.
    if (e instanceof ReferenceError) throw syntaxError(path, 'YAML', e.message, undefined, ` A * starts a YAML alias: quote the wildcard, component: "${ANY_COMPONENT}".`);
    throw e;
  }
}

/**
 * Reads a KEP-2436 configuration file (YAML, or JSON when it ends in `.json`). Everything wrong
 * with it surfaces here, before any lease is touched: an unreadable file or bad syntax is a
 * MigrationConfigError naming the file (and the line), a wrong field a ValidationError naming the
 * file and each field.
 */
export async function loadLeaderMigrationConfiguration(path: string): Promise<LeaderMigrationConfiguration> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (e) {
    throw new MigrationConfigError(
      `cannot read the leader migration configuration "${path}": ${reasonOf(e)}. Check the path and the file's permissions, or drop it to use the default configuration.`,
      path,
    );
  }
  if (text.trim() === '') {
    throw new MigrationConfigError(
      `leader migration configuration "${path}" is empty. Write leaderName and controllerLeaders in it, or drop it to use the default configuration.`,
      path,
    );
  }
  const raw = await parseText(path, text);
  return parse(LeaderMigrationConfigurationSchema, raw, `leader migration configuration "${path}"`);
}

/**
 * The configuration used when migration is enabled without a file (KEP-2436: the default "just
 * works"). As in Kubernetes every controller is `*`: during the upgrade old and new components
 * both qualify, and the shared lease decides which one runs them.
 *
 * Takes no component, unlike a `${component}-migration` name would need: the lease has to be the
 * same for every party, so it is a fixed name (`conclave-leader-migration`). A product that ships
 * its own default, as Kubernetes does with `cloud-provider-extraction-migration`, passes its
 * migration's name; that also keeps two unrelated migrations in one leases table apart.
 */
export function defaultLeaderMigrationConfiguration(
  controllers: readonly string[],
  leaderName: string = DEFAULT_MIGRATION_LEADER_NAME,
): LeaderMigrationConfiguration {
  return parse(
    LeaderMigrationConfigurationSchema,
    { kind: 'LeaderMigrationConfiguration', leaderName, resourceLock: 'leases', controllerLeaders: controllers.map((name) => ({ name, component: ANY_COMPONENT })) },
    'default leader migration configuration',
  );
}

/** How a component is started, in the terms of KEP-2436's two flags. */
export interface LeaderMigrationOptions {
  /** `--enable-leader-migration`. */
  enabled: boolean;
  /** `--leader-migration-config`; empty counts as not given. */
  configPath?: string | undefined;
  /** This component, as `controllerLeaders[].component` names it. */
  component: string;
  /** The controllers this component's default configuration migrates. */
  defaultControllers?: readonly string[] | undefined;
  /** The default configuration's lease. @default DEFAULT_MIGRATION_LEADER_NAME */
  defaultLeaderName?: string | undefined;
}

/** LeaderMigrationOptions as checked: an unknown key or a wrong type is a ValidationError naming it. */
const LeaderMigrationOptionsSchema = z.strictObject(
  {
    enabled: z.boolean(),
    configPath: z.string().optional(),
    component: ThisComponent,
    defaultControllers: z.array(z.string()).readonly().optional(),
    defaultLeaderName: z.string().optional(),
  },
  { error: optionErrors('resolveLeaderMigration', 'enabled and component', { configFile: 'the file is configPath here (--leader-migration-config)', config: 'the file is configPath here (--leader-migration-config)' }) },
);

/**
 * Applies KEP-2436's flag rules once at start-up, so a component either runs with a valid
 * migration configuration, runs without migration, or does not start: a file given while
 * migration is off is an error (the operator meant something the component would ignore);
 * enabled without a file means the default; neither means no migration (undefined). An unknown
 * option or a wrong type (`configFile`, `enabled: 'true'`) is a ValidationError naming it, never
 * read as a flag left out.
 */
export async function resolveLeaderMigration(opts: LeaderMigrationOptions): Promise<LeaderMigrationConfiguration | undefined> {
  // checked first: a misspelt flag (`configFile`, `enable`) read as left out would mean no migration, or the default
  opts = parse(LeaderMigrationOptionsSchema, opts, 'resolveLeaderMigration options');
  const given = opts.configPath !== undefined && opts.configPath !== '';
  if (!opts.enabled) {
    if (!given) return undefined;
    throw new MigrationConfigError(
      `${opts.component}: a leader migration configuration ("${opts.configPath}") was given but leader migration is not enabled. Enable leader migration, or drop the configuration file.`,
      opts.configPath,
    );
  }
  if (given) return loadLeaderMigrationConfiguration(opts.configPath!);
  if (!opts.defaultControllers || opts.defaultControllers.length === 0) {
    // A default that migrates nothing would let the operator believe a migration is under way.
    throw new MigrationConfigError(
      `${opts.component}: leader migration is enabled without a configuration file, and ${opts.component} has no default migration. Give a configuration file, or disable leader migration.`,
    );
  }
  try {
    return defaultLeaderMigrationConfiguration(opts.defaultControllers, opts.defaultLeaderName);
  } catch (e) {
    if (!(e instanceof ValidationError)) throw e;
    // the caller gave defaultControllers and defaultLeaderName, not a configuration: name those
    const asOption = (text: string) => text.replace(/controllerLeaders\[(\d+)\](\.name)?/g, 'defaultControllers[$1]');
    throw new ValidationError(
      `leader migration options of ${opts.component} (its default configuration)`,
      e.issues.map(({ field, message }) => ({ field: field === 'leaderName' ? 'defaultLeaderName' : asOption(field), message: asOption(message) })),
    );
  }
}

/** Where each of a component's controllers runs. */
export interface ControllerAssignment {
  /** Under the component's own lease: not part of the migration. */
  primary: string[];
  /** Under the migration lease (`config.leaderName`): listed for this component or for `*`. */
  migration: string[];
  /** Listed for another component: that component runs them, this one must not. */
  notHere: string[];
}

/**
 * Splits this component's controllers between its two leases (Kubernetes' migrated, non-migrated
 * and unowned). Pure, so a component can log or check its share before it starts anything.
 * Controllers keep their given order in each list.
 */
export function assignControllers(config: LeaderMigrationConfiguration | undefined, component: string, controllers: readonly string[]): ControllerAssignment {
  const out: ControllerAssignment = { primary: [], migration: [], notHere: [] };
  const listedFor = new Map((config?.controllerLeaders ?? []).map((c) => [c.name, c.component]));
  for (const name of controllers) {
    const owner = listedFor.get(name);
    if (owner === undefined) out.primary.push(name);
    else if (owner === component || owner === ANY_COMPONENT) out.migration.push(name);
    else out.notHere.push(name);
  }
  return out;
}

/**
 * What is wrong with each entry of `config` that gives this component by name a controller it does
 * not have. A misspelt name leaves the controller it means unlisted, so each party runs it under
 * its own lease, two at once; a controller the component lacks runs nowhere while this component
 * holds the migration lease. An entry for `*` naming none of this component's controllers is
 * judged only when it is a near miss of one that no entry lists (`cloud-rout` beside an unlisted
 * `cloud-route`): that one is the misspelling's, run under each party's own lease; otherwise
 * KEP-2436's shared configuration lists every migrated controller for `*`, and a party without one
 * of them skips it (as Kubernetes' does). An entry for another component is that component's business.
 */
function unrunnableEntries(config: LeaderMigrationConfiguration, component: string, controllers: readonly string[]): string[] {
  const listed = new Set(config.controllerLeaders.map((c) => c.name));
  // this component's controllers under its own lease: those no entry lists
  const unlisted = controllers.filter((c) => !listed.has(c));
  return config.controllerLeaders.flatMap(({ name, component: owner }, i) => {
    if (controllers.includes(name)) return [];
    if (owner === component)
      return [
        `controllerLeaders[${i}].name "${name}" is listed for ${component}, which has no controller of that name${unknownKeyHint(name, controllers)}: correct the name, or list the controller under the component that runs it`,
      ];
    const near = owner === ANY_COMPONENT ? unknownKeyHint(name, unlisted) : '';
    if (!near.startsWith(' (did you mean')) return [];
    return [
      `controllerLeaders[${i}].name "${name}" (for "${ANY_COMPONENT}") is no controller of ${component}${near}: the controller it means, unlisted, runs under each party's own lease, two at once. Correct the name in every party's configuration; if "${name}" is another component's controller, list it for that component rather than "${ANY_COMPONENT}"`,
    ];
  });
}

/**
 * The term a controller runs in: the lease it runs under (the component's own, or the migration
 * lease), that lease's term, and writes fenced by this term alone (LeadingTerm: `fencedWrite`,
 * `fencedItemWrite`), refused once it ended, even when this process leads the lease again (a
 * migrated controller's also once the primary term it ran in ended: a FencingError, or a
 * LeaseLostError for one in flight then, which lands, if ever, only while the migration lease's row
 * is in its term and, for a `fencedWrite`, the primary lease's row in the primary term). Its
 * work should write through them: a bare token (fencedTransactWrite on `{ table, leaseName, term }`,
 * fencedItemWrite on `fencingToken`) still passes the fence after the term ended while the lease row
 * is still in it, or on an item no newer term has written.
 */
export interface ControllerTerm extends Readonly<Term>, LeadingTerm {
  /** The lease the controller runs under: the primary lease, or the migration lease (`leaderName`). */
  readonly leaseName: string;
}

/**
 * A controller: runs until `signal` aborts (leadership lost, a migrated controller's of either
 * lease, or shutdown), in `term`, through which
 * it writes (fenced by that term).
 */
export type Controller = (signal: AbortSignal, term: ControllerTerm) => Promise<void> | void;

/** How a campaign steps down (StartElector's `how`). */
export interface CampaignOptions {
  /**
   * The term ends as soon as the campaign's signal aborts (handed to the lease's successor then, or
   * released), instead of leading on to its next renewal as a LeaderElector with an heir does on a
   * cancel. runWithLeaderMigration asks it of the migration lease's campaign: its term ends with the
   * primary term.
   */
  readonly promptly?: boolean;
  /**
   * Set on the migration lease's campaign (runWithLeaderMigration): the party campaigning.
   * electorStarter's elector stands there as `<identity>/<component>` (migrationIdentity), so two
   * components given one identity (one per host) are two candidates of the migration lease, not
   * one name claimed twice; and its candidacy carries `labels` (the party's configuration, for the
   * other parties to compare with theirs).
   */
  readonly party?: MigrationParty;
}

/** A party of a leader migration, as its campaign for the migration lease says it (CampaignOptions.party). */
export interface MigrationParty {
  /** The component, as `controllerLeaders[].component` names it. */
  readonly component: string;
  /** What its candidacy carries: the migration's controllers and their digest, and the component. */
  readonly labels: Readonly<Record<string, string>>;
}

/** What a StartElector that reads the candidates table can do for runWithLeaderMigration besides campaigning (electorStarter's can). */
export interface MigrationSupport {
  /**
   * Throws what the migration lease's elector for `party` would be refused with (its identity
   * with the component too long, too many labels), so that runWithLeaderMigration fails before
   * any lease is taken rather than when it first campaigns for the migration lease.
   */
  check(party: MigrationParty): void;
  /**
   * Until `signal` aborts: reads `leaseName`'s candidates at once and then every lease duration,
   * and tells onError each Error `look` returns for them. A read that fails is skipped (the next
   * look reads again); coordinated mode only (NoCoordination has no candidates: resolves at once).
   */
  watch(leaseName: string, look: (candidates: readonly Candidate[]) => readonly Error[], signal: AbortSignal): Promise<void>;
}

/**
 * Campaigns for `leaseName` until `signal` aborts, calling `onStartedLeading` with a signal that
 * aborts when that leadership ends and the term it holds (fencing token and holder, and the
 * LeaderElector's LeadingTerm: writes in that term only); resolves once `signal` has aborted. The
 * LeaderElector's shape. `how.promptly`: the term ends as `signal` aborts; `how.party`: the
 * migration lease's campaign (CampaignOptions). `migration`, when there: what runWithLeaderMigration
 * also asks of it (MigrationSupport; electorStarter's has it).
 */
export type StartElector = ((
  leaseName: string,
  onStartedLeading: (signal: AbortSignal, term: Term & LeadingTerm) => Promise<void> | void,
  signal: AbortSignal,
  how?: CampaignOptions,
) => Promise<void>) & { readonly migration?: MigrationSupport };

/**
 * The name a component's elector stands under on the migration lease: `<identity>/<component>`.
 * Each component's primary lease is its own, so one identity per host (or per anything wider than
 * a component) is unique there; the migration lease is shared by every component, and there it
 * would be one name claimed by two processes (DuplicateIdentityError, ending the run).
 */
export const migrationIdentity = (identity: string, component: string): string => `${identity}/${component}`;

/** The labels on a party's candidacy for the migration lease (MigrationParty.labels). */
const LABEL = {
  /** A digest of the controllers the configuration migrates (controllerDigest). */
  digest: 'conclave.io/leader-migration-digest',
  /** Those controllers, sorted, comma-separated (cut at 256 characters: the digest decides). */
  controllers: 'conclave.io/leader-migration-controllers',
  /** The party's component. */
  component: 'conclave.io/leader-migration-component',
} as const;

/** The controllers a configuration migrates, sorted: what every party of one migration must agree on. */
const migratedNames = (config: LeaderMigrationConfiguration): string[] => config.controllerLeaders.map((c) => c.name).sort();

/**
 * A digest of the controllers `config` migrates, by name alone: each party's component for a
 * controller may differ (KEP-2436's own example moves them from one component to the other across
 * versions, each side listing them for its own), the set of names may not.
 */
const controllerDigest = (config: LeaderMigrationConfiguration): string =>
  createHash('sha256').update(JSON.stringify(migratedNames(config))).digest('hex').slice(0, 16);

const listed = (names: string): string => (names.length <= 256 ? names : `${names.slice(0, 253)}...`);

/** The party `component` is in the migration `config` describes. */
function migrationParty(config: LeaderMigrationConfiguration, component: string): MigrationParty {
  return { component, labels: { [LABEL.digest]: controllerDigest(config), [LABEL.controllers]: listed(migratedNames(config).join(',')), [LABEL.component]: component } };
}

/**
 * The migration lease's candidates whose configuration migrates other controllers than this
 * party's, each once per run (`told`): a controller one party lists and another does not runs
 * under the migration lease in the one and under its own lease in the other, both at once.
 */
function otherConfigurations(config: LeaderMigrationConfiguration, party: MigrationParty, candidates: readonly Candidate[], told: Set<string>): Error[] {
  const mine = party.labels[LABEL.digest];
  return candidates.flatMap((c) => {
    const theirs = c.labels?.[LABEL.digest];
    // a row without it: a candidate of an SDK before the label, or no party of a migration; nothing to compare
    if (theirs === undefined || theirs === mine || told.has(`${c.name}\u0000${theirs}`)) return [];
    told.add(`${c.name}\u0000${theirs}`);
    const who = c.labels?.[LABEL.component];
    // no controller in common: likely two migrations on one lease, where only its holder's controllers run
    const ours = new Set(migratedNames(config));
    const apart = !(c.labels?.[LABEL.controllers] ?? '').split(',').some((name) => ours.has(name));
    return [
      new MigrationConfigError(
        `${party.component}: the parties of leader migration "${config.leaderName}" migrate different controllers: ${party.component} migrates [${party.labels[LABEL.controllers]}] (digest ${mine}), ` +
          `candidate "${c.name}"${who ? ` (${who})` : ''} of the migration lease migrates [${c.labels?.[LABEL.controllers] ?? '?'}] (digest ${theirs}). ` +
          'A controller one of them lists and the other does not runs in both at once (under the migration lease in one, its own lease in the other), or in neither. ' +
          'KEP-2436: every party of a migration has the same leaderName and lists the same controllers in controllerLeaders (only a controller\'s component may differ); give every party the same configuration before the rollout goes on.' +
          (apart
            ? ` If these are two separate migrations, give each its own lease: a leaderName of its own (resolveLeaderMigration's defaultLeaderName, or leaderName in the configuration file); on one lease only its holder's controllers run.`
            : ''),
      ),
    ];
  });
}

/** Looks of the migration lease's candidates (a lease duration apart) a component must be missing from before it is told: a party starting meanwhile has campaigned by the second. */
const LOOKS_MISSED = 2;

/**
 * The components `config` lists controllers for by name that no candidate of the migration lease
 * has stood for, on LOOKS_MISSED looks running (`missed`), each once per run (`told`): a party runs
 * the controllers listed for it under the migration lease, campaigning whenever it leads its own,
 * so controllers listed for a component that never stands (`cmm` for `ccm`, or one not started
 * with leader migration) run nowhere (KEP-2436's named risk).
 */
function componentsNotStanding(config: LeaderMigrationConfiguration, party: MigrationParty, candidates: readonly Candidate[], missed: Map<string, number>, told: Set<string>): Error[] {
  const standing = new Set([party.component, ...candidates.flatMap((c) => c.labels?.[LABEL.component] ?? [])]);
  const owners = [...new Set(config.controllerLeaders.map((c) => c.component))].filter((o) => o !== ANY_COMPONENT);
  return owners.flatMap((owner) => {
    if (standing.has(owner)) {
      missed.delete(owner);
      return [];
    }
    const looks = (missed.get(owner) ?? 0) + 1;
    missed.set(owner, looks);
    if (looks < LOOKS_MISSED || told.has(`component\u0000${owner}`)) return [];
    told.add(`component\u0000${owner}`);
    const names = config.controllerLeaders.filter((c) => c.component === owner).map((c) => c.name);
    const near = unknownKeyHint(owner, [...standing]);
    return [
      new MigrationConfigError(
        `${party.component}: controllerLeaders lists [${names.join(', ')}] for component "${owner}"${near.startsWith(' (did you mean') ? near : ''}, and no candidate of the migration lease "${config.leaderName}" is of that component (they are of ${[...standing].join(', ')}): ` +
          `those controllers run nowhere until a party of "${owner}" stands for it (KEP-2436: a controller can end up running in no component). If "${owner}" is misspelt, correct it in every party's configuration; else start ${owner} with leader migration enabled and this configuration.`,
      ),
    ];
  });
}

/** What runWithLeaderMigration needs; the elector is injected so this file stays free of DynamoDB. */
export interface LeaderMigrationRun {
  /** Campaigns for a lease (electorStarter makes one of LeaderElectors). */
  startElector: StartElector;
  /** This component's controllers by name. */
  controllers: ReadonlyMap<string, Controller> | Readonly<Record<string, Controller>>;
  /** This component, as `controllerLeaders[].component` names it. */
  component: string;
  /** The component's own lease. */
  primaryLeaseName: string;
  /** From resolveLeaderMigration; undefined runs everything under the primary lease. */
  config: LeaderMigrationConfiguration | undefined;
  /** Shutdown. */
  signal: AbortSignal;
}

const aFunction = (what: string) => z.custom<StartElector>((v) => typeof v === 'function', { error: `must be a function (${what})` });
/** LeaderMigrationRun as checked: a missing or unknown field, or a controller that is no function, is a ValidationError naming it. */
const LeaderMigrationRunSchema = z.strictObject(
  {
    startElector: aFunction('electorStarter(options) makes one'),
    controllers: z.custom<LeaderMigrationRun['controllers']>(
      (v) => typeof v === 'object' && v !== null && (v instanceof Map ? [...v.values()] : Object.values(v)).every((c) => typeof c === 'function'),
      { error: 'must be a Map or a record of controllers by name, each a function (signal, term)' },
    ),
    component: ThisComponent,
    // checked here, not first by the elector: it would name its own option, leaseName
    primaryLeaseName: z
      .string()
      .min(1, "must not be empty: give the component's own lease (each component has one, different from the migration lease)")
      .refine((n) => LeaseName.safeParse(n).success, {
        message: "must be a lease name (letters, digits, . _ : / -, starting with a letter or digit, at most 253 characters): give the component's own lease such a name",
        when: ownChecksPassed,
      }),
    // checked field by field: a misspelt leaderName campaigned for the lease `undefined` and ran no migrated controller
    config: LeaderMigrationConfigurationSchema.optional(),
    signal: z.custom<AbortSignal>((v) => v instanceof AbortSignal, { error: "must be an AbortSignal (an AbortController's signal): it stops the run" }),
  },
  { error: optionErrors('runWithLeaderMigration', 'startElector, controllers, component, primaryLeaseName, config and signal') },
);

/**
 * Runs a component's controllers under the lease each belongs to. As in Kubernetes' controller
 * managers, the migration lease is campaigned for only while this process leads its primary lease,
 * and given up with it: otherwise one replica could lead the primary lease while another replica of
 * the same component held the migration lease. The migrated controllers run only while both terms
 * are held: their signal aborts, and their term's writes are refused (one in flight abandoned with
 * a LeaseLostError; a `fencedWrite`'s transaction checks the primary lease's row too, so DynamoDB
 * refuses it once that row names another term), the moment the primary term ends, so that a replica with migration off
 * (KEP-2436's last step), leading the primary lease next and running them under it, never runs
 * them while this one does; their stopping then (a rejection included) is no failure of the
 * migration term. The migration term itself ends just after: once its lease has been read to hand
 * it over (one round trip; never later than its renew deadline), not at its next renewal: handed to
 * its successor then, or released (`how.promptly` of the StartElector). A component that runs none of the migrated
 * controllers does not campaign at all, so it can never hold the migration lease while running
 * nothing under it. Each controller is given the term of the lease it runs under (ControllerTerm):
 * it writes through it, in that term only, as a LeaderElector's onStartedLeading does. A failing controller
 * rejects `onStartedLeading`; what follows is the elector's policy. Resolves once `signal` has
 * aborted and both electors have stepped down (the controllers are not waited for, as an elector's
 * run() does not wait for its work). Rejects, after stepping down, with what either elector's
 * run() rejects with (what can never succeed: a bad option, a missing table). A field missing,
 * unknown or of the wrong type is a ValidationError naming it, before any lease is touched; so is
 * a MigrationConfigError for a configuration that names this component's own lease, or that lists
 * a controller for this component by name which is none of `controllers`, or for `*` a near miss of one it would run under its own lease (see unrunnableEntries),
 * and a ValidationError for an identity that is too long with the component (see below).
 *
 * The rule of KEP-2436, which nothing here can enforce across processes: every party of a migration
 * (every replica of every component taking part, old version and new) has the same `leaderName`
 * and lists the same controllers in `controllerLeaders` (a controller's `component` may differ
 * between versions: the KEP's own example lists them for the old component in its old release and
 * for the new one in the next). A controller one party lists and another does not runs in both at
 * once: under the migration lease in the one and under its own lease in the other; parties with
 * different `leaderName`s campaign for different leases and run every migrated controller twice.
 * So the steps are the KEP's: enable migration, with the configuration, on every replica of the
 * old component first; then roll the new component out with migration enabled and the same
 * configuration (and the old one, upgraded, no longer running those controllers); once every
 * replica is upgraded, disable migration on the new component. A rolling change of which
 * controllers are listed breaks the rule while it rolls: make it with the parties stopped.
 *
 * What it can see of a breach of that rule it tells onError (through `startElector.migration`:
 * electorStarter's, coordinated mode only): while it leads its primary lease, each party reads the
 * migration lease's candidates every lease duration, and a candidate whose configuration migrates
 * other controllers (a digest of the sorted names on its candidacy's labels) is a
 * MigrationConfigError naming both parties and both lists, once per candidate and configuration;
 * so is a component `controllerLeaders` lists controllers for that no candidate stands for, on two
 * looks running (misspelt, say: its controllers run nowhere). Different `leaderName`s (two leases, nobody meets) and a party with migration disabled (it
 * campaigns for no migration lease) cannot be seen this way.
 *
 * The migration lease's elector stands as `<identity>/<component>` (migrationIdentity): the lease's
 * holder names the component that runs the migrated controllers, and two components given one
 * identity (the host's name) are two candidates there, not a duplicate identity that would end the
 * run of the second to campaign.
 */
export async function runWithLeaderMigration(run: LeaderMigrationRun): Promise<void> {
  // checked first: a run missing a field failed deep inside ("Cannot convert undefined or null to object")
  parse(LeaderMigrationRunSchema, run, 'runWithLeaderMigration options');
  const { startElector, component, primaryLeaseName, config, signal } = run;
  if (config && config.leaderName === primaryLeaseName) {
    throw new MigrationConfigError(
      `${component}: the migration lease "${config.leaderName}" is ${component}'s own lease; give leaderName a name of its own, shared by every party of the migration.`,
    );
  }
  const table: ReadonlyMap<string, Controller> = run.controllers instanceof Map ? run.controllers : new Map(Object.entries(run.controllers));
  const unrunnable = config ? unrunnableEntries(config, component, [...table.keys()]) : [];
  if (unrunnable.length > 0) throw new MigrationConfigError(`${component}: ${unrunnable.join('; ')}`);
  const { primary, migration } = assignControllers(config, component, [...table.keys()]);
  const party = config ? migrationParty(config, component) : undefined;
  // refused now, before any lease is taken: an identity too long with the component would end the run at its first migration campaign
  if (party && migration.length > 0) startElector.migration?.check(party);
  // `within`: the signal of the primary term the migration lease is campaigned for in (the migrated
  // controllers'). They run, and write, only while both terms are held: the migration term ends after
  // the primary term, once its elector has read the migration lease to hand it over, and a replica of
  // this component with migration off may lead the primary lease, and run the same controllers under
  // it, before that read is answered. `within.term`: that primary term, whose lease row each of their
  // transactions checks too, so that one still on the network as it ends lands in neither term
  const runEach = (names: string[], leaseName: string, within?: { signal: AbortSignal; term: Term }) => async (leading: AbortSignal, term: Term & LeadingTerm) => {
    const signal = within ? AbortSignal.any([leading, within.signal]) : leading;
    if (signal.aborted) return; // won as the primary term ended: nothing starts
    const ended = `the term of lease "${primaryLeaseName}" it ran in has ended (migrated controllers write only while both terms are held)`;
    const inBoth = <T>(write: () => Promise<T>): Promise<T> => {
      if (!within) return write();
      if (within.signal.aborted) return Promise.reject(new FencingError(leaseName, term.fencingToken, ended));
      // one unanswered as the primary term ends is abandoned, as the elector abandons one at its own term's end
      return untilTermEnds(within.signal, () => new LeaseLostError(leaseName, term.fencingToken, stopReason(within.signal.reason)), write);
    };
    const primaryTerm = within && { leaseName: primaryLeaseName, term: { holderIdentity: within.term.holderIdentity, fencingToken: within.term.fencingToken }, refused: ended };
    const held: ControllerTerm = Object.freeze({
      leaseName,
      fencingToken: term.fencingToken,
      holderIdentity: term.holderIdentity,
      fencedWrite: primaryTerm ? (input) => inBoth(() => term.fencedWrite(alsoFencedBy(input, primaryTerm))) : term.fencedWrite,
      // (an item's fence is a token of one lease: no second lease's term can be checked there)
      fencedItemWrite: within ? (input, attribute) => inBoth(() => term.fencedItemWrite(input, attribute)) : term.fencedItemWrite,
    });
    const work = Promise.all(names.map(async (name) => table.get(name)?.(signal, held)));
    // stopped by the primary term's end while the migration elector still leads: the work stopping as
    // asked, never a failure of the migration term (which would cost its hand-over)
    await (within ? work.catch((e: unknown) => { if (!within.signal.aborted) throw e; }) : work);
  };
  const runPrimary = runEach(primary, primaryLeaseName);
  // An elector does not wait for its onStartedLeading: a term's migration elector may still be
  // stepping down (handing the lease over, withdrawing its candidacy) when the primary term ends.
  // Each is waited for: the next primary term campaigns once the last one's elector is done (two at
  // once under one identity would claim the name from each other), and the run resolves after it.
  let migrating: Promise<void> = Promise.resolve();
  // An elector's run() rejects only for what can never succeed (a bad option, such as a session not
  // granted the migration lease; a missing table): the run ends with it, rather than the primary
  // term failing and being given up at every term.
  let fatal: { readonly error: unknown } | undefined;
  const stopAll = new AbortController();
  const campaign = (leaderName: string, leading: AbortSignal, term: Term): Promise<void> =>
    (migrating = migrating.then(async () => {
      if (leading.aborted) return;
      try {
        // given up with the primary term: promptly, not at its own next renewal
        await startElector(leaderName, runEach(migration, leaderName, { signal: leading, term }), leading, { promptly: true, ...(party ? { party } : {}) });
      } catch (e) {
        fatal ??= { error: e };
        stopAll.abort(e);
      }
    }));
  // each party that leads its primary lease compares its configuration with the migration lease's candidates', campaigning or not
  const told = new Set<string>();
  const missed = new Map<string, number>();
  const watch = (leading: AbortSignal): Promise<void> | undefined =>
    config && party && startElector.migration
      ? startElector.migration
          .watch(config.leaderName, (candidates) => [...otherConfigurations(config, party, candidates, told), ...componentsNotStanding(config, party, candidates, missed, told)], leading)
          .catch(() => undefined)
      : undefined;
  await startElector(
    primaryLeaseName,
    async (leading, term) => {
      await Promise.all([runPrimary(leading, term), config && migration.length > 0 ? campaign(config.leaderName, leading, term) : undefined, watch(leading)]);
    },
    AbortSignal.any([signal, stopAll.signal]),
  );
  await migrating;
  if (fatal) throw fatal.error;
}

/**
 * The StartElector that runWithLeaderMigration needs, made of LeaderElectors: one per lease, all
 * with the same options and candidacy (the lease name and `onStartedLeading` are the only
 * differences), except on the migration lease (`how.party`): there the elector stands as
 * `<identity>/<component>` (migrationIdentity), its candidacy's labels adding the party's
 * configuration. Each elector is validated when its lease is first campaigned for. The options are
 * LeaderElectorOptions less those two, mode by mode: coordinated with a candidacy, or NoCoordination.
 * Its `migration` (MigrationSupport) checks the migration lease's identity before any lease is
 * taken, and reads the migration lease's candidates for runWithLeaderMigration's comparison of
 * configurations (with the options' client, tables and clock; told to its onError).
 */
export function electorStarter(
  options: Omit<Extract<LeaderElectorOptions, { mode?: 'coordinated' }>, 'leaseName' | 'callbacks'> | Omit<Extract<LeaderElectorOptions, { mode: 'NoCoordination' }>, 'leaseName' | 'callbacks'>,
): StartElector {
  const given = options as { readonly candidacy?: { readonly labels?: unknown } };
  // labels the elector will judge itself when they are no record: passed on as given, never merged into one
  const labelsOf = (): Record<string, string> | undefined | false => {
    const l = given.candidacy?.labels;
    return l === undefined ? undefined : typeof l === 'object' && l !== null && !Array.isArray(l) ? (l as Record<string, string>) : false;
  };
  const withParty = (party: MigrationParty | undefined) => {
    if (!party) return options;
    const identity = migrationIdentity(options.identity, party.component);
    const own = labelsOf();
    if (!given.candidacy || own === false) return { ...options, identity };
    return { ...options, identity, candidacy: { ...given.candidacy, labels: { ...own, ...party.labels } } };
  };
  // async: options the elector refuses reject its start, as StartElector's promise says, rather than throw at the call
  const start = async (leaseName: string, onStartedLeading: Parameters<StartElector>[1], signal: AbortSignal, how?: CampaignOptions): Promise<void> => {
    const o = withParty(how?.party);
    // a process that exits while one leads (process.exit() in a controller) is told of runWithLeaderMigration, whose signal ends it, not of an elector it never had (leaving.ts)
    return electorWith({ promptly: how?.promptly === true, exits: { who: `runWithLeaderMigration "${o.identity}" of lease "${leaseName}"`, call: 'runWithLeaderMigration' } }, {
      ...o,
      leaseName,
      callbacks: {
        // the term's own writes (LeadingTerm), not the elector's: a controller outliving its term never writes in a later one
        onStartedLeading: (leading, term) => onStartedLeading(leading, { fencingToken: term.fencingToken, holderIdentity: o.identity, fencedWrite: term.fencedWrite, fencedItemWrite: term.fencedItemWrite }),
      },
    } as LeaderElectorOptions).run(signal);
  };
  const migration: MigrationSupport = {
    check(party) {
      // an identity bad on its own is the primary lease's elector's to name
      if (!Name.safeParse(options.identity).success) return;
      const identity = migrationIdentity(options.identity, party.component);
      const bad = Name.safeParse(identity);
      const issues = bad.success ? [] : [{ field: 'identity', message: `"${identity}", the identity with the component, is what the migration lease's elector stands as, and it ${bad.error.issues[0]?.message ?? 'is not a name'}: give a shorter identity` }];
      const own = labelsOf();
      const count = own ? Object.keys({ ...own, ...party.labels }).length : 0;
      if (count > MAX_LABELS) issues.push({ field: 'candidacy.labels', message: `must have at most ${MAX_LABELS - Object.keys(party.labels).length} labels: the migration lease's candidacy adds ${Object.keys(party.labels).length} (${Object.keys(party.labels).join(', ')})` });
      if (issues.length > 0) throw new ValidationError(`electorStarter options for the migration lease of ${party.component}`, issues);
    },
    async watch(leaseName, look, signal) {
      if ((options as { mode?: string }).mode === 'NoCoordination' || !given.candidacy) return;
      const tables = TablesSchema.safeParse(options.tables);
      if (!tables.success) return; // the elector names it
      const clock: Clock = options.clock ?? systemClock;
      const everyMs = typeof options.leaseDurationMs === 'number' && options.leaseDurationMs > 0 ? options.leaseDurationMs : 15_000;
      const candidates = new CandidateStore(boundedClient(options.client, clock, requestBoundMs(everyMs), signal), tables.data.candidates, options.multiRegion === true);
      const told = errorSink(options.onError, `leader migration lease "${leaseName}"`, clock);
      while (!signal.aborted) {
        try {
          for (const e of look((await candidates.list(leaseName)).candidates)) told(e);
        } catch {
          // not read this time (the electors tell DynamoDB's faults): the next look reads again
        }
        await clock.sleep(everyMs, signal);
      }
    },
  };
  return Object.assign(start, { migration });
}

/**
 * `conclave`: the operator CLI. Commander splits argv; zod schemas (args.ts) parse every value;
 * the commands are plain functions of a context (tests run them in-process on DynamoDB Local).
 */
import { existsSync, readFileSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { isatty } from 'node:tty';
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { Command, CommanderError } from 'commander';
import type * as z from 'zod';
import { systemClock, type Clock } from '../clock.js';
import { DETAIL_TYPES } from '../events/schemas.js';
import { ValidationError, parse } from '../schemas/validation.js';
import { tableState } from '../stores/table-state.js';
import { TABLE_WAIT_MS, TableWait, isMissingTable } from '../table-wait.js';
import { KNOWN_STRATEGIES } from '../schemas/strategy.js';
import { electionConfig, type ElectionConfig } from '../schemas/config.js';
import { CandidatesArgs, EventsArgs, LeaseArg, PreemptArgs, ReleaseArgs, SetLocationsArgs, SetPriorityArgs, SetStrategyArgs, WatchArgs, globalOptions, parseElectionConfig, type GlobalOptions } from './args.js';
import { DEFAULT_SETTINGS, cliContext, clientFor, configFileRegion, configuredEndpoint, realPace, type CliContext, type Pace, type Progress, type Sink, type Target } from './context.js';
import { credentialsWaitLine, tellCredentialsWait } from './credentials-wait.js';
import { describeLease } from './describe.js';
import { ACTIVE_NOT_FOUND_CHECK, CliError, InterruptedError, LOCAL_REGION_FIX, activeNotFound, explain, isPassingFault, isThrottled } from './errors.js';
import { NotDynamoDBError } from '../dynamodb-answers.js';
import { LOCAL_REGION } from '../stores/client.js';
import { clean, joined, shown, type Named } from './format.js';
import { events } from './events.js';
import { getCandidates, getLeases } from './get.js';
import { leader } from './leader.js';
import { setLocations, setStrategy } from './lease-writes.js';
import { release } from './release.js';
import { preempt, setPriority } from './priority.js';
import { dynamoDbTime } from './server-time.js';
import { watch } from './watch.js';
import { dropTypeAhead } from './type-ahead.js';
import { watchParent } from '../util/parent-watch.js';

export interface CliIO extends Sink {
  env: Record<string, string | undefined>;
  clock: Clock;
  /** Whether to measure DynamoDB's time from its answers on `clock`, and judge by it; default: unless a clock is given. */
  serverTime?: boolean;
  /** Waiting and stopping for watch and events --follow; default: real time, stopped by Ctrl-C. */
  pace?: Pace;
  /** Where a confirmation's answer is read from; default: process.stdin. */
  stdin?: NodeJS.ReadableStream;
  /** Whether someone can answer at `stdin` (a terminal); default: whether fd 0 is a TTY. */
  stdinIsTTY?: boolean;
  /** Shows a confirmation's question, without a newline; default: stderr (or `err` when given). */
  prompt?: (text: string) => void;
  /** Whether the question is seen: default, whether fd 2 is a TTY (stderr redirected: nobody sees it), or true with `prompt` or `err` given. */
  promptIsTTY?: boolean;
}

/** One line typed at `input`; undefined when the input ends first, or `signal` aborts (Ctrl-C). */
async function readLine(input: NodeJS.ReadableStream, signal: AbortSignal): Promise<string | undefined> {
  if (signal.aborted) return undefined;
  const rl = createInterface({ input, terminal: false, crlfDelay: Infinity });
  const onAbort = () => rl.close();
  signal.addEventListener('abort', onAbort, { once: true });
  try {
    return await new Promise<string | undefined>((resolve) => {
      rl.once('line', resolve);
      rl.once('close', () => resolve(undefined));
    });
  } finally {
    signal.removeEventListener('abort', onAbort);
    rl.close();
  }
}

function defaultIO(): CliIO {
  return {
    out: (t) => process.stdout.write(`${t}\n`),
    err: (t) => process.stderr.write(`${t}\n`),
    color: Boolean(process.stdout.isTTY) && !process.env['NO_COLOR'],
    env: process.env,
    clock: systemClock,
  };
}

const EXAMPLES = `
Examples (local mode: \`npx conclave-local\`, from @conclave/testing, prints the endpoint and prefix):
  $ conclave --endpoint http://127.0.0.1:8000 --table-prefix conclave-local get leases
  $ conclave describe lease nightly-report
  $ conclave leader nightly-report -o json
  $ conclave preempt nightly-report --to worker-2 --for 15m
  $ conclave set-locations nightly-report us-east-1a us-east-1
  $ conclave events --follow --type "Leader Changed"

Writes (set-priority, set-strategy, set-locations, preempt, release) show the change and ask; -y skips the question.

Environment: CONCLAVE_ENDPOINT, CONCLAVE_TABLE_PREFIX, CONCLAVE_ELECTION_CONFIG, CONCLAVE_REQUEST_TIMEOUT, CONCLAVE_EVENTS_FILE; without --endpoint
the AWS SDK's default credential chain and region (AWS_PROFILE, AWS_REGION, ...) are used.`;

/**
 * The configuration to judge with: --election-config (or CONCLAVE_ELECTION_CONFIG) as JSON, or a
 * file holding it; else the defaults. Read before any table is: a bad one is refused at once.
 */
function judgingConfig(given: GlobalOptions['electionConfig']): { config: ElectionConfig; settings: string } {
  if (!given) return { config: electionConfig(), settings: DEFAULT_SETTINGS };
  if (given.value.trim().startsWith('{')) return { config: parseElectionConfig(given.value, `election config (${given.from})`), settings: `the election config from ${given.from}` };
  let text: string;
  try {
    text = readFileSync(given.value, 'utf8');
  } catch (e) {
    const code = (e as { code?: string }).code;
    throw new CliError(
      `${given.from}: ${code === 'ENOENT' ? 'no file at' : `cannot read (${code ?? (e as Error).message})`} ${given.value} - pass the JSON itself ({"ackWindowMs":2000}) or a file holding it, such as the coordinator function's CONCLAVE_ELECTION_CONFIG`,
    );
  }
  return { config: parseElectionConfig(text, `election config (${given.from}: ${given.value})`), settings: `the election config from ${given.from} (${given.value})` };
}

/**
 * @conclave/cli's version, from its manifest: beside dist/ in the package (dist/lib/cli/main.js),
 * under packages/cli/ in this repository (lib/cli/main.ts).
 */
function cliVersion(): string {
  for (const path of ['../../../package.json', '../../packages/cli/package.json']) {
    const file = new URL(path, import.meta.url);
    if (!existsSync(file)) continue;
    const manifest = JSON.parse(readFileSync(file, 'utf8')) as { name?: unknown; version?: unknown };
    if (manifest.name === '@conclave/cli' && typeof manifest.version === 'string') return manifest.version;
  }
  return 'unknown';
}

const YES = ['-y, --yes', 'make the change without asking (needed when stdin is not a terminal)'] as const;

/** The first wait, and the next ones while the tables are still not found, doubling up to four times it. */
const CREATING_RETRY_MS = 1_000;

/**
 * The line (stderr) a command waiting for its tables prints, once for each kind of wait: a table
 * being created, a table DescribeTable shows ACTIVE (tried once more), or, where DescribeTable is
 * refused, a table not found for up to TABLE_WAIT_MS.
 */
const waitingLine = ({ creating, active }: Pick<TableWait, 'creating' | 'active'>): string =>
  creating.length > 0
    ? `waiting for table ${creating.join(', ')}, still being created (CREATING): trying again until it answers (Ctrl-C to stop)`
    : active.length > 0
      ? `${active.length === 1 ? `table ${active[0]} answered "not found", though DescribeTable shows it` : `a table answered "not found", though DescribeTable shows ${active.join(', ')}`} ACTIVE: trying once more (a table just made may answer so for a moment)`
      : `a table was not found and DescribeTable was refused, so whether one is being created cannot be told: trying again for ${TABLE_WAIT_MS / 1000} s (Ctrl-C to stop)`;

/**
 * A table not found after the operator confirmed a change, or while a command waits on a term:
 * the command ends there, saying what it wrote (it stands) or that it wrote nothing, and which
 * table answered so and how DescribeTable shows it (being created; ACTIVE, as TableWait.active
 * tells it), or why (explain); it is not run again.
 */
async function notRunAgain(e: unknown, progress: Progress, tables: TableWait, target: Target, client: DynamoDBClient): Promise<CliError> {
  await tables.waitsFor(e); // looked at: tried again or not, the command is not
  const { creating, active } = tables;
  const told = creating.length || active.length ? undefined : await explain(e, target, client);
  const said = creating.length
    ? `table ${creating.join(', ')}, still being created (CREATING), answered "not found"`
    : active.length
      ? `${active.length === 1 ? `table ${active[0]} answered "not found", though DescribeTable shows it` : `a table answered "not found", though DescribeTable shows ${active.join(', ')}`} ACTIVE,`
      : 'a table answered "not found"';
  const why = active.length
    ? ` (a table just made may answer so for a moment, as may one deleted and created again under its name; if it goes on, it is not a table being created: ${ACTIVE_NOT_FOUND_CHECK})`
    : told instanceof Error
      ? ` (${told.message})`
      : '';
  const { written, confirmed, waiting } = progress;
  // what was written, confirmed or waited for names candidates and holders as the command showed them (escaped where they pass for one another)
  if (written) return new CliError(joined(`${said} after this command wrote (`, written.what, `), so it is not run again: what it wrote stands - \`conclave describe lease ${written.lease}\` shows the lease now, once the table answers${why}`));
  if (waiting && confirmed === undefined) {
    return new CliError(
      joined(`${said} while this command waited for `, waiting.what, `, so it is not run again (it would read the lease anew and act on the term found then): it wrote nothing; the request already on the lease stands - \`conclave describe lease ${waiting.lease}\` shows the lease now, once the table answers${why}`),
    );
  }
  return new CliError(joined(`${said} after the change was confirmed (`, confirmed?.what ?? '', `), so the command is not run again (it would read the rows anew and ask again): nothing was written - run the command again once the table answers${why}`));
}

/**
 * A passing fault (no answer in time, a connection lost, throttled past the SDK's tries), or an
 * answer not DynamoDB's (a proxy may have passed the write on), met after the command confirmed or
 * made a change: a write may have landed though its answer never came (DynamoDB applied it, the
 * connection failed after), so the message says what stands — a write that landed, or one that may
 * have — and how to see it. Anything else, and anything met by a command that sent no write (a
 * read-only one), is told as explained.
 */
export function afterChange(told: unknown, e: unknown, progress: Progress): unknown {
  if (!(told instanceof CliError) || !(isPassingFault(e) || e instanceof NotDynamoDBError)) return told;
  const { written, confirmed, inFlight } = progress;
  // throttled: DynamoDB's answer, a refusal, on every try of the write (none went unanswered): it did not land
  const refused = isThrottled(e) && !progress.mayHaveLanded;
  // a later write unanswered (release --force: the term's end, after the session's mark): it may have landed too
  if (written && inFlight?.what !== undefined) {
    const fate = refused ? ' was refused (throttled) and did not land' : ' may have landed, its answer lost';
    return new CliError(joined(told.line, '; ', inFlight.what, `${fate}; before it, this command wrote (`, written.what, `), which stands - \`conclave describe lease ${written.lease}\` shows the lease now`), told.exitCode);
  }
  if (written) return new CliError(joined(told.line, '; before that, this command wrote (', written.what, `): it stands - \`conclave describe lease ${written.lease}\` shows the lease now`), told.exitCode);
  // confirmed, but nothing sent yet (a read before the write failed): nothing can have landed
  if (confirmed === undefined || !progress.sent) return told;
  if (refused) return new CliError(joined(told.line, '; the change confirmed (', confirmed.what, ') was refused (throttled) and did not land: nothing was written - the command run again makes it'), told.exitCode);
  return new CliError(
    joined(told.line, '; the change confirmed (', confirmed.what, `) may have landed, its answer lost - \`conclave describe lease ${confirmed.lease}\` shows whether it did, and the command run again shows what is left to change (every write is conditional: none is made twice)`),
    told.exitCode,
  );
}

const AGAIN = 'and the command run again shows what is left to change (every write is conditional: none is made twice)';

/**
 * What stands when a confirmed change is interrupted: nothing sent (nothing written); a write sent
 * and unanswered (it may have landed: the command that shows whether it did), after any that
 * landed and before any not sent; or every write landed (it stands).
 */
export function interruptedLine(progress: Progress): string | Named {
  const { confirmed, written, inFlight } = progress;
  const lease = written?.lease ?? confirmed?.lease ?? '';
  const describe = `\`conclave describe lease ${lease}\``;
  if (inFlight) {
    const not = inFlight.next === undefined ? [] : ['; ', inFlight.next, ' was not sent'];
    const before = written ? ['; before it, this command wrote (', written.what, '), which stands'] : [];
    const which = written ? 'the last write did' : inFlight.next !== undefined ? 'the mark did' : 'it did';
    return joined('interrupted while writing (', inFlight.what ?? confirmed?.what ?? '', '): the write was sent and may have landed, its answer not awaited', ...not, ...before, ` - ${describe} shows whether ${which}, ${AGAIN}`);
  }
  if (written) return joined('interrupted after this command wrote (', written.what, `): it stands, and nothing after it was sent - ${describe} shows the lease now`);
  return joined('interrupted before the write was sent: nothing was written (the change confirmed: ', confirmed?.what ?? '', ') - run the command again to make it');
}

/**
 * Once a change is confirmed (Confirm.confirmed), an interrupt — Ctrl-C, SIGTERM, or `source`
 * aborting (a test's pace) — ends the command at once: `stopped` rejects with an InterruptedError
 * saying what stands (interruptedLine), and `gate` is aborted, so that no request goes out after
 * it, the command's or an AWS SDK retry's: a write not sent yet is never sent. Before the
 * confirmation Node's default ends the process (nothing written); while the command waits on a
 * term with nothing in flight (release, progress.waiting), the first interrupt is the wait's,
 * which says what stays on the lease.
 */
function interruptOnceConfirmed(progress: Progress, source: AbortSignal | undefined) {
  const gate = new AbortController();
  let stop: (e: InterruptedError) => void = () => undefined;
  const stopped = new Promise<never>((_, reject) => (stop = reject));
  stopped.catch(() => undefined); // raced by each run of the command (withDb); no run left to hear it once the command is over
  let deferred = false;
  let listening: (() => void) | undefined;
  const interrupted = (signal: AbortSignal) => {
    if (gate.signal.aborted) return;
    if (progress.waiting && !progress.inFlight && !deferred) return void (deferred = true);
    gate.abort(signal.reason);
    stop(new InterruptedError(interruptedLine(progress), signal));
  };
  return {
    stopped,
    gate: gate.signal,
    confirmed(): void {
      if (listening) return;
      // interrupted already, while a read before the confirmation was in flight (`source`, a test's
      // pace): nothing is sent after it, as after an interrupt heard from here on
      if (source?.aborted) {
        gate.abort(source.reason);
        throw new InterruptedError(interruptedLine(progress), source);
      }
      if (source) {
        const on = () => interrupted(source);
        source.addEventListener('abort', on, { once: true });
        listening = () => source.removeEventListener('abort', on);
        return;
      }
      const int = () => interrupted(AbortSignal.abort('SIGINT'));
      const term = () => interrupted(AbortSignal.abort('SIGTERM'));
      process.on('SIGINT', int).on('SIGTERM', term);
      listening = () => void process.off('SIGINT', int).off('SIGTERM', term);
    },
    close: () => listening?.(),
  };
}

/**
 * Records, on each try of `client`'s requests (the AWS SDK's own tries too) while a write is in
 * flight (Progress.inFlight), one that may have landed: a try that met no answer of DynamoDB's
 * refusing it (a 4xx: throttled, a condition failed). A write throttled on its last try may have
 * landed on an earlier one that timed out; one refused on every try did not (afterChange).
 */
function triesTold<C extends { middlewareStack: { add(mw: never, o: object): void } }>(client: C, progress: Progress): C {
  const mw = (next: (args: unknown) => Promise<unknown>) => async (args: unknown) => {
    try {
      return await next(args);
    } catch (e) {
      const status = (e as { $metadata?: { httpStatusCode?: unknown } } | undefined)?.$metadata?.httpStatusCode;
      const refusal = typeof status === 'number' && status >= 400 && status < 500 && !(e instanceof NotDynamoDBError);
      if (progress.inFlight && !refusal) progress.mayHaveLanded = true;
      throw e;
    }
  };
  client.middlewareStack.add(mw as never, { step: 'finalizeRequest', priority: 'low', name: 'conclaveTriesTold' });
  return client;
}

/** Refuses every try of `client`'s requests once `gate` is aborted (after retries: the AWS SDK's own tries too). */
function closedBy<C extends { middlewareStack: { add(mw: never, o: object): void } }>(client: C, gate: AbortSignal): C {
  const mw = (next: (args: unknown) => Promise<unknown>) => (args: unknown) => {
    if (gate.aborted) return Promise.reject(new InterruptedError('interrupted: not sent', gate));
    return next(args);
  };
  client.middlewareStack.add(mw as never, { step: 'finalizeRequest', priority: 'low', name: 'conclaveInterrupted' });
  return client;
}

function program(io: CliIO & { ask: (question: string) => Promise<string | undefined> }, pace: () => Pace, nap: (ms: number) => Promise<AbortSignal | undefined>): Command {
  const root = new Command('conclave')
    .description('Operate Conclave: coordinated leader election (KEP-4355) on DynamoDB')
    .version(cliVersion(), '-V, --version', 'the version of @conclave/cli')
    .option('--endpoint <url>', 'DynamoDB endpoint, e.g. DynamoDB Local; dummy credentials (env CONCLAVE_ENDPOINT)')
    .option('--region <region>', "AWS region (default: the AWS SDK's, e.g. AWS_REGION)")
    .option('--profile <name>', "the AWS config file's profile for credentials and region, as the AWS CLI's --profile (default: AWS_PROFILE's; not used with --endpoint)")
    .option('--table-prefix <prefix>', 'tables PREFIX-leases, PREFIX-candidates, PREFIX-identities (env CONCLAVE_TABLE_PREFIX; default "conclave")')
    .option('--leases-table <name>', "the leases table's name, overriding the prefix")
    .option('--candidates-table <name>', "the candidates table's name, overriding the prefix")
    .option('--identities-table <name>', "the identities table's name, overriding the prefix")
    .option('-o, --output <format>', 'table or json (json: the items as parsed, one document; leases with what the CLI judged, `judged`)')
    .option('--request-timeout <duration>', 'give up on a try of a DynamoDB request unanswered after DURATION (5s, 500ms; a number alone is milliseconds); 3 tries (env CONCLAVE_REQUEST_TIMEOUT; default 5000)')
    .option('--election-config <json|file>', "the coordinator's election config as deployed (JSON or a file): judge expiry, acks and staleness with it (env CONCLAVE_ELECTION_CONFIG; default: the defaults)")
    .addHelpText('after', EXAMPLES)
    // a command's --help lists --endpoint, --table-prefix, -o too: the options it runs with
    .configureHelp({ showGlobalOptions: true })
    .showHelpAfterError('(conclave --help shows the commands and options)')
    .exitOverride()
    .configureOutput({ writeOut: (s) => io.out(s.replace(/\n$/, '')), writeErr: (s) => io.err(s.replace(/\n$/, '')) });

  /** Runs `fn` with a client for the global options; known SDK errors become what-to-do messages. */
  const withDb = async (cmd: Command, fn: (ctx: CliContext) => Promise<void>): Promise<void> => {
    const opts: GlobalOptions = globalOptions(cmd.optsWithGlobals(), io.env);
    // an endpoint the environment configures (AWS_ENDPOINT_URL_DYNAMODB), which the AWS SDK sends to
    const configured = opts.endpoint ? undefined : configuredEndpoint(io.env);
    // region local with no endpoint goes to http://localhost:8000, where local mode is not (it prints
    // its port): refused before any request, so neither a missing credential (the SDK looks for one
    // first) nor a refused connection hides the fix
    if (!opts.endpoint && !configured && (opts.region ?? io.env['AWS_REGION']) === LOCAL_REGION) throw new CliError(LOCAL_REGION_FIX);
    const judging = judgingConfig(opts.electionConfig);
    const profile = opts.profile ?? (io.env['AWS_PROFILE'] || undefined);
    const progress: Progress = {};
    const interrupt = interruptOnceConfirmed(progress, io.pace?.signal);
    const client = triesTold(closedBy(clientFor(opts, configured), interrupt.gate), progress);
    // a Region from the AWS config file, named as where the command looked (the local-mode check above keeps to --region and AWS_REGION:
    // a profile's `region = local` with its own endpoint_url is the profile's business)
    const profileRegion = opts.endpoint || configured || opts.region || io.env['AWS_REGION'] ? undefined : await configFileRegion(client);
    const target = { endpoint: opts.endpoint, configured, region: opts.region, profileRegion, profile, tablePrefix: opts.tablePrefix, tables: opts.tables, requestTimeoutMs: opts.requestTimeoutMs };
    tellCredentialsWait(client, io.clock, (waited) => io.err(clean(credentialsWaitLine(waited, target.profile))));
    // the question goes to stderr: redirected (`-o json 2>/dev/null | jq`), nobody sees it, and a blind `y` wrote the change
    const stdinIsTTY = io.stdinIsTTY ?? isatty(0);
    const confirm = { yes: cmd.opts()['yes'] === true, interactive: stdinIsTTY && io.promptIsTTY !== false, ask: io.ask, confirmed: interrupt.confirmed, ...(stdinIsTTY && io.promptIsTTY === false ? { unseen: true } : {}) };
    // once interrupted, the command's run left behind (its request failing at the gate) prints nothing more
    const sink: Sink = { color: io.color, out: (t) => void (interrupt.gate.aborted || io.out(t)), err: (t) => void (interrupt.gate.aborted || io.err(t)) };
    // DynamoDB answers a table still being made (CREATING: right after `cdk deploy`, or local mode
    // making it) as one not there: looked at (DescribeTable) as the SDK does, and the command run
    // again, as a whole, while it is made (its rows read and judged anew; the request answered "not
    // found"); a table not there is explained at once. Only until the operator confirmed a change
    // (progress; every write follows one), or the command started waiting on a term: run again
    // after it, the command would ask again, or act on the rows as read then (another term,
    // another expiry), or make its change twice
    // DynamoDB's time, measured from its answers' Date headers on this machine's clock: a priority pin's expiry, and every age shown, are judged by the
    // coordinator and the workers on DynamoDB's time; a laptop 10 minutes slow wrote a 5-minute pin
    // already over, and said it was pinned
    const clock = io.serverTime ? dynamoDbTime(client, io.clock) : io.clock;
    const tables = new TableWait(Object.values(target.tables), { state: tableState(client), clock });
    let told: string | undefined; // the waiting line printed last: each kind of wait told once
    try {
      for (let tries = 1; ; tries++) {
        try {
          return await Promise.race([fn(cliContext(client, target, { clock, sink, output: opts.output, confirm, progress, ...judging })), interrupt.stopped]);
        } catch (e) {
          if ((progress.confirmed !== undefined || progress.waiting) && isMissingTable(e)) throw await notRunAgain(e, progress, tables, target, client);
          if (!(await tables.waitsFor(e))) throw tables.active.length ? activeNotFound(tables.active, target) : progress.watched?.frames && isMissingTable(e) ? deletedWhileWatching(progress.watched.frames, target) : e;
          // a table seen CREATING, ACTIVE at the next look: the wait told is ending, not another
          const line = tables.active.length && told ? told : waitingLine(tables);
          if (line !== told) io.err(clean((told = line)));
          const interrupted = await nap(Math.min(CREATING_RETRY_MS * 2 ** (tries - 1), 4 * CREATING_RETRY_MS));
          if (interrupted)
            throw new InterruptedError(`interrupted while waiting for ${tables.creating.length ? `table ${tables.creating.join(', ')} to be created` : 'a table not found'}; nothing was written`, interrupted);
        }
      }
    } catch (e) {
      throw afterChange(await explain(e, target, client), e, progress);
    } finally {
      interrupt.close();
      client.destroy();
    }
  };
  const output = (cmd: Command) => globalOptions(cmd.optsWithGlobals(), io.env).output;

  const get = root.command('get').description('list leases or candidates');
  get
    .command('leases')
    .description('every lease: holder, fencing token, strategy, election, preferred holder, renewal and expiry')
    .action((_opts, cmd: Command) => withDb(cmd, getLeases));
  get
    .command('candidates')
    .argument('[lease]', "only this lease's candidates (default: all)")
    .description('candidates: versions, priority, strategies, renewal, ping/ack, identity')
    .action((lease: string | undefined, _opts, cmd: Command) => withDb(cmd, (ctx) => getCandidates(ctx, parse(CandidatesArgs, { lease }, 'arguments'))));

  root
    .command('describe')
    .description('everything about one lease')
    .command('lease')
    .argument('<name>', 'the lease')
    .description("a lease in full, its candidates in the coordinator's order, and what the coordinator does next")
    .action((lease: string, _opts, cmd: Command) => withDb(cmd, (ctx) => describeLease(ctx, parse(LeaseArg, { lease }, 'arguments'))));

  root
    .command('leader')
    .argument('<lease>')
    .description('who leads the lease and where clients reach it (its advertised address), its fencing token and since when; "no leader" and why when nobody holds a live term')
    .action((lease: string, _opts, cmd: Command) => withDb(cmd, (ctx) => leader(ctx, parse(LeaseArg, { lease }, 'arguments'))));

  root
    .command('set-priority')
    .argument('<lease>')
    .argument('<candidate>')
    .argument('[priority]', 'a whole number >= 1; higher wins')
    .option('--for <duration>', 'the pin expires after this long, e.g. 30m, 2h')
    .option('--clear', "remove the candidate's priority")
    .option(...YES)
    .description("pin a candidate's priority (an operator's override of the version order), or clear it")
    .action((lease: string, candidate: string, priority: string | undefined, opts: { for?: string; clear?: boolean }, cmd: Command) =>
      withDb(cmd, (ctx) => setPriority(ctx, parseArgs(cmd, SetPriorityArgs, { lease, candidate, priority, for: opts.for, clear: opts.clear }, 'set-priority arguments'))),
    );

  root
    .command('set-strategy')
    .argument('<lease>')
    .argument('[strategy]', KNOWN_STRATEGIES.join(' or '))
    .option('--clear', "remove the operator's strategy: the candidates' consensus decides again")
    .option('--third-party', 'allow a strategy Conclave does not run (a third party elects)')
    .option('--create', "create the lease's row when it has none and no candidates yet (otherwise refused: a typo must not make a lease)")
    .option(...YES)
    .description("set the lease's strategy (sticky; the coordinator never overwrites it), or clear it")
    .action((lease: string, strategy: string | undefined, opts: { clear?: boolean; thirdParty?: boolean; create?: boolean }, cmd: Command) =>
      withDb(cmd, (ctx) => setStrategy(ctx, parseArgs(cmd, SetStrategyArgs, { lease, strategy, clear: opts.clear, thirdParty: opts.thirdParty, create: opts.create }, 'set-strategy arguments'))),
    );

  root
    .command('set-locations')
    .argument('<lease>')
    .argument('[locations...]', 'zones or regions, best first, e.g. us-east-1a us-east-1')
    .option('--none', "prefer no location on this lease, whatever the coordinator's preferredLocations")
    .option('--clear', "remove the lease's own preference: the coordinator's preferredLocations apply again")
    .option('--create', "create the lease's row when it has none and no candidates yet (otherwise refused: a typo must not make a lease)")
    .option(...YES)
    .description("set the zones and regions the lease's leader should run in, best first (a better-placed candidate preempts the holder), or clear them")
    .action((lease: string, locations: string[], opts: { none?: boolean; clear?: boolean; create?: boolean }, cmd: Command) =>
      withDb(cmd, (ctx) => setLocations(ctx, parseArgs(cmd, SetLocationsArgs, { lease, locations, none: opts.none, clear: opts.clear, create: opts.create }, 'set-locations arguments'))),
    );

  root
    .command('preempt')
    .argument('<lease>')
    // required, though not a requiredOption: commander checks those before unknown options, so
    // `--too w3` was told as --to missing, not as a typo of it
    .option('--to <candidate>', 'the candidate that should lead (required)')
    .option('--for <duration>', 'how long the pin holds (default 10m)')
    .option(...YES)
    .description('make a candidate the leader: a priority pin above all others; the coordinator preempts the holder')
    .action((lease: string, opts: { to?: string; for?: string }, cmd: Command) => {
      if (opts.to === undefined) return cmd.error("error: required option '--to <candidate>' not specified", { code: 'commander.missingMandatoryOptionValue' });
      return withDb(cmd, (ctx) => preempt(ctx, parseArgs(cmd, PreemptArgs, { lease, to: opts.to, for: opts.for }, 'preempt arguments')));
    });

  root
    .command('release')
    .argument('<lease>')
    .option('--force', 'end the term now without asking the holder (it may act until its next renewal, at most its lease duration from now)')
    .option('--timeout <duration>', 'how long to wait for the holder to yield (default: as long as it can take to see the request: twice the lease duration, or 5.4 lease durations for a lease held on a session; at least 10s)')
    .option(...YES)
    .description("end the holder's term: ask it to yield (preferredHolder) and wait until it has stopped and released")
    .action((lease: string, opts: { force?: boolean; timeout?: string }, cmd: Command) =>
      withDb(cmd, (ctx) => release(ctx, parseArgs(cmd, ReleaseArgs, { lease, force: opts.force, timeout: opts.timeout }, 'release arguments'), pace)),
    );

  root
    .command('watch')
    .argument('[lease]', 'one lease and its candidates (default: the leases table)')
    .option('--interval <duration>', 'how long between refreshes, e.g. 2s, 500ms, 1m (default 1s, at most 24h)')
    .option('--count <n>', 'stop after n refreshes')
    .description('redraw the leases (or one lease) every interval; holder changes and new terms are highlighted')
    .action((lease: string | undefined, opts: { interval?: string; count?: string }, cmd: Command) =>
      withDb(cmd, (ctx) => watch(ctx, parseArgs(cmd, WatchArgs, { lease, interval: opts.interval, count: opts.count }, 'watch arguments'), pace())),
    );

  root
    .command('events')
    .option('--events-file <path>', "the local system's events file (env CONCLAVE_EVENTS_FILE; default .local/events.jsonl, where `npx conclave-local` run in this folder writes them)")
    .option('-f, --follow', 'keep reading lines appended to the file')
    .option('--lease <name>', 'only events of this lease')
    .option('--type <detail-type>', `only events of this detail-type: ${DETAIL_TYPES.map((t) => `"${t}"`).join(', ')}`)
    .description("tail the local system's events (the JSON lines `npx conclave-local` writes), validated; bad lines are reported and skipped")
    .action(async (opts: { eventsFile?: string; follow?: boolean; lease?: string; type?: string }, cmd: Command) => {
      const args = parseArgs(cmd, EventsArgs, { ...opts, eventsFile: opts.eventsFile ?? (io.env['CONCLAVE_EVENTS_FILE'] || undefined) }, 'events options');
      // a file read alone: only --output matters (a bad CONCLAVE_REQUEST_TIMEOUT, which it never uses, refused it)
      const { output: format } = globalOptions({ output: cmd.optsWithGlobals()['output'] }, {});
      // the system whose lines are shown: the global --table-prefix and --endpoint (or their variables) as given; what is not, the latest system's
      const raw = cmd.optsWithGlobals();
      const tablePrefix = (raw['tablePrefix'] as string | undefined) ?? (io.env['CONCLAVE_TABLE_PREFIX'] || undefined);
      const endpoint = (raw['endpoint'] as string | undefined) ?? (io.env['CONCLAVE_ENDPOINT'] || undefined);
      await events({ sink: io, output: format }, args, pace(), { ...(tablePrefix === undefined ? {} : { tablePrefix }), ...(endpoint === undefined ? {} : { endpoint }) });
    });
  pointAtOwnHelp(root);
  return root;
}

/**
 * A command's arguments and options parsed (args.ts), each bad option named by its flag as typed
 * (`--interval: must be a duration such as ...`), as the global options are, and an argument by
 * its name (`priority: ...`): the flags come from the command's own declaration.
 */
function parseArgs<S extends z.ZodType>(cmd: Command, schema: S, raw: unknown, subject: string): z.output<S> {
  try {
    return parse(schema, raw, subject);
  } catch (e) {
    if (!(e instanceof ValidationError)) throw e;
    const flags = new Map(cmd.options.map((o) => [o.attributeName(), o.long ?? o.flags]));
    throw new ValidationError(
      e.subject,
      e.issues.map((i) => {
        const root = i.field.split(/[.[]/)[0]!;
        const flag = flags.get(root);
        return flag ? { ...i, field: `${flag}${i.field.slice(root.length)}` } : i;
      }),
    );
  }
}

/** What a usage error of `get` or `describe` adds: they take a kind first (`describe nightly-report` is a likely slip). */
const KIND_HINTS: Record<string, string> = {
  get: '`conclave get leases` lists the leases, `conclave get candidates LEASE` the candidates of one',
  describe: '`conclave describe lease NAME` describes a lease',
};

/**
 * A usage error (an unknown option or command, a missing argument) ends with the help of the
 * command it was made in, not only the root's, which lists none of a command's options; `get` and
 * `describe` also say what they take first.
 */
function pointAtOwnHelp(cmd: Command, path: readonly string[] = []): void {
  for (const sub of cmd.commands) {
    const at = [...path, sub.name()];
    const own = sub.commands.length ? `\`conclave ${at.join(' ')} --help\` shows what ${at.join(' ')} takes` : `\`conclave ${at.join(' ')} --help\` shows its arguments and options`;
    const kind = path.length === 0 ? KIND_HINTS[sub.name()] : undefined;
    if (sub.name() !== 'help') sub.showHelpAfterError(`(${kind ? `${kind}; ` : ''}${own})`);
    pointAtOwnHelp(sub, at);
  }
}

/**
 * Aborts `controller` at Ctrl-C (SIGINT) or SIGTERM, its reason the signal's name (an interrupted
 * command exits 128 + its number: InterruptedError); returns what stops listening.
 */
function abortOnInterrupt(controller: AbortController): () => void {
  const int = () => controller.abort('SIGINT');
  const term = () => controller.abort('SIGTERM');
  process.once('SIGINT', int).once('SIGTERM', term);
  return () => void process.off('SIGINT', int).off('SIGTERM', term);
}

/**
 * Whether npm runs this process (`npx conclave …`, an npm script): npm sets `npm_command` (`exec`
 * under npx). Only then is its starter's exit a stop (untilStopped): a `kill` of npx ends its
 * `sh -c`, which does not pass the signal on. A command started otherwise and left running on
 * purpose (`nohup conclave events --follow &`, `setsid`, `disown`) runs on when its shell exits.
 */
export const runByNpm = (env: NodeJS.ProcessEnv = process.env): boolean => env['npm_command'] !== undefined;

/**
 * For a command that runs until interrupted (watch, events --follow, release's wait): aborts
 * `controller` at Ctrl-C or SIGTERM (abortOnInterrupt), and, run by npm (runByNpm), as at SIGTERM
 * once the process that started it has exited (watchParent, as conclave-local does: before, `npx
 * conclave watch` ran on under init after a kill of npx, retrying a DynamoDB Local long gone);
 * returns what stops both.
 */
function untilStopped(controller: AbortController, io: Pick<CliIO, 'clock' | 'err'>): () => void {
  const stopListening = abortOnInterrupt(controller);
  const parent = runByNpm()
    ? watchParent(io.clock, (was) => {
        io.err(`note: stopped (its parent process ${was} exited)`);
        controller.abort('SIGTERM');
      })
    : { cancel() {} };
  return () => {
    stopListening();
    parent.cancel();
  };
}

/** Runs `fn` with a signal that Ctrl-C (or SIGTERM) aborts, listened for only while it runs. */
async function interruptible<T>(fn: (signal: AbortSignal) => Promise<T>): Promise<T> {
  const interrupted = new AbortController();
  const stopListening = abortOnInterrupt(interrupted);
  try {
    return await fn(interrupted.signal);
  } finally {
    stopListening();
  }
}

/** A table the watch had read, not found and not being created: deleted while it watched, not a wrong prefix (which the message for a table never found blames). */
const deletedWhileWatching = (frames: number, target: { endpoint?: string | undefined }): CliError =>
  new CliError(`a table the watch read for ${frames} frame${frames === 1 ? '' : 's'} answered "not found"${target.endpoint ? ` at ${target.endpoint}` : ''}: it was deleted (or is being deleted) while watching - the watch stopped; \`conclave get leases\` tells once the tables are back`);

/** Runs the CLI on `argv` (without node and the script); returns the exit code. */
export async function main(argv: readonly string[], given: Partial<CliIO> = {}): Promise<number> {
  const io: CliIO = { ...defaultIO(), ...given, serverTime: given.serverTime ?? given.clock === undefined, promptIsTTY: given.promptIsTTY ?? (given.prompt || given.err ? true : isatty(2)) };
  const prompt = given.prompt ?? (given.err ? io.err : (t: string) => void process.stderr.write(t));
  const stop = new AbortController();
  let stopListening: (() => void) | undefined;
  // Ctrl-C ends a question: not confirmed, nothing written, exit 130 (release listens for it too once it
  // waits on the term, watch and events from their start; every other command only while it asks)
  // at a terminal, what was typed before the question is dropped first (dropTypeAhead): only a line typed
  // once the change is shown answers it (a pipe is never asked: confirm.ts refuses without --yes)
  const atTerminal = io.stdinIsTTY ?? isatty(0);
  const asked = async (question: string, signal: AbortSignal): Promise<string | undefined> => {
    const input = io.stdin ?? process.stdin;
    if (atTerminal) {
      // the terminal's own descriptor only behind process.stdin (fd 0), never an injected stream's
      const ahead = await dropTypeAhead(input, io.stdin === undefined ? 0 : undefined);
      if (ahead.ended) return undefined;
      if (ahead.dropped) io.err('note: what was typed before this question is ignored - answer it now');
    }
    prompt(question);
    const answer = await readLine(input, signal);
    if (answer === undefined && signal.aborted) throw new InterruptedError('not confirmed (interrupted); nothing was written', signal);
    return answer;
  };
  const ask = async (question: string) => {
    if (io.pace) return asked(question, io.pace.signal);
    return interruptible((signal) => asked(question, AbortSignal.any([stop.signal, signal])));
  };
  const pace = () => {
    if (io.pace) return io.pace;
    stopListening ??= untilStopped(stop, io); // once: a command run again (a table being created) asks again
    return realPace(stop.signal);
  };
  // a wait of any command (a table being created): Ctrl-C ends it, listened for only while it
  // lasts (between waits, Ctrl-C ends the process, as in any command that does not wait);
  // the signal that interrupted it, if one did
  const nap = async (ms: number): Promise<AbortSignal | undefined> => {
    if (io.pace) {
      await io.pace.sleep(ms);
      return io.pace.signal.aborted ? io.pace.signal : undefined;
    }
    return interruptible(async (signal) => {
      await io.clock.sleep(ms, signal);
      return signal.aborted ? signal : undefined;
    });
  };
  try {
    await program({ ...io, ask }, pace, nap).parseAsync([...argv], { from: 'user' });
    return 0;
  } catch (e) {
    if (e instanceof CommanderError) return e.exitCode === 0 ? 0 : 2; // commander printed the message
    const known = e instanceof ValidationError ? new CliError(e.message) : e; // withDb explained the rest
    if (known instanceof CliError) {
      // after the ^C a terminal echoes where the cursor stands (after a question, mid-line): a line of its own
      if (known instanceof InterruptedError && known.byCtrlC && io.promptIsTTY) io.err('');
      io.err(`error: ${shown(known.line)}`); // messages quote rows and input: escaped, one line (names that pass for one another too, where marked)
      return known.exitCode;
    }
    const text = known instanceof Error ? (known.stack ?? known.message) : String(known);
    io.err(`unexpected error (a bug: please report it): ${text.split('\n').map(clean).join('\n')}`);
    return 1;
  } finally {
    stopListening?.();
  }
}

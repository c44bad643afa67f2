import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { systemClock, type Clock } from '../clock.js';
import { electionConfig, type ElectionConfig, type TableNames } from '../schemas/config.js';
import { CandidateStore } from '../stores/candidate-store.js';
import { IdentityStore } from '../stores/identity-store.js';
import { localClient } from '../stores/client.js';
import { clean, jsonText, shown, type Named } from './format.js';
import { LeaseStore } from '../stores/lease-store.js';
import type { GlobalOptions, OutputFormat } from './args.js';
import { namedRequests } from '../table-wait.js';
import { followTries } from '../connection-phase.js';
import { answersChecked } from '../dynamodb-answers.js';

/** Where a command writes: results to `out`, notes and errors to `err`. Each call is one line or more. */
export interface Sink {
  out(text: string): void;
  err(text: string): void;
  /** ANSI colours and screen redraws (a terminal, and NO_COLOR unset). */
  color: boolean;
}

/** How long-running commands (watch, events --follow) wait, and what stops them (Ctrl-C). */
export interface Pace {
  sleep(ms: number): Promise<void>;
  signal: AbortSignal;
}

/** Waiting on `clock` (the machine's by default), cut short when `signal` aborts. */
export function realPace(signal: AbortSignal, clock: Pick<Clock, 'sleep'> = systemClock): Pace {
  return { signal, sleep: (ms) => clock.sleep(ms, signal) };
}

/** How a write is confirmed (lib/cli/confirm.ts shows it and asks). */
export interface Confirm {
  /** `--yes`: no question. */
  yes: boolean;
  /** Someone can answer: stdin is a terminal, and the question is seen (stderr is one too). */
  interactive: boolean;
  /** Not interactive because stderr, where the question goes, is not a terminal (stdin is). */
  unseen?: boolean;
  /** Shows `question` (stderr) and reads one line of answer; undefined at the end of input; rejects with an InterruptedError at Ctrl-C. */
  ask(question: string): Promise<string | undefined>;
  /** Told once a change is confirmed (confirmChange): from then on main.ts catches Ctrl-C and SIGTERM, and says what stands. */
  confirmed?(): void;
}

/**
 * What a command has done so far, kept across the runs of it that a table being created makes
 * (lib/cli/main.ts withDb runs a command again, as a whole, while a table it met is being
 * created): once the operator confirmed a change (or --yes stood for it), or it started waiting on
 * a term, it is not run again. A run again reads the rows anew and asks again, or acts on what it
 * finds then: another term, another expiry, a change made twice.
 */
export interface Progress {
  /** The change the operator confirmed, in words ("change candidate w1 of lease jobs"), once confirmed (the last one). */
  confirmed?: { lease: string; what: string | Named };
  /** The term a command waits on without having asked anything (release, a request already on the lease): its lease, and the wait in words. */
  waiting?: { lease: string; what: string | Named };
  /** What the command wrote, once a write landed (the last one): the lease, and the change in words. */
  written?: { lease: string; what: string | Named };
  /** A write of the confirmed change was sent (it may have landed, its answer lost): `sending`. */
  sent?: boolean;
  /**
   * A try of a request made while a write was in flight met no refusal of DynamoDB's (no answer in
   * time, a connection lost, a 5xx): the write may have landed. Unset, a write throttled on its
   * last try was refused on each (main.ts triesTold, afterChange).
   */
  mayHaveLanded?: boolean;
  /**
   * The write sent last, not known to have landed (`sending`; `landed` clears it): what it writes
   * (undefined: the change confirmed), and the write that follows it, if any (release --force marks
   * the session, then ends the term). Told when the command is interrupted, or fails, meanwhile.
   */
  inFlight?: { what?: string | Named; next?: string | Named };
  /**
   * watch's frames printed so far and each lease's term as last drawn: a run again goes on from
   * them (`--count N` prints N frames in all; a holder changed during the wait is still told).
   */
  watched?: { frames: number; seen?: ReadonlyMap<string, { holder: string | undefined; fencingToken: number; deleted?: true }> };
}

/**
 * Records that a write of the confirmed change is being sent (`what` it writes, when not the whole
 * change confirmed; the write `next` after it): from now on a fault may come after it landed (main.ts afterChange).
 */
export const sending = (ctx: Pick<CliContext, 'progress'>, what?: string | Named, next?: string | Named): void => {
  ctx.progress.sent = true;
  ctx.progress.inFlight = { what, next };
};

/** Records a write of the command that landed: from now on a table not found ends the command, saying what was written. */
export const landed = (ctx: Pick<CliContext, 'progress'>, lease: string, what: string | Named): void => {
  ctx.progress.written = { lease, what };
  ctx.progress.inFlight = undefined;
};

/** Where DynamoDB is, as the user gave it: named in error messages. */
export interface Target {
  endpoint?: string | undefined;
  /** With no endpoint given: one configured in the environment, which the AWS SDK sends to (configuredEndpoint), as `URL (VARIABLE)`. */
  configured?: string | undefined;
  region?: string | undefined;
  /** With no --region or AWS_REGION: the Region the AWS SDK took from the AWS config file (the profile's), named in messages only. */
  profileRegion?: string | undefined;
  /** The profile the AWS SDK takes credentials from (--profile, else AWS_PROFILE), named when they cannot be loaded. */
  profile?: string | undefined;
  tablePrefix: string;
  tables: TableNames;
  /** How long a try of a request waits for its answer (--request-timeout). */
  requestTimeoutMs?: number | undefined;
}

/** Everything a command needs; tests build one around their own client and clock. */
export interface CliContext {
  client: DynamoDBClient;
  target: Target;
  leases: LeaseStore;
  candidates: CandidateStore;
  /** The identities table: where the sessions that session-held leases live by are read. */
  identities: IdentityStore;
  clock: Clock;
  /**
   * The coordinator's tuning the CLI judges with (staleness, ack window, skew margin): the deployed
   * one when given (--election-config, CONCLAVE_ELECTION_CONFIG), else the defaults.
   */
  config: ElectionConfig;
  /** Where `config` came from, in words: "the coordinator's default settings", "the election config from …". */
  settings: string;
  sink: Sink;
  output: OutputFormat;
  /** How writes are confirmed (`--yes`, or a terminal's answer). */
  confirm: Confirm;
  /** What the command has done so far (confirmed, waited on, written), across the runs of it withDb makes. */
  progress: Progress;
}

/**
 * The SDK client for the options: DynamoDB Local with dummy credentials, or the default credential
 * chain (`profile`'s when given, --profile; else AWS_PROFILE's). Each try of a request gives up after `requestTimeoutMs` (the SDK sets no timeout: on a
 * black-holed route a command would wait for TCP to give up, many minutes later).
 */
export function clientFor(opts: Pick<GlobalOptions, 'endpoint' | 'region' | 'profile' | 'requestTimeoutMs'>, configured?: string): DynamoDBClient {
  const requestHandler = { requestTimeout: opts.requestTimeoutMs, throwOnRequestTimeout: true };
  // each failed request names its table: a table not found is looked at alone (TableWait)
  // and an answer that is not DynamoDB's (an empty "200 OK" from another server on the port) is never taken for "no leases" or a write done
  // and a try that times out before it was sent is told by where it stopped (a DNS lookup, the TCP or TLS handshake)
  if (opts.endpoint) return answersChecked(namedRequests(followTries(localClient(opts.endpoint, opts.region, { requestHandler }))), opts.endpoint);
  return answersChecked(namedRequests(followTries(new DynamoDBClient({ ...(opts.region ? { region: opts.region } : {}), ...(opts.profile ? { profile: opts.profile } : {}), requestHandler }))), configured ?? `DynamoDB in region ${opts.region ?? process.env['AWS_REGION'] ?? '(default)'}`);
}

/**
 * The Region `client` takes from the AWS config file (its profile's `region`), read from the file
 * as the AWS SDK reads it, no request made; undefined when there is none (its requests then fail
 * as "Region is missing", told as such).
 */
export async function configFileRegion(client: DynamoDBClient): Promise<string | undefined> {
  try {
    const region = await client.config.region();
    return region || undefined;
  } catch {
    return undefined;
  }
}

/**
 * The endpoint the environment configures for DynamoDB, which the AWS SDK (and the AWS CLI) send
 * to when the code gives none: AWS_ENDPOINT_URL_DYNAMODB, else AWS_ENDPOINT_URL, unless
 * AWS_IGNORE_CONFIGURED_ENDPOINT_URLS is true; as `URL (VARIABLE)`. (A profile's endpoint_url is not
 * looked at: the SDK sends there too, and messages name the Region.)
 */
export function configuredEndpoint(env: Record<string, string | undefined>): string | undefined {
  if (env['AWS_IGNORE_CONFIGURED_ENDPOINT_URLS']?.toLowerCase() === 'true') return undefined;
  const from = ['AWS_ENDPOINT_URL_DYNAMODB', 'AWS_ENDPOINT_URL'].find((k) => env[k]);
  return from ? `${env[from]!.replace(/\/$/, '')} (${from})` : undefined;
}

/** Nobody to ask and no `--yes`: every write is refused. The default when none is given. */
const refuse: Confirm = { yes: false, interactive: false, ask: async () => undefined };

export const DEFAULT_SETTINGS = "the coordinator's default settings";

export function cliContext(
  client: DynamoDBClient,
  target: Target,
  rest: { clock: Clock; sink: Sink; output: OutputFormat; confirm?: Confirm; config?: ElectionConfig; settings?: string; progress?: Progress },
): CliContext {
  return {
    client,
    target,
    leases: new LeaseStore(client, target.tables.leases),
    candidates: new CandidateStore(client, target.tables.candidates),
    identities: new IdentityStore(client, target.tables.identities),
    config: electionConfig(),
    settings: DEFAULT_SETTINGS,
    confirm: refuse,
    progress: {},
    ...rest,
  };
}

/** Prints one JSON document. */
export const printJson = (ctx: Pick<CliContext, 'sink'>, value: unknown): void => ctx.sink.out(jsonText(value, 2));

/** One line of a result on stdout, escaped: it may name a holder or repeat what a worker wrote (a Named line also where its names pass for one another). */
export const say = (ctx: Pick<CliContext, 'sink'>, line: string | Named): void => ctx.sink.out(shown(line));

/** One line of a note on stderr, escaped likewise. */
export const note = (ctx: Pick<CliContext, 'sink'>, line: string | Named): void => ctx.sink.err(shown(line));

import { constants } from 'node:os';
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { ValidationError } from '../schemas/validation.js';
import { LOCAL_REGION } from '../stores/client.js';
import { ConflictError } from '../stores/errors.js';
import { conclavePrefixes, tablesThere } from '../stores/table-prefixes.js';
import { CREDENTIALS_REFUSED, NotDynamoDBError, PLAIN_HTTP_ANSWER, PLAIN_HTTP_ON_THE_WAY, refusedRegion, TLS_HANDSHAKE_FAILED, tlsRefusal, UNTRUSTED_CERTIFICATE_CODES, UNTRUSTED_CERTIFICATE_FIX } from '../dynamodb-answers.js';
import { isWrongKey } from '../table-wait.js';
import { unsentTold, unsentWhenFailed } from '../connection-phase.js';
import { DEFAULT_REQUEST_TIMEOUT_MS } from './args.js';
import type { Target } from './context.js';
import type { Named } from './format.js';

/** An expected failure: the message says what to do; printed without a stack trace. */
export class CliError extends Error {
  override readonly name = 'CliError';
  /** The message as printed: a Named one also escaped where its names pass for one another (format.ts named), as the result lines show them. */
  readonly line: string | Named;
  constructor(
    message: string | Named,
    /** 1: the user's input or the data; 2: usage (commander's own errors); 128 + a signal's number: interrupted (InterruptedError). */
    readonly exitCode = 1,
  ) {
    super(typeof message === 'string' ? message : message.text);
    this.line = message;
  }
}

/**
 * A command an interrupt ended (Ctrl-C, SIGTERM) while it waited or asked: it exits as a shell
 * shows a process the signal ended, 128 + the signal's number (Ctrl-C's SIGINT 130, SIGTERM 143).
 * `signal`'s reason names the signal (main.ts aborts with it); any other abort (a test's pace,
 * "Ctrl-C" there) is Ctrl-C's. `watch` and `events --follow` end on it as they are meant to: exit 0.
 */
export class InterruptedError extends CliError {
  /** Ctrl-C typed at a terminal, which echoes `^C` where the cursor stands: the message goes on a line of its own. */
  readonly byCtrlC: boolean;
  constructor(message: string | Named, signal: AbortSignal) {
    const named = typeof signal.reason === 'string' ? (constants.signals as Record<string, number | undefined>)[signal.reason] : undefined;
    super(message, 128 + (named ?? constants.signals.SIGINT));
    this.byCtrlC = signal.reason === 'SIGINT';
  }
}

const NETWORK_CODES = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'ECONNRESET', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH', 'EPIPE']);

/** How many names a message lists before "… and N more". */
export const LISTED = 20;

/** Lists `names` for a message, a bounded number of them. */
export function listNames(names: readonly string[], max = LISTED): string {
  if (names.length === 0) return '(none)';
  const shown = names.slice(0, max).join(', ');
  return names.length > max ? `${shown}, ... and ${names.length - max} more` : shown;
}

const THROTTLED = new Set(['ThrottlingException', 'ProvisionedThroughputExceededException', 'RequestLimitExceeded']);
/** Network failures a moment later may not meet; a host name that does not resolve (ENOTFOUND) is the target's. */
const PASSING_NETWORK_CODES = new Set(['ECONNREFUSED', 'EAI_AGAIN', 'ECONNRESET', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH', 'EPIPE', 'ECONNABORTED']);

/**
 * A fault the next request may not meet, so a command that repeats (watch) tries again: throttled
 * (after the SDK's own tries), DynamoDB's own failure (5xx), no answer in time, or a connection
 * that failed (Node puts the code on the error, or on each of an AggregateError's). Anything else
 * (a missing table, denied access, bad credentials, a malformed row) fails the same way every time.
 */
export function isPassingFault(e: unknown): boolean {
  if (!(e instanceof Error)) return false;
  if (THROTTLED.has(e.name) || e.name === 'TimeoutError') return true;
  const x = e as { code?: unknown; $fault?: unknown; $metadata?: { httpStatusCode?: number }; errors?: unknown[] };
  if (x.$fault === 'server' || (x.$metadata?.httpStatusCode ?? 0) >= 500) return true;
  if (typeof x.code === 'string' && PASSING_NETWORK_CODES.has(x.code)) return true;
  return (x.errors ?? []).some(isPassingFault);
}

/** Throttled past the SDK's tries: DynamoDB's answer refusing the request (HTTP 400), not a request unanswered. */
export const isThrottled = (e: unknown): boolean => e instanceof Error && THROTTLED.has(e.name);

/** A passing fault in words, for a line that says it is tried again: "TimeoutError: …", with Node's code where it has one. */
export function faultText(e: unknown): string {
  const { name, message, code } = e as Error & { code?: unknown };
  return `${name}${typeof code === 'string' ? ` ${code}` : ''}: ${message}`;
}

const regionOf = (t: Target) => t.region ?? process.env['AWS_REGION'];
const where = (t: Target) => (t.endpoint ? `at ${t.endpoint}` : t.configured ? `at ${t.configured}` : `in region ${regionOf(t) ?? fromConfigFile(t) ?? '(default)'}`);
/** The Region the AWS config file gave (Target.profileRegion), with the profile it came from. */
const fromConfigFile = (t: Target) => (t.profileRegion === undefined ? undefined : `${t.profileRegion} (${t.profile ? `profile ${t.profile}` : 'the default profile'})`);
/**
 * Region `local` without an endpoint: the AWS SDK sends it to http://localhost:8000 (DynamoDB
 * Local's default port), where local mode is not (it prints the port it took), so the fix is local
 * mode's endpoint, not the network (as the SDK's DynamoDBUnreachableError says).
 */
const localWithoutEndpoint = (t: Target) => !t.endpoint && !t.configured && regionOf(t) === LOCAL_REGION;
export const LOCAL_REGION_FIX = `region '${LOCAL_REGION}' is local mode's, and no endpoint was given: pass the endpoint \`npx conclave-local\` prints as --endpoint URL (or set CONCLAVE_ENDPOINT)`;

/** What to check where a table DescribeTable shows ACTIVE answers "not found" (TableWait.active): the endpoint or Region, and the name. */
export const ACTIVE_NOT_FOUND_CHECK = `check --endpoint / --region (or CONCLAVE_ENDPOINT, AWS_REGION) and the table's name (--table-prefix, --leases-table, --candidates-table, --identities-table)`;

/**
 * A table DescribeTable shows ACTIVE that a request, sent after DescribeTable said so, found none
 * of (TableWait.active): not one being created, so not waited for.
 */
export const activeNotFound = (tables: readonly string[], target: Target): CliError =>
  new CliError(
    `DescribeTable ${where(target)} says ${tables.length === 1 ? `table ${tables[0]} is` : `tables ${tables.join(', ')} are`} ACTIVE, yet a request on ${tables.length === 1 ? 'it' : 'one'} answered "not found" again after that, so it is not a table being created - ` +
      `${ACTIVE_NOT_FOUND_CHECK}; a table deleted and created again under its name may answer so for a moment: run the command again shortly`,
  );

/**
 * A region the AWS SDK refused before sending anything (--region is checked before): AWS_REGION
 * set but empty (`AWS_REGION=` from an unset CI variable, which the AWS SDK takes before the
 * profile's region), or not a region name (`'us east 1'`); else the profile's, named.
 */
function regionRefused(region: string, target: Target): CliError {
  const why = 'is not a region name (the AWS SDK refused it: not a valid host name part)';
  if (process.env['AWS_REGION'] === region) {
    return region === ''
      ? new CliError("no AWS region configured: AWS_REGION is set but empty (AWS_REGION=\"\", as an unset CI variable leaves it) - set it to a region such as eu-west-1, or unset it (empty, it hides the profile's region); or pass --region, or --endpoint URL for DynamoDB Local")
      : new CliError(`no valid AWS region configured: AWS_REGION=${JSON.stringify(region)} ${why} - set it to one such as eu-west-1, or pass --region, or --endpoint URL for DynamoDB Local`);
  }
  const profile = target.profile ? `profile ${target.profile}` : 'the default profile';
  return new CliError(
    `no valid AWS region configured: ${profile} gives region ${JSON.stringify(region)}, which ${why} - correct it in the AWS config file (~/.aws/config, or AWS_CONFIG_FILE), or pass --region (or set AWS_REGION), or --endpoint URL for DynamoDB Local`,
  );
}

/**
 * A TLS handshake that failed (EPROTO): an https:// endpoint that answers in plain HTTP (DynamoDB
 * Local, local mode: "wrong version number"), told with the http:// URL to try; any other protocol
 * failure by OpenSSL's reason. The message keeps OpenSSL's reason, not its file and line (tlsRefusal,
 * as the SDK tells it).
 */
function tlsRefused(e: Error, target: Target): CliError {
  const { reason, plainText } = tlsRefusal(e)!;
  const at = `cannot reach DynamoDB ${where(target)} (EPROTO: ${reason})`;
  if (!plainText) {
    return new CliError(`${at} - ${TLS_HANDSHAKE_FAILED}: check --endpoint (or CONCLAVE_ENDPOINT), and any proxy on the way (HTTPS_PROXY) that intercepts TLS`);
  }
  if (target.endpoint) {
    const plain = /^https:/i.test(target.endpoint) ? ` - try --endpoint ${target.endpoint.replace(/^https:/i, 'http:')}` : '';
    return new CliError(`${at} - ${PLAIN_HTTP_ANSWER}${plain}`);
  }
  if (target.configured) return new CliError(`${at} - ${PLAIN_HTTP_ANSWER}, so give the URL in that variable as http://`);
  return new CliError(`${at} - ${PLAIN_HTTP_ON_THE_WAY}: check the network path to it and any HTTPS_PROXY or HTTP_PROXY setting`);
}

/**
 * Turns the errors a user can do something about into a CliError saying what to do; anything
 * else (a bug, an unknown fault) is returned as it is.
 */
export async function explain(e: unknown, target: Target, client?: DynamoDBClient): Promise<unknown> {
  if (e instanceof CliError) return e;
  if (e instanceof ValidationError) return new CliError(e.message);
  if (e instanceof ConflictError) return new CliError(`the row changed while writing (${e.message.replace(/; read it again.*$/, '')}); nothing was written - run the command again`);
  if (!(e instanceof Error)) return e;
  // (a write this answer met may have landed: afterChange says so, with what was sent)
  if (e instanceof NotDynamoDBError) {
    return new CliError(
      `the answer ${where(target)} is not DynamoDB's (HTTP ${e.httpStatusCode ?? 'status unknown'}, ${e.sign}) - something else answers there (another server on that port, a proxy's error page): ` +
        'check --endpoint / --region (or CONCLAVE_ENDPOINT, AWS_REGION) and any HTTPS_PROXY or HTTP_PROXY setting',
    );
  }
  // the SDK's own request timeout (it carries ETIMEDOUT too), its last try never sent: told by where it stopped
  const unsent = e.name === 'TimeoutError' ? unsentWhenFailed(e) : undefined;
  if (unsent) {
    const told = unsentTold(unsent, target.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS);
    return new CliError(`cannot reach DynamoDB ${where(target)} (the last of 3 tries timed out ${told.how}) - ${told.fix}${unsent.phase === 'lookup' ? ", or raise --request-timeout above a lookup's time" : ''}`);
  }
  // the SDK's own request timeout: the endpoint took the request and gave no answer
  if (e.name === 'TimeoutError') {
    return new CliError(
      `DynamoDB ${where(target)} gave no answer within --request-timeout (${target.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS} ms, each of 3 tries) - ` +
        (localWithoutEndpoint(target) ? LOCAL_REGION_FIX : `check the network path to it${target.endpoint ? ' and --endpoint' : target.configured ? ' and the endpoint the environment gives' : ' and --region'}, or raise --request-timeout on a slow link`),
    );
  }
  const code = (e as { code?: unknown }).code;
  if (typeof code === 'string' && UNTRUSTED_CERTIFICATE_CODES.has(code)) return new CliError(`cannot reach DynamoDB ${where(target)} (${code}: ${e.message}) - ${UNTRUSTED_CERTIFICATE_FIX}`);
  if (code === 'EPROTO') return tlsRefused(e, target);
  if (typeof code === 'string' && NETWORK_CODES.has(code)) {
    return new CliError(
      target.endpoint
        ? `cannot reach DynamoDB at ${target.endpoint} (${code}) - is the local system (\`npx conclave-local\`, from @conclave/testing) running? It prints the endpoint to pass as --endpoint URL (or set CONCLAVE_ENDPOINT)`
        : target.configured
          ? `cannot reach DynamoDB at ${target.configured} (${code}) - is DynamoDB (or the local system, \`npx conclave-local\`) up there? The endpoint is the environment's: unset that variable to reach the Region's`
          : `cannot reach DynamoDB ${where(target)} (${code}) - ${localWithoutEndpoint(target) ? LOCAL_REGION_FIX : 'check the network and --region; for DynamoDB Local pass --endpoint URL'}`,
    );
  }
  if (e.name === 'ResourceNotFoundException') {
    const there = client ? await tablesThere(client) : undefined;
    const ours = Object.values(target.tables);
    const missing = there ? ours.filter((t) => !there.includes(t)) : ours;
    const prefixes = there && conclavePrefixes(there, target.tablePrefix);
    const hint = prefixes === undefined ? '' : prefixes.length ? `; the Conclave table prefixes there: ${listNames(prefixes)}` : '; there are no Conclave tables there';
    // every table listed, yet one answered "not found": being created (the command waited as long as
    // it could tell, TableWait) or deleted, not a wrong name
    if (there && missing.length === 0)
      return new CliError(`DynamoDB ${where(target)} answered "not found" on a table it lists (${listNames(ours)}): one is still being created, or being deleted - run the command again once DescribeTable shows it ACTIVE (the CLI waits for a table being created by itself where the credentials may call dynamodb:DescribeTable)`);
    return new CliError(
      `${missing.length === 1 ? `table ${missing[0]} does not exist` : `tables ${listNames(missing)} do not exist`} ${where(target)} (prefix "${target.tablePrefix}") - ` +
        `pass --table-prefix PREFIX (or CONCLAVE_TABLE_PREFIX), or name a table with --leases-table / --candidates-table / --identities-table${hint}`,
    );
  }
  // a table named (--leases-table, …) that exists but is not one of ours: DynamoDB refuses the key
  if (isWrongKey(e)) {
    const t = target.tables;
    return new CliError(
      `DynamoDB refused a request on the tables named (ValidationException: ${e.message}): one is not a Conclave table of its kind (its key differs) - ` +
        `check --leases-table, --candidates-table and --identities-table (leases ${t.leases}, candidates ${t.candidates}, identities ${t.identities}), or --table-prefix`,
    );
  }
  if (e.name === 'CredentialsProviderError' || e.name === 'TokenProviderError') {
    if (localWithoutEndpoint(target)) return new CliError(LOCAL_REGION_FIX);
    const p = target.profile;
    const check = `check with \`aws sts get-caller-identity${p ? ` --profile ${p}` : ''}\``;
    // the AWS SDK's own words where they say more than "none found": an SSO session to log in again, a role it could not assume
    if (!/^Could not load credentials from any providers/.test(e.message))
      return new CliError(`the AWS credentials${p ? ` of profile ${p}` : ''} could not be loaded (${e.name}: ${e.message}) - do what it says (an SSO session: aws sso login${p ? ` --profile ${p}` : ''}), ${check}, or pass --endpoint URL for DynamoDB Local`);
    if (p) return new CliError(`no AWS credentials found for profile ${p} - check that the AWS config file (~/.aws/config, or AWS_CONFIG_FILE) has the profile and that its credentials load (${check.replace(/^check with /, '')}), or pass --endpoint URL for DynamoDB Local`);
    return new CliError(
      'no AWS credentials found - configure them (aws configure, aws sso login with AWS_PROFILE, or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY), or pass --endpoint URL for DynamoDB Local',
    );
  }
  if (/^Region is missing/.test(e.message)) {
    // a profile named gives the Region as a rule: a misspelt one (not in the config file) gives none, and is the thing to fix
    if (target.profile) return new CliError(`no AWS region configured: profile ${target.profile} gives none - check that the AWS config file (~/.aws/config, or AWS_CONFIG_FILE) has the profile, spelt so, with a region; or pass --region (or set AWS_REGION), or --endpoint URL for DynamoDB Local`);
    return new CliError('no AWS region configured - pass --region (or set AWS_REGION), or pass --endpoint URL for DynamoDB Local');
  }
  const refused = refusedRegion(e);
  if (refused !== undefined) return regionRefused(refused, target);
  if (CREDENTIALS_REFUSED.has(e.name)) {
    return new CliError(`AWS rejected the credentials (${e.name}: ${e.message}) - refresh them (aws sso login) or check AWS_PROFILE; a signature refused as expired means this machine's clock is more than 5 minutes off`);
  }
  // still throttled after the SDK's own tries: the table's capacity (or the account's), not a bug
  if (THROTTLED.has(e.name)) {
    return new CliError(`DynamoDB ${where(target)} throttled the requests (${e.name}: ${e.message}) and the SDK's 3 tries ran out - the command stopped there; run it again in a moment (every write it makes is conditional, so a second run never applies one twice)`);
  }
  // DynamoDB's own failure (a 5xx) after the SDK's own tries: a passing fault, not a bug
  const x = e as { $fault?: unknown; $metadata?: { httpStatusCode?: number } };
  if (x.$fault === 'server' || (x.$metadata?.httpStatusCode ?? 0) >= 500) {
    return new CliError(`DynamoDB ${where(target)} failed (${e.name}: ${e.message}) and the SDK's 3 tries ran out - the command stopped there; run it again in a moment (every write it makes is conditional, so a second run never applies one twice)`);
  }
  if (e.name === 'AccessDeniedException') return new CliError(`access denied ${where(target)} (${e.message}) - the credentials need read (and for writes, UpdateItem) on the Conclave tables`);
  return e;
}

/**
 * getLeader: who leads a lease and where clients reach it, for a process that does not take part
 * (a client routing requests to the leader): etcd's election `leader()`, client-go's GetLeader().
 */
import * as z from 'zod';
import { systemClock } from '../clock.js';
import { leaderOf, type LeaderInfo, type Leadership } from '../election/leader.js';
import { effectiveLease, judgedOffNamed, judgingRow, sessionStampAt, vacancy, type SessionStamp } from '../election/vacancy.js';
import { electionConfig } from '../schemas/config.js';
import { processOf, processSessionComponents, sessionKey, type IdentityLease } from '../schemas/identity.js';
import { LeaseName } from '../schemas/lease.js';
import { ValidationError, argumentIssues, issuesOf, FIXES, parse } from '../schemas/validation.js';
import { BrokenSessionError } from '../stores/errors.js';
import { IdentityStore } from '../stores/identity-store.js';
import { LeaseStore } from '../stores/lease-store.js';
import { boundedClient, requestBoundMs } from './bounded-client.js';
import { oneShotFault } from './faults.js';
import { ClientSchema, ClockSchema, ClockSyncSchema, TableWait, TablesSchema, optionErrors, stampClockFor, tableNotThere } from './options.js';
import type { StampClock } from './server-clock.js';
import { readWhileCreating, tableState } from './table-state.js';

/** The options of getLeader; a bad one is a ValidationError naming the field. */
export const GetLeaderOptionsSchema = z.strictObject(
  {
    /** The DynamoDB client the lease is read with. */
    client: ClientSchema,
    /** Where the tables are: a prefix, or `{ prefix?, leases?, identities? }`. @default 'conclave' */
    tables: TablesSchema,
    /**
     * The clock expiry is judged by: `server` (DynamoDB's, from the read's own response, as the
     * holders stamp their terms), or `none` (this machine's wall clock, which must then be close to
     * DynamoDB's). @default 'server'
     */
    clockSync: ClockSyncSchema,
    /** How long past its end a term still counts (the coordinator's clockSkewMs: late rather than early). @default 1000 */
    clockSkewMs: z.number().int().min(0).max(60_000).default(electionConfig().clockSkewMs),
    /**
     * Cancels the call: getLeader rejects with the signal's reason, at once or as it aborts. What
     * bounds its wait for a table still being created (`AbortSignal.timeout(ms)`), which is
     * otherwise waited for as long as DynamoDB says it is being made.
     */
    signal: z.custom<AbortSignal>((v) => v instanceof AbortSignal, { error: 'must be an AbortSignal (an AbortController\'s signal, or AbortSignal.timeout(ms))', abort: false }).optional(),
    /** Test hook: this machine's clock (wall and monotonic). @default systemClock */
    clock: ClockSchema.optional(),
  },
  { error: optionErrors('getLeader', 'client', { table: 'name the tables with `tables` (a prefix, or { leases, identities })' }) },
);
/** The options of getLeader as written. */
export type GetLeaderOptions = z.input<typeof GetLeaderOptionsSchema>;
type ResolvedOptions = z.output<typeof GetLeaderOptionsSchema>;

/**
 * The leader of `leaseName`: its holder, address (its `advertise`), fencing token and since when,
 * from one consistent read of the lease row (and of its session's row, for a term held on a
 * session: its renewals keep the term); null when nobody holds a live term — no holder, a term
 * that ran out (judged as the coordinator does, allowing `clockSkewMs`), or a vacancy reported.
 * A term whose session row does not stand for its holder (gone, or another process's: a peer of
 * the same lease rewrote `session`) is judged as the coordinator's tick judges it: by its holder's
 * own process's freshest session row, read consistently from that process's session partitions
 * (the stamp a term its process left to run out was left at), or by the lease's own stamp with
 * none left. Each stamp is evidence as of the moment its read was sent: the lease's own as of the
 * lease read, a session row's (read after it) as of its own read, as the coordinator's tick judges
 * the rows it reads — so a term is never answered held past the moment a tick reading the same rows
 * would judge it over. A term held on a session row the schema refuses is judged by nobody: a
 * BrokenSessionError; so is one judged by its holder's own process's sessions while a row in their
 * partitions that the schema refuses may be that process's own (it names that process, or a process
 * that does not read). Where to send a request now, not a lock: only the leader's fencing token
 * guards its writes. The caller's role needs these reads: `grantGetLeader` of `@conclave/cdk`, or
 * for a worker's role calling it on its own leases `grantWorker` (0.2.0 or later for the session
 * partitions' Query).
 * @throws ValidationError naming a bad lease name or option
 * @throws BrokenSessionError (a ValidationError) naming the identities table, the session row, what the schema refused and the repair, when the term is held on a session whose row the schema refuses, or is judged off its named row while a row of its holder's process's partitions that the schema refuses may be that process's own session
 * @throws DynamoDBRefusedError (`denied`) naming the table (and, for a Query, the session partitions), when the role may not read a row it needs, or DynamoDB refused the credentials (expired, not valid: what to do about them, not a grant)
 * @throws CredentialsProviderError (the AWS SDK's name) naming the call, when the AWS SDK could not load the credentials, or their provider had not answered when the read's bound passed (nothing sent)
 * @throws DynamoDBRefusedError (`throttled`) naming the table, when a read is throttled past the AWS SDK's own retries (not retried)
 * @throws DynamoDBUnreachableError naming the call, the lease, the endpoint and the table not read, and to call it again, when DynamoDB cannot be reached or a read is given no answer within its bound (5 s: a connection black-holed once made, say; the timeout its `cause`, `code` `timed out`): a read, nothing of it landed (not retried)
 * @throws TableNotFoundError naming the tables and the `tables` option, when a table does not exist or answers "not found" (at once where DescribeTable finds none either; where DescribeTable is refused, after 60 s of tries; where DescribeTable shows it ACTIVE, after one more try, the message saying so: a table deleted and created again under its name, or another endpoint or Region, which no wait mends); a table still being created (CREATING) is waited for, tried again with backoff as a worker's start-up is, until it answers or `signal` aborts
 * @throws the `signal` option's reason, when it aborts first
 */
export async function getLeader(leaseName: string, options: GetLeaderOptions): Promise<LeaderInfo | null> {
  return (await leadershipOf(leaseName, options)).leader;
}

/**
 * getLeader's answer with, when nobody leads, why (vacancy()'s reason): leader discovery's sweep
 * clears a name for a term over, not for a vacancy report its holder's next renewal may take back.
 * A report on a term over by its own stamp too (renewTime + its lease duration + clockSkewMs passed,
 * of the lease as judged: its session's renewals counted) is `expired`: its holder stopped at its
 * renew deadline, and nothing takes that report back.
 * @internal
 */
export async function leadershipOf(leaseName: string, options: GetLeaderOptions): Promise<Leadership> {
  if (typeof leaseName !== 'string') throw notALeaseName(leaseName, options);
  // the lease name and the options judged together: a bad name hides no bad option
  const named = argumentIssues(LeaseName, leaseName, 'leaseName');
  const given = GetLeaderOptionsSchema.safeParse(options, { error: FIXES });
  if (named.length > 0 || !given.success) throw new ValidationError(named.length ? 'getLeader arguments' : 'getLeader options', [...named, ...(given.success ? [] : issuesOf(given.error))]);
  const name = parse(LeaseName, leaseName, 'getLeader lease name'); // passed above
  const o = given.data;
  const clock = o.clock ?? systemClock;
  const time = stampClockFor(o.clockSync, o.client, clock);
  // its requests give up as the SDK's own do: one that never answers must not hang the caller (bounded-client.ts)
  const requests = boundedClient(o.client, clock, requestBoundMs(0));
  // DynamoDB answers a table still being made (CREATING) as one not there: looked at (DescribeTable),
  // and waited for while it is made, as a worker's start-up waits (StartUp.cannotStart); the
  // caller's signal ends the call at once, a read in flight abandoned (it gives up at its bound)
  const tables = new TableWait([o.tables.leases, o.tables.identities], { state: tableState(requests), clock });
  return readWhileCreating(() => readLeader(name, o, time, requests), { tables, clock, signal: o.signal, fail: (e) => tableNotThere(`getLeader of lease "${name}"`, o.tables, e, ['leases', 'identities']) });
}

/** One answer of getLeader: the lease's row and, for a term held on a session, the rows that judge it, read now; DynamoDB's missing table as it is (getLeader waits for a table being made). */
async function readLeader(name: string, o: ResolvedOptions, time: StampClock, requests: ResolvedOptions['client']): Promise<Leadership> {
  // `row`: the row not read, and its table
  const refused = async (e: unknown, what: string, row: string, action: 'GetItem' | 'Query' = 'GetItem'): Promise<unknown> =>
    oneShotFault(
      e,
      'getLeader',
      `lease "${name}"`,
      row,
      o.client,
      action === 'GetItem'
        ? `${what} this role may not read (GetItem); grant it Conclave's grantGetLeader (the lease rows and every session row), and check its credentials`
        : `${what} this role may not read (Query); grant it Conclave's grantGetLeader (a worker's role: grantWorker) of @conclave/cdk 0.2.0 or later (the lease rows, and reads and queries of every session partition), and check its credentials`,
    );
  const sentAt = time.monotonic();
  const leaseRow = `the lease's row on the leases table "${o.tables.leases}"`;
  const lease = (await new LeaseStore(requests, o.tables.leases).read(name).catch(async (e: unknown) => {
    throw await refused(e, leaseRow, leaseRow);
  })).item;
  // judged as of the read's send time, on the estimate its answer improved (DynamoDB's Date header)
  const at = time.now() - (time.monotonic() - sentAt);
  let session: SessionStamp | undefined;
  if (lease?.holderIdentity !== undefined && lease.session !== undefined) {
    const key = sessionKey(lease.session);
    const identities = new IdentityStore(requests, o.tables.identities);
    let row: IdentityLease | undefined;
    const rowSentAt = time.monotonic();
    try {
      row = (await identities.read(key.component, key.name)).item;
    } catch (e) {
      // a row the schema refuses: nobody judges the term by it (the coordinator leaves the lease
      // alone), so neither a leader nor null is the answer while its holder may still act
      if (e instanceof ValidationError) throw new BrokenSessionError(`getLeader of lease "${name}"`, { lease: name, holderIdentity: lease.holderIdentity, fencingToken: lease.fencingToken, session: lease.session }, o.tables.identities, e);
      throw await refused(e, `the term is held on session "${lease.session}", whose row on the identities table "${o.tables.identities}"`, `the row of session "${lease.session}" on the identities table "${o.tables.identities}"`);
    }
    // a row that does not stand for the holder (gone, or another process's: a same-lease peer
    // redirected `session`) is no judge of its term: the coordinator's tick judges it by the holder's
    // own process's freshest session row (its leftTerms too), or by the lease's own stamp with none left
    let own: IdentityLease[] = [];
    let ownSentAt = rowSentAt;
    if (judgedOffNamed(lease, row)) {
      const process = processOf(lease.holderInstance)!;
      const partitions = processSessionComponents(lease.session, process).map((c) => `"${c}"`).join(', ');
      const where = `the partition${partitions.includes(',') ? 's' : ''} ${partitions} on the identities table "${o.tables.identities}"`;
      ownSentAt = time.monotonic();
      const read = await identities.processSessions(lease.session, process).catch(async (e: unknown) => {
        throw await refused(e, `its session "${lease.session}" does not vouch for ${lease.holderIdentity}'s term, so it is judged by ${lease.holderIdentity}'s own process's sessions, in ${where}, which`, `the sessions of ${lease.holderIdentity}'s process in ${where}`, 'Query');
      });
      // a row there the schema refuses may be the session the holder renews on: judged by nobody, as a refused named row (never null by the others)
      const mine = read.refused[0];
      if (mine) throw new BrokenSessionError(`getLeader of lease "${name}"`, { lease: name, holderIdentity: lease.holderIdentity, fencingToken: lease.fencingToken, session: String(mine.row['name']) }, o.tables.identities, mine.invalid.error);
      own = read.rows;
    }
    const judging = judgingRow(lease, row, () => own);
    // A session row read after the lease shows the renewals that landed until its read was sent,
    // not only those before the lease read: judged as of `at`, its stamp moved back by the reads
    // between (the coordinator's tick judges a row as of its read, sessionStampAt), or a term over
    // by then would be answered held for that long. A left term's stamp is final: not moved.
    const stamp = sessionStampAt(judging?.row, at, at);
    const between = (judging?.own !== undefined ? ownSentAt : rowSentAt) - sentAt;
    session = stamp && { ...stamp, renewTime: stamp.renewTime - between };
  }
  const judged = effectiveLease(lease, session, at);
  const leadership = leaderOf(judged, at, o.clockSkewMs);
  // A vacancy report on a term over by its own stamp (vacancy() without the report: renewTime + its
  // lease duration + clockSkewMs passed) is an end: its holder stopped at its renew deadline, and no
  // renewal of it can take the report back. Only a report on a term not yet over may still be.
  if (leadership.leader === null && leadership.vacancy === 'reported' && vacancy({ ...judged!, vacancyReport: undefined }, at, o.clockSkewMs).vacant) return { leader: null, vacancy: 'expired' };
  return leadership;
}

/** A first argument that is no lease name (most often the options, the name left out): what was passed, and the call. */
function notALeaseName(passed: unknown, options: unknown): ValidationError {
  const keys = passed !== null && typeof passed === 'object' ? Object.keys(passed) : undefined;
  const what = keys
    ? `an options object ({ ${keys.slice(0, 6).join(', ')}${keys.length > 6 ? ', ...' : ''} }) in its place${options === undefined ? ' and no options' : ''}`
    : passed === null || passed === undefined
      ? String(passed)
      : `a ${typeof passed}`;
  return new ValidationError('getLeader arguments', [{ field: 'leaseName', message: `must be the lease's name, a string, first; this call passed ${what}: call getLeader('my-lease', { client, tables })` }]);
}

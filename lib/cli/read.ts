/** Reads for the commands: consistent, parsed by the stores, unknown names answered with the known ones. */
import type { Candidate } from '../schemas/candidate.js';
import { judgedOffNamed, judgingRow } from '../election/vacancy.js';
import { IdentityStamp, mayBeProcessSession, processOf, processSessionComponents, sessionKey, type IdentityLease } from '../schemas/identity.js';
import type { Lease } from '../schemas/lease.js';
import { ValidationError } from '../schemas/validation.js';
import { BrokenSessionError } from '../stores/errors.js';
import type { IdentityStore } from '../stores/identity-store.js';
import type { InvalidItem, Scanned } from '../stores/item-store.js';
import type { HeldSession, LeaseRead } from '../stores/lease-store.js';
import { note, type CliContext } from './context.js';
import { awsTarget } from './broken.js';
import { CliError, LISTED, listNames } from './errors.js';
import { sessionOf, type RefusedRowDeletion, type SessionSeen, type SessionsSeen } from './judged.js';
import { byName, namerOf, type RefusedLease } from './views.js';
import { candidateSessions, listVouched, readSessions, vouchAll } from '../coordinator/vouched.js';
import { heldOnRefusedMs, refusedDeletion, termsOnRefused } from '../coordinator/refused-session.js';
import { identityGraceMs } from '../coordinator/identity-scan.js';

/** `keepRows`: of each refused row, its minReader too, beside `invalid` (not the row: one may be 400 KB). */
async function collect<T>(pages: AsyncGenerator<Scanned<T>[]>, keepRows = false): Promise<{ items: T[]; invalid: InvalidItem[]; rows: Record<string, unknown>[] }> {
  const items: T[] = [];
  const invalid: InvalidItem[] = [];
  const rows: Record<string, unknown>[] = [];
  for await (const page of pages) {
    for (const s of page) {
      if (s.ok) items.push(s.item);
      else {
        invalid.push(s.invalid);
        if (keepRows) rows.push({ minReader: s.row['minReader'] });
      }
    }
  }
  return { items, invalid, rows };
}

/**
 * Rows that do not match their schema take no part in elections; the CLI says so on stderr, with
 * what the coordinator does with each (lib/coordinator/reconcile.ts reconcileAll).
 */
export function reportInvalid(ctx: Pick<CliContext, 'sink'>, invalid: readonly InvalidItem[]): void {
  for (const i of invalid) note(ctx, `warning: skipped ${refusedRow(i)}: ${i.error.message}`);
}

const refusedRow = (i: InvalidItem): string =>
  'leaseName' in i.key
    ? 'a candidate row that does not match its schema (it takes no part in elections; the coordinator deletes it once stale by the renewTime it still carries, if that parses as epoch milliseconds)'
    : 'component' in i.key
      ? 'an identity row that does not match its schema (it vouches for no term or candidate; the coordinator deletes it once expired by the renewTime and leaseDurationSeconds it still carries, if they parse (renewTime in epoch milliseconds), while no held lease or live candidate names it; if they do not, once it has seen it unchanged for a day and clockSkewMs while no held lease names it, or, where it may be the session of the process of held terms, for their longest lease)'
      : 'a lease row that does not match its schema (the coordinator decides nothing on it, and reports it broken each tick)';

/**
 * A name no row has, read before a scan: a Scan checks no key, so a table of another kind named by
 * --leases-table or --candidates-table would list nothing, or rows of the wrong kind; a read of one
 * row is refused by its key (ValidationException), which explain() names.
 */
const KEY_PROBE = 'conclave-cli-key-probe';

const refusedLease = (i: InvalidItem, row: Record<string, unknown>): RefusedLease => {
  const newer = i.error.issues.length > 0 && i.error.issues.every((x) => x.field === 'minReader');
  return { name: String(i.key['name']), issues: i.error.issues, ...(newer ? { minReader: row['minReader'] } : {}) };
};

/**
 * The lease rows, and those the schema refuses (`refused`), each by name. `quiet`: the refused rows
 * are not told on stderr, for a caller that shows them in what it prints (watch: a frame clears the
 * screen, and a warning printed before it was gone with it).
 */
export async function scanLeases(ctx: CliContext, opts: { quiet?: boolean } = {}): Promise<{ leases: Lease[]; refused: RefusedLease[] }> {
  await ctx.leases.read(KEY_PROBE);
  const { items, invalid, rows } = await collect(ctx.leases.scan(), true);
  if (!opts.quiet) reportInvalid(ctx, invalid);
  return { leases: items.sort(byName), refused: invalid.map((i, n) => refusedLease(i, rows[n]!)).sort(byName) };
}

export async function scanCandidates(ctx: CliContext): Promise<Candidate[]> {
  await ctx.candidates.read(KEY_PROBE, KEY_PROBE);
  const { items: rows, invalid } = await collect(ctx.candidates.scan());
  reportInvalid(ctx, invalid);
  // each as the coordinator judges it: by the session its row names (one read for each session)
  const items = vouchAll(rows, await readSessions(ctx.identities, candidateSessions(rows)));
  return items.sort((a, b) => (a.leaseName < b.leaseName ? -1 : a.leaseName > b.leaseName ? 1 : byName(a, b)));
}

/** Every lease name known: rows of the leases table and leases that only have candidates so far. */
async function knownLeases(ctx: CliContext): Promise<string[]> {
  const [leases, candidates] = await Promise.all([collect(ctx.leases.scan()), collect(ctx.candidates.scan())]);
  return [...new Set([...leases.items.map((l) => l.name), ...candidates.items.map((c) => c.leaseName)])].sort();
}

export async function unknownLease(ctx: CliContext, name: string): Promise<CliError> {
  const known = await knownLeases(ctx);
  return new CliError(
    `no lease "${name}" in ${ctx.target.tables.leases} (and no candidates for it in ${ctx.target.tables.candidates}); ` +
      (known.length ? `leases: ${listNames(known)}` : 'there are no leases yet - is --table-prefix right?'),
  );
}

/** The name asked for is none of the lease's candidates: it and theirs escaped where they pass for one another (`worker-rn` asked, `worker-m` listed) or for the lease row's names. */
export function unknownCandidate(lease: string, name: string, candidates: readonly Candidate[], row?: Lease): CliError {
  const as = namerOf(row, [{ name }, ...candidates]);
  const listed = candidates.map((c) => c.name).sort();
  // as listNames lists them, each a name
  const them = listed.slice(0, LISTED).flatMap((n, i) => [i ? ', ' : '', { name: n }]);
  const more = listed.length > LISTED ? `, ... and ${listed.length - LISTED} more` : '';
  const asked = ['"', { name }, `" is not a candidate of lease "${lease}"; `] as const;
  return new CliError(candidates.length ? as(...asked, 'its candidates: ', ...them, more) : as(...asked, 'the lease has no candidates (see `conclave get candidates`)'));
}

/**
 * A lease row the schema refuses, read by a command that acts on it (release, leader, set-strategy,
 * preempt, watch…): what is wrong, and where the repair is; `describe lease` catches it to show the
 * row and the commands that repair it.
 */
export class BrokenLeaseError extends CliError {
  constructor(
    readonly lease: string,
    readonly invalid: ValidationError,
  ) {
    super(`${invalid.message} - \`conclave describe lease ${lease}\` shows the repair`);
  }
}

/** The lease row, read consistently; one the schema refuses is a BrokenLeaseError. */
export async function readLease(ctx: Pick<CliContext, 'leases'>, name: string): Promise<LeaseRead> {
  try {
    return await ctx.leases.read(name);
  } catch (e) {
    if (e instanceof ValidationError) throw new BrokenLeaseError(name, e);
    throw e;
  }
}

export interface Snapshot {
  read: LeaseRead;
  /** The lease's candidates (valid rows), by name. */
  candidates: Candidate[];
  /** The lease's session, if it is held on one: read after the lease. */
  session?: SessionSeen;
}

/**
 * The session a lease is held on, read after the lease (its holder wrote the session row before
 * naming it, so a row missing now has ended). A row that does not match its schema is `refused`:
 * the term is judged by no one (the coordinator's tick, getLeader), and the CLI judges it neither.
 * Where the row does not stand for the holder (gone, or another process's), the holder's own
 * process's sessions are read too (ownSessions), and the term judged as the coordinator's tick judges
 * it (`judging`), as getLeader does too.
 */
export async function readSession(ctx: CliContext, lease: Lease | undefined): Promise<SessionSeen | undefined> {
  const name = sessionOf(lease);
  if (name === undefined) return undefined;
  const readAt = ctx.clock.now();
  const key = sessionKey(name);
  let row: IdentityLease | undefined;
  try {
    row = (await ctx.identities.read(key.component, key.name)).item;
  } catch (e) {
    if (!(e instanceof ValidationError)) throw e;
    return { name, row: undefined, readAt, refused: refusedSession(ctx, lease!, e) };
  }
  const own = judgedOffNamed(lease!, row) ? await ownSessions(ctx, lease!) : { rows: [], refused: [] };
  // a row there the schema refuses may be the session the holder renews on: judged by nobody, as a refused named row
  const mine = own.refused[0];
  if (mine) {
    const refusedName = String(mine.row['name']);
    return { name: refusedName, row: undefined, readAt, refused: refusedSession(ctx, { ...lease!, session: refusedName }, mine.invalid.error) };
  }
  return { name, row, readAt, judging: judgingRow(lease, row, () => own.rows)! };
}

/**
 * The session rows of the holder's process (IdentityStore.processSessions: the partitions it keeps
 * its sessions in), for a term whose named row does not stand for it: judgingRow picks its own
 * process's freshest, as the coordinator's tick does; `refused`, those the schema refuses that may
 * be its own (mayBeProcessSession).
 */
async function ownSessions(ctx: CliContext, lease: Lease): Promise<Awaited<ReturnType<IdentityStore['processSessions']>>> {
  const process = processOf(lease.holderInstance);
  return process === undefined || lease.session === undefined ? { rows: [], refused: [] } : ctx.identities.processSessions(lease.session, process);
}

/** A held lease's session row the schema refuses, as the CLI tells it: the row, its fields, the delete that repairs it. */
const refusedSession = (ctx: CliContext, l: Lease, e: ValidationError): BrokenSessionError =>
  new BrokenSessionError(`lease "${l.name}"`, { lease: l.name, holderIdentity: l.holderIdentity!, fencingToken: l.fencingToken, session: l.session! }, ctx.target.tables.identities, e, awsTarget(ctx));

/** Rows the schema refuses in the session partitions the CLI reads, no held lease's: the first this many are told (a warning each), the rest counted. */
export const TOLD_REFUSED_SESSIONS = 20;

/** A row as read, with its place in its partition's order. */
type Placed<T> = T & { readonly at: number };

/** What scanSessions keeps of one partition (partitionKept). */
interface PartitionKept {
  readonly rows: IdentityLease[];
  readonly invalid: InvalidItem[];
  readonly refused: { invalid: InvalidItem; row: Record<string, unknown> }[];
  /** Refused rows not kept: told as a count. */
  readonly untold: number;
}

/**
 * What scanSessions keeps of session partition `component`, kept as it pages (a worker may write
 * any number of rows in its own sessions' partition, each up to 400 KB): the rows the held leases
 * name (`names`), refused or not; of each process holding one of them (`processes`), its freshest
 * row under this partition's name (judgingRow's: the first of equal stamps) and the first refused
 * row that may be its own session, as the first refused row whose process does not read
 * (mayBeProcessSession); of the other refused rows, the first TOLD_REFUSED_SESSIONS. Each in the
 * order read, so the first of equal stamps, and the first refused, are the partition's.
 */
async function partitionKept(ctx: CliContext, component: string, names: ReadonlySet<string>, processes: ReadonlySet<string>): Promise<PartitionKept> {
  const named: Placed<{ row: IdentityLease }>[] = [];
  const freshest = new Map<string, Placed<{ row: IdentityLease }>>();
  // by process (null: one that does not read)
  const own = new Map<string | null, Placed<{ invalid: InvalidItem; row: Record<string, unknown> }>>();
  const invalid: InvalidItem[] = [];
  let told = 0;
  let untold = 0;
  let at = 0;
  for await (const page of ctx.identities.queryPages(component)) {
    for (const s of page) {
      at++;
      if (s.ok) {
        const r = s.item;
        if (names.has(r.name)) named.push({ at, row: r });
        const best = r.process === undefined ? undefined : freshest.get(r.process);
        if (r.process !== undefined && processes.has(r.process) && sessionKey(r.name).component === component && (best === undefined || r.renewTime > best.row.renewTime)) freshest.set(r.process, { at, row: r });
        continue;
      }
      const p = s.row['process'];
      const mine = p === undefined ? undefined : typeof p === 'string' ? (processes.has(p) ? p : undefined) : null;
      const ownFirst = mine !== undefined && !own.has(mine) && typeof s.row['name'] === 'string' && sessionKey(s.row['name']).component === component;
      if (ownFirst) own.set(mine, { at, invalid: s.invalid, row: s.row });
      if (names.has(String(s.invalid.key['name'])) || ownFirst) invalid.push(s.invalid);
      else if (told < TOLD_REFUSED_SESSIONS) {
        told++;
        invalid.push(s.invalid);
      } else untold++;
    }
  }
  const rows = [...new Map([...named, ...freshest.values()].map((x) => [x.at, x])).values()].sort((a, b) => a.at - b.at).map((x) => x.row);
  return { rows, invalid, refused: [...own.values()].sort((a, b) => a.at - b.at).map(({ invalid, row }) => ({ invalid, row })), untold };
}

/**
 * The session rows the leases are held on, read after them: one query of each sessions' partition
 * they name (a grant scope's, or one of the 64 of workers granted every lease), side by side; none
 * when no lease is held on a session. Of each, only what judges the leases is kept (partitionKept):
 * the rows they name, their holders' processes' freshest, the first refused rows.
 */
export async function scanSessions(ctx: CliContext, leases: readonly Lease[]): Promise<SessionsSeen> {
  const readAt = ctx.clock.now();
  if (!leases.some((l) => sessionOf(l) !== undefined)) return { rows: new Map(), readAt, refused: new Map() };
  const held = leases.filter((l) => sessionOf(l) !== undefined);
  const components = new Set(held.map((l) => sessionKey(l.session!).component));
  const names = new Set(held.map((l) => l.session!));
  const processes = new Set(held.flatMap((l) => processOf(l.holderInstance) ?? []));
  const rows = new Map<string, IdentityLease>();
  const invalid = new Map<string, InvalidItem>();
  // the refused rows as stored (mayBeProcessSession reads their partition and process)
  const refusedRows: { invalid: InvalidItem; row: Record<string, unknown> }[] = [];
  let untold = 0;
  const query = async (parts: Iterable<string>) => {
    for (const r of await Promise.all([...parts].sort().map((component) => partitionKept(ctx, component, names, processes)))) {
      for (const i of r.rows) rows.set(i.name, i);
      for (const i of r.invalid) invalid.set(String(i.key['name']), i);
      refusedRows.push(...r.refused);
      untold += r.untold;
    }
  };
  await query(components);
  // a term its named row does not stand for is judged by its holder's own process's sessions (seenIn, judgingRow): their partitions too, once (not for a refused row: judged by no one)
  const more = new Set(leases.flatMap((l) => (sessionOf(l) !== undefined && !invalid.has(l.session!) && judgedOffNamed(l, rows.get(l.session!)) ? processSessionComponents(l.session!, processOf(l.holderInstance)!) : [])).filter((c) => !components.has(c)));
  if (more.size) await query(more);
  // a refused row a held lease names: told with that lease's term (judged by no one); any other as a refused row
  const refused = new Map<string, BrokenSessionError>();
  for (const l of leases) {
    const s = sessionOf(l);
    const i = s === undefined ? undefined : invalid.get(s);
    if (i && sessionKey(s!).component === i.key['component']) refused.set(l.name, refusedSession(ctx, l, i.error));
    else if (s !== undefined && judgedOffNamed(l, rows.get(s))) {
      // judged by its holder's own process's sessions: a refused row there that may be its own is judged by nobody, as a refused named row
      const mine = refusedRows.find((r) => mayBeProcessSession(r.row, s, processOf(l.holderInstance)!));
      if (mine) refused.set(l.name, refusedSession(ctx, { ...l, session: String(mine.row['name']) }, mine.invalid.error));
    }
  }
  const named = new Set([...refused.values()].map((b) => b.term.session));
  const skipped = [...invalid.values()].filter((i) => !named.has(String(i.key['name'])));
  reportInvalid(ctx, skipped.slice(0, TOLD_REFUSED_SESSIONS));
  const notShown = skipped.length - Math.min(skipped.length, TOLD_REFUSED_SESSIONS) + untold;
  if (notShown > 0) note(ctx, `warning: skipped ${notShown} more identity row${notShown === 1 ? '' : 's'} of the session partitions read that do${notShown === 1 ? 'es' : ''} not match the schema (not shown)`);
  for (const b of refused.values()) note(ctx, `warning: ${b.message}`);
  return { rows, readAt, refused };
}

/** Every lease, then the sessions they are held on; the lease rows the schema refuses beside them (scanLeases). */
export async function scanLeasesJudged(ctx: CliContext, opts: { quiet?: boolean } = {}): Promise<{ leases: Lease[]; sessions: SessionsSeen; refused: RefusedLease[] }> {
  const { leases, refused } = await scanLeases(ctx, opts);
  return { leases, sessions: await scanSessions(ctx, leases), refused };
}

/**
 * The lease row, then its candidates and its session (both after the lease, as the coordinator reads
 * them: candidates read before the lease could miss the pings of an election it shows); a name with
 * neither row nor candidates is an unknown lease.
 */
export async function snapshot(ctx: CliContext, name: string, opts: { deletion?: boolean } = {}): Promise<Snapshot> {
  const read = await readLease(ctx, name);
  const [list, seen] = await Promise.all([listVouched(ctx, name), readSession(ctx, read.item)]);
  reportInvalid(ctx, list.invalid);
  if (!read.item && list.candidates.length === 0 && list.invalid.length === 0) throw await unknownLease(ctx, name);
  const deletion = opts.deletion && seen?.refused ? await refusedRowDeletion(ctx, seen.name) : undefined;
  const session: SessionSeen | undefined = seen?.refused && deletion ? { ...seen, deletion } : seen;
  return { read, candidates: list.candidates.sort(byName), ...(session ? { session } : {}) };
}

/**
 * When the coordinator's tick will delete session row `name`, which the schema refuses, as the tick
 * decides it (lib/coordinator/reconcile.ts): held leases naming it (every lease's, a scan of the
 * leases' session fields), by the sighting it left on the row as stored and the longest of them
 * (timeRefusedSessions); none naming it (a row of the holder's process's a term judged off its
 * named row may be on), once expired by the stamp it still carries where that reads (collectGarbage:
 * never timed), else by the sighting and the longest lease of the held terms it may vouch for as
 * their process's own session, or, none, the longest a row may state (termsOnRefused). Undefined
 * once the row is gone.
 */
async function refusedRowDeletion(ctx: CliContext, name: string): Promise<RefusedRowDeletion | undefined> {
  const key = sessionKey(name);
  const row = await ctx.identities.readRow(key.component, key.name);
  if (!row) return undefined;
  const held: HeldSession[] = [];
  for await (const page of ctx.leases.scanSessions()) held.push(...page.filter((l) => l.holderIdentity !== undefined && l.session !== undefined));
  const named = held.filter((l) => l.session === name);
  const stamp = named.length ? undefined : IdentityStamp.safeParse(row);
  if (stamp?.success) {
    const { renewTime, leaseDurationSeconds } = stamp.data;
    return { kind: 'expires', renewTime, leaseDurationSeconds, deleteAfter: renewTime + leaseDurationSeconds * 1000 + identityGraceMs(ctx.config) };
  }
  const { on, terms } = termsOnRefused(row, named, held);
  const holdMs = heldOnRefusedMs(terms, row);
  return { ...refusedDeletion(row, holdMs, ctx.config.clockSkewMs), holdMs, on };
}

import type { ElectionConfig } from '../schemas/config.js';
import { ValidationError } from '../schemas/validation.js';
import type { Lease } from '../schemas/lease.js';
import { sameCluster } from '../schemas/platform.js';
import { CandidateStore } from '../stores/candidate-store.js';
import { ConflictError, retryOnConflict } from '../stores/errors.js';
import type { LeaseStore } from '../stores/lease-store.js';
import type { PlatformStop } from './signals.js';

export type VacateOutcome =
  /** The term ended (the row now at `revision`); the lease stream starts the next election. */
  | { lease: string; outcome: 'vacated'; holder: string; fencingToken: number; revision: number }
  /** The index still named it, but the lease has a new holder or term (or none): left alone. */
  | { lease: string; outcome: 'movedOn'; why: string }
  /** The event is not surely later than the term's start (late, replayed, an earlier run on the instance): left alone. */
  | { lease: string; outcome: 'beforeTerm'; why: string }
  /** The lease's row does not match the schema: nothing is decided on it (it bricks only its own lease); the other leases are vacated all the same. */
  | { lease: string; outcome: 'broken'; why: string };

function stillHeldBy(lease: Lease | undefined, stop: PlatformStop): string | undefined {
  if (!lease?.holderIdentity) return 'the lease has no holder';
  if (lease.holderPlatformId !== stop.platformId) return `the holder now runs on ${lease.holderPlatformId ?? 'an unknown platform'}`;
  const cluster = lease.holderPlatform?.kind === 'ecs' ? lease.holderPlatform.cluster : undefined;
  if (stop.cluster && cluster && !sameCluster(cluster, stop.cluster)) return `the holder's task is in cluster ${cluster}, the event's in ${stop.cluster}`;
  return undefined;
}

/**
 * Why the stop cannot be told apart from one before the term began, or undefined when it is surely
 * later. An EC2 instance keeps its id across stop and start, and an event may come minutes late
 * (asynchronous retries, a dead-letter redrive, an archive replay): only an event whose time is
 * after the term's start — by more than the clock-skew margin, the platform's clock against the
 * writer's — may end the term. When in doubt, the term runs out as it would without the signal.
 */
function beforeTerm(lease: Lease, stop: PlatformStop, skewMs: number): string | undefined {
  // an ECS task's ARN names one run only (never reused, unlike an EC2 instance's id): any term on a
  // stopped task is a dead process's, whenever it began (one handed or elected to it after the stop)
  if (stop.source === 'aws.ecs' && lease.holderPlatform?.kind === 'ecs') return undefined;
  const iso = (ms: number) => new Date(ms).toISOString();
  if (lease.acquireTime === undefined) return 'the term has no acquireTime: when it began is unknown';
  if (stop.at > lease.acquireTime + skewMs) return undefined;
  return `the event (${iso(stop.at)}) is not later than the term's start (${iso(lease.acquireTime)}) by more than clockSkewMs (${skewMs} ms): a late or replayed event, or an earlier run on the same ${stop.source === 'aws.ec2' ? 'instance' : 'task'}`;
}

/**
 * Removes the stopped holder's candidate row for `lease`, if it is still that start-up's (its
 * platform is the stopped one and, when both say, its `identity` is the term's `holderInstance`):
 * otherwise the election that follows could pick the dead worker again while its row still counts
 * as freshly renewed. A row a new start-up has taken is kept — on EC2 too, where a worker started
 * again on the restarted instance has the same platform id. Removed as the coordinator collects a
 * stale row (CandidateStore.collect: stamped `collectedAt` at `now` first), so its removal is told as
 * Candidate Expired, as the peers' are (withdrawPeers).
 */
async function withdrawCandidate(candidates: CandidateStore, lease: string, holder: string, holderInstance: string | undefined, stop: PlatformStop, now: number): Promise<void> {
  // a conflict: it renewed meanwhile, so look again
  await retryOnConflict(async () => {
    const read = await candidates.read(lease, holder);
    const row = read.item;
    const sameStartUp = holderInstance === undefined || row?.identity === undefined || row.identity === holderInstance;
    if (row?.platform?.id === stop.platformId && sameStartUp) await candidates.collect(read, now);
  });
}

/**
 * Removes the rows of `lease`'s other candidates on the stopped task or instance (two workers in
 * one task, or on one host; a successor stopped with its leader): a row renewed within the ack
 * window counts as fresh, so the election that follows would elect the dead worker without a ping,
 * and the lease would wait out that term too. Only rows made before the stop (`createdAt`) and not
 * renewed since (`renewTime`, the event's whole second and the clocks' skew allowed): a worker
 * started again on a restarted EC2 instance (the same id) keeps its own, also under its old name,
 * whose row keeps the first start-up's createdAt (a review: a late `stopped` event deleted it).
 * Each is collected as the coordinator collects a stale row (CandidateStore.collect: `collectedAt`,
 * then the delete, each conditioned on the row as listed; one renewed meanwhile stays, its process
 * alive then), so each death the platform told is a Candidate Expired (before: a plain delete of a
 * row still fresh, which no event told).
 */
async function withdrawPeers(candidates: CandidateStore, lease: string, holder: string, stop: PlatformStop, skewMs: number, now: number): Promise<void> {
  const { candidates: rows } = await candidates.list(lease);
  const after = stop.at + 1_000 + skewMs;
  for (const c of rows) {
    if (c.name === holder || c.platform?.id !== stop.platformId || c.createdAt >= stop.at || c.renewTime >= after) continue;
    await candidates.collect(CandidateStore.readOf(c), now).catch((e: unknown) => {
      if (!(e instanceof ConflictError)) throw e;
    });
  }
}

/**
 * Ends every term held on a stopped task or instance. Each lease is read (consistently) and
 * vacated only if that holder, in that term, on that platform still holds it, conditioned on the
 * revision read; a renewal racing in between (sent before the process died) changes the revision,
 * so the lease is read again and the same check decides. The holder's candidate row on that lease
 * goes first (see withdrawCandidate), and the rows of other candidates on the same stopped task
 * or instance (withdrawPeers); rows on leases it did not hold are left to the usual rules (pinged,
 * never answering, never preferred; collected when stale). Idempotent: a duplicate
 * event finds the leases already moved on; a late or replayed one, a term begun after it (beforeTerm).
 * Each lease on its own: a row the schema refuses is an outcome (`broken`), and any other failure
 * is thrown once every other lease was tried, so the event is retried for the ones it missed.
 */
export async function vacateStoppedHolder(
  stores: { leases: LeaseStore; candidates: CandidateStore; config: Pick<ElectionConfig, 'clockSkewMs'> },
  stop: PlatformStop,
  now: number,
): Promise<VacateOutcome[]> {
  const { leases, candidates, config } = stores;
  const out: VacateOutcome[] = [];
  const failures: unknown[] = [];
  for (const name of await leases.heldOnPlatform(stop.platformId)) {
    // a lost race (a renewal sent before the process died) is read again, and the same check decides
    const outcome = await retryOnConflict(async (): Promise<VacateOutcome> => {
      const read = await leases.read(name);
      const lease = read.item;
      const why = stillHeldBy(lease, stop);
      if (why || !lease) return { lease: name, outcome: 'movedOn', why: why ?? 'the lease is gone' } as const;
      const early = beforeTerm(lease, stop, config.clockSkewMs);
      if (early) return { lease: name, outcome: 'beforeTerm', why: early } as const;
      // The candidacy first: the lease write below starts the next election, which must not see it.
      await withdrawCandidate(candidates, name, lease.holderIdentity!, lease.holderInstance, stop, now);
      await withdrawPeers(candidates, name, lease.holderIdentity!, stop, config.clockSkewMs, now);
      const loss = { holder: lease.holderIdentity!, fencingToken: lease.fencingToken, source: stop.source, platformId: stop.platformId, reason: stop.reason, at: now };
      const vacated = await leases.vacateLostHolder(read, loss);
      if (vacated) return { lease: name, outcome: 'vacated', holder: loss.holder, fencingToken: loss.fencingToken, revision: vacated.revision } as const;
      throw new ConflictError(`lease "${name}" (its stopped holder's term being ended; the event is retried if it keeps changing)`, read.revision);
    }).catch((e: unknown): VacateOutcome | undefined => {
      if (e instanceof ValidationError) return { lease: name, outcome: 'broken', why: e.message };
      failures.push(e);
      return undefined;
    });
    if (outcome) out.push(outcome);
  }
  if (failures.length === 1) throw failures[0];
  if (failures.length > 1) throw new AggregateError(failures, `${failures.length} leases held on ${stop.platformId} could not be vacated: ${failures.map((f) => (f instanceof Error ? f.message : String(f))).join('; ')}`);
  return out;
}

import { reconcileLease, type CoordinatorDeps, type ReconcileOutcome } from '../lib/coordinator/reconcile.js';
import type { ManualClock } from '../lib/clock.js';
import type { Candidate } from '../lib/schemas/candidate.js';
import { OLDEST_EMULATION_VERSION } from '../lib/schemas/strategy.js';
import { ConflictError } from '../lib/stores/errors.js';

/**
 * Workers as the SDK will behave, reduced to their table writes, so the coordinator can be
 * driven step by step with a manual clock: candidates join, acknowledge open elections, the
 * holder renews, and yields (releases) when preferredHolder names someone else.
 */
export class Fleet {
  readonly alive = new Set<string>();
  constructor(
    private readonly deps: CoordinatorDeps,
    private readonly clock: ManualClock,
    readonly leaseName: string,
    private readonly leaseDurationSeconds = 15,
  ) {}

  /** Registers (or re-registers after a restart: a new row, so an operator's priority resets). */
  async join(name: string, emulationVersion: string, binaryVersion: string, extra: Partial<Pick<Candidate, 'priority' | 'location' | 'platform'>> = {}) {
    const r = await this.deps.candidates.read(this.leaseName, name);
    if (r.item) await this.deps.candidates.delete(r);
    const now = this.clock.now();
    await this.deps.candidates.write({ key: { leaseName: this.leaseName, name }, item: undefined, revision: 0 }, {
      set: { emulationVersion, binaryVersion, preferredStrategies: [OLDEST_EMULATION_VERSION], renewTime: now, createdAt: now, ...extra },
    });
    this.alive.add(name);
  }

  /** The process stops (crash or node drain): no more renewals, no release. */
  down(name: string) {
    this.alive.delete(name);
  }

  /** An operator sets or clears a candidate's priority. */
  async setPriority(name: string, priority: number | undefined) {
    const r = await this.deps.candidates.read(this.leaseName, name);
    await this.deps.candidates.write(r, priority === undefined ? { remove: ['priority'] } : { set: { priority } });
  }

  async holder(): Promise<string | undefined> {
    return (await this.deps.leases.read(this.leaseName)).item?.holderIdentity;
  }

  /** One round of worker behaviour. */
  async act(): Promise<void> {
    const now = this.clock.now();
    const { item: lease, ...read } = await this.deps.leases.read(this.leaseName);
    if (lease?.election) {
      for (const name of this.alive) await this.deps.candidates.renew(this.leaseName, name, now);
    }
    const holder = lease?.holderIdentity;
    if (!lease || !holder || !this.alive.has(holder)) return;
    const r = { ...read, item: lease };
    try {
      if (lease.preferredHolder && lease.preferredHolder !== holder) await this.deps.leases.write(r, { remove: ['holderIdentity', 'preferredHolder'] });
      else await this.deps.leases.write(r, { set: { renewTime: now, leaseDurationSeconds: this.leaseDurationSeconds }, remove: ['vacancyReport'] });
    } catch (e) {
      if (!(e instanceof ConflictError)) throw e;
    }
  }

  /**
   * Runs workers and the coordinator until nothing changes; waits out acks and expiries by moving
   * the clock. Returns every outcome, in order.
   */
  async settle(maxRounds = 40): Promise<ReconcileOutcome[]> {
    const outcomes: ReconcileOutcome[] = [];
    let quiet = 0;
    for (let i = 0; i < maxRounds; i++) {
      await this.act();
      const o = await reconcileLease(this.deps, this.leaseName);
      outcomes.push(o);
      const d = o.decision;
      if (d.kind === 'awaitAcks') this.clock.set(d.election.deadline);
      else if (d.kind === 'leaveAlone' && d.reason === 'leaderHealthy') {
        const holder = o.before?.holderIdentity;
        if (holder && this.alive.has(holder)) {
          if (++quiet >= 2) return outcomes;
        } else {
          // the holder is dead: wait out its lease (plus the skew margin)
          this.clock.advance(this.leaseDurationSeconds * 1000 + this.deps.config.clockSkewMs + 1);
        }
      } else if (d.kind === 'leaveAlone' || d.kind === 'failElection') {
        this.clock.advance(1000);
        quiet = 0;
      } else quiet = 0;
      this.clock.advance(100);
    }
    throw new Error(`lease ${this.leaseName} did not settle in ${maxRounds} rounds: ${JSON.stringify(outcomes.slice(-3).map((o) => o.decision))}`);
  }
}

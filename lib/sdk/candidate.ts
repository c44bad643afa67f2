import { randomUUID } from 'node:crypto';
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import * as z from 'zod';
import { systemClock, type Clock } from '../clock.js';
import { CandidateSpec, type Candidate } from '../schemas/candidate.js';
import { Platform } from '../schemas/platform.js';
import { OLDEST_EMULATION_VERSION } from '../schemas/strategy.js';
import { parse } from '../schemas/validation.js';
import { CandidateStore } from '../stores/candidate-store.js';
import { ConflictError } from '../stores/errors.js';

/** Options of a LeaseCandidate that are data (validated); the client, clock and callbacks ride beside them. */
export const CandidateOptions = z
  .object({
    /** The lease this candidate stands for. */
    leaseName: CandidateSpec.shape.leaseName,
    /** Its name, unique per lease; the lease's holderIdentity when it leads. */
    name: CandidateSpec.shape.name,
    binaryVersion: CandidateSpec.shape.binaryVersion,
    emulationVersion: CandidateSpec.shape.emulationVersion,
    priority: CandidateSpec.shape.priority,
    priorityExpiresAt: CandidateSpec.shape.priorityExpiresAt,
    preferredStrategies: CandidateSpec.shape.preferredStrategies.default([OLDEST_EMULATION_VERSION]),
    labels: CandidateSpec.shape.labels,
    /** How often the row is renewed without being asked (KEP-4355: 5 minutes). */
    renewIntervalMs: z.number().int().min(1_000, 'must be ≥ 1000 ms').default(5 * 60_000),
    table: z.string().min(3, 'must be the candidates table name'),
  })
  .strict();
export type CandidateOptionsInput = z.input<typeof CandidateOptions>;

export interface LeaseCandidateDeps {
  client: DynamoDBClient;
  clock?: Clock;
  /** Unique per start-up (default: name + random UUID); a restarted worker is a new instance. */
  instance?: string;
  /** A renewal or registration that failed for a reason other than a race; retried at the next interval. */
  onError?: (error: Error) => void;
}

const TTL_FACTOR = 2;

/**
 * A worker's candidacy for one lease (KEP-4355's LeaseCandidate): registers its row, renews it
 * every few minutes, acknowledges elections when asked, and removes the row on a graceful stop.
 * Bad configuration (emulation > binary, malformed semver, priority ≤ 0, empty names) is a
 * ValidationError at construction, naming the field.
 */
export class LeaseCandidate {
  readonly options: z.output<typeof CandidateOptions>;
  readonly instance: string;
  private readonly store: CandidateStore;
  private readonly clock: Clock;
  private readonly onError: (e: Error) => void;
  private timer: NodeJS.Timeout | undefined;
  private registered = false;
  private platform: Platform | undefined;

  constructor(options: CandidateOptionsInput, deps: LeaseCandidateDeps) {
    this.options = parse(CandidateOptions, options, `LeaseCandidate options${typeof options?.name === 'string' ? ` for "${options.name}"` : ''}`);
    // the cross-field rules (emulation ≤ binary, …) live on the spec
    parse(CandidateSpec, this.spec(), `LeaseCandidate options for "${this.options.name}"`);
    this.store = new CandidateStore(deps.client, this.options.table);
    this.clock = deps.clock ?? systemClock;
    this.instance = deps.instance ?? `${this.options.name}_${randomUUID()}`;
    this.onError = deps.onError ?? ((e) => process.emitWarning(e));
  }

  /** Where this worker runs (LeaderElector sets what it detected); written at the next registration. */
  setPlatform(platform: Platform | undefined): void {
    this.platform = platform === undefined ? undefined : parse(Platform, platform, `LeaseCandidate platform for "${this.options.name}"`);
  }

  get leaseName(): string {
    return this.options.leaseName;
  }
  get name(): string {
    return this.options.name;
  }

  private spec(): CandidateSpec {
    const o = this.options;
    return {
      leaseName: o.leaseName,
      name: o.name,
      binaryVersion: o.binaryVersion,
      emulationVersion: o.emulationVersion,
      preferredStrategies: o.preferredStrategies,
      ...(o.priority !== undefined ? { priority: o.priority } : {}),
      ...(o.priorityExpiresAt !== undefined ? { priorityExpiresAt: o.priorityExpiresAt } : {}),
      ...(o.labels ? { labels: o.labels } : {}),
      ...(this.platform ? { platform: this.platform } : {}),
    };
  }

  private expiresAt(now: number): number {
    return Math.ceil((now + TTL_FACTOR * 30 * 60_000) / 1000);
  }

  /**
   * Writes this candidate's row: created, or taken over from a previous start-up (its creation
   * time is kept; versions, strategies and priority are this start-up's — an operator's priority
   * resets on restart, as in the KEP). Then renews it every renewIntervalMs.
   */
  async start(): Promise<Candidate> {
    const written = await this.register();
    if (!this.timer) {
      this.timer = setInterval(() => void this.renew().catch((e: unknown) => this.onError(e as Error)), this.options.renewIntervalMs);
      this.timer.unref();
    }
    return written;
  }

  private async register(): Promise<Candidate> {
    for (let attempt = 1; ; attempt++) {
      const read = await this.store.read(this.options.leaseName, this.options.name);
      const now = this.clock.now();
      try {
        const written = await this.store.write(read, {
          set: { ...this.spec(), identity: this.instance, renewTime: now, createdAt: read.item?.createdAt ?? now, expiresAt: this.expiresAt(now) },
          remove: [...(this.options.priority === undefined ? (['priority', 'priorityExpiresAt'] as const) : []), ...(this.options.labels ? [] : (['labels'] as const)), ...(this.platform ? [] : (['platform'] as const)), 'pingTime'],
        });
        this.registered = true;
        return written;
      } catch (e) {
        if (!(e instanceof ConflictError) || attempt >= 5) throw e;
      }
    }
  }

  /**
   * Renews the row now; this is also the acknowledgement of an election (renewTime ≥ pingTime).
   * A row that is gone (collected after a long pause, or deleted by an operator) is registered
   * again; a row another start-up of the same name has taken is left to it (no tug of war).
   */
  async renew(): Promise<void> {
    const now = this.clock.now();
    if (await this.store.renew(this.options.leaseName, this.options.name, now, this.expiresAt(now))) return;
    const read = await this.store.read(this.options.leaseName, this.options.name);
    if (!read.item) await this.register();
    else if (read.item.identity !== this.instance)
      this.onError(new Error(`candidate "${this.options.name}" of lease "${this.options.leaseName}" was registered by another start-up (${read.item.identity}); two workers share one name — give each a unique name`));
    // else: renewed already at or after `now` (a clock step back): nothing to do
  }

  /** Acknowledges an open election. */
  ack(): Promise<void> {
    return this.renew();
  }

  /** Stops renewing and removes the row if it is still this start-up's. Idempotent. */
  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    if (!this.registered) return;
    this.registered = false;
    for (let attempt = 1; attempt <= 5; attempt++) {
      const read = await this.store.read(this.options.leaseName, this.options.name);
      if (!read.item || read.item.identity !== this.instance) return; // gone, or a newer start-up's
      try {
        await this.store.delete(read);
        return;
      } catch (e) {
        if (!(e instanceof ConflictError)) throw e;
      }
    }
  }
}

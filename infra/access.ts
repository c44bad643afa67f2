/**
 * Who calls which DynamoDB operation on which table, worked out from the code that runs (and
 * checked against it: test/infra/access.test.ts records every call the handlers and the worker
 * SDK make on DynamoDB Local). Grants are built from these lists and nothing else.
 *
 * IAM authorises a TransactWriteItems per item: a ConditionCheck needs
 * `dynamodb:ConditionCheckItem`, a Put `PutItem`, an Update `UpdateItem`, a Delete `DeleteItem`.
 */
import type { TableNames } from '../lib/schemas/config.js';
import { HOLDER_PLATFORM_INDEX } from '../lib/tables.js';
import type { FunctionName } from '../lib/wiring.js';

export type TableRole = keyof TableNames;
export type DynamoAction = `dynamodb:${'GetItem' | 'UpdateItem' | 'DeleteItem' | 'Query' | 'Scan' | 'ConditionCheckItem'}`;
export type TableAccess = Partial<Record<TableRole, readonly DynamoAction[]>>;

export interface FunctionAccess {
  readonly tables: TableAccess;
  /** dynamodb:Query on these secondary indexes (granted on the index ARN, not the table's). */
  readonly indexQueries?: readonly { readonly table: TableRole; readonly index: string }[];
  /** events:PutEvents on the bus (lease and candidate changes become events). */
  readonly publishEvents: boolean;
  /** sqs:SendMessage on the timer queue (an opened election schedules its deadline). */
  readonly scheduleTimer: boolean;
}

/**
 * One lease's reconcile (lib/coordinator/reconcile.ts `reconcileLease`): GetItem of the lease and
 * Query of its candidates (ItemStore.get/query), UpdateItem to ping candidates (touch) and to write
 * the lease (write). It never deletes a lease and never puts a whole item.
 */
const reconcileOne = {
  leases: ['dynamodb:GetItem', 'dynamodb:UpdateItem'],
  candidates: ['dynamodb:Query', 'dynamodb:UpdateItem'],
} as const satisfies TableAccess;

export const FUNCTION_ACCESS = {
  /**
   * The tick (`reconcileAll`): Scan of leases and candidates instead of a read per lease, the
   * reconciles above (GetItem and Query again after a lost race), then garbage collection:
   * DeleteItem of stale candidates, Scan and DeleteItem of expired identity leases.
   * It publishes no events: events come from the streams.
   */
  coordinator: {
    tables: {
      leases: ['dynamodb:Scan', ...reconcileOne.leases],
      candidates: ['dynamodb:Scan', ...reconcileOne.candidates, 'dynamodb:DeleteItem'],
      identities: ['dynamodb:Scan', 'dynamodb:DeleteItem'],
    },
    publishEvents: false,
    scheduleTimer: true,
  },
  /** Reconciles the candidate's lease, then publishes Candidate Joined/Expired (deferred to the timer queue if EventBridge fails). */
  candidateStream: { tables: reconcileOne, publishEvents: true, scheduleTimer: true },
  /** Reconciles a released or reported lease, then publishes Leader Elected/Changed/… (deferred likewise). */
  leaseStream: { tables: reconcileOne, publishEvents: true, scheduleTimer: true },
  /**
   * Finishes an election whose ack window ended; puts an early timer back. Publishes the events a
   * stream function deferred to the timer queue while EventBridge failed (and defers them again).
   */
  electionTimer: { tables: reconcileOne, publishEvents: true, scheduleTimer: true },
  /**
   * A stopped task or instance (lib/platform/vacate.ts): Query of the holder-platform index, then
   * per lease GetItem and a conditional UpdateItem; the dead holder's candidate row GetItem and
   * DeleteItem. The lease stream publishes and reconciles what follows.
   */
  platform: {
    tables: { leases: ['dynamodb:GetItem', 'dynamodb:UpdateItem'], candidates: ['dynamodb:GetItem', 'dynamodb:DeleteItem'] },
    indexQueries: [{ table: 'leases', index: HOLDER_PLATFORM_INDEX.name }],
    publishEvents: false,
    scheduleTimer: false,
  },
} as const satisfies Record<FunctionName, FunctionAccess>;

/**
 * A worker process (lib/sdk):
 * - LeaderElector on the leases table: GetItem (poll), UpdateItem (acquire, renew, release,
 *   report a vacancy), ConditionCheckItem (the fence of `fencedWrite`);
 * - LeaseCandidate on the candidates table: GetItem and UpdateItem (register, renew = ack),
 *   DeleteItem (stop);
 * - IdentityLeaseHeartbeat on the identities table: GetItem, UpdateItem, DeleteItem (release),
 *   and Query for `listIdentities`/`listLiveIdentities` (one component's partition).
 * Nothing Scans and nothing Puts: every write is a conditional UpdateItem.
 */
export const WORKER_ACCESS = {
  leases: ['dynamodb:GetItem', 'dynamodb:UpdateItem', 'dynamodb:ConditionCheckItem'],
  candidates: ['dynamodb:GetItem', 'dynamodb:UpdateItem', 'dynamodb:DeleteItem'],
  identities: ['dynamodb:GetItem', 'dynamodb:UpdateItem', 'dynamodb:DeleteItem', 'dynamodb:Query'],
} as const satisfies Required<TableAccess>;

/** KMS actions for a table encrypted with a customer-managed key (what aws-cdk-lib's table grants give). */
export const KEY_READ = ['kms:Decrypt', 'kms:DescribeKey'] as const;
export const KEY_WRITE = ['kms:Encrypt', 'kms:ReEncrypt*', 'kms:GenerateDataKey*'] as const;

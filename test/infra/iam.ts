/**
 * DynamoDB Local does not enforce IAM, so tests judge requests against the synthesized policy
 * themselves: the DynamoDB request context a real request carries (action, table, the
 * `dynamodb:LeadingKeys`, `dynamodb:Attributes` and `dynamodb:ReturnValues` condition keys, as
 * AWS's "Using IAM policy conditions for fine-grained access control" defines them), and an
 * evaluator of the few condition operators the construct writes. An operator it does not know is
 * an error, not a pass.
 */
import type { AttributeValue, DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { Stack } from 'aws-cdk-lib';
import * as iam from 'aws-cdk-lib/aws-iam';
import type { TableRole } from '../../infra/access.js';
import { Conclave } from '../../infra/conclave.js';
import { localClient } from '../../lib/local/dynamodb-local.js';
import type { TableNames } from '../../lib/schemas/config.js';
import { TABLES } from '../../lib/tables.js';
import { getAtt, logicalId, statementsOf, synth, type Statement, type Synthesized } from './support.js';

/** What IAM sees of one DynamoDB request (one item of a transaction is one request). */
export interface DynamoRequest {
  /** e.g. `dynamodb:UpdateItem`. */
  action: string;
  table: string;
  /** `dynamodb:LeadingKeys`: the partition key value. */
  leadingKeys: string[];
  /** `dynamodb:Attributes`: every top-level attribute name the request names (key, expressions). */
  attributes: string[];
  /**
   * `dynamodb:ReturnValues`: only where the request names ReturnValues. One that does not (DynamoDB
   * returns nothing: NONE) carries no such key, and a plain `StringEquals` on a key that is not
   * there does not match (AWS's own examples test it with `StringEqualsIfExists`).
   */
  returnValues?: string;
}

interface CommandInput {
  TableName?: string;
  Key?: Record<string, AttributeValue>;
  UpdateExpression?: string;
  ConditionExpression?: string;
  ProjectionExpression?: string;
  KeyConditionExpression?: string;
  FilterExpression?: string;
  ExpressionAttributeNames?: Record<string, string>;
  ExpressionAttributeValues?: Record<string, AttributeValue>;
  ReturnValues?: string;
}

const KEYWORDS = new Set(['SET', 'REMOVE', 'ADD', 'DELETE', 'AND', 'OR', 'NOT', 'BETWEEN', 'IN', 'attribute_exists', 'attribute_not_exists', 'attribute_type', 'begins_with', 'contains', 'size', 'if_not_exists', 'list_append']);

/**
 * Attribute names written bare into an expression (not through `#placeholders`). The SDK uses
 * placeholders only; a bare name would escape the test's accounting, so it is reported.
 */
export function bareNames(expression: string | undefined): string[] {
  if (!expression) return [];
  const stripped = expression.replace(/[#:][A-Za-z0-9_]+/g, ' ');
  return (stripped.match(/[A-Za-z_][A-Za-z0-9_]*/g) ?? []).filter((w) => !KEYWORDS.has(w));
}

/** The request context of one command (or one item of a TransactWriteItems) sent to `partitionKeyOf(table)`. */
export function requestOf(command: string, input: CommandInput, partitionKeyOf: (table: string) => string): DynamoRequest {
  const table = input.TableName!;
  const pk = partitionKeyOf(table);
  const keyValue = input.Key?.[pk]?.S ?? input.ExpressionAttributeValues?.[':pk']?.S;
  const names = new Set<string>([...Object.keys(input.Key ?? {}), ...Object.values(input.ExpressionAttributeNames ?? {})]);
  for (const e of [input.UpdateExpression, input.ConditionExpression, input.ProjectionExpression, input.KeyConditionExpression, input.FilterExpression]) for (const n of bareNames(e)) names.add(n);
  const writes = ['UpdateItem', 'PutItem', 'DeleteItem'].includes(command);
  return {
    action: `dynamodb:${command}`,
    table,
    leadingKeys: keyValue === undefined ? [] : [keyValue],
    attributes: [...names].sort(),
    ...(writes && input.ReturnValues !== undefined ? { returnValues: input.ReturnValues } : {}),
  };
}

/** A role granted on a Conclave over existing tables, synthesized: its statements, and what they let through. */
export interface GrantedRole {
  readonly s: Synthesized<Stack>;
  readonly statements: Statement[];
  /** Whether the role's statements let `r` through. */
  allowed(r: DynamoRequest): boolean;
  /** Which of Conclave's tables `table` is. */
  roleOf(table: string): TableRole;
}

/** Synthesizes stack `stack` with a Conclave over `tables` and a role (assumed by `principal`) given `grant`. */
export function grantedRole(stack: string, principal: string, tables: TableNames, grant: (c: Conclave, role: iam.Role) => void): GrantedRole {
  let arnOf: (r: TableRole) => unknown = () => undefined;
  let roleId = '';
  const s = synth((app) => {
    const st = new Stack(app, stack);
    const c = new Conclave(st, 'Conclave', { tableNames: tables });
    const role = new iam.Role(st, 'Role', { assumedBy: new iam.ServicePrincipal(principal) });
    grant(c, role);
    arnOf = (r) => getAtt(logicalId(st, c.tables[r]));
    roleId = logicalId(st, role);
    return st;
  });
  const statements = statementsOf(s.template, roleId);
  const roleOf = (table: string) => (Object.entries(tables) as [TableRole, string][]).find(([, n]) => n === table)![0];
  return { s, statements, roleOf, allowed: (r) => allows(statements, r, arnOf(roleOf(r.table))) };
}

const TRANSACT_ACTION: Record<string, string> = { ConditionCheck: 'ConditionCheckItem', Put: 'PutItem', Update: 'UpdateItem', Delete: 'DeleteItem' };

/**
 * A client like localClient's that records each request to Conclave's `tables` as IAM sees it (one
 * per transaction item): a fenced write's own item, on the application's table, is left out.
 */
export function recordingClient(endpoint: string, tables: TableNames): { client: DynamoDBClient; requests: DynamoRequest[] } {
  const client = localClient(endpoint);
  const requests: DynamoRequest[] = [];
  const roleOf = (table: string) => (Object.keys(tables) as (keyof TableNames)[]).find((r) => tables[r] === table);
  const pk = (table: string) => TABLES[roleOf(table)!].partitionKey;
  client.middlewareStack.add(
    (next, context) => async (args) => {
      const input = args.input as Record<string, unknown> & { TableName?: string; TransactItems?: Record<string, Record<string, unknown>>[] };
      const command = String(context.commandName).replace(/Command$/, '');
      const items = input.TransactItems ? input.TransactItems.flatMap((item) => Object.entries(item).map(([kind, body]) => [TRANSACT_ACTION[kind]!, body] as const)) : [[command, input] as const];
      for (const [action, body] of items) if (roleOf(body['TableName'] as string)) requests.push(requestOf(action, body, pk));
      return next(args);
    },
    { step: 'initialize', name: 'recordRequests' },
  );
  return { client, requests };
}

const contextValues = (r: DynamoRequest, key: string): string[] | undefined => {
  switch (key) {
    case 'dynamodb:LeadingKeys':
      return r.leadingKeys.length ? r.leadingKeys : undefined;
    case 'dynamodb:Attributes':
      return r.attributes.length ? r.attributes : undefined;
    case 'dynamodb:ReturnValues':
      return r.returnValues === undefined ? undefined : [r.returnValues];
    default:
      throw new Error(`the evaluator does not know condition key ${key}`);
  }
};

const list = (v: unknown): string[] => ([] as string[]).concat(v as string | string[]);

/** IAM's StringLike: `*` any run of characters, `?` any one, the rest literally. */
export function globMatches(pattern: string, value: string): boolean {
  const re = pattern.replace(/[.+^${}()|[\]\\]/g, '\\$&').replace(/\*/g, '.*').replace(/\?/g, '.');
  return new RegExp(`^${re}$`, 's').test(value);
}

function conditionHolds(condition: Statement['Condition'], r: DynamoRequest): boolean {
  for (const [operator, keys] of Object.entries(condition ?? {})) {
    for (const [key, expected] of Object.entries(keys)) {
      const values = contextValues(r, key);
      const want = list(expected);
      switch (operator) {
        case 'ForAllValues:StringEquals':
          if (values && !values.every((v) => want.includes(v))) return false;
          break;
        case 'StringEquals':
          if (!values || values.length !== 1 || !want.includes(values[0]!)) return false;
          break;
        case 'StringEqualsIfExists':
          // a key the request does not carry passes; one it does must match
          if (values && (values.length !== 1 || !want.includes(values[0]!))) return false;
          break;
        case 'ForAllValues:StringLike':
          if (values && !values.every((v) => want.some((w) => globMatches(w, v)))) return false;
          break;
        case 'ForAllValues:StringNotLike':
          if (values && !values.every((v) => !want.some((w) => globMatches(w, v)))) return false;
          break;
        case 'Null':
          if ((want[0] === 'true') !== (values === undefined)) return false;
          break;
        default:
          throw new Error(`the evaluator does not know condition operator ${operator}`);
      }
    }
  }
  return true;
}

/**
 * Whether any Allow statement lets `r` through on the table whose ARN (as the template writes it)
 * is `tableArn`. There are no Deny statements in what the construct grants.
 */
export function allows(statements: readonly Statement[], r: DynamoRequest, tableArn: unknown): boolean {
  const arn = JSON.stringify(tableArn);
  return statements.some(
    (s) => s.Effect === 'Allow' && s.Action.some((a) => a === r.action || a === 'dynamodb:*') && s.Resource.some((res) => JSON.stringify(res) === arn) && conditionHolds(s.Condition, r),
  );
}

/**
 * What IAM sees of one IoT Core request: the action and the resource it is checked on, as
 * `<kind>/<name>` (`client/<client id>`, `topicfilter/<filter>`, `topic/<topic>`). IoT Core checks
 * iot:Connect at connection, iot:Subscribe per filter, iot:Publish per message sent and
 * iot:Receive per message delivered.
 */
export interface IotRequest {
  action: 'iot:Connect' | 'iot:Subscribe' | 'iot:Publish' | 'iot:Receive';
  resource: string;
}

/** A template value (a string, or Fn::Join of strings and Refs) with each Ref looked up in `refs`. */
export function resolveArn(value: unknown, refs: Readonly<Record<string, string>>): string {
  if (typeof value === 'string') return value;
  const o = value as Record<string, unknown>;
  if (Array.isArray(o['Fn::Join'])) {
    const [delimiter, parts] = o['Fn::Join'] as [string, unknown[]];
    return parts.map((p) => resolveArn(p, refs)).join(delimiter);
  }
  if (typeof o['Ref'] === 'string') {
    const v = refs[o['Ref']];
    if (v === undefined) throw new Error(`resolveArn: no value for Ref ${o['Ref']}`);
    return v;
  }
  throw new Error(`resolveArn: cannot resolve ${JSON.stringify(value)}`);
}

/** IAM's resource matching: `*` any run of characters (slashes too), `?` any one; the rest literal. */
export function arnMatches(pattern: string, arn: string): boolean {
  const re = pattern.replace(/[.+^${}()|[\]\\]/g, '\\$&').replace(/\*/g, '.*').replace(/\?/g, '.');
  return new RegExp(`^${re}$`).test(arn);
}

/** Pseudo parameters as a test deployment resolves them. */
export const TEST_ENV = { partition: 'aws', region: 'us-east-1', account: '123456789012' } as const;
const PSEUDO = { 'AWS::Partition': TEST_ENV.partition, 'AWS::Region': TEST_ENV.region, 'AWS::AccountId': TEST_ENV.account };

/** Whether an Allow statement lets IoT request `r` through (`refs`: the template's Refs, e.g. a table's logical id → its name). */
export function iotAllows(statements: readonly Statement[], r: IotRequest, refs: Readonly<Record<string, string>> = {}): boolean {
  const arn = `arn:${TEST_ENV.partition}:iot:${TEST_ENV.region}:${TEST_ENV.account}:${r.resource}`;
  return statements.some(
    (s) => s.Effect === 'Allow' && s.Action.includes(r.action) && !s.Condition && s.Resource.some((res) => arnMatches(resolveArn(res, { ...PSEUDO, ...refs }), arn)),
  );
}

import { DeleteItemCommand, type DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { marshall } from '@aws-sdk/util-dynamodb';
import { COORDINATOR_COMPONENT, TICK_CURSOR_NAME, TickCursorItem, type TickCursor } from '../schemas/tick-cursor.js';
import { ItemStore, type Read } from './item-store.js';

export type TickCursorRead = Read<TickCursor>;

const KEY = { component: COORDINATOR_COMPONENT, name: TICK_CURSOR_NAME };

/** The coordinator's tick cursor: one row of the identities table (lib/schemas/tick-cursor.ts). */
export class TickStore extends ItemStore<typeof TickCursorItem> {
  constructor(client: DynamoDBClient, table: string) {
    super({ client, table, keys: ['component', 'name'], schema: TickCursorItem, kind: 'tick cursor' });
  }

  /** The cursor (consistent read); a row that does not match the schema is a ValidationError. */
  read(): Promise<TickCursorRead> {
    return this.get(KEY);
  }

  /** Removes the row whatever it holds: a cursor nobody can read is started afresh. */
  async reset(): Promise<TickCursorRead> {
    await this.client.send(new DeleteItemCommand({ TableName: this.table, Key: marshall(KEY) }));
    return { key: KEY, item: undefined, revision: 0 };
  }
}

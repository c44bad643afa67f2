import * as z from 'zod';
import { DETAIL_SCHEMAS, DETAIL_TYPES, type DetailType } from './schemas.js';

/** Which JSON Schema dialect {@link eventJsonSchemas} writes. */
export type JsonSchemaTarget = 'draft-2020-12' | 'draft-07' | 'draft-04' | 'openapi-3.0';

/**
 * A JSON Schema for each detail-type's `detail`, from the zod schemas (the one source of shapes):
 * for an EventBridge schema registry (`JSONSchemaDraft4` → target 'draft-04', `OpenApi3` →
 * 'openapi-3.0') or for consumers in other languages.
 *
 * Generated in zod's input mode, so objects do not say `additionalProperties: false`: a consumer
 * validating with an older schema keeps accepting events that gained an optional field.
 */
export function eventJsonSchemas(opts: { target?: JsonSchemaTarget } = {}): Record<DetailType, Record<string, unknown>> {
  const target = opts.target ?? 'draft-2020-12';
  return Object.fromEntries(
    DETAIL_TYPES.map((t) => [t, z.toJSONSchema(DETAIL_SCHEMAS[t], { target, io: 'input' }) as Record<string, unknown>]),
  ) as Record<DetailType, Record<string, unknown>>;
}

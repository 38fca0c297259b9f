/**
 * Request bodies of the management API (research/posthog-management-api.md §5.4): JSON only,
 * parsed once before the handler runs, for POST, PATCH and PUT. An empty body is `undefined`;
 * no content type is read as JSON (as curl users expect); `application/json` and any `+json`
 * type are JSON; anything else → 415; malformed JSON → 400 `parse_error`. The size limit (413)
 * is fastify's `bodyLimit`, enforced while the body streams in.
 *
 * Before parsing, one pass over the text (src/json-budget.ts) refuses a body nested deeper than
 * MAX_API_BODY_DEPTH (400 `validation_error`, `attr` = the top-level field, as a field validator
 * would answer) or holding more than MAX_BODY_MEMBERS array elements and object members (413
 * `payload_too_large`). So no body can make JSON.parse build millions of values, and every
 * recursive walk after it (validators, serialisers, postgres.js's JSON.stringify of a jsonb
 * parameter, which overflowed the stack on a 10,000-level value) sees at most
 * MAX_JSON_DEPTH levels in any field.
 */
import sjson from 'secure-json-parse';
import { ApiError, errors } from '../../errors.js';
import { checkJsonBudget, describeExcess, type JsonBudget, type JsonBudgetExcess } from '../../json-budget.js';
import { MAX_API_BODY_DEPTH, MAX_BODY_MEMBERS, MAX_JSON_DEPTH } from '../../limits.js';

/** Methods whose body is read; other methods' bodies are ignored, as DRF ignores them. */
export const BODY_METHODS: ReadonlySet<string> = new Set(['POST', 'PATCH', 'PUT']);

/** What a management body may hold, checked before it is parsed. */
export const API_BODY_BUDGET: JsonBudget = Object.freeze({ maxDepth: MAX_API_BODY_DEPTH, maxMembers: MAX_BODY_MEMBERS });

/**
 * Parses a JSON body. Empty → undefined. Keys `__proto__` and `constructor.prototype` are
 * refused (a parse error), so no later object spread can change a prototype.
 * @throws ApiError 415 for a content type other than JSON; 400 parse_error for bad JSON; 400
 * validation_error for a body nested too deeply; 413 payload_too_large for too many members.
 */
export function parseJsonBody(raw: Buffer, contentType: string | undefined): unknown {
  if (raw.length === 0) return undefined;
  const type = (contentType === undefined || contentType === '' ? 'application/json' : contentType).split(';')[0]!.trim().toLowerCase();
  if (type !== 'application/json' && !type.endsWith('+json')) throw errors.unsupportedMediaType(type);
  const text = raw.toString('utf8');
  const excess = checkJsonBudget(text, API_BODY_BUDGET);
  if (excess !== null) throw overBudget(excess);
  try {
    return sjson.parse(text, undefined, { protoAction: 'error', constructorAction: 'error' });
  } catch (e) {
    throw errors.parse((e as Error).message);
  }
}

/** The answer to a body over {@link API_BODY_BUDGET}. */
function overBudget(e: JsonBudgetExcess): ApiError {
  if (e.kind !== 'depth') return new ApiError(413, 'invalid_request', 'payload_too_large', `Request body ${describeExcess(e)}.`);
  // A field's value may hold MAX_JSON_DEPTH levels: the body object is the one more.
  if (e.key !== null) return errors.validation(`Value may not nest deeper than ${MAX_JSON_DEPTH} levels.`, e.key);
  return errors.validation(`Request body may not nest deeper than ${e.limit} levels.`);
}

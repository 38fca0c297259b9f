/**
 * Request bodies of the management API (research/posthog-management-api.md §5.4): JSON only,
 * parsed once before the handler runs, for POST, PATCH and PUT. An empty body is `undefined`;
 * no content type is read as JSON (as curl users expect); `application/json` and any `+json`
 * type are JSON; anything else → 415; malformed JSON → 400 `parse_error`. The size limit (413)
 * is fastify's `bodyLimit`, enforced while the body streams in.
 */
import sjson from 'secure-json-parse';
import { errors } from '../../errors.js';

/** Methods whose body is read; other methods' bodies are ignored, as DRF ignores them. */
export const BODY_METHODS: ReadonlySet<string> = new Set(['POST', 'PATCH', 'PUT']);

/**
 * Parses a JSON body. Empty → undefined. Keys `__proto__` and `constructor.prototype` are
 * refused (a parse error), so no later object spread can change a prototype.
 * @throws ApiError 415 for a content type other than JSON, 400 parse_error for bad JSON.
 */
export function parseJsonBody(raw: Buffer, contentType: string | undefined): unknown {
  if (raw.length === 0) return undefined;
  const type = (contentType === undefined || contentType === '' ? 'application/json' : contentType).split(';')[0]!.trim().toLowerCase();
  if (type !== 'application/json' && !type.endsWith('+json')) throw errors.unsupportedMediaType(type);
  try {
    return sjson.parse(raw.toString('utf8'), undefined, { protoAction: 'error', constructorAction: 'error' });
  } catch (e) {
    throw errors.parse((e as Error).message);
  }
}

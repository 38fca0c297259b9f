/**
 * Maps anything thrown while answering a management request to PostHog's error body
 * `{type, code, detail, attr}` (research/posthog-management-api.md §5.4): our ApiErrors as
 * they are, schema failures as DRF words them (./validation.ts), fastify's own body errors as
 * 413/415/400, a Postgres data exception as 400, and anything else as a generic 500 whose cause
 * is logged and never sent.
 */
import { errors, isApiError, type ApiError } from '../../errors.js';
import { validationError, type RequestPart } from './validation.js';

/** True for a Postgres data exception (SQLSTATE class 22: a NUL byte, an id beyond bigint…): the request's values are at fault. */
export function isDataException(e: unknown): boolean {
  const code = (e as { code?: unknown } | null)?.code;
  return typeof code === 'string' && /^22[0-9A-Z]{3}$/.test(code);
}

interface FastifyLikeError {
  code?: string;
  statusCode?: number;
  validation?: Parameters<typeof validationError>[0];
  validationContext?: string;
}

/**
 * The ApiError to answer `e` with, and whether it was expected (an unexpected one is logged
 * with its stack). `limitBytes` is the body limit, named in the 413 detail.
 */
export function toApiError(e: unknown, limitBytes: number): { error: ApiError; expected: boolean } {
  if (isApiError(e)) return { error: e, expected: true };
  const f = (e ?? {}) as FastifyLikeError;
  if (Array.isArray(f.validation)) return { error: validationError(f.validation, (f.validationContext ?? 'body') as RequestPart), expected: true };
  switch (f.code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
      return { error: errors.payloadTooLarge(limitBytes), expected: true };
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return { error: errors.unsupportedMediaType('unknown'), expected: true };
    case 'FST_ERR_BAD_URL':
      return { error: errors.notFound(), expected: true };
    default:
  }
  if (f.statusCode === 413 && typeof f.code === 'string' && f.code.startsWith('FST_')) return { error: errors.payloadTooLarge(limitBytes), expected: true };
  if (isDataException(e)) {
    return { error: errors.badRequest('invalid_input', 'A value in the request is out of range or holds characters that cannot be stored (such as NUL).'), expected: true };
  }
  // fastify's other client errors (aborted body, bad encoding) carry a 4xx status.
  if (typeof f.statusCode === 'number' && f.statusCode >= 400 && f.statusCode < 500 && typeof f.code === 'string' && f.code.startsWith('FST_')) {
    return { error: errors.badRequest('invalid_request', 'The request could not be read.'), expected: true };
  }
  return { error: errors.internal(), expected: false };
}

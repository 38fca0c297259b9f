/**
 * Request bodies of the management API: JSON only, bounded in size, parsed once before the
 * handler runs. Over the limit → 413 (the rest of the body is drained, not buffered); a
 * non-JSON content type → 415; malformed JSON → 400 `parse_error` (research §5.4).
 */
import type { IncomingMessage } from 'node:http';
import { errors } from '../../errors.js';

/** Reads the raw body, stopping at `limitBytes`. @throws ApiError 413. */
export function readBody(req: IncomingMessage, limitBytes: number): Promise<Buffer> {
  const declared = Number(req.headers['content-length']);
  if (Number.isFinite(declared) && declared > limitBytes) {
    req.resume();
    return Promise.reject(errors.payloadTooLarge(limitBytes));
  }
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let failed = false;
    req.on('data', (c: Buffer) => {
      if (failed) return;
      size += c.length;
      if (size > limitBytes) {
        failed = true;
        chunks.length = 0;
        reject(errors.payloadTooLarge(limitBytes));
        return;
      }
      chunks.push(c);
    });
    req.on('end', () => { if (!failed) resolve(Buffer.concat(chunks, size)); });
    req.on('error', (e) => { if (!failed) { failed = true; reject(e); } });
  });
}

/**
 * Parses a JSON body. Empty → undefined. @throws ApiError 415 for a content type other than
 * JSON (none given is accepted as JSON, as curl users expect), 400 parse_error for bad JSON.
 */
export function parseJsonBody(raw: Buffer, contentType: string | undefined): unknown {
  if (raw.length === 0) return undefined;
  const type = (contentType ?? 'application/json').split(';')[0]!.trim().toLowerCase();
  if (type !== 'application/json' && !type.endsWith('+json')) throw errors.unsupportedMediaType(type);
  try {
    return JSON.parse(raw.toString('utf8'));
  } catch (e) {
    throw errors.parse((e as Error).message);
  }
}

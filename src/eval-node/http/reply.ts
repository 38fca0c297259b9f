/**
 * Writing answers on uWebSockets.js: every write is corked (one syscall per answer) and skipped
 * when the client went away (`res.onAborted` must have been registered before any async work;
 * see {@link Exchange}). Error answers use PostHog's `{type, code, detail, attr}` body from
 * src/errors.ts.
 */
import type { HttpResponse } from 'uWebSockets.js';
import type { ApiError } from '../../errors.js';
import type { Metrics, RouteLabel, Stage } from './metrics.js';

const STATUS_TEXT: Record<number, string> = {
  200: '200 OK', 204: '204 No Content', 304: '304 Not Modified', 400: '400 Bad Request', 401: '401 Unauthorized',
  402: '402 Payment Required', 403: '403 Forbidden', 404: '404 Not Found', 405: '405 Method Not Allowed',
  413: '413 Payload Too Large', 429: '429 Too Many Requests', 500: '500 Internal Server Error', 503: '503 Service Unavailable',
};

/** `"200 OK"` style status line for uWS `writeStatus`. */
export function statusLine(status: number): string {
  return STATUS_TEXT[status] ?? `${status} Status`;
}

/**
 * One request/response exchange: the response, whether the client aborted, the route label
 * and start time for metrics, and the CORS origin to echo. Created synchronously in the route
 * handler, which also registers `onAborted`.
 */
export class Exchange {
  aborted = false;
  done = false;
  /** The pipeline stage the request is in (metrics label of failures; STYLE.md rule 5). */
  stage: Stage = 'parse';

  constructor(
    readonly res: HttpResponse,
    private readonly metrics: Metrics,
    readonly route: RouteLabel,
    /** `Origin` header ('' when absent): echoed for browsers (posthog-js calls /flags cross-origin). */
    readonly origin: string,
    readonly startedMs: number = performance.now(),
  ) {
    res.onAborted(() => { this.aborted = true; });
  }

  /**
   * Sends one complete answer (once; later calls are ignored). `closeConnection` is for answers
   * sent before the request body was read (413), so the unread rest cannot be taken as a request.
   */
  send(status: number, body: string | Uint8Array, headers: readonly (readonly [string, string])[] = NO_HEADERS,
    contentType: string | null = 'application/json', closeConnection = false): void {
    if (this.done) return;
    this.done = true;
    this.metrics.observe(this.route, status, (performance.now() - this.startedMs) / 1000);
    if (this.aborted) return;
    const res = this.res;
    res.cork(() => {
      res.writeStatus(statusLine(status));
      if (contentType !== null) res.writeHeader('Content-Type', contentType);
      if (this.origin !== '') {
        res.writeHeader('Access-Control-Allow-Origin', this.origin);
        res.writeHeader('Access-Control-Allow-Credentials', 'true');
        res.writeHeader('Vary', 'Origin');
      }
      for (const [k, v] of headers) res.writeHeader(k, v);
      res.end(body, closeConnection);
    });
  }

  /** Sends an ApiError as PostHog's body (empty for the few bodiless errors). */
  sendError(e: ApiError, closeConnection = false): void {
    const headers = Object.entries(e.headers);
    this.send(e.status, e.empty ? '' : JSON.stringify(e.toBody()), headers, e.empty ? null : 'application/json', closeConnection);
  }
}

const NO_HEADERS: readonly (readonly [string, string])[] = Object.freeze([]);

/**
 * Reads the whole request body, copying uWS's transient chunks, and calls `done` once:
 * with the bytes, or with 'too_large' as soon as more than `maxBytes` arrived (the rest is
 * ignored). `onAborted` must already be registered on `res`.
 */
export function readBody(res: HttpResponse, maxBytes: number, done: (body: Buffer | 'too_large') => void): void {
  collectBody(res, maxBytes, done, false);
}

/**
 * {@link readBody} for a handler that is done with the bytes when `done` returns: a body that
 * arrives as one chunk (the usual small body) is handed over as a view of uWS's chunk instead of
 * a copy. That view is invalid once `done` returns (uWS reuses the memory), so `done` must read
 * what it needs synchronously and keep neither the view nor anything sharing its memory. Bodies
 * in several chunks are copied and joined as in {@link readBody}.
 */
export function readBodyTransient(res: HttpResponse, maxBytes: number, done: (body: Buffer | 'too_large') => void): void {
  collectBody(res, maxBytes, done, true);
}

function collectBody(res: HttpResponse, maxBytes: number, done: (body: Buffer | 'too_large') => void, lendSingleChunk: boolean): void {
  let chunks: Buffer[] | null = null;
  let size = 0;
  let finished = false;
  // uWS reuses a chunk's memory after its callback returns: what outlives the callback is copied.
  const copy = (chunk: ArrayBuffer): Buffer => Buffer.from(Buffer.from(chunk));
  res.onData((chunk, isLast) => {
    if (finished) return;
    size += chunk.byteLength;
    if (size > maxBytes) {
      finished = true;
      done('too_large');
      return;
    }
    if (isLast) {
      finished = true;
      if (chunks === null) done(lendSingleChunk ? Buffer.from(chunk) : copy(chunk));
      else { chunks.push(copy(chunk)); done(Buffer.concat(chunks, size)); }
      return;
    }
    (chunks ??= []).push(copy(chunk));
  });
}

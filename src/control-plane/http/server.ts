/**
 * The control plane's HTTP server (node:http; the management API is low-volume, so the
 * well-kept standard library beats a faster native server here). Each request runs the
 * stages: route → authenticate → scope → project → body → handler → reply. An ApiError at
 * any stage becomes PostHog's `{type, code, detail, attr}`; anything else is logged with the
 * request id and answered with a generic 500, and the process keeps serving.
 */
import http from 'node:http';
import crypto from 'node:crypto';
import { controlPlaneIndex, isEvaluationPath, wrongPortDetail } from '../../where.js';
import type { AddressInfo } from 'node:net';
import { errors, isApiError, type ApiError } from '../../errors.js';
import { authenticate, requireScope, resolveProject } from './auth.js';
import { parseJsonBody, readBody } from './body.js';
import { Router } from './router.js';
import { ApiMetrics } from './metrics.js';
import type { Deps, ProjectRow, Reply, RequestContext, Route } from './types.js';

/** A running HTTP server. */
export interface RunningHttp {
  port: number;
  /** Base URL, e.g. `http://127.0.0.1:8000`. */
  url: string;
  close(): Promise<void>;
}

/** Unauthenticated probes every process exposes (DESIGN.md "Processes"). */
export interface Probes {
  ready(): Promise<boolean>;
  /** Extra Prometheus text appended after the request metrics (e.g. the change-log head). */
  metrics(): Promise<string>;
}

/** Starts the management API on `deps.config.host:port` serving `routes`. */
export async function startHttpServer(deps: Deps, routes: readonly Route[], probes: Probes, port: number): Promise<RunningHttp> {
  const router = new Router(routes);
  const metrics = new ApiMetrics();
  /** Origin of absolute links (next/previous): the configured public URL, else the bind address; never the Host header. */
  let origin = deps.config.apiUrl ?? `http://${deps.config.host}:${port}`;
  const server = http.createServer((req, res) => {
    const started = process.hrtime.bigint();
    res.once('finish', () => {
      metrics.observe((res as { route?: string }).route ?? 'unmatched', req.method ?? 'GET', res.statusCode,
        Number(process.hrtime.bigint() - started) / 1e9);
    });
    handle(deps, router, { ready: probes.ready, metrics: async () => (await metrics.render()) + await probes.metrics() }, origin, req, res).catch((e) => {
      deps.log.error({ err: e }, 'unhandled error while replying');
      if (!res.headersSent) res.writeHead(500).end();
    });
  });
  server.keepAliveTimeout = 65_000;
  server.requestTimeout = 60_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, deps.config.host, () => resolve());
  });
  const actual = (server.address() as AddressInfo).port;
  origin = deps.config.apiUrl ?? `http://${deps.config.host.includes(':') ? `[${deps.config.host}]` : deps.config.host}:${actual}`;
  return {
    port: actual,
    url: `http://${deps.config.host}:${actual}`,
    close: () => new Promise((resolve) => {
      server.close(() => resolve());
      server.closeAllConnections();
    }),
  };
}

const BODY_METHODS = new Set(['POST', 'PATCH', 'PUT']);
/**
 * On every management answer (issue 8 item 8): browsers must not sniff JSON into HTML, and no
 * cache may keep answers that hold flags and keys. A route may override (ETag feeds).
 */
const SECURITY_HEADERS: Readonly<Record<string, string>> = { 'x-content-type-options': 'nosniff', 'cache-control': 'no-store' };

async function handle(deps: Deps, router: Router, probes: Probes, origin: string, req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
  const requestId = crypto.randomUUID();
  const method = req.method ?? 'GET';
  let url: URL;
  try {
    // The Host header is the client's to choose: links are built on the configured origin (issue 8 item 8).
    url = new URL(req.url ?? '/', origin);
  } catch {
    return send(res, requestId, { status: 400, body: errors.badRequest('invalid_url', 'Malformed request URL.').toBody() });
  }
  if (method === 'GET' && (url.pathname === '/_health' || url.pathname === '/_ready' || url.pathname === '/metrics')) {
    return probe(probes, url.pathname, res);
  }
  if (method === 'GET' && url.pathname === '/') { drain(req); return send(res, requestId, { status: 200, body: controlPlaneIndex() }); }
  if (isEvaluationPath(url.pathname)) { drain(req); return send(res, requestId, { status: 404, body: errors.notFound(wrongPortDetail(url.pathname)).toBody() }); }
  try {
    const match = router.match(method, url.pathname);
    if (match.kind === 'not_found') { drain(req); throw errors.notFound(); }
    if (match.kind === 'method_not_allowed') { drain(req); throw errors.methodNotAllowed(method, match.allow); }
    (res as { route?: string }).route = match.route.path;
    const auth = await authenticate(deps.sql, req.headers, url.searchParams);
    if (match.route.scope) requireScope(auth, match.route.scope);
    let project: ProjectRow | undefined;
    if (match.params.project_id !== undefined) project = await resolveProject(deps.sql, auth, match.params.project_id, url.searchParams.get('token'));
    let body: unknown;
    if (BODY_METHODS.has(method)) body = parseJsonBody(await readBody(req, deps.config.maxApiBodyBytes), req.headers['content-type']);
    else drain(req);
    const ctx: RequestContext = {
      method, url, params: match.params, query: url.searchParams, headers: req.headers, body, auth,
      project: project as ProjectRow, requestId,
    };
    send(res, requestId, await match.route.handler(ctx));
  } catch (e) {
    const err: ApiError = isApiError(e) ? e : isDataException(e)
      ? errors.badRequest('invalid_input', 'A value in the request is out of range or holds characters that cannot be stored (such as NUL).')
      : errors.internal();
    if (!isApiError(e) && err.status >= 500) deps.log.error({ err: e, request_id: requestId, method, path: url.pathname }, 'request failed');
    else if (err.status >= 500) deps.log.error({ request_id: requestId, code: err.code }, err.message);
    else deps.log.info({ request_id: requestId, status: err.status, code: err.code, path: url.pathname }, err.message);
    if (err.status === 413) res.setHeader('connection', 'close');
    send(res, requestId, { status: err.status, body: err.empty ? undefined : err.toBody(), headers: { ...err.headers } });
  }
}

/**
 * True for a Postgres data exception (SQLSTATE class 22: a NUL byte, an id beyond bigint, text
 * that is not a number): the request's values, not the server, are at fault, so it is a 400
 * (issue 8 item 8) rather than a 500.
 */
function isDataException(e: unknown): boolean {
  const code = (e as { code?: unknown } | null)?.code;
  return typeof code === 'string' && /^22[0-9A-Z]{3}$/.test(code);
}

function drain(req: http.IncomingMessage): void {
  req.resume();
}

function send(res: http.ServerResponse, requestId: string, reply: Reply): void {
  if (res.headersSent) return;
  const headers: Record<string, string> = { 'x-request-id': requestId, ...SECURITY_HEADERS, ...(reply.headers ?? {}) };
  if (reply.body === undefined) {
    res.writeHead(reply.status, { ...headers, 'content-length': '0' }).end();
    return;
  }
  const text = JSON.stringify(reply.body);
  res.writeHead(reply.status, { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(text)), ...headers }).end(text);
}

async function probe(probes: Probes, path: string, res: http.ServerResponse): Promise<void> {
  if (path === '/_health') {
    res.writeHead(200, { 'content-type': 'application/json', ...SECURITY_HEADERS }).end('{"status":"ok"}');
  } else if (path === '/_ready') {
    const ok = await probes.ready().catch(() => false);
    res.writeHead(ok ? 200 : 503, { 'content-type': 'application/json', ...SECURITY_HEADERS }).end(JSON.stringify({ ready: ok }));
  } else {
    res.writeHead(200, { 'content-type': 'text/plain; version=0.0.4' }).end(await probes.metrics());
  }
}

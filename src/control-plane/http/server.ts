/**
 * The control plane's HTTP server: the management API on fastify. Each
 * declared {@link Route} becomes a fastify route whose request runs:
 *
 *   route match → authenticate → scope → rate limit → project → body (JSON, size-limited) →
 *   schema validation → handler → reply
 *
 * Authentication, scope and project run in the route's `onRequest` hook, so a request without
 * a valid key or scope is refused before its body is read; a client address past its failed
 * authentications is refused before any key lookup (./auth-failures.ts). Slow clients are bounded
 * by headers, request and keep-alive timeouts and a connection cap (SWITCHYARD_API_*); a handler's
 * context carries a signal that aborts when the client leaves before the answer. An ApiError at any stage becomes
 * PostHog's `{type, code, detail, attr}` (./error-handler.ts); anything else is logged with the
 * request id and answered with a generic 500, and the process keeps serving. Every answer
 * carries `x-request-id` and the security headers (nosniff, no-store unless the route sets its
 * own cache policy). `GET /api/schema/` serves the OpenAPI document (./openapi.ts).
 */
import crypto from 'node:crypto';
import Fastify, { type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import multipart from '@fastify/multipart';
import { controlPlaneIndex, isEvaluationPath, wrongPortDetail } from '../../where.js';
import { errors, type ApiError } from '../../errors.js';
import { authenticate, requireScope, resolveProject } from './auth.js';
import { BODY_METHODS, parseJsonBody } from './json-body.js';
import { ApiMetrics } from './metrics.js';
import { toApiError } from './error-handler.js';
import { lazyValidator, type RequestPart } from './validation.js';
import { addSchemaRoute, registerOpenApi, routeSchema } from './openapi.js';
import { addConsoleRoutes } from './console.js';
import { methodNotAllowedRoutes, normalisePattern } from './method-not-allowed.js';
import { registerRateLimits, type Throttle } from './rate-limit.js';
import { AuthFailureLimiter } from './auth-failures.js';
import { projectPath } from './environments.js';
import type { AuthContext, Deps, ProjectRow, Reply, RequestContext, Route } from './types.js';

/** A running HTTP server. */
export interface RunningHttp {
  port: number;
  /** Base URL, e.g. `http://127.0.0.1:8000`. */
  url: string;
  /** Stops accepting, lets requests in flight finish (new ones on open connections answer 503), then closes every connection. */
  close(): Promise<void>;
}

/** Unauthenticated probes every process exposes (DESIGN.md "Processes"). */
export interface Probes {
  ready(): Promise<boolean>;
  /** True while the process drains before stopping: `/_ready` answers 503 `draining` (docs/operations.md). */
  draining?(): boolean;
  /** Extra Prometheus text appended after the request metrics (e.g. the change-log head). */
  metrics(): Promise<string>;
}

/** What the `onRequest` stage learned, for the handler. */
interface Resolved { url: URL; auth: AuthContext; project: ProjectRow | undefined }

declare module 'fastify' {
  interface FastifyRequest { resolved: Resolved | null }
  interface FastifyContextConfig {
    /** The declared pattern, the `route` label of the metrics. */
    pattern?: string;
    /** True on routes whose body is never read (405 answers, probes). */
    noBody?: boolean;
  }
}

/**
 * On every management answer: browsers must not sniff JSON into HTML, and no
 * cache may keep answers that hold flags and keys. A route may set its own (ETag feeds).
 */
const SECURITY_HEADERS: Readonly<Record<string, string>> = { 'x-content-type-options': 'nosniff', 'cache-control': 'no-store' };
/** Version named in the OpenAPI document. */
const API_VERSION = '1.0.0';

/** Starts the management API on `deps.config.host:port` serving `routes`, each also under PostHog's environment prefix (./environments.ts). */
export async function startHttpServer(deps: Deps, routes: readonly Route[], probes: Probes, port: number): Promise<RunningHttp> {
  const notAllowed = methodNotAllowedRoutes(routes); // throws on a duplicate route before anything starts
  const metrics = new ApiMetrics();
  const limit = deps.config.maxApiBodyBytes;
  /** Origin of absolute links (next/previous): the configured public URL, else the bind address; never the Host header. */
  let origin = deps.config.apiUrl ?? `http://${deps.config.host}:${port}`;

  const app = Fastify({
    logger: false,
    genReqId: () => crypto.randomUUID(),
    requestIdHeader: false,
    bodyLimit: limit,
    exposeHeadRoutes: false,
    routerOptions: { ignoreTrailingSlash: true },
    // `/api/environments/<id>/…` is routed as `/api/projects/<id>/…`; `req.originalUrl` keeps what was sent.
    rewriteUrl: (req) => projectPath(req.url ?? '/'),
    // Slow clients (a slowloris connection could hold one for 60 s): headers and the whole request must
    // arrive within their timeouts, checked every connectionsCheckingInterval (Node's default,
    // 30 s, would let a connection outlive a short timeout by that much).
    keepAliveTimeout: deps.config.apiKeepAliveTimeoutMs,
    requestTimeout: deps.config.apiRequestTimeoutMs,
    http: { headersTimeout: deps.config.apiHeadersTimeoutMs, connectionsCheckingInterval: checkingIntervalMs(deps.config.apiHeadersTimeoutMs) },
    forceCloseConnections: true,
    frameworkErrors: (err, req, reply) => { fail(deps, limit, err, req, reply); },
  });
  // Past the cap, Node closes a new connection as soon as it is accepted.
  if (deps.config.apiMaxConnections > 0) app.server.maxConnections = deps.config.apiMaxConnections;
  const authFailures = new AuthFailureLimiter(deps.config.authFailuresPerMinute);
  app.decorateRequest('resolved', null);
  app.setValidatorCompiler(({ schema, httpPart }) => lazyValidator(schema as Record<string, unknown>, (httpPart ?? 'body') as RequestPart));
  // Handlers send JSON text themselves; response schemas only document.
  app.setSerializerCompiler(() => (data) => JSON.stringify(data));
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', { parseAs: 'buffer' }, (req, raw, done) => {
    if (req.is404 || req.routeOptions.config.noBody || !BODY_METHODS.has(req.method)) { done(null, undefined); return; }
    try { done(null, parseJsonBody(raw as Buffer, req.headers['content-type'])); } catch (e) { done(e as Error, undefined); }
  });
  // Multipart forms (PostHog's static-cohort CSV upload): fields and the file on `body`, within the same size limit.
  await app.register(multipart, { attachFieldsToBody: 'keyValues', limits: { fileSize: limit, files: 1, fields: 100 } });
  app.setErrorHandler((err, req, reply) => { fail(deps, limit, err, req, reply); });
  app.setNotFoundHandler((req, reply) => {
    const path = req.originalUrl.split('?')[0] ?? '/';
    sendError(reply, errors.notFound(isEvaluationPath(path) ? wrongPortDetail(path) : undefined));
  });
  app.addHook('onSend', async (req, reply, payload) => {
    reply.header('x-request-id', req.id);
    for (const [k, v] of Object.entries(SECURITY_HEADERS)) if (!reply.hasHeader(k)) reply.header(k, v);
    return payload;
  });
  // Requests in flight, so close() lets them finish before fastify destroys the connections.
  let inFlight = 0;
  app.addHook('onRequest', async (_req, reply) => {
    inFlight++;
    reply.raw.once('close', () => { inFlight--; });
  });
  app.addHook('preClose', async () => {
    // Fastify answers new requests 503 from here on; the ones already running finish.
    while (inFlight > 0) await new Promise((r) => setTimeout(r, 10));
  });
  app.addHook('onResponse', async (req, reply) => {
    metrics.observe(req.routeOptions.config.pattern ?? 'unmatched', req.method, reply.statusCode, reply.elapsedTime / 1000);
  });

  const throttle = await registerRateLimits(app, {
    burstPerMinute: deps.config.apiBurstRatePerMinute,
    sustainedPerHour: deps.config.apiSustainedRatePerHour,
    feedPerMinute: deps.config.definitionsRatePerMinute,
  });
  await registerOpenApi(app, API_VERSION);
  addProbeRoutes(app, { ready: probes.ready, draining: probes.draining, metrics: async () => (await metrics.render()) + await probes.metrics() });
  addSchemaRoute(app);
  for (const route of routes) addRoute(app, deps, route, throttle, authFailures, () => origin);
  for (const m of notAllowed) {
    app.route({
      method: m.methods, url: m.path, schema: { hide: true } as object, config: { pattern: m.path, noBody: true },
      handler: async (req, reply) => { sendError(reply, errors.methodNotAllowed(req.method, m.allow)); },
    });
  }

  await app.listen({ port, host: deps.config.host });
  const actual = (app.server.address() as { port: number }).port;
  origin = deps.config.apiUrl ?? `http://${deps.config.host.includes(':') ? `[${deps.config.host}]` : deps.config.host}:${actual}`;
  return { port: actual, url: `http://${deps.config.host}:${actual}`, close: () => app.close() };
}

/** Registers one declared route with its auth stage and handler. */
function addRoute(app: FastifyInstance, deps: Deps, route: Route, throttle: Throttle, authFailures: AuthFailureLimiter, origin: () => string): void {
  const pattern = normalisePattern(route.path);
  app.route({
    method: route.method,
    url: pattern,
    schema: routeSchema(route),
    ...(route.schema?.validatedBy === 'service' ? { validatorCompiler: () => () => true } : {}),
    config: { pattern },
    onRequest: async (req) => {
      let url: URL;
      try {
        // The Host header is the client's to choose: links are built on the configured origin.
        url = new URL(req.originalUrl, origin());
      } catch {
        throw errors.badRequest('invalid_url', 'Malformed request URL.');
      }
      const auth = await authenticate(deps.sql, req.headers, url.searchParams, { limiter: authFailures, address: req.ip });
      if (route.scope) requireScope(auth, route.scope);
      for (const also of route.alsoScopes ?? []) requireScope(auth, also);
      const feed = route.throttle === 'project_feed';
      if (!feed) await throttle(req, auth, null, 'personal_key');
      const rawProject = (req.params as Record<string, string>).project_id;
      const project = rawProject === undefined ? undefined : await resolveProject(deps.sql, auth, rawProject, url.searchParams.get('token'));
      if (feed) await throttle(req, auth, project?.id ?? null, 'project_feed');
      req.resolved = { url, auth, project };
    },
    // DRF reads an empty body as `{}`, so a schema's `required` names the missing fields.
    ...(route.schema?.body && route.schema.validatedBy !== 'service' ? {
      preValidation: async (req: FastifyRequest) => { if (req.body === undefined) req.body = {}; },
    } : {}),
    handler: async (req, reply) => {
      const r = req.resolved!;
      const ctx: RequestContext = {
        method: req.method, url: r.url, params: req.params as Record<string, string>, query: r.url.searchParams,
        headers: req.headers, body: req.body, auth: r.auth, project: r.project as ProjectRow, requestId: req.id,
        signal: clientGone(reply),
      };
      send(reply, await route.handler(ctx));
    },
  });
}

/**
 * A signal aborted when the client closes the connection before the answer is sent (a response
 * closes without finishing only then), so the handler's queries stop (query/gate.ts).
 */
function clientGone(reply: FastifyReply): AbortSignal {
  const gone = new AbortController();
  const res = reply.raw;
  if (res.destroyed || res.socket?.destroyed) gone.abort();
  else res.once('close', () => { if (!res.writableFinished) gone.abort(); });
  return gone.signal;
}

/**
 * How often Node checks connections against the headers and request timeouts, in ms: a quarter
 * of the headers timeout, between 50 ms and 1 s, so a slow connection is closed at most that
 * long after its timeout.
 */
function checkingIntervalMs(headersTimeoutMs: number): number {
  return Math.max(50, Math.min(1_000, Math.floor(headersTimeoutMs / 4)));
}

/** Unauthenticated probes and the index, hidden from the OpenAPI document. */
function addProbeRoutes(app: FastifyInstance, probes: Probes): void {
  const hidden = { schema: { hide: true } as object, config: { noBody: true } };
  app.get('/_health', hidden, async (_req, reply) => reply.type('application/json').send('{"status":"ok"}'));
  app.get('/_ready', hidden, async (_req, reply) => {
    if (probes.draining?.()) return reply.code(503).type('application/json').send('{"ready":false,"status":"draining"}');
    const ok = await probes.ready().catch(() => false);
    return reply.code(ok ? 200 : 503).type('application/json').send(JSON.stringify({ ready: ok }));
  });
  app.get('/metrics', hidden, async (_req, reply) => reply.type('text/plain; version=0.0.4').send(await probes.metrics()));
  addConsoleRoutes(app, controlPlaneIndex);
}

/** Answers an error: logs what the operator needs, sends PostHog's body. */
function fail(deps: Deps, limit: number, e: unknown, req: FastifyRequest, reply: FastifyReply): void {
  const { error, expected } = toApiError(e, limit);
  const path = req.originalUrl.split('?')[0];
  if (!expected) deps.log.error({ err: e, request_id: req.id, method: req.method, path }, 'request failed');
  else if (error.status >= 500) deps.log.error({ request_id: req.id, code: error.code }, error.message);
  else deps.log.info({ request_id: req.id, status: error.status, code: error.code, path }, error.message);
  if (error.status === 413) reply.header('connection', 'close');
  sendError(reply, error);
}

function sendError(reply: FastifyReply, error: ApiError): void {
  send(reply, { status: error.status, body: error.empty ? undefined : error.toBody(), headers: { ...error.headers } });
}

function send(reply: FastifyReply, r: Reply): void {
  if (reply.sent) return;
  reply.code(r.status);
  if (r.headers) reply.headers(r.headers);
  if (r.body === undefined) { reply.removeHeader('content-type'); reply.send(); return; }
  reply.type('application/json').send(JSON.stringify(r.body));
}

/**
 * `POST /flags`, `/flags/`, `/decide`, `/decide/` (spec/API.md §4.4, §7; research
 * posthog-flag-evaluation.md §4–§5). Stages, named as metric labels and functions (STYLE.md
 * rule 5): **parse** (read the body, decode, read fields) → **project** (token → project) →
 * **quota** → then, in the evaluator (inline or pool), **filter** → **properties** → **evaluate**
 * → **serialize** (src/eval-node/pool/engine.ts).
 *
 * Request-level errors (research §4): 400 `request_decoding_error` / `request_parsing_error` /
 * `missing_distinct_id`; 401 `missing_token` / `invalid_token`; 413 `payload_too_large`; 429
 * `throttled` with `Retry-After` while the project is past its share of this IO thread under
 * contention (eval-share.ts); 503
 * `not_ready` for an unknown token before the node's first complete snapshot; anything unexpected
 * → 500 with a generic body. Nothing thrown here escapes the uWS callback.
 */
import type { HttpRequest, HttpResponse } from 'uWebSockets.js';
import { errors, isApiError } from '../../errors.js';
import type { ProjectEntity } from '../../contract/entities.js';
import { clientAddress } from '../geoip/index.js';
import type { FlagsJob, JobAnswer } from '../pool/job.js';
import { EMPTY_RESULT, serializeResult } from '../pool/respond.js';
import type { NodeHttpContext } from './context.js';
import { decodeBody, DecodeError, parseCompression } from './decode.js';
import {
  evaluationRequestOf, flagsQueryOf, isObject, shapeOf, switchesOf, tokenOf, type FlagsQuery,
} from './flags-request.js';
import { Exchange, readBodyTransient } from './reply.js';
import { nextRequestId } from './request-id.js';
import { detectRuntime, runtimeFromUserAgent, type RuntimeHeaders } from './runtime.js';

/** Everything read from the uWS request synchronously (it is invalid after the handler returns). */
interface RequestHead {
  query: Readonly<FlagsQuery>;
  contentType: string;
  contentEncoding: string;
  runtimeHeaders: RuntimeHeaders;
  forwardedFor: string;
}

/**
 * Reads the head. Each `getHeader` is a native call that builds a string, so the browser-only
 * headers (Referer, Sec-Fetch-*) are read only when the User-Agent does not decide the runtime:
 * detectRuntime consults them only then (an explicit body runtime wins over both). `origin` is the
 * value the Exchange already read.
 */
function readHead(req: HttpRequest, origin: string): RequestHead {
  const userAgent = req.getHeader('user-agent');
  const uaDecides = runtimeFromUserAgent(userAgent) !== null;
  return {
    query: flagsQueryOf(req.getQuery() ?? ''),
    contentType: req.getHeader('content-type'),
    contentEncoding: req.getHeader('content-encoding'),
    runtimeHeaders: {
      userAgent,
      origin,
      referer: uaDecides ? '' : req.getHeader('referer'),
      secFetchMode: uaDecides ? '' : req.getHeader('sec-fetch-mode'),
      secFetchSite: uaDecides ? '' : req.getHeader('sec-fetch-site'),
    },
    forwardedFor: req.getHeader('x-forwarded-for'),
  };
}

/** The uWS handler for one of the flags endpoints. */
export function flagsHandler(ctx: NodeHttpContext, endpoint: 'flags' | 'decide'): (res: HttpResponse, req: HttpRequest) => void {
  const limit = ctx.config.maxPublicBodyBytes;
  return (res, req) => {
    const ex = new Exchange(res, ctx.metrics, endpoint, req.getHeader('origin'));
    let head: RequestHead;
    try {
      head = readHead(req, ex.origin);
      const declared = Number(req.getHeader('content-length') || '0');
      if (declared > limit) return ex.sendError(errors.payloadTooLarge(limit), true);
    } catch (e) {
      return fail(ctx, ex, e);
    }
    // The body may be a view of uWS's memory: handleBody reads it synchronously and keeps nothing
    // of it (decoding makes strings and objects of its own).
    readBodyTransient(res, limit, (body) => {
      if (body === 'too_large') return ex.sendError(errors.payloadTooLarge(limit), true);
      try {
        handleBody(ctx, ex, endpoint, head, body);
      } catch (e) {
        fail(ctx, ex, e);
      }
    });
  };
}

function handleBody(ctx: NodeHttpContext, ex: Exchange, endpoint: 'flags' | 'decide', head: RequestHead, raw: Buffer): void {
  ex.stage = 'parse';
  const body = parse(ctx, head, raw);
  ex.stage = 'project';
  const project = projectOf(ctx, body);
  ex.stage = 'parse';
  const shape = shapeOf(endpoint, head.query.version);
  const config = head.query.config || endpoint === 'decide';
  const requestId = nextRequestId();
  const switches = switchesOf(body);
  const runtime = detectRuntime(head.runtimeHeaders, switches.explicitRuntime);
  const request = evaluationRequestOf(body, runtime, head.query.onlySurveyFlags);
  ex.stage = 'quota';
  if (quotaLimited(ctx, project)) {
    const hasFeatureFlags = true;
    return ex.send(200, serializeResult(EMPTY_RESULT, { shape, config, requestId, evaluatedAt: Date.now(), quotaLimited: true, hasFeatureFlags }));
  }
  const waitMs = ctx.evalShare.admit(project.id); // this project's share of the thread (eval-share.ts)
  if (waitMs > 0) throw errors.throttled(waitMs / 1000);
  if (!switches.disableFlags) ctx.usage.add(project.organization_id);
  const job: FlagsJob = {
    projectId: project.id,
    request,
    ip: ctx.geoipEnabled && !switches.geoipDisable && ctx.needsGeoip(project.id) ? geoAddress(ex, head.forwardedFor) : null,
    shape,
    config,
    onlyOverrideProperties: head.query.onlyOverrideProperties,
    disableFlags: switches.disableFlags,
    requestId,
    budgetMs: ctx.config.evalBudgetMs,
  };
  ex.stage = 'evaluate';
  const started = performance.now();
  const answer = ctx.evaluator.evaluate(job);
  // Inline answers (string, bytes or null) are sent synchronously: bytes live in a reused buffer.
  if (!(answer instanceof Promise)) {
    ctx.evalShare.record(project.id, performance.now() - started);
    deliver(ctx, ex, answer);
  }
  else answer.then((a) => deliver(ctx, ex, a), (e: unknown) => fail(ctx, ex, e));
  ctx.continuity?.afterFlags(job); // experience continuity: override record, best effort (continuity.ts)
}

/**
 * The GeoIP address: the first public X-Forwarded-For entry, else the socket's peer. The peer is
 * read only when needed (the response is still open here: nothing has been sent yet).
 */
function geoAddress(ex: Exchange, forwardedFor: string): string | null {
  if (forwardedFor !== '') {
    const fromHeader = clientAddress(forwardedFor, '');
    if (fromHeader !== null) return fromHeader;
  }
  if (ex.aborted) return null;
  return clientAddress('', Buffer.from(ex.res.getRemoteAddressAsText()).toString('latin1'));
}

function deliver(ctx: NodeHttpContext, ex: Exchange, answer: JobAnswer): void {
  if (answer === null) {
    ctx.metrics.stageFailure(ex.route, ex.stage);
    ctx.log.error({ route: ex.route }, 'evaluation failed unexpectedly');
    return ex.sendError(errors.internal());
  }
  ex.send(200, answer);
}

/** parse stage: decode the bytes into a JSON object. @throws ApiError 400. */
function parse(ctx: NodeHttpContext, head: RequestHead, raw: Buffer): Record<string, unknown> {
  let value: unknown;
  try {
    value = decodeBody(raw, { contentType: head.contentType, contentEncoding: head.contentEncoding, compression: parseCompression(head.query.compression) }, ctx.config.maxFlagsBodyBytes);
  } catch (e) {
    if (e instanceof DecodeError) throw e.code === 'payload_too_large' ? errors.payloadTooLarge(ctx.config.maxFlagsBodyBytes) : errors.badRequest(e.code, e.message);
    throw e;
  }
  if (!isObject(value)) throw errors.badRequest('request_parsing_error', 'The request body must be a JSON object.');
  return value;
}

/** project stage: the token names a project this node holds. @throws ApiError 401. */
function projectOf(ctx: NodeHttpContext, body: Record<string, unknown>): ProjectEntity {
  const token = tokenOf(body);
  if (token === null) {
    throw errors.invalidToken('missing_token', 'API key not provided. You can find your project API key in your project settings.');
  }
  const project = ctx.store.projectByToken(token);
  if (project === undefined) {
    // Before its first complete snapshot a node cannot tell an unknown token from one it has not
    // received yet: answer 503 (retry elsewhere) rather than a definitive 401.
    if (!ctx.store.hasCompleteSnapshot()) throw errors.unavailable('not_ready', 'This node has not loaded its definitions yet; retry shortly.');
    throw errors.invalidToken('invalid_token', 'Project API key invalid. You can find your project API key in your project settings.');
  }
  return project;
}

/** quota stage: the organization is over its flag quota (spec §7: 200 with empty flags and `quotaLimited`). */
function quotaLimited(ctx: NodeHttpContext, project: ProjectEntity): boolean {
  return ctx.store.organization(project.organization_id)?.quota_limited === true;
}

function fail(ctx: NodeHttpContext, ex: Exchange, e: unknown): void {
  ctx.metrics.stageFailure(ex.route, ex.stage);
  if (isApiError(e)) return ex.sendError(e);
  ctx.log.error({ err: e, route: ex.route }, 'unexpected error on the flags endpoint');
  ex.sendError(errors.internal());
}


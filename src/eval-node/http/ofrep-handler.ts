/**
 * OFREP v1 on an evaluation node (beyond PostHog), so every OpenFeature SDK
 * with an OFREP provider reads Switchyard flags:
 * - `POST /ofrep/v1/evaluate/flags/{key}`: one flag; 200 evaluation, 404 `FLAG_NOT_FOUND`,
 *   400 `TARGETING_KEY_MISSING` / `INVALID_CONTEXT` / `PARSE_ERROR` (OFREP's error body);
 * - `POST /ofrep/v1/evaluate/flags`: every flag, `{flags: [...]}`, with a strong `ETag` of the
 *   answer and 304 for a matching `If-None-Match` (the web provider polls this way).
 * Authorised by the project API key (`Authorization: Bearer phc_…` or `X-API-Key: phc_…`, what
 * OFREP providers send from their `headers` option): 401 without or with an unknown one, 403
 * when the organization is over its flag quota, 503 before the node's first snapshot. The same
 * evaluator as `/flags` answers (one v2 evaluation, mapped by src/feed/ofrep.ts), so OFREP and
 * PostHog SDKs always agree. CORS as on the other public routes (cors.ts).
 */
import crypto from 'node:crypto';
import type { HttpRequest, HttpResponse, TemplatedApp } from 'uWebSockets.js';
import { errors, isApiError } from '../../errors.js';
import type { ProjectEntity } from '../../contract/entities.js';
import { flagsBodyOf, isOfrepFailure, ofrepEvaluation, OfrepContextError, type FlagsV2Entry, type OfrepFailure } from '../../feed/ofrep.js';
import type { NodeHttpContext } from './context.js';
import { preflightHandler } from './cors.js';
import { evaluationRequestOf } from './flags-request.js';
import { nextRequestId } from './request-id.js';
import { Exchange, readBody } from './reply.js';
import { detectRuntime } from './runtime.js';
import { FLAGS_BODY_BUDGET } from '../json-scan.js';
import { checkJsonBudget, describeExcess } from '../../json-budget.js';
import { hasOwn } from '../../own-property.js';

const SINGLE = '/ofrep/v1/evaluate/flags/:key';
const BULK = '/ofrep/v1/evaluate/flags';

/** Registers the OFREP routes (and their preflights) on `app`. */
export function registerOfrepRoutes(app: TemplatedApp, ctx: NodeHttpContext): void {
  const preflight = preflightHandler(ctx, 'ofrep');
  app.post(SINGLE, handler(ctx, true));
  app.options(SINGLE, preflight);
  app.post(BULK, handler(ctx, false));
  app.options(BULK, preflight);
}

interface Head { key: string; token: string | null; ifNoneMatch: string; userAgent: string; origin: string }

function handler(ctx: NodeHttpContext, single: boolean): (res: HttpResponse, req: HttpRequest) => void {
  const limit = ctx.config.maxFlagsBodyBytes;
  return (res, req) => {
    const ex = new Exchange(res, ctx.metrics, 'ofrep', req.getHeader('origin'));
    const bearer = /^Bearer\s+(\S+)\s*$/i.exec(req.getHeader('authorization'));
    const head: Head = {
      key: single ? decodeKey(req.getParameter(0) ?? '') : '',
      token: bearer?.[1] ?? (req.getHeader('x-api-key') || null),
      ifNoneMatch: req.getHeader('if-none-match'),
      userAgent: req.getHeader('user-agent'),
      origin: ex.origin,
    };
    if (Number(req.getHeader('content-length') || '0') > limit) return ex.sendError(errors.payloadTooLarge(limit), true);
    readBody(res, limit, (raw) => {
      if (raw === 'too_large') return ex.sendError(errors.payloadTooLarge(limit), true);
      try {
        answer(ctx, ex, head, raw);
      } catch (e) {
        fail(ctx, ex, e);
      }
    });
  };
}

function decodeKey(s: string): string {
  try { return decodeURIComponent(s); } catch { return s; }
}

function answer(ctx: NodeHttpContext, ex: Exchange, head: Head, raw: Buffer): void {
  const project = authorize(ctx, head.token);
  let requestBody: unknown = {};
  const text = raw.toString('utf8');
  if (text.trim() !== '') {
    try {
      const excess = checkJsonBudget(text, FLAGS_BODY_BUDGET);
      if (excess !== null) throw new SyntaxError(describeExcess(excess));
      requestBody = JSON.parse(text);
    } catch (e) {
      return sendFailure(ex, head, 400, 'PARSE_ERROR', `the body is not JSON: ${(e as Error).message}`);
    }
  }
  let body: Record<string, unknown>;
  try {
    body = flagsBodyOf(requestBody);
  } catch (e) {
    if (e instanceof OfrepContextError) return sendFailure(ex, head, 400, e.code, e.message);
    throw e;
  }
  const runtime = detectRuntime({ userAgent: head.userAgent, origin: head.origin, referer: '', secFetchMode: '', secFetchSite: '' }, undefined);
  const request = evaluationRequestOf(body, runtime, false);
  const waitMs = ctx.evalShare.admit(project.id); // this project's share of the thread (eval-share.ts)
  if (waitMs > 0) throw errors.throttled(waitMs / 1000);
  ctx.usage.add(project.organization_id);
  ex.stage = 'evaluate';
  const started = performance.now();
  const result = ctx.evaluator.evaluate({
    projectId: project.id, request, ip: null, shape: 'flags-v2', config: false, onlyOverrideProperties: false,
    disableFlags: false, requestId: nextRequestId(), budgetMs: ctx.config.evalBudgetMs,
  });
  if (!(result instanceof Promise)) ctx.evalShare.record(project.id, performance.now() - started);
  const deliver = (a: string | Uint8Array | null): void => {
    if (a === null) return ex.sendError(errors.internal());
    // Inline answers may live in a reused buffer: decode before anything else runs.
    const flags = (JSON.parse(typeof a === 'string' ? a : Buffer.from(a).toString('utf8')) as { flags: Record<string, FlagsV2Entry> }).flags;
    send(ex, head, flags);
  };
  if (!(result instanceof Promise)) deliver(result);
  else result.then(deliver, (e: unknown) => fail(ctx, ex, e));
}

/** The project of the key. @throws ApiError 401, 403 (quota), 503 (no snapshot yet). */
function authorize(ctx: NodeHttpContext, token: string | null): ProjectEntity {
  if (token === null || token === '') throw errors.invalidToken('missing_token', 'Send the project API key as "Authorization: Bearer phc_…" or "X-API-Key".');
  const project = ctx.store.projectByToken(token);
  if (project === undefined) {
    if (!ctx.store.hasCompleteSnapshot()) throw errors.unavailable('not_ready', 'This node has not loaded its definitions yet; retry shortly.');
    throw errors.invalidToken('invalid_token', 'Project API key invalid. You can find your project API key in your project settings.');
  }
  if (ctx.store.organization(project.organization_id)?.quota_limited === true) {
    throw errors.permissionDenied('This organization is over its feature flag quota.');
  }
  return project;
}

function send(ex: Exchange, head: Head, flags: Record<string, FlagsV2Entry>): void {
  if (head.key !== '') {
    // Own properties only: `__proto__`, `constructor`, `toString`… are flag keys only when a flag has them.
    const e = ofrepEvaluation(head.key, hasOwn(flags, head.key) ? flags[head.key] : undefined);
    return ex.send(isOfrepFailure(e) ? 404 : 200, JSON.stringify(e));
  }
  const text = JSON.stringify({ flags: Object.keys(flags).map((k) => ofrepEvaluation(k, flags[k])) });
  const etag = `"${crypto.createHash('sha1').update(text).digest('base64url')}"`;
  if (head.ifNoneMatch !== '' && head.ifNoneMatch.split(',').some((t) => t.trim() === etag)) return ex.send(304, '', [['ETag', etag]], null);
  ex.send(200, text, [['ETag', etag]]);
}

function sendFailure(ex: Exchange, head: Head, status: number, code: OfrepFailure['errorCode'], details: string): void {
  ex.send(status, JSON.stringify(head.key !== '' ? { key: head.key, errorCode: code, errorDetails: details } : { errorCode: code, errorDetails: details }));
}

function fail(ctx: NodeHttpContext, ex: Exchange, e: unknown): void {
  if (isApiError(e)) return ex.sendError(e);
  ctx.log.error({ err: e }, 'unexpected error on OFREP');
  ex.sendError(errors.internal());
}

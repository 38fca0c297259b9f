/**
 * The OpenAPI 3.1 document of the management API, generated from the
 * declared routes by `@fastify/swagger` and served where PostHog serves its own:
 * `GET /api/schema/` (YAML, `application/vnd.oai.openapi`), or JSON with `?format=json` or an
 * `Accept: application/json` / `application/vnd.oai.openapi+json` header. No key is needed, as
 * at PostHog. Every operation names the personal-API-key scope it needs in
 * `security: [{PersonalAPIKey: [scope]}]`; PostHog's `{type, code, detail, attr}` error body is
 * the `default` response.
 */
import type { FastifyInstance, FastifySchema } from 'fastify';
import swagger from '@fastify/swagger';
import type { Route } from './types.js';
import { normalisePattern } from './method-not-allowed.js';

/** Name of the bearer security scheme in the document. */
export const SECURITY_SCHEME = 'PersonalAPIKey';

const ERROR_BODY = {
  $id: 'ErrorBody',
  type: 'object',
  description: "PostHog's error body (exceptions-hog).",
  required: ['type', 'code', 'detail', 'attr'],
  properties: {
    type: { type: 'string', enum: ['validation_error', 'invalid_request', 'authentication_error', 'server_error', 'throttled_error', 'quota_limited'] },
    code: { type: 'string', description: 'Stable machine code: `required`, `not_found`, `permission_denied`, `throttled`, …' },
    detail: { type: 'string' },
    attr: { type: ['string', 'null'], description: 'The offending field, nested paths joined with `__`.' },
  },
} as const;

/** Registers the generator on `app`; call before any route is added. */
export async function registerOpenApi(app: FastifyInstance, version: string): Promise<void> {
  app.addSchema(ERROR_BODY);
  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'Switchyard management API',
        version,
        description: "PostHog's management API for feature flags and their companions, served by Switchyard's control plane. "
          + 'Authenticate with a personal API key (`Authorization: Bearer phx_…`); each operation lists the scope it needs.',
      },
      components: {
        securitySchemes: {
          [SECURITY_SCHEME]: { type: 'http', scheme: 'bearer', description: 'A personal API key (`phx_…`). Scopes are listed per operation.' },
        },
      },
    },
    refResolver: { buildLocalReference: (json, _base, _fragment, i) => String(json.$id ?? `def-${i}`) },
    // PostHog's paths end with a slash; ours match with or without it.
    transform: ({ schema, url }) => ({ schema, url: url === '/' || url.endsWith('/') ? url : `${url}/` }),
  });
}

/** The fastify route schema of `route`: documentation, scope, and the parts to validate. */
export function routeSchema(route: Route): FastifySchema {
  const s = route.schema;
  return {
    summary: s?.summary ?? `${route.method} ${normalisePattern(route.path)}`,
    ...(s?.description ? { description: s.description } : {}),
    ...(s?.tags ? { tags: [...s.tags] } : {}),
    security: [{ [SECURITY_SCHEME]: route.scope ? [route.scope, ...(route.alsoScopes ?? [])] : [] }],
    ...(s?.params ? { params: s.params } : {}),
    ...(s?.querystring ? { querystring: s.querystring } : {}),
    ...(s?.body ? { body: s.body } : {}),
    response: { default: { description: 'Error', $ref: 'ErrorBody#' } },
  } as FastifySchema;
}

/** True when the client asked for JSON rather than YAML. */
function wantsJson(format: string | undefined, accept: string | undefined): boolean {
  if (format !== undefined) return format === 'json' || format === 'openapi-json';
  return /application\/(vnd\.oai\.openapi\+)?json/.test(accept ?? '');
}

/** Adds `GET /api/schema/` (hidden from the document itself). */
export function addSchemaRoute(app: FastifyInstance): void {
  app.get('/api/schema/', { schema: { hide: true } as FastifySchema }, async (req, reply) => {
    const format = (req.query as Record<string, string | undefined>).format;
    if (wantsJson(format, req.headers.accept)) {
      return reply.type('application/vnd.oai.openapi+json').send(JSON.stringify(app.swagger()));
    }
    return reply.type('application/vnd.oai.openapi; charset=utf-8').send(app.swagger({ yaml: true }));
  });
}

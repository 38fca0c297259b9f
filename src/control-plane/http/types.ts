/**
 * Shapes shared by the control plane's HTTP layer and every resource folder: the request
 * context a handler receives, the reply it returns, and a route declaration.
 */
import type { IncomingHttpHeaders } from 'node:http';
import type { Sql } from '../db/connect.js';
import type { Config } from '../../config.js';
import type { Logger } from '../../log.js';
import type { ProjectSettings } from '../../contract/entities.js';
import type { JobQueue } from '../jobs/queue.js';

/** The authenticated personal API key behind a request. */
export interface AuthContext {
  userId: number;
  organizationId: number;
  keyId: string;
  /** Scopes as stored (`*` = all). Use {@link hasScope} to test. */
  scopes: ReadonlySet<string>;
  /** Project ids the key is limited to; empty = every project of its organization. */
  scopedTeams: readonly number[];
}

/** A `projects` row. */
export interface ProjectRow extends ProjectSettings {
  id: number;
  organization_id: number;
  uuid: string;
  name: string;
  api_token: string;
  timezone: string;
  created_at: Date;
}

/** What a handler receives. Everything here was validated before the handler runs. */
export interface RequestContext {
  readonly method: string;
  /** Absolute request URL (scheme and host from the request), used for next/previous links. */
  readonly url: URL;
  readonly params: Readonly<Record<string, string>>;
  readonly query: URLSearchParams;
  readonly headers: IncomingHttpHeaders;
  /** Parsed JSON body for POST/PATCH/PUT (undefined when the body is empty or for GET). */
  readonly body: unknown;
  readonly auth: AuthContext;
  /** The project of a `/api/projects/:project_id/...` path (undefined elsewhere; typed non-null for convenience). */
  readonly project: ProjectRow;
  readonly requestId: string;
  /** Aborted when the client closes the connection before the answer is sent (queries stop then). */
  readonly signal?: AbortSignal;
}

/** A handler's answer; `body` undefined sends an empty body. */
export interface Reply {
  status: number;
  body?: unknown;
  headers?: Record<string, string>;
}

/** HTTP methods the management API routes. */
export type Method = 'GET' | 'POST' | 'PATCH' | 'PUT' | 'DELETE';

/** A JSON Schema (draft 2020-12, as OpenAPI 3.1 uses) describing one part of a request. */
export type JsonSchema = Readonly<Record<string, unknown>>;

/**
 * What a route declares about itself for validation and for the OpenAPI document served at
 * `GET /api/schema/`. `params`, `querystring` and `body` are JSON Schemas
 * of objects.
 */
export interface RouteSchema {
  /** One line for the operation list, e.g. `List feature flags`. */
  summary: string;
  description?: string;
  /** OpenAPI tags (the resource: `feature_flags`, `projects`, …). */
  tags?: readonly string[];
  params?: JsonSchema;
  querystring?: JsonSchema;
  body?: JsonSchema;
  /**
   * Who validates the request. `schema` (default): ajv checks params, query and body before the
   * handler, failures answer PostHog's 400 with DRF wording (src/control-plane/http/validation.ts).
   * `service`: the schemas only document; the service validates, because the rule is one JSON
   * Schema cannot state (DRF's coercions such as `"true"` for a boolean, lenient pagination that
   * falls back to defaults, PostHog's own messages and field order; research
   * posthog-management-api.md §1.2).
   */
  validatedBy?: 'schema' | 'service';
}

/**
 * A route: `path` uses `:name` segments (`/api/projects/:project_id/feature_flags/:id`); a
 * trailing slash is optional when matching and literal segments win over parameters.
 * `scope` is the personal-API-key scope required (`feature_flag:read`); null means the route
 * needs no scope beyond a valid key. `alsoScopes` are further scopes it requires, all of them
 * (PostHog's actions that read two resources, e.g. a person's cohorts).
 */
export interface Route {
  method: Method;
  path: string;
  scope: string | null;
  alsoScopes?: readonly string[];
  /** Documentation and validation; a route without one is still served and listed by method and path. */
  schema?: RouteSchema;
  /**
   * The rate limit the route draws from: `personal_key` (default; PostHog's burst and sustained
   * limits per key) or `project_feed` (the local-evaluation feed's per-project limit).
   */
  throttle?: 'personal_key' | 'project_feed';
  handler(ctx: RequestContext): Promise<Reply>;
}

/** Everything a resource's routes need. */
export interface Deps {
  sql: Sql;
  config: Config;
  log: Logger;
  /** The experiment timeseries job queue (absent where no job queue runs: E8 answers 503). */
  jobs?: JobQueue;
}

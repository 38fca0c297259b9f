/**
 * A real control plane on a fresh test database, with bootstrap keys, for integration tests:
 * real Postgres, real HTTP on a free port.
 */
import { testConfig, type Config } from '../../src/config.js';
import { createLogger } from '../../src/log.js';
import { startControlPlane, type ControlPlane } from '../../src/control-plane/index.js';
import { createPersonalApiKey } from '../../src/control-plane/keys/store.js';
import { newPersonalApiKey, newProjectApiKey } from '../../src/control-plane/keys/tokens.js';
import { createTestDatabase, type TestDatabase } from './db.js';

/** A JSON response: status, headers and parsed body (undefined when empty). */
export interface JsonResponse { status: number; headers: Headers; body: any; text: string }

/** A running control plane plus helpers. */
export interface TestControlPlane {
  db: TestDatabase;
  cp: ControlPlane;
  config: Config;
  baseUrl: string;
  personalKey: string;
  projectKey: string;
  projectId: number;
  userId: number;
  organizationId: number;
  /** A new personal key with `scopes` (optionally limited to `projects`). */
  createKey(scopes: string[], projects?: number[]): Promise<string>;
  /** Sends a request; `key` defaults to the all-scope bootstrap key, null sends none. */
  request(method: string, path: string, opts?: { body?: unknown; rawBody?: string | Buffer; key?: string | null; headers?: Record<string, string> }): Promise<JsonResponse>;
  close(): Promise<void>;
}

/** Starts a control plane; `overrides` adjust the config (ports stay 0). */
export async function startTestControlPlane(overrides: Partial<Config> = {}): Promise<TestControlPlane> {
  const db = await createTestDatabase();
  const personalKey = newPersonalApiKey();
  const projectKey = newProjectApiKey();
  const config = testConfig({ bootstrapPersonalApiKey: personalKey, bootstrapProjectApiKey: projectKey, ...overrides });
  let cp: ControlPlane;
  try {
    cp = await startControlPlane(config, createLogger('silent'), db.url);
  } catch (e) {
    await db.drop().catch(() => {});
    throw e;
  }
  const baseUrl = cp.http.url;
  return {
    db, cp, config, baseUrl, personalKey, projectKey,
    projectId: cp.bootstrap.projectId, userId: cp.bootstrap.userId, organizationId: cp.bootstrap.organizationId,
    async createKey(scopes, projects = []) {
      return (await createPersonalApiKey(db.sql, { userId: cp.bootstrap.userId, label: 'test', scopes, scopedTeams: projects })).value;
    },
    async request(method, path, opts = {}) {
      const key = opts.key === undefined ? personalKey : opts.key;
      const headers: Record<string, string> = { ...(opts.headers ?? {}) };
      if (key !== null) headers.authorization = `Bearer ${key}`;
      let body: string | Uint8Array | undefined;
      if (opts.rawBody !== undefined) body = typeof opts.rawBody === 'string' ? opts.rawBody : new Uint8Array(opts.rawBody);
      else if (opts.body !== undefined) { body = JSON.stringify(opts.body); headers['content-type'] ??= 'application/json'; }
      const res = await fetch(baseUrl + path, { method, headers, body: body as BodyInit | undefined });
      const text = await res.text();
      let parsed: unknown;
      try { parsed = text ? JSON.parse(text) : undefined; } catch { parsed = undefined; }
      return { status: res.status, headers: res.headers, body: parsed, text };
    },
    async close() {
      await cp.close();
      await db.drop();
    },
  };
}

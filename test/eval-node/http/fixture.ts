/**
 * Test fixture for the node's HTTP layer: a real LMDB node store (src/eval-node/store) filled
 * through its snapshot API, and a real uWebSockets.js server on 127.0.0.1 in front of it. Requests
 * go through node:http with `agent: false` (Connection: close), so no keep-alive socket outlives
 * a test.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import http from 'node:http';
import crypto from 'node:crypto';
import zlib from 'node:zlib';
import { testConfig, type Config } from '../../../src/config.js';
import { createLogger } from '../../../src/log.js';
import { openNodeStore, type StoreChange, type WritableNodeStore } from '../../../src/eval-node/store/lmdb.js';
import { startNodeHttp, type NodeHttp, type CaptureHandler } from '../../../src/eval-node/http/server.js';
import type { FeatureFlagEntity } from '../../../src/contract/entities.js';

export const PROJECT_TOKEN = 'phc_testProjectToken0000000001';
export const LIMITED_TOKEN = 'phc_testProjectToken0000000002';
export const OTHER_ORG_TOKEN = 'phc_testProjectToken0000000003';
export const PERSONAL_KEY = 'phx_testPersonalKey00000000000000001';
export const WRITE_KEY = 'phx_testPersonalKey00000000000000002';
export const NO_SCOPE_KEY = 'phx_testPersonalKey00000000000000003';
export const SCOPED_OTHER_KEY = 'phx_testPersonalKey00000000000000004';

export function sha256Key(v: string): string {
  return `sha256$${crypto.createHash('sha256').update(v).digest('hex')}`;
}

let nextFlagId = 1;

/** A flag entity with defaults (active, not deleted, runtime all). */
export function flag(key: string, filters: Record<string, unknown>, extra: Partial<FeatureFlagEntity> = {}): FeatureFlagEntity {
  return {
    id: nextFlagId++, team_id: 1, key, name: `${key} flag`, filters, deleted: false, active: true,
    ensure_experience_continuity: false, version: 1, evaluation_runtime: 'all', evaluation_tags: [],
    bucketing_identifier: null, has_encrypted_payloads: false, is_remote_configuration: false, ...extra,
  };
}

/** The flags most HTTP tests use. */
export function standardFlags(): FeatureFlagEntity[] {
  const all = { groups: [{ properties: [], rollout_percentage: 100 }] };
  return [
    flag('always-on', all),
    flag('email-flag', { groups: [{ properties: [{ key: 'email', type: 'person', operator: 'icontains', value: '@example.com' }], rollout_percentage: 100 }] }),
    flag('mv', {
      groups: [{ properties: [], rollout_percentage: 100 }],
      multivariate: { variants: [{ key: 'control', rollout_percentage: 50 }, { key: 'test', rollout_percentage: 50 }] },
      payloads: { control: '"c"', test: '{"t":1}' },
    }),
    flag('payload-flag', { groups: [{ properties: [], rollout_percentage: 100 }], payloads: { true: '{"a":1}' } }),
    flag('rollout-50', { groups: [{ properties: [], rollout_percentage: 50 }] }),
    flag('group-flag', {
      aggregation_group_type_index: 0,
      groups: [{ properties: [{ key: 'plan', type: 'group', group_type_index: 0, operator: 'exact', value: ['pro'] }], rollout_percentage: 100 }],
    }),
    flag('client-only', all, { evaluation_runtime: 'client' }),
    flag('server-only', all, { evaluation_runtime: 'server' }),
    flag('tagged', all, { evaluation_tags: ['web'] }),
    flag('geo-flag', { groups: [{ properties: [{ key: '$geoip_country_code', type: 'person', operator: 'exact', value: ['GB'] }], rollout_percentage: 100 }] }),
    flag('inactive', all, { active: false }),
    flag('remote-config', all, { is_remote_configuration: true }),
    flag('cohort-flag', { groups: [{ properties: [{ key: 'id', type: 'cohort', value: 7 }], rollout_percentage: 100 }] }),
  ];
}

/** Cohort 7: plan is pro (used by cohort-flag). */
export const COHORT_7 = { id: 7, project_id: 1, name: 'pro users', is_static: false, deleted: false,
  filters: { properties: { type: 'OR', values: [{ type: 'AND', values: [{ key: 'plan', type: 'person', operator: 'exact', value: ['pro'] }] }] } } };

/** Entities of the standard world: org 1 (project 1), org 2 over quota (project 2), org 3 (project 3), keys. */
export function worldChanges(flags: FeatureFlagEntity[], cohorts: unknown[] = [COHORT_7]): StoreChange[] {
  const c = (kind: string, entityId: string, projectId: number | null, payload: unknown): StoreChange => ({ kind, entityId, projectId, op: 'upsert', payload });
  const key = (id: string, value: string, scopes: string[], org = 1, scoped: number[] = []) =>
    c('personal_api_key', id, null, { id, organization_id: org, secure_value: sha256Key(value), scopes, scoped_teams: scoped });
  return [
    c('organization', '1', null, { id: 1, name: 'Org', monthly_flag_requests_limit: null, quota_limited: false }),
    c('organization', '2', null, { id: 2, name: 'Limited', monthly_flag_requests_limit: 10, quota_limited: true }),
    c('organization', '3', null, { id: 3, name: 'Other', monthly_flag_requests_limit: null, quota_limited: false }),
    c('project', '1', 1, { id: 1, organization_id: 1, name: 'P1', api_token: PROJECT_TOKEN, timezone: 'UTC' }),
    c('project', '2', 2, { id: 2, organization_id: 2, name: 'P2', api_token: LIMITED_TOKEN, timezone: 'UTC' }),
    c('project', '3', 3, { id: 3, organization_id: 3, name: 'P3', api_token: OTHER_ORG_TOKEN, timezone: 'UTC' }),
    c('group_type_mapping', '1:0', 1, { project_id: 1, group_type: 'organization', group_type_index: 0 }),
    ...flags.map((f) => c('feature_flag', String(f.id), f.team_id, f)),
    ...flags.filter((f) => f.team_id === 1).map((f) => c('feature_flag', String(f.id + 100000), 2, { ...f, id: f.id + 100000, team_id: 2 })),
    ...(cohorts as { id: number; project_id: number }[]).map((co) => c('cohort', String(co.id), co.project_id, co)),
    key('k1', PERSONAL_KEY, ['feature_flag:read']),
    key('k2', WRITE_KEY, ['feature_flag:write']),
    key('k3', NO_SCOPE_KEY, ['experiment:read']),
    key('k4', SCOPED_OTHER_KEY, ['*'], 1, [99]),
  ];
}

/** A store plus server. */
export interface TestNode {
  dir: string;
  store: WritableNodeStore;
  http: NodeHttp;
  url: string;
  config: Config;
  close(): Promise<void>;
}

/** Opens a store at a fresh directory, applies `changes` as a complete snapshot, starts the server. */
export async function startTestNode(opts: { changes?: StoreChange[]; evalThreads?: number; snapshot?: boolean; config?: Partial<Config>; capture?: CaptureHandler } = {}): Promise<TestNode> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'switchyard-node-http-'));
  const storePath = path.join(dir, 'lmdb');
  const store = openNodeStore(storePath);
  if (opts.snapshot !== false) {
    await store.beginSnapshot(10);
    await store.stageSnapshot(opts.changes ?? worldChanges(standardFlags()));
    await store.commitSnapshot(10);
  }
  const config = testConfig({ dataDir: dir, evalThreads: opts.evalThreads ?? 0, ...opts.config });
  const node = await startNodeHttp({ config, log: createLogger('silent'), store, storePath, capture: opts.capture });
  return {
    dir, store, http: node, url: node.url, config,
    async close() {
      await node.close();
      await store.close();
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** An HTTP answer. */
export interface Answer {
  status: number;
  headers: http.IncomingHttpHeaders;
  text: string;
  json(): any;
}

/** One request over a fresh connection. */
export function request(url: string, opts: { method?: string; body?: string | Buffer; headers?: Record<string, string> } = {}): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = http.request(url, { method: opts.method ?? 'GET', agent: false, headers: opts.headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        resolve({ status: res.statusCode ?? 0, headers: res.headers, text, json: () => JSON.parse(text) });
      });
      res.on('error', reject);
    });
    req.on('error', reject);
    if (opts.body !== undefined) req.write(opts.body);
    req.end();
  });
}

/** POST a JSON body to `path` (default /flags?v=2). */
export function postFlags(node: { url: string }, body: unknown, opts: { path?: string; headers?: Record<string, string> } = {}): Promise<Answer> {
  return request(node.url + (opts.path ?? '/flags?v=2'), {
    method: 'POST',
    body: typeof body === 'string' || Buffer.isBuffer(body) ? body : JSON.stringify(body),
    headers: { 'content-type': 'application/json', ...opts.headers },
  });
}

export { zlib };

/**
 * The OpenAPI document at `GET /api/schema/`, against a real control plane:
 * it validates against the OpenAPI 3.1 specification, lists every declared route with its
 * scope, each documented operation refuses a key without its scope and admits a key with only
 * that scope, and a TypeScript client generated from it (openapi-typescript) type-checks good
 * calls, rejects bad ones, and talks to the live server through openapi-fetch.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import YAML from 'yaml';
import { Validator } from '@seriousme/openapi-schema-validator';
import openapiTS from 'openapi-typescript';
import createClient from 'openapi-fetch';
import { startTestControlPlane, type TestControlPlane } from '../../support/control-plane.js';
import { keepAliveClient } from '../../support/keep-alive.js';
import { allRoutes } from '../../../src/control-plane/http/app.js';
import { createLogger } from '../../../src/log.js';
import { listPersonalApiKeys } from '../../../src/control-plane/keys/store.js';
import { PACKAGE_ROOT as rootDir } from '../../../src/paths.js';

const run = promisify(execFile);
const METHODS = ['get', 'post', 'patch', 'put', 'delete'] as const;

interface Operation { method: string; path: string; scope: string; scopes: string[]; summary: string }

let t: TestControlPlane;
let doc: Record<string, any>;
let operations: Operation[];

before(async () => {
  // Generous limits: the walk below makes ~80 calls with one key.
  t = await startTestControlPlane({ apiBurstRatePerMinute: 10_000, apiSustainedRatePerHour: 100_000 });
  const res = await fetch(`${t.baseUrl}/api/schema/`);
  assert.equal(res.status, 200);
  assert.match(res.headers.get('content-type') ?? '', /^application\/vnd\.oai\.openapi/);
  doc = YAML.parse(await res.text()) as Record<string, any>;
  operations = [];
  for (const [p, item] of Object.entries(doc.paths as Record<string, Record<string, any>>)) {
    for (const m of METHODS) {
      const op = item[m];
      if (!op) continue;
      const scopes = (op.security as Record<string, string[]>[]).flatMap((s) => s.PersonalAPIKey ?? []);
      operations.push({ method: m.toUpperCase(), path: p, scope: scopes[0] ?? '', scopes, summary: op.summary });
    }
  }
});
after(async () => { await t?.close(); });

test('GET /api/schema/ is OpenAPI 3.1 that validates against the specification; ?format=json serves the same document', async () => {
  assert.equal(doc.openapi, '3.1.0');
  const result = await new Validator().validate(doc);
  assert.equal(result.valid, true, JSON.stringify(result.errors, null, 1));
  const json = await (await fetch(`${t.baseUrl}/api/schema/?format=json`)).json();
  assert.deepEqual(json, doc);
  assert.equal(doc.components.securitySchemes.PersonalAPIKey.scheme, 'bearer');
  assert.equal(doc.components.schemas.ErrorBody.required.length, 4);
});

test('every declared route is documented once, with its scope and a summary; probes are not', () => {
  const declared = allRoutes({ sql: t.db.sql, config: t.config, log: createLogger('silent') }, t.cp.queries);
  const listed = new Set(operations.map((o) => `${o.method} ${o.path}`));
  for (const r of declared) {
    const p = `${r.path.replace(/:([a-z_]+)/g, '{$1}')}/`;
    assert.ok(listed.has(`${r.method} ${p}`), `${r.method} ${p} is missing from /api/schema/`);
    const op = operations.find((o) => o.method === r.method && o.path === p)!;
    assert.deepEqual(op.scopes, r.scope ? [r.scope, ...(r.alsoScopes ?? [])] : [], `${r.method} ${p} scopes`);
    assert.ok(op.summary && !op.summary.startsWith(r.method), `${r.method} ${p} has no summary`);
  }
  assert.equal(operations.length, declared.length);
  for (const p of ['/_health/', '/_ready/', '/metrics/', '/api/schema/']) assert.equal(doc.paths[p], undefined, `${p} is documented`);
});

/** Creates a throwaway key and returns its id (the revoke operation needs one to revoke). */
async function spareKeyId(): Promise<string> {
  const before = new Set((await listPersonalApiKeys(t.db.sql, t.userId)).map((k) => k.id));
  await t.createKey(['survey:read']);
  return (await listPersonalApiKeys(t.db.sql, t.userId)).find((k) => !before.has(k.id))!.id;
}

/** The concrete URL of a documented path (deleting a project deletes a spare one). */
async function concrete(op: Operation, flagId: number, spareId: string): Promise<string> {
  if (op.method === 'DELETE' && op.path === '/api/projects/{project_id}/') {
    return `/api/projects/${(await t.request('POST', '/api/projects/', { body: { name: 'spare' } })).body.id}/`;
  }
  let id = String(flagId);
  if (op.path.includes('/event_definitions/')) id = '00000000-0000-0000-0000-000000000000';
  if (op.path.includes('/personal_api_keys/')) id = spareId;
  return op.path.replace('{project_id}', String(t.projectId)).replace('{id}', id)
    + (op.path.endsWith('/by_name/') ? '?name=$pageview' : '');
}

test('every documented operation refuses a key without its scopes (403) and admits a key holding only those', async () => {
  const flag = await t.request('POST', `/api/projects/${t.projectId}/feature_flags/`, { body: { key: 'walked' } });
  assert.equal(flag.status, 201);
  const unrelated = await t.createKey(['survey:read']);
  const keys = new Map<string, string>();
  // ~250 requests over one kept-alive connection (node:http costs about a third of fetch's CPU).
  const http = keepAliveClient(1);
  const send = (method: string, url: string, key: string, body: unknown) => http.request(method, t.baseUrl + url, { body, headers: { authorization: `Bearer ${key}` } });
  try {
    for (const op of operations) {
      assert.ok(op.scope, `${op.method} ${op.path} names no scope`);
      const needed = op.scopes.join(' ');
      if (!keys.has(needed)) keys.set(needed, await t.createKey(op.scopes));
      const spareId = op.path.includes('/personal_api_keys/') ? await spareKeyId() : '';
      const url = await concrete(op, flag.body.id as number, spareId);
      const body = ['POST', 'PATCH', 'PUT'].includes(op.method) ? {} : undefined;
      const without = await send(op.method, url, unrelated, body);
      assert.equal(without.status, 403, `${op.method} ${url} without scope`);
      assert.equal(without.body.detail, `API key missing required scope '${op.scope}'`);
      for (const [i, missing] of op.scopes.entries()) {
        if (i === 0) continue; // every scope but one is not enough either
        const partial = await send(op.method, url, await t.createKey(op.scopes.filter((x) => x !== missing)), body);
        assert.equal(partial.status, 403, `${op.method} ${url} without ${missing}`);
        assert.equal(partial.body.detail, `API key missing required scope '${missing}'`);
      }
      const withScope = await send(op.method, url, keys.get(needed)!, body);
      assert.ok(![401, 403].includes(withScope.status), `${op.method} ${url} with ${needed}: ${withScope.status} ${withScope.text}`);
    }
  } finally {
    http.close();
  }
});

test('a client generated by openapi-typescript type-checks good calls, rejects bad ones, and works against the live server', async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'switchyard-openapi-'));
  try {
    fs.symlinkSync(path.join(rootDir, 'node_modules'), path.join(dir, 'node_modules'), 'dir');
    fs.writeFileSync(path.join(dir, 'schema.d.ts'), await openapiTS(doc as never));
    fs.writeFileSync(path.join(dir, 'package.json'), '{"type":"module"}');
    const header = `import createClient from 'openapi-fetch';\nimport type { paths } from './schema.js';\nconst client = createClient<paths>({ baseUrl: 'http://127.0.0.1:1' });\n`;
    fs.writeFileSync(path.join(dir, 'good.ts'), `${header}
export const list = () => client.GET('/api/projects/{project_id}/feature_flags/', { params: { path: { project_id: '1' }, query: { limit: 5, search: 'x' } } });
export const create = () => client.POST('/api/projects/{project_id}/feature_flags/', { params: { path: { project_id: '1' } }, body: { key: 'k', active: true } });
export const revoke = () => client.DELETE('/api/personal_api_keys/{id}/', { params: { path: { id: 'x' } } });
`);
    fs.writeFileSync(path.join(dir, 'bad.ts'), `${header}
export const wrongPath = () => client.GET('/api/projects/{project_id}/no_such_resource/', { params: { path: { project_id: '1' } } });
export const wrongType = () => client.POST('/api/projects/{project_id}/feature_flags/', { params: { path: { project_id: '1' } }, body: { key: 'k', active: 'yes' } });
`);
    const tsc = path.join(rootDir, 'node_modules', '.bin', 'tsc');
    const flags = ['--noEmit', '--strict', '--skipLibCheck', '--module', 'nodenext', '--moduleResolution', 'nodenext', '--target', 'es2022', '--types', 'node'];
    // One compiler run over both files (each run loads TypeScript and the schema again): tsc
    // reports every error with its file, so good.ts must have none and bad.ts exactly two.
    const out = await run(tsc, [...flags, path.join(dir, 'good.ts'), path.join(dir, 'bad.ts')], { cwd: dir }).then(() => null, (e: { stdout: string }) => e.stdout);
    assert.ok(out !== null, 'bad.ts type-checked');
    const errors = out.trim().split('\n');
    assert.deepEqual(errors.filter((l) => !/^bad\.ts\(/.test(l)), [], 'good.ts type-checks and nothing else fails');
    assert.match(out, /bad\.ts\(5,\d+\): error TS\d+: Argument of type '"\/api\/projects\/\{project_id\}\/no_such_resource\/"'/, 'the unknown path is an error');
    assert.match(out, /bad\.ts\(6,\d+\): error TS\d+: Type 'string' is not assignable to type 'boolean/, 'the wrongly typed body field is an error');
    assert.equal(errors.length, 2, out);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
  // The same client shape at run time, against the live control plane.
  const client = createClient<any>({ baseUrl: t.baseUrl, headers: { authorization: `Bearer ${t.personalKey}` } });
  const { data, response } = await client.GET('/api/projects/{project_id}/feature_flags/', { params: { path: { project_id: String(t.projectId) }, query: { limit: 1 } } });
  assert.equal(response.status, 200);
  assert.equal(typeof (data as { count: number }).count, 'number');
});

/**
 * POST /flags and /decide over real HTTP against a real node store (spec/API.md §4.4 rules 1–7,
 * §7; research/posthog-flag-evaluation.md §4–§5).
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import zlib from 'node:zlib';
import { startTestNode, postFlags, request, flag, standardFlags, worldChanges, PROJECT_TOKEN, LIMITED_TOKEN, type TestNode } from './fixture.js';

let node: TestNode;
before(async () => { node = await startTestNode(); });
after(async () => { await node.close(); });

const base = { api_key: PROJECT_TOKEN, distinct_id: 'user-1' };
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

test('v2 shape: entries with reason and metadata; inactive and remote-config flags still follow the core', async () => {
  const r = await postFlags(node, { ...base, person_properties: { email: 'a@example.com' } });
  assert.equal(r.status, 200);
  assert.match(String(r.headers['content-type']), /application\/json/);
  const b = r.json();
  assert.equal(b.errorsWhileComputingFlags, false);
  assert.match(b.requestId, UUID);
  assert.equal(typeof b.evaluatedAt, 'number');
  const on = b.flags['always-on'];
  assert.equal(on.key, 'always-on');
  assert.equal(on.enabled, true);
  assert.deepEqual(on.reason, { code: 'condition_match', condition_index: 0, description: 'Matched condition set 1' });
  assert.equal(typeof on.metadata.id, 'number');
  assert.equal(on.metadata.version, 1);
  assert.equal(b.flags['email-flag'].enabled, true);
  assert.equal(b.flags['payload-flag'].metadata.payload, '{"a":1}');
  assert.ok(['control', 'test'].includes(b.flags.mv.variant));
  assert.equal(b.flags.inactive, undefined, 'inactive flags are omitted');
  assert.equal(b.config, undefined);
});

test('rule 1: request person properties decide property filters', async () => {
  const yes = (await postFlags(node, { ...base, person_properties: { email: 'x@example.com' } })).json();
  const no = (await postFlags(node, { ...base, person_properties: { email: 'x@other.test' } })).json();
  assert.equal(yes.flags['email-flag'].enabled, true);
  assert.equal(no.flags['email-flag'].enabled, false);
  assert.equal(no.flags['email-flag'].reason.code, 'no_condition_match');
});

test('rule 1: stored person and group properties are used, and request properties override them', async () => {
  await node.store.applyBatch([
    { kind: 'person', entityId: '0190a000-0000-7000-8000-000000000001', projectId: 1, op: 'upsert',
      payload: { id: '0190a000-0000-7000-8000-000000000001', project_id: 1, distinct_ids: ['stored-user', 'stored-alias'], properties: { email: 'me@example.com' } } },
    { kind: 'group', entityId: '1:0:stored-org', projectId: 1, op: 'upsert',
      payload: { project_id: 1, group_type_index: 0, group_key: 'stored-org', properties: { plan: 'pro' } } },
  ], 50);
  const flagsFor = async (body: Record<string, unknown>, path = '/flags?v=2') =>
    (await postFlags(node, { api_key: PROJECT_TOKEN, ...body }, { path })).json().flags;
  assert.equal((await flagsFor({ distinct_id: 'stored-user' }))['email-flag'].enabled, true, 'stored email');
  assert.equal((await flagsFor({ distinct_id: 'stored-alias' }))['email-flag'].enabled, true, 'any distinct id of the person');
  assert.equal((await flagsFor({ distinct_id: 'stored-user', person_properties: { email: 'me@other.test' } }))['email-flag'].enabled, false, 'request wins');
  assert.equal((await flagsFor({ distinct_id: 'stored-user' }, '/flags?v=2&only_use_override_person_properties=true'))['email-flag'].enabled, false);
  assert.equal((await flagsFor({ distinct_id: 'u', groups: { organization: 'stored-org' } }))['group-flag'].enabled, true, 'stored group');
  assert.equal((await flagsFor({ distinct_id: 'u', groups: { organization: 'stored-org' }, group_properties: { organization: { plan: 'free' } } }))['group-flag'].enabled, false, 'request group properties win');
});

test('experience continuity: a stored hash-key override buckets the person by its hash key', async () => {
  const cont = flag('cont', { groups: [{ properties: [], rollout_percentage: 50 }] }, { ensure_experience_continuity: true });
  const local = await startTestNode({ changes: worldChanges([...standardFlags(), cont]) });
  try {
    const changes = [];
    for (let i = 0; i < 20; i++) {
      const personId = `0190a000-0000-7000-8000-0000000001${String(i).padStart(2, '0')}`;
      changes.push(
        { kind: 'person', entityId: personId, projectId: 1, op: 'upsert' as const, payload: { id: personId, project_id: 1, distinct_ids: [`cp-${i}`], properties: {} } },
        { kind: 'hash_key_override', entityId: `1:${personId}:cont`, projectId: 1, op: 'upsert' as const,
          payload: { project_id: 1, person_id: personId, feature_flag_key: 'cont', hash_key: `hk-${i}` } },
      );
    }
    await local.store.applyBatch(changes, 60);
    const seen = new Set<boolean>();
    for (let i = 0; i < 20; i++) {
      const viaOverride = (await postFlags(local, { api_key: PROJECT_TOKEN, distinct_id: `cp-${i}` })).json().flags.cont.enabled;
      const direct = (await postFlags(local, { api_key: PROJECT_TOKEN, distinct_id: `hk-${i}` })).json().flags.cont.enabled;
      assert.equal(viaOverride, direct, `cp-${i} buckets as hk-${i}`);
      seen.add(direct);
    }
    assert.equal(seen.size, 2, 'both outcomes occur at 50 %');
  } finally {
    await local.close();
  }
});

test('groups and group_properties come from the request', async () => {
  const withGroup = (await postFlags(node, { ...base, groups: { organization: 'acme' }, group_properties: { organization: { plan: 'pro' } } })).json();
  assert.equal(withGroup.flags['group-flag'].enabled, true);
  const otherPlan = (await postFlags(node, { ...base, groups: { organization: 'acme' }, group_properties: { organization: { plan: 'free' } } })).json();
  assert.equal(otherPlan.flags['group-flag'].enabled, false);
  const noGroup = (await postFlags(node, base)).json();
  assert.equal(noGroup.flags['group-flag'].enabled, false);
  assert.equal(noGroup.flags['group-flag'].reason.code, 'no_group_type');
});

test('v1 shape (no v): featureFlags values and featureFlagPayloads', async () => {
  const b = (await postFlags(node, { ...base, person_properties: { email: 'nope' } }, { path: '/flags' })).json();
  assert.equal(b.flags, undefined);
  assert.equal(b.featureFlags['always-on'], true);
  assert.equal(b.featureFlags['email-flag'], false);
  assert.ok(['control', 'test'].includes(b.featureFlags.mv));
  assert.equal(b.featureFlagPayloads['payload-flag'], '{"a":1}');
  assert.equal(b.featureFlagPayloads['always-on'], undefined);
  assert.equal(b.errorsWhileComputingFlags, false);
  assert.match(b.requestId, UUID);
});

test('/flags/ with trailing slash and config=true adds the remote-config fields', async () => {
  const b = (await postFlags(node, base, { path: '/flags/?v=2&config=true' })).json();
  assert.equal(b.flags['always-on'].enabled, true);
  assert.deepEqual(b.config, { enable_collect_everything: true });
  assert.deepEqual(b.toolbarParams, {});
  assert.equal(b.isAuthenticated, false);
  assert.deepEqual(b.supportedCompression, ['gzip', 'gzip-js']);
  assert.equal(b.sessionRecording, false);
  assert.equal(b.hasFeatureFlags, true);
});

test('/decide shapes by version', async () => {
  const cases: [string, (b: any) => void][] = [
    ['/decide/?v=1', (b) => { assert.ok(Array.isArray(b.featureFlags)); assert.ok(b.featureFlags.includes('always-on')); assert.ok(!b.featureFlags.includes('email-flag')); }],
    ['/decide/', (b) => { assert.ok(Array.isArray(b.featureFlags)); }],
    ['/decide/?v=2', (b) => { assert.equal(b.featureFlags['always-on'], true); assert.equal(b.featureFlags['email-flag'], undefined); }],
    ['/decide/?v=3', (b) => { assert.equal(b.featureFlags['email-flag'], false); assert.equal(b.featureFlagPayloads['payload-flag'], '{"a":1}'); }],
    ['/decide/?v=4', (b) => { assert.equal(b.flags['always-on'].enabled, true); }],
    ['/decide?v=5', (b) => { assert.equal(b.flags['always-on'].enabled, true); }],
  ];
  for (const [path, check] of cases) {
    const r = await postFlags(node, base, { path });
    assert.equal(r.status, 200, path);
    const b = r.json();
    check(b);
    assert.deepEqual(b.config, { enable_collect_everything: true }, `${path} carries config`);
  }
});

test('token aliases: token, $token, api_key', async () => {
  for (const field of ['token', '$token', 'api_key']) {
    const r = await postFlags(node, { [field]: PROJECT_TOKEN, distinct_id: 'u' });
    assert.equal(r.status, 200, field);
    assert.equal(r.json().flags['always-on'].enabled, true);
  }
});

test('distinct_id: number becomes string; $distinct_id alias; empty string allowed', async () => {
  const asNumber = (await postFlags(node, { ...base, distinct_id: 12345 })).json();
  const asString = (await postFlags(node, { ...base, distinct_id: '12345' })).json();
  const alias = (await postFlags(node, { api_key: PROJECT_TOKEN, $distinct_id: '12345' })).json();
  for (const k of ['mv', 'rollout-50']) {
    assert.deepEqual(asNumber.flags[k].variant, asString.flags[k].variant);
    assert.deepEqual(asNumber.flags[k].enabled, asString.flags[k].enabled);
    assert.deepEqual(alias.flags[k].enabled, asString.flags[k].enabled);
  }
  assert.equal((await postFlags(node, { ...base, distinct_id: '' })).status, 200);
});

test('body encodings: gzip (query, header, magic), base64, form data=', async () => {
  const json = JSON.stringify(base);
  const gz = zlib.gzipSync(json);
  const b64 = Buffer.from(json).toString('base64');
  const cases: [string, string, Buffer | string, Record<string, string>][] = [
    ['gzip query', '/flags?v=2&compression=gzip', gz, { 'content-type': 'text/plain' }],
    ['gzip-js query', '/flags?v=2&compression=gzip-js', gz, { 'content-type': 'text/plain' }],
    ['content-encoding', '/flags?v=2', gz, { 'content-type': 'application/json', 'content-encoding': 'gzip' }],
    ['magic bytes', '/flags?v=2', gz, { 'content-type': 'application/json' }],
    ['text/plain json', '/flags?v=2', json, { 'content-type': 'text/plain' }],
    ['no content type', '/flags?v=2', json, {}],
    ['base64 fallback', '/flags?v=2', b64, { 'content-type': 'text/plain' }],
    ['base64 query', '/flags?v=2&compression=base64', b64, { 'content-type': 'text/plain' }],
    ['form data=', '/flags?v=2&compression=base64', `data=${encodeURIComponent(b64)}`, { 'content-type': 'application/x-www-form-urlencoded' }],
    ['form without prefix', '/flags?v=2', encodeURIComponent(b64), { 'content-type': 'application/x-www-form-urlencoded' }],
    ['lenient NaN', '/flags?v=2', `{"api_key":"${PROJECT_TOKEN}","distinct_id":"u","person_properties":{"n":NaN}}`, { 'content-type': 'application/json' }],
  ];
  for (const [name, path, body, headers] of cases) {
    const r = await request(node.url + path, { method: 'POST', body, headers });
    assert.equal(r.status, 200, `${name}: ${r.text}`);
    assert.equal(r.json().flags['always-on'].enabled, true, name);
  }
});

test('request errors in PostHog shape', async () => {
  const cases: [string, string, string | Buffer, Record<string, string>, number, string][] = [
    ['missing token', '/flags?v=2', JSON.stringify({ distinct_id: 'u' }), {}, 401, 'missing_token'],
    ['unknown token', '/flags?v=2', JSON.stringify({ api_key: 'phc_nope', distinct_id: 'u' }), {}, 401, 'invalid_token'],
    ['missing distinct_id', '/flags?v=2', JSON.stringify({ api_key: PROJECT_TOKEN }), {}, 400, 'missing_distinct_id'],
    ['distinct_id null', '/flags?v=2', JSON.stringify({ api_key: PROJECT_TOKEN, distinct_id: null }), {}, 400, 'missing_distinct_id'],
    ['garbage', '/flags?v=2', '{not json', {}, 400, 'request_decoding_error'],
    ['empty body', '/flags?v=2', '', {}, 400, 'request_decoding_error'],
    ['array body', '/flags?v=2', '[1,2]', {}, 400, 'request_parsing_error'],
    ['bad gzip', '/flags?v=2&compression=gzip', Buffer.from([0x1f, 0x8b, 1, 2, 3]), {}, 400, 'request_decoding_error'],
    ['lz64', '/flags?v=2&compression=lz64', '{}', {}, 400, 'request_decoding_error'],
    ['groups not an object', '/flags?v=2', JSON.stringify({ ...base, groups: 'x' }), {}, 400, 'request_parsing_error'],
  ];
  for (const [name, path, body, headers, status, code] of cases) {
    const r = await request(node.url + path, { method: 'POST', body, headers: { 'content-type': 'application/json', ...headers } });
    assert.equal(r.status, status, `${name}: ${r.text}`);
    const b = r.json();
    assert.equal(b.code, code, name);
    assert.ok(typeof b.type === 'string' && typeof b.detail === 'string' && 'attr' in b, name);
  }
});

test('GET /flags is 405; unknown paths 404', async () => {
  const r = await request(node.url + '/flags?v=2');
  assert.equal(r.status, 405);
  assert.equal(r.json().code, 'method_not_allowed');
  assert.equal((await request(node.url + '/nope')).status, 404);
});

test('body over maxPublicBodyBytes → 413', async () => {
  const small = await startTestNode({ config: { maxPublicBodyBytes: 2048 } });
  try {
    const big = JSON.stringify({ ...base, person_properties: { pad: 'x'.repeat(4096) } });
    const r = await postFlags(small, big);
    assert.equal(r.status, 413);
    assert.equal(r.json().code, 'payload_too_large');
    const ok = await postFlags(small, base);
    assert.equal(ok.status, 200);
  } finally {
    await small.close();
  }
});

test('rules 3–5: runtime detection from headers and body, combined with environments', async () => {
  const keys = async (headers: Record<string, string>, extra: Record<string, unknown> = {}) =>
    Object.keys((await postFlags(node, { ...base, ...extra }, { headers })).json().flags);
  const none = await keys({});
  assert.ok(!none.includes('client-only') && !none.includes('server-only') && none.includes('always-on'));
  const server = await keys({ 'user-agent': 'posthog-node/5.0.0' });
  assert.ok(server.includes('server-only') && !server.includes('client-only'));
  for (const ua of ['python-requests/2.31', 'curl/8.0', 'posthog-python/3.0']) assert.ok((await keys({ 'user-agent': ua })).includes('server-only'), ua);
  const browser = await keys({ 'user-agent': 'Mozilla/5.0 (X11) Firefox/120.0' });
  assert.ok(browser.includes('client-only') && !browser.includes('server-only'));
  for (const h of ['origin', 'referer', 'sec-fetch-mode', 'sec-fetch-site']) {
    const k = await keys({ [h]: h === 'origin' ? 'https://app.example' : 'x' });
    assert.ok(k.includes('client-only') && !k.includes('server-only'), h);
  }
  assert.ok((await keys({ 'user-agent': 'posthog-android/3.0' })).includes('client-only'));
  const explicit = await keys({ 'user-agent': 'Mozilla/5.0' }, { evaluation_runtime: 'server' });
  assert.ok(explicit.includes('server-only') && !explicit.includes('client-only'));
  // rule 2 + 5: tagged flag only with a matching environment, and runtime still applies.
  assert.ok(!none.includes('tagged'));
  const web = await keys({ 'user-agent': 'posthog-node/5' }, { evaluation_environments: ['web'] });
  assert.ok(web.includes('tagged') && web.includes('always-on') && web.includes('server-only'));
  assert.ok((await keys({}, { evaluation_contexts: ['web'] })).includes('tagged'));
  assert.ok(!(await keys({}, { evaluation_environments: ['mobile'] })).includes('tagged'));
});

test('flag_keys_to_evaluate / flag_keys narrow the answer', async () => {
  assert.deepEqual(Object.keys((await postFlags(node, { ...base, flag_keys_to_evaluate: ['mv'] })).json().flags), ['mv']);
  assert.deepEqual(Object.keys((await postFlags(node, { ...base, flag_keys: ['always-on'] })).json().flags), ['always-on']);
});

test('rule 6: GeoIP from X-Forwarded-For fills only missing keys, unless geoip_disable', async () => {
  const gb = { 'x-forwarded-for': '10.0.0.1, 81.2.69.142' };
  const on = (await postFlags(node, base, { headers: gb })).json();
  assert.equal(on.flags['geo-flag'].enabled, true, 'first public address is GB');
  const disabled = (await postFlags(node, { ...base, geoip_disable: true }, { headers: gb })).json();
  assert.equal(disabled.flags['geo-flag'].enabled, false);
  const supplied = (await postFlags(node, { ...base, person_properties: { $geoip_country_code: 'US' } }, { headers: gb })).json();
  assert.equal(supplied.flags['geo-flag'].enabled, false, 'request properties win');
  const suppliedNull = (await postFlags(node, { ...base, person_properties: { $geoip_country_code: null } }, { headers: gb })).json();
  assert.equal(suppliedNull.flags['geo-flag'].enabled, true, 'null counts as not supplied');
  const privateOnly = (await postFlags(node, base, { headers: { 'x-forwarded-for': '192.168.1.1' } })).json();
  assert.equal(privateOnly.flags['geo-flag'].enabled, false, 'loopback peer and private XFF: no GeoIP');
});

test('rule 7: quota-limited organization gets 200 with no flags and quotaLimited', async () => {
  const v2 = await postFlags(node, { api_key: LIMITED_TOKEN, distinct_id: 'u' });
  assert.equal(v2.status, 200);
  const b = v2.json();
  assert.deepEqual(b.flags, {});
  assert.deepEqual(b.quotaLimited, ['feature_flags']);
  assert.equal(b.errorsWhileComputingFlags, false);
  assert.match(b.requestId, UUID);
  const v1 = (await postFlags(node, { api_key: LIMITED_TOKEN, distinct_id: 'u' }, { path: '/flags?config=true' })).json();
  assert.deepEqual(v1.featureFlags, {});
  assert.deepEqual(v1.quotaLimited, ['feature_flags']);
  assert.deepEqual(v1.config, { enable_collect_everything: true });
  assert.deepEqual(v1.supportedCompression, ['gzip', 'gzip-js']);
});

test('disable_flags answers no flags but keeps config; usage counts evaluated requests per organization', async () => {
  node.http.usage.takeUsage();
  const b = (await postFlags(node, { ...base, disable_flags: true }, { path: '/flags?v=2&config=true' })).json();
  assert.deepEqual(b.flags, {});
  assert.deepEqual(b.config, { enable_collect_everything: true });
  await postFlags(node, base);
  await postFlags(node, base);
  await postFlags(node, { api_key: LIMITED_TOKEN, distinct_id: 'u' });
  const usage = node.http.usage.takeUsage();
  assert.equal(usage.get(1), 2);
  assert.equal(usage.get(2), undefined);
  assert.equal(node.http.usage.takeUsage().size, 0);
});

test('CORS: Origin is echoed; OPTIONS preflight answers 200 as PostHog\'s services do', async () => {
  const r = await postFlags(node, base, { headers: { origin: 'https://app.example' } });
  assert.equal(r.headers['access-control-allow-origin'], 'https://app.example');
  const pre = await request(node.url + '/flags/?v=2', { method: 'OPTIONS', headers: { origin: 'https://app.example', 'access-control-request-headers': 'content-type' } });
  assert.equal(pre.status, 200);
  assert.match(String(pre.headers['access-control-allow-methods']), /POST/);
});

test('definitions changes reach /flags without restart', async () => {
  const local = await startTestNode();
  try {
    assert.equal((await postFlags(local, base)).json().flags['always-on'].enabled, true);
    const before = (await postFlags(local, base)).json().flags['always-on'];
    await local.store.applyBatch([{ kind: 'feature_flag', entityId: String(before.metadata.id), projectId: 1, op: 'upsert',
      payload: { id: before.metadata.id, team_id: 1, key: 'always-on', name: '', filters: { groups: [{ properties: [], rollout_percentage: 0 }] },
        deleted: false, active: true, ensure_experience_continuity: false, version: 2, evaluation_runtime: 'all', evaluation_tags: [],
        bucketing_identifier: null, has_encrypted_payloads: false, is_remote_configuration: false } }], 11);
    const after = (await postFlags(local, base)).json().flags['always-on'];
    assert.equal(after.enabled, false);
    assert.equal(after.metadata.version, 2);
  } finally {
    await local.close();
  }
});

test('fuzz: malformed requests never crash the node', async () => {
  let seed = 42;
  const rnd = () => { seed = (seed * 1103515245 + 12345) & 0x7fffffff; return seed / 0x7fffffff; };
  const pieces = ['{', '}', '[', ']', '"', ':', ',', 'null', 'true', '1e999', '"distinct_id"', '"api_key"', `"${PROJECT_TOKEN}"`, '\u0000', '\\', 'NaN', '"groups"', '{"a":', '%', '=', 'data='];
  const types = ['application/json', 'text/plain', 'application/x-www-form-urlencoded', ''];
  const paths = ['/flags?v=2', '/flags', '/decide/?v=3', '/flags?compression=gzip', '/flags?compression=base64', '/flags/?v=2&config=true'];
  for (let i = 0; i < 300; i++) {
    let body: Buffer;
    if (i % 3 === 0) body = Buffer.from(Array.from({ length: Math.floor(rnd() * 200) }, () => Math.floor(rnd() * 256)));
    else body = Buffer.from(Array.from({ length: Math.floor(rnd() * 30) }, () => pieces[Math.floor(rnd() * pieces.length)]).join(''));
    if (i % 7 === 0) body = zlib.gzipSync(body);
    const structured = i % 5 === 0
      ? JSON.stringify({ api_key: PROJECT_TOKEN, distinct_id: [1, {}, 'x', 5, null][i % 5], groups: [null, 1, { organization: {} }, 'x'][i % 4], person_properties: [null, [], { email: 5 }][i % 3], group_properties: { organization: [1] }, flag_keys: [1, 'x'].slice(i % 2), evaluation_environments: i % 2 ? 'web' : [null] })
      : null;
    const r = await request(node.url + paths[i % paths.length]!, { method: 'POST', body: structured ?? body, headers: { 'content-type': types[i % types.length]! } });
    assert.ok([200, 400, 401, 413].includes(r.status), `case ${i}: ${r.status} ${r.text}`);
    JSON.parse(r.text);
  }
  assert.equal((await request(node.url + '/_health')).status, 200);
});

/** The complete HTTP/1.1 answers at the start of `text`, in order: status and parsed JSON body. */
function answersIn(text: string): { status: number; body: Record<string, any> }[] {
  const out: { status: number; body: Record<string, any> }[] = [];
  let at = 0;
  for (;;) {
    const headEnd = text.indexOf('\r\n\r\n', at);
    if (headEnd < 0) return out;
    const head = text.slice(at, headEnd);
    const length = Number(/\r\ncontent-length: (\d+)/i.exec(head)?.[1]);
    if (!Number.isInteger(length) || text.length < headEnd + 4 + length) return out;
    out.push({ status: Number(head.slice(9, 12)), body: JSON.parse(text.slice(headEnd + 4, headEnd + 4 + length)) });
    at = headEnd + 4 + length;
  }
}

test('pipelined requests on one connection, across /flags and /decide, are answered in the order they came', async () => {
  const { port } = new URL(node.url);
  const post = (p: string, body: object) => {
    const b = JSON.stringify(body);
    return `POST ${p} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(b)}\r\n\r\n${b}`;
  };
  const socket = net.connect(Number(port), '127.0.0.1');
  const answers = await new Promise<ReturnType<typeof answersIn>>((resolve, reject) => {
    let got = '';
    socket.on('error', reject);
    // A server that stalls on pipelined requests answers nothing: fail in seconds, not at the file's limit.
    socket.setTimeout(5000, () => reject(new Error(`${answersIn(got).length} of 3 answers after 5 s`)));
    socket.on('data', (d) => {
      got += d.toString('latin1');
      const a = answersIn(got);
      if (a.length === 3) resolve(a);
    });
    // One write: the node reads all three requests at once.
    socket.write(post('/flags?v=2', { ...base, distinct_id: 'first', person_properties: { email: 'a@example.com' } })
      + post('/decide?v=3', { ...base, distinct_id: 'second' })
      + post('/flags?v=2', { ...base, distinct_id: 'third', person_properties: { email: 'a@mail.test' } }));
  }).finally(() => socket.destroy());
  assert.deepEqual(answers.map((a) => a.status), [200, 200, 200]);
  assert.equal(answers[0]!.body.flags['email-flag'].enabled, true, 'the first answer is the first request\'s');
  assert.equal(answers[1]!.body.featureFlags['always-on'], true, 'the second answer is the decide request\'s');
  assert.equal(answers[2]!.body.flags['email-flag'].enabled, false, 'the third answer is the third request\'s');
});

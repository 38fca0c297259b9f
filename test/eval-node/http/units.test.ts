/** Table-driven unit tests of the node HTTP layer's pure helpers: runtime detection, addresses, decoding, shapes. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import zlib from 'node:zlib';
import { detectRuntime, type RuntimeHeaders } from '../../../src/eval-node/http/runtime.js';
import { clientAddress, fillGeoip, isPublicAddress, normalizeAddress } from '../../../src/eval-node/geoip/index.js';
import { decodeBody, DecodeError, parseCompression, parseJsonLenient } from '../../../src/eval-node/http/decode.js';
import { parseFlagsQuery, shapeOf } from '../../../src/eval-node/http/flags-request.js';

const H = (h: Partial<RuntimeHeaders>): RuntimeHeaders => ({ userAgent: '', origin: '', referer: '', secFetchMode: '', secFetchSite: '', ...h });

test('detectRuntime (spec §4.4 rules 3–4)', () => {
  const cases: [string, RuntimeHeaders, unknown, 'client' | 'server' | null][] = [
    ['nothing', H({}), undefined, null],
    ['node fetch default UA', H({ userAgent: 'node' }), undefined, null],
    ['browser', H({ userAgent: 'Mozilla/5.0 (Macintosh) AppleWebKit/605.1.15 Safari/605.1.15' }), undefined, 'client'],
    ['chrome', H({ userAgent: 'Chrome/120' }), undefined, 'client'],
    ['edge', H({ userAgent: 'Edge/18' }), undefined, 'client'],
    ['android sdk', H({ userAgent: 'posthog-android/3.1' }), undefined, 'client'],
    ['ios sdk', H({ userAgent: 'posthog-ios/3.1' }), undefined, 'client'],
    ['react-native', H({ userAgent: 'posthog-react-native/3.1' }), undefined, 'client'],
    ['flutter', H({ userAgent: 'sdk-flutter/1.0' }), undefined, 'client'],
    ['node sdk', H({ userAgent: 'posthog-node/5.70.0' }), undefined, 'server'],
    ['python sdk', H({ userAgent: 'posthog-python/3.0' }), undefined, 'server'],
    ['go sdk', H({ userAgent: 'posthog-go/1.0' }), undefined, 'server'],
    ['curl', H({ userAgent: 'curl/8.5.0' }), undefined, 'server'],
    ['python-requests', H({ userAgent: 'python-requests/2.31' }), undefined, 'server'],
    ['origin header', H({ origin: 'https://x' }), undefined, 'client'],
    ['referer header', H({ referer: 'https://x/' }), undefined, 'client'],
    ['sec-fetch-mode', H({ secFetchMode: 'cors' }), undefined, 'client'],
    ['sec-fetch-site', H({ secFetchSite: 'cross-site' }), undefined, 'client'],
    ['server UA wins over origin', H({ userAgent: 'posthog-node/5', origin: 'https://x' }), undefined, 'server'],
    ['explicit server', H({ userAgent: 'Mozilla/5.0' }), 'server', 'server'],
    ['explicit client', H({ userAgent: 'curl/8' }), 'client', 'client'],
    ['explicit all → detect', H({ userAgent: 'curl/8' }), 'all', 'server'],
    ['explicit junk → detect', H({}), 42, null],
  ];
  for (const [name, headers, explicit, want] of cases) assert.equal(detectRuntime(headers, explicit), want, name);
});

test('client address for GeoIP: first public X-Forwarded-For entry, else the peer', () => {
  const cases: [string, string, string, string | null][] = [
    ['public xff', '81.2.69.142', '127.0.0.1', '81.2.69.142'],
    ['skips private', '10.1.1.1, 192.168.0.2, 81.2.69.142, 8.8.8.8', '127.0.0.1', '81.2.69.142'],
    ['port', '81.2.69.142:5555', '', '81.2.69.142'],
    ['ipv6 brackets', '[2001:4860:4860::8888]:443', '', '2001:4860:4860::8888'],
    ['garbage then public', 'unknown, 8.8.8.8', '', '8.8.8.8'],
    ['no xff, public peer', '', '8.8.4.4', '8.8.4.4'],
    ['mapped v4 peer', '', '::ffff:8.8.4.4', '8.8.4.4'],
    ['loopback only', '', '127.0.0.1', null],
    ['private only', '172.16.5.4', '::1', null],
    ['cgnat', '100.64.1.1', '', null],
  ];
  for (const [name, xff, peer, want] of cases) assert.equal(clientAddress(xff, peer), want, name);
  assert.equal(normalizeAddress('nope'), null);
  assert.equal(isPublicAddress('fd00::1'), false);
  assert.equal(isPublicAddress('fe80::1'), false);
  assert.equal(isPublicAddress('2606:4700::1111'), true);
});

test('fillGeoip fills only missing or null keys and never mutates the request', () => {
  const req = { $geoip_city_name: 'Mine', $geoip_country_code: null, email: 'x' };
  const out = fillGeoip(req, { $geoip_city_name: 'London', $geoip_country_code: 'GB', $geoip_time_zone: 'Europe/London' });
  assert.deepEqual(out, { $geoip_city_name: 'Mine', $geoip_country_code: 'GB', email: 'x', $geoip_time_zone: 'Europe/London' });
  assert.equal(req.$geoip_country_code, null);
  assert.deepEqual(fillGeoip(undefined, { $geoip_country_code: 'GB' }), { $geoip_country_code: 'GB' });
  assert.equal(fillGeoip(req, null), req);
});

test('decodeBody', () => {
  const obj = { token: 't', distinct_id: 'd' };
  const json = JSON.stringify(obj);
  const meta = (contentType = 'application/json', contentEncoding = '', compression: 'gzip' | 'base64' | null = null) => ({ contentType, contentEncoding, compression });
  const ok: [string, Buffer, ReturnType<typeof meta>][] = [
    ['json', Buffer.from(json), meta()],
    ['gzip magic', zlib.gzipSync(json), meta()],
    ['gzip query', zlib.gzipSync(json), meta('text/plain', '', 'gzip')],
    ['gzip header', zlib.gzipSync(json), meta('application/json', 'gzip')],
    ['base64', Buffer.from(Buffer.from(json).toString('base64')), meta('text/plain')],
    ['base64 unpadded, percent-encoded', Buffer.from(encodeURIComponent(Buffer.from(json).toString('base64').replace(/=+$/, ''))), meta('text/plain')],
    ['form', Buffer.from(`data=${encodeURIComponent(Buffer.from(json).toString('base64'))}`), meta('application/x-www-form-urlencoded; charset=utf-8')],
    ['form, url-encoded JSON', Buffer.from(`data=${encodeURIComponent(json)}`), meta('application/x-www-form-urlencoded')],
  ];
  for (const [name, body, m] of ok) assert.deepEqual(decodeBody(body, m, 1 << 20), obj, name);
  const bad: [string, Buffer, ReturnType<typeof meta>][] = [
    ['not json', Buffer.from('hello world'), meta()],
    ['form gzip', Buffer.from(`data=${zlib.gzipSync(json).toString('base64')}`), meta('application/x-www-form-urlencoded')],
    ['gzip bomb over limit', zlib.gzipSync(Buffer.alloc(1 << 20)), meta()],
  ];
  for (const [name, body, m] of bad) assert.throws(() => decodeBody(body, m, 1000), DecodeError, name);
  assert.deepEqual(parseJsonLenient('{"a":NaN,"b":[Infinity,-Infinity],"c":"NaN"}'), { ok: true, value: { a: null, b: [null, null], c: 'NaN' } });
  assert.equal(parseCompression('GZIP'), 'gzip');
  assert.equal(parseCompression('gzip-js'), 'gzip');
  assert.equal(parseCompression(''), null);
  assert.throws(() => parseCompression('lz64'), DecodeError);
});

test('query and response shapes', () => {
  assert.deepEqual(parseFlagsQuery('v=2&config=true&compression=gzip-js&only_evaluate_survey_feature_flags=1'),
    { version: 2, config: true, compression: 'gzip-js', onlySurveyFlags: true, onlyOverrideProperties: false });
  assert.equal(parseFlagsQuery('only_use_override_person_properties=true').onlyOverrideProperties, true);
  assert.equal(parseFlagsQuery('version=3').version, 3);
  assert.equal(parseFlagsQuery('v=abc').version, null);
  const cases: ['flags' | 'decide', number | null, string][] = [
    ['flags', null, 'flags-v1'], ['flags', 1, 'flags-v1'], ['flags', 2, 'flags-v2'], ['flags', 3, 'flags-v2'],
    ['decide', null, 'decide-v1'], ['decide', 1, 'decide-v1'], ['decide', 2, 'decide-v2'], ['decide', 3, 'flags-v1'], ['decide', 4, 'flags-v2'], ['decide', 7, 'flags-v2'],
  ];
  for (const [ep, v, want] of cases) assert.equal(shapeOf(ep, v), want, `${ep} v=${v}`);
});

test('loadGeoipBytes reads a file once per process while it is unchanged, and again once it changes', async () => {
  const { loadGeoipBytes } = await import('../../../src/eval-node/geoip/index.js');
  const fs = await import('node:fs');
  const os = await import('node:os');
  const path = await import('node:path');
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'switchyard-geoip-'));
  try {
    const file = path.join(dir, 'db.mmdb');
    fs.writeFileSync(file, Buffer.from('first'));
    const a = loadGeoipBytes(file);
    assert.ok(a.buffer instanceof SharedArrayBuffer);
    assert.equal(Buffer.from(a).toString(), 'first');
    assert.equal(loadGeoipBytes(file), a, 'the same bytes for the unchanged file');
    fs.writeFileSync(file, Buffer.from('second!')); // another size and modification time
    const b = loadGeoipBytes(file);
    assert.notEqual(b, a);
    assert.equal(Buffer.from(b).toString(), 'second!');
    fs.renameSync(file, path.join(dir, 'moved.mmdb'));
    fs.writeFileSync(file, Buffer.from('third!!')); // same size, another inode
    assert.equal(Buffer.from(loadGeoipBytes(file)).toString(), 'third!!');
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

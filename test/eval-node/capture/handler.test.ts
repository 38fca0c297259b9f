/** handleCapture as a pure function: body encodings, token rules, validation, outbox answers. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import zlib from 'node:zlib';
import { handleCapture, MAX_EVENT_BYTES, type CaptureStore } from '../../../src/eval-node/capture/handler.js';
import { OutboxFullError } from '../../../src/eval-node/capture/outbox.js';
import { resolveTimestamp } from '../../../src/eval-node/capture/events.js';
import type { CapturedEvent } from '../../../src/contract/events.js';

const TOKEN = 'phc_capture_test_token';
const NOW = Date.parse('2026-05-01T12:00:00.000Z');

function store(opts: { full?: boolean } = {}) {
  const stored: CapturedEvent[][] = [];
  const s: CaptureStore = {
    projectIdForToken: (t) => (t === TOKEN ? 7 : null),
    append: async (events) => { if (opts.full) throw new OutboxFullError(1024); stored.push(events); },
  };
  return { s, stored };
}

const json = (v: unknown) => Buffer.from(JSON.stringify(v));
const JSON_HEADERS = { 'content-type': 'application/json' };
const FORM_HEADERS = { 'content-type': 'application/x-www-form-urlencoded' };
const one = { api_key: TOKEN, event: 'clicked', distinct_id: 'u1', properties: { a: 1 } };

test('accepted encodings and paths', async () => {
  const cases: { name: string; path?: string; query?: string; headers?: Record<string, string>; body: Buffer; events: number }[] = [
    { name: 'single JSON event on /i/v0/e/', body: json(one), events: 1 },
    { name: '/e without slash', path: '/e', body: json(one), events: 1 },
    { name: '/capture/', path: '/capture/', body: json(one), events: 1 },
    { name: 'array of events', body: json([one, { ...one, event: 'b' }]), events: 2 },
    { name: 'batch envelope with token', path: '/batch/', body: json({ api_key: TOKEN, batch: [{ event: 'a', distinct_id: 'x' }, { event: 'b', distinct_id: 'y' }] }), events: 2 },
    { name: 'batch envelope token field', path: '/batch/', body: json({ token: TOKEN, batch: [{ event: 'a', distinct_id: 'x' }] }), events: 1 },
    { name: 'token in properties', body: json({ event: 'a', distinct_id: 'x', properties: { token: TOKEN } }), events: 1 },
    { name: 'gzip body by magic bytes', body: zlib.gzipSync(json(one)), events: 1 },
    { name: 'gzip-js hint', query: 'compression=gzip-js', headers: { 'content-type': 'text/plain' }, body: zlib.gzipSync(json([one])), events: 1 },
    { name: 'base64 body', body: Buffer.from(json(one).toString('base64')), events: 1 },
    { name: 'base64 hint', query: 'compression=base64', body: Buffer.from(json(one).toString('base64')), events: 1 },
    { name: 'form data= base64 (+ as spaces)', headers: FORM_HEADERS,
      body: Buffer.from(`data=${json({ ...one, properties: { s: '>>>???' } }).toString('base64').replace(/\+/g, ' ')}&compression=base64`), events: 1 },
    { name: 'form data= JSON', headers: FORM_HEADERS, body: Buffer.from(`data=${encodeURIComponent(JSON.stringify(one))}`), events: 1 },
    { name: 'query data (GET)', query: `data=${encodeURIComponent(JSON.stringify(one))}`, body: Buffer.alloc(0), events: 1 },
    { name: 'numeric distinct id', body: json({ ...one, distinct_id: 42 }), events: 1 },
    { name: 'distinct id in properties', body: json({ api_key: TOKEN, event: 'x', properties: { distinct_id: 'p' } }), events: 1 },
  ];
  for (const c of cases) {
    const { s, stored } = store();
    const r = await handleCapture(c.path ?? '/i/v0/e/', c.query ?? '', c.headers ?? JSON_HEADERS, c.body, s, NOW);
    assert.deepEqual(r, { status: 200, body: { status: 1 } }, c.name);
    assert.equal(stored.length, 1, c.name);
    assert.equal(stored[0]!.length, c.events, c.name);
    for (const e of stored[0]!) {
      assert.equal(e.project_id, 7);
      assert.match(e.uuid, /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/, `${c.name}: uuid assigned`);
      assert.equal(e.timestamp, new Date(NOW).toISOString(), `${c.name}: timestamp assigned`);
      assert.equal(typeof e.distinct_id, 'string');
    }
  }
});

test('rejections: status, code, and nothing stored', async () => {
  const cases: { name: string; path?: string; body: Buffer; status: number; code: string; headers?: Record<string, string> }[] = [
    { name: 'empty body', body: Buffer.alloc(0), status: 400, code: 'request_decoding_error' },
    { name: 'invalid JSON', body: Buffer.from('{nope'), status: 400, code: 'request_decoding_error' },
    { name: 'bad gzip', body: Buffer.from([0x1f, 0x8b, 1, 2, 3]), status: 400, code: 'request_decoding_error' },
    { name: 'form without data', headers: FORM_HEADERS, body: Buffer.from('{"a":'), status: 400, code: 'request_decoding_error' },
    { name: 'empty batch', body: json({ api_key: TOKEN, batch: [] }), status: 400, code: 'empty_batch' },
    { name: 'no token', body: json({ event: 'a', distinct_id: 'x' }), status: 401, code: 'missing_token' },
    { name: 'two tokens', body: json([one, { ...one, api_key: 'phc_other_token_value' }]), status: 401, code: 'invalid_token' },
    { name: 'personal key', body: json({ ...one, api_key: 'phx_secret' }), status: 401, code: 'invalid_token' },
    { name: 'unknown project token', body: json({ ...one, api_key: 'phc_unknown' }), status: 401, code: 'invalid_token' },
    { name: 'missing event name (whole batch refused)', body: json([one, { ...one, event: '' }]), status: 400, code: 'missing_event_name' },
    { name: 'missing distinct id (whole batch refused)', body: json([one, { api_key: TOKEN, event: 'x' }]), status: 400, code: 'missing_distinct_id' },
    { name: 'empty distinct id', body: json({ ...one, distinct_id: '' }), status: 400, code: 'empty_distinct_id' },
    { name: 'invalid uuid', body: json({ ...one, uuid: 'abc' }), status: 400, code: 'invalid_uuid' },
    { name: 'not an object', body: json('hello'), status: 400, code: 'invalid_payload' },
    { name: 'unknown path', path: '/nope/', body: json(one), status: 404, code: 'not_found' },
  ];
  for (const c of cases) {
    const { s, stored } = store();
    const r = await handleCapture(c.path ?? '/i/v0/e/', '', c.headers ?? JSON_HEADERS, c.body, s, NOW);
    assert.equal(r.status, c.status, c.name);
    assert.equal((r.body as any).code, c.code, c.name);
    assert.equal(stored.length, 0, c.name);
  }
});

test('a full outbox answers 503 outbox_full', async () => {
  const { s } = store({ full: true });
  const r = await handleCapture('/batch/', '', JSON_HEADERS, json(one), s, NOW);
  assert.equal(r.status, 503);
  assert.deepEqual({ ...(r.body as any), detail: undefined }, { type: 'server_error', code: 'outbox_full', detail: undefined, attr: null });
});

test('near the bound the outbox sheds with 503 outbox_backlog; both refusals carry Retry-After', async () => {
  const s: CaptureStore = { projectIdForToken: () => 7, append: async () => { throw new OutboxFullError(1024, 12, true); } };
  const r = await handleCapture('/batch/', '', JSON_HEADERS, json(one), s, NOW);
  assert.equal(r.status, 503);
  assert.equal((r.body as { code: string }).code, 'outbox_backlog');
  assert.deepEqual(r.headers, [['retry-after', '12']]);
  const full = await handleCapture('/batch/', '', JSON_HEADERS, json(one), store({ full: true }).s, NOW);
  assert.deepEqual(full.headers, [['retry-after', '30']]);
});

test('client uuid, $set and properties are kept', async () => {
  const { s, stored } = store();
  const uuid = '0190A1B2-C3D4-7E5F-8A9B-0C1D2E3F4A5B';
  await handleCapture('/e/', '', JSON_HEADERS, json({ ...one, uuid, $set: { x: 1 }, properties: { $feature_flag: 'f' } }), s, NOW);
  const e = stored[0]![0]!;
  assert.equal(e.uuid, uuid.toLowerCase());
  assert.deepEqual(e.$set, { x: 1 });
  assert.deepEqual(e.properties, { $feature_flag: 'f' });
});

test('timestamp resolution (plugin-server parseEventTimestamp)', () => {
  const cases: { name: string; e: Record<string, unknown>; sentAt: number | null; want: string }[] = [
    { name: 'none → now', e: {}, sentAt: null, want: '2026-05-01T12:00:00.000Z' },
    { name: 'timestamp without sent_at', e: { timestamp: '2026-04-30T00:00:00Z' }, sentAt: null, want: '2026-04-30T00:00:00.000Z' },
    { name: 'clock skew corrected by sent_at', e: { timestamp: '2026-05-01T13:00:00Z' }, sentAt: Date.parse('2026-05-01T13:00:10Z'), want: '2026-05-01T11:59:50.000Z' },
    { name: '$ignore_sent_at', e: { timestamp: '2026-05-01T10:00:00Z', properties: { $ignore_sent_at: true } }, sentAt: Date.parse('2026-05-01T13:00:00Z'), want: '2026-05-01T10:00:00.000Z' },
    { name: 'offset wins', e: { offset: 5000, timestamp: '2020-01-01T00:00:00Z' }, sentAt: null, want: '2026-05-01T11:59:55.000Z' },
    { name: 'far future → now', e: { timestamp: '2026-05-03T00:00:00Z' }, sentAt: null, want: '2026-05-01T12:00:00.000Z' },
    { name: 'garbage → now', e: { timestamp: 'yesterday-ish' }, sentAt: null, want: '2026-05-01T12:00:00.000Z' },
  ];
  for (const c of cases) assert.equal(new Date(resolveTimestamp(c.e, NOW, c.sentAt)).toISOString(), c.want, c.name);
});

test('batch sent_at applies skew correction to each event', async () => {
  const { s, stored } = store();
  await handleCapture('/batch/', '', JSON_HEADERS, json({ api_key: TOKEN, sent_at: '2026-05-01T12:00:30.000Z',
    batch: [{ event: 'a', distinct_id: 'x', timestamp: '2026-05-01T12:00:20.000Z' }] }), s, NOW);
  assert.equal(stored[0]![0]!.timestamp, '2026-05-01T11:59:50.000Z');
});

test('an event over MAX_EVENT_BYTES refuses the whole request with 413 event_too_big', async () => {
  const { s, stored } = store();
  const big = { event: 'big', distinct_id: 'x', properties: { pad: 'p'.repeat(MAX_EVENT_BYTES) } };
  const r = await handleCapture('/batch/', '', JSON_HEADERS, json({ api_key: TOKEN, batch: [{ event: 'ok', distinct_id: 'x' }, big] }), s, NOW);
  assert.equal(r.status, 413);
  assert.equal((r.body as { code: string }).code, 'event_too_big');
  const gz = await handleCapture('/i/v0/e/', '', JSON_HEADERS, zlib.gzipSync(json({ api_key: TOKEN, ...big })), s, NOW);
  assert.equal(gz.status, 413);
  assert.equal(stored.length, 0);
  const ok = await handleCapture('/batch/', '', JSON_HEADERS, json({ api_key: TOKEN, batch: [{ ...big, properties: { pad: 'p'.repeat(MAX_EVENT_BYTES - 1024) } }] }), s, NOW);
  assert.equal(ok.status, 200);
});

test('before the first snapshot an unknown token answers 503 not_ready (retry), after it 401', async () => {
  let ready = false;
  const stored: CapturedEvent[][] = [];
  const s: CaptureStore = { projectIdForToken: () => null, ready: () => ready, append: async (e) => { stored.push(e); } };
  const r = await handleCapture('/i/v0/e/', '', JSON_HEADERS, json(one), s, NOW);
  assert.equal(r.status, 503);
  assert.equal((r.body as { code: string }).code, 'not_ready');
  ready = true;
  assert.equal((await handleCapture('/i/v0/e/', '', JSON_HEADERS, json(one), s, NOW)).status, 401);
  assert.equal(stored.length, 0);
});

test('the internal hash-key override event name is refused (400), with or without the marker; nothing stored', async () => {
  const { s, stored } = store();
  const forged = { api_key: TOKEN, event: '$feature_flag_hash_key_override', distinct_id: 'u1', $internal: 'hash_key_override',
    properties: { distinct_ids: ['u1', 'a1'], flag_keys: ['f'], hash_key: 'a1' } };
  for (const body of [forged, [one, forged], { api_key: TOKEN, batch: [{ event: 'ok', distinct_id: 'x' }, forged] }]) {
    const r = await handleCapture('/batch/', '', JSON_HEADERS, json(body), s, NOW);
    assert.equal(r.status, 400);
    assert.equal((r.body as { code: string }).code, 'reserved_event_name');
  }
  assert.equal(stored.length, 0);
  // A client field named like the marker is never copied onto an event.
  const ok = await handleCapture('/i/v0/e/', '', JSON_HEADERS, json({ ...one, $internal: 'hash_key_override' }), s, NOW);
  assert.equal(ok.status, 200);
  assert.equal('$internal' in stored[0]![0]!, false);
});

/** `{a: {a: … 1}}`, `depth` levels, built as JSON text (no recursion anywhere). */
function deepJson(depth: number): string {
  return '{"a":'.repeat(depth) + '1' + '}'.repeat(depth);
}

test('events past the depth or linked-id bounds are refused with 400 naming the event and field; nothing is stored', async () => {
  const cases: { name: string; body: string; field: RegExp }[] = [
    { name: '$set nested 200 levels', body: `[{"api_key":"${TOKEN}","event":"ok","distinct_id":"u"},{"api_key":"${TOKEN}","event":"$set","distinct_id":"u","properties":{"$set":${deepJson(200)}}}]`, field: /^event 1 \("\$set"\): properties nests deeper than 128 levels$/ },
    { name: 'top-level $set_once nested 128 levels', body: `{"api_key":"${TOKEN}","event":"x","distinct_id":"u","$set_once":${deepJson(128)}}`, field: /^event 0 \("x"\): \$set_once nests deeper than 127 levels$/ },
    { name: '$identify with a 2,300-char $anon_distinct_id', body: JSON.stringify({ api_key: TOKEN, event: '$identify', distinct_id: 'u', properties: { $anon_distinct_id: 'a'.repeat(2_300) } }), field: /properties\.\$anon_distinct_id is longer than 200 characters/ },
    { name: '$create_alias with a 201-char alias', body: JSON.stringify({ api_key: TOKEN, event: '$create_alias', distinct_id: 'u', properties: { alias: 'b'.repeat(201) } }), field: /properties\.alias is longer than 200 characters/ },
  ];
  for (const c of cases) {
    const { s, stored } = store();
    const r = await handleCapture('/batch/', '', JSON_HEADERS, Buffer.from(c.body), s, NOW);
    assert.equal(r.status, 400, c.name);
    const body = r.body as { code: string; detail: string };
    assert.equal(body.code, 'invalid_payload', c.name);
    assert.match(body.detail, c.field, c.name);
    assert.equal(stored.length, 0, c.name);
  }
  // The bounds themselves are accepted.
  const { s, stored } = store();
  const ok = await handleCapture('/batch/', '', JSON_HEADERS, Buffer.from(`{"api_key":"${TOKEN}","event":"$identify","distinct_id":"u","properties":{"$anon_distinct_id":"${'a'.repeat(200)}","deep":${deepJson(127)}}}`), s, NOW);
  assert.equal(ok.status, 200);
  assert.equal(stored.length, 1);
});

test('NUL and lone surrogates are replaced by U+FFFD in accepted events (Postgres cannot store them)', async () => {
  const { s, stored } = store();
  const body = `{"api_key":"${TOKEN}","event":"n\\u0000ame","distinct_id":"u\\ud800","properties":{"k\\u0000":"v\\udc00x","ok":"\\ud83d\\ude00","__proto__":{"polluted":true}}}`;
  const r = await handleCapture('/e/', '', JSON_HEADERS, Buffer.from(body), s, NOW);
  assert.equal(r.status, 200);
  const e = stored[0]![0]!;
  assert.equal(e.event, 'n\uFFFDame');
  assert.equal(e.distinct_id, 'u\uFFFD');
  assert.deepEqual(Object.keys(e.properties).sort(), ['__proto__', 'k\uFFFD', 'ok']);
  assert.equal(e.properties['k\uFFFD'], 'v\uFFFDx');
  assert.equal(e.properties.ok, '\u{1F600}', 'paired surrogates are kept');
  assert.equal(({} as Record<string, unknown>).polluted, undefined);
});

test('bodies nested past 256 levels are refused before parsing; decoded bodies are capped (413)', async () => {
  const zlib = await import('node:zlib');
  const { s, stored } = store();
  const deep = await handleCapture('/e/', '', JSON_HEADERS, Buffer.from(`{"api_key":"${TOKEN}","event":"x","distinct_id":"u","properties":{"$set":${deepJson(1_250)}}}`), s, NOW);
  assert.equal(deep.status, 400);
  assert.match((deep.body as { detail: string }).detail, /nests deeper than 256 levels/);
  const brackets = await handleCapture('/e/', '', JSON_HEADERS, zlib.gzipSync(Buffer.from('['.repeat(20_000_000))), s, NOW);
  assert.equal(brackets.status, 400, 'a gzip of 20 M brackets is refused by the depth scan');
  // 64 KiB of gzip inflating past the cap: 413 before any JSON work.
  const bomb = zlib.gzipSync(Buffer.alloc(8 * 1024 * 1024, 0x20));
  const r = await handleCapture('/e/', '', JSON_HEADERS, bomb, s, NOW, 1024 * 1024);
  assert.equal(r.status, 413);
  assert.equal((r.body as { code: string }).code, 'payload_too_large');
  assert.equal(stored.length, 0);
});

test('legacy /engage person updates are stored as $identify with their $distinct_id; /s is a capture path', async () => {
  const { s, stored } = store();
  const engage = { $token: TOKEN, $distinct_id: 'legacy-user', $set: { plan: 'pro' } };
  const r = await handleCapture('/engage/', '', JSON_HEADERS, json(engage), s, NOW);
  assert.equal(r.status, 200, JSON.stringify(r.body));
  const e = stored[0]![0]!;
  assert.equal(e.event, '$identify');
  assert.equal(e.distinct_id, 'legacy-user');
  assert.deepEqual(e.$set, { plan: 'pro' });
  // The same body on /e/ has no event name: refused there.
  assert.equal((await handleCapture('/e/', '', JSON_HEADERS, json(engage), s, NOW)).status, 400);
  assert.equal((await handleCapture('/s/', '', JSON_HEADERS, json({ ...one, event: '$snapshot' }), s, NOW)).status, 200);
});

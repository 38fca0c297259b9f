/**
 * Through a real node over HTTP: small compressed bodies that used to expand into
 * seconds of work (20 M `[`, 20 M `NaN`, a gzip bomb) are refused with 400 or 413 before
 * parsing, and `NaN` in a normal body still reads as null (Rust's json5).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import zlib from 'node:zlib';
import { PROJECT_TOKEN, request, startTestNode } from './fixture.js';

const gz = (s: string | Buffer) => zlib.gzipSync(typeof s === 'string' ? Buffer.from(s) : s, { level: 9 });

test('/flags refuses amplifying bodies before parsing them, and still reads NaN as null', async () => {
  const node = await startTestNode({ config: { maxFlagsBodyBytes: 1024 * 1024 } });
  try {
    const post = (body: Buffer, headers: Record<string, string> = {}) =>
      request(`${node.url}/flags/?v=2`, { method: 'POST', body, headers: { 'content-type': 'application/json', ...headers } });

    const brackets = gz('['.repeat(20_000_000));
    assert.ok(brackets.length < 64 * 1024);
    const r1 = await post(brackets, { 'content-encoding': 'gzip' });
    assert.equal(r1.status, 413, r1.text);
    assert.equal(r1.json().code, 'payload_too_large');

    const nan = gz(`{"api_key":"${PROJECT_TOKEN}","distinct_id":"u","person_properties":{"x":[${'NaN,'.repeat(4_000_000)}1]}}`);
    const r2 = await post(nan);
    assert.equal(r2.status, 413, r2.text);

    const deep = Buffer.from(`{"api_key":"${PROJECT_TOKEN}","distinct_id":"u","person_properties":{"x":${'['.repeat(300)}1${']'.repeat(300)}}}`);
    const r3 = await post(deep);
    assert.equal(r3.status, 400, r3.text);
    assert.match(r3.json().detail, /nests deeper than 256 levels/);

    const ok = await post(Buffer.from(`{"api_key":"${PROJECT_TOKEN}","distinct_id":"u","person_properties":{"email":NaN,"n":-Infinity}}`));
    assert.equal(ok.status, 200, ok.text);
    assert.equal(ok.json().flags['always-on'].enabled, true);
  } finally {
    await node.close();
  }
});

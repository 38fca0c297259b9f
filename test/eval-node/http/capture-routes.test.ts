/** Capture paths on the node's uWS server: the plugged-in handler gets path, query, headers and body. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { IncomingHttpHeaders } from 'node:http';
import { startTestNode, request } from './fixture.js';

test('capture routes pass requests to the capture handler; 413 over the limit; 404 without a handler', async () => {
  const seen: { path: string; query: string; headers: IncomingHttpHeaders; body: string }[] = [];
  const node = await startTestNode({
    config: { maxPublicBodyBytes: 4096 },
    capture: async (path, query, headers, body) => {
      seen.push({ path, query, headers, body: body.toString() });
      if (path.startsWith('/boom')) throw new Error('boom');
      return { status: 200, body: { status: 1 } };
    },
  });
  const bare = await startTestNode();
  try {
    for (const path of ['/i/v0/e/', '/e', '/capture/', '/batch/', '/track']) {
      const r = await request(`${node.url}${path}?compression=gzip-js&_=1`, { method: 'POST', body: '{"event":"x"}', headers: { 'content-type': 'application/json' } });
      assert.equal(r.status, 200, path);
      assert.deepEqual(r.json(), { status: 1 });
      const last = seen.at(-1)!;
      assert.equal(last.path, path);
      assert.equal(last.query, 'compression=gzip-js&_=1');
      assert.equal(last.headers['content-type'], 'application/json');
      assert.equal(last.body, '{"event":"x"}');
    }
    const get = await request(`${node.url}/e/?data=abc`);
    assert.equal(get.status, 200);
    assert.equal(seen.at(-1)!.query, 'data=abc');
    const big = await request(`${node.url}/batch/`, { method: 'POST', body: 'x'.repeat(5000), headers: { 'content-type': 'application/json' } });
    assert.equal(big.status, 413);
    assert.equal((await request(`${bare.url}/batch/`, { method: 'POST', body: '{}' })).status, 404);
  } finally {
    await node.close();
    await bare.close();
  }
});

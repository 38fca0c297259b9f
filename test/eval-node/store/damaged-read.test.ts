/**
 * A stored entity whose bytes were damaged under a running node
 * (scattered corruption) must not leave the node answering 500s while it reports ready. Real
 * LMDB file (edited in place; the map shares the page cache), real HTTP.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { PROJECT_TOKEN, request, standardFlags, startTestNode, worldChanges } from '../http/fixture.js';

const MARKER = 'ZZmarker-of-this-testZZ';

test('an entity that no longer decodes counts a read error and makes /_ready 503', async () => {
  const person = { id: 'p-1', project_id: 1, distinct_ids: ['damaged-user'], properties: { note: MARKER } };
  const node = await startTestNode({ changes: [...worldChanges(standardFlags()), { kind: 'person', entityId: 'p-1', projectId: 1, op: 'upsert', payload: person }] });
  try {
    assert.equal((await request(`${node.url}/_ready`)).status, 200);
    const body = JSON.stringify({ api_key: PROJECT_TOKEN, distinct_id: 'damaged-user' });
    const ok = await request(`${node.url}/flags/?v=2`, { method: 'POST', body, headers: { 'content-type': 'application/json' } });
    assert.equal(ok.status, 200, ok.text);

    // Replace the marker string's msgpack header with 0xc1, the tag msgpack never uses.
    const file = path.join(node.dir, 'lmdb', 'data.mdb');
    const bytes = fs.readFileSync(file);
    const at = bytes.indexOf(Buffer.from(MARKER));
    assert.ok(at > 0, 'the person is in data.mdb');
    const fd = fs.openSync(file, 'r+');
    fs.writeSync(fd, Buffer.from([0xc1]), 0, 1, at - 1);
    fs.closeSync(fd);

    const bad = await request(`${node.url}/flags/?v=2`, { method: 'POST', body, headers: { 'content-type': 'application/json' } });
    assert.equal(bad.status, 500, bad.text);
    assert.equal(node.store.readErrors(), 1);
    const ready = await request(`${node.url}/_ready`);
    assert.equal(ready.status, 503);
    assert.equal(ready.json().status, 'store_damaged');
    assert.match((await request(`${node.url}/metrics`)).text, /^switchyard_node_store_read_errors_total 1$/m);
  } finally {
    await node.close();
  }
});

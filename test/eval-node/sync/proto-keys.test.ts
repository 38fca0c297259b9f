/**
 * A `__proto__` key (msgpackr renames it `__proto_` when it unpacks into an
 * object) survives control plane → gRPC → LMDB → `/flags`: as a person property a condition
 * matches on, as a variant key and as a payload key; and no prototype is polluted on the way.
 * Real Postgres, real gRPC Watch, real LMDB, real HTTP.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { appendChanges } from '../../../src/control-plane/change-log/store.js';
import { createLogger } from '../../../src/log.js';
import { startNodeHttp } from '../../../src/eval-node/http/server.js';
import { nodeStorePath } from '../../../src/eval-node/node.js';
import { seedFlag, seedOrganization, seedProject } from '../../support/seed.js';
import { syncFixture, waitForHead } from '../../support/sync.js';
import { request } from '../http/fixture.js';

test('__proto__ as a person property, variant key and payload key survives sync and evaluation', async () => {
  const fx = await syncFixture();
  try {
    const { sql } = fx.db;
    const org = await seedOrganization(sql);
    const p = await seedProject(sql, org);
    // JSON.parse makes `__proto__` an own key (an object literal would set the prototype).
    const filters = JSON.parse(`{
      "groups": [{"properties": [{"key": "__proto__", "type": "person", "operator": "exact", "value": ["yes"]}], "rollout_percentage": 100}],
      "multivariate": {"variants": [{"key": "__proto__", "rollout_percentage": 100}]},
      "payloads": {"__proto__": "{\\"polluted\\": true}"}
    }`) as Record<string, unknown>;
    await seedFlag(sql, p.id, 'proto-flag', filters);
    await fx.startServer();
    const node = await fx.startNode();
    await waitForHead(fx.db, node.store);
    // After the snapshot, so it travels as a tail change (snapshots read the person tables).
    const person = '00000000-0000-4000-8000-0000000000aa';
    await sql.begin((tx) => appendChanges(tx, [{
      projectId: p.id, kind: 'person', entityId: person, op: 'upsert',
      payload: { id: person, project_id: p.id, distinct_ids: ['user-1'], properties: JSON.parse('{"__proto__": "yes", "plan": "pro"}') },
    }]));
    await waitForHead(fx.db, node.store);

    const stored = node.store.personByDistinctId(p.id, 'user-1')!;
    assert.deepEqual(Object.keys(stored.properties).sort(), ['__proto__', 'plan']);
    assert.equal(Object.getPrototypeOf(stored.properties), Object.prototype);
    const storedFlag = node.store.definitions(p.id).flags.find((f) => f.key === 'proto-flag')!;
    assert.deepEqual(Object.keys((storedFlag.filters as { payloads: object }).payloads), ['__proto__']);

    const http = await startNodeHttp({ config: { ...fx.config, flagsPort: 0 }, log: createLogger('silent'), store: node.store, storePath: nodeStorePath(fx.config) });
    try {
      const res = await request(`${http.url}/flags/?v=2`, {
        method: 'POST', headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ api_key: p.token, distinct_id: 'user-1' }),
      });
      assert.equal(res.status, 200, res.text);
      const f = res.json().flags['proto-flag'];
      assert.equal(f.enabled, true, res.text);
      assert.equal(f.variant, '__proto__');
      assert.equal(f.metadata.payload, '{"polluted": true}');
    } finally {
      await http.close();
    }
    assert.equal(({} as Record<string, unknown>).polluted, undefined, 'Object.prototype untouched');
  } finally {
    await fx.close();
  }
});

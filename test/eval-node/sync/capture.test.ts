/**
 * Capture-owned state on the node: persons (with merges), groups and hash-key overrides written
 * by the real ingestion service reach a node through the snapshot and through the tail, and
 * never disturb the compiled-definitions revision.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import { ingestEvents } from '../../../src/control-plane/ingestion/service.js';
import { writeHashKeyOverrides } from '../../../src/control-plane/ingestion/hash-key-overrides.js';
import type { Sql } from '../../../src/control-plane/db/connect.js';
import { seedFlag, seedOrganization, seedProject } from '../../support/seed.js';
import { assertStoreMatchesTables, syncFixture, waitForHead } from '../../support/sync.js';

function event(projectId: number, name: string, distinctId: string, properties: Record<string, unknown> = {}) {
  return { uuid: crypto.randomUUID(), project_id: projectId, event: name, distinct_id: distinctId, properties, timestamp: new Date().toISOString() };
}

async function ingest(sql: Sql, events: unknown[]): Promise<void> {
  const r = await ingestEvents(sql, events);
  assert.equal(r.invalid, 0);
}

test('persons, merges, groups and overrides reach a node by snapshot and by tail', async () => {
  const fx = await syncFixture();
  try {
    const { sql } = fx.db;
    const org = await seedOrganization(sql);
    const { id: pid } = await seedProject(sql, org);
    await seedFlag(sql, pid, 'continuity');
    await ingest(sql, [
      event(pid, 'pageview', 'anon-1', { $set: { seen: true } }),
      event(pid, '$identify', 'user-a', { $set: { plan: 'pro' } }),
      event(pid, '$groupidentify', 'user-a', { $group_type: 'company', $group_key: 'acme', $group_set: { size: 5 } }),
    ]);
    await writeHashKeyOverrides(sql, pid, ['user-a'], ['continuity'], 'anon-1');

    await fx.startServer();
    const node = await fx.startNode();
    await waitForHead(fx.db, node.store);
    await assertStoreMatchesTables(fx.db, node.store);
    assert.equal(node.store.personByDistinctId(pid, 'user-a')?.properties.plan, 'pro');
    assert.equal(node.store.group(pid, 0, 'acme')?.properties.size, 5);
    const defsRevision = node.store.definitions(pid).revision;

    // Tail: a merge ($identify with $anon_distinct_id), property updates, a new group.
    await ingest(sql, [
      event(pid, '$identify', 'user-a', { $anon_distinct_id: 'anon-1', $set: { plan: 'enterprise' } }),
      event(pid, '$groupidentify', 'user-a', { $group_type: 'company', $group_key: 'globex', $group_set: { size: 9 } }),
    ]);
    await waitForHead(fx.db, node.store);
    await assertStoreMatchesTables(fx.db, node.store);
    const a = node.store.personByDistinctId(pid, 'user-a');
    assert.equal(node.store.personByDistinctId(pid, 'anon-1')?.id, a?.id, 'merged persons share one entity');
    assert.equal(a?.properties.plan, 'enterprise');
    assert.equal(node.store.definitions(pid).revision, defsRevision, 'capture changes leave definitions alone');
  } finally {
    await fx.close();
  }
});

/**
 * A static cohort uploaded through the management API (multipart
 * CSV) reaches a real node over gRPC with its members, and `/flags` matches it — members get the
 * flag, others do not, whatever person properties the request sends — and a later upload is
 * served without a restart. Persons come from the real ingestion.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import { waitFor } from '../support/wait.js';
import { ingestEvents } from '../../src/control-plane/ingestion/service.js';
import { createFlag, flags, startCluster, waitReady } from './support.js';

test('a static cohort uploaded as CSV is matched on /flags by a node, and a second upload reaches it', async () => {
  const c = await startCluster();
  try {
    const t = c.t;
    const people = Array.from({ length: 12 }, (_, i) => `static-${i}`);
    await ingestEvents(t.db.sql, people.map((d) => ({
      uuid: crypto.randomUUID(), project_id: t.projectId, event: '$identify', distinct_id: d, properties: { $set: { plan: 'free' } }, timestamp: new Date().toISOString(),
    })));
    const form = new FormData();
    form.set('name', 'Beta');
    form.set('is_static', 'true');
    form.set('csv', new Blob([`${people.slice(0, 5).join('\n')}\n`], { type: 'text/csv' }), 'beta.csv');
    const res = await fetch(`${t.baseUrl}/api/projects/${t.projectId}/cohorts/`, { method: 'POST', headers: { authorization: `Bearer ${t.personalKey}` }, body: form });
    assert.equal(res.status, 201);
    const cohort = await res.json() as { id: number; count: number };
    assert.equal(cohort.count, 5);
    await createFlag(c, { key: 'beta-only', filters: { groups: [{ properties: [{ key: 'id', type: 'cohort', value: cohort.id }], rollout_percentage: 100 }] } });

    const node = await c.startNode(c.tempDir());
    await waitReady(node.http.url);
    const served = async (d: string) => {
      const r = await flags(node.http.url, t.projectKey, d, { person_properties: { plan: 'free' } });
      assert.equal(r.status, 200, r.text);
      return r.body.flags['beta-only']?.enabled as boolean | undefined;
    };
    await waitFor('the node serves beta-only', async () => (await served(people[0]!)) === true, { timeoutMs: 30_000 });
    for (const [i, d] of people.entries()) assert.equal(await served(d), i < 5, d);
    assert.equal(await served('never-seen'), false);

    const more = new FormData();
    more.set('csv', new Blob([`${people[9]}\n`], { type: 'text/csv' }), 'more.csv');
    const patched = await fetch(`${t.baseUrl}/api/projects/${t.projectId}/cohorts/${cohort.id}/`, { method: 'PATCH', headers: { authorization: `Bearer ${t.personalKey}` }, body: more });
    assert.equal(patched.status, 200);
    await waitFor('the node serves the new member', async () => (await served(people[9]!)) === true, { timeoutMs: 30_000 });
    assert.equal(await served(people[8]!), false);
  } finally {
    await c.close();
  }
});

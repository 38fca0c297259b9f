/**
 * The whole path a definition change takes: Postgres row + change log → gRPC Watch → node
 * LMDB store → HTTP /flags answer, on the IO thread and in the worker pool (workers read the
 * store's environment read-only).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startNodeHttp } from '../../src/eval-node/http/server.js';
import { createLogger } from '../../src/log.js';
import { seedFlag, seedOrganization, seedProject, updateFlag } from '../support/seed.js';
import { syncFixture, waitForHead } from '../support/sync.js';
import { waitFor } from '../support/wait.js';

async function flagsFor(url: string, token: string): Promise<Record<string, { enabled: boolean }>> {
  const res = await fetch(`${url}/flags?v=2`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ api_key: token, distinct_id: 'u1' }) });
  assert.equal(res.status, 200);
  return ((await res.json()) as { flags: Record<string, { enabled: boolean }> }).flags;
}

for (const evalThreads of [0, 1]) {
  test(`a flag change reaches /flags answers (${evalThreads === 0 ? 'IO thread' : 'worker pool'})`, async () => {
    const fx = await syncFixture();
    let http: Awaited<ReturnType<typeof startNodeHttp>> | null = null;
    try {
      const org = await seedOrganization(fx.db.sql);
      const project = await seedProject(fx.db.sql, org);
      const id = await seedFlag(fx.db.sql, project.id, 'rollout');
      await fx.startServer();
      const node = await fx.startNode();
      await waitForHead(fx.db, node.store);
      http = await startNodeHttp({ config: { ...fx.config, evalThreads, flagsPort: 0 }, log: createLogger('silent'), store: node.store, sync: node.sync });
      assert.equal((await flagsFor(http.url, project.token)).rollout?.enabled, true);

      await updateFlag(fx.db.sql, id, { active: false });
      await waitFor('flag off in /flags', async () => (await flagsFor(http!.url, project.token)).rollout?.enabled !== true);
      await seedFlag(fx.db.sql, project.id, 'second');
      await waitFor('new flag in /flags', async () => (await flagsFor(http!.url, project.token)).second?.enabled === true);
    } finally {
      await http?.close();
      await fx.close();
    }
  });
}

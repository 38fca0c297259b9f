/**
 * As a system: a personal API key revoked through PostHog's
 * `DELETE /api/personal_api_keys/:id/`, or withdrawn by `switchyard users deactivate`, stops
 * working on the control plane and, through the change log, on an evaluation node's
 * `/flags/definitions`. Real control plane, Postgres, gRPC Watch, node and CLI process.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createPersonalApiKey } from '../../src/control-plane/keys/store.js';
import { waitFor } from '../support/wait.js';
import { runCli } from '../support/cli.js';
import { startCluster, waitReady, type SystemCluster } from './support.js';


async function definitionsStatus(c: SystemCluster, nodeUrl: string, key: string): Promise<number> {
  const res = await fetch(`${nodeUrl}/flags/definitions?token=${c.t.projectKey}`, { headers: { authorization: `Bearer ${key}` } });
  await res.arrayBuffer();
  return res.status;
}

test('a revoked key and a deactivated user\'s key stop working on the control plane and on nodes', async () => {
  const c = await startCluster();
  try {
    const node = await c.startNode(c.tempDir());
    await waitReady(node.http.url);
    const revoked = await c.t.createKey(['feature_flag:read']);
    await waitFor('the new key works on the node', async () => (await definitionsStatus(c, node.http.url, revoked)) === 200);

    // PostHog's endpoints, as the key's own user.
    const list = await c.t.request('GET', '/api/personal_api_keys/');
    assert.equal(list.status, 200, list.text);
    const listed = (list.body as { id: string; mask_value: string; scopes: string[] }[]).find((k) => k.mask_value === `${revoked.slice(0, 4)}...${revoked.slice(-4)}`)!;
    assert.deepEqual(listed.scopes, ['feature_flag:read']);
    assert.equal(JSON.stringify(list.body).includes(revoked), false, 'values are never listed');
    const del = await c.t.request('DELETE', `/api/personal_api_keys/${listed.id}/`);
    assert.equal(del.status, 204, del.text);
    assert.equal((await c.t.request('DELETE', `/api/personal_api_keys/${listed.id}/`)).status, 404);
    assert.equal((await c.t.request('GET', `/api/projects/${c.t.projectId}/feature_flags/`, { key: revoked })).status, 401);
    await waitFor('the revoked key refused by the node', async () => (await definitionsStatus(c, node.http.url, revoked)) === 401);

    // A second user of the organization, deactivated from the command line.
    const [user] = await c.t.db.sql<{ id: number }[]>`INSERT INTO users (organization_id, distinct_id, email)
      VALUES (${c.t.organizationId}, 'second-user', 'second@example.com') RETURNING id`;
    const theirs = (await createPersonalApiKey(c.t.db.sql, { userId: Number(user!.id), label: 'theirs', scopes: ['feature_flag:read'] })).value;
    await waitFor('their key works on the node', async () => (await definitionsStatus(c, node.http.url, theirs)) === 200);
    const env = { ...process.env, DATABASE_URL: c.t.db.url, SWITCHYARD_LOG_LEVEL: 'silent' };
    const cli = await runCli(['users', 'deactivate', 'second@example.com'], { env });
    assert.equal(cli.code, 0, cli.stderr);
    assert.match(cli.stdout, /deactivated user \d+; 1 personal API key\(s\) withdrawn/);
    assert.equal((await c.t.request('GET', '/api/projects/', { key: theirs })).status, 401);
    await waitFor('their key refused by the node', async () => (await definitionsStatus(c, node.http.url, theirs)) === 401);

    // keys list / revoke from the command line.
    const third = await c.t.createKey(['feature_flag:read']);
    const listed2 = await runCli(['keys', 'list'], { env });
    assert.equal(listed2.code, 0, listed2.stderr);
    assert.ok(listed2.stdout.includes(`${third.slice(0, 4)}...${third.slice(-4)}`));
    const rev = await runCli(['keys', 'revoke', third], { env });
    assert.equal(rev.code, 0, rev.stderr);
    assert.equal((await c.t.request('GET', '/api/projects/', { key: third })).status, 401);
  } finally {
    await c.close();
  }
});

/**
 * A node whose LMDB store was damaged while it was stopped (zeroed meta pages:
 * SIGSEGV at open; a truncated data.mdb: SIGBUS; garbage scattered over its pages: failed
 * reads) starts anyway: it logs that it moved the store aside, rebuilds it from the control
 * plane and answers /flags as before. Real control plane, real `switchyard eval-node` child
 * processes, real files; and the rebuilt store's files are private (0700 dir, 0600 files).
 * The sound store the damage is applied to is built by an in-process node on the same data dir
 * (it gives the answers expected after each rebuild); every start on a damaged or rebuilt store
 * is a child process.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { prng } from '../support/prng.js';
import { flags, spawnNode, startCluster, waitReady, type NodeProcess, type SystemCluster } from './support.js';

const USERS = Array.from({ length: 20 }, (_, i) => `user-${i}`);
const PAGE = 4096;
/**
 * The child nodes' environment: the info log (where the move is told), one IO thread (the
 * store is checked, moved aside and rebuilt by the main thread before any IO thread opens it) and
 * no drain on SIGTERM (the 5 s of `/_ready` 503 for load balancers are no part of this test).
 */
const CHILD_ENV = { SWITCHYARD_LOG_LEVEL: 'info', SWITCHYARD_IO_THREADS: '1', SWITCHYARD_DRAIN_SECONDS: '0' };

async function answers(c: SystemCluster, url: string): Promise<string[]> {
  const out: string[] = [];
  for (const u of USERS) {
    const r = await flags(url, c.t.projectKey, u);
    assert.equal(r.status, 200, r.text);
    out.push(JSON.stringify(Object.entries(r.body.flags as Record<string, { enabled: boolean; variant: string | null }>)
      .map(([k, f]) => [k, f.enabled, f.variant]).sort()));
  }
  return out;
}

/** The ways a stopped node's store is damaged, each applied to `<dataDir>/lmdb/data.mdb`. */
const DAMAGE: Record<string, (file: string) => void> = {
  'zeroed meta pages': (file) => {
    const fd = fs.openSync(file, 'r+');
    fs.writeSync(fd, Buffer.alloc(2 * PAGE), 0, 2 * PAGE, 0);
    fs.closeSync(fd);
  },
  'truncated data.mdb': (file) => { fs.truncateSync(file, Math.floor(fs.statSync(file).size / 2)); },
  'garbage scattered over every data page': (file) => {
    const rand = prng(8);
    const size = fs.statSync(file).size;
    const fd = fs.openSync(file, 'r+');
    for (let page = 2; page * PAGE < size; page++) {
      const junk = Buffer.from(Array.from({ length: 512 }, () => Math.floor(rand() * 256)));
      fs.writeSync(fd, junk, 0, junk.length, page * PAGE + 16);
    }
    fs.closeSync(fd);
  },
};

test('a node with a damaged store moves it aside, rebuilds it from the control plane and answers as before', async () => {
  const c = await startCluster();
  try {
    for (const body of [
      { key: 'cs-all', filters: { groups: [{ properties: [], rollout_percentage: 100 }] } },
      { key: 'cs-half', filters: { groups: [{ properties: [], rollout_percentage: 50 }] } },
      { key: 'cs-mv', filters: { groups: [{ properties: [], rollout_percentage: 100 }], multivariate: { variants: [{ key: 'a', rollout_percentage: 50 }, { key: 'b', rollout_percentage: 50 }] } } },
    ]) {
      const r = await c.t.request('POST', `/api/projects/${c.t.projectId}/feature_flags/`, { body });
      assert.equal(r.status, 201, r.text);
    }
    const dataDir = c.tempDir();
    const store = path.join(dataDir, 'lmdb');
    const builder = await c.startNode(dataDir);
    let before: string[];
    try {
      await waitReady(builder.http.url);
      before = await answers(c, builder.http.url);
    } finally {
      await builder.close();
    }
    let node: NodeProcess;

    for (const [name, damage] of Object.entries(DAMAGE)) {
      damage(path.join(store, 'data.mdb'));
      node = await spawnNode(c, dataDir, undefined, CHILD_ENV);
      try {
        await waitReady(node.url);
        assert.match(node.output(), /node store is damaged; moved it aside/, `${name}: the move is logged`);
        assert.deepEqual(await answers(c, node.url), before, `${name}: same answers after the rebuild`);
        assert.equal(fs.statSync(store).mode & 0o777, 0o700, 'store directory is private');
        assert.equal(fs.statSync(path.join(store, 'data.mdb')).mode & 0o777, 0o600, 'data.mdb is private');
        assert.equal(fs.statSync(path.join(store, 'lock.mdb')).mode & 0o777, 0o600, 'lock.mdb is private');
      } finally {
        await node.kill();
      }
    }
    assert.equal(fs.readdirSync(dataDir).filter((d) => d.startsWith('lmdb.corrupt-')).length, Object.keys(DAMAGE).length);

    // A sound store is not moved: the next start keeps it.
    node = await spawnNode(c, dataDir, undefined, CHILD_ENV);
    try {
      await waitReady(node.url);
      assert.doesNotMatch(node.output(), /moved it aside/);
    } finally {
      await node.kill();
    }
  } finally {
    await c.close();
  }
});

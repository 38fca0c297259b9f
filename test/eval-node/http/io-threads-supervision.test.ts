/**
 * IO-thread supervision (http/io-threads.ts): a thread hit by an uncaught error closes its
 * sockets and ends without taking the process down, the main thread starts a new one on the same
 * port. (Connections the kernel had already queued on the
 * dying thread's socket are reset, as for any closed SO_REUSEPORT listener: clients retry.)
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { testConfig } from '../../../src/config.js';
import { createLogger } from '../../../src/log.js';
import { openNodeStore } from '../../../src/eval-node/store/lmdb.js';
import { startIoThreads } from '../../../src/eval-node/http/io-threads.js';
import { waitFor } from '../../support/wait.js';
import { onNewConnection } from '../../support/http.js';

test('a crashed IO thread is replaced on the same port while the other keeps answering', async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'switchyard-io-supervision-'));
  const store = openNodeStore(path.join(dir, 'lmdb'));
  const config = testConfig({ dataDir: dir });
  const node = await startIoThreads({ config, log: createLogger('silent'), store, storePath: path.join(dir, 'lmdb'), threads: 2, testHooks: true });
  try {
    for (let i = 0; i < 10; i++) assert.equal((await onNewConnection(`${node.url}/_health`)).status, 200);
    await node.crashForTest(0);
    const during: number[] = [];
    await waitFor('the crashed thread is replaced', async () => {
      during.push(await onNewConnection(`${node.url}/_health`).then((r) => r.status, () => 0));
      return node.restarts() === 1;
    }, { timeoutMs: 20_000, intervalMs: 20 });
    assert.ok(during.every((st) => st === 200 || st === 0), `answered or reset, nothing else: ${during.join(',')}`);
    for (let i = 0; i < 20; i++) assert.equal((await onNewConnection(`${node.url}/_health`)).status, 200, 'every connection answered after the replacement');
    await waitFor('both threads answer again', async () => {
      for (let i = 0; i < 10; i++) await onNewConnection(`${node.url}/_health`);
      const text = (await onNewConnection(`${node.url}/metrics`)).text;
      const threads = text.split('\n').filter((l) => l.startsWith('switchyard_node_io_thread_requests_total{') && Number(l.split(' ').pop()) > 0);
      return threads.length === 2;
    }, { timeoutMs: 20_000 });
  } finally {
    await node.close();
    await store.close();
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

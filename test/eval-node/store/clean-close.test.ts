/**
 * The clean-close record of a node's LMDB environments (store/clean-close.ts): a writer's clean
 * close leaves it, the next check takes it once, and any write to `data.mdb` after the close
 * (even at once, within the kernel clock's tick) voids it, so the child-process read still finds
 * damage done at rest. Real LMDB stores and outboxes in temporary directories.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { openNodeStore } from '../../../src/eval-node/store/lmdb.js';
import { CLEAN_CLOSE_FILE, takeCleanClose } from '../../../src/eval-node/store/clean-close.js';
import { checkEnvironment } from '../../../src/eval-node/store/integrity.js';
import { Outbox } from '../../../src/eval-node/capture/outbox.js';

/** Runs `fn` with a new temporary directory (`<root>/lmdb` is where its store goes), removed after. */
async function inTemp(fn: (dir: string, root: string) => Promise<void>): Promise<void> {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'switchyard-clean-close-'));
  try {
    await fn(path.join(root, 'lmdb'), root);
  } finally {
    fs.rmSync(root, { recursive: true, force: true });
  }
}

/** Overwrites 512 bytes inside every page after the two meta pages with a fixed pattern (the file keeps its size). */
function scatterGarbage(file: string, pageSize = 4096): void {
  const size = fs.statSync(file).size;
  const fd = fs.openSync(file, 'r+');
  const junk = Buffer.alloc(512, 0xa5);
  for (let page = 2; page * pageSize < size; page++) fs.writeSync(fd, junk, 0, junk.length, page * pageSize + 16);
  fs.closeSync(fd);
}

test('a store closed by its writer is recorded; the record is taken once', () => inTemp(async (dir) => {
  const store = openNodeStore(dir);
  await store.close();
  assert.ok(fs.existsSync(path.join(dir, CLEAN_CLOSE_FILE)), 'the clean close is recorded');
  assert.equal(fs.statSync(path.join(dir, CLEAN_CLOSE_FILE)).mode & 0o777, 0o600);
  assert.equal(await checkEnvironment(dir), null, 'the cleanly closed store is sound');
  assert.ok(!fs.existsSync(path.join(dir, CLEAN_CLOSE_FILE)), 'the check took the record');
  assert.equal(takeCleanClose(dir), false, 'nothing vouches for the next run until it closes cleanly too');
}));

test('a read-only handle closing records nothing (only the writer knows the file is complete)', () => inTemp(async (dir) => {
  const writer = openNodeStore(dir);
  const reader = openNodeStore(dir, { readOnly: true });
  await reader.close();
  assert.ok(!fs.existsSync(path.join(dir, CLEAN_CLOSE_FILE)));
  await writer.close();
  assert.ok(fs.existsSync(path.join(dir, CLEAN_CLOSE_FILE)));
}));

test('damage written right after a clean close voids the record, and the probe finds it', () => inTemp(async (dir, root) => {
  const store = openNodeStore(dir);
  await store.close();
  scatterGarbage(path.join(dir, 'data.mdb')); // at once: the same size, a new modification time
  assert.equal(takeCleanClose(dir), false, 'the file is no longer as the close left it');
  const again = path.join(root, 'lmdb-2'); // the same, through checkEnvironment
  await openNodeStore(again).close();
  scatterGarbage(path.join(again, 'data.mdb'));
  const reason = await checkEnvironment(again);
  assert.ok(reason !== null, 'the child-process read ran and failed');
}));

test('a file put in the store\'s place, or a record that does not parse, vouches for nothing', () => inTemp(async (dir) => {
  await openNodeStore(dir).close();
  const file = path.join(dir, 'data.mdb');
  const copy = `${file}.copy`;
  fs.copyFileSync(file, copy);
  fs.renameSync(copy, file); // the same bytes, another inode
  assert.equal(takeCleanClose(dir), false);
  fs.writeFileSync(path.join(dir, CLEAN_CLOSE_FILE), '{not json');
  assert.equal(takeCleanClose(dir), false);
  assert.ok(!fs.existsSync(path.join(dir, CLEAN_CLOSE_FILE)), 'taken even when it does not parse');
}));

test('an outbox in its own environment records its clean close; one inside another environment does not', () => inTemp(async (_dir, root) => {
  const own = path.join(root, 'capture-outbox');
  const outbox = Outbox.open({ path: own, maxBytes: 1024 * 1024 });
  await outbox.appendPacked(Outbox.pack([{ uuid: '00000000-0000-4000-8000-000000000001', event: 'e', distinct_id: 'd', properties: {}, project_id: 1, timestamp: new Date(0).toISOString() } as never]));
  await outbox.close();
  assert.ok(takeCleanClose(own), 'the outbox\'s own environment was closed cleanly');
  const storeDir = path.join(root, 'lmdb');
  const store = openNodeStore(storeDir);
  await store.close();
  fs.rmSync(path.join(storeDir, CLEAN_CLOSE_FILE));
  const { open } = await import('lmdb');
  const env = open({ path: storeDir });
  await Outbox.open({ root: env, maxBytes: 1024 * 1024 }).close();
  assert.ok(!fs.existsSync(path.join(storeDir, CLEAN_CLOSE_FILE)), 'the environment\'s owner records its close, not the outbox');
  await env.close();
}));

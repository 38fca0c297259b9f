/**
 * Copies of LMDB environments moved aside after damage are pruned to a bound (store/aside.ts):
 * the newest `keep` stay, older ones go, a copy not yet finished (an outbox whose events are
 * still to be recovered) never goes; and a node store moved aside at open prunes the pile of
 * older copies left beside it (store/recover.ts). Real directories and a real LMDB store.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createLogger } from '../../../src/log.js';
import { listAside, moveAside, pruneAside } from '../../../src/eval-node/store/aside.js';
import { openCheckedStore } from '../../../src/eval-node/store/recover.js';

function tmp(): string {
  return fs.mkdtempSync(path.join(os.tmpdir(), 'switchyard-aside-'));
}

/** Makes `<dir>.corrupt-2024-01-0<i>…` copies, each with one file, oldest first. */
function copies(dir: string, n: number): string[] {
  return Array.from({ length: n }, (_, i) => {
    const copy = `${dir}.corrupt-2024-01-0${i + 1}T00-00-00-000Z`;
    fs.mkdirSync(copy);
    fs.writeFileSync(path.join(copy, 'data.mdb'), 'x');
    return copy;
  });
}

test('pruneAside keeps the newest copies and never deletes an unfinished one', () => {
  const root = tmp();
  try {
    const dir = path.join(root, 'capture-outbox');
    fs.mkdirSync(dir);
    fs.mkdirSync(path.join(root, 'capture-outbox-other.corrupt-2020')); // another environment's copy
    const made = copies(dir, 6);
    assert.deepEqual(listAside(dir), made, 'oldest first');
    const unfinished = made[1]!;
    const gone = pruneAside(dir, 2, (c) => c !== unfinished);
    assert.deepEqual(gone, [made[0], made[2], made[3]]);
    assert.deepEqual(listAside(dir), [unfinished, made[4], made[5]]);
    assert.ok(fs.existsSync(dir), 'the live environment stays');
    assert.ok(fs.existsSync(path.join(root, 'capture-outbox-other.corrupt-2020')), 'another environment\'s copy stays');
    assert.deepEqual(pruneAside(dir, 0, () => true), [unfinished, made[4], made[5]], 'keep 0 deletes every finished copy');
    assert.deepEqual(listAside(dir), []);
  } finally {
    fs.rmSync(root, { recursive: true, force: true });
  }
});

test('moveAside never overwrites an earlier copy', () => {
  const root = tmp();
  try {
    const dir = path.join(root, 'lmdb');
    const moved: string[] = [];
    for (let i = 0; i < 3; i++) {
      fs.mkdirSync(dir);
      fs.writeFileSync(path.join(dir, 'data.mdb'), String(i));
      moved.push(moveAside(dir));
    }
    assert.equal(new Set(moved).size, 3);
    assert.deepEqual(moved.map((m) => fs.readFileSync(path.join(m, 'data.mdb'), 'utf8')).sort(), ['0', '1', '2']);
  } finally {
    fs.rmSync(root, { recursive: true, force: true });
  }
});

test('a damaged node store is moved aside and the copies beside it are pruned to keepMovedAside', async () => {
  const root = tmp();
  try {
    const dir = path.join(root, 'lmdb');
    const old = copies(dir, 6);
    fs.mkdirSync(dir);
    fs.writeFileSync(path.join(dir, 'data.mdb'), Buffer.alloc(3 * 4096, 0xa5)); // no valid meta page
    const store = await openCheckedStore(dir, createLogger('silent'), undefined, { keepMovedAside: 2 });
    await store.close();
    const left = listAside(dir);
    assert.equal(left.length, 2);
    assert.equal(left[0], old[5], 'the newest old copy stays');
    assert.ok(!old.includes(left[1]!), 'and the copy moved aside now');
    assert.equal(fs.readFileSync(path.join(left[1]!, 'data.mdb')).length, 3 * 4096, 'the damaged file was moved, not rewritten');
  } finally {
    fs.rmSync(root, { recursive: true, force: true });
  }
});

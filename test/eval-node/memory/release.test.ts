/**
 * Handing memory back after bulk work against a real LMDB environment and the
 * real kernel: madvise over the file mapping (mapped-pages.ts), and the quiet-after-bulk policy
 * (release.ts). Linux only (elsewhere the release reports `supported: false`, checked too).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { open, type RootDatabase } from 'lmdb';
import { mappedResidentBytes, releaseMappedPages } from '../../../src/eval-node/memory/mapped-pages.js';
import { SETTLE_PASSES, startMemoryRelease } from '../../../src/eval-node/memory/release.js';
import { collectGarbage } from '../../../src/eval-node/memory/gc.js';
import { createLogger } from '../../../src/log.js';
import { waitFor } from '../../support/wait.js';

const linux = process.platform === 'linux';
const MB = 1024 * 1024;

/** An environment with `n` 1 KiB values, every page of it read once (so it is mapped). */
function filledEnvironment(n: number): { root: RootDatabase; file: string; dir: string; readAll(): number } {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'switchyard-mem-'));
  const root = open({ path: dir, mapSize: 256 * MB });
  const db = root.openDB<Buffer, number>({ name: 'values', encoding: 'binary' });
  root.transactionSync(() => { for (let i = 0; i < n; i++) db.put(i, Buffer.alloc(1024, i % 251)); });
  const readAll = () => {
    let sum = 0;
    for (let i = 0; i < n; i++) sum += db.getBinary(i)![100]!;
    return sum;
  };
  readAll();
  return { root, file: path.join(dir, 'data.mdb'), dir, readAll };
}

test('releasing the mapping drops its resident pages; the data reads back unchanged and maps again', { skip: !linux }, async () => {
  const env = filledEnvironment(20_000);
  try {
    const before = mappedResidentBytes([env.file]).get(env.file)!;
    assert.ok(before > 15 * MB, `resident before: ${before}`);
    const expected = env.readAll();
    const r = releaseMappedPages([env.file]);
    assert.equal(r.supported, true);
    assert.ok(r.mappings >= 1 && r.bytes >= before, JSON.stringify(r));
    const after = mappedResidentBytes([env.file]).get(env.file)!;
    assert.ok(after < before / 10, `resident after: ${after} (before ${before})`);
    assert.equal(env.readAll(), expected);
    assert.ok(mappedResidentBytes([env.file]).get(env.file)! > 15 * MB, 'reading maps the pages again');
    // A file this process has not mapped: nothing to release, nothing resident.
    const other = path.join(env.dir, 'lock-none.mdb');
    assert.deepEqual(releaseMappedPages([other]), { supported: true, mappings: 0, bytes: 0 });
    assert.equal(mappedResidentBytes([other]).get(other), 0);
  } finally {
    await env.root.close();
    fs.rmSync(env.dir, { recursive: true, force: true });
  }
});

test('the policy releases once writes go quiet after bulk work, never for a trickle below minWork', { skip: !linux }, async () => {
  const env = filledEnvironment(10_000);
  const counters = [0, 0];
  let collected = 0;
  const release = startMemoryRelease({
    files: [env.file], activity: () => [...counters], quietMs: 60, minWork: 1_000, minIntervalMs: 0, pollMs: 10,
    collect: () => { collected++; }, log: createLogger('silent'),
  });
  const resident = () => mappedResidentBytes([env.file]).get(env.file)!;
  try {
    // A trickle: 5 units per poll for a while, then quiet. 5 × ~20 polls < minWork.
    for (let i = 0; i < 20; i++) { counters[0] += 5; await new Promise((r) => setTimeout(r, 10)); }
    await new Promise((r) => setTimeout(r, 200));
    assert.equal(release.releases, 0);
    assert.ok(resident() > 7 * MB, 'still mapped after the trickle');
    // Bulk work (counters may go down as well as up: an outbox drained), then quiet.
    counters[0] += 800;
    await new Promise((r) => setTimeout(r, 20));
    counters[1] += 300;
    await new Promise((r) => setTimeout(r, 20));
    counters[1] -= 300;
    await waitFor('the release', () => release.releases === 1 || null, { timeoutMs: 5_000 });
    assert.equal(collected, 1);
    assert.ok(resident() < MB, `resident after the release: ${resident()}`);
    // Quiet stays quiet: no second release without new work.
    env.readAll();
    await new Promise((r) => setTimeout(r, 200));
    assert.equal(release.releases, 1);
    assert.ok(resident() > 7 * MB);
  } finally {
    release.close();
    await env.root.close();
    fs.rmSync(env.dir, { recursive: true, force: true });
  }
});

test('settling GCs follow a release while the node stays quiet, and new work cancels them', { skip: !linux }, async () => {
  const counters = [0];
  let collected = 0;
  const release = startMemoryRelease({
    files: [], activity: () => [...counters], quietMs: 30, minWork: 100, minIntervalMs: 0, pollMs: 5, settleAfterMs: 150,
    collect: () => { collected++; }, log: createLogger('silent'),
  });
  try {
    counters[0] += 500;
    await waitFor('the release', () => release.releases === 1 || null, { timeoutMs: 5_000 });
    await waitFor('the settling passes', () => release.settles === SETTLE_PASSES || null, { timeoutMs: 5_000 });
    assert.equal(collected, 1 + SETTLE_PASSES, 'each pass collects garbage again');
    await new Promise((r) => setTimeout(r, 200));
    assert.equal(release.settles, SETTLE_PASSES, 'no more passes until the next release');
    // The next release, then a trickle (below minWork) right after it: its passes are cancelled.
    counters[0] += 500;
    await waitFor('the second release', () => release.releases === 2 || null, { timeoutMs: 5_000 });
    counters[0] += 1;
    await new Promise((r) => setTimeout(r, 800));
    assert.equal(release.settles, SETTLE_PASSES);
    assert.equal(release.releases, 2);
  } finally {
    release.close();
  }
});

test('quietMs 0 disables the policy; a full GC is available in this thread', async () => {
  const release = startMemoryRelease({ files: [], activity: () => [Math.random() * 1e9], quietMs: 0, minWork: 1, minIntervalMs: 0, log: createLogger('silent') });
  await new Promise((r) => setTimeout(r, 50));
  assert.equal(release.releases, 0);
  release.close();
  assert.equal(collectGarbage(), true);
});

/** The process-wide change feed on a real database: wake-ups, the in-memory window, fallback to SQL. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createLogger } from '../../../src/log.js';
import { startChangeFeed } from '../../../src/control-plane/grpc/change-feed.js';
import { appendChanges, currentRevision } from '../../../src/control-plane/change-log/store.js';
import { createTestDatabase } from '../../support/db.js';
import { waitFor } from '../../support/wait.js';
import type { Sql } from '../../../src/control-plane/db/connect.js';

async function append(sql: Sql, n: number): Promise<void> {
  for (let i = 0; i < n; i++) {
    await sql.begin((tx) => appendChanges(tx, [{ projectId: null, kind: 'organization', entityId: String(i), op: 'delete', payload: null }]));
  }
}

test('the feed reads each new change once, wakes subscribers, and serves near-head reads from memory', async () => {
  const db = await createTestDatabase();
  const feed = await startChangeFeed(db.sql, createLogger('silent'));
  try {
    await append(db.sql, 3);
    await waitFor('feed at 3', () => feed.latest() === 3);
    const wakes: number[] = [];
    feed.subscribe((latest) => wakes.push(latest));
    await append(db.sql, 4);
    const head = await currentRevision(db.sql);
    await waitFor('feed at head', () => feed.latest() === head);
    assert.equal(wakes[wakes.length - 1], head);

    const a = await feed.read(2, 100);
    const b = await feed.read(2, 100);
    assert.deepEqual(a.map((r) => r.revision), [3, 4, 5, 6, 7]);
    assert.ok(a.every((r, i) => r === b[i]), 'same row objects: served from the window');
    assert.deepEqual((await feed.read(4, 2)).map((r) => r.revision), [5, 6], 'limit honoured');
    assert.deepEqual(await feed.read(head, 10), []);
  } finally {
    await feed.close();
    await db.drop();
  }
});

test('reads from before the window go to Postgres', async () => {
  const db = await createTestDatabase();
  await append(db.sql, 5);
  const feed = await startChangeFeed(db.sql, createLogger('silent'));
  try {
    await append(db.sql, 2);
    await waitFor('feed at 7', () => feed.latest() === 7);
    const rows = await feed.read(0, 100);
    assert.deepEqual(rows.map((r) => r.revision), [1, 2, 3, 4, 5, 6, 7]);
    assert.ok(rows[0] !== (await feed.read(0, 100))[0], 'fresh rows from SQL');
  } finally {
    await feed.close();
    await db.drop();
  }
});

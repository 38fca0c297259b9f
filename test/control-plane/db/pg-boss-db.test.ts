/**
 * db/pg-boss-db.ts against a real database: pg-boss installs its schema, creates a queue, takes a
 * job with a JSON payload and hands it to a worker, all through the postgres.js adapter.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import PgBoss from 'pg-boss';
import { createTestDatabase } from '../../support/db.js';
import { connect } from '../../../src/control-plane/db/connect.js';
import { pgBossDb } from '../../../src/control-plane/db/pg-boss-db.js';

test('pg-boss runs on the postgres.js adapter: schema, queue, send, work, complete', async () => {
  const db = await createTestDatabase();
  const sql = connect(db.url, { max: 3 });
  const boss = new PgBoss({ db: pgBossDb(sql), schedule: false });
  try {
    await boss.start();
    await boss.createQueue('adapter-test');
    const id = await boss.send('adapter-test', { n: 7, nested: { s: 'x' } });
    assert.ok(id);
    const seen = await new Promise<unknown>((resolve, reject) => {
      boss.work<{ n: number }>('adapter-test', { pollingIntervalSeconds: 0.5 }, async ([job]) => { resolve(job!.data); }).catch(reject);
    });
    assert.deepEqual(seen, { n: 7, nested: { s: 'x' } });
    // Completion is recorded once the handler returns.
    for (let i = 0; i < 100; i++) {
      const job = await boss.getJobById('adapter-test', id!);
      if (job?.state === 'completed') break;
      await new Promise((r) => setTimeout(r, 100));
    }
    assert.equal((await boss.getJobById('adapter-test', id!))?.state, 'completed');
  } finally {
    await boss.stop({ graceful: false, wait: true, close: true }).catch(() => {});
    await sql.end({ timeout: 5 });
    await db.drop();
  }
});

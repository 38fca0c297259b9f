import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createTestDatabase } from '../../support/db.js';
import { migrate, listMigrations } from '../../../src/control-plane/db/migrate.js';

test('migrations apply once and record every version', async () => {
  const db = await createTestDatabase();
  try {
    const rows = await db.sql<{ version: number }[]>`SELECT version FROM schema_migrations ORDER BY version`;
    assert.deepEqual(rows.map((r) => r.version), listMigrations().map((m) => m.version));
    assert.deepEqual(await migrate(db.sql), [], 'a second run applies nothing');
  } finally {
    await db.drop();
  }
});

test('concurrent migrators serialise on the advisory lock', async () => {
  const db = await createTestDatabase();
  try {
    await db.sql.unsafe('DROP SCHEMA public CASCADE; CREATE SCHEMA public');
    const results = await Promise.all([migrate(db.sql), migrate(db.sql), migrate(db.sql)]);
    const applied = results.flat().sort((a, b) => a - b);
    assert.deepEqual(applied, listMigrations().map((m) => m.version), 'each migration applied exactly once');
  } finally {
    await db.drop();
  }
});

/**
 * `keys`/`users`/`quota`
 * refuse to create a database of their own (a command run outside the server's data dir used to
 * start a second, empty cluster and report success), with exit 2 and one line saying what to
 * set; and a bootstrap project key that a data dir cannot take is reported, not silently dropped.
 * Real CLI processes, real Postgres.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { PACKAGE_ROOT } from '../../src/paths.js';
import { bootstrap } from '../../src/control-plane/bootstrap.js';
import { testConfig } from '../../src/config.js';
import { createTestDatabase } from '../support/db.js';

const CLI = path.join(PACKAGE_ROOT, 'dist', 'src', 'cli.js');

test('keys, users and quota refuse a data dir without the server\'s database (exit 2), and create nothing there', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'switchyard-admin-'));
  try {
    for (const args of [['keys', 'list'], ['keys', 'create', '--scopes', 'feature_flag:read'], ['users', 'deactivate', 'a@b.c'], ['quota', 'show', '--organization', '1']]) {
      const r = spawnSync(process.execPath, [CLI, ...args], {
        env: { ...process.env, DATABASE_URL: '', SWITCHYARD_DATA_DIR: dir, SWITCHYARD_LOG_LEVEL: 'silent' }, encoding: 'utf8', timeout: 60_000,
      });
      assert.equal(r.status, 2, `${args.join(' ')}: ${r.stderr}`);
      assert.match(r.stderr, /no Switchyard database in .*SWITCHYARD_DATA_DIR.*DATABASE_URL/);
      assert.deepEqual(fs.readdirSync(dir), [], 'no cluster was created');
    }
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('with DATABASE_URL the command says which database it used', async () => {
  const db = await createTestDatabase();
  try {
    const r = spawnSync(process.execPath, [CLI, 'keys', 'list'], { env: { ...process.env, DATABASE_URL: db.url, SWITCHYARD_LOG_LEVEL: 'silent' }, encoding: 'utf8', timeout: 60_000 });
    assert.equal(r.status, 0, r.stderr);
    const u = new URL(db.url);
    assert.ok(r.stderr.includes(`using DATABASE_URL (${u.hostname}:${u.port}${u.pathname})`), r.stderr);
    assert.equal(r.stderr.includes(u.password), false, 'no password printed');
  } finally {
    await db.drop();
  }
});

test('a bootstrap project key the data dir already has a project for is reported as ignored', async () => {
  const db = await createTestDatabase();
  try {
    const first = await bootstrap(db.sql, testConfig());
    assert.equal(first.ignoredProjectApiKey, null);
    const again = await bootstrap(db.sql, testConfig({ bootstrapProjectApiKey: 'phc_aDifferentKeyForThisProject01' }));
    assert.equal(again.ignoredProjectApiKey, 'phc_aDifferentKeyForThisProject01');
    assert.equal(again.projectApiKey, first.projectApiKey, 'the shipped key stays');
    const same = await bootstrap(db.sql, testConfig({ bootstrapProjectApiKey: first.projectApiKey }));
    assert.equal(same.ignoredProjectApiKey, null);
  } finally {
    await db.drop();
  }
});

/**
 * `keys`/`users`/`quota`
 * refuse to create a database of their own (a command run outside the server's data dir used to
 * start a second, empty cluster and report success), with exit 2 and one line saying what to
 * set; and a bootstrap project key that a data dir cannot take is reported, not silently dropped.
 * The commands' `run` in this process with a given environment, and one real CLI process for the
 * exit code and the line; real Postgres.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { bootstrap } from '../../src/control-plane/bootstrap.js';
import { testConfig } from '../../src/config.js';
import { CliError } from '../../src/commands/cli-error.js';
import * as keys from '../../src/commands/keys.js';
import * as users from '../../src/commands/users.js';
import * as quota from '../../src/commands/quota.js';
import { createTestDatabase } from '../support/db.js';
import { runCli, runInProcess, type CommandModule } from '../support/cli.js';

const NO_DATABASE = /no Switchyard database in .*SWITCHYARD_DATA_DIR.*DATABASE_URL/;

test('keys, users and quota refuse a data dir without the server\'s database (exit 2), and create nothing there', async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'switchyard-admin-'));
  const env = { ...process.env, DATABASE_URL: '', SWITCHYARD_DATA_DIR: dir, SWITCHYARD_LOG_LEVEL: 'silent' };
  try {
    // The real entry: the refusal is one line on stderr and exit 2.
    const r = await runCli(['keys', 'list'], { env });
    assert.equal(r.code, 2, r.stderr);
    assert.match(r.stderr, new RegExp(`^switchyard: ${NO_DATABASE.source}[^\\n]*\\n$`));
    assert.equal(r.stdout, '');
    assert.deepEqual(fs.readdirSync(dir), [], 'no cluster was created');
    // The other commands in this process: the same refusal (src/cli.ts prints a CliError as that line, exit 2).
    const cases: Array<[string, CommandModule, string[]]> = [
      ['keys', keys, ['create', '--scopes', 'feature_flag:read']], ['users', users, ['deactivate', 'a@b.c']], ['quota', quota, ['show', '--organization', '1']],
    ];
    for (const [name, command, args] of cases) {
      await assert.rejects(runInProcess(command, args, { env }), (e: unknown) => e instanceof CliError && e.exitCode === 2 && NO_DATABASE.test(e.message), `${name} ${args.join(' ')}`);
      assert.deepEqual(fs.readdirSync(dir), [], `${name} ${args.join(' ')}: no cluster was created`);
    }
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('with DATABASE_URL the command says which database it used', async () => {
  const db = await createTestDatabase();
  try {
    const r = await runInProcess(keys, ['list'], { env: { ...process.env, DATABASE_URL: db.url, SWITCHYARD_LOG_LEVEL: 'silent' } });
    assert.equal(r.code, 0, r.stderr);
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

/**
 * Postgres failover under a running control plane and node (docs/operations.md "Postgres
 * failover"): a primary and a streaming replica from Debian's postgresql 15 (`pg_basebackup -R`),
 * both on 127.0.0.1, the control plane on a multi-host `DATABASE_URL` with
 * `target_session_attrs=read-write`. The primary is killed (`pg_ctl stop -m immediate`), events
 * are captured on the node meanwhile, the replica is promoted (`pg_ctl promote`), and then:
 * a flag PATCH succeeds again within 10 s of the promotion without restarting anything (printed),
 * the change reaches the node (the change feed re-listened and caught up), and every event the
 * node acknowledged during the outage is in Postgres exactly once (Ingest retried from the outbox).
 *
 * Ports: Postgres cannot bind port 0, so each server is started on a random port and started
 * again on another if that one is taken (the server binds it itself: no probe-then-bind race).
 * postgres.js takes one Unix socket only, not several, so the multi-host URL uses TCP.
 * As root the servers run as the `postgres` OS user (runuser). Skipped, saying so, when the
 * binaries are missing. Timing figures come from a shared 2-core machine and are noisy.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { testConfig } from '../../src/config.js';
import { connect } from '../../src/control-plane/db/connect.js';
import { startControlPlane, type ControlPlane } from '../../src/control-plane/index.js';
import { startNodeService, type NodeService } from '../../src/eval-node/service.js';
import { newPersonalApiKey, newProjectApiKey } from '../../src/control-plane/keys/tokens.js';
import { waitFor } from '../support/wait.js';
import { flags, log, post } from './support.js';

const run = promisify(execFile);
const BIN = '/usr/lib/postgresql/15/bin';
const asRoot = typeof process.getuid === 'function' && process.getuid() === 0;

/** Runs a Postgres binary (as the postgres user when we are root). */
function pg(bin: string, args: string[]): Promise<{ stdout: string; stderr: string }> {
  const file = path.join(BIN, bin);
  return asRoot ? run('runuser', ['-u', 'postgres', '--', file, ...args]) : run(file, args);
}

/** Starts the server in `dir` on a random free port (another one if taken); returns the port. */
async function startServer(dir: string, socketDir: string): Promise<number> {
  for (let attempt = 0; ; attempt++) {
    const port = 20_000 + crypto.randomInt(30_000);
    try {
      await pg('pg_ctl', ['-D', dir, '-l', path.join(dir, 'server.log'), '-w', '-t', '60', 'start',
        '-o', `-c port=${port} -c listen_addresses=127.0.0.1 -c unix_socket_directories=${socketDir}`]);
      return port;
    } catch (e) {
      const logText = fs.existsSync(path.join(dir, 'server.log')) ? fs.readFileSync(path.join(dir, 'server.log'), 'utf8') : '';
      if (attempt >= 5 || !/could not bind|Address already in use/i.test(logText)) throw new Error(`${(e as Error).message}\n${logText}`);
    }
  }
}

test('the control plane follows a promoted replica by itself: writes back within 10 s, no change or event lost', async (t) => {
  if (!fs.existsSync(path.join(BIN, 'pg_basebackup'))) { t.skip(`${BIN} not installed (Debian's postgresql-15)`); return; }
  const base = fs.mkdtempSync(path.join(os.tmpdir(), 'switchyard-pgfo-'));
  const primary = path.join(base, 'primary');
  const replica = path.join(base, 'replica');
  const sockets = path.join(base, 'sock');
  fs.mkdirSync(sockets);
  const nodeDir = fs.mkdtempSync(path.join(os.tmpdir(), 'switchyard-pgfo-node-'));
  if (asRoot) await run('chown', ['-R', 'postgres:postgres', base]);
  let cp: ControlPlane | null = null;
  let node: NodeService | null = null;
  try {
    await pg('initdb', ['-D', primary, '-U', 'postgres', '--auth=trust', '-E', 'UTF8', '--no-sync']);
    fs.appendFileSync(primary + '/postgresql.conf', '\nwal_level = replica\nmax_wal_senders = 4\nhot_standby = on\nfsync = off\n');
    const p1 = await startServer(primary, sockets);
    const admin = connect(`postgres://postgres@127.0.0.1:${p1}/postgres`, { max: 1 });
    await admin.unsafe('CREATE DATABASE switchyard');
    await admin.end();
    await pg('pg_basebackup', ['-h', '127.0.0.1', '-p', String(p1), '-U', 'postgres', '-D', replica, '-R', '-X', 'stream', '-c', 'fast']);
    const p2 = await startServer(replica, sockets);
    const url = `postgres://postgres@127.0.0.1:${p1},127.0.0.1:${p2}/switchyard?target_session_attrs=read-write`;

    const personal = newPersonalApiKey();
    const project = newProjectApiKey();
    const config = testConfig({ dataDir: nodeDir, bootstrapPersonalApiKey: personal, bootstrapProjectApiKey: project, eventsRetentionDays: null });
    cp = await startControlPlane(config, log, url);
    node = await startNodeService({ ...config, dataDir: path.join(nodeDir, 'node'), controlPlane: `127.0.0.1:${cp.grpc!.port}` }, log);
    const nodeUrl = node.http.url;
    const apiCall = async (method: string, p: string, body?: unknown) => {
      const res = await fetch(cp!.http.url + p, {
        method, headers: { authorization: `Bearer ${personal}`, 'content-type': 'application/json' },
        body: body === undefined ? undefined : JSON.stringify(body), signal: AbortSignal.timeout(15_000),
      });
      return { status: res.status, text: await res.text() };
    };
    const pid = cp.bootstrap.projectId;
    const created = await apiCall('POST', `/api/projects/${pid}/feature_flags/`, { key: 'fo', filters: { groups: [{ properties: [], rollout_percentage: 100 }] } });
    assert.equal(created.status, 201, created.text);
    const flagId = JSON.parse(created.text).id as number;
    const enabled = async () => { const r = await flags(nodeUrl, project, 'u-1'); return r.status === 200 ? r.body.flags?.fo?.enabled as boolean : null; };
    await waitFor('flag on node', async () => (await enabled()) === true, { timeoutMs: 30_000, intervalMs: 50 });
    // The replica has everything so far.
    const standby = connect(`postgres://postgres@127.0.0.1:${p2}/switchyard`, { max: 1 });
    await waitFor('replica caught up', async () => (await standby`SELECT count(*)::int AS n FROM feature_flags WHERE key = 'fo'`)[0]!.n === 1, { timeoutMs: 30_000 });
    await standby.end();

    // The primary dies.
    await pg('pg_ctl', ['-D', primary, '-m', 'immediate', 'stop']);
    const killedAt = performance.now();
    // Events captured meanwhile are acknowledged by the node (its outbox) ...
    const uuids = Array.from({ length: 20 }, () => crypto.randomUUID());
    const captured = await post(`${nodeUrl}/batch/`, { api_key: project, batch: uuids.map((uuid, i) => ({ event: 'during-outage', distinct_id: `d-${i}`, uuid, properties: {} })) });
    assert.equal(captured.status, 200, captured.text);
    // ... and a write fails while no server accepts writes.
    assert.notEqual((await apiCall('PATCH', `/api/projects/${pid}/feature_flags/${flagId}/`, { name: 'during' })).status, 200);

    await pg('pg_ctl', ['-D', replica, '-w', 'promote']);
    const promotedAt = performance.now();
    let attempts = 0;
    await waitFor('a PATCH succeeds again', async () => {
      attempts++;
      const r = await apiCall('PATCH', `/api/projects/${pid}/feature_flags/${flagId}/`, { filters: { groups: [{ properties: [], rollout_percentage: 0 }] } });
      return r.status === 200;
    }, { timeoutMs: 30_000, intervalMs: 100 });
    const writableAfterMs = performance.now() - promotedAt;
    await waitFor('the change reaches the node', async () => (await enabled()) === false, { timeoutMs: 30_000, intervalMs: 50 });
    const nodeAfterMs = performance.now() - promotedAt;
    console.log(`postgres failover: PATCH succeeds ${writableAfterMs.toFixed(0)} ms after promotion (${(performance.now() - killedAt).toFixed(0)} ms after the primary died; ${attempts} attempts; bound 10000 ms); the change reached the node ${nodeAfterMs.toFixed(0)} ms after promotion (shared 2-core machine)`);
    assert.ok(writableAfterMs < 10_000, `writes came back ${writableAfterMs.toFixed(0)} ms after promotion`);

    // Events acknowledged during the outage are in Postgres, once each.
    await waitFor('outage events ingested', async () => {
      const rows = await cp!.sql<{ n: number; d: number }[]>`SELECT count(*)::int AS n, count(DISTINCT uuid)::int AS d FROM events WHERE project_id = ${pid} AND uuid::text = ANY(${uuids})`;
      assert.equal(rows[0]!.n, rows[0]!.d, 'an event stored twice');
      return rows[0]!.n === uuids.length;
    }, { timeoutMs: 30_000, intervalMs: 200 });
    // A later change still propagates (LISTEN re-subscribed on the new server; the poll covers it otherwise).
    const again = await apiCall('PATCH', `/api/projects/${pid}/feature_flags/${flagId}/`, { filters: { groups: [{ properties: [], rollout_percentage: 100 }] } });
    assert.equal(again.status, 200, again.text);
    await waitFor('a later change reaches the node', async () => (await enabled()) === true, { timeoutMs: 30_000, intervalMs: 50 });
  } finally {
    await node?.close().catch(() => {});
    await cp?.close().catch(() => {});
    for (const dir of [replica, primary]) await pg('pg_ctl', ['-D', dir, '-m', 'immediate', 'stop']).catch(() => {});
    fs.rmSync(base, { recursive: true, force: true });
    fs.rmSync(nodeDir, { recursive: true, force: true });
  }
});

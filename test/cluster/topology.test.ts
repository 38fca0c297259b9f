/**
 * `make test-cluster`: the production topology on network-namespace hosts (stack.ts), under
 * constant posthog-node load through HAProxy, broken on purpose one fault at a time. Each fault
 * prints one figure line: failed client requests, events acknowledged vs stored exactly once,
 * time to recover. The faults run in order on one stack (the Postgres failover leaves db2 the
 * primary for the rest). Run through run.ts, which bounds the run and removes every namespace,
 * process and file even when this process dies.
 */
import { after, before, test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { removeRun, tempPrefix } from './net.js';
import { sleep, until, type HostProcess } from './procs.js';
import { CPS, DRAIN_SECONDS, NODES, Stack } from './stack.js';

const id = process.env.CLUSTER_ID ?? String(process.pid);
const ownDir = !process.env.CLUSTER_DIR;
const dir = process.env.CLUSTER_DIR ?? fs.mkdtempSync(tempPrefix(id));
const s = new Stack(id, dir);
const figures: string[] = [];
/** When the load started: every event acknowledged since must be stored exactly once. */
let loadStart = 0;
let cutFlag = 0;
let cpFlag = 0;

/** Events acknowledged in [from, to]: how many, how many stored exactly once, how many more than once. */
async function events(from: number, to: number, waitMs = 20_000): Promise<{ acked: number; stored: number; dup: number; missing: string[]; waitedMs: number }> {
  const uuids = s.load.ackedBetween(from, to);
  let counts = new Map<string, number>();
  const waitedMs = await until('acknowledged events stored', async () => {
    counts = await s.eventCounts(uuids);
    return counts.size === uuids.length;
  }, waitMs, 250).catch(() => -1);
  const dup = [...counts.values()].filter((n) => n > 1).length;
  return { acked: uuids.length, stored: [...counts.values()].filter((n) => n === 1).length, dup, missing: uuids.filter((u) => !counts.has(u)), waitedMs };
}

/** Records and prints one fault's figure. */
function figure(t: TestContext, fault: string, parts: Record<string, unknown>): void {
  const line = `[cluster] ${fault}: ${Object.entries(parts).map(([k, v]) => `${k}=${v}`).join(' ')}`;
  figures.push(line);
  t.diagnostic(line);
  console.log(line);
}

/** Runs `fn`; on failure prints the tails of `hosts`' logs before failing. */
async function fault(hosts: string[], fn: () => Promise<void>): Promise<void> {
  try { await fn(); } catch (e) {
    console.log(s.tails([...hosts, 'lb', 'client']));
    throw e;
  }
}

/** Waits until HAProxy shows `server` of `backend` with a status starting `want`. */
function lbShows(backend: string, server: string, want: string, timeoutMs = 10_000): Promise<number> {
  return until(`LB ${backend}/${server} ${want}`, async () => (await s.lbStatus(backend)).get(server)?.startsWith(want) ?? false, timeoutMs, 50);
}

/** Waits until every node serves `key` as `enabled`; returns the ms it took. */
function allNodesServe(key: string, enabled: boolean, timeoutMs: number): Promise<number> {
  return until(`every node to serve ${key}=${enabled}`, async () => {
    for (const n of NODES) if (await s.nodeServes(n, key) !== enabled) return false;
    return true;
  }, timeoutMs, 50);
}

before(async () => {
  removeRun(id);
  await s.up();
  console.log(`[cluster] hosts on ${s.net.subnet}.0/24, logs in ${s.logs}; nodes watch ${s.cpList ? 'cp1,cp2' : 'cp1 only (this build takes one SWITCHYARD_CONTROL_PLANE address)'}`);
  cutFlag = await s.createFlag('cut-flag', 0);
  cpFlag = await s.createFlag('cp-flag', 0);
  await allNodesServe('cp-flag', false, 10_000);
  loadStart = Date.now();
  s.startLoad();
  await until('load flowing', () => (s.load.last.flagsOk ?? 0) > 10 && s.load.acked.size > 10, 15_000);
}, { timeout: 150_000 });

after(async () => {
  try {
    await s.stopLoad().catch(() => {});
    await s.down();
  } finally {
    removeRun(id);
    if (ownDir) fs.rmSync(dir, { recursive: true, force: true });
    console.log(figures.join('\n'));
  }
});

test('SIGKILL a node under load: the LB stops sending to it, no acknowledged event is lost', { timeout: 60_000 }, (t) => fault(['n1'], async () => {
  const t0 = Date.now();
  await s.nodes.get('n1')!.stop('SIGKILL');
  const lbDownMs = await lbShows('nodes', 'n1', 'DOWN');
  await sleep(1_000);
  s.startNode('n1');
  await s.waitNodeReady('n1');
  await lbShows('nodes', 'n1', 'UP');
  const recoverMs = Date.now() - t0;
  await sleep(1_000);
  const t1 = Date.now();
  const failed = s.load.failuresBetween(t0, t1);
  const inflight = s.load.maxInflightBetween(t0, t0);
  const ev = await events(loadStart, t1);
  figure(t, 'node SIGKILL', { failed: failed.length, inflight_at_kill: inflight, lb_down_ms: lbDownMs, acked: ev.acked, stored: ev.stored, dup: ev.dup, stored_wait_ms: ev.waitedMs, recover_ms: recoverMs });
  assert.ok(failed.length <= inflight, `failed requests ${JSON.stringify(failed)} > in flight ${inflight}`);
  assert.deepEqual(ev.missing, [], 'acknowledged events lost');
  assert.equal(ev.dup, 0, 'events stored more than once');
}));

test('cut a node off the control planes for 30 s: it serves from LMDB, shows it is stale, is current within 2 s of the link returning', { timeout: 90_000 }, (t) => fault(['n2', 'cp1', 'cp2'], async () => {
  assert.equal(await s.nodeServes('n2', 'cut-flag'), false);
  const t0 = Date.now();
  for (const cp of CPS) s.net.cut('n2', cp);
  let restored = false;
  try {
    await sleep(2_000);
    const patch = await s.patchFlag(cutFlag, 100);
    assert.equal(patch.status, 200, patch.text);
    await until('the connected nodes to serve the change', async () => await s.nodeServes('n1', 'cut-flag') === true && await s.nodeServes('n3', 'cut-flag') === true, 5_000, 50);
    let lbDown = false;
    let servedOld = 0;
    let metrics = new Map<string, number>();
    while (Date.now() - t0 < 30_000) {
      if (await s.nodeServes('n2', 'cut-flag') === false) servedOld++;
      if (!(await s.lbStatus('nodes')).get('n2')?.startsWith('UP')) lbDown = true;
      metrics = await s.nodeMetrics('n2');
      await sleep(1_000);
    }
    const sync = [...metrics].filter(([k]) => k.startsWith('switchyard_node_sync')).map(([k, v]) => `${k}=${v}`).join(' ');
    for (const cp of CPS) s.net.restore('n2', cp);
    restored = true;
    const tRestore = Date.now();
    const currentMs = await until('n2 to serve the change made during the cut', async () => await s.nodeServes('n2', 'cut-flag') === true, 60_000, 20)
      .catch(() => -1);
    await sleep(500);
    const t1 = Date.now();
    const failed = s.load.failuresBetween(t0, t1);
    const ev = await events(t0 - 2_000, t1);
    // Control planes heartbeat every 2 s: an event older than 5 s means the node hears nothing.
    const stale = (metrics.get('switchyard_node_sync_connected') === 0) || (metrics.get('switchyard_node_sync_lag_revisions') ?? 0) > 0
      || (metrics.get('switchyard_node_sync_last_event_age_seconds') ?? 0) > 5;
    figure(t, 'node cut off 30 s', { failed: failed.length, served_old_during_cut: servedOld, lb_took_it_out: lbDown, acked: ev.acked, stored: ev.stored, dup: ev.dup, current_after_restore_ms: currentMs, metrics: `"${sync}"` });
    assert.equal(failed.length, 0, JSON.stringify(failed));
    assert.ok(servedOld >= 10, `n2 answered from its store ${servedOld} times during the cut`);
    assert.ok(!lbDown, 'the LB took the cut-off node out (its /_ready failed)');
    assert.ok(stale, `/metrics does not show the node is stale: ${sync}`);
    assert.ok(currentMs >= 0 && currentMs <= 2_000, `current ${currentMs} ms after the link returned (want ≤ 2000)`);
    assert.deepEqual(ev.missing, [], 'acknowledged events lost');
    assert.equal(ev.dup, 0);
  } finally {
    if (!restored) for (const cp of CPS) try { s.net.restore('n2', cp); } catch { /* not cut */ }
    await allNodesServe('cut-flag', true, 45_000).catch(() => {});
  }
}));

test('a node whose store was corrupted while stopped rebuilds from the control plane and rejoins', { timeout: 60_000 }, (t) => fault(['n3'], async () => {
  const t0 = Date.now();
  const code = await s.nodes.get('n3')!.stop('SIGTERM');
  await lbShows('nodes', 'n3', 'DOWN');
  const file = path.join(dir, 'n3', 'lmdb', 'data.mdb');
  assert.ok(fs.existsSync(file), `no store at ${file}`);
  const fd = fs.openSync(file, 'r+');
  fs.writeSync(fd, Buffer.alloc(2 * 4096), 0, 2 * 4096, 0); // both meta pages
  fs.closeSync(fd);
  const tStart = Date.now();
  s.startNode('n3');
  await s.waitNodeReady('n3', 45_000);
  await lbShows('nodes', 'n3', 'UP');
  const rejoinMs = Date.now() - tStart;
  const serves = await s.nodeServes('n3', 'cut-flag');
  const t1 = Date.now();
  const failed = s.load.failuresBetween(t0, t1);
  const ev = await events(t0 - 2_000, t1);
  figure(t, 'corrupted store', { stop_exit: code, failed: failed.length, acked: ev.acked, stored: ev.stored, dup: ev.dup, rejoin_ms: rejoinMs });
  assert.equal(serves, true, 'the rebuilt node does not serve the current flags');
  assert.deepEqual(ev.missing, [], 'acknowledged events lost');
  assert.equal(ev.dup, 0);
}));

test('SIGKILL a control plane: every Watch moves to the other within 2 s, PATCHes through the LB keep succeeding', { timeout: 90_000 }, (t) => fault(['cp1', 'cp2', ...NODES], async () => {
  const t0 = Date.now();
  await s.cps.get('cp1')!.stop('SIGKILL');
  let patches = 0;
  let patchFailures = 0;
  let moveMs = -1;
  const watch = allNodesServe('cp-flag', true, 5_000).then((ms) => { moveMs = Date.now() - t0; return ms; }).catch(() => -1);
  const patching = (async () => {
    while (Date.now() - t0 < 3_000) {
      const r = await s.patchFlag(cpFlag, 100);
      patches++;
      if (r.status !== 200) patchFailures++;
      await sleep(150);
    }
  })();
  await patching;
  await watch;
  const t1 = Date.now();
  const failed = s.load.failuresBetween(t0, t1);
  const connected = await Promise.all(NODES.map(async (n) => (await s.nodeMetrics(n)).get('switchyard_node_sync_connected')));
  figure(t, 'control plane SIGKILL', { failed: failed.length, patches, patch_failures: patchFailures, watch_moved_ms: moveMs, nodes_connected: connected.join('/') });
  try {
    assert.equal(patchFailures, 0, 'PATCHes through the LB failed');
    assert.ok(moveMs >= 0 && moveMs <= 2_000, `every node current ${moveMs} ms after the kill (want ≤ 2000)`);
    assert.equal(failed.filter((f) => f.path.startsWith('/flags')).length, 0, JSON.stringify(failed));
  } finally {
    await s.startControlPlane('cp1');
    await lbShows('cps', 'cp1', 'UP');
  }
}));

test('kill the Postgres primary, promote the replica: writes again within 10 s, nodes keep serving, every event stored once', { timeout: 90_000 }, (t) => fault(['db1', 'db2', 'cp1', 'cp2'], async () => {
  const t0 = Date.now();
  await s.pg.get('db1')!.stop('SIGKILL');
  s.promote('db2');
  const promotedMs = Date.now() - t0;
  let writesMs = -1;
  await until('a PATCH through the LB to succeed', async () => (await s.patchFlag(cpFlag, 100)).status === 200, 30_000, 200)
    .then(() => { writesMs = Date.now() - t0; }).catch(() => {});
  // Both control planes write, not only the first to reconnect.
  const direct = await Promise.all(CPS.map(async (cp) => (await s.api('PATCH', `/api/projects/${s.projectId}/feature_flags/${cpFlag}/`,
    { filters: { groups: [{ properties: [], rollout_percentage: 100 }] } }, `http://${s.ip(cp)}:8000`)).status));
  await sleep(1_000);
  const t1 = Date.now();
  const failed = s.load.failuresBetween(t0, t1);
  const flagsFailed = failed.filter((f) => f.path.startsWith('/flags')).length;
  const ev = await events(loadStart, t1, 30_000);
  const cpExits = CPS.filter((cp) => !s.cps.get(cp)!.running).map((cp) => `${cp}:exit ${s.cps.get(cp)!.exitCode}`);
  figure(t, 'Postgres failover', { failed: failed.length, flags_failed: flagsFailed, promoted_ms: promotedMs, writes_back_ms: writesMs, direct_writes: direct.join('/'), cps_exited: cpExits.join(',') || 'none', acked: ev.acked, stored: ev.stored, dup: ev.dup, missing: ev.missing.length });
  assert.deepEqual(cpExits, [], 'a control plane exited when the primary died');
  assert.ok(writesMs >= 0 && writesMs <= 10_000, `writes back after ${writesMs} ms (want ≤ 10000)`);
  assert.deepEqual(direct, [200, 200], 'a control plane does not write to the promoted database');
  assert.equal(flagsFailed, 0, 'nodes stopped serving');
  assert.deepEqual(ev.missing, [], 'acknowledged events lost');
  assert.equal(ev.dup, 0, 'events stored more than once');
}));

/** How one process stopped: its exit, and how long it kept running while `/_ready` answered 503. */
interface Stop { name: string; exit: string; drainedMs: number }

/**
 * SIGTERMs `p` and waits, polling `readyUrl` meanwhile: `drainedMs` is how long the process stayed
 * up after its first 503 (-1: it never answered 503). `exit` is `died-before(…)` when it had exited.
 */
async function stopFor(name: string, p: HostProcess, readyUrl: string): Promise<Stop> {
  if (!p.running) return { name, exit: `died-before(${p.exitCode ?? p.signal})`, drainedMs: -1 };
  let first503 = 0;
  let polling = true;
  const poll = (async () => {
    while (polling) {
      if (!first503 && (await s.get(readyUrl)).status === 503) first503 = Date.now();
      await sleep(50);
    }
  })();
  const code = await p.stop('SIGTERM', 20_000);
  polling = false;
  await poll;
  return { name, exit: String(code), drainedMs: first503 ? Date.now() - first503 : -1 };
}

test('rolling upgrade under load: zero failed /flags requests, zero lost events', { timeout: 120_000 }, (t) => fault([...NODES, ...CPS], async () => {
  const t0 = Date.now();
  const exits: Stop[] = [];
  const steps: string[] = [];
  for (const n of NODES) {
    const a = Date.now();
    exits.push(await stopFor(n, s.nodes.get(n)!, `http://${s.ip(n)}:8011/_ready`));
    const b = Date.now();
    s.startNode(n);
    await s.waitNodeReady(n);
    await lbShows('nodes', n, 'UP');
    steps.push(`${n}:${b - a}+${Date.now() - b}`);
  }
  for (const cp of CPS) {
    const a = Date.now();
    exits.push(await stopFor(cp, s.cps.get(cp)!, `http://${s.ip(cp)}:8000/_ready`));
    const b = Date.now();
    await s.startControlPlane(cp);
    await lbShows('cps', cp, 'UP');
    steps.push(`${cp}:${b - a}+${Date.now() - b}`);
  }
  const tookMs = Date.now() - t0;
  const patch = await s.patchFlag(cpFlag, 100);
  await sleep(1_000);
  const t1 = Date.now();
  const failed = s.load.failuresBetween(t0, t1);
  const flagsFailed = failed.filter((f) => f.path.startsWith('/flags')).length;
  const ev = await events(t0 - 2_000, t1, 30_000);
  figure(t, 'rolling upgrade', { failed: failed.length, flags_failed: flagsFailed, batch_failed: failed.length - flagsFailed, acked: ev.acked, stored: ev.stored, dup: ev.dup, took_ms: tookMs, stop_plus_start_ms: steps.join(','), exits: exits.map((e) => `${e.name}:${e.exit}`).join(','), drained_ms: exits.map((e) => `${e.name}:${e.drainedMs}`).join(',') });
  assert.equal(patch.status, 200, patch.text);
  assert.equal(flagsFailed, 0, JSON.stringify(failed.slice(0, 10)));
  assert.ok(exits.every((e) => e.exit === '0'), `exit codes ${exits.map((e) => `${e.name}:${e.exit}`).join(',')} (want 0)`);
  assert.ok(exits.every((e) => e.drainedMs >= DRAIN_SECONDS * 1000 - 300),
    `not ready (503) then serving ${DRAIN_SECONDS} s before the exit: ${exits.map((e) => `${e.name}:${e.drainedMs} ms`).join(', ')}`);
  assert.deepEqual(ev.missing, [], 'acknowledged events lost');
  assert.equal(ev.dup, 0);
}));

test('every event acknowledged during the run is stored exactly once', { timeout: 60_000 }, async (t) => {
  await s.stopLoad();
  const ev = await events(loadStart, Date.now(), 30_000);
  const f = s.load.last;
  figure(t, 'whole run', { flags_ok: f.flagsOk, flags_failed: f.flagsFail, batches_ok: f.batchOk, batches_failed: f.batchFail, events_sent: f.eventsSent, acked: ev.acked, stored: ev.stored, dup: ev.dup, missing: ev.missing.length });
  assert.ok(ev.acked > 0);
  assert.deepEqual(ev.missing, [], 'acknowledged events lost');
  assert.equal(ev.dup, 0);
});

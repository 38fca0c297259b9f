/**
 * Posthog-python, unchanged, against a real node: remote evaluation (`/flags`) and local
 * evaluation (the `/flags/definitions` feed with a personal API key) must both equal what POST
 * /flags answers, for 200 users across rollout, multivariate with payloads, person-property,
 * group and cohort flags. The SDK is installed by pip into a fresh directory (the machine's package
 * index; the test is skipped, saying why, only when no index can provide it).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { spawn, spawnSync } from 'node:child_process';
import { createFlag, flags, startCluster, waitReady, type SystemCluster } from './support.js';
import { waitFor } from '../support/wait.js';
import { seedCohort } from '../support/seed.js';

const USERS = 200;

/**
 * posthog installed by pip into a fresh directory of `dir` (`pip install --target`: a venv's
 * ensurepip alone cost more CPU than the SDK's install), as the Python to run and the
 * PYTHONPATH that finds it; or the reason there is none. Two pip steps that do not touch what is
 * installed are left out, for CPU: byte-compiling every installed file (`--no-compile`; Python
 * compiles the modules the script imports) and the check of the machine's other installed
 * packages for conflicts (`--no-warn-conflicts`; it parsed every requirement of every package of
 * the system's Python: more than half of pip's CPU).
 */
function posthogSite(dir: string): { python: string; pythonPath: string } | { skip: string } {
  const site = path.join(dir, 'site');
  const pip = spawnSync('python3', ['-m', 'pip', 'install', '-q', '--disable-pip-version-check', '--root-user-action=ignore', '--no-compile', '--no-warn-conflicts',
    '--retries', '0', '--timeout', '10', '--target', site, 'posthog'], { encoding: 'utf8', timeout: 300_000 });
  if (pip.error) return { skip: `python3 -m pip could not run: ${pip.error.message}` };
  if (pip.status !== 0) return { skip: `pip could not install posthog (no package index reachable): ${pip.stderr.trim().split('\n').pop()}` };
  return { python: 'python3', pythonPath: site };
}

const SCRIPT = `
import json, sys
from posthog import Posthog
cfg = json.load(sys.stdin)
remote = Posthog(cfg["token"], host=cfg["host"], disable_geoip=True, send=False, enable_local_evaluation=False)
local = Posthog(cfg["token"], host=cfg["host"], personal_api_key=cfg["personal_key"], disable_geoip=True, send=False)
local.load_feature_flags()
out = {"version": __import__("posthog").VERSION, "remote": {}, "local": {}}
for u in cfg["users"]:
    kw = dict(person_properties=u["person"], groups={"organization": u["org"]}, group_properties={"organization": u["org_props"]})
    for mode, client, only_local in (("remote", remote, False), ("local", local, True)):
        row = {}
        for k in cfg["keys"]:
            v = client.get_feature_flag(k, u["id"], only_evaluate_locally=only_local, send_feature_flag_events=False, **kw)
            p = client.get_feature_flag_payload(k, u["id"], match_value=v, only_evaluate_locally=only_local, **kw) if v else None
            row[k] = [v, p]
        out[mode][u["id"]] = row
print(json.dumps(out))
`;

/**
 * The environment the script runs with: this process's PATH, HOME, locale and Python/pyenv
 * variables, and `pythonPath`. Not the whole environment: requests reads every variable on every
 * request (looking for proxy settings), which with the test runner's environment was a third of
 * the script's CPU for its 2,000 requests.
 */
function pythonEnv(pythonPath: string): NodeJS.ProcessEnv {
  const kept = Object.entries(process.env).filter(([k]) => ['PATH', 'HOME', 'LANG', 'LC_ALL', 'TMPDIR'].includes(k) || /^(PYENV|PYTHON)/.test(k));
  return { ...Object.fromEntries(kept), PYTHONPATH: pythonPath };
}

/** Runs SCRIPT with `input` on stdin, without blocking this process's event loop; killed after 5 minutes. */
function runPython(python: string, pythonPath: string, input: string): Promise<{ status: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(python, ['-W', 'ignore::DeprecationWarning', '-c', SCRIPT], { stdio: ['pipe', 'pipe', 'pipe'], env: pythonEnv(pythonPath) });
    let stdout = '';
    let stderr = '';
    const timer = setTimeout(() => child.kill('SIGKILL'), 300_000);
    child.stdout.on('data', (d) => { stdout += String(d); });
    child.stderr.on('data', (d) => { stderr += String(d); });
    child.on('error', reject);
    child.on('close', (status) => { clearTimeout(timer); resolve({ status, stdout, stderr }); });
    child.stdin.end(input);
  });
}

test('posthog-python agrees with /flags for 200 users, remotely and by local evaluation', { timeout: 600_000 }, async (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'switchyard-pypi-'));
  try {
    const env = posthogSite(dir);
    if ('skip' in env) { t.skip(env.skip); return; }
    const c = await startCluster();
    try {
      const node = await c.startNode(c.tempDir());
      await waitReady(node.http.url);
      await createFlag(c, { key: 'py-mv', filters: { groups: [{ properties: [], rollout_percentage: 100 }],
        multivariate: { variants: [{ key: 'control', rollout_percentage: 50 }, { key: 'test', rollout_percentage: 50 }] },
        payloads: { control: '{"color":"blue"}', test: '{"color":"green"}' } } });
      await createFlag(c, { key: 'py-rollout', filters: { groups: [{ properties: [], rollout_percentage: 35 }], payloads: { true: '"yes"' } } });
      await createFlag(c, { key: 'py-email', filters: { groups: [{ properties: [{ key: 'email', type: 'person', operator: 'icontains', value: '@example.com' }], rollout_percentage: 100 }] } });
      await createFlag(c, { key: 'py-org', filters: { aggregation_group_type_index: 0,
        groups: [{ properties: [{ key: 'plan', type: 'group', group_type_index: 0, operator: 'exact', value: ['pro'] }], rollout_percentage: 100 }] } });
      const cohort = await seedCohort(c.t.db.sql, c.t.projectId, 'x.com people'); // email icontains @x.com
      await createFlag(c, { key: 'py-cohort', filters: { groups: [{ properties: [{ key: 'id', type: 'cohort', value: cohort }], rollout_percentage: 100 }] } });
      const keys = ['py-mv', 'py-rollout', 'py-email', 'py-org', 'py-cohort'];
      await waitFor('the node serving the flags', async () => (await flags(node.http.url, c.t.projectKey, 'probe')).body.flags?.['py-cohort'] !== undefined, { timeoutMs: 30_000, intervalMs: 100 });
      const users = Array.from({ length: USERS }, (_, i) => ({
        id: `py-user-${i}`, person: { email: i % 3 === 0 ? `u${i}@example.com` : i % 3 === 1 ? `u${i}@x.com` : `u${i}@other.org` },
        org: `org-${i % 9}`, org_props: { plan: i % 2 === 0 ? 'pro' : 'free' },
      }));
      const personalKey = await c.t.createKey(['feature_flag:read']);
      // Asynchronously: the node answering the SDK runs in this process.
      const run = await runPython(env.python, env.pythonPath, JSON.stringify({ token: c.t.projectKey, host: node.http.url, personal_key: personalKey, users, keys }));
      assert.equal(run.status, 0, run.stderr);
      const seen = JSON.parse(run.stdout) as { version: string; remote: Record<string, Record<string, [unknown, unknown]>>; local: Record<string, Record<string, [unknown, unknown]>> };
      for (const u of users) {
        const r = await flags(node.http.url, c.t.projectKey, u.id, { person_properties: u.person,
          groups: { organization: u.org }, group_properties: { organization: u.org_props } });
        const expected: Record<string, [unknown, unknown]> = {};
        for (const k of keys) {
          const f = r.body.flags[k];
          const value = f.enabled ? (f.variant ?? true) : false;
          expected[k] = [value, f.enabled && f.metadata.payload != null ? JSON.parse(f.metadata.payload) : null];
        }
        assert.deepEqual(seen.remote[u.id], expected, `${u.id} remote (posthog-python ${seen.version})`);
        assert.deepEqual(seen.local[u.id], expected, `${u.id} local evaluation (posthog-python ${seen.version})`);
      }
      for (const k of keys) {
        assert.ok(new Set(users.map((u) => JSON.stringify(seen.remote[u.id]![k]![0]))).size >= 2, `${k} varies among the users`);
      }
    } finally {
      await c.close();
    }
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

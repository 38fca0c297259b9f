/**
 * The examples of README.md and docs/api.md that talk to a running server, run as written against
 * a real control plane, Postgres and node. The README's are its tour (readme-tour.test.ts runs
 * them); this file checks that no other README block talks to a server, then runs docs/api.md's
 * flag, node and remote-config `sh` blocks with bash and its posthog-node and OpenFeature `js`
 * blocks with node. Only the documented placeholders are replaced: `$BASE`, `$FLAGS`, `$KEY`,
 * `$PHC` (environment), project id 1, and in the `js` blocks the default node address and keys.
 * Every curl call's status is recorded (a `curl` shell function adding `-w` to stderr) and must be
 * 2xx; the SDK blocks' printed values must equal what the node's /flags answers, never a default.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { runCommand } from '../support/run-command.js';
import { fileURLToPath } from 'node:url';
import { waitFor } from '../support/wait.js';
import { flags, startCluster, waitReady } from './support.js';

const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..', '..');

interface Block { lang: string; code: string; section: string }

/** The fenced blocks of `file`, each with the `## ` section it is in. */
function blocksOf(file: string): Block[] {
  const text = fs.readFileSync(path.join(repo, file), 'utf8');
  const out: Block[] = [];
  let section = '';
  for (const m of text.matchAll(/^## (.+)$|^```(\w+)\n([\s\S]*?)^```$/gm)) {
    if (m[1] !== undefined) section = m[1];
    else out.push({ lang: m[2]!, code: m[3]!, section });
  }
  return out;
}

/** The one block of `blocks` containing `marker`. */
function blockWith(blocks: Block[], marker: string): Block {
  const found = blocks.filter((b) => b.code.includes(marker));
  assert.equal(found.length, 1, `exactly one block contains ${marker}`);
  return found[0]!;
}

/** Talks to a running server: curl, the tour's variables, or an SDK. */
const talksToServer = (b: Block) => /\bcurl\b|\$(BASE|FLAGS)\b|from 'posthog-node'|@openfeature|posthog\.init/.test(b.code);

test('README and docs/api.md examples run as written against a real stack', { timeout: 180_000 }, async () => {
  const readme = blocksOf('README.md');
  const outside = readme.filter((b) => b.section !== 'A five-minute tour' && talksToServer(b) && !/^\| /m.test(b.code));
  assert.deepEqual(outside.map((b) => b.code), [], 'README blocks that talk to a server are in the tour (readme-tour.test.ts)');

  const api = blocksOf('docs/api.md');
  for (const name of ['BASE', 'KEY']) assert.match(blockWith(api, 'export BASE=').code, new RegExp(`\\b${name}=`));
  for (const name of ['FLAGS', 'PHC']) assert.match(blockWith(api, 'export FLAGS=').code, new RegExp(`\\b${name}=`));

  const c = await startCluster();
  const work = fs.mkdtempSync(path.join(repo, 'dist', 'readme-examples-')); // inside the repo: SDK imports resolve
  try {
    const t = c.t;
    const node = await c.startNode(c.tempDir());
    await waitReady(node.http.url);
    const env = { ...process.env, BASE: t.baseUrl, FLAGS: node.http.url, KEY: t.personalKey, PHC: t.projectKey };
    const project = (code: string) => code.replaceAll('/api/projects/1/', `/api/projects/${t.projectId}/`);
    // Each curl call appends "HTTP <status> <method> <url>" to stderr (a block's own -w wins).
    const prelude = `curl() { command curl -w '%{stderr}HTTP %{http_code} %{method} %{url_effective}\\n' "$@"; }\n`;
    const sh = async (b: Block) => {
      // The block's `export` lines would point at the defaults: the test's env stands in for them.
      const code = project(b.code).split('\n').filter((l) => !l.startsWith('export ')).join('\n');
      const r = await runCommand('bash', ['-eu', '-c', prelude + code], env, work);
      const statuses = [...r.err.matchAll(/^HTTP (\d{3}) (\S+) (\S+)$/gm)];
      assert.ok(statuses.length > 0, `the block called curl: ${r.err}`);
      for (const [line, status] of statuses) assert.ok(Number(status) >= 200 && Number(status) < 300, `${line}\n${r.out}`);
      return r.out;
    };
    const js = async (b: Block, name: string) => {
      const code = b.code.replaceAll('http://127.0.0.1:8010', node.http.url)
        .replaceAll('phc_local_development_key_0001', t.projectKey).replaceAll('phx_local_development_key_0001', t.personalKey);
      fs.writeFileSync(path.join(work, name), code);
      return (await runCommand(process.execPath, [name], env, work)).out;
    };

    // Feature flags: create, list, retrieve, update, soft delete (DELETE is 405), restore, activity.
    const flagsOut = await sh(blockWith(api, '"key": "pricing-test"'));
    assert.ok(/\}405\n\{/.test(flagsOut), 'the documented DELETE refusal (405) between the soft delete and the restore');
    const created = await t.db.sql<{ id: number; key: string; name: string; active: boolean; deleted: boolean }[]>`
      SELECT id::int, key, name, active, deleted FROM feature_flags WHERE project_id = ${t.projectId} ORDER BY id`;
    assert.deepEqual(created.map((f) => [f.id, f.key, f.name, f.active, f.deleted]),
      [[1, 'new-checkout', 'New checkout flow v2', true, false], [2, 'pricing-test', '', true, false]], 'flag 1 of the examples is new-checkout');

    // The node: /flags, the local-evaluation feed, capture, probes.
    await waitFor('the node serves pricing-test', async () => (await flags(node.http.url, t.projectKey, 'user-42')).body.flags?.['pricing-test']?.enabled === true,
      { timeoutMs: 20_000, intervalMs: 100 });
    const nodeOut = await sh(blockWith(api, 'export FLAGS='));
    assert.ok(nodeOut.includes('"pricing-test"') && nodeOut.includes('switchyard_'), 'the node block: /flags, the feed, capture, probes');

    // Remote config, an extension script, and F10. The block reads the node's remote config right
    // after its PATCH, faster than any reader types: the same PATCH is made and awaited on the
    // node first, so what the block prints does not depend on that race (its own PATCH repeats it).
    const patched = await t.request('PATCH', `/api/projects/${t.projectId}/`, { body: { heatmaps_opt_in: true } });
    assert.equal(patched.status, 200, patched.text);
    await waitFor('the node serves heatmaps in the remote config', async () =>
      (await fetch(`${node.http.url}/array/${t.projectKey}/config`).then((r) => r.text())).includes('"heatmaps":true'), { timeoutMs: 20_000, intervalMs: 50 });
    const remoteOut = await sh(blockWith(api, '"key": "my-config"'));
    assert.ok(remoteOut.includes('200 application/javascript; charset=utf-8\n'), 'surveys.js from the node');
    assert.ok(remoteOut.includes('"heatmaps":true'), 'the remote config follows heatmaps_opt_in');
    assert.ok(remoteOut.endsWith('"{\\"theme\\": \\"dark\\"}"'), `F10 answers the payload: ${remoteOut.slice(-200)}`);

    // What the node answers user-42, to compare the SDKs with.
    await waitFor('the node serves my-config', async () => (await flags(node.http.url, t.projectKey, 'user-42')).body.flags?.['my-config'] !== undefined,
      { timeoutMs: 20_000, intervalMs: 100 });
    const truth = (await flags(node.http.url, t.projectKey, 'user-42', { person_properties: { email: 'ada@example.com' } })).body.flags;
    const variant = truth['pricing-test'].variant as string;
    assert.ok(['control', 'test'].includes(variant));

    const posthogOut = (await js(blockWith(api, "from 'posthog-node'"), 'posthog-node.mjs')).split('\n');
    assert.equal(posthogOut[0], variant, 'posthog-node: the variant of pricing-test');
    assert.match(posthogOut.slice(1).join('\n'), new RegExp(`'pricing-test': '${variant}'`));
    assert.match(posthogOut.slice(1).join('\n'), new RegExp(`'new-checkout': ${truth['new-checkout'].enabled}`));
    assert.match(posthogOut.slice(1).join('\n'), /\{ theme: 'dark' \}/, 'posthog-node: the remote config payload');

    const ofOut = (await js(blockWith(api, '@openfeature/server-sdk'), 'openfeature.mjs')).split('\n');
    assert.equal(ofOut[0], String(truth['new-checkout'].enabled), 'OpenFeature boolean: what /flags answers');
    const details = ofOut.slice(1).join('\n');
    assert.match(details, new RegExp(`value: '${variant}'`), `OpenFeature string: the variant, not the default 'unknown'\n${details}`);
    assert.doesNotMatch(details, /reason: '(ERROR|DEFAULT)'|errorCode/, details);
  } finally {
    fs.rmSync(work, { recursive: true, force: true });
    await c.close();
  }
});

/**
 * The README's five-minute tour, run as written against a real control plane, Postgres and node:
 * every `sh` block with bash and every `js` block with node (posthog-node resolved from this
 * repository), in order, with the tour's variables pointing at the test's stack. The steps' own
 * outputs are checked: the flag is created and served, posthog-node sees it with its payload,
 * the experiment's traffic is counted by the analysis exactly as sent, and the console answers.
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

interface Block { lang: string; code: string }

/** The fenced blocks of the README section headed `heading`, in order. */
function tourBlocks(heading: string): Block[] {
  const readme = fs.readFileSync(path.join(repo, 'README.md'), 'utf8');
  const start = readme.indexOf(`\n## ${heading}\n`);
  assert.ok(start >= 0, `README has a "${heading}" section`);
  const end = readme.indexOf('\n## ', start + 1);
  const section = readme.slice(start, end < 0 ? undefined : end);
  return [...section.matchAll(/```(\w+)\n([\s\S]*?)```/g)].map((m) => ({ lang: m[1]!, code: m[2]! }));
}

test('the README tour works as written: create a flag, evaluate it with posthog-node, run an experiment, read its result, open the console', async () => {
  const blocks = tourBlocks('A five-minute tour');
  assert.deepEqual(blocks.map((b) => b.lang), ['sh', 'sh', 'sh', 'js', 'sh', 'js', 'sh'], 'the tour has the steps this test checks');
  const c = await startCluster();
  const work = fs.mkdtempSync(path.join(repo, 'dist', 'readme-tour-')); // inside the repo: `import 'posthog-node'` resolves
  try {
    const t = c.t;
    const node = await c.startNode(c.tempDir());
    await waitReady(node.http.url);
    const env = { ...process.env, BASE: t.baseUrl, FLAGS: node.http.url, KEY: t.personalKey, PHC: t.projectKey };
    const project = (code: string) => code.replaceAll('/api/projects/1/', `/api/projects/${t.projectId}/`);
    const sh = async (b: Block) => (await runCommand('bash', ['-euo', 'pipefail', '-c', project(b.code)], env, work)).out;
    const js = async (b: Block, name: string) => {
      fs.writeFileSync(path.join(work, name), b.code);
      return (await runCommand(process.execPath, [name], env, work)).out;
    };
    // Block 0 sets the variables; the test's env stands in for it (its names must be the ones used).
    for (const name of ['BASE', 'FLAGS', 'KEY', 'PHC']) assert.match(blocks[0]!.code, new RegExp(`\\b${name}=`));

    const created = JSON.parse(await sh(blocks[1]!));
    assert.equal(created.key, 'new-checkout', JSON.stringify(created));
    // Waited for in-process (a bash and curl per poll cost more than the wait), then the block runs.
    await waitFor('the node serves new-checkout', async () => (await flags(node.http.url, t.projectKey, 'user-42', { person_properties: { email: 'ada@example.com' } })).body?.flags?.['new-checkout']?.enabled === true,
      { timeoutMs: 20_000, intervalMs: 100 });
    const answer = JSON.parse(await sh(blocks[2]!));
    assert.equal(answer.flags?.['new-checkout']?.enabled, true, JSON.stringify(answer));

    const evaluated = await js(blocks[3]!, 'tour.mjs');
    assert.match(evaluated, /new-checkout for user-42: true \{ color: 'blue' \}/);

    const experiment = JSON.parse(await sh(blocks[4]!));
    assert.equal(experiment.feature_flag_key, 'checkout-button', JSON.stringify(experiment));
    await waitFor('the node serves checkout-button', async () => {
      const r = await fetch(`${node.http.url}/flags/?v=2`, { method: 'POST', body: JSON.stringify({ api_key: t.projectKey, distinct_id: 'probe' }) });
      return (await r.json() as { flags?: Record<string, { enabled: boolean }> }).flags?.['checkout-button']?.enabled === true;
    }, { timeoutMs: 20_000, intervalMs: 100 });
    await js(blocks[5]!, 'traffic.mjs');

    // What the traffic sent, read back from what was stored: each visitor's variant and purchase.
    await waitFor('the tour traffic ingested', async () => {
      const [row] = await t.db.sql<{ n: number }[]>`SELECT count(DISTINCT distinct_id)::int AS n FROM events
        WHERE project_id = ${t.projectId} AND event = '$feature_flag_called' AND distinct_id LIKE 'visitor-%'`;
      return row!.n === 200;
    }, { timeoutMs: 60_000, intervalMs: 200 });
    const expected = new Map<string, { n: number; sum: number }>();
    const stored = await t.db.sql<{ variant: string; bought: boolean }[]>`SELECT e.properties->>'$feature_flag_response' AS variant,
        EXISTS (SELECT 1 FROM events p WHERE p.project_id = e.project_id AND p.distinct_id = e.distinct_id AND p.event = 'purchase') AS bought
      FROM (SELECT DISTINCT ON (distinct_id) project_id, distinct_id, properties FROM events
            WHERE project_id = ${t.projectId} AND event = '$feature_flag_called' AND distinct_id LIKE 'visitor-%') e`;
    for (const { variant, bought } of stored) {
      const a = expected.get(variant) ?? { n: 0, sum: 0 };
      a.n++; if (bought) a.sum++;
      expected.set(variant, a);
    }
    const result = JSON.parse(await sh(blocks[6]!));
    const arms = [result.baseline, ...(result.variant_results ?? [])] as { key: string; number_of_samples: number; sum: number }[];
    assert.deepEqual(arms.map((a) => a.key), ['control', 'test'], JSON.stringify(result));
    for (const arm of arms) assert.deepEqual([arm.number_of_samples, arm.sum], [expected.get(arm.key)!.n, expected.get(arm.key)!.sum], arm.key);
    assert.equal(typeof result.variant_results[0].chance_to_win, 'number');

    const consolePage = await fetch(`${t.baseUrl}/`, { headers: { accept: 'text/html' } });
    assert.equal(consolePage.status, 200);
    assert.match(await consolePage.text(), /<html/i);
  } finally {
    fs.rmSync(work, { recursive: true, force: true });
    await c.close();
  }
});

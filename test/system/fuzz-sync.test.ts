/**
 * Bounded random hostile input through the whole path. Seeded random
 * capture batches (deep, large and unicode values: NUL, lone surrogates, `__proto__` and
 * `constructor` keys, long ids, `$identify` / `$create_alias` / `$groupidentify` / `$set`) go
 * to two real node services; then:
 * - every request gets 200, 400 or 413, never a 5xx;
 * - every event of a request answered 200 is stored exactly once, and none of a refused one;
 * - nothing the edge accepted is dead-lettered, and no node skipped a change;
 * - a flag created afterwards reaches both nodes (sync keeps flowing).
 * Real control plane, Postgres, gRPC, LMDB and HTTP; 127.0.0.1 only; count and time bounded.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { prng } from '../support/prng.js';
import { waitFor } from '../support/wait.js';
import { flags, post, startCluster, waitForEventsOnce, waitReady, eventCounts } from './support.js';

/** Requests sent (each a batch of 1–4 events). */
const REQUESTS = 150;
const SEED = 20_261_124;

type Rand = () => number;
const pick = <T>(r: Rand, xs: readonly T[]): T => xs[Math.floor(r() * xs.length)]!;

/** A random string: ASCII, emoji, NUL, lone surrogates, `__proto__`, occasionally long. */
function text(r: Rand, maxLen = 40): string {
  const pieces = ['a', 'Z', '9', ' ', 'é', '日本', '\u{1F600}', '\u0000', '\ud800', '\udfff', '"', '\\', '__proto__', 'constructor', '%00', '\n'];
  const n = Math.floor(r() * maxLen);
  let s = '';
  for (let i = 0; i < n; i++) s += pick(r, pieces);
  return s;
}

/** A random JSON-like value nested up to `depth` levels (built iteratively at the deep end). */
function value(r: Rand, depth: number): unknown {
  const roll = r();
  if (depth <= 0 || roll < 0.35) return pick(r, [null, true, 0, -1.5, 2 ** 53, text(r), text(r, 3)]);
  if (roll < 0.5) return Array.from({ length: Math.floor(r() * 4) }, () => value(r, depth - 1));
  const o: Record<string, unknown> = {};
  for (let i = Math.floor(r() * 4); i > 0; i--) Object.defineProperty(o, pick(r, ['k', '__proto__', 'constructor', text(r, 8)]), { value: value(r, depth - 1), enumerable: true, writable: true, configurable: true });
  return o;
}

/** `depth` levels of `{"a": …}` around a string. */
function chain(depth: number): unknown {
  let v: unknown = 'leaf';
  for (let i = 0; i < depth; i++) v = { a: v };
  return v;
}

function randomEvent(r: Rand): Record<string, unknown> {
  const kind = pick(r, ['plain', 'plain', 'set', 'identify', 'alias', 'group', 'deep', 'big']);
  const props: Record<string, unknown> = { n: Math.floor(r() * 1000), s: text(r), nested: value(r, 4) };
  const e: Record<string, unknown> = { uuid: randomUUID(), event: text(r, 12) || 'e', distinct_id: text(r, r() < 0.1 ? 300 : 20) || 'd', properties: props };
  switch (kind) {
    case 'set': props.$set = { [text(r, 6) || 'p']: value(r, 3), constructor: 'c' }; props.$set_once = { first: text(r) }; break;
    case 'identify': e.event = '$identify'; props.$anon_distinct_id = 'anon-' + 'x'.repeat(pick(r, [1, 150, 195, 196, 2_300])); break;
    case 'alias': e.event = '$create_alias'; props.alias = text(r, pick(r, [10, 250])); break;
    case 'group': e.event = '$groupidentify'; props.$group_type = pick(r, ['company', 'team', text(r, 5)]); props.$group_key = text(r, pick(r, [10, 600])) || 'g'; props.$group_set = { size: value(r, 2) }; break;
    case 'deep': props.deep = chain(pick(r, [60, 126, 127, 140, 1_250])); break;
    case 'big': props.blob = 'b'.repeat(pick(r, [10_000, 300_000])); break;
  }
  return e;
}

test('fuzzed capture through two nodes: answers are 200/400/413, accepted events stored once, sync keeps flowing', async () => {
  const c = await startCluster();
  try {
    const a = await c.startNode(c.tempDir());
    const b = await c.startNode(c.tempDir());
    await waitReady(a.http.url);
    await waitReady(b.http.url);
    const r = prng(SEED);
    const accepted: string[] = [];
    const refused: string[] = [];
    const statuses = new Map<number, number>();
    for (let i = 0; i < REQUESTS; i++) {
      const events = Array.from({ length: 1 + Math.floor(r() * 4) }, () => randomEvent(r));
      const node = i % 2 === 0 ? a : b;
      const res = await post(`${node.http.url}/batch/`, JSON.stringify({ api_key: c.t.projectKey, batch: events }));
      statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
      assert.ok([200, 400, 413].includes(res.status), `request ${i}: ${res.status} ${res.text.slice(0, 300)}`);
      (res.status === 200 ? accepted : refused).push(...events.map((e) => e.uuid as string));
    }
    console.log(`fuzz: ${REQUESTS} requests, answers ${JSON.stringify(Object.fromEntries(statuses))}, ${accepted.length} events accepted, ${refused.length} refused`);
    assert.ok(accepted.length > 50 && refused.length > 10, 'the mix exercises both paths');

    await waitForEventsOnce(c.t, accepted, 120_000);
    assert.equal((await eventCounts(c.t, refused)).size, 0, 'no event of a refused request is stored');
    const [{ n }] = await c.t.db.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM dead_letter_events`;
    assert.equal(n, 0, 'everything the edge accepted is ingestible');

    const created = await c.t.request('POST', `/api/projects/${c.t.projectId}/feature_flags/`, { body: { key: 'after-fuzz', filters: { groups: [{ properties: [], rollout_percentage: 100 }] } } });
    assert.equal(created.status, 201, created.text);
    for (const node of [a, b]) {
      await waitFor(`${node.http.url} serving after-fuzz`, async () => (await flags(node.http.url, c.t.projectKey, 'probe')).body?.flags?.['after-fuzz']?.enabled === true, { timeoutMs: 30_000 });
      assert.equal(node.node.sync.state().skippedChanges, 0, 'no change was skipped');
      // Caught up: a change appended after the flag (the head a node hears of before it applies
      // it) may still be on its way when the flag is served.
      await waitFor(`${node.http.url} caught up`, () => node.node.sync.state().lag === 0, { timeoutMs: 10_000 });
    }
  } finally {
    await c.close();
  }
});

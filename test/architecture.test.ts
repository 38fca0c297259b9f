/**
 * The import rules of docs/architecture.md, read from the TypeScript sources: the two tiers share
 * only `src/contract/` (and the pure modules below it); the control plane reaches the node only
 * through its public entry `src/eval-node/index.ts`; the evaluation core, the statistics, the
 * contract and the feeds import neither tier; and no module imports itself through a circle.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const src = path.join(repo, 'src');

function sources(dir: string): string[] {
  const out: string[] = [];
  for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) out.push(...sources(p));
    else if (e.name.endsWith('.ts')) out.push(p);
  }
  return out;
}

const IMPORT = /(?:^|[\s;])(?:import|export)\s[^'"]*?from\s*['"](\.{1,2}\/[^'"]+)['"]|import\(\s*['"](\.{1,2}\/[^'"]+)['"]\s*\)|^import\s+['"](\.{1,2}\/[^'"]+)['"]/gm;

/** Each source file (relative to src/, `.ts`) → the src files it imports (type-only imports included). */
function importGraph(): Map<string, string[]> {
  const graph = new Map<string, string[]>();
  for (const file of sources(src)) {
    const text = fs.readFileSync(file, 'utf8');
    const targets: string[] = [];
    for (const m of text.matchAll(IMPORT)) {
      const spec = m[1] ?? m[2] ?? m[3]!;
      const resolved = path.resolve(path.dirname(file), spec).replace(/\.js$/, '.ts');
      if (resolved.startsWith(src + path.sep)) targets.push(path.relative(src, resolved));
    }
    graph.set(path.relative(src, file), targets);
  }
  return graph;
}

const graph = importGraph();
const under = (file: string, folder: string) => file.startsWith(`${folder}/`);

test('the import graph is read from the sources (the rules below have something to check)', () => {
  assert.ok(graph.size > 100, `${graph.size} source files`);
  assert.ok([...graph.values()].some((t) => t.includes('contract/entities.ts')), 'some module imports the contract');
});

test('src/eval-node imports nothing of src/control-plane', () => {
  const bad = [...graph].flatMap(([f, ts]) => (under(f, 'eval-node') ? ts.filter((t) => under(t, 'control-plane')).map((t) => `${f} → ${t}`) : []));
  assert.deepEqual(bad, []);
});

test('src/control-plane imports the node only through src/eval-node/index.ts', () => {
  const bad = [...graph].flatMap(([f, ts]) => (under(f, 'control-plane') ? ts.filter((t) => under(t, 'eval-node') && t !== 'eval-node/index.ts').map((t) => `${f} → ${t}`) : []));
  assert.deepEqual(bad, []);
});

test('the contract, the feeds, the evaluation core and the statistics import neither tier nor the commands', () => {
  const lower = ['contract', 'feed', 'evaluation', 'stats'];
  const tiers = ['control-plane', 'eval-node', 'commands'];
  const bad = [...graph].flatMap(([f, ts]) => (lower.some((l) => under(f, l)) ? ts.filter((t) => tiers.some((x) => under(t, x)) || t === 'cli.ts').map((t) => `${f} → ${t}`) : []));
  assert.deepEqual(bad, []);
});

test('no import circles between modules', () => {
  const circles: string[] = [];
  const state = new Map<string, 'open' | 'done'>();
  const stack: string[] = [];
  const visit = (f: string): void => {
    state.set(f, 'open');
    stack.push(f);
    for (const t of graph.get(f) ?? []) {
      if (state.get(t) === 'open') circles.push([...stack.slice(stack.indexOf(t)), t].join(' → '));
      else if (!state.has(t)) visit(t);
    }
    stack.pop();
    state.set(f, 'done');
  };
  for (const f of [...graph.keys()].sort()) if (!state.has(f)) visit(f);
  assert.deepEqual(circles, []);
});

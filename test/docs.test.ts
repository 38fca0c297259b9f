/**
 * The user-facing documents stay true to the code: every environment variable the sources read is
 * in docs/configuration.md (and the page names none that no longer exists), the README stays a
 * short page for users, and neither carries build history (work-item numbers).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');

function files(dir: string, ext: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = path.join(dir, e.name);
    return e.isDirectory() ? files(p, ext) : p.endsWith(ext) ? [p] : [];
  });
}

const VARIABLE = /\bSWITCHYARD_[A-Z0-9]+(?:_[A-Z0-9]+)*\b/g;

test('docs/configuration.md lists exactly the environment variables the sources read', () => {
  const read = new Set(files(path.join(repo, 'src'), '.ts').flatMap((f) => fs.readFileSync(f, 'utf8').match(VARIABLE) ?? []));
  const documented = new Set(fs.readFileSync(path.join(repo, 'docs', 'configuration.md'), 'utf8').match(VARIABLE) ?? []);
  assert.ok(read.size > 20, `${read.size} variables read`);
  assert.deepEqual([...read].filter((v) => !documented.has(v)).sort(), [], 'read but not documented');
  assert.deepEqual([...documented].filter((v) => !read.has(v)).sort(), [], 'documented but never read');
});

test('docs/architecture.md names every folder under src/', () => {
  const doc = fs.readFileSync(path.join(repo, 'docs', 'architecture.md'), 'utf8');
  const folders = (dir: string): string[] => fs.readdirSync(dir, { withFileTypes: true })
    .filter((e) => e.isDirectory()).flatMap((e) => [path.join(dir, e.name), ...folders(path.join(dir, e.name))]);
  const unnamed = folders(path.join(repo, 'src')).map((d) => `${path.relative(repo, d)}/`).filter((d) => !doc.includes(`\`${d}\``));
  assert.deepEqual(unnamed, []);
});

test('the README is a short page for users and the docs carry no build history', () => {
  const readme = fs.readFileSync(path.join(repo, 'README.md'), 'utf8');
  assert.ok(readme.split('\n').length <= 250, `README.md has ${readme.split('\n').length} lines`);
  assert.match(readme, /make start/);
  assert.match(readme, /make test/);
  const texts = [path.join(repo, 'README.md'), ...files(path.join(repo, 'docs'), '.md'),
    ...['src', 'test', 'bench', 'workers', 'console/src'].flatMap((d) => files(path.join(repo, d), '.ts')),
    ...files(path.join(repo, 'src', 'control-plane', 'db', 'migrations'), '.sql')];
  const history = texts.filter((f) => /\b(issue|session) [0-9]|\(issue[:]/i.test(fs.readFileSync(f, 'utf8'))).map((f) => path.relative(repo, f));
  assert.deepEqual(history, []);
});

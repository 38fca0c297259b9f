/**
 * `switchyard evaluate` end to end: spawns `node dist/src/cli.js evaluate` with files and stdin,
 * checks the printed /flags body and the exit codes (0, and 2 for bad input).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { PACKAGE_ROOT } from '../../src/paths.js';

const CLI = path.join(PACKAGE_ROOT, 'dist', 'src', 'cli.js');
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'switchyard-evaluate-'));
const write = (name: string, content: unknown) => {
  const p = path.join(dir, name);
  fs.writeFileSync(p, typeof content === 'string' ? content : JSON.stringify(content));
  return p;
};

// checkout-layout/user-61 → variant hash 0.5698 → "compact" (vectors/harness-hash_sha1_60_v1.json).
const DEFS = write('defs.json', {
  flags: [
    { id: 1, key: 'checkout-layout', active: true, version: 4, filters: {
      groups: [{ properties: [], rollout_percentage: 100 }],
      multivariate: { variants: [{ key: 'control', rollout_percentage: 50 }, { key: 'compact', rollout_percentage: 25 }, { key: 'spacious', rollout_percentage: 25 }] },
      payloads: { compact: '{"c":1}' } } },
    { id: 2, key: 'pro-only', active: true, filters: { groups: [{ properties: [{ key: 'plan', type: 'person', operator: 'exact', value: 'pro' }] }] } },
    { id: 3, key: 'off', active: false, filters: { groups: [] } },
  ],
  group_type_mapping: {}, cohorts: {},
});
const REQ = write('req.json', { token: 'phc_x', distinct_id: 'user-61' });
const PERSON = write('person.json', { plan: 'pro' });

function run(args: string[], input?: string) {
  const r = spawnSync(process.execPath, [CLI, 'evaluate', ...args], { input, encoding: 'utf8' });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

test('v2 from files, with stored person properties and a fixed clock', () => {
  const r = run(['--definitions', DEFS, '--request', REQ, '--person-properties', PERSON, '--now', '2026-01-01T00:00:00Z']);
  assert.equal(r.code, 0, r.stderr);
  const body = JSON.parse(r.stdout);
  assert.deepEqual(Object.keys(body.flags).sort(), ['checkout-layout', 'pro-only']);
  assert.deepEqual(body.flags['checkout-layout'], {
    key: 'checkout-layout', enabled: true, variant: 'compact',
    reason: { code: 'condition_match', condition_index: 0, description: 'Matched condition set 1' },
    metadata: { id: 1, version: 4, payload: '{"c":1}', description: null },
  });
  assert.equal(body.flags['pro-only'].enabled, true);
  assert.equal(body.errorsWhileComputingFlags, false);
  assert.equal(body.evaluatedAt, Date.UTC(2026, 0, 1));
  assert.match(body.requestId, /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
});

test('v1 with the request on stdin; request person_properties override the stored ones', () => {
  const r = run(['--definitions', DEFS, '--request', '-', '--person-properties', PERSON, '--format', 'v1'],
    JSON.stringify({ distinct_id: 'user-61', person_properties: { plan: 'free' } }));
  assert.equal(r.code, 0, r.stderr);
  const body = JSON.parse(r.stdout);
  assert.deepEqual(body.featureFlags, { 'checkout-layout': 'compact', 'pro-only': false });
  assert.deepEqual(body.featureFlagPayloads, { 'checkout-layout': '{"c":1}' });
});

test('definitions on stdin (--opt=value form)', () => {
  const r = run([`--request=${REQ}`, '--definitions=-'], fs.readFileSync(DEFS, 'utf8'));
  assert.equal(r.code, 0, r.stderr);
  assert.equal(JSON.parse(r.stdout).flags['checkout-layout'].variant, 'compact');
});

test('--runtime selects runtime-bound flags (undetermined by default)', () => {
  const defs = write('runtime.json', { flags: [{ id: 1, key: 'srv', active: true, evaluation_runtime: 'server', filters: { groups: [{}] } }], group_type_mapping: {}, cohorts: {} });
  const without = run(['--definitions', defs, '--request', REQ]);
  assert.equal(without.code, 0, without.stderr);
  assert.deepEqual(JSON.parse(without.stdout).flags, {});
  const withServer = run(['--definitions', defs, '--request', REQ, '--runtime', 'server']);
  assert.equal(JSON.parse(withServer.stdout).flags.srv.enabled, true);
});

const failures: Array<{ name: string; args: () => string[]; input?: string; stderr: RegExp }> = [
  { name: 'bad JSON in the request', args: () => ['--definitions', DEFS, '--request', '-'], input: '{not json', stderr: /request "stdin" is not valid JSON/ },
  { name: 'bad JSON in the definitions', args: () => ['--definitions', write('bad.json', '[1,'), '--request', REQ], stderr: /definitions ".*bad\.json" is not valid JSON/ },
  { name: 'invalid definition names the flag and field',
    args: () => ['--definitions', write('invalid.json', { flags: [{ id: 1, key: 'broken', active: true, filters: { groups: [{ rollout_percentage: 'x' }] } }], group_type_mapping: {}, cohorts: {} }), '--request', REQ],
    stderr: /flag "broken", field filters\.groups\[0\]\.rollout_percentage/ },
  { name: 'definitions of the wrong shape', args: () => ['--definitions', write('shape.json', { flags: 3 }), '--request', REQ], stderr: /invalid definitions: flags: must be an array/ },
  { name: 'request without distinct_id', args: () => ['--definitions', DEFS, '--request', write('nodid.json', { token: 'x' })], stderr: /missing_distinct_id/ },
  { name: 'missing file', args: () => ['--definitions', path.join(dir, 'nope.json'), '--request', REQ], stderr: /cannot read definitions/ },
  { name: 'missing --request', args: () => ['--definitions', DEFS], stderr: /--request is required/ },
  { name: 'unknown option', args: () => ['--definitions', DEFS, '--request', REQ, '--bogus', '1'], stderr: /unknown option/ },
  { name: 'bad --format', args: () => ['--definitions', DEFS, '--request', REQ, '--format', 'v9'], stderr: /--format must be v1 or v2/ },
  { name: 'bad --now', args: () => ['--definitions', DEFS, '--request', REQ, '--now', 'yesterday'], stderr: /--now must be an ISO-8601/ },
  { name: 'bad --runtime', args: () => ['--definitions', DEFS, '--request', REQ, '--runtime', 'edge'], stderr: /--runtime must be client or server/ },
  { name: 'two stdin inputs', args: () => ['--definitions', '-', '--request', '-'], stderr: /only one input/ },
];
for (const f of failures) {
  test(`exit 2: ${f.name}`, () => {
    const r = run(f.args(), f.input);
    assert.equal(r.code, 2, r.stdout + r.stderr);
    assert.equal(r.stdout, '');
    assert.match(r.stderr, f.stderr);
  });
}

test('cleanup', () => fs.rmSync(dir, { recursive: true, force: true }));

/**
 * `switchyard evaluate` with files and stdin: the printed /flags body and the exit codes (0, and 2
 * for bad input), through the command's `run` in this process; two real `node dist/src/cli.js
 * evaluate` processes check the request piped to stdin, the printed body and both exit codes.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import * as evaluateCommand from '../../src/commands/evaluate.js';
import { runCli, runInProcess } from '../support/cli.js';
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

/** Runs `switchyard evaluate ...args` with `input` on its stdin, in this process. */
const run = (args: string[], input?: string) => runInProcess(evaluateCommand, args, { stdin: input });

test('v2 from files, with stored person properties and a fixed clock', async () => {
  const r = await run(['--definitions', DEFS, '--request', REQ, '--person-properties', PERSON, '--now', '2026-01-01T00:00:00Z']);
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

test('node dist/src/cli.js evaluate: v1 with the request piped to stdin, request person_properties overriding the stored ones (exit 0); bad JSON on stdin exits 2', async () => {
  const [r, bad] = await Promise.all([
    runCli(['evaluate', '--definitions', DEFS, '--request', '-', '--person-properties', PERSON, '--format', 'v1'],
      { input: JSON.stringify({ distinct_id: 'user-61', person_properties: { plan: 'free' } }) }),
    runCli(['evaluate', '--definitions', DEFS, '--request', '-'], { input: '{not json' }),
  ]);
  assert.equal(r.code, 0, r.stderr);
  const body = JSON.parse(r.stdout);
  assert.deepEqual(body.featureFlags, { 'checkout-layout': 'compact', 'pro-only': false });
  assert.deepEqual(body.featureFlagPayloads, { 'checkout-layout': '{"c":1}' });
  assert.equal(bad.code, 2, bad.stdout + bad.stderr);
  assert.equal(bad.stdout, '');
  assert.match(bad.stderr, /^switchyard evaluate: request "stdin" is not valid JSON/);
});

test('definitions on stdin (--opt=value form)', async () => {
  const r = await run([`--request=${REQ}`, '--definitions=-'], fs.readFileSync(DEFS, 'utf8'));
  assert.equal(r.code, 0, r.stderr);
  assert.equal(JSON.parse(r.stdout).flags['checkout-layout'].variant, 'compact');
});

test('--runtime selects runtime-bound flags (undetermined by default)', async () => {
  const defs = write('runtime.json', { flags: [{ id: 1, key: 'srv', active: true, evaluation_runtime: 'server', filters: { groups: [{}] } }], group_type_mapping: {}, cohorts: {} });
  const without = await run(['--definitions', defs, '--request', REQ]);
  assert.equal(without.code, 0, without.stderr);
  assert.deepEqual(JSON.parse(without.stdout).flags, {});
  const withServer = await run(['--definitions', defs, '--request', REQ, '--runtime', 'server']);
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
  test(`exit 2: ${f.name}`, async () => {
    const r = await run(f.args(), f.input);
    assert.equal(r.code, 2, r.stdout + r.stderr);
    assert.equal(r.stdout, '');
    assert.match(r.stderr, f.stderr);
  });
}

test('cleanup', () => fs.rmSync(dir, { recursive: true, force: true }));

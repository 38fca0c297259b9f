/**
 * Rate limits of the management API, against real control planes with small
 * limits: PostHog's per-key burst (per minute) and sustained (per hour) limits, the
 * local-evaluation feed's per-project limit, 429 with PostHog's throttled body and Retry-After,
 * and 0 turning a limit off.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startTestControlPlane, type JsonResponse } from '../../support/control-plane.js';

function assertThrottled(r: JsonResponse, maxSeconds: number): void {
  assert.equal(r.status, 429);
  const retry = Number(r.headers.get('retry-after'));
  assert.ok(Number.isInteger(retry) && retry >= 1 && retry <= maxSeconds, `Retry-After ${retry}`);
  assert.deepEqual(r.body, { type: 'throttled_error', code: 'throttled', detail: `Request was throttled. Expected available in ${retry} seconds.`, attr: null });
}

test('burst limit per personal key: the request after the limit is 429 for that key only', async () => {
  const t = await startTestControlPlane({ apiBurstRatePerMinute: 5, apiSustainedRatePerHour: 1000 });
  try {
    const other = await t.createKey(['*']);
    for (let i = 0; i < 5; i++) assert.equal((await t.request('GET', '/api/projects/')).status, 200, `request ${i + 1}`);
    assertThrottled(await t.request('GET', `/api/projects/${t.projectId}/feature_flags/`), 60);
    assert.equal((await t.request('GET', '/api/projects/', { key: other })).status, 200, 'another key has its own budget');
    // Requests refused before the key is known do not count against anyone.
    assert.equal((await t.request('GET', '/api/projects/', { key: null })).status, 401);
  } finally { await t.close(); }
});

test('sustained limit per hour applies on its own, with a Retry-After up to an hour', async () => {
  const t = await startTestControlPlane({ apiBurstRatePerMinute: 0, apiSustainedRatePerHour: 3 });
  try {
    for (let i = 0; i < 3; i++) assert.equal((await t.request('GET', '/api/projects/')).status, 200);
    const r = await t.request('GET', '/api/projects/');
    assertThrottled(r, 3600);
    assert.ok(Number(r.headers.get('retry-after')) > 60, 'the hourly window, not a minute');
  } finally { await t.close(); }
});

test('the local-evaluation feed has its own per-project limit and does not spend the key budget', async () => {
  const t = await startTestControlPlane({ apiBurstRatePerMinute: 4, apiSustainedRatePerHour: 1000, definitionsRatePerMinute: 2 });
  try {
    const feed = `/api/projects/${t.projectId}/feature_flags/local_evaluation/`;
    assert.equal((await t.request('GET', feed)).status, 200);
    assert.equal((await t.request('GET', feed)).status, 200);
    assertThrottled(await t.request('GET', feed), 60);
    for (let i = 0; i < 4; i++) assert.equal((await t.request('GET', '/api/projects/')).status, 200, `key request ${i + 1}`);
  } finally { await t.close(); }
});

test('limits of 0 turn rate limiting off', async () => {
  const t = await startTestControlPlane({ apiBurstRatePerMinute: 0, apiSustainedRatePerHour: 0 });
  try {
    for (let i = 0; i < 30; i++) assert.equal((await t.request('GET', '/api/projects/')).status, 200);
  } finally { await t.close(); }
});

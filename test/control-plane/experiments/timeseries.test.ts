/**
 * E8/E9 timeseries against real control planes on one database: a control
 * plane that does not work jobs enqueues a recalculation (pg-boss); it stops; another starts on
 * the same database, finds the job and computes one cumulative result per project-timezone day;
 * each day's figures equal a direct count of the exposures up to the end of that day. Results and
 * recalculations of other computation rules are stale: not served, not resumed.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import { startTestControlPlane } from '../../support/control-plane.js';
import { waitFor } from '../../support/wait.js';
import { ingestEvents } from '../../../src/control-plane/ingestion/service.js';
import { startControlPlane } from '../../../src/control-plane/index.js';
import { createLogger } from '../../../src/log.js';
import { runRecalculation } from '../../../src/control-plane/experiments/timeseries/backfill.js';
import { RESULTS_RULES_VERSION } from '../../../src/control-plane/experiments/results/rules-version.js';

const DAY = 86_400_000;

test('a recalculation enqueued by one control plane is computed by the next, one cumulative point per day', async () => {
  const t = await startTestControlPlane({ timeseriesWorker: false });
  let second: Awaited<ReturnType<typeof startControlPlane>> | null = null;
  try {
    const todayUtc = Date.UTC(new Date().getUTCFullYear(), new Date().getUTCMonth(), new Date().getUTCDate());
    const start = new Date(todayUtc - 3 * DAY + 3600_000); // 01:00 UTC three days ago
    const x = await t.request('POST', `/api/projects/${t.projectId}/experiments/`, {
      body: { name: 'Daily', feature_flag_key: 'daily', start_date: start.toISOString(),
        metrics: [{ kind: 'ExperimentMetric', metric_type: 'mean', source: { kind: 'EventsNode', event: 'purchase' } }] },
    });
    assert.equal(x.status, 201, x.text);
    const metric = x.body.metrics[0];
    // Exposures: on each of the four days, 10 + day users per variant; each buys once.
    const events = [];
    const exposedBy = new Map<number, number>(); // day index → cumulative exposures per variant
    let cumulative = 0;
    for (let d = 0; d < 4; d++) {
      // Today's exposures land halfway between midnight and now, so they are always today and in the past.
      const at = d < 3 ? start.getTime() + d * DAY + 3600_000 : todayUtc + Math.floor((Date.now() - todayUtc) / 2);
      for (let i = 0; i < 10 + d; i++) {
        for (const variant of ['control', 'test']) {
          const id = `ts-${d}-${i}-${variant}`;
          events.push({ uuid: crypto.randomUUID(), project_id: t.projectId, event: '$feature_flag_called', distinct_id: id,
            properties: { $feature_flag: 'daily', $feature_flag_response: variant }, timestamp: new Date(at).toISOString() });
          events.push({ uuid: crypto.randomUUID(), project_id: t.projectId, event: 'purchase', distinct_id: id, properties: {}, timestamp: new Date(at + 60_000).toISOString() });
        }
      }
      cumulative += 10 + d;
      exposedBy.set(d, cumulative);
    }
    await ingestEvents(t.db.sql, events);

    const url = `/api/projects/${t.projectId}/experiments/${x.body.id}/`;
    const missing = await t.request('POST', `${url}recalculate_timeseries/`, { body: { metric } });
    assert.deepEqual([missing.status, missing.body.detail], [400, 'fingerprint is required']);
    const first = await t.request('POST', `${url}recalculate_timeseries/`, { body: { metric, fingerprint: metric.fingerprint } });
    assert.equal(first.status, 201, first.text);
    assert.equal(first.body.status, 'pending');
    const again = await t.request('POST', `${url}recalculate_timeseries/`, { body: { metric, fingerprint: metric.fingerprint } });
    assert.deepEqual([again.status, again.body.id], [200, first.body.id], 'an open request is returned, not duplicated');
    const q = `${url}timeseries_results/?metric_uuid=${metric.uuid}&fingerprint=${metric.fingerprint}`;
    assert.equal((await t.request('GET', q)).body.status, 'pending');
    const noParams = await t.request('GET', `${url}timeseries_results/?fingerprint=x`);
    assert.deepEqual([noParams.status, noParams.body.detail], [400, 'metric_uuid query parameter is required']);

    // This control plane stops with the job unworked; the next one on the same database runs it.
    await t.cp.close();
    second = await startControlPlane({ ...t.config, timeseriesWorker: true }, createLogger('silent'), t.db.url);
    const base = second.http.url;
    const get = async () => (await (await fetch(base + q, { headers: { authorization: `Bearer ${t.personalKey}` } })).json()) as Record<string, any>;
    const done = await waitFor('timeseries completed', async () => {
      const r = await get();
      // Every day stored, and the request itself marked done (a moment later).
      return r.status === 'completed' && r.recalculation_status === 'completed' ? r : null;
    }, { timeoutMs: 60_000, intervalMs: 200 });
    assert.equal(done.recalculation_status, 'completed');
    const days = Object.keys(done.timeseries);
    assert.equal(days.length, 4);
    assert.equal(days[0], start.toISOString().slice(0, 10));
    days.forEach((day, d) => {
      const point = done.timeseries[day];
      for (const arm of [point.baseline, ...point.variant_results]) {
        assert.equal(arm.number_of_samples, exposedBy.get(d), `${day} ${arm.key}`);
        assert.equal(arm.sum, exposedBy.get(d));
      }
    });
    assert.equal(done.errors, null);

    // Results stored under other computation rules (an older release) are not served as current...
    await t.db.sql`UPDATE experiment_timeseries_results SET rules_version = ${RESULTS_RULES_VERSION - 1}`;
    const stale = await get();
    assert.equal(stale.status, 'pending');
    assert.ok(Object.values(stale.timeseries).every((v) => v === null), JSON.stringify(stale.timeseries));
    // ...and a recalculation begun under them starts again from the first day instead of resuming.
    await t.db.sql`UPDATE experiment_timeseries_recalculations SET status = 'in_progress', rules_version = ${RESULTS_RULES_VERSION - 1},
      last_successful_date = ${days[days.length - 1]!}::date WHERE id = ${first.body.id}`;
    await runRecalculation(t.db.sql, first.body.id);
    const redone = await get();
    assert.deepEqual([redone.status, redone.recalculation_status, Object.keys(redone.timeseries)], ['completed', 'completed', days]);
    days.forEach((day, d) => assert.equal(redone.timeseries[day].baseline.number_of_samples, exposedBy.get(d), day));
  } finally {
    await second?.close();
    await t.cp.close().catch(() => {});
    await t.db.drop();
  }
});

test('E8/E9 refuse a draft', async () => {
  const t = await startTestControlPlane({ timeseriesWorker: false });
  try {
    const x = await t.request('POST', `/api/projects/${t.projectId}/experiments/`, { body: { name: 'Draft ts', feature_flag_key: 'draft-ts' } });
    const metric = { kind: 'ExperimentMetric', metric_type: 'mean', uuid: 'm-1', source: { kind: 'EventsNode', event: 'e' } };
    const r = await t.request('POST', `/api/projects/${t.projectId}/experiments/${x.body.id}/recalculate_timeseries/`, { body: { metric, fingerprint: 'f' } });
    assert.deepEqual([r.status, r.body.detail], [400, "Cannot recalculate timeseries for experiment that hasn't started"]);
    const g = await t.request('GET', `/api/projects/${t.projectId}/experiments/${x.body.id}/timeseries_results/?metric_uuid=m-1&fingerprint=f`);
    assert.deepEqual([g.status, g.body.detail], [400, 'Experiment has not been started yet']);
  } finally {
    await t.close();
  }
});
